"""The smbtorture suites most exposed to cluster code (share modes and delete-pending in etcd,
byte-range locks in etcd, ids, cluster share capabilities) on a general cluster share: node 1 of
two nodes over one directory with one etcd, node 2 up. Each sub-test must do what it does on a
single server (interop/torture/knownfail) but for the differences interop/torture/
cluster-knownfail explains. On a scale-out share, smb2.replay's sub-tests that expect a scale-out
server's grants pass. interop/cluster_torture.py runs every suite of interop/torture."""

import base64

import pytest

from cluster_torture import explained, run, torture_cluster
from torture import read_list, run_suite

# The suites whose requests reach EtcdOpens and EtcdLocks most (every open, share-mode and
# delete-on-close rule, every lock, durable opens, renames, streams, file ids), picked so that
# they finish in under a minute (smb2.lease and smb2.oplock take minutes of break timeouts).
CI_SUITES = ["smb2.create", "smb2.delete-on-close-perms", "smb2.sharemode", "smb2.streams", "smb2.rename",
             "smb2.fileid", "smb2.lock", "smb2.durable-open", "smb2.durable-v2-open"]


@pytest.fixture(scope="module")
def cluster_node(tmp_path_factory):
    with torture_cluster(tmp_path_factory.mktemp("cluster-torture")) as (n1, n2):
        # Both nodes joined the cluster: node 1's opens and locks go through etcd.
        assert n1.etcd.keys("/smb3d/nodes/") == ["/smb3d/nodes/n1", "/smb3d/nodes/n2"]
        yield n1
        assert n2.alive(), "node 2 died:\n" + n2.log_tail()


def etcd_revision(etcd):
    """etcd's revision: one more for every write (a put, a delete, a transaction that wrote)."""
    answer = etcd._call(etcd.endpoints[0], "/v3/kv/range", {"key": base64.b64encode(b"/smb3d/").decode()}, 5)
    return int(answer["header"]["revision"])


@pytest.mark.parametrize("line", [line for line in read_list("suites") if line.split()[0] in CI_SUITES])
def test_suite_on_a_cluster_share(cluster_node, line):
    lines = []
    before = etcd_revision(cluster_node.etcd)
    unexplained, _ = run([line], cluster_node, None, read_list("knownfail"), explained(False),
                         report=lines.append)
    print("\n".join(lines))
    # The suite's opens went through etcd (a write at each open and at each close: 87 for the 9
    # sub-tests of smb2.delete-on-close-perms).
    assert etcd_revision(cluster_node.etcd) - before > 20, lines
    assert not unexplained, "\n".join(lines) + "\n--- node 1 log ---\n" + cluster_node.log_tail()


# smb2.replay's sub-tests that read SMB2_SHARE_CAP_SCALEOUT and then expect MS-SMB2's scale-out
# grants (3.3.5.9: level II for a batch oplock; 3.3.5.9.8: a lease of read caching only; no
# durable v2 handle without persistence); on a general share they expect one server's.
SCALE_OUT_REPLAY = ["smb2.replay.replay-dhv2-oplock1", "smb2.replay.replay-dhv2-lease1",
                    "smb2.replay.replay-dhv2-oplock-lease"]


def test_replay_gets_scale_out_grants_on_a_scale_out_share(tmp_path):
    with torture_cluster(tmp_path, scale_out=True) as (n1, _):
        for name in SCALE_OUT_REPLAY:
            results, output = run_suite(n1, name)
            assert results == {name: "success"}, output
