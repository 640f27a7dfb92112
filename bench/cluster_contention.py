#!/usr/bin/env python3
"""Issue 18 item 11's first row: smbtorture smb2.bench.path-contention-shared (every connection
opens the share root for its attributes only, then closes it) against a two-node cluster
(`smb3d cluster demo --nodes 2`), one node alone and both nodes at once, and against a single
smb3d without [cluster] with the same two runs at once. Prints each run's opens/s (and
opens + closes per second), the medians, and the servers' CPU time per open + close (the
smb3d processes, and etcd for the cluster, from /proc: on a loaded machine the rates follow
the scheduler, the CPU per operation much less); docs/cluster.md records the results.

    python3 bench/cluster_contention.py [--binary target/release/smb3d] [--runs 3]
"""

import argparse
import os
import re
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torture(address, port, user, password, nprocs, timelimit):
    """Starts one smbtorture run; returns the process."""
    return subprocess.Popen(
        ["smbtorture", "//%s/demo" % address, "-p", str(port), "-U", "%s%%%s" % (user, password),
         "smb2.bench.path-contention-shared", "--option=torture:timelimit=%d" % timelimit,
         "--option=torture:nprocs=%d" % nprocs],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def rates(proc):
    """(opens/s, opens + closes per second) of a finished run."""
    out, _ = proc.communicate(timeout=120)
    found = re.findall(r"open\[num/s=(\d+),.*close\[num/s=(\d+),", out)
    if not found:
        sys.exit("smbtorture printed no rate:\n" + out)
    opens, closes = (float(v) for v in found[-1])
    return opens, opens + closes


def cpu_seconds(pids):
    """User + system CPU time of `pids` so far."""
    total = 0
    for pid in pids:
        fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def at_once(targets, args, servers):
    """(opens/s, opens + closes per second, server CPU microseconds per open + close)."""
    before = cpu_seconds(servers)
    procs = [torture(a, p, u, pw, args.nprocs, args.timelimit) for a, p, u, pw in targets]
    results = [rates(p) for p in procs]
    both = sum(r[1] for r in results)
    # smbtorture's rate covers its time limit; the CPU is counted over the whole run.
    ops = both * args.timelimit
    cpu = (cpu_seconds(servers) - before) * 1e6 / ops if ops else float("nan")
    return sum(r[0] for r in results), both, cpu


def start_cluster(args, home):
    port = free_port()
    demo = subprocess.Popen([args.binary, "cluster", "demo", "--nodes", "2", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=open(home / "demo.log", "w"), text=True)
    nodes, pids = [], []
    while len(nodes) < 2:
        line = demo.stdout.readline()
        if not line:
            sys.exit("the demo ended: see %s" % (home / "demo.log"))
        m = re.match(r"node (\S+) pid (\d+): smbclient //([\d.]+)/demo -p (\d+) -U ([^%]+)%(\S+)", line)
        if m:
            nodes.append((m.group(3), int(m.group(4)), m.group(5), m.group(6)))
            pids.append(int(m.group(2)))
    etcd = subprocess.run(["pgrep", "-P", str(demo.pid), "etcd"], capture_output=True, text=True).stdout.split()
    return demo, nodes, pids + [int(p) for p in etcd]


def start_single(args, home):
    share = home / "share"
    share.mkdir()
    db = home / "users"
    password = "pw-" + secrets.token_hex(8)
    subprocess.run([args.binary, "user", "--db", str(db), "add", "bench", "--uid", str(os.getuid()),
                    "--password-stdin"], input=password + "\n", text=True, check=True, capture_output=True)
    port = free_port()
    config = home / "smb3d.toml"
    config.write_text('[server]\nlisten = ["127.0.0.1:%d"]\nuser_db = "%s"\nstate_dir = "%s"\n'
                      'admin_socket = "%s"\n\n[share.demo]\npath = "%s"\n'
                      % (port, db, home / "state", home / "admin.sock", share))
    proc = subprocess.Popen([args.binary, "serve", "-c", str(config)], stdout=open(home / "single.log", "wb"),
                            stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                sys.exit("the single server did not start: see %s" % (home / "single.log"))
            time.sleep(0.1)
    return proc, ("127.0.0.1", port, "bench", password)


def report(name, samples):
    opens = [s[0] for s in samples]
    both = [s[1] for s in samples]
    cpu = [s[2] for s in samples]
    print("%s: opens/s %s, median %.0f; opens+closes/s median %.0f; server CPU us per open+close %s, median %.1f;"
          " load %s" % (name, ", ".join("%.0f" % o for o in opens), statistics.median(opens), statistics.median(both),
                        ", ".join("%.1f" % c for c in cpu), statistics.median(cpu),
                        " ".join("%.2f" % v for v in os.getloadavg())))
    return statistics.median(opens), statistics.median(cpu)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", default=str(ROOT / "target" / "release" / "smb3d"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--nprocs", type=int, default=4)
    parser.add_argument("--timelimit", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="smb3d-contention-") as tmp:
        home = Path(tmp)
        demo, nodes, pids = start_cluster(args, home)
        try:
            one = report("cluster, node 1 alone", [at_once(nodes[:1], args, pids) for _ in range(args.runs)])
            two = report("cluster, both nodes at once (sum)", [at_once(nodes, args, pids) for _ in range(args.runs)])
        finally:
            demo.terminate()
            demo.wait(30)
        single, target = start_single(args, home)
        try:
            lone = report("single server, one run", [at_once([target], args, [single.pid]) for _ in range(args.runs)])
            alone = report("single server, two runs at once (sum)",
                           [at_once([target, target], args, [single.pid]) for _ in range(args.runs)])
        finally:
            single.terminate()
            single.wait(30)
    print("ratios at the same client count: opens/s both nodes / single server %.2f, one node alone / single"
          " server %.2f; CPU per operation both nodes / single server %.2f, one node alone / single server %.2f"
          % (two[0] / alone[0], one[0] / lone[0], two[1] / alone[1], one[1] / lone[1]))


if __name__ == "__main__":
    main()
