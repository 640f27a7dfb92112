//! Directory leases over the in-memory server (MS-SMB2 3.3.5.4, 3.3.5.9.11, 3.3.4.7): an SMB
//! 3.x client gets R or RH (never W) on a directory; another client's new file in it breaks
//! the lease to none, while the holder's own new file, naming the lease as its parent, does
//! not; with `directory_leases` off, or to a client whose NEGOTIATE does not ask for it (impacket,
//! replayed from a capture and compared with Samba's answer), neither the capability nor the
//! lease is offered.

use std::sync::Arc;
use std::time::Duration;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::Settings;
use smb3d_smb2::Command;
use smb3d_smb2::create::{
    CreateContext, CreateContexts, CreateDisposition, CreateOptions, CreateRequest, CreateResponse,
    ImpersonationLevel, Lease, LeaseFlags, LeaseKey, LeaseState, LeaseV2, OplockLevel,
    ResponseContext, ShareAccess,
};
use smb3d_smb2::negotiate::{Capabilities, Dialect, NegotiateResponse};
use smb3d_smb2::oplock_break::{LeaseBreakFlags, LeaseBreakNotification};
use smb3d_testkit::client::{Client, TEST_USER};
use smb3d_testkit::harness::{self, SHARE_UNC, TestServer};
use smb3d_testkit::packet::body;
use smb3d_testkit::seeds::{hex, negotiate_body};

/// impacket 0.13.1's NEGOTIATE (SMBConnection, captured on loopback): every dialect to 3.1.1,
/// Capabilities SMB2_GLOBAL_CAP_ENCRYPTION alone, preauth and encryption contexts (padded with
/// 0xFF). It does not ask for directory leasing, and crashes on a CREATE in the share root when
/// the answer offers it.
const IMPACKET_NEGOTIATE: &str = "
    fe534d42400001000000000000000000000000000100000000000000000000000000000000000000000000000000
    0000000000000000000000000000000000002400050001000000400000007555796b53616c675876714b58426861
    700000000200000002021002000302031103ffff01002600000000000100200001006e4a5761614374474851556f
    7841566258685373524f48434d744c4541757846ffff020004000000000001000100";
/// Samba 4.17's answer to it in the same capture: 3.1.1, DFS | LEASING | LARGE_MTU.
const SAMBA_ANSWER: &str = "
    fe534d424000010000000000000001000100000000000000010000000000000000000000000000000000000000000000
    000000000000000000000000000000004100010011030200766d00000000000000000000000000000700000000008000
    000080000000800010ad180f227edd01000000000000000080004a00d0000000604806062b0601050502a03e303ca00e
    300c060a2b06010401823702020aa32a3028a0261b246e6f745f646566696e65645f696e5f5246433431373840706c65
    6173655f69676e6f72650000000000000100260000000000010020000100a4c76de6f47f0c2315da80a49a71b01fd4ab
    320f761e7af767f9ddf2cc34d4350000020004000000000001000100";
const DIR_KEY: LeaseKey = LeaseKey([0xd1; 16]);
const RH: LeaseState = LeaseState(LeaseState::READ_CACHING.0 | LeaseState::HANDLE_CACHING.0);
const RWH: LeaseState = LeaseState(RH.0 | LeaseState::WRITE_CACHING.0);

fn server(settings: Settings) -> TestServer {
    TestServer::new(settings, Arc::new(NullProvider)).unwrap()
}

/// A 3.1.1 client connected to the share; returns it with the capabilities the server offered.
fn client(server: &TestServer) -> (Client<'_>, Capabilities) {
    let mut client = Client::new(server.connect());
    let reply = client.call(
        Command::NEGOTIATE,
        &negotiate_body(&[Dialect::SMB3_1_1]),
        None,
    );
    let negotiated = NegotiateResponse::decode(&reply.responses.last().unwrap().pdu).unwrap();
    client.login_as(&TEST_USER);
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    (client, negotiated.capabilities)
}

/// Creates `name` (a directory with `directory`) asking for a version 2 lease `state` under
/// `key`, naming `parent` as its parent lease; returns the lease granted.
fn create_leased(
    client: &mut Client<'_>,
    name: &str,
    directory: bool,
    key: LeaseKey,
    state: LeaseState,
    parent: Option<LeaseKey>,
) -> Lease {
    let lease = Lease {
        lease_key: key,
        lease_state: state,
        lease_flags: if parent.is_some() {
            LeaseFlags::PARENT_LEASE_KEY_SET
        } else {
            LeaseFlags::empty()
        },
        lease_duration: 0,
        v2: Some(LeaseV2 {
            parent_lease_key: parent.unwrap_or_default(),
            epoch: 0,
        }),
    };
    let mut chain = Vec::new();
    CreateContext::encode_chain(
        &[CreateContext::RequestLease(lease)],
        &mut smb3d_wire::Writer::new(&mut chain),
    );
    let name: Vec<u8> = name.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let request = body(|w| {
        CreateRequest {
            security_flags: 0,
            requested_oplock_level: OplockLevel::LEASE,
            impersonation_level: ImpersonationLevel::IMPERSONATION,
            smb_create_flags: 0,
            desired_access: AccessMask(0x001F_01FF),
            file_attributes: 0,
            share_access: ShareAccess::READ | ShareAccess::WRITE | ShareAccess::DELETE,
            create_disposition: CreateDisposition::CREATE,
            create_options: if directory {
                CreateOptions::DIRECTORY_FILE
            } else {
                CreateOptions::NON_DIRECTORY_FILE
            },
            name: &name,
            contexts: CreateContexts::parse(&chain).unwrap(),
        }
        .encode(w);
    });
    let reply = client.call(Command::CREATE, &request, None);
    let response = reply.responses.last().unwrap();
    assert_eq!(response.status(), NtStatus::SUCCESS);
    let created = CreateResponse::decode(&response.pdu).unwrap();
    created
        .contexts
        .iter()
        .find_map(|c| match c {
            ResponseContext::Lease(lease) => Some(*lease),
            _ => None,
        })
        .unwrap_or_default()
}

/// The lease breaks `client` received within a moment.
fn lease_breaks(client: &mut Client<'_>) -> Vec<LeaseBreakNotification> {
    client
        .wait(Duration::from_millis(100))
        .responses
        .iter()
        .filter(|r| r.header.command == Command::OPLOCK_BREAK)
        .map(|r| LeaseBreakNotification::decode(&r.pdu).unwrap())
        .collect()
}

#[test]
fn another_clients_new_file_breaks_a_directory_lease_the_holders_own_does_not() {
    let server = server(harness::settings());
    let (mut a, capabilities) = client(&server);
    assert!(capabilities.contains(Capabilities::DIRECTORY_LEASING));
    let granted = create_leased(&mut a, "leased", true, DIR_KEY, RWH, None);
    // Never write caching on a directory.
    assert_eq!(granted.lease_state, RH);
    assert_eq!(granted.v2.unwrap().epoch, 1);

    // The holder's own new file names the directory's lease as its parent: no break.
    let own = create_leased(
        &mut a,
        "leased\\mine.txt",
        false,
        LeaseKey([0xa1; 16]),
        RWH,
        Some(DIR_KEY),
    );
    assert!(own.lease_flags.contains(LeaseFlags::PARENT_LEASE_KEY_SET));
    assert!(lease_breaks(&mut a).is_empty());

    // Another client's new file breaks it to none; the create does not wait.
    let (mut b, _) = client(&server);
    let file = b.create("leased\\theirs.txt", CreateDisposition::CREATE);
    assert!(file.is_ok(), "{file:?}");
    let breaks = lease_breaks(&mut a);
    assert_eq!(breaks.len(), 1, "{breaks:?}");
    let brk = &breaks[0];
    assert_eq!(brk.lease_key, DIR_KEY);
    assert_eq!(brk.current_lease_state, RH);
    assert_eq!(brk.new_lease_state, LeaseState(0));
    assert_eq!(brk.new_epoch, 2);
    assert!(brk.flags.contains(LeaseBreakFlags::ACK_REQUIRED));
}

#[test]
fn without_directory_leasing_directories_get_no_lease() {
    let settings = Settings {
        directory_leases: false,
        ..harness::settings()
    };
    let server = server(settings);
    let (mut a, capabilities) = client(&server);
    assert!(!capabilities.contains(Capabilities::DIRECTORY_LEASING));
    let granted = create_leased(&mut a, "plain", true, DIR_KEY, RH, None);
    assert_eq!(granted.lease_state, LeaseState(0));
    // Files still get their leases.
    let file = create_leased(&mut a, "plain\\f.txt", false, LeaseKey([2; 16]), RWH, None);
    assert_eq!(file.lease_state, RWH);
}

/// MS-SMB2 3.3.5.4 offers directory leasing (and multichannel) only to a client whose
/// Capabilities ask for it, as Samba does: answering impacket's NEGOTIATE, smb3d offers no
/// capability Samba did not, and a version 2 lease on a directory is then not granted.
#[test]
fn a_client_that_does_not_ask_for_directory_leasing_is_not_offered_it() {
    let server = server(harness::settings());
    let mut client = Client::new(server.connect());
    let request = hex(IMPACKET_NEGOTIATE);
    let reply = client.call(Command::NEGOTIATE, &request[64..], None);
    let response = reply.responses.last().unwrap();
    assert_eq!(response.status(), NtStatus::SUCCESS);
    let ours = NegotiateResponse::decode(&response.pdu).unwrap();
    let answer = hex(SAMBA_ANSWER);
    let samba = NegotiateResponse::decode(&answer).unwrap();
    assert_eq!(ours.dialect_revision, samba.dialect_revision);
    assert!(
        samba.capabilities.contains(ours.capabilities),
        "smb3d offers {:#x}, Samba {:#x}",
        ours.capabilities.0,
        samba.capabilities.0
    );
    client.login_as(&TEST_USER);
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    let granted = create_leased(&mut client, "unasked", true, DIR_KEY, RH, None);
    assert_eq!(granted.lease_state, LeaseState(0));
    // Its files still get their leases.
    let file = create_leased(
        &mut client,
        "unasked\\f.txt",
        false,
        LeaseKey([3; 16]),
        RWH,
        None,
    );
    assert_eq!(file.lease_state, RWH);
}
