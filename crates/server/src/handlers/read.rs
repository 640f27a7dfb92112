//! READ: MS-SMB2 3.3.5.12. File data is read straight into the response buffer, or, for a
//! large response that goes out neither signed nor encrypted, not read at all: the transport
//! sends it from the file (`file_tail`).

use std::sync::atomic::Ordering;

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::read::{ReadRequest, ReadResponse};

use crate::blocking::{Wait, blocking, elsewhere};
use crate::handlers::{MAX_OFFSET, check_credit_charge, lookup_open};
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::request::reply::Reply;
use crate::state::connection::file_tail::FileTail;
use crate::status_map::VfsResultExt;

/// Reads at least this long are sent from the file when they may be; below it a copy costs
/// less than the extra system calls.
const SEND_FROM_FILE_MIN: usize = 64 * 1024;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    reply: &mut Reply<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = ReadRequest::decode(pdu).map_err(malformed)?;
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
    open.check_locks(&cx.conn.server, req.offset, u64::from(req.length), false)?;
    let len = req.length as usize;
    let from_file = len >= SEND_FROM_FILE_MIN
        && cx.last_in_chain
        && cx.response_in_clear()
        && open.file.data_fd().is_some();
    let read = if from_file {
        let size = open.file.stat().status()?.size;
        let available = size.saturating_sub(req.offset).min(u64::from(req.length));
        // At most `req.length`, a u32.
        let available = available as usize;
        check_minimum(available, len, req.minimum_count)?;
        ReadResponse::encode_fixed(&mut reply.writer(), available as u32, 0);
        reply
            .frame
            .set_tail(FileTail::new(open.clone(), req.offset, available));
        available
    } else {
        let mut w = reply.writer();
        let pending = ReadResponse::begin(&mut w);
        let read = match Wait::transfer(len) {
            // A long read the page cache holds is copied here: handing the worker's other
            // tasks to another thread first (a thread woken, two context switches) cost a
            // tenth of a signed or encrypted 1 MiB READ's server CPU. One that would wait on
            // the disk still reads off the async workers.
            Wait::Long => {
                match w.append_in_place(|buf| open.file.try_read_append(buf, len, req.offset)) {
                    Some(read) => read,
                    None => blocking(|| {
                        w.append_in_place(|buf| open.file.read_append(buf, len, req.offset))
                    }),
                }
            }
            // A brief read is answered from the page cache if it can be; one that would wait
            // on the disk goes to the blocking threads, so that it holds neither this worker
            // nor the connection's other requests (issue 22 item 4).
            Wait::Brief => {
                match w.append_in_place(|buf| open.file.try_read_append(buf, len, req.offset)) {
                    Some(read) => read,
                    None => {
                        let file = open.clone();
                        let offset = req.offset;
                        let data = elsewhere(move || {
                            let mut data = Vec::new();
                            file.file.read_append(&mut data, len, offset).map(|_| data)
                        })
                        .await
                        .status()?;
                        w.bytes(&data);
                        Ok(data.len())
                    }
                }
            }
        }
        .status()?;
        check_minimum(read, len, req.minimum_count)?;
        ReadResponse::finish(&mut w, pending, 0);
        read
    };
    cx.conn.server.metrics.file_read(read);
    // FilePositionInformation follows synchronous reads.
    open.position
        .store(req.offset + read as u64, Ordering::Relaxed);
    Ok(NtStatus::SUCCESS)
}

/// Nothing at or beyond the end, or less than the client's minimum: STATUS_END_OF_FILE.
fn check_minimum(read: usize, asked: usize, minimum: u32) -> Result<(), NtStatus> {
    if (read == 0 && asked > 0) || read < minimum as usize {
        Err(NtStatus::END_OF_FILE)
    } else {
        Ok(())
    }
}
