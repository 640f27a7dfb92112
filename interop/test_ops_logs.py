"""Issue 9: the audit option logs opens, renames and deletes with user, client address, share and
path at the `audit` target, in readable or JSON lines; shares may opt out. Issue 16: the user
is the account that was proven, the domain the client claimed is apart and marked so, and
nothing a client chooses reaches a log line unescaped."""

import json
import os
import re
import subprocess

import pytest
from smbprotocol.open import CreateOptions

from conftest import BINARY, interop_uid, start_smb3d, stop
from smbprotocol_client import BIDI_NAME, FORGING_DOMAIN, FORGING_STREAM, connect_claiming, create, unshowable


@pytest.fixture
def audited(tmp_path):
    (tmp_path / "quiet").mkdir()
    server = start_smb3d(tmp_path, extra_config='audit = true\nlog_format = "json"\n',
                         shares={"share": {"path": str(tmp_path / "share")},
                                 "quiet": {"path": str(tmp_path / "quiet"), "audit": False}})
    yield server
    stop(server)


def audit_events(server):
    events = []
    for line in server.log.read_text(errors="replace").splitlines():
        event = json.loads(line)
        if event.get("target") == "audit":
            events.append(event["fields"])
    return events


def test_opens_renames_and_deletes_are_audited(audited):
    audited.smbclient("put %s a.txt; rename a.txt b.txt; del b.txt; mkdir d; rmdir d" % audited.config)
    audited.smbclient("put %s q.txt; del q.txt" % audited.config, share="quiet")
    events = audit_events(audited)
    for e in events:
        assert e["user"].endswith(audited.user) and e["client"] == "127.0.0.1" and e["share"] == "share", e
    summary = [(e["message"], e["path"], e.get("action"), e.get("to")) for e in events]
    assert ("open", "a.txt", "created", None) in summary, summary
    assert ("rename", "a.txt", None, "b.txt") in summary, summary
    assert ("delete", "b.txt", None, None) in summary, summary
    assert ("open", "d", "created", None) in summary, summary
    assert ("delete", "d", None, None) in summary, summary
    assert not any(e["path"].startswith("q.txt") for e in events), "the quiet share is not audited"


def hostile_work(server):
    """A session claiming FORGING_DOMAIN that creates BIDI_NAME and deletes the stream
    FORGING_STREAM of f.txt."""
    conn, _, tree = connect_claiming(server, FORGING_DOMAIN)
    try:
        create(tree, BIDI_NAME).close()
        create(tree, "f.txt").close()
        create(tree, "f.txt:" + FORGING_STREAM,
               CreateOptions.FILE_NON_DIRECTORY_FILE | CreateOptions.FILE_DELETE_ON_CLOSE).close()
    finally:
        conn.disconnect()


@pytest.mark.parametrize("log_format", ["human", "json"])
def test_client_text_cannot_forge_or_hide_log_lines(tmp_path, log_format):
    server = start_smb3d(tmp_path, extra_config='audit = true\nlog_format = "%s"\n' % log_format)
    try:
        hostile_work(server)
        log = server.log.read_text(errors="replace")
    finally:
        stop(server)
    assert not unshowable(log), log
    lines = log.splitlines()
    if log_format == "human":
        assert all(re.match(r"\d{4}-\d\d-\d\dT", line) for line in lines), log
        # Lines of the audit target itself (the logon audit's lines quote the forged domain, escaped).
        audit = [line for line in lines if re.match(r"\S+\s+INFO audit: ", line)]
        assert audit, log
        # The account proven, never the claimed DOMAIN\user.
        assert all('user="%s"' % server.user in line for line in audit), audit
        assert all('claimed_domain="EV\\\\u{1b}[31mIL\\\\nINFO audit: forged"' in line for line in audit), audit
        return
    events = [json.loads(line) for line in lines]
    audit = [e["fields"] for e in events if e.get("target") == "audit"]
    for fields in audit:
        assert fields["user"] == server.user, fields
        assert fields["claimed_domain"] == "EV\\u{1b}[31mIL\\nINFO audit: forged", fields
        assert not any(unshowable(str(v)) for v in fields.values()), fields
    paths = {(f["message"], f["path"]) for f in audit}
    assert ("open", "evil\\u{202e}txt.exe") in paths, paths
    assert ("delete", "f.txt:\\u{1b}[2J\\u{9b}red\\nINFO audit forged") in paths, paths


def auth_events(server):
    """The logon and tree connect decisions of a JSON-logging server (Samba's auth_audit)."""
    events = []
    for line in server.log.read_text(errors="replace").splitlines():
        event = json.loads(line)
        if event.get("target") == "auth_audit":
            assert event["level"] == "INFO", event
            events.append(event["fields"])
    return events


def test_logons_and_refused_tree_connects_are_logged(tmp_path):
    """Issue 23 item 3: every logon, successful or not, with the user, domain, client address,
    method and reason, and every refused tree connect with its share and reason; no secret."""
    (tmp_path / "closed").mkdir()
    (tmp_path / "far").mkdir()
    server = start_smb3d(tmp_path, extra_config='log_format = "json"\n',
                         shares={"share": {"path": str(tmp_path / "share")},
                                 "closed": {"path": str(tmp_path / "closed"), "invalid_users": ["tester"]},
                                 "far": {"path": str(tmp_path / "far"), "hosts_deny": ["127.0.0.1"]}})
    try:
        off_password = server.add_user("audit-off", interop_uid())
        db = server.config.parent / "users"
        owner = os.stat(db)
        subprocess.run([str(BINARY), "user", "--db", str(db), "disable", "audit-off"], check=True, capture_output=True)
        os.chown(db, owner.st_uid, owner.st_gid)
        assert server.smbclient("ls", "-W", "OFFICE").returncode == 0
        assert server.smbclient("ls", user="%s%%not-it" % server.user, check=False).returncode != 0
        assert server.smbclient("ls", user="no-such-user%secret-guess", check=False).returncode != 0
        assert server.smbclient("ls", user="audit-off%%%s" % off_password, check=False).returncode != 0
        closed = server.smbclient("ls", share="closed", check=False)
        assert closed.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in closed.stdout, closed.stdout
        far = server.smbclient("ls", share="far", check=False)
        assert far.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in far.stdout, far.stdout
        events = auth_events(server)
        logons = [e for e in events if e["message"].startswith("logon")]

        def one(**want):
            found = [e for e in logons if all(e.get(k) == v for k, v in want.items())]
            assert found, (want, logons)
            return found[0]

        ok = one(user=server.user, result="success", domain="OFFICE")
        assert ok["client"] == "127.0.0.1" and ok["auth_method"] == "NTLMSSP", ok
        assert one(user=server.user, result="failure")["reason"].startswith("wrong password"), logons
        assert one(user="no-such-user", result="failure")["reason"] == "unknown user", logons
        assert one(user="audit-off", result="failure")["reason"] == "account disabled", logons
        refused = [e for e in events if e["message"] == "tree connect refused"]
        by_share = {e["share"]: e for e in refused}
        assert by_share["closed"]["user"] == server.user and "user lists" in by_share["closed"]["reason"], refused
        assert by_share["far"]["client"] == "127.0.0.1" and "hosts_allow/hosts_deny" in by_share["far"]["reason"], refused
        assert "share" not in by_share, "the share tester may use is not refused"
        log = server.log.read_text(errors="replace")
        for secret in (server.password, "not-it", "secret-guess", off_password):
            assert secret not in log, secret
    finally:
        stop(server)


def test_refused_home_connects_are_logged(tmp_path):
    """Issue 23 item 4: a connect to someone else's home, and to one's own home that cannot be
    made (a file stands where it would go), are refused tree connects like any other: logged
    with the share name asked for, the user and why."""
    (tmp_path / "homes").mkdir()
    server = start_smb3d(tmp_path, extra_config='log_format = "json"\n', shares={
        "share": {"path": str(tmp_path / "share")},
        "homes": {"path": str(tmp_path / "homes" / "%U"), "create_home": True}})
    try:
        (tmp_path / "homes" / server.user).write_text("not a directory\n")
        other = server.smbclient("ls", share="root", check=False)
        assert other.returncode != 0 and "NT_STATUS_ACCESS_DENIED" in other.stdout, other.stdout
        own = server.smbclient("ls", share=server.user, check=False)
        assert own.returncode != 0 and "NT_STATUS_BAD_NETWORK_NAME" in own.stdout, own.stdout
        refused = {e["share"]: e for e in auth_events(server) if e["message"] == "tree connect refused"}
        assert refused["root"]["user"] == server.user and "another user's home" in refused["root"]["reason"], refused
        assert "cannot be made" in refused[server.user]["reason"], refused
    finally:
        stop(server)


def test_logon_audit_text_lines_escape_what_the_client_chose(tmp_path):
    """The user and domain a client claims reach the readable log escaped: a failed logon
    cannot forge a line."""
    server = start_smb3d(tmp_path, extra_config='log_format = "human"\n')
    try:
        forged = "ev\x1b[31mil"
        assert server.smbclient("ls", user="%s%%x" % forged, check=False).returncode != 0
        lines = [line for line in server.log.read_text(errors="replace").splitlines() if "logon failed" in line]
        assert lines, server.log_tail()
        assert all("\x1b" not in line for line in lines), lines
        assert any('user="ev\\\\u{1b}[31mil"' in line for line in lines), lines
        assert any("client=127.0.0.1" in line and "reason=" in line for line in lines), lines
    finally:
        stop(server)


def test_a_logon_mapped_to_guest_is_logged_as_such(tmp_path):
    """map_to_guest = "bad-user": the unknown name is logged with result "guest"; a known
    user's wrong password is still a failure."""
    (tmp_path / "open").mkdir()
    server = start_smb3d(tmp_path, extra_config='log_format = "json"\nmap_to_guest = "bad-user"\n',
                         shares={"share": {"path": str(tmp_path / "share")},
                                 "open": {"path": str(tmp_path / "open"), "guest_ok": True}})
    try:
        assert server.smbclient("ls", share="open", user="stranger%guess").returncode == 0
        assert server.smbclient("ls", user="%s%%not-it" % server.user, check=False).returncode != 0
        logons = [e for e in auth_events(server) if e["message"].startswith("logon")]
        assert any(e["user"] == "stranger" and e["result"] == "guest" for e in logons), logons
        assert any(e["user"] == server.user and e["result"] == "failure" for e in logons), logons
    finally:
        stop(server)
