"""Issue 9: the audit option logs opens, renames and deletes with user, client address, share and
path at the `audit` target, in readable or JSON lines; shares may opt out."""

import json

import pytest

from conftest import start_smb3d, stop


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
