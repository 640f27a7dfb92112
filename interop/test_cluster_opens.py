"""Share modes and delete-pending across cluster nodes (issue 18 items 2-3): two smb3d processes
on two ports of 127.0.0.1, each with its own state_dir, serve one directory as one share, with
one etcd; a Python smbprotocol client on each. An exclusive open through one node keeps the
other node's client out (STATUS_SHARING_VIOLATION) until it closes; a file made delete-pending
through one node takes no new open through the other (STATUS_DELETE_PENDING); a node killed
with SIGKILL takes its opens with it when its etcd lease runs out. A stat open (attributes only,
no caching) is not recorded in etcd: it passes another node's exclusive open and breaks no oplock
there, but meets that node's pending delete through the watch of `files/`."""

import contextlib
import time
import uuid

import pytest
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.file_info import FileInformationClass, InfoType
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, RequestedOplockLevel, ShareAccess)

import smbprotocol_client
from conftest import query_info, start_smb3d, stop
from crash_loop import set_info
from etcd import EtcdCluster
from test_two_clients import UNSOLICITED, listen_for_break
from test_two_clients import open_file as open_shared

STATUS_SHARING_VIOLATION = 0xC0000043
STATUS_DELETE_PENDING = 0xC0000056
READ_ATTRIBUTES = FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES
READ_WRITE = FilePipePrinterAccessMask.FILE_READ_DATA | FilePipePrinterAccessMask.FILE_WRITE_DATA
SHARE_ALL = ShareAccess.FILE_SHARE_READ | ShareAccess.FILE_SHARE_WRITE | ShareAccess.FILE_SHARE_DELETE
NODE_TTL = 2


@contextlib.contextmanager
def cluster_nodes(tmp_path, cluster_options=None, **share_options):
    """Two smb3d nodes ("n1", "n2") of one etcd serving tmp_path/shared as "share";
    `cluster_options` maps a node's name to more lines of its [cluster] section."""
    shared = tmp_path / "shared"
    shared.mkdir()
    with EtcdCluster(tmp_path / "etcd") as etcd:
        nodes = []
        try:
            for name in ("n1", "n2"):
                home = tmp_path / name
                home.mkdir()
                extra = 'state_dir = "%s"\n\n[cluster]\netcd = ["%s"]\nnode = "%s"\nnode_ttl = "%ds"\n' % (
                    home / "state", etcd.endpoints[0], name, NODE_TTL) + (cluster_options or {}).get(name, "")
                share = {"path": str(shared), **share_options}
                node = start_smb3d(home, extra_config=extra, shares={"share": share})
                node.shared = shared
                node.etcd = etcd
                nodes.append(node)
            yield nodes
        finally:
            for node in nodes:
                stop(node)


@pytest.fixture
def two_nodes(tmp_path):
    with cluster_nodes(tmp_path) as nodes:
        yield nodes


def tree_of(node):
    conn, _, tree = smbprotocol_client.connect(node, client_guid=uuid.uuid4())
    return conn, tree


def open_file(tree, name, access, share, disposition=CreateDisposition.FILE_OPEN_IF, options=0):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, access, FileAttributes.FILE_ATTRIBUTE_NORMAL, share,
                  disposition, CreateOptions.FILE_NON_DIRECTORY_FILE | options)
    return handle


def refused(tree, name, access, share):
    with pytest.raises(SMBResponseException) as caught:
        open_file(tree, name, access, share)
    return caught.value.status


def test_an_exclusive_open_on_one_node_keeps_the_other_node_s_clients_out(two_nodes):
    n1, n2 = two_nodes
    conn1, tree1 = tree_of(n1)
    conn2, tree2 = tree_of(n2)
    try:
        exclusive = open_file(tree1, "doc.txt", READ_WRITE, 0)
        exclusive.write(b"one", 0)
        assert refused(tree2, "doc.txt", FilePipePrinterAccessMask.FILE_READ_DATA, SHARE_ALL) \
            == STATUS_SHARING_VIOLATION
        # The other way round too: node 2's reader that shares nothing keeps node 1's writer out
        # once node 1's exclusive open is gone.
        exclusive.close()
        reader = open_file(tree2, "doc.txt", FilePipePrinterAccessMask.FILE_READ_DATA, 0)
        assert reader.read(0, 3) == b"one"
        assert refused(tree1, "doc.txt", READ_WRITE, SHARE_ALL) == STATUS_SHARING_VIOLATION
        # An open for attributes only never conflicts.
        open_file(tree1, "doc.txt", FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES, 0).close()
        reader.close()
        open_file(tree1, "doc.txt", READ_WRITE, 0).close()
    finally:
        conn1.disconnect()
        conn2.disconnect()
    assert n1.alive() and n2.alive()


def test_a_file_delete_pending_through_one_node_takes_no_open_through_the_other(two_nodes):
    n1, n2 = two_nodes
    conn1, tree1 = tree_of(n1)
    conn2, tree2 = tree_of(n2)
    try:
        deleting = open_file(tree1, "gone.txt", FilePipePrinterAccessMask.DELETE | READ_WRITE, SHARE_ALL)
        # FileDispositionInformation, DeletePending = 1 (MS-FSCC 2.4.11).
        set_info(tree1, deleting, InfoType.SMB2_0_INFO_FILE,
                 FileInformationClass.FILE_DISPOSITION_INFORMATION, b"\x01")
        assert refused(tree2, "gone.txt", FilePipePrinterAccessMask.FILE_READ_DATA, SHARE_ALL) \
            == STATUS_DELETE_PENDING
        # Cleared again, the file takes opens again.
        set_info(tree1, deleting, InfoType.SMB2_0_INFO_FILE,
                 FileInformationClass.FILE_DISPOSITION_INFORMATION, b"\x00")
        open_file(tree2, "gone.txt", FilePipePrinterAccessMask.FILE_READ_DATA, SHARE_ALL).close()
        set_info(tree1, deleting, InfoType.SMB2_0_INFO_FILE,
                 FileInformationClass.FILE_DISPOSITION_INFORMATION, b"\x01")
        deleting.close()
        assert not (n1.shared / "gone.txt").exists()
    finally:
        conn1.disconnect()
        conn2.disconnect()


@pytest.mark.parametrize("mark", ["disposition", "delete_on_close"])
def test_delete_pending_outlives_the_marking_open_while_its_node_holds_the_file(two_nodes, mark):
    n1, n2 = two_nodes
    conn1, tree1 = tree_of(n1)
    conn2, tree2 = tree_of(n2)
    name = mark + ".txt"
    try:
        other = open_file(tree1, name, FilePipePrinterAccessMask.FILE_READ_DATA, SHARE_ALL)
        if mark == "disposition":
            marking = open_file(tree1, name, FilePipePrinterAccessMask.DELETE, SHARE_ALL)
            set_info(tree1, marking, InfoType.SMB2_0_INFO_FILE,
                     FileInformationClass.FILE_DISPOSITION_INFORMATION, b"\x01")
        else:
            marking = open_file(tree1, name, FilePipePrinterAccessMask.DELETE, SHARE_ALL,
                                options=CreateOptions.FILE_DELETE_ON_CLOSE)
        marking.close()
        # The file is delete-pending while node 1's other open lasts: for node 2's clients too.
        assert refused(tree2, name, FilePipePrinterAccessMask.FILE_READ_DATA, SHARE_ALL) \
            == STATUS_DELETE_PENDING
        other.close()
        assert not (n1.shared / name).exists()
    finally:
        conn1.disconnect()
        conn2.disconnect()


def test_a_killed_node_s_opens_are_released_with_its_lease(two_nodes):
    n1, n2 = two_nodes
    conn1, tree1 = tree_of(n1)
    conn2, tree2 = tree_of(n2)
    try:
        open_file(tree1, "held.txt", READ_WRITE, 0)
        assert refused(tree2, "held.txt", READ_WRITE, 0) == STATUS_SHARING_VIOLATION
        n1.proc.kill()
        n1.proc.wait(10)
        killed = time.monotonic()
        while True:
            try:
                open_file(tree2, "held.txt", READ_WRITE, 0).close()
                break
            except SMBResponseException as e:
                assert e.status == STATUS_SHARING_VIOLATION
            assert time.monotonic() - killed < NODE_TTL + 20, "the killed node's open outlived its lease"
            time.sleep(0.1)
    finally:
        conn2.disconnect()
        try:
            conn1.disconnect()
        except Exception:
            pass


def listed(tree):
    """The names a listing of the share's root shows."""
    root = Open(tree, "")
    root.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.FILE_READ_DATA,
                FileAttributes.FILE_ATTRIBUTE_DIRECTORY, SHARE_ALL, CreateDisposition.FILE_OPEN,
                CreateOptions.FILE_DIRECTORY_FILE)
    try:
        return {e["file_name"].get_value().decode("utf-16-le")
                for e in root.query_directory("*", FileInformationClass.FILE_DIRECTORY_INFORMATION)}
    finally:
        root.close()


def delete_pending(handle):
    """FileStandardInformation.DeletePending of `handle` (MS-FSCC 2.4.41: the byte at 20)."""
    return query_info(handle, InfoType.SMB2_0_INFO_FILE, FileInformationClass.FILE_STANDARD_INFORMATION, 24)[20] == 1


def open_records(node):
    """The open records etcd holds now, of every node."""
    return [k for k in node.etcd.keys("/smb3d/files/") if "/open/" in k]


def test_stat_opens_through_one_node_meet_only_the_other_node_s_pending_delete(tmp_path):
    # A general cluster share, where node 1's client gets the batch oplock it asks for.
    with cluster_nodes(tmp_path, scale_out=False) as (n1, n2):
        conn1, tree1 = tree_of(n1)
        conn2, tree2 = tree_of(n2)
        try:
            # Node 1's exclusive open takes no stat open of node 2's client; node 2 records none.
            exclusive = open_file(tree1, "x.txt", READ_WRITE, 0)
            stat = open_file(tree2, "x.txt", READ_ATTRIBUTES, SHARE_ALL, CreateDisposition.FILE_OPEN)
            assert len(open_records(n1)) == 1, open_records(n1)
            # An open with data access through node 2 still meets node 1's share mode.
            assert refused(tree2, "x.txt", FilePipePrinterAccessMask.FILE_READ_DATA, SHARE_ALL) \
                == STATUS_SHARING_VIOLATION
            stat.close()
            exclusive.close()

            # Node 1's batch oplock is not broken by node 2's stat open.
            batch = RequestedOplockLevel.SMB2_OPLOCK_LEVEL_BATCH
            holder, _ = open_shared(tree1, "batch.dat", CreateDisposition.FILE_OVERWRITE_IF, oplock=batch)
            assert holder.oplock_level == batch
            listener = listen_for_break(conn1)
            stat = open_file(tree2, "batch.dat", READ_ATTRIBUTES, SHARE_ALL, CreateDisposition.FILE_OPEN)
            assert not listener.response_event.wait(1), "node 2's stat open broke node 1's batch oplock"
            del conn1.outstanding_requests[UNSOLICITED]
            stat.close()
            holder.close()

            # A file delete-pending through node 1 takes no stat open through node 2, as soon
            # as node 2's watch of etcd has told it (milliseconds).
            deleting = open_file(tree1, "gone.txt", FilePipePrinterAccessMask.DELETE | READ_WRITE, SHARE_ALL)
            watching = open_file(tree2, "gone.txt", READ_ATTRIBUTES, SHARE_ALL, CreateDisposition.FILE_OPEN)
            assert not delete_pending(watching)
            set_info(tree1, deleting, InfoType.SMB2_0_INFO_FILE,
                     FileInformationClass.FILE_DISPOSITION_INFORMATION, b"\x01")
            marked = time.monotonic()
            while True:
                try:
                    open_file(tree2, "gone.txt", READ_ATTRIBUTES, SHARE_ALL, CreateDisposition.FILE_OPEN).close()
                except SMBResponseException as e:
                    assert e.status == STATUS_DELETE_PENDING
                    break
                assert time.monotonic() - marked < 5, "node 2 never learnt of the pending delete"
            print("node 2 refused stat opens %.3f s after the mark" % (time.monotonic() - marked))
            # Node 2's listings leave it out too, and its open of the file reports it
            # delete-pending (FileStandardInformation), from the same watch (issue 18 item 7).
            assert "gone.txt" not in listed(tree2)
            assert delete_pending(watching)
            assert "x.txt" in listed(tree2)
            set_info(tree1, deleting, InfoType.SMB2_0_INFO_FILE,
                     FileInformationClass.FILE_DISPOSITION_INFORMATION, b"\x00")
            cleared = time.monotonic()
            while True:
                try:
                    open_file(tree2, "gone.txt", READ_ATTRIBUTES, SHARE_ALL, CreateDisposition.FILE_OPEN).close()
                    break
                except SMBResponseException as e:
                    assert e.status == STATUS_DELETE_PENDING
                assert time.monotonic() - cleared < 5, "node 2 kept a cleared pending delete"
            assert "gone.txt" in listed(tree2)
            assert not delete_pending(watching)
            watching.close()
            deleting.close()
        finally:
            conn1.disconnect()
            conn2.disconnect()
        assert n1.alive() and n2.alive()


def test_alternating_listings_write_nothing_to_etcd_after_the_first(two_nodes):
    # Each node's first listing records its directory opens; their closes leave the records
    # behind (retained), and every later listing through either node reuses them: no etcd
    # write at all (issue 18 items 7 and 11, docs/cluster.md "Retained records").
    n1, n2 = two_nodes
    names = []
    for d in range(5):
        directory = n1.shared / "tree" / ("d%d" % d)
        directory.mkdir(parents=True)
        names.append(directory)
        for f in range(3):
            (directory / ("f%d" % f)).write_bytes(b"x")
            names.append(directory / ("f%d" % f))
    n1.own(n1.shared / "tree", *names)

    def scan(node):
        out = node.smbclient("recurse; ls tree\\*", "-m", "SMB3_11", share="share").stdout
        assert out.count("f2 ") == 5, out
    scan(n1)
    scan(n2)
    first = n1.etcd.revision()
    records = open_records(n1)
    started = time.monotonic()
    for node in (n1, n2, n1, n2):
        scan(node)
    print("four alternating listings in %.2f s" % (time.monotonic() - started))
    assert n1.etcd.revision() == first, "a listing wrote to etcd after each node's first"
    assert open_records(n1) == records

    # Another node's open that shares nothing meets n1's retained record of d0: n1 releases
    # it, and the open goes on; n1's next listing meets the open for real and lists the rest.
    conn, tree = tree_of(n2)
    try:
        exclusive = Open(tree, "tree\\d0")
        exclusive.create(ImpersonationLevel.Impersonation, FilePipePrinterAccessMask.FILE_READ_DATA,
                         FileAttributes.FILE_ATTRIBUTE_DIRECTORY, 0, CreateDisposition.FILE_OPEN,
                         CreateOptions.FILE_DIRECTORY_FILE)
        listing = n1.smbclient("ls tree\\d0\\*", "-m", "SMB3_11", share="share", check=False).stdout
        assert "NT_STATUS_SHARING_VIOLATION" in listing, listing
        exclusive.close()
        scan(n1)
    finally:
        conn.disconnect()
    assert n1.alive() and n2.alive()


def test_a_node_s_watches_of_etcd_hold_while_it_idles(two_nodes):
    # Nodes ping etcd every second (so that a frozen member's watches end within 3 s); an
    # etcd that allows pings only every 5 s, its default, closed every node's connection
    # every 5 s, and each time every watch broke: for a second or more listings recorded
    # their opens again and stat opens were recorded (docs/cluster.md "Configuration").
    n1, n2 = two_nodes
    time.sleep(7)
    for node in (n1, n2):
        log = open(node.log, errors="replace").read()
        assert "watch of byte-range locks broke" not in log, node.log_tail()
    assert n1.alive() and n2.alive()
