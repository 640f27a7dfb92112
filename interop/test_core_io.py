"""Issue 2, check 1: the core file commands through smbclient with every dialect, and signing."""

import filecmp
import os

import pytest

DIALECTS = ["SMB3_11", "SMB3", "SMB2_10", "SMB2_02"]
SIZE = 100 * 1024 * 1024 + 12345


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "big.bin"
    with open(path, "wb") as f:
        remaining = SIZE
        while remaining:
            chunk = os.urandom(min(remaining, 4 * 1024 * 1024))
            f.write(chunk)
            remaining -= len(chunk)
    return path


def roundtrip(server, big_file, tmp_path, *options):
    out = tmp_path / "out.bin"
    r = server.smbclient(
        "mkdir d; put %s d\\f; get d\\f %s; rename d\\f d\\g; ls d\\*; allinfo d\\g; del d\\g; rmdir d" % (big_file, out),
        *options,
    )
    assert filecmp.cmp(big_file, out, shallow=False), "downloaded file differs"
    assert "g" in r.stdout and "create_time" in r.stdout, r.stdout
    assert not (server.share_dir / "d").exists(), "directory not removed"
    assert "NT_STATUS" not in r.stdout, r.stdout


@pytest.mark.parametrize("dialect", DIALECTS)
def test_put_get_rename_list_delete(smb3d, big_file, tmp_path, dialect):
    roundtrip(smb3d, big_file, tmp_path, "-m", dialect)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_signed_session(smb3d, big_file, tmp_path, dialect):
    roundtrip(smb3d, big_file, tmp_path, "-m", dialect, "--client-protection=sign")


def test_listing_shows_files_written_locally(smb3d):
    (smb3d.share_dir / "local.txt").write_text("hello")
    (smb3d.share_dir / "sub").mkdir()
    r = smb3d.smbclient("ls")
    assert "local.txt" in r.stdout and "sub" in r.stdout
    r = smb3d.smbclient("get local.txt -")
    assert "hello" in r.stdout
