"""Quotas on a loop-mounted XFS with user and group quotas: Samba's smbcquotas lists, gets and
sets them against smb3d, a write past the hard limit is NT_STATUS_DISK_FULL, and the free space
smbclient sees is what the limit leaves. Needs root, mkfs.xfs, xfs_quota and a kernel with XFS
quota support; skips with the reason otherwise (this project's build machines have
CONFIG_XFS_QUOTA unset: docs/conformance.md, "Quotas").

smbcquotas has no port option and connects to port 445, so the server listens on port 445 of a
loopback address of its own."""

import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BINARY, end_process, system_account

LIMIT_KIB = 1024


def run(*cmd, check=True, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, check=check, timeout=120, **kw)


@pytest.fixture
def xfs_with_quotas(tmp_path):
    if os.getuid() != 0:
        pytest.skip("loop mounts need root")
    for tool in ("mkfs.xfs", "xfs_quota", "smbcquotas"):
        if shutil.which(tool) is None:
            pytest.skip("%s is not installed" % tool)
    image, mnt = tmp_path / "xfs.img", tmp_path / "mnt"
    mnt.mkdir()
    with open(image, "wb") as f:
        f.truncate(320 << 20)
    run("mkfs.xfs", "-q", str(image))
    mounted = run("mount", "-o", "loop,uquota,gquota", str(image), str(mnt), check=False)
    try:
        if mounted.returncode != 0:
            pytest.skip("XFS with uquota cannot be mounted here (kernel without XFS quota?): %s"
                        % mounted.stderr.strip())
        state = run("xfs_quota", "-x", "-c", "state -u", str(mnt), check=False).stdout
        if "Enforcement: ON" not in state:
            pytest.skip("user quotas are not enforced on the mount: %s" % state.strip())
        yield mnt
    finally:
        run("umount", str(mnt), check=False)
        image.unlink(missing_ok=True)


def start(tmp, share_dir, users):
    """smb3d on port 445 of a loopback address of its own, serving `share_dir` as `share` with
    `boss` as its admin user; `users` maps names to uids. Returns (process, address, passwords)."""
    db = tmp / "users"
    passwords = {}
    for name, uid in users.items():
        passwords[name] = "pw-" + secrets.token_hex(8)
        r = run(str(BINARY), "user", "--db", str(db), "add", name, "--uid", str(uid), "--password-stdin",
                input=passwords[name] + "\n", check=False)
        assert r.returncode == 0, r.stderr
    spot = os.getpid()
    address = "127.%d.%d.%d" % (100 + spot % 100, (spot // 100) % 250, 1 + (spot // 25000) % 250)
    admin = Path(tmp) / "admin.sock"
    config = tmp / "smb3d.toml"
    config.write_text('[server]\nlisten = ["%s:445"]\nuser_db = "%s"\nadmin_socket = "%s"\n\n'
                      '[share.share]\npath = "%s"\nadmin_users = ["boss"]\n' % (address, db, admin, share_dir))
    log = open(tmp / "smb3d.log", "wb")
    proc = subprocess.Popen([str(BINARY), "serve", "-c", str(config)], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 20
    while time.time() < deadline:
        assert proc.poll() is None, (tmp / "smb3d.log").read_text(errors="replace")
        try:
            with socket.create_connection((address, 445), timeout=0.2):
                return proc, address, passwords
        except OSError:
            time.sleep(0.05)
    end_process(proc)
    raise AssertionError("smb3d did not listen on %s:445" % address)


def smbcquotas(address, user, password, *args):
    return run("smbcquotas", "//%s/share" % address, "-s", "/dev/null", "-n", "-m", "SMB3",
               "-U", "%s%%%s" % (user, password), *args, check=False)


def test_linux_quotas_through_smbcquotas_and_smbclient(tmp_path, xfs_with_quotas):
    share_dir = xfs_with_quotas / "share"
    share_dir.mkdir()
    os.chmod(share_dir, 0o1777)
    alice = system_account("smb3d-quota-alice")
    boss = system_account("smb3d-quota-boss")
    run("xfs_quota", "-x", "-c", "limit -u bsoft=%dk bhard=%dk %d" % (LIMIT_KIB // 2, LIMIT_KIB, alice),
        str(xfs_with_quotas))
    proc, address, pw = start(tmp_path, share_dir, {"alice": alice, "boss": boss})
    try:
        # The limit set on the host shows to the share's admin, under alice's SID.
        listed = smbcquotas(address, "boss", pw["boss"], "-L")
        assert listed.returncode == 0, listed.stdout + listed.stderr
        line = next(l for l in listed.stdout.splitlines() if re.search(r"\b%d\b" % (LIMIT_KIB << 10), l))
        alice_sid = line.split()[0].rstrip(":")

        # A write past the hard limit is DISK_FULL; the free space is what the limit leaves.
        big = tmp_path / "big"
        big.write_bytes(os.urandom(2 * LIMIT_KIB << 10))
        put = run("smbclient", "//%s/share" % address, "-s", "/dev/null", "-U", "alice%%%s" % pw["alice"],
                  "-c", "put %s big" % big, check=False)
        assert "NT_STATUS_DISK_FULL" in put.stdout + put.stderr, put.stdout + put.stderr
        du = run("smbclient", "//%s/share" % address, "-s", "/dev/null", "-U", "alice%%%s" % pw["alice"],
                 "-c", "du", check=False)
        blocks = re.search(r"(\d+) blocks of size (\d+)\. (\d+) blocks available", du.stdout)
        assert blocks, du.stdout + du.stderr
        assert int(blocks.group(1)) * int(blocks.group(2)) <= LIMIT_KIB << 10, du.stdout

        # The admin raises it; the host sees the new limit. Alice may not.
        raised = smbcquotas(address, "boss", pw["boss"], "-S", "UQLIM:%s:%d/%d" % (alice_sid, 4 << 20, 8 << 20))
        assert raised.returncode == 0, raised.stdout + raised.stderr
        report = run("xfs_quota", "-x", "-c", "quota -u -b -N %d" % alice, str(xfs_with_quotas)).stdout
        assert str(8 << 10) in report.split(), report
        refused = smbcquotas(address, "alice", pw["alice"], "-S", "UQLIM:%s:0/0" % alice_sid)
        assert refused.returncode != 0
        report = run("xfs_quota", "-x", "-c", "quota -u -b -N %d" % alice, str(xfs_with_quotas)).stdout
        assert str(8 << 10) in report.split(), report
    finally:
        end_process(proc)
