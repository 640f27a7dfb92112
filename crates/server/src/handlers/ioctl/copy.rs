//! Server-side copy: FSCTL_SRV_REQUEST_RESUME_KEY (MS-SMB2 3.3.5.15.5) names a source open;
//! FSCTL_SRV_COPYCHUNK and FSCTL_SRV_COPYCHUNK_WRITE (3.3.5.15.6) copy ranges of it into the
//! target open with the file system's copy (`VfsFile::copy_range`, `copy_file_range`), so no
//! data crosses the network and file systems that share extents share them.

use std::sync::Arc;

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::aapl::server_caps;
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::fsctl::{
    CopyChunk, CopyChunkCopy, CopyChunkResponse, ResumeKey, ResumeKeyResponse,
};
use smb3d_smb2::ioctl::{CtlCode, IoctlRequest};
use smb3d_wire::Writer;

use super::respond;
use crate::fs::resource_fork;
use crate::fs::streams;
use crate::handlers::{MAX_OFFSET, mac_caps};
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::state::open::Open;
use crate::state::server::Server;
use crate::status_map::VfsResultExt;

/// ServerSideCopyMaxNumberofChunks, ServerSideCopyMaxChunkSize and ServerSideCopyMaxDataSize
/// (MS-SMB2 3.3.3): Windows' values, which clients size their requests by.
const MAX_CHUNKS: u32 = 256;
const MAX_CHUNK_SIZE: u32 = 1024 * 1024;
const MAX_DATA_SIZE: u32 = 16 * 1024 * 1024;

/// The limits, as the answer to a request that exceeds them (MS-SMB2 3.3.5.15.6.2).
const LIMITS: CopyChunkResponse = CopyChunkResponse {
    chunks_written: MAX_CHUNKS,
    chunk_bytes_written: MAX_CHUNK_SIZE,
    total_bytes_written: MAX_DATA_SIZE,
};

/// The key of an open: its FileId and 8 bytes of the server's GUID, so that keys from another
/// server instance do not match. Keys are only looked up in the requester's own session.
fn key_of(cx: &Ctx<'_>, file_id: FileId) -> ResumeKey {
    let mut key = [0u8; 24];
    let guid = cx.conn.server.guid.0;
    let parts = file_id
        .persistent
        .to_le_bytes()
        .into_iter()
        .chain(file_id.volatile.to_le_bytes())
        .chain(guid.into_iter().take(8));
    for (slot, byte) in key.iter_mut().zip(parts) {
        *slot = byte;
    }
    key
}

/// The open of the requester's session a key names.
fn open_of_key(cx: &Ctx<'_>, key: &ResumeKey) -> Option<Arc<Open>> {
    let (ids, _) = key.split_at(16);
    let (persistent, volatile) = ids.split_at(8);
    let file_id = FileId {
        persistent: u64::from_le_bytes(persistent.try_into().ok()?),
        volatile: u64::from_le_bytes(volatile.try_into().ok()?),
    };
    if key_of(cx, file_id) != *key {
        return None;
    }
    let session = cx.session.as_ref()?;
    let open = session.state.lock().opens.get(&file_id.volatile).cloned()?;
    (open.file_id == file_id).then_some(open)
}

/// MS-SMB2 3.3.5.15.5.
pub(super) fn resume_key(
    cx: &mut Ctx<'_>,
    open: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if (req.max_output_response as usize) < ResumeKeyResponse::LEN {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let resume_key = key_of(cx, open.file_id);
    respond(w, req, open.file_id, |w| {
        ResumeKeyResponse { resume_key }.encode(w);
    });
    Ok(NtStatus::SUCCESS)
}

/// MS-SMB2 3.3.5.15.6, in its order: the source by key, the output room, the limits, access;
/// then each chunk in turn, stopping at the first that fails. Byte-range locks of other opens
/// are honoured as READ and WRITE honour them; a chunk reaching past the end of the source
/// fails whole with STATUS_INVALID_VIEW_SIZE (Windows copies through a mapped view). Answers
/// after the limits carry SRV_COPYCHUNK_RESPONSE, failures included.
pub(super) fn copy_chunks(
    cx: &mut Ctx<'_>,
    target: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let copy = CopyChunkCopy::decode(req.input).map_err(malformed)?;
    let source = open_of_key(cx, &copy.source_key).ok_or(NtStatus::OBJECT_NAME_NOT_FOUND)?;
    if (req.max_output_response as usize) < CopyChunkResponse::LEN {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let Some(chunks) = within_limits(&copy) else {
        respond(w, req, target.file_id, |w| LIMITS.encode(w));
        return Ok(NtStatus::INVALID_PARAMETER);
    };
    let reads = AccessMask::FILE_READ_DATA | AccessMask::FILE_EXECUTE;
    let writes = AccessMask::FILE_WRITE_DATA | AccessMask::FILE_APPEND_DATA;
    // FSCTL_SRV_COPYCHUNK, unlike _WRITE, also needs the target readable (Windows checks
    // what a copy through the client would have needed).
    let target_reads =
        req.ctl_code != CtlCode::FSCTL_SRV_COPYCHUNK || target.may(AccessMask::FILE_READ_DATA);
    if !source.may(reads) || !target.may(writes) || !target_reads {
        return Err(NtStatus::ACCESS_DENIED);
    }
    if source.is_directory || target.is_directory {
        return Err(NtStatus::INVALID_DEVICE_REQUEST);
    }
    let mut done = CopyChunkResponse {
        chunks_written: 0,
        chunk_bytes_written: 0,
        total_bytes_written: 0,
    };
    target.writing(&*cx.conn.server.settings.clock);
    let whole_files = source.stream.is_none() && target.stream.is_none();
    if chunks.is_empty() && whole_files && mac_caps(cx) & server_caps::OSX_COPYFILE != 0 {
        return copy_file(&cx.conn.server, &source, target, req, w);
    }
    let status = target.io_long(|| {
        for chunk in &chunks {
            if let Err(status) = copy_one(&cx.conn.server, &source, target, chunk) {
                return Ok(status);
            }
            done.chunks_written += 1;
            done.total_bytes_written += chunk.length;
        }
        Ok(NtStatus::SUCCESS)
    })?;
    respond(w, req, target.file_id, |w| done.encode(w));
    Ok(status)
}

/// A Mac client's copyfile (AAPL OSX_COPYFILE negotiated, no chunks): the whole source with
/// its named streams, as Samba's vfs_fruit copies it. Only TotalBytesWritten is counted.
fn copy_file(
    server: &Server,
    source: &Open,
    target: &Arc<Open>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let mut done = CopyChunkResponse {
        chunks_written: 0,
        chunk_bytes_written: 0,
        total_bytes_written: 0,
    };
    let status = target.io_long(|| {
        let size = source.file.stat().status()?.size;
        source.check_locks(server, 0, size, false)?;
        target.check_locks(server, 0, size, true)?;
        let copied = target
            .file
            .copy_range(source.file.as_ref(), 0, 0, size)
            .status()?;
        done.total_bytes_written = u32::try_from(copied).unwrap_or(u32::MAX);
        if source.share.presentation.xattrs.streams && target.share.presentation.xattrs.streams {
            streams::copy_all(source.file.as_ref(), target.file.as_ref()).status()?;
        }
        if target.share.apple.is_some() {
            let (from, to) = (source.path(), target.path());
            // As the user, who then owns the new `._` file as the copy; a back end that could
            // not switch leaves it undone.
            let mut forked = Err(smb3d_vfs::VfsError::PermissionDenied);
            target.vfs.run_as(&target.identity.unix, &mut || {
                forked = resource_fork::copy(source.vfs.as_ref(), &from, target.vfs.as_ref(), &to);
            });
            forked.status()?;
        }
        Ok(NtStatus::SUCCESS)
    });
    let status = status.unwrap_or_else(|status| status);
    respond(w, req, target.file_id, |w| done.encode(w));
    Ok(status)
}

/// The chunks if the request is within MS-SMB2's limits and holds them all.
fn within_limits(copy: &CopyChunkCopy<'_>) -> Option<Vec<CopyChunk>> {
    if copy.chunk_count > MAX_CHUNKS {
        return None;
    }
    let chunks: Vec<CopyChunk> = copy.chunks().ok()?.collect();
    let mut total = 0u32;
    for chunk in &chunks {
        if chunk.length == 0 || chunk.length > MAX_CHUNK_SIZE {
            return None;
        }
        total = total.checked_add(chunk.length)?;
        // Negative target offsets are invalid (all ones would mean "append", which no
        // client sends and Windows does not honour).
        if chunk.target_offset > MAX_OFFSET || chunk.source_offset > MAX_OFFSET {
            return None;
        }
    }
    (total <= MAX_DATA_SIZE).then_some(chunks)
}

/// Copies one chunk whole, or fails without copying.
fn copy_one(
    server: &Server,
    source: &Open,
    target: &Open,
    chunk: &CopyChunk,
) -> Result<(), NtStatus> {
    let len = u64::from(chunk.length);
    source.check_locks(server, chunk.source_offset, len, false)?;
    target.check_locks(server, chunk.target_offset, len, true)?;
    let size = source.file.stat().status()?.size;
    if chunk.source_offset.saturating_add(len) > size {
        return Err(NtStatus::INVALID_VIEW_SIZE);
    }
    let copied = target
        .file
        .copy_range(
            source.file.as_ref(),
            chunk.source_offset,
            chunk.target_offset,
            len,
        )
        .status()?;
    if copied < len {
        // The source shrank under the copy.
        return Err(NtStatus::INVALID_VIEW_SIZE);
    }
    Ok(())
}
