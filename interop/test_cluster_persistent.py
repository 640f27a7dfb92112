"""A cluster node keeps persistent handles in etcd (issue 18 item 4), with Python smbprotocol as
the client: smb3d with [cluster] and a one-member etcd grants a persistent handle, its record
is in etcd (and nothing in state_dir), the node is killed (SIGKILL) and started again, and the
client reclaims its handle, with its data and its lock, from what etcd kept. The node's
membership key lives under its etcd lease."""

import json
import os
import subprocess
import time
import uuid

import pytest
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.create_contexts import DurableHandleFlags
from smbprotocol.open import CreateDisposition

from conftest import BINARY, start_smb3d, stop, wait_for_port
from etcd import EtcdCluster
from test_persistent import (STATUS_FILE_NOT_AVAILABLE, STATUS_LOCK_NOT_GRANTED, connect, create,
                             persistent_reconnect,
                             durable_v2_flags, lock_element, persistent_request)

RECORDS = "/smb3d/records/persistent-opens/"


@pytest.fixture
def cluster_node(tmp_path):
    with EtcdCluster(tmp_path / "etcd") as etcd:
        state = tmp_path / "state"
        extra = 'state_dir = "%s"\n\n[cluster]\netcd = ["%s"]\nnode = "n1"\nnode_ttl = "2s"\n' % (
            state, etcd.endpoints[0])
        server = start_smb3d(tmp_path, extra_config=extra,
                             shares={"share": {"path": str(tmp_path / "share"), "continuous_availability": True}})
        server.state_dir = state
        server.etcd = etcd
        yield server
        stop(server)


def kill_and_start_again(server):
    server.proc.kill()
    server.proc.wait(10)
    with open(server.log, "ab") as log:
        log.write(b"--- killed and restarted ---\n")
    server.proc = subprocess.Popen([str(BINARY), "serve", "-c", str(server.config)], stdout=open(server.log, "ab"),
                                   stderr=subprocess.STDOUT,
                                   env=dict(os.environ, SMB3D_LOG=os.environ.get("SMB3D_LOG", "info")))
    # The killed process's lease holds the node's name for up to node_ttl.
    wait_for_port(server.port, server.proc, timeout=30)


def cluster_status(server):
    r = subprocess.run([str(BINARY), "cluster", "status", "--json", "-c", str(server.config)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_node_is_a_member_under_its_lease_and_cluster_status_shows_it(cluster_node):
    assert cluster_node.etcd.keys("/smb3d/nodes/") == ["/smb3d/nodes/n1"]
    info = json.loads(cluster_node.etcd.get("/smb3d/nodes/n1"))
    assert info["pid"] == cluster_node.proc.pid
    assert "127.0.0.1:%d" % cluster_node.port in info["addresses"]
    status = cluster_status(cluster_node)
    assert [(n["name"], n["health"], n["pid"]) for n in status["nodes"]] == [("n1", "up", cluster_node.proc.pid)]
    assert status["dialect"] == "3.1.1"
    text = subprocess.run([str(BINARY), "cluster", "status", "-c", str(cluster_node.config)], capture_output=True,
                          text=True, timeout=30).stdout
    assert "1 node(s) up" in text and "node n1" in text, text
    cluster_node.proc.kill()
    cluster_node.proc.wait(10)
    killed = time.time()
    while cluster_node.etcd.keys("/smb3d/nodes/"):
        assert time.time() - killed < 10, "the killed node's lease never ran out"
        time.sleep(0.1)
    # node_ttl is 2 s; etcd rounds nothing down.
    assert time.time() - killed > 1.0
    assert cluster_status(cluster_node)["nodes"] == []


def test_a_killed_node_started_again_reclaims_persistent_handles_from_etcd(cluster_node):
    client_guid = uuid.uuid4()
    data = os.urandom(128 * 1024)
    conn_a, tree_a = connect(cluster_node, client_guid)
    request, create_guid = persistent_request()
    a, contexts = create(tree_a, [request], CreateDisposition.FILE_OVERWRITE_IF)
    assert durable_v2_flags(contexts) == DurableHandleFlags.SMB2_DHANDLE_FLAG_PERSISTENT
    file_id = a.file_id
    a.write(data, 0)
    a.lock([lock_element(0, 4096)])
    assert len(cluster_node.etcd.keys(RECORDS)) == 1, "the persistent open's record is in etcd"
    assert not cluster_node.state_dir.exists() or os.listdir(cluster_node.state_dir) == []

    kill_and_start_again(cluster_node)
    log = cluster_node.log.read_text(errors="replace")
    assert "1 persistent open(s) restored from etcd" in log, log[-3000:]

    conn_b, tree_b = connect(cluster_node, uuid.uuid4(), persistent=False)
    try:
        with pytest.raises(SMBResponseException) as refused:
            create(tree_b)
        assert refused.value.status == STATUS_FILE_NOT_AVAILABLE
        conn_a2, tree_a2 = connect(cluster_node, client_guid)
        try:
            a2, _ = create(tree_a2, [persistent_reconnect(file_id, create_guid)])
            assert a2.read(0, len(data)) == data
            b, _ = create(tree_b)
            with pytest.raises(SMBResponseException) as refused:
                b.lock([lock_element(0, 4096)])
            assert refused.value.status == STATUS_LOCK_NOT_GRANTED
            a2.close()
            assert cluster_node.etcd.keys(RECORDS) == [], "closing removed the record from etcd"
            b.lock([lock_element(0, 4096)])
            b.close()
        finally:
            conn_a2.disconnect()
    finally:
        conn_b.disconnect()
    assert cluster_node.alive(), cluster_node.log_tail()


def test_a_node_that_cannot_reach_etcd_does_not_start(tmp_path):
    from conftest import free_port
    extra = '\n[cluster]\netcd = ["http://127.0.0.1:%d"]\n' % free_port()
    with pytest.raises(RuntimeError, match="exited early"):
        start_smb3d(tmp_path, extra_config=extra)
    assert "etcd" in (tmp_path / "smb3d.log").read_text(errors="replace")


def lease_of(server):
    r = server.etcd._call(server.etcd.endpoints[0], "/v3/kv/range",
                          {"key": __import__("base64").b64encode(b"/smb3d/nodes/n1").decode()}, 5)
    return int(r["kvs"][0]["lease"])


def test_a_node_whose_lease_is_revoked_stops_serving(cluster_node):
    cluster_node.etcd._call(cluster_node.etcd.endpoints[0], "/v3/kv/lease/revoke", {"ID": lease_of(cluster_node)}, 5)
    try:
        cluster_node.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail("the node went on serving without its lease:\n" + cluster_node.log_tail())
    assert cluster_node.proc.returncode != 0
    assert "lease is gone" in cluster_node.log.read_text(errors="replace")


def test_a_node_stopped_with_sigterm_leaves_at_once(cluster_node):
    cluster_node.proc.terminate()
    cluster_node.proc.wait(timeout=10)
    assert cluster_node.etcd.keys("/smb3d/nodes/") == [], "the lease was revoked, not left to run out"
