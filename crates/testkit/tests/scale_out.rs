//! Caching on a scale-out share (MS-SMB2 3.3.5.9, 3.3.5.9.8, 3.3.5.9.11): a cluster node's
//! share with `scale_out` (the default) is a SCALEOUT share (STYPE_CLUSTER_SOFS), where an
//! SMB 3 client asking for a batch oplock gets level II, and a lease only its read caching.
//! The durable v2 request of such an open is then ignored unless it asks to be persistent
//! (3.3.5.9.10), since neither a batch oplock nor handle caching remains. SMB 2 connections,
//! a general cluster share (`scale_out = false`) and one server keep what one server grants.

use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::share::Share;
use smb3d_server::{ClusterDialect, Settings};
use smb3d_smb2::Command;
use smb3d_smb2::FileId;
use smb3d_smb2::create::{
    CreateContext, CreateContexts, CreateDisposition, CreateOptions, CreateRequest, CreateResponse,
    DurableHandleFlags, DurableHandleRequestV2, ImpersonationLevel, Lease, LeaseFlags, LeaseKey,
    LeaseState, OplockLevel, ResponseContext, ShareAccess,
};
use smb3d_smb2::header::HeaderFlags;
use smb3d_smb2::negotiate::Dialect;
use smb3d_testkit::client::{Client, TEST_USER};
use smb3d_testkit::harness::{self, SHARE_UNC, TestServer};
use smb3d_testkit::packet::body;
use smb3d_wire::Guid;

fn server(cluster: bool) -> TestServer {
    let settings = Settings {
        cluster_dialect: cluster.then(|| Arc::new(ClusterDialect::new(0x0311))),
        ..harness::settings()
    };
    TestServer::new(settings, Arc::new(NullProvider)).unwrap()
}

/// A cluster node whose share is a general cluster share (`scale_out = false`).
fn general_cluster_node() -> TestServer {
    let server = server(true);
    let mut share = Share::disk(harness::SHARE, Arc::new(server.vfs.clone()));
    share.scale_out = false;
    server
        .server
        .replace_shares(vec![Arc::new(Share::ipc()), Arc::new(share)]);
    server
}

fn connected(server: &TestServer, dialect: Dialect) -> Client<'_> {
    let mut client = Client::new(server.connect());
    assert_eq!(client.negotiate(dialect), Some(NtStatus::SUCCESS));
    assert_eq!(
        client.login_as(&TEST_USER).status(),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    client
}

/// Opens `dir\file.txt` asking for `level` with `contexts`; the granted level and the
/// response's contexts.
fn open(
    client: &mut Client<'_>,
    level: OplockLevel,
    contexts: &[CreateContext<'_>],
) -> (OplockLevel, Vec<String>, Option<LeaseState>) {
    let (granted, names, lease, _) = create(client, level, contexts, HeaderFlags::empty());
    (granted, names, lease)
}

/// [`open`] with header `flags`; the open's FileId too.
fn create(
    client: &mut Client<'_>,
    level: OplockLevel,
    contexts: &[CreateContext<'_>],
    flags: HeaderFlags,
) -> (OplockLevel, Vec<String>, Option<LeaseState>, FileId) {
    let mut chain = Vec::new();
    CreateContext::encode_chain(contexts, &mut smb3d_wire::Writer::new(&mut chain));
    let name: Vec<u8> = "dir\\file.txt"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let request = body(|w| {
        CreateRequest {
            security_flags: 0,
            requested_oplock_level: level,
            impersonation_level: ImpersonationLevel::IMPERSONATION,
            smb_create_flags: 0,
            desired_access: AccessMask::FILE_GENERIC_READ,
            file_attributes: 0x80,
            share_access: ShareAccess::READ,
            create_disposition: CreateDisposition::OPEN,
            create_options: CreateOptions::NON_DIRECTORY_FILE,
            name: &name,
            contexts: CreateContexts::parse(&chain).unwrap(),
        }
        .encode(w)
    });
    let pdu = client.pdu(Command::CREATE, &request, flags);
    let reply = client.send(pdu);
    let last = reply.responses.last().unwrap();
    assert_eq!(last.status(), NtStatus::SUCCESS);
    let response = CreateResponse::decode(&last.pdu).unwrap();
    let lease = response.contexts.iter().find_map(|c| match c {
        ResponseContext::Lease(lease) => Some(lease.lease_state),
        _ => None,
    });
    let names = response
        .contexts
        .iter()
        .map(|c| format!("{c:?}").split('(').next().unwrap().to_owned())
        .collect();
    (response.oplock_level, names, lease, response.file_id)
}

fn durable_v2(flags: DurableHandleFlags) -> CreateContext<'static> {
    CreateContext::DurableHandleRequestV2(DurableHandleRequestV2 {
        timeout: 0,
        flags,
        create_guid: Guid([0x5c; 16]),
    })
}

fn lease(state: LeaseState) -> CreateContext<'static> {
    CreateContext::RequestLease(Lease {
        lease_key: LeaseKey([0x50; 16]),
        lease_state: state,
        lease_flags: LeaseFlags::empty(),
        lease_duration: 0,
        v2: None,
    })
}

const RWH: LeaseState = LeaseState::READ_CACHING
    .union(LeaseState::WRITE_CACHING)
    .union(LeaseState::HANDLE_CACHING);

#[test]
fn a_batch_oplock_asked_of_a_scale_out_share_over_smb3_is_level_ii_and_not_durable() {
    let server = server(true);
    let mut client = connected(&server, Dialect::SMB3_1_1);
    let (granted, contexts, _) = open(
        &mut client,
        OplockLevel::BATCH,
        &[durable_v2(DurableHandleFlags::empty())],
    );
    assert_eq!(granted, OplockLevel::II);
    assert!(
        !contexts.iter().any(|c| c == "DurableHandleV2"),
        "{contexts:?}"
    );
}

/// MS-SMB2 3.3.5.9.10: a replayed CREATE is answered with the oplock level it asks for, as the
/// share grants it: level II for batch on a scale-out share (smbtorture's smb2.replay
/// replay-dhv2-oplock1 got batch before).
#[test]
fn a_replayed_batch_open_of_a_scale_out_share_is_answered_level_ii() {
    let server = server(true);
    let mut client = connected(&server, Dialect::SMB3_1_1);
    let contexts = [durable_v2(DurableHandleFlags::empty())];
    let (granted, _, _, first) = create(
        &mut client,
        OplockLevel::BATCH,
        &contexts,
        HeaderFlags::empty(),
    );
    assert_eq!(granted, OplockLevel::II);
    let (replayed, names, _, again) = create(
        &mut client,
        OplockLevel::BATCH,
        &contexts,
        HeaderFlags::REPLAY_OPERATION,
    );
    assert_eq!(again, first, "the replay is answered for the first open");
    assert_eq!(replayed, OplockLevel::II);
    assert!(!names.iter().any(|c| c == "DurableHandleV2"), "{names:?}");
}

#[test]
fn a_lease_asked_of_a_scale_out_share_over_smb3_keeps_only_read_caching() {
    let server = server(true);
    let mut client = connected(&server, Dialect::SMB3_0);
    let (granted, contexts, state) = open(
        &mut client,
        OplockLevel::LEASE,
        &[lease(RWH), durable_v2(DurableHandleFlags::empty())],
    );
    assert_eq!(granted, OplockLevel::LEASE);
    assert_eq!(state, Some(LeaseState::READ_CACHING));
    assert!(
        !contexts.iter().any(|c| c == "DurableHandleV2"),
        "{contexts:?}"
    );
}

#[test]
fn smb2_clients_of_a_scale_out_share_and_any_client_of_one_server_keep_batch_and_leases() {
    let cluster = server(true);
    let mut old = connected(&cluster, Dialect::SMB2_1);
    assert_eq!(
        open(&mut old, OplockLevel::BATCH, &[]).0,
        OplockLevel::BATCH
    );
    let single = server(false);
    let mut client = connected(&single, Dialect::SMB3_1_1);
    let (granted, contexts, state) = open(
        &mut client,
        OplockLevel::LEASE,
        &[lease(RWH), durable_v2(DurableHandleFlags::empty())],
    );
    assert_eq!(granted, OplockLevel::LEASE);
    assert_eq!(state, Some(RWH));
    assert!(
        contexts.iter().any(|c| c == "DurableHandleV2"),
        "{contexts:?}"
    );
}

#[test]
fn a_general_cluster_share_grants_smb3_clients_batch_rwh_leases_and_durable_v2_handles() {
    let server = general_cluster_node();
    let mut client = connected(&server, Dialect::SMB3_1_1);
    let (granted, contexts, _) = open(
        &mut client,
        OplockLevel::BATCH,
        &[durable_v2(DurableHandleFlags::empty())],
    );
    assert_eq!(granted, OplockLevel::BATCH);
    assert!(
        contexts.iter().any(|c| c == "DurableHandleV2"),
        "{contexts:?}"
    );
    let server = general_cluster_node();
    let mut client = connected(&server, Dialect::SMB3_0);
    let (granted, contexts, state) = open(
        &mut client,
        OplockLevel::LEASE,
        &[lease(RWH), durable_v2(DurableHandleFlags::empty())],
    );
    assert_eq!(granted, OplockLevel::LEASE);
    assert_eq!(state, Some(RWH));
    assert!(
        contexts.iter().any(|c| c == "DurableHandleV2"),
        "{contexts:?}"
    );
}
