//! The administrator's view and actions on an in-memory server with live clients: the status
//! snapshot, closing sessions and opens, share replacement on reload, and the metrics page.

use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::admin::Degree;
use smb3d_server::share::Share;
use smb3d_smb2::Command;
use smb3d_smb2::create::{CreateDisposition, CreateOptions, ShareAccess};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::lock::{LockElement, LockElements, LockFlags, LockRequest};
use smb3d_smb2::negotiate::Dialect;
use smb3d_testkit::harness::{self, SHARE, SHARE_UNC, TestServer, USER};
use smb3d_testkit::packet::body;
use smb3d_testkit::script::{LoginFlags, LoginSpec, Op, RequestSpec, ScriptClient};
use smb3d_testkit::seeds;
use smb3d_vfs::MemoryVfs;

fn server() -> TestServer {
    TestServer::new(harness::settings(), Arc::new(NullProvider)).unwrap()
}

fn request(command: Command, body: Vec<u8>) -> Op {
    Op::Request(RequestSpec::new(command, body))
}

fn open_file(name: &str) -> Op {
    request(
        Command::CREATE,
        seeds::create_body(
            name,
            AccessMask(0x0012_019F),
            CreateDisposition::OPEN_IF,
            CreateOptions::NON_DIRECTORY_FILE,
        ),
    )
}

/// Negotiates `dialect`, logs on, connects to the share and opens `name`.
fn holding(client: &mut ScriptClient<'_>, dialect: Dialect, name: &str) {
    let mut ops = seeds::connected(&[dialect]);
    ops.push(open_file(name));
    let summary = client.run(&ops).unwrap();
    assert!(
        summary.saw(Command::CREATE, NtStatus::SUCCESS),
        "{summary:?}"
    );
}

#[test]
fn snapshot_shows_sessions_trees_and_opens_of_every_connection() {
    let server = server();
    let mut first = ScriptClient::connect(&server);
    let mut second = ScriptClient::connect(&server);
    holding(&mut first, Dialect::SMB3_1_1, "dir\\a.txt");
    holding(&mut second, Dialect::SMB2_1, "dir\\b.txt");

    let snapshot = server.server.snapshot();
    assert_eq!(snapshot.sessions.len(), 2, "{snapshot:#?}");
    let dialects: Vec<Option<u16>> = snapshot
        .sessions
        .iter()
        .map(|s| s.connection.dialect)
        .collect();
    assert!(dialects.contains(&Some(0x0311)) && dialects.contains(&Some(0x0210)));
    assert_ne!(
        snapshot.sessions[0].connection.id,
        snapshot.sessions[1].connection.id
    );
    for session in &snapshot.sessions {
        let user = session.user.as_ref().unwrap();
        assert_eq!(user.name.as_deref(), Some(USER));
        // The client does not require signing; it signs only its TREE_CONNECT (which MS-SMB2
        // 3.3.5.7 requires of 3.1.1).
        assert_eq!(session.signing.degree, Degree::Partial);
        let expected = if session.connection.dialect == Some(0x0311) {
            "AES-128-GMAC"
        } else {
            "HMAC-SHA256"
        };
        assert_eq!(session.signing.algorithm, Some(expected));
    }
    let smb311 = snapshot
        .sessions
        .iter()
        .find(|s| s.connection.dialect == Some(0x0311))
        .unwrap();
    assert_eq!(smb311.encryption.algorithm, Some("AES-128-GCM"));
    assert_eq!(smb311.encryption.degree, Degree::None);

    assert_eq!(snapshot.trees.len(), 2);
    assert!(snapshot.trees.iter().all(|t| t.share == SHARE));
    let paths: Vec<&str> = snapshot.opens.iter().map(|o| o.path.as_str()).collect();
    assert_eq!(paths, ["dir/a.txt", "dir/b.txt"]);
    for open in &snapshot.opens {
        assert_eq!(open.share, SHARE);
        assert!(open.access.contains(AccessMask::FILE_READ_DATA));
        assert_eq!(
            open.share_access,
            ShareAccess::READ | ShareAccess::WRITE | ShareAccess::DELETE
        );
        assert!(!open.is_directory && !open.delete_pending);
        assert!(
            snapshot
                .trees
                .iter()
                .any(|t| t.session_id == open.session_id && t.id == open.tree_id)
        );
    }
}

#[test]
fn encrypted_traffic_shows_as_partial_encryption() {
    let server = server();
    let mut client = ScriptClient::connect(&server);
    let mut ops = vec![seeds::negotiate(&[Dialect::SMB3_1_1]), seeds::login()];
    ops.push(Op::Sealed(RequestSpec::new(
        Command::TREE_CONNECT,
        seeds::tree_connect_body(SHARE_UNC),
    )));
    let summary = client.run(&ops).unwrap();
    assert!(summary.saw(Command::TREE_CONNECT, NtStatus::SUCCESS));
    let snapshot = server.server.snapshot();
    assert_eq!(snapshot.sessions[0].encryption.degree, Degree::Partial);
    assert_eq!(snapshot.trees[0].encryption.degree, Degree::Partial);
}

#[test]
fn a_session_in_progress_has_no_user() {
    let server = server();
    let mut client = ScriptClient::connect(&server);
    let summary = client
        .run(&[
            seeds::negotiate(&[Dialect::SMB3_1_1]),
            Op::Login(LoginSpec {
                flags: LoginFlags::WRONG_PASSWORD,
                ..LoginSpec::default()
            }),
        ])
        .unwrap();
    assert!(summary.saw(Command::SESSION_SETUP, NtStatus::LOGON_FAILURE));
    let snapshot = server.server.snapshot();
    assert!(snapshot.sessions.is_empty(), "{snapshot:#?}");
    let metrics = server.server.render_metrics();
    assert!(
        metrics.contains("\nsmb3d_auth_failures_total 1\n"),
        "{metrics}"
    );
    assert!(metrics.contains("\nsmb3d_connections 1\n"), "{metrics}");
}

#[test]
fn close_file_invalidates_the_clients_handle() {
    let server = server();
    let mut client = ScriptClient::connect(&server);
    holding(&mut client, Dialect::SMB3_1_1, "dir\\file.txt");
    let id = server.server.snapshot().opens[0].id;
    assert!(!server.server.close_file(id + 1000));
    assert!(server.server.close_file(id));
    assert!(server.server.snapshot().opens.is_empty());
    assert_eq!(server.counts().files, 0);
    let summary = client
        .run(&[request(Command::READ, seeds::read_body(0, 10))])
        .unwrap();
    assert_eq!(summary.responses, [(Command::READ, NtStatus::FILE_CLOSED)]);
}

#[test]
fn close_session_logs_off_and_ends_a_connection_left_empty() {
    let server = server();
    let mut client = ScriptClient::connect(&server);
    let mut other = ScriptClient::connect(&server);
    holding(&mut client, Dialect::SMB3_0, "dir\\file.txt");
    holding(&mut other, Dialect::SMB3_0, "dir\\other.txt");
    let snapshot = server.server.snapshot();
    let target = snapshot
        .opens
        .iter()
        .find(|o| o.path == "dir/file.txt")
        .unwrap()
        .session_id;
    assert!(!server.server.close_session(target ^ 0xffff));
    assert!(server.server.close_session(target));
    let after = server.server.snapshot();
    assert_eq!(after.sessions.len(), 1);
    assert_eq!(after.opens.len(), 1);
    assert_ne!(after.sessions[0].id, target);
    // The connection of the closed session was ended: its next request finds it closed.
    let summary = client
        .run(&[request(Command::READ, seeds::read_body(0, 10))])
        .unwrap();
    assert_eq!(summary.disconnects, 1, "{summary:?}");
    // The other client goes on.
    let summary = other
        .run(&[request(Command::READ, seeds::read_body(0, 10))])
        .unwrap();
    assert_eq!(summary.responses, [(Command::READ, NtStatus::END_OF_FILE)]);
}

#[test]
fn replaced_shares_apply_to_new_tree_connects_only() {
    let server = server();
    let mut client = ScriptClient::connect(&server);
    holding(&mut client, Dialect::SMB3_1_1, "dir\\file.txt");
    let ipc = server
        .server
        .shares()
        .iter()
        .find(|s| s.name == "IPC$")
        .cloned()
        .unwrap();
    let added = Share {
        read_only: true,
        ..Share::disk("added", Arc::new(MemoryVfs::new()))
    };
    server.server.replace_shares(vec![ipc, Arc::new(added)]);
    let names: Vec<String> = server
        .server
        .shares()
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(names, ["IPC$", "added"]);
    let summary = client
        .run(&[
            request(Command::WRITE, seeds::write_body(0, b"still here")),
            seeds::tree_connect(SHARE_UNC),
            seeds::tree_connect("\\\\testkit\\added"),
        ])
        .unwrap();
    assert_eq!(
        summary.responses,
        [
            (Command::WRITE, NtStatus::SUCCESS),
            (Command::TREE_CONNECT, NtStatus::BAD_NETWORK_NAME),
            (Command::TREE_CONNECT, NtStatus::SUCCESS),
        ]
    );
    let shares: Vec<String> = server
        .server
        .snapshot()
        .trees
        .iter()
        .map(|t| t.share.clone())
        .collect();
    assert_eq!(shares, [SHARE, "added"]);
}

#[test]
fn metrics_count_requests_bytes_and_sessions() {
    let server = server();
    let mut client = ScriptClient::connect(&server);
    holding(&mut client, Dialect::SMB3_1_1, "dir\\file.txt");
    client
        .run(&[
            request(Command::WRITE, seeds::write_body(0, b"0123456789")),
            request(Command::READ, seeds::read_body(0, 4)),
        ])
        .unwrap();
    let text = server.server.render_metrics();
    for line in [
        "smb3d_connections 1",
        "smb3d_logons_total 1",
        "smb3d_sessions{dialect=\"SMB3_11\",signing=\"AES-128-GMAC\",encryption=\"none\"} 1",
        "smb3d_tree_connects 1",
        "smb3d_opens 1",
        "smb3d_open_files 1",
        "smb3d_read_bytes_total 4",
        "smb3d_written_bytes_total 10",
        "smb3d_requests_total{command=\"NEGOTIATE\"} 1",
        "smb3d_requests_total{command=\"SESSION_SETUP\"} 2",
        "smb3d_request_failures_total{command=\"SESSION_SETUP\"} 0",
        "smb3d_requests_total{command=\"READ\"} 1",
        "smb3d_request_duration_seconds_count{command=\"WRITE\"} 1",
        "smb3d_request_duration_seconds_bucket{command=\"WRITE\",le=\"+Inf\"} 1",
        "# TYPE smb3d_request_duration_seconds histogram",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in\n{text}"
        );
    }
    // Every sample line is `name{labels} value` with a number.
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let value = l.rsplit(' ').next().unwrap();
        assert!(value.parse::<f64>().is_ok(), "{l}");
    }
}

fn lock(offset: u64, length: u64, flags: LockFlags) -> Op {
    let mut element = Vec::new();
    LockElement {
        offset,
        length,
        flags: flags | LockFlags::FAIL_IMMEDIATELY,
    }
    .write(&mut smb3d_wire::Writer::new(&mut element));
    request(
        Command::LOCK,
        body(|w| {
            LockRequest {
                lock_sequence: 0,
                file_id: FileId::default(),
                locks: LockElements::new(&element).unwrap(),
            }
            .encode(w);
        }),
    )
}

#[test]
fn snapshot_lists_byte_range_locks_with_their_open() {
    let server = server();
    let mut client = ScriptClient::connect(&server);
    holding(&mut client, Dialect::SMB3_1_1, "dir\\file.txt");
    let summary = client
        .run(&[
            lock(2, 5, LockFlags::EXCLUSIVE_LOCK),
            lock(100, 10, LockFlags::SHARED_LOCK),
        ])
        .unwrap();
    assert_eq!(
        summary.responses,
        [
            (Command::LOCK, NtStatus::SUCCESS),
            (Command::LOCK, NtStatus::SUCCESS)
        ]
    );
    let snapshot = server.server.snapshot();
    let open = &snapshot.opens[0];
    let locks: Vec<(u64, u64, bool)> = snapshot
        .locks
        .iter()
        .map(|l| (l.offset, l.length, l.exclusive))
        .collect();
    assert_eq!(locks, [(2, 5, true), (100, 10, false)]);
    for l in &snapshot.locks {
        assert_eq!((l.open_id, l.session_id), (open.id, open.session_id));
        assert_eq!((l.device, l.inode), (open.device, open.inode));
        assert_eq!(l.path, "dir/file.txt");
    }
    // Closing the open releases its locks.
    assert!(server.server.close_file(open.id));
    assert!(server.server.snapshot().locks.is_empty());
}
