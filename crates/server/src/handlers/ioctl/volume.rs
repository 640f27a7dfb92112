//! The remaining file-system controls, answered as an NTFS volume without compression,
//! integrity streams or an object id index answers them (MS-FSA 2.1.5.10): compression state
//! (always none), object ids derived from the file's identity, file-level trim (the ranges
//! are deallocated), and STATUS_INVALID_DEVICE_REQUEST for what such a volume does not do.

use std::sync::Arc;

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_fscc::{FileLevelTrim, FileObjectIdBuffer, decode_compression_state};
use smb3d_smb2::ioctl::{CtlCode, IoctlRequest};
use smb3d_smb2::snapshot::SnapshotArray;
use smb3d_wire::{Guid, Writer};

use super::respond;
use crate::clock::Clock;
use crate::fs::snapshots;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::state::open::Open;
use crate::state::share::ShareKind;
use crate::status_map::VfsResultExt;

/// COMPRESSION_FORMAT_NONE (MS-FSCC 2.3.12).
const COMPRESSION_FORMAT_NONE: u16 = 0;

pub(super) fn handle(
    cx: &mut Ctx<'_>,
    open: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    match req.ctl_code {
        CtlCode::FSCTL_GET_COMPRESSION => {
            // Uncompressed, as Windows Server 2016 answers on a volume without compression
            // (smbtorture `compress_notsup_get`).
            if req.max_output_response < 2 {
                return Err(NtStatus::INVALID_PARAMETER);
            }
            respond(w, req, open.file_id, |w| {
                w.u16(COMPRESSION_FORMAT_NONE);
            });
            Ok(NtStatus::SUCCESS)
        }
        CtlCode::FSCTL_SET_COMPRESSION => {
            let format = decode_compression_state(req.input).map_err(malformed)?;
            // "None" is what the file already is; anything else is not supported (ReFS's
            // answer, smbtorture `compress_notsup_set`).
            if format != COMPRESSION_FORMAT_NONE {
                return Err(NtStatus::NOT_SUPPORTED);
            }
            respond(w, req, open.file_id, |_| {});
            Ok(NtStatus::SUCCESS)
        }
        CtlCode::FSCTL_GET_OBJECT_ID | CtlCode::FSCTL_CREATE_OR_GET_OBJECT_ID => {
            object_id(cx, open, req, w)
        }
        // Setting an object id is a restore operation (SE_RESTORE_NAME), which no SMB session
        // holds here.
        CtlCode::FSCTL_SET_OBJECT_ID | CtlCode::FSCTL_SET_OBJECT_ID_EXTENDED => {
            Err(NtStatus::PRIVILEGE_NOT_HELD)
        }
        // Ids are derived, never stored: there is nothing to delete.
        CtlCode::FSCTL_DELETE_OBJECT_ID => {
            if !open.may(AccessMask::FILE_WRITE_DATA | AccessMask::FILE_WRITE_ATTRIBUTES) {
                return Err(NtStatus::ACCESS_DENIED);
            }
            respond(w, req, open.file_id, |_| {});
            Ok(NtStatus::SUCCESS)
        }
        CtlCode::FSCTL_FILE_LEVEL_TRIM => trim(open, &*cx.conn.server.settings.clock, req, w),
        // BranchCache hashes are not kept (MS-SMB2 3.3.5.15.7: a server without them MUST
        // answer so).
        CtlCode::FSCTL_SRV_READ_HASH => Err(NtStatus::NOT_SUPPORTED),
        CtlCode::FSCTL_SRV_ENUMERATE_SNAPSHOTS => enumerate_snapshots(open, req, w),
        // Integrity streams are ReFS's; NTFS answers these so (MS-FSA 2.1.5.10.21, .38).
        _ => Err(NtStatus::INVALID_DEVICE_REQUEST),
    }
}

/// FSCTL_SRV_ENUMERATE_SNAPSHOTS (MS-SMB2 3.3.5.15.1): the share's snapshots, newest first,
/// or only how many there are when the client's buffer cannot hold them all. A share without
/// snapshots answers as Samba without a snapshot module does, and clients show "no previous
/// versions".
fn enumerate_snapshots(
    open: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if !open.share.snapshots {
        return Err(NtStatus::NOT_SUPPORTED);
    }
    let max_output = req.max_output_response as usize;
    if max_output < SnapshotArray::MIN_OUTPUT {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    // Listed in the share, also when asked on an open in a snapshot.
    let share = match &open.share.kind {
        ShareKind::Disk(vfs) => vfs.clone(),
        ShareKind::Ipc => return Err(NtStatus::INVALID_DEVICE_REQUEST),
    };
    let tokens = open.io_long(|| snapshots::list(share.as_ref()))?;
    respond(w, req, open.file_id, |w| {
        SnapshotArray::encode_for(&tokens, max_output, w);
    });
    Ok(NtStatus::SUCCESS)
}

/// FILE_OBJECTID_BUFFER (MS-FSA 2.1.5.10.16, .6): the object id is the file's identity on the
/// server (device and inode), stable while the file exists, as Samba derives it; the birth
/// volume is the server's GUID.
fn object_id(
    cx: &Ctx<'_>,
    open: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if (req.max_output_response as usize) < FileObjectIdBuffer::LEN {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let mut id = [0u8; 16];
    let key = open.shared.key;
    for (slot, byte) in id.iter_mut().zip(
        key.ino
            .to_le_bytes()
            .into_iter()
            .chain(key.dev.to_le_bytes()),
    ) {
        *slot = byte;
    }
    let buffer = FileObjectIdBuffer {
        object_id: Guid(id),
        birth_volume_id: cx.conn.server.guid,
        birth_object_id: Guid(id),
        domain_id: Guid::ZERO,
    };
    respond(w, req, open.file_id, |w| buffer.encode(w));
    Ok(NtStatus::SUCCESS)
}

/// FSCTL_FILE_LEVEL_TRIM (MS-FSA 2.1.5.10.14): the ranges are no longer needed, so their
/// storage is freed (they read as zeros afterwards); ranges past the end are ignored.
fn trim(
    open: &Arc<Open>,
    clock: &dyn Clock,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if !open.may(AccessMask::FILE_WRITE_DATA) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let trim = FileLevelTrim::decode(req.input).map_err(malformed)?;
    if open.is_directory {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    open.writing(clock);
    open.io(|| {
        for (offset, length) in trim.ranges() {
            open.file.punch_hole(offset, length).status()?;
        }
        Ok(())
    })?;
    let processed = u32::try_from(trim.len()).unwrap_or(u32::MAX);
    respond(w, req, open.file_id, |w| {
        // FILE_LEVEL_TRIM_OUTPUT, when the client left room for it.
        if req.max_output_response >= 4 {
            w.u32(processed);
        }
    });
    Ok(NtStatus::SUCCESS)
}
