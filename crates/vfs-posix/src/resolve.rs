//! Confined path resolution: every path-based call goes through [`Root::open`].

use std::borrow::Cow;

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::{self, Errno};
use smb3d_credentials::Creds;
use smb3d_vfs::VfsPath;

use crate::sys;

/// How a [`PosixVfs`](crate::PosixVfs) resolves paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resolver {
    /// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: the kernel confines the
    /// whole resolution (Linux 5.6 and later).
    Openat2,
    /// A walk one component at a time with `O_NOFOLLOW`, reading and splicing symlinks
    /// itself, for kernels without `openat2`.
    Walk,
}

/// Linux `MAXSYMLINKS`, which the walk enforces as the kernel does.
const MAX_SYMLINKS: usize = 40;
/// `RESOLVE_BENEATH` fails with `EAGAIN` when a rename races with a `..` step; the kernel
/// asks callers to retry.
const RACE_RETRIES: usize = 64;

/// The share root, opened once, and the way paths below it are resolved.
pub(crate) struct Root {
    fd: OwnedFd,
    resolver: Resolver,
}

/// A directory to act in: the root itself, or one opened below it.
pub(crate) enum DirFd<'a> {
    Root(BorrowedFd<'a>),
    Opened(OwnedFd),
}

impl AsFd for DirFd<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Self::Root(fd) => *fd,
            Self::Opened(fd) => fd.as_fd(),
        }
    }
}

impl Root {
    pub(crate) fn new(fd: OwnedFd, resolver: Resolver) -> Self {
        Self { fd, resolver }
    }

    pub(crate) fn resolver(&self) -> Resolver {
        self.resolver
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Opens `path` with `flags` (`O_CLOEXEC` added), following symlinks only while they stay
    /// below the root: `EXDEV` for one that leaves it or is absolute, `ELOOP` for too many.
    /// The last component is followed unless `flags` has `O_NOFOLLOW` or `O_CREAT | O_EXCL`.
    pub(crate) fn open(
        &self,
        creds: Creds<'_>,
        path: &VfsPath,
        flags: OFlags,
        mode: Mode,
    ) -> io::Result<OwnedFd> {
        let flags = flags | OFlags::CLOEXEC;
        match self.resolver {
            Resolver::Openat2 => {
                let relative = if path.is_root() { "." } else { path.as_str() };
                self.open_beneath(creds, relative, flags, mode)
            }
            Resolver::Walk => self.walk(creds, components(path.components()), flags, mode),
        }
    }

    /// Opens `relative`, a path as a symlink target spells it (`..` and empty components
    /// included), from the directory `dir`, confined like [`open`](Self::open): a `..` of the
    /// root is `EXDEV`.
    pub(crate) fn open_from(
        &self,
        creds: Creds<'_>,
        dir: &VfsPath,
        relative: &str,
        flags: OFlags,
    ) -> io::Result<OwnedFd> {
        let flags = flags | OFlags::CLOEXEC;
        match self.resolver {
            Resolver::Openat2 if dir.is_root() => {
                self.open_beneath(creds, relative, flags, Mode::empty())
            }
            Resolver::Openat2 => {
                let joined = format!("{}/{relative}", dir.as_str());
                self.open_beneath(creds, &joined, flags, Mode::empty())
            }
            Resolver::Walk => {
                let path = dir.components().chain(relative.split('/'));
                self.walk(creds, components(path), flags, Mode::empty())
            }
        }
    }

    /// Opens the directory `path` for use as the `dirfd` of `*at` calls.
    pub(crate) fn open_dir(&self, creds: Creds<'_>, path: &VfsPath) -> io::Result<DirFd<'_>> {
        if path.is_root() {
            return Ok(DirFd::Root(self.fd.as_fd()));
        }
        self.open(creds, path, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
            .map(DirFd::Opened)
    }

    fn open_beneath(
        &self,
        creds: Creds<'_>,
        relative: &str,
        flags: OFlags,
        mode: Mode,
    ) -> io::Result<OwnedFd> {
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        let mut attempts = 0;
        loop {
            match sys::openat2(creds, &self.fd, relative, flags, mode, resolve) {
                Err(Errno::AGAIN | Errno::INTR) if attempts < RACE_RETRIES => attempts += 1,
                result => return result,
            }
        }
    }

    /// The `openat2` fallback. Every step is an `openat` with `O_NOFOLLOW` relative to a
    /// directory already held, and `..` pops that chain of held directories, so neither a
    /// symlink nor a concurrent rename can take it above the root.
    /// `pending` holds the path's components, last first.
    fn walk(
        &self,
        creds: Creds<'_>,
        mut pending: Vec<Cow<'_, [u8]>>,
        flags: OFlags,
        mode: Mode,
    ) -> io::Result<OwnedFd> {
        let exclusive_create = flags.contains(OFlags::CREATE | OFlags::EXCL);
        // The caller's O_NOFOLLOW keeps a symlink in the last component from being followed.
        let follow_last = !flags.contains(OFlags::NOFOLLOW) && !exclusive_create;
        let mut chain: Vec<OwnedFd> = Vec::new();
        if pending.is_empty() {
            pending.push(Cow::Borrowed(b"."));
        }
        let mut links = 0;
        while let Some(name) = pending.pop() {
            let last = pending.is_empty();
            let dir = chain.last().map_or(self.fd.as_fd(), AsFd::as_fd);
            let name: &[u8] = &name;
            match name {
                b"" | b"." if !last => continue,
                b".." => {
                    if chain.pop().is_none() {
                        return Err(Errno::XDEV);
                    }
                    if last {
                        pending.push(Cow::Borrowed(b"."));
                    }
                    continue;
                }
                _ => {}
            }
            let name = if name.is_empty() {
                b".".as_slice()
            } else {
                name
            };
            if !last {
                let step = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                match sys::openat(creds, dir, name, step, Mode::empty()) {
                    Ok(fd) => chain.push(fd),
                    Err(error @ (Errno::NOTDIR | Errno::LOOP)) => {
                        let target = read_link(creds, dir, name, error)?;
                        splice(&mut pending, target, &mut links)?;
                    }
                    Err(error) => return Err(error),
                }
                continue;
            }
            match sys::openat(creds, dir, name, flags | OFlags::NOFOLLOW, mode) {
                Ok(fd) if follow_last && flags.contains(OFlags::PATH) && is_symlink(&fd)? => {
                    let target = sys::readlinkat(creds, &fd, "", Vec::new())?.into_bytes();
                    splice(&mut pending, target, &mut links)?;
                }
                Ok(fd) => return Ok(fd),
                Err(error @ (Errno::NOTDIR | Errno::LOOP)) if follow_last => {
                    let target = read_link(creds, dir, name, error)?;
                    splice(&mut pending, target, &mut links)?;
                }
                Err(error) => return Err(error),
            }
        }
        // Every resolution ends with a last component, which returns above.
        Err(Errno::NOENT)
    }
}

/// A path's components as [`Root::walk`] takes them, last first.
fn components<'a>(path: impl DoubleEndedIterator<Item = &'a str>) -> Vec<Cow<'a, [u8]>> {
    path.rev()
        .map(|name| Cow::Borrowed(name.as_bytes()))
        .collect()
}

/// The target of `name` if it is a symlink; otherwise the error that made the walk look.
fn read_link(
    creds: Creds<'_>,
    dir: BorrowedFd<'_>,
    name: &[u8],
    error: Errno,
) -> io::Result<Vec<u8>> {
    match sys::readlinkat(creds, dir, name, Vec::new()) {
        Ok(target) => Ok(target.into_bytes()),
        Err(Errno::INVAL) => Err(error),
        Err(other) => Err(other),
    }
}

fn is_symlink(fd: &OwnedFd) -> io::Result<bool> {
    let stat = rustix::fs::fstat(fd)?;
    Ok(rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Symlink)
}

/// Replaces a followed symlink by its target's components, with the kernel's limits:
/// absolute targets leave the share, empty ones name nothing.
fn splice(pending: &mut Vec<Cow<'_, [u8]>>, target: Vec<u8>, links: &mut usize) -> io::Result<()> {
    *links += 1;
    if *links > MAX_SYMLINKS {
        return Err(Errno::LOOP);
    }
    if target.first() == Some(&b'/') {
        return Err(Errno::XDEV);
    }
    if target.is_empty() {
        return Err(Errno::NOENT);
    }
    pending.extend(
        target
            .split(|&byte| byte == b'/')
            .rev()
            .map(|name| Cow::Owned(name.to_vec())),
    );
    Ok(())
}
