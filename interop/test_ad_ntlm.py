"""NTLM logons of domain users passed through to the DC (docs/auth.md, MS-NRPC): smb3d, a
member of Samba's AD DC on 127.0.0.50 (interop/addc.py) with the machine password the join
set, asks the DC over a Netlogon secure channel to check the NTLMv2 response of a user who
has no ticket and is in no local user database. The user lists and writes files as the uid
its SID maps to (the same `[idmap]` mapping a PAC gets), with signing keyed by the session
key the DC returned; a wrong password is refused; a DC that does not answer fails the logon
in bounded time."""

import os
import socket
import subprocess
import time

import pytest

from addc import DOMAIN, REALM, DomainController, available
from conftest import start_smb3d, stop

pytestmark = pytest.mark.skipif(not available(), reason="Samba's AD DC (samba-ad-dc) is not installed "
                                "or 127.0.0.50 cannot be added to lo (scripts/test-all installs it)")

PASSWORD = "Erin-Pw-1234"
LOW = 300000


@pytest.fixture(scope="module")
def dc(tmp_path_factory):
    root = tmp_path_factory.mktemp("addc")
    dc = DomainController(root)
    dc.sid = dc.add_user("erin", PASSWORD, groups=["Editors"])
    dc.keytab = dc.join(root / "member.keytab")
    yield dc
    dc.stop()


def member(dc, tmp, address="127.0.0.50"):
    """An smb3d named FILESRV in workgroup SMB3DAD with the machine password in a 0600 file,
    passing NTLM logons of the domain's users to the DC at `address`."""
    secret = tmp / "machine.pw"
    secret.write_text(dc.machine_password + "\n")
    os.chmod(secret, 0o600)
    extra = ('workgroup = "%s"\nserver_name = "FILESRV"\n'
             '\n[auth]\nkeytab = "%s"\nrealm = "%s"\ndc = "%s"\nmachine_password_file = "%s"\n'
             '\n[idmap.%s]\nsid = "%s"\nrange = [%d, %d]\n'
             % (DOMAIN, dc.keytab, REALM, address, secret, DOMAIN, dc.domain_sid, LOW, LOW + 199999))
    server = start_smb3d(tmp, extra_config=extra)
    os.chmod(server.share_dir, 0o777)
    return server


def smbclient(server, user, password, commands, *extra):
    cmd = ["smbclient", "//127.0.0.1/%s" % server.share, "-p", str(server.port), "-U",
           "%s\\%s%%%s" % (DOMAIN, user, password), "--use-kerberos=disabled", *extra, "-c", commands]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)


def test_a_domain_user_without_a_ticket_logs_on_with_ntlm(dc, tmp_path):
    server = member(dc, tmp_path)
    try:
        rid = int(dc.sid.rsplit("-", 1)[1])
        (tmp_path / "note.txt").write_text("written over NTLM\n")
        r = smbclient(server, "erin", PASSWORD, "put %s note.txt; ls" % (tmp_path / "note.txt"),
                      "--client-protection=sign")
        assert r.returncode == 0, r.stdout + server.log.read_text()[-3000:]
        assert "note.txt" in r.stdout
        st = (server.share_dir / "note.txt").stat()
        assert st.st_uid == LOW + rid, (st.st_uid, LOW + rid)

        from smbprotocol.connection import Connection
        from smbprotocol.session import Session
        from smbprotocol.tree import TreeConnect
        conn = Connection(None, "127.0.0.1", server.port)
        conn.connect()
        try:
            session = Session(conn, "%s\\erin" % DOMAIN, PASSWORD, auth_protocol="ntlm",
                              require_encryption=False)
            session.connect()
            tree = TreeConnect(session, r"\\127.0.0.1\%s" % server.share)
            tree.connect()
            tree.disconnect()
        finally:
            conn.disconnect()
    finally:
        stop(server)


def test_lsarpc_names_domain_accounts_that_logged_on(dc, tmp_path):
    """LsarLookupSids/LsarLookupNames (MS-LSAT) name a domain user once it has logged on (its
    name and domain from the DC's validation), the domain-relative groups every domain has
    (MS-DTYP 2.4.2.4) and the domain itself, as Windows' security tab asks; a SID of the
    domain that no logon named stays unmapped."""
    server = member(dc, tmp_path)
    try:
        def rpcclient(command):
            cmd = ["rpcclient", "127.0.0.1", "-p", str(server.port), "-U", "%s\\erin%%%s" % (DOMAIN, PASSWORD),
                   "--use-kerberos=disabled", "-c", command]
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)

        r = rpcclient("lookupsids %s %s-513 %s %s-4242" % (dc.sid, dc.domain_sid, dc.domain_sid, dc.domain_sid))
        assert "%s %s\\erin (1)" % (dc.sid, DOMAIN) in r.stdout, r.stdout
        assert "%s-513 %s\\Domain Users (2)" % (dc.domain_sid, DOMAIN) in r.stdout, r.stdout
        assert "%s %s (3)" % (dc.domain_sid, DOMAIN) in r.stdout, r.stdout
        assert "%s-4242 *unknown*" % dc.domain_sid in r.stdout, r.stdout
        # rpcclient's command line takes a backslash as an escape: the name in the domain's
        # account@DOMAIN form.
        r = rpcclient("lookupnames erin@%s" % DOMAIN)
        assert "erin@%s %s (User: 1)" % (DOMAIN, dc.sid) in r.stdout, r.stdout
    finally:
        stop(server)


def test_a_wrong_password_is_refused(dc, tmp_path):
    server = member(dc, tmp_path)
    try:
        r = smbclient(server, "erin", "not-" + PASSWORD, "ls")
        assert r.returncode != 0
        assert "NT_STATUS_LOGON_FAILURE" in r.stdout, r.stdout
        # The right password still works after the refusal: the channel is reused.
        r = smbclient(server, "erin", PASSWORD, "ls")
        assert r.returncode == 0, r.stdout
    finally:
        stop(server)


def test_a_dc_that_does_not_answer_fails_in_bounded_time(dc, tmp_path):
    # A listener that accepts and never answers, where the endpoint mapper would be.
    silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    silent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    silent.bind(("127.0.0.51", 135))
    silent.listen(16)
    try:
        server = member(dc, tmp_path, address="127.0.0.51")
        try:
            started = time.monotonic()
            r = smbclient(server, "erin", PASSWORD, "ls")
            took = time.monotonic() - started
            assert r.returncode != 0
            assert "NT_STATUS_LOGON_FAILURE" in r.stdout, r.stdout
            assert took < 60, took
            assert "not checked" in server.log.read_text()
        finally:
            stop(server)
    finally:
        silent.close()
