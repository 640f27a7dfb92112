"""Small helpers over Python smbprotocol, a third-party client independent of Samba's."""

import unicodedata
import uuid

from smbprotocol.connection import Connection
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess)
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

STATUS_NAMES = {
    0xC000003B: "STATUS_OBJECT_PATH_SYNTAX_BAD",
    0xC0000034: "STATUS_OBJECT_NAME_NOT_FOUND",
    0xC000003A: "STATUS_OBJECT_PATH_NOT_FOUND",
    0xC0000033: "STATUS_OBJECT_NAME_INVALID",
    0xC000000D: "STATUS_INVALID_PARAMETER",
    0xC0000022: "STATUS_ACCESS_DENIED",
}


def connect(server, dialect=None, require_signing=True, encrypt=False, client_guid=None, capabilities=0):
    # smbprotocol signs only when asked to, and MS-SMB2 3.3.5.7 disconnects a 3.1.1 client
    # whose TREE_CONNECT is neither signed nor encrypted; signing is smbprotocol's default.
    conn = Connection(client_guid or uuid.uuid4(), "127.0.0.1", server.port, require_signing=require_signing)
    conn.client_capabilities |= capabilities
    conn.connect(dialect) if dialect else conn.connect()
    session = Session(conn, server.user, server.password, require_encryption=encrypt)
    session.connect()
    tree = TreeConnect(session, r"\\127.0.0.1\%s" % server.share)
    tree.connect()
    return conn, session, tree


# Text a client chooses that would end or forge a log line, drive a terminal or reorder what is
# shown, were it written as it came: an NTLM domain (which nothing checks), a file name with a
# right-to-left override, and a stream name (streams may hold control characters).
FORGING_DOMAIN = "EV\x1b[31mIL\nINFO audit: forged"
BIDI_NAME = "evil\u202etxt.exe"
FORGING_STREAM = "\x1b[2J\x9bred\nINFO audit forged"


def connect_claiming(server, domain):
    """Logs on as the test user spelled in upper case, claiming `domain`, and connects to the
    share."""
    conn = Connection(uuid.uuid4(), "127.0.0.1", server.port, require_signing=True)
    conn.connect()
    session = Session(conn, "%s\\%s" % (domain, server.user.upper()), server.password)
    session.connect()
    tree = TreeConnect(session, r"\\127.0.0.1\%s" % server.share)
    tree.connect()
    return conn, session, tree


def create(tree, name, options=CreateOptions.FILE_NON_DIRECTORY_FILE):
    """Creates (or overwrites) `name` for every access, sharing everything; returns the open."""
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_ALL,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL,
                  ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE | ShareAccess.FILE_SHARE_DELETE,
                  CreateDisposition.FILE_OVERWRITE_IF, options)
    return handle


def unshowable(text):
    """The characters of `text`, line ends aside, that a log or terminal must not get as they
    are: controls, format characters (bidirectional overrides, zero-width ones), separators."""
    return sorted({c for c in text if c != "\n" and unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")})


def open_status(server, name):
    """Opens `name` for reading and returns the status name."""
    conn, session, tree = connect(server)
    try:
        handle = Open(tree, name)
        try:
            handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_READ,
                          FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                          CreateDisposition.FILE_OPEN, 0)
        except SMBResponseException as e:
            return STATUS_NAMES.get(e.status, hex(e.status))
        handle.close()
        return "STATUS_SUCCESS"
    finally:
        conn.disconnect()


def write_then_read(tree, name, data):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation,
                  FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE | FilePipePrinterAccessMask.DELETE,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                  CreateDisposition.FILE_OVERWRITE_IF, CreateOptions.FILE_NON_DIRECTORY_FILE)
    try:
        offset = 0
        conn = tree.session.connection
        step = min(1024 * 1024, conn.max_write_size, conn.max_read_size)
        while offset < len(data):
            handle.write(data[offset:offset + step], offset)
            offset += step
        out = bytearray()
        while len(out) < len(data):
            out += handle.read(len(out), min(step, len(data) - len(out)))
        return bytes(out)
    finally:
        handle.close()
