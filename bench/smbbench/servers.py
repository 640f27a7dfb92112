"""The two servers under test, started on loopback with equivalent shares.

Samba is configured as a sysadmin would run a standalone file server: NT ACLs and streams in
xattrs (`vfs objects = acl_xattr streams_xattr`), DOS attributes stored, defaults otherwise.
Everything Samba writes (tdbs, logs, pid file) stays under its own directory; the only change
outside it is the local account the share user maps to.
"""

import abc
import os
import pwd
import socket
import subprocess
import time
from pathlib import Path

from . import procs

USER = "smbbench"
SHARE = "share"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_account():
    """The local account both servers map the share user to; created when missing."""
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", USER], check=True)
        return pwd.getpwnam(USER)


def wait_for_port(port, proc, log, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited with status %s; log: %s" % (proc.returncode, log))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not listen on port %d; log: %s" % (port, log))


# smb3d's share options for Samba's `store dos attributes = no`, `ea support = no` and no
# streams module.
NO_XATTRS = """store_dos_attributes = false
ea_support = false
streams_xattr = false
"""


class Server(abc.ABC):
    """A running server: its port, share directory on disk, and master process."""

    label = "?"

    def __init__(self, root: Path, password: str, log_dir: Path):
        self.root = root
        self.share_dir = root / SHARE
        self.password = password
        self.port = 0
        self.proc = None
        self.log_dir = log_dir
        self.log = log_dir / ("%s.log" % self.label)
        self.idle_processes = 1

    @property
    def unc(self):
        return "//127.0.0.1/%s" % SHARE

    @property
    def credentials(self):
        return "%s%%%s" % (USER, self.password)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def cpu_seconds(self):
        return procs.cpu_seconds(self.proc.pid)

    def memory_kib(self):
        return procs.memory_kib(self.proc.pid)

    def settle(self, timeout=60.0):
        """Wait until connections from the previous sample are gone, so that the next sample
        (on either server) does not share the CPU with an exiting process. A process that stays
        (a helper started on demand) becomes part of the idle count, so later samples do not
        wait for it again."""
        if not procs.wait_for_process_count(self.proc.pid, self.idle_processes, timeout):
            self.idle_processes = len(procs.tree_pids(self.proc.pid))

    def start(self):
        self.port = free_port()
        self._launch()
        wait_for_port(self.port, self.proc, self.log)
        # Samba starts helper processes (notifyd, cleanupd) after it listens; give them a
        # moment, then remember how many processes an idle server has.
        time.sleep(0.5)
        self.idle_processes = len(procs.tree_pids(self.proc.pid))

    def stop(self):
        if self.proc is None:
            return
        pids = procs.tree_pids(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        # Connection children and helpers the master left behind.
        for pid in pids[1:]:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        self.proc = None

    @abc.abstractmethod
    def _launch(self):
        """Start the master process on self.port."""


class Samba(Server):
    label = "Samba"

    def __init__(self, root: Path, password: str, log_dir: Path, smbd="smbd"):
        super().__init__(root, password, log_dir)
        self.smbd = smbd
        self.conf = root / "smb.conf"
        self.xattrs = True

    def set_xattrs(self, on):
        """Restarts Samba storing DOS attributes, NT ACLs and streams in xattrs (the default)
        or not at all, to measure what they cost (seed 004)."""
        if self.xattrs != on:
            self.xattrs = on
            self.stop()
            self.start()

    def version(self):
        r = subprocess.run([self.smbd, "--version"], capture_output=True, text=True)
        return r.stdout.strip()

    def prepare(self):
        for sub in ("private", "lock", "state", "cache", "run", "ncalrpc"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        self.share_dir.mkdir(parents=True, exist_ok=True)

    def _write_conf(self):
        r = self.root
        self.conf.write_text(f"""[global]
  server role = standalone server
  workgroup = WORKGROUP
  smb ports = {self.port}
  interfaces = 127.0.0.1
  bind interfaces only = yes
  disable netbios = yes
  load printers = no
  printing = bsd
  printcap name = /dev/null
  disable spoolss = yes
  map to guest = never
  server min protocol = SMB2_02
  passdb backend = tdbsam:{r}/private/passdb.tdb
  private dir = {r}/private
  lock directory = {r}/lock
  state directory = {r}/state
  cache directory = {r}/cache
  pid directory = {r}/run
  ncalrpc dir = {r}/ncalrpc
  log file = {self.log_dir}/samba-log.%m
  store dos attributes = {"yes" if self.xattrs else "no"}
  ea support = {"yes" if self.xattrs else "no"}

[{SHARE}]
  path = {self.share_dir}
  read only = no
  vfs objects = {"acl_xattr streams_xattr" if self.xattrs else ""}
""")

    def _launch(self):
        self._write_conf()
        subprocess.run(["smbpasswd", "-c", str(self.conf), "-s", "-a", USER], input="%s\n%s\n" % (self.password, self.password),
                       text=True, check=True, capture_output=True)
        # In its own session: on shutdown the smbd master signals its whole process group.
        self.proc = subprocess.Popen([self.smbd, "--foreground", "--no-process-group", "-s", str(self.conf)], stdin=subprocess.DEVNULL,
                                     stdout=open(self.log, "ab"), stderr=subprocess.STDOUT, start_new_session=True)


class Smb3d(Server):
    label = "smb3d"

    def __init__(self, root: Path, password: str, log_dir: Path, binary: Path, uid: int):
        super().__init__(root, password, log_dir)
        self.binary = binary
        self.uid = uid
        self.config = root / "smb3d.toml"
        self.user_db = root / "users"
        self.xattrs = True

    def set_xattrs(self, on):
        """Restarts smb3d keeping DOS attributes, EAs and named streams in xattrs (the
        default) or not at all (`store_dos_attributes`, `ea_support`, `streams_xattr` off),
        to measure what they cost (seed 004)."""
        if self.xattrs != on:
            self.xattrs = on
            self.stop()
            self.start()

    def prepare(self):
        self.share_dir.mkdir(parents=True, exist_ok=True)

    def _launch(self):
        if not self.user_db.exists():
            subprocess.run([str(self.binary), "user", "--db", str(self.user_db), "add", USER, "--uid", str(self.uid),
                            "--password-stdin"], input=self.password + "\n", text=True, check=True, capture_output=True)
        # Every benchmark client connects from 127.0.0.1 (the idle-connection workload holds a
        # thousand), which the default of 32 connections per address would refuse; Samba has no
        # such limit.
        self.config.write_text(f"""[server]
listen = ["127.0.0.1:{self.port}"]
user_db = "{self.user_db}"

[limits]
max_connections = 4096
max_connections_per_address = 4096

[share.{SHARE}]
path = "{self.share_dir}"
{"" if self.xattrs else NO_XATTRS}""")
        env = dict(os.environ, SMB3D_LOG=os.environ.get("SMB3D_LOG", "warn"))
        self.proc = subprocess.Popen([str(self.binary), "serve", "-c", str(self.config)], stdin=subprocess.DEVNULL,
                                     stdout=open(self.log, "ab"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
