//! The server's limits and timeouts (docs/limits.md), each driven to its edge over the
//! in-memory server: what is refused, with which status, and that the server then still holds
//! nothing it should not.

use std::sync::Arc;
use std::time::{Duration, Instant};

use smb3d_auth::{Account, CredentialStore};
use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::NtStatus;
use smb3d_fscc::{EaFlags, FullEa, FullEaListEncoder};
use smb3d_server::limits::DEFAULT_MAX_FRAME;
use smb3d_server::{Limit, Settings};
use smb3d_smb2::Command;
use smb3d_smb2::create::CreateDisposition;
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::lock::{LockElement, LockElements, LockFlags, LockRequest};
use smb3d_smb2::negotiate::Dialect;
use smb3d_testkit::client::{Client, Reply, TEST_USER};
use smb3d_testkit::harness::{self, SHARE_UNC, TestServer};
use smb3d_testkit::ntlm::Logon;
use smb3d_testkit::packet;
use smb3d_testkit::seeds::{query_directory_body, set_info_body};
use smb3d_wire::Writer;

fn server(settings: Settings) -> TestServer {
    TestServer::new(settings, Arc::new(NullProvider)).unwrap()
}

fn with_limits(change: impl FnOnce(&mut smb3d_server::Limits)) -> Settings {
    let mut settings = harness::settings();
    change(&mut settings.limits);
    settings
}

fn connected(server: &TestServer) -> Client<'_> {
    let mut client = Client::new(server.connect());
    assert_eq!(client.connect(), Some(NtStatus::SUCCESS));
    client
}

const ECHO_BODY: [u8; 4] = [4, 0, 0, 0];

#[test]
fn compound_longer_than_the_limit_disconnects() {
    let server = server(with_limits(|l| l.max_compound = 4));
    let mut client = connected(&server);
    let four: Vec<Vec<u8>> = (0..4)
        .map(|_| client.pdu(Command::ECHO, &ECHO_BODY, Default::default()))
        .collect();
    let reply = client.send(packet::chain(&four));
    assert_eq!(reply.responses.len(), 4);
    assert!(!reply.disconnected);
    let five: Vec<Vec<u8>> = (0..5)
        .map(|_| client.pdu(Command::ECHO, &ECHO_BODY, Default::default()))
        .collect();
    let reply = client.send(packet::chain(&five));
    assert!(reply.disconnected && reply.responses.is_empty());
    assert_eq!(server.server.limit_hits()[1], (Limit::Compound, 1));
    let metrics = server.server.render_metrics();
    assert!(
        metrics
            .lines()
            .any(|l| l == "smb3d_limit_hits_total{limit=\"compound\"} 1"),
        "{metrics}"
    );
    drop(client);
    assert!(server.counts().is_empty());
}

#[test]
fn unknown_command_disconnects_without_an_answer() {
    let server = server(harness::settings());
    let mut client = connected(&server);
    let reply = client.call(Command(0x13), &ECHO_BODY, None);
    assert!(reply.disconnected && reply.responses.is_empty());
}

#[test]
fn sessions_per_connection_are_bounded() {
    let server = server(with_limits(|l| {
        l.max_sessions_per_connection = 3;
        l.max_session_setups_in_progress = 1;
    }));
    let mut client = Client::new(server.connect());
    client.negotiate(Dialect::SMB3_1_1);
    assert_eq!(
        client.login_as(&TEST_USER).status(),
        Some(NtStatus::SUCCESS)
    );
    // One exchange may be in progress, not two.
    let (ntlm, first) = client.start_logon();
    assert_eq!(first.status(), Some(NtStatus::MORE_PROCESSING_REQUIRED));
    let (_, second) = client.start_logon();
    assert_eq!(second.status(), Some(NtStatus::INSUFFICIENT_RESOURCES));
    let done = client.finish_logon(&ntlm, first, &TEST_USER);
    assert_eq!(done.status(), Some(NtStatus::SUCCESS));
    // Three sessions are the most.
    assert_eq!(
        client.login_as(&TEST_USER).status(),
        Some(NtStatus::SUCCESS)
    );
    let fourth = client.login_as(&TEST_USER);
    assert_eq!(fourth.status(), Some(NtStatus::INSUFFICIENT_RESOURCES));
    assert_eq!(server.counts().sessions, 3);
    assert!(server.server.limit_hits().contains(&(Limit::Sessions, 2)));
}

#[test]
fn tree_connects_per_session_are_bounded() {
    let server = server(with_limits(|l| l.max_trees_per_session = 2));
    let mut client = connected(&server);
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    assert_eq!(
        client.tree_connect(SHARE_UNC),
        Some(NtStatus::INSUFFICIENT_RESOURCES)
    );
}

#[test]
fn opens_per_session_are_bounded() {
    let server = server(with_limits(|l| l.max_opens_per_session = 2));
    let mut client = connected(&server);
    let first = client
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    client.create("dir", CreateDisposition::OPEN).unwrap();
    assert_eq!(
        client.create("dir\\file.txt", CreateDisposition::OPEN),
        Err(NtStatus::TOO_MANY_OPENED_FILES)
    );
    // Closing one makes room again.
    let close = smb3d_testkit::seeds::close_body();
    assert_eq!(
        client.call(Command::CLOSE, &close, Some(first)).status(),
        Some(NtStatus::SUCCESS)
    );
    assert!(
        client
            .create("dir\\file.txt", CreateDisposition::OPEN)
            .is_ok()
    );
    // Named pipes count too.
    assert_eq!(
        client.tree_connect("\\\\testkit\\IPC$"),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(
        client.create("srvsvc", CreateDisposition::OPEN),
        Err(NtStatus::TOO_MANY_OPENED_FILES)
    );
}

fn lock_body(ranges: &[(u64, u64)], flags: LockFlags) -> Vec<u8> {
    let mut elements = Vec::new();
    for &(offset, length) in ranges {
        LockElement {
            offset,
            length,
            flags,
        }
        .write(&mut Writer::new(&mut elements));
    }
    packet::body(|w| {
        LockRequest {
            lock_sequence: 0,
            file_id: FileId::default(),
            locks: LockElements::new(&elements).unwrap(),
        }
        .encode(w)
    })
}

#[test]
fn locks_per_open_are_bounded() {
    let server = server(with_limits(|l| l.max_locks_per_open = 3));
    let mut client = connected(&server);
    let file = client
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    let now = LockFlags::EXCLUSIVE_LOCK | LockFlags::FAIL_IMMEDIATELY;
    let two = lock_body(&[(0, 1), (1, 1)], now);
    assert_eq!(
        client.call(Command::LOCK, &two, Some(file)).status(),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(
        client.call(Command::LOCK, &two, Some(file)).status(),
        Some(NtStatus::INSUFFICIENT_RESOURCES)
    );
    let one = lock_body(&[(5, 1)], now);
    assert_eq!(
        client.call(Command::LOCK, &one, Some(file)).status(),
        Some(NtStatus::SUCCESS)
    );
    assert!(server.server.limit_hits().contains(&(Limit::Locks, 1)));
}

#[test]
fn locks_per_file_are_bounded_across_its_opens() {
    let server = server(with_limits(|l| l.max_locks_per_file = 3));
    let mut client = connected(&server);
    let first = client
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    let second = client
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    let now = LockFlags::SHARED_LOCK | LockFlags::FAIL_IMMEDIATELY;
    let two = lock_body(&[(0, 1), (1, 1)], now);
    assert_eq!(
        client.call(Command::LOCK, &two, Some(first)).status(),
        Some(NtStatus::SUCCESS)
    );
    // The second open holds none, but the file holds two of its three.
    assert_eq!(
        client.call(Command::LOCK, &two, Some(second)).status(),
        Some(NtStatus::INSUFFICIENT_RESOURCES)
    );
    let one = lock_body(&[(5, 1)], now);
    assert_eq!(
        client.call(Command::LOCK, &one, Some(second)).status(),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(
        client.call(Command::LOCK, &one, Some(first)).status(),
        Some(NtStatus::INSUFFICIENT_RESOURCES)
    );
    // An unlock makes room.
    let unlock = lock_body(&[(0, 1)], LockFlags::UNLOCK);
    assert_eq!(
        client.call(Command::LOCK, &unlock, Some(first)).status(),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(
        client.call(Command::LOCK, &one, Some(first)).status(),
        Some(NtStatus::SUCCESS)
    );
    assert!(server.server.limit_hits().contains(&(Limit::Locks, 2)));
}

#[test]
fn open_files_in_the_whole_server_are_bounded() {
    let server = server(with_limits(|l| l.max_open_files = 3));
    let mut a = connected(&server);
    let mut b = connected(&server);
    let first = a.create("dir\\file.txt", CreateDisposition::OPEN).unwrap();
    a.create("dir", CreateDisposition::OPEN).unwrap();
    b.create("dir\\file.txt", CreateDisposition::OPEN).unwrap();
    assert_eq!(
        b.create("dir\\file.txt", CreateDisposition::OPEN),
        Err(NtStatus::INSUFFICIENT_RESOURCES)
    );
    assert_eq!(
        a.create("new.txt", CreateDisposition::CREATE),
        Err(NtStatus::INSUFFICIENT_RESOURCES)
    );
    // A refused create leaves nothing behind.
    assert_eq!(
        a.create("new.txt", CreateDisposition::OPEN),
        Err(NtStatus::INSUFFICIENT_RESOURCES)
    );
    // A close anywhere makes room for anyone.
    let close = smb3d_testkit::seeds::close_body();
    assert_eq!(
        a.call(Command::CLOSE, &close, Some(first)).status(),
        Some(NtStatus::SUCCESS)
    );
    assert!(b.create("dir\\file.txt", CreateDisposition::OPEN).is_ok());
    // Named pipes hold no descriptor: they do not count.
    assert_eq!(a.tree_connect("\\\\testkit\\IPC$"), Some(NtStatus::SUCCESS));
    assert!(a.create("srvsvc", CreateDisposition::OPEN).is_ok());
    assert!(server.server.limit_hits().contains(&(Limit::OpenFiles, 3)));
    let metrics = server.server.render_metrics();
    assert!(
        metrics
            .lines()
            .any(|l| l == "smb3d_limit_hits_total{limit=\"open_files\"} 3"),
        "{metrics}"
    );
}

#[test]
fn waiting_requests_per_connection_are_bounded() {
    let server = server(with_limits(|l| l.max_async_requests = 1));
    let mut client = connected(&server);
    let holder = client
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    let waiter = client
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    let exclusive = LockFlags::EXCLUSIVE_LOCK;
    let held = lock_body(&[(0, 10)], exclusive | LockFlags::FAIL_IMMEDIATELY);
    assert_eq!(
        client.call(Command::LOCK, &held, Some(holder)).status(),
        Some(NtStatus::SUCCESS)
    );
    let blocking = lock_body(&[(0, 10)], exclusive);
    let first = client.call(Command::LOCK, &blocking, Some(waiter));
    assert_eq!(first.status(), Some(NtStatus::PENDING));
    let second = client.call(Command::LOCK, &blocking, Some(waiter));
    assert_eq!(second.status(), Some(NtStatus::INSUFFICIENT_RESOURCES));
}

fn ea_list(entries: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut w = Writer::new(&mut buf);
    let mut list = FullEaListEncoder::new(&w, usize::MAX);
    for &(name, value) in entries {
        list.push(
            &mut w,
            &FullEa {
                flags: EaFlags::empty(),
                name,
                value,
            },
        );
    }
    buf
}

const FULL_EA_INFORMATION: u8 = 15;

#[test]
fn ea_lists_are_bounded_and_checked() {
    let server = server(with_limits(|l| l.max_ea_size = 64));
    let mut client = connected(&server);
    let file = client
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    let mut set = |buffer: &[u8]| {
        let body = set_info_body(FULL_EA_INFORMATION, buffer);
        client.call(Command::SET_INFO, &body, Some(file)).status()
    };
    assert_eq!(set(&ea_list(&[(b"A", b"small")])), Some(NtStatus::SUCCESS));
    assert_eq!(
        set(&ea_list(&[(b"A", &[b'v'; 100])])),
        Some(NtStatus::EA_TOO_LARGE)
    );
    let mut next_past_end = ea_list(&[(b"A", b"1"), (b"B", b"2")]);
    next_past_end[..4].copy_from_slice(&0x400u32.to_le_bytes());
    assert_eq!(set(&next_past_end), Some(NtStatus::EA_LIST_INCONSISTENT));
    let mut value_past_entry = ea_list(&[(b"A", b"1")]);
    value_past_entry[6..8].copy_from_slice(&300u16.to_le_bytes());
    assert_eq!(set(&value_past_entry), Some(NtStatus::EA_LIST_INCONSISTENT));
}

#[test]
fn set_info_buffer_beyond_max_transact_is_refused() {
    let mut settings = with_limits(|_| {});
    settings.max_io_size = 1000;
    let server = server(settings);
    let mut client = connected(&server);
    let file = client
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    let eas = ea_list(&[(b"A", &[b'v'; 1200])]);
    let body = set_info_body(FULL_EA_INFORMATION, &eas);
    assert_eq!(
        client.call(Command::SET_INFO, &body, Some(file)).status(),
        Some(NtStatus::INVALID_PARAMETER)
    );
}

#[test]
fn security_descriptors_are_bounded() {
    let server = server(with_limits(|l| l.max_security_descriptor_size = 100));
    let mut client = connected(&server);
    let file = client
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    // A self-relative descriptor with an empty DACL, padded past the limit.
    let mut sd = vec![
        1, 0, 0x04, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0,
    ];
    sd.extend_from_slice(&[2, 0, 8, 0, 0, 0, 0, 0]);
    sd.resize(120, 0);
    let body = packet::body(|w| {
        smb3d_smb2::set_info::SetInfoRequest {
            info_type: smb3d_smb2::query_info::InfoType::SECURITY,
            file_info_class: 0,
            buffer: &sd,
            additional_information: 4,
            file_id: FileId::ANY,
        }
        .encode(w);
    });
    assert_eq!(
        client.call(Command::SET_INFO, &body, Some(file)).status(),
        Some(NtStatus::INVALID_PARAMETER)
    );
}

#[test]
fn directory_listings_are_cut_at_the_buffer_limit() {
    let server = server(with_limits(|l| l.max_directory_buffer = 200));
    let mut client = connected(&server);
    let dir = client.create("dir", CreateDisposition::OPEN).unwrap();
    // FileDirectoryInformation (class 1), all names; the client offers 64 KiB each time.
    let mut body = query_directory_body(1, "*");
    let mut answers = Vec::new();
    loop {
        let reply = client.call(Command::QUERY_DIRECTORY, &body, Some(dir));
        let response = reply.responses.last().unwrap().clone();
        if response.status() != NtStatus::SUCCESS {
            assert_eq!(response.status(), NtStatus::NO_MORE_FILES);
            break;
        }
        let length = u32::from_le_bytes(response.body()[4..8].try_into().unwrap());
        answers.push(length);
        // Continue where the enumeration stands (no RESTART_SCANS).
        body[3] = 0;
        assert!(answers.len() < 20, "the listing does not end");
    }
    // ".", ".." and file.txt take two answers, none over the limit.
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(answers.iter().all(|&n| n > 0 && n <= 200), "{answers:?}");
}

#[test]
fn frame_limit_rises_after_logon() {
    let server = server(harness::settings());
    let mut client = Client::new(server.connect());
    assert_eq!(client.conn.max_frame(), 64 * 1024);
    client.negotiate(Dialect::SMB3_1_1);
    assert_eq!(client.conn.max_frame(), 64 * 1024);
    client.login_as(&TEST_USER);
    assert_eq!(client.conn.max_frame(), DEFAULT_MAX_FRAME);
}

#[test]
fn negotiate_timeout_closes_a_silent_connection() {
    let server = server(harness::settings());
    let mut client = Client::new(server.connect());
    let next = client.conn.next_timer().unwrap();
    assert!(next <= Duration::from_secs(10) && next > Duration::from_secs(9));
    assert!(
        !client
            .conn
            .check_timers(Duration::from_secs(9))
            .disconnected
    );
    assert!(
        client
            .conn
            .check_timers(Duration::from_secs(11))
            .disconnected
    );
    assert!(
        server
            .server
            .limit_hits()
            .contains(&(Limit::NegotiateTimeout, 1))
    );
}

#[test]
fn logon_timeout_closes_a_connection_that_never_logs_on() {
    let server = server(harness::settings());
    let mut client = Client::new(server.connect());
    client.negotiate(Dialect::SMB3_1_1);
    assert!(
        !client
            .conn
            .check_timers(Duration::from_secs(30))
            .disconnected
    );
    assert!(
        client
            .conn
            .check_timers(Duration::from_secs(46))
            .disconnected
    );
    assert!(
        server
            .server
            .limit_hits()
            .contains(&(Limit::LogonTimeout, 1))
    );
}

#[test]
fn stalled_session_setup_is_dropped() {
    let server = server(harness::settings());
    let mut client = Client::new(server.connect());
    client.negotiate(Dialect::SMB3_1_1);
    let (ntlm, first) = client.start_logon();
    assert_eq!(first.status(), Some(NtStatus::MORE_PROCESSING_REQUIRED));
    assert_eq!(server.counts().sessions, 1);
    assert!(client.conn.next_timer().unwrap() <= Duration::from_secs(10));
    let expired = client.conn.check_timers(Duration::from_secs(11));
    assert!(!expired.disconnected, "the logon timeout is 45 s");
    assert_eq!(server.counts().sessions, 0);
    // The second leg now finds no session.
    let challenge = &first.responses[0];
    let token = smb3d_smb2::session_setup::SessionSetupResponse::decode(&challenge.pdu)
        .unwrap()
        .security_buffer
        .to_vec();
    let finished = ntlm.authenticate(&token, &TEST_USER).unwrap();
    let late = client.session_setup(challenge.header.session_id, &finished.token);
    assert_eq!(late.status(), Some(NtStatus::USER_SESSION_DELETED));
}

#[test]
fn idle_timeout_spares_connections_with_opens() {
    let server = server(harness::settings());
    let mut client = connected(&server);
    let idle = Duration::from_secs(15 * 60 + 1);
    let file = client
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    assert_eq!(
        client.conn.next_timer(),
        None,
        "nothing to time with an open"
    );
    assert!(!client.conn.check_timers(idle).disconnected);
    let close = smb3d_testkit::seeds::close_body();
    client.call(Command::CLOSE, &close, Some(file));
    assert!(client.conn.next_timer().unwrap() <= Duration::from_secs(15 * 60));
    assert!(
        !client
            .conn
            .check_timers(Duration::from_secs(60))
            .disconnected
    );
    assert!(client.conn.check_timers(idle).disconnected);
    assert!(server.counts().is_empty());
}

#[test]
fn zero_timeouts_are_off() {
    let server = server(with_limits(|l| {
        l.negotiate_timeout = Duration::ZERO;
        l.logon_timeout = Duration::ZERO;
        l.idle_timeout = Duration::ZERO;
    }));
    let mut client = Client::new(server.connect());
    assert_eq!(client.conn.next_timer(), None);
    assert!(
        !client
            .conn
            .check_timers(Duration::from_secs(86400))
            .disconnected
    );
}

fn throttled() -> Settings {
    with_limits(|l| {
        l.logon_failure_delay = Duration::from_millis(150);
        l.logon_throttle_after = 1;
        l.logon_throttle_delay = Duration::from_millis(450);
        l.logon_throttle_max_delay = Duration::from_millis(450);
    })
}

/// Logs on as `logon` and returns the status and how long the answer took to come.
fn timed_logon(client: &mut Client<'_>, logon: &Logon<'_>) -> (NtStatus, Duration) {
    client.negotiate(Dialect::SMB3_1_1);
    let started = Instant::now();
    let mut reply = client.login_as(logon);
    while reply.responses.is_empty() {
        assert!(started.elapsed() < Duration::from_secs(5), "no answer");
        let exchange = client.conn.wait(Duration::from_millis(5));
        reply = Reply {
            responses: exchange
                .frames
                .iter()
                .flat_map(|f| packet::responses(f).unwrap())
                .collect(),
            disconnected: exchange.disconnected,
        };
    }
    (reply.status().unwrap(), started.elapsed())
}

fn address(last: u8) -> std::net::SocketAddr {
    ([192, 0, 2, last], 50000).into()
}

#[test]
fn failed_logons_take_the_same_time_whether_the_user_exists_or_not() {
    let server = server(throttled());
    let wrong_password = Logon {
        password: "not the password",
        ..TEST_USER
    };
    let unknown_user = Logon {
        user: "nobody",
        ..TEST_USER
    };
    let mut a = Client::new(server.connect_from(address(1)).unwrap());
    let (status, wrong) = timed_logon(&mut a, &wrong_password);
    assert_eq!(status, NtStatus::LOGON_FAILURE);
    let mut b = Client::new(server.connect_from(address(2)).unwrap());
    let (status, unknown) = timed_logon(&mut b, &unknown_user);
    assert_eq!(status, NtStatus::LOGON_FAILURE);
    for took in [wrong, unknown] {
        assert!(
            took >= Duration::from_millis(150) && took < Duration::from_millis(400),
            "{wrong:?} {unknown:?}"
        );
    }
    // A good logon is answered at once.
    let mut c = Client::new(server.connect_from(address(3)).unwrap());
    let (status, good) = timed_logon(&mut c, &TEST_USER);
    assert_eq!(status, NtStatus::SUCCESS);
    assert!(good < Duration::from_millis(150), "{good:?}");
}

#[test]
fn repeated_failures_from_one_address_are_slowed_down() {
    let server = server(throttled());
    let wrong = Logon {
        password: "guess",
        ..TEST_USER
    };
    let mut first = Client::new(server.connect_from(address(7)).unwrap());
    let (_, took) = timed_logon(&mut first, &wrong);
    assert!(took < Duration::from_millis(400), "{took:?}");
    let mut second = Client::new(server.connect_from(address(7)).unwrap());
    let (status, took) = timed_logon(&mut second, &wrong);
    assert_eq!(status, NtStatus::LOGON_FAILURE);
    assert!(took >= Duration::from_millis(450), "{took:?}");
    // Another address is not slowed down.
    let mut other = Client::new(server.connect_from(address(8)).unwrap());
    let (_, took) = timed_logon(&mut other, &wrong);
    assert!(took < Duration::from_millis(400), "{took:?}");
    assert!(
        server
            .server
            .limit_hits()
            .contains(&(Limit::LogonThrottled, 1))
    );
}

/// The test user, and a user whose lookup panics: a stand-in for a bug reached from the
/// network.
struct PanicOn;

impl CredentialStore for PanicOn {
    fn account(&self, user: &str) -> Option<Account> {
        assert_ne!(user, "crash", "injected panic");
        Account::if_named(
            user,
            harness::USER,
            *smb3d_auth::ntlm::crypto::nt_hash(harness::PASSWORD),
        )
    }

    fn uid(&self, user: &str) -> Option<u32> {
        (user == harness::USER).then(harness::process_uid)
    }
}

#[test]
fn a_panic_closes_only_its_connection() {
    let server = TestServer::with_credentials(
        harness::settings(),
        Arc::new(NullProvider),
        Arc::new(PanicOn),
    )
    .unwrap();
    let mut bystander = connected(&server);
    let kept = bystander
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    let mut victim = Client::new(server.connect());
    victim.negotiate(Dialect::SMB3_1_1);
    let crash = Logon {
        user: "crash",
        ..TEST_USER
    };
    let reply = victim.login_as(&crash);
    assert!(reply.disconnected, "the panicking connection is closed");
    assert!(reply.responses.is_empty());
    assert!(server.server.limit_hits().contains(&(Limit::Panic, 1)));
    // The other connection and its open are untouched.
    let read = smb3d_testkit::seeds::read_body(0, 64);
    let answer = bystander.call(Command::READ, &read, Some(kept));
    assert_eq!(answer.status(), Some(NtStatus::SUCCESS));
    assert_eq!(server.counts().sessions, 1);
    drop(bystander);
    assert!(server.counts().is_empty());
}
