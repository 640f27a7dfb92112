"""Issue 9: the audit option logs opens, renames and deletes with user, client address, share and
path at the `audit` target, in readable or JSON lines; shares may opt out. Issue 16: the user
is the account that was proven, the domain the client claimed is apart and marked so, and
nothing a client chooses reaches a log line unescaped."""

import json
import re

import pytest
from smbprotocol.open import CreateOptions

from conftest import start_smb3d, stop
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
        audit = [line for line in lines if " audit: " in line]
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
