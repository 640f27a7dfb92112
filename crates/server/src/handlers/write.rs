//! WRITE: MS-SMB2 3.3.5.13. The data is written from the request buffer, not copied, or from
//! the pipe the transport left it in (`piped_write`).

use std::sync::atomic::Ordering;

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_fscc::FileMode;
use smb3d_smb2::write::{WriteFlags, WriteRequest, WriteResponse};
use smb3d_wire::Writer;

use crate::blocking::{Wait, blocking};
use crate::handlers::{MAX_OFFSET, check_credit_charge, lookup_open};
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::state::allocation;
use crate::status_map::VfsResultExt;

/// The largest file NTFS can hold (16 TiB - 64 KiB); clients expect writes beyond it to fail
/// with STATUS_INVALID_PARAMETER, whatever the Linux file system allows.
const MAX_FILE_SIZE: u64 = 0x0000_0FFF_FFFF_0000;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let mut piped = cx.piped.take();
    let req = match &piped {
        None => WriteRequest::decode(pdu),
        Some(data) => WriteRequest::decode_without_data(pdu, data.len()),
    }
    .map_err(malformed)?;
    let data_len = req.data_range.len();
    let len = u32::try_from(data_len).map_err(|_| NtStatus::INVALID_PARAMETER)?;
    if len > cx.conn.server.settings.max_io_size {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    check_credit_charge(cx, len)?;
    // Offsets are signed 64-bit (MS-FSA 2.1.5.3), and no write may end beyond what NTFS holds.
    let end = req.offset.checked_add(u64::from(len));
    if req.offset > MAX_OFFSET
        || end.is_none_or(|end| end > MAX_OFFSET || (len > 0 && end > MAX_FILE_SIZE))
    {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let open = lookup_open(cx, req.file_id)?;
    if open.is_directory {
        return Err(NtStatus::INVALID_DEVICE_REQUEST);
    }
    if !open.may(AccessMask::FILE_WRITE_DATA | AccessMask::FILE_APPEND_DATA) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    open.changeable()?;
    open.check_locks(&cx.conn.server, req.offset, u64::from(len), true)?;
    crate::state::caching::before_write(&cx.conn.server, &open);
    let written = if len == 0 {
        0
    } else {
        open.writing(&*cx.conn.server.settings.clock);
        let wait = Wait::transfer(data_len);
        let _turn = match wait {
            Wait::Long => Some(open.shared.data_writes.lock().await),
            Wait::Brief => None,
        };
        let written = cx
            .conn
            .server
            .write_pace
            .run(data_len, || {
                allocation::before_write(&open, req.offset)?;
                match &mut piped {
                    Some(data) => open.file.write_piped(data, req.offset),
                    None => open.file.write_at(req.data, req.offset),
                }
            })
            .status()?;
        allocation::wrote(&open, req.offset + written as u64);
        // Write-through (MS-SMB2 3.3.5.13, MS-FSA 2.1.5.3): the data is on stable storage
        // before the write is acknowledged.
        let opened_write_through =
            open.mode.load(Ordering::Relaxed) & u64::from(FileMode::WRITE_THROUGH.bits()) != 0;
        if req.flags.contains(WriteFlags::WRITE_THROUGH) || opened_write_through {
            blocking(|| open.shared.sync(&*open.file))?;
        }
        written
    };
    cx.conn.server.metrics.file_written(written);
    // FilePositionInformation follows synchronous writes.
    open.position
        .store(req.offset + written as u64, Ordering::Relaxed);
    WriteResponse {
        count: u32::try_from(written).unwrap_or(u32::MAX),
        remaining: 0,
    }
    .encode(w);
    Ok(NtStatus::SUCCESS)
}
