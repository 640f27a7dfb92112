"""Issue 8, check 4: the canary test (CVE-2017-2619 class). While a local thread swaps a
directory of the share with a symlink to a directory outside it (atomically, with
renameat2(RENAME_EXCHANGE), as fast as it can), clients open, read, overwrite, create in,
rename into, truncate and list through that directory. The outside directory holds a canary
with the same name as the file inside: no answer may carry the canary's bytes or list the
outside directory, and the outside directory must be byte-for-byte unchanged afterwards."""

import ctypes
import os
import struct
import subprocess
import sys
import threading
import time

import pytest

import secdesc
import smb2raw as s
from conftest import start_smb3d, stop
from hostile_cases import SERVED

RUN_SECONDS = 8.0
INSIDE = b"inside\n"
CANARY = b"canary-outside-the-share\n"
OUTSIDE_ONLY = "only-outside.txt"
RENAME_EXCHANGE = 2
AT_FDCWD = -100


def exchange(a, b):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


@pytest.fixture
def race_server(tmp_path):
    server = start_smb3d(tmp_path)
    share = server.share_dir
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_bytes(CANARY)
    (outside / OUTSIDE_ONLY).write_bytes(CANARY)
    (share / "dir").mkdir()
    (share / "dir" / "target.txt").write_bytes(INSIDE)
    (share / "served.txt").write_bytes(SERVED)
    server.own(share / "dir", share / "dir" / "target.txt", share / "served.txt")
    os.symlink(outside, share / "swap")
    try:
        exchange(share / "dir", share / "swap")
        exchange(share / "dir", share / "swap")
    except (OSError, AttributeError) as e:
        stop(server)
        pytest.skip("renameat2(RENAME_EXCHANGE) unavailable: %s" % e)
    yield server, outside
    stop(server)


def snapshot(directory):
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


def client_loop(target, worker, stop_at, breaches, counts):
    c = s.connect(target)
    n = 0
    while time.time() < stop_at:
        n += 1
        step = n % 6
        try:
            if step == 0:
                r, fid = c.create("dir\\target.txt")
                if fid:
                    r, data = c.read(fid, 0, 4096)
                    if CANARY[:6] in data:
                        breaches.append("read the canary: %r" % data)
                    counts["read"] += r.status == 0
                    c.close_file(fid)
            elif step == 1:
                r, fid = c.create("dir\\target.txt", access=s.READ_WRITE_FILE, disposition=s.FILE_OVERWRITE_IF)
                if fid:
                    c.write(fid, 0, b"overwritten by %d\n" % worker)
                    c.close_file(fid)
                    counts["overwrite"] += 1
            elif step == 2:
                r, fid = c.create("dir\\planted-%d-%d.txt" % (worker, n), access=s.READ_WRITE_FILE,
                                  disposition=s.FILE_CREATE)
                if fid:
                    c.close_file(fid)
                    counts["create"] += 1
            elif step == 3:
                name = "src-%d-%d.txt" % (worker, n)
                r, fid = c.create(name, access=s.READ_WRITE_FILE | 0x00010000, disposition=s.FILE_CREATE)
                if fid:
                    r = c.request(s.SET_INFO, s.set_info_body(fid, 1, 10, s.rename_info("dir\\moved-%d-%d.txt" % (worker, n))))
                    counts["rename"] += r.status == 0
                    c.close_file(fid)
            elif step == 4:
                r, fid = c.create("dir", options=s.FILE_DIRECTORY_FILE)
                if fid:
                    r = c.request(s.QUERY_DIRECTORY, s.query_directory_body(fid, "*", klass=37))
                    if r.status == 0 and s.utf16(OUTSIDE_ONLY) in r.pdu:
                        breaches.append("listed the outside directory")
                    counts["list"] += r.status == 0
                    c.close_file(fid)
            else:
                r, fid = c.create("dir\\target.txt", access=s.READ_WRITE_FILE)
                if fid:
                    r = c.request(s.SET_INFO, s.set_info_body(fid, 1, 20, struct.pack("<Q", 1)))
                    counts["truncate"] += r.status == 0
                    c.close_file(fid)
        except s.Dropped:
            breaches.append("connection dropped")
            return
    c.close()


def test_directory_swap_race_never_reaches_outside(race_server):
    server, outside = race_server
    share = server.share_dir
    target = s.Target(server.port, server.user, server.password)
    before = snapshot(outside)
    stop_at = time.time() + RUN_SECONDS
    swaps = [0]

    def swapper():
        while time.time() < stop_at:
            exchange(share / "dir", share / "swap")
            swaps[0] += 1

    breaches = []
    counts = {k: 0 for k in ("read", "overwrite", "create", "rename", "list", "truncate")}
    threads = [threading.Thread(target=swapper)]
    threads += [threading.Thread(target=client_loop, args=(target, w, stop_at, breaches, counts)) for w in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Leave the real directory in place, whatever the last swap did.
    if (share / "dir").is_symlink():
        exchange(share / "dir", share / "swap")
    print("swaps %d, successful operations through the directory: %s" % (swaps[0], counts))
    assert not breaches, breaches[:5]
    assert snapshot(outside) == before, "the outside directory changed"
    assert swaps[0] > 1000, "the race was not exercised"
    assert counts["read"] > 0 and counts["create"] > 0, "nothing went through the real directory: %s" % counts
    assert server.alive(), server.log_tail()
    assert s.served(target)


SWAPPER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
new, victim, stop_at = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2]), float(sys.argv[3])


def ino(path):
    try:
        return os.lstat(path).st_ino
    except FileNotFoundError:
        return None


swaps = 0
while time.time() < stop_at:
    if libc.renameat2(-100, new, -100, victim, 2) != 0:
        continue
    swaps += 1
    pause = time.perf_counter() + 0.0002
    while time.perf_counter() < pause:
        pass
    while libc.renameat2(-100, new, -100, victim, 2) != 0 and time.time() < stop_at + 1:
        pass
    # Once per directory made: wait for the client to remove it.
    made = ino(new)
    while made is not None and ino(new) == made and time.time() < stop_at:
        pass
print(swaps)
"""


@pytest.mark.skipif(os.getuid() != 0, reason="needs root (the creator must not own the victim)")
def test_directory_swapped_in_for_a_new_one_is_never_taken_for_it(tmp_path):
    """Issue 16 item 3: while a local process exchanges the name of each directory a client
    creates with another user's (root's 0700) directory, between the server's mkdirat and its
    open of what it made, CREATEs of new directories carrying a descriptor that makes the client
    the owner never take that directory for the new one: no listing of it is answered, and its
    owner, mode and ACL stay as they were."""
    server = start_smb3d(tmp_path)
    share = server.share_dir
    victim = share / "victim"
    victim.mkdir()
    (victim / "kept.txt").write_bytes(b"root's\n")
    victim.chmod(0o700)
    before = (os.stat(victim).st_ino, os.stat(victim).st_uid, os.stat(victim).st_mode, os.listxattr(victim))
    owner = "S-1-22-1-%d" % os.stat(share).st_uid
    sd = secdesc.descriptor(owner=owner, dacl=[secdesc.ace(owner, 0x001F01FF)])
    stop_at = time.time() + RUN_SECONDS
    swapper = subprocess.Popen([sys.executable, "-c", SWAPPER, str(share / "new"), str(victim), str(stop_at)],
                               stdout=subprocess.PIPE, text=True)
    breaches, made = [], 0
    try:
        c = s.connect(s.Target(server.port, server.user, server.password))
        while time.time() < stop_at:
            r, fid = c.create("new", access=0x001F01FF, disposition=s.FILE_CREATE,
                              options=s.FILE_DIRECTORY_FILE | 0x1000, contexts=s.create_context(b"SecD", sd))
            if not fid:
                # A refused CREATE leaves the directory it made, under whichever name the swapper
                # left it: remove ours (the victim is not empty, so it stays).
                r, fid = c.create("new", access=0x00010000, options=s.FILE_DIRECTORY_FILE | 0x1000)
                if fid:
                    c.close_file(fid)
                continue
            made += 1
            r = c.request(s.QUERY_DIRECTORY, s.query_directory_body(fid, "*", klass=37))
            if r.status == 0 and s.utf16("kept.txt") in r.pdu:
                breaches.append("listed the swapped-in directory")
            c.close_file(fid)
        c.close()
    finally:
        swaps = int(swapper.communicate(timeout=30)[0] or 0)
        stop(server)
    after = (os.stat(victim).st_ino, os.stat(victim).st_uid, os.stat(victim).st_mode, os.listxattr(victim))
    print("swaps %d, directories made %d" % (swaps, made))
    assert after == before, "the swapped-in directory was changed"
    assert not breaches, "%d times: %s" % (len(breaches), breaches[0])
    assert swaps > 100 and made > 100, "the race was not exercised (%d swaps, %d made)" % (swaps, made)
