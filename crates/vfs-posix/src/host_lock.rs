//! Byte-range locks in the kernel's table: Linux open file description (OFD) locks, which
//! belong to the descriptor rather than the process, so that each handle is its own holder as
//! each SMB open is, and which local processes' `fcntl` locks and NFS clients' locks meet.
//! rustix only wraps whole-file OFD locks, hence the one `unsafe` call here.

use rustix::fd::{AsRawFd, BorrowedFd};
use rustix::io::Errno;
use smb3d_vfs::{HostLock, VfsResult};

use crate::errno::map_errno;

/// The last offset the kernel's lock table can name (`off_t` is signed).
const LAST_LOCKABLE: u64 = i64::MAX as u64;

/// What a handle may hold, from the access its descriptor was opened with.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LockRights {
    pub read: bool,
    pub write: bool,
}

/// `offset..offset + len` as the kernel's `l_start` and `l_len`, cut at [`LAST_LOCKABLE`]
/// (`l_len` 0 reaches it); `None` for an empty range or one wholly beyond it.
fn kernel_range(offset: u64, len: u64) -> Option<(i64, i64)> {
    if len == 0 || offset > LAST_LOCKABLE {
        return None;
    }
    let start = i64::try_from(offset).ok()?;
    let last = offset.saturating_add(len - 1);
    if last >= LAST_LOCKABLE {
        return Some((start, 0));
    }
    Some((start, i64::try_from(len).ok()?))
}

/// Sets the handle's lock on the range to `level`, as [`smb3d_vfs::VfsFile::set_host_lock`]
/// says.
pub(crate) fn set(
    fd: BorrowedFd<'_>,
    rights: LockRights,
    offset: u64,
    len: u64,
    level: HostLock,
) -> VfsResult<bool> {
    let Some((start, len)) = kernel_range(offset, len) else {
        return Ok(true);
    };
    // The kernel lets a descriptor read-lock only if it reads and write-lock only if it
    // writes: a level the handle cannot hold is checked for conflicts, then held as the
    // nearest level it can.
    let kind = match level {
        HostLock::None => libc::F_UNLCK,
        HostLock::Exclusive if rights.write => libc::F_WRLCK,
        HostLock::Shared if rights.read => libc::F_RDLCK,
        HostLock::Exclusive | HostLock::Shared => {
            let write = level == HostLock::Exclusive;
            if conflicts_within(fd, start, len, write)? {
                return Ok(false);
            }
            if write && rights.read {
                libc::F_RDLCK
            } else {
                libc::F_UNLCK
            }
        }
    };
    let mut lock = flock(kind, start, len);
    match fcntl_lock(fd, libc::F_OFD_SETLK, &mut lock) {
        Ok(()) => Ok(true),
        Err(Errno::AGAIN | Errno::ACCESS) => Ok(false),
        Err(e) => Err(map_errno(e)),
    }
}

/// Whether another holder's lock stops reading (`write` false) or writing the range.
pub(crate) fn conflicts(fd: BorrowedFd<'_>, offset: u64, len: u64, write: bool) -> VfsResult<bool> {
    match kernel_range(offset, len) {
        Some((start, len)) => conflicts_within(fd, start, len, write),
        None => Ok(false),
    }
}

fn conflicts_within(fd: BorrowedFd<'_>, start: i64, len: i64, write: bool) -> VfsResult<bool> {
    // A reader meets writers' locks, a writer every lock: asking as a write lock would.
    let mut lock = flock(
        if write { libc::F_WRLCK } else { libc::F_RDLCK },
        start,
        len,
    );
    fcntl_lock(fd, libc::F_OFD_GETLK, &mut lock).map_err(map_errno)?;
    Ok(i32::from(lock.l_type) != libc::F_UNLCK)
}

fn flock(kind: libc::c_int, start: i64, len: i64) -> libc::flock {
    libc::flock {
        // F_RDLCK, F_WRLCK and F_UNLCK are 0, 1 and 2.
        l_type: i16::try_from(kind).unwrap_or(libc::F_UNLCK as i16),
        l_whence: libc::SEEK_SET as i16,
        l_start: start,
        l_len: len,
        // OFD locks require 0 here.
        l_pid: 0,
    }
}

#[allow(unsafe_code)]
fn fcntl_lock(
    fd: BorrowedFd<'_>,
    command: libc::c_int,
    lock: &mut libc::flock,
) -> Result<(), Errno> {
    // SAFETY: `fd` is a live descriptor for the call; `lock` is a valid `struct flock` that the
    // kernel reads and, for F_OFD_GETLK, writes, and keeps no pointer to after returning.
    // F_OFD_SETLK never waits.
    let result = unsafe { libc::fcntl(fd.as_raw_fd(), command, std::ptr::from_mut(lock)) };
    if result < 0 {
        return Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_cut_where_the_kernel_stops() {
        assert_eq!(kernel_range(0, 0), None);
        assert_eq!(kernel_range(5, 10), Some((5, 10)));
        assert_eq!(kernel_range(LAST_LOCKABLE + 1, 1), None);
        assert_eq!(kernel_range(LAST_LOCKABLE, 1), Some((i64::MAX, 0)));
        assert_eq!(kernel_range(0, u64::MAX), Some((0, 0)));
        assert_eq!(kernel_range(1, LAST_LOCKABLE - 1), Some((1, i64::MAX - 1)));
    }

    const RW: LockRights = LockRights {
        read: true,
        write: true,
    };

    fn two_handles() -> (
        tempfile::TempDir,
        std::fs::File,
        std::fs::File,
        std::fs::File,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"data").unwrap();
        let open = |read, write| {
            std::fs::OpenOptions::new()
                .read(read)
                .write(write)
                .open(&path)
                .unwrap()
        };
        (dir, open(true, true), open(true, true), open(false, true))
    }

    #[test]
    fn each_descriptor_holds_its_own_locks() {
        use rustix::fd::AsFd;
        let (_dir, a, b, _) = two_handles();
        let (a, b) = (a.as_fd(), b.as_fd());
        assert!(set(a, RW, 0, 10, HostLock::Exclusive).unwrap());
        assert!(!set(b, RW, 5, 1, HostLock::Shared).unwrap());
        assert!(conflicts(b, 9, 1, false).unwrap());
        assert!(
            !conflicts(a, 0, 10, true).unwrap(),
            "a handle's own locks do not stop it"
        );
        // Downgrading part of the range lets others read there, not write.
        assert!(set(a, RW, 5, 5, HostLock::Shared).unwrap());
        assert!(set(b, RW, 5, 5, HostLock::Shared).unwrap());
        assert!(!set(b, RW, 0, 1, HostLock::Shared).unwrap());
        assert!(conflicts(b, 5, 1, true).unwrap());
        assert!(set(a, RW, 0, 10, HostLock::None).unwrap());
        assert!(set(b, RW, 0, 5, HostLock::Exclusive).unwrap());
        // A point lock and a range past what the kernel can name hold nothing.
        assert!(set(a, RW, 0, 0, HostLock::Exclusive).unwrap());
        assert!(set(a, RW, LAST_LOCKABLE + 1, 9, HostLock::Exclusive).unwrap());
    }

    #[test]
    fn handles_take_the_nearest_level_their_access_allows() {
        use rustix::fd::AsFd;
        let (_dir, reader, other, writer) = two_handles();
        let read_only = LockRights {
            read: true,
            write: false,
        };
        let write_only = LockRights {
            read: false,
            write: true,
        };
        // An exclusive lock through a reader is held as a read lock: others may not write.
        assert!(set(reader.as_fd(), read_only, 0, 4, HostLock::Exclusive).unwrap());
        assert!(conflicts(other.as_fd(), 0, 1, true).unwrap());
        assert!(!conflicts(other.as_fd(), 0, 1, false).unwrap());
        // A shared lock through a writer holds nothing, but is refused over a write lock.
        assert!(set(writer.as_fd(), write_only, 8, 4, HostLock::Shared).unwrap());
        assert!(!conflicts(other.as_fd(), 8, 4, true).unwrap());
        assert!(set(other.as_fd(), RW, 20, 4, HostLock::Exclusive).unwrap());
        assert!(!set(writer.as_fd(), write_only, 20, 1, HostLock::Shared).unwrap());
        // Nor is an exclusive lock through a reader granted over another's lock.
        assert!(!set(reader.as_fd(), read_only, 18, 4, HostLock::Exclusive).unwrap());
    }
}
