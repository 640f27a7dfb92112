//! Multichannel over the in-memory server (no-security provider, which takes any signature):
//! a second connection binds to a session and serves it, outlives the first, carries the
//! breaks of the first's opens once it is gone, and goes with the session's LOGOFF; bindings
//! the server must refuse are refused without harming the session (MS-SMB2 3.3.5.5 step 4).

use std::sync::Arc;
use std::time::Duration;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::{Limit, Settings};
use smb3d_smb2::Command;
use smb3d_smb2::create::{CreateDisposition, CreateOptions, CreateResponse, OplockLevel};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::header::HeaderFlags;
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::session_setup::SessionSetupFlags;
use smb3d_testkit::client::{Client, TEST_USER};
use smb3d_testkit::harness::{self, SHARE_UNC, TestServer};
use smb3d_testkit::ntlm::NtlmClient;
use smb3d_testkit::seeds::{create_body, read_body, write_body};

fn server(settings: Settings) -> TestServer {
    TestServer::new(settings, Arc::new(NullProvider)).unwrap()
}

/// A client logged on over `dialect` and connected to the share, with a file written.
fn first_channel(server: &TestServer, dialect: Dialect) -> (Client<'_>, FileId) {
    let mut client = Client::new(server.connect());
    client.negotiate(dialect);
    client.login_as(&TEST_USER);
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    let file = client
        .create("bound.txt", CreateDisposition::OVERWRITE_IF)
        .unwrap();
    let write = client.call(Command::WRITE, &write_body(0, b"channel"), Some(file));
    assert_eq!(write.status(), Some(NtStatus::SUCCESS));
    (client, file)
}

/// A new connection that has negotiated `dialect`.
fn negotiated(server: &TestServer, dialect: Dialect) -> Client<'_> {
    let mut client = Client::new(server.connect());
    client.negotiate(dialect);
    client
}

/// A new 3.1.1 connection bound to the session `session_id`.
fn bound(server: &TestServer, session_id: u64) -> Client<'_> {
    let mut client = negotiated(server, Dialect::SMB3_1_1);
    assert_eq!(client.bind(session_id, &TEST_USER), Some(NtStatus::SUCCESS));
    client
}

fn logoff(client: &mut Client<'_>) -> Option<NtStatus> {
    client.call(Command::LOGOFF, &[4, 0, 0, 0], None).status()
}

fn read(client: &mut Client<'_>, file: FileId) -> Option<NtStatus> {
    client
        .call(Command::READ, &read_body(0, 7), Some(file))
        .status()
}

#[test]
fn a_bound_connection_serves_the_session_and_outlives_the_first() {
    let server = server(harness::settings());
    let (mut first, file) = first_channel(&server, Dialect::SMB3_1_1);
    let mut second = negotiated(&server, Dialect::SMB3_1_1);
    // Before binding, the session is not this connection's.
    second.session_id = first.session_id;
    second.tree_id = first.tree_id;
    assert_eq!(
        read(&mut second, file),
        Some(NtStatus::USER_SESSION_DELETED)
    );
    assert_eq!(
        second.bind(first.session_id, &TEST_USER),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(read(&mut second, file), Some(NtStatus::SUCCESS));
    // Binding again on a bound connection is refused; the session stays.
    assert_eq!(
        second.bind(first.session_id, &TEST_USER),
        Some(NtStatus::REQUEST_NOT_ACCEPTED)
    );
    first.conn.close();
    assert_eq!(read(&mut second, file), Some(NtStatus::SUCCESS));
    assert_eq!(server.counts().sessions, 1);
    // LOGOFF on the remaining channel ends the session.
    assert_eq!(logoff(&mut second), Some(NtStatus::SUCCESS));
    assert_eq!(
        read(&mut second, file),
        Some(NtStatus::USER_SESSION_DELETED)
    );
    second.conn.close();
    assert!(server.counts().is_empty(), "{:?}", server.counts());
}

#[test]
fn logoff_on_one_channel_ends_the_session_on_all() {
    let server = server(harness::settings());
    let (mut first, file) = first_channel(&server, Dialect::SMB3_1_1);
    let mut second = bound(&server, first.session_id);
    assert_eq!(logoff(&mut second), Some(NtStatus::SUCCESS));
    assert_eq!(read(&mut first, file), Some(NtStatus::USER_SESSION_DELETED));
}

#[test]
fn bindings_the_server_must_refuse_leave_the_session_alone() {
    // The status of binding a connection of `dialect` to a session set up over `origin`.
    let binding = |settings: Settings, origin: Dialect, dialect: Dialect, signed: bool| {
        let server = server(settings);
        let (mut first, file) = first_channel(&server, origin);
        let mut second = negotiated(&server, dialect);
        let status = if signed {
            second.bind(first.session_id, &TEST_USER)
        } else {
            let (_, token) = NtlmClient::start(false);
            second
                .setup_leg(
                    first.session_id,
                    &token,
                    SessionSetupFlags::BINDING,
                    HeaderFlags::empty(),
                )
                .status()
        };
        assert_eq!(read(&mut first, file), Some(NtStatus::SUCCESS));
        status
    };
    let on = harness::settings;
    let off = || Settings {
        multichannel: false,
        ..harness::settings()
    };
    use Dialect as D;
    // Each case alone, in the order the checks run.
    let cases = [
        (
            on(),
            D::SMB3_1_1,
            D::SMB3_0_2,
            true,
            NtStatus::REQUEST_OUT_OF_SEQUENCE,
        ),
        (
            on(),
            D::SMB3_0_2,
            D::SMB2_1,
            true,
            NtStatus::REQUEST_NOT_ACCEPTED,
        ),
        (
            off(),
            D::SMB3_0_2,
            D::SMB3_0_2,
            true,
            NtStatus::REQUEST_NOT_ACCEPTED,
        ),
        (
            on(),
            D::SMB3_0_2,
            D::SMB3_0_2,
            false,
            NtStatus::INVALID_PARAMETER,
        ),
        (
            on(),
            D::SMB3_0_2,
            D::SMB3_0,
            true,
            NtStatus::INVALID_PARAMETER,
        ),
        (on(), D::SMB3_0_2, D::SMB3_0_2, true, NtStatus::SUCCESS),
    ];
    for (settings, origin, dialect, signed, status) in cases {
        assert_eq!(
            binding(settings, origin, dialect, signed),
            Some(status),
            "{origin:?} bound over {dialect:?}, signed {signed}"
        );
    }
}

#[test]
fn a_session_takes_as_many_channels_as_the_limit_allows() {
    let mut settings = harness::settings();
    settings.limits.max_channels_per_session = 2;
    let server = server(settings);
    let (mut first, file) = first_channel(&server, Dialect::SMB3_1_1);
    let mut second = bound(&server, first.session_id);
    let mut third = negotiated(&server, Dialect::SMB3_1_1);
    assert_eq!(
        third.bind(first.session_id, &TEST_USER),
        Some(NtStatus::INSUFFICIENT_RESOURCES)
    );
    assert!(server.server.limit_hits().contains(&(Limit::Channels, 1)));
    // A channel that goes makes room.
    second.conn.close();
    assert_eq!(
        third.bind(first.session_id, &TEST_USER),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(read(&mut first, file), Some(NtStatus::SUCCESS));
}

#[test]
fn a_break_goes_through_another_channel_once_the_opens_is_gone() {
    let server = server(harness::settings());
    let mut first = Client::new(server.connect());
    assert_eq!(first.connect(), Some(NtStatus::SUCCESS));
    let mut body = create_body(
        "batch.txt",
        AccessMask(0x001F_01FF),
        CreateDisposition::OVERWRITE_IF,
        CreateOptions::NON_DIRECTORY_FILE,
    );
    // CREATE's RequestedOplockLevel.
    body[3] = OplockLevel::BATCH.0;
    let created = first.call(Command::CREATE, &body, None);
    let response = created.responses.last().unwrap();
    assert_eq!(
        CreateResponse::decode(&response.pdu).unwrap().oplock_level,
        OplockLevel::BATCH
    );
    let mut second = bound(&server, first.session_id);
    first.conn.close();
    // Another client's open needs the batch oplock broken; the open's connection is gone, so
    // the break comes through the session's other channel.
    let mut other = Client::new(server.connect());
    assert_eq!(other.connect(), Some(NtStatus::SUCCESS));
    let _waiting = other.create("batch.txt", CreateDisposition::OPEN);
    let unasked = second.wait(Duration::from_millis(50));
    assert!(
        unasked
            .responses
            .iter()
            .any(|r| r.header.command == Command::OPLOCK_BREAK),
        "{unasked:?}"
    );
}
