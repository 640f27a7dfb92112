#!/usr/bin/env python3
"""Issue 6, check 3: copying a file on the share with server-side copy against copying it
through the client, on one smbprotocol connection to smb3d.

Server-side: FSCTL_SRV_REQUEST_RESUME_KEY, then FSCTL_SRV_COPYCHUNK_WRITE requests of 16 chunks
of 1 MiB (Windows' limits). Through the client: READ then WRITE of the largest size the server
allows. For each: the wall time, and the bytes the connection's socket carried (TCP_INFO), both
as medians of the runs; each copy is compared with its source. The share is in the work
directory (`--workdir`, default bench/out/copychunk), and, with `--xfs`, also on a
reflink-capable XFS made on a loop device, where the copy shares extents instead of copying.
Not part of bench/run: it measures smb3d alone (Samba's vfs_default does the same
copy_file_range). Run as root from the repository: `bench/copychunk.py [--size MiB] [--runs N]`.
"""

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "interop"))

from smbprotocol.connection import Connection  # noqa: E402
from smbprotocol.session import Session  # noqa: E402
from smbprotocol.tree import TreeConnect  # noqa: E402

from conftest import start_smb3d, stop  # noqa: E402
from server_copy import client_copy, open_file, server_side_copy, socket_bytes  # noqa: E402


def make_source(path, size):
    """Incompressible data, written once; it stays in the page cache for every run."""
    block = os.urandom(8 << 20)
    with open(path, "wb") as f:
        written = 0
        while written < size:
            n = min(len(block), size - written)
            f.write(block[:n])
            written += n
    return digest(path)


def digest(path):
    h = hashlib.blake2b()
    with open(path, "rb") as f:
        while chunk := f.read(16 << 20):
            h.update(chunk)
    return h.hexdigest()


def one_copy(server, method, size):
    conn = Connection(uuid.uuid4(), "127.0.0.1", server.port)
    conn.connect()
    try:
        session = Session(conn, server.user, server.password)
        session.connect()
        tree = TreeConnect(session, r"\\127.0.0.1\%s" % server.share)
        tree.connect()
        source = open_file(tree, "source")
        target = open_file(tree, "copy", write=True)
        subprocess.run(["sync"], check=True)
        before = socket_bytes(conn)
        start = time.perf_counter()
        method(source, target, size)
        target.close()
        seconds = time.perf_counter() - start
        carried = socket_bytes(conn) - before
        source.close()
    finally:
        conn.disconnect()
    return seconds, carried


def measure(server, size, runs, label):
    source_digest = make_source(server.share_dir / "source", size)
    server.own(server.share_dir / "source")
    rows = []
    for name, method in (("server-side copy (FSCTL_SRV_COPYCHUNK_WRITE)", server_side_copy),
                         ("read then write through the client", client_copy)):
        times, carried = [], []
        for _ in range(runs):
            seconds, moved = one_copy(server, method, size)
            if digest(server.share_dir / "copy") != source_digest:
                raise SystemExit("%s: the copy differs from its source" % name)
            (server.share_dir / "copy").unlink()
            times.append(seconds)
            carried.append(moved)
        rows.append((label, name, statistics.median(times), statistics.median(carried), times))
    (server.share_dir / "source").unlink()
    return rows


def xfs_image(tmp):
    image, mount = tmp / "xfs.img", tmp / "xfs"
    with open(image, "wb") as f:
        f.truncate(4 << 30)
    subprocess.run(["mkfs.xfs", "-q", "-m", "reflink=1", str(image)], check=True)
    mount.mkdir()
    subprocess.run(["mount", "-o", "loop", str(image), str(mount)], check=True)
    return mount


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024, help="file size in MiB (default 1024)")
    parser.add_argument("--runs", type=int, default=3, help="runs per method (default 3)")
    parser.add_argument("--workdir", type=Path, default=ROOT / "bench" / "out" / "copychunk")
    parser.add_argument("--xfs", action="store_true", help="also measure on a loop-mounted XFS with reflink")
    args = parser.parse_args()
    size = args.size << 20
    args.workdir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=args.workdir))
    mount = None
    rows = []
    try:
        fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "--target", str(tmp)], capture_output=True,
                            text=True).stdout.strip()
        server = start_smb3d(tmp / "plain")
        try:
            rows += measure(server, size, args.runs, fs)
        finally:
            stop(server)
        if args.xfs:
            mount = xfs_image(tmp)
            (mount / "share").mkdir()
            server = start_smb3d(tmp / "on-xfs", shares={"share": {"path": str(mount / "share")}})
            server.share_dir = mount / "share"
            try:
                rows += measure(server, size, args.runs, "xfs (reflink=1, loop device)")
            finally:
                stop(server)
    finally:
        if mount is not None:
            subprocess.run(["umount", str(mount)], check=True)
        shutil.rmtree(tmp)
    print("Copying a %d MiB file on the share, smb3d, %d runs, medians:\n" % (args.size, args.runs))
    print("| file system | method | seconds | MiB/s | bytes over the socket |")
    print("|---|---|---:|---:|---:|")
    for fs, name, seconds, carried, _ in rows:
        print("| %s | %s | %.2f | %.0f | %d |" % (fs, name, seconds, args.size / seconds, carried))
    print()
    for fs, name, _, _, times in rows:
        print("- %s, %s: %s s" % (fs, name, ", ".join("%.2f" % t for t in times)))
    for fs in dict.fromkeys(row[0] for row in rows):
        server_side, through_client = [row[2] for row in rows if row[0] == fs]
        print("- %s: server-side copy takes %.1f%% of the read-then-write time" % (fs, 100 * server_side / through_client))


if __name__ == "__main__":
    main()
