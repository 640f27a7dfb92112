"""Change notify and directory leases across cluster nodes (issue 18 item 3): two smb3d processes
serving one directory with one etcd, a Python smbprotocol client on each.

Node 1 runs without CAP_SYS_ADMIN, so it has no fanotify host watch: like a node of CephFS or NFS,
whose host never sees another node's changes, it can learn them only through the cluster. Its
CHANGE_NOTIFY completes with the action and name of a file created, renamed and deleted through
node 2, and its RH directory lease breaks when a file is created in the directory through node 2.
Node 2 keeps its host watch, which also sees node 1's changes on this one local directory: a
change through node 1 still reaches node 2's watch once, not twice.

A node learns another's interest in a directory with etcd's watch delay (milliseconds): the test
gives it half a second after a watch or lease is set up."""

import contextlib
import os
import struct
import time
import uuid

from smbprotocol.file_info import FileInformationClass, InfoType
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open)

import conftest
import smbprotocol_client
import test_cluster_opens
from crash_loop import set_info
from smb2raw import rename_info
from test_notify_host import (ADDED, NAMES, REMOVED, RENAMED_NEW, RENAMED_OLD, SHARE_ALL, Watch, on_host,
                              open_dir)
from test_two_clients import ASKS_FOR_DIRECTORY_LEASES, H, R, create_leased_directory, listen_for_break

# Time for the other node to learn a new interest from its etcd watch.
SETTLE = 0.5


@contextlib.contextmanager
def without_host_watch_for(name, tmp_path):
    """Starts node `name` without CAP_SYS_ADMIN (no fanotify), the others as usual."""
    wrapper = tmp_path / "smb3d-no-fanotify"
    wrapper.write_text('#!/bin/sh\nexec setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin "%s" "$@"\n'
                       % conftest.BINARY)
    wrapper.chmod(0o755)
    start = test_cluster_opens.start_smb3d

    def start_node(home, **options):
        real = conftest.BINARY
        if home.name == name:
            conftest.BINARY = wrapper
        try:
            return start(home, **options)
        finally:
            conftest.BINARY = real

    test_cluster_opens.start_smb3d = start_node
    try:
        yield
    finally:
        test_cluster_opens.start_smb3d = start


def create(tree, name, options=CreateOptions.FILE_NON_DIRECTORY_FILE,
           access=FilePipePrinterAccessMask.FILE_READ_DATA | FilePipePrinterAccessMask.DELETE):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, access, FileAttributes.FILE_ATTRIBUTE_NORMAL, SHARE_ALL,
                  CreateDisposition.FILE_OPEN_IF, options)
    return handle


def test_changes_through_one_node_reach_the_other_node_s_watches_and_directory_leases(tmp_path):
    # A general cluster share (`scale_out = false`): a scale-out share's directory leases keep
    # read caching only (MS-SMB2 3.3.5.9.11), and the RH lease is what must break.
    with without_host_watch_for("n1", tmp_path), \
            test_cluster_opens.cluster_nodes(tmp_path, scale_out=False) as (n1, n2):
        directory = n1.shared / "dir"
        directory.mkdir()
        owner = os.stat(n1.shared)
        os.chown(directory, owner.st_uid, owner.st_gid)
        conn1, _, tree1 = smbprotocol_client.connect(n1, client_guid=uuid.uuid4(),
                                                     capabilities=ASKS_FOR_DIRECTORY_LEASES)
        conn2, _, tree2 = smbprotocol_client.connect(n2, client_guid=uuid.uuid4())
        try:
            started = time.monotonic()
            names = Watch(open_dir(tree1, "dir"), NAMES)
            time.sleep(SETTLE)
            made = create(tree2, "dir\\a.txt")
            set_info(tree2, made, InfoType.SMB2_0_INFO_FILE, FileInformationClass.FILE_RENAME_INFORMATION,
                     rename_info("dir\\b.txt"))
            made.close()
            gone = create(tree2, "dir\\b.txt", CreateOptions.FILE_NON_DIRECTORY_FILE | CreateOptions.FILE_DELETE_ON_CLOSE)
            gone.close()
            assert names.until((REMOVED, "b.txt")) == [
                (ADDED, "a.txt"), (RENAMED_OLD, "a.txt"), (RENAMED_NEW, "b.txt"), (REMOVED, "b.txt")]
            notified = time.monotonic() - started

            key = uuid.uuid4().bytes
            leased, granted = create_leased_directory(tree1, "leased", key)
            assert granted == R | H
            time.sleep(SETTLE)
            listener = listen_for_break(conn1)
            create(tree2, "leased\\new.txt").close()
            assert listener.response_event.wait(10), "a file created through node 2 did not break the lease"
            notification = listener.response["data"].get_value()
            assert notification[8:24] == key
            assert struct.unpack_from("<II", notification, 24) == (R | H, 0)

            # Node 2's host watch sees node 1's change on this directory too; it comes once.
            others = Watch(open_dir(tree2, "dir"), NAMES)
            on_host(n2.shared, "touch dir/from-the-host.txt")
            assert others.until((ADDED, "from-the-host.txt")) == [(ADDED, "from-the-host.txt")], \
                "node 2's host watch is not running: the test below would prove nothing"
            time.sleep(SETTLE)
            create(tree1, "dir\\c.txt").close()
            assert others.until((ADDED, "c.txt")) == [(ADDED, "c.txt")]
            create(tree1, "dir\\d.txt").close()
            assert others.until((ADDED, "d.txt")) == [(ADDED, "d.txt")]
            print("notify through the other node: %.2f s" % notified)
        finally:
            conn1.disconnect()
            conn2.disconnect()
