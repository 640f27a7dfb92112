"""Mac clients on `apple = true` shares, seen through smbprotocol: the AAPL create context a
macOS client opens its first file with, and the Time Machine volume's size. smbtorture's
vfs.fruit* suites (test_torture.py) check the rest as Samba's selftest does."""

import struct
import uuid

import pytest
from smbprotocol.connection import Connection
from smbprotocol.create_contexts import SMB2CreateContextRequest
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.file_info import FileInformationClass, InfoType
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess, SMB2SetInfoRequest)
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from conftest import query_info, start_smb3d, stop

STATUS_INVALID_PARAMETER = 0xC000000D
SERVER_QUERY = 1
SERVER_CAPS, VOLUME_CAPS, MODEL_INFO = 1, 2, 4
READ_DIR_ATTR, OSX_COPYFILE, UNIX_BASED, NFS_ACE = 1, 2, 4, 8
FULL_SYNC = 4
FILE_FS_SIZE_INFORMATION = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("apple")
    dirs = {name: tmp / name for name in ("mac", "tm", "plain", "unvetoed")}
    for d in dirs.values():
        d.mkdir()
    server = start_smb3d(tmp, shares={
        "share": {"path": str(dirs["mac"]), "apple": True},
        "tm": {"path": str(dirs["tm"]), "apple": True, "time_machine": True,
               "time_machine_max_size": "32K", "apple_model": "Xserve"},
        "plain": {"path": str(dirs["plain"])},
        "unvetoed": {"path": str(dirs["unvetoed"]), "apple": True, "apple_veto_appledouble": False},
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
            return struct.unpack("<qqII", query_info(root, InfoType.SMB2_0_INFO_FILESYSTEM,
                                                     FILE_FS_SIZE_INFORMATION, 24))
        finally:
            root.close()

    def query_security(self, handle, info):
        return query_info(handle, InfoType.SMB2_0_INFO_SECURITY, 0, 65536, info)

    def set_security(self, handle, sd, info):
        req = SMB2SetInfoRequest()
        req['info_type'] = InfoType.SMB2_0_INFO_SECURITY
        req['additional_information'] = info
        req['file_id'] = handle.file_id
        req['buffer'] = sd
        request = self.conn.send(req, sid=self.session.session_id, tid=self.tree.tree_connect_id)
        self.conn.receive(request)

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


def afpinfo(finder_info):
    """A 60-byte AfpInfo: signature, version, reserved, backup time, 32 bytes of Finder info,
    ProDOS info and padding, big-endian as a Mac writes it (the server refuses
    anything else)."""
    return b"AFP\0" + struct.pack(">III", 0x100, 0, 0x80000000) + finder_info.ljust(32, b"\0") + bytes(12)


def write_stream(client, name, data):
    handle = Open(client.tree, name)
    handle.create(ImpersonationLevel.Impersonation,
                  FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                  CreateDisposition.FILE_OVERWRITE_IF, CreateOptions.FILE_NON_DIRECTORY_FILE)
    handle.write(data, 0)
    handle.close()


def list_id_both(client, pattern):
    root = Open(client.tree, "")
    root.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_READ,
                FileAttributes.FILE_ATTRIBUTE_DIRECTORY, ShareAccess.FILE_SHARE_READ,
                CreateDisposition.FILE_OPEN, CreateOptions.FILE_DIRECTORY_FILE)
    try:
        entries = root.query_directory(pattern, FileInformationClass.FILE_ID_BOTH_DIRECTORY_INFORMATION)
        return {e['file_name'].get_value().decode("utf-16-le"): e for e in entries}
    finally:
        root.close()


def test_read_dir_attr_listings_carry_fork_length_finder_info_access_and_mode(server):
    """A connection that negotiated ReadDirAttr reads, in FileIdBothDirectoryInformation,
    its maximal access in EaSize, the resource fork's length and the Finder info in ShortName,
    the UNIX mode in Reserved2 (with NFS ACEs negotiated): smbtorture's test_aapl and Apple's
    client read them there. A connection without AAPL sees plain entries."""
    plain = Client(server, "share")
    mac = Client(server, "share")
    try:
        handle, answer = mac.create("rda.txt", query())
        handle.close()
        assert parse(answer)["server_caps"] & READ_DIR_ATTR
        write_stream(mac, "rda.txt:AFP_AfpInfo", afpinfo(b"SMB,OLE!\x01\x02\x03\x04\x05\x06\x07\x08"))
        write_stream(mac, "rda.txt:AFP_Resource", b"foo")
        (server.dirs["mac"] / "rda.txt").chmod(0o640)
        entry = list_id_both(mac, "rda.txt")["rda.txt"]
        assert entry['short_name_length'].get_value() == 24
        short = entry['short_name'].get_value()
        assert struct.unpack_from("<Q", short)[0] == 3
        assert short[8:24] == b"SMB,OLE!\x01\x02\x03\x04\x05\x06\x07\x08"
        assert entry['reserved2'].get_value() == 0o100640
        # The owner (the test's user) may do everything to its file.
        assert entry['ea_size'].get_value() & 0x1f01ff == 0x1f01ff
        other = list_id_both(plain, "rda.txt")["rda.txt"]
        assert other['ea_size'].get_value() == 0 and other['reserved2'].get_value() == 0
        assert other['short_name_length'].get_value() == 0
    finally:
        mac.close()
        plain.close()


OWNER, GROUP, DACL = 1, 2, 4
NFS_USERS, NFS_GROUPS, NFS_MODE = 1, 2, 3


def sid_string(buf, at):
    count = buf[at + 1]
    authority = int.from_bytes(buf[at + 2:at + 8], "big")
    subs = struct.unpack_from("<%dI" % count, buf, at + 8)
    return (authority,) + subs


def dacl_of(sd):
    """The DACL of a self-relative descriptor as (type, mask, sid tuple) entries."""
    dacl_at, = struct.unpack_from("<I", sd, 16)
    _, _, _, count = struct.unpack_from("<BBHH", sd, dacl_at)
    aces, at = [], dacl_at + 8
    for _ in range(count):
        ace_type, _, size, mask = struct.unpack_from("<BBHI", sd, at)
        aces.append((ace_type, mask, sid_string(sd, at + 8)))
        at += size
    return aces


def encode_sid(sid):
    authority, *subs = sid
    return struct.pack("<BB", 1, len(subs)) + authority.to_bytes(6, "big") + struct.pack("<%dI" % len(subs), *subs)


def dacl_only(aces):
    body = b""
    for ace_type, mask, sid in aces:
        s = encode_sid(sid)
        body += struct.pack("<BBHI", ace_type, 0, 8 + len(s), mask) + s
    acl = struct.pack("<BBHHH", 2, 0, 8 + len(body), len(aces), 0) + body
    # SE_SELF_RELATIVE | SE_DACL_PRESENT
    return struct.pack("<BBHIIII", 1, 0, 0x8004, 0, 0, 0, 20) + acl


def nfs_entries(aces):
    return [(sid[2], sid[3]) for _, _, sid in aces if sid[:2] == (5, 88)]


def test_nfs_aces_show_and_set_the_unix_mode(server):
    """With NFS ACEs negotiated, the DACL carries one S-1-5-88-3-mode, one S-1-5-88-1-uid and
    one S-1-5-88-2-gid entry (denying nothing); a DACL set with another mode entry changes the
    mode, and NFS entries the client adds are never stored (smbtorture's test_nfs_aces)."""
    mac = Client(server, "share")
    plain = Client(server, "share")
    try:
        handle, answer = mac.create("nfs.txt", query())
        handle.close()
        assert parse(answer)["server_caps"] & NFS_ACE
        handle = Open(mac.tree, "nfs.txt")
        handle.create(ImpersonationLevel.Impersonation,
                      FilePipePrinterAccessMask.READ_CONTROL | FilePipePrinterAccessMask.WRITE_DAC,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                      CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
        path = server.dirs["mac"] / "nfs.txt"
        path.chmod(0o640)
        st = path.stat()
        aces = dacl_of(mac.query_security(handle, OWNER | GROUP | DACL))
        assert sorted(nfs_entries(aces)) == sorted([(NFS_USERS, st.st_uid), (NFS_GROUPS, st.st_gid),
                                                    (NFS_MODE, 0o640)])
        assert all(mask == 0 and ace_type == 1 for ace_type, mask, sid in aces if sid[:2] == (5, 88))
        others = [a for a in aces if a[2][:2] != (5, 88)]
        wanted = others + [(1, 0, (5, 88, NFS_MODE, 0o600)), (1, 0, (5, 88, NFS_USERS, 27)),
                           (1, 0, (5, 88, NFS_USERS, 27)), (1, 0, (5, 88, NFS_GROUPS, 300))]
        mac.set_security(handle, dacl_only(wanted), DACL)
        assert path.stat().st_mode & 0o7777 == 0o600
        aces = dacl_of(mac.query_security(handle, OWNER | GROUP | DACL))
        assert sorted(nfs_entries(aces)) == sorted([(NFS_USERS, st.st_uid), (NFS_GROUPS, st.st_gid),
                                                    (NFS_MODE, 0o600)])
        handle.close()
        # A client that did not negotiate them sees none.
        handle = Open(plain.tree, "nfs.txt")
        handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.READ_CONTROL,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                      CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
        aces = dacl_of(plain.query_security(handle, OWNER | GROUP | DACL))
        handle.close()
        assert nfs_entries(aces) == []
    finally:
        mac.close()
        plain.close()


def test_copyfile_copies_the_whole_file_with_its_streams(server):
    """With copyfile (offered to every Mac client), FSCTL_SRV_COPYCHUNK without chunks copies
    the whole source with its named streams and counts its bytes in TotalBytesWritten; without
    AAPL the same request copies nothing (smbtorture's test_copyfile)."""
    from server_copy import ioctl, open_file
    from smbprotocol.ioctl import CtlCode, SMB2SrvCopyChunkCopy, SMB2SrvCopyChunkResponse, SMB2SrvRequestResumeKey

    def copyfile(client, src, dst):
        source, target = open_file(client.tree, src), open_file(client.tree, dst, write=True)
        try:
            key = SMB2SrvRequestResumeKey()
            key.unpack(ioctl(source, CtlCode.FSCTL_SRV_REQUEST_RESUME_KEY, max_output=32))
            copy = SMB2SrvCopyChunkCopy()
            copy["source_key"] = key["resume_key"].get_value()
            copy["chunks"] = []
            done = SMB2SrvCopyChunkResponse()
            done.unpack(ioctl(target, CtlCode.FSCTL_SRV_COPYCHUNK, copy, max_output=12))
            return (done["chunks_written"].get_value(), done["chunk_bytes_written"].get_value(),
                    done["total_bytes_written"].get_value())
        finally:
            source.close()
            target.close()

    plain = Client(server, "share")
    mac = Client(server, "share")
    try:
        data = bytes(range(256)) * 16
        write_stream(plain, "cf-src.txt", data)
        write_stream(plain, "cf-src.txt:AFP_Resource", b"1234567890")
        write_stream(plain, "cf-src.txt:foo\uf022bar", b"abcdefghij")
        assert copyfile(plain, "cf-src.txt", "cf-plain.txt") == (0, 0, 0)
        assert (server.dirs["mac"] / "cf-plain.txt").read_bytes() == b""
        handle, answer = mac.create("cf-aapl.txt", query(client_caps=OSX_COPYFILE))
        handle.close()
        assert parse(answer)["server_caps"] & OSX_COPYFILE
        assert copyfile(mac, "cf-src.txt", "cf-dst.txt") == (0, 0, 4096)
        assert (server.dirs["mac"] / "cf-dst.txt").read_bytes() == data
        for stream, want in ((":AFP_Resource", b"1234567890"), (":foo\uf022bar", b"abcdefghij")):
            handle = open_file(mac.tree, "cf-dst.txt" + stream)
            assert handle.read(0, 10) == want
            handle.close()
    finally:
        mac.close()
        plain.close()


def test_an_empty_resource_fork_is_none(server):
    """On an `apple` share a resource fork truncated to 0 bytes is not listed and opening it
    without creating it finds nothing, as Mac clients and Samba's vfs_fruit expect (smbtorture's
    test_rfork_truncate); opening it with FILE_OPEN_IF makes it again. Other empty streams stay."""
    client = Client(server, "share")
    try:
        write_stream(client, "rf.txt", b"data")
        write_stream(client, "rf.txt:AFP_Resource", b"")
        write_stream(client, "rf.txt:other", b"")
        with pytest.raises(SMBResponseException) as e:
            handle = Open(client.tree, "rf.txt:AFP_Resource")
            handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_READ,
                          FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                          CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
        assert e.value.status == 0xC0000034  # STATUS_OBJECT_NAME_NOT_FOUND
        handle = Open(client.tree, "rf.txt")
        handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_READ,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                      CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
        buf = query_info(handle, InfoType.SMB2_0_INFO_FILE, 22, 4096)  # FileStreamInformation
        handle.close()
        names, at = [], 0
        while True:
            nxt, name_len = struct.unpack_from("<II", buf, at)
            names.append(buf[at + 24:at + 24 + name_len].decode("utf-16-le"))
            if nxt == 0:
                break
            at += nxt
        assert sorted(names) == ["::$DATA", ":other:$DATA"]
        handle = Open(client.tree, "rf.txt:AFP_Resource")
        handle.create(ImpersonationLevel.Impersonation,
                      FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                      CreateDisposition.FILE_OPEN_IF, CreateOptions.FILE_NON_DIRECTORY_FILE)
        handle.write(b"foo", 0)
        assert handle.read(0, 3) == b"foo"
        handle.close()
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


STATUS_OBJECT_NAME_NOT_FOUND = 0xC0000034
STATUS_OBJECT_PATH_NOT_FOUND = 0xC000003A
STATUS_NO_SUCH_FILE = 0xC000000F
FILE_RENAME_INFORMATION = 10
FILE_LINK_INFORMATION = 11


def open_status(client, name, disposition=CreateDisposition.FILE_OPEN, directory=False):
    """Opens `name` and closes it again; the status (0 when it opened)."""
    handle = Open(client.tree, name)
    try:
        handle.create(ImpersonationLevel.Impersonation,
                      FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE
                      | FilePipePrinterAccessMask.DELETE,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                      disposition,
                      CreateOptions.FILE_DIRECTORY_FILE if directory else CreateOptions.FILE_NON_DIRECTORY_FILE)
    except SMBResponseException as e:
        return e.status
    handle.close()
    return 0


def name_info_status(client, name, info_class, target, replace=True):
    """SET_INFO FileRenameInformation or FileLinkInformation (MS-FSCC 2.4.42.2, 2.4.27.2) on
    an open of `name`, naming `target`; the status."""
    handle = Open(client.tree, name)
    handle.create(ImpersonationLevel.Impersonation,
                  FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.DELETE,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_DELETE,
                  CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
    try:
        encoded = target.encode("utf-16-le")
        req = SMB2SetInfoRequest()
        req['info_type'] = InfoType.SMB2_0_INFO_FILE
        req['file_info_class'] = info_class
        req['file_id'] = handle.file_id
        req['buffer'] = struct.pack("<B7xQI", int(replace), 0, len(encoded)) + encoded
        request = client.conn.send(req, sid=client.session.session_id, tid=client.tree.tree_connect_id)
        try:
            client.conn.receive(request)
        except SMBResponseException as e:
            return e.status
        return 0
    finally:
        handle.close()


def listed(client, pattern):
    try:
        return set(list_id_both(client, pattern))
    except SMBResponseException as e:
        assert e.status == STATUS_NO_SUCH_FILE
        return set()


def test_appledouble_files_are_vetoed(server):
    """On an `apple` share the `._NAME` files that hold resource forks are vetoed as vfs_fruit's
    default `fruit:veto_appledouble = yes` vetoes them: not listed by any pattern, not opened,
    created, renamed or linked onto by any form of their name (case variants, streams, a path
    through one), while the fork stays the file's AFP_Resource stream. A hostile client thus
    cannot read or overwrite another file's fork other than through that stream's own checks.
    `apple_veto_appledouble = false` shows them (as Samba's selftest shares have it)."""
    client = Client(server, "share")
    root = server.dirs["mac"]
    try:
        write_stream(client, "v.txt", b"data")
        write_stream(client, "v.txt:AFP_Resource", b"fork")
        write_stream(client, "w.txt", b"other")
        sidecar = root / "._v.txt"
        assert sidecar.exists()
        before = sidecar.read_bytes()
        (root / "._dir").mkdir()
        (root / "._orphan").write_bytes(b"left by a Mac")
        for pattern in ("*", "._*", ".*", "._v.txt", "._V.TXT", "?_v.txt", "<v.txt", "._dir"):
            assert not {n for n in listed(client, pattern) if n.startswith("._")}, pattern
        assert "v.txt" in listed(client, "*")
        for name in ("._v.txt", "._V.TXT", "._v.txt:AFP_Resource", "._v.txt::$DATA",
                     "._v.txt:x:$DATA", "._orphan", "._V.txt:AFP_AfpInfo"):
            assert open_status(client, name) == STATUS_OBJECT_NAME_NOT_FOUND, name
            assert open_status(client, name, CreateDisposition.FILE_OVERWRITE_IF) == \
                STATUS_OBJECT_NAME_NOT_FOUND, name
        assert open_status(client, "._new", CreateDisposition.FILE_CREATE) == STATUS_OBJECT_NAME_NOT_FOUND
        assert open_status(client, "._dir", directory=True) == STATUS_OBJECT_NAME_NOT_FOUND
        assert open_status(client, "._dir\\x", CreateDisposition.FILE_OVERWRITE_IF) == \
            STATUS_OBJECT_PATH_NOT_FOUND
        for info_class in (FILE_RENAME_INFORMATION, FILE_LINK_INFORMATION):
            for target in ("._v.txt", "._V.txt", "\\._v.txt", "._made"):
                assert name_info_status(client, "w.txt", info_class, target) == \
                    STATUS_OBJECT_NAME_NOT_FOUND, (info_class, target)
        assert not (root / "._new").exists() and not (root / "._made").exists()
        assert sidecar.read_bytes() == before
        handle = Open(client.tree, "v.txt:AFP_Resource")
        handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_READ,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                      CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
        assert handle.read(0, 4) == b"fork"
        handle.close()
    finally:
        client.close()
    client = Client(server, "unvetoed")
    try:
        write_stream(client, "v.txt", b"data")
        write_stream(client, "v.txt:AFP_Resource", b"fork")
        assert "._v.txt" in listed(client, "*")
        assert open_status(client, "._v.txt") == 0
    finally:
        client.close()
