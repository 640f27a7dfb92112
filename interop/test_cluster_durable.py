"""Durable (not persistent) handles on a cluster (issue 18 items 3 and 4), with Python
smbprotocol as the client: two smb3d nodes of one etcd serve one directory as a share without
continuous availability, the public address X on n1. A client holds three durable v2 handles
with batch oplocks and a durable v1 one through X, each recorded in etcd. n1 is killed with SIGKILL; n2 takes X and
keeps the four opens for their client: the client reconnecting to X gets the first back (its
data, its batch oplock, its byte-range lock) and the v1 one (DHnC); a second client's conflicting open of the second
through n2 closes it, as MS-SMB2 3.3.4.6 says for a disconnected durable open whose oplock is
in the way, so its reconnect finds nothing; the third, whose client never comes back, is
released once its 3 s timeout has passed."""

import time
import uuid

import pytest
from smbprotocol.connection import Connection
from smbprotocol.create_contexts import (CreateContextName, SMB2CreateDurableHandleReconnect,
                                         SMB2CreateDurableHandleReconnectV2, SMB2CreateDurableHandleRequest,
                                         SMB2CreateDurableHandleRequestV2, SMB2CreateDurableHandleResponse)
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.open import CreateDisposition, RequestedOplockLevel, ShareAccess
from smbprotocol.session import Session
from smbprotocol.tree import TreeConnect

from test_cluster_takeover import NODE_TTL, USER, connect, holders, run_cluster
from test_persistent import STATUS_LOCK_NOT_GRANTED, context, create, durable_v2_flags, lock_element

BATCH = RequestedOplockLevel.SMB2_OPLOCK_LEVEL_BATCH
STATUS_OBJECT_NAME_NOT_FOUND = 0xC0000034
RECORDS = "/smb3d/records/persistent-opens/"


@pytest.fixture
def cluster(tmp_path):
    yield from run_cluster(tmp_path, "")


def durable_request(timeout_ms):
    request = SMB2CreateDurableHandleRequestV2()
    request["timeout"] = timeout_ms
    request["flags"] = 0
    create_guid = uuid.uuid4()
    request["create_guid"] = create_guid
    return context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_REQUEST_V2, request), create_guid


def durable_reconnect(file_id, create_guid):
    reconnect = SMB2CreateDurableHandleReconnectV2()
    reconnect["file_id"] = file_id
    reconnect["create_guid"] = create_guid
    reconnect["flags"] = 0
    return context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_RECONNECT_V2, reconnect)


def open_durable(tree, name, timeout_ms):
    """A durable v2 open of `name` with a batch oplock, sharing reads only."""
    request, create_guid = durable_request(timeout_ms)
    handle, contexts = create(tree, [request], CreateDisposition.FILE_OVERWRITE_IF, name=name,
                              share=ShareAccess.FILE_SHARE_READ, oplock_level=BATCH)
    assert handle.oplock_level == BATCH
    assert durable_v2_flags(contexts) == 0, "durable, not persistent"
    return handle, create_guid


def reconnect(tree, name, file_id, create_guid):
    return create(tree, [durable_reconnect(file_id, create_guid)], name=name, oplock_level=BATCH)[0]


def test_a_killed_node_s_durable_handles_stay_reserved_and_are_reclaimed_through_its_address(cluster):
    n1, n2 = cluster["nodes"]
    etcd = cluster["etcd"]
    client_guid = uuid.uuid4()
    data = b"durable across nodes " * 1000
    conn_a, tree_a = connect(cluster, client_guid)
    kept, kept_guid = open_durable(tree_a, "kept.dat", 60000)
    kept.write(data, 0)
    kept.lock([lock_element(0, 4096)])
    purged, purged_guid = open_durable(tree_a, "purged.dat", 60000)
    forgotten, forgotten_guid = open_durable(tree_a, "forgotten.dat", 3000)
    v1, contexts = create(tree_a, [context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_REQUEST,
                                           SMB2CreateDurableHandleRequest())],
                          CreateDisposition.FILE_OVERWRITE_IF, name="v1.dat", share=ShareAccess.FILE_SHARE_READ,
                          oplock_level=BATCH)
    assert any(isinstance(c, SMB2CreateDurableHandleResponse) for c in contexts or []), "a durable v1 open"
    v1.write(b"version 1", 0)
    assert len(etcd.keys(RECORDS)) == 4, "each durable open of a cluster share has its record in etcd"

    n1.proc.kill()
    n1.proc.wait(10)
    killed = time.monotonic()
    while True:
        try:
            conn_b, tree_b = connect(cluster, client_guid)
            break
        except (OSError, SMBResponseException, ValueError):
            pass
        assert time.monotonic() - killed < NODE_TTL + 2, "X did not answer through n2:\n" + n2.log_tail()
        time.sleep(0.05)
    assert holders(cluster, n2) == {cluster["public"]: "n2"}
    conn_o = Connection(uuid.uuid4(), n2.address, n2.port, require_signing=True)
    conn_o.connect()
    session_o = Session(conn_o, USER, cluster["password"])
    session_o.connect()
    tree_o = TreeConnect(session_o, r"\\%s\share" % n2.address)
    tree_o.connect()
    try:
        assert len(etcd.keys(RECORDS)) == 4, "n2 keeps n1's durable opens"
        # n1's open records went with its lease; n2 recorded the four again, so other nodes
        # meet their share modes and caching.
        assert len([k for k in etcd.keys("/smb3d/files/") if "/open/" in k]) == 4
        # Another client's open that needs the batch oplock broken: nobody can acknowledge it,
        # so the disconnected durable open is closed and the new one goes on.
        create(tree_o, name="purged.dat")[0].close()

        again = reconnect(tree_b, "kept.dat", kept.file_id, kept_guid)
        assert again.oplock_level == BATCH
        assert again.read(0, len(data)) == data
        with pytest.raises(SMBResponseException) as refused:
            again.lock([lock_element(0, 4096)])
        assert refused.value.status == STATUS_LOCK_NOT_GRANTED, "its lock came back with it"
        assert any("/lock/" in k for k in etcd.keys("/smb3d/files/")), "n2 recorded its lock with the cluster"

        with pytest.raises(SMBResponseException) as gone:
            reconnect(tree_b, "purged.dat", purged.file_id, purged_guid)
        assert gone.value.status == STATUS_OBJECT_NAME_NOT_FOUND

        v1_reconnect = SMB2CreateDurableHandleReconnect()
        v1_reconnect["data"] = v1.file_id
        v1_again, _ = create(tree_b, [context(CreateContextName.SMB2_CREATE_DURABLE_HANDLE_RECONNECT, v1_reconnect)],
                             name="v1.dat", oplock_level=BATCH)
        assert v1_again.read(0, 9) == b"version 1"
        v1_again.close()

        while len(etcd.keys(RECORDS)) > 1:
            assert time.monotonic() - killed < NODE_TTL + 10, "the forgotten open was never released"
            time.sleep(0.1)
        released = time.monotonic() - killed
        print("the open whose client never came back was released %.2f s after n1 died (timeout 3 s)" % released)
        assert released > 3
        with pytest.raises(SMBResponseException) as gone:
            reconnect(tree_b, "forgotten.dat", forgotten.file_id, forgotten_guid)
        assert gone.value.status == STATUS_OBJECT_NAME_NOT_FOUND
        create(tree_o, name="forgotten.dat")[0].close()

        again.close()
        assert etcd.keys(RECORDS) == [], "closing removed the last record"
    finally:
        conn_b.disconnect()
        conn_o.disconnect()
    assert n2.proc.poll() is None, n2.log_tail()
    assert "open(s) of node n1 restored here" in n2.log.read_text(errors="replace")
