"""Issue 23, item 12: a share imported from smb.conf keeps Samba's defaults where smb3d's own
differ. `strict allocate` is off unless the smb.conf says yes, so a write far beyond the end of
a file leaves a hole, as in Samba: smbtorture smb2.rw.invalid (samba3 target) passes against the
imported share, where smb3d's own default answered STATUS_DISK_FULL."""

import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace

from conftest import BINARY, free_port, interop_uid, wait_for_port
from torture import run_suite


def test_an_imported_share_allocates_as_samba_does(tmp_path):
    share = tmp_path / "data"
    share.mkdir()
    os.chown(share, interop_uid(), -1)
    smb_conf = tmp_path / "smb.conf"
    smb_conf.write_text("[global]\n   server role = standalone server\n"
                        "[data]\n   path = %s\n   read only = no\n   vfs objects = acl_xattr streams_xattr\n" % share)
    config = tmp_path / "smb3d.toml"
    r = subprocess.run([str(BINARY), "config", "import-smb-conf", str(smb_conf), "-o", str(config)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "strict_allocate = false" in config.read_text(), config.read_text()

    port = free_port()
    admin_dir = Path(tempfile.mkdtemp(prefix="smb3d-"))
    env = dict(os.environ, SMB3D_LISTEN="127.0.0.1:%d" % port, SMB3D_USER_DB=str(tmp_path / "users"),
               SMB3D_ADMIN_SOCKET=str(admin_dir / "admin.sock"), SMB3D_LOG="info")
    password = "pw-" + secrets.token_hex(8)
    r = subprocess.run([str(BINARY), "user", "add", "tester", "--uid", str(interop_uid()), "--config", str(config),
                        "--password-stdin"], input=password + "\n", capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    log = tmp_path / "smb3d.log"
    proc = subprocess.Popen([str(BINARY), "serve", "-c", str(config)], stdout=open(log, "wb"),
                            stderr=subprocess.STDOUT, env=env)
    try:
        wait_for_port(port, proc)
        server = SimpleNamespace(port=port, creds="tester%" + password, unc=lambda: "//127.0.0.1/data")
        results, output = run_suite(server, "smb2.rw.invalid", timeout=300)
        assert results.get("smb2.rw.invalid") == "success", output + log.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(admin_dir, ignore_errors=True)
