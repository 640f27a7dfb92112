//! Copies the kernel does: `copy_file_range` (which shares extents itself where the file
//! system can), `FICLONERANGE` block cloning, hole punching and `SEEK_DATA`/`SEEK_HOLE`.

use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::{FallocateFlags, Mode, OFlags, SeekFrom, copy_file_range, fallocate, seek};
use rustix::io::{Errno, Result};
use smb3d_credentials::Creds;

use crate::sys;

/// The largest step of one `copy_file_range` call; the kernel caps a call near 2 GiB anyway.
const COPY_STEP: u64 = 1 << 30;

/// Copies `len` bytes from `src` at `src_offset` to `dst` at `offset` with `copy_file_range`,
/// stopping at the end of `src`. Returns the bytes copied, or the error of the first call that
/// copied nothing (`EXDEV`, `EINVAL` for overlapping ranges of one file, `EOPNOTSUPP`, ...) so
/// that the caller can fall back to reading and writing.
pub(crate) fn copy_range(
    src: BorrowedFd<'_>,
    src_offset: u64,
    dst: BorrowedFd<'_>,
    offset: u64,
    len: u64,
) -> Result<u64> {
    let (mut from, mut to) = (src_offset, offset);
    let mut done = 0;
    while done < len {
        let step = usize::try_from((len - done).min(COPY_STEP)).unwrap_or(usize::MAX);
        match copy_file_range(src, Some(&mut from), dst, Some(&mut to), step) {
            Ok(0) => break,
            Ok(copied) => done += copied as u64,
            Err(Errno::INTR) => {}
            Err(error) if done == 0 => return Err(error),
            // Part was copied; what follows goes the slow way from where this stopped.
            Err(_) => break,
        }
    }
    Ok(done)
}

/// `struct file_clone_range` of `linux/fs.h`.
#[repr(C)]
struct FileCloneRange {
    src_fd: i64,
    src_offset: u64,
    src_length: u64,
    dest_offset: u64,
}

/// `FICLONERANGE`: `_IOW(0x94, 13, struct file_clone_range)`.
const FICLONERANGE: rustix::ioctl::Opcode =
    rustix::ioctl::opcode::write::<FileCloneRange>(0x94, 13);

/// Makes `len` bytes of `dst` at `offset` share the extents of `src` at `src_offset`
/// (`ioctl(FICLONERANGE)`; `len` 0 would mean "to the end of `src`").
#[allow(unsafe_code)]
pub(crate) fn clone_range(
    src: BorrowedFd<'_>,
    src_offset: u64,
    dst: BorrowedFd<'_>,
    offset: u64,
    len: u64,
) -> Result<()> {
    use std::os::fd::AsRawFd;
    let range = FileCloneRange {
        src_fd: i64::from(src.as_raw_fd()),
        src_offset,
        src_length: len,
        dest_offset: offset,
    };
    // SAFETY: FICLONERANGE reads one `struct file_clone_range`, which `FileCloneRange` lays out
    // exactly (four 64-bit fields, `repr(C)`); `Setter` passes a pointer to it that lives for
    // the call, and the kernel neither keeps nor writes through it. `src_fd` is a descriptor
    // borrowed for the call.
    unsafe {
        rustix::ioctl::ioctl(
            dst,
            rustix::ioctl::Setter::<FICLONERANGE, FileCloneRange>::new(range),
        )
    }
}

/// Frees the storage of `offset..offset + len`, keeping the size.
pub(crate) fn punch_hole(fd: BorrowedFd<'_>, offset: u64, len: u64) -> Result<()> {
    fallocate(
        fd,
        FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE,
        offset,
        len,
    )
}

/// The data (non-hole) parts of `offset..end`, from `SEEK_DATA` and `SEEK_HOLE`. Moves the
/// descriptor's position, which nothing else uses (reads and writes give their offsets).
pub(crate) fn data_ranges(
    fd: BorrowedFd<'_>,
    offset: u64,
    end: u64,
    limit: usize,
) -> Result<Vec<(u64, u64)>> {
    let mut ranges = Vec::new();
    let mut at = offset;
    while at < end && ranges.len() < limit {
        let data = match seek(fd, SeekFrom::Data(at)) {
            Ok(data) => data,
            // No data at or after `at`.
            Err(Errno::NXIO) => break,
            Err(error) => return Err(error),
        };
        if data >= end {
            break;
        }
        let hole = seek(fd, SeekFrom::Hole(data))?.min(end);
        ranges.push((data, hole - data));
        at = hole;
    }
    Ok(ranges)
}

/// Whether the file system of `dir` clones: a zero-length clone of an unnamed temporary file
/// onto itself succeeds where cloning works and fails with `EOPNOTSUPP` (or `EINVAL`, `EXDEV`)
/// elsewhere. Needs the right to create files in `dir`; without it the answer is no.
pub(crate) fn probe_cloning(creds: Creds<'_>, dir: BorrowedFd<'_>) -> bool {
    let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
    let Ok(file) = sys::openat(creds, dir, ".", flags, Mode::from_bits_truncate(0o600)) else {
        return false;
    };
    clone_range(file.as_fd(), 0, file.as_fd(), 0, 0).is_ok()
}
