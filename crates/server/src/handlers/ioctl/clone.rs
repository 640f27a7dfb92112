//! Block cloning: FSCTL_DUPLICATE_EXTENTS_TO_FILE and _EX (MS-FSCC 2.3.7-2.3.9, MS-FSA
//! 2.1.5.10.4-5) with `FICLONERANGE`, on shares whose file system shares extents (XFS with
//! reflink, btrfs); elsewhere answered as NTFS answers, STATUS_INVALID_DEVICE_REQUEST.

use std::sync::Arc;

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_fscc::DuplicateExtents;
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::ioctl::{CtlCode, IoctlRequest};
use smb3d_vfs::VfsError;
use smb3d_wire::Writer;

use super::respond;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::state::open::Open;
use crate::status_map::{VfsResultExt, vfs_status};

/// MS-FSA 2.1.5.10.4, with the answers ReFS gives that smbtorture's `dup_extents_*` encode:
/// the source range must lie within the source, a sparse source needs a sparse target, ranges
/// of one file must not overlap (all STATUS_NOT_SUPPORTED); a range past the end of the target
/// is cut to it (the target never grows: Windows Server 2016 answers success there, not the
/// STATUS_NOT_SUPPORTED MS-FSCC 2.3.8 lists); byte-range locks do not apply, as for ReFS.
pub(super) fn duplicate_extents(
    cx: &mut Ctx<'_>,
    target: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if !target.vfs.can_clone() {
        return Err(NtStatus::INVALID_DEVICE_REQUEST);
    }
    let dup = if req.ctl_code == CtlCode::FSCTL_DUPLICATE_EXTENTS_TO_FILE_EX {
        DuplicateExtents::decode_ex(req.input)
    } else {
        DuplicateExtents::decode(req.input)
    }
    .map_err(malformed)?;
    let source = source_open(cx, dup.source_file_id).ok_or(NtStatus::INVALID_HANDLE)?;
    let (Ok(source_offset), Ok(offset), Ok(len)) = (
        u64::try_from(dup.source_offset),
        u64::try_from(dup.target_offset),
        u64::try_from(dup.byte_count),
    ) else {
        return Err(NtStatus::INVALID_PARAMETER);
    };
    if !source.may(AccessMask::FILE_READ_DATA) || !target.may(AccessMask::FILE_WRITE_DATA) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    if source.is_directory || target.is_directory {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if len > 0 {
        target.writing(&*cx.conn.server.settings.clock);
        target.io_long(|| clone(&source, target, source_offset, offset, len))?;
    }
    respond(w, req, target.file_id, |_| {});
    Ok(NtStatus::SUCCESS)
}

/// The open the request names as its source, in the requester's session.
fn source_open(cx: &Ctx<'_>, (persistent, volatile): (u64, u64)) -> Option<Arc<Open>> {
    let session = cx.session.as_ref()?;
    let open = session.state.lock().opens.get(&volatile).cloned()?;
    (open.file_id
        == FileId {
            persistent,
            volatile,
        })
    .then_some(open)
}

fn clone(
    source: &Open,
    target: &Open,
    source_offset: u64,
    offset: u64,
    len: u64,
) -> Result<(), NtStatus> {
    let source_size = source.file.stat().status()?.size;
    let target_size = target.file.stat().status()?.size;
    if source_offset.saturating_add(len) > source_size {
        return Err(NtStatus::NOT_SUPPORTED);
    }
    let len = len.min(
        target_size
            .checked_sub(offset)
            .ok_or(NtStatus::INVALID_PARAMETER)?,
    );
    if len == 0 {
        return Ok(());
    }
    let same_file =
        source.shared.key == target.shared.key && source.stream_key() == target.stream_key();
    let overlaps = same_file
        && offset < source_offset.saturating_add(len)
        && source_offset < offset.saturating_add(len);
    if overlaps || (source.is_sparse()? && !target.is_sparse()?) {
        return Err(NtStatus::NOT_SUPPORTED);
    }
    target
        .file
        .clone_range(source.file.as_ref(), source_offset, offset, len)
        .map_err(|e| match e {
            // Misaligned ranges.
            VfsError::Io(_) => NtStatus::INVALID_PARAMETER,
            // A named stream, or another file system.
            VfsError::Unsupported | VfsError::CrossDevice => NtStatus::NOT_SUPPORTED,
            other => vfs_status(&other),
        })
}
