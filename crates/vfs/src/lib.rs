//! The handle-based, protocol-neutral virtual file system the server runs on.
//!
//! A [`Vfs`] resolves [`VfsPath`]s, which cannot contain `..`, and confines every symlink it
//! follows to the share. What it opens is a [`VfsFile`] handle; everything after the open
//! works on the handle, never on a path again, so a rename racing with an operation cannot
//! redirect it. Errors are [`VfsError`]s: no NTSTATUS, UTF-16 or FILETIME here.
//!
//! Names ignore case by default, as SMB clients expect ([`CaseSensitivity`]): a component
//! that does not exist as spelled designates an entry equal to it under Unicode simple case
//! folding ([`casefold`]), and creating such a name opens or collides with that entry.
//!
//! Back ends: [`MemoryVfs`] here (tests and fuzzing), `smb3d-vfs-posix` for Linux. With the
//! `conformance` feature, the `conformance` module holds the suite both run. [`FaultVfs`] is a
//! layer over either that fails or delays chosen calls, for tests of storage faults.
//!
//! The calls are synchronous; the server makes them from blocking worker threads.
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod backend;
pub mod casefold;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod error;
pub mod faults;
mod memory;
mod outside;
mod path;
mod piped;
mod types;

use std::any::Any;

pub use error::{VfsError, VfsResult, errno};
pub use faults::{FaultOp, FaultPlan, FaultRule, FaultVfs};
pub use memory::MemoryVfs;
pub use outside::{OutsideChange, OutsideSink, OutsideWatch};
pub use path::{MAX_NAME_LEN, MAX_PATH_LEN, VfsPath, validate_name};
pub use piped::PipedData;
pub use types::{
    Access, CaseSensitivity, DirEntry, Disposition, FileStat, FileType, FsStat, HostLock,
    KernelLease, Kind, OpenRequest, Quota, QuotaKind, S_IFDIR, S_IFLNK, S_IFMT, S_IFREG, Timespec,
};

/// A Unix identity for [`Vfs::run_as`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub uid: u32,
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

/// A handle returned by [`Vfs::open`].
pub struct Opened {
    /// The open object.
    pub file: Box<dyn VfsFile>,
    /// Whether the open created it.
    pub created: bool,
    /// The file's status as the open found it, when the back end learned it on the way (it
    /// saves the caller a stat).
    pub stat: Option<FileStat>,
}

/// A share's file system: the operations that take a path.
///
/// Every path is resolved inside the share: symlinks are followed only while they stay in it
/// (`OutsideShare` otherwise, also for absolute targets and for more than 40 links in one
/// resolution). Errors on the way distinguish a missing last component (`NotFound`) from a
/// missing or non-directory parent (`ParentNotFound`).
///
/// When the back end ignores case ([`CaseSensitivity::Insensitive`]), each component of a
/// path that does not exist as spelled is looked for among its directory's entries under
/// case folding (see [`casefold::resolve_path`]); what is found is used as if spelled so. A
/// path that exists as spelled costs nothing extra. Symlink targets are followed as spelled.
pub trait Vfs: Send + Sync {
    /// Runs `work` — calls on this back end and on the files it opened — with `who`'s
    /// credentials, so that the file system's own permission checks, ownership of new files
    /// and quotas apply to that user. A back end that cannot change credentials (or runs
    /// without the privilege to) runs `work` as it is.
    fn run_as(&self, who: &Credentials, work: &mut dyn FnMut()) {
        let _ = who;
        work();
    }

    /// Runs `work` with the service's own credentials, inside [`run_as`](Self::run_as), for
    /// metadata that users cannot write themselves but the server may write for them once it
    /// has checked their rights (NT ACLs in the trusted `security.` xattr namespace, as Samba
    /// keeps them). A back end that never switches runs `work` as it is.
    fn run_privileged(&self, work: &mut dyn FnMut()) {
        work();
    }

    /// Whether [`run_as`](Self::run_as) takes on each user's credentials, so that the file
    /// system itself enforces users' permissions and owns new files to them. `false` (the
    /// default, and a server not running as root) means all work runs as the service.
    fn runs_as_users(&self) -> bool {
        false
    }

    /// Opens or creates the object at `path`, following a symlink in the last component when
    /// opening, never when creating.
    fn open(&self, path: &VfsPath, req: &OpenRequest) -> VfsResult<Opened>;

    /// Metadata of the object at `path`, following symlinks (within the share only).
    fn stat(&self, path: &VfsPath) -> VfsResult<FileStat>;

    /// Opens the symlink `path` itself, for metadata only, without following it: the reparse
    /// point an open with FILE_OPEN_REPARSE_POINT names (MS-FSA 2.1.5.1). The directories
    /// leading to it resolve as in any path; only the last component is not followed, so a
    /// link that dangles or leads out of the share opens too, and nothing it points to is
    /// reached through the handle. `None` when `path` is no symlink.
    fn open_link(&self, path: &VfsPath) -> VfsResult<Option<Opened>>;

    /// Removes a file, symlink or empty directory; never follows the last component. The root
    /// is `Busy`.
    fn unlink(&self, path: &VfsPath) -> VfsResult<()>;

    /// Moves `from` to `to`, neither last component followed. Without `replace` an existing
    /// `to` is `AlreadyExists`; with it, a file replaces a file and a directory an empty
    /// directory (`IsADirectory`, `NotADirectory` or `NotEmpty` otherwise). Moving a directory
    /// into itself is `Io(EINVAL)`; the root is `Busy`.
    fn rename(&self, from: &VfsPath, to: &VfsPath, replace: bool) -> VfsResult<()>;

    /// Creates a symlink at `link` whose target is `target`, stored as given. Targets that
    /// leave the share can be created but are refused when followed.
    fn symlink(&self, target: &str, link: &VfsPath) -> VfsResult<()>;

    /// Whether a symlink at `link` to `target` would lead somewhere inside the share as the
    /// share is now: `target` is resolved from `link`'s directory the way paths are (through
    /// the symlinks on the way, never above the root), not by its spelling, since a link to
    /// the root makes `link-to-root/..` the share's parent. `Ok` when it stays inside, also when
    /// it names nothing yet below a part that exists (see
    /// [`backend::check_symlink_target`](crate::backend::check_symlink_target));
    /// `OutsideShare` when it is absolute, leaves the share or loops. The check holds for the
    /// moment it is made: a later rename can change where a relative link leads.
    fn check_symlink_target(&self, link: &VfsPath, target: &str) -> VfsResult<()>;

    /// The target of the symlink at `path`, as stored, its last component not followed;
    /// `None` when the object there is not a symlink.
    fn read_link(&self, path: &VfsPath) -> VfsResult<Option<String>>;

    /// Adds `new` as another name (a hard link) of the file at `existing`, neither last
    /// component followed. An existing `new` is `AlreadyExists`; a directory cannot be linked
    /// (`PermissionDenied`).
    fn link(&self, existing: &VfsPath, new: &VfsPath) -> VfsResult<()>;

    /// Makes the entries of the directory at `path` durable (`fsync` of the directory): a
    /// create, rename or delete in it survives a crash once this returns.
    fn sync_dir(&self, path: &VfsPath) -> VfsResult<()>;

    /// Capacity and identity of the file system holding the share.
    fn fs_stat(&self) -> VfsResult<FsStat>;

    /// Whether [`VfsFile::clone_range`] works on the file system holding the share.
    fn can_clone(&self) -> bool;

    /// The quota record of the user or group `id` on the file system holding the share (a
    /// record of zeros when none was set). `Unsupported` when the file system keeps no quotas
    /// of that kind (the default).
    fn quota(&self, kind: QuotaKind, id: u32) -> VfsResult<Quota> {
        let _ = (kind, id);
        Err(VfsError::Unsupported)
    }

    /// Sets the soft and hard limits of `id`'s quota record (0: none), keeping its usage. Who
    /// may is the back end's decision (Linux: `CAP_SYS_ADMIN`).
    fn set_quota_limits(&self, kind: QuotaKind, id: u32, soft: u64, hard: u64) -> VfsResult<()> {
        let _ = (kind, id, soft, hard);
        Err(VfsError::Unsupported)
    }

    /// The first id from `from` on that has a quota record, with the record: how a whole
    /// volume's records are enumerated. `None` past the last.
    fn next_quota(&self, kind: QuotaKind, from: u32) -> VfsResult<Option<(u32, Quota)>> {
        let _ = (kind, from);
        Err(VfsError::Unsupported)
    }

    /// Starts delivering to `sink` the changes that other processes make below the share,
    /// until the returned watch is dropped. `None` when the back end cannot see them (the
    /// default: nothing but the server changes an in-memory share).
    fn watch_outside(&self, sink: OutsideSink) -> Option<OutsideWatch> {
        drop(sink);
        None
    }

    /// The directory `dir` of this share as a share of its own, with the same name rules:
    /// paths opened in it stay inside it (a snapshot of the share, MS-SMB2 3.3.5.9.8). A back
    /// end without snapshots answers `NotSupported` (the default).
    fn subtree(&self, dir: &VfsPath) -> VfsResult<std::sync::Arc<dyn Vfs>> {
        let _ = dir;
        Err(VfsError::Unsupported)
    }
}

/// An open file or directory.
///
/// Data operations need the access they were opened for (`PermissionDenied` otherwise) and a
/// non-directory (`IsADirectory`); directory operations need a directory (`NotADirectory`).
pub trait VfsFile: Send + Sync {
    /// Metadata of the object.
    fn stat(&self) -> VfsResult<FileStat>;

    /// Reads at `offset`, filling `buf` unless the end of the file comes first; returns the
    /// number of bytes read.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> VfsResult<usize>;

    /// Reads up to `len` bytes at `offset` onto the end of `buf`, as [`read_at`](Self::read_at)
    /// would, and returns how many were appended. Back ends that can read into uninitialized
    /// memory do so, sparing the zeroing of large READ responses.
    fn read_append(&self, buf: &mut Vec<u8>, len: usize, offset: u64) -> VfsResult<usize> {
        let start = buf.len();
        buf.resize(start + len, 0);
        let read = buf
            .get_mut(start..)
            .map_or(Ok(0), |tail| self.read_at(tail, offset));
        buf.truncate(start + *read.as_ref().unwrap_or(&0));
        read
    }

    /// Reads as [`read_append`](Self::read_append) would, but only if that needs no wait on
    /// the device (the data is in the page cache): `None`, with `buf` unchanged, when it would
    /// wait or the back end cannot tell, and the caller reads off the async workers instead.
    fn try_read_append(
        &self,
        _buf: &mut Vec<u8>,
        _len: usize,
        _offset: u64,
    ) -> Option<VfsResult<usize>> {
        None
    }

    /// A descriptor from which the file's data can be sent to a socket by the kernel
    /// (`sendfile`), when the back end has one and the handle may read; `None` otherwise.
    fn data_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        None
    }

    /// Whether all `len` bytes at `offset` are in the page cache, so that sending them from
    /// [`data_fd`](Self::data_fd) waits for no device; false when some are not or the back
    /// end cannot tell, and the caller sends them off the async workers.
    fn data_cached(&self, _offset: u64, _len: usize) -> bool {
        false
    }

    /// Writes all of `data` at `offset`, extending the file as needed; returns `data.len()`.
    fn write_at(&self, data: &[u8], offset: u64) -> VfsResult<usize>;

    /// Writes all of `data`, which waits in a pipe, at `offset` as [`write_at`](Self::write_at)
    /// would; returns `data.len()`. Back ends with a descriptor move it from the pipe into the
    /// file without copying it through user space; the others read it into memory first.
    fn write_piped(&self, data: &mut PipedData, offset: u64) -> VfsResult<usize> {
        let mut buf = Vec::new();
        data.read_into(&mut buf)?;
        self.write_at(&buf, offset)
    }

    /// Truncates or extends (with zeros) to `len` bytes.
    fn set_len(&self, len: u64) -> VfsResult<()>;

    /// Allocates storage for `offset..offset + len`, extending the size if that range ends
    /// beyond it (`fallocate` mode 0).
    fn allocate(&self, offset: u64, len: u64) -> VfsResult<()>;

    /// Allocates storage for `offset..offset + len` without changing the size (`fallocate`
    /// with FALLOC_FL_KEEP_SIZE), as an AllocationSize beyond EndOfFile asks.
    fn preallocate(&self, offset: u64, len: u64) -> VfsResult<()>;

    /// Flushes data and metadata to stable storage.
    fn sync(&self) -> VfsResult<()>;

    /// Sets the access and modification times; `None` leaves one unchanged.
    fn set_times(&self, atime: Option<Timespec>, mtime: Option<Timespec>) -> VfsResult<()>;

    /// Gives the object to another owner and/or group (`None` leaves one unchanged), as
    /// `fchown`; who may do that is the file system's decision. A back end without Unix
    /// ownership answers `Unsupported`.
    fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) -> VfsResult<()> {
        let _ = (uid, gid);
        Err(VfsError::Unsupported)
    }

    /// Sets the permission bits (`mode & 0o7777`), as `fchmod`. A back end without Unix
    /// permissions answers `Unsupported`.
    fn set_mode(&self, mode: u32) -> VfsResult<()> {
        let _ = mode;
        Err(VfsError::Unsupported)
    }

    /// The directory's entries, without `.` and `..`; names that are not UTF-8 are skipped.
    fn read_dir(&self) -> VfsResult<Vec<DirEntry>>;

    /// Metadata of the entry `name` of this directory, not following a symlink.
    fn stat_child(&self, name: &str) -> VfsResult<FileStat>;

    /// The entry of this directory that `name` designates under the share's
    /// [`CaseSensitivity`], with its real name and metadata (not following a symlink); `None`
    /// if there is none. An entry spelled exactly costs one stat; otherwise, when the share
    /// ignores case, the directory is listed once (or a back end's cache of its names
    /// consulted) and the entry chosen as [`casefold::EntryChooser`] does. For a search
    /// pattern without wildcards: the caller matches patterns with wildcards against
    /// [`read_dir`](Self::read_dir) and never looks such a name up.
    fn lookup_child(&self, name: &str) -> VfsResult<Option<(String, FileStat)>>;

    /// The value of an extended attribute, `None` if it is not set.
    fn get_xattr(&self, name: &str) -> VfsResult<Option<Vec<u8>>>;

    /// An xattr of the entry `name` of this directory, not following a symlink: directory
    /// listings read per-file metadata this way without opening each file.
    fn get_child_xattr(&self, name: &str, xattr: &str) -> VfsResult<Option<Vec<u8>>>;

    /// The names of the xattrs of the entry `name` of this directory, not following a
    /// symlink: listings learn from one call which per-file metadata there is to read.
    fn list_child_xattr(&self, name: &str) -> VfsResult<Vec<String>>;

    /// Sets an extended attribute, creating or replacing it.
    fn set_xattr(&self, name: &str, value: &[u8]) -> VfsResult<()>;

    /// Removes an extended attribute (`NotFound` if it is not set).
    fn remove_xattr(&self, name: &str) -> VfsResult<()>;

    /// The names of the extended attributes set on the object.
    fn list_xattr(&self) -> VfsResult<Vec<String>>;

    /// Copies `len` bytes of `src` from `src_offset` into this file at `offset`, extending it
    /// as needed, and returns how many were copied: fewer only when `src` ends first. `src`
    /// needs read access and this file write access, both regular files (of any back end).
    /// They may be the same file, ranges overlapping: the result is as if the source range had
    /// been read whole first. The file system copies, sharing extents where it can.
    fn copy_range(
        &self,
        src: &dyn VfsFile,
        src_offset: u64,
        offset: u64,
        len: u64,
    ) -> VfsResult<u64>;

    /// Makes `offset..offset + len` of this file share the storage of `src` at `src_offset`
    /// (block cloning); the file grows if the range ends past its end. Offsets and `len` must
    /// be multiples of the file system's block size, except a range that ends at the end of
    /// `src` (`Io(EINVAL)` otherwise, also for overlapping ranges of one file); `len` 0 does
    /// nothing. `Unsupported` where [`Vfs::can_clone`] is false, `CrossDevice` between file
    /// systems.
    fn clone_range(
        &self,
        src: &dyn VfsFile,
        src_offset: u64,
        offset: u64,
        len: u64,
    ) -> VfsResult<()>;

    /// Frees the storage of `offset..offset + len`, which then reads as zeros; the size does
    /// not change. A range partly or wholly beyond the end is cut to it.
    fn punch_hole(&self, offset: u64, len: u64) -> VfsResult<()>;

    /// The parts of `offset..offset + len` that hold data rather than holes, in order, as
    /// (offset, length), cut to that range and to the end of the file; at most `limit` of them
    /// (a caller that must know whether more exist asks for one more than it can use). A file
    /// system without holes reports everything up to the end as data.
    fn allocated_ranges(&self, offset: u64, len: u64, limit: usize) -> VfsResult<Vec<(u64, u64)>>;

    /// Sets the lock this handle holds in the host's byte-range lock table (Linux OFD locks,
    /// which local processes and NFS clients see through `fcntl`) on `offset..offset + len` to
    /// `level`, replacing what it held there; `Ok(false)`, with nothing changed, when another
    /// holder's lock conflicts. A handle that cannot hold the level its access allows takes
    /// the nearest one it can (see [`HostLock`]). `len` 0 does nothing; the part of a range
    /// beyond what the host can lock (past `i64::MAX`) is left out. Back ends without such a
    /// table hold nothing and see no conflicts (the default).
    fn set_host_lock(&self, offset: u64, len: u64, level: HostLock) -> VfsResult<bool> {
        let _ = (offset, len, level);
        Ok(true)
    }

    /// Whether another holder's lock in the host's table stops this handle from reading
    /// (`write` false) or writing `offset..offset + len`; false where the back end has none.
    fn host_lock_conflicts(&self, offset: u64, len: u64, write: bool) -> VfsResult<bool> {
        let _ = (offset, len, write);
        Ok(false)
    }

    /// Sets the file lease this handle holds to `lease`, the kernel signalling this process
    /// with `signal` when another open must break it; `Ok(false)`, with nothing changed, when
    /// the kernel refuses (see [`KernelLease`]). A lease can be lowered at any time, which is
    /// how a break is answered. Back ends without file leases hold none (the default).
    fn set_kernel_lease(&self, lease: KernelLease, signal: i32) -> VfsResult<bool> {
        let _ = signal;
        Ok(lease == KernelLease::None)
    }

    /// The file lease this handle holds; while the kernel breaks it, the level it must come
    /// down to.
    fn kernel_lease(&self) -> VfsResult<KernelLease> {
        Ok(KernelLease::None)
    }

    /// Whether this handle's descriptor is open for reading only, the one that may hold a
    /// [`KernelLease::Read`].
    fn reads_only(&self) -> bool {
        false
    }

    /// This handle as `Any`, so that a back end can recognise its own handles (the `src` of
    /// [`copy_range`](Self::copy_range) and [`clone_range`](Self::clone_range)).
    fn as_any(&self) -> &dyn Any;
}
