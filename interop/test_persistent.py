"""Persistent handles on a continuous-availability share survive a restart of smb3d (issue 5,
check 3), with Python smbprotocol as the client.

A asks for a persistent handle (a durable v2 request with SMB2_DHANDLE_FLAG_PERSISTENT), writes
and takes a byte-range lock; smb3d is killed (SIGKILL) and started again with the same
configuration and state directory. Until A is back, B cannot open the file
(STATUS_FILE_NOT_AVAILABLE); A reconnects on a new connection and session (DH2C with its
CreateGuid and FileId), goes on writing, and its lock still keeps B out. Closing the handle
removes its record.
"""

import os
import subprocess
import time
import uuid

import pytest
from smbprotocol.connection import Capabilities
from smbprotocol.create_contexts import (CreateContextName, DurableHandleFlags, SMB2CreateContextRequest,
                                         SMB2CreateDurableHandleReconnectV2, SMB2CreateDurableHandleRequestV2,
                                         SMB2CreateDurableHandleResponseV2)
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.file_info import FileRenameInformation
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, LockFlags, Open, SMB2LockElement, SMB2SetInfoRequest, ShareAccess)

import smbprotocol_client
from conftest import BINARY, start_smb3d, stop, wait_for_port
from torture import run_suite

STATUS_LOCK_NOT_GRANTED = 0xC0000055
STATUS_FILE_LOCK_CONFLICT = 0xC0000054
STATUS_FILE_NOT_AVAILABLE = 0xC0000467
RW = FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE
SHARE_RW = ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE
NAME = "persistent.dat"


@pytest.fixture
def ca_smb3d(tmp_path):
    state = tmp_path / "state"
    server = start_smb3d(tmp_path, extra_config='state_dir = "%s"' % state,
                         shares={"share": {"path": str(tmp_path / "share"), "continuous_availability": True}})
    server.state_dir = state
    yield server
    stop(server)


def restart(server):
    """Kills smb3d at once (no goodbye to anyone) and starts it again on the same
    configuration, state directory and port."""
    server.proc.kill()
    server.proc.wait(10)
    with open(server.log, "ab") as log:
        log.write(b"--- killed and restarted ---\n")
    server.proc = subprocess.Popen([str(BINARY), "serve", "-c", str(server.config)], stdout=open(server.log, "ab"),
                                   stderr=subprocess.STDOUT,
                                   env=dict(os.environ, SMB3D_LOG=os.environ.get("SMB3D_LOG", "info")))
    wait_for_port(server.port, server.proc)


def connect(server, client_guid, persistent=True):
    # Windows asks for persistent handles in its NEGOTIATE; smbprotocol does not unless told.
    capabilities = Capabilities.SMB2_GLOBAL_CAP_PERSISTENT_HANDLES if persistent else 0
    conn, _, tree = smbprotocol_client.connect(server, client_guid=client_guid, capabilities=capabilities)
    return conn, tree


def context(name, data):
    c = SMB2CreateContextRequest()
    c["buffer_name"] = name
    c["buffer_data"] = data
    return c


def create(tree, contexts=None, disposition=CreateDisposition.FILE_OPEN, name=NAME, access=RW, share=SHARE_RW,
           oplock_level=0):
    handle = Open(tree, name)
    response = handle.create(ImpersonationLevel.Impersonation, access, FileAttributes.FILE_ATTRIBUTE_NORMAL, share,
                             disposition, CreateOptions.FILE_NON_DIRECTORY_FILE, create_contexts=contexts,
                             oplock_level=oplock_level)
    return handle, response


def persistent_reconnect(file_id, create_guid):
    """The create context that reclaims a persistent open (MS-SMB2 2.2.13.2.12)."""
    reconnect = SMB2CreateDurableHandleReconnectV2()
    reconnect["file_id"] = file_id
    reconnect["create_guid"] = create_guid
    reconnect["flags"] = DurableHandleFlags.SMB2_DHANDLE_FLAG_PERSISTENT
    return context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_RECONNECT_V2, reconnect)


def persistent_request(timeout_ms=60000):
    request = SMB2CreateDurableHandleRequestV2()
    request["timeout"] = timeout_ms
    request["flags"] = DurableHandleFlags.SMB2_DHANDLE_FLAG_PERSISTENT
    create_guid = uuid.uuid4()
    request["create_guid"] = create_guid
    return context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_REQUEST_V2, request), create_guid


def rename(tree, handle, to):
    """SET_INFO FileRenameInformation (MS-FSCC 2.4.34.2) through `handle`."""
    info = FileRenameInformation()
    info["replace_if_exists"] = False
    info["file_name"] = to
    request = SMB2SetInfoRequest()
    request["info_type"] = info.INFO_TYPE
    request["file_info_class"] = info.INFO_CLASS
    request["file_id"] = handle.file_id
    request["buffer"] = info
    conn = tree.session.connection
    conn.receive(conn.send(request, sid=tree.session.session_id, tid=tree.tree_connect_id))


def durable_v2_flags(contexts):
    for c in contexts or []:
        if isinstance(c, SMB2CreateDurableHandleResponseV2):
            return c["flags"].get_value()
    return None


def lock_element(offset, length):
    element = SMB2LockElement()
    element["offset"] = offset
    element["length"] = length
    element["flags"] = LockFlags.SMB2_LOCKFLAG_EXCLUSIVE_LOCK | LockFlags.SMB2_LOCKFLAG_FAIL_IMMEDIATELY
    return element


def records(server):
    return sorted(p for p in os.listdir(server.state_dir) if p.endswith(".open"))


def test_persistent_handle_survives_a_restart_with_its_lock(ca_smb3d):
    client_guid = uuid.uuid4()
    create_guid = uuid.uuid4()
    first = os.urandom(256 * 1024)
    second = os.urandom(64 * 1024)

    conn_a, tree_a = connect(ca_smb3d, client_guid)
    assert conn_a.server_capabilities.has_flag(Capabilities.SMB2_GLOBAL_CAP_PERSISTENT_HANDLES)
    assert tree_a.is_ca_share
    request = SMB2CreateDurableHandleRequestV2()
    request["timeout"] = 60000
    request["flags"] = DurableHandleFlags.SMB2_DHANDLE_FLAG_PERSISTENT
    request["create_guid"] = create_guid
    a, contexts = create(tree_a, [context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_REQUEST_V2, request)],
                         CreateDisposition.FILE_OVERWRITE_IF)
    assert durable_v2_flags(contexts) == DurableHandleFlags.SMB2_DHANDLE_FLAG_PERSISTENT
    file_id = a.file_id
    assert len(records(ca_smb3d)) == 1

    a.write(first, 0)
    a.lock([lock_element(0, 4096)])
    # Data never goes through the state directory: writes leave the record as the LOCK left it.
    record = ca_smb3d.state_dir / records(ca_smb3d)[0]
    written = os.stat(record)
    a.write(first[:4096], 0)
    assert (os.stat(record).st_ino, os.stat(record).st_mtime_ns) == (written.st_ino, written.st_mtime_ns)

    restart(ca_smb3d)
    assert "persistent open(s) restored" in ca_smb3d.log.read_text(errors="replace")

    # While A is away its persistent open keeps everyone else out.
    conn_b, tree_b = connect(ca_smb3d, uuid.uuid4(), persistent=False)
    try:
        with pytest.raises(SMBResponseException) as refused:
            create(tree_b)
        assert refused.value.status == STATUS_FILE_NOT_AVAILABLE

        # A comes back on a new connection and session and reclaims its open.
        conn_a2, tree_a2 = connect(ca_smb3d, client_guid)
        try:
            a2, _ = create(tree_a2, [persistent_reconnect(file_id, create_guid)])
            assert a2.file_id[:8] == file_id[:8], "the persistent FileId stays"
            a2.write(second, len(first))
            assert a2.read(0, len(first)) == first
            assert a2.read(len(first), len(second)) == second

            # B may open the file again, but A's lock came back with its open.
            b, _ = create(tree_b)
            with pytest.raises(SMBResponseException) as refused:
                b.lock([lock_element(0, 4096)])
            assert refused.value.status == STATUS_LOCK_NOT_GRANTED
            with pytest.raises(SMBResponseException) as refused:
                b.write(b"B", 100)
            assert refused.value.status == STATUS_FILE_LOCK_CONFLICT
            assert b.read(len(first), len(second)) == second

            # Closing the handle removes its record and its lock.
            a2.close()
            assert records(ca_smb3d) == []
            b.lock([lock_element(0, 4096)])
            b.close()
        finally:
            conn_a2.disconnect()
    finally:
        conn_b.disconnect()
    time.sleep(0.1)
    assert ca_smb3d.alive(), ca_smb3d.log_tail()


def test_a_non_ca_share_answers_a_persistent_request_as_durable(tmp_path):
    """MS-SMB2 3.3.5.9.10: without continuous availability the persistent flag is not granted
    (and the server offers no persistent handles at all); a request with handle caching is
    still durable."""
    server = start_smb3d(tmp_path, extra_config='state_dir = "%s"' % (tmp_path / "state"))
    try:
        conn, tree = connect(server, uuid.uuid4())
        try:
            assert not conn.server_capabilities.has_flag(Capabilities.SMB2_GLOBAL_CAP_PERSISTENT_HANDLES)
            assert not tree.is_ca_share
            request = SMB2CreateDurableHandleRequestV2()
            request["flags"] = DurableHandleFlags.SMB2_DHANDLE_FLAG_PERSISTENT
            request["create_guid"] = uuid.uuid4()
            handle, contexts = create(tree, [context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_REQUEST_V2,
                                                     request)], CreateDisposition.FILE_OVERWRITE_IF)
            assert durable_v2_flags(contexts) is None, "no handle caching: neither durable nor persistent"
            handle.close()
            assert not (tmp_path / "state").exists()
        finally:
            conn.disconnect()
    finally:
        stop(server)


@pytest.mark.parametrize("name", ["smb2.durable-v2-open.persistent-open-oplock",
                                  "smb2.durable-v2-open.persistent-open-lease", "smb2.replay.replay5"])
def test_smbtorture_persistent_opens_on_a_ca_share(ca_smb3d, name):
    """On a share that says continuous availability smbtorture expects every oplock and lease
    level to give a persistent, durable open (Windows' table), and a replayed persistent
    CREATE after a disconnect to reclaim its open, answered as the first time (replay5, which
    skips on other shares)."""
    results, output = run_suite(ca_smb3d, name)
    assert results == {name: "success"}, output[-4000:] + "\n--- server log ---\n" + ca_smb3d.log_tail()
    # The opens were persistent: their records were written, and removed at their close.
    assert ca_smb3d.state_dir.is_dir() and records(ca_smb3d) == []


def test_restored_opens_expire_and_vanished_files_are_dropped(ca_smb3d):
    """A restored open nobody reclaims is closed at its timeout, counted from the restart, and
    its record goes; a record whose file vanished while smb3d was down is dropped at start."""
    conn, tree = connect(ca_smb3d, uuid.uuid4())
    for name in ("kept.dat", "vanishing.dat"):
        request = SMB2CreateDurableHandleRequestV2()
        request["timeout"] = 2000
        request["flags"] = DurableHandleFlags.SMB2_DHANDLE_FLAG_PERSISTENT
        request["create_guid"] = uuid.uuid4()
        handle, _ = create(tree, [context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_REQUEST_V2, request)],
                           CreateDisposition.FILE_OVERWRITE_IF, name)
        handle.write(b"data", 0)
    assert len(records(ca_smb3d)) == 2
    ca_smb3d.proc.kill()
    ca_smb3d.proc.wait(10)
    os.unlink(ca_smb3d.share_dir / "vanishing.dat")
    restart(ca_smb3d)
    restarted = time.monotonic()
    log = ca_smb3d.log.read_text(errors="replace")
    assert "dropped" in log and "vanishing.dat" in log, log
    assert len(records(ca_smb3d)) == 1

    other, other_tree = connect(ca_smb3d, uuid.uuid4(), persistent=False)
    try:
        with pytest.raises(SMBResponseException) as refused:
            create(other_tree, name="kept.dat")
        assert refused.value.status == STATUS_FILE_NOT_AVAILABLE
        while records(ca_smb3d):
            assert time.monotonic() - restarted < 10, "the restored open outlived its timeout"
            time.sleep(0.1)
        assert time.monotonic() - restarted >= 1.5, "closed before its timeout"
        handle, _ = create(other_tree, name="kept.dat")
        assert handle.read(0, 4) == b"data"
        handle.close()
    finally:
        other.disconnect()


def test_a_rename_by_another_client_reaches_the_record(ca_smb3d):
    """B renames the file A holds a persistent handle on (A shares delete); after a restart
    A's open is found under the new name and A reconnects to it."""
    client_guid = uuid.uuid4()
    conn_a, tree_a = connect(ca_smb3d, client_guid)
    share_all = SHARE_RW | ShareAccess.FILE_SHARE_DELETE
    durable, create_guid = persistent_request()
    a, _ = create(tree_a, [durable], CreateDisposition.FILE_OVERWRITE_IF, name="before.dat", share=share_all)
    a.write(b"A's data", 0)
    conn_b, tree_b = connect(ca_smb3d, uuid.uuid4(), persistent=False)
    b, _ = create(tree_b, name="before.dat", access=FilePipePrinterAccessMask.DELETE, share=share_all)
    rename(tree_b, b, "after.dat")
    b.close()
    conn_b.disconnect()

    restart(ca_smb3d)
    assert "dropped" not in ca_smb3d.log.read_text(errors="replace")
    conn_a2, tree_a2 = connect(ca_smb3d, client_guid)
    try:
        a2, _ = create(tree_a2, [persistent_reconnect(a.file_id, create_guid)],
                       name="after.dat", share=share_all)
        assert a2.read(0, 8) == b"A's data"
        a2.close()
        assert records(ca_smb3d) == []
    finally:
        conn_a2.disconnect()
