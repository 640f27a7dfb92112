#!/usr/bin/env python3
"""Print the DCE/RPC bytes exchanged over each named pipe in a pcap of SMB2 traffic.

    pipe_exchanges.py FILE.pcap PORT

Output, one open pipe after another:

    pipe NAME
    C <hex>     bytes the client wrote (SMB2 WRITE data or FSCTL_PIPE_TRANSCEIVE input)
    S <hex>     bytes the server returned (SMB2 READ data or FSCTL_PIPE_TRANSCEIVE output)

Reassembles each TCP stream with `tshark -z follow,tcp,raw` and splits it on the 4-byte
Direct-TCP prefix (MS-SMB2 2.1). Unencrypted sessions only; compounds are followed.
"""
import struct
import subprocess
import sys

CREATE, CLOSE, READ, WRITE, IOCTL = 5, 6, 8, 9, 11
FSCTL_PIPE_TRANSCEIVE = 0x0011C017


def streams(pcap, port):
    out = subprocess.run(["tshark", "-r", pcap, "-Y", f"tcp.port=={port}", "-T", "fields",
                          "-e", "tcp.stream"], capture_output=True, text=True, check=True).stdout
    return sorted({int(x) for x in out.split() if x})


def messages(pcap, stream):
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


def pdus(frame):
    """The SMB2 PDUs of a (possibly compounded) frame."""
    while len(frame) >= 64 and frame[:4] == b"\xfeSMB":
        next_command = struct.unpack_from("<I", frame, 20)[0]
        yield frame if next_command == 0 else frame[:next_command]
        if next_command == 0:
            break
        frame = frame[next_command:]


def main():
    pcap, port = sys.argv[1], sys.argv[2]
    for stream in streams(pcap, port):
        requests = {}  # message id -> (command, request pdu)
        names = {}  # file id -> pipe name
        last_file_id = None
        for _, frame in messages(pcap, stream):
            for pdu in pdus(frame):
                status, command = struct.unpack_from("<IH", pdu, 8)
                flags = struct.unpack_from("<I", pdu, 16)[0]
                message_id = struct.unpack_from("<Q", pdu, 24)[0]
                body = pdu[64:]
                if not flags & 1:
                    if command in (READ, WRITE, IOCTL, CLOSE):
                        fid = body[16:32] if command in (READ, WRITE) else body[8:24]
                        if command == IOCTL:
                            fid = body[8:24]
                        if fid == b"\xff" * 16:
                            fid = last_file_id
                        if command == CLOSE:
                            fid = body[8:24]
                        requests[message_id] = (command, pdu, fid)
                    elif command == CREATE:
                        name_off, name_len = struct.unpack_from("<HH", body, 44)
                        requests[message_id] = (command, pdu.decode("latin1"),
                                                pdu[name_off:name_off + name_len].decode("utf-16le"))
                    if command == WRITE:
                        off, length = struct.unpack_from("<HI", body, 2)
                        print(f"C {pdu[off:off + length].hex()}")
                    if command == IOCTL:
                        ctl = struct.unpack_from("<I", body, 4)[0]
                        in_off, in_len = struct.unpack_from("<II", body, 24)
                        if ctl == FSCTL_PIPE_TRANSCEIVE:
                            print(f"C {pdu[in_off:in_off + in_len].hex()}")
                    continue
                req = requests.get(message_id)
                if req is None or status == 0x103:
                    continue
                if command == CREATE and status == 0:
                    fid = body[64:80]
                    names[fid] = req[2]
                    last_file_id = fid
                    if req[2].lower().lstrip("\\") in ("srvsvc", "wkssvc", "lsarpc", "lsass",
                                                     "samr", "netlogon", "winreg"):
                        print(f"pipe {req[2]}")
                elif command == READ and status in (0, 0x80000005):
                    off = body[2]
                    length = struct.unpack_from("<I", body, 4)[0]
                    print(f"S {pdu[off:off + length].hex()}")
                elif command == IOCTL and status in (0, 0x80000005):
                    ctl = struct.unpack_from("<I", body, 4)[0]
                    out_off, out_len = struct.unpack_from("<II", body, 32)
                    if ctl == FSCTL_PIPE_TRANSCEIVE:
                        print(f"S {pdu[out_off:out_off + out_len].hex()}")


if __name__ == "__main__":
    main()
