"""Cluster Client Failover v2 across nodes (issue 18 item 5, MS-SMB2 3.3.5.9.13): an application
that held a file open through node 1 (share mode none, a durable v2 handle, an AppInstanceId) is
restarted on another client that opens the same file through node 2 with the same AppInstanceId.
Node 2 has node 1 close the earlier open (its record in etcd goes, which node 2 waits for) and the
new open goes on; an older or equal SMB2_CREATE_APP_INSTANCE_VERSION is refused with
STATUS_FILE_FORCED_CLOSED and another account's open with the same id is not closed (smb3d's rule:
an AppInstanceId is no proof of who sends it), both without touching node 1's open. The same
on one server, between two clients."""

import uuid

import pytest
from smbprotocol.create_contexts import (CreateContextName, SMB2CreateAppInstanceId, SMB2CreateAppInstanceVersion,
                                         SMB2CreateContextRequest)
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open)

from conftest import interop_uid, start_smb3d, stop
from test_cluster_opens import two_nodes, tree_of  # noqa: F401 (the fixture)
from test_two_clients import durable_v2_context

import smbprotocol_client

STATUS_SHARING_VIOLATION = 0xC0000043
STATUS_FILE_FORCED_CLOSED = 0xC00000B6
STATUS_FILE_CLOSED = 0xC0000128
READ_WRITE = FilePipePrinterAccessMask.FILE_READ_DATA | FilePipePrinterAccessMask.FILE_WRITE_DATA


def context(name, data):
    c = SMB2CreateContextRequest()
    c["buffer_name"] = name
    c["buffer_data"] = data
    return c


def app_contexts(app_id, version):
    ident = SMB2CreateAppInstanceId()
    ident["app_instance_id"] = app_id.bytes_le
    ver = SMB2CreateAppInstanceVersion()
    ver["app_instance_version_high"], ver["app_instance_version_low"] = version
    return [durable_v2_context(60000), context(CreateContextName.SMB2_CREATE_APP_INSTANCE_ID, ident),
            context(CreateContextName.SMB2_CREATE_APP_INSTANCE_VERSION, ver)]


def open_as_instance(tree, name, app_id, version):
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, READ_WRITE, FileAttributes.FILE_ATTRIBUTE_NORMAL, 0,
                  CreateDisposition.FILE_OPEN_IF, CreateOptions.FILE_NON_DIRECTORY_FILE,
                  create_contexts=app_contexts(app_id, version))
    return handle


def refused(tree, name, app_id, version):
    with pytest.raises(SMBResponseException) as caught:
        open_as_instance(tree, name, app_id, version)
    return caught.value.status


def other_account(node):
    """A connection and tree of another account than the test user's, through `node`."""
    password = node.add_user("other", interop_uid())
    conn = smbprotocol_client.Connection(uuid.uuid4(), "127.0.0.1", node.port, require_signing=True)
    conn.connect()
    session = smbprotocol_client.Session(conn, "other", password)
    session.connect()
    tree = smbprotocol_client.TreeConnect(session, r"\\127.0.0.1\%s" % node.share)
    tree.connect()
    return conn, tree


def takes_over(tree1, tree2, tree3):
    """tree1 holds the file as the instance; tree3 (another account) and older versions through
    tree2 are refused; a newer version through tree2 takes the file over."""
    app = uuid.uuid4()
    first = open_as_instance(tree1, "app.vhdx", app, (1, 0))
    first.write(b"written by the first instance", 0)
    # Another account naming the same instance closes nothing: it meets a share mode of none.
    assert refused(tree3, "app.vhdx", app, (9, 0)) == STATUS_SHARING_VIOLATION
    # An older or equal version is refused, and the first open goes on.
    assert refused(tree2, "app.vhdx", app, (0, 9)) == STATUS_FILE_FORCED_CLOSED
    assert refused(tree2, "app.vhdx", app, (1, 0)) == STATUS_FILE_FORCED_CLOSED
    first.write(b"W", 0)
    # A newer instance of the same application takes the file over.
    second = open_as_instance(tree2, "app.vhdx", app, (1, 1))
    assert second.read(0, 29) == b"Written by the first instance"
    with pytest.raises(SMBResponseException) as caught:
        first.write(b"late", 0)
    assert caught.value.status == STATUS_FILE_CLOSED
    second.close()


def test_a_restarted_instance_on_node_2_takes_over_node_1_s_open(two_nodes):
    n1, n2 = two_nodes
    conn1, tree1 = tree_of(n1)
    conn2, tree2 = tree_of(n2)
    conn3, tree3 = other_account(n2)
    try:
        takes_over(tree1, tree2, tree3)
    finally:
        conn1.disconnect()
        conn2.disconnect()
        conn3.disconnect()


def test_a_restarted_instance_takes_over_on_one_server(tmp_path):
    server = start_smb3d(tmp_path)
    conn1, _, tree1 = smbprotocol_client.connect(server)
    conn2, _, tree2 = smbprotocol_client.connect(server)
    conn3, tree3 = other_account(server)
    try:
        takes_over(tree1, tree2, tree3)
    finally:
        conn1.disconnect()
        conn2.disconnect()
        conn3.disconnect()
        stop(server)
