"""The data paths (issue 7): large plain reads leave straight from the file (sendfile); small,
signed, encrypted and compounded ones are copied into the response. Large plain writes go from
the socket to the file through pipes (splice); the others are received into memory. Every way
must move the file's bytes with the right lengths and statuses."""

import os

import pytest
from smbprotocol.connection import Dialects
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess)

from smbprotocol_client import connect

SIZE = 3 * 1024 * 1024 + 123
STATUS_END_OF_FILE = 0xC0000011
# Around the size from which plain reads are sent from the file (crates/server/src/handlers/read.rs).
THRESHOLD = 64 * 1024


def connect_plain(server):
    """A session that signs nothing: smbprotocol signs all or nothing, and a 3.1.1 TREE_CONNECT
    must be signed, so 3.0.2."""
    return connect(server, dialect=Dialects.SMB_3_0_2, require_signing=False)


@pytest.fixture
def data(smb3d):
    content = os.urandom(SIZE)
    path = smb3d.share_dir / "data.bin"
    path.write_bytes(content)
    smb3d.own(path)
    return content


def open_for_reading(tree, name="data.bin"):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_READ,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
                  CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
    return handle


def end_of_file(handle, offset, length, min_length=0):
    with pytest.raises(SMBResponseException) as e:
        handle.read(offset, length, min_length=min_length)
    return e.value.status == STATUS_END_OF_FILE


@pytest.mark.parametrize("protection", ["plain", "signed", "encrypted"])
def test_reads_return_the_files_bytes(smb3d, data, protection):
    if protection == "plain":
        conn, _session, tree = connect_plain(smb3d)
    else:
        conn, _session, tree = connect(smb3d, encrypt=protection == "encrypted")
    try:
        handle = open_for_reading(tree)
        cases = [(0, THRESHOLD - 1), (0, THRESHOLD), (1, THRESHOLD + 1), (12345, 1 << 20),
                 (SIZE - 1000, THRESHOLD), (SIZE - 70000, 1 << 20), (0, 4 << 20)]
        for offset, length in cases:
            got = handle.read(offset, length)
            assert got == data[offset:offset + length], (offset, length, len(got))
        assert end_of_file(handle, SIZE, THRESHOLD)
        assert end_of_file(handle, SIZE + 5, 1 << 20)
        # Fewer bytes left than the client's minimum.
        assert end_of_file(handle, SIZE - 100, THRESHOLD, min_length=200)
        assert handle.read(SIZE - 100, THRESHOLD, min_length=100) == data[-100:]
        handle.close()
    finally:
        conn.disconnect()


def test_pipelined_reads_arrive_whole_and_in_order(smb3d, data):
    """Several large reads in flight at once: each response's header and data stay together."""
    conn, session, tree = connect_plain(smb3d)
    try:
        handle = open_for_reading(tree)
        step = 1 << 20
        pending = []
        for offset in range(0, SIZE, step):
            request, receive = handle.read(offset, step, send=False)
            pending.append((offset, conn.send(request, session.session_id, tree.tree_connect_id), receive))
        for offset, sent, receive in pending:
            assert receive(sent) == data[offset:offset + step], offset
        handle.close()
    finally:
        conn.disconnect()


def test_compounded_read_before_close(smb3d, data):
    """CREATE + READ + CLOSE related: the READ is not the frame's last response, so its data is
    copied into the frame."""
    conn, session, tree = connect_plain(smb3d)
    try:
        handle = Open(tree, "data.bin")
        create, create_response = handle.create(
            ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_READ,
            FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ, CreateDisposition.FILE_OPEN,
            CreateOptions.FILE_NON_DIRECTORY_FILE, send=False)
        read, read_response = handle.read(100, 1 << 20, send=False)
        close, close_response = handle.close(send=False)
        sent = conn.send_compound([create, read, close], session.session_id, tree.tree_connect_id, related=True)
        create_response(sent[0])
        assert read_response(sent[1]) == data[100:100 + (1 << 20)]
        close_response(sent[2])
    finally:
        conn.disconnect()


def test_file_truncated_while_open(smb3d):
    """A file that shrinks under an open handle: reads see the new end of file."""
    path = smb3d.share_dir / "shrinks.bin"
    content = os.urandom(2 * 1024 * 1024)
    path.write_bytes(content)
    smb3d.own(path)
    conn, _session, tree = connect_plain(smb3d)
    try:
        handle = open_for_reading(tree, "shrinks.bin")
        assert handle.read(0, 1 << 20) == content[:1 << 20]
        os.truncate(path, 300000)
        assert handle.read(200000, 1 << 20) == content[200000:300000]
        assert end_of_file(handle, 1 << 20, 1 << 20)
        handle.close()
    finally:
        conn.disconnect()


def open_for_writing(tree, name):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation,
                  FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                  CreateDisposition.FILE_OVERWRITE_IF, CreateOptions.FILE_NON_DIRECTORY_FILE)
    return handle


@pytest.mark.parametrize("protection", ["plain", "signed", "encrypted"])
def test_writes_store_the_clients_bytes(smb3d, protection):
    """Writes below and above the size from which plain writes are piped
    (crates/server/src/pipeline/piped_write.rs), pipelined, over and beyond earlier data."""
    if protection == "plain":
        conn, session, tree = connect_plain(smb3d)
    else:
        conn, session, tree = connect(smb3d, encrypt=protection == "encrypted")
    content = bytearray(5 * 1024 * 1024 + 1000)
    try:
        handle = open_for_writing(tree, "written.bin")
        # In flight together (so in no particular order), hence apart: frames just below and at
        # the piping size (112 bytes of headers), a large one, and a short one at the end.
        piped_from = 128 * 1024 - 112
        pending = []
        for offset, length in [(0, 1 << 20), (1 << 20, piped_from - 1), (1 << 21, piped_from),
                               (3 << 20, 2 << 20), (5 << 20, 1000)]:
            chunk = os.urandom(length)
            content[offset:offset + length] = chunk
            request, receive = handle.write(chunk, offset, send=False)
            pending.append((length, conn.send(request, session.session_id, tree.tree_connect_id), receive))
        for length, sent, receive in pending:
            assert receive(sent) == length
        # Over the data written, across the holes left.
        chunk = os.urandom(4 << 20)
        content[100:100 + len(chunk)] = chunk
        assert handle.write(chunk, 100) == len(chunk)
        handle.close()
    finally:
        conn.disconnect()
    assert (smb3d.share_dir / "written.bin").read_bytes() == bytes(content)
