//! Runs COUNT requests of one kind through the in-memory server, for counting the instructions
//! the server's request path costs under callgrind, which gives the same count however loaded
//! the machine is (docs/design.md, "Request pipeline", has the numbers it gave):
//!
//! ```text
//! cargo build --release -p smb3d-testkit --example request_costs
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/request_costs echo 2000
//! ```
//!
//! Run it twice with different counts: the difference of the totals over the difference of the
//! counts is the cost of one request, without the logon and the set-up. Kinds: `echo`; `open`
//! (CREATE and CLOSE of a file, one frame each); `read` (a 4 KiB READ of an open file);
//! `signed-read` (the same, signed, so its response is signed); `compound` (CREATE, READ and
//! CLOSE related in one frame).

use std::process::ExitCode;
use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::Command;
use smb3d_smb2::create::{CreateDisposition, CreateOptions};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::header::HeaderFlags;
use smb3d_testkit::client::Client;
use smb3d_testkit::harness::{TestServer, settings};
use smb3d_testkit::packet;
use smb3d_testkit::seeds::{close_body, create_body, read_body};

const FILE: &str = "dir\\file.txt";
const ECHO_BODY: [u8; 4] = [4, 0, 0, 0];

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(kind), Some(Ok(count))) = (args.next(), args.next().map(|n| n.parse::<u32>())) else {
        eprintln!("usage: request_costs echo|open|read|signed-read|compound COUNT");
        return ExitCode::FAILURE;
    };
    let Ok(server) = TestServer::new(settings(), Arc::new(NullProvider)) else {
        eprintln!("no runtime for the test server");
        return ExitCode::FAILURE;
    };
    let mut client = Client::new(server.connect());
    if client.connect() != Some(NtStatus::SUCCESS) {
        eprintln!("could not connect to the share");
        return ExitCode::FAILURE;
    }
    match run(&mut client, &kind, count) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("{kind}: {why}");
            ExitCode::FAILURE
        }
    }
}

fn run(client: &mut Client<'_>, kind: &str, count: u32) -> Result<(), String> {
    let create = create_body(
        FILE,
        AccessMask(0x0012_0089),
        CreateDisposition::OPEN,
        CreateOptions::NON_DIRECTORY_FILE,
    );
    let open = |client: &mut Client<'_>| client.create(FILE, CreateDisposition::OPEN);
    match kind {
        "echo" => repeat(count, || {
            Ok(client.call(Command::ECHO, &ECHO_BODY, None).status())
        }),
        "open" => repeat(count, || {
            let file_id = open(client).map_err(|status| format!("CREATE: {status}"))?;
            Ok(client
                .call(Command::CLOSE, &close_body(), Some(file_id))
                .status())
        }),
        "read" | "signed-read" => {
            let file_id = open(client).map_err(|status| format!("CREATE: {status}"))?;
            let flags = if kind == "read" {
                HeaderFlags::empty()
            } else {
                HeaderFlags::SIGNED
            };
            let mut body = read_body(0, 4096);
            packet::patch_file_id(Command::READ, &mut body, file_id);
            repeat(count, || {
                let pdu = client.pdu(Command::READ, &body, flags);
                Ok(client.send(pdu).status())
            })
        }
        "compound" => repeat(count, || {
            let first = client.pdu(Command::CREATE, &create, HeaderFlags::empty());
            let read = client.pdu(
                Command::READ,
                &read_body(0, 4096),
                HeaderFlags::RELATED_OPERATIONS,
            );
            let mut close = close_body();
            packet::patch_file_id(Command::CLOSE, &mut close, FileId::ANY);
            let close = client.pdu(Command::CLOSE, &close, HeaderFlags::RELATED_OPERATIONS);
            Ok(client.send(packet::chain(&[first, read, close])).status())
        }),
        _ => Err("unknown kind".into()),
    }
}

/// Runs `request` `count` times; every one must succeed.
fn repeat(
    count: u32,
    mut request: impl FnMut() -> Result<Option<NtStatus>, String>,
) -> Result<(), String> {
    for n in 0..count {
        match request()? {
            Some(NtStatus::SUCCESS) => {}
            status => return Err(format!("request {n} answered {status:?}")),
        }
    }
    Ok(())
}
