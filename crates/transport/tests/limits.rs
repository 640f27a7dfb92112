//! The limits the transport enforces, over real TCP on loopback: connections per address and
//! in total, the frame length before logon, the negotiate timeout, a stalled frame
//! (slowloris), a panic in one connection's work closing only that connection, and responses
//! a client does not read holding the reader back.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use smb3d_auth::{Account, CredentialStore, ServerIdentity};
use smb3d_crypto::fuzzing::NullProvider;
use smb3d_server::hosts::{HostRules, Network as HostNetwork};
use smb3d_server::share::Share;
use smb3d_server::{Limit, Limits, Server, Settings};
use smb3d_smb2::Command;
use smb3d_smb2::header::HeaderFlags;
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::session_setup::SessionSetupResponse;
use smb3d_testkit::ntlm::{Logon, NtlmClient};
use smb3d_testkit::packet;
use smb3d_testkit::seeds;
use smb3d_transport::TransportConfig;
use smb3d_vfs::MemoryVfs;

/// Knows `tester` (password `pw`) and panics when asked about `crash`: a stand-in for a bug
/// reached from the network.
struct Users;

impl CredentialStore for Users {
    fn account(&self, user: &str) -> Option<Account> {
        assert!(!user.eq_ignore_ascii_case("crash"), "injected panic");
        Account::if_named(user, "tester", *smb3d_auth::ntlm::crypto::nt_hash("pw"))
    }

    fn uid(&self, user: &str) -> Option<u32> {
        user.eq_ignore_ascii_case("tester")
            .then(smb3d_testkit::harness::process_uid)
    }
}

/// A served server on an ephemeral loopback port, on its own runtime thread.
struct Running {
    addr: SocketAddr,
    server: Arc<Server>,
    _runtime: tokio::runtime::Runtime,
}

fn start(limits: Limits) -> Running {
    start_with(limits, TransportConfig::default())
}

fn start_with(limits: Limits, transport: TransportConfig) -> Running {
    let settings = Settings {
        limits,
        ..Settings::default()
    };
    serve_with(settings, transport)
}

fn serve_with(settings: Settings, transport: TransportConfig) -> Running {
    let identity = ServerIdentity {
        netbios_domain: "WORKGROUP".into(),
        netbios_name: "TRANSPORT".into(),
        dns_domain: String::new(),
        dns_name: "transport".into(),
    };
    let shares = vec![
        Share::ipc(),
        Share::disk("share", Arc::new(MemoryVfs::new())),
    ];
    let server = Server::new(
        settings,
        identity,
        Arc::new(Users),
        Arc::new(NullProvider),
        shares,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listeners = runtime
        .block_on(smb3d_transport::bind(&["127.0.0.1:0".parse().unwrap()]))
        .unwrap();
    let addr = listeners[0].local_addr().unwrap();
    runtime.spawn(smb3d_transport::serve(
        listeners,
        server.clone(),
        transport,
        std::future::pending(),
    ));
    Running {
        addr,
        server,
        _runtime: runtime,
    }
}

/// A connection from the loopback address `source` (any of 127.0.0.0/8 reaches the server).
fn connect_from(addr: SocketAddr, source: [u8; 4]) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.bind(&SocketAddr::from((source, 0)).into()).unwrap();
    socket.connect(&addr.into()).unwrap();
    let stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
}

/// Whether the server closed the connection (end of stream or reset) within the read timeout.
fn closed(stream: &mut TcpStream) -> bool {
    let mut byte = [0u8; 1];
    match stream.read(&mut byte) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

fn send(stream: &mut TcpStream, message: &[u8]) {
    let len = u32::try_from(message.len()).unwrap().to_be_bytes();
    stream.write_all(&len).unwrap();
    stream.write_all(message).unwrap();
}

/// Reads one frame and returns its message.
fn receive(stream: &mut TcpStream) -> Vec<u8> {
    let mut prefix = [0u8; 4];
    stream.read_exact(&mut prefix).unwrap();
    let mut message = vec![0u8; u32::from_be_bytes(prefix) as usize];
    stream.read_exact(&mut message).unwrap();
    message
}

fn request(message_id: u64, session_id: u64, command: Command, body: &[u8]) -> Vec<u8> {
    let mut header = packet::request_header(command, message_id, session_id, 0);
    if command == Command::NEGOTIATE {
        header.credit_charge = 0;
    }
    packet::pdu(&header, body)
}

/// A SESSION_SETUP body carrying `token`.
fn setup(token: &[u8]) -> Vec<u8> {
    packet::body(|w| {
        smb3d_smb2::session_setup::SessionSetupRequest {
            flags: Default::default(),
            security_mode: Default::default(),
            capabilities: Default::default(),
            channel: 0,
            previous_session_id: 0,
            security_buffer: token,
        }
        .encode(w)
    })
}

/// NEGOTIATE 3.1.1 and log on as `user`; the status of the last answer, or None if the
/// server closed the connection.
fn logon(stream: &mut TcpStream, user: &str, password: &str) -> Option<u32> {
    logon_as(
        stream,
        &Logon {
            user,
            password,
            domain: "WORKGROUP",
            anonymous: false,
            mic: true,
            spnego: false,
        },
    )
}

/// NEGOTIATE 3.1.1 and log on with `logon`; as [`logon`].
fn logon_as(stream: &mut TcpStream, logon: &Logon<'_>) -> Option<u32> {
    let negotiate = seeds::negotiate_body(&[Dialect::SMB3_1_1]);
    send(stream, &request(0, 0, Command::NEGOTIATE, &negotiate));
    receive(stream);
    let (ntlm, token) = NtlmClient::start(false);
    send(
        stream,
        &request(1, 0, Command::SESSION_SETUP, &setup(&token)),
    );
    let challenge = packet::responses(&receive(stream)).unwrap().remove(0);
    let session_id = challenge.header.session_id;
    let server_token = SessionSetupResponse::decode(&challenge.pdu)
        .unwrap()
        .security_buffer
        .to_vec();
    let finished = ntlm.authenticate(&server_token, logon).unwrap();
    send(
        stream,
        &request(
            2,
            session_id,
            Command::SESSION_SETUP,
            &setup(&finished.token),
        ),
    );
    let mut prefix = [0u8; 4];
    match stream.read(&mut prefix) {
        Ok(4) => {
            let mut message = vec![0u8; u32::from_be_bytes(prefix) as usize];
            stream.read_exact(&mut message).unwrap();
            Some(packet::responses(&message).unwrap()[0].status().0)
        }
        _ => None,
    }
}

fn no_delays() -> Limits {
    Limits {
        logon_failure_delay: Duration::ZERO,
        ..Limits::default()
    }
}

/// `hosts_allow`/`hosts_deny` refuse a client at accept, before it can send a byte, by the TCP
/// peer's address; the refusal is counted in the metrics.
#[test]
fn a_refused_host_is_closed_at_accept_and_counted() {
    let network = |ip: [u8; 4], prefix| HostNetwork::new(ip.into(), prefix);
    let settings = Settings {
        limits: no_delays(),
        hosts: HostRules {
            allow: vec![network([127, 0, 0, 0], 8)],
            deny: vec![network([127, 0, 0, 66], 32), network([0, 0, 0, 0], 0)],
        },
        ..Settings::default()
    };
    let running = serve_with(settings, TransportConfig::default());
    // 127.0.0.66 is in both lists: as in Samba the allow list wins.
    let mut allowed = connect_from(running.addr, [127, 0, 0, 66]);
    assert_eq!(logon(&mut allowed, "tester", "pw"), Some(0));

    let denied = HostRules {
        allow: vec![network([127, 0, 0, 1], 32)],
        deny: vec![network([127, 0, 0, 66], 32)],
    };
    let running = serve_with(
        Settings {
            limits: no_delays(),
            hosts: denied,
            ..Settings::default()
        },
        TransportConfig::default(),
    );
    let mut refused = connect_from(running.addr, [127, 0, 0, 66]);
    assert!(closed(&mut refused), "127.0.0.66 is refused");
    let mut unlisted = connect_from(running.addr, [127, 0, 0, 67]);
    assert_eq!(
        logon(&mut unlisted, "tester", "pw"),
        Some(0),
        "in neither list with both set: admitted"
    );
    let mut local = connect(running.addr);
    assert_eq!(logon(&mut local, "tester", "pw"), Some(0));
    assert!(
        running
            .server
            .render_metrics()
            .contains("smb3d_connections_refused_by_host_total 1\n")
    );
}

#[test]
fn connections_per_address_are_limited() {
    let running = start(Limits {
        max_connections_per_address: 2,
        ..no_delays()
    });
    let first = connect(running.addr);
    let mut second = connect(running.addr);
    let mut third = connect(running.addr);
    assert!(closed(&mut third), "the third connection is refused");
    assert!(logon(&mut second, "tester", "pw") == Some(0));
    drop(first);
    // Its place frees once the server has seen it go.
    std::thread::sleep(Duration::from_millis(200));
    let mut fourth = connect(running.addr);
    assert_eq!(logon(&mut fourth, "tester", "pw"), Some(0));
    assert!(
        running
            .server
            .limit_hits()
            .contains(&(Limit::Connections, 1))
    );
}

#[test]
fn connections_a_user_logged_on_through_do_not_count_per_address() {
    let running = start(Limits {
        max_connections_per_address: 2,
        max_connections: 5,
        ..no_delays()
    });
    let mut held = Vec::new();
    for _ in 0..5 {
        let mut stream = connect(running.addr);
        assert_eq!(logon(&mut stream, "tester", "pw"), Some(0));
        held.push(stream);
    }
    // The total still counts them.
    let mut sixth = connect(running.addr);
    assert!(closed(&mut sixth));
}

#[test]
fn a_null_session_leaves_its_connection_counted_per_address() {
    let running = start(Limits {
        max_connections_per_address: 1,
        ..no_delays()
    });
    let mut anonymous = connect(running.addr);
    let null = Logon {
        user: "",
        password: "",
        domain: "",
        anonymous: true,
        mic: false,
        spnego: false,
    };
    assert_eq!(logon_as(&mut anonymous, &null), Some(0));
    let mut refused = connect(running.addr);
    assert!(closed(&mut refused));
}

/// Sends the first leg of a new session's logon as message `message_id`; its status.
fn first_leg(stream: &mut TcpStream, message_id: u64) -> u32 {
    let (_, token) = NtlmClient::start(false);
    send(
        stream,
        &request(message_id, 0, Command::SESSION_SETUP, &setup(&token)),
    );
    packet::responses(&receive(stream)).unwrap()[0].status().0
}

#[test]
fn logons_under_way_count_per_address() {
    const MORE_PROCESSING_REQUIRED: u32 = 0xC000_0016;
    const INSUFFICIENT_RESOURCES: u32 = 0xC000_009A;
    let running = start(Limits {
        max_connections_per_address: 2,
        ..no_delays()
    });
    let mut a = connect(running.addr);
    assert_eq!(logon(&mut a, "tester", "pw"), Some(0));
    let mut b = connect(running.addr);
    assert_eq!(logon(&mut b, "tester", "pw"), Some(0));
    // Two logons under way on A take the address's two places.
    assert_eq!(first_leg(&mut a, 3), MORE_PROCESSING_REQUIRED);
    assert_eq!(first_leg(&mut a, 4), MORE_PROCESSING_REQUIRED);
    assert_eq!(first_leg(&mut b, 3), INSUFFICIENT_RESOURCES);
    let mut c = connect(running.addr);
    assert!(closed(&mut c));
    // Their places free when they end, here with their connection.
    drop(a);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(first_leg(&mut b, 4), MORE_PROCESSING_REQUIRED);
    assert!(
        running
            .server
            .limit_hits()
            .contains(&(Limit::Connections, 2))
    );
}

#[test]
fn connections_in_total_are_limited() {
    let running = start(Limits {
        max_connections: 1,
        max_connections_per_address: 1,
        ..no_delays()
    });
    let mut held = connect(running.addr);
    let mut refused = connect(running.addr);
    assert!(closed(&mut refused));
    assert_eq!(logon(&mut held, "tester", "pw"), Some(0));
}

#[test]
fn large_frame_before_logon_is_refused_before_reading_it() {
    let running = start(no_delays());
    let mut stream = connect(running.addr);
    // A 100 KiB frame is announced; nothing of it is sent.
    stream.write_all(&(100 * 1024u32).to_be_bytes()).unwrap();
    assert!(closed(&mut stream));
    assert!(running.server.limit_hits().contains(&(Limit::FrameSize, 1)));
}

#[test]
fn silent_connection_is_closed_at_the_negotiate_timeout() {
    let running = start(Limits {
        negotiate_timeout: Duration::from_millis(300),
        ..no_delays()
    });
    let started = Instant::now();
    let mut stream = connect(running.addr);
    assert!(closed(&mut stream));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[test]
fn stalled_frame_is_closed_at_the_frame_timeout() {
    let running = start(Limits {
        frame_timeout: Duration::from_millis(300),
        negotiate_timeout: Duration::ZERO,
        logon_timeout: Duration::ZERO,
        ..no_delays()
    });
    let mut stream = connect(running.addr);
    // Half a prefix, then nothing.
    stream.write_all(&[0, 0]).unwrap();
    let started = Instant::now();
    assert!(closed(&mut stream));
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        running
            .server
            .limit_hits()
            .contains(&(Limit::FrameTimeout, 1))
    );
}

#[test]
fn a_panic_closes_only_its_connection() {
    let running = start(no_delays());
    let mut bystander = connect(running.addr);
    let mut victim = connect(running.addr);
    assert_eq!(logon(&mut victim, "crash", "x"), None);
    assert!(running.server.limit_hits().contains(&(Limit::Panic, 1)));
    assert_eq!(logon(&mut bystander, "tester", "pw"), Some(0));
    let mut later = connect(running.addr);
    assert_eq!(logon(&mut later, "tester", "pw"), Some(0));
}

/// A client that has logged on and connected to the share, keeping count of its message ids
/// and credits as a client that never reads its socket would have to.
struct Attached {
    stream: TcpStream,
    session_id: u64,
    tree_id: u32,
    next_message_id: u64,
}

impl Attached {
    /// Sends a signed request (the no-security provider takes any signature) charging
    /// `charge` credits and asking for as many back.
    fn send(&mut self, command: Command, body: &[u8], charge: u16) {
        let mut header =
            packet::request_header(command, self.next_message_id, self.session_id, self.tree_id);
        header.credit_charge = charge;
        header.credits = charge;
        header.flags = header.flags.union(HeaderFlags::SIGNED);
        self.next_message_id += u64::from(charge.max(1));
        send(&mut self.stream, &packet::pdu(&header, body));
    }

    fn call(&mut self, command: Command, body: &[u8], credits: u16) -> packet::Response {
        let mut header =
            packet::request_header(command, self.next_message_id, self.session_id, self.tree_id);
        header.credits = credits;
        header.flags = header.flags.union(HeaderFlags::SIGNED);
        self.next_message_id += 1;
        send(&mut self.stream, &packet::pdu(&header, body));
        packet::responses(&receive(&mut self.stream))
            .unwrap()
            .remove(0)
    }
}

/// Logs on as `tester` and connects to the share; the connection then holds `credits`.
fn attach(stream: TcpStream, credits: u16) -> Attached {
    let mut stream = stream;
    let negotiate = seeds::negotiate_body(&[Dialect::SMB3_1_1]);
    send(&mut stream, &request(0, 0, Command::NEGOTIATE, &negotiate));
    receive(&mut stream);
    let (ntlm, token) = NtlmClient::start(false);
    send(
        &mut stream,
        &request(1, 0, Command::SESSION_SETUP, &setup(&token)),
    );
    let challenge = packet::responses(&receive(&mut stream)).unwrap().remove(0);
    let session_id = challenge.header.session_id;
    let server_token = SessionSetupResponse::decode(&challenge.pdu)
        .unwrap()
        .security_buffer
        .to_vec();
    let logon = Logon {
        user: "tester",
        password: "pw",
        domain: "WORKGROUP",
        anonymous: false,
        mic: true,
        spnego: false,
    };
    let finished = ntlm.authenticate(&server_token, &logon).unwrap();
    send(
        &mut stream,
        &request(
            2,
            session_id,
            Command::SESSION_SETUP,
            &setup(&finished.token),
        ),
    );
    let done = packet::responses(&receive(&mut stream)).unwrap().remove(0);
    assert_eq!(done.status().0, 0);
    let mut attached = Attached {
        stream,
        session_id,
        tree_id: 0,
        next_message_id: 3,
    };
    let tree = attached.call(
        Command::TREE_CONNECT,
        &seeds::tree_connect_body(r"\\transport\share"),
        credits,
    );
    assert_eq!(tree.status().0, 0);
    attached.tree_id = tree.header.tree_id;
    attached
}

/// The number of `command` requests the server has answered.
fn answered(server: &Server, command: &str) -> u64 {
    let prefix = format!("smb3d_requests_total{{command=\"{command}\"}} ");
    server
        .render_metrics()
        .lines()
        .find_map(|line| line.strip_prefix(&prefix)?.parse().ok())
        .unwrap_or(0)
}

const MIB: usize = 1024 * 1024;
/// READs of 1 MiB that a client leaves unread.
const UNREAD_READS: u64 = 64;

/// A logged-on client with kernel buffers as small as they go on both sides (so that what
/// waits is the server's own), which has sent `UNREAD_READS` READs of a 1 MiB file and reads
/// none of their responses.
fn a_client_that_does_not_read(limits: Limits) -> (Running, Attached) {
    let running = start_with(
        limits,
        TransportConfig {
            socket_buffer: Some(64 * 1024),
            ..TransportConfig::default()
        },
    );
    let socket = socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )
    .unwrap();
    socket.set_recv_buffer_size(64 * 1024).unwrap();
    socket.connect(&running.addr.into()).unwrap();
    let stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let charge = u16::try_from(MIB / 65536).unwrap();
    let mut client = attach(stream, charge * UNREAD_READS as u16);

    let created = client.call(
        Command::CREATE,
        &seeds::create_body(
            "big",
            smb3d_dtyp::AccessMask(0x001F_01FF),
            smb3d_smb2::create::CreateDisposition::CREATE,
            smb3d_smb2::create::CreateOptions::empty(),
        ),
        1,
    );
    assert_eq!(created.status().0, 0);
    let file_id = smb3d_smb2::create::CreateResponse::decode(&created.pdu)
        .unwrap()
        .file_id;
    let mut write = seeds::write_body(0, &vec![0x5a; MIB]);
    packet::patch_file_id(Command::WRITE, &mut write, file_id);
    client.send(Command::WRITE, &write, charge);
    assert_eq!(
        packet::responses(&receive(&mut client.stream)).unwrap()[0]
            .status()
            .0,
        0
    );

    let mut read = seeds::read_body(0, u32::try_from(MIB).unwrap());
    packet::patch_file_id(Command::READ, &mut read, file_id);
    for _ in 0..UNREAD_READS {
        client.send(Command::READ, &read, charge);
    }
    (running, client)
}

#[test]
fn responses_a_client_does_not_read_stop_the_reader() {
    const BUDGET: usize = 4 * MIB;
    let (running, mut client) = a_client_that_does_not_read(Limits {
        max_inflight_bytes: BUDGET,
        ..no_delays()
    });
    std::thread::sleep(Duration::from_secs(1));
    let served_while_stuck = answered(&running.server, "READ");
    // The budget's worth of responses (each READ's credit charge holds room for its response
    // until the socket has taken it), and one whose frame the socket buffers took.
    assert!(
        served_while_stuck <= (BUDGET / MIB) as u64 + 1,
        "{served_while_stuck} READs answered while the client read nothing"
    );

    // Once the client reads, the rest are served.
    let mut received = 0;
    while received < UNREAD_READS {
        let frame = receive(&mut client.stream);
        for response in packet::responses(&frame).unwrap() {
            assert_eq!(response.status().0, 0);
            received += 1;
        }
    }
    assert_eq!(answered(&running.server, "READ"), UNREAD_READS);
}

#[test]
fn a_client_that_stops_reading_is_closed_at_the_send_timeout() {
    // Without the timeout such a client would hold its budget for as long as it stays.
    let (running, mut client) = a_client_that_does_not_read(Limits {
        max_inflight_bytes: 4 * MIB,
        send_timeout: Duration::from_millis(500),
        ..no_delays()
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while !running
        .server
        .limit_hits()
        .contains(&(Limit::SendTimeout, 1))
    {
        assert!(Instant::now() < deadline, "the connection was kept");
        std::thread::sleep(Duration::from_millis(50));
    }
    // What the kernel buffered arrives, then the end of the connection.
    let mut sink = Vec::new();
    let ended = client.stream.read_to_end(&mut sink);
    assert!(ended.is_ok() || ended.is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset));
    assert!(sink.len() < 8 * MIB, "{} bytes were sent", sink.len());
}

#[test]
fn requests_waiting_async_hold_no_room_for_their_responses() {
    let running = start(Limits {
        max_inflight_bytes: 4 * MIB,
        ..no_delays()
    });
    let mut client = attach(connect(running.addr), 1024);
    let opened = client.call(
        Command::CREATE,
        &seeds::create_body(
            "",
            smb3d_dtyp::AccessMask(0x0012_0089),
            smb3d_smb2::create::CreateDisposition::OPEN,
            smb3d_smb2::create::CreateOptions::DIRECTORY_FILE,
        ),
        1,
    );
    assert_eq!(opened.status().0, 0);
    let directory = smb3d_smb2::create::CreateResponse::decode(&opened.pdu)
        .unwrap()
        .file_id;
    // Eight CHANGE_NOTIFYs that may each answer with 1 MiB: twice the budget, waiting.
    let notify = packet::body(|w| {
        smb3d_smb2::change_notify::ChangeNotifyRequest {
            flags: smb3d_smb2::change_notify::ChangeNotifyFlags(0),
            output_buffer_length: u32::try_from(MIB).unwrap(),
            file_id: directory,
            completion_filter: smb3d_smb2::change_notify::CompletionFilter(0x17),
        }
        .encode(w)
    });
    let charge = u16::try_from(MIB / 65536).unwrap();
    for _ in 0..8 {
        client.send(Command::CHANGE_NOTIFY, &notify, charge);
        let interim = packet::responses(&receive(&mut client.stream))
            .unwrap()
            .remove(0);
        assert_eq!(interim.status(), smb3d_dtyp::NtStatus::PENDING);
    }
    let echo = client.call(Command::ECHO, &[4, 0, 0, 0], 1);
    assert_eq!(echo.status().0, 0);
}
