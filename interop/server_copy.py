"""Copying a file on the server two ways over one smbprotocol connection: server-side
(FSCTL_SRV_REQUEST_RESUME_KEY, then FSCTL_SRV_COPYCHUNK_WRITE, MS-SMB2 3.3.5.15.5-6) and through
the client (READ then WRITE), with the bytes the connection's socket carried each way."""

import socket
import struct

from smbprotocol.ioctl import (CtlCode, IOCTLFlags, SMB2IOCTLRequest, SMB2IOCTLResponse, SMB2SrvCopyChunk,
                               SMB2SrvCopyChunkCopy, SMB2SrvCopyChunkResponse, SMB2SrvRequestResumeKey)
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess)

# Windows' limits (MS-SMB2 3.3.3), which smb3d shares: 1 MiB chunks, 16 MiB per request.
CHUNK = 1 << 20
CHUNKS_PER_REQUEST = 16


def open_file(tree, name, write=False):
    handle = Open(tree, name)
    access = FilePipePrinterAccessMask.GENERIC_READ
    disposition = CreateDisposition.FILE_OPEN
    if write:
        access |= FilePipePrinterAccessMask.GENERIC_WRITE
        disposition = CreateDisposition.FILE_OVERWRITE_IF
    handle.create(ImpersonationLevel.Impersonation, access, FileAttributes.FILE_ATTRIBUTE_NORMAL,
                  ShareAccess.FILE_SHARE_READ, disposition, CreateOptions.FILE_NON_DIRECTORY_FILE)
    return handle


def ioctl(handle, ctl_code, input_buffer=b"", max_output=0):
    """One FSCTL on an open; returns the output buffer."""
    tree = handle.tree_connect
    conn = tree.session.connection
    req = SMB2IOCTLRequest()
    req["ctl_code"] = ctl_code
    req["file_id"] = handle.file_id
    req["max_output_response"] = max_output
    req["flags"] = IOCTLFlags.SMB2_0_IOCTL_IS_FSCTL
    req["buffer"] = input_buffer
    request = conn.send(req, sid=tree.session.session_id, tid=tree.tree_connect_id)
    rsp = SMB2IOCTLResponse()
    rsp.unpack(conn.receive(request)["data"].get_value())
    return rsp["buffer"].get_value()


def server_side_copy(source, target, size):
    """Copies `size` bytes of the open `source` to the open `target`, 16 MiB per request."""
    key = SMB2SrvRequestResumeKey()
    key.unpack(ioctl(source, CtlCode.FSCTL_SRV_REQUEST_RESUME_KEY, max_output=32))
    offset = 0
    while offset < size:
        chunks = []
        while offset < size and len(chunks) < CHUNKS_PER_REQUEST:
            chunk = SMB2SrvCopyChunk()
            chunk["source_offset"] = offset
            chunk["target_offset"] = offset
            chunk["length"] = min(CHUNK, size - offset)
            offset += chunk["length"].get_value()
            chunks.append(chunk)
        copy = SMB2SrvCopyChunkCopy()
        copy["source_key"] = key["resume_key"].get_value()
        copy["chunks"] = chunks
        done = SMB2SrvCopyChunkResponse()
        done.unpack(ioctl(target, CtlCode.FSCTL_SRV_COPYCHUNK_WRITE, copy, max_output=12))
        expected = sum(c["length"].get_value() for c in chunks)
        if done["total_bytes_written"].get_value() != expected:
            raise AssertionError("copychunk wrote %d of %d bytes" % (done["total_bytes_written"].get_value(), expected))


def client_copy(source, target, size):
    """Copies through the client: READ into memory, WRITE back, 4 MiB at a time (64 credits each)."""
    conn = source.tree_connect.session.connection
    step = min(conn.max_read_size, conn.max_write_size, 4 << 20)
    offset = 0
    while offset < size:
        data = source.read(offset, min(step, size - offset))
        target.write(data, offset)
        offset += len(data)


def socket_bytes(conn):
    """Bytes this connection has sent (and had acknowledged) plus received, from TCP_INFO
    (tcpi_bytes_acked and tcpi_bytes_received, Linux 4.2 and later)."""
    info = conn.transport._sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    acked, received = struct.unpack_from("<QQ", info, 120)
    return acked + received
