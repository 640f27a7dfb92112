"""A Mac's files move between Samba's vfs_fruit and smb3d's `apple = true` (issue 20, check 2):
Finder info (type, creator, a colour label) and a resource fork written through one server read
back the same through the other serving the same directory. Samba keeps them as its defaults
say (`fruit:metadata = netatalk`: the Finder info in Netatalk's metadata xattr;
`fruit:resource = file`: the resource fork in a `._NAME` AppleDouble file beside the file)."""

import os
import pwd
import secrets
import shutil
import struct
import tempfile
import uuid
from pathlib import Path

import pytest
from smbprotocol.connection import Connection
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess)
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from conftest import interop_uid, start_smb3d, stop
import samba
import test_apple as apple

pytestmark = pytest.mark.skipif(os.getuid() != 0 or not samba.available(),
                                reason="needs root (Samba serves the share as a system account) and smbd")

# Finder info of a file: type, creator, Finder flags with colour label 6 (red: bits 1-3 of the
# flags' low byte), then location and folder words left zero.
RED_LABEL = 6 << 1


def finder_info(file_type, creator, label=RED_LABEL):
    return file_type + creator + struct.pack(">H", label) + bytes(22)


def afpinfo(finder):
    """A 60-byte AfpInfo as a Mac writes it: signature, version, reserved, backup time, Finder
    info, ProDOS info and padding, big-endian."""
    return b"AFP\0" + struct.pack(">III", 0x100, 0, 0x80000000) + finder + bytes(12)


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("apple-interchange")
    share = Path(tempfile.mkdtemp(prefix="smb3d-apple-interchange-"))
    share.chmod(0o755)
    ours = start_smb3d(tmp / "smb3d", shares={"share": {"path": str(share), "apple": True}})
    account = pwd.getpwuid(interop_uid()).pw_name
    password = "pw-" + secrets.token_hex(8)
    state = tmp / "samba"
    port, proc, log, _ = samba.start_smbd(state, f"""[global]
  server role = standalone server
  workgroup = WORKGROUP
  map to guest = never

[share]
  path = {share}
  read only = no
  vfs objects = catia fruit streams_xattr acl_xattr
""", {account: password})
    theirs = samba.Samba(port, account, password, "share", share, proc, log)
    yield ours, theirs
    samba.stop_samba(theirs)
    stop(ours)
    shutil.rmtree(share)


class Client:
    def __init__(self, server):
        self.conn = Connection(uuid.uuid4(), "127.0.0.1", server.port)
        self.conn.connect()
        self.session = Session(self.conn, server.user, server.password)
        self.session.connect()
        self.tree = TreeConnect(self.session, r"\\127.0.0.1\%s" % server.share)
        self.tree.connect()

    def open(self, name, disposition, options=0, access=FilePipePrinterAccessMask.GENERIC_READ):
        handle = Open(self.tree, name)
        handle.create(ImpersonationLevel.Impersonation, access,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL,
                      ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE | ShareAccess.FILE_SHARE_DELETE,
                      disposition, options)
        return handle

    def write(self, name, data):
        handle = self.open(name, CreateDisposition.FILE_OVERWRITE_IF,
                           access=FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE)
        try:
            handle.write(data, 0)
        finally:
            handle.close()

    def read(self, name):
        handle = self.open(name, CreateDisposition.FILE_OPEN)
        try:
            return handle.read(0, handle.end_of_file) if handle.end_of_file else b""
        finally:
            handle.close()

    def mkdir(self, name):
        self.open(name, CreateDisposition.FILE_CREATE, CreateOptions.FILE_DIRECTORY_FILE).close()

    def close(self):
        self.conn.disconnect()


def write_mac_folder(server, folder):
    """Through `server`, as a Mac writes them: a folder with a label, a document with type,
    creator and label and a resource fork of more than one write, and a plain file."""
    c = Client(server)
    try:
        c.mkdir(folder)
        c.write(folder + ":AFP_AfpInfo", afpinfo(finder_info(b"\0\0\0\0", b"\0\0\0\0", label=4 << 1)))
        doc = folder + "\\Letter.txt"
        c.write(doc, b"Dear reader,\r")
        c.write(doc + ":AFP_AfpInfo", afpinfo(finder_info(b"TEXT", b"ttxt")))
        c.write(doc + ":AFP_Resource", RESOURCE_FORK)
        c.write(folder + "\\plain.bin", b"no Finder info")
    finally:
        c.close()


# A resource fork with a classic resource map's header shape and enough bytes to span writes.
RESOURCE_FORK = struct.pack(">IIII", 256, 256 + 4000, 4000, 30) + bytes(240) + bytes(range(256)) * 16


def read_mac_folder(server, folder):
    c = Client(server)
    try:
        doc = folder + "\\Letter.txt"
        return {
            "folder info": c.read(folder + ":AFP_AfpInfo")[16:48],
            "doc data": c.read(doc),
            "doc info": c.read(doc + ":AFP_AfpInfo")[16:48],
            "doc fork": c.read(doc + ":AFP_Resource"),
        }
    finally:
        c.close()


EXPECTED = {
    "folder info": finder_info(b"\0\0\0\0", b"\0\0\0\0", label=4 << 1),
    "doc data": b"Dear reader,\r",
    "doc info": finder_info(b"TEXT", b"ttxt"),
    "doc fork": RESOURCE_FORK,
}


@pytest.mark.parametrize("direction", ["samba-to-smb3d", "smb3d-to-samba"])
def test_finder_info_and_resource_fork_read_back(servers, direction):
    ours, theirs = servers
    writer, reader = (theirs, ours) if direction == "samba-to-smb3d" else (ours, theirs)
    write_mac_folder(writer, direction)
    assert read_mac_folder(writer, direction) == EXPECTED
    assert read_mac_folder(reader, direction) == EXPECTED


def veto_answers(server, share):
    """What `server` answers for the forms of a `._` file's name: listings, opens, creates,
    renames and hard links onto one."""
    c = apple.Client(server, server.share)
    try:
        answers = {}
        for pattern in ("*", "._*", "._veto.txt", "._VETO.TXT"):
            answers["list " + pattern] = sorted(n for n in apple.listed(c, pattern) if n.startswith("._"))
        for name in ("._veto.txt", "._VETO.TXT", "._veto.txt:AFP_Resource", "._veto.txt::$DATA",
                     "._veto-orphan", "._VETO.txt:AFP_AfpInfo"):
            answers["open " + name] = apple.open_status(c, name)
            answers["overwrite " + name] = apple.open_status(c, name, CreateDisposition.FILE_OVERWRITE_IF)
        answers["create"] = apple.open_status(c, "._veto-new", CreateDisposition.FILE_CREATE)
        answers["directory"] = apple.open_status(c, "._veto-dir", directory=True)
        answers["through"] = apple.open_status(c, "._veto-dir\\x", CreateDisposition.FILE_OVERWRITE_IF)
        for info_class in (apple.FILE_RENAME_INFORMATION, apple.FILE_LINK_INFORMATION):
            for target in ("._veto.txt", "._Veto.txt", "\\._veto.txt", "._veto-made"):
                answers[f"set {info_class} {target}"] = apple.name_info_status(c, "veto-w.txt", info_class, target)
        return answers
    finally:
        c.close()


def test_appledouble_files_are_vetoed_as_samba_vetoes_them(servers):
    """With vfs_fruit's defaults (`fruit:veto_appledouble = yes`) and smb3d's, side by side on
    the same directory: no `._` file is listed, and every form of its name - case, stream
    suffix, a path through one, a rename or hard link onto one - gets the same status from both
    (OBJECT_NAME_NOT_FOUND, OBJECT_PATH_NOT_FOUND on the way); nothing is made or replaced."""
    ours, theirs = servers
    share = theirs.share_dir
    c = Client(theirs)
    try:
        c.write("veto.txt", b"data")
        c.write("veto.txt:AFP_Resource", RESOURCE_FORK)
        c.write("veto-w.txt", b"other")
    finally:
        c.close()
    (share / "._veto-dir").mkdir()
    (share / "._veto-orphan").write_bytes(b"left by a Mac")
    for made in ("._veto-dir", "._veto-orphan"):
        os.chown(share / made, interop_uid(), -1)
    sidecar = (share / "._veto.txt").read_bytes()
    samba_answers = veto_answers(theirs, share)
    assert samba_answers == veto_answers(ours, share)
    statuses = {v for v in samba_answers.values() if not isinstance(v, list)}
    assert statuses == {apple.STATUS_OBJECT_NAME_NOT_FOUND, apple.STATUS_OBJECT_PATH_NOT_FOUND}
    assert all(v == [] for v in samba_answers.values() if isinstance(v, list))
    assert (share / "._veto.txt").read_bytes() == sidecar
    assert not (share / "._veto-new").exists() and not (share / "._veto-made").exists()
