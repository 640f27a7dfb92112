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
                                         SMB2CreateContextRequest, SMB2CreateDurableHandleReconnectV2,
                                         SMB2CreateDurableHandleRequestV2)
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.open import (CreateDisposition, CreateOptions, FileAttributes, FilePipePrinterAccessMask,
                              ImpersonationLevel, Open, RequestedOplockLevel)

from conftest import interop_uid, start_smb3d, stop
from test_cluster_opens import cluster_nodes, tree_of
from test_two_clients import durable_v2_context

import smbprotocol_client

STATUS_SHARING_VIOLATION = 0xC0000043
STATUS_FILE_FORCED_CLOSED = 0xC00000B6
STATUS_FILE_CLOSED = 0xC0000128
BATCH = RequestedOplockLevel.SMB2_OPLOCK_LEVEL_BATCH
NO_OPLOCK = RequestedOplockLevel.SMB2_OPLOCK_LEVEL_NONE
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


def open_as_instance(tree, name, app_id, version, oplock=BATCH):
    """Opens `name` sharing nothing, asking for a durable v2 handle (which a batch oplock makes
    durable) as the instance `app_id` of version `version`."""
    handle = Open(tree, name)
    handle.create(ImpersonationLevel.Impersonation, READ_WRITE, FileAttributes.FILE_ATTRIBUTE_NORMAL, 0,
                  CreateDisposition.FILE_OPEN_IF, CreateOptions.FILE_NON_DIRECTORY_FILE,
                  create_contexts=app_contexts(app_id, version), oplock_level=oplock)
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
    """tree1 holds a file durably as the instance; older versions through tree2 are refused and a
    newer one takes the file over. Another account (tree3) naming an instance closes nothing."""
    app = uuid.uuid4()
    first = open_as_instance(tree1, "app.vhdx", app, (1, 0))
    assert first.oplock_level == BATCH
    first.write(b"written by the first instance", 0)
    # An older or equal version is refused (no break reaches the holder), and the first open
    # goes on.
    assert refused(tree2, "app.vhdx", app, (0, 9)) == STATUS_FILE_FORCED_CLOSED
    assert refused(tree2, "app.vhdx", app, (1, 0)) == STATUS_FILE_FORCED_CLOSED
    first.write(b"W", 0)
    # A newer instance of the same application takes the file over.
    second = open_as_instance(tree2, "app.vhdx", app, (1, 1))
    assert second.oplock_level == BATCH
    assert second.read(0, 29) == b"Written by the first instance"
    with pytest.raises(SMBResponseException) as caught:
        first.write(b"late", 0)
    assert caught.value.status == STATUS_FILE_CLOSED
    second.close()
    # Another account meets the open as any other open: a share mode of none (held without
    # an oplock here, whose break smbprotocol would not answer).
    other_app = uuid.uuid4()
    held = open_as_instance(tree1, "held.vhdx", other_app, (1, 0), oplock=NO_OPLOCK)
    assert refused(tree3, "held.vhdx", other_app, (9, 0)) == STATUS_SHARING_VIOLATION
    held.write(b"still open", 0)
    held.close()


@pytest.fixture
def two_nodes(tmp_path):
    # A general cluster share: on a scale-out share an SMB 3 client's batch oplock is level II
    # and its durable v2 request without persistence is not granted (MS-SMB2 3.3.5.9.10).
    with cluster_nodes(tmp_path, scale_out=False) as nodes:
        yield nodes


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


def test_a_durable_reconnect_may_name_its_application_instance(tmp_path):
    """MS-SMB2 3.3.5.9.13 defers to the reconnect (3.3.5.9.12) when a DH2C comes with the
    instance's contexts, as Windows clients send them: the reconnect is not refused for them.
    (A durable handle needs a batch oplock or a handle lease.)"""
    server = start_smb3d(tmp_path)
    client = uuid.uuid4()
    app = uuid.uuid4()
    create_guid = uuid.uuid4()
    conn, _, tree = smbprotocol_client.connect(server, client_guid=client)
    try:
        durable = SMB2CreateDurableHandleRequestV2()
        durable["timeout"] = 60000
        durable["create_guid"] = create_guid
        instance = app_contexts(app, (1, 0))[1:]
        first = Open(tree, "durable.vhdx")
        first.create(ImpersonationLevel.Impersonation, READ_WRITE, FileAttributes.FILE_ATTRIBUTE_NORMAL, 0,
                     CreateDisposition.FILE_OPEN_IF, CreateOptions.FILE_NON_DIRECTORY_FILE,
                     create_contexts=[context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_REQUEST_V2, durable)]
                     + instance, oplock_level=BATCH)
        first.write(b"kept", 0)
        conn.disconnect(close=False)
        conn, _, tree = smbprotocol_client.connect(server, client_guid=client)
        reconnect = SMB2CreateDurableHandleReconnectV2()
        reconnect["file_id"] = first.file_id
        reconnect["create_guid"] = create_guid
        again = Open(tree, "durable.vhdx")
        again.create(ImpersonationLevel.Impersonation, READ_WRITE, FileAttributes.FILE_ATTRIBUTE_NORMAL, 0,
                     CreateDisposition.FILE_OPEN_IF, CreateOptions.FILE_NON_DIRECTORY_FILE,
                     create_contexts=[context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_RECONNECT_V2, reconnect)]
                     + instance, oplock_level=BATCH)
        assert again.read(0, 4) == b"kept"
        again.close()
    finally:
        conn.disconnect()
        stop(server)
