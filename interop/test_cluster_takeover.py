"""Public address takeover and reclaim on another node (issue 18 item 4), with Python
smbprotocol as the client: two smb3d nodes of one etcd, each on a loopback address of its own,
serve one directory; the cluster's one public address X (another loopback address, all three
on one port) is served by node n1. n1 is killed with SIGKILL: X answers SMB through n2 within
node_ttl + 2 s, a client reconnecting to X reclaims its persistent handle on n2 with its data
and its byte-range lock, and n1's plain open is gone (another client opens the file
exclusively).

The whole of 127.0.0.0/8 is local on Linux, so the addresses need no `ip addr add`: the nodes
run without `public_interface` and only listen on what they hold. Each test draws its own
127.x.y.0/24 so that parallel runs do not meet."""

import json
import os
import random
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

from conftest import add_db_user, BINARY, end_process, free_port, interop_uid
from etcd import EtcdCluster
from test_cluster_opens import READ_WRITE, STATUS_SHARING_VIOLATION, open_file
from test_persistent import (STATUS_LOCK_NOT_GRANTED, create, durable_v2_flags, lock_element,
                             persistent_reconnect, persistent_request)

NODE_TTL = 2
USER = "tester"


class Node:
    def __init__(self, name, address, port, config, log):
        self.name, self.address, self.port, self.config, self.log = name, address, port, config, log
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([str(BINARY), "serve", "-c", str(self.config)], stdout=open(self.log, "ab"),
                                     stderr=subprocess.STDOUT,
                                     env=dict(os.environ, SMB3D_LOG=os.environ.get("SMB3D_LOG", "info")))
        wait_for(self.address, self.port, self.proc)

    def log_tail(self, n=60):
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])


def answers(address, port):
    try:
        with socket.create_connection((address, port), timeout=0.2):
            return True
    except OSError:
        return False


def wait_for(address, port, proc, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not answers(address, port):
        if proc.poll() is not None:
            raise RuntimeError("smb3d exited early")
        assert time.monotonic() < deadline, "%s:%d never answered" % (address, port)
        time.sleep(0.05)


@pytest.fixture
def cluster(tmp_path):
    yield from run_cluster(tmp_path, "continuous_availability = true\n")


@pytest.fixture
def default_ttl_cluster(tmp_path):
    yield from run_cluster(tmp_path, "continuous_availability = true\n", node_ttl=None)


def run_cluster(tmp_path, share_options, node_ttl=NODE_TTL):
    """Starts etcd and nodes n1 and n2 (n1 holding the public address) sharing one directory
    as "share" with `share_options` and `node_ttl` seconds (None: the default, 3 s); yields
    what the tests need, and stops them after."""
    net = "127.%d.%d." % (random.randint(100, 250), random.randint(1, 250))
    public = net + "10"
    port = free_port()
    shared = tmp_path / "shared"
    shared.mkdir()
    uid = interop_uid()
    os.chown(shared, uid, os.getgid())
    db = tmp_path / "users"
    password = add_db_user(db, USER, uid)
    with EtcdCluster(tmp_path / "etcd") as etcd:
        nodes = []
        try:
            for i, name in enumerate(("n1", "n2"), 1):
                home = tmp_path / name
                home.mkdir()
                config = home / "smb3d.toml"
                config.write_text(
                    '[server]\nlisten = ["%s%d:%d"]\nuser_db = "%s"\nadmin_socket = "%s"\nstate_dir = "%s"\n\n'
                    '[cluster]\netcd = ["%s"]\nnode = "%s"\n%spublic_addresses = ["%s"]\n\n'
                    '[share.share]\npath = "%s"\n%s'
                    % (net, i, port, db, home / "admin.sock", home / "state", etcd.endpoints[0], name,
                       "" if node_ttl is None else 'node_ttl = "%ds"\n' % node_ttl, public, shared, share_options))
                node = Node(name, net + str(i), port, config, home / "smb3d.log")
                nodes.append(node)
                node.start()
                if name == "n1":
                    # n1 alone takes the address; n2 joining leaves it there (one address, n1
                    # first by name).
                    wait_for(public, port, node.proc)
            yield {"nodes": nodes, "public": public, "port": port, "password": password, "etcd": etcd,
                   "shared": shared}
        finally:
            for node in nodes:
                if node.proc is not None:
                    end_process(node.proc)


def connect(cluster, client_guid=None, persistent=False):
    conn = Connection(client_guid or uuid.uuid4(), cluster["public"], cluster["port"], require_signing=True)
    if persistent:
        # Windows asks for persistent handles in its NEGOTIATE; smbprotocol does not unless told.
        conn.client_capabilities |= Capabilities.SMB2_GLOBAL_CAP_PERSISTENT_HANDLES
    conn.connect()
    session = Session(conn, USER, cluster["password"])
    session.connect()
    tree = TreeConnect(session, r"\\%s\share" % cluster["public"])
    tree.connect()
    return conn, tree


def holders(cluster, node):
    r = subprocess.run([str(BINARY), "cluster", "status", "--json", "-c", str(node.config)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return {a["address"]: a["node"] for a in json.loads(r.stdout)["public_addresses"]}


def test_a_killed_node_s_address_moves_and_its_persistent_handle_is_reclaimed_there(cluster):
    n1, n2 = cluster["nodes"]
    assert holders(cluster, n2) == {cluster["public"]: "n1"}
    client_guid = uuid.uuid4()
    data = os.urandom(64 * 1024)
    conn_a, tree_a = connect(cluster, client_guid, persistent=True)
    request, create_guid = persistent_request()
    a, contexts = create(tree_a, [request], CreateDisposition.FILE_OVERWRITE_IF)
    assert durable_v2_flags(contexts) == DurableHandleFlags.SMB2_DHANDLE_FLAG_PERSISTENT
    file_id = a.file_id
    a.write(data, 0)
    a.lock([lock_element(0, 4096)])
    conn_p, tree_p = connect(cluster)
    open_file(tree_p, "plain.txt", READ_WRITE, 0)
    # Through n2's own address, n1's plain open keeps others out while n1 lives.
    conn_o = Connection(uuid.uuid4(), n2.address, n2.port, require_signing=True)
    conn_o.connect()
    session_o = Session(conn_o, USER, cluster["password"])
    session_o.connect()
    tree_o = TreeConnect(session_o, r"\\%s\share" % n2.address)
    tree_o.connect()
    with pytest.raises(SMBResponseException) as refused:
        open_file(tree_o, "plain.txt", READ_WRITE, 0)
    assert refused.value.status == STATUS_SHARING_VIOLATION

    n1.proc.kill()
    n1.proc.wait(10)
    killed = time.monotonic()
    while True:
        try:
            conn_b, tree_b = connect(cluster, client_guid, persistent=True)
            break
        except (OSError, SMBResponseException, ValueError):
            pass
        assert time.monotonic() - killed < NODE_TTL + 2, \
            "the address did not answer SMB within node_ttl + 2 s:\n" + n2.log_tail()
        time.sleep(0.05)
    took = time.monotonic() - killed
    print("address %s answered SMB through n2 %.2f s after n1 was killed (node_ttl %d s)"
          % (cluster["public"], took, NODE_TTL))
    assert holders(cluster, n2) == {cluster["public"]: "n2"}
    try:
        reclaimed, _ = create(tree_b, [persistent_reconnect(file_id, create_guid)])
        assert reclaimed.read(0, len(data)) == data
        with pytest.raises(SMBResponseException) as refused:
            other, _ = create(tree_o)
            other.lock([lock_element(0, 4096)])
        assert refused.value.status == STATUS_LOCK_NOT_GRANTED, "the reclaimed handle's lock holds on n2"
        # n1's plain open went with its lease.
        open_file(tree_o, "plain.txt", READ_WRITE, 0).close()
        reclaimed.close()
    finally:
        conn_b.disconnect()
        conn_o.disconnect()
    assert n2.proc.poll() is None, n2.log_tail()
    assert "persistent open(s) of node n1 restored here" in n2.log.read_text(errors="replace")


def test_a_killed_node_is_noticed_before_its_lease_could_run_out(default_ttl_cluster):
    """At the default node_ttl (3 s, renewed every second) n1's lease cannot run out sooner
    than 2 s after its kill: its address answering SMB with the persistent handle reclaimed
    before that shows n2 noticed the kill itself (n1's liveness endpoint refused), as its log
    says."""
    cluster = default_ttl_cluster
    n1, n2 = cluster["nodes"]
    client_guid = uuid.uuid4()
    data = os.urandom(4096)
    conn_a, tree_a = connect(cluster, client_guid, persistent=True)
    request, create_guid = persistent_request()
    a, _ = create(tree_a, [request], CreateDisposition.FILE_OVERWRITE_IF)
    file_id = a.file_id
    a.write(data, 0)
    # n2 holds a connection to n1's liveness endpoint (it connects when it sees n1's record).
    time.sleep(0.5)
    n1.proc.kill()
    n1.proc.wait(10)
    killed = time.monotonic()
    bound = 2.0
    while True:
        try:
            conn_b, tree_b = connect(cluster, client_guid, persistent=True)
            break
        except (OSError, SMBResponseException, ValueError):
            pass
        assert time.monotonic() - killed < bound, \
            "the address did not answer SMB before n1's lease could run out:\n" + n2.log_tail()
        time.sleep(0.02)
    try:
        reclaimed, _ = create(tree_b, [persistent_reconnect(file_id, create_guid)])
        took = time.monotonic() - killed
        assert reclaimed.read(0, len(data)) == data
        reclaimed.close()
    finally:
        conn_b.disconnect()
    print("address %s answered SMB through n2 with the handle reclaimed %.2f s after n1 was killed (node_ttl 3 s)"
          % (cluster["public"], took))
    assert took < bound, "reclaimed %.2f s after the kill" % took
    assert "node n1 is dead" in n2.log.read_text(errors="replace")
