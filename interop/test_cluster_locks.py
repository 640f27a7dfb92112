"""Byte-range locks across cluster nodes (issue 18 item 3): two smb3d processes on two ports of
127.0.0.1 serve one directory as one share, with one etcd; a Python smbprotocol client on each.
A lock taken through one node refuses a conflicting lock through the other
(STATUS_LOCK_NOT_GRANTED) while shared locks coexist; a blocking lock through one node waits
(STATUS_PENDING) and completes when the other node's client unlocks or its node is killed; a
WRITE through one node
under the other node's exclusive lock is refused with STATUS_FILE_LOCK_CONFLICT.

The share has `posix_locking = false`: on one host's directory the kernel's fcntl locks would
carry SMB locks between the two processes by themselves, which a cluster file system need not
do (and which would hide the cluster's own mechanism from these tests)."""

import threading
import time

import pytest
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.open import LockFlags, SMB2LockElement

from test_cluster_opens import NODE_TTL, READ_WRITE, cluster_nodes, SHARE_ALL, open_file, tree_of

STATUS_LOCK_NOT_GRANTED = 0xC0000055
STATUS_FILE_LOCK_CONFLICT = 0xC0000054
EXCLUSIVE = LockFlags.SMB2_LOCKFLAG_EXCLUSIVE_LOCK
SHARED = LockFlags.SMB2_LOCKFLAG_SHARED_LOCK
NOW = LockFlags.SMB2_LOCKFLAG_FAIL_IMMEDIATELY
UNLOCK = LockFlags.SMB2_LOCKFLAG_UNLOCK
# How long a node's watch may take to learn another node's lock on a loaded machine.
WATCH_DELAY = 10


def element(offset, length, flags):
    lock = SMB2LockElement()
    lock["offset"] = offset
    lock["length"] = length
    lock["flags"] = flags
    return lock


def lock_status(handle, offset, length, flags):
    try:
        handle.lock([element(offset, length, flags)])
        return 0
    except SMBResponseException as e:
        return e.status


def write_status(handle, data, offset):
    try:
        handle.write(data, offset)
        return 0
    except SMBResponseException as e:
        return e.status


@pytest.fixture
def two_nodes(tmp_path):
    # Without posix_locking: both nodes lock one local directory here, and the kernel's locks
    # would connect them where a cluster file system need not.
    with cluster_nodes(tmp_path, posix_locking=False) as nodes:
        yield nodes


@pytest.fixture
def two_handles(two_nodes):
    n1, n2 = two_nodes
    conn1, tree1 = tree_of(n1)
    conn2, tree2 = tree_of(n2)
    try:
        h1 = open_file(tree1, "locked.bin", READ_WRITE, SHARE_ALL)
        h2 = open_file(tree2, "locked.bin", READ_WRITE, SHARE_ALL)
        yield h1, h2
    finally:
        for conn in (conn1, conn2):
            try:
                conn.disconnect()
            except Exception:  # a killed node's connection
                pass


def test_a_lock_through_one_node_refuses_a_conflicting_lock_through_the_other(two_handles):
    h1, h2 = two_handles
    assert lock_status(h1, 0, 10, EXCLUSIVE | NOW) == 0
    assert lock_status(h2, 5, 1, EXCLUSIVE | NOW) == STATUS_LOCK_NOT_GRANTED
    assert lock_status(h2, 9, 1, SHARED | NOW) == STATUS_LOCK_NOT_GRANTED
    assert lock_status(h2, 10, 10, EXCLUSIVE | NOW) == 0
    # The other way round.
    assert lock_status(h1, 15, 1, SHARED | NOW) == STATUS_LOCK_NOT_GRANTED
    # Shared locks of both nodes coexist, and an exclusive one meets them.
    assert lock_status(h1, 100, 10, SHARED | NOW) == 0
    assert lock_status(h2, 105, 10, SHARED | NOW) == 0
    assert lock_status(h1, 108, 1, EXCLUSIVE | NOW) == STATUS_LOCK_NOT_GRANTED
    # An unlock through node 1 frees the range for node 2's client.
    assert lock_status(h1, 0, 10, UNLOCK) == 0
    assert lock_status(h2, 5, 1, EXCLUSIVE | NOW) == 0
    # A close releases every lock of the open.
    assert lock_status(h1, 0, 100, EXCLUSIVE | NOW) == STATUS_LOCK_NOT_GRANTED
    h2.close()
    assert lock_status(h1, 0, 100, EXCLUSIVE | NOW) == 0


def test_a_blocking_lock_completes_when_the_other_node_s_client_unlocks(two_handles):
    h1, h2 = two_handles
    assert lock_status(h1, 0, 10, EXCLUSIVE | NOW) == 0
    outcome = {}

    def wait_for_lock():
        outcome["status"] = lock_status(h2, 0, 10, EXCLUSIVE)

    waiter = threading.Thread(target=wait_for_lock, daemon=True)
    waiter.start()
    waiter.join(2)
    assert waiter.is_alive(), "the blocking lock was answered while node 1 holds the range: %r" % outcome
    unlocked = time.monotonic()
    assert lock_status(h1, 0, 10, UNLOCK) == 0
    waiter.join(WATCH_DELAY)
    assert not waiter.is_alive(), "the blocking lock was not granted after node 1's unlock"
    assert outcome["status"] == 0
    assert time.monotonic() - unlocked < WATCH_DELAY
    # Node 2's client holds it now: node 1's is refused.
    assert lock_status(h1, 0, 1, SHARED | NOW) == STATUS_LOCK_NOT_GRANTED


def test_a_write_under_the_other_node_s_exclusive_lock_is_refused(two_handles):
    h1, h2 = two_handles
    h1.write(b"0123456789", 0)
    assert lock_status(h1, 0, 10, EXCLUSIVE | NOW) == 0
    # Node 2 learns the lock through its etcd watch, not by asking etcd on each WRITE.
    deadline = time.monotonic() + WATCH_DELAY
    while write_status(h2, b"x", 5) == 0:
        assert time.monotonic() < deadline, "node 2's WRITE went through node 1's exclusive lock"
        time.sleep(0.05)
    assert write_status(h2, b"x", 5) == STATUS_FILE_LOCK_CONFLICT
    with pytest.raises(SMBResponseException) as caught:
        h2.read(0, 10)
    assert caught.value.status == STATUS_FILE_LOCK_CONFLICT
    # Outside the range, and for the lock's holder, I/O goes on.
    assert write_status(h2, b"y", 20) == 0
    assert write_status(h1, b"z", 5) == 0
    assert lock_status(h1, 0, 10, UNLOCK) == 0
    deadline = time.monotonic() + WATCH_DELAY
    while write_status(h2, b"x", 5) != 0:
        assert time.monotonic() < deadline, "node 2 still refuses WRITE after node 1's unlock"
        time.sleep(0.05)


def test_a_blocking_lock_completes_when_the_holder_s_node_is_killed(two_nodes, two_handles):
    n1, _ = two_nodes
    h1, h2 = two_handles
    assert lock_status(h1, 0, 10, EXCLUSIVE | NOW) == 0
    outcome = {}

    def wait_for_lock():
        outcome["status"] = lock_status(h2, 0, 10, EXCLUSIVE)

    waiter = threading.Thread(target=wait_for_lock, daemon=True)
    waiter.start()
    waiter.join(1)
    assert waiter.is_alive(), "the blocking lock was answered while node 1 holds the range: %r" % outcome
    n1.proc.kill()
    n1.proc.wait(10)
    waiter.join(NODE_TTL + 20)
    assert not waiter.is_alive(), "the blocking lock outlived the killed node's lease"
    assert outcome["status"] == 0
