//! Scenario tests of requests that wait, over the in-memory server: blocking byte-range locks
//! go async with an interim STATUS_PENDING, complete when the range frees, end with
//! STATUS_CANCELLED on CANCEL and with STATUS_RANGE_NOT_LOCKED when their open closes; locks
//! stop conflicting READ and WRITE; change notifications wait for changes and end with their
//! open; a conflicting open waits for an oplock break to be acknowledged; a durable open
//! outlives its connection and is reclaimed on the next; nothing is left after the connection
//! ends (`script::run` checks).

use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::Settings;
use smb3d_smb2::Command;
use smb3d_smb2::change_notify::{ChangeNotifyFlags, ChangeNotifyRequest, CompletionFilter};
use smb3d_smb2::create::{
    CreateContext, CreateContexts, CreateDisposition, CreateOptions, CreateRequest,
    ImpersonationLevel, OplockLevel, ShareAccess,
};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::lock::{LockElement, LockElements, LockFlags, LockRequest};
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::oplock_break::OplockBreak;
use smb3d_testkit::packet::body;
use smb3d_testkit::script::{self, Op, RequestSpec, SpecFlags, Summary};
use smb3d_testkit::seeds::{close_body, connected, create_body, read_body, write_body};

fn request(command: Command, body: Vec<u8>) -> Op {
    Op::Request(RequestSpec::new(command, body))
}

fn lock(offset: u64, length: u64, flags: LockFlags) -> Op {
    let mut elements = Vec::new();
    LockElement {
        offset,
        length,
        flags,
    }
    .write(&mut smb3d_wire::Writer::new(&mut elements));
    request(
        Command::LOCK,
        body(|w| {
            LockRequest {
                lock_sequence: 0,
                file_id: FileId::default(),
                locks: LockElements::new(&elements).unwrap(),
            }
            .encode(w)
        }),
    )
}

fn open_file() -> Op {
    request(
        Command::CREATE,
        create_body(
            "dir\\file.txt",
            AccessMask(0x001F_01FF),
            CreateDisposition::OPEN,
            CreateOptions::NON_DIRECTORY_FILE,
        ),
    )
}

/// Makes the first (0) or second (1) open current.
fn select(file: u8) -> Op {
    Op::Select {
        session: 0,
        tree: 0,
        file,
    }
}

fn run(ops: Vec<Op>) -> Summary {
    script::run(&ops, Settings::default(), Arc::new(NullProvider)).unwrap_or_else(|v| panic!("{v}"))
}

/// The statuses of the LOCK, READ and WRITE responses, in order.
fn statuses(summary: &Summary) -> Vec<(Command, NtStatus)> {
    summary
        .responses
        .iter()
        .copied()
        .filter(|(c, _)| matches!(*c, Command::LOCK | Command::READ | Command::WRITE))
        .collect()
}

const X: LockFlags = LockFlags::EXCLUSIVE_LOCK;
const XF: LockFlags = LockFlags(LockFlags::EXCLUSIVE_LOCK.0 | LockFlags::FAIL_IMMEDIATELY.0);
const S: LockFlags = LockFlags::SHARED_LOCK;

#[test]
fn blocking_lock_waits_for_the_unlock() {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    ops.extend([
        open_file(),
        open_file(),
        select(0),
        lock(0, 10, XF),
        select(1),
        lock(5, 10, XF),
        lock(5, 10, X),
        select(0),
        lock(0, 10, LockFlags::UNLOCK),
        select(1),
        request(Command::WRITE, write_body(0, b"0123456789")),
        select(0),
        request(Command::READ, read_body(5, 2)),
        request(Command::CLOSE, close_body()),
    ]);
    let summary = run(ops);
    assert_eq!(
        statuses(&summary),
        [
            (Command::LOCK, NtStatus::SUCCESS),
            (Command::LOCK, NtStatus::LOCK_NOT_GRANTED),
            (Command::LOCK, NtStatus::PENDING),
            // The unlock's response, then the waiting lock's final one.
            (Command::LOCK, NtStatus::SUCCESS),
            (Command::LOCK, NtStatus::SUCCESS),
            // The second open holds 5..15 exclusively now: it writes, the first cannot read.
            (Command::WRITE, NtStatus::SUCCESS),
            (Command::READ, NtStatus::FILE_LOCK_CONFLICT),
        ]
    );
}

#[test]
fn cancel_ends_a_waiting_lock() {
    let mut ops = connected(&[Dialect::SMB2_1]);
    ops.extend([
        open_file(),
        open_file(),
        select(0),
        lock(0, 10, S),
        select(1),
        lock(0, 1, X),
        request(Command::CANCEL, Vec::from([4u8, 0, 0, 0])),
        // Shared locks of two opens coexist.
        lock(0, 1, S),
    ]);
    let summary = run(ops);
    assert_eq!(
        statuses(&summary),
        [
            (Command::LOCK, NtStatus::SUCCESS),
            (Command::LOCK, NtStatus::PENDING),
            (Command::LOCK, NtStatus::CANCELLED),
            (Command::LOCK, NtStatus::SUCCESS),
        ]
    );
}

#[test]
fn closing_the_open_ends_its_waiting_lock() {
    let mut ops = connected(&[Dialect::SMB3_0]);
    ops.extend([
        open_file(),
        open_file(),
        select(0),
        lock(0, 10, X),
        select(1),
        lock(0, 10, X),
        // Tree disconnect closes both opens; which closes first decides the answer, as in
        // smbtorture smb2.lock.cancel-tdis.
        request(Command::TREE_DISCONNECT, Vec::from([4u8, 0, 0, 0])),
    ]);
    let summary = run(ops);
    let locks = statuses(&summary);
    assert_eq!(
        locks[..2],
        [
            (Command::LOCK, NtStatus::SUCCESS),
            (Command::LOCK, NtStatus::PENDING),
        ]
    );
    assert!(matches!(
        locks[2],
        (
            Command::LOCK,
            NtStatus::RANGE_NOT_LOCKED | NtStatus::SUCCESS
        )
    ));
}

#[test]
fn lock_requests_are_checked_in_order() {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    ops.extend([
        open_file(),
        lock(u64::MAX, u64::MAX, XF),
        lock(1, 1, LockFlags(0)),
        lock(
            1,
            1,
            LockFlags(LockFlags::UNLOCK.0 | LockFlags::SHARED_LOCK.0),
        ),
        lock(1, 1, LockFlags::UNLOCK),
        lock(1, 1, S),
        lock(1, 1, S),
        lock(1, 1, LockFlags::UNLOCK),
        lock(1, 1, LockFlags::UNLOCK),
        lock(1, 1, LockFlags::UNLOCK),
    ]);
    let summary = run(ops);
    assert_eq!(
        statuses(&summary),
        [
            (Command::LOCK, NtStatus::INVALID_LOCK_RANGE),
            (Command::LOCK, NtStatus::INVALID_PARAMETER),
            (Command::LOCK, NtStatus::INVALID_PARAMETER),
            (Command::LOCK, NtStatus::RANGE_NOT_LOCKED),
            (Command::LOCK, NtStatus::SUCCESS),
            (Command::LOCK, NtStatus::SUCCESS),
            (Command::LOCK, NtStatus::SUCCESS),
            (Command::LOCK, NtStatus::SUCCESS),
            (Command::LOCK, NtStatus::RANGE_NOT_LOCKED),
        ]
    );
}

fn notify(filter: CompletionFilter) -> Op {
    request(
        Command::CHANGE_NOTIFY,
        body(|w| {
            ChangeNotifyRequest {
                flags: ChangeNotifyFlags::empty(),
                output_buffer_length: 4096,
                file_id: FileId::default(),
                completion_filter: filter,
            }
            .encode(w)
        }),
    )
}

fn open_dir(name: &str, disposition: CreateDisposition) -> Op {
    request(
        Command::CREATE,
        create_body(
            name,
            AccessMask(0x001F_01FF),
            disposition,
            CreateOptions::DIRECTORY_FILE,
        ),
    )
}

/// The statuses of the CHANGE_NOTIFY responses, in order.
fn notify_statuses(summary: &Summary) -> Vec<NtStatus> {
    summary
        .responses
        .iter()
        .filter(|(c, _)| *c == Command::CHANGE_NOTIFY)
        .map(|(_, s)| *s)
        .collect()
}

#[test]
fn change_notify_waits_for_a_change_and_ends_on_cancel_and_close() {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    ops.extend([
        open_dir("dir", CreateDisposition::OPEN),
        // Cancelled while waiting; the watch stays and keeps what happens next.
        notify(CompletionFilter::DIR_NAME),
        request(Command::CANCEL, Vec::from([4u8, 0, 0, 0])),
        open_dir("dir\\sub", CreateDisposition::CREATE),
        select(0),
        // Answered at once with the kept change.
        notify(CompletionFilter::DIR_NAME),
        // Waits, then ends with the open.
        notify(CompletionFilter::DIR_NAME),
        request(Command::CLOSE, close_body()),
        // A file is not watched.
        open_file(),
        notify(CompletionFilter::FILE_NAME),
    ]);
    let summary = run(ops);
    assert_eq!(
        notify_statuses(&summary),
        [
            NtStatus::PENDING,
            NtStatus::CANCELLED,
            NtStatus::SUCCESS,
            NtStatus::PENDING,
            NtStatus::NOTIFY_CLEANUP,
            NtStatus::INVALID_PARAMETER,
        ]
    );
}

#[test]
fn a_change_notify_inside_a_compound_cannot_wait() {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    let related = |op: Op| match op {
        Op::Request(spec) => spec.with(SpecFlags::RELATED),
        _ => unreachable!(),
    };
    ops.push(Op::Compound(vec![
        match open_dir("dir", CreateDisposition::OPEN) {
            Op::Request(spec) => spec,
            _ => unreachable!(),
        },
        related(notify(CompletionFilter::FILE_NAME)),
        related(request(Command::CLOSE, close_body())),
    ]));
    let summary = run(ops);
    // Windows answers the waiting request in the middle with STATUS_INTERNAL_ERROR and goes on
    // with the next (smbtorture smb2.compound.interim2).
    assert_eq!(notify_statuses(&summary), [NtStatus::INTERNAL_ERROR]);
    assert!(summary.saw(Command::CLOSE, NtStatus::SUCCESS));
}

/// Opens the test file asking for an oplock of `level`.
fn open_with_oplock(level: OplockLevel) -> Op {
    let mut body = create_body(
        "dir\\file.txt",
        AccessMask(0x001F_01FF),
        CreateDisposition::OPEN,
        CreateOptions::NON_DIRECTORY_FILE,
    );
    // RequestedOplockLevel follows StructureSize and SecurityFlags (MS-SMB2 2.2.13).
    body[3] = level.0;
    request(Command::CREATE, body)
}

fn oplock_ack(level: OplockLevel) -> Op {
    request(
        Command::OPLOCK_BREAK,
        body(|w| {
            OplockBreak {
                oplock_level: level,
                file_id: FileId::default(),
            }
            .encode(w)
        }),
    )
}

fn creates_and_breaks(summary: &Summary) -> Vec<(Command, NtStatus)> {
    summary
        .responses
        .iter()
        .copied()
        .filter(|(c, _)| matches!(*c, Command::CREATE | Command::OPLOCK_BREAK))
        .collect()
}

#[test]
fn a_conflicting_open_waits_for_the_oplock_break_acknowledgment() {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    ops.extend([
        open_with_oplock(OplockLevel::BATCH),
        open_file(),
        select(0),
        oplock_ack(OplockLevel::II),
        // No break is under way any more.
        oplock_ack(OplockLevel::II),
    ]);
    let summary = run(ops);
    let seen = creates_and_breaks(&summary);
    assert_eq!(
        seen[..3],
        [
            (Command::CREATE, NtStatus::SUCCESS),
            // The break notification, then the second open's interim response.
            (Command::OPLOCK_BREAK, NtStatus::SUCCESS),
            (Command::CREATE, NtStatus::PENDING),
        ]
    );
    let mut rest = seen[3..5].to_vec();
    rest.sort_by_key(|(c, _)| c.0);
    assert_eq!(
        rest,
        [
            (Command::CREATE, NtStatus::SUCCESS),
            (Command::OPLOCK_BREAK, NtStatus::SUCCESS),
        ]
    );
    assert_eq!(
        seen[5..],
        [(Command::OPLOCK_BREAK, NtStatus::INVALID_OPLOCK_PROTOCOL)]
    );
}

#[test]
fn cancel_ends_an_open_waiting_for_an_oplock_break() {
    let mut ops = connected(&[Dialect::SMB2_1]);
    ops.extend([
        open_with_oplock(OplockLevel::EXCLUSIVE),
        open_file(),
        request(Command::CANCEL, Vec::from([4u8, 0, 0, 0])),
    ]);
    let summary = run(ops);
    assert_eq!(
        creates_and_breaks(&summary),
        [
            (Command::CREATE, NtStatus::SUCCESS),
            (Command::OPLOCK_BREAK, NtStatus::SUCCESS),
            (Command::CREATE, NtStatus::PENDING),
            (Command::CREATE, NtStatus::CANCELLED),
        ]
    );
}

/// Opens the test file with `level` and the create contexts `contexts`.
fn open_with(level: OplockLevel, contexts: &[CreateContext<'_>]) -> Op {
    let mut chain = Vec::new();
    CreateContext::encode_chain(contexts, &mut smb3d_wire::Writer::new(&mut chain));
    let name: Vec<u8> = "dir\\file.txt"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    request(
        Command::CREATE,
        body(|w| {
            CreateRequest {
                security_flags: 0,
                requested_oplock_level: level,
                impersonation_level: ImpersonationLevel::IMPERSONATION,
                smb_create_flags: 0,
                desired_access: AccessMask(0x001F_01FF),
                file_attributes: 0x80,
                share_access: ShareAccess::READ | ShareAccess::WRITE | ShareAccess::DELETE,
                create_disposition: CreateDisposition::OPEN,
                create_options: CreateOptions::NON_DIRECTORY_FILE,
                name: &name,
                contexts: CreateContexts::parse(&chain).unwrap(),
            }
            .encode(w)
        }),
    )
}

#[test]
fn a_durable_open_is_reclaimed_after_its_connection_is_lost() {
    // The first open of a fresh server gets volatile id 1, and, from a provider without
    // randomness, the same persistent id.
    let first = FileId {
        persistent: 1,
        volatile: 1,
    };
    let mut ops = connected(&[Dialect::SMB3_0]);
    ops.push(open_with(
        OplockLevel::BATCH,
        &[CreateContext::DurableHandleRequest],
    ));
    ops.push(Op::Reconnect);
    ops.extend(connected(&[Dialect::SMB3_0]));
    ops.extend([
        // Not while a reconnect names no such open...
        open_with(
            OplockLevel::NONE,
            &[CreateContext::DurableHandleReconnect {
                file_id: FileId {
                    persistent: 7,
                    volatile: 2,
                },
            }],
        ),
        open_with(
            OplockLevel::NONE,
            &[CreateContext::DurableHandleReconnect { file_id: first }],
        ),
        // ...and only once.
        open_with(
            OplockLevel::NONE,
            &[CreateContext::DurableHandleReconnect { file_id: first }],
        ),
        select(0),
        request(Command::CLOSE, close_body()),
    ]);
    let summary = run(ops);
    let seen: Vec<_> = summary
        .responses
        .iter()
        .copied()
        .filter(|(c, _)| matches!(*c, Command::CREATE | Command::CLOSE))
        .collect();
    assert_eq!(
        seen,
        [
            (Command::CREATE, NtStatus::SUCCESS),
            (Command::CREATE, NtStatus::OBJECT_NAME_NOT_FOUND),
            (Command::CREATE, NtStatus::SUCCESS),
            (Command::CREATE, NtStatus::OBJECT_NAME_NOT_FOUND),
            (Command::CLOSE, NtStatus::SUCCESS),
        ]
    );
}
