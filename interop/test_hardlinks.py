"""Hard links made by clients (FileLinkInformation, MS-FSA 2.1.5.15.6) through smbclient's
`hardlink` and raw SET_INFO requests from smbprotocol: the new name is the same file on disk,
an existing name is kept unless the client asks to replace it, and what Windows refuses is
refused with its status."""

import os
import struct
import uuid

import pytest
from smbprotocol.connection import Connection
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.file_info import InfoType
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess, SMB2SetInfoRequest)
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

FILE_LINK_INFORMATION = 11
STATUS_OBJECT_NAME_COLLISION = 0xC0000035
STATUS_ACCESS_DENIED = 0xC0000022
STATUS_FILE_IS_A_DIRECTORY = 0xC00000BA


class Client:
    def __init__(self, server):
        self.conn = Connection(uuid.uuid4(), "127.0.0.1", server.port)
        self.conn.connect()
        self.session = Session(self.conn, server.user, server.password)
        self.session.connect()
        self.tree = TreeConnect(self.session, r"\\127.0.0.1\%s" % server.share)
        self.tree.connect()

    def open(self, name, directory=False):
        handle = Open(self.tree, name)
        handle.create(ImpersonationLevel.Impersonation,
                      FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.FILE_WRITE_ATTRIBUTES,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL,
                      ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE | ShareAccess.FILE_SHARE_DELETE,
                      CreateDisposition.FILE_OPEN,
                      CreateOptions.FILE_DIRECTORY_FILE if directory else CreateOptions.FILE_NON_DIRECTORY_FILE)
        return handle

    def link(self, handle, target, replace=False):
        """FILE_LINK_INFORMATION_TYPE_2 (MS-FSCC 2.4.27.2); returns the status."""
        name = target.encode("utf-16-le")
        req = SMB2SetInfoRequest()
        req['info_type'] = InfoType.SMB2_0_INFO_FILE
        req['file_info_class'] = FILE_LINK_INFORMATION
        req['file_id'] = handle.file_id
        req['buffer'] = struct.pack("<B7xQI", int(replace), 0, len(name)) + name
        request = self.conn.send(req, sid=self.session.session_id, tid=self.tree.tree_connect_id)
        try:
            self.conn.receive(request)
        except SMBResponseException as e:
            return e.status
        return 0

    def close(self):
        self.conn.disconnect()


@pytest.fixture
def client(smb3d):
    c = Client(smb3d)
    yield c
    c.close()


def make(server, name, data):
    path = server.share_dir / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    server.own(path.parent, path)
    return path


def test_smbclient_hardlink_names_the_same_file(smb3d):
    a = make(smb3d, "a.txt", b"one")
    smb3d.smbclient("mkdir sub; hardlink a.txt sub\\b.txt")
    b = smb3d.share_dir / "sub" / "b.txt"
    assert os.stat(a).st_ino == os.stat(b).st_ino and os.stat(a).st_nlink == 2
    out = smb3d.smbclient("hardlink a.txt sub\\b.txt", check=False).stdout
    assert "NT_STATUS_OBJECT_NAME_COLLISION" in out, out
    b.write_bytes(b"two")
    assert a.read_bytes() == b"two"


def test_replace_if_exists_replaces_only_what_is_free(smb3d, client):
    a = make(smb3d, "a.txt", b"source")
    make(smb3d, "old.txt", b"old")
    make(smb3d, "busy.txt", b"busy")
    handle = client.open("a.txt")
    assert client.link(handle, "old.txt") == STATUS_OBJECT_NAME_COLLISION
    assert (smb3d.share_dir / "old.txt").read_bytes() == b"old"
    assert client.link(handle, "old.txt", replace=True) == 0
    assert os.stat(smb3d.share_dir / "old.txt").st_ino == os.stat(a).st_ino
    busy = client.open("busy.txt")
    assert client.link(handle, "busy.txt", replace=True) == STATUS_ACCESS_DENIED
    assert (smb3d.share_dir / "busy.txt").read_bytes() == b"busy"
    busy.close()
    handle.close()


def test_directories_and_escapes_are_refused(smb3d, client):
    (smb3d.share_dir / "d").mkdir()
    smb3d.own(smb3d.share_dir / "d")
    make(smb3d, "a.txt", b"x")
    directory = client.open("d", directory=True)
    assert client.link(directory, "d2") == STATUS_FILE_IS_A_DIRECTORY
    directory.close()
    handle = client.open("a.txt")
    assert client.link(handle, "..\\outside.txt") != 0
    assert not (smb3d.share_dir.parent / "outside.txt").exists()
    handle.close()
