"""Issue 23 item 11: byte-range locks shared with local processes (`posix_locking`, Samba's
`posix locking`). A local process's fcntl lock stops an SMB client's locks, reads and writes
with the status Windows gives, and an SMB client's locks are fcntl locks the local process
meets, kept right when the client's locks stack and one of them goes."""

import errno
import fcntl
import os
import threading

import pytest
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.open import LockFlags, SMB2LockElement

from conftest import start_smb3d, stop
from smbprotocol_client import connect, create

STATUS_LOCK_NOT_GRANTED = 0xC0000055
STATUS_FILE_LOCK_CONFLICT = 0xC0000054
SHARED, EXCLUSIVE = LockFlags.SMB2_LOCKFLAG_SHARED_LOCK, LockFlags.SMB2_LOCKFLAG_EXCLUSIVE_LOCK
NOW, UNLOCK = LockFlags.SMB2_LOCKFLAG_FAIL_IMMEDIATELY, LockFlags.SMB2_LOCKFLAG_UNLOCK


def element(offset, length, flags):
    e = SMB2LockElement()
    e["offset"], e["length"], e["flags"] = offset, length, flags
    return e


def smb_lock(handle, offset, length, flags):
    """The status of a LOCK of one range, as a number (0 for success)."""
    try:
        handle.lock([element(offset, length, flags)])
        return 0
    except SMBResponseException as e:
        return e.status


def smb_io(handle, offset, write):
    try:
        if write:
            handle.write(b"x", offset)
        else:
            handle.read(offset, 1)
        return 0
    except SMBResponseException as e:
        return e.status


def local_may_lock(path, offset, length, exclusive):
    """Whether a local process gets an fcntl lock of the range now (taken and let go)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB, length, offset)
        return True
    except OSError as e:
        assert e.errno in (errno.EAGAIN, errno.EACCES), e
        return False
    finally:
        # Closing any descriptor of the file lets go of this process's locks on it.
        os.close(fd)


@pytest.fixture(params=[True, False], ids=["posix_locking", "without"])
def server(request, tmp_path):
    share = tmp_path / "share"
    share.mkdir()
    server = start_smb3d(tmp_path, shares={"share": {"path": str(share), "posix_locking": request.param}})
    server.posix_locking = request.param
    yield server
    stop(server)


def test_a_local_lock_stops_smb_locks_reads_and_writes(server):
    conn, _, tree = connect(server)
    try:
        handle = create(tree, "local.dat")
        handle.write(b"0123456789" * 4, 0)
        fd = os.open(server.share_dir / "local.dat", os.O_RDWR)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 10, 0)
            fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 10, 20)
            stopped = {
                "exclusive lock": smb_lock(handle, 5, 1, EXCLUSIVE | NOW),
                "shared lock": smb_lock(handle, 9, 2, SHARED | NOW),
                "read": smb_io(handle, 3, write=False),
                "write": smb_io(handle, 3, write=True),
                "exclusive lock over a read lock": smb_lock(handle, 25, 1, EXCLUSIVE | NOW),
                "write over a read lock": smb_io(handle, 25, write=True),
            }
            free = {
                "shared lock over a read lock": smb_lock(handle, 25, 1, SHARED | NOW),
                "read of a read lock": smb_io(handle, 21, write=False),
                "lock beside": smb_lock(handle, 12, 8, EXCLUSIVE | NOW),
            }
        finally:
            os.close(fd)
        assert set(free.values()) == {0}, free
        if server.posix_locking:
            assert stopped == {
                "exclusive lock": STATUS_LOCK_NOT_GRANTED,
                "shared lock": STATUS_LOCK_NOT_GRANTED,
                "read": STATUS_FILE_LOCK_CONFLICT,
                "write": STATUS_FILE_LOCK_CONFLICT,
                "exclusive lock over a read lock": STATUS_LOCK_NOT_GRANTED,
                "write over a read lock": STATUS_FILE_LOCK_CONFLICT,
            }
        else:
            assert set(stopped.values()) == {0}, stopped
        # The local process is gone: its ranges lock.
        assert smb_lock(handle, 0, 1, EXCLUSIVE | NOW) == 0
        handle.close()
    finally:
        conn.disconnect()


def test_smb_locks_are_fcntl_locks_a_local_process_meets(server):
    path = server.share_dir / "smb.dat"
    on = server.posix_locking
    conn, _, tree = connect(server)
    try:
        handle = create(tree, "smb.dat")
        handle.write(b"\0" * 64, 0)
        assert smb_lock(handle, 0, 10, EXCLUSIVE | NOW) == 0
        # Stacked on the open's own exclusive lock and overlapping it: bytes 5..9 hold both.
        assert smb_lock(handle, 5, 10, SHARED | NOW) == 0
        assert local_may_lock(path, 2, 1, exclusive=False) is not on
        assert local_may_lock(path, 12, 1, exclusive=False)
        assert local_may_lock(path, 12, 1, exclusive=True) is not on
        assert local_may_lock(path, 30, 10, exclusive=True)
        # Unlocking the exclusive lock leaves the shared one whole: POSIX would have dropped
        # bytes 5..9 with it.
        assert smb_lock(handle, 0, 10, UNLOCK) == 0
        assert local_may_lock(path, 0, 5, exclusive=True)
        assert local_may_lock(path, 7, 1, exclusive=False)
        assert local_may_lock(path, 7, 1, exclusive=True) is not on
        # A second shared lock of the same range, then one unlock: still locked.
        assert smb_lock(handle, 5, 10, SHARED | NOW) == 0
        assert smb_lock(handle, 5, 10, UNLOCK) == 0
        assert local_may_lock(path, 14, 1, exclusive=True) is not on
        assert smb_lock(handle, 40, 4, EXCLUSIVE | NOW) == 0
        # Closing lets go of everything.
        handle.close()
        assert local_may_lock(path, 0, 64, exclusive=True)
    finally:
        conn.disconnect()


def test_a_blocking_smb_lock_waits_for_the_local_process(server):
    if not server.posix_locking:
        pytest.skip("nothing to wait for")
    conn, _, tree = connect(server)
    try:
        handle = create(tree, "wait.dat")
        fd = os.open(server.share_dir / "wait.dat", os.O_RDWR)
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        outcome = []
        waiter = threading.Thread(target=lambda: outcome.append(smb_lock(handle, 0, 1, EXCLUSIVE)))
        waiter.start()
        waiter.join(1.5)
        assert waiter.is_alive() and not outcome, "the lock did not wait: %r" % outcome
        os.close(fd)
        waiter.join(10)
        assert outcome == [0]
        assert not local_may_lock(server.share_dir / "wait.dat", 0, 1, exclusive=False)
        handle.close()
    finally:
        conn.disconnect()
