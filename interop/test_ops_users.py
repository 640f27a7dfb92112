"""Issue 23, item 8: `smb3d user disable` refuses the user's logons with the status Samba gives,
STATUS_ACCOUNT_DISABLED, once the password is proven (a wrong password still fails as any
other, STATUS_LOGON_FAILURE); `smb3d user enable` lets the user in again. The running server
rereads the database when it changes, so no restart or reload is needed."""

import subprocess

from conftest import BINARY


def user(server, *args):
    r = subprocess.run([str(BINARY), "user", "--db", str(server.config.parent / "users"), *args],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_a_disabled_user_is_refused_as_samba_refuses_it(smb3d):
    assert smb3d.smbclient("ls").returncode == 0
    user(smb3d, "disable", smb3d.user)
    refused = smb3d.smbclient("ls", check=False)
    assert refused.returncode != 0
    assert "NT_STATUS_ACCOUNT_DISABLED" in refused.stdout, refused.stdout
    wrong = smb3d.smbclient("ls", user="%s%%wrong" % smb3d.user, check=False)
    assert "NT_STATUS_LOGON_FAILURE" in wrong.stdout, wrong.stdout
    assert "Logons allowed:       no" in user(smb3d, "show", smb3d.user)
    user(smb3d, "enable", smb3d.user)
    assert smb3d.smbclient("ls").returncode == 0
