#!/usr/bin/env python3
"""Write seeds for the rpc_pipe and rpc_pdu fuzz targets from the captures:

    fuzz_seeds.py CORPUS_DIR CAPTURE.txt...

rpc_pipe gets each captured pipe session as one input (pipe selector, one write, reads of
4,288 bytes, then the client's PDUs); rpc_pdu gets one PDU of either side per packet type,
flags and opnum. Files are named by their SHA-1, as the other corpora are.
"""
import hashlib
import os
import sys

PIPES = {"srvsvc": 0, "wkssvc": 1, "lsarpc": 2, "lsass": 2}


def write(directory, data):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, hashlib.sha1(data).hexdigest())
    with open(path, "wb") as f:
        f.write(data)


def main():
    corpus = sys.argv[1]
    pdus = {}
    for capture in sys.argv[2:]:
        session = None
        for line in open(capture):
            kind, _, rest = line.strip().partition(" ")
            if kind == "pipe":
                if session:
                    write(os.path.join(corpus, "rpc_pipe"), session)
                session = bytes([PIPES[rest.lower()], 0, 134])
            elif kind in ("C", "S", "E") and rest and rest[0] != "-":
                data = bytes.fromhex(rest.split()[0])
                key = (data[2], data[3], data[22:24] if data[2] == 0 else b"", kind == "C")
                pdus.setdefault(key, data)
                if kind == "C":
                    session += data
        if session:
            write(os.path.join(corpus, "rpc_pipe"), session)
    for data in pdus.values():
        write(os.path.join(corpus, "rpc_pdu"), data)


if __name__ == "__main__":
    main()
