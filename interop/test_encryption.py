"""Issue 3: SMB3 encryption with every cipher, policies, and refusals of tampered traffic."""

import filecmp
import os
import time

import pytest
from smbprotocol.connection import Ciphers, Connection, Dialects

from conftest import start_smb3d, stop
from smbprotocol_client import connect, write_then_read
from wire import capture, frames, is_session_setup_success, stop_capture, streams


@pytest.fixture
def encrypted_share(tmp_path):
    server = start_smb3d(tmp_path, shares={"share": {"path": str(tmp_path / "share"), "encrypt": "required"}})
    yield server
    stop(server)


def random_file(path, size):
    with open(path, "wb") as f:
        remaining = size
        while remaining:
            chunk = os.urandom(min(remaining, 8 << 20))
            f.write(chunk)
            remaining -= len(chunk)
    return path


@pytest.mark.parametrize("dialect", ["SMB3_11", "SMB3"])
def test_smbclient_encrypted_1gib(smb3d, tmp_path, dialect):
    src = random_file(tmp_path / "big", 1 << 30)
    out = tmp_path / "out"
    smb3d.smbclient("put %s big; get big %s; del big" % (src, out), "-m", dialect, "--client-protection=encrypt")
    assert filecmp.cmp(src, out, shallow=False)


@pytest.mark.parametrize("dialect", ["SMB3_11", "SMB3"])
def test_only_transform_frames_after_session_setup(smb3d, tmp_path, dialect):
    src = random_file(tmp_path / "f", 1 << 20)
    pcap = tmp_path / "cap.pcap"
    tshark = capture(smb3d.port, pcap)
    try:
        smb3d.smbclient("put %s f; get f %s; ls; del f" % (src, tmp_path / "o"), "-m", dialect,
                        "--client-protection=encrypt")
    finally:
        stop_capture(tshark)
    to_server, to_client = streams(pcap)
    server_frames = frames(to_client)
    setup_done = next(i for i, f in enumerate(server_frames) if is_session_setup_success(f))
    after = server_frames[setup_done + 1:]
    assert after and all(f[:4] == b"\xfdSMB" for f in after), [f[:4] for f in after]
    # The client's requests after its last SESSION_SETUP are encrypted too.
    client_frames = frames(to_server)
    last_setup = max(i for i, f in enumerate(client_frames) if f[:4] == b"\xfeSMB" and f[12:14] == b"\x01\x00")
    assert all(f[:4] == b"\xfdSMB" for f in client_frames[last_setup + 1:])
    assert len(client_frames) - last_setup - 1 == len(after)


@pytest.mark.parametrize("cipher", [Ciphers.AES_128_CCM, Ciphers.AES_128_GCM, Ciphers.AES_256_CCM, Ciphers.AES_256_GCM])
def test_smbprotocol_each_cipher(smb3d, cipher):
    conn = Connection(__import__("uuid").uuid4(), "127.0.0.1", smb3d.port)
    conn.connect(Dialects.SMB_3_1_1, preferred_encryption_algos=[cipher])
    try:
        assert conn.cipher_id == cipher
        from smbprotocol.session import Session
        from smbprotocol.tree import TreeConnect
        session = Session(conn, smb3d.user, smb3d.password, require_encryption=True)
        session.connect()
        tree = TreeConnect(session, r"\\127.0.0.1\share")
        tree.connect()
        data = os.urandom(2 * 1024 * 1024 + 3)
        assert write_then_read(tree, "c%d.bin" % cipher, data) == data
    finally:
        conn.disconnect()


def test_smbprotocol_302_encrypted(smb3d):
    conn, session, tree = connect(smb3d, dialect=Dialects.SMB_3_0_2, encrypt=True)
    try:
        data = os.urandom(300000)
        assert write_then_read(tree, "e302.bin", data) == data
    finally:
        conn.disconnect()


def test_encrypt_required_share_serves_encrypting_clients(encrypted_share, tmp_path):
    src = random_file(tmp_path / "f", 100000)
    encrypted_share.smbclient("put %s f; get f %s" % (src, tmp_path / "o"), "-m", "SMB3_11")
    assert filecmp.cmp(src, tmp_path / "o", shallow=False)


# --- refusals: each is refused, changes nothing on disk, and the server keeps serving ---

import uuid  # noqa: E402

from smbprotocol.exceptions import SMBException, SMBResponseException  # noqa: E402
from smbprotocol.open import CreateDisposition, CreateOptions, FileAttributes, ImpersonationLevel, Open  # noqa: E402
from smbprotocol.session import Session  # noqa: E402
from smbprotocol.tree import TreeConnect  # noqa: E402

ACCESS_DENIED = 0xC0000022


def create_file(tree, name):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, 0x0012019F, FileAttributes.FILE_ATTRIBUTE_NORMAL, 0,
                  CreateDisposition.FILE_CREATE, CreateOptions.FILE_NON_DIRECTORY_FILE)
    handle.close()


def session_on(server, encrypt=False, require_signing=True):
    # Unsigned, unencrypted 3.1.1 TREE_CONNECTs are disconnected (MS-SMB2 3.3.5.7).
    conn = Connection(uuid.uuid4(), "127.0.0.1", server.port, require_signing=require_signing)
    conn.connect(Dialects.SMB_3_1_1)
    session = Session(conn, server.user, server.password, require_encryption=encrypt)
    session.connect()
    tree = TreeConnect(session, r"\\127.0.0.1\share")
    tree.connect()
    return conn, session, tree


def raw(message):
    """The bytes smbprotocol hands its transport (a transform header arrives as a structure)."""
    return message.pack() if hasattr(message, "pack") else bytes(message)


def tamper_next_send(conn, change):
    """Alters the next message the client sends (bytes of the SMB message, no TCP prefix)."""
    original = conn.transport.send

    def send(data):
        conn.transport.send = original
        original(change(bytearray(raw(data))))

    conn.transport.send = send


def flip(offset, expect_prefix=None):
    def change(data):
        if expect_prefix is not None:
            assert bytes(data[:4]) == expect_prefix, bytes(data[:4])
        data[offset] ^= 0x01
        return bytes(data)
    return change


def assert_refused(server, conn, tree, name, expect_status=None, dropped_for=None):
    """The create is refused (with a status, or by dropping the connection for the logged
    reason) and no file appears."""
    with pytest.raises((SMBResponseException, SMBException, OSError, ValueError)) as info:
        create_file(tree, name)
    if expect_status is not None:
        assert isinstance(info.value, SMBResponseException) and info.value.status == expect_status, info.value
    try:
        conn.disconnect()
    except Exception:
        pass
    assert not (server.share_dir / name).exists()
    if dropped_for is not None:
        # The client may see the connection end before the server has logged why.
        deadline = time.monotonic() + 10
        while "dropped connection: " + dropped_for not in server.log_tail(200) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "dropped connection: " + dropped_for in server.log_tail(200), server.log_tail()
    # Another client is still served.
    conn2, _, tree2 = session_on(server)
    try:
        create_file(tree2, name + ".ok")
    finally:
        conn2.disconnect()
    assert (server.share_dir / (name + ".ok")).exists()


def test_unencrypted_request_on_encrypt_required_share(encrypted_share):
    conn, session, tree = session_on(encrypted_share)
    assert tree.encrypt_data
    tree.encrypt_data = False
    session.encrypt_data = False
    assert_refused(encrypted_share, conn, tree, "plain.txt", ACCESS_DENIED)


def test_tampered_ciphertext_drops_connection(smb3d):
    conn, session, tree = session_on(smb3d, encrypt=True)
    tamper_next_send(conn, flip(80, b"\xfdSMB"))
    assert_refused(smb3d, conn, tree, "tampered.txt", dropped_for="undecryptable message")


def test_wrong_session_in_transform_header_drops_connection(smb3d):
    conn, session, tree = session_on(smb3d, encrypt=True)
    tamper_next_send(conn, flip(44, b"\xfdSMB"))
    assert_refused(smb3d, conn, tree, "wrongsession.txt", dropped_for="undecryptable message")


def test_replayed_transform_frame_drops_connection(smb3d):
    conn, session, tree = session_on(smb3d, encrypt=True)
    sent = []
    original = conn.transport.send

    def record(data):
        sent.append(raw(data))
        original(data)

    conn.transport.send = record
    create_file(tree, "once.txt")
    create_frame = next(d for d in sent if d[:4] == b"\xfdSMB")
    (smb3d.share_dir / "once.txt").unlink()
    conn.transport.send = original
    original(create_frame)
    with pytest.raises((SMBResponseException, SMBException, OSError, ValueError)):
        create_file(tree, "after-replay.txt")
    try:
        conn.disconnect()
    except Exception:
        pass
    assert not (smb3d.share_dir / "once.txt").exists(), "the replayed CREATE was executed"
    assert not (smb3d.share_dir / "after-replay.txt").exists()
    # The line is written after the connection is dropped, which the client may see first.
    dropped = "dropped connection: message id outside the credit window"
    deadline = time.monotonic() + 10
    while dropped not in smb3d.log_tail(200) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dropped in smb3d.log_tail(200)


@pytest.fixture
def signing_required(tmp_path):
    server = start_smb3d(tmp_path, signing="required")
    yield server
    stop(server)


def test_unsigned_request_when_signing_required(signing_required):
    conn, session, tree = session_on(signing_required)
    assert session.signing_required
    session.signing_required = False
    assert_refused(signing_required, conn, tree, "unsigned.txt", ACCESS_DENIED)


def test_tampered_signature(signing_required):
    conn, session, tree = session_on(signing_required)
    tamper_next_send(conn, flip(50, b"\xfeSMB"))
    assert_refused(signing_required, conn, tree, "badsig.txt", ACCESS_DENIED)
