"""A share that keeps no metadata in xattrs (issue 21 item 4), as Samba's `store dos attributes =
no`, `ea support = no` and no streams module: DOS attributes round-trip through the mode as
Samba maps them (ARCHIVE is the owner execute bit, READONLY clears the write bits and is not
shown), EAs and named streams are refused with Samba's statuses, and nothing the clients do
leaves an xattr on the files. Only the owner changes the mode through attributes: another user
with write access to the file cannot."""

import os
import stat
import subprocess
import uuid

import pytest
from smbprotocol.connection import Connection
from smbprotocol.create_contexts import CreateContextName, SMB2CreateContextRequest, SMB2CreateEABuffer
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess)
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from conftest import start_smb3d, stop, system_account

OPTIONS = {"store_dos_attributes": False, "ea_support": False, "streams_xattr": False}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("noxattr")
    share = tmp / "share"
    share.mkdir()
    srv = start_smb3d(tmp, shares={"share": {"path": str(share), **OPTIONS}})
    yield srv
    stop(srv)


def mode(server, name):
    return stat.S_IMODE(os.stat(server.share_dir / name).st_mode)


def attributes(server, name):
    out = server.smbclient('allinfo "%s"' % name).stdout
    return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("attributes:"))


def test_attributes_round_trip_through_the_mode(server, tmp_path):
    data = tmp_path / "data"
    data.write_bytes(b"x")
    server.smbclient("put %s f; put %s .dot; mkdir d" % (data, data))
    # A new file is ARCHIVE, kept as the owner execute bit (create mask 0744).
    assert mode(server, "f") == 0o744
    assert attributes(server, "f") == "A (20)"
    assert attributes(server, ".dot") == "HA (22)"
    server.smbclient("setmode f +r")
    assert mode(server, "f") == 0o544
    # READONLY is kept in the write bits, which Samba does not show back either.
    assert attributes(server, "f") == "A (20)"
    # Attributes without READONLY give the owner write back (as the owner could with chmod).
    server.smbclient("setmode f -a")
    assert (mode(server, "f"), attributes(server, "f")) == (0o644, "(80)")
    server.smbclient("setmode f +r")
    assert (mode(server, "f"), attributes(server, "f")) == (0o444, "(80)")
    # Setting what it reads back changes nothing: READONLY stays in the mode.
    server.smbclient("setmode f -r")
    assert mode(server, "f") == 0o444
    server.smbclient("setmode f +a")
    assert mode(server, "f") == 0o744
    # What the mode cannot keep is dropped without touching the mode; directories keep none.
    server.smbclient("setmode f +hs; setmode d +r")
    assert (mode(server, "f"), attributes(server, "f")) == (0o744, "A (20)")
    assert (mode(server, "d"), attributes(server, "d")) == (0o755, "D (10)")


def test_eas_and_streams_are_refused(server, tmp_path):
    data = tmp_path / "data"
    data.write_bytes(b"x")
    server.smbclient("put %s e" % data)
    out = server.smbclient("geteas e; setea e user.Author x; put %s e:Zone.Identifier" % data, check=False).stdout
    assert "NT_STATUS_NO_EAS_ON_FILE" in out, out
    assert "NT_STATUS_EAS_NOT_SUPPORTED" in out, out
    assert "NT_STATUS_OBJECT_NAME_INVALID" in out, out
    streams = [line for line in server.smbclient('allinfo e').stdout.splitlines() if line.startswith("stream:")]
    assert streams == ["stream: [::$DATA], 1 bytes"], streams
    # An EA buffer in a CREATE is refused before anything is made (Samba answers the same).
    conn = Connection(uuid.uuid4(), "127.0.0.1", server.port)
    conn.connect()
    try:
        session = Session(conn, server.user, server.password)
        session.connect()
        tree = TreeConnect(session, r"\\127.0.0.1\share")
        tree.connect()
        ea = SMB2CreateEABuffer()
        ea["ea_name"] = b"Author\x00"
        ea["ea_value"] = b"x"
        context = SMB2CreateContextRequest()
        context["buffer_name"] = CreateContextName.SMB2_CREATE_EA_BUFFER
        context["buffer_data"] = ea
        handle = Open(tree, "with-ea")
        with pytest.raises(SMBResponseException) as refused:
            handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_WRITE,
                          FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                          CreateDisposition.FILE_CREATE, CreateOptions.FILE_NON_DIRECTORY_FILE, [context])
        assert refused.value.status == 0xC000004F  # STATUS_EAS_NOT_SUPPORTED
    finally:
        conn.disconnect()
    assert not (server.share_dir / "with-ea").exists()


def test_another_user_cannot_change_the_mode(server, tmp_path):
    data = tmp_path / "data"
    data.write_bytes(b"x")
    server.smbclient("put %s shared" % data)
    os.chmod(server.share_dir / "shared", 0o666)
    other = server.add_user("noxattr-other", system_account("smb3d-noxattr2"))
    out = server.smbclient("setmode shared +r; setmode shared +a", user="noxattr-other%" + other, check=False).stdout
    assert out.count("NT_STATUS_ACCESS_DENIED") == 2, out
    assert mode(server, "shared") == 0o666


def test_no_xattr_is_left_on_the_files(server):
    # Runs last: whatever the tests above did through the share left no xattr behind.
    names = [str(p) for p in sorted(server.share_dir.rglob("*"))]
    assert len(names) >= 4, names
    r = subprocess.run(["getfattr", "-h", "-d", "-m", "-", *names], capture_output=True, text=True)
    assert r.stdout.strip() == "", r.stdout
