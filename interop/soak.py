"""Issue 22 item 6, the soak: 200 connections of mixed clients work on one smb3d for a while:
180 Python smbprotocol connections (create, write, read back, list, delete), smbclient
processes (put, get, ls, del; 10 at a time, each its own connection) and smbtorture suites one
after another. Every operation must succeed as it would for a client alone; the server's RSS
and open descriptors are sampled every 10 s; when the clients leave, the descriptors must come
back to the baseline, and the log must hold no warning or error.

`python3 interop/soak.py [MINUTES]` (60 for the record in docs/reliability.md);
interop/test_soak.py runs 5 minutes in CI. Each client waits between operations, so the load
is bounded (about 200 operations a second in all), and everything stops at the deadline."""

import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import conftest  # noqa: E402
import smbprotocol_client as spc  # noqa: E402
from torture import judge, read_list, run_suite, sections_of  # noqa: E402

PROTOCOL_CONNECTIONS = 180
PROTOCOL_THREADS = 18
SMBCLIENTS = 10
TORTURE_SUITES = ["smb2.read", "smb2.getinfo", "smb2.dir"]


def rss_kib(pid):
    for line in Path("/proc/%d/status" % pid).read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def descriptors(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


ARENA_HEAP = 64 << 20


def thread_arenas(pid):
    """How many heaps glibc made for arenas besides the main one: anonymous mappings that
    begin on a 64 MiB boundary and fill those 64 MiB (glibc's HEAP_MAX_SIZE on 64-bit)."""
    anonymous = []
    for line in Path("/proc/%d/maps" % pid).read_text().splitlines():
        fields = line.split()
        if len(fields) == 5:
            start, end = (int(x, 16) for x in fields[0].split("-"))
            anonymous.append((start, end))
    ends = dict(anonymous)
    heaps = 0
    for start, _ in anonymous:
        if start % ARENA_HEAP == 0:
            at = start
            while at in ends and at < start + ARENA_HEAP:
                at = ends[at]
            heaps += at == start + ARENA_HEAP
    return heaps


def heap_rss_kib(pid):
    """Resident KiB of glibc's heaps: the main heap and the arena heaps (see thread_arenas)."""
    total, counting = 0, False
    for line in Path("/proc/%d/smaps" % pid).read_text().splitlines():
        fields = line.split()
        if not fields[0].endswith(":"):
            start = int(fields[0].split("-")[0], 16)
            counting = fields[-1] == "[heap]" or (len(fields) == 5 and start % ARENA_HEAP == 0)
        elif fields[0] == "Rss:" and counting:
            total += int(fields[1])
    return total


def descriptor_targets(pid):
    targets = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            targets.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            pass
    return sorted(targets)


class Soak:
    def __init__(self, server, seconds, show=False):
        self.server = server
        self.started = time.monotonic()
        self.deadline = self.started + seconds
        self.show = show
        self.errors = []
        self.ops = {"smbprotocol": 0, "smbclient": 0, "smbtorture": 0}
        self.lock = threading.Lock()

    def running(self):
        return time.monotonic() < self.deadline and len(self.errors) < 20

    def count(self, kind):
        with self.lock:
            self.ops[kind] += 1

    def fail(self, what):
        what = "%d s: %s" % (time.monotonic() - self.started, what)
        with self.lock:
            self.errors.append(what)
        if self.show:
            print("error at " + what, flush=True)

    def protocol_clients(self, index):
        """PROTOCOL_CONNECTIONS / PROTOCOL_THREADS connections, used in turn by one thread."""
        rng = random.Random(index)
        conns = []
        try:
            for _ in range(PROTOCOL_CONNECTIONS // PROTOCOL_THREADS):
                conns.append(spc.connect(self.server))
            turn = 0
            while self.running():
                conn, session, tree = conns[turn % len(conns)]
                name = "p%d-%d.bin" % (index, turn % len(conns))
                data = rng.randbytes(rng.choice([512, 4096, 65536, 262144]))
                try:
                    if spc.write_then_read(tree, name, data) != data:
                        self.fail("smbprotocol: %s read back other data" % name)
                    self.count("smbprotocol")
                except Exception as e:  # noqa: BLE001 - every failure is reported
                    self.fail("smbprotocol %s: %r" % (name, e))
                turn += 1
                time.sleep(0.05)
        except Exception as e:  # noqa: BLE001
            self.fail("smbprotocol connect: %r" % e)
        finally:
            for conn, _, _ in conns:
                try:
                    conn.disconnect()
                except Exception:  # noqa: BLE001 - the server may have gone; reported above
                    pass

    def smbclient_loop(self, index, scratch):
        local = scratch / ("c%d.src" % index)
        local.write_bytes(os.urandom(128 * 1024))
        back = scratch / ("c%d.back" % index)
        while self.running():
            name = "c%d.bin" % index
            r = self.server.smbclient("put %s %s; get %s %s; ls; del %s" % (local, name, name, back, name),
                                      check=False, timeout=120)
            if r.returncode != 0 or "NT_STATUS" in r.stdout:
                self.fail("smbclient: %s" % r.stdout[-300:])
            elif back.read_bytes() != local.read_bytes():
                self.fail("smbclient: %s came back different" % name)
            else:
                self.count("smbclient")
            time.sleep(0.5)

    def torture_loop(self):
        knownfail = read_list("knownfail")
        turn = 0
        while self.running():
            suite = TORTURE_SUITES[turn % len(TORTURE_SUITES)]
            results, output = run_suite(self.server, suite, timeout=600)
            problems = judge(results, knownfail)
            if problems:
                self.fail("smbtorture %s: %s\n%s" % (suite, problems, sections_of(output, problems)))
            else:
                self.count("smbtorture")
            turn += 1


def run(minutes, tmp=None, show=False):
    """Returns a summary dict; raises AssertionError naming what went wrong. With `show`, each
    sample is printed as it is taken, so a run that fails still leaves its curve."""
    tmp = Path(tmp or tempfile.mkdtemp(prefix="smb3d-soak-"))
    server = conftest.start_smb3d(tmp)
    scratch = tmp / "scratch"
    scratch.mkdir()
    pid = server.proc.pid
    time.sleep(0.5)
    baseline_fds = descriptors(pid)
    baseline_targets = descriptor_targets(pid)
    soak = Soak(server, minutes * 60, show)
    threads = [threading.Thread(target=soak.protocol_clients, args=(i,)) for i in range(PROTOCOL_THREADS)]
    threads += [threading.Thread(target=soak.smbclient_loop, args=(i, scratch)) for i in range(SMBCLIENTS)]
    threads.append(threading.Thread(target=soak.torture_loop))
    started = time.monotonic()
    for t in threads:
        t.start()
    curve = []
    try:
        while any(t.is_alive() for t in threads):
            curve.append((round(time.monotonic() - started), rss_kib(pid), descriptors(pid)))
            if show:
                print("%d %d %d heap_kib %d" % (curve[-1] + (heap_rss_kib(pid),)), flush=True)
            time.sleep(10)
        for t in threads:
            t.join()
        # Connections end asynchronously once their clients leave. The share's listing cache
        # (vfs-posix, for directories of 1,024 entries and more, which smbtorture's smb2.dir
        # makes) keeps one inotify descriptor for the share, made on first use and bounded.
        def leftover():
            after = descriptor_targets(pid)
            if "anon_inode:inotify" not in baseline_targets and "anon_inode:inotify" in after:
                after.remove("anon_inode:inotify")
            return after

        settle = time.monotonic() + 30
        while len(leftover()) > baseline_fds and time.monotonic() < settle:
            time.sleep(0.5)
        fds = len(leftover())
        assert server.alive(), server.log_tail()
        summary = {"minutes": minutes, "ops": dict(soak.ops), "errors": soak.errors, "curve": curve,
                   "baseline_fds": baseline_fds, "fds_after": fds}
        assert not soak.errors, "errors under load: %s" % soak.errors[:5]
        assert fds <= baseline_fds, "descriptors %d after the clients left, %d before: %s then %s" % (
            fds, baseline_fds, baseline_targets, leftover())
        warm = [rss for t, rss, _ in curve if t >= minutes * 60 * 0.2]
        if len(warm) >= 2:
            summary["rss_growth_after_warmup_kib"] = warm[-1] - warm[0]
            # Flat: after the first fifth, RSS grows by less than a quarter (allocator noise).
            assert warm[-1] <= warm[0] * 1.25 + 4096, "RSS grew from %d to %d KiB after warm-up" % (warm[0], warm[-1])
        bad = [line for line in server.log.read_text(errors="replace").splitlines()
               if " WARN " in line or " ERROR " in line]
        assert not bad, "warnings in the log: %s" % bad[:5]
        return summary
    finally:
        conftest.stop(server)


if __name__ == "__main__":
    print("seconds rss_kib fds heap", flush=True)
    result = run(float(sys.argv[1]) if len(sys.argv) > 1 else 60, show=True)
    print("ops %s; errors %d; descriptors %d before, %d after" % (
        result["ops"], len(result["errors"]), result["baseline_fds"], result["fds_after"]))
