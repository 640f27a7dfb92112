//! The dispatcher: the one place that calls the handlers, each request to the handler its
//! command's row names for its share's kind (`crate::request::commands`: named pipes on
//! `IPC$`), and NEGOTIATE, which runs on the reader in arrival order before any request
//! context exists.

use smb3d_dtyp::NtStatus;

pub(crate) use crate::handlers::negotiate::{handle as negotiate, smb1_upgrade};
use crate::handlers::{
    change_notify, close, create, echo, flush, ioctl, lock, logoff, oplock_break, pipe,
    query_directory, query_info, read, session_setup, set_info, tree_connect, tree_disconnect,
    write,
};
use crate::request::commands::{self, Handler};
use crate::request::ctx::Ctx;
use crate::request::reply::Reply;

/// Runs the handler for the request's command. `Ok` carries the status of a response with a
/// body (success, or a warning such as STATUS_BUFFER_OVERFLOW); `Err` an error response.
///
/// The handler is named by an enum and called by this `match`, not through a table of
/// function pointers: those would box each handler's future, an allocation per request.
pub(crate) async fn dispatch(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    reply: &mut Reply<'_>,
) -> Result<NtStatus, NtStatus> {
    let spec = commands::spec(cx.hdr.command);
    // A tree whose share does not admit who the session is since a re-authentication opens
    // nothing new (MS-SMB2 3.3.5.5.2, answered as TREE_CONNECT would be).
    if spec.opens && cx.tree.as_ref().is_some_and(|t| !t.admitted) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let handler = if cx.tree.as_ref().is_some_and(|t| t.share.is_ipc()) {
        spec.pipe
    } else {
        spec.disk
    };
    // Commands that may wait or send file data take the reply itself, to go async
    // (`reply::go_async`) or attach a file tail; the others write their body.
    match handler {
        Handler::Lock => lock::handle(cx, pdu, reply).await,
        Handler::ChangeNotify => change_notify::handle(cx, pdu, reply).await,
        Handler::Create => create::handle(cx, pdu, reply).await,
        Handler::SetInfo => set_info::handle(cx, pdu, reply).await,
        // IOCTL tells pipes apart itself.
        Handler::Ioctl => ioctl::handle(cx, pdu, reply).await,
        Handler::Read => read::handle(cx, pdu, reply).await,
        // A read on a pipe may wait for data.
        Handler::PipeRead => pipe::read(cx, pdu, reply).await,
        Handler::PipeCreate => pipe::create(cx, pdu, &mut reply.writer()),
        Handler::PipeClose => pipe::close(cx, pdu, &mut reply.writer()),
        Handler::PipeFlush => pipe::flush(cx, pdu, &mut reply.writer()),
        Handler::PipeWrite => pipe::write(cx, pdu, &mut reply.writer()),
        Handler::PipeQueryInfo => pipe::query_info(cx, pdu, &mut reply.writer()),
        Handler::SessionSetup => session_setup::handle(cx, pdu, &mut reply.writer()).await,
        Handler::Logoff => logoff::handle(cx, pdu, &mut reply.writer()).await,
        Handler::TreeConnect => tree_connect::handle(cx, pdu, &mut reply.writer()).await,
        Handler::TreeDisconnect => tree_disconnect::handle(cx, pdu, &mut reply.writer()).await,
        Handler::Close => close::handle(cx, pdu, &mut reply.writer()).await,
        Handler::Flush => flush::handle(cx, pdu, &mut reply.writer()).await,
        Handler::Write => write::handle(cx, pdu, &mut reply.writer()).await,
        Handler::Echo => echo::handle(cx, pdu, &mut reply.writer()).await,
        Handler::QueryDirectory => query_directory::handle(cx, pdu, &mut reply.writer()).await,
        Handler::QueryInfo => query_info::handle(cx, pdu, &mut reply.writer()).await,
        Handler::OplockBreak => oplock_break::handle(cx, pdu, &mut reply.writer()),
        Handler::NotSupported => Err(NtStatus::NOT_SUPPORTED),
        Handler::None => Err(NtStatus::INVALID_PARAMETER),
    }
}
