"""What the machine allows, measured in the same run, and what the machine is."""

import json
import os
import platform
import re
import subprocess
import time

from .servers import free_port


def loopback_tcp(seconds):
    """Single-stream TCP over loopback with iperf3: (bytes/s received, the sending iperf3's CPU
    seconds per GiB sent). iperf3 sends from a buffer with write(), so its CPU per GiB is a copy
    into the socket plus the TCP transmit and, on loopback, the receive that runs in it."""
    port = free_port()
    server = subprocess.Popen(["iperf3", "--server", "--bind", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            r = subprocess.run(["iperf3", "--client", "127.0.0.1", "--port", str(port), "--time", str(seconds), "--json"],
                               capture_output=True, text=True, timeout=seconds + 30)
            try:
                end = json.loads(r.stdout)["end"]
                sent = end["sum_sent"]
                cpu = end["cpu_utilization_percent"]["host_total"] / 100 * sent["seconds"]
                return end["sum_received"]["bits_per_second"] / 8, cpu / (sent["bytes"] / (1 << 30))
            except (ValueError, KeyError):
                # Most likely the server did not listen yet.
                if time.monotonic() > deadline:
                    raise RuntimeError("iperf3 failed: %s" % (r.stdout + r.stderr)[-300:]) from None
                time.sleep(0.2)
    finally:
        server.kill()
        server.wait()


def aes_128_gcm(seconds):
    """One core's AES-128-GCM rate from `openssl speed` on 16 KiB blocks, in bytes/s."""
    r = subprocess.run(["openssl", "speed", "-evp", "aes-128-gcm", "-bytes", "16384", "-seconds", str(seconds), "-mr"],
                       capture_output=True, text=True, timeout=seconds * 10 + 30)
    m = re.search(r"^\+F:\d+:AES-128-GCM:([\d.]+)", r.stdout, re.M | re.I)
    if r.returncode != 0 or not m:
        raise RuntimeError("openssl speed failed: %s" % (r.stdout + r.stderr)[-300:])
    return float(m.group(1))


def _first_line(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return r.stdout.strip().splitlines()[0] if r.stdout.strip() else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def describe(share_path, smb3d):
    """(label, value) pairs describing the machine, the software and the share's file system;
    smb3d says which smb3d was measured."""
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = re.search(r"^Model name:\s*(.+)$", lscpu, re.M)
    with open("/proc/meminfo") as f:
        mem_kib = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
    fs = _first_line(["findmnt", "--noheadings", "--raw", "--output", "FSTYPE,SOURCE,OPTIONS", "--target", str(share_path)])
    if fs.count(" ") == 2:
        fs = "%s on %s (%s)" % tuple(fs.split(" "))
    return [
        ("CPU", "%s, %d cores" % (model.group(1).strip() if model else platform.processor(), os.cpu_count())),
        ("RAM", "%.1f GiB" % (mem_kib / (1 << 20))),
        ("kernel", platform.release()),
        ("share file system", fs),
        ("smb3d", smb3d),
        ("Samba", _first_line(["smbd", "--version"])),
        ("clients", "%s; smbtorture from samba-testsuite" % _first_line(["smbclient", "--version"])),
        ("tools", "%s; %s" % (_first_line(["iperf3", "--version"]), _first_line(["openssl", "version"]))),
    ]


def commit(repo, rev=None):
    """The commit rev names, or the checked-out one with -dirty when the work tree has changes."""
    if rev:
        return _first_line(["git", "-C", str(repo), "rev-parse", "--short=10", rev])
    return _first_line(["git", "-C", str(repo), "describe", "--always", "--dirty", "--abbrev=10"])


def load_average():
    return "%.2f %.2f %.2f" % os.getloadavg()
