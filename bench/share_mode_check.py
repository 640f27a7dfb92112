#!/usr/bin/env python3
"""Exit 0 if the server enforces share modes between two connections, else say what happened.

smbtorture's smb2.bench.oplock1 opens one file with no sharing from each connection in turn: the
next open succeeds only once the holder, told by an oplock break, has closed its handle. A server
that ignores share modes lets every open succeed without any break and so looks fast while doing
none of the work. With share modes enforced, a completed oplock1 run means the breaks happened.
"""

import argparse
import os
import sys
import uuid

from smbprotocol.connection import Connection
from smbprotocol.exceptions import SharingViolation
from smbprotocol.open import CreateDisposition, CreateOptions, FileAttributes, ImpersonationLevel, Open
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

# FILE_READ_DATA | FILE_WRITE_DATA | DELETE | SYNCHRONIZE
ACCESS = 0x00000001 | 0x00000002 | 0x00010000 | 0x00100000
NAME = "share-mode-check.dat"


def tree(args):
    conn = Connection(uuid.uuid4(), "127.0.0.1", args.port)
    conn.connect(timeout=30)
    session = Session(conn, args.user, args.password, require_encryption=False, auth_protocol="ntlm")
    session.connect()
    t = TreeConnect(session, r"\\127.0.0.1\%s" % args.share)
    t.connect()
    return t


def open_unshared(t, options=0):
    handle = Open(t, NAME)
    handle.create(ImpersonationLevel.Impersonation, ACCESS, FileAttributes.FILE_ATTRIBUTE_NORMAL, 0,
                  CreateDisposition.FILE_OPEN_IF, CreateOptions.FILE_NON_DIRECTORY_FILE | options)
    return handle


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--password", required=True)
    p.add_argument("--share", required=True)
    args = p.parse_args()

    holder = open_unshared(tree(args), CreateOptions.FILE_DELETE_ON_CLOSE)
    try:
        second = open_unshared(tree(args))
    except SharingViolation:
        return 0
    finally:
        holder.close()
    second.close()
    print("a second open of a file held with no sharing succeeded", file=sys.stderr)
    return 1


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # Skip waiting for smbprotocol's receiver threads to wind down.
    os._exit(code)
