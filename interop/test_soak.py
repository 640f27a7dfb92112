"""Issue 22 item 6 in CI: the soak of interop/soak.py for 5 minutes (60 for the record in
docs/reliability.md): 200 connections of smbprotocol, smbclient and smbtorture, no error, RSS
flat after warm-up, descriptors back to the baseline, no warning in the log."""

import threading

import pytest

import smbprotocol_client as spc
import soak
from conftest import start_smb3d, stop


def test_five_minutes_of_mixed_clients(tmp_path):
    summary = soak.run(5, tmp_path)
    print(summary)
    assert all(summary["ops"].values()), "a kind of client did nothing: %s" % summary["ops"]


def busy(server, clients=12, rounds=20):
    """`clients` connections at once, each writing and reading back 256 KiB files, so that the
    runtime's workers and blocking threads all allocate."""
    errors = []

    def work(index):
        try:
            conn, _, tree = spc.connect(server)
            try:
                for turn in range(rounds):
                    data = bytes([index, turn]) * 131072
                    assert spc.write_then_read(tree, "b%d.bin" % index, data) == data
            finally:
                conn.disconnect()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[:3]
    return int(soak.Path("/proc/%d/status" % server.proc.pid).read_text().split("Threads:")[1].split()[0])


@pytest.mark.parametrize("arena_max", [None, "8"])
def test_the_server_threads_share_two_arenas_unless_the_admin_says(tmp_path, monkeypatch, arena_max):
    """glibc's default (8 arenas per core) let RSS grow for an hour with freed memory held in
    each thread's arena (docs/reliability.md, item 6): smb3d limits its threads to two arenas,
    the main one and one more; an administrator's MALLOC_ARENA_MAX is kept."""
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    if arena_max:
        monkeypatch.setenv("MALLOC_ARENA_MAX", arena_max)
    server = start_smb3d(tmp_path)
    try:
        threads = busy(server)
        assert threads > 4, "too few threads (%d) to tell" % threads
        arenas = soak.thread_arenas(server.proc.pid)
        if arena_max:
            assert arenas > 1, "MALLOC_ARENA_MAX=%s was overridden (%d arenas)" % (arena_max, arenas)
        else:
            assert arenas == 1, "%d arenas besides the main one, with %d threads" % (arenas, threads)
    finally:
        stop(server)
