//! Strict allocation (Samba's `strict allocate`, the write-performance seed): space a write or
//! an end-of-file change adds to a file is allocated with `fallocate` instead of being left as
//! a hole. NTFS allocates it too, so a full disk fails the request that extends the file
//! (STATUS_DISK_FULL) rather than a later write, and extent file systems write into allocated
//! ranges faster. Sparse files (FSCTL_SET_SPARSE) and named streams keep their holes, as do
//! shares with `strict_allocate = false`.
//!
//! A write only needs a `stat` when it may start beyond the end of file: the shared file keeps
//! a size it has at least (what the server's writes and size changes left), so sequential
//! writes cost no extra system call.

use std::sync::atomic::Ordering;

use smb3d_vfs::{VfsError, VfsResult};

use smb3d_dtyp::NtStatus;
use smb3d_vfs::VfsFile;

use crate::fs::fileinfo::Meta;
use crate::state::open::Open;
use crate::state::share::Share;
use crate::status_map::{VfsResultExt, vfs_status};

/// Whether the open's data is allocated strictly: the share asks for it, the open is on the
/// file's default stream, and the file is not sparse.
fn strict(open: &Open) -> bool {
    open.share.strict_allocate && open.stream.is_none() && open.is_sparse() == Ok(false)
}

/// Allocates `from..to` of a file `from` bytes long (mode 0: the size grows to `to`); false
/// when the file system has no `fallocate`, and then the hole stays, as Samba leaves it. A
/// failure (a full disk: STATUS_DISK_FULL, as Windows answers) gives back whatever was
/// allocated on the way, so the failed request changes nothing.
fn fill(open: &Open, from: u64, to: u64) -> VfsResult<bool> {
    match open.file.allocate(from, to - from) {
        Ok(()) => Ok(true),
        Err(VfsError::Unsupported) => Ok(false),
        Err(e) => {
            let _ = open.file.set_len(from);
            Err(e)
        }
    }
}

/// Before a write at `offset`: the gap between the end of file and `offset`, if any, is
/// allocated.
pub(crate) fn before_write(open: &Open, offset: u64) -> VfsResult<()> {
    if !open.share.strict_allocate || offset <= open.shared.size_floor.load(Ordering::Relaxed) {
        return Ok(());
    }
    let size = open.file.stat()?.size;
    open.shared.size_floor.fetch_max(size, Ordering::Relaxed);
    if offset > size && strict(open) {
        fill(open, size, offset)?;
    }
    Ok(())
}

/// After a write that ended at `end`.
pub(crate) fn wrote(open: &Open, end: u64) {
    open.shared.size_floor.fetch_max(end, Ordering::Relaxed);
}

/// FileEndOfFileInformation: growing the file allocates what it adds.
pub(crate) fn set_end_of_file(open: &Open, len: u64) -> VfsResult<()> {
    let size = open.file.stat()?.size;
    if !(len > size && strict(open) && fill(open, size, len)?) {
        open.file.set_len(len)?;
    }
    open.shared.size_floor.store(len, Ordering::Relaxed);
    Ok(())
}

/// The allocation a create asks for (SMB2_CREATE_ALLOCATION_SIZE) on a new or overwritten
/// file, reserved without changing its size on shares that allocate strictly; `meta` comes
/// back with the new allocation.
pub(crate) fn reserve(
    share: &Share,
    file: &dyn VfsFile,
    mut meta: Meta,
    size: u64,
) -> Result<Meta, NtStatus> {
    if size == 0 || meta.is_directory() || !share.strict_allocate {
        return Ok(meta);
    }
    match file.preallocate(0, size) {
        Ok(()) => meta.stat = file.stat().status()?,
        Err(VfsError::Unsupported) => {}
        Err(e) => return Err(vfs_status(&e)),
    }
    Ok(meta)
}

/// FileAllocationInformation (MS-FSA 2.1.5.14.1): an allocation below the end of file
/// truncates the file; a larger one reserves the space without changing the end of file.
pub(crate) fn set_allocation(open: &Open, allocation: u64) -> VfsResult<()> {
    let size = open.file.stat()?.size;
    if allocation < size {
        open.file.set_len(allocation)?;
        open.shared.size_floor.store(allocation, Ordering::Relaxed);
        return Ok(());
    }
    if allocation > size && strict(open) {
        return match open.file.preallocate(0, allocation) {
            Err(VfsError::Unsupported) => Ok(()),
            result => result,
        };
    }
    Ok(())
}
