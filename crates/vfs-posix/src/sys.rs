//! The system calls whose outcome depends on the thread's credentials, each taking the proof
//! ([`Creds`]) that they are settled. The kernel checks permissions, and gives new files their
//! owner, with the credentials the thread holds at the call, which lazy switching leaves behind
//! after a user's work (see `smb3d_credentials`). The crate makes these calls only through this
//! module (its `clippy.toml` refuses the bare rustix functions elsewhere); the calls rustix
//! does not wrap take the proof where they are made: `getxattrat` in `file.rs`, and fanotify
//! and `open_by_handle_at` in `outside.rs`, which need the service's capabilities and so take
//! the proof of its credentials ([`ServiceCreds`](smb3d_credentials::ServiceCreds)). A method
//! that does not settle first has no proof to give, and does not compile:
//!
//! ```compile_fail,E0061
//! use rustix::fs::{AtFlags, CWD};
//!
//! let _ = smb3d_vfs_posix::sys::unlinkat(CWD, "file", AtFlags::empty());
//! ```
//!
//! The proof comes from [`smb3d_credentials::settled`], which takes the service's credentials
//! back outside a user's work and costs one thread-local read inside one:
//!
//! ```
//! use rustix::fs::{AtFlags, CWD, StatxFlags};
//!
//! let root = smb3d_credentials::settled(|creds| {
//!     smb3d_vfs_posix::sys::statx(creds, CWD, "/", AtFlags::empty(), StatxFlags::empty())
//! });
//! assert!(root.is_ok());
//! ```
//!
//! Calls on an open descriptor that the kernel does not check again (reads, writes, `fstat`,
//! `statx` of `AT_EMPTY_PATH`, truncation, allocation, sync, reading an open directory, close)
//! are not here: they take no proof, which keeps the data path free of it.
#![expect(
    clippy::disallowed_methods,
    reason = "the one place that makes these calls, each behind the proof"
)]

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{
    AtFlags, Gid, Mode, OFlags, RenameFlags, ResolveFlags, Statx, StatxFlags, Timestamps, Uid,
    XattrFlags, inotify,
};
use rustix::io;
use rustix::path::Arg;
use smb3d_credentials::Creds;

/// `openat`.
pub fn openat(
    _: Creds<'_>,
    dirfd: impl AsFd,
    path: impl Arg,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    rustix::fs::openat(dirfd, path, flags, mode)
}

/// `openat2`.
pub fn openat2(
    _: Creds<'_>,
    dirfd: impl AsFd,
    path: impl Arg,
    flags: OFlags,
    mode: Mode,
    resolve: ResolveFlags,
) -> io::Result<OwnedFd> {
    rustix::fs::openat2(dirfd, path, flags, mode, resolve)
}

/// `mkdirat`.
pub fn mkdirat(_: Creds<'_>, dirfd: impl AsFd, path: impl Arg, mode: Mode) -> io::Result<()> {
    rustix::fs::mkdirat(dirfd, path, mode)
}

/// `unlinkat`.
pub fn unlinkat(_: Creds<'_>, dirfd: impl AsFd, path: impl Arg, flags: AtFlags) -> io::Result<()> {
    rustix::fs::unlinkat(dirfd, path, flags)
}

/// `renameat2`.
pub fn renameat_with(
    _: Creds<'_>,
    old_dirfd: impl AsFd,
    old_path: impl Arg,
    new_dirfd: impl AsFd,
    new_path: impl Arg,
    flags: RenameFlags,
) -> io::Result<()> {
    rustix::fs::renameat_with(old_dirfd, old_path, new_dirfd, new_path, flags)
}

/// `symlinkat`.
pub fn symlinkat(
    _: Creds<'_>,
    target: impl Arg,
    dirfd: impl AsFd,
    path: impl Arg,
) -> io::Result<()> {
    rustix::fs::symlinkat(target, dirfd, path)
}

/// `linkat`.
pub fn linkat(
    _: Creds<'_>,
    old_dirfd: impl AsFd,
    old_path: impl Arg,
    new_dirfd: impl AsFd,
    new_path: impl Arg,
    flags: AtFlags,
) -> io::Result<()> {
    rustix::fs::linkat(old_dirfd, old_path, new_dirfd, new_path, flags)
}

/// `readlinkat`.
pub fn readlinkat(
    _: Creds<'_>,
    dirfd: impl AsFd,
    path: impl Arg,
    reuse: Vec<u8>,
) -> io::Result<std::ffi::CString> {
    rustix::fs::readlinkat(dirfd, path, reuse)
}

/// `statx` of a path (looking it up needs search permission on every directory on the way).
pub fn statx(
    _: Creds<'_>,
    dirfd: impl AsFd,
    path: impl Arg,
    flags: AtFlags,
    mask: StatxFlags,
) -> io::Result<Statx> {
    rustix::fs::statx(dirfd, path, flags, mask)
}

/// `fchmodat`.
pub fn chmodat(
    _: Creds<'_>,
    dirfd: impl AsFd,
    path: impl Arg,
    mode: Mode,
    flags: AtFlags,
) -> io::Result<()> {
    rustix::fs::chmodat(dirfd, path, mode, flags)
}

/// `fchownat`.
pub fn chownat(
    _: Creds<'_>,
    dirfd: impl AsFd,
    path: impl Arg,
    owner: Option<Uid>,
    group: Option<Gid>,
    flags: AtFlags,
) -> io::Result<()> {
    rustix::fs::chownat(dirfd, path, owner, group, flags)
}

/// `utimensat`.
pub fn utimensat(
    _: Creds<'_>,
    dirfd: impl AsFd,
    path: impl Arg,
    times: &Timestamps,
    flags: AtFlags,
) -> io::Result<()> {
    rustix::fs::utimensat(dirfd, path, times, flags)
}

/// `fchmod`: only the owner (or the service) may.
pub fn fchmod(_: Creds<'_>, fd: impl AsFd, mode: Mode) -> io::Result<()> {
    rustix::fs::fchmod(fd, mode)
}

/// `fchown`: only the service may give a file away.
pub fn fchown(
    _: Creds<'_>,
    fd: impl AsFd,
    owner: Option<Uid>,
    group: Option<Gid>,
) -> io::Result<()> {
    rustix::fs::fchown(fd, owner, group)
}

/// `futimens`: only the owner, or whoever may write the file for the current time, may.
pub fn futimens(_: Creds<'_>, fd: impl AsFd, times: &Timestamps) -> io::Result<()> {
    rustix::fs::futimens(fd, times)
}

/// `getxattr`.
pub fn getxattr(
    _: Creds<'_>,
    path: impl Arg,
    name: impl Arg,
    value: &mut [u8],
) -> io::Result<usize> {
    rustix::fs::getxattr(path, name, value)
}

/// `getxattr` of a null buffer: the value's size.
pub fn getxattr_query(_: Creds<'_>, path: impl Arg, name: impl Arg) -> io::Result<usize> {
    rustix::fs::getxattr_query(path, name)
}

/// `lgetxattr`.
pub fn lgetxattr(
    _: Creds<'_>,
    path: impl Arg,
    name: impl Arg,
    value: &mut [u8],
) -> io::Result<usize> {
    rustix::fs::lgetxattr(path, name, value)
}

/// `lgetxattr` of a null buffer: the value's size.
pub fn lgetxattr_query(_: Creds<'_>, path: impl Arg, name: impl Arg) -> io::Result<usize> {
    rustix::fs::lgetxattr_query(path, name)
}

/// `fgetxattr`: the kernel checks read permission (or a capability) at each call.
pub fn fgetxattr(
    _: Creds<'_>,
    fd: impl AsFd,
    name: impl Arg,
    value: &mut [u8],
) -> io::Result<usize> {
    rustix::fs::fgetxattr(fd, name, value)
}

/// `fgetxattr` of a null buffer: the value's size.
pub fn fgetxattr_query(_: Creds<'_>, fd: impl AsFd, name: impl Arg) -> io::Result<usize> {
    rustix::fs::fgetxattr_query(fd, name)
}

/// `listxattr`.
pub fn listxattr(_: Creds<'_>, path: impl Arg, list: &mut [u8]) -> io::Result<usize> {
    rustix::fs::listxattr(path, list)
}

/// `llistxattr`: the list of a symlink itself, not of what it points to.
pub fn llistxattr(_: Creds<'_>, path: impl Arg, list: &mut [u8]) -> io::Result<usize> {
    rustix::fs::llistxattr(path, list)
}

/// `llistxattr` of a null buffer: the list's size.
pub fn llistxattr_query(_: Creds<'_>, path: impl Arg) -> io::Result<usize> {
    rustix::fs::llistxattr_query(path)
}

/// `listxattr` of a null buffer: the list's size.
pub fn listxattr_query(_: Creds<'_>, path: impl Arg) -> io::Result<usize> {
    rustix::fs::listxattr_query(path)
}

/// `flistxattr`: which names show depends on the caller (`trusted.` only to the service).
pub fn flistxattr(_: Creds<'_>, fd: impl AsFd, list: &mut [u8]) -> io::Result<usize> {
    rustix::fs::flistxattr(fd, list)
}

/// `flistxattr` of a null buffer: the list's size.
pub fn flistxattr_query(_: Creds<'_>, fd: impl AsFd) -> io::Result<usize> {
    rustix::fs::flistxattr_query(fd)
}

/// `setxattr`.
pub fn setxattr(
    _: Creds<'_>,
    path: impl Arg,
    name: impl Arg,
    value: &[u8],
    flags: XattrFlags,
) -> io::Result<()> {
    rustix::fs::setxattr(path, name, value, flags)
}

/// `fsetxattr`: the kernel checks write permission (or a capability) at each call.
pub fn fsetxattr(
    _: Creds<'_>,
    fd: impl AsFd,
    name: impl Arg,
    value: &[u8],
    flags: XattrFlags,
) -> io::Result<()> {
    rustix::fs::fsetxattr(fd, name, value, flags)
}

/// `removexattr`.
pub fn removexattr(_: Creds<'_>, path: impl Arg, name: impl Arg) -> io::Result<()> {
    rustix::fs::removexattr(path, name)
}

/// `fremovexattr`: the kernel checks write permission (or a capability) at each call.
pub fn fremovexattr(_: Creds<'_>, fd: impl AsFd, name: impl Arg) -> io::Result<()> {
    rustix::fs::fremovexattr(fd, name)
}

/// `inotify_add_watch`: the watched directory must be readable.
pub fn inotify_add_watch(
    _: Creds<'_>,
    inotify: impl AsFd,
    path: impl Arg,
    flags: inotify::WatchFlags,
) -> io::Result<i32> {
    inotify::add_watch(inotify, path, flags)
}

/// The thread's effective uid.
pub fn effective_uid(_: Creds<'_>) -> u32 {
    rustix::process::geteuid().as_raw()
}
