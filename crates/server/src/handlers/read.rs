//! READ: MS-SMB2 3.3.5.12. File data is read straight into the response buffer.

use std::sync::atomic::Ordering;

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::read::{ReadRequest, ReadResponse};
use smb3d_wire::Writer;

use crate::blocking::blocking;
use crate::connection::Ctx;
use crate::handlers::{MAX_OFFSET, check_credit_charge, lookup_open};
use crate::status_map::VfsResultExt;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = ReadRequest::decode(pdu).map_err(|_| NtStatus::INVALID_PARAMETER)?;
    if req.length > cx.conn.server.settings.max_io_size {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    check_credit_charge(cx, req.length)?;
    // Offsets are signed 64-bit on the file system side (MS-FSA 2.1.5.2).
    let end = req.offset.checked_add(u64::from(req.length));
    if req.offset > MAX_OFFSET || end.is_none_or(|end| end > MAX_OFFSET) {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let open = lookup_open(cx, req.file_id)?;
    if open.is_directory {
        return Err(NtStatus::INVALID_DEVICE_REQUEST);
    }
    if !open.may(AccessMask::FILE_READ_DATA | AccessMask::FILE_EXECUTE) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    open.shared.locks.check_io(
        open.file_id.volatile,
        req.offset,
        u64::from(req.length),
        false,
    )?;
    let len = req.length as usize;
    let pending = ReadResponse::begin(w);
    let start = w.offset();
    let read = {
        let buf = w.zeroed_tail(len);
        blocking(|| open.file.read_at(buf, req.offset)).status()?
    };
    w.truncate(start + read);
    // Nothing at or beyond the end, or less than the client's minimum: STATUS_END_OF_FILE.
    if (read == 0 && len > 0) || read < req.minimum_count as usize {
        return Err(NtStatus::END_OF_FILE);
    }
    ReadResponse::finish(w, pending, 0);
    cx.conn.server.metrics.file_read(read);
    // FilePositionInformation follows synchronous reads.
    open.position
        .store(req.offset + read as u64, Ordering::Relaxed);
    Ok(NtStatus::SUCCESS)
}
