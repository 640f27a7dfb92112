"""A typical office smb.conf (issue 23), served twice: by a test-local Samba as written, and by
smb3d after the steps an admin moving the server takes (`smb3d config import-smb-conf` for the
configuration, `pdbedit -L -w | smb3d user import` for the users). Tests ask both servers the same
questions with third-party clients and compare the answers and what lands on disk.

The two servers get separate copies of the directory tree (same owners and modes), so that what
one does to a file cannot answer a question asked of the other."""

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from conftest import BINARY, end_process, free_port, system_account, wait_for_port
from samba import start_smbd

# Every account the configuration names: each is a system account (Samba needs one for each
# user it serves, and smb3d acts as its uid) and, except the guest account, a database user.
USERS = {
    "worker": "the office's ordinary user",
    "boss": "admin users: acts as root on [office]",
    "intruder": "invalid users on [office]",
    "alice": "has a home share",
}
GUEST = "smb3d-office-guest"

# {placeholders} are filled in by render(); %U and the like are for the servers.
OFFICE_CONF = """[global]
  server role = standalone server
  workgroup = OFFICE
  map to guest = bad user
  guest account = {guest}
  hosts allow = 127.0.0.1 127.0.0.77 ::1
  hosts deny = ALL

[homes]
  path = {root}/homes/%U
  browseable = no
  read only = no
  valid users = %S

[office]
  path = {root}/office
  read only = no
  create mask = 0660
  directory mask = 0770
  force directory mode = 2000
  veto files = /*.tmp/.DS_Store/
  delete veto files = yes
  vfs objects = acl_xattr streams_xattr recycle
  recycle:repository = .recycle/%U
  recycle:keeptree = yes
  recycle:versions = yes
  recycle:exclude = *.bak
  admin users = boss
  invalid users = intruder
  hosts allow = 127.0.0.1 ::1
  hosts deny = 127.0.0.77

[public]
  path = {root}/public
  guest ok = yes
  read only = no

[dropbox]
  path = {root}/dropbox
  read only = no
  inherit owner = windows and unix
"""

def render(root: Path) -> str:
    return OFFICE_CONF.format(root=root, guest=GUEST)


def make_tree(root: Path):
    """The share directories as an admin would have them: the office share group-writable by
    everyone in it, homes owned by their users, alice's drop box writable by all."""
    for sub in ("office", "public", "homes", "dropbox"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    worker = pwd.getpwnam("worker")
    os.chown(root / "office", 0, worker.pw_gid)
    os.chmod(root / "office", 0o2777)
    os.chmod(root / "public", 0o777)
    alice = pwd.getpwnam("alice")
    # A drop box: everyone may put files in alice's directory, which become hers.
    os.chown(root / "dropbox", alice.pw_uid, alice.pw_gid)
    os.chmod(root / "dropbox", 0o777)
    (root / "homes" / "alice").mkdir(exist_ok=True)
    os.chown(root / "homes" / "alice", alice.pw_uid, alice.pw_gid)
    os.chmod(root / "homes" / "alice", 0o700)


@dataclass
class Server:
    """One of the two servers, and how a client reaches it."""
    name: str
    port: int
    root: Path
    proc: subprocess.Popen
    log: Path
    passwords: dict = field(default_factory=dict)
    # smb3d's admin socket lives in a short directory of its own (a socket path holds 107 bytes).
    admin_dir: Path = None

    def smbclient(self, share, user, commands, *extra, password=None, timeout=120):
        """smbclient as `user` (with its password unless `password` says otherwise); returns
        (exit code, output) and leaves judging it to the caller, who compares two servers."""
        creds = "%s%%%s" % (user, self.passwords.get(user, "") if password is None else password)
        cmd = ["smbclient", "//127.0.0.1/%s" % share, "-p", str(self.port), "-U", creds, *extra, "-c", commands]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        return r.returncode, r.stdout

    def log_tail(self, n=60):
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


@dataclass
class Office:
    base: Path
    samba: Server
    smb3d: Server
    import_output: str
    passwords: dict
    # Both servers run under the systemd unit's UMask=0022, which must not cut the share's modes.
    umask: int = 0o022

    @property
    def both(self):
        return (self.samba, self.smb3d)


def _accounts():
    for name in USERS:
        system_account(name)
    system_account(GUEST)
    return {name: "pw-" + secrets.token_hex(8) for name in USERS}


def _start_samba(base: Path, passwords) -> Server:
    root = base / "samba-tree"
    make_tree(root)
    port, proc, log, conf = start_smbd(base / "samba-state", render(root), passwords)
    return Server("samba", port, root, proc, log, dict(passwords)), conf


def _start_smb3d(base: Path, samba_conf: Path, passwords):
    """Imports the configuration Samba serves (with the smb3d tree's paths) and Samba's users,
    as the migration guide says, then serves it."""
    root = base / "smb3d-tree"
    make_tree(root)
    state = base / "smb3d-state"
    state.mkdir()
    smb_conf = state / "smb.conf"
    smb_conf.write_text(render(root))
    config = state / "smb3d.toml"
    r = subprocess.run([str(BINARY), "config", "import-smb-conf", str(smb_conf), "-o", str(config)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import_output = r.stdout + r.stderr
    users_db = state / "users"
    pdbedit = subprocess.run(["pdbedit", "-s", str(samba_conf), "-L", "-w"], capture_output=True, text=True, check=True)
    port = free_port()
    admin_dir = Path(tempfile.mkdtemp(prefix="smb3d-"))
    env = dict(os.environ, SMB3D_LISTEN="127.0.0.1:%d" % port, SMB3D_USER_DB=str(users_db),
               SMB3D_ADMIN_SOCKET=str(admin_dir / "admin.sock"), SMB3D_LOG="info")
    r = subprocess.run([str(BINARY), "user", "import", "--config", str(config)], input=pdbedit.stdout,
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    log = state / "smb3d.log"
    proc = subprocess.Popen([str(BINARY), "serve", "-c", str(config)], stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT, env=env)
    wait_for_port(port, proc)
    return Server("smb3d", port, root, proc, log, dict(passwords), admin_dir), import_output


def start_office() -> Office:
    """Both servers, on a fresh tree under /tmp that every account may traverse (pytest's
    temporary directories are its owner's alone)."""
    base = Path(tempfile.mkdtemp(prefix="smb3d-office-"))
    os.chmod(base, 0o755)
    passwords = _accounts()
    old_umask = os.umask(Office.umask)
    try:
        samba, samba_conf = _start_samba(base, passwords)
        try:
            smb3d, import_output = _start_smb3d(base, samba_conf, passwords)
        except BaseException:
            stop_server(samba)
            shutil.rmtree(base, ignore_errors=True)
            raise
    finally:
        os.umask(old_umask)
    return Office(base, samba, smb3d, import_output, passwords)


def stop_server(server: Server):
    end_process(server.proc)
    if server.admin_dir is not None:
        shutil.rmtree(server.admin_dir, ignore_errors=True)
    # Samba's children (one smbd per connection) leave with the master; give them a moment.
    time.sleep(0.2)


def stop_office(office: Office):
    for server in office.both:
        stop_server(server)
    shutil.rmtree(office.base, ignore_errors=True)
