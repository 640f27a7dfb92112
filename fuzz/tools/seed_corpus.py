#!/usr/bin/env python3
"""Write seed corpora under fuzz/corpus/<target>/ from pcaps of real traffic.

    seed_corpus.py OUT_DIR FILE.pcap [FILE.pcap ...]

Each seed is named by its SHA-1, as libFuzzer names its own. See fuzz/README.md for the
captures used.
"""
import hashlib
import os
import struct
import sys

from pcap_messages import all_messages

MAX_SEED = 8192
CAPS = {"framing": 10, "header": 12, "compound": 15, "pdu": 25, "negotiate_contexts": 8,
        "create_contexts": 25, "smb1": 5, "transform": 12, "requests": 200, "responses": 200}
PER_KIND = {"requests": 3, "responses": 2}
# The extra decoder slot of the dispatching targets (see fuzz/src/lib.rs): the error response
# for `responses`, the VALIDATE_NEGOTIATE_INFO input for `requests`.
ERROR_KIND = 19
VALIDATE_NEGOTIATE_KIND = 19


class Seeds:
    def __init__(self, out):
        self.out = out
        self.count = {}
        self.kinds = {}

    def put(self, target, data, kind=None):
        if len(data) > MAX_SEED or self.count.get(target, 0) >= CAPS[target]:
            return
        if kind is not None:
            if self.kinds.get((target, kind), 0) >= PER_KIND[target]:
                return
        d = os.path.join(self.out, target)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, hashlib.sha1(data).hexdigest())
        if os.path.exists(path):
            return
        with open(path, "wb") as f:
            f.write(data)
        self.count[target] = self.count.get(target, 0) + 1
        if kind is not None:
            self.kinds[(target, kind)] = self.kinds.get((target, kind), 0) + 1


def pdus(message):
    pos = 0
    while True:
        next_command = struct.unpack_from("<I", message, pos + 20)[0]
        yield message[pos:pos + next_command] if next_command else message[pos:]
        if not next_command:
            return
        pos += next_command


def seed(seeds, message):
    seeds.put("framing", len(message).to_bytes(4, "big") + (1 << 20).to_bytes(4, "little"))
    if message[:4] == b"\xffSMB":
        seeds.put("smb1", message)
        return
    if message[:4] == b"\xfdSMB":
        seeds.put("transform", message)
        return
    if message[:4] != b"\xfeSMB":
        return
    seeds.put("compound", message)
    seeds.put("pdu", message)
    for pdu in pdus(message):
        status, command, _, flags = struct.unpack_from("<IHHI", pdu, 8)
        seeds.put("header", pdu[:64])
        response = flags & 1
        structure_size = struct.unpack_from("<H", pdu, 64)[0] if len(pdu) >= 66 else 0
        # A 9-byte body that is not one of the commands whose response is 9 bytes is an error.
        error = response and structure_size == 9 and command not in (1, 14, 15, 16)
        kind = ERROR_KIND if error else command
        seeds.put("responses" if response else "requests", bytes([kind]) + pdu, kind)
        if command == 0 and len(pdu) > 100 and not error:
            if response:
                count = struct.unpack_from("<H", pdu, 64 + 6)[0]
                offset = struct.unpack_from("<I", pdu, 64 + 60)[0]
            else:
                offset, count = struct.unpack_from("<IH", pdu, 64 + 28)
            if count:
                seeds.put("negotiate_contexts", bytes([count]) + pdu[offset:])
        if command == 5 and not error:
            at = 64 + (80 if response else 48)
            if len(pdu) >= at + 8:
                offset, length = struct.unpack_from("<II", pdu, at)
                if length:
                    seeds.put("create_contexts", pdu[offset:offset + length])
        if command == 11 and not response and len(pdu) >= 120:
            ctl_code = struct.unpack_from("<I", pdu, 64 + 4)[0]
            offset, count = struct.unpack_from("<II", pdu, 64 + 24)
            if ctl_code == 0x00140204:
                seeds.put("requests", bytes([VALIDATE_NEGOTIATE_KIND]) + pdu[offset:offset + count])


def main():
    seeds = Seeds(sys.argv[1])
    for pcap in sys.argv[2:]:
        for _, _, message in all_messages(pcap):
            seed(seeds, message)
    # Compression frames laid out from MS-SMB2 2.2.42 (no reference peer compresses).
    seeds.put("transform", bytes.fromhex("fc534d42001000000200000004000000fe534d42aabbccdd"))
    seeds.put("transform", bytes.fromhex(
        "fc534d4270010000000001000800000" "0fe534d4240000100"
        "050000000a000000c8070000010203040506" "0400000008000000ee00000038080000"))
    for target in sorted(seeds.count):
        print(target, seeds.count[target])


if __name__ == "__main__":
    main()
