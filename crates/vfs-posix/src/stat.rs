//! `statx` results as VFS types.

use rustix::fd::AsFd;
use rustix::fs::{AtFlags, Statx, StatxFlags, StatxTimestamp, makedev};
use rustix::io;
use smb3d_credentials::Creds;
use smb3d_vfs::{FileStat, FileType, Timespec};

use crate::sys;

/// What every stat asks for: the basic fields and the birth time.
const WANTED: StatxFlags = StatxFlags::BASIC_STATS.union(StatxFlags::BTIME);

/// `statx(dirfd, name, flags)` as a [`FileStat`].
pub(crate) fn statx_at<Fd: AsFd>(
    creds: Creds<'_>,
    dirfd: Fd,
    name: &str,
    flags: AtFlags,
) -> io::Result<FileStat> {
    sys::statx(creds, dirfd, name, flags, WANTED).map(file_stat)
}

/// Metadata of the object `fd` refers to, which may be an `O_PATH` descriptor.
#[expect(
    clippy::disallowed_methods,
    reason = "an empty path with AT_EMPTY_PATH looks nothing up: no permission is checked"
)]
pub(crate) fn statx_fd<Fd: AsFd>(fd: Fd) -> io::Result<FileStat> {
    rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, WANTED).map(file_stat)
}

pub(crate) fn file_type(mode: u32) -> FileType {
    match rustix::fs::FileType::from_raw_mode(mode) {
        rustix::fs::FileType::RegularFile => FileType::File,
        rustix::fs::FileType::Directory => FileType::Directory,
        rustix::fs::FileType::Symlink => FileType::Symlink,
        _ => FileType::Other,
    }
}

fn timespec(time: StatxTimestamp) -> Timespec {
    Timespec {
        sec: time.tv_sec,
        nsec: time.tv_nsec,
    }
}

fn file_stat(stx: Statx) -> FileStat {
    let mode = u32::from(stx.stx_mode);
    let has_btime = StatxFlags::from_bits_retain(stx.stx_mask).contains(StatxFlags::BTIME);
    FileStat {
        file_type: file_type(mode),
        size: stx.stx_size,
        allocated: stx.stx_blocks.saturating_mul(512),
        ino: stx.stx_ino,
        dev: makedev(stx.stx_dev_major, stx.stx_dev_minor),
        nlink: u64::from(stx.stx_nlink),
        mode,
        uid: stx.stx_uid,
        gid: stx.stx_gid,
        atime: timespec(stx.stx_atime),
        mtime: timespec(stx.stx_mtime),
        ctime: timespec(stx.stx_ctime),
        btime: has_btime.then(|| timespec(stx.stx_btime)),
    }
}
