"""Issue 22 item 6 in CI: the soak of interop/soak.py for 5 minutes (60 for the record in
docs/reliability.md): 200 connections of smbprotocol, smbclient and smbtorture, no error, RSS
flat after warm-up, descriptors back to the baseline, no warning in the log."""

import soak


def test_five_minutes_of_mixed_clients(tmp_path):
    summary = soak.run(5, tmp_path)
    print(summary)
    assert all(summary["ops"].values()), "a kind of client did nothing: %s" % summary["ops"]
