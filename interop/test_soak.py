"""Issue 22 item 6 in CI: the soak of interop/soak.py for 5 minutes (60 for the record in
docs/reliability.md): 200 connections of smbprotocol, smbclient and smbtorture, no error, RSS
flat after warm-up, descriptors back to the baseline, no warning in the log."""

import threading
import time

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


def test_freed_memory_goes_back_to_the_system_after_a_burst(tmp_path):
    """With the heaps' trim threshold at 64 MiB (src/allocator.rs), glibc kept every page it
    had ever used, and RSS ratcheted up through the hour-long soak while the memory in use
    stayed flat (docs/reliability.md, item 6): once a minute the server gives free pages back,
    so after a burst of 256 KiB writes the heaps' RSS gives back at least a quarter of what the
    burst added (before, none of it: 2,404 KiB still held 90 s later). What stays is in the
    threads' caches and under live chunks: 45 to 60 % came back in runs here."""
    server = start_smb3d(tmp_path)
    try:
        time.sleep(1)
        before = soak.heap_rss_kib(server.proc.pid)
        busy(server, clients=24, rounds=10)
        peak = soak.heap_rss_kib(server.proc.pid)
        # 2.4 MiB on a quiet machine, 1.7 in a loaded CI run.
        assert peak - before > 1024, "the burst added too little to tell (%d to %d KiB)" % (before, peak)
        goal = peak - (peak - before) // 4
        deadline = time.monotonic() + 90
        now = peak
        while time.monotonic() < deadline and now > goal:
            time.sleep(2)
            now = soak.heap_rss_kib(server.proc.pid)
        assert now <= goal, "heaps' RSS %d KiB before the burst, %d after it, %d 90 s later" % (before, peak, now)
    finally:
        stop(server)
