//! The server's timers run on its injected clock (issue 17 item 5): with a manual clock, a
//! disconnected durable open expires when the clock jumps past its timeout, at once, and not
//! a moment before, and a connection that never logs on is closed by one; the time NEGOTIATE
//! tells is the clock's.

use std::time::Duration;

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::Clock;
use smb3d_smb2::Command;
use smb3d_smb2::create::{
    CreateContext, CreateContexts, CreateDisposition, CreateOptions, CreateRequest, CreateResponse,
    ImpersonationLevel, OplockLevel, ShareAccess,
};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::negotiate::{Dialect, NegotiateResponse};
use smb3d_smb2::session_setup::SessionSetupResponse;
use smb3d_testkit::client::{Client, TEST_USER};
use smb3d_testkit::clock::ManualClock;
use smb3d_testkit::harness::{self, SHARE_UNC, TestServer};
use smb3d_testkit::packet::{Response, body};
use smb3d_testkit::seeds::tree_connect_body;

/// How long a durable v1 open waits for its client (MS-SMB2 3.3.5.9.6 leaves it to the
/// server; smb3d's is 16 minutes).
const V1_TIMEOUT: Duration = Duration::from_secs(16 * 60);

/// A CREATE of `dir\file.txt` for reading, with a batch oplock and `context`.
fn durable_create(context: CreateContext<'_>) -> Vec<u8> {
    let mut chain = Vec::new();
    CreateContext::encode_chain(&[context], &mut smb3d_wire::Writer::new(&mut chain));
    let name: Vec<u8> = "dir\\file.txt"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    body(|w| {
        CreateRequest {
            security_flags: 0,
            requested_oplock_level: OplockLevel::BATCH,
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
    })
}

/// A 3.0 client of the test user, connected to the share (unsigned: the client here cannot
/// sign with real keys).
fn client(server: &TestServer) -> Client<'_> {
    let mut client = Client::new(server.connect());
    assert_eq!(client.negotiate(Dialect::SMB3_0), Some(NtStatus::SUCCESS));
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

fn server_on_manual_clock() -> (std::sync::Arc<ManualClock>, TestServer) {
    let clock = ManualClock::new();
    let mut settings = harness::settings();
    settings.clock = clock.clone();
    let server = TestServer::new(settings, smb3d_crypto::default_provider()).unwrap();
    (clock, server)
}

/// A v1 durable open whose connection has gone: its FileId, for a reconnect.
fn disconnected_durable_open(server: &TestServer) -> FileId {
    let mut opener = client(server);
    let reply = opener.call(
        Command::CREATE,
        &durable_create(CreateContext::DurableHandleRequest),
        None,
    );
    let created = reply.responses.last().unwrap();
    assert_eq!(created.status(), NtStatus::SUCCESS);
    let file_id = CreateResponse::decode(&created.pdu).unwrap().file_id;
    opener.conn.close();
    file_id
}

fn reconnect(server: &TestServer, file_id: FileId) -> (Client<'_>, Option<NtStatus>) {
    let mut back = client(server);
    let request = durable_create(CreateContext::DurableHandleReconnect { file_id });
    let status = back.call(Command::CREATE, &request, None).status();
    (back, status)
}

#[test]
fn a_disconnected_durable_open_expires_when_the_clock_passes_its_timeout() {
    let (clock, server) = server_on_manual_clock();
    let file_id = disconnected_durable_open(&server);

    // A second short of the timeout, the open still waits for its client.
    clock.advance(V1_TIMEOUT - Duration::from_secs(1));
    let (mut back, status) = reconnect(&server, file_id);
    assert_eq!(status, Some(NtStatus::SUCCESS));
    back.conn.close();

    // Disconnected again: the timeout counts from this disconnect (the first one's timer,
    // due meanwhile, no longer applies), and passing it closes the open without any real
    // waiting.
    clock.advance(V1_TIMEOUT - Duration::from_secs(1));
    let (mut back, status) = reconnect(&server, file_id);
    assert_eq!(status, Some(NtStatus::SUCCESS), "expired early");
    back.conn.close();
    clock.advance(V1_TIMEOUT + Duration::from_secs(1));
    let (_, status) = reconnect(&server, file_id);
    assert_eq!(status, Some(NtStatus::OBJECT_NAME_NOT_FOUND));
}

/// NEGOTIATE's SystemTime (MS-SMB2 2.2.4) is the clock's wall time.
#[test]
fn negotiate_tells_the_clock_s_wall_time() {
    let clock = ManualClock::new();
    clock.advance(Duration::from_secs(365 * 24 * 3600));
    let mut settings = harness::settings();
    settings.clock = clock.clone();
    let server = TestServer::new(settings, smb3d_crypto::default_provider()).unwrap();
    let mut client = Client::new(server.connect());
    let reply = client.call(
        Command::NEGOTIATE,
        &smb3d_testkit::seeds::negotiate_body(&[Dialect::SMB3_0]),
        None,
    );
    let answer = reply.responses.last().unwrap();
    let told = NegotiateResponse::decode(&answer.pdu).unwrap().system_time;
    assert_eq!(told, clock.filetime());
}

/// A connection that negotiates but never logs on is closed once the clock passes its logon
/// timeout (docs/limits.md L18), and not before.
#[test]
fn a_connection_that_never_logs_on_is_closed_when_the_clock_passes_its_logon_timeout() {
    let clock = ManualClock::new();
    let mut settings = harness::settings();
    settings.clock = clock.clone();
    let logon_timeout = settings.limits.logon_timeout;
    let server = TestServer::new(settings, smb3d_crypto::default_provider()).unwrap();
    let mut client = Client::new(server.connect());
    assert_eq!(client.negotiate(Dialect::SMB3_0), Some(NtStatus::SUCCESS));
    assert_eq!(client.conn.next_timer(), Some(logon_timeout));
    clock.advance(logon_timeout - Duration::from_secs(1));
    assert!(!client.conn.check_timers(Duration::ZERO).disconnected);
    assert_eq!(client.conn.next_timer(), Some(Duration::from_secs(1)));
    clock.advance(Duration::from_secs(1));
    assert!(client.conn.check_timers(Duration::ZERO).disconnected);
}

/// The value of AV pair `id` in the TargetInfo of the NTLM CHALLENGE inside `token` (MS-NLMP
/// 2.2.1.2, 2.2.2.1).
fn challenge_av_pair(token: &[u8], id: u16) -> Option<Vec<u8>> {
    let start = token.windows(8).position(|w| w == b"NTLMSSP\0")?;
    let message = &token[start..];
    let field = |at: usize| u16::from_le_bytes([message[at], message[at + 1]]);
    let len = usize::from(field(40));
    let offset = u32::from_le_bytes(message[44..48].try_into().ok()?) as usize;
    let mut pairs = message.get(offset..offset + len)?;
    while pairs.len() >= 4 {
        let (av, av_len) = (
            u16::from_le_bytes([pairs[0], pairs[1]]),
            usize::from(u16::from_le_bytes([pairs[2], pairs[3]])),
        );
        let value = pairs.get(4..4 + av_len)?;
        if av == id {
            return Some(value.to_vec());
        }
        pairs = &pairs[4 + av_len..];
    }
    None
}

/// The CHALLENGE's MsvAvTimestamp (MS-NLMP 2.2.2.1) is the clock's wall time.
#[test]
fn the_ntlm_challenge_tells_the_clock_s_wall_time() {
    const MSV_AV_TIMESTAMP: u16 = 7;
    let clock = ManualClock::new();
    clock.advance(Duration::from_secs(365 * 24 * 3600));
    let mut settings = harness::settings();
    settings.clock = clock.clone();
    let server = TestServer::new(settings, smb3d_crypto::default_provider()).unwrap();
    let mut client = Client::new(server.connect());
    assert_eq!(client.negotiate(Dialect::SMB3_0), Some(NtStatus::SUCCESS));
    let (_, first) = client.start_logon();
    let challenge = first.responses.last().unwrap();
    assert_eq!(challenge.status(), NtStatus::MORE_PROCESSING_REQUIRED);
    let token = SessionSetupResponse::decode(&challenge.pdu)
        .unwrap()
        .security_buffer;
    let told = challenge_av_pair(token, MSV_AV_TIMESTAMP).expect("a timestamp");
    assert_eq!(told, clock.filetime().0.to_le_bytes());
}

/// A tree connect began at the clock's wall time (what `smb3d status` shows).
#[test]
fn a_tree_connect_began_at_the_clock_s_wall_time() {
    let clock = ManualClock::new();
    clock.advance(Duration::from_secs(365 * 24 * 3600));
    let mut settings = harness::settings();
    settings.clock = clock.clone();
    let server = TestServer::new(settings, smb3d_crypto::default_provider()).unwrap();
    let _client = client(&server);
    let trees = server.server.snapshot().trees;
    assert_eq!(trees.len(), 1);
    assert_eq!(trees[0].connected_at, clock.wall());
}

/// A request's latency is measured on the clock: a failed logon answered after the failure
/// delay, which passes by a jump of the clock, took that delay.
#[test]
fn request_latency_is_measured_on_the_clock() {
    let clock = ManualClock::new();
    let mut settings = harness::settings();
    settings.clock = clock.clone();
    let delay = Duration::from_secs(3600);
    settings.limits.logon_failure_delay = delay;
    let server = TestServer::new(settings, smb3d_crypto::default_provider()).unwrap();
    let mut client = Client::new(server.connect());
    assert_eq!(client.negotiate(Dialect::SMB3_0), Some(NtStatus::SUCCESS));
    let wrong = smb3d_testkit::ntlm::Logon {
        password: "not the password",
        ..TEST_USER
    };
    let reply = client.login_as(&wrong);
    assert!(reply.responses.is_empty(), "answered before the delay");
    clock.advance(delay);
    let mut answered = false;
    for _ in 0..1000 {
        let exchange = client.conn.wait(Duration::from_millis(5));
        if !exchange.frames.is_empty() {
            answered = true;
            break;
        }
    }
    assert!(answered, "no answer after the delay");
    let metrics = server.server.render_metrics();
    let sum: f64 = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix("smb3d_request_duration_seconds_sum{command=\"SESSION_SETUP\"} ")
        })
        .expect("SESSION_SETUP's latency")
        .parse()
        .unwrap();
    assert!(sum >= delay.as_secs_f64(), "{sum} s");
}

const THREE_HOURS: Duration = Duration::from_secs(3 * 3600);

/// Issue 22 item 5: the wall clock stepped 3 h forward and back while a durable open waits
/// for its client neither expires it early nor keeps it for ever: its timeout runs on the
/// monotonic time, and fires once it passes.
#[test]
fn wall_clock_steps_neither_expire_a_durable_open_early_nor_keep_it() {
    let (clock, server) = server_on_manual_clock();
    let file_id = disconnected_durable_open(&server);

    clock.step_wall_forward(THREE_HOURS);
    clock.advance(V1_TIMEOUT / 2);
    let (mut back, status) = reconnect(&server, file_id);
    assert_eq!(status, Some(NtStatus::SUCCESS), "expired by a step forward");
    // The session it came back in works across a step back.
    clock.step_wall_back(2 * THREE_HOURS);
    assert_eq!(
        back.call(Command::ECHO, &[4, 0, 0, 0], None).status(),
        Some(NtStatus::SUCCESS)
    );
    back.conn.close();

    // Wall time 3 h behind: the timeout still counts from this disconnect on the monotonic time.
    clock.advance(V1_TIMEOUT - Duration::from_secs(1));
    let (mut back, status) = reconnect(&server, file_id);
    assert_eq!(status, Some(NtStatus::SUCCESS), "expired early");
    back.conn.close();
    clock.step_wall_forward(THREE_HOURS);
    clock.advance(V1_TIMEOUT + Duration::from_secs(1));
    let (_, status) = reconnect(&server, file_id);
    assert_eq!(
        status,
        Some(NtStatus::OBJECT_NAME_NOT_FOUND),
        "never expired"
    );
}

/// Issue 22 item 5: a connection's logon timeout (L18) ignores wall clock steps.
#[test]
fn wall_clock_steps_neither_hasten_nor_hold_the_logon_timeout() {
    let clock = ManualClock::new();
    let mut settings = harness::settings();
    settings.clock = clock.clone();
    let logon_timeout = settings.limits.logon_timeout;
    let server = TestServer::new(settings, smb3d_crypto::default_provider()).unwrap();
    let mut client = Client::new(server.connect());
    assert_eq!(client.negotiate(Dialect::SMB3_0), Some(NtStatus::SUCCESS));
    clock.step_wall_forward(THREE_HOURS);
    assert!(
        !client.conn.check_timers(Duration::ZERO).disconnected,
        "early"
    );
    assert_eq!(client.conn.next_timer(), Some(logon_timeout));
    clock.step_wall_back(2 * THREE_HOURS);
    clock.advance(logon_timeout);
    assert!(
        client.conn.check_timers(Duration::ZERO).disconnected,
        "held"
    );
}

/// The LastWriteTime clients see through `file_id` (FileBasicInformation, MS-FSCC 2.4.7).
fn last_write_time(client: &mut Client<'_>, file_id: FileId) -> u64 {
    const FILE_BASIC_INFORMATION: u8 = 4;
    let request = smb3d_testkit::seeds::query_info_body(
        smb3d_smb2::query_info::InfoType::FILE,
        FILE_BASIC_INFORMATION,
        40,
    );
    let reply = client.call(Command::QUERY_INFO, &request, Some(file_id));
    let answer = reply.responses.last().unwrap();
    assert_eq!(answer.status(), NtStatus::SUCCESS);
    let output = smb3d_smb2::query_info::QueryInfoResponse::decode(&answer.pdu)
        .unwrap()
        .output;
    u64::from_le_bytes(output[16..24].try_into().unwrap())
}

fn write_one_byte(client: &mut Client<'_>, file_id: FileId) {
    let request = smb3d_testkit::seeds::write_body(0, b"x");
    let status = client
        .call(Command::WRITE, &request, Some(file_id))
        .status();
    assert_eq!(status, Some(NtStatus::SUCCESS));
}

fn close(client: &mut Client<'_>, file_id: FileId) {
    let request = smb3d_testkit::seeds::close_body();
    let status = client
        .call(Command::CLOSE, &request, Some(file_id))
        .status();
    assert_eq!(status, Some(NtStatus::SUCCESS));
}

const FILETIME_SECOND: u64 = 10_000_000;

/// Issue 22 item 5: a write's last-write time update shows two seconds later (MS-FSA
/// 2.1.5.3's timing as Windows keeps it), two seconds of the monotonic clock: a wall step back
/// of hours right after the write does not hold it.
#[test]
fn a_wall_step_back_does_not_hold_a_write_s_time_update() {
    let (clock, server) = server_on_manual_clock();
    let mut client = client(&server);
    let file = client
        .create(
            "dir\\written.txt",
            smb3d_smb2::create::CreateDisposition::OVERWRITE_IF,
        )
        .unwrap();
    let before = last_write_time(&mut client, file);
    clock.advance(Duration::from_secs(10));
    write_one_byte(&mut client, file);
    assert_eq!(last_write_time(&mut client, file), before, "shown at once");
    clock.step_wall_back(THREE_HOURS);
    clock.advance(Duration::from_secs(3));
    let after = last_write_time(&mut client, file);
    assert!(
        after > before,
        "the update was held: {after} after {before}"
    );
    close(&mut client, file);
}

/// Issue 22 item 5: the times smb3d keeps for an open file come from its clock, and a wall step
/// back of hours does not make a close store a time hours before the one clients were shown.
#[test]
fn a_wall_step_back_does_not_store_a_time_before_the_one_shown() {
    let (clock, server) = server_on_manual_clock();
    let mut client = client(&server);
    let file = client
        .create(
            "dir\\written.txt",
            smb3d_smb2::create::CreateDisposition::OVERWRITE_IF,
        )
        .unwrap();
    clock.step_wall_forward(THREE_HOURS);
    write_one_byte(&mut client, file);
    clock.advance(Duration::from_secs(3));
    let shown = last_write_time(&mut client, file);
    // The clock's wall time at the write, plus the two seconds' delay: not the system's.
    assert_eq!(shown, clock.filetime().0 - FILETIME_SECOND);
    // A second write after the update showed: the close updates the time again.
    write_one_byte(&mut client, file);
    clock.step_wall_back(2 * THREE_HOURS);
    clock.advance(Duration::from_secs(1));
    close(&mut client, file);
    let file = client
        .create(
            "dir\\written.txt",
            smb3d_smb2::create::CreateDisposition::OPEN,
        )
        .unwrap();
    let stored = last_write_time(&mut client, file);
    assert!(
        stored >= shown,
        "stored {} s before the time shown",
        (shown - stored) / FILETIME_SECOND
    );
    close(&mut client, file);
}

/// The final answers (not interim STATUS_PENDING ones) of `command` `client` got within a
/// moment of real time, for the server's tasks to run after a move of the clock.
fn answers(client: &mut Client<'_>, command: Command) -> Vec<NtStatus> {
    client
        .wait(Duration::from_millis(20))
        .responses
        .iter()
        .filter(|r| r.header.command == command && r.status() != NtStatus::PENDING)
        .map(Response::status)
        .collect()
}

/// `dir\file.txt` opened by `client` for reading and writing, shared with all, asking for a
/// version 1 lease of `state` (or none); returns the CREATE's final answers.
fn open_shared(
    client: &mut Client<'_>,
    lease: Option<smb3d_smb2::create::LeaseState>,
) -> Vec<Response> {
    let mut chain = Vec::new();
    let contexts: Vec<CreateContext<'_>> = lease
        .map(|state| {
            CreateContext::RequestLease(smb3d_smb2::create::Lease {
                lease_key: smb3d_smb2::create::LeaseKey([0x1e; 16]),
                lease_state: state,
                lease_flags: smb3d_smb2::create::LeaseFlags::empty(),
                lease_duration: 0,
                v2: None,
            })
        })
        .into_iter()
        .collect();
    CreateContext::encode_chain(&contexts, &mut smb3d_wire::Writer::new(&mut chain));
    let name: Vec<u8> = "dir\\file.txt"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let request = body(|w| {
        CreateRequest {
            security_flags: 0,
            requested_oplock_level: if lease.is_some() {
                OplockLevel::LEASE
            } else {
                OplockLevel::NONE
            },
            impersonation_level: ImpersonationLevel::IMPERSONATION,
            smb_create_flags: 0,
            desired_access: AccessMask::FILE_GENERIC_READ | AccessMask::FILE_GENERIC_WRITE,
            file_attributes: 0x80,
            share_access: ShareAccess::READ | ShareAccess::WRITE | ShareAccess::DELETE,
            create_disposition: CreateDisposition::OPEN,
            create_options: CreateOptions::NON_DIRECTORY_FILE,
            name: &name,
            contexts: CreateContexts::parse(&chain).unwrap(),
        }
        .encode(w)
    });
    client
        .call(Command::CREATE, &request, None)
        .responses
        .into_iter()
        .filter(|r| r.status() != NtStatus::PENDING)
        .collect()
}

fn statuses(responses: &[Response]) -> Vec<NtStatus> {
    responses.iter().map(Response::status).collect()
}

/// Issue 22 item 5: a lease break whose holder never acknowledges it times out once, when the
/// monotonic time passes the break timeout, whatever the wall clock does meanwhile (stepped 3 h
/// forward, 6 h back, 3 h forward): the open waiting on it is answered then, not before, and
/// once.
#[test]
fn a_lease_break_times_out_once_at_its_monotonic_time_whatever_the_wall_clock_does() {
    let (clock, server) = server_on_manual_clock();
    let timeout = smb3d_server::Settings::default().oplock_break_timeout;
    let rwh = smb3d_smb2::create::LeaseState(0x7);
    let mut holder = client(&server);
    assert_eq!(
        statuses(&open_shared(&mut holder, Some(rwh))),
        [NtStatus::SUCCESS]
    );
    let mut waiter = client(&server);
    // The second client's open breaks the holder's write caching and waits for its
    // acknowledgment, which never comes.
    assert!(open_shared(&mut waiter, None).is_empty());
    let breaks = holder.wait(Duration::from_millis(20)).responses;
    assert_eq!(breaks.len(), 1, "one break");
    assert_eq!(breaks[0].header.command, Command::OPLOCK_BREAK);

    clock.step_wall_forward(THREE_HOURS);
    assert_eq!(
        answers(&mut waiter, Command::CREATE),
        [],
        "a step forward timed it out"
    );
    clock.advance(timeout / 2);
    clock.step_wall_back(2 * THREE_HOURS);
    assert_eq!(
        answers(&mut waiter, Command::CREATE),
        [],
        "a step back timed it out"
    );
    clock.advance(timeout / 2 - Duration::from_secs(1));
    assert_eq!(answers(&mut waiter, Command::CREATE), [], "timed out early");
    clock.step_wall_forward(THREE_HOURS);
    clock.advance(Duration::from_secs(1));
    assert_eq!(
        answers(&mut waiter, Command::CREATE),
        [NtStatus::SUCCESS],
        "the timeout never fired"
    );
    // Nothing fires again.
    clock.step_wall_back(THREE_HOURS);
    clock.advance(2 * timeout);
    assert_eq!(answers(&mut waiter, Command::CREATE), []);
    assert!(holder.wait(Duration::from_millis(20)).responses.is_empty());
}

/// `client`'s LOCK of bytes 0 to 9 of `file_id`, exclusive: `Some(wait)` waits for a
/// conflicting lock to go if `wait`, `None` unlocks; returns the final answers.
fn lock(client: &mut Client<'_>, file_id: FileId, wait: Option<bool>) -> Vec<NtStatus> {
    use smb3d_smb2::lock::{LockElement, LockElements, LockFlags, LockRequest};
    let flags = match wait {
        Some(true) => LockFlags::EXCLUSIVE_LOCK,
        Some(false) => LockFlags(LockFlags::EXCLUSIVE_LOCK.0 | LockFlags::FAIL_IMMEDIATELY.0),
        None => LockFlags::UNLOCK,
    };
    let mut element = Vec::new();
    LockElement {
        offset: 0,
        length: 10,
        flags,
    }
    .write(&mut smb3d_wire::Writer::new(&mut element));
    let request = body(|w| {
        LockRequest {
            lock_sequence: 0,
            file_id,
            locks: LockElements::new(&element).unwrap(),
        }
        .encode(w)
    });
    statuses(
        &client
            .call(Command::LOCK, &request, Some(file_id))
            .responses
            .into_iter()
            .filter(|r| r.status() != NtStatus::PENDING)
            .collect::<Vec<_>>(),
    )
}

fn opened(responses: &[Response]) -> FileId {
    assert_eq!(statuses(responses), [NtStatus::SUCCESS]);
    CreateResponse::decode(&responses[0].pdu).unwrap().file_id
}

/// Issue 22 item 5: a blocking LOCK waiting for another client's lock has no timer: wall steps
/// of hours and an hour of monotonic time neither grant nor fail it; the unlock grants it.
#[test]
fn wall_clock_steps_neither_grant_nor_fail_a_waiting_lock() {
    let (clock, server) = server_on_manual_clock();
    let mut holder = client(&server);
    let mut waiter = client(&server);
    let held = opened(&open_shared(&mut holder, None));
    let waiting = opened(&open_shared(&mut waiter, None));
    assert_eq!(lock(&mut holder, held, Some(false)), [NtStatus::SUCCESS]);
    assert_eq!(lock(&mut waiter, waiting, Some(true)), []);

    clock.step_wall_forward(THREE_HOURS);
    assert_eq!(
        answers(&mut waiter, Command::LOCK),
        [],
        "after a step forward"
    );
    clock.step_wall_back(2 * THREE_HOURS);
    assert_eq!(answers(&mut waiter, Command::LOCK), [], "after a step back");
    clock.advance(Duration::from_secs(3600));
    assert_eq!(answers(&mut waiter, Command::LOCK), [], "after an hour");
    assert_eq!(lock(&mut holder, held, None), [NtStatus::SUCCESS]);
    assert_eq!(
        answers(&mut waiter, Command::LOCK),
        [NtStatus::SUCCESS],
        "not granted at the unlock"
    );
}
