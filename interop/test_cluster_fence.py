"""The cluster dialect fence and cluster share capabilities (issue 18 item 5, MS-SMB2 2.2.10
and 3.3.5.7) with two smb3d nodes of one etcd: n1 serves cluster shares at 3.0.2 at most
(`[cluster] max_dialect`), n2 at 3.1.1, so the cluster's dialect is 3.0.2. smbprotocol's 3.1.1
TREE_CONNECT to n2 is refused with STATUS_SMB_BAD_CLUSTER_DIALECT naming 3.0.2 in its error
context, and accepted with SMB2_TREE_CONNECT_FLAG_CLUSTER_RECONNECT or over 3.0.2; once n1
stops, the fence rises by itself and 3.1.1 connects. A general cluster share (`scale_out =
false`) is announced as CLUSTER without SCALEOUT and fenced alike."""

import time
import uuid

import pytest
from smbprotocol.connection import Connection, Dialects
from smbprotocol.exceptions import SMBResponseException
from smbprotocol.session import Session
from smbprotocol.tree import SMB2TreeConnectRequest, SMB2TreeConnectResponse

from conftest import stop
from test_cluster_opens import cluster_nodes

STATUS_SMB_BAD_CLUSTER_DIALECT = 0xC05D0001
CLUSTER_RECONNECT = 0x0001
SHARE_CAP_SCALEOUT = 0x20
SHARE_CAP_CLUSTER = 0x40


def logon(node, dialect):
    conn = Connection(uuid.uuid4(), "127.0.0.1", node.port, require_signing=True)
    conn.connect(dialect)
    session = Session(conn, node.user, node.password)
    session.connect()
    return conn, session


def tree_connect(session, flags=0):
    """A TREE_CONNECT to the share with `flags` (smbprotocol's TreeConnect sends none); the
    share's capabilities."""
    request = SMB2TreeConnectRequest()
    request["flags"] = flags
    request["buffer"] = r"\\127.0.0.1\share".encode("utf-16-le")
    sent = session.connection.send(request, sid=session.session_id)
    answer = session.connection.receive(sent)
    response = SMB2TreeConnectResponse()
    response.unpack(answer["data"].get_value())
    return response["capabilities"].get_value()


def test_a_dialect_above_the_cluster_s_connects_only_as_a_reconnect_until_the_fence_rises(tmp_path):
    with cluster_nodes(tmp_path, cluster_options={"n1": 'max_dialect = "3.0.2"\n'}) as (n1, n2):
        conn, session = logon(n2, Dialects.SMB_3_1_1)
        try:
            with pytest.raises(SMBResponseException) as refused:
                tree_connect(session)
            assert refused.value.status == STATUS_SMB_BAD_CLUSTER_DIALECT
            # MS-SMB2 3.2.5.5: the two bytes of the error context name the dialect to use.
            assert refused.value.error_details == [(0x0302).to_bytes(2, "little")]
            caps = tree_connect(session, CLUSTER_RECONNECT)
            assert caps & (SHARE_CAP_CLUSTER | SHARE_CAP_SCALEOUT) == SHARE_CAP_CLUSTER | SHARE_CAP_SCALEOUT
        finally:
            conn.disconnect()
        # n1 fences its own 3.1.1 clients too; a 3.0.2 connection is at the fence.
        conn, session = logon(n1, Dialects.SMB_3_1_1)
        try:
            with pytest.raises(SMBResponseException) as refused:
                tree_connect(session)
            assert refused.value.status == STATUS_SMB_BAD_CLUSTER_DIALECT
        finally:
            conn.disconnect()
        conn, session = logon(n2, Dialects.SMB_3_0_2)
        try:
            assert tree_connect(session) & SHARE_CAP_CLUSTER
        finally:
            conn.disconnect()

        # Rolling upgrade: the last 3.0.2 node leaves (SIGTERM revokes its lease), and n2's
        # watch of the members raises the fence without a restart.
        stop(n1)
        deadline = time.monotonic() + 20
        while True:
            conn, session = logon(n2, Dialects.SMB_3_1_1)
            try:
                assert tree_connect(session) & SHARE_CAP_CLUSTER
                break
            except SMBResponseException as e:
                assert e.status == STATUS_SMB_BAD_CLUSTER_DIALECT
                assert time.monotonic() < deadline, "the fence did not rise after n1 left"
                time.sleep(0.2)
            finally:
                conn.disconnect()


def test_a_general_cluster_share_is_cluster_without_scaleout_and_fenced_alike(tmp_path):
    with cluster_nodes(tmp_path, cluster_options={"n1": 'max_dialect = "3.0.2"\n'}, scale_out=False) as (_, n2):
        conn, session = logon(n2, Dialects.SMB_3_1_1)
        try:
            with pytest.raises(SMBResponseException) as refused:
                tree_connect(session)
            assert refused.value.status == STATUS_SMB_BAD_CLUSTER_DIALECT
            caps = tree_connect(session, CLUSTER_RECONNECT)
            assert caps & (SHARE_CAP_CLUSTER | SHARE_CAP_SCALEOUT) == SHARE_CAP_CLUSTER
        finally:
            conn.disconnect()
