#!/usr/bin/env python3
"""Drives the acceptor with Python pyspnego 0.12 as the client and records the exchanges.

    cargo build -p smb3d-auth --example accept_stdio
    python3 crates/auth/tests/pyspnego_fixtures.py target/debug/examples/accept_stdio \
        > crates/auth/tests/fixtures/pyspnego.txt

pyspnego checks the server side as a client does: it verifies the server's mechListMIC and
reports the session key it derived, which must equal the acceptor's. tests/pyspnego_replay.rs
replays the recorded client tokens with the same challenge and time and expects the same
answers byte for byte, so CI needs neither Python nor pyspnego.
"""

import importlib.metadata
import subprocess
import sys

import spnego

CHALLENGE = "0123456789abcdef"
FILETIME = 134000000000000000
ACCOUNT = ("alice", "Secret1!")


def run(name, username, password, protocol, options, expect_success=True):
    server = subprocess.Popen(
        [sys.argv[1], f"{ACCOUNT[0]}:{ACCOUNT[1]}", CHALLENGE, str(FILETIME)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    client = spnego.client(
        username, password, hostname="smb3d.example.test", service="cifs",
        protocol=protocol, options=options,
    )
    print(f"scenario {name}")
    print(f"account {ACCOUNT[0]}:{ACCOUNT[1]} {CHALLENGE} {FILETIME}")
    token = client.step()
    while True:
        server.stdin.write(token.hex() + "\n")
        server.stdin.flush()
        reply = server.stdout.readline().strip()
        print(f"client {token.hex()}")
        print(f"server {reply}")
        kind, rest = reply.split(" ", 1)
        if kind == "continue":
            token = client.step(bytes.fromhex(rest))
            continue
        if kind == "done":
            server_token, user, domain, key = rest.split(" ")
            if server_token != "-":
                client.step(bytes.fromhex(server_token))
            assert expect_success, name
            assert client.complete, name
            assert client.session_key.hex() == key, (name, client.session_key.hex(), key)
            print(f"client_session_key {client.session_key.hex()}")
        else:
            assert not expect_success, (name, reply)
        break
    server.stdin.close()
    server.wait()
    print()


ntlm = spnego.NegotiateOptions.use_ntlm
negotiate = spnego.NegotiateOptions.use_negotiate
print("# Recorded by tests/pyspnego_fixtures.py with pyspnego", importlib.metadata.version("pyspnego"))
print()
run("ntlm", "alice", "Secret1!", "ntlm", ntlm)
run("ntlm-domain-upper", "WORKGROUP\\ALICE", "Secret1!", "ntlm", ntlm)
run("negotiate", "alice", "Secret1!", "negotiate", negotiate)
run("negotiate-wrong-password", "alice", "secret1!", "negotiate", negotiate, expect_success=False)
run("negotiate-unknown-user", "mallory", "Secret1!", "negotiate", negotiate, expect_success=False)
