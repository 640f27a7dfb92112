//! One module per SMB2 command (MS-SMB2 3.3.5.x), and the dispatch between them.

pub(crate) mod change_notify;
pub(crate) mod close;
pub(crate) mod create;
pub(crate) mod echo;
pub(crate) mod flush;
pub(crate) mod ioctl;
pub(crate) mod lock;
pub(crate) mod logoff;
pub(crate) mod negotiate;
pub(crate) mod oplock_break;
pub(crate) mod pipe;
pub(crate) mod query_directory;
pub(crate) mod query_info;
pub(crate) mod read;
pub(crate) mod session_setup;
pub(crate) mod set_info;
pub(crate) mod tree_connect;
pub(crate) mod tree_disconnect;
pub(crate) mod write;

use std::sync::Arc;

use smb3d_dtyp::NtStatus;
use smb3d_smb2::Command;
use smb3d_smb2::file_id::FileId;

use crate::request::ctx::Ctx;
use crate::request::reply::Reply;
use crate::state::open::Open;

/// Runs the handler for the request's command. `Ok` carries the status of a response with a
/// body (success, or a warning such as STATUS_BUFFER_OVERFLOW); `Err` an error response.
pub(crate) async fn dispatch(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    reply: &mut Reply<'_>,
) -> Result<NtStatus, NtStatus> {
    // Commands that may wait take the reply itself, to go async (`reply::go_async`).
    match cx.hdr.command {
        Command::LOCK => return lock::handle(cx, pdu, reply).await,
        Command::CHANGE_NOTIFY => return change_notify::handle(cx, pdu, reply).await,
        _ => {}
    }
    // Opens on IPC$ are named pipes (MS-SMB2 3.3.5.9 and on), whose reads may wait for data;
    // IOCTL tells pipes apart itself.
    let ipc = cx.tree.as_ref().is_some_and(|t| t.share.is_ipc());
    // A tree whose share does not admit who the session is since a re-authentication opens
    // nothing new (MS-SMB2 3.3.5.5.2, answered as TREE_CONNECT would be).
    if cx.hdr.command == Command::CREATE && cx.tree.as_ref().is_some_and(|t| !t.admitted) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    if cx.hdr.command == Command::CREATE && !ipc {
        return create::handle(cx, pdu, reply).await;
    }
    if cx.hdr.command == Command::SET_INFO && !ipc {
        return set_info::handle(cx, pdu, reply).await;
    }
    if cx.hdr.command == Command::IOCTL {
        return ioctl::handle(cx, pdu, reply).await;
    }
    if cx.hdr.command == Command::READ {
        return if ipc {
            pipe::read(cx, pdu, reply).await
        } else {
            read::handle(cx, pdu, reply).await
        };
    }
    let w = &mut reply.writer();
    match cx.hdr.command {
        Command::CREATE if ipc => pipe::create(cx, pdu, w),
        Command::CLOSE if ipc => pipe::close(cx, pdu, w),
        Command::FLUSH if ipc => pipe::flush(cx, pdu, w),
        Command::WRITE if ipc => pipe::write(cx, pdu, w),
        Command::QUERY_INFO if ipc => pipe::query_info(cx, pdu, w),
        // Pipes have no settable information (as on Samba).
        Command::SET_INFO if ipc => Err(NtStatus::NOT_SUPPORTED),
        Command::SESSION_SETUP => session_setup::handle(cx, pdu, w).await,
        Command::LOGOFF => logoff::handle(cx, pdu, w).await,
        Command::TREE_CONNECT => tree_connect::handle(cx, pdu, w).await,
        Command::TREE_DISCONNECT => tree_disconnect::handle(cx, pdu, w).await,
        Command::CLOSE => close::handle(cx, pdu, w).await,
        Command::FLUSH => flush::handle(cx, pdu, w).await,
        Command::WRITE => write::handle(cx, pdu, w).await,
        Command::ECHO => echo::handle(cx, pdu, w).await,
        Command::QUERY_DIRECTORY => query_directory::handle(cx, pdu, w).await,
        Command::QUERY_INFO => query_info::handle(cx, pdu, w).await,
        Command::OPLOCK_BREAK => oplock_break::handle(cx, pdu, w),
        _ => Err(NtStatus::INVALID_PARAMETER),
    }
}

/// File offsets are signed 64-bit values on the file system side (MS-FSA 2.1.5.2, 2.1.5.3).
pub(crate) const MAX_OFFSET: u64 = i64::MAX as u64;

/// Finds the open a request names (MS-SMB2 3.3.5.x "lookup in Session.OpenTable"): the
/// FileId 0xFFFF.. of a related compound stands for the one the previous request used
/// (3.3.5.2.7.2), which this one becomes; an open of another tree connect does not count.
pub(crate) fn lookup_open(cx: &mut Ctx<'_>, file_id: FileId) -> Result<Arc<Open>, NtStatus> {
    let file_id = if file_id.is_any() && cx.hdr.is_related() {
        cx.chain.file_id.ok_or(NtStatus::FILE_CLOSED)?
    } else {
        file_id
    };
    let session = cx.session.as_ref().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let open = session
        .state
        .lock()
        .opens
        .get(&file_id.volatile)
        .cloned()
        .ok_or(NtStatus::FILE_CLOSED)?;
    let same_tree = cx.tree.as_ref().is_some_and(|t| t.id == open.tree_id());
    if open.file_id.persistent != file_id.persistent || !same_tree {
        return Err(NtStatus::FILE_CLOSED);
    }
    // MS-SMB2 3.3.5.2.10 (SMB 3.x): every request on an open moves its ChannelSequence
    // forward; one that changes the open with an older sequence is refused.
    if cx.negotiated.is_smb3() {
        let sequence = u16::try_from(cx.hdr.status.0 & 0xFFFF).unwrap_or_default();
        let current = open.replay.check_channel_sequence(sequence);
        if matches!(
            cx.hdr.command,
            Command::WRITE | Command::IOCTL | Command::SET_INFO
        ) {
            current?;
        }
    }
    if open.replay.used() {
        cx.conn.server.durable.forget_create_guid(open.file_id);
    }
    cx.chain.file_id = Some(open.file_id);
    Ok(open)
}

/// MS-SMB2 3.3.5.2.5: a multi-credit request's CreditCharge must cover its payload, 64 KiB per
/// credit; without multi-credit support the payload is at most 64 KiB.
pub(crate) fn check_credit_charge(cx: &Ctx<'_>, payload: u32) -> Result<(), NtStatus> {
    const UNIT: u32 = 65536;
    let needed = payload.saturating_sub(1) / UNIT + 1;
    let charge = if cx.negotiated.multi_credit() {
        u32::from(cx.hdr.credit_charge.max(1))
    } else {
        1
    };
    if needed > charge {
        Err(NtStatus::INVALID_PARAMETER)
    } else {
        Ok(())
    }
}
