"""The workloads of issue 7. Each one prepares its data on a server's share once (untimed), then
takes one sample per call; bench/run interleaves the samples of the two servers."""

import abc
import os
import queue
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .clients import ClientError, Smbclient, check_clean, smbtorture, tail
from .servers import SHARE, USER

GIB = 1 << 30
MIB = 1 << 20
HOLDER = Path(__file__).resolve().parent.parent / "hold_connections.py"
SHARE_MODE_CHECK = Path(__file__).resolve().parent.parent / "share_mode_check.py"


@dataclass(frozen=True)
class Sizes:
    """How big each workload is; --quick uses small ones."""

    read_bytes: int
    write_bytes: int
    scan_dirs: int
    scan_files_per_dir: int
    small_files: int
    small_connections: int
    idle_connections: int
    open_files: int
    torture_seconds: int
    limit_seconds: int
    load_seconds: float
    load_warmup: float
    load_entries: int
    mix_seconds: float
    nbench_seconds: float
    nbench_clients: tuple


FULL = Sizes(read_bytes=GIB, write_bytes=512 * MIB, scan_dirs=200, scan_files_per_dir=100, small_files=10_000,
             small_connections=4, idle_connections=1000, open_files=2000, torture_seconds=5, limit_seconds=3,
             load_seconds=10, load_warmup=2, load_entries=20_000, mix_seconds=30, nbench_seconds=20,
             nbench_clients=(1, 8, 32))
QUICK = Sizes(read_bytes=64 * MIB, write_bytes=32 * MIB, scan_dirs=20, scan_files_per_dir=50, small_files=400,
              small_connections=2, idle_connections=20, open_files=50, torture_seconds=1, limit_seconds=1,
              load_seconds=1, load_warmup=0.3, load_entries=2000, mix_seconds=1, nbench_seconds=2,
              nbench_clients=(1, 8))


@dataclass
class Sample:
    """One measurement, or why there is none."""

    value: float | None = None
    cpu_per_gib: float | None = None
    extras: dict = field(default_factory=dict)
    error: str | None = None


class Context:
    """What workloads share: sizes, the scratch directory outside the shares, and the account
    that owns the share contents."""

    def __init__(self, sizes: Sizes, scratch: Path, uid: int, gid: int, smbload=None, smbfloor=None):
        self.sizes = sizes
        self.smbload = smbload
        self.smbfloor = smbfloor
        self.scratch = scratch
        self.uid = uid
        self.gid = gid
        self._prepared = set()

    def once(self, key, make):
        """Run make() the first time key is seen (data setup is shared between workloads)."""
        if key not in self._prepared:
            make()
            self._prepared.add(key)

    def give_to_user(self, path: Path):
        subprocess.run(["chown", "-R", "%d:%d" % (self.uid, self.gid), str(path)], check=True)

    def random_file(self, name, size):
        """A file of incompressible bytes in the scratch directory, made once."""
        path = self.scratch / name
        if not path.exists() or path.stat().st_size != size:
            with open(path, "wb") as f:
                left = size
                while left:
                    chunk = min(left, 4 * MIB)
                    f.write(os.urandom(chunk))
                    left -= chunk
        return path


def run_check(script: Path, server):
    """Run a bench/*_check.py script against server; raises ClientError with its complaint."""
    cmd = [sys.executable, str(script), "--port", str(server.port), "--user", USER, "--password", server.password,
           "--share", SHARE]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        raise ClientError("%s timed out" % script.name) from e
    if r.returncode != 0:
        raise ClientError("%s: %s" % (script.name, tail(r.stderr or r.stdout, 2)))


def read_through(path: Path):
    """Read a file once so it sits in the page cache before any timed run."""
    with open(path, "rb") as f:
        while f.read(8 * MIB):
            pass


class Workload(abc.ABC):
    """name: what --only selects; title: the table row; unit; whether higher is better; whether
    server CPU per GiB is reported."""

    name = ""
    title = ""
    unit = ""
    higher_is_better = True
    throughput = False
    # Memory is measured on a freshly started server: one that has run other workloads keeps
    # freed memory in its allocator, and new connections would reuse it unseen.
    fresh_server = False
    # (extras key, title, unit, higher_is_better) for further rows taken from the same samples.
    extra_rows = ()
    # A row of the machine's (smbfloor), sampled once per run rather than once per server.
    machine = False

    def prepare(self, ctx: Context, server):
        """Untimed setup on server's share."""

    def finish(self, ctx: Context, server):
        """Undoes what prepare changed on server, after the workload's last sample."""

    @abc.abstractmethod
    def sample(self, ctx: Context, server) -> Sample:
        """One timed measurement on server; raises ClientError when the run did not do its work."""


PROTECTION_TITLES = {"off": "plain", "sign": "signed", "encrypt": "encrypted"}


def _size_label(n):
    return "%d GiB" % (n // GIB) if n % GIB == 0 else "%d MiB" % (n // MIB)


class SequentialRead(Workload):
    throughput = True
    unit = "MiB/s"
    remote = "bench-read.bin"
    checked_blocks = 16

    def __init__(self, sizes: Sizes, protection):
        self.protection = protection
        self.name = "read-" + PROTECTION_TITLES[protection]
        self.title = "sequential read %s, %s (smbclient get)" % (_size_label(sizes.read_bytes), PROTECTION_TITLES[protection])

    def prepare(self, ctx, server):
        def make():
            source = ctx.random_file("read.bin", ctx.sizes.read_bytes)
            target = server.share_dir / self.remote
            shutil.copyfile(source, target)
            ctx.give_to_user(target)
            os.sync()
            read_through(target)

        def check():
            # The timed runs read into /dev/null, so prove once that the server returns the
            # file's bytes.
            copy = ctx.scratch / "read-check.bin"
            try:
                with Smbclient(server) as client:
                    check_clean(client.run(["get %s %s" % (self.remote, copy)]), "get")
                verify_copy(ctx.scratch / "read.bin", copy, ctx.sizes.read_bytes, self.checked_blocks)
            finally:
                copy.unlink(missing_ok=True)

        ctx.once(("read", server.label), make)
        ctx.once(("read-check", server.label), check)

    def sample(self, ctx, server):
        size = ctx.sizes.read_bytes
        with Smbclient(server, self.protection) as client:
            cpu = server.cpu_seconds()
            out = client.run(["get %s /dev/null" % self.remote])
            cpu = server.cpu_seconds() - cpu
        check_clean(out, "get")
        m = re.search(r"getting file .* of size (\d+) as /dev/null \(([\d.]+) KiloBytes/sec\)", out)
        if not m or int(m.group(1)) != size:
            raise ClientError("get did not report %d bytes: %s" % (size, tail(out)))
        return Sample(value=float(m.group(2)) / 1024, cpu_per_gib=cpu / (size / GIB))


class SequentialWrite(Workload):
    throughput = True
    unit = "MiB/s"
    remote = "bench-write.bin"
    checked_blocks = 16

    def __init__(self, sizes: Sizes, protection):
        self.protection = protection
        self.name = "write-" + PROTECTION_TITLES[protection]
        self.title = "sequential write %s, %s (smbclient put)" % (_size_label(sizes.write_bytes), PROTECTION_TITLES[protection])

    def prepare(self, ctx, server):
        def make():
            read_through(ctx.random_file("write.bin", ctx.sizes.write_bytes))

        ctx.once("write-source", make)

    def sample(self, ctx, server):
        size = ctx.sizes.write_bytes
        source = ctx.scratch / "write.bin"
        target = server.share_dir / self.remote
        # Dirty pages from an earlier run would be written back during this one.
        os.sync()
        try:
            with Smbclient(server, self.protection) as client:
                cpu = server.cpu_seconds()
                out = client.run(["put %s %s" % (source, self.remote)])
                cpu = server.cpu_seconds() - cpu
            check_clean(out, "put")
            m = re.search(r"putting file .* as .* \(([\d.]+) kb/s\)", out)
            if not m:
                raise ClientError("put reported no rate: %s" % tail(out))
            verify_copy(source, target, size, self.checked_blocks)
            return Sample(value=float(m.group(1)) / 1024, cpu_per_gib=cpu / (size / GIB))
        finally:
            target.unlink(missing_ok=True)


def verify_copy(source: Path, target: Path, size, blocks):
    """target is a copy of source: same size, same bytes at both ends and at random places."""
    try:
        actual = target.stat().st_size
    except FileNotFoundError as e:
        raise ClientError("%s was not created" % target.name) from e
    if actual != size:
        raise ClientError("%s has %d bytes, expected %d" % (target.name, actual, size))
    block = 64 * 1024
    offsets = {0, max(0, size - block)} | {random.randrange(0, max(1, size - block)) for _ in range(blocks)}
    with open(source, "rb") as a, open(target, "rb") as b:
        for off in sorted(offsets):
            a.seek(off)
            b.seek(off)
            if a.read(block) != b.read(block):
                raise ClientError("%s differs from the source at offset %d" % (target.name, off))


class Torture(Workload):
    """smbtorture's smb2.bench.* tests: operations per second over nprocs connections."""

    unit = "ops/s"
    short_names = {"echo": "echo", "path-contention-shared": "path-contention", "oplock1": "oplock1"}
    parsers = {
        "echo": lambda out: float(re.findall(r"echo\[num/s=(\d+)", out)[-1]),
        # One loop is an open then a close of the share root; both count as operations.
        "path-contention-shared": lambda out: sum(float(v) for v in re.findall(
            r"open\[num/s=(\d+),.*close\[num/s=(\d+),", out)[-1]),
        "oplock1": lambda out: float(re.findall(r"([\d.]+) ops/second", out)[-1]),
    }

    # A rate means something only if the server does what the benchmark exercises: oplock1's
    # unshared opens succeed one after another only if each breaks the previous holder's oplock
    # (whose handler then closes), unless the server ignores share modes. So oplock1 counts on a
    # server that enforces them.
    preconditions = {"oplock1": SHARE_MODE_CHECK}

    def __init__(self, test, nprocs):
        self.test = test
        self.nprocs = nprocs
        self.name = "%s-%d" % (self.short_names[test], nprocs)
        self.title = "smbtorture smb2.bench.%s, %d connections" % (test, nprocs)

    def prepare(self, ctx, server):
        script = self.preconditions.get(self.test)
        if script:
            ctx.once((script, server.label), lambda: run_check(script, server))

    def sample(self, ctx, server):
        out = smbtorture(server, "smb2.bench." + self.test, self.nprocs, ctx.sizes.torture_seconds)
        try:
            return Sample(value=self.parsers[self.test](out))
        except IndexError as e:
            raise ClientError("no rate in smbtorture output: %s" % tail(out)) from e


class DirectoryScan(Workload):
    unit = "s"
    higher_is_better = False
    name = "dirscan"

    def __init__(self, sizes: Sizes):
        self.title = "directory scan, %d dirs / %d files (smbclient recurse; ls)" % (
            sizes.scan_dirs, sizes.scan_dirs * sizes.scan_files_per_dir)

    def prepare(self, ctx, server):
        def make():
            root = server.share_dir / "scan"
            for d in range(ctx.sizes.scan_dirs):
                sub = root / ("d%03d" % d)
                sub.mkdir(parents=True)
                for f in range(ctx.sizes.scan_files_per_dir):
                    (sub / ("frame%05d.exr" % f)).write_bytes(b"")
            ctx.give_to_user(root)
            # Same dentry and inode cache state for both trees.
            for dirpath, _dirs, files in os.walk(root):
                for name in files:
                    os.stat(os.path.join(dirpath, name))

        ctx.once(("scan", server.label), make)

    def sample(self, ctx, server):
        with Smbclient(server) as client:
            client.run(["cd scan"])
            start = time.perf_counter()
            out = client.run(["recurse", "ls"])
            elapsed = time.perf_counter() - start
        check_clean(out, "ls")
        entries = [m.group(1) for m in re.finditer(r"^  (\S+)\s+[A-Z]*\s+\d+\s+\w{3} \w{3} ", out, re.M)]
        listed = sum(1 for e in entries if e not in (".", ".."))
        expected = ctx.sizes.scan_dirs * (ctx.sizes.scan_files_per_dir + 1)
        if listed != expected:
            raise ClientError("listed %d entries, expected %d" % (listed, expected))
        return Sample(value=elapsed)


class SmallFiles(Workload):
    unit = "files/s"
    name = "smallfiles"

    def __init__(self, sizes: Sizes):
        self.title = "small files: put 4 KiB, allinfo, del x %d over %d connections (smbclient)" % (
            sizes.small_files, sizes.small_connections)

    def prepare(self, ctx, server):
        def make():
            ctx.random_file("small.bin", 4096)
            for c in range(ctx.sizes.small_connections):
                (server.share_dir / "small" / ("c%d" % c)).mkdir(parents=True)
            ctx.give_to_user(server.share_dir / "small")

        ctx.once(("small", server.label), make)

    def sample(self, ctx, server):
        source = ctx.scratch / "small.bin"
        conns = ctx.sizes.small_connections
        scripts = []
        for c in range(conns):
            script = []
            for i in range(c, ctx.sizes.small_files, conns):
                name = "small\\c%d\\f%05d.dat" % (c, i)
                script += ["put %s %s" % (source, name), "allinfo %s" % name, "del %s" % name]
            scripts.append(script)
        clients = []
        try:
            for _ in range(conns):
                clients.append(Smbclient(server))
            outputs = [None] * conns
            errors = []

            def drive(i):
                try:
                    outputs[i] = clients[i].run(scripts[i])
                except ClientError as e:
                    errors.append(str(e))

            threads = [threading.Thread(target=drive, args=(i,)) for i in range(conns)]
            start = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - start
        finally:
            for client in clients:
                client.close()
        if errors:
            raise ClientError(errors[0])
        out = "".join(outputs)
        check_clean(out, "small files")
        puts = len(re.findall(r"^putting file ", out, re.M))
        stats = len(re.findall(r"^create_time:", out, re.M))
        left = sum(len(os.listdir(server.share_dir / "small" / ("c%d" % c))) for c in range(conns))
        if puts != ctx.sizes.small_files or stats != ctx.sizes.small_files or left:
            raise ClientError("%d puts, %d allinfos, %d files left over (expected %d, %d, 0)" % (
                puts, stats, left, ctx.sizes.small_files, ctx.sizes.small_files))
        return Sample(value=ctx.sizes.small_files / elapsed)


class Holder:
    """bench/hold_connections.py in a child process, spoken to line by line."""

    def __init__(self, ctx, server, connections, open_dir="", open_count=0):
        self.log = ctx.scratch / "holder.log"
        cmd = [sys.executable, str(HOLDER), "--port", str(server.port), "--user", USER, "--password", server.password,
               "--share", SHARE, "--connections", str(connections), "--open-dir", open_dir, "--open-count", str(open_count)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(self.log, "wb"), text=True)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def expect(self, prefix, timeout):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            line = None
        if line is None or not line.startswith(prefix):
            self.close()
            raise ClientError("connection holder: expected %r, got %r; %s" % (prefix, line, tail(self.log.read_text(errors="replace"))))

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# Servers finish setting up a connection (and Samba its forked child) just after the client
# sees the tree connect response.
SETTLE_SECONDS = 1.0


class IdleMemory(Workload):
    unit = "KiB/conn"
    higher_is_better = False
    fresh_server = True
    name = "idle-memory"

    def __init__(self, sizes: Sizes):
        self.title = "server memory per idle authenticated connection (RSS, %d connections)" % sizes.idle_connections
        self.extra_rows = (("pss", "server memory per idle authenticated connection (PSS, %d connections)"
                            % sizes.idle_connections, "KiB/conn", False),)

    def sample(self, ctx, server):
        n = ctx.sizes.idle_connections
        rss0, pss0 = server.memory_kib()
        holder = Holder(ctx, server, n)
        try:
            holder.expect("connected", timeout=120 + n)
            time.sleep(SETTLE_SECONDS)
            rss1, pss1 = server.memory_kib()
        finally:
            holder.close()
        return Sample(value=(rss1 - rss0) / n, extras={"pss": (pss1 - pss0) / n})


class OpenFileMemory(Workload):
    unit = "KiB/open"
    higher_is_better = False
    fresh_server = True
    name = "open-memory"

    def __init__(self, sizes: Sizes):
        self.title = "server memory per open file (RSS, %d opens on one connection)" % sizes.open_files

    def prepare(self, ctx, server):
        def make():
            root = server.share_dir / "openfiles"
            root.mkdir()
            for i in range(ctx.sizes.open_files):
                (root / ("f%05d" % i)).write_bytes(b"")
            ctx.give_to_user(root)

        ctx.once(("open", server.label), make)

    def sample(self, ctx, server):
        n = ctx.sizes.open_files
        holder = Holder(ctx, server, 1, open_dir="openfiles", open_count=n)
        try:
            holder.expect("connected", timeout=60)
            time.sleep(SETTLE_SECONDS)
            rss0, _ = server.memory_kib()
            holder.send("open")
            holder.expect("opened", timeout=60 + n / 10)
            time.sleep(SETTLE_SECONDS)
            rss1, _ = server.memory_kib()
        finally:
            holder.close()
        return Sample(value=(rss1 - rss0) / n)


def all_workloads(sizes: Sizes):
    """Every workload, in the order they run."""
    workloads = []
    for protection in ("off", "sign", "encrypt"):
        workloads.append(SequentialRead(sizes, protection))
    for protection in ("off", "sign", "encrypt"):
        workloads.append(SequentialWrite(sizes, protection))
    for test in ("echo", "path-contention-shared", "oplock1"):
        for nprocs in (4, 16):
            workloads.append(Torture(test, nprocs))
    workloads += [DirectoryScan(sizes), SmallFiles(sizes), IdleMemory(sizes), OpenFileMemory(sizes)]
    # Imported here: load.py builds on this module's classes.
    from .load import load_workloads
    workloads += load_workloads(sizes)
    return workloads
