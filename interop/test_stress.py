"""Issue 5, check 4: 64 connections opening, locking, watching and cancelling at random, half of
them dropping their connection without logging off; afterwards the server's session, tree
connect, open and byte-range lock tables are empty and its memory has not grown.

Each worker is a real client (Python smbprotocol) on its own connection, reconnecting after each
burst. Two phases of the same load run one after the other: the server's RSS after the second,
once the tables are empty again, may not exceed its RSS after the first by more than a small
allowance (allocator noise), so that state leaked per connection, open, lock or pending request
shows up as growth.
"""

import json
import random
import threading
import time
import traceback

import pytest

from smbprotocol.exceptions import SMBResponseException
from smbprotocol.change_notify import ChangeNotifyFlags, CompletionFilter, FileSystemWatcher
from smbprotocol.open import (CreateDisposition, CreateOptions, DirectoryAccessMask, FileAttributes,
                              FilePipePrinterAccessMask, ImpersonationLevel, LockFlags, Open, ShareAccess,
                              SMB2LockElement)

from conftest import start_smb3d, stop
from smb2raw import rss_kib
from smbprotocol_client import connect

STATUS_LOCK_NOT_GRANTED = 0xC0000055
STATUS_FILE_LOCK_CONFLICT = 0xC0000054
CONNECTIONS = 64
PHASE_SECONDS = 12
FILES = 8
SHARE_ALL = ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE | ShareAccess.FILE_SHARE_DELETE
# Memory the second phase may add over the first (allocator arenas settling, caches).
ALLOWANCE_KIB = 8 * 1024


def status(server):
    return json.loads(server.ctl("status", "--json").stdout)


def open_file(tree, rng):
    handle = Open(tree, "stress\\f%d.dat" % rng.randrange(FILES))
    handle.create(ImpersonationLevel.Impersonation,
                  FilePipePrinterAccessMask.GENERIC_READ | FilePipePrinterAccessMask.GENERIC_WRITE,
                  FileAttributes.FILE_ATTRIBUTE_NORMAL, SHARE_ALL, CreateDisposition.FILE_OPEN_IF,
                  CreateOptions.FILE_NON_DIRECTORY_FILE)
    return handle


def lock_element(rng, wait):
    element = SMB2LockElement()
    element["offset"] = rng.randrange(16) * 4096
    element["length"] = 4096
    flags = LockFlags.SMB2_LOCKFLAG_EXCLUSIVE_LOCK
    element["flags"] = flags if wait else flags | LockFlags.SMB2_LOCKFLAG_FAIL_IMMEDIATELY
    return element


def cancel(request):
    """Sends a CANCEL. The request may have completed meanwhile (another worker changed the
    directory or released the range): smbprotocol then no longer knows it and raises KeyError."""
    try:
        request.cancel()
    except KeyError:
        pass


def burst(tree, rng):
    """A few random operations; returns what is left open (handles and requests)."""
    kept = []
    for _ in range(rng.randint(1, 6)):
        op = rng.randrange(5)
        if op == 0:
            handle = open_file(tree, rng)
            kept.append(handle)
            try:
                handle.write(b"s" * rng.randint(1, 8192), rng.randrange(16) * 4096)
            except SMBResponseException as e:  # the range is locked by another worker
                assert e.status == STATUS_FILE_LOCK_CONFLICT, e
        elif op == 1:
            handle = open_file(tree, rng)
            try:
                handle.lock([lock_element(rng, wait=False)])
            except SMBResponseException as e:  # another worker holds the range
                assert e.status == STATUS_LOCK_NOT_GRANTED, e
            kept.append(handle)
        elif op == 2:
            # A blocking lock, cancelled or left waiting.
            handle = open_file(tree, rng)
            message, _ = handle.lock([lock_element(rng, wait=True)], send=False)
            request = tree.session.connection.send(message, tree.session.session_id, tree.tree_connect_id)
            if rng.random() < 0.5:
                cancel(request)
            kept.append(handle)
        elif op == 3:
            directory = Open(tree, "stress")
            directory.create(ImpersonationLevel.Impersonation, DirectoryAccessMask.FILE_LIST_DIRECTORY,
                             FileAttributes.FILE_ATTRIBUTE_DIRECTORY, SHARE_ALL, CreateDisposition.FILE_OPEN_IF,
                             CreateOptions.FILE_DIRECTORY_FILE)
            watcher = FileSystemWatcher(directory)
            watcher.start(CompletionFilter.FILE_NOTIFY_CHANGE_FILE_NAME | CompletionFilter.FILE_NOTIFY_CHANGE_SIZE,
                          flags=ChangeNotifyFlags.SMB2_WATCH_TREE)
            if rng.random() < 0.5:
                cancel(watcher)
            kept.append(directory)
        elif kept:
            # Close something opened before (which completes its pending requests).
            try:
                kept.pop(rng.randrange(len(kept))).close()
            except Exception:
                pass
    return kept


def worker(server, seed, stop_at, errors, sessions):
    rng = random.Random(seed)
    while time.monotonic() < stop_at:
        sessions.append(seed)
        try:
            conn, _, tree = connect(server)
        except Exception as e:
            errors.append("connect: %r" % e)
            return
        try:
            burst(tree, rng)
        except Exception:
            errors.append("burst: " + traceback.format_exc())
        # Half of the connections go without a LOGOFF, leaving their opens, locks and
        # requests for the server to clean up.
        try:
            conn.disconnect(close=rng.random() < 0.5, timeout=5)
        except Exception:
            conn.disconnect(close=False)


def run_phase(server, seed):
    errors, sessions = [], []
    stop_at = time.monotonic() + PHASE_SECONDS
    threads = [threading.Thread(target=worker, args=(server, seed * 1000 + i, stop_at, errors, sessions))
               for i in range(CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PHASE_SECONDS + 120)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    assert not errors, "%d errors, the first:\n%s" % (len(errors), errors[0])
    print("phase %d: %d sessions on %d connections at once" % (seed, len(sessions), CONNECTIONS))
    # Every worker came back for more than one burst.
    assert len(sessions) >= 2 * CONNECTIONS


def wait_for_empty_tables(server):
    deadline = time.monotonic() + 20
    while True:
        report = status(server)
        left = {k: len(report.get(k) or {}) for k in ("sessions", "tcons", "open_files", "byte_range_locks")}
        if not any(left.values()):
            return
        assert time.monotonic() < deadline, "tables not empty after the clients left: %s" % left
        time.sleep(0.2)


@pytest.fixture
def smb3d(tmp_path):
    # All clients come from 127.0.0.1, whose connections are limited to 32 by default.
    server = start_smb3d(tmp_path, extra_config="[limits]\nmax_connections_per_address = %d\n" % (4 * CONNECTIONS))
    yield server
    stop(server)


def test_tables_return_to_zero_and_memory_stays_flat(smb3d):
    (smb3d.share_dir / "stress").mkdir()
    smb3d.own(smb3d.share_dir / "stress")
    run_phase(smb3d, 1)
    wait_for_empty_tables(smb3d)
    after_first = rss_kib(smb3d.proc.pid)
    run_phase(smb3d, 2)
    wait_for_empty_tables(smb3d)
    after_second = rss_kib(smb3d.proc.pid)
    print("RSS after phase 1: %d KiB, after phase 2: %d KiB" % (after_first, after_second))
    assert after_second <= after_first + ALLOWANCE_KIB, \
        "RSS grew from %d to %d KiB between two equal phases" % (after_first, after_second)
    assert smb3d.alive()
