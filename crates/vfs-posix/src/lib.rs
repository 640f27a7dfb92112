//! Linux back end of the smb3d VFS.
//!
//! [`PosixVfs`] opens the share root once and resolves every path below it with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, or, where the kernel lacks `openat2`,
//! with a component-by-component `O_NOFOLLOW` walk that is just as confined. Operations on the
//! last component (`unlinkat`, `renameat2`, `mkdirat`, `symlinkat`) act relative to a parent
//! opened that way, so no symlink or concurrent rename can take them out of the share.
//! Everything is `O_CLOEXEC` and closed on drop. rustix wraps the system calls; those whose
//! outcome depends on the thread's credentials are made through [`sys`], which takes the proof
//! that the credentials are settled. The one `unsafe` blocks are the calls rustix has no
//! wrapper for: the `FICLONERANGE` ioctl (`copy.rs`), `getxattrat` and `preadv2` into a
//! buffer's unzeroed spare capacity (`file.rs`), fanotify
//! with `open_by_handle_at` (`outside.rs`, changes made by other processes) and byte-range
//! OFD locks (`host_lock.rs`, locks that local processes see).
//!
//! Names ignore case by default ([`CaseSensitivity`]): a path that exists as spelled costs
//! what it would cost without the option; a component missing as spelled is looked for by
//! listing its parent, which was itself opened the confined way, or in the cached names of
//! a large parent ([`ListingCacheLimits`]).
#![deny(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

mod caseless;
mod copy;
mod errno;
mod file;
mod host_lock;
mod kernel_lease;
mod listing_cache;
mod outside;
mod quota;
mod resolve;
mod stat;
pub mod sys;

use std::path::Path;
use std::sync::Arc;

use rustix::fd::{AsFd, AsRawFd, OwnedFd};

use rustix::fs::{
    AtFlags, CWD, Mode, OFlags, RenameFlags, ResolveFlags, fstat, fstatfs, fstatvfs, fsync,
};
use rustix::io::Errno;
use smb3d_credentials::{Creds, settled};
use smb3d_vfs::backend::{
    caseless_rename_target, check_symlink_target, open_caseless, retry_caseless,
    validate_symlink_target,
};
use smb3d_vfs::casefold::resolve_path;
use smb3d_vfs::{
    Access, CaseSensitivity, Credentials, FileStat, FileType, FsStat, Kind, OpenRequest, Opened,
    OutsideSink, OutsideWatch, Quota, QuotaKind, Timespec, Vfs, VfsError, VfsPath, VfsResult,
};

use crate::caseless::NameRules;
use crate::errno::{map_errno, map_resolve_errno};
pub use crate::file::PosixFile;
pub use crate::listing_cache::ListingCacheLimits;
pub use crate::resolve::Resolver;
use crate::resolve::{DirFd, Root};
use crate::stat::statx_fd;

/// Flags for opens that may touch data: never acquire a controlling terminal, never block on
/// a FIFO without a peer.
const DATA_OPEN: OFlags = OFlags::NOCTTY.union(OFlags::NONBLOCK);

/// A share rooted at a directory of the local file system.
pub struct PosixVfs {
    root: Root,
    names: NameRules,
    /// Whether [`Vfs::run_as`] switches to the user's credentials (the server runs as root).
    switch_credentials: bool,
    /// Whether the share's file system clones (probed when the share is opened).
    can_clone: bool,
    /// Whether the share's file system records who owns a file (see [`OWNERLESS`]).
    records_owners: bool,
    /// Whether the host watch drops changes made by other smb3d processes of this host (a
    /// cluster node: theirs arrive through the cluster).
    ignore_other_nodes: bool,
}

/// `statfs` types of file systems that record no owners (every file shows the mount's uid):
/// FAT (`MSDOS_SUPER_MAGIC`), exFAT, and NTFS (the old driver and ntfs3).
const OWNERLESS: [u32; 4] = [0x4d44, 0x2011_bab0, 0x5346_544e, 0x7366_746e];

/// How much earlier than the clock read just before `mkdirat` a new directory's birth time may
/// be: file systems store it as coarsely as FAT's 10 ms, and the kernel's clock lags the
/// process's by up to a tick.
const BIRTH_SLACK_SECS: i64 = 1;

impl PosixVfs {
    /// Opens the share root (`O_PATH | O_DIRECTORY`), using `openat2` if the kernel has it.
    pub fn new(root: &Path) -> VfsResult<Self> {
        settled(|creds| {
            let fd = open_root(creds, root)?;
            let probe = sys::openat2(
                creds,
                &fd,
                ".",
                OFlags::PATH | OFlags::CLOEXEC,
                Mode::empty(),
                ResolveFlags::BENEATH,
            );
            // Seccomp filters in some container runtimes answer unknown calls with EPERM.
            let resolver = match probe {
                Err(Errno::NOSYS | Errno::PERM) => Resolver::Walk,
                _ => Resolver::Openat2,
            };
            Ok(Self::opened(creds, fd, resolver))
        })
    }

    /// Opens the share root and resolves paths with the given method (tests use this to run
    /// the `openat2` fallback on kernels that have `openat2`).
    pub fn with_resolver(root: &Path, resolver: Resolver) -> VfsResult<Self> {
        settled(|creds| Ok(Self::opened(creds, open_root(creds, root)?, resolver)))
    }

    /// The share whose root is open as `fd`, with what its file system can do.
    fn opened(creds: Creds<'_>, fd: rustix::fd::OwnedFd, resolver: Resolver) -> Self {
        let can_clone = copy::probe_cloning(creds, fd.as_fd());
        let records_owners = records_owners(&fd);
        Self {
            root: Root::new(fd, resolver),
            names: default_name_rules(),
            switch_credentials: smb3d_credentials::can_switch(),
            can_clone,
            records_owners,
            ignore_other_nodes: false,
        }
    }

    /// This share with names matched under `case` (by default they ignore case).
    #[must_use]
    pub fn with_case_sensitivity(mut self, case: CaseSensitivity) -> Self {
        self.names.case = case;
        self
    }

    /// This share with the cache of large directories' names that case-insensitive lookups
    /// use bounded by `limits`, or with no such cache (`None`). By default it has one with
    /// [`ListingCacheLimits::default`].
    #[must_use]
    pub fn with_listing_cache(mut self, limits: Option<ListingCacheLimits>) -> Self {
        self.names = self.names.with_cache(limits);
        self
    }

    /// This share with [`Vfs::run_as`] switching credentials (`true`, possible only as root)
    /// or running everything as the server's own user (`false`).
    #[must_use]
    pub fn with_credential_switching(mut self, switch: bool) -> Self {
        self.switch_credentials = switch && smb3d_credentials::can_switch();
        self
    }

    /// This share on a cluster node (`true`): its host watch drops changes made by other smb3d
    /// processes of this host, other nodes sharing its file system, whose changes arrive
    /// through the cluster.
    #[must_use]
    pub fn with_other_nodes_ignored(mut self, ignore: bool) -> Self {
        self.ignore_other_nodes = ignore;
        self
    }

    /// How this share resolves paths.
    pub fn resolver(&self) -> Resolver {
        self.root.resolver()
    }

    /// How this share matches names.
    pub fn case_sensitivity(&self) -> CaseSensitivity {
        self.names.case
    }

    /// The real spelling of `path` when names ignore case (see [`resolve_path`]). Every
    /// directory it lists is opened with the confined resolution.
    fn real_path(&self, creds: Creds<'_>, path: &VfsPath) -> Option<VfsPath> {
        resolve_path(
            path,
            |dir| self.root.open_dir(creds, dir).ok(),
            |dir, name| self.names.find(creds, dir, name),
        )
    }

    /// The real spelling of `path` if names ignore case and it differs; `None`: use `path`.
    fn spelled(&self, creds: Creds<'_>, path: &VfsPath) -> Option<VfsPath> {
        match self.names.case {
            CaseSensitivity::Sensitive => None,
            CaseSensitivity::Insensitive => self.real_path(creds, path),
        }
    }

    /// Whether two directory paths resolve to the same directory.
    fn same_directory(&self, creds: Creds<'_>, a: &VfsPath, b: &VfsPath) -> bool {
        if a == b {
            return true;
        }
        let identity = |path| {
            let dir = self.root.open_dir(creds, path).ok()?;
            let stat = fstat(&dir).ok()?;
            Some((stat.st_dev, stat.st_ino))
        };
        matches!((identity(a), identity(b)), (Some(a), Some(b)) if a == b)
    }

    /// Tells a missing last component (`NotFound`, or `NotADirectory` for `ENOTDIR`) from a
    /// missing or non-directory parent (`ParentNotFound`), which the kernel reports alike.
    fn classify(&self, creds: Creds<'_>, path: &VfsPath, errno: Errno) -> VfsError {
        if !matches!(errno, Errno::NOENT | Errno::NOTDIR) {
            return map_resolve_errno(errno);
        }
        let Some((parent, _)) = path.parent_and_name() else {
            return map_resolve_errno(errno);
        };
        match self.root.open_dir(creds, &parent) {
            Ok(_) if errno == Errno::NOENT => VfsError::NotFound,
            Ok(_) => VfsError::NotADirectory,
            Err(error) => parent_error(error),
        }
    }

    fn parent_dir(&self, creds: Creds<'_>, parent: &VfsPath) -> VfsResult<DirFd<'_>> {
        self.root.open_dir(creds, parent).map_err(parent_error)
    }

    fn open_existing(
        &self,
        creds: Creds<'_>,
        path: &VfsPath,
        req: &OpenRequest,
        truncate: bool,
    ) -> VfsResult<(PosixFile, FileStat)> {
        let listing = OFlags::RDONLY | OFlags::DIRECTORY;
        let (flags, path_only) = match (req.kind, req.access) {
            (Kind::Directory, Access::MetadataOnly) => (OFlags::PATH | OFlags::DIRECTORY, true),
            (Kind::Directory, _) => (listing, false),
            // Truncation needs a writable descriptor; the handle still enforces `access`.
            (_, Access::MetadataOnly) if truncate => (OFlags::WRONLY | DATA_OPEN, false),
            (_, Access::MetadataOnly) => (OFlags::PATH, true),
            (_, access) => (data_mode(access) | DATA_OPEN, false),
        };
        let flags = if truncate {
            flags | OFlags::TRUNC
        } else {
            flags
        };
        let (fd, path_only) = match self.root.open(creds, path, flags, Mode::empty()) {
            // Directories open for listing whatever data access was asked.
            Err(Errno::ISDIR) if req.kind == Kind::Any && !truncate => {
                (self.root.open(creds, path, listing, Mode::empty()), false)
            }
            opened => (opened, path_only),
        };
        let fd = fd.map_err(|errno| self.classify(creds, path, errno))?;
        // The whole status, not just the type: the caller needs it next.
        let stat = statx_fd(&fd).map_err(map_errno)?;
        let file_type = stat.file_type;
        match (req.kind, file_type) {
            (Kind::File, FileType::Directory) => Err(VfsError::IsADirectory),
            (Kind::Directory, FileType::File | FileType::Symlink | FileType::Other) => {
                Err(VfsError::NotADirectory)
            }
            _ => Ok((
                PosixFile::new(fd, req.access, file_type, path_only, self.names.clone()),
                stat,
            )),
        }
    }

    /// Creates `path`. A new file is opened by the `O_CREAT | O_EXCL` that makes it. A new
    /// directory can only be opened by name after `mkdirat`, and whoever may write its parent
    /// can rename another directory to that name in between (possibly one the creator may not
    /// read, which the service would then open): what is opened must show that it is the one
    /// made, or it is `AlreadyExists` and neither directory is touched. Returns the new
    /// directory's status, which that check reads.
    fn create_new(
        &self,
        creds: Creds<'_>,
        path: &VfsPath,
        req: &OpenRequest,
    ) -> VfsResult<(PosixFile, Option<FileStat>)> {
        let Some((parent, name)) = path.parent_and_name() else {
            return Err(VfsError::AlreadyExists);
        };
        let mode = Mode::from_bits_truncate(req.create_mode & 0o7777);
        if req.kind == Kind::Directory {
            let dir = self.parent_dir(creds, &parent)?;
            // The thread's effective uid is whoever it acts for: the owner of what it makes.
            let creator = sys::effective_uid(creds);
            let made_after = birth_floor();
            sys::mkdirat(creds, &dir, name, mode).map_err(map_errno)?;
            let path_only = req.access == Access::MetadataOnly;
            let access = if path_only {
                OFlags::PATH
            } else {
                OFlags::RDONLY
            };
            // Reopened without following: a symlink swapped in since the mkdirat is refused.
            let flags = access | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let reopen = || sys::openat(creds, &dir, name, flags, Mode::empty());
            let (fd, for_creator) = match reopen() {
                // A parent's default POSIX ACL can leave the creator without read permission
                // on the directory it just made; its creator gets what it asked for all the
                // same (as a new file's O_CREAT open does), so the service opens it.
                Err(Errno::ACCESS) if self.switch_credentials => (
                    smb3d_credentials::as_service(reopen).map_err(map_errno)?,
                    true,
                ),
                result => (result.map_err(map_errno)?, false),
            };
            let mut stat = statx_fd(&fd).map_err(map_errno)?;
            if !is_new_directory(&stat, creator, made_after, self.records_owners) {
                return Err(VfsError::AlreadyExists);
            }
            let below_acl = || has_default_acl(creds, &dir);
            if let Some(exact) =
                exact_mode(creds, &fd, stat.mode, req.create_mode, true, below_acl)?
            {
                stat.mode = exact;
            }
            let file = PosixFile::new(
                fd,
                req.access,
                FileType::Directory,
                path_only,
                self.names.clone(),
            );
            let file = if for_creator {
                file.opened_for_creator()
            } else {
                file
            };
            return Ok((file, Some(stat)));
        }
        // A new file grants any access whatever its mode; metadata-only needs no more.
        let flags = data_mode(req.access) | OFlags::CREATE | OFlags::EXCL | DATA_OPEN;
        let fd = self
            .root
            .open(creds, path, flags, mode)
            .map_err(parent_error)?;
        let made = statx_fd(&fd).map_err(map_errno)?.mode;
        let below_acl = || {
            self.parent_dir(creds, &parent)
                .is_ok_and(|dir| has_default_acl(creds, &dir))
        };
        exact_mode(creds, &fd, made, req.create_mode, false, below_acl)?;
        let file = PosixFile::new(fd, req.access, FileType::File, false, self.names.clone());
        Ok((file, None))
    }
}

impl PosixVfs {
    fn unlink_exact(&self, creds: Creds<'_>, path: &VfsPath) -> VfsResult<()> {
        let (parent, name) = path.parent_and_name().ok_or(VfsError::Busy)?;
        let dir = self.parent_dir(creds, &parent)?;
        match sys::unlinkat(creds, &dir, name, AtFlags::empty()) {
            Err(Errno::ISDIR) => sys::unlinkat(creds, &dir, name, AtFlags::REMOVEDIR),
            result => result,
        }
        .map_err(|errno| match errno {
            // Some file systems report a non-empty directory to rmdir as EEXIST.
            Errno::EXIST => VfsError::NotEmpty,
            other => map_errno(other),
        })
    }

    fn rename_exact(
        &self,
        creds: Creds<'_>,
        from: &VfsPath,
        to: &VfsPath,
        replace: bool,
    ) -> VfsResult<()> {
        let (Some((from_parent, from_name)), Some((to_parent, to_name))) =
            (from.parent_and_name(), to.parent_and_name())
        else {
            return Err(VfsError::Busy);
        };
        let from_dir = self.parent_dir(creds, &from_parent)?;
        let to_dir = self.parent_dir(creds, &to_parent)?;
        let flags = if replace {
            RenameFlags::empty()
        } else {
            RenameFlags::NOREPLACE
        };
        sys::renameat_with(creds, &from_dir, from_name, &to_dir, to_name, flags).map_err(|errno| {
            match errno {
                Errno::EXIST if replace => VfsError::NotEmpty,
                other => map_errno(other),
            }
        })
    }
}

fn default_name_rules() -> NameRules {
    NameRules::new(
        CaseSensitivity::default(),
        Some(ListingCacheLimits::default()),
    )
}

fn open_root(creds: Creds<'_>, root: &Path) -> VfsResult<rustix::fd::OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    sys::openat(creds, CWD, root, flags, Mode::empty()).map_err(map_errno)
}

/// Whether the directory `stat` describes is the one `creator` has just made: the creator's
/// own where the file system `records_owners` (no one else can make a directory that is), and
/// born no earlier than `made_after` where it records births (an older one of the creator's is
/// not new either).
fn is_new_directory(
    stat: &FileStat,
    creator: u32,
    made_after: Timespec,
    records_owners: bool,
) -> bool {
    let owned = !records_owners || stat.uid == creator;
    let born = stat
        .btime
        .is_none_or(|born| (born.sec, born.nsec) >= (made_after.sec, made_after.nsec));
    owned && born
}

/// Whether the file system of `root` records owners.
fn records_owners(root: &rustix::fd::OwnedFd) -> bool {
    // The magic is a u32 that the kernel sign-extends into a long for some types.
    fstatfs(root).map_or(true, |fs| !OWNERLESS.contains(&(fs.f_type as u32)))
}

/// The earliest birth time a directory made from now on can show (see [`BIRTH_SLACK_SECS`]).
fn birth_floor() -> Timespec {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timespec {
        sec: i64::try_from(now.as_secs()).unwrap_or(i64::MAX) - BIRTH_SLACK_SECS,
        nsec: now.subsec_nanos(),
    }
}

fn data_mode(access: Access) -> OFlags {
    match access {
        Access::MetadataOnly | Access::Read => OFlags::RDONLY,
        Access::Write => OFlags::WRONLY,
        Access::ReadWrite => OFlags::RDWR,
    }
}

/// Gives a new file or directory the mode its creator asked for (`asked`), as Samba does by
/// running with umask 0: the process umask (the unit's 0022) must not cut a share's
/// `create_mask` 0660 to 0640. The creation already used `asked`, so the mode only ever widens
/// here to what was asked, on the descriptor, before the CREATE answers. Below a parent with a
/// default POSIX ACL the kernel ignored the umask and the ACL decides the permissions; only the
/// special bits asked for are added. A directory keeps the setgid bit a setgid parent gave it.
/// Returns the new mode when it changed.
fn exact_mode(
    creds: Creds<'_>,
    fd: &OwnedFd,
    made: u32,
    asked: u32,
    directory: bool,
    below_acl: impl FnOnce() -> bool,
) -> VfsResult<Option<u32>> {
    let made_bits = made & 0o7777;
    let inherited = if directory { made_bits & 0o2000 } else { 0 };
    let mut wanted = (asked & 0o7777) | inherited;
    if wanted == made_bits {
        return Ok(None);
    }
    let special = 0o7000;
    if below_acl() {
        wanted = made_bits | (asked & special);
        if wanted == made_bits {
            return Ok(None);
        }
    }
    let mode = Mode::from_bits_truncate(wanted);
    match sys::fchmod(creds, fd, mode) {
        // An O_PATH descriptor takes no fchmod; its /proc link names the same inode.
        Err(Errno::BADF) => sys::chmodat(
            creds,
            CWD,
            format!("/proc/self/fd/{}", fd.as_raw_fd()),
            mode,
            AtFlags::empty(),
        ),
        result => result,
    }
    .map_err(map_errno)?;
    Ok(Some((made & !0o7777) | wanted))
}

/// Whether `dir` has a default POSIX ACL, which then decides new entries' permissions.
fn has_default_acl(creds: Creds<'_>, dir: &DirFd<'_>) -> bool {
    // Read through /proc: the parent is an O_PATH descriptor, which fgetxattr refuses.
    let path = format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd());
    sys::getxattr_query(creds, path, "system.posix_acl_default").is_ok()
}

/// Maps a failure to resolve the directory a last component lives in.
fn parent_error(errno: Errno) -> VfsError {
    match errno {
        Errno::NOENT | Errno::NOTDIR => VfsError::ParentNotFound,
        other => map_resolve_errno(other),
    }
}

impl Vfs for PosixVfs {
    /// As root, the work runs with the user's credentials (see `smb3d_credentials`); a failure
    /// to switch runs nothing, so the work's own result stays unset and the caller reports it.
    fn run_as(&self, who: &Credentials, work: &mut dyn FnMut()) {
        if self.switch_credentials {
            if !smb3d_credentials::run_as(who.uid, who.gid, &who.groups, work) {
                tracing::error!(
                    uid = who.uid,
                    gid = who.gid,
                    "cannot switch to the user's credentials"
                );
            }
        } else {
            work();
        }
    }

    fn runs_as_users(&self) -> bool {
        self.switch_credentials
    }

    fn run_privileged(&self, work: &mut dyn FnMut()) {
        if self.switch_credentials {
            smb3d_credentials::as_service(work);
        } else {
            work();
        }
    }

    fn open(&self, path: &VfsPath, req: &OpenRequest) -> VfsResult<Opened> {
        req.validate()?;
        let ((file, stat), created) = settled(|creds| {
            open_caseless(
                self.names.case,
                path,
                req.disposition,
                |path, truncate| {
                    let (file, stat) = self.open_existing(creds, path, req, truncate)?;
                    Ok((file, Some(stat)))
                },
                |path| self.create_new(creds, path, req),
                |path| self.real_path(creds, path),
            )
        })?;
        Ok(Opened {
            file: Box::new(file),
            created,
            stat,
        })
    }

    fn stat(&self, path: &VfsPath) -> VfsResult<FileStat> {
        settled(|creds| {
            retry_caseless(
                self.names.case,
                path,
                &mut (),
                |(), path| {
                    let fd = self
                        .root
                        .open(creds, path, OFlags::PATH, Mode::empty())
                        .map_err(|errno| self.classify(creds, path, errno))?;
                    statx_fd(&fd).map_err(map_errno)
                },
                |(), path| self.real_path(creds, path),
            )
        })
    }

    fn open_link(&self, path: &VfsPath) -> VfsResult<Option<Opened>> {
        settled(|creds| {
            retry_caseless(
                self.names.case,
                path,
                &mut (),
                |(), path| {
                    let fd = self
                        .root
                        .open(creds, path, OFlags::PATH | OFlags::NOFOLLOW, Mode::empty())
                        .map_err(|errno| self.classify(creds, path, errno))?;
                    let stat = statx_fd(&fd).map_err(map_errno)?;
                    if stat.file_type != FileType::Symlink {
                        return Ok(None);
                    }
                    let file = PosixFile::new(
                        fd,
                        Access::MetadataOnly,
                        FileType::Symlink,
                        true,
                        self.names.clone(),
                    );
                    Ok(Some(Opened {
                        file: Box::new(file),
                        created: false,
                        stat: Some(stat),
                    }))
                },
                |(), path| self.real_path(creds, path),
            )
        })
    }

    fn unlink(&self, path: &VfsPath) -> VfsResult<()> {
        settled(|creds| {
            retry_caseless(
                self.names.case,
                path,
                &mut (),
                |(), path| self.unlink_exact(creds, path),
                |(), path| self.real_path(creds, path),
            )
        })
    }

    fn rename(&self, from: &VfsPath, to: &VfsPath, replace: bool) -> VfsResult<()> {
        settled(|creds| {
            if self.names.case == CaseSensitivity::Sensitive {
                return self.rename_exact(creds, from, to, replace);
            }
            let from = self.real_path(creds, from).unwrap_or_else(|| from.clone());
            let to = caseless_rename_target(&from, to, self.real_path(creds, to), |a, b| {
                self.same_directory(creds, a, b)
            })?;
            self.rename_exact(creds, &from, &to, replace)
        })
    }

    fn symlink(&self, target: &str, link: &VfsPath) -> VfsResult<()> {
        validate_symlink_target(target)?;
        settled(|creds| {
            let real = self.spelled(creds, link);
            let (parent, name) = real
                .as_ref()
                .unwrap_or(link)
                .parent_and_name()
                .ok_or(VfsError::AlreadyExists)?;
            let dir = self.parent_dir(creds, &parent)?;
            sys::symlinkat(creds, target, &dir, name).map_err(map_errno)
        })
    }

    fn check_symlink_target(&self, link: &VfsPath, target: &str) -> VfsResult<()> {
        settled(|creds| {
            let real = self.spelled(creds, link);
            let (dir, _) = real
                .as_ref()
                .unwrap_or(link)
                .parent_and_name()
                .ok_or(VfsError::Busy)?;
            // The kernel resolves the target as other programs will follow it: names as
            // spelled.
            check_symlink_target(target, |relative| {
                self.root
                    .open_from(creds, &dir, relative, OFlags::PATH)
                    .map(drop)
                    .map_err(map_resolve_errno)
            })
        })
    }

    fn read_link(&self, path: &VfsPath) -> VfsResult<Option<String>> {
        settled(|creds| {
            let real = self.spelled(creds, path);
            let (parent, name) = real
                .as_ref()
                .unwrap_or(path)
                .parent_and_name()
                .ok_or(VfsError::Busy)?;
            let dir = self.parent_dir(creds, &parent)?;
            match sys::readlinkat(creds, &dir, name, Vec::new()) {
                Ok(target) => Ok(Some(target.to_string_lossy().into_owned())),
                // Not a symlink.
                Err(Errno::INVAL) => Ok(None),
                Err(error) => Err(map_errno(error)),
            }
        })
    }

    fn can_clone(&self) -> bool {
        self.can_clone
    }

    fn subtree(&self, dir: &VfsPath) -> VfsResult<Arc<dyn Vfs>> {
        settled(|creds| {
            // Resolved like any path of the share: a directory that is a symlink out of it is
            // not found.
            let fd = self
                .root
                .open(creds, dir, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
                .map_err(|errno| self.classify(creds, dir, errno))?;
            // Not probed for cloning as a share is: the probe makes a file there, and a
            // snapshot is read-only.
            let records_owners = records_owners(&fd);
            let mut names = default_name_rules();
            names.case = self.names.case;
            Ok(Arc::new(Self {
                root: Root::new(fd, self.root.resolver()),
                names,
                switch_credentials: self.switch_credentials,
                can_clone: self.can_clone,
                records_owners,
                ignore_other_nodes: self.ignore_other_nodes,
            }) as Arc<dyn Vfs>)
        })
    }

    fn watch_outside(&self, sink: OutsideSink) -> Option<OutsideWatch> {
        // fanotify needs the service's capabilities, also when a user's work starts the watch
        // (a directory lease granted in a CREATE), and so does its reader thread.
        smb3d_credentials::privileged(|service| {
            outside::watch(service, self.root.fd(), self.ignore_other_nodes, sink)
        })
    }

    fn link(&self, existing: &VfsPath, new: &VfsPath) -> VfsResult<()> {
        settled(|creds| {
            let (existing_real, new_real) =
                (self.spelled(creds, existing), self.spelled(creds, new));
            let (Some((from_parent, from_name)), Some((to_parent, to_name))) = (
                existing_real.as_ref().unwrap_or(existing).parent_and_name(),
                new_real.as_ref().unwrap_or(new).parent_and_name(),
            ) else {
                return Err(VfsError::Busy);
            };
            let from_dir = self.parent_dir(creds, &from_parent)?;
            let to_dir = self.parent_dir(creds, &to_parent)?;
            sys::linkat(
                creds,
                &from_dir,
                from_name,
                &to_dir,
                to_name,
                AtFlags::empty(),
            )
            .map_err(map_errno)
        })
    }

    fn sync_dir(&self, path: &VfsPath) -> VfsResult<()> {
        settled(|creds| {
            retry_caseless(
                self.names.case,
                path,
                &mut (),
                |(), path| {
                    let dir = self
                        .root
                        .open(
                            creds,
                            path,
                            OFlags::RDONLY | OFlags::DIRECTORY,
                            Mode::empty(),
                        )
                        .map_err(|errno| self.classify(creds, path, errno))?;
                    fsync(&dir).map_err(map_errno)
                },
                |(), path| self.real_path(creds, path),
            )
        })
    }

    fn quota(&self, kind: QuotaKind, id: u32) -> VfsResult<Quota> {
        quota::get(self.root.fd(), kind, id)
    }

    fn set_quota_limits(&self, kind: QuotaKind, id: u32, soft: u64, hard: u64) -> VfsResult<()> {
        quota::set_limits(self.root.fd(), kind, id, soft, hard)
    }

    fn next_quota(&self, kind: QuotaKind, from: u32) -> VfsResult<Option<(u32, Quota)>> {
        quota::next(self.root.fd(), kind, from)
    }

    fn fs_stat(&self) -> VfsResult<FsStat> {
        // statvfs has the fsid as a number; only statfs has the type magic.
        let vfs = fstatvfs(self.root.fd()).map_err(map_errno)?;
        let fs = fstatfs(self.root.fd()).map_err(map_errno)?;
        Ok(FsStat {
            block_size: vfs.f_bsize,
            fragment_size: vfs.f_frsize,
            total_blocks: vfs.f_blocks,
            free_blocks: vfs.f_bfree,
            avail_blocks: vfs.f_bavail,
            max_name_len: vfs.f_namemax,
            fs_id: vfs.f_fsid,
            // The magic is a u32 that the kernel sign-extends into a long for some types.
            fs_type: u64::from(fs.f_type as u32),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Owners count where the file system records them, birth times where it keeps them.
    #[test]
    fn a_new_directory_is_the_creators_and_born_since_the_mkdirat() {
        let at = |sec| Timespec { sec, nsec: 0 };
        let made_after = at(1000);
        let stat = |uid, btime| FileStat {
            file_type: FileType::Directory,
            size: 0,
            allocated: 0,
            ino: 1,
            dev: 1,
            nlink: 2,
            mode: 0o40755,
            uid,
            gid: uid,
            atime: at(0),
            mtime: at(0),
            ctime: at(0),
            btime,
        };
        for (uid, btime, records_owners, new) in [
            (42, Some(at(1000)), true, true),
            (42, None, true, true),
            (43, Some(at(1001)), true, false),
            (42, Some(at(999)), true, false),
            (0, Some(at(1001)), false, true),
            (0, Some(at(999)), false, false),
        ] {
            assert_eq!(
                is_new_directory(&stat(uid, btime), 42, made_after, records_owners),
                new,
                "uid {uid}, born {btime:?}, owners recorded: {records_owners}"
            );
        }
    }
}
