#!/usr/bin/env python3
r"""Hold authenticated SMB connections (and open files) so that bench/run can measure the
server's memory. Spoken to over stdin/stdout:

  prints "connected N" once N connections each have a session and a tree connect;
  on the input line "open", opens --open-count files named OPEN_DIR\f00000, f00001, ... on the
  first connection and prints "opened M";
  at end of input, exits without a polite teardown.
"""

import argparse
import os
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor

from smbprotocol.connection import Connection
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, ImpersonationLevel, Open,
                              ShareAccess)
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

# FILE_READ_ATTRIBUTES | SYNCHRONIZE: the cheapest access that still makes the server keep an open.
READ_ATTRIBUTES_ACCESS = 0x00000080 | 0x00100000


def connect(args):
    conn = Connection(uuid.uuid4(), "127.0.0.1", args.port)
    conn.connect(timeout=30)
    session = Session(conn, args.user, args.password, require_encryption=False, auth_protocol="ntlm")
    session.connect()
    tree = TreeConnect(session, r"\\127.0.0.1\%s" % args.share)
    tree.connect()
    return tree


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--share", required=True)
    p.add_argument("--connections", type=int, default=1)
    p.add_argument("--open-dir", help="share-relative directory whose files are opened on \"open\"")
    p.add_argument("--open-count", type=int, default=0)
    p.add_argument("--parallel", type=int, default=4, help="connections set up at once")
    args = p.parse_args()

    with ThreadPoolExecutor(args.parallel) as pool:
        trees = list(pool.map(lambda _: connect(args), range(args.connections)))
    print("connected %d" % len(trees), flush=True)

    opens = []
    for line in sys.stdin:
        if line.strip() == "open":
            for i in range(args.open_count):
                handle = Open(trees[0], "%s\\f%05d" % (args.open_dir, i))
                handle.create(ImpersonationLevel.Impersonation, READ_ATTRIBUTES_ACCESS, FileAttributes.FILE_ATTRIBUTE_NORMAL,
                              ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE | ShareAccess.FILE_SHARE_DELETE,
                              CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
                opens.append(handle)
            print("opened %d" % len(opens), flush=True)
    # Tearing down hundreds of sessions politely takes longer than the servers need to notice
    # closed sockets, and the measurement is already taken.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
