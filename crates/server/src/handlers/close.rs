//! CLOSE: MS-SMB2 3.3.5.10.

use smb3d_dtyp::NtStatus;
use smb3d_smb2::close::{CloseAttributes, CloseFlags, CloseRequest, CloseResponse};
use smb3d_wire::Writer;

use crate::handlers::lookup_open;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::state::open::close_written;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = CloseRequest::decode(pdu).map_err(malformed)?;
    let open = lookup_open(cx, req.file_id)?;
    let session = cx.session.clone().ok_or(NtStatus::USER_SESSION_DELETED)?;
    session.state.lock().opens.remove(&open.file_id.volatile);

    // With POSTQUERY_ATTRIB the attributes are taken before a delete-on-close removes the
    // file; what is returned describes the file as it was closed.
    let mut response = CloseResponse { attributes: None };
    let clock = &*cx.conn.server.settings.clock;
    let wrote = open.finish_writes(clock);
    if req.flags.contains(CloseFlags::POSTQUERY_ATTRIB)
        && let Ok(meta) = open.io(|| open.meta(clock))
    {
        response.attributes = Some(CloseAttributes {
            times: meta.times(),
            allocation_size: meta.allocation_size(),
            end_of_file: meta.end_of_file(),
            file_attributes: meta.attributes().0,
        });
    }
    close_written(&cx.conn.server, &open, wrote);
    if cx.chain.file_id == Some(open.file_id) {
        cx.chain.file_id = None;
    }
    response.encode(w);
    Ok(NtStatus::SUCCESS)
}
