"""smb3d running as an ordinary service account (not root): every file-system call is the
service's own, so users' access is decided by the NT ACLs (kept in user.NTACL) and the
configuration alone, and the creator of a file owns it in its descriptor (docs/security-model.md)."""

import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest

import secdesc
import smb2raw
from conftest import interop_uid, start_smb3d, stop, system_account

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="needs root to make the accounts and drop to one")

SERVICE = "smb3d-interop-svc"
OTHER_ACCOUNT = "smb3d-interop-b"
READ = smb2raw.GENERIC_READ_FILE
ALL = 0x001F01FF
FILE_WRITE_DATA = 0x2


@pytest.fixture(scope="module")
def server():
    service_uid = system_account(SERVICE)
    # The service must reach its configuration and share: no private pytest directory above.
    root = Path(tempfile.mkdtemp(prefix="smb3d-unprivileged-"))
    root.chmod(0o755)
    server = start_smb3d(root, service_account=SERVICE)
    # The share root lets everyone in, as a share's top directory usually does.
    server.share_dir.chmod(0o777)
    server.other_password = server.add_user("other", system_account(OTHER_ACCOUNT))
    assert os.stat(server.share_dir).st_uid == service_uid
    yield server
    stop(server)
    shutil.rmtree(root)


def client(server, who="tester"):
    return secdesc.Client(server.port, who, server.password if who == "tester" else server.other_password)


def user_sid(like, uid):
    """The SID of the user `uid` in the domain of the SID `like` (the server's algorithmic RIDs)."""
    return like.rsplit("-", 1)[0] + "-%d" % (uid * 2 + 1000)


def create(c, name, directory=False):
    r, fid = c.open(name, ALL, smb2raw.FILE_CREATE, options=smb2raw.FILE_DIRECTORY_FILE if directory else 0,
                    attrs=0x10 if directory else 0x80)
    assert fid is not None, "%s: %s" % (name, r.name)
    return fid


def test_server_runs_as_the_service(server):
    status = Path("/proc/%d/status" % server.proc.pid).read_text()
    uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
    assert {pwd.getpwuid(int(u)).pw_name for u in uids} == {SERVICE}


def test_creator_owns_what_it_makes_in_the_descriptor(server):
    a = client(server)
    fid = create(a, "mine.txt")
    assert a.c.write(fid, 0, b"mine").status == 0
    name, raw = a.get(fid)
    sd = secdesc.decode(raw)
    a.c.close_file(fid)
    path = server.share_dir / "mine.txt"
    # On disk the file is the service's; the descriptor, in user.NTACL, says whose it is.
    assert os.stat(path).st_uid == system_account(SERVICE)
    assert "user.NTACL" in os.listxattr(path) and "security.NTACL" not in os.listxattr(path)
    assert sd["owner"] == user_sid(sd["owner"], interop_uid())
    owner_aces = [mask for kind, _, mask, sid in sd["dacl"] if sid == sd["owner"]]
    assert owner_aces == [ALL], sd
    # Others may read (the mode's read bits), not write.
    b = client(server, "other")
    r, fid = b.open("mine.txt", READ)
    assert fid is not None, r.name
    assert b.c.read(fid, 0, 10)[1] == b"mine"
    b.c.close_file(fid)
    r, _ = b.open("mine.txt", FILE_WRITE_DATA)
    assert r.name == "STATUS_ACCESS_DENIED"
    a.close()
    b.close()


def test_acls_decide_and_the_mode_stays(server):
    a, b = client(server), client(server, "other")
    create_fid = create(a, "private.txt")
    owner = secdesc.decode(a.get(create_fid)[1])["owner"]
    a.c.close_file(create_fid)
    path = server.share_dir / "private.txt"
    mode = os.stat(path).st_mode
    assert a.set_path("private.txt", secdesc.descriptor(dacl=[secdesc.ace(owner, ALL)]),
                      secdesc.DACL) == "STATUS_SUCCESS"
    # The service keeps its own access to every file; the ACL alone shuts the others out.
    assert os.stat(path).st_mode == mode
    r, _ = b.open("private.txt", READ)
    assert r.name == "STATUS_ACCESS_DENIED"
    r, fid = a.open("private.txt", READ | FILE_WRITE_DATA)
    assert fid is not None, r.name
    a.c.close_file(fid)
    # A file cannot be given away, only taken.
    other_sid = user_sid(owner, system_account(OTHER_ACCOUNT))
    assert a.set_path("private.txt", secdesc.descriptor(owner=other_sid), secdesc.OWNER) == "STATUS_INVALID_OWNER"
    a.close()
    b.close()


def test_directories_admit_only_whom_their_acl_admits(server):
    a, b = client(server), client(server, "other")
    a.c.close_file(create(a, "adir", directory=True))
    r, _ = b.open("adir\\intruder.txt", ALL, smb2raw.FILE_CREATE)
    assert r.name == "STATUS_ACCESS_DENIED"
    a.c.close_file(create(a, "adir\\ok.txt"))
    # Nor may B move its own file into A's directory.
    b.c.close_file(create(b, "theirs.txt"))
    r, fid = b.open("theirs.txt", 0x00110000)
    assert fid is not None, r.name
    info = smb2raw.rename_info("adir\\theirs.txt")
    rr = b.c.request(smb2raw.SET_INFO, smb2raw.set_info_body(fid, 1, 10, info))
    assert rr.name == "STATUS_ACCESS_DENIED"
    b.c.close_file(fid)
    a.close()
    b.close()
