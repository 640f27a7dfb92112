"""Issue 23 item 11: `kernel_oplocks` (Samba's `kernel oplocks`). While an SMB client caches a
file of such a share, smb3d holds a Linux file lease on it: a local process opening, reading or
truncating the file waits while the client gets the break, and goes on once the client has
acknowledged (after writing what it cached), seeing the client's data. A client that never
answers holds the local process only until its break times out, and holds up nothing else.
Without the option a local open breaks nothing, as before.

Python smbprotocol is the client; breaks are caught as in test_two_clients.py."""

import struct
import subprocess
import sys
import threading
import time
import uuid
from collections import OrderedDict

import pytest
from smbprotocol.header import Commands
from smbprotocol.open import CreateDisposition, RequestedOplockLevel
from smbprotocol.structure import BytesField, IntField, Structure

from conftest import start_smb3d, stop
from smbprotocol_client import connect
from test_two_clients import (R, H, W, LeaseBreakAck, granted_lease_state, lease_context, listen_for_break,
                              open_file)

BATCH = RequestedOplockLevel.SMB2_OPLOCK_LEVEL_BATCH
LEASE = RequestedOplockLevel.SMB2_OPLOCK_LEVEL_LEASE


class OplockBreakAck(Structure):
    """MS-SMB2 2.2.24.1 Oplock Break Acknowledgment."""

    COMMAND = Commands.SMB2_OPLOCK_BREAK

    def __init__(self):
        self.fields = OrderedDict([
            ("structure_size", IntField(size=2, default=24)),
            ("oplock_level", IntField(size=1)),
            ("reserved", IntField(size=1)),
            ("reserved2", IntField(size=4)),
            ("file_id", BytesField(size=16)),
        ])
        super().__init__()


@pytest.fixture(params=[True, False], ids=["kernel_oplocks", "without"])
def server(request, tmp_path):
    share = tmp_path / "share"
    share.mkdir()
    server = start_smb3d(tmp_path, shares={"share": {"path": str(share), "kernel_oplocks": request.param}})
    server.kernel_oplocks = request.param
    yield server
    stop(server)


def local(*argv):
    """A local process; its output is read once it ends."""
    return subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finished(process, timeout):
    try:
        process.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def ack_oplock(conn, tree, handle, level):
    ack = OplockBreakAck()
    ack["oplock_level"] = level
    ack["file_id"] = handle.file_id
    request = conn.send(ack, sid=tree.session.session_id, tid=tree.tree_connect_id)
    return conn.receive(request)


def test_a_local_read_waits_for_the_rwh_lease_holder_and_sees_its_data(server):
    conn, _, tree = connect(server)
    path = server.share_dir / "leased.txt"
    try:
        key = uuid.uuid4().bytes
        handle, contexts = open_file(tree, "leased.txt", CreateDisposition.FILE_OVERWRITE_IF,
                                     [lease_context(key, R | W | H)], LEASE)
        assert granted_lease_state(contexts) == R | W | H
        handle.write(b"written before\n", 0)
        listener = listen_for_break(conn)
        cat = local("cat", str(path))
        if not server.kernel_oplocks:
            assert finished(cat, 10)
            assert cat.stdout.read() == b"written before\n"
            assert not listener.response_event.wait(1), "a local open broke the lease without kernel_oplocks"
            handle.close()
            return
        assert listener.response_event.wait(10), "the client got no lease break"
        notification = listener.response["data"].get_value()
        current, new = struct.unpack_from("<II", notification, 24)
        assert notification[8:24] == key and current == R | W | H
        # The holder's descriptor is open for writing, so it can keep no read lease: no caching.
        assert new == 0
        assert not finished(cat, 1), "cat read the file before the client acknowledged"
        # What the client cached goes to the server before its acknowledgment.
        handle.write(b"cached until the break\n", 15)
        ack = LeaseBreakAck()
        ack["lease_key"] = key
        ack["lease_state"] = new
        conn.receive(conn.send(ack, sid=tree.session.session_id, tid=tree.tree_connect_id))
        assert finished(cat, 10), "cat still waits after the acknowledgment"
        assert cat.stdout.read() == b"written before\ncached until the break\n"
        handle.close()
    finally:
        conn.disconnect()


TRUNCATE_AFTER_READING = r"""
import sys
with open(sys.argv[1], "r+b") as f:
    sys.stdout.buffer.write(f.read())
    f.truncate(0)
"""


def test_a_local_truncation_breaks_a_batch_oplock_and_the_next_open_gets_one(server):
    conn, _, tree = connect(server)
    path = server.share_dir / "batch.dat"
    try:
        handle, _ = open_file(tree, "batch.dat", CreateDisposition.FILE_OVERWRITE_IF, oplock=BATCH)
        assert handle.oplock_level == BATCH
        handle.write(b"A" * 100, 0)
        listener = listen_for_break(conn)
        truncate = local(sys.executable, "-c", TRUNCATE_AFTER_READING, str(path))
        if not server.kernel_oplocks:
            assert finished(truncate, 10) and truncate.returncode == 0
            assert not listener.response_event.wait(1)
            assert path.stat().st_size == 0
            handle.close()
            return
        assert listener.response_event.wait(10), "the client got no oplock break"
        structure_size, level = struct.unpack_from("<HB", listener.response["data"].get_value())
        assert structure_size == 24 and level == 0
        assert not finished(truncate, 1)
        handle.write(b"B" * 100, 100)
        ack_oplock(conn, tree, handle, 0)
        assert finished(truncate, 10) and truncate.returncode == 0, truncate.stderr.read()
        assert truncate.stdout.read() == b"A" * 100 + b"B" * 100
        assert path.stat().st_size == 0
        handle.close()
        # The lease went with the break; a new only open is granted batch again.
        again, _ = open_file(tree, "batch.dat", CreateDisposition.FILE_OPEN, oplock=BATCH)
        assert again.oplock_level == BATCH
        again.close()
    finally:
        conn.disconnect()


def test_a_client_that_never_answers_holds_a_local_open_only_until_its_break_times_out(tmp_path):
    share = tmp_path / "share"
    share.mkdir()
    server = start_smb3d(tmp_path, shares={"share": {"path": str(share), "kernel_oplocks": True}})
    silent_conn, _, silent_tree = connect(server)
    conn, _, tree = connect(server)
    try:
        silent, _ = open_file(silent_tree, "silent.dat", CreateDisposition.FILE_OVERWRITE_IF, oplock=BATCH)
        assert silent.oplock_level == BATCH
        silent.write(b"kept", 0)
        listen_for_break(silent_conn)
        started = time.monotonic()
        stuck = local("cat", str(share / "silent.dat"))
        assert not finished(stuck, 1)

        # Meanwhile another client's file is opened, broken and read locally at once.
        other, _ = open_file(tree, "other.dat", CreateDisposition.FILE_OVERWRITE_IF, oplock=BATCH)
        assert other.oplock_level == BATCH
        other.write(b"other", 0)
        listener = listen_for_break(conn)
        begun = time.monotonic()
        reader = local("cat", str(share / "other.dat"))
        assert listener.response_event.wait(10)
        ack_oplock(conn, tree, other, 0)
        assert finished(reader, 10) and reader.stdout.read() == b"other"
        assert time.monotonic() - begun < 5
        other.close()

        # The silent client's break times out (35 s), before the kernel's lease-break-time
        # (45 s by default) would have let the local open go on anyway.
        lease_break_time = int(open("/proc/sys/fs/lease-break-time").read())
        assert finished(stuck, lease_break_time + 5)
        waited = time.monotonic() - started
        assert stuck.stdout.read() == b"kept"
        assert waited < min(lease_break_time, 40), waited
        assert server.alive()
    finally:
        conn.disconnect()
        silent_conn.disconnect()
        stop(server)
