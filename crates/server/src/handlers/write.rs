//! WRITE: MS-SMB2 3.3.5.13. The data is written from the request buffer, not copied.

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::write::{WriteRequest, WriteResponse};
use smb3d_wire::Writer;

use crate::blocking::blocking;
use crate::connection::Ctx;
use crate::handlers::{check_credit_charge, lookup_open};
use crate::status_map::VfsResultExt;

/// Offset value meaning "at the end of the file" for opens with append-only access (MS-FSA
/// 2.1.5.3).
const APPEND_OFFSET: u64 = u64::MAX;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = WriteRequest::decode(pdu).map_err(|_| NtStatus::INVALID_PARAMETER)?;
    let len = u32::try_from(req.data.len()).map_err(|_| NtStatus::INVALID_PARAMETER)?;
    if len > cx.conn.server.settings.max_io_size {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    check_credit_charge(cx, len)?;
    let open = lookup_open(cx, req.file_id)?;
    if open.is_directory {
        return Err(NtStatus::INVALID_DEVICE_REQUEST);
    }
    let appending = req.offset == APPEND_OFFSET;
    let allowed = if appending {
        open.may(AccessMask::FILE_APPEND_DATA | AccessMask::FILE_WRITE_DATA)
    } else {
        open.may(AccessMask::FILE_WRITE_DATA)
    };
    if !allowed {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let written = blocking(|| {
        let offset = if appending {
            open.file.stat()?.size
        } else {
            req.offset
        };
        open.file.write_at(req.data, offset)
    })
    .status()?;
    WriteResponse {
        count: u32::try_from(written).unwrap_or(u32::MAX),
        remaining: 0,
    }
    .encode(w);
    Ok(NtStatus::SUCCESS)
}
