//! The cluster dialect fence and share capabilities of a cluster node (issue 18 item 5,
//! MS-SMB2 2.2.10 and 3.3.5.7): its disk shares are cluster shares, announced to SMB 3 clients
//! as CLUSTER and SCALEOUT (scale-out shares, the default) or CLUSTER alone (general cluster
//! shares, `scale_out = false`); a TREE_CONNECT to either kind over a connection above the
//! cluster's max dialect is refused with STATUS_SMB_BAD_CLUSTER_DIALECT, whose 3.1.1 error
//! context names that dialect, unless the client sets CLUSTER_RECONNECT.

use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::NtStatus;
use smb3d_server::share::Share;
use smb3d_server::{ClusterDialect, Settings};
use smb3d_smb2::Command;
use smb3d_smb2::error::{ErrorId, ErrorResponse};
use smb3d_smb2::header::HeaderFlags;
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::tree_connect::{
    TreeCapabilities, TreeConnectFlags, TreeConnectRequest, TreeConnectResponse,
};
use smb3d_testkit::client::{Client, TEST_USER};
use smb3d_testkit::harness::{self, SHARE_UNC, TestServer};
use smb3d_testkit::packet::{Response, body};

fn node(fence: Option<u16>) -> (TestServer, Option<Arc<ClusterDialect>>) {
    let fence = fence.map(|max| Arc::new(ClusterDialect::new(max)));
    let settings = Settings {
        cluster_dialect: fence.clone(),
        ..harness::settings()
    };
    let server = TestServer::new(settings, Arc::new(NullProvider)).unwrap();
    (server, fence)
}

fn logged_on(server: &TestServer, dialect: Dialect) -> Client<'_> {
    let mut client = Client::new(server.connect());
    assert_eq!(client.negotiate(dialect), Some(NtStatus::SUCCESS));
    client.login_as(&TEST_USER);
    client
}

/// A signed TREE_CONNECT of `path` with `flags`; its response.
fn tree_connect(client: &mut Client<'_>, path: &str, flags: TreeConnectFlags) -> Response {
    let request = body(|w| {
        TreeConnectRequest {
            flags,
            path: path.into(),
            contexts: None,
        }
        .encode(w);
    });
    let pdu = client.pdu(Command::TREE_CONNECT, &request, HeaderFlags::SIGNED);
    client.send(pdu).responses.pop().unwrap()
}

/// The share's capabilities, as a TREE_CONNECT without flags gets them.
fn share_capabilities(client: &mut Client<'_>) -> TreeCapabilities {
    capabilities(&tree_connect(client, SHARE_UNC, TreeConnectFlags::empty()))
}

fn capabilities(response: &Response) -> TreeCapabilities {
    assert_eq!(response.status(), NtStatus::SUCCESS);
    TreeConnectResponse::decode(&response.pdu)
        .unwrap()
        .capabilities
}

const CLUSTER_SHARE: TreeCapabilities = TreeCapabilities::CLUSTER.union(TreeCapabilities::SCALEOUT);

#[test]
fn a_dialect_above_the_cluster_s_is_refused_without_the_reconnect_flag() {
    let (server, fence) = node(Some(0x0302));
    let mut client = logged_on(&server, Dialect::SMB3_1_1);
    let refused = tree_connect(&mut client, SHARE_UNC, TreeConnectFlags::empty());
    assert_eq!(refused.status(), NtStatus::SMB_BAD_CLUSTER_DIALECT);
    // MS-SMB2 3.2.5.5: the client reads the dialect to reconnect at from the error context.
    let error = ErrorResponse::decode(&refused.pdu).unwrap();
    let contexts: Vec<_> = error.contexts().map(Result::unwrap).collect();
    assert_eq!(contexts.len(), 1);
    assert_eq!(contexts[0].error_id, ErrorId::DEFAULT);
    assert_eq!(contexts[0].data, 0x0302u16.to_le_bytes());

    let again = tree_connect(&mut client, SHARE_UNC, TreeConnectFlags::CLUSTER_RECONNECT);
    assert!(capabilities(&again).contains(CLUSTER_SHARE));
    // IPC$ is no cluster share.
    let ipc = tree_connect(&mut client, "\\\\testkit\\IPC$", TreeConnectFlags::empty());
    assert!(!capabilities(&ipc).intersects(CLUSTER_SHARE));

    // The last node of 3.0.2 left: the fence rose, and 3.1.1 connects.
    fence.unwrap().follow(0x0311, [0x0311]);
    assert!(share_capabilities(&mut client).contains(CLUSTER_SHARE));
}

#[test]
fn a_dialect_at_the_fence_connects_and_before_3_1_1_the_refusal_has_no_context() {
    let (server, _fence) = node(Some(0x0302));
    let mut at = logged_on(&server, Dialect::SMB3_0_2);
    assert!(share_capabilities(&mut at).contains(CLUSTER_SHARE));

    let (server, _fence) = node(Some(0x0300));
    let mut above = logged_on(&server, Dialect::SMB3_0_2);
    let refused = tree_connect(&mut above, SHARE_UNC, TreeConnectFlags::empty());
    assert_eq!(refused.status(), NtStatus::SMB_BAD_CLUSTER_DIALECT);
    assert_eq!(
        ErrorResponse::decode(&refused.pdu)
            .unwrap()
            .error_context_count,
        0
    );
}

/// SCALEOUT and CLUSTER are SMB 3 capabilities (MS-SMB2 2.2.10); a single server has no
/// cluster shares.
#[test]
fn only_a_cluster_node_s_smb3_connections_see_cluster_shares() {
    let (server, _fence) = node(Some(0x0311));
    let mut old = logged_on(&server, Dialect::SMB2_1);
    assert!(!share_capabilities(&mut old).intersects(CLUSTER_SHARE));
    let (single, _) = node(None);
    let mut client = logged_on(&single, Dialect::SMB3_1_1);
    assert!(!share_capabilities(&mut client).intersects(CLUSTER_SHARE));
}

/// A general cluster share (`scale_out = false`) is announced as CLUSTER without SCALEOUT, and
/// the fence holds for it as for a scale-out share.
#[test]
fn a_general_cluster_share_is_cluster_without_scaleout_and_fenced_alike() {
    let (server, fence) = node(Some(0x0302));
    let mut share = Share::disk(harness::SHARE, Arc::new(server.vfs.clone()));
    share.scale_out = false;
    server
        .server
        .replace_shares(vec![Arc::new(Share::ipc()), Arc::new(share)]);
    let mut client = logged_on(&server, Dialect::SMB3_1_1);
    let refused = tree_connect(&mut client, SHARE_UNC, TreeConnectFlags::empty());
    assert_eq!(refused.status(), NtStatus::SMB_BAD_CLUSTER_DIALECT);
    let again = tree_connect(&mut client, SHARE_UNC, TreeConnectFlags::CLUSTER_RECONNECT);
    assert_eq!(capabilities(&again), TreeCapabilities::CLUSTER);
    let mut at = logged_on(&server, Dialect::SMB3_0_2);
    assert_eq!(share_capabilities(&mut at), TreeCapabilities::CLUSTER);
    let mut old = logged_on(&server, Dialect::SMB2_1);
    assert!(share_capabilities(&mut old).is_empty());

    fence.unwrap().follow(0x0311, [0x0311]);
    assert_eq!(share_capabilities(&mut client), TreeCapabilities::CLUSTER);
}
