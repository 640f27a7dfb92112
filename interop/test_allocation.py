"""Sizes, allocation and what a share shows beyond what is stored (file-semantics issue):
strict allocation of what writes and end-of-file changes add, FileAllocationInformation
reserving space, `allocation_roundup_size`, `hide_files`/`hide_dot_files`, and
`sync_metadata` making creates, renames and deletes durable (the parent directory fsync'ed).
Checked on disk and through smbclient and smbprotocol, never through smb3d's own client."""

import os
import re
import shutil
import struct
import subprocess
import time
import uuid

import pytest
from smbprotocol.connection import Connection
from smbprotocol.create_contexts import SMB2CreateAllocationSize, SMB2CreateContextRequest
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, ShareAccess, SMB2SetInfoRequest)
from smbprotocol.file_info import InfoType
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from conftest import query_info, start_smb3d, stop

MIB = 1024 * 1024
FILE_STANDARD_INFORMATION = 5
FILE_ALLOCATION_INFORMATION = 19
FILE_END_OF_FILE_INFORMATION = 20


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("alloc")
    dirs = {name: tmp / name for name in ("strict", "holes", "rounded", "hiding", "durable")}
    for d in dirs.values():
        d.mkdir()
    server = start_smb3d(tmp, shares={
        "share": {"path": str(dirs["strict"])},
        "holes": {"path": str(dirs["holes"]), "strict_allocate": False},
        "rounded": {"path": str(dirs["rounded"]), "allocation_roundup_size": MIB},
        "hiding": {"path": str(dirs["hiding"]), "hide_dot_files": False, "hide_files": ["*.tmp", "secret?"]},
        "durable": {"path": str(dirs["durable"]), "sync_metadata": True},
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

    def create(self, name, allocation=None):
        contexts = None
        if allocation is not None:
            body = SMB2CreateAllocationSize()
            body['allocation_size'] = allocation
            context = SMB2CreateContextRequest()
            context['buffer_name'] = SMB2CreateAllocationSize.NAME
            context['buffer_data'] = body
            contexts = [context]
        handle = Open(self.tree, name)
        handle.create(ImpersonationLevel.Impersonation,
                      FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                      CreateDisposition.FILE_OVERWRITE_IF, CreateOptions.FILE_NON_DIRECTORY_FILE, contexts)
        return handle

    def set_info(self, handle, info_class, size):
        req = SMB2SetInfoRequest()
        req['info_type'] = InfoType.SMB2_0_INFO_FILE
        req['file_info_class'] = info_class
        req['file_id'] = handle.file_id
        req['buffer'] = struct.pack("<q", size)
        request = self.conn.send(req, sid=self.session.session_id, tid=self.tree.tree_connect_id)
        self.conn.receive(request)

    def allocation_size(self, name):
        """FileStandardInformation.AllocationSize of `name`."""
        handle = Open(self.tree, name)
        handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE,
                      CreateDisposition.FILE_OPEN, 0)
        try:
            return struct.unpack_from("<q", query_info(handle, InfoType.SMB2_0_INFO_FILE,
                                                       FILE_STANDARD_INFORMATION, 24))[0]
        finally:
            handle.close()

    def close(self):
        self.conn.disconnect()


def allocated(path):
    return os.stat(path).st_blocks * 512


def allocation_size(server, share, name):
    client = Client(server, share)
    try:
        return client.allocation_size(name)
    finally:
        client.close()


def attributes(server, share, name):
    out = server.smbclient("allinfo %s" % name, share=share).stdout
    attrs = re.search(r"attributes:\s*(\S+)", out)
    assert attrs, out
    return attrs.group(1)


def test_a_write_beyond_the_end_allocates_the_gap(server):
    for share, strict in (("share", True), ("holes", False)):
        client = Client(server, share)
        try:
            handle = client.create("gap.bin")
            handle.write(b"x", 8 * MIB)
            handle.close()
        finally:
            client.close()
        path = server.dirs["strict" if strict else "holes"] / "gap.bin"
        assert os.stat(path).st_size == 8 * MIB + 1
        if strict:
            assert allocated(path) >= 8 * MIB, share
        else:
            assert allocated(path) < MIB, share
        assert path.read_bytes()[:8 * MIB] == bytes(8 * MIB)


def test_a_larger_end_of_file_allocates_what_it_adds(server):
    for share, strict in (("share", True), ("holes", False)):
        client = Client(server, share)
        try:
            handle = client.create("eof.bin")
            handle.write(b"head", 0)
            client.set_info(handle, FILE_END_OF_FILE_INFORMATION, 4 * MIB)
            handle.close()
        finally:
            client.close()
        path = server.dirs["strict" if strict else "holes"] / "eof.bin"
        assert os.stat(path).st_size == 4 * MIB
        assert (allocated(path) >= 4 * MIB) == strict, share
        with open(path, "rb") as f:
            assert f.read(4) == b"head"


def test_allocation_information_reserves_without_growing(server):
    client = Client(server, "share")
    try:
        handle = client.create("reserved.bin")
        client.set_info(handle, FILE_ALLOCATION_INFORMATION, 2 * MIB)
        handle.write(b"abc", 0)
        handle.close()
    finally:
        client.close()
    path = server.dirs["strict"] / "reserved.bin"
    assert os.stat(path).st_size == 3
    assert allocated(path) >= 2 * MIB
    assert allocation_size(server, "share", "reserved.bin") >= 2 * MIB
    # An allocation below the end of file truncates the file (MS-FSA 2.1.5.14.1).
    client = Client(server, "share")
    try:
        handle = Open(client.tree, "reserved.bin")
        handle.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.GENERIC_WRITE,
                      FileAttributes.FILE_ATTRIBUTE_NORMAL, ShareAccess.FILE_SHARE_READ,
                      CreateDisposition.FILE_OPEN, CreateOptions.FILE_NON_DIRECTORY_FILE)
        client.set_info(handle, FILE_ALLOCATION_INFORMATION, 1)
        handle.close()
    finally:
        client.close()
    assert os.stat(path).st_size == 1


def test_a_create_may_ask_for_an_allocation(server):
    for share, strict in (("share", True), ("holes", False)):
        client = Client(server, share)
        try:
            handle = client.create("alsi.bin", allocation=3 * MIB)
            reported = handle.allocation_size
            handle.close()
        finally:
            client.close()
        path = server.dirs["strict" if strict else "holes"] / "alsi.bin"
        assert os.stat(path).st_size == 0
        if strict:
            assert reported >= 3 * MIB and allocated(path) >= 3 * MIB
        else:
            assert reported == 0 and allocated(path) == 0


def test_allocation_size_is_rounded_up(server):
    (server.dirs["rounded"] / "small").write_bytes(b"0123456789")
    server.own(server.dirs["rounded"] / "small")
    assert allocation_size(server, "rounded", "small") == MIB
    (server.dirs["strict"] / "small").write_bytes(b"0123456789")
    server.own(server.dirs["strict"] / "small")
    assert 0 < allocation_size(server, "share", "small") < MIB


def test_hidden_names_follow_the_share(server):
    for name in ("a.tmp", "secret1", ".dot", "plain"):
        (server.dirs["hiding"] / name).write_bytes(b"x")
        server.own(server.dirs["hiding"] / name)
    (server.dirs["strict"] / ".dot").write_bytes(b"x")
    server.own(server.dirs["strict"] / ".dot")
    assert "H" in attributes(server, "hiding", "A.TMP")
    assert "H" in attributes(server, "hiding", "secret1")
    assert "H" not in attributes(server, "hiding", ".dot")
    assert "H" not in attributes(server, "hiding", "plain")
    assert "H" in attributes(server, "share", ".dot")
    listing = server.smbclient("ls", share="hiding").stdout
    flags = {line.split()[0]: line.split()[1] for line in listing.splitlines()
             if len(line.split()) > 2 and line.split()[0] in ("a.tmp", "plain")}
    assert "H" in flags["a.tmp"] and "H" not in flags["plain"], listing


def directory_fsyncs(server, share, commands):
    """Runs smbclient `commands` on `share` with strace on the server and counts fsync calls
    on directories."""
    trace = server.config.parent / ("strace-%s.log" % share)
    strace = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=fsync", "-y", "-o", str(trace),
                               "-p", str(server.proc.pid)])
    try:
        time.sleep(1.0)
        server.smbclient(commands, share=share)
        time.sleep(0.5)
    finally:
        strace.terminate()
        strace.wait(timeout=10)
    syncs = [line for line in trace.read_text().splitlines() if "fsync(" in line]
    root = str(server.dirs["durable" if share == "durable" else "holes"])
    return [line for line in syncs if root in line]


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_sync_metadata_syncs_the_parent_directory(server):
    commands = "mkdir d; rename d e; put %s e\\f; rename e\\f e\\g; rm e\\g; rmdir e" % server.config
    synced = directory_fsyncs(server, "durable", commands)
    # mkdir, rename, the new file, its rename and its deletion, the directory's deletion.
    assert len(synced) >= 6, synced
    assert directory_fsyncs(server, "holes", commands) == []
