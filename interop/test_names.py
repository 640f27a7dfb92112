"""What listings and opens say about names and metadata beyond the basics, through smbprotocol:
EaSize in directory listings (MS-FSCC 2.4.x), symlinks opened as reparse points
(FILE_OPEN_REPARSE_POINT, MS-SMB2 3.3.5.9, MS-FSA 2.1.5.1), and 8.3 short names on a share
with `short_names` (MS-FSCC 2.1.5.2.1, MS-FSA 2.1.5.6.3)."""

import os
import re
import struct
import uuid

import pytest
from smbprotocol.connection import Connection
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.ioctl import CtlCode
from smbprotocol.file_info import FileInformationClass, InfoType
from smbprotocol.open import (CreateDisposition, CreateOptions, DirectoryAccessMask, FileAttributes,
                              FilePipePrinterAccessMask, ImpersonationLevel, Open, ShareAccess)
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from conftest import query_info, start_smb3d, stop
from server_copy import ioctl

FILE_EA_INFORMATION = 7
# The classes whose entries carry EaSize (MS-FSCC 2.4.14, 2.4.8, 2.4.24, 2.4.18).
EA_CLASSES = [FileInformationClass.FILE_FULL_DIRECTORY_INFORMATION,
              FileInformationClass.FILE_BOTH_DIRECTORY_INFORMATION,
              FileInformationClass.FILE_ID_BOTH_DIRECTORY_INFORMATION,
              FileInformationClass.FILE_ID_FULL_DIRECTORY_INFORMATION]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = start_smb3d(tmp_path_factory.mktemp("names"))
    yield srv
    stop(srv)


@pytest.fixture
def tree(server):
    conn = Connection(uuid.uuid4(), "127.0.0.1", server.port)
    conn.connect()
    session = Session(conn, server.user, server.password)
    session.connect()
    tree = TreeConnect(session, r"\\127.0.0.1\%s" % server.share)
    tree.connect()
    yield tree
    conn.disconnect()


def listed(tree, pattern, klass):
    root = Open(tree, "")
    root.create(ImpersonationLevel.Impersonation, DirectoryAccessMask.FILE_LIST_DIRECTORY,
                FileAttributes.FILE_ATTRIBUTE_DIRECTORY, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
                CreateDisposition.FILE_OPEN, CreateOptions.FILE_DIRECTORY_FILE)
    try:
        return {e["file_name"].get_value().decode("utf-16-le"): e for e in root.query_directory(pattern, klass)}
    finally:
        root.close()


def ea_information(tree, name):
    """FileEaInformation.EaSize of `name` (MS-FSCC 2.4.13)."""
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
                  CreateDisposition.FILE_OPEN, 0)
    try:
        return struct.unpack("<I", query_info(handle, InfoType.SMB2_0_INFO_FILE, FILE_EA_INFORMATION, 4))[0]
    finally:
        handle.close()


def test_listings_carry_the_ea_size(server, tree):
    with_eas = server.share_dir / "ea-file"
    with_eas.write_text("x")
    # FILE_FULL_EA_INFORMATION entries, each 4-byte aligned: 9 + 6 + 2 = 17 -> 20, and
    # 9 + 7 + 10 = 26 -> 28.
    os.setxattr(with_eas, "user.Author", b"me")
    os.setxattr(with_eas, "user.Subject", b"0123456789")
    # Server metadata (DOS attributes, streams) is no EA.
    os.setxattr(with_eas, "user.DOSATTRIB", b"0x20\0")
    os.setxattr(with_eas, "user.DosStream.s:$DATA", b"stream\0")
    plain = server.share_dir / "ea-none"
    plain.write_text("y")
    ea_dir = server.share_dir / "ea-dir"
    ea_dir.mkdir()
    os.setxattr(ea_dir, "user.Author", b"me")
    server.own(with_eas, plain, ea_dir)
    assert ea_information(tree, "ea-file") == 48
    for klass in EA_CLASSES:
        entries = listed(tree, "ea-*", klass)
        sizes = {name: e["ea_size"].get_value() for name, e in entries.items()}
        assert sizes == {"ea-file": 48, "ea-none": 0, "ea-dir": 20}, klass
        # The attributes stored beside the EAs are still read.
        assert entries["ea-file"]["file_attributes"].get_value() & 0x20


FILE_OPEN_REPARSE_POINT = 0x00200000
DELETE = 0x00010000
FILE_READ_ATTRIBUTES = 0x80
FILE_WRITE_DATA = 0x2
STATUS_OBJECT_NAME_NOT_FOUND = 0xC0000034
IO_REPARSE_TAG_SYMLINK = 0xA000000C
FILE_ATTRIBUTE_REPARSE_POINT = 0x400


def open_link(tree, name, access=DELETE | FILE_READ_ATTRIBUTES, options=0,
              disposition=CreateDisposition.FILE_OPEN):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, access, FileAttributes.FILE_ATTRIBUTE_NORMAL,
                  ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE | ShareAccess.FILE_SHARE_DELETE,
                  disposition, FILE_OPEN_REPARSE_POINT | options)
    return handle


def symlink_target(buffer):
    """The substitute name of a SYMLINK reparse buffer (MS-FSCC 2.1.2.4)."""
    tag, _, _, sub_off, sub_len = struct.unpack_from("<IHHHH", buffer)
    assert tag == IO_REPARSE_TAG_SYMLINK
    start = 20 + sub_off
    return buffer[start:start + sub_len].decode("utf-16-le")


@pytest.fixture
def canary(server):
    """A file beside the share, and links to it (absolute and relative) and to nothing."""
    outside = server.share_dir.parent / "outside"
    outside.mkdir(exist_ok=True)
    target = outside / "canary"
    target.write_text("keep me")
    links = {"out-abs": str(target), "out-rel": "../outside/canary", "dangling": "nowhere"}
    for name, to in links.items():
        os.symlink(to, server.share_dir / name)
        os.lchown(server.share_dir / name, *owner_of(server.share_dir))
    yield target, links
    for name in links:
        if os.path.lexists(server.share_dir / name):
            os.unlink(server.share_dir / name)


def owner_of(path):
    st = os.stat(path)
    return st.st_uid, st.st_gid


def test_links_leaving_the_share_open_as_reparse_points_only(server, tree, canary):
    target, links = canary
    for name, to in links.items():
        # Followed, they lead nowhere the client may go.
        with pytest.raises(SMBResponseException) as err:
            Open(tree, name).create(ImpersonationLevel.Impersonation, FILE_READ_ATTRIBUTES,
                                    FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                                    CreateDisposition.FILE_OPEN, 0)
        assert err.value.status == STATUS_OBJECT_NAME_NOT_FOUND, name
        handle = open_link(tree, name)
        try:
            buffer = ioctl(handle, CtlCode.FSCTL_GET_REPARSE_POINT, max_output=1024)
            assert symlink_target(buffer) == to.replace("/", "\\"), name
        finally:
            handle.close()
    assert target.read_text() == "keep me"


def test_deleting_a_link_that_leaves_the_share_removes_only_the_link(server, tree, canary):
    target, links = canary
    # Delete on close.
    open_link(tree, "out-abs", options=CreateOptions.FILE_DELETE_ON_CLOSE).close()
    # A disposition set on an open of the link.
    handle = open_link(tree, "out-rel")
    set_disposition(tree, handle)
    handle.close()
    handle = open_link(tree, "dangling", options=CreateOptions.FILE_NON_DIRECTORY_FILE)
    set_disposition(tree, handle)
    handle.close()
    for name in links:
        assert not os.path.lexists(server.share_dir / name), name
    assert target.read_text() == "keep me"
    assert target.parent.is_dir()


def test_a_link_opened_as_itself_never_reaches_its_target(server, tree, canary):
    target, _ = canary
    # Asking to write or to overwrite through the reparse point changes nothing outside.
    for disposition in (CreateDisposition.FILE_OPEN, CreateDisposition.FILE_OVERWRITE,
                        CreateDisposition.FILE_SUPERSEDE, CreateDisposition.FILE_OVERWRITE_IF):
        try:
            handle = open_link(tree, "out-abs", access=FILE_WRITE_DATA | FILE_READ_ATTRIBUTES,
                               disposition=disposition)
        except SMBResponseException:
            continue
        try:
            with pytest.raises(SMBResponseException):
                handle.write(b"overwritten", 0)
        finally:
            handle.close()
    assert target.read_text() == "keep me"
    assert os.readlink(server.share_dir / "out-abs") == str(target)


def set_disposition(tree, handle):
    """FileDispositionInformation (MS-FSCC 2.4.11) with DeletePending set."""
    from smbprotocol.open import SMB2SetInfoRequest
    req = SMB2SetInfoRequest()
    req["info_type"] = InfoType.SMB2_0_INFO_FILE
    req["file_info_class"] = 13
    req["file_id"] = handle.file_id
    req["buffer"] = b"\x01"
    conn, session = tree.session.connection, tree.session
    conn.receive(conn.send(req, sid=session.session_id, tid=tree.tree_connect_id))


FILE_ALTERNATE_NAME_INFORMATION = 21
SHORT = re.compile(r"^[A-Z0-9]{2}[A-Z0-9]{4}~[A-Z0-9](\.[A-Z0-9]{1,3})?$")


@pytest.fixture(scope="module")
def short_server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("short")
    share = tmp / "share"
    share.mkdir()
    srv = start_smb3d(tmp, shares={"share": {"path": str(share), "short_names": True}})
    yield srv
    stop(srv)


def connect(server):
    conn = Connection(uuid.uuid4(), "127.0.0.1", server.port)
    conn.connect()
    session = Session(conn, server.user, server.password)
    session.connect()
    tree = TreeConnect(session, r"\\127.0.0.1\%s" % server.share)
    tree.connect()
    return conn, tree


def alternate_name(tree, name):
    """FileAlternateNameInformation of `name`, or the status the server answered."""
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
                  CreateDisposition.FILE_OPEN, 0)
    try:
        try:
            buf = query_info(handle, InfoType.SMB2_0_INFO_FILE, FILE_ALTERNATE_NAME_INFORMATION, 256)
        except SMBResponseException as err:
            return err.status
        (length,) = struct.unpack_from("<I", buf)
        return buf[4:4 + length].decode("utf-16-le")
    finally:
        handle.close()


def short_names(tree, pattern="*"):
    entries = listed(tree, pattern, FileInformationClass.FILE_ID_BOTH_DIRECTORY_INFORMATION)
    return {name: e["short_name"].get_value().decode("utf-16-le")[:e["short_name_length"].get_value() // 2]
            for name, e in entries.items()}


def read_by_name(tree, name):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.FILE_READ_DATA,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                  CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
    try:
        return handle.read(0, 100)
    finally:
        handle.close()


def test_short_names_are_listed_and_open_files(short_server):
    root = short_server.share_dir
    (root / "Long Directory Name").mkdir()
    (root / "Long Directory Name" / "A long file name.txt").write_text("inner")
    (root / "Quarterly report.docx").write_text("report")
    (root / "README.TXT").write_text("readme")
    short_server.own(root / "Long Directory Name", root / "Long Directory Name" / "A long file name.txt",
                     root / "Quarterly report.docx", root / "README.TXT")
    conn, tree = connect(short_server)
    try:
        names = short_names(tree)
        # An 8.3 name is its own short name: the field stays empty, as on NTFS.
        assert names["README.TXT"] == ""
        report, directory = names["Quarterly report.docx"], names["Long Directory Name"]
        assert SHORT.match(report) and report.endswith(".DOC"), report
        assert SHORT.match(directory), directory
        # The same names after a restart of the listing, and in FileAlternateNameInformation.
        assert short_names(tree) == names
        assert alternate_name(tree, "Quarterly report.docx") == report
        assert alternate_name(tree, "README.TXT") == "README.TXT"
        # Opened by the short name, or a path of short names, in any case.
        assert read_by_name(tree, report) == b"report"
        assert read_by_name(tree, report.lower()) == b"report"
        inner = short_names_in(tree, directory)
        assert read_by_name(tree, "%s\\%s" % (directory, inner)) == b"inner"
        # A pattern matches short names too (MS-FSA 2.1.5.6.3), DOS wildcards included.
        assert set(short_names(tree, report[:4] + "*")) == {"Quarterly report.docx"}
        assert set(short_names(tree, report)) == {"Quarterly report.docx"}
        # DOS_DOT and DOS_QM: '"' is the dot, '>' one character.
        base, ext = report.split(".")
        assert set(short_names(tree, base + '"' + ext[:2] + ">")) == {"Quarterly report.docx"}
    finally:
        conn.disconnect()
    out = short_server.smbclient('allinfo "Quarterly report.docx"').stdout
    assert "altname: %s" % report in out, out


def short_names_in(tree, directory):
    handle = Open(tree, directory)
    handle.create(ImpersonationLevel.Impersonation, DirectoryAccessMask.FILE_LIST_DIRECTORY,
                  FileAttributes.FILE_ATTRIBUTE_DIRECTORY, ShareAccess.FILE_SHARE_READ,
                  CreateDisposition.FILE_OPEN, CreateOptions.FILE_DIRECTORY_FILE)
    try:
        (entry,) = [e for e in handle.query_directory("*", FileInformationClass.FILE_ID_BOTH_DIRECTORY_INFORMATION)
                    if e["file_name"].get_value().decode("utf-16-le") not in (".", "..")]
        return entry["short_name"].get_value().decode("utf-16-le")[:entry["short_name_length"].get_value() // 2]
    finally:
        handle.close()


def test_a_real_name_wins_over_a_short_name(short_server):
    root = short_server.share_dir
    (root / "Collision source name.txt").write_text("long")
    short_server.own(root / "Collision source name.txt")
    conn, tree = connect(short_server)
    try:
        short = short_names(tree, "Collision*")["Collision source name.txt"]
        (root / short).write_text("real")
        short_server.own(root / short)
        assert read_by_name(tree, short) == b"real"
    finally:
        conn.disconnect()


def test_without_short_names_there_are_none(server, tree):
    (server.share_dir / "Some long file name.txt").write_text("x")
    (server.share_dir / "SHORT.TXT").write_text("y")
    server.own(server.share_dir / "Some long file name.txt", server.share_dir / "SHORT.TXT")
    names = short_names(tree, "S*")
    assert names == {"Some long file name.txt": "", "SHORT.TXT": ""}
    # FileAlternateNameInformation still answers (as Samba does): smbclient's allinfo needs it.
    assert SHORT.match(alternate_name(tree, "Some long file name.txt"))
    assert alternate_name(tree, "SHORT.TXT") == "SHORT.TXT"
    out = server.smbclient('allinfo "Some long file name.txt"').stdout
    assert "attributes:" in out, out
