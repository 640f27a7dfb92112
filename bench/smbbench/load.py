"""The workloads of issue 21, run by smbload (bench/load, on smb3d's own client crate) instead of
smbclient/smbtorture: many connections and requests in flight, so that on two shared cores the
server, not the client, is what is measured. Each sample is one smbload run with the server's
PID, whose JSON report gives ops/s (or MiB/s), latency percentiles and the server's CPU per
operation and per GiB (its whole process tree, from /proc)."""

import json
import subprocess

from .clients import ClientError, tail
from .floor import floor_workloads
from .servers import SHARE, USER
from .workloads import GIB, MIB, Sample, Workload


class Load(Workload):
    """One smbload workload at a fixed shape. `unit` is ops/s, or MiB/s for the 1 MiB rows;
    extra rows give the server's CPU per operation and the p99 latency (and what `extras`
    names)."""

    def __init__(self, sizes, name, title, workload, connections, depth, protection="plain", seconds=None,
                 args=(), extras=(), fresh_server=False):
        self.sizes = sizes
        self.fresh_server = fresh_server
        self.name = name
        self.workload = workload
        self.connections = connections
        self.depth = depth
        self.protection = protection
        self.seconds = seconds or sizes.load_seconds
        self.args = list(args)
        self.throughput = workload in ("read-1m", "write-1m")
        self.unit = "MiB/s" if self.throughput else "ops/s"
        shape = "%d conn%s x %d in flight" % (connections, "s" if connections > 1 else "", depth)
        self.title = "smbload %s, %s (%s)" % (title, shape, "MiB/s" if self.throughput else "ops/s")
        rows = [("cpu_us_per_op", "smbload %s: server CPU per operation" % title, "us/op", False),
                ("p99_us", "smbload %s: p99 latency" % title, "us", False)]
        rows += [(key, "smbload %s: %s" % (title, what), unit, higher) for key, what, unit, higher in extras]
        self.extra_rows = tuple(rows)

    def command(self, ctx, server):
        if ctx.smbload is None:
            raise ClientError("smbload was not built")
        return [str(ctx.smbload), "--server", "127.0.0.1:%d" % server.port, "--share", SHARE, "--user", USER,
                "--password", server.password, "--workload", self.workload, "--connections", str(self.connections),
                "--depth", str(self.depth), "--protection", self.protection, "--seconds", str(self.seconds),
                "--warmup", str(self.sizes.load_warmup), "--server-pid", str(server.proc.pid),
                "--threads", "2", "--json", *self.args]

    def sample(self, ctx, server):
        cmd = self.command(ctx, server)
        limit = self.seconds + self.sizes.load_warmup + 600
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired as e:
            raise ClientError("smbload did not finish within %d s" % limit) from e
        try:
            report = json.loads(r.stdout)
        except ValueError:
            raise ClientError("smbload failed (%d): %s" % (r.returncode, tail(r.stderr, 3)))
        if r.returncode != 0:
            raise ClientError("smbload: %d errors, first: %s" % (report.get("errors", 0), report.get("first_error")))
        value = report["bytes"] / MIB / report["seconds"] if self.throughput else report["ops_per_s"]
        cpu_per_gib = report.get("server_cpu_s_per_gib") if self.throughput else None
        extras = {
            "cpu_us_per_op": report.get("server_cpu_us_per_op"),
            "p99_us": report["latency_us"]["p99"],
            "p50_us": report["latency_us"]["p50"],
            "tool_cores_per_10k": report.get("client_cores_per_10k_ops"),
            "tool_cpu_per_gib": report.get("client_cpu_s_per_gib") if self.throughput else None,
            "mismatches": report.get("status_mismatches"),
            "entries_per_s": report.get("entries_per_s"),
        }
        growth = (report.get("growth_per_connection") or {}).get("connected")
        if growth:
            extras["rss_kib_per_conn"] = growth["rss_kib"]
            extras["pss_kib_per_conn"] = growth["pss_kib"]
        return Sample(value=value, cpu_per_gib=cpu_per_gib, extras=extras)


class Nbench(Load):
    """dbench's NBENCH load over SMB2, one client per connection; with `xattrs` off, both
    servers run for the sample without storing DOS attributes, EAs and streams in xattrs
    (Samba also without acl_xattr; smb3d still reads a stored NT ACL, having no setting for
    it)."""

    def __init__(self, sizes, clients, xattrs=True):
        suffix = "" if xattrs else ", metadata not in xattrs"
        super().__init__(sizes, "nbench-%d%s" % (clients, "" if xattrs else "-noxattr"), "NBENCH%s" % suffix,
                         "nbench", clients, 1, seconds=sizes.nbench_seconds)
        self.xattrs = xattrs

    def prepare(self, ctx, server):
        if self.xattrs:
            return
        if not hasattr(server, "set_xattrs"):
            raise ClientError("%s has no setting that keeps metadata out of xattrs" % server.label)
        server.set_xattrs(False)

    def finish(self, ctx, server):
        if not self.xattrs and hasattr(server, "set_xattrs"):
            server.set_xattrs(True)


def load_workloads(sizes):
    """Issue 21's rows, in the order they run; each 1 MiB row is followed by the machine's floor
    under it, so that both see the same moment of a shared machine."""
    floors = floor_workloads(sizes)
    rows = [
        Load(sizes, "load-echo", "ECHO", "echo", 4, 16),
        Load(sizes, "load-open-close", "open+close of one path", "open-close", 16, 1),
        Load(sizes, "load-read-4k", "4 KiB random read", "read-4k", 4, 16),
        Load(sizes, "load-write-4k", "4 KiB random write", "write-4k", 4, 16),
    ]
    for protection, label in (("plain", "plain"), ("sign", "signed (AES-GMAC)"), ("encrypt", "encrypted (AES-128-GCM)")):
        for op in ("read", "write"):
            name = "load-%s-1m-%s" % (op, protection)
            rows.append(Load(sizes, name, "1 MiB %s %s" % (op, label), "%s-1m" % op, 2, 8, protection))
            rows += floors.get(name, [])
    rows.append(Load(sizes, "load-querydir", "listing of %d entries" % sizes.load_entries, "querydir", 1, 1,
                     args=("--entries", str(sizes.load_entries))))
    memory = (("rss_kib_per_conn", "server RSS growth per connection", "KiB/conn", False),
              ("pss_kib_per_conn", "server PSS growth per connection", "KiB/conn", False))
    for n in (64, 256):
        # On a freshly started server: one that ran other rows reuses freed memory unseen.
        rows.append(Load(sizes, "load-mix-%d" % n, "mix (open, stat, read 4 KiB, close)", "mix", n, 1,
                         seconds=sizes.mix_seconds, extras=memory, fresh_server=True))
    for clients in sizes.nbench_clients:
        rows.append(Nbench(sizes, clients))
    for clients in sizes.nbench_clients:
        rows.append(Nbench(sizes, clients, xattrs=False))
    return rows
