//! The dispatcher: the one place that calls the handlers, each request to the handler of its
//! command (and of its share's kind: named pipes on `IPC$`), and NEGOTIATE, which runs on the
//! reader in arrival order before any request context exists.

use smb3d_dtyp::NtStatus;
use smb3d_smb2::Command;

pub(crate) use crate::handlers::negotiate::{handle as negotiate, smb1_upgrade};
use crate::handlers::{
    change_notify, close, create, echo, flush, ioctl, lock, logoff, oplock_break, pipe,
    query_directory, query_info, read, session_setup, set_info, tree_connect, tree_disconnect,
    write,
};
use crate::request::ctx::Ctx;
use crate::request::reply::Reply;

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
