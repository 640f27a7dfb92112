"""Issue 23, item 5: one bad share does not stop the server. A share whose directory is missing
is left out: smb3d starts, smbclient uses the other share, a tree connect to the missing one is
refused as for a share that does not exist (STATUS_BAD_NETWORK_NAME), `smb3d status` says why,
and once the directory exists a reload serves it."""

from conftest import start_smb3d, stop


def test_the_other_shares_are_served_and_a_reload_brings_it_back(tmp_path):
    missing = tmp_path / "later"
    server = start_smb3d(tmp_path, shares={"share": {"path": str(tmp_path / "share")},
                                           "later": {"path": str(missing)}})
    try:
        assert server.smbclient("ls").returncode == 0
        refused = server.smbclient("ls", share="later", check=False)
        assert "NT_STATUS_BAD_NETWORK_NAME" in refused.stdout, refused.stdout
        status = server.ctl("status").stdout
        assert "Unavailable shares" in status and "later: share later: %s" % missing in status, status

        missing.mkdir()
        server.own(missing)
        reloaded = server.ctl("reload")
        assert "shares added later" in reloaded.stdout, reloaded.stdout + reloaded.stderr
        assert server.smbclient("ls", share="later").returncode == 0
        assert "Unavailable" not in server.ctl("status").stdout
    finally:
        stop(server)
