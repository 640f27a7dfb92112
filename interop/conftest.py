"""Fixtures for interop tests: a running smb3d with a share and a user, driven by third-party
clients (smbclient, smbtorture, smbprotocol, impacket, pysmb, pysmbc)."""

import importlib.util
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BINARY = Path(os.environ.get("SMB3D_BIN", ROOT / "target" / "release" / "smb3d"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, proc, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("smb3d exited early with status %s" % proc.returncode)
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("smb3d did not listen on port %d" % port)


@dataclass
class Smb3d:
    port: int
    user: str
    password: str
    share: str
    share_dir: Path
    config: Path
    proc: subprocess.Popen
    log: Path
    # The admin socket, in a short directory of its own: a unix socket path holds 107 bytes.
    admin_socket: Path = None

    @property
    def creds(self):
        return "%s%%%s" % (self.user, self.password)

    def unc(self, share=None):
        return "//127.0.0.1/%s" % (share or self.share)

    def smbclient(self, commands, *extra, share=None, user=None, check=True, timeout=600):
        cmd = ["smbclient", self.unc(share), "-p", str(self.port), "-U", user or self.creds, *extra, "-c", commands]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError("smbclient failed (%d):\n%s\n--- server log ---\n%s" % (r.returncode, r.stdout, self.log_tail()))
        return r

    def own(self, *paths):
        """Gives files the test made directly in the share to the test user, as if the user had
        made them (the server works on the share as that user)."""
        uid = interop_uid()
        for path in paths:
            os.lchown(path, uid, pwd.getpwuid(uid).pw_gid)

    def add_user(self, name, uid):
        """Adds the database user `name` acting as `uid`; returns its password. The database
        keeps its owner (an unprivileged server must still read it)."""
        db = self.config.parent / "users"
        owner = os.stat(db)
        password = add_db_user(db, name, uid)
        os.chown(db, owner.st_uid, owner.st_gid)
        return password

    def log_tail(self, n=60):
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def alive(self):
        return self.proc.poll() is None

    def ctl(self, *args, check=True):
        """Runs an admin command (`status`, `reload`, ...) against this server."""
        r = subprocess.run([str(BINARY), *args, "--socket", str(self.admin_socket)], capture_output=True, text=True,
                           timeout=60)
        if check and r.returncode != 0:
            raise AssertionError("smb3d %s failed (%d): %s\n--- server log ---\n%s"
                                 % (" ".join(args), r.returncode, r.stderr, self.log_tail()))
        return r


# As root, smb3d runs each session's file-system calls as the session's user, and root skips
# every access check; the test user is therefore an ordinary system account, made on demand.
SYSTEM_USER = "smb3d-interop"


def interop_uid():
    if os.getuid() != 0:
        return os.getuid()
    return system_account(SYSTEM_USER)


def system_account(name):
    """The uid of the system account `name`, made on demand (as root)."""
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                       check=True, capture_output=True)
        return pwd.getpwnam(name).pw_uid


def add_db_user(db, name, uid):
    """Adds the user `name` acting as `uid` to the user database `db` (made if absent);
    returns its password."""
    password = "pw-" + secrets.token_hex(8)
    r = subprocess.run([str(BINARY), "user", "--db", str(db), "add", name, "--uid", str(uid), "--password-stdin"],
                       input=password + "\n", text=True, capture_output=True)
    assert r.returncode == 0, r.stderr
    return password


def query_info(handle, info_type, info_class, length, additional_information=0):
    """The buffer of a QUERY_INFO (MS-SMB2 2.2.37) of `info_class` (for security information:
    the parts named in `additional_information`) on the smbprotocol Open `handle`; a refused
    query raises SMBResponseException with the status."""
    from smbprotocol.open import SMB2QueryInfoRequest, SMB2QueryInfoResponse
    tree = handle.tree_connect
    conn, session = tree.session.connection, tree.session
    req = SMB2QueryInfoRequest()
    req["info_type"] = info_type
    req["file_info_class"] = info_class
    req["output_buffer_length"] = length
    req["additional_information"] = additional_information
    req["file_id"] = handle.file_id
    resp = SMB2QueryInfoResponse()
    resp.unpack(conn.receive(conn.send(req, sid=session.session_id, tid=tree.tree_connect_id))["data"].get_value())
    return resp["buffer"].get_value()


def start_smb3d(tmp: Path, extra_config="", shares=None, signing="auto", service_account=None):
    """Starts smb3d serving `shares` (default: `share` on tmp/share) for the user `tester`, as
    root, or with `service_account` as that system account (unprivileged; the shares, the
    configuration and the user database must then be within its reach)."""
    share_dir = tmp / "share"
    share_dir.mkdir(parents=True, exist_ok=True)
    uid = interop_uid()
    user = "tester"
    db = tmp / "users"
    password = add_db_user(db, user, uid)
    port = free_port()
    config = tmp / "smb3d.toml"
    share_blocks = shares or {"share": {"path": str(share_dir)}}
    owner = pwd.getpwnam(service_account) if service_account else pwd.getpwuid(uid)
    for opts in share_blocks.values():
        if Path(opts["path"]).is_dir():
            os.chown(opts["path"], owner.pw_uid, owner.pw_gid)
    admin_socket = Path(tempfile.mkdtemp(prefix="smb3d-")) / "admin.sock"
    prefix = []
    if service_account:
        os.chown(db, owner.pw_uid, owner.pw_gid)
        os.chown(admin_socket.parent, owner.pw_uid, owner.pw_gid)
        prefix = ["setpriv", "--reuid", service_account, "--regid", service_account, "--clear-groups"]
    text = "[server]\nlisten = [\"127.0.0.1:%d\"]\nuser_db = \"%s\"\nsigning = \"%s\"\nadmin_socket = \"%s\"\n%s\n" % (
        port, db, signing, admin_socket, extra_config)
    for name, opts in share_blocks.items():
        text += "\n[share.%s]\n" % name
        for k, v in opts.items():
            text += "%s = %s\n" % (k, '"%s"' % v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else v)
    config.write_text(text)
    log = tmp / "smb3d.log"
    proc = subprocess.Popen([*prefix, str(BINARY), "serve", "-c", str(config)], stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            env=dict(os.environ, SMB3D_LOG=os.environ.get("SMB3D_LOG", "info")))
    wait_for_port(port, proc)
    return Smb3d(port, user, password, "share", share_dir, config, proc, log, admin_socket)


def end_process(proc):
    """SIGTERM, then SIGKILL if `proc` has not exited within 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def stop(server):
    end_process(server.proc)
    if server.admin_socket is not None:
        shutil.rmtree(server.admin_socket.parent, ignore_errors=True)


@pytest.fixture
def smb3d(tmp_path):
    server = start_smb3d(tmp_path)
    yield server
    stop(server)


@pytest.fixture(scope="module")
def shared_smb3d(tmp_path_factory):
    """One server for a whole module (smbtorture suites), with the options and extra shares
    Samba's selftest gives them: `hide_files` naming smb2.dosmode's "hidefile", and
    `hideunread` (access-based enumeration, for smb2.acls.ACCESSBASED) on the same directory."""
    tmp = tmp_path_factory.mktemp("smb3d")
    share_dir = str(tmp / "share")
    server = start_smb3d(tmp, shares={"share": {"path": share_dir, "hide_files": ["hidefile"]},
                                      "hideunread": {"path": share_dir, "hide_unreadable": True}})
    yield server
    stop(server)


def pytest_sessionstart(session):
    if not BINARY.exists():
        raise pytest.UsageError("%s is missing: run `cargo build --release` first" % BINARY)
    for tool in ("smbclient", "smbtorture"):
        if shutil.which(tool) is None:
            raise pytest.UsageError("%s is not installed (Debian: smbclient samba-testsuite)" % tool)
    for module, package in (("smbprotocol", "smbprotocol"), ("impacket", "impacket"), ("smb", "pysmb"),
                            ("smbc", "pysmbc")):
        if importlib.util.find_spec(module) is None:
            raise pytest.UsageError("Python package %s is not installed (pip install %s)" % (package, package))


@pytest.fixture(scope="module")
def hostile_env(tmp_path_factory):
    """A server for the hostile-input suite, its share laid out by `hostile_cases.prepare_share`
    with a canary outside the share; yields the server and the suite's `Env` for it."""
    import smb2raw
    from hostile_cases import Env, prepare_share

    tmp = tmp_path_factory.mktemp("hostile")
    server = start_smb3d(tmp)
    outside = tmp / "outside"
    prepare_share(str(server.share_dir), str(outside))
    env = Env(smb2raw.Target(server.port, server.user, server.password), str(server.share_dir), str(outside),
              server.proc.pid)
    yield server, env
    stop(server)
