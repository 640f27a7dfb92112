"""Files whose permissions a local administrator gave with POSIX ACLs (`setfacl`), or that Samba
without acl_xattr left, have no valid stored NT ACL: their descriptor is derived from the POSIX
ACL, as Samba's does, so a user an ACL entry names gets what the entry grants, and a
directory's default ACL is what it passes on. Before, the descriptor came from the mode alone
and such a user was refused."""

import os
import struct

import pytest

import secdesc
from conftest import interop_uid, start_smb3d, stop, system_account

# system.posix_acl_access / _default (linux/posix_acl_xattr.h): a version, then tag, perm, id.
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
NO_ID = 0xFFFFFFFF


def posix_acl(*entries):
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, uid) for tag, perm, uid in entries)


def grant(path, uid, perm, default=False):
    """What `setfacl -m u:UID:PERM` (with `default`: `-d -m` too) does, owner rwx, others none."""
    acl = posix_acl((USER_OBJ, 7, NO_ID), (USER, perm, uid), (GROUP_OBJ, 0, NO_ID), (MASK, perm, NO_ID),
                    (OTHER, 0, NO_ID))
    os.setxattr(path, "system.posix_acl_access", acl)
    if default:
        os.setxattr(path, "system.posix_acl_default", acl)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_smb3d(tmp_path_factory.mktemp("posixacl"))
    srv.other_uid = system_account("smb3d-acl-other")
    srv.other = "acl-other%" + srv.add_user("acl-other", srv.other_uid)
    srv.third = "acl-third%" + srv.add_user("acl-third", system_account("smb3d-acl-third"))
    yield srv
    stop(srv)


def test_a_user_an_acl_entry_names_may_read_and_write(server, tmp_path):
    data = tmp_path / "data"
    data.write_bytes(b"granted")
    server.smbclient("put %s named.txt" % data)
    path = server.share_dir / "named.txt"
    os.chown(path, interop_uid(), -1)
    grant(path, server.other_uid, 6)
    back = tmp_path / "back"
    out = server.smbclient("get named.txt %s; put %s named.txt" % (back, data), user=server.other, check=False).stdout
    assert "NT_STATUS" not in out, out
    assert back.read_bytes() == b"granted"
    out = server.smbclient("get named.txt %s" % back, user=server.third, check=False).stdout
    assert "NT_STATUS_ACCESS_DENIED" in out, out


def test_a_directory_s_default_acl_is_passed_on(server, tmp_path):
    folder = server.share_dir / "team"
    folder.mkdir()
    os.chown(folder, interop_uid(), -1)
    grant(folder, server.other_uid, 7, default=True)
    data = tmp_path / "data"
    data.write_bytes(b"for the team")
    # The owner writes a file there; the user the default ACL names may read it.
    server.smbclient("put %s team\\report.txt" % data)
    back = tmp_path / "back"
    out = server.smbclient("get team\\report.txt %s" % back, user=server.other, check=False).stdout
    assert "NT_STATUS" not in out, out
    assert back.read_bytes() == b"for the team"
    out = server.smbclient("put %s team\\theirs.txt" % data, user=server.other, check=False).stdout
    assert "NT_STATUS" not in out, out
    out = server.smbclient("get team\\report.txt %s" % back, user=server.third, check=False).stdout
    assert "NT_STATUS_ACCESS_DENIED" in out, out


def test_a_directory_shows_its_acl_as_samba_does(server):
    """What Samba 4.17 shows for `setfacl -m u:X:rwx,d:u:X:rwx`: one ACE for X that applies to
    the directory and is inherited (OI|CI), CREATOR OWNER and CREATOR GROUP inherit-only."""
    folder = server.share_dir / "shown"
    folder.mkdir()
    os.chown(folder, interop_uid(), -1)
    grant(folder, server.other_uid, 7, default=True)
    client = secdesc.Client(server.port, server.user, server.password)
    try:
        status, buf = client.get_path("shown", options=1)  # FILE_DIRECTORY_FILE
    finally:
        client.close()
    assert buf is not None, status
    flags = {}
    for _, ace_flags, _, sid in secdesc.decode(buf)["dacl"]:
        flags.setdefault(sid, []).append(ace_flags)
    inherit = secdesc.OBJECT_INHERIT | secdesc.CONTAINER_INHERIT
    named = [sid for sid, f in flags.items() if f == [inherit] and sid != secdesc.EVERYONE]
    assert len(named) == 1, flags
    assert flags[secdesc.CREATOR_OWNER] == [inherit | secdesc.INHERIT_ONLY], flags
    assert flags[secdesc.CREATOR_GROUP] == [inherit | secdesc.INHERIT_ONLY], flags
