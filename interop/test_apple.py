"""Mac clients on `apple = true` shares, seen through smbprotocol: the AAPL create context a
macOS client opens its first file with, and the Time Machine volume's size. smbtorture's
vfs.fruit* suites (test_torture.py) check the rest as Samba's selftest does."""

import struct
import uuid

import pytest
from smbprotocol.connection import Connection
from smbprotocol.create_contexts import SMB2CreateContextRequest
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.file_info import InfoType
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess, SMB2QueryInfoRequest,
                              SMB2QueryInfoResponse)
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from conftest import start_smb3d, stop

STATUS_INVALID_PARAMETER = 0xC000000D
SERVER_QUERY = 1
SERVER_CAPS, VOLUME_CAPS, MODEL_INFO = 1, 2, 4
READ_DIR_ATTR, OSX_COPYFILE, UNIX_BASED, NFS_ACE = 1, 2, 4, 8
FULL_SYNC = 4
FILE_FS_SIZE_INFORMATION = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("apple")
    dirs = {name: tmp / name for name in ("mac", "tm", "plain")}
    for d in dirs.values():
        d.mkdir()
    server = start_smb3d(tmp, shares={
        "share": {"path": str(dirs["mac"]), "apple": True},
        "tm": {"path": str(dirs["tm"]), "apple": True, "time_machine": True,
               "time_machine_max_size": "32K", "apple_model": "Xserve"},
        "plain": {"path": str(dirs["plain"])},
    })
    server.dirs = dirs
    yield server
    stop(server)


class Client:
    def __init__(self, server, share):
        self.conn = Connection(uuid.uuid4(), "127.0.0.1", server.port)
        self.conn.connect()
        self.session = Session(self.conn, server.user, server.password)
        self.session.connect()
        self.tree = TreeConnect(self.session, r"\\127.0.0.1\%s" % share)
        self.tree.connect()

    def create(self, name, aapl=None):
        """Creates `name` with an AAPL context of body `aapl`; returns the open and the AAPL
        response body (None when the server sent none)."""
        contexts = None
        if aapl is not None:
            context = SMB2CreateContextRequest()
            context['buffer_name'] = b"AAPL"
            context['buffer_data'] = aapl
            contexts = [context]
        handle = Open(self.tree, name)
        answers = handle.create(ImpersonationLevel.Impersonation,
                                FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE,
                                FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                                CreateDisposition.FILE_OVERWRITE_IF, CreateOptions.FILE_NON_DIRECTORY_FILE,
                                contexts)
        raw = [a for a in answers or [] if isinstance(a, bytes)]
        return handle, (raw[0] if raw else None)

    def volume_size(self):
        """FileFsSizeInformation of the share's root: (total units, available units, sectors
        per unit, bytes per sector)."""
        root = Open(self.tree, "")
        root.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_READ,
                    FileAttributes.FILE_ATTRIBUTE_DIRECTORY, ShareAccess.FILE_SHARE_READ,
                    CreateDisposition.FILE_OPEN, CreateOptions.FILE_DIRECTORY_FILE)
        try:
            req = SMB2QueryInfoRequest()
            req['info_type'] = InfoType.SMB2_0_INFO_FILESYSTEM
            req['file_info_class'] = FILE_FS_SIZE_INFORMATION
            req['output_buffer_length'] = 24
            req['file_id'] = root.file_id
            request = self.conn.send(req, sid=self.session.session_id, tid=self.tree.tree_connect_id)
            resp = SMB2QueryInfoResponse()
            resp.unpack(self.conn.receive(request)['data'].get_value())
            return struct.unpack("<qqII", resp['buffer'].get_value())
        finally:
            root.close()

    def close(self):
        self.conn.disconnect()


def query(bitmap=SERVER_CAPS | VOLUME_CAPS | MODEL_INFO, client_caps=READ_DIR_ATTR | UNIX_BASED | NFS_ACE):
    return struct.pack("<IIQQ", SERVER_QUERY, 0, bitmap, client_caps)


def parse(answer):
    command, _, bitmap = struct.unpack_from("<IIQ", answer)
    out, at = {"command": command, "bitmap": bitmap}, 16
    if bitmap & SERVER_CAPS:
        out["server_caps"], = struct.unpack_from("<Q", answer, at)
        at += 8
    if bitmap & VOLUME_CAPS:
        out["volume_caps"], = struct.unpack_from("<Q", answer, at)
        at += 8
    if bitmap & MODEL_INFO:
        _, n = struct.unpack_from("<II", answer, at)
        out["model"] = answer[at + 8:at + 8 + n].decode("utf-16-le")
        at += 8 + n
    assert at == len(answer), answer
    return out


def test_aapl_server_query_is_answered(server):
    client = Client(server, "share")
    try:
        handle, answer = client.create("first.txt", query())
        handle.close()
        assert answer is not None, "no AAPL context in the CREATE response"
        reply = parse(answer)
        assert reply["command"] == SERVER_QUERY and reply["bitmap"] == 7
        assert reply["server_caps"] & UNIX_BASED
        # Names are matched ignoring case: the volume is not case-sensitive, and is no
        # Time Machine destination.
        assert reply["volume_caps"] == 0
        assert reply["model"] == "MacSamba"
        assert len(answer) == 40 + len("MacSamba") * 2
        # Only what is asked for is answered.
        handle, answer = client.create("second.txt", query(bitmap=VOLUME_CAPS))
        handle.close()
        assert parse(answer) == {"command": 1, "bitmap": VOLUME_CAPS, "volume_caps": 0}
    finally:
        client.close()


def test_time_machine_volume_says_full_sync(server):
    client = Client(server, "tm")
    try:
        handle, answer = client.create("first.txt", query())
        handle.close()
        reply = parse(answer)
        assert reply["volume_caps"] == FULL_SYNC
        assert reply["model"] == "Xserve"
    finally:
        client.close()


def test_malformed_query_fails_the_create_and_creates_nothing(server):
    client = Client(server, "share")
    try:
        for body in (query()[:23], query() + b"\0", struct.pack("<IIQQ", 2, 0, 7, 0)):
            with pytest.raises(SMBResponseException) as e:
                client.create("never.txt", body)
            assert e.value.status == STATUS_INVALID_PARAMETER
            assert not (server.dirs["mac"] / "never.txt").exists()
    finally:
        client.close()


def test_other_shares_ignore_aapl(server):
    client = Client(server, "plain")
    try:
        handle, answer = client.create("file.txt", query())
        handle.close()
        assert answer is None
        handle, answer = client.create("bad.txt", b"junk")
        handle.close()
        assert answer is None
    finally:
        client.close()


def sparse_bundle(root, name, band_size, bands, plist=None):
    bundle = root / name
    (bundle / "bands").mkdir(parents=True)
    (bundle / "Info.plist").write_text(plist or (
        "<dict>\n        <key>band-size</key>\n        <integer>%d</integer>\n</dict>\n" % band_size))
    for i in range(bands):
        (bundle / "bands" / str(i)).write_bytes(b"")
    return bundle


def test_time_machine_size_counts_the_bands(server):
    """The 32 KiB share reports 32 units of 1 KiB (two 512-byte sectors, as Samba reports them),
    less the bands of the sparse bundles at its root: their count times the band size their
    Info.plist names, whatever the band files hold. Bundles being set up, hostile plists and
    names that are no bundle count nothing; more bands than the size leave nothing free."""
    root = server.dirs["tm"]
    client = Client(server, "tm")
    try:
        assert client.volume_size() == (32, 32, 2, 512)
        sparse_bundle(root, "a.sparsebundle", 8192, 2)
        assert client.volume_size() == (32, 16, 2, 512)
        sparse_bundle(root, "b.sparsebundle", 1024, 1)
        sparse_bundle(root, "notabundle", 8192, 1)
        sparse_bundle(root, "c.sparsebundle", 0, 3, plist="<key>band-size</key><integer>-8</integer>")
        sparse_bundle(root, "d.sparsebundle", 0, 3, plist="<key>band-size</key>" + "<" * 100000)
        (root / "e.sparsebundle").mkdir()
        assert client.volume_size() == (32, 15, 2, 512)
        sparse_bundle(root, "f.sparsebundle", 1 << 62, 8)
        assert client.volume_size() == (32, 0, 2, 512)
        # The other Apple share is the file system's size.
        other = Client(server, "share")
        try:
            total, _, _, _ = other.volume_size()
            assert total > 32
        finally:
            other.close()
    finally:
        client.close()
