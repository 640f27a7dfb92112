"""`smb3d cluster demo --nodes 2` as a newcomer uses it (issue 18 item 9): it prints one line per
node in the form `node NAME pid PID: smbclient //ADDRESS/demo -p PORT -U USER%PASSWORD`; those
commands, run as printed, see the same files; an exclusive open through one node keeps the other
node's client out; Ctrl-C (SIGINT) or SIGTERM stops etcd and every node and removes the demo's
own directory, never the shared one."""

import os
import re
import select
import shlex
import signal
import socket
import subprocess
import time
import uuid

import pytest
from smbprotocol.connection import Connection
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open)
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from conftest import BINARY, free_port

NODE_LINE = re.compile(r"^node (\S+) pid (\d+): (smbclient //(\S+)/demo -p (\d+) -U (\S+)%(\S+))$")
SHARING_LINE = re.compile(r"^sharing (.+) as \"demo\"; etcd at (\S+); logs in (\S+); Ctrl-C stops the demo$")
STATUS_SHARING_VIOLATION = 0xC0000043
READ_WRITE = FilePipePrinterAccessMask.FILE_READ_DATA | FilePipePrinterAccessMask.FILE_WRITE_DATA


def read_lines(proc, count, timeout):
    """The demo's first `count` lines of standard output, or a failure with what it said."""
    lines, buffered, deadline = [], b"", time.monotonic() + timeout
    while len(lines) < count:
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            pytest.fail("the demo printed %r, then %s" % (
                lines, "exited %s" % proc.returncode if proc.poll() is not None else "nothing more"))
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            buffered += chunk
            *done, buffered = buffered.split(b"\n")
            lines += [line.decode() for line in done]
    return lines


@pytest.fixture
def demo(tmp_path):
    shared = tmp_path / "shared"
    port = free_port()
    proc = subprocess.Popen([str(BINARY), "cluster", "demo", "--nodes", "2", "--dir", str(shared),
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        lines = read_lines(proc, 3, 60)
        nodes = [NODE_LINE.match(line) for line in lines[:2]]
        assert all(nodes), lines
        sharing = SHARING_LINE.match(lines[2])
        assert sharing, lines
        yield proc, nodes, sharing, shared
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def smbclient(printed_command, commands):
    r = subprocess.run(shlex.split(printed_command) + ["-c", commands], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def tree_of(node):
    conn = Connection(uuid.uuid4(), node.group(4), int(node.group(5)), require_signing=True)
    conn.connect()
    session = Session(conn, node.group(6), node.group(7))
    session.connect()
    tree = TreeConnect(session, r"\\%s\demo" % node.group(4))
    tree.connect()
    return conn, tree


def open_file(tree, name, share):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, READ_WRITE, FileAttributes.FILE_ATTRIBUTE_NORMAL, share,
                  CreateDisposition.FILE_OPEN_IF, CreateOptions.FILE_NON_DIRECTORY_FILE)
    return handle


def test_the_printed_commands_reach_one_cluster_and_sigterm_stops_it(demo, tmp_path):
    proc, (node1, node2), sharing, shared = demo
    assert [n.group(1) for n in (node1, node2)] == ["node1", "node2"]
    assert [n.group(4) for n in (node1, node2)] == ["127.0.0.21", "127.0.0.22"]
    assert sharing.group(1) == str(shared)

    upload = tmp_path / "hello.txt"
    upload.write_text("hello from node1\n")
    smbclient(node1.group(3), "put %s hello.txt" % upload)
    assert "hello.txt" in smbclient(node2.group(3), "ls")
    fetched = tmp_path / "fetched.txt"
    smbclient(node2.group(3), "get hello.txt %s" % fetched)
    assert fetched.read_text() == "hello from node1\n"

    conn1, tree1 = tree_of(node1)
    conn2, tree2 = tree_of(node2)
    try:
        exclusive = open_file(tree1, "hello.txt", 0)
        with pytest.raises(SMBResponseException) as caught:
            open_file(tree2, "hello.txt", 0)
        assert caught.value.status == STATUS_SHARING_VIOLATION
        exclusive.close()
        open_file(tree2, "hello.txt", 0).close()
    finally:
        conn1.disconnect()
        conn2.disconnect()

    pids = [int(n.group(2)) for n in (node1, node2)]
    demo_dir = sharing.group(3)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    for pid in pids:
        assert not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z"
    assert not os.path.exists(demo_dir)
    assert (shared / "hello.txt").read_text() == "hello from node1\n"


def test_ctrl_c_stops_it_too(demo):
    proc, nodes, sharing, _ = demo
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    assert not os.path.exists(sharing.group(3))
    etcd_port = int(sharing.group(2).rsplit(":", 1)[1])
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.20", etcd_port), timeout=2).close()
