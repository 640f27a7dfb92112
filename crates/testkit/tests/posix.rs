//! The SMB3 POSIX extensions as raw frames against the in-memory server with a `posix` share:
//! the NEGOTIATE answer carries SMB3_POSIX_EXTENSIONS_AVAILABLE (type 0x0100, 16 bytes, the
//! tag) only when the request did; a POSIX create context of the wrong size is answered
//! STATUS_INVALID_PARAMETER and nothing is created.

use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::share::Share;
use smb3d_smb2::Command;
use smb3d_smb2::create::{
    CreateContext, CreateContexts, CreateDisposition, CreateOptions, CreateRequest,
    ImpersonationLevel, OplockLevel, RawCreateContext, ShareAccess,
};
use smb3d_smb2::negotiate::{
    Dialect, HashAlgorithm, NegotiateContext, NegotiateRequest, NegotiateResponse, SecurityMode,
};
use smb3d_smb2::posix::{NEGOTIATE_CONTEXT_TYPE, TAG};
use smb3d_testkit::client::{Client, TEST_USER};
use smb3d_testkit::harness::{self, SHARE, SHARE_UNC, TestServer};
use smb3d_testkit::packet::body;
use smb3d_vfs::{Vfs, VfsPath};
use smb3d_wire::{Guid, Writer};

fn server() -> TestServer {
    let server = TestServer::new(harness::settings(), Arc::new(NullProvider)).unwrap();
    server.server.replace_shares(vec![
        Arc::new(Share::ipc()),
        Arc::new(Share {
            posix: true,
            ..Share::disk(SHARE, Arc::new(server.vfs.clone()))
        }),
    ]);
    server
}

/// A 3.1.1 NEGOTIATE with preauth integrity and, with `posix`, the POSIX context; returns the
/// response's contexts of type 0x0100 as (data length, data).
fn negotiate(client: &mut Client<'_>, posix: bool) -> Vec<Vec<u8>> {
    let salt = [0x5a; 32];
    let mut contexts = vec![NegotiateContext::PreauthIntegrity {
        hash_algorithms: vec![HashAlgorithm::SHA512],
        salt: &salt,
    }];
    if posix {
        contexts.push(NegotiateContext::Unknown {
            context_type: NEGOTIATE_CONTEXT_TYPE,
            data: &TAG,
        });
    }
    let request = body(|w| {
        NegotiateRequest {
            security_mode: SecurityMode::SIGNING_ENABLED,
            capabilities: smb3d_smb2::negotiate::Capabilities::empty(),
            client_guid: Guid([0x22; 16]),
            dialects: vec![Dialect::SMB3_1_1],
            contexts,
        }
        .encode(w);
    });
    let reply = client.call(Command::NEGOTIATE, &request, None);
    let pdu = &reply.responses.last().unwrap().pdu;
    let response = NegotiateResponse::decode(pdu).unwrap();
    response
        .contexts
        .iter()
        .filter(|c| c.context_type() == NEGOTIATE_CONTEXT_TYPE)
        .map(|c| {
            let mut bytes = Vec::new();
            c.encode(&mut Writer::new(&mut bytes));
            bytes
        })
        .collect()
}

fn create_with_posix_data(client: &mut Client<'_>, name: &str, data: &[u8]) -> Option<NtStatus> {
    let mut chain = Vec::new();
    CreateContext::encode_chain(
        &[CreateContext::Other(RawCreateContext { name: &TAG, data })],
        &mut Writer::new(&mut chain),
    );
    let name: Vec<u8> = name.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let request = body(|w| {
        CreateRequest {
            security_flags: 0,
            requested_oplock_level: OplockLevel::NONE,
            impersonation_level: ImpersonationLevel::IMPERSONATION,
            smb_create_flags: 0,
            desired_access: AccessMask(0x0012_019F),
            file_attributes: 0x80,
            share_access: ShareAccess::READ,
            create_disposition: CreateDisposition::OPEN_IF,
            create_options: CreateOptions::NON_DIRECTORY_FILE,
            name: &name,
            contexts: CreateContexts::parse(&chain).unwrap(),
        }
        .encode(w);
    });
    client.call(Command::CREATE, &request, None).status()
}

#[test]
fn the_negotiate_answer_carries_the_context_only_when_asked() {
    let server = server();
    let mut asking = Client::new(server.connect());
    let mut expected = vec![0x00, 0x01, 16, 0, 0, 0, 0, 0];
    expected.extend_from_slice(&TAG);
    assert_eq!(negotiate(&mut asking, true), [expected]);
    let mut other = Client::new(server.connect());
    assert_eq!(negotiate(&mut other, false), Vec::<Vec<u8>>::new());
}

#[test]
fn a_posix_context_of_another_size_is_refused_and_nothing_is_made() {
    let server = server();
    let mut client = Client::new(server.connect());
    assert_eq!(negotiate(&mut client, true).len(), 1);
    client.login_as(&TEST_USER);
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    for (name, data) in [
        ("empty.txt", &[][..]),
        ("three.txt", &[0xA0, 0x01, 0][..]),
        ("five.txt", &[0xA0, 0x01, 0, 0, 0][..]),
    ] {
        assert_eq!(
            create_with_posix_data(&mut client, name, data),
            Some(NtStatus::INVALID_PARAMETER),
            "{name}"
        );
        assert!(
            server.vfs.stat(&VfsPath::parse(name).unwrap()).is_err(),
            "{name} was made"
        );
    }
    assert_eq!(
        create_with_posix_data(&mut client, "four.txt", &[0xA0, 0x01, 0, 0]),
        Some(NtStatus::SUCCESS)
    );
    let made = server
        .vfs
        .stat(&VfsPath::parse("four.txt").unwrap())
        .unwrap();
    assert_eq!(made.mode & 0o7777, 0o640);
}
