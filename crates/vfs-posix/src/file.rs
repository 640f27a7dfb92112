//! [`PosixFile`]: a VFS handle over one file descriptor.

use std::any::Any;

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::fs::{
    AtFlags, CWD, Dir, FallocateFlags, Gid, Mode, OFlags, Timestamps, UTIME_OMIT, Uid, XattrFlags,
    fallocate, fsync, ftruncate,
};
use rustix::io::{self, Errno, pread, pwrite};
use rustix::pipe::{SpliceFlags, splice};
use smb3d_credentials::{Creds, settled};
use smb3d_vfs::backend::{
    MAX_FILE_SIZE, POSIX_ACL_XATTRS, checked_range_end, copy_by_reading, validate_xattr_name,
    validate_xattr_value,
};
use smb3d_vfs::casefold::Found;
use smb3d_vfs::{
    Access, CaseSensitivity, DirEntry, FileStat, FileType, HostLock, KernelLease, PipedData,
    Timespec, VfsError, VfsFile, VfsResult, validate_name,
};

use crate::caseless::NameRules;
use crate::copy;
use crate::errno::map_errno;
use crate::host_lock::{self, LockRights};
use crate::kernel_lease;
use crate::stat::{statx_at, statx_fd};
use crate::sys;

/// How often a size query and a read of an xattr may disagree because another process changed
/// it in between before giving up.
const XATTR_RACE_RETRIES: usize = 8;
/// Bytes of the first attempt to read an xattr, before its size is asked for.
const FIRST_XATTR_READ: usize = 256;

/// An open file, directory or other object of a [`PosixVfs`](crate::PosixVfs).
///
/// The descriptor may carry more rights than `access` (a truncating metadata-only open holds a
/// writable one); the handle enforces `access` itself.
pub struct PosixFile {
    fd: OwnedFd,
    access: Access,
    file_type: FileType,
    /// The descriptor is `O_PATH`: calls that need a real open file go through
    /// `/proc/self/fd`, which resolves to the same object.
    path_only: bool,
    /// How the share matches names, for [`VfsFile::lookup_child`].
    names: NameRules,
    /// The service opened this directory for the user who created it and may not read it
    /// (see `PosixVfs::create_new`): listings, which reopen it, are the service's too.
    opened_for_creator: bool,
}

impl PosixFile {
    pub(crate) fn new(
        fd: OwnedFd,
        access: Access,
        file_type: FileType,
        path_only: bool,
        names: NameRules,
    ) -> Self {
        Self {
            fd,
            access,
            file_type,
            path_only,
            names,
            opened_for_creator: false,
        }
    }

    /// Marks a directory the service opened for its creator, who may not read it.
    pub(crate) fn opened_for_creator(self) -> Self {
        Self {
            opened_for_creator: true,
            ..self
        }
    }

    fn proc_path(&self) -> String {
        format!("/proc/self/fd/{}", self.fd.as_raw_fd())
    }

    /// What this handle may lock in the kernel's table: nothing unless it is a regular file
    /// opened for data (an `O_PATH` descriptor takes no locks).
    fn lock_rights(&self) -> Option<LockRights> {
        let rights = LockRights {
            read: self.access.can_read(),
            write: self.access.can_write(),
        };
        (self.file_type == FileType::File && !self.path_only && (rights.read || rights.write))
            .then_some(rights)
    }

    fn check_data(&self, allowed: bool) -> VfsResult<()> {
        match self.file_type {
            FileType::Directory => Err(VfsError::IsADirectory),
            _ if !allowed => Err(VfsError::PermissionDenied),
            FileType::File => Ok(()),
            _ => Err(VfsError::Unsupported),
        }
    }

    fn check_directory(&self) -> VfsResult<()> {
        if self.file_type == FileType::Directory {
            Ok(())
        } else {
            Err(VfsError::NotADirectory)
        }
    }

    fn xattr_value(&self, creds: Creds<'_>, name: &str) -> io::Result<Vec<u8>> {
        if self.path_only {
            // An O_PATH descriptor has no f*xattr calls: a directory is reached as `.` below
            // itself with getxattrat where the kernel has it (whose AT_EMPTY_PATH refuses
            // O_PATH), anything else through its /proc link. Looking up `.` needs search
            // permission on the directory, which the /proc link does not: any other failure
            // is asked again that way.
            if self.file_type == FileType::Directory {
                match xattrat::read(creds, self.fd.as_fd(), ".", name) {
                    Some(Ok(value)) => return Ok(value),
                    Some(Err(Errno::NODATA)) => return Err(Errno::NODATA),
                    _ => {}
                }
            }
            let path = self.proc_path();
            read_sized(
                || sys::getxattr_query(creds, &path, name),
                |buf| sys::getxattr(creds, &path, name, buf),
            )
        } else {
            read_sized(
                || sys::fgetxattr_query(creds, &self.fd, name),
                |buf| sys::fgetxattr(creds, &self.fd, name, buf),
            )
        }
    }

    fn xattr_names(&self, creds: Creds<'_>) -> io::Result<Vec<u8>> {
        if self.path_only {
            let path = self.proc_path();
            read_sized(
                || sys::listxattr_query(creds, &path),
                |buf| sys::listxattr(creds, &path, buf),
            )
        } else {
            read_sized(
                || sys::flistxattr_query(creds, &self.fd),
                |buf| sys::flistxattr(creds, &self.fd, buf),
            )
        }
    }
}

/// getxattrat(2), Linux 6.13, which rustix does not wrap yet.
mod xattrat {
    use std::ffi::CStr;
    use std::sync::atomic::{AtomicBool, Ordering};

    use rustix::fd::{AsRawFd, BorrowedFd};
    use rustix::io::{self, Errno};
    use rustix::path::Arg;
    use smb3d_credentials::Creds;

    /// The system call's number, the same on every architecture.
    const SYS_GETXATTRAT: libc::c_long = 464;
    /// listxattrat(2), from the same kernel release.
    const SYS_LISTXATTRAT: libc::c_long = 465;

    /// Whether the kernel lacked the call when first asked (a fact of the running kernel).
    static MISSING: AtomicBool = AtomicBool::new(false);

    /// `struct xattr_args` of the uapi.
    #[repr(C)]
    struct XattrArgs {
        value: u64,
        size: u32,
        flags: u32,
    }

    /// The value of `xattr` on the entry `name` of `dir` (`.`: `dir` itself), not following a
    /// symlink; `None` when the kernel has no getxattrat, for the caller's fallback. The names
    /// are made NUL-terminated on the stack: this runs once per listed entry.
    pub(super) fn read(
        creds: Creds<'_>,
        dir: BorrowedFd<'_>,
        name: &str,
        xattr: &str,
    ) -> Option<io::Result<Vec<u8>>> {
        if MISSING.load(Ordering::Relaxed) {
            return None;
        }
        let result = name.into_with_c_str(|name| {
            xattr.into_with_c_str(|xattr| {
                super::read_sized(
                    || call(creds, dir, name, xattr, &mut []),
                    |buf| call(creds, dir, name, xattr, buf),
                )
            })
        });
        if result == Err(Errno::NOSYS) {
            MISSING.store(true, Ordering::Relaxed);
            return None;
        }
        Some(result)
    }

    /// The names of the xattrs of the entry `name` of `dir`, not following a symlink, as the
    /// kernel lists them (NUL-separated); `None` when the kernel has no listxattrat (added
    /// with getxattrat), for the caller's fallback.
    pub(super) fn list(
        creds: Creds<'_>,
        dir: BorrowedFd<'_>,
        name: &str,
    ) -> Option<io::Result<Vec<u8>>> {
        if MISSING.load(Ordering::Relaxed) {
            return None;
        }
        let result = name.into_with_c_str(|name| {
            super::read_sized(
                || call_list(creds, dir, name, &mut []),
                |buf| call_list(creds, dir, name, buf),
            )
        });
        if result == Err(Errno::NOSYS) {
            MISSING.store(true, Ordering::Relaxed);
            return None;
        }
        Some(result)
    }

    #[allow(unsafe_code)]
    fn call_list(
        _: Creds<'_>,
        dir: BorrowedFd<'_>,
        name: &CStr,
        buf: &mut [u8],
    ) -> io::Result<usize> {
        // SAFETY: the name is NUL-terminated and lives for the call; the kernel writes at most
        // `buf.len()` bytes at `buf` and keeps no pointer after returning.
        let result = unsafe {
            libc::syscall(
                SYS_LISTXATTRAT,
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        if result < 0 {
            return Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO));
        }
        usize::try_from(result).map_err(|_| Errno::IO)
    }

    #[allow(unsafe_code)]
    fn call(
        _: Creds<'_>,
        dir: BorrowedFd<'_>,
        name: &CStr,
        xattr: &CStr,
        buf: &mut [u8],
    ) -> io::Result<usize> {
        let mut args = XattrArgs {
            value: buf.as_mut_ptr() as u64,
            size: u32::try_from(buf.len()).map_err(|_| Errno::INVAL)?,
            flags: 0,
        };
        // SAFETY: the names are NUL-terminated and live for the call; `args` points at `buf`,
        // whose length it gives, and the kernel writes at most that many bytes there and
        // keeps no pointer after returning.
        let result = unsafe {
            libc::syscall(
                SYS_GETXATTRAT,
                dir.as_raw_fd(),
                name.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
                xattr.as_ptr(),
                std::ptr::from_mut(&mut args),
                std::mem::size_of::<XattrArgs>(),
            )
        };
        if result < 0 {
            return Err(Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO));
        }
        usize::try_from(result).map_err(|_| Errno::IO)
    }
}

/// Reads a value into a small buffer first, which holds the usual ones (DOS attributes, short
/// lists) in one call; a larger value's size is asked for and the read retried if it grows in
/// between (`ERANGE`). The kernel bounds xattr values and lists to 64 KiB.
fn read_sized(
    mut query: impl FnMut() -> io::Result<usize>,
    mut read: impl FnMut(&mut [u8]) -> io::Result<usize>,
) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; FIRST_XATTR_READ];
    for attempt in 0..=XATTR_RACE_RETRIES {
        if attempt > 0 {
            buf.resize(query()?, 0);
        }
        match read(&mut buf) {
            Ok(len) => {
                buf.truncate(len);
                return Ok(buf);
            }
            Err(Errno::RANGE) => {}
            Err(error) => return Err(error),
        }
    }
    Err(Errno::RANGE)
}

fn to_timespec(time: Option<Timespec>) -> rustix::fs::Timespec {
    match time {
        Some(time) => rustix::fs::Timespec {
            tv_sec: time.sec,
            tv_nsec: time.nsec.into(),
        },
        None => rustix::fs::Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_OMIT,
        },
    }
}

impl PosixFile {
    /// Appends up to `len` bytes read at `offset` to `buf` as `read_append` does. With
    /// `cached_only`, only from the page cache: `preadv2` with RWF_NOWAIT answers EAGAIN
    /// instead of waiting for the device (`None`, `buf` as it was); a file system that cannot
    /// tell (EOPNOTSUPP) is read as before, trusting its cache.
    fn append_read(
        &self,
        buf: &mut Vec<u8>,
        len: usize,
        offset: u64,
        cached_only: bool,
    ) -> Option<VfsResult<usize>> {
        if let Err(denied) = self.check_data(self.access.can_read()) {
            return Some(Err(denied));
        }
        let start = buf.len();
        if buf.try_reserve_exact(len).is_err() {
            return Some(Err(VfsError::Io(Errno::NOMEM.raw_os_error())));
        }
        let mut flags = if cached_only { libc::RWF_NOWAIT } else { 0 };
        while buf.len() - start < len {
            let done = buf.len() - start;
            let Some(position) = offset.checked_add(done as u64) else {
                break;
            };
            match pread_into_spare(self.fd.as_fd(), buf, len - done, position, flags) {
                Ok(0) => break,
                Ok(_) | Err(Errno::INTR) => {}
                // Offsets beyond the largest file read as the end of the file.
                Err(Errno::INVAL) if position > i64::MAX as u64 => break,
                Err(Errno::AGAIN) if flags != 0 => {
                    buf.truncate(start);
                    return None;
                }
                Err(Errno::OPNOTSUPP) if flags != 0 => flags = 0,
                Err(error) => {
                    buf.truncate(start);
                    return Some(Err(map_errno(error)));
                }
            }
        }
        Some(Ok(buf.len() - start))
    }
}

/// Whether every page of the `len` bytes at `offset` is in the page cache: `cachestat`
/// (Linux 6.5), one system call that walks the cache without touching the data. False when a
/// page is missing, the range passes the end of the file, or the kernel has no `cachestat`.
#[allow(unsafe_code)]
fn all_cached(fd: BorrowedFd<'_>, offset: u64, len: usize) -> bool {
    /// `struct cachestat_range` and `struct cachestat` of linux/mman.h.
    #[repr(C)]
    struct Range {
        off: u64,
        len: u64,
    }
    #[repr(C)]
    #[derive(Default)]
    struct Stat {
        nr_cache: u64,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_evicted: u64,
        nr_recently_evicted: u64,
    }
    // The same number on every architecture of the unified system-call table; libc names it
    // for some targets only.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    const SYS_CACHESTAT: libc::c_long = 451;
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    return false;
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        if len == 0 {
            return true;
        }
        // SAFETY: sysconf reads a constant of the system.
        let Ok(page) = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }) else {
            return false;
        };
        let Some(end) = offset.checked_add(len as u64) else {
            return false;
        };
        let pages = end.div_ceil(page) - offset / page;
        let range = Range {
            off: offset,
            len: len as u64,
        };
        let mut stat = Stat::default();
        // SAFETY: `range` and `stat` are live, correctly laid out for the call, which reads the
        // one and writes the other and keeps no pointer after returning.
        let done = unsafe {
            libc::syscall(
                SYS_CACHESTAT,
                fd.as_raw_fd(),
                &raw const range,
                &raw mut stat,
                0u32,
            )
        };
        done == 0 && stat.nr_cache >= pages
    }
}

/// Reads at most `len` bytes at `offset` into the spare capacity of `buf`, which need not be
/// zeroed first (for a 1 MiB READ that zeroing cost a tenth of an encrypted READ's server
/// CPU), and adds what was read to its length. `flags` are `preadv2`'s; rustix's `preadv2`
/// takes initialised buffers only.
#[allow(unsafe_code)]
fn pread_into_spare(
    fd: BorrowedFd<'_>,
    buf: &mut Vec<u8>,
    len: usize,
    offset: u64,
    flags: libc::c_int,
) -> Result<usize, Errno> {
    let offset = libc::off_t::try_from(offset).map_err(|_| Errno::INVAL)?;
    let spare = buf.spare_capacity_mut();
    let iov = libc::iovec {
        iov_base: spare.as_mut_ptr().cast(),
        iov_len: len.min(spare.len()),
    };
    // SAFETY: `iov` describes part of `buf`'s spare capacity, borrowed for the call; the kernel
    // writes at most `iov_len` bytes there and keeps no pointer after returning.
    let read = unsafe { libc::preadv2(fd.as_raw_fd(), &iov, 1, offset, flags) };
    let read = usize::try_from(read)
        .map_err(|_| Errno::from_io_error(&std::io::Error::last_os_error()).unwrap_or(Errno::IO))?;
    let new_len = buf.len() + read.min(iov.iov_len);
    // SAFETY: the kernel initialised the `read` bytes after the length (at most `iov_len`,
    // within the capacity).
    unsafe { buf.set_len(new_len) };
    Ok(read)
}

impl VfsFile for PosixFile {
    fn stat(&self) -> VfsResult<FileStat> {
        statx_fd(&self.fd).map_err(map_errno)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        self.check_data(self.access.can_read())?;
        let mut done = 0;
        while let Some(rest) = buf.get_mut(done..).filter(|rest| !rest.is_empty()) {
            let Some(position) = offset.checked_add(done as u64) else {
                break;
            };
            match pread(&self.fd, rest, position) {
                Ok(0) => break,
                Ok(read) => done += read,
                Err(Errno::INTR) => {}
                // Offsets beyond the largest file read as the end of the file.
                Err(Errno::INVAL) if position > i64::MAX as u64 => break,
                Err(error) => return Err(map_errno(error)),
            }
        }
        Ok(done)
    }

    fn read_append(&self, buf: &mut Vec<u8>, len: usize, offset: u64) -> VfsResult<usize> {
        self.append_read(buf, len, offset, false)
            .unwrap_or(Err(VfsError::Io(smb3d_vfs::errno::EIO)))
    }

    fn try_read_append(
        &self,
        buf: &mut Vec<u8>,
        len: usize,
        offset: u64,
    ) -> Option<VfsResult<usize>> {
        self.append_read(buf, len, offset, true)
    }

    fn data_fd(&self) -> Option<BorrowedFd<'_>> {
        (self.file_type == FileType::File && !self.path_only && self.access.can_read())
            .then(|| self.fd.as_fd())
    }

    fn data_cached(&self, offset: u64, len: usize) -> bool {
        all_cached(self.fd.as_fd(), offset, len)
    }

    fn set_host_lock(&self, offset: u64, len: u64, level: HostLock) -> VfsResult<bool> {
        match self.lock_rights() {
            Some(rights) => host_lock::set(self.fd.as_fd(), rights, offset, len, level),
            None => Ok(true),
        }
    }

    fn host_lock_conflicts(&self, offset: u64, len: u64, write: bool) -> VfsResult<bool> {
        match self.lock_rights() {
            Some(_) => host_lock::conflicts(self.fd.as_fd(), offset, len, write),
            None => Ok(false),
        }
    }

    fn set_kernel_lease(&self, lease: KernelLease, signal: i32) -> VfsResult<bool> {
        if self.lock_rights().is_none() {
            return Ok(lease == KernelLease::None);
        }
        kernel_lease::set(self.fd.as_fd(), lease, signal)
    }

    fn kernel_lease(&self) -> VfsResult<KernelLease> {
        if self.lock_rights().is_none() {
            return Ok(KernelLease::None);
        }
        kernel_lease::get(self.fd.as_fd())
    }

    fn reads_only(&self) -> bool {
        self.lock_rights().is_some() && kernel_lease::reads_only(self.fd.as_fd())
    }

    fn write_at(&self, data: &[u8], offset: u64) -> VfsResult<usize> {
        self.check_data(self.access.can_write())?;
        checked_range_end(offset, data.len() as u64)?;
        let mut done = 0;
        while let Some(rest) = data.get(done..).filter(|rest| !rest.is_empty()) {
            match pwrite(&self.fd, rest, offset + done as u64) {
                Ok(0) => return Err(VfsError::NoSpace),
                Ok(written) => done += written,
                Err(Errno::INTR) => {}
                Err(error) => return Err(map_errno(error)),
            }
        }
        Ok(done)
    }

    fn write_piped(&self, data: &mut PipedData, offset: u64) -> VfsResult<usize> {
        self.check_data(self.access.can_write())?;
        let len = data.len();
        let end = checked_range_end(offset, len as u64)?;
        let mut position = offset;
        // The kernel copies the pipes' pages into the page cache: the data's only copy since
        // the socket.
        for (pipe, held) in data.pipes() {
            let pipe_end = position + held as u64;
            while position < pipe_end {
                let rest = usize::try_from(pipe_end - position).unwrap_or(usize::MAX);
                match splice(
                    pipe,
                    None,
                    &self.fd,
                    Some(&mut position),
                    rest,
                    // Never waits for the pipe: all its bytes are there (the transport keeps
                    // its write end open to reuse it).
                    SpliceFlags::MOVE | SpliceFlags::NONBLOCK,
                ) {
                    // The pipe ran dry before its promised length.
                    Ok(0) | Err(Errno::AGAIN) => {
                        return Err(VfsError::Io(Errno::IO.raw_os_error()));
                    }
                    Ok(_) | Err(Errno::INTR) => {}
                    Err(error) => return Err(map_errno(error)),
                }
            }
        }
        debug_assert_eq!(position, end);
        Ok(len)
    }

    fn set_len(&self, len: u64) -> VfsResult<()> {
        self.check_data(self.access.can_write())?;
        checked_range_end(len, 0)?;
        ftruncate(&self.fd, len).map_err(map_errno)
    }

    fn allocate(&self, offset: u64, len: u64) -> VfsResult<()> {
        self.check_data(self.access.can_write())?;
        checked_range_end(offset, len)?;
        fallocate(&self.fd, FallocateFlags::empty(), offset, len).map_err(map_errno)
    }

    fn preallocate(&self, offset: u64, len: u64) -> VfsResult<()> {
        self.check_data(self.access.can_write())?;
        checked_range_end(offset, len)?;
        fallocate(&self.fd, FallocateFlags::KEEP_SIZE, offset, len).map_err(map_errno)
    }

    fn sync(&self) -> VfsResult<()> {
        if self.access == Access::MetadataOnly {
            return Err(VfsError::PermissionDenied);
        }
        fsync(&self.fd).map_err(map_errno)
    }

    fn set_times(&self, atime: Option<Timespec>, mtime: Option<Timespec>) -> VfsResult<()> {
        let times = Timestamps {
            last_access: to_timespec(atime),
            last_modification: to_timespec(mtime),
        };
        settled(|creds| {
            if self.path_only {
                sys::utimensat(creds, CWD, self.proc_path(), &times, AtFlags::empty())
            } else {
                sys::futimens(creds, &self.fd, &times)
            }
        })
        .map_err(map_errno)
    }

    fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) -> VfsResult<()> {
        let uid = uid.map(Uid::from_raw);
        let gid = gid.map(Gid::from_raw);
        settled(|creds| {
            if self.path_only {
                sys::chownat(creds, CWD, self.proc_path(), uid, gid, AtFlags::empty())
            } else {
                sys::fchown(creds, &self.fd, uid, gid)
            }
        })
        .map_err(map_errno)
    }

    fn set_mode(&self, mode: u32) -> VfsResult<()> {
        let mode = Mode::from_raw_mode(mode & 0o7777);
        settled(|creds| {
            if self.path_only {
                // The /proc link resolves to this object, never to a symlink's target: an
                // O_PATH descriptor of a symlink is not opened here (the VFS follows links
                // when opening).
                sys::chmodat(creds, CWD, self.proc_path(), mode, AtFlags::empty())
            } else {
                sys::fchmod(creds, &self.fd, mode)
            }
        })
        .map_err(map_errno)
    }

    fn read_dir(&self) -> VfsResult<Vec<DirEntry>> {
        self.check_directory()?;
        settled(|creds| {
            // A descriptor of its own, so that concurrent listings do not share a position,
            // and readable even when this handle is `O_PATH`.
            let listing = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let reopen = || sys::openat(creds, &self.fd, ".", listing, Mode::empty());
            let fd = match reopen() {
                Err(Errno::ACCESS) if self.opened_for_creator => {
                    smb3d_credentials::as_service(reopen)
                }
                result => result,
            }
            .map_err(map_errno)?;
            let mut dir = Dir::new(fd).map_err(map_errno)?;
            let mut entries = Vec::new();
            while let Some(entry) = dir.read() {
                let entry = entry.map_err(map_errno)?;
                let Ok(name) = entry.file_name().to_str() else {
                    continue;
                };
                if name == "." || name == ".." {
                    continue;
                }
                let file_type = match entry.file_type() {
                    rustix::fs::FileType::RegularFile => FileType::File,
                    rustix::fs::FileType::Directory => FileType::Directory,
                    rustix::fs::FileType::Symlink => FileType::Symlink,
                    rustix::fs::FileType::Unknown => {
                        match statx_at(creds, &self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                            Ok(stat) => stat.file_type,
                            // Removed since the directory was read.
                            Err(Errno::NOENT) => continue,
                            Err(error) => return Err(map_errno(error)),
                        }
                    }
                    _ => FileType::Other,
                };
                entries.push(DirEntry {
                    name: name.to_owned(),
                    ino: entry.ino(),
                    file_type,
                });
            }
            Ok(entries)
        })
    }

    fn stat_child(&self, name: &str) -> VfsResult<FileStat> {
        validate_name(name)?;
        self.check_directory()?;
        settled(|creds| statx_at(creds, &self.fd, name, AtFlags::SYMLINK_NOFOLLOW))
            .map_err(map_errno)
    }

    fn lookup_child(&self, name: &str) -> VfsResult<Option<(String, FileStat)>> {
        validate_name(name)?;
        self.check_directory()?;
        settled(|creds| {
            match statx_at(creds, &self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => return Ok(Some((name.to_owned(), stat))),
                Err(Errno::NOENT) if self.names.case == CaseSensitivity::Insensitive => {}
                Err(Errno::NOENT) => return Ok(None),
                Err(error) => return Err(map_errno(error)),
            }
            let found = self.names.find_other_spelling(creds, self.fd.as_fd(), name);
            let real = match found.map_err(map_errno)? {
                Found::Variant(real) => real,
                // Created since the statx.
                Found::Exact => name.to_owned(),
                Found::Missing => return Ok(None),
            };
            match statx_at(creds, &self.fd, &real, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => Ok(Some((real, stat))),
                // Removed since the listing.
                Err(Errno::NOENT) => Ok(None),
                Err(error) => Err(map_errno(error)),
            }
        })
    }

    fn get_xattr(&self, name: &str) -> VfsResult<Option<Vec<u8>>> {
        validate_name_of_xattr(name)?;
        match settled(|creds| self.xattr_value(creds, name)) {
            Ok(value) => Ok(Some(value)),
            Err(Errno::NODATA) => Ok(None),
            Err(error) => Err(map_errno(error)),
        }
    }

    fn get_child_xattr(&self, name: &str, xattr: &str) -> VfsResult<Option<Vec<u8>>> {
        validate_name(name)?;
        validate_name_of_xattr(xattr)?;
        self.check_directory()?;
        // The entry is reached through this directory's descriptor, which is confined to the
        // share, and is not followed if it is a symlink: with getxattrat where the kernel has
        // it, else lgetxattr through the descriptor's /proc link (a path walk of five more
        // components).
        let value = settled(
            |creds| match xattrat::read(creds, self.fd.as_fd(), name, xattr) {
                Some(value) => value,
                None => {
                    let path = format!("{}/{name}", self.proc_path());
                    read_sized(
                        || sys::lgetxattr_query(creds, &path, xattr),
                        |buf| sys::lgetxattr(creds, &path, xattr, buf),
                    )
                }
            },
        );
        match value {
            Ok(value) => Ok(Some(value)),
            Err(Errno::NODATA) => Ok(None),
            Err(error) => Err(map_errno(error)),
        }
    }

    fn list_child_xattr(&self, name: &str) -> VfsResult<Vec<String>> {
        validate_name(name)?;
        self.check_directory()?;
        let names = settled(|creds| match xattrat::list(creds, self.fd.as_fd(), name) {
            Some(names) => names,
            None => {
                let path = format!("{}/{name}", self.proc_path());
                read_sized(
                    || sys::llistxattr_query(creds, &path),
                    |buf| sys::llistxattr(creds, &path, buf),
                )
            }
        })
        .map_err(map_errno)?;
        Ok(split_xattr_names(&names))
    }

    fn set_xattr(&self, name: &str, value: &[u8]) -> VfsResult<()> {
        validate_name_of_xattr(name)?;
        validate_xattr_value(value)?;
        settled(|creds| {
            if self.path_only {
                sys::setxattr(creds, self.proc_path(), name, value, XattrFlags::empty())
            } else {
                sys::fsetxattr(creds, &self.fd, name, value, XattrFlags::empty())
            }
        })
        .map_err(map_errno)
    }

    fn remove_xattr(&self, name: &str) -> VfsResult<()> {
        validate_name_of_xattr(name)?;
        settled(|creds| {
            if self.path_only {
                sys::removexattr(creds, self.proc_path(), name)
            } else {
                sys::fremovexattr(creds, &self.fd, name)
            }
        })
        .map_err(map_errno)
    }

    fn copy_range(
        &self,
        src: &dyn VfsFile,
        src_offset: u64,
        offset: u64,
        len: u64,
    ) -> VfsResult<u64> {
        self.check_data(self.access.can_write())?;
        checked_range_end(offset, len)?;
        let mut done = 0;
        if let Some(source) = src.as_any().downcast_ref::<PosixFile>() {
            source.check_data(source.access.can_read())?;
            done = copy::copy_range(source.fd.as_fd(), src_offset, self.fd.as_fd(), offset, len)
                .unwrap_or(0);
            if done == len {
                return Ok(done);
            }
            // Stopped at the end of the source, or the kernel would not copy (another file
            // system, overlapping ranges of one file): reading and writing finishes the job.
            let size = statx_fd(&source.fd).map_err(map_errno)?.size;
            if src_offset.saturating_add(done) >= size {
                return Ok(done);
            }
        }
        let rest = copy_by_reading(self, src, src_offset + done, offset + done, len - done)?;
        Ok(done + rest)
    }

    fn clone_range(
        &self,
        src: &dyn VfsFile,
        src_offset: u64,
        offset: u64,
        len: u64,
    ) -> VfsResult<()> {
        let source = src
            .as_any()
            .downcast_ref::<PosixFile>()
            .ok_or(VfsError::CrossDevice)?;
        self.check_data(self.access.can_write())?;
        source.check_data(source.access.can_read())?;
        if len == 0 {
            return Ok(());
        }
        checked_range_end(offset, len)?;
        checked_range_end(src_offset, len)?;
        copy::clone_range(source.fd.as_fd(), src_offset, self.fd.as_fd(), offset, len).map_err(
            |errno| match errno {
                Errno::OPNOTSUPP | Errno::NOTTY => VfsError::Unsupported,
                other => map_errno(other),
            },
        )
    }

    fn punch_hole(&self, offset: u64, len: u64) -> VfsResult<()> {
        self.check_data(self.access.can_write())?;
        if len == 0 {
            return Ok(());
        }
        let len = len.min(MAX_FILE_SIZE.saturating_sub(offset));
        copy::punch_hole(self.fd.as_fd(), offset, len).map_err(|errno| match errno {
            Errno::OPNOTSUPP => VfsError::Unsupported,
            other => map_errno(other),
        })
    }

    fn allocated_ranges(&self, offset: u64, len: u64, limit: usize) -> VfsResult<Vec<(u64, u64)>> {
        self.check_data(true)?;
        let size = statx_fd(&self.fd).map_err(map_errno)?.size;
        let end = offset.saturating_add(len).min(size);
        copy::data_ranges(self.fd.as_fd(), offset, end, limit).map_err(map_errno)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn list_xattr(&self) -> VfsResult<Vec<String>> {
        let names = settled(|creds| self.xattr_names(creds)).map_err(map_errno)?;
        Ok(split_xattr_names(&names))
    }
}

/// The names of a list from the kernel (NUL-separated); names that are not UTF-8 are skipped.
fn split_xattr_names(names: &[u8]) -> Vec<String> {
    names
        .split(|&byte| byte == 0)
        .filter(|name| !name.is_empty())
        .filter_map(|name| std::str::from_utf8(name).ok())
        .map(str::to_owned)
        .collect()
}

/// Xattr names this back end handles: those every back end stores, and the POSIX ACLs, which
/// Linux keeps as `system.` xattrs.
fn validate_name_of_xattr(name: &str) -> VfsResult<()> {
    if POSIX_ACL_XATTRS.contains(&name) {
        Ok(())
    } else {
        validate_xattr_name(name)
    }
}
