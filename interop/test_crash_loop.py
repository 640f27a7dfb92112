"""Issue 22 item 3 in CI: 50 SIGKILLs of smb3d under a client writing data, a stream, DOS
attributes and an ACL (interop/crash_loop.py, which the record in docs/reliability.md runs 500
times)."""

import crash_loop


def test_acknowledged_writes_and_persistent_handles_survive_fifty_kills(tmp_path):
    checked, reclaimed, kills, metadata = crash_loop.run(50, tmp_path, seed=22)
    assert kills == 50
    assert checked > 0 and reclaimed > 0, "no write was acknowledged before a kill: the loop tested nothing"
    assert metadata == reclaimed, "DOS attributes and ACLs were not checked after every restart"
