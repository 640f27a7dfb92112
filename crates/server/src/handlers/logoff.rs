//! LOGOFF: MS-SMB2 3.3.5.6.

use smb3d_dtyp::NtStatus;
use smb3d_smb2::logoff::{LogoffRequest, LogoffResponse};
use smb3d_wire::Writer;

use crate::request::ctx::Ctx;
use crate::request::malformed;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    LogoffRequest::decode(pdu).map_err(malformed)?;
    let session = cx.session.take().ok_or(NtStatus::USER_SESSION_DELETED)?;
    cx.sign_with = cx.conn.response_signer_of(cx.hdr, &session, false);
    // The session ends on every channel.
    let server = &cx.conn.server;
    server.forget_session(session.id);
    // Durable opens outlive the session, as Windows and Samba keep them, for a reconnect
    // (smbtorture smb2.durable-open.reopen4).
    crate::state::durable::disconnect_session(server, &session);
    LogoffResponse.encode(w);
    Ok(NtStatus::SUCCESS)
}
