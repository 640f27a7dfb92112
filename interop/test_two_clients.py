"""Two real clients on one file (issue 5, check 2), with Python smbprotocol on both sides.

A holds a read-write-handle lease and writes; B opens the same file; A gets the lease break,
flushes and acknowledges; B's open completes and B reads A's data. A holds a directory lease;
its own new file in the directory keeps it, B's new file breaks it. And a client killed in the
middle of writing under a byte-range lock leaves its lock to nobody once its durable timeout
has passed.

smbprotocol has no lease-break handling of its own: a break notification (MessageId
0xFFFFFFFFFFFFFFFF, MS-SMB2 3.3.4.7) is caught by registering a waiting request under that
MessageId, and the acknowledgment (2.2.24.2) is a message structure defined here.
"""

import os
import signal
import subprocess
import sys
import struct
import threading
import time
import uuid
from collections import OrderedDict

import pytest
from smbprotocol.connection import Capabilities, Request
from smbprotocol.create_contexts import (CreateContextName, SMB2CreateContextRequest,
                                         SMB2CreateDurableHandleRequestV2, SMB2CreateRequestLeaseV2,
                                         SMB2CreateResponseLeaseV2)
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.header import Commands
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, LockFlags, Open, RequestedOplockLevel, SMB2LockElement,
                              ShareAccess)
from smbprotocol.structure import BytesField, IntField, Structure

from smbprotocol_client import connect

UNSOLICITED = 0xFFFFFFFFFFFFFFFF
R, H, W = 1, 2, 4
PARENT_LEASE_KEY_SET = 4
STATUS_LOCK_NOT_GRANTED = 0xC0000055
RW = FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE
SHARE_ALL = ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE | ShareAccess.FILE_SHARE_DELETE


class LeaseBreakAck(Structure):
    """MS-SMB2 2.2.24.2 Lease Break Acknowledgment."""

    COMMAND = Commands.SMB2_OPLOCK_BREAK

    def __init__(self):
        self.fields = OrderedDict([
            ("structure_size", IntField(size=2, default=36)),
            ("reserved", IntField(size=2)),
            ("flags", IntField(size=4)),
            ("lease_key", BytesField(size=16)),
            ("lease_state", IntField(size=4)),
            ("lease_duration", IntField(size=8)),
        ])
        super().__init__()


def lease_context(key, state, parent=None):
    """A version 2 lease request; `parent` is the key of the lease on the parent directory."""
    lease = SMB2CreateRequestLeaseV2()
    lease["lease_key"] = key
    lease["lease_state"] = state
    lease["parent_lease_key"] = parent or b"\0" * 16
    if parent:
        lease["lease_flags"] = PARENT_LEASE_KEY_SET
    lease["epoch"] = 0
    context = SMB2CreateContextRequest()
    context["buffer_name"] = CreateContextName.SMB2_CREATE_REQUEST_LEASE_V2
    context["buffer_data"] = lease
    return context


def durable_v2_context(timeout_ms):
    durable = SMB2CreateDurableHandleRequestV2()
    durable["timeout"] = timeout_ms
    durable["create_guid"] = uuid.uuid4()
    context = SMB2CreateContextRequest()
    context["buffer_name"] = CreateContextName.SMB2_CREATE_DURABLE_HANDLE_REQUEST_V2
    context["buffer_data"] = durable
    return context


def granted_lease_state(contexts):
    for context in contexts or []:
        if isinstance(context, SMB2CreateResponseLeaseV2):
            return context["lease_state"].get_value()
    return None


def listen_for_break(conn):
    """Registers a waiting request for the next unsolicited message on `conn`."""
    listener = Request(LeaseBreakAck(), None, conn)
    conn.outstanding_requests[UNSOLICITED] = listener
    return listener


def open_file(tree, name, disposition, contexts=None, oplock=RequestedOplockLevel.SMB2_OPLOCK_LEVEL_NONE):
    handle = Open(tree, name)
    response = handle.create(ImpersonationLevel.Impersonation, RW, FileAttributes.FILE_ATTRIBUTE_NORMAL,
                             SHARE_ALL, disposition, CreateOptions.FILE_NON_DIRECTORY_FILE,
                             create_contexts=contexts, oplock_level=oplock)
    return handle, response


# smbprotocol does not ask for directory leasing; MS-SMB2 3.3.5.4 offers it only to clients that do.
ASKS_FOR_DIRECTORY_LEASES = Capabilities.SMB2_GLOBAL_CAP_DIRECTORY_LEASING


def create_leased_directory(tree, name, key):
    """Creates directory `name` asking for an RWH lease with `key`; returns it and the state granted."""
    directory = Open(tree, name)
    contexts = directory.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_READ,
                                FileAttributes.FILE_ATTRIBUTE_DIRECTORY, SHARE_ALL, CreateDisposition.FILE_CREATE,
                                CreateOptions.FILE_DIRECTORY_FILE, create_contexts=[lease_context(key, R | W | H)],
                                oplock_level=RequestedOplockLevel.SMB2_OPLOCK_LEVEL_LEASE)
    return directory, granted_lease_state(contexts)


def test_lease_break_hands_writes_to_the_second_client(shared_smb3d):
    name = "two-clients-lease.txt"
    data = b"written by A under its lease\n" * 100
    conn_a, _, tree_a = connect(shared_smb3d)
    conn_b, _, tree_b = connect(shared_smb3d)
    try:
        key = uuid.uuid4().bytes
        a, contexts = open_file(tree_a, name, CreateDisposition.FILE_OVERWRITE_IF,
                                [lease_context(key, R | W | H)], RequestedOplockLevel.SMB2_OPLOCK_LEVEL_LEASE)
        assert granted_lease_state(contexts) == R | W | H
        a.write(data, 0)

        listener = listen_for_break(conn_a)
        opened = {}

        def open_b():
            try:
                opened["handle"], _ = open_file(tree_b, name, CreateDisposition.FILE_OPEN)
            except Exception as e:  # reported by the main thread
                opened["error"] = e

        b_thread = threading.Thread(target=open_b)
        b_thread.start()

        assert listener.response_event.wait(10), "A got no lease break"
        notification = listener.response["data"].get_value()
        structure_size, _epoch, flags = struct.unpack_from("<HHI", notification)
        lease_key = notification[8:24]
        current, new = struct.unpack_from("<II", notification, 24)
        assert structure_size == 44 and flags & 1, "the break must ask for an acknowledgment"
        assert lease_key == key
        assert current == R | W | H and new & W == 0
        # B waits for A's acknowledgment.
        b_thread.join(0.5)
        assert b_thread.is_alive(), "B's open completed before A acknowledged the break"

        a.flush()
        ack = LeaseBreakAck()
        ack["lease_key"] = key
        ack["lease_state"] = new
        request = conn_a.send(ack, sid=tree_a.session.session_id, tid=tree_a.tree_connect_id)
        response = conn_a.receive(request)
        acked_state = struct.unpack_from("<I", response["data"].get_value(), 24)[0]
        assert acked_state == new

        b_thread.join(10)
        assert not b_thread.is_alive() and "error" not in opened, opened.get("error")
        b = opened["handle"]
        assert b.read(0, len(data)) == data
        b.close()
        a.close()
    finally:
        conn_a.disconnect()
        conn_b.disconnect()


def test_another_clients_new_file_breaks_a_directory_lease(shared_smb3d):
    name = "two-clients-dir-lease"
    conn_a, _, tree_a = connect(shared_smb3d, capabilities=ASKS_FOR_DIRECTORY_LEASES)
    conn_b, _, tree_b = connect(shared_smb3d)
    try:
        key = uuid.uuid4().bytes
        directory, granted = create_leased_directory(tree_a, name, key)
        # Directories never get write caching.
        assert granted == R | H
        listener = listen_for_break(conn_a)

        # A's own new file names the directory's lease as its parent: A knows of it.
        own, contexts = open_file(tree_a, name + "\\mine.txt", CreateDisposition.FILE_CREATE,
                                  [lease_context(uuid.uuid4().bytes, R | W | H, parent=key)],
                                  RequestedOplockLevel.SMB2_OPLOCK_LEVEL_LEASE)
        assert granted_lease_state(contexts) == R | W | H
        assert not listener.response_event.wait(1), "A's own new file broke its directory lease"

        # So does B's, naming the same key: MS-FSA 2.1.4.12.2 compares the keys alone.
        named, _ = open_file(tree_b, name + "\\named.txt", CreateDisposition.FILE_CREATE,
                             [lease_context(uuid.uuid4().bytes, R, parent=key)],
                             RequestedOplockLevel.SMB2_OPLOCK_LEVEL_LEASE)
        assert not listener.response_event.wait(1), "a new file naming the directory's lease broke it"

        theirs, _ = open_file(tree_b, name + "\\theirs.txt", CreateDisposition.FILE_CREATE)
        assert listener.response_event.wait(10), "B's new file did not break A's directory lease"
        notification = listener.response["data"].get_value()
        structure_size, _epoch, flags = struct.unpack_from("<HHI", notification)
        current, new = struct.unpack_from("<II", notification, 24)
        assert structure_size == 44 and flags & 1
        assert notification[8:24] == key
        assert (current, new) == (R | H, 0)

        ack = LeaseBreakAck()
        ack["lease_key"] = key
        ack["lease_state"] = 0
        request = conn_a.send(ack, sid=tree_a.session.session_id, tid=tree_a.tree_connect_id)
        conn_a.receive(request)
        for handle in (theirs, named, own, directory):
            handle.close()
    finally:
        conn_a.disconnect()
        conn_b.disconnect()


CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from smbprotocol.open import CreateDisposition, RequestedOplockLevel
from smbprotocol_client import connect
import test_two_clients as t

class Server:
    port, user, password, share = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]

conn, session, tree = connect(Server)
handle, contexts = t.open_file(tree, sys.argv[6], CreateDisposition.FILE_OVERWRITE_IF,
                               [t.lease_context(b"k" * 16, t.R | t.H), t.durable_v2_context(int(sys.argv[7]))],
                               RequestedOplockLevel.SMB2_OPLOCK_LEVEL_LEASE)
handle.lock([t.lock_element(0, 4096)])
print("locked", flush=True)
offset = 0
while True:
    handle.write(b"x" * 65536, offset)
    offset = (offset + 65536) % (16 * 1024 * 1024)
"""


def lock_element(offset, length, exclusive=True):
    element = SMB2LockElement()
    element["offset"] = offset
    element["length"] = length
    element["flags"] = (LockFlags.SMB2_LOCKFLAG_EXCLUSIVE_LOCK if exclusive else LockFlags.SMB2_LOCKFLAG_SHARED_LOCK) \
        | LockFlags.SMB2_LOCKFLAG_FAIL_IMMEDIATELY
    return element


def test_killed_writer_leaves_no_lock_after_its_durable_timeout(shared_smb3d):
    name = "two-clients-killed.dat"
    timeout_ms = 3000
    here = os.path.dirname(os.path.abspath(__file__))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, here, str(shared_smb3d.port), shared_smb3d.user,
         shared_smb3d.password, shared_smb3d.share, name, str(timeout_ms)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.strip() == "locked", child.stderr.read()
        time.sleep(0.3)  # writes under way
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        killed_at = time.monotonic()

        conn, _, tree = connect(shared_smb3d)
        try:
            handle, _ = open_file(tree, name, CreateDisposition.FILE_OPEN)
            # The durable open keeps its lock while its client may come back...
            with pytest.raises(SMBResponseException) as refused:
                handle.lock([lock_element(0, 4096)])
            assert refused.value.status == STATUS_LOCK_NOT_GRANTED
            # ...and not after its timeout.
            deadline = killed_at + timeout_ms / 1000 + 10
            while True:
                try:
                    handle.lock([lock_element(0, 4096)])
                    break
                except SMBResponseException as e:
                    assert e.status == STATUS_LOCK_NOT_GRANTED
                    assert time.monotonic() < deadline, "the killed client's lock outlived its durable timeout"
                    time.sleep(0.2)
            held = time.monotonic() - killed_at
            assert held >= timeout_ms / 1000 - 0.5, "the lock went before the durable timeout (%.1f s)" % held
            handle.close()
        finally:
            conn.disconnect()
    finally:
        if child.poll() is None:
            child.kill()
