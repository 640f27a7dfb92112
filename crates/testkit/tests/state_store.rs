//! Persistent opens through the injected state store (issue 17 item 5): the in-memory back end
//! keeps an open's record from its CREATE to its CLOSE, and a server started again on the same
//! store and files restores the open for its client to reclaim (MS-SMB2 3.3.5.9.12).

use std::sync::Arc;

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::share::Share;
use smb3d_server::store::Table;
use smb3d_server::{MemoryStore, StateStore};
use smb3d_smb2::Command;
use smb3d_smb2::create::{
    CreateContext, CreateContexts, CreateDisposition, CreateOptions, CreateRequest, CreateResponse,
    DurableHandleFlags, DurableHandleReconnectV2, DurableHandleRequestV2, ImpersonationLevel,
    OplockLevel, ShareAccess,
};
use smb3d_smb2::negotiate::Dialect;
use smb3d_testkit::client::{Client, TEST_USER};
use smb3d_testkit::harness::{self, SHARE, SHARE_UNC, TestServer};
use smb3d_testkit::packet::body;
use smb3d_testkit::seeds::{close_body, negotiate_body, tree_connect_body};
use smb3d_wire::Guid;

/// A CREATE of `dir\file.txt` for reading and writing with `context`.
fn create_with(context: CreateContext<'_>) -> Vec<u8> {
    let mut chain = Vec::new();
    CreateContext::encode_chain(&[context], &mut smb3d_wire::Writer::new(&mut chain));
    let name: Vec<u8> = "dir\\file.txt"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    body(|w| {
        CreateRequest {
            security_flags: 0,
            requested_oplock_level: OplockLevel::NONE,
            impersonation_level: ImpersonationLevel::IMPERSONATION,
            smb_create_flags: 0,
            desired_access: AccessMask::FILE_GENERIC_READ | AccessMask::FILE_GENERIC_WRITE,
            file_attributes: 0x80,
            share_access: ShareAccess::READ | ShareAccess::WRITE,
            create_disposition: CreateDisposition::OPEN,
            create_options: CreateOptions::NON_DIRECTORY_FILE,
            name: &name,
            contexts: CreateContexts::parse(&chain).unwrap(),
        }
        .encode(w)
    })
}

/// A server on `store` whose share (on `files`, or its own) is continuously available.
fn ca_server(store: &Arc<MemoryStore>, files: Option<&TestServer>) -> TestServer {
    let mut settings = harness::settings();
    settings.state_store = Some(store.clone());
    let server = TestServer::new(settings, smb3d_crypto::default_provider()).unwrap();
    let vfs = files.map_or_else(|| server.vfs.clone(), |f| f.vfs.clone());
    let mut share = Share::disk(SHARE, Arc::new(vfs));
    share.continuous_availability = true;
    server
        .server
        .replace_shares(vec![Arc::new(Share::ipc()), Arc::new(share)]);
    server
}

/// A 3.0 client asking for persistent handles, connected to the share.
fn client(server: &TestServer) -> Client<'_> {
    let mut client = Client::new(server.connect());
    let mut negotiate = negotiate_body(&[Dialect::SMB3_0]);
    // Capabilities (MS-SMB2 2.2.3) |= SMB2_GLOBAL_CAP_PERSISTENT_HANDLES.
    negotiate[8] |= 0x10;
    let reply = client.call(Command::NEGOTIATE, &negotiate, None);
    assert_eq!(reply.status(), Some(NtStatus::SUCCESS));
    assert_eq!(
        client.login_as(&TEST_USER).status(),
        Some(NtStatus::SUCCESS)
    );
    let reply = client.call(Command::TREE_CONNECT, &tree_connect_body(SHARE_UNC), None);
    let last = reply.responses.last().unwrap();
    assert_eq!(last.status(), NtStatus::SUCCESS);
    client.tree_id = last.header.tree_id;
    client
}

fn records(store: &MemoryStore) -> Vec<u64> {
    store
        .load(Table::PersistentOpens)
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

#[test]
fn a_persistent_open_is_kept_in_the_store_and_restored_from_it() {
    let store = Arc::new(MemoryStore::default());
    let first = ca_server(&store, None);
    let mut opener = client(&first);
    let create_guid = Guid([0x42; 16]);
    let reply = opener.call(
        Command::CREATE,
        &create_with(CreateContext::DurableHandleRequestV2(
            DurableHandleRequestV2 {
                timeout: 60_000,
                flags: DurableHandleFlags::PERSISTENT,
                create_guid,
            },
        )),
        None,
    );
    let created = reply.responses.last().unwrap();
    assert_eq!(created.status(), NtStatus::SUCCESS);
    let file_id = CreateResponse::decode(&created.pdu).unwrap().file_id;
    assert_eq!(records(&store), [file_id.persistent]);

    // The server stops (its opens gone with it); another starts on the same store and files.
    let second = ca_server(&store, Some(&first));
    assert_eq!(second.restore_persistent_handles(), 1);
    let mut back = client(&second);
    let reply = back.call(
        Command::CREATE,
        &create_with(CreateContext::DurableHandleReconnectV2(
            DurableHandleReconnectV2 {
                file_id,
                create_guid,
                flags: DurableHandleFlags::PERSISTENT,
            },
        )),
        None,
    );
    assert_eq!(reply.status(), Some(NtStatus::SUCCESS));
    assert_eq!(
        back.call(Command::CLOSE, &close_body(), Some(file_id))
            .status(),
        Some(NtStatus::SUCCESS)
    );
    assert!(records(&store).is_empty(), "closing removed the record");
}
