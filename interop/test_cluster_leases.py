"""Oplock and lease breaks across cluster nodes (issue 18 item 3): two smb3d processes serving one
directory with one etcd, a Python smbprotocol client on each. A batch oplock and an RWH lease held
through node 1 are broken when node 2's client opens the file: the break arrives at node 1's
client, node 2's CREATE completes only after the acknowledgment, with the level MS-SMB2 gives (level
II, RH); a holder whose client goes away without answering releases the waiting open at once (a client
that stays and never answers holds it for the 35 s break timeout, which no setting shortens: not
tested here, for CI's time).

The share is a general cluster share (`scale_out = false`), whose SMB 3 clients get one
server's caching; on a scale-out share (the default) they get MS-SMB2's scale-out grants, level II
for a batch oplock and read caching of an RWH lease, which the last test checks.

Breaks are caught as in test_two_clients.py."""

import struct
import threading
import uuid

import pytest
from smbprotocol.open import CreateDisposition, RequestedOplockLevel

from test_cluster_opens import cluster_nodes, tree_of
from test_kernel_oplocks import ack_oplock
from test_two_clients import (R, H, W, LeaseBreakAck, granted_lease_state, lease_context, listen_for_break,
                              open_file)

BATCH = RequestedOplockLevel.SMB2_OPLOCK_LEVEL_BATCH
LEVEL_II = RequestedOplockLevel.SMB2_OPLOCK_LEVEL_II
LEASE = RequestedOplockLevel.SMB2_OPLOCK_LEVEL_LEASE


@pytest.fixture
def two_nodes(tmp_path):
    with cluster_nodes(tmp_path, scale_out=False) as nodes:
        yield nodes


def open_in_background(tree, name, contexts=None, oplock=RequestedOplockLevel.SMB2_OPLOCK_LEVEL_NONE):
    """Starts an open of `name` on a thread; returns the thread and the dict its result goes to."""
    opened = {}

    def run():
        try:
            opened["handle"], opened["contexts"] = open_file(tree, name, CreateDisposition.FILE_OPEN, contexts, oplock)
        except Exception as e:  # reported by the test
            opened["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, opened


def finished(thread, opened, timeout=10):
    thread.join(timeout)
    assert not thread.is_alive(), "the open on node 2 still waits"
    assert "error" not in opened, opened.get("error")
    return opened["handle"]


def test_a_batch_oplock_on_one_node_is_broken_by_an_open_through_the_other(two_nodes):
    n1, n2 = two_nodes
    conn1, tree1 = tree_of(n1)
    conn2, tree2 = tree_of(n2)
    try:
        holder, _ = open_file(tree1, "batch.dat", CreateDisposition.FILE_OVERWRITE_IF, oplock=BATCH)
        assert holder.oplock_level == BATCH
        holder.write(b"cached on node 1", 0)
        listener = listen_for_break(conn1)
        thread, opened = open_in_background(tree2, "batch.dat", oplock=BATCH)
        assert listener.response_event.wait(10), "node 1's client got no oplock break"
        structure_size, level = struct.unpack_from("<HB", listener.response["data"].get_value())
        assert structure_size == 24 and level == LEVEL_II
        thread.join(1)
        assert thread.is_alive(), "node 2's open completed before the break was acknowledged"
        holder.write(b"!", 16)
        ack_oplock(conn1, tree1, holder, LEVEL_II)
        other = finished(thread, opened)
        # Beside node 1's level II oplock a batch request gets level II too.
        assert other.oplock_level == LEVEL_II
        assert other.read(0, 17) == b"cached on node 1!"
        other.close()
        holder.close()
    finally:
        conn1.disconnect()
        conn2.disconnect()


def test_an_rwh_lease_on_one_node_is_broken_by_an_open_through_the_other(two_nodes):
    n1, n2 = two_nodes
    conn1, tree1 = tree_of(n1)
    conn2, tree2 = tree_of(n2)
    try:
        key = uuid.uuid4().bytes
        holder, contexts = open_file(tree1, "leased.txt", CreateDisposition.FILE_OVERWRITE_IF,
                                     [lease_context(key, R | W | H)], LEASE)
        assert granted_lease_state(contexts) == R | W | H
        listener = listen_for_break(conn1)
        thread, opened = open_in_background(tree2, "leased.txt", [lease_context(uuid.uuid4().bytes, R | W | H)],
                                            LEASE)
        assert listener.response_event.wait(10), "node 1's client got no lease break"
        notification = listener.response["data"].get_value()
        _, _, flags = struct.unpack_from("<HHI", notification)
        current, new = struct.unpack_from("<II", notification, 24)
        assert notification[8:24] == key and flags & 1, "the break must ask for an acknowledgment"
        assert (current, new) == (R | W | H, R | H)
        thread.join(1)
        assert thread.is_alive(), "node 2's open completed before the break was acknowledged"
        holder.write(b"written under the lease", 0)
        ack = LeaseBreakAck()
        ack["lease_key"] = key
        ack["lease_state"] = R | H
        conn1.receive(conn1.send(ack, sid=tree1.session.session_id, tid=tree1.tree_connect_id))
        other = finished(thread, opened)
        # Two opens on two nodes share read and handle caching, and neither caches writes.
        assert granted_lease_state(opened["contexts"]) == R | H
        assert other.read(0, 23) == b"written under the lease"
        other.close()
        holder.close()
    finally:
        conn1.disconnect()
        conn2.disconnect()


def test_a_holder_whose_client_leaves_without_answering_releases_the_waiting_open(two_nodes):
    n1, n2 = two_nodes
    conn1, tree1 = tree_of(n1)
    conn2, tree2 = tree_of(n2)
    try:
        holder, _ = open_file(tree1, "gone.dat", CreateDisposition.FILE_OVERWRITE_IF, oplock=BATCH)
        assert holder.oplock_level == BATCH
        listener = listen_for_break(conn1)
        thread, opened = open_in_background(tree2, "gone.dat", oplock=BATCH)
        assert listener.response_event.wait(10), "node 1's client got no oplock break"
        thread.join(1)
        assert thread.is_alive()
        # The client goes without acknowledging: its open closes, and with it the wait (not the
        # 35 s break timeout).
        conn1.disconnect()
        other = finished(thread, opened, timeout=10)
        # Node 2 judged its caching beside the holder's open as broken to level II.
        assert other.oplock_level == LEVEL_II
        other.close()
    finally:
        conn2.disconnect()


def test_smb3_clients_of_a_scale_out_share_get_level_ii_and_read_caching_only(tmp_path):
    with cluster_nodes(tmp_path) as (n1, _):
        conn, tree = tree_of(n1)
        try:
            # MS-SMB2 3.3.5.9: a batch oplock asked of a scale-out share is level II.
            handle, _ = open_file(tree, "so.dat", CreateDisposition.FILE_OVERWRITE_IF, oplock=BATCH)
            assert handle.oplock_level == LEVEL_II
            handle.close()
            # 3.3.5.9.8: a lease keeps only its read caching.
            handle, contexts = open_file(tree, "so.txt", CreateDisposition.FILE_OVERWRITE_IF,
                                         [lease_context(uuid.uuid4().bytes, R | W | H)], LEASE)
            assert granted_lease_state(contexts) == R
            handle.close()
        finally:
            conn.disconnect()
