#!/usr/bin/env python3
"""List or dump the Direct-TCP messages of a pcap captured with tshark.

    pcap_messages.py FILE.pcap            one line per message: index, stream, direction,
                                          length, command/status summary
    pcap_messages.py FILE.pcap N [N ...]  the hex of messages N, wrapped for Rust test vectors

Reassembles each TCP stream with `tshark -z follow,tcp,raw` and splits it on the 4-byte
Direct-TCP prefix (MS-SMB2 2.1).
"""
import struct
import subprocess
import sys

COMMANDS = ("NEGOTIATE SESSION_SETUP LOGOFF TREE_CONNECT TREE_DISCONNECT CREATE CLOSE FLUSH READ "
            "WRITE LOCK IOCTL CANCEL ECHO QUERY_DIRECTORY CHANGE_NOTIFY QUERY_INFO SET_INFO "
            "OPLOCK_BREAK").split()


def streams(pcap):
    out = subprocess.run(["tshark", "-r", pcap, "-T", "fields", "-e", "tcp.stream"],
                         capture_output=True, text=True, check=True).stdout
    return sorted({int(x) for x in out.split() if x})


def messages(pcap, stream):
    """(direction, bytes) of each message, direction 0 = client to server."""
    out = subprocess.run(["tshark", "-r", pcap, "-q", "-z", f"follow,tcp,raw,{stream}"],
                         capture_output=True, text=True, check=True).stdout
    pending = {0: b"", 1: b""}
    started = False
    for line in out.splitlines():
        if line.startswith("Node 1:"):
            started = True
            continue
        if not started or line.startswith("===") or not line.strip():
            continue
        direction = 1 if line.startswith("\t") else 0
        pending[direction] += bytes.fromhex(line.strip())
        buf = pending[direction]
        while len(buf) >= 4 and len(buf) >= 4 + int.from_bytes(buf[1:4], "big"):
            n = int.from_bytes(buf[1:4], "big")
            yield direction, buf[4:4 + n]
            buf = buf[4 + n:]
        pending[direction] = buf


def all_messages(pcap):
    return [(s, d, m) for s in streams(pcap) for d, m in messages(pcap, s)]


def summary(m):
    if m[:4] != b"\xfeSMB" or len(m) < 64:
        return m[:4].hex()
    status, command, _, flags, next_command, message_id = struct.unpack_from("<IHHIIQ", m, 8)
    name = COMMANDS[command] if command < len(COMMANDS) else hex(command)
    kind = "RSP" if flags & 1 else "REQ"
    return f"{name} {kind} status={status:#x} flags={flags:#x} next={next_command} mid={message_id}"


def main():
    pcap = sys.argv[1]
    msgs = all_messages(pcap)
    if len(sys.argv) == 2:
        for i, (s, d, m) in enumerate(msgs):
            print(i, s, "C>S" if d == 0 else "S>C", len(m), summary(m))
        return
    for i in map(int, sys.argv[2:]):
        h = msgs[i][2].hex()
        print(f"// {pcap} message {i}, {len(h) // 2} bytes")
        for j in range(0, len(h), 96):
            print("    " + h[j:j + 96])


if __name__ == "__main__":
    main()
