"""Issue 9, check 3, end to end: a Samba installation (Debian's default smb.conf plus a share
block, and a user in Samba's tdbsam database) migrated with `smb3d config import-smb-conf` and
`pdbedit -L -w | smb3d user import`; `smb3d config check` accepts the result and `smb3d serve`
serves the share to that user with the same password, with the share's options in force. The
listen address, user database and admin socket come from SMB3D_* variables, as in a container."""

import os
import pwd
import secrets
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import BINARY, ROOT, SYSTEM_USER, free_port, interop_uid, wait_for_port

DEBIAN_SMB_CONF = ROOT / "crates" / "config" / "tests" / "fixtures" / "debian-smb.conf"


def run(*args, env=None, stdin=None):
    r = subprocess.run([str(a) for a in args], input=stdin, capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, "%s failed (%d):\n%s%s" % (" ".join(map(str, args)), r.returncode, r.stdout, r.stderr)
    return r


@pytest.mark.skipif(shutil.which("pdbedit") is None or shutil.which("smbpasswd") is None,
                    reason="Samba's smbpasswd and pdbedit are needed to make the database to migrate")
def test_imported_samba_configuration_and_users_serve_the_share(tmp_path):
    # Debian's file keeps its [print$] share, whose directory comes with the samba package.
    if not Path("/var/lib/samba/printers").is_dir():
        pytest.skip("/var/lib/samba/printers (Debian's [print$] path) is missing: samba is not installed")
    uid = interop_uid()
    gid = pwd.getpwuid(uid).pw_gid
    projects = tmp_path / "projects"
    projects.mkdir()
    os.chown(projects, uid, gid)
    samba = tmp_path / "samba"
    for sub in ("private", "lock", "state", "cache", "run"):
        (samba / sub).mkdir(parents=True)
    smb_conf = tmp_path / "smb.conf"
    # Samba merges a second [global] section into the first; these lines only keep Samba's own
    # databases in the test directory.
    smb_conf.write_text(DEBIAN_SMB_CONF.read_text() + f"""
[global]
   passdb backend = tdbsam:{samba}/private/passdb.tdb
   private dir = {samba}/private
   lock directory = {samba}/lock
   state directory = {samba}/state
   cache directory = {samba}/cache
   pid directory = {samba}/run

[projects]
   path = {projects}
   read only = no
   valid users = {SYSTEM_USER}
   guest ok = no
   browseable = yes
   create mask = 0640
   vfs objects = acl_xattr streams_xattr
""")
    password = "pw-" + secrets.token_hex(8)
    run("smbpasswd", "-c", smb_conf, "-s", "-a", SYSTEM_USER, stdin="%s\n%s\n" % (password, password))

    config = tmp_path / "smb3d.toml"
    imported = run(BINARY, "config", "import-smb-conf", smb_conf, "-o", config)
    assert "[projects]" not in imported.stderr, imported.stderr

    port = free_port()
    admin_dir = Path(tempfile.mkdtemp(prefix="smb3d-"))
    env = dict(os.environ, SMB3D_LISTEN="127.0.0.1:%d" % port, SMB3D_USER_DB=str(tmp_path / "users"),
               SMB3D_ADMIN_SOCKET=str(admin_dir / "admin.sock"), SMB3D_LOG="info")
    checked = run(BINARY, "config", "check", config, env=env)
    assert "[share.projects]" in checked.stdout and "create_mask = 0o640" in checked.stdout, checked.stdout

    accounts = run("pdbedit", "-s", smb_conf, "-L", "-w").stdout
    assert accounts.startswith(SYSTEM_USER + ":"), accounts
    run(BINARY, "user", "import", "--config", config, env=env, stdin=accounts)

    log = tmp_path / "smb3d.log"
    proc = subprocess.Popen([str(BINARY), "serve", "-c", str(config)], stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT, env=env)
    try:
        wait_for_port(port, proc)
        creds = "%s%%%s" % (SYSTEM_USER, password)

        def smbclient(*args):
            r = subprocess.run(["smbclient", *args, "-p", str(port), "-U", creds], capture_output=True, text=True,
                               timeout=60)
            assert r.returncode == 0, "%s\n%s\n--- server log ---\n%s" % (r.stdout, r.stderr, log.read_text())
            return r.stdout

        listing = smbclient("-L", "//127.0.0.1", "-g")
        assert "Disk|projects|" in listing, listing
        assert "Disk|print$|Printer Drivers" in listing, listing

        smbclient("//127.0.0.1/projects", "-c", "put %s migrated.txt" % smb_conf)
        stored = projects / "migrated.txt"
        assert stored.read_bytes() == smb_conf.read_bytes()
        assert stored.stat().st_uid == uid
        # vfs objects = acl_xattr imports as inherit_acls: the share root has no stored ACL, so
        # the new file inherits the one Samba synthesizes for it (docs/security-model.md):
        # owner full control, group and others the r-x of create mask 0640 | directory mask
        # 0755. Without acl_xattr it would be the create mask's 0640.
        assert stat.S_IMODE(stored.stat().st_mode) == 0o755, oct(stored.stat().st_mode)

        # valid users: an account smb3d knows but the share does not list is turned away.
        other_password = "pw-" + secrets.token_hex(8)
        run(BINARY, "user", "add", "outsider", "--uid", uid, "--config", config, "--password-stdin", env=env,
            stdin=other_password + "\n")
        r = subprocess.run(["smbclient", "//127.0.0.1/projects", "-p", str(port), "-U",
                            "outsider%" + other_password, "-c", "ls"], capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in r.stdout + r.stderr, r.stdout + r.stderr

        # A wrong password is refused: the hash came over, not a blank account.
        r = subprocess.run(["smbclient", "//127.0.0.1/projects", "-p", str(port), "-U", SYSTEM_USER + "%wrong",
                            "-c", "ls"], capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and "NT_STATUS_LOGON_FAILURE" in r.stdout + r.stderr, r.stdout + r.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(admin_dir, ignore_errors=True)
