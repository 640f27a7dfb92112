//! LOGOFF: MS-SMB2 3.3.5.6.

use smb3d_dtyp::NtStatus;
use smb3d_smb2::logoff::{LogoffRequest, LogoffResponse};
use smb3d_wire::Writer;

use crate::connection::Ctx;
use crate::handlers::close::close_open;
use crate::server::Server;
use crate::session::Session;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    LogoffRequest::decode(pdu).map_err(|_| NtStatus::INVALID_PARAMETER)?;
    let session = cx.session.take().ok_or(NtStatus::USER_SESSION_DELETED)?;
    cx.sign_with = cx.conn.response_signer_of(cx.hdr, &session, false);
    // The session ends on every channel.
    let server = &cx.conn.server;
    server.forget_session(session.id);
    // Durable opens outlive the session, as Windows and Samba keep them, for a reconnect
    // (smbtorture smb2.durable-open.reopen4).
    crate::durable::disconnect_session(server, &session);
    LogoffResponse.encode(w);
    Ok(NtStatus::SUCCESS)
}

/// Ends a session on every channel and closes everything it holds: its opens (running
/// delete-on-close) and tree connects.
pub(crate) fn tear_down(server: &Server, session: &Session) {
    server.forget_session(session.id);
    let opens = session.state.lock().take_everything();
    for open in opens {
        close_open(server, &open);
    }
    server.sessions.lock().remove(&session.id);
}
