//! Linux file leases (fcntl(2) "Leases") on a handle's descriptor, which smb3d holds while an
//! SMB client caches the file (`kernel_oplocks`): another process's conflicting open makes the
//! kernel signal this process and wait for the lease to be lowered, up to
//! `/proc/sys/fs/lease-break-time`. rustix wraps neither F_SETLEASE nor F_SETSIG, hence the
//! one `unsafe` call here.

use rustix::fd::{AsRawFd, BorrowedFd};
use rustix::io::Errno;
use smb3d_vfs::{KernelLease, VfsResult};

use crate::errno::map_errno;

/// fcntl's F_SETSIG (Linux's asm-generic/fcntl.h), which the libc crate leaves out.
const F_SETSIG: libc::c_int = 10;

/// Sets the descriptor's lease to `lease`, the break notice to come as `signal` (whose
/// siginfo names the descriptor); false when the kernel refuses it (another descriptor of
/// the file is open for a write lease, one writes for a read lease, or the descriptor is not
/// open for reading only for a read lease).
pub(crate) fn set(fd: BorrowedFd<'_>, lease: KernelLease, signal: i32) -> VfsResult<bool> {
    let kind = match lease {
        KernelLease::None => libc::F_UNLCK,
        KernelLease::Read => libc::F_RDLCK,
        KernelLease::Write => libc::F_WRLCK,
    };
    if lease != KernelLease::None {
        fcntl_int(fd, F_SETSIG, signal).map_err(map_errno)?;
    }
    match fcntl_int(fd, libc::F_SETLEASE, kind) {
        Ok(_) => Ok(true),
        // EAGAIN: a conflicting open; EACCES: neither the file's owner nor CAP_LEASE;
        // EINVAL: a file system (or file type) without leases.
        Err(Errno::AGAIN | Errno::ACCESS | Errno::INVAL) => Ok(false),
        Err(e) => Err(map_errno(e)),
    }
}

/// The descriptor's lease; while the kernel breaks it, the level it must come down to.
pub(crate) fn get(fd: BorrowedFd<'_>) -> VfsResult<KernelLease> {
    let kind = fcntl_int(fd, libc::F_GETLEASE, 0).map_err(map_errno)?;
    Ok(match kind {
        libc::F_RDLCK => KernelLease::Read,
        libc::F_WRLCK => KernelLease::Write,
        _ => KernelLease::None,
    })
}

/// Whether the descriptor is open for reading only.
pub(crate) fn reads_only(fd: BorrowedFd<'_>) -> bool {
    fcntl_int(fd, libc::F_GETFL, 0).is_ok_and(|flags| flags & libc::O_ACCMODE == libc::O_RDONLY)
}

#[allow(unsafe_code)]
fn fcntl_int(fd: BorrowedFd<'_>, command: libc::c_int, arg: libc::c_int) -> Result<i32, Errno> {
    // SAFETY: `fd` is a live descriptor for the call; these commands take an integer argument
    // and neither read nor write memory of this process.
    let result = unsafe { libc::fcntl(fd.as_raw_fd(), command, arg) };
    if result < 0 {
        return Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO));
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fd::AsFd;

    const SIGNAL: i32 = 0;

    fn file(dir: &tempfile::TempDir, write: bool) -> std::fs::File {
        std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .open(dir.path().join("f"))
            .unwrap()
    }

    #[test]
    fn the_kernel_refuses_leases_that_other_descriptors_conflict_with() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"data").unwrap();
        let writer = file(&dir, true);
        assert!(!reads_only(writer.as_fd()));
        assert!(set(writer.as_fd(), KernelLease::Write, SIGNAL).unwrap());
        assert_eq!(get(writer.as_fd()).unwrap(), KernelLease::Write);
        // A writable descriptor cannot hold a read lease, not even its own.
        assert!(!set(writer.as_fd(), KernelLease::Read, SIGNAL).unwrap());
        assert!(set(writer.as_fd(), KernelLease::None, SIGNAL).unwrap());
        assert_eq!(get(writer.as_fd()).unwrap(), KernelLease::None);

        let reader = file(&dir, false);
        assert!(reads_only(reader.as_fd()));
        // The writer is open: no read lease, and no write lease beside another descriptor.
        assert!(!set(reader.as_fd(), KernelLease::Read, SIGNAL).unwrap());
        assert!(!set(reader.as_fd(), KernelLease::Write, SIGNAL).unwrap());
        drop(writer);
        assert!(set(reader.as_fd(), KernelLease::Read, SIGNAL).unwrap());
        assert_eq!(get(reader.as_fd()).unwrap(), KernelLease::Read);
        let second = file(&dir, false);
        assert!(set(second.as_fd(), KernelLease::Read, SIGNAL).unwrap());
    }
}
