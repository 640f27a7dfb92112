//! How frames cross the socket, over real TCP on loopback: several requests in one segment,
//! a request trickling in byte by byte, a large WRITE in small pieces, and responses that
//! pile up while the client does not read (the writer task's queue and batched writes).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use smb3d_auth::{Account, CredentialStore, ServerIdentity};
use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::share::Share;
use smb3d_server::{Limits, Server, Settings};
use smb3d_smb2::Command;
use smb3d_smb2::create::{CreateDisposition, CreateOptions, CreateResponse};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::read::ReadResponse;
use smb3d_smb2::session_setup::SessionSetupResponse;
use smb3d_smb2::tree_connect::TreeConnectResponse;
use smb3d_testkit::ntlm::{Logon, NtlmClient};
use smb3d_testkit::packet::{self, Response};
use smb3d_testkit::seeds;
use smb3d_transport::TransportConfig;
use smb3d_vfs::{FaultOp, FaultPlan, FaultRule, FaultVfs, MemoryVfs, Vfs, VfsError};

struct Users;

impl CredentialStore for Users {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, "tester", *smb3d_auth::ntlm::crypto::nt_hash("pw"))
    }

    fn uid(&self, user: &str) -> Option<u32> {
        user.eq_ignore_ascii_case("tester")
            .then(smb3d_testkit::harness::process_uid)
    }
}

struct Running {
    addr: SocketAddr,
    _runtime: tokio::runtime::Runtime,
}

fn start() -> Running {
    start_with(Limits {
        logon_failure_delay: Duration::ZERO,
        ..Limits::default()
    })
}

fn start_with(limits: Limits) -> Running {
    start_on(limits, Arc::new(MemoryVfs::new()))
}

fn start_on(limits: Limits, vfs: Arc<dyn Vfs>) -> Running {
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
    let shares = vec![Share::ipc(), Share::disk("share", vfs)];
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
        server,
        TransportConfig::default(),
        std::future::pending(),
    ));
    Running {
        addr,
        _runtime: runtime,
    }
}

/// A client connection: message ids, session and tree.
struct Client {
    stream: TcpStream,
    next_id: u64,
    session_id: u64,
    tree_id: u32,
}

impl Client {
    fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Self {
            stream,
            next_id: 0,
            session_id: 0,
            tree_id: 0,
        }
    }

    /// A framed request (Direct-TCP prefix included) with the next message id, charged for
    /// `payload` bytes.
    fn frame(&mut self, command: Command, body: &[u8], payload: usize) -> (u64, Vec<u8>) {
        let mut header =
            packet::request_header(command, self.next_id, self.session_id, self.tree_id);
        let charge = payload.saturating_sub(1) / 65536 + 1;
        header.credit_charge = if command == Command::NEGOTIATE {
            0
        } else {
            u16::try_from(charge).unwrap()
        };
        header.credits = 512;
        let id = self.next_id;
        self.next_id += charge as u64;
        let message = packet::pdu(&header, body);
        let mut frame = u32::try_from(message.len()).unwrap().to_be_bytes().to_vec();
        frame.extend_from_slice(&message);
        (id, frame)
    }

    fn receive(&mut self) -> Response {
        let mut prefix = [0u8; 4];
        self.stream.read_exact(&mut prefix).unwrap();
        let mut message = vec![0u8; u32::from_be_bytes(prefix) as usize];
        self.stream.read_exact(&mut message).unwrap();
        packet::responses(&message).unwrap().remove(0)
    }

    fn call(&mut self, command: Command, body: &[u8]) -> Response {
        let (_, frame) = self.frame(command, body, 0);
        self.stream.write_all(&frame).unwrap();
        self.receive()
    }

    /// Opens (creating or truncating) `name` for reading and writing.
    fn create(&mut self, name: &str) -> FileId {
        let created = self.call(
            Command::CREATE,
            &seeds::create_body(
                name,
                AccessMask::GENERIC_READ | AccessMask::GENERIC_WRITE,
                CreateDisposition::OVERWRITE_IF,
                CreateOptions::NON_DIRECTORY_FILE,
            ),
        );
        assert_eq!(created.status(), NtStatus::SUCCESS, "{name}");
        CreateResponse::decode(&created.pdu).unwrap().file_id
    }

    /// NEGOTIATE 2.1 (so that nothing needs signing), log on and connect to the share.
    fn log_on(&mut self) {
        self.call(
            Command::NEGOTIATE,
            &seeds::negotiate_body(&[Dialect::SMB2_1]),
        );
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
        let challenge = self.call(Command::SESSION_SETUP, &setup(&token));
        self.session_id = challenge.header.session_id;
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
        let done = self.call(Command::SESSION_SETUP, &setup(&finished.token));
        assert_eq!(done.status(), NtStatus::SUCCESS);
        let tree = self.call(
            Command::TREE_CONNECT,
            &seeds::tree_connect_body("\\\\transport\\share"),
        );
        assert_eq!(tree.status(), NtStatus::SUCCESS);
        TreeConnectResponse::decode(&tree.pdu).unwrap();
        self.tree_id = tree.header.tree_id;
    }
}

fn echo_body() -> Vec<u8> {
    vec![4, 0, 0, 0]
}

/// Sends `count` ECHOs in one write and checks that each is answered.
fn echoes_in_one_write_are_all_answered(client: &mut Client, count: usize) {
    let mut together = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..count {
        let (id, frame) = client.frame(Command::ECHO, &echo_body(), 0);
        ids.push(id);
        together.extend_from_slice(&frame);
    }
    client.stream.write_all(&together).unwrap();
    let mut answered: Vec<u64> = (0..count)
        .map(|_| client.receive().header.message_id)
        .collect();
    answered.sort_unstable();
    assert_eq!(answered, ids);
}

#[test]
fn requests_together_in_one_segment_and_byte_by_byte() {
    let running = start();
    let mut client = Client::connect(running.addr);
    client.call(
        Command::NEGOTIATE,
        &seeds::negotiate_body(&[Dialect::SMB2_1]),
    );
    // Twenty ECHOs in one write: the reader cuts them out of one receive.
    echoes_in_one_write_are_all_answered(&mut client, 20);

    // One ECHO a byte at a time, the prefix split too.
    client.stream.set_nodelay(true).unwrap();
    let (id, frame) = client.frame(Command::ECHO, &echo_body(), 0);
    for byte in &frame {
        client.stream.write_all(&[*byte]).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let response = client.receive();
    assert_eq!(
        (response.header.message_id, response.status()),
        (id, NtStatus::SUCCESS)
    );
}

/// The responses of a burst wait (corked) while the reader runs its requests; when the
/// in-flight budget, which those responses hold, has no room for the next request, they must
/// go out before the reader waits for room, or the connection stalls for good.
#[test]
fn a_burst_beyond_the_inflight_budget_is_answered() {
    // A held ECHO response counts its 68 bytes: three fit, the fourth request waits.
    let running = start_with(Limits {
        logon_failure_delay: Duration::ZERO,
        max_inflight_bytes: 256,
        ..Limits::default()
    });
    let mut client = Client::connect(running.addr);
    client.call(
        Command::NEGOTIATE,
        &seeds::negotiate_body(&[Dialect::SMB2_1]),
    );
    echoes_in_one_write_are_all_answered(&mut client, 20);
}

#[test]
fn large_write_in_pieces_and_reads_piling_up() {
    let running = start();
    let mut client = Client::connect(running.addr);
    client.log_on();
    let created = client.call(
        Command::CREATE,
        &seeds::create_body(
            "data.bin",
            AccessMask::GENERIC_READ | AccessMask::GENERIC_WRITE,
            CreateDisposition::OVERWRITE_IF,
            CreateOptions::NON_DIRECTORY_FILE,
        ),
    );
    assert_eq!(created.status(), NtStatus::SUCCESS);
    let file_id = CreateResponse::decode(&created.pdu).unwrap().file_id;

    // A 2 MiB WRITE arriving in 1000-byte pieces, its frame straddling the read buffer.
    let data: Vec<u8> = (0..2 * 1024 * 1024u32)
        .map(|i| (i % 251) as u8 ^ (i >> 16) as u8)
        .collect();
    let mut body = seeds::write_body(0, &data);
    assert!(packet::patch_file_id(Command::WRITE, &mut body, file_id));
    let (_, frame) = client.frame(Command::WRITE, &body, data.len());
    for piece in frame.chunks(1000) {
        client.stream.write_all(piece).unwrap();
    }
    assert_eq!(client.receive().status(), NtStatus::SUCCESS);

    // 256 READs of 64 KiB sent before reading anything: more than the socket buffers hold, so
    // responses wait in the writer's queue and leave in batches.
    let mut expected = BTreeMap::new();
    let mut requests = Vec::new();
    for i in 0..256u64 {
        let offset = (i * 65536 + i * 7) % (data.len() as u64 - 65536);
        let mut body = seeds::read_body(offset, 65536);
        assert!(packet::patch_file_id(Command::READ, &mut body, file_id));
        let (id, frame) = client.frame(Command::READ, &body, 65536);
        expected.insert(id, offset as usize);
        requests.extend_from_slice(&frame);
    }
    client.stream.write_all(&requests).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..expected.len() {
        let response = client.receive();
        assert_eq!(response.status(), NtStatus::SUCCESS);
        let offset = expected.remove(&response.header.message_id).unwrap();
        let read = ReadResponse::decode(&response.pdu).unwrap();
        assert_eq!(read.data, &data[offset..offset + 65536]);
    }
    assert!(expected.is_empty());
    let mut close = seeds::close_body();
    assert!(packet::patch_file_id(Command::CLOSE, &mut close, file_id));
    assert_eq!(
        client.call(Command::CLOSE, &close).status(),
        NtStatus::SUCCESS
    );
}

/// Plain READs of a file in the page cache leave with `sendfile` from the task that made them,
/// and the writer task takes over what the socket did not take: 24 READs of 1 MiB with an ECHO
/// after each, first all in one write, then each pair on its own, before anything is read: more
/// than the socket buffers hold. Every response comes whole, with its own request's data.
#[test]
fn reads_sent_from_the_page_cache_come_whole_with_their_own_data() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..8 * 1024 * 1024u32)
        .map(|i| (i % 251) as u8 ^ (i >> 16) as u8)
        .collect();
    std::fs::write(dir.path().join("data.bin"), &data).unwrap();
    let vfs = Arc::new(smb3d_vfs_posix::PosixVfs::new(dir.path()).unwrap());
    let limits = Limits {
        logon_failure_delay: Duration::ZERO,
        ..Limits::default()
    };
    let running = start_on(limits, vfs);
    let mut client = Client::connect(running.addr);
    client.log_on();
    let opened = client.call(
        Command::CREATE,
        &seeds::create_body(
            "data.bin",
            AccessMask::GENERIC_READ,
            CreateDisposition::OPEN,
            CreateOptions::NON_DIRECTORY_FILE,
        ),
    );
    assert_eq!(opened.status(), NtStatus::SUCCESS);
    let file_id = CreateResponse::decode(&opened.pdu).unwrap().file_id;
    // What the local write left in the page cache may have gone since; one pass brings it back.
    std::fs::read(dir.path().join("data.bin")).unwrap();

    const LEN: usize = 1024 * 1024;
    for together in [true, false] {
        reads_and_echoes(&mut client, file_id, &data, LEN, together);
    }
}

fn reads_and_echoes(client: &mut Client, file_id: FileId, data: &[u8], len: usize, together: bool) {
    let mut expected = BTreeMap::new();
    let mut requests = Vec::new();
    for i in 0..24 {
        let offset = (i * len + i * 4099) % (data.len() - len);
        let mut body = seeds::read_body(offset as u64, len as u32);
        assert!(packet::patch_file_id(Command::READ, &mut body, file_id));
        let (id, frame) = client.frame(Command::READ, &body, len);
        expected.insert(id, Some(offset));
        requests.extend_from_slice(&frame);
        let (id, frame) = client.frame(Command::ECHO, &echo_body(), 0);
        expected.insert(id, None);
        requests.extend_from_slice(&frame);
        if !together {
            client.stream.write_all(&requests).unwrap();
            requests.clear();
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    client.stream.write_all(&requests).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..expected.len() {
        let response = client.receive();
        assert_eq!(response.status(), NtStatus::SUCCESS);
        match expected.remove(&response.header.message_id).unwrap() {
            Some(offset) => {
                assert_eq!(response.header.command, Command::READ);
                let read = ReadResponse::decode(&response.pdu).unwrap();
                assert!(read.data == &data[offset..offset + len], "at {offset}");
            }
            None => assert_eq!(response.header.command, Command::ECHO),
        }
    }
    assert!(expected.is_empty());
}

#[test]
fn large_writes_through_pipes_whole_and_in_tiny_segments() {
    let running = start();
    let mut client = Client::connect(running.addr);
    client.log_on();
    let created = client.call(
        Command::CREATE,
        &seeds::create_body(
            "piped.bin",
            AccessMask::GENERIC_READ | AccessMask::GENERIC_WRITE,
            CreateDisposition::OVERWRITE_IF,
            CreateOptions::NON_DIRECTORY_FILE,
        ),
    );
    let file_id = CreateResponse::decode(&created.pdu).unwrap().file_id;
    let data: Vec<u8> = (0..3 * 1024 * 1024u32)
        .map(|i| (i % 253) as u8 ^ (i >> 12) as u8)
        .collect();
    // Sent whole, the 3 MiB take several pipes. Sent in 100-byte segments, each a page of a
    // pipe, the pipes fill by their pages long before their bytes: the rest is received into
    // memory.
    let (first, second) = data.split_at(2 * 1024 * 1024);
    for (offset, part, segment) in [(0, first, first.len()), (first.len(), second, 100)] {
        client.stream.set_nodelay(segment < 1000).unwrap();
        let mut body = seeds::write_body(offset as u64, part);
        assert!(packet::patch_file_id(Command::WRITE, &mut body, file_id));
        let (_, frame) = client.frame(Command::WRITE, &body, part.len());
        for piece in frame.chunks(segment) {
            client.stream.write_all(piece).unwrap();
        }
        assert_eq!(client.receive().status(), NtStatus::SUCCESS, "{segment}");
    }
    for offset in (0..data.len()).step_by(1024 * 1024) {
        let mut body = seeds::read_body(offset as u64, 1024 * 1024);
        assert!(packet::patch_file_id(Command::READ, &mut body, file_id));
        let (_, frame) = client.frame(Command::READ, &body, 1024 * 1024);
        client.stream.write_all(&frame).unwrap();
        let response = client.receive();
        let read = ReadResponse::decode(&response.pdu).unwrap();
        assert!(read.data == &data[offset..offset + 1024 * 1024], "{offset}");
    }
}

/// A server on an in-memory file system whose WRITEs `rule` makes fail or wait.
fn start_with_faulty_writes(rule: FaultRule) -> Running {
    let plan = Arc::new(FaultPlan::new(vec![FaultRule {
        ops: vec![FaultOp::Write],
        ..rule
    }]));
    start_on(
        Limits {
            logon_failure_delay: Duration::ZERO,
            ..Limits::default()
        },
        Arc::new(FaultVfs::new(Arc::new(MemoryVfs::new()), plan)),
    )
}

/// A pipe a WRITE's data waited in is reused for the connection's next WRITEs only once it is
/// empty: a WRITE that fails before its data is all taken out of its pipes (here the file
/// system refuses it) must not leave bytes in a pipe that the next WRITE's data follows.
#[test]
fn a_failed_piped_write_leaves_nothing_for_the_next() {
    let running = start_with_faulty_writes(FaultRule {
        path: Some("full.bin".into()),
        error: Some(VfsError::NoSpace),
        ..FaultRule::default()
    });
    let mut client = Client::connect(running.addr);
    client.log_on();
    let full = client.create("full.bin");
    let fine = client.create("fine.bin");
    // 200 KiB fill most of a 256 KiB pipe, 1 MiB more would start in the same pipe.
    for (file_id, len, byte, status) in [
        (full, 200 * 1024, 0xEE, NtStatus::DISK_FULL),
        (fine, 1024 * 1024, 0x11, NtStatus::SUCCESS),
        (full, 300 * 1024, 0xDD, NtStatus::DISK_FULL),
        (fine, 200 * 1024, 0x22, NtStatus::SUCCESS),
    ] {
        let mut body = seeds::write_body(0, &vec![byte; len]);
        assert!(packet::patch_file_id(Command::WRITE, &mut body, file_id));
        let (_, frame) = client.frame(Command::WRITE, &body, len);
        client.stream.write_all(&frame).unwrap();
        assert_eq!(client.receive().status(), status, "{byte:#x}");
        if status == NtStatus::SUCCESS {
            let mut body = seeds::read_body(0, 1024 * 1024);
            assert!(packet::patch_file_id(Command::READ, &mut body, file_id));
            let (_, frame) = client.frame(Command::READ, &body, 1024 * 1024);
            client.stream.write_all(&frame).unwrap();
            let response = client.receive();
            let read = ReadResponse::decode(&response.pdu).unwrap();
            let mut expected = vec![0x11; 1024 * 1024];
            expected[..len].fill(byte);
            assert!(read.data == expected, "{byte:#x}");
        }
    }
}

/// Long WRITEs run inline on the workers, but never on all of them at once: WRITEs that wait
/// on a stalled disk (here 2 s each, on four files at once) leave a worker that serves the
/// other connections.
#[test]
fn writes_stalled_on_the_disk_leave_a_worker_for_the_rest() {
    let stall = Duration::from_secs(2);
    let running = start_with_faulty_writes(FaultRule {
        path: Some("slow*".into()),
        delay: stall,
        ..FaultRule::default()
    });
    let mut stalled = Client::connect(running.addr);
    stalled.log_on();
    let mut other = Client::connect(running.addr);
    other.log_on();
    let fast = other.create("fast.bin");
    let data = vec![0x5A; 256 * 1024];
    let slow: Vec<FileId> = (0..4)
        .map(|i| stalled.create(&format!("slow{i}.bin")))
        .collect();
    for file_id in &slow {
        let mut body = seeds::write_body(0, &data);
        assert!(packet::patch_file_id(Command::WRITE, &mut body, *file_id));
        let (_, frame) = stalled.frame(Command::WRITE, &body, data.len());
        stalled.stream.write_all(&frame).unwrap();
    }
    std::thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (_, echo) = other.frame(Command::ECHO, &echo_body(), 0);
    other.stream.write_all(&echo).unwrap();
    assert_eq!(other.receive().status(), NtStatus::SUCCESS);
    let mut body = seeds::write_body(0, &data);
    assert!(packet::patch_file_id(Command::WRITE, &mut body, fast));
    let (_, frame) = other.frame(Command::WRITE, &body, data.len());
    other.stream.write_all(&frame).unwrap();
    assert_eq!(other.receive().status(), NtStatus::SUCCESS);
    let served_in = started.elapsed();
    assert!(served_in < stall / 2, "served in {served_in:?}");
    for _ in &slow {
        assert_eq!(stalled.receive().status(), NtStatus::SUCCESS);
    }
}
