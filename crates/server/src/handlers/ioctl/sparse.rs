//! Sparse files (MS-FSA 2.1.5.10.34 FSCTL_SET_SPARSE, 2.1.5.10.39 FSCTL_SET_ZERO_DATA,
//! 2.1.5.10.23 FSCTL_QUERY_ALLOCATED_RANGES): the sparse flag is the DOS attribute kept in
//! `user.DOSATTRIB`, zeroing punches a hole, and allocated ranges come from `SEEK_DATA`.

use std::sync::Arc;

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_fscc::{FileAllocatedRange, FileAttributes, FileZeroDataInformation, decode_set_sparse};
use smb3d_smb2::ioctl::IoctlRequest;
use smb3d_wire::Writer;

use super::respond;
use crate::fs::fileinfo;
use crate::request::malformed;
use crate::state::open::Open;
use crate::state::server::Server;
use crate::status_map::VfsResultExt;

/// FSCTL_SET_SPARSE: any data or attribute write right will do (Windows; smbtorture
/// `sparse_perms`); directories cannot be sparse.
pub(super) fn set_sparse(
    open: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if open.is_directory {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let rights = AccessMask::FILE_WRITE_DATA
        | AccessMask::FILE_WRITE_ATTRIBUTES
        | AccessMask::FILE_APPEND_DATA;
    if !open.may(rights) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let sparse = decode_set_sparse(req.input).map_err(malformed)?;
    open.io(|| {
        let mut meta = open.stored_meta()?;
        if meta.stored.contains(FileAttributes::SPARSE_FILE) == sparse {
            return Ok(());
        }
        if sparse {
            meta.stored |= FileAttributes::SPARSE_FILE;
        } else {
            meta.stored = FileAttributes(meta.stored.0 & !FileAttributes::SPARSE_FILE.0);
        }
        fileinfo::store(open.vfs.as_ref(), open.file.as_ref(), &meta)
    })?;
    respond(w, req, open.file_id, |_| {});
    Ok(NtStatus::SUCCESS)
}

/// FSCTL_SET_ZERO_DATA: the range reads as zeros and its storage is freed, sparse or not; the
/// size never changes. Needs FILE_WRITE_DATA and no conflicting byte-range lock.
pub(super) fn zero_data(
    open: &Arc<Open>,
    server: &Server,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if !open.may(AccessMask::FILE_WRITE_DATA) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let zero = FileZeroDataInformation::decode(req.input).map_err(malformed)?;
    let (Ok(offset), Ok(end)) = (
        u64::try_from(zero.file_offset),
        u64::try_from(zero.beyond_final_zero),
    ) else {
        return Err(NtStatus::INVALID_PARAMETER);
    };
    if end < offset {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if open.is_directory {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let len = end - offset;
    if len > 0 {
        open.check_locks(server, offset, len, true)?;
        open.writing(&*server.settings.clock);
        open.io_long(|| open.file.punch_hole(offset, len).status())?;
    }
    respond(w, req, open.file_id, |_| {});
    Ok(NtStatus::SUCCESS)
}

/// FSCTL_QUERY_ALLOCATED_RANGES: the data parts of the range asked for, cut to the end of the
/// file. A file not marked sparse reports the whole range as allocated, as Windows does.
/// Needs FILE_READ_DATA; the answer must fit whole (STATUS_BUFFER_TOO_SMALL).
pub(super) fn allocated_ranges(
    open: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if !open.may(AccessMask::FILE_READ_DATA) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let range = FileAllocatedRange::decode(req.input).map_err(malformed)?;
    let (Ok(offset), Ok(len)) = (
        u64::try_from(range.file_offset),
        u64::try_from(range.length),
    ) else {
        return Err(NtStatus::INVALID_PARAMETER);
    };
    if open.is_directory {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let ranges = open.io(|| {
        let meta = open.stored_meta()?;
        let size = meta.stat.size;
        if len == 0 || offset >= size {
            return Ok(Vec::new());
        }
        if offset.checked_add(len).is_none() {
            return Err(NtStatus::INVALID_PARAMETER);
        }
        if meta.stored.contains(FileAttributes::SPARSE_FILE) {
            // One more than fits tells that the answer does not; a file with millions of
            // extents costs no more than the client's buffer.
            let room = req.max_output_response as usize / FileAllocatedRange::LEN;
            open.file.allocated_ranges(offset, len, room + 1).status()
        } else {
            Ok(vec![(offset, len.min(size - offset))])
        }
    })?;
    if ranges.len() * FileAllocatedRange::LEN > req.max_output_response as usize {
        return Err(NtStatus::BUFFER_TOO_SMALL);
    }
    respond(w, req, open.file_id, |w| {
        for (file_offset, length) in ranges {
            FileAllocatedRange {
                file_offset: i64::try_from(file_offset).unwrap_or(i64::MAX),
                length: i64::try_from(length).unwrap_or(i64::MAX),
            }
            .encode(w);
        }
    });
    Ok(NtStatus::SUCCESS)
}
