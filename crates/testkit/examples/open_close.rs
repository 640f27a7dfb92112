//! Opens and closes files COUNT times over one in-memory connection, for counting what a CREATE
//! costs with callgrind, which is repeatable on a loaded machine where timings are not:
//!
//! ```text
//! cargo build --release -p smb3d-testkit --example open_close
//! valgrind --tool=callgrind target/release/examples/open_close existing 2000
//! ```
//!
//! `existing` opens `dir\file.txt` (as the path-contention benchmark opens a path), `new`
//! creates a new file each time (as the small-files one does). The instructions of a run with
//! COUNT 0 (start, logon, tree connect) taken from one with COUNT n, divided by n, are those of
//! one CREATE and CLOSE.

use std::process::ExitCode;
use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::Command;
use smb3d_smb2::create::{CreateDisposition, CreateOptions};
use smb3d_testkit::client::Client;
use smb3d_testkit::harness::{self, TestServer};
use smb3d_testkit::seeds;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(workload), Some(Ok(count))) = (args.next(), args.next().map(|n| n.parse::<u32>()))
    else {
        eprintln!("usage: open_close existing|new COUNT");
        return ExitCode::FAILURE;
    };
    let creates_new = match workload.as_str() {
        "existing" => false,
        "new" => true,
        _ => {
            eprintln!("usage: open_close existing|new COUNT");
            return ExitCode::FAILURE;
        }
    };
    let server = match TestServer::new(harness::settings(), Arc::new(NullProvider)) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("open_close: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut client = Client::new(server.connect());
    if client.connect() != Some(NtStatus::SUCCESS) {
        eprintln!("open_close: no tree connect");
        return ExitCode::FAILURE;
    }
    for i in 0..count {
        let (name, disposition) = if creates_new {
            (format!("dir\\new{i}.txt"), CreateDisposition::CREATE)
        } else {
            ("dir\\file.txt".to_owned(), CreateDisposition::OPEN)
        };
        let body = seeds::create_body(
            &name,
            AccessMask(0x0012_019F),
            disposition,
            CreateOptions::NON_DIRECTORY_FILE,
        );
        let file_id = match client.call(Command::CREATE, &body, None).responses.last() {
            Some(response) if response.status() == NtStatus::SUCCESS => {
                smb3d_smb2::create::CreateResponse::decode(&response.pdu).map(|c| c.file_id)
            }
            other => {
                eprintln!("open_close: CREATE of {name} answered {other:?}");
                return ExitCode::FAILURE;
            }
        };
        let Ok(file_id) = file_id else {
            eprintln!("open_close: unreadable CREATE response");
            return ExitCode::FAILURE;
        };
        let closed = client.call(Command::CLOSE, &seeds::close_body(), Some(file_id));
        if closed.status() != Some(NtStatus::SUCCESS) {
            eprintln!("open_close: CLOSE answered {:?}", closed.status());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
