"""smb3d as a member of an Active Directory domain (docs/auth.md): Samba's AD DC on 127.0.0.50
(interop/addc.py) issues a domain user's tickets with a PAC; smb3d, with the member's keytab
and an [idmap] range for the domain, verifies the PAC and lets the user, who is in no local
user database, list and write files as the uid its SID maps to. A second smb3d with the same
[idmap] maps the user to the same uid; `smb3d idmap` answers alike; a server without a range
for the domain refuses the user."""

import os
import subprocess

import pytest

from addc import DOMAIN, HOST, REALM, DomainController, available
from conftest import BINARY, start_smb3d, stop

pytestmark = pytest.mark.skipif(not available(), reason="Samba's AD DC (samba-ad-dc) is not installed "
                                "or 127.0.0.50 cannot be added to lo (scripts/test-all installs it)")

PASSWORD = "Dana-Pw-1234"
LOW = 100000


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    root = tmp_path_factory.mktemp("addc")
    dc = DomainController(root)
    dc.sid = dc.add_user("dana", PASSWORD, groups=["Designers"])
    dc.keytab = dc.join(root / "member.keytab")
    yield dc
    dc.stop()


def member(dc, tmp, idmap=True):
    """An smb3d with the member's keytab and, when `idmap`, a range for the domain; its share
    open to every uid (the domain user's uid has no other right to it)."""
    extra = '\n[auth]\nkeytab = "%s"\nrealm = "%s"\n' % (dc.keytab, REALM)
    if idmap:
        extra += '\n[idmap.%s]\nsid = "%s"\nrange = [%d, %d]\n' % (DOMAIN, dc.domain_sid, LOW, LOW + 199999)
    server = start_smb3d(tmp, extra_config=extra)
    os.chmod(server.share_dir, 0o777)
    return server


def smbclient(dc, server, commands, ccache):
    env = dict(dc.env, KRB5CCNAME="FILE:%s" % ccache)
    cmd = ["smbclient", "//%s/%s" % (HOST, server.share), "-I", "127.0.0.1", "-p", str(server.port),
           "--use-kerberos=required", "--use-krb5-ccache=" + env["KRB5CCNAME"], "-c", commands]
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)


def idmap(server, *args):
    r = subprocess.run([str(BINARY), "idmap", "-c", str(server.config), *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_a_domain_user_writes_as_its_mapped_uid_on_both_nodes(dc, tmp_path):
    rid = int(dc.sid.rsplit("-", 1)[1])
    ccache = tmp_path / "dana.cc"
    dc.kinit("dana", PASSWORD, ccache)
    src = tmp_path / "hello.txt"
    src.write_text("written by a domain user\n")
    owners = []
    for node in ("one", "two"):
        server = member(dc, tmp_path / node)
        try:
            r = smbclient(dc, server, "put %s from-%s.txt; ls" % (src, node), ccache)
            assert r.returncode == 0, r.stdout + "\n--- server log ---\n" + server.log_tail()
            assert "from-%s.txt" % node in r.stdout
            written = server.share_dir / ("from-%s.txt" % node)
            assert written.read_text() == src.read_text()
            owners.append((written.stat().st_uid, written.stat().st_gid))
            # What the admin command computes from the configuration is what the server did.
            assert idmap(server, "sid-to-uid", dc.sid) == str(LOW + rid)
            assert idmap(server, "uid-to-sid", str(LOW + rid)) == dc.sid
            logons = [l for l in server.log.read_text(errors="replace").splitlines() if "auth_method" in l]
            assert any('auth_method="Kerberos"' in l and "dana" in l and "success" in l for l in logons), logons
        finally:
            stop(server)
    # Owned by the uid of dana's SID and the gid of Domain Users (RID 513), the same on both.
    assert owners == [(LOW + rid, LOW + 513)] * 2, owners


def test_a_domain_without_a_range_is_refused(dc, tmp_path):
    ccache = tmp_path / "dana.cc"
    dc.kinit("dana", PASSWORD, ccache)
    server = member(dc, tmp_path / "srv", idmap=False)
    try:
        r = smbclient(dc, server, "ls", ccache)
        assert r.returncode != 0
        assert "NT_STATUS_LOGON_FAILURE" in r.stdout, r.stdout
    finally:
        stop(server)
