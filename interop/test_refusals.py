"""Issue 2, check 2: bad credentials, unknown shares and paths leaving the share are refused
with the statuses Windows gives, and the server keeps serving."""

import os

import pytest


def assert_still_serving(server):
    r = server.smbclient("ls")
    assert "blocks available" in r.stdout
    assert server.alive()


def test_wrong_password(smb3d):
    r = smb3d.smbclient("ls", user="%s%%wrong" % smb3d.user, check=False)
    assert "NT_STATUS_LOGON_FAILURE" in r.stdout
    assert_still_serving(smb3d)


def test_unknown_user(smb3d):
    r = smb3d.smbclient("ls", user="nobody%whatever", check=False)
    assert "NT_STATUS_LOGON_FAILURE" in r.stdout
    assert_still_serving(smb3d)


def test_unknown_share(smb3d):
    r = smb3d.smbclient("ls", share="nosuch", check=False)
    assert "NT_STATUS_BAD_NETWORK_NAME" in r.stdout
    assert_still_serving(smb3d)


@pytest.fixture
def outside(smb3d, tmp_path):
    secret = tmp_path / "outside-secret.txt"
    secret.write_text("canary")
    return secret


def test_symlink_out_of_share_is_not_followed(smb3d, outside):
    os.symlink(outside, smb3d.share_dir / "escape")
    os.symlink(outside.parent, smb3d.share_dir / "escape-dir")
    r = smb3d.smbclient("get escape -", check=False)
    assert "NT_STATUS_OBJECT_NAME_NOT_FOUND" in r.stdout and "canary" not in r.stdout
    r = smb3d.smbclient("get escape-dir\\%s -" % outside.name, check=False)
    assert "NT_STATUS_OBJECT_PATH_NOT_FOUND" in r.stdout or "NT_STATUS_OBJECT_NAME_NOT_FOUND" in r.stdout
    assert "canary" not in r.stdout
    assert outside.read_text() == "canary"
    assert_still_serving(smb3d)


def test_dot_dot_cannot_leave_the_share(smb3d, outside):
    from smbprotocol_client import open_status

    status = open_status(smb3d, "..\\%s" % outside.name)
    assert status == "STATUS_OBJECT_PATH_SYNTAX_BAD"
    status = open_status(smb3d, "a\\..\\..\\%s" % outside.name)
    assert status == "STATUS_OBJECT_PATH_SYNTAX_BAD"
    assert outside.read_text() == "canary"
    assert_still_serving(smb3d)
