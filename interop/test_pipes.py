"""Issue 6, check 1: named pipes on IPC$ carry DCE/RPC, so `smbclient -L` lists the shares (not
the unlisted ones) and rpcclient's share enumeration, server information and name lookups
answer."""

import subprocess

import pytest

from conftest import start_smb3d, stop


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pipes")
    shares = {}
    for name, extra in [("share", {"comment": "the share"}), ("hidden", {"browseable": False}), ("other", {})]:
        path = tmp / name
        path.mkdir()
        path.chmod(0o777)
        shares[name] = {"path": str(path), **extra}
    srv = start_smb3d(tmp, shares=shares)
    yield srv
    stop(srv)


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    return r.returncode, r.stdout


def rpcclient(server, commands):
    code, out = run(["rpcclient", "-p", str(server.port), "127.0.0.1", "-U", server.creds, "-c", commands])
    assert code == 0, out + "\n--- server log ---\n" + server.log_tail()
    return out


def test_smbclient_lists_the_shares(server):
    code, out = run(["smbclient", "-L", "//127.0.0.1", "-p", str(server.port), "-U", server.creds])
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("\t") and len(line.split()) >= 2]
    assert "share" in listed and "other" in listed and "IPC$" in listed, out
    assert "hidden" not in listed, out
    assert "the share" in out


def test_rpcclient_enumerates_shares_with_paths(server):
    out = rpcclient(server, "netshareenumall")
    assert "netname: share" in out and "netname: other" in out
    assert "netname: hidden" not in out
    assert "remark:\tthe share" in out
    assert "path:\tC:" + str(server.share_dir).replace("/", "\\") in out.replace("\\\\", "\\")


def test_rpcclient_finds_an_unlisted_share_by_name(server):
    out = rpcclient(server, "netsharegetinfo hidden")
    assert "netname: hidden" in out


def test_rpcclient_srvinfo(server):
    out = rpcclient(server, "srvinfo")
    assert "platform_id     :\t500" in out
    assert "server type     :\t0x9003" in out


def test_rpcclient_looks_up_names_and_sids(server):
    out = rpcclient(server, "lookupnames %s" % server.user)
    sid = out.split()[1]
    assert sid.startswith("S-1-5-21-") and "(User: 1)" in out, out
    out = rpcclient(server, "lookupsids S-1-1-0 S-1-5-32-544")
    assert "\\Everyone (5)" in out and "BUILTIN\\Administrators (4)" in out, out
    out = rpcclient(server, "lookupsids %s" % sid)
    assert sid in out and "(1)" in out, out
    code, out = run(["rpcclient", "-p", str(server.port), "127.0.0.1", "-U", server.creds, "-c", "lookupnames nosuchaccount"])
    assert "NT_STATUS_NONE_MAPPED" in out


def test_rpcclient_wkssvc(server):
    # rpcclient prints nothing for level 100; the call must succeed.
    rpcclient(server, "wkssvc_wkstagetinfo")


def test_server_survives_pipe_sessions(server):
    for _ in range(3):
        rpcclient(server, "netshareenumall; srvinfo")
    assert server.alive()
