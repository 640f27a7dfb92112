"""srvsvc's share types on a cluster (issue 18, MS-SRVS 2.2.2.4): a cluster node reports its
scale-out shares as STYPE_CLUSTER_SOFS and its general cluster shares (`scale_out = false`) as
STYPE_CLUSTER_FS, the types its TREE_CONNECT announces as SCALEOUT and CLUSTER (MS-SMB2
3.3.5.7); IPC$ stays STYPE_IPC | STYPE_SPECIAL and a single server reports plain
STYPE_DISKTREE. rpcclient reads the types at level 502; `smbclient -L` masks them and still
lists the share as a disk."""

import subprocess

import pytest

from conftest import start_smb3d, stop
from test_cluster_opens import cluster_nodes

STYPE_CLUSTER_FS = 0x02000000
STYPE_CLUSTER_SOFS = 0x04000000


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert r.returncode == 0, r.stdout
    return r.stdout


def types(node):
    """The share types rpcclient's netshareenumall at level 502 shows, by share name."""
    out = run(["rpcclient", "-p", str(node.port), "127.0.0.1", "-U", node.creds, "-c", "netshareenumall 502"])
    found, name = {}, None
    for line in out.splitlines():
        if line.startswith("netname: "):
            name = line.split(": ", 1)[1]
        elif line.strip().startswith("type:") and name is not None:
            found[name] = int(line.split(":", 1)[1].strip(), 16)
    return found


def got_info_type(node, share):
    out = run(["rpcclient", "-p", str(node.port), "127.0.0.1", "-U", node.creds, "-c",
               "netsharegetinfo %s 502" % share])
    line = next(l for l in out.splitlines() if l.strip().startswith("type:"))
    return int(line.split(":", 1)[1].strip(), 16)


def smbclient_lists(node):
    out = run(["smbclient", "-L", "//127.0.0.1", "-p", str(node.port), "-U", node.creds])
    return {line.split()[0]: line.split()[1] for line in out.splitlines()
            if line.startswith("\t") and len(line.split()) >= 2}


@pytest.mark.parametrize("scale_out, expected", [(True, STYPE_CLUSTER_SOFS), (False, STYPE_CLUSTER_FS)])
def test_a_cluster_node_reports_its_shares_as_cluster_shares(tmp_path, scale_out, expected):
    with cluster_nodes(tmp_path, scale_out=scale_out) as (n1, n2):
        for node in (n1, n2):
            assert types(node) == {"share": expected, "IPC$": 0x80000003}
            assert got_info_type(node, "share") == expected
        listed = smbclient_lists(n2)
        assert listed.get("share") == "Disk" and listed.get("IPC$") == "IPC", listed


def test_a_single_server_reports_plain_disk_shares(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    server = start_smb3d(tmp_path, shares={"share": {"path": str(shared)}})
    try:
        assert types(server) == {"share": 0, "IPC$": 0x80000003}
        assert got_info_type(server, "share") == 0
    finally:
        stop(server)
