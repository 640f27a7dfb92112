//! FLUSH: MS-SMB2 3.3.5.11.

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::flush::{FlushRequest, FlushResponse};
use smb3d_wire::Writer;

use crate::blocking::blocking;
use crate::fs::write_time::Now;
use crate::handlers::lookup_open;
use crate::request::ctx::Ctx;
use crate::request::malformed;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = FlushRequest::decode(pdu).map_err(malformed)?;
    let open = lookup_open(cx, req.file_id)?;
    if !open.may(AccessMask::FILE_WRITE_DATA | AccessMask::FILE_APPEND_DATA) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    blocking(|| open.shared.sync(&*open.file))?;
    open.shared
        .with_write_time(|wt| wt.flush(Now::of(&*cx.conn.server.settings.clock)));
    FlushResponse.encode(w);
    Ok(NtStatus::SUCCESS)
}
