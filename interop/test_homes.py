"""Issue 23 item 1: home shares from `[share.homes]`, as Samba's [homes]: a user reaches their
own home by their name or as `homes`, it is made on the first connect when configured (owned by
them, with the configured mode), and listed to them; a path with a client-chosen substitution is
refused by config check. Samba's side of the same questions is in test_ops_office.py."""

import os
import pwd
import subprocess

import pytest

from conftest import BINARY, interop_uid, start_smb3d, stop


@pytest.fixture
def homes(tmp_path):
    (tmp_path / "homes").mkdir()
    server = start_smb3d(tmp_path, shares={
        "share": {"path": str(tmp_path / "share")},
        "homes": {"path": str(tmp_path / "homes" / "%U"), "read_only": False, "browseable": False,
                  "create_home": True, "create_home_mode": 0o750},
    })
    yield server, tmp_path / "homes"
    stop(server)


def test_a_home_is_made_at_the_first_connect_owned_by_its_user(homes, tmp_path):
    server, root = homes
    home = root / server.user
    assert not home.exists()
    (tmp_path / "note.txt").write_text("mine\n")
    server.smbclient("lcd %s; put note.txt" % tmp_path, share=server.user)
    meta = os.lstat(home)
    owner = pwd.getpwuid(interop_uid())
    assert (meta.st_uid, meta.st_gid) == (owner.pw_uid, owner.pw_gid)
    assert meta.st_mode & 0o7777 == 0o750
    assert (home / "note.txt").read_text() == "mine\n"
    assert os.stat(home / "note.txt").st_uid == owner.pw_uid
    # `homes` itself is one's own home.
    out = server.smbclient("ls", share="homes").stdout
    assert "note.txt" in out, out


def test_a_home_is_listed_to_its_owner_and_homes_itself_is_hidden(homes):
    server, root = homes
    r = subprocess.run(["smbclient", "-L", "//127.0.0.1", "-p", str(server.port), "-U", server.creds, "-g"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    disks = {line.split("|")[1] for line in r.stdout.splitlines() if line.startswith("Disk|")}
    assert disks == {"share", server.user}, r.stdout
    assert not (root / server.user).exists(), "listing makes no home"


def test_another_users_name_is_refused(homes):
    server, root = homes
    r = server.smbclient("ls", share="root", check=False)
    assert r.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in r.stdout, r.stdout
    r = server.smbclient("ls", share="no-such-account-here", check=False)
    assert r.returncode != 0 and "NT_STATUS_BAD_NETWORK_NAME" in r.stdout, r.stdout
    assert os.listdir(root) == []


@pytest.mark.parametrize("path", ["/srv/homes/%m", "/srv/%I/%U", "relative/%U"])
def test_config_check_refuses_a_home_path_a_client_could_steer(tmp_path, path):
    config = tmp_path / "smb3d.toml"
    config.write_text('[share.homes]\npath = "%s"\n' % path)
    r = subprocess.run([str(BINARY), "config", "check", "--config", str(config)], capture_output=True, text=True)
    assert r.returncode != 0, r.stdout
    assert "smb3d.toml:2:" in r.stderr, r.stderr


def test_a_reload_that_changes_the_template_makes_new_homes(homes, tmp_path):
    server, root = homes
    server.smbclient("ls", share=server.user)
    assert (root / server.user).is_dir()
    moved = tmp_path / "homes2"
    moved.mkdir()
    text = server.config.read_text()
    server.config.write_text(text.replace(str(root / "%U"), str(moved / "%U")))
    server.ctl("reload")
    (tmp_path / "after.txt").write_text("moved\n")
    server.smbclient("lcd %s; put after.txt" % tmp_path, share=server.user)
    assert (moved / server.user / "after.txt").read_text() == "moved\n"
    assert not (root / server.user / "after.txt").exists()
