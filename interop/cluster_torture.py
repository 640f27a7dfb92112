#!/usr/bin/env python3
"""smbtorture's suites of interop/torture on a cluster share (issue 18, check 2): every suite
interop/test_torture.py runs, against node 1 of a two-node cluster (node 2 up, the same
directory, one etcd), compared per sub-test with single-node. The share is a general cluster
share (`scale_out = false`: one server's caching, cross-node breaks), or with `--scale-out` a
scale-out share (SCALEOUT announced, MS-SMB2's scale-out caching for SMB 3 clients).

Single-node is what interop/test_torture.py holds it to: every sub-test passes but those of
interop/torture/knownfail. `--single` runs each suite against a single server as well and
compares with what it really did (twice the time). A difference is a sub-test whose result
on the cluster share differs; those listed in interop/torture/cluster-knownfail are explained
(docs/conformance.md, "On a cluster share"), any other fails the run; on a scale-out share
those of interop/torture/scaleout-knownfail too. The full run takes about as long as
interop/test_torture.py (tens of minutes); interop/test_cluster_torture.py runs the suites most
exposed to cluster code in CI.

    python3 interop/cluster_torture.py [--scale-out] [--single] [--suite smb2.lock ...] [--keep DIR]
"""

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import start_smb3d, stop  # noqa: E402
from etcd import EtcdCluster  # noqa: E402
from torture import read_list, run_suite  # noqa: E402

NODE_TTL = 2


def shares_of(share_dir, **options):
    """The shares interop/conftest.py's shared_smb3d serves, as Samba's selftest gives them."""
    return {"share": {"path": str(share_dir), "hide_files": ["hidefile"], **options},
            "hideunread": {"path": str(share_dir), "hide_unreadable": True, **options}}


def explained(scale_out):
    """The differences from single-node explained for a share of this kind."""
    return read_list("cluster-knownfail") + (read_list("scaleout-knownfail") if scale_out else [])


@contextlib.contextmanager
def torture_cluster(tmp, scale_out=False):
    """Two nodes ("n1", "n2") of one etcd serving tmp/shared as shared_smb3d's shares, general
    cluster shares or scale-out ones."""
    shared = tmp / "shared"
    shared.mkdir()
    with EtcdCluster(tmp / "etcd") as etcd:
        nodes = []
        try:
            for name in ("n1", "n2"):
                home = tmp / name
                home.mkdir()
                extra = 'state_dir = "%s"\n\n[cluster]\netcd = ["%s"]\nnode = "%s"\nnode_ttl = "%ds"\n' % (
                    home / "state", etcd.endpoints[0], name, NODE_TTL)
                node = start_smb3d(home, extra_config=extra, shares=shares_of(shared, scale_out=scale_out))
                node.share_dir = shared
                node.etcd = etcd
                nodes.append(node)
            yield nodes
        finally:
            for node in nodes:
                stop(node)


@contextlib.contextmanager
def single_server(tmp):
    share_dir = tmp / "single" / "share"
    share_dir.mkdir(parents=True)
    server = start_smb3d(tmp / "single", shares=shares_of(share_dir))
    try:
        yield server
    finally:
        stop(server)


def listed(name, names):
    return any(name == k or name.startswith(k + ".") for k in names)


def expected_single(results, knownfail):
    """What single-node gives for the sub-tests the cluster ran, by interop/torture/knownfail
    (which cannot say what single-node skips: a cluster skip is taken as single-node's)."""
    return {name: "skip" if result == "skip" else "failure" if listed(name, knownfail) else "success"
            for name, result in results.items()}


def outcome(result):
    return {"success": "pass", "skip": "skip", "xfail": "skip"}.get(result, result if result == "missing" else "fail")


def differences(cluster, single):
    """(name, single-node result, cluster result) of every sub-test that passes, fails or is
    skipped on one side and not the other."""
    out = []
    for name in sorted(set(cluster) | set(single)):
        c, s = cluster.get(name, "missing"), single.get(name, "missing")
        if outcome(c) != outcome(s):
            out.append((name, s, c))
    return out


def passed(results):
    return sum(1 for r in results.values() if r == "success")


def run(lines, node, single=None, knownfail=(), explained=(), report=print):
    """Runs each suite line against `node` (and `single`, when given); returns the
    unexplained differences and the explained ones, each a list of (name, single, cluster)."""
    unexplained, known = [], []
    for line in lines:
        suite, *options = line.split()
        started = time.monotonic()
        cluster, _ = run_suite(node, suite, extra=options)
        if single is not None:
            baseline, _ = run_suite(single, suite, extra=options)
        else:
            baseline = expected_single(cluster, knownfail)
        diffs = differences(cluster, baseline)
        report("%-30s cluster %3d/%-3d single %3d/%-3d differences %d (%.0f s)" % (
            suite, passed(cluster), len(cluster), passed(baseline), len(baseline), len(diffs),
            time.monotonic() - started))
        for name, s, c in diffs:
            why = "explained" if listed(name, explained) else "UNEXPLAINED"
            report("    %s: single %s, cluster %s (%s)" % (name, s, c, why))
            (known if why == "explained" else unexplained).append((name, s, c))
        if not node.alive():
            unexplained.append((suite, "alive", "node 1 died"))
            report("    node 1 died during %s:\n%s" % (suite, node.log_tail()))
            break
    return unexplained, known


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale-out", action="store_true", help="on a scale-out share (default: a general cluster share)")
    parser.add_argument("--single", action="store_true", help="run each suite against a single server too")
    parser.add_argument("--suite", action="append", help="only these suites (default: interop/torture/suites)")
    parser.add_argument("--keep", help="work in this directory and keep it (logs)")
    args = parser.parse_args()
    lines = read_list("suites")
    if args.suite:
        lines = [line for line in lines if line.split()[0] in args.suite]
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="cluster-torture-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        with contextlib.ExitStack() as stack:
            n1, _ = stack.enter_context(torture_cluster(tmp, args.scale_out))
            single = stack.enter_context(single_server(tmp)) if args.single else None
            unexplained, known = run(lines, n1, single, read_list("knownfail"), explained(args.scale_out),
                                     report=lambda text: print(text, flush=True))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("%s share: %d differences explained (interop/torture/cluster-knownfail%s), %d unexplained" % (
        "scale-out" if args.scale_out else "general cluster", len(known),
        ", scaleout-knownfail" if args.scale_out else "", len(unexplained)))
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
