//! The limits the transport enforces, over real TCP on loopback: connections per address and
//! in total, the frame length before logon, the negotiate timeout, a stalled frame
//! (slowloris), and a panic in one connection's work closing only that connection.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use smb3d_auth::{Account, CredentialStore, ServerIdentity};
use smb3d_crypto::fuzzing::NullProvider;
use smb3d_server::share::Share;
use smb3d_server::{Limit, Limits, Server, Settings};
use smb3d_smb2::Command;
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
    let settings = Settings {
        limits,
        ..Settings::default()
    };
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
        TransportConfig::default(),
        std::future::pending(),
    ));
    Running {
        addr,
        server,
        _runtime: runtime,
    }
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

/// NEGOTIATE 3.1.1 and log on as `user`; the status of the last answer, or None if the
/// server closed the connection.
fn logon(stream: &mut TcpStream, user: &str, password: &str) -> Option<u32> {
    let negotiate = seeds::negotiate_body(&[Dialect::SMB3_1_1]);
    send(stream, &request(0, 0, Command::NEGOTIATE, &negotiate));
    receive(stream);
    let (ntlm, token) = NtlmClient::start(false);
    let setup = |token: &[u8]| {
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
    };
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
    let logon = Logon {
        user,
        password,
        domain: "WORKGROUP",
        anonymous: false,
        mic: true,
        spnego: false,
    };
    let finished = ntlm.authenticate(&server_token, &logon).unwrap();
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
