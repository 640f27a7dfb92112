"""A reference Samba (Debian's smbd) on a loopback port, serving a given directory with the
modules that store metadata as smb3d does (acl_xattr, streams_xattr, DOS attributes in
xattrs), so that tests can compare the two servers on the same files."""

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from conftest import end_process, free_port, wait_for_port


@dataclass
class Samba:
    port: int
    user: str
    password: str
    share: str
    share_dir: Path
    proc: subprocess.Popen
    log: Path

    @property
    def creds(self):
        return "%s%%%s" % (self.user, self.password)

    def smbclient(self, commands, *extra, check=True, timeout=600):
        cmd = ["smbclient", "//127.0.0.1/%s" % self.share, "-p", str(self.port), "-U", self.creds, *extra,
               "-c", commands]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError("smbclient against Samba failed (%d):\n%s" % (r.returncode, r.stdout))
        return r


def available():
    return shutil.which("smbd") is not None and shutil.which("smbpasswd") is not None


# What keeps a test's smbd to itself: its own port and directories, no printing or NetBIOS,
# and metadata stored as smb3d stores it. Inserted into the [global] of the smb.conf it serves.
TEST_SERVER_LINES = """  smb ports = {port}
  interfaces = 127.0.0.1 ::1
  bind interfaces only = yes
  disable netbios = yes
  load printers = no
  printing = bsd
  printcap name = /dev/null
  disable spoolss = yes
  server min protocol = SMB2_02
  passdb backend = tdbsam:{state}/private/passdb.tdb
  private dir = {state}/private
  lock directory = {state}/lock
  state directory = {state}/state
  cache directory = {state}/cache
  pid directory = {state}/run
  ncalrpc dir = {state}/ncalrpc
  log file = {state}/log/log.%m
  store dos attributes = yes
  ea support = yes
"""


def start_smbd(state: Path, conf_text: str, users: dict):
    """Starts smbd on a free loopback port serving `conf_text` (an smb.conf starting with
    [global], which gets TEST_SERVER_LINES) with `users` (name: password, system accounts) in
    its passdb, its files under `state`; returns (port, process, log, smb.conf path)."""
    for sub in ("private", "lock", "state", "cache", "run", "ncalrpc", "log"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    port = free_port()
    assert conf_text.startswith("[global]\n"), conf_text[:40]
    conf = state / "smb.conf"
    conf.write_text(conf_text.replace("[global]\n", "[global]\n" + TEST_SERVER_LINES.format(port=port, state=state), 1))
    for user, password in users.items():
        subprocess.run(["smbpasswd", "-c", str(conf), "-s", "-a", user], input="%s\n%s\n" % (password, password),
                       text=True, check=True, capture_output=True)
    log = state / "smbd.log"
    # Its own session: when the smbd master stops it signals its whole process group.
    proc = subprocess.Popen(["smbd", "--foreground", "--no-process-group", "-s", str(conf)],
                            stdin=subprocess.DEVNULL, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)
    wait_for_port(port, proc)
    return port, proc, log, conf


def start_samba(root: Path, share_dir: Path, user: str, password: str, share="share"):
    """Starts smbd as `user` (a system account) sees it; the caller stops it with stop_samba."""
    port, proc, log, _ = start_smbd(root, f"""[global]
  server role = standalone server
  workgroup = WORKGROUP
  map to guest = never

[{share}]
  path = {share_dir}
  read only = no
  vfs objects = acl_xattr streams_xattr
""", {user: password})
    return Samba(port, user, password, share, share_dir, proc, log)


def stop_samba(samba):
    end_process(samba.proc)
    # Children (one smbd per connection) leave with the master; give them a moment.
    time.sleep(0.2)
