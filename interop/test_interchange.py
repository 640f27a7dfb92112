"""Samba and smb3d serve the same directory interchangeably (file-semantics issue, check 2):
directories, files, DOS attributes, create times, named streams and EAs made through one server
read back identically through the other, because both keep them in the same xattrs
(user.DOSATTRIB, user.DosStream.*, user.* EAs, security.NTACL)."""

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import smbclient

from conftest import interop_uid, start_smb3d, stop
import samba
import secdesc
import smb2raw

pytestmark = pytest.mark.skipif(os.getuid() != 0 or not samba.available(),
                                reason="needs root (Samba serves the share as a system account) and smbd")

FIELDS = ("create_time", "write_time", "change_time", "attributes")


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("interchange")
    # Samba enters the share as the user, so every directory above it must be traversable;
    # pytest's own are not.
    share = Path(tempfile.mkdtemp(prefix="smb3d-interchange-"))
    share.chmod(0o755)
    ours = start_smb3d(tmp / "smb3d", shares={"share": {"path": str(share)}})
    ours.share_dir = share
    account = pwd.getpwuid(interop_uid()).pw_name
    theirs = samba.start_samba(tmp / "samba", share, account, "pw-" + secrets.token_hex(8))
    yield ours, theirs
    samba.stop_samba(theirs)
    stop(ours)
    shutil.rmtree(share)


def allinfo(server, path):
    """What smbclient's allinfo shows for `path`, without the access time (reading changes it)
    and the 8.3 name (each server makes its own)."""
    out = server.smbclient('allinfo "%s"' % path).stdout
    info = {}
    streams = set()
    for line in out.splitlines():
        key, _, value = line.partition(":")
        if key in FIELDS:
            info[key] = value.strip()
        elif key == "stream":
            streams.add(value.strip())
    assert set(FIELDS) <= set(info), out
    info["streams"] = sorted(streams)
    return info


def stream_content(server, path, tmp_path):
    local = tmp_path / ("stream-%s" % secrets.token_hex(4))
    server.smbclient('get "%s" "%s"' % (path, local))
    return local.read_bytes()


def eas(server, path):
    smbclient.register_session("127.0.0.1", username=server.user, password=server.password, port=server.port)
    unc = r"\\127.0.0.1\%s\%s" % (server.share, path.replace("/", "\\"))
    names = smbclient.listxattr(unc, port=server.port)
    return {n: smbclient.getxattr(unc, n, port=server.port) for n in sorted(names)}


def set_ea(server, path, name, value):
    smbclient.register_session("127.0.0.1", username=server.user, password=server.password, port=server.port)
    unc = r"\\127.0.0.1\%s\%s" % (server.share, path.replace("/", "\\"))
    smbclient.setxattr(unc, name, value, port=server.port)


def populate(server, tmp_path, prefix):
    """Makes a directory, files with attributes and a file with a stream through `server`."""
    data = tmp_path / "data.txt"
    data.write_bytes(b"file contents\n")
    stream_data = tmp_path / "stream.txt"
    stream_data.write_bytes(b"stream contents")
    d = prefix
    server.smbclient(
        'mkdir {d}; mkdir {d}/sub; put {data} {d}/plain.txt; put {data} {d}/hidden.txt; put {data} {d}/ro.txt; '
        'put {data} {d}/sys.txt; put {data} {d}/streamed.txt; put {s} "{d}/streamed.txt:Zone.Identifier"; '
        'setmode {d}/hidden.txt +h; setmode {d}/ro.txt +r; setmode {d}/sys.txt +s; setmode {d}/sub +h'
        .format(d=d, data=data, s=stream_data))
    set_ea(server, "%s/plain.txt" % d, "user.Author", b"interop")
    return ["%s/%s" % (d, n) for n in ("sub", "plain.txt", "hidden.txt", "ro.txt", "sys.txt", "streamed.txt")]


@pytest.mark.parametrize("direction", ["samba-to-smb3d", "smb3d-to-samba"])
def test_metadata_reads_back_identically(servers, tmp_path, direction):
    ours, theirs = servers
    writer, reader = (theirs, ours) if direction == "samba-to-smb3d" else (ours, theirs)
    paths = populate(writer, tmp_path, direction)
    for path in paths:
        assert allinfo(reader, path) == allinfo(writer, path), path
    streamed = "%s/streamed.txt:Zone.Identifier" % direction
    assert stream_content(reader, streamed, tmp_path) == b"stream contents"
    assert eas(reader, "%s/plain.txt" % direction) == eas(writer, "%s/plain.txt" % direction)
    assert eas(reader, "%s/plain.txt" % direction)
    # The attributes really were set, not lost on both sides alike.
    letters = {p.rsplit("/", 1)[1]: allinfo(reader, p)["attributes"].split()[0] for p in paths}
    assert "H" in letters["hidden.txt"] and "H" in letters["sub"] and "D" in letters["sub"]
    assert "R" in letters["ro.txt"] and "S" in letters["sys.txt"] and "A" in letters["plain.txt"]


def without_create_time(info):
    return {k: v for k, v in info.items() if k != "create_time"}


@pytest.mark.parametrize("mode", [0o644, 0o744])
def test_files_made_on_the_server_show_alike(servers, mode):
    """A file made on the server itself has no user.DOSATTRIB: both servers derive its
    attributes from the mode alike, and neither caches what changed on disk. Its create time
    differs on purpose: smb3d reports the birth time Linux keeps, Samba 4.17 the oldest of the
    file's other times."""
    ours, theirs = servers
    name = "local-%o.txt" % mode
    path = ours.share_dir / name
    path.write_bytes(b"12345")
    path.chmod(mode)
    ours.own(path)
    assert without_create_time(allinfo(ours, name)) == without_create_time(allinfo(theirs, name))
    subprocess.run(["touch", "-d", "2001-02-03 04:05:06", str(path)], check=True)
    assert without_create_time(allinfo(ours, name)) == without_create_time(allinfo(theirs, name))


ALL_ACCESS = 0x001F01FF
READ_EXECUTE = 0x001200A9
GENERIC_ALL = 0x10000000
WRITE_APPEND = 0x6
GUESTS = "S-1-5-32-546"


def acl_tree(server, prefix):
    """Through `server`: a directory `prefix` with an inheritable ACL (an ACE for its owner, one
    for Everyone, CREATOR OWNER, a deny ACE first), a file inheriting it and a file with an
    explicit protected ACL. Returns their paths."""
    c = secdesc.Client(server.port, server.user, server.password)
    try:
        r, fid = c.open(prefix, ALL_ACCESS, smb2raw.FILE_CREATE, options=smb2raw.FILE_DIRECTORY_FILE, attrs=0x10)
        assert fid is not None, r.name
        owner = secdesc.decode(c.get(fid)[1])["owner"]
        inherit = secdesc.OBJECT_INHERIT | secdesc.CONTAINER_INHERIT
        dacl = [
            secdesc.ace(GUESTS, WRITE_APPEND, inherit, kind=secdesc.DENIED),
            secdesc.ace(owner, ALL_ACCESS, inherit),
            secdesc.ace(secdesc.EVERYONE, READ_EXECUTE, inherit),
            secdesc.ace(secdesc.CREATOR_OWNER, GENERIC_ALL, inherit | secdesc.INHERIT_ONLY),
        ]
        sd = secdesc.descriptor(dacl=dacl, control=secdesc.DACL_AUTO_INHERIT_REQ)
        assert c.set(fid, sd, secdesc.DACL) == "STATUS_SUCCESS"
        c.c.close_file(fid)
        for name in ("inherits.txt", "explicit.txt"):
            r, fid = c.open("%s\\%s" % (prefix, name), ALL_ACCESS, smb2raw.FILE_CREATE)
            assert fid is not None, r.name
            c.c.close_file(fid)
        explicit = secdesc.descriptor(dacl=[secdesc.ace(owner, ALL_ACCESS),
                                            secdesc.ace(secdesc.EVERYONE, READ_EXECUTE)],
                                      control=secdesc.DACL_PROTECTED)
        assert c.set_path("%s\\explicit.txt" % prefix, explicit, secdesc.DACL) == "STATUS_SUCCESS"
    finally:
        c.close()
    return [prefix, prefix + "\\inherits.txt", prefix + "\\explicit.txt"]


def descriptors(server, paths):
    c = secdesc.Client(server.port, server.user, server.password)
    try:
        out = {}
        for path in paths:
            name, raw = c.get_path(path)
            assert name == "STATUS_SUCCESS", (path, name)
            out[path] = secdesc.decode(raw)
        return out
    finally:
        c.close()


@pytest.mark.parametrize("direction", ["samba-to-smb3d", "smb3d-to-samba"])
def test_acls_read_back_identically(servers, direction):
    """The ACL half of check 2: descriptors set (and inherited) through one server are what the
    other reports, SID for SID, because both keep them in security.NTACL tied to the same hash
    of the POSIX ACLs that each maps them to."""
    ours, theirs = servers
    writer, reader = (theirs, ours) if direction == "samba-to-smb3d" else (ours, theirs)
    paths = acl_tree(writer, "acl-" + direction)
    written = descriptors(writer, paths)
    assert descriptors(reader, paths) == written
    # Really what was set: the directory's ACEs inherited by the file, the explicit ACL
    # protected.
    inherited = written[paths[1]]
    assert (secdesc.DENIED, WRITE_APPEND, GUESTS) in [(k, m, sid) for k, _, m, sid in inherited["dacl"]], inherited
    assert written[paths[2]]["control"] & secdesc.DACL_PROTECTED, written[paths[2]]
