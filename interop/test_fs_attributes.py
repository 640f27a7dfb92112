"""FileFsAttributeInformation (MS-FSCC 2.5.1) as clients read it: Windows shows the Security tab
of a share's files only when FILE_PERSISTENT_ACLS is set, and Windows and macOS use named
streams only where FILE_NAMED_STREAMS is; Samba 4.17 announces both (0x5006f with acl_xattr and
streams_xattr). A share without `streams_xattr` does not announce streams."""

import struct
import uuid

import pytest
from smbprotocol.connection import Connection
from smbprotocol.file_info import InfoType
from smbprotocol.open import CreateDisposition, CreateOptions, FileAttributes, ImpersonationLevel, Open, ShareAccess
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from conftest import query_info, start_smb3d, stop

CASE_SENSITIVE_SEARCH = 0x1
CASE_PRESERVED_NAMES = 0x2
UNICODE_ON_DISK = 0x4
PERSISTENT_ACLS = 0x8
SUPPORTS_SPARSE_FILES = 0x40
SUPPORTS_OBJECT_IDS = 0x10000
NAMED_STREAMS = 0x40000
FILE_FS_ATTRIBUTE_INFORMATION = 5


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fsattr")
    for name in ("share", "plain"):
        (tmp / name).mkdir(exist_ok=True)
    srv = start_smb3d(tmp, shares={
        "share": {"path": str(tmp / "share")},
        "plain": {"path": str(tmp / "plain"), "streams_xattr": False},
    })
    yield srv
    stop(srv)


def fs_attributes(server, share):
    conn = Connection(uuid.uuid4(), "127.0.0.1", server.port)
    conn.connect()
    try:
        session = Session(conn, server.user, server.password)
        session.connect()
        tree = TreeConnect(session, r"\\127.0.0.1\%s" % share)
        tree.connect()
        root = Open(tree, "")
        root.create(ImpersonationLevel.Impersonation, 0x80, FileAttributes.FILE_ATTRIBUTE_DIRECTORY,
                    ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE, CreateDisposition.FILE_OPEN,
                    CreateOptions.FILE_DIRECTORY_FILE)
        buffer = query_info(root, InfoType.SMB2_0_INFO_FILESYSTEM, FILE_FS_ATTRIBUTE_INFORMATION, 1024)
        attributes, _, _ = struct.unpack("<IiI", buffer[:12])
        root.close()
        return attributes
    finally:
        conn.disconnect()


def test_a_share_announces_persistent_acls_and_named_streams(server):
    expected = (CASE_SENSITIVE_SEARCH | CASE_PRESERVED_NAMES | UNICODE_ON_DISK | PERSISTENT_ACLS
                | SUPPORTS_SPARSE_FILES | SUPPORTS_OBJECT_IDS | NAMED_STREAMS)
    attributes = fs_attributes(server, "share")
    assert attributes & expected == expected, hex(attributes)


def test_a_share_without_streams_does_not_announce_them(server):
    attributes = fs_attributes(server, "plain")
    assert attributes & NAMED_STREAMS == 0, hex(attributes)
    assert attributes & PERSISTENT_ACLS, hex(attributes)
