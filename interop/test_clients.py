"""Other SMB client implementations against smb3d: impacket's SMBConnection (SMB 3.1.1 signed,
and SMB 3.0 encrypted), pysmb (SMB 2.0.2 signed) and Samba's libsmbclient through pysmbc (its
smbc_* file API, signed), each listing shares, making a directory, writing a file of a few MiB
and one with a non-ASCII name, reading them back, renaming and deleting. What each client did
is checked on the share's disk as well.

impacket does not ask for SMB2_GLOBAL_CAP_DIRECTORY_LEASING and, offered it, fails every CREATE
whose parent it has not tracked (the share root first of all): MS-SMB2 3.3.5.4 offers it only to
clients that ask."""

import hashlib
import io
import os

import pytest
import smbc
from impacket.smb3structs import SMB2_DIALECT_30, SMB2_SESSION_FLAG_ENCRYPT_DATA
from impacket.smbconnection import SMBConnection as ImpacketConnection
from smb.SMBConnection import SMBConnection as PysmbConnection

from conftest import start_smb3d, stop

BIG = 3 * 1024 * 1024 + 12345
NON_ASCII = "Grüße-日本語-ñ.txt"


@pytest.fixture
def signed_smb3d(tmp_path):
    server = start_smb3d(tmp_path, signing="required")
    yield server
    stop(server)


@pytest.fixture
def encrypted_smb3d(tmp_path):
    server = start_smb3d(tmp_path, shares={"share": {"path": str(tmp_path / "share"), "encrypt": "required"}})
    yield server
    stop(server)


def payload(name, size):
    """`size` bytes that differ for every `name` and every 32-byte block, so a misplaced block
    is seen."""
    out = bytearray()
    block = 0
    while len(out) < size:
        out += hashlib.sha256(b"%s:%d" % (name.encode(), block)).digest()
        block += 1
    return bytes(out[:size])


class Impacket:
    """impacket's SMBConnection: it offers every dialect (or `dialect` alone), signs on 3.1.1 and
    encrypts where the share asks for it."""

    def __init__(self, server, dialect=None):
        self.conn = ImpacketConnection("127.0.0.1", "127.0.0.1", sess_port=server.port, timeout=60,
                                       preferredDialect=dialect)
        self.conn.login(server.user, server.password)
        self.share = server.share

    def dialect(self):
        return self.conn.getDialect()

    def signing(self):
        return self.conn.isSigningRequired()

    def encrypting(self):
        """Whether impacket encrypts its requests (it decides as smb3.py's sendSMB does)."""
        session = self.conn.getSMBServer()._Session
        return bool(session["SessionFlags"] & SMB2_SESSION_FLAG_ENCRYPT_DATA) or any(
            tree.get("EncryptData") is True for tree in session["TreeConnectTable"].values())

    def shares(self):
        return [s["shi1_netname"][:-1] for s in self.conn.listShares()]

    def mkdir(self, path):
        self.conn.createDirectory(self.share, path)

    def rmdir(self, path):
        self.conn.deleteDirectory(self.share, path)

    def put(self, path, data):
        self.conn.putFile(self.share, path, io.BytesIO(data).read)

    def get(self, path):
        out = io.BytesIO()
        self.conn.getFile(self.share, path, out.write)
        return out.getvalue()

    def listing(self, path):
        pattern = (path + "\\*") if path else "*"
        return sorted(f.get_longname() for f in self.conn.listPath(self.share, pattern)
                      if f.get_longname() not in (".", ".."))

    def rename(self, old, new):
        self.conn.rename(self.share, old, new)

    def delete(self, path):
        self.conn.deleteFile(self.share, path)

    def close(self):
        self.conn.logoff()
        self.conn.close()


class Pysmb:
    """pysmb's SMBConnection over direct TCP, signing because the server requires it."""

    def __init__(self, server):
        self.conn = PysmbConnection(server.user, server.password, "interop", "SMB3D", is_direct_tcp=True,
                                    sign_options=PysmbConnection.SIGN_WHEN_SUPPORTED)
        assert self.conn.connect("127.0.0.1", server.port, timeout=60)
        self.share = server.share

    def dialect(self):
        return 0x0202 if self.conn.isUsingSMB2 else 0

    def signing(self):
        return self.conn.is_signing_active

    def shares(self):
        return [s.name for s in self.conn.listShares()]

    def mkdir(self, path):
        self.conn.createDirectory(self.share, path)

    def rmdir(self, path):
        self.conn.deleteDirectory(self.share, path)

    def put(self, path, data):
        self.conn.storeFile(self.share, path, io.BytesIO(data))

    def get(self, path):
        out = io.BytesIO()
        self.conn.retrieveFile(self.share, path, out)
        return out.getvalue()

    def listing(self, path):
        return sorted(f.filename for f in self.conn.listPath(self.share, path or "/")
                      if f.filename not in (".", ".."))

    def rename(self, old, new):
        self.conn.rename(self.share, old, new)

    def delete(self, path):
        self.conn.deleteFiles(self.share, path)

    def close(self):
        self.conn.close()


class Libsmbclient:
    """Samba's libsmbclient through pysmbc: URLs and POSIX-like calls; it signs when the server
    requires it."""

    def __init__(self, server):
        self.ctx = smbc.Context(auth_fn=lambda *_: ("WORKGROUP", server.user, server.password))
        self.ctx.optionNoAutoAnonymousLogin = True
        self.base = "smb://127.0.0.1:%d" % server.port
        self.share = server.share

    def url(self, path):
        return "%s/%s/%s" % (self.base, self.share, path.replace("\\", "/"))

    def shares(self):
        return [d.name for d in self.ctx.opendir(self.base + "/").getdents() if d.smbc_type == smbc.FILE_SHARE]

    def mkdir(self, path):
        self.ctx.mkdir(self.url(path), 0o755)

    def rmdir(self, path):
        self.ctx.rmdir(self.url(path))

    def put(self, path, data):
        f = self.ctx.open(self.url(path), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        try:
            assert f.write(data) == len(data)
        finally:
            f.close()

    def get(self, path):
        f = self.ctx.open(self.url(path))
        try:
            return f.read()
        finally:
            f.close()

    def listing(self, path):
        return sorted(d.name for d in self.ctx.opendir(self.url(path)).getdents() if d.name not in (".", ".."))

    def rename(self, old, new):
        self.ctx.rename(self.url(old), self.url(new))

    def delete(self, path):
        self.ctx.unlink(self.url(path))

    def close(self):
        pass


def workload(client, server, tag):
    """The same steps for every client; `tag` keeps the names of two clients apart."""
    disk = server.share_dir
    assert server.share in client.shares()

    # A small file in the share root, then a directory with a big file and a non-ASCII name.
    root_file = "%s-root.txt" % tag
    client.put(root_file, b"in the root\n")
    assert (disk / root_file).read_bytes() == b"in the root\n"
    directory = "%s-dir" % tag
    client.mkdir(directory)
    assert (disk / directory).is_dir()
    big = payload(tag, BIG)
    client.put(directory + "\\big.bin", big)
    assert (disk / directory / "big.bin").read_bytes() == big
    small = ("ünïcödé by %s\n" % tag).encode()
    client.put(directory + "\\" + NON_ASCII, small)
    assert (disk / directory / NON_ASCII).read_bytes() == small
    assert client.listing(directory) == sorted(["big.bin", NON_ASCII])

    assert client.get(directory + "\\big.bin") == big
    assert client.get(directory + "\\" + NON_ASCII) == small
    assert client.get(root_file) == b"in the root\n"

    # Renames: within the directory, to a non-ASCII name, and out of it into the root.
    client.rename(directory + "\\big.bin", directory + "\\renamed-ß.bin")
    assert not (disk / directory / "big.bin").exists()
    assert (disk / directory / "renamed-ß.bin").read_bytes() == big
    client.rename(directory + "\\" + NON_ASCII, "%s-moved.txt" % tag)
    assert (disk / ("%s-moved.txt" % tag)).read_bytes() == small
    assert client.listing(directory) == ["renamed-ß.bin"]
    assert client.get(directory + "\\renamed-ß.bin") == big

    for path in (directory + "\\renamed-ß.bin", "%s-moved.txt" % tag, root_file):
        client.delete(path)
    client.rmdir(directory)
    assert not any(p.name.startswith(tag) for p in disk.iterdir()), sorted(os.listdir(disk))


def test_impacket_workload(signed_smb3d):
    client = Impacket(signed_smb3d)
    try:
        assert client.dialect() == 0x0311
        assert client.signing()
        workload(client, signed_smb3d, "impacket")
    finally:
        client.close()


def test_impacket_workload_encrypted_over_3_0(encrypted_smb3d):
    client = Impacket(encrypted_smb3d, dialect=SMB2_DIALECT_30)
    try:
        assert client.dialect() == 0x0300
        workload(client, encrypted_smb3d, "impacket30")
        assert client.encrypting()
    finally:
        client.close()


def test_pysmb_workload(signed_smb3d):
    client = Pysmb(signed_smb3d)
    try:
        assert client.dialect() == 0x0202
        assert client.signing()
        workload(client, signed_smb3d, "pysmb")
    finally:
        client.close()


def test_libsmbclient_workload(signed_smb3d):
    # The server requires signing: an unsigned request would be refused.
    client = Libsmbclient(signed_smb3d)
    workload(client, signed_smb3d, "libsmbclient")
