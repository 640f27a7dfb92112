"""The machine's floor under smbload's 1 MiB rows (issue 21 items 2 and 7): smbfloor (bench/load)
does only the work no server can avoid for a row - sendfile, splice, pread/pwrite, the socket
and the cipher the server uses - 1 MiB at a time over loopback TCP to a peer process that
drains or feeds like smbload, and reports its own process's CPU per GiB. A floor row measures
the machine, not a server, so it is sampled once per run, in the same run as the rows it floors."""

import json
import subprocess

from .clients import ClientError, tail
from .workloads import MIB, Sample, Workload

# (floor row, smbfloor --row, the load row it floors, what it does)
FLOORS = [
    ("floor-read-1m-plain", "read-plain", "load-read-1m-plain", "sendfile of a page-cached file into the socket"),
    ("floor-write-1m-plain", "write-plain", "load-write-1m-plain", "splice socket -> pipe -> file"),
    ("floor-write-1m-plain-copy", "write-plain-copy", "load-write-1m-plain", "read from the socket, pwrite"),
    ("floor-read-1m-sign", "read-sign", "load-read-1m-sign", "pread, AES-GMAC signature, write to the socket"),
    ("floor-write-1m-sign", "write-sign", "load-write-1m-sign", "read from the socket, AES-GMAC verification, pwrite"),
    ("floor-read-1m-encrypt", "read-encrypt", "load-read-1m-encrypt", "pread, AES-128-GCM encryption, write to the socket"),
    ("floor-write-1m-encrypt", "write-encrypt", "load-write-1m-encrypt", "read from the socket, AES-128-GCM decryption, pwrite"),
]


class Floor(Workload):
    """One smbfloor row: MiB/s and the measuring process's CPU s/GiB per sample; `floors`
    names the load row whose server CPU it is a floor of."""

    throughput = True
    unit = "MiB/s"
    machine = True

    def __init__(self, sizes, name, row, floors, what):
        self.sizes = sizes
        self.name = name
        self.row = row
        self.floors = floors
        self.title = "machine floor of %s: %s, 1 MiB at a time (smbfloor %s)" % (floors, what, row)

    def sample(self, ctx, server=None):
        if ctx.smbfloor is None:
            raise ClientError("smbfloor was not built")
        data = ctx.scratch / ("floor-%s.bin" % ("read" if self.row.startswith("read") else "write"))
        cmd = [str(ctx.smbfloor), "--row", self.row, "--file", str(data), "--file-size", str(64 * MIB),
               "--seconds", str(self.sizes.load_seconds), "--warmup", str(self.sizes.load_warmup), "--json"]
        limit = self.sizes.load_seconds + self.sizes.load_warmup + 120
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired as e:
            raise ClientError("smbfloor did not finish within %d s" % limit) from e
        if r.returncode != 0:
            raise ClientError("smbfloor failed (%d): %s" % (r.returncode, tail(r.stderr, 3)))
        try:
            report = json.loads(r.stdout)
        except ValueError:
            raise ClientError("smbfloor printed no report: %s" % tail(r.stdout + r.stderr, 3))
        return Sample(value=report["mib_per_s"], cpu_per_gib=report["cpu_s_per_gib"],
                      extras={"peer_cpu_per_gib": report["peer_cpu_s_per_gib"]})


def floor_workloads(sizes):
    """The floor rows, keyed by the load row each floors."""
    by_row = {}
    for name, row, floors, what in FLOORS:
        by_row.setdefault(floors, []).append(Floor(sizes, name, row, floors, what))
    return by_row
