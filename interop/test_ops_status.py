"""Issue 9, check 1: with two clients connected and a file open, `smb3d status --json` shows both
sessions with dialect, signing and encryption, the tree connects and the open file (and a
byte-range lock); `close-file` and `close-session` act on what it lists."""

import json

import pytest
from smbprotocol.connection import Dialects
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, LockFlags, Open, ShareAccess, SMB2LockElement)

from smbprotocol_client import BIDI_NAME, FORGING_DOMAIN, FORGING_STREAM, connect, connect_claiming, create, unshowable


def open_rw(tree, name):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation,
                  FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
                  CreateDisposition.FILE_OVERWRITE_IF, CreateOptions.FILE_NON_DIRECTORY_FILE)
    return handle


def status(server):
    return json.loads(server.ctl("status", "--json").stdout)


@pytest.fixture
def two_clients(smb3d):
    """An encrypted SMB 3.1.1 client holding held.txt open with a lock, and a signed SMB 3.0.2
    client connected."""
    first = connect(smb3d, dialect=Dialects.SMB_3_1_1, require_signing=True, encrypt=True)
    second = connect(smb3d, dialect=Dialects.SMB_3_0_2, require_signing=True)
    handle = open_rw(first[2], "held.txt")
    handle.write(b"hello status", 0)
    lock = SMB2LockElement()
    lock["offset"] = 2
    lock["length"] = 5
    lock["flags"] = LockFlags.SMB2_LOCKFLAG_EXCLUSIVE_LOCK | LockFlags.SMB2_LOCKFLAG_FAIL_IMMEDIATELY
    handle.lock([lock])
    yield smb3d, first, second, handle
    for conn, _, _ in (first, second):
        try:
            conn.disconnect()
        except Exception:
            pass


def test_status_json_shows_sessions_trees_and_open_file(two_clients):
    server, first, second, _ = two_clients
    report = status(server)
    sessions = list(report["sessions"].values())
    assert len(sessions) == 2, report
    by_dialect = {s["session_dialect"]: s for s in sessions}
    assert set(by_dialect) == {"SMB3_11", "SMB3_02"}, report
    for s in sessions:
        assert s["username"] == server.user
        assert s["remote_machine"] == "127.0.0.1"
        assert s["hostname"].startswith("ipv4:127.0.0.1:")
        assert s["session_id"] in report["sessions"]
    # The 3.1.1 client encrypts without the server requiring it, and both clients require
    # signing: what Samba 4.17's smbstatus reports for the same clients.
    assert by_dialect["SMB3_11"]["encryption"] == {"cipher": "AES-128-GCM", "degree": "partial"}
    assert by_dialect["SMB3_11"]["signing"] == {"cipher": "AES-128-GMAC", "degree": "full"}
    assert by_dialect["SMB3_02"]["encryption"] == {"cipher": "-", "degree": "none"}
    assert by_dialect["SMB3_02"]["signing"] == {"cipher": "AES-128-CMAC", "degree": "full"}

    tcons = list(report["tcons"].values())
    assert len(tcons) == 2
    assert {t["service"] for t in tcons} == {server.share}
    assert {t["session_id"] for t in tcons} == {s["session_id"] for s in sessions}

    files = report["open_files"]
    key = str(server.share_dir / "held.txt")
    assert list(files) == [key], files
    held = files[key]
    assert held["service_path"] == str(server.share_dir)
    assert held["filename"] == "held.txt"
    (open_id, entry), = held["opens"].items()
    assert entry["session_id"] == by_dialect["SMB3_11"]["session_id"]
    assert entry["sharemode"]["text"] == "RW"
    assert entry["access_mask"]["READ_DATA"] and entry["access_mask"]["WRITE_DATA"]
    assert entry["access_mask"]["text"] == "RW"

    locks = report["byte_range_locks"][key]["locks"]
    assert locks == [{"server_id": locks[0]["server_id"], "share_file_id": open_id, "type": "W",
                      "flavour": "Windows", "start": 2, "size": 5}]

    table = server.ctl("status").stdout
    assert "SMB3_11" in table and "partial(AES-128-GCM)" in table, table
    assert "held.txt" in table and "RDWR" in table, table
    assert "Byte range locks:" in table


def test_close_file_and_close_session(two_clients):
    server, first, second, handle = two_clients
    report = status(server)
    held = next(iter(report["open_files"].values()))
    open_id = next(iter(held["opens"]))
    server.ctl("close-file", open_id)
    assert status(server)["open_files"] == {}
    with pytest.raises(SMBResponseException) as closed:
        handle.read(0, 5)
    assert closed.value.status == 0xC0000128  # STATUS_FILE_CLOSED

    second_id = next(s["session_id"] for s in report["sessions"].values() if s["session_dialect"] == "SMB3_02")
    out = server.ctl("close-session", second_id)
    assert out.stdout.strip() == "session %s closed" % second_id
    remaining = status(server)["sessions"]
    assert list(remaining) == [next(s for s in report["sessions"] if s != second_id)]
    # The first client is unaffected.
    open_rw(first[2], "after.txt").close()

    missing = server.ctl("close-session", second_id, check=False)
    assert missing.returncode != 0 and "no session has id" in missing.stderr


def test_status_shows_the_proven_account_and_escapes_what_clients_chose(smb3d):
    """Issue 16: a session that claims a domain able to forge lines and holds a file whose name
    holds a right-to-left override (and a stream named with terminal escapes) shows, in
    `smb3d status` and its JSON, the account it proved, the server's domain, the claimed domain
    apart, and every client string escaped."""
    conn, _, tree = connect_claiming(smb3d, FORGING_DOMAIN)
    try:
        held = [create(tree, BIDI_NAME), create(tree, "f.txt"), create(tree, "f.txt:" + FORGING_STREAM)]
        table = smb3d.ctl("status").stdout
        report = status(smb3d)
        for handle in held:
            handle.close()
    finally:
        conn.disconnect()
    assert not unshowable(table), table
    assert "evil\\u{202e}txt.exe" in table, table
    (session,) = report["sessions"].values()
    assert session["username"] == smb3d.user, session
    assert session["domain"] == "SMB3D", session
    assert session["claimed_domain"] == "EV\\u{1b}[31mIL\\nINFO audit: forged", session
    # An open of a stream is listed under its file.
    names = {f["filename"] for f in report["open_files"].values()}
    assert names == {"evil\\u{202e}txt.exe", "f.txt"}, names
    assert not unshowable(json.dumps(report, ensure_ascii=False)), report


def test_status_shows_a_batch_oplock_and_an_rwh_lease(smb3d):
    """Issue 23 item 7: status shows the caching opens hold, as smbstatus shows it: a BATCH
    oplock and an RWH lease, in --json and in the table."""
    import uuid

    from smbprotocol.open import RequestedOplockLevel
    from test_two_clients import H, R, W, granted_lease_state, lease_context, open_file

    conn, _, tree = connect(smb3d)
    try:
        batch, _ = open_file(tree, "batch.txt", CreateDisposition.FILE_OVERWRITE_IF,
                             oplock=RequestedOplockLevel.SMB2_OPLOCK_LEVEL_BATCH)
        assert batch.oplock_level == RequestedOplockLevel.SMB2_OPLOCK_LEVEL_BATCH
        key = uuid.uuid4().bytes
        leased, contexts = open_file(tree, "leased.txt", CreateDisposition.FILE_OVERWRITE_IF,
                                     contexts=[lease_context(key, R | W | H)],
                                     oplock=RequestedOplockLevel.SMB2_OPLOCK_LEVEL_LEASE)
        assert granted_lease_state(contexts) == R | W | H

        files = status(smb3d)["open_files"]
        (batch_open,) = files[str(smb3d.share_dir / "batch.txt")]["opens"].values()
        # What Samba 4.17's smbstatus --json showed for the same opens side by side.
        assert batch_open["oplock"] == {"EXCLUSIVE": True, "BATCH": True, "LEVEL_II": False, "LEASE": False,
                                        "text": "BATCH"}, batch_open
        assert batch_open["caching"] == {"READ": True, "WRITE": True, "HANDLE": False, "hex": "0x00000005",
                                         "text": "RW"}, batch_open
        assert batch_open["lease"] == {}
        (lease_open,) = files[str(smb3d.share_dir / "leased.txt")]["opens"].values()
        assert lease_open["oplock"] == {"EXCLUSIVE": False, "BATCH": False, "LEVEL_II": False, "LEASE": True,
                                        "text": "LEASE(RWH)"}, lease_open
        assert lease_open["lease"] == {"lease_key": str(uuid.UUID(bytes_le=key)), "hex": "0x00000007", "READ": True,
                                       "WRITE": True, "HANDLE": True, "text": "RWH"}, lease_open
        assert lease_open["caching"] == {"READ": True, "WRITE": True, "HANDLE": True, "hex": "0x00000007",
                                         "text": "RWH"}, lease_open

        table = smb3d.ctl("status").stdout
        assert any("BATCH" in line and "batch.txt" in line for line in table.splitlines()), table
        assert any("LEASE(RWH)" in line and "leased.txt" in line for line in table.splitlines()), table
    finally:
        conn.disconnect()


def test_close_share_disconnects_its_tree_connects(smb3d):
    """`smb3d close-share NAME`, as `smbcontrol smbd close-share`: every tree connect of the share
    is gone, its opens closed; the client's next request on that tree gets
    NETWORK_NAME_DELETED, as Samba answers it, and a new tree connect works."""
    from smbprotocol.tree import TreeConnect

    conn, session, tree = connect(smb3d)
    try:
        handle = open_rw(tree, "closed-share.txt")
        handle.write(b"before", 0)
        assert len(status(smb3d)["tcons"]) == 1
        out = smb3d.ctl("close-share", smb3d.share.upper()).stdout
        assert "1 tree connect(s) closed" in out, out
        report = status(smb3d)
        assert report["tcons"] == {} and report["open_files"] == {}, report
        with pytest.raises(SMBResponseException) as refused:
            open_rw(tree, "closed-share.txt")
        assert refused.value.status == 0xC00000C9, refused.value  # STATUS_NETWORK_NAME_DELETED
        again = TreeConnect(session, tree.share_name)
        again.connect()
        reopened = Open(again, "closed-share.txt")
        reopened.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_READ,
                        FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                        CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
        assert reopened.read(0, 6) == b"before"
        assert "0 tree connect(s) closed" in smb3d.ctl("close-share", "no-such-share").stdout
    finally:
        # smbprotocol's own cleanup of the closed tree is refused (NETWORK_NAME_DELETED).
        try:
            conn.disconnect()
        except Exception:
            pass
