"""NTLM logons of domain users passed through to the DC (docs/auth.md, MS-NRPC): smb3d, a
member of Samba's AD DC on 127.0.0.50 (interop/addc.py) with the machine password the join
set, asks the DC over a Netlogon secure channel to check the NTLMv2 response of a user who
has no ticket and is in no local user database. The user lists and writes files as the uid
its SID maps to (the same `[idmap]` mapping a PAC gets), with signing keyed by the session
key the DC returned; a wrong password is refused; a DC that does not answer fails the logon
in bounded time."""

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from addc import DOMAIN, HOST, REALM, DomainController, available
from conftest import BINARY, start_smb3d, stop

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


def member(dc, tmp, address="127.0.0.50", shares=None):
    """An smb3d named FILESRV in workgroup SMB3DAD with the machine password in a 0600 file,
    passing NTLM logons of the domain's users to the DC at `address`; `shares` as
    start_smb3d takes them (their directories open to every uid)."""
    secret = tmp / "machine.pw"
    secret.write_text(dc.machine_password + "\n")
    os.chmod(secret, 0o600)
    extra = ('workgroup = "%s"\nserver_name = "FILESRV"\n'
             '\n[auth]\nkeytab = "%s"\nrealm = "%s"\ndc = "%s"\nmachine_password_file = "%s"\n'
             '\n[idmap.%s]\nsid = "%s"\nrange = [%d, %d]\n'
             % (DOMAIN, dc.keytab, REALM, address, secret, DOMAIN, dc.domain_sid, LOW, LOW + 199999))
    for opts in (shares or {}).values():
        Path(opts["path"]).mkdir(parents=True, exist_ok=True)
    server = start_smb3d(tmp, extra_config=extra, shares=shares)
    os.chmod(server.share_dir, 0o777)
    for opts in (shares or {}).values():
        os.chmod(opts["path"], 0o777)
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


class TomlValue:
    """A value start_smb3d writes as it is: a TOML array of basic strings, whose `\\\\` is
    one backslash."""

    def __init__(self, names):
        self.text = json.dumps(names)

    def __str__(self):
        return self.text


def ensure_user(dc, name, groups=()):
    if name not in dc.run_tool("user", "list").stdout.split():
        dc.add_user(name, PASSWORD, groups=groups)
    return dc.sid_of(name)


def kerberos(dc, server, share, ccache, commands="ls"):
    env = dict(dc.env, KRB5CCNAME="FILE:%s" % ccache)
    cmd = ["smbclient", "//%s/%s" % (HOST, share), "-I", "127.0.0.1", "-p", str(server.port),
           "--use-kerberos=required", "--use-krb5-ccache=" + env["KRB5CCNAME"], "-c", commands]
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)


def on_share(server, share, user, password, commands="ls"):
    cmd = ["smbclient", "//127.0.0.1/%s" % share, "-p", str(server.port), "-U", "%s%%%s" % (user, password),
           "--use-kerberos=disabled", "-c", commands]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)


def group_shares(tmp):
    group = "@%s\\Editors" % DOMAIN
    return {"share": {"path": str(tmp / "share")},
            "editors": {"path": str(tmp / "editors"), "valid_users": TomlValue([group])},
            "others": {"path": str(tmp / "others"), "invalid_users": TomlValue([group])}}


def test_a_domain_group_by_name_admits_its_members_only(dc, tmp_path):
    """`valid_users = @SMB3DAD\\Editors` (the group by name, resolved through the DC with
    LsarLookupNames4) admits its member erin with NTLM and with Kerberos and refuses gail, a
    domain user outside it; `invalid_users` naming the group refuses erin and admits gail."""
    ensure_user(dc, "gail")
    server = member(dc, tmp_path, shares=group_shares(tmp_path))
    try:
        r = subprocess.run([str(BINARY), "config", "check", "--config", str(server.config)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert ('note: share editors: valid_users names "@%s\\\\Editors": resolved to its SID through '
                "the DC at 127.0.0.50" % DOMAIN) in r.stderr, r.stderr
        assert "entry refuses every domain user" in r.stderr, r.stderr
        for share, who, admitted in (("editors", "erin", True), ("editors", "gail", False),
                                     ("others", "erin", False), ("others", "gail", True)):
            r = on_share(server, share, "%s\\%s" % (DOMAIN, who), PASSWORD)
            assert (r.returncode == 0) == admitted, (share, who, r.stdout + server.log.read_text()[-3000:])
            assert admitted or "NT_STATUS_ACCESS_DENIED" in r.stdout, r.stdout
        erin, gail = tmp_path / "erin.cc", tmp_path / "gail.cc"
        dc.kinit("erin", PASSWORD, erin)
        dc.kinit("gail", PASSWORD, gail)
        r = kerberos(dc, server, "editors", erin)
        assert r.returncode == 0, r.stdout + server.log.read_text()[-3000:]
        r = kerberos(dc, server, "editors", gail)
        assert r.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in r.stdout, r.stdout
        r = kerberos(dc, server, "others", erin)
        assert r.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in r.stdout, r.stdout
    finally:
        stop(server)


def test_lsarpc_asks_the_dc_for_accounts_no_logon_named(dc, tmp_path):
    """rpcclient lookupsids/lookupnames against smb3d name the group Editors and the user
    hana, whom no logon on this server taught it: smb3d asks the DC (LsarLookupSids3,
    LsarLookupNames4 over the secure channel)."""
    hana = ensure_user(dc, "hana")
    editors = dc.sid_of("Editors")
    server = member(dc, tmp_path)
    try:
        def rpcclient(command):
            cmd = ["rpcclient", "127.0.0.1", "-p", str(server.port), "-U", "%s\\erin%%%s" % (DOMAIN, PASSWORD),
                   "--use-kerberos=disabled", "-c", command]
            return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)

        r = rpcclient("lookupsids %s %s %s-987654" % (editors, hana, dc.domain_sid))
        assert "%s %s\\Editors (2)" % (editors, DOMAIN) in r.stdout, r.stdout + server.log.read_text()[-3000:]
        assert "%s %s\\hana (1)" % (hana, DOMAIN) in r.stdout, r.stdout
        assert "%s-987654 *unknown*" % dc.domain_sid in r.stdout, r.stdout
        r = rpcclient("lookupnames Editors@%s hana@%s nobody-here@%s" % (DOMAIN, DOMAIN, DOMAIN))
        assert "Editors@%s %s (Domain Group: 2)" % (DOMAIN, editors) in r.stdout, r.stdout
        assert "hana@%s %s (User: 1)" % (DOMAIN, hana) in r.stdout, r.stdout
    finally:
        stop(server)


def test_a_dc_that_does_not_answer_closes_the_group_share_only(dc, tmp_path):
    """With the DC's RPC silent, erin (Kerberos: her ticket needs no RPC) is refused on the
    share of `@SMB3DAD\\Editors` and on the share whose invalid_users names it (fail closed),
    in bounded time; the local user still works, and is refused nothing it was not before."""
    silent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    silent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    silent.bind(("127.0.0.51", 135))
    silent.listen(16)
    try:
        server = member(dc, tmp_path, address="127.0.0.51", shares=group_shares(tmp_path))
        try:
            erin = tmp_path / "erin.cc"
            dc.kinit("erin", PASSWORD, erin)
            for share in ("editors", "others"):
                started = time.monotonic()
                r = kerberos(dc, server, share, erin)
                took = time.monotonic() - started
                assert r.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in r.stdout, (share, r.stdout)
                assert took < 60, took
            r = kerberos(dc, server, "share", erin)
            assert r.returncode == 0, r.stdout
            started = time.monotonic()
            for share in ("share", "others"):
                r = on_share(server, share, server.user, server.password)
                assert r.returncode == 0, (share, r.stdout)
            r = on_share(server, "editors", server.user, server.password)
            assert r.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in r.stdout, r.stdout
            assert time.monotonic() - started < 30, "local users do not wait for the DC"
            assert "cannot ask the DC for names" in server.log.read_text()
        finally:
            stop(server)
    finally:
        silent.close()
