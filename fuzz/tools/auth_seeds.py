#!/usr/bin/env python3
"""Write seeds for auth_ntlmssp and auth_spnego from the client tokens recorded in
crates/auth/tests/fixtures/*.txt (pyspnego 0.12.4 and sspi-rs clients; lines `client HEX`) and the acceptor's
challenges (`server continue HEX`).
Bare NTLMSSP messages seed auth_ntlmssp; SPNEGO tokens seed auth_spnego, and the NTLM
message inside them seeds auth_ntlmssp too.

    auth_seeds.py [REPO_ROOT]
"""
import glob
import hashlib
import os
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def put(target, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def main():
    for path in sorted(glob.glob(os.path.join(ROOT, "crates", "auth", "tests", "fixtures", "*.txt"))):
        for line in open(path):
            words = line.split()
            # `client HEX` and `server continue HEX` (the CHALLENGE, also a decoder input).
            if words[:1] == ["client"] and len(words) == 2 or words[:2] == ["server", "continue"]:
                token = bytes.fromhex(words[-1])
            else:
                continue
            if token.startswith(b"NTLMSSP\0"):
                put("auth_ntlmssp", token)
                continue
            put("auth_spnego", token)
            at = token.find(b"NTLMSSP\0")
            if at >= 0:
                put("auth_ntlmssp", token[at:])


main()
