"""Previous versions (`snapshots = "directory"`): snapshots of the share in
`.snapshots/@GMT-YYYY.MM.DD-hh.mm.ss`, laid out as Samba's selftest lays them out for
vfs_shadow_copy2 (source3/script/tests/test_shadow_copy.sh: `foo` in the share and in the
snapshot, `subdir/hardlink` hard-linked into it, a stream on the snapshot's `foo`), seen by
smbtorture smb2.twrp, smbprotocol (FSCTL_SRV_ENUMERATE_SNAPSHOTS, TWrp) and smbclient (@GMT
paths); side by side with Samba on the same tree; read-only and confined to the snapshot."""

import datetime
import os
import shutil
import struct
import subprocess

import pytest
from smbprotocol.create_contexts import SMB2CreateContextRequest
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.ioctl import CtlCode
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess)

import samba
from conftest import start_smb3d, stop
from server_copy import ioctl
from smbprotocol_client import connect
from torture import run_suite

SNAPSHOT = "@GMT-2015.10.31-19.40.30"
NEWER = "@GMT-2016.01.02-03.04.05"
MEDIA_WRITE_PROTECTED = 0xC00000A2
OBJECT_NAME_NOT_FOUND = 0xC0000034
INVALID_PARAMETER = 0xC000000D
OBJECT_PATH_SYNTAX_BAD = 0xC000003B


def filetime(token):
    moment = datetime.datetime.strptime(token, "@GMT-%Y.%m.%d-%H.%M.%S").replace(tzinfo=datetime.timezone.utc)
    return (int(moment.timestamp()) + 11644473600) * 10_000_000


def build_snapshots(share):
    """The tree Samba's selftest builds (build_files, build_snapshots, build_stream_on_snapshot),
    and a second, newer snapshot."""
    (share / "foo").write_text("live\n")
    (share / "subdir").mkdir(exist_ok=True)
    (share / "subdir" / "hardlink").touch()
    snap = share / ".snapshots" / SNAPSHOT
    (snap / "subdir").mkdir(parents=True)
    (snap / "foo").write_text("old\n")
    os.link(share / "subdir" / "hardlink", snap / "subdir" / "hardlink")
    os.setxattr(snap / "foo", "user.DosStream.bar:$DATA", b"baz\0")
    newer = share / ".snapshots" / NEWER
    newer.mkdir()
    (newer / "foo").write_text("newer\n")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("snapshots")
    share = tmp / "share"
    share.mkdir()
    build_snapshots(share)
    srv = start_smb3d(tmp, shares={"share": {"path": str(share), "snapshots": "directory"}})
    for root, dirs, files in os.walk(share):
        srv.own(root, *(os.path.join(root, f) for f in files))
    yield srv
    stop(srv)


def open_in(tree, name, twrp=None, access=FilePipePrinterAccessMask.GENERIC_READ,
            disposition=CreateDisposition.FILE_OPEN, options=CreateOptions.FILE_NON_DIRECTORY_FILE):
    contexts = []
    if twrp is not None:
        context = SMB2CreateContextRequest()
        context["buffer_name"] = b"TWrp"
        context["buffer_data"] = struct.pack("<Q", twrp)
        contexts.append(context)
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, access, FileAttributes.FILE_ATTRIBUTE_NORMAL,
                  ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE | ShareAccess.FILE_SHARE_DELETE,
                  disposition, options, create_contexts=contexts)
    return handle


def status_of(work):
    with pytest.raises(SMBResponseException) as caught:
        work()
    return caught.value.status


def enumerate_snapshots(tree, max_output):
    root = open_in(tree, "", options=CreateOptions.FILE_DIRECTORY_FILE)
    try:
        return ioctl(root, CtlCode.FSCTL_SRV_ENUMERATE_SNAPSHOTS, max_output=max_output)
    finally:
        root.close()


def tokens_of(answer):
    count, returned, size = struct.unpack("<III", answer[:12])
    names = answer[12:12 + size].decode("utf-16-le").split("\0")
    return count, returned, size, [n for n in names if n]


def test_smbtorture_twrp(server):
    """smb2.twrp as Samba's selftest runs it: write (a write through a snapshot open is
    STATUS_MEDIA_WRITE_PROTECTED), stream, openroot, listdir (File-Ids in the snapshot)."""
    results, output = run_suite(server, "smb2.twrp", extra=[
        "--option=torture:twrp_file=foo", "--option=torture:twrp_stream=bar",
        "--option=torture:twrp_stream_size=3", "--option=torture:twrp_snapshot=" + SNAPSHOT])
    assert results == {"smb2.twrp." + t: "success" for t in ("write", "stream", "openroot", "listdir")}, \
        output[-4000:] + server.log_tail()


def test_enumerate_snapshots_newest_first(server):
    conn, session, tree = connect(server)
    try:
        count, returned, size, names = tokens_of(enumerate_snapshots(tree, 65536))
        assert (count, returned, size, names) == (2, 2, 102, [NEWER, SNAPSHOT])
        # Too small for the tokens: only the counts and the size they need (MS-SMB2 3.3.5.15.1).
        answer = enumerate_snapshots(tree, 16)
        assert answer == struct.pack("<IIII", 2, 0, 102, 0)
        assert enumerate_snapshots(tree, 113) == answer
        assert status_of(lambda: enumerate_snapshots(tree, 15)) == INVALID_PARAMETER
    finally:
        conn.disconnect()


def test_read_an_old_version(server):
    """The old `foo` through a TWrp context (smbprotocol) and an @GMT path (smbclient)."""
    conn, session, tree = connect(server)
    try:
        handle = open_in(tree, "foo", twrp=filetime(SNAPSHOT) + 1234)
        assert handle.read(0, 100) == b"old\n"
        handle.close()
        handle = open_in(tree, "foo", twrp=filetime(NEWER))
        assert handle.read(0, 100) == b"newer\n"
        handle.close()
        assert open_in(tree, "foo").read(0, 100) == b"live\n"
        # A snapshot the share does not have.
        missing = filetime("@GMT-2015.10.31-19.40.31")
        assert status_of(lambda: open_in(tree, "foo", twrp=missing)) == OBJECT_NAME_NOT_FOUND
        assert status_of(lambda: open_in(tree, "foo", twrp=(1 << 63) + 5)) == OBJECT_NAME_NOT_FOUND
    finally:
        conn.disconnect()
    out = server.smbclient("get %s\\foo -" % SNAPSHOT).stdout
    assert "old" in out and "live" not in out, out
    listing = server.smbclient("ls %s\\subdir\\*" % SNAPSHOT).stdout
    assert "hardlink" in listing, listing


def test_snapshots_are_read_only(server):
    conn, session, tree = connect(server)
    try:
        twrp = filetime(SNAPSHOT)
        write = FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE
        handle = open_in(tree, "foo", twrp=twrp, access=write)
        assert status_of(lambda: handle.write(b"123", 0)) == MEDIA_WRITE_PROTECTED
        handle.close()
        for disposition in (CreateDisposition.FILE_CREATE, CreateDisposition.FILE_OVERWRITE_IF,
                            CreateDisposition.FILE_SUPERSEDE):
            assert status_of(lambda: open_in(tree, "new", twrp=twrp, access=write,
                                             disposition=disposition)) == MEDIA_WRITE_PROTECTED
        assert status_of(lambda: open_in(tree, "foo", twrp=twrp, access=FilePipePrinterAccessMask.DELETE,
                                         options=CreateOptions.FILE_DELETE_ON_CLOSE)) == MEDIA_WRITE_PROTECTED
    finally:
        conn.disconnect()
    r = server.smbclient("rm %s\\foo; rename %s\\foo bar; mkdir %s\\d" % ((SNAPSHOT,) * 3), check=False)
    assert "NT_STATUS_OK" not in r.stdout
    snap = server.share_dir / ".snapshots" / SNAPSHOT
    assert (snap / "foo").read_text() == "old\n" and sorted(os.listdir(snap)) == ["foo", "subdir"]


def test_snapshot_directory_is_hidden_and_closed(server):
    """`.snapshots` is vetoed: not listed, not opened, so a snapshot is never written by its path."""
    listing = server.smbclient("ls").stdout
    assert ".snapshots" not in listing and "foo" in listing, listing
    r = server.smbclient("get .snapshots\\%s\\foo -" % SNAPSHOT, check=False)
    assert "NT_STATUS_OBJECT_PATH_NOT_FOUND" in r.stdout or "NT_STATUS_OBJECT_NAME_NOT_FOUND" in r.stdout, r.stdout
    r = server.smbclient("put /etc/hostname .snapshots\\x", check=False)
    assert "NT_STATUS_OK" not in r.stdout and not (server.share_dir / ".snapshots" / "x").exists()


def test_confined_to_the_snapshot(server):
    """A symlink in a snapshot leads nowhere outside it (not even into the live share), `..`
    does not climb out, and a snapshot directory that is a symlink out of the share is none."""
    snap = server.share_dir / ".snapshots" / SNAPSHOT
    os.symlink("../../foo", snap / "escape")
    outside = server.share_dir.parent / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "foo").write_text("secret\n")
    os.symlink(str(outside), server.share_dir / ".snapshots" / "@GMT-2020.01.01-00.00.00")
    try:
        for path in ("%s\\escape" % SNAPSHOT, "@GMT-2020.01.01-00.00.00\\foo"):
            r = server.smbclient("get %s -" % path, check=False)
            assert "live" not in r.stdout.replace("escape", "") and "secret" not in r.stdout \
                and "NT_STATUS_" in r.stdout, (path, r.stdout)
        conn, session, tree = connect(server)
        try:
            # smbclient resolves `..` itself; sent as it is, `..` is resolved in the name before
            # the snapshot is chosen, and above the root it is no name at all.
            twrp = filetime(SNAPSHOT)
            for name, context in (("%s\\..\\..\\foo" % SNAPSHOT, None),
                                  ("subdir\\..\\..\\foo", twrp), ("..\\foo", twrp)):
                assert status_of(lambda: open_in(tree, name, twrp=context)) == OBJECT_PATH_SYNTAX_BAD
            handle = open_in(tree, "subdir\\..\\foo", twrp=twrp)
            assert handle.read(0, 100) == b"old\n"
            handle.close()
            _, _, _, names = tokens_of(enumerate_snapshots(tree, 65536))
            assert names == [NEWER, SNAPSHOT]
        finally:
            conn.disconnect()
    finally:
        os.unlink(snap / "escape")
        os.unlink(server.share_dir / ".snapshots" / "@GMT-2020.01.01-00.00.00")


def test_hostile_tokens(server):
    """Tokens with impossible dates and very long names are plain names that do not exist;
    a TWrp context on a share without snapshots names no snapshot."""
    for name in ("@GMT-2015.02.30-00.00.00\\foo", "@GMT-2015.10.31-25.40.30\\foo", "@GMT-" + "9" * 250 + "\\foo"):
        r = server.smbclient("get %s -" % name, check=False)
        assert "NT_STATUS_OBJECT_PATH_NOT_FOUND" in r.stdout or "NT_STATUS_OBJECT_NAME" in r.stdout, (name, r.stdout)


def test_thousands_of_snapshots(tmp_path):
    """3000 snapshots: the answer to 64 KiB is the counts only, bounded; a larger buffer gets
    them all, newest first."""
    share = tmp_path / "share"
    share.mkdir()
    tokens = []
    for i in range(3000):
        moment = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(hours=i)
        token = moment.strftime("@GMT-%Y.%m.%d-%H.%M.%S")
        (share / ".snapshots" / token).mkdir(parents=True)
        tokens.append(token)
    (share / ".snapshots" / "not-a-snapshot").mkdir()
    srv = start_smb3d(tmp_path, shares={"share": {"path": str(share), "snapshots": "btrfs"}})
    try:
        conn, session, tree = connect(srv)
        try:
            size = 3000 * 50 + 2
            assert enumerate_snapshots(tree, 65536) == struct.pack("<IIII", 3000, 0, size, 0)
            count, returned, got_size, names = tokens_of(enumerate_snapshots(tree, 12 + size))
            assert (count, returned, got_size) == (3000, 3000, size)
            assert names == sorted(tokens, reverse=True)
        finally:
            conn.disconnect()
    finally:
        stop(srv)


@pytest.mark.skipif(not samba.available(), reason="smbd is not installed")
def test_same_answers_as_samba(tmp_path, server):
    """Samba with vfs_shadow_copy2 on a copy of the same tree gives the same snapshot list and
    the same old contents."""
    share = tmp_path / "samba-share"
    shutil.copytree(server.share_dir, share, symlinks=True)
    os.chmod(share, 0o777)
    for root, dirs, files in os.walk(share):
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o777)
    user, password = "sambasnap", "pw-snap-1"
    subprocess.run(["useradd", "-M", user], capture_output=True)
    port, proc, log, _ = samba.start_smbd(tmp_path / "samba", f"""[global]
  server role = standalone server
  map to guest = never

[share]
  path = {share}
  read only = no
  admin users = {user}
  vfs objects = shadow_copy2 acl_xattr streams_xattr
  shadow:snapdir = .snapshots
  shadow:mountpoint = {share}
  shadow:format = @GMT-%Y.%m.%d-%H.%M.%S
""", {user: password})
    ref = samba.Samba(port, user, password, "share", share, proc, log)
    try:
        class Target:
            pass
        target = Target()
        target.port, target.user, target.password, target.share = port, user, password, "share"
        conn, session, tree = connect(target)
        try:
            theirs = enumerate_snapshots(tree, 65536)
            theirs_counts = enumerate_snapshots(tree, 16)
        finally:
            conn.disconnect()
        conn, session, tree = connect(server)
        try:
            assert enumerate_snapshots(tree, 65536) == theirs
            assert enumerate_snapshots(tree, 16) == theirs_counts
        finally:
            conn.disconnect()
        for path in ("%s\\foo" % SNAPSHOT, "%s\\foo" % NEWER):
            assert ref.smbclient("get %s -" % path).stdout.split("\n")[0] == \
                server.smbclient("get %s -" % path).stdout.split("\n")[0]
    finally:
        samba.stop_samba(ref)
