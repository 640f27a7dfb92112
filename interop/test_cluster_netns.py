"""Failover of a node whose network is cut, and of a killed one, at default settings (issue 18
items 4 and 11), in network namespaces this test makes: "hub" holds a bridge (10.78.0.1/24),
etcd and the client (this process, moved into it with setns(2) for the test); nodes n1 and n2
each run in a namespace of their own joined to the bridge by a veth pair (10.78.0.11 and
10.78.0.12), with `public_interface` set, so each adds the public address 10.78.0.100 to its
own interface and announces it with a gratuitous ARP (arping). etcd is reachable from the nodes
only over those links, so cutting n1's link cuts it from etcd too.

A client holding a persistent handle through 10.78.0.100 (held by n1) loses n1: either n1's
link is brought down on the hub side (`ip -n HUB link set HOST_VETH down`, a silent node: n1
lives on and says nothing) or n1 is killed with SIGKILL. The test measures the time from the
cut or the kill until a reconnect through the same address reaches n2 and reclaims the handle
with its data. The bounds are correctness bounds, not the speed goals (those belong in bench/):
a silent node's address must move once its lease (node_ttl, 3 s by default) has run out, a
killed node's before that lease could have run out (2 s: it was renewed at most node_ttl / 3
before the kill).

Skipped where `ip netns add` is not permitted or arping is missing. Every namespace and
process the test made is removed at its end (deleting a namespace removes its links)."""

import contextlib
import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import uuid

import pytest
from smbprotocol.connection import Capabilities, Connection
from smbprotocol.create_contexts import DurableHandleFlags
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.open import CreateDisposition
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from conftest import add_db_user, BINARY, end_process, interop_uid
from etcd import ETCD
from test_persistent import create, durable_v2_flags, persistent_reconnect, persistent_request

USER = "tester"
NODE_TTL = 3.0  # the default of [cluster] node_ttl, which the nodes' configuration leaves unset
HUB_IP = "10.78.0.1"
PUBLIC = "10.78.0.100"
PORT = 445
CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)


def ip(*args):
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, "ip %s: %s" % (" ".join(args), r.stderr)


@contextlib.contextmanager
def inside(namespace):
    """Runs the block (and every process and thread it starts) in `namespace`."""
    with open("/proc/thread-self/ns/net") as home, open("/run/netns/" + namespace) as there:
        if _libc.setns(there.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns " + namespace)
        try:
            yield
        finally:
            if _libc.setns(home.fileno(), CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back to the test's namespace")


@pytest.fixture
def namespaces():
    """Namespaces hub, n1, n2 (names of this run's own) joined as the module doc says."""
    if shutil.which("arping") is None:
        pytest.skip("arping (iputils-arping) is missing: a moved address is announced with it")
    tag = "smb3d-%d-%04x" % (os.getpid() % 100000, random.getrandbits(16))
    names = {"hub": tag + "-hub", "n1": tag + "-n1", "n2": tag + "-n2"}
    made = []
    try:
        for name in names.values():
            r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
            if r.returncode != 0:
                pytest.skip("ip netns add is not permitted here: %s" % r.stderr.strip())
            made.append(name)
        hub = names["hub"]
        ip("-n", hub, "link", "set", "lo", "up")
        ip("-n", hub, "link", "add", "br0", "type", "bridge")
        ip("-n", hub, "addr", "add", HUB_IP + "/24", "dev", "br0")
        ip("-n", hub, "link", "set", "br0", "up")
        for i in (1, 2):
            node = names["n%d" % i]
            ip("link", "add", "h%d" % i, "netns", hub, "type", "veth", "peer", "name", "eth0", "netns", node)
            ip("-n", hub, "link", "set", "h%d" % i, "master", "br0", "up")
            ip("-n", node, "link", "set", "lo", "up")
            ip("-n", node, "addr", "add", "10.78.0.1%d/24" % i, "dev", "eth0")
            ip("-n", node, "link", "set", "eth0", "up")
        yield names
    finally:
        for name in made:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def answers(address, port, timeout=0.2):
    try:
        with socket.create_connection((address, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_for(address, port, proc, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not answers(address, port):
        assert proc.poll() is None, "%s exited early" % what
        assert time.monotonic() < deadline, "%s:%d never answered" % (address, port)
        time.sleep(0.05)


@pytest.fixture
def cluster(tmp_path, namespaces):
    shared = tmp_path / "shared"
    shared.mkdir()
    uid = interop_uid()
    os.chown(shared, uid, os.getgid())
    db = tmp_path / "users"
    password = add_db_user(db, USER, uid)
    procs = []
    with inside(namespaces["hub"]):
        try:
            endpoint = "http://%s:2379" % HUB_IP
            etcd = subprocess.Popen(
                [ETCD, "--name", "m0", "--data-dir", str(tmp_path / "etcd"), "--listen-client-urls", endpoint,
                 "--advertise-client-urls", endpoint, "--listen-peer-urls", "http://127.0.0.1:2380",
                 "--initial-advertise-peer-urls", "http://127.0.0.1:2380",
                 "--initial-cluster", "m0=http://127.0.0.1:2380", "--logger", "zap", "--log-outputs", "stderr"],
                stdout=open(tmp_path / "etcd.log", "ab"), stderr=subprocess.STDOUT)
            procs.append(etcd)
            wait_for(HUB_IP, 2379, etcd, "etcd")
            nodes = {}
            for i in (1, 2):
                name = "n%d" % i
                home = tmp_path / name
                home.mkdir()
                config = home / "smb3d.toml"
                config.write_text(
                    '[server]\nlisten = ["10.78.0.1%d:%d"]\nuser_db = "%s"\nadmin_socket = "%s"\nstate_dir = "%s"\n\n'
                    '[cluster]\netcd = ["%s"]\nnode = "%s"\npublic_addresses = ["%s"]\npublic_interface = "eth0"\n\n'
                    '[share.share]\npath = "%s"\ncontinuous_availability = true\n'
                    % (i, PORT, db, home / "admin.sock", home / "state", endpoint, name, PUBLIC, shared))
                log = home / "smb3d.log"
                proc = subprocess.Popen(
                    ["ip", "netns", "exec", namespaces[name], str(BINARY), "serve", "-c", str(config)],
                    stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                    env=dict(os.environ, SMB3D_LOG=os.environ.get("SMB3D_LOG", "info")))
                procs.append(proc)
                nodes[name] = (proc, log)
                wait_for("10.78.0.1%d" % i, PORT, proc, name)
                if i == 1:
                    # n1 alone takes the address; n2 joining leaves it there (n1 first by name).
                    wait_for(PUBLIC, PORT, proc, "the public address")
            yield {"nodes": nodes, "password": password, "namespaces": namespaces}
        finally:
            for proc in reversed(procs):
                end_process(proc)


def connect(cluster, client_guid, timeout=5):
    conn = Connection(client_guid, PUBLIC, PORT, require_signing=True)
    conn.client_capabilities |= Capabilities.SMB2_GLOBAL_CAP_PERSISTENT_HANDLES
    conn.connect(timeout=timeout)
    session = Session(conn, USER, cluster["password"])
    session.connect()
    tree = TreeConnect(session, r"\\%s\share" % PUBLIC)
    tree.connect()
    return conn, tree


def log_tail(log, n=40):
    return "\n".join(log.read_text(errors="replace").splitlines()[-n:])


@pytest.mark.parametrize("failure", ["cut", "killed"])
def test_a_lost_node_s_address_moves_and_its_persistent_handle_is_reclaimed(cluster, failure):
    (n1, n1_log), (n2, n2_log) = cluster["nodes"]["n1"], cluster["nodes"]["n2"]
    client_guid = uuid.uuid4()
    data = os.urandom(64 * 1024)
    conn_a, tree_a = connect(cluster, client_guid)
    request, create_guid = persistent_request()
    a, contexts = create(tree_a, [request], CreateDisposition.FILE_OVERWRITE_IF)
    assert durable_v2_flags(contexts) == DurableHandleFlags.SMB2_DHANDLE_FLAG_PERSISTENT
    file_id = a.file_id
    a.write(data, 0)
    # Both nodes hold a connection to each other's liveness endpoint by now (they connect at
    # once; a killed node is proven dead only by an endpoint held before).
    time.sleep(0.5)

    if failure == "cut":
        ip("-n", cluster["namespaces"]["hub"], "link", "set", "h1", "down")
    else:
        n1.send_signal(signal.SIGKILL)
        n1.wait(10)
    lost = time.monotonic()
    bound = NODE_TTL + 5.0 if failure == "cut" else NODE_TTL * 2 / 3
    while not answers(PUBLIC, PORT, timeout=0.1):
        assert time.monotonic() - lost < bound, \
            "%s did not answer within %.1f s of n1 %s:\n%s" % (PUBLIC, bound, failure, log_tail(n2_log))
    conn_b, tree_b = connect(cluster, client_guid)
    try:
        reclaimed, _ = create(tree_b, [persistent_reconnect(file_id, create_guid)])
        took = time.monotonic() - lost
        assert reclaimed.read(0, len(data)) == data
        reclaimed.close()
    finally:
        conn_b.disconnect()
        # n1's connection leads nowhere now: closed without a LOGOFF that would wait for it.
        conn_a.disconnect(False)
        # A cut n1 stopping would wait for etcd to revoke its lease (5 s): nothing to wait for.
        n1.kill()
    print("n1 %s: %s answered SMB through n2 with the persistent handle reclaimed %.2f s later"
          % (failure, PUBLIC, took))
    assert took < bound, "reclaimed %.2f s after n1 %s, bound %.1f s" % (took, failure, bound)
    assert n2.poll() is None, log_tail(n2_log)
    n2_text = n2_log.read_text(errors="replace")
    assert "persistent open(s) of node n1 restored here" in n2_text
    if failure == "killed":
        assert "node n1 is dead" in n2_text, "n2 noticed the kill through n1's liveness endpoint"
    else:
        assert "node n1 is dead" not in n2_text, "a silent node is never proven dead: its lease decides"
