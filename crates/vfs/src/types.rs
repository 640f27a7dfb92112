use std::time::{SystemTime, UNIX_EPOCH};

use crate::{VfsError, VfsResult, errno};

/// What the caller will do with the data of an opened object.
///
/// Metadata (stat, xattrs, times) is available through every handle. On a directory, any
/// access other than `MetadataOnly` opens it for listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Metadata only; needs no read or write permission on the object.
    MetadataOnly,
    /// Read the data.
    Read,
    /// Write the data (write, set the length, allocate, sync).
    Write,
    /// Both.
    ReadWrite,
}

impl Access {
    /// Whether handles with this access may read data.
    pub const fn can_read(self) -> bool {
        matches!(self, Self::Read | Self::ReadWrite)
    }

    /// Whether handles with this access may change data.
    pub const fn can_write(self) -> bool {
        matches!(self, Self::Write | Self::ReadWrite)
    }
}

/// What to do when the object exists or does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Disposition {
    /// Open it; fail with `NotFound` if it does not exist.
    Open,
    /// Create it; fail with `AlreadyExists` if the name is taken.
    Create,
    /// Open it, or create it if it does not exist.
    OpenOrCreate,
    /// Open and truncate it; fail with `NotFound` if it does not exist.
    Overwrite,
    /// Open and truncate it, or create it if it does not exist.
    OverwriteOrCreate,
}

impl Disposition {
    /// Whether an existing object is truncated.
    pub const fn truncates(self) -> bool {
        matches!(self, Self::Overwrite | Self::OverwriteOrCreate)
    }
}

/// What the caller requires the object to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A non-directory (`IsADirectory` otherwise); creates a regular file.
    File,
    /// A directory (`NotADirectory` otherwise); creates a directory.
    Directory,
    /// Whatever is there; creates a regular file.
    Any,
}

/// The parameters of [`Vfs::open`](crate::Vfs::open).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OpenRequest {
    /// What the handle may do with the data.
    pub access: Access,
    /// Open, create, or both, and whether to truncate.
    pub disposition: Disposition,
    /// What the object must be, and what to create.
    pub kind: Kind,
    /// Permission bits for a created object (before the process umask on POSIX).
    pub create_mode: u32,
}

impl OpenRequest {
    /// Rejects combinations no back end can honour: truncating a directory.
    pub fn validate(&self) -> VfsResult<()> {
        if self.kind == Kind::Directory && self.disposition.truncates() {
            return Err(VfsError::Io(errno::EINVAL));
        }
        Ok(())
    }
}

/// A level of byte-range lock in the host's lock table ([`crate::VfsFile::set_host_lock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum HostLock {
    /// No lock.
    None,
    /// A read lock, which other holders may share. A handle that cannot read holds none,
    /// after checking that no other holder's write lock conflicts.
    Shared,
    /// A write lock, which no other holder may overlap. A handle that cannot write holds a
    /// read lock instead (which still keeps other holders from writing), after checking that
    /// no other holder's lock conflicts.
    Exclusive,
}

/// A Linux file lease on a handle ([`crate::VfsFile::set_kernel_lease`]): while held, another
/// process's conflicting open (any open for `Write`, one for writing or truncating for
/// `Read`) waits until the holder, told by a signal, lets go or the kernel's
/// `lease-break-time` passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum KernelLease {
    None,
    /// Held only on a descriptor opened read-only, while no descriptor of the file writes.
    Read,
    /// Held only while no other descriptor of the file is open.
    Write,
}

/// How names are matched against directory entries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CaseSensitivity {
    /// Names match only as spelled, as the Linux kernel compares them.
    Sensitive,
    /// A name that does not exist as spelled designates an entry equal to it under Unicode
    /// simple case folding, as on Windows (see [`casefold`](crate::casefold)). Creating a name
    /// that such an entry matches opens or collides with that entry. The default for shares.
    #[default]
    Insensitive,
}

/// The type of a file-system object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileType {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A symbolic link (seen only when not following it).
    Symlink,
    /// A FIFO, socket or device node.
    Other,
}

/// A point in time: seconds and nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timespec {
    /// Seconds since 1970-01-01T00:00:00Z; negative before it.
    pub sec: i64,
    /// Nanoseconds within the second, below 1,000,000,000.
    pub nsec: u32,
}

impl Timespec {
    /// The current wall-clock time.
    pub fn now() -> Self {
        Self::from_system_time(SystemTime::now())
    }

    /// Converts a `SystemTime`, saturating at the ends of the `i64` range.
    pub fn from_system_time(time: SystemTime) -> Self {
        match time.duration_since(UNIX_EPOCH) {
            Ok(after) => Self {
                sec: i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
                nsec: after.subsec_nanos(),
            },
            Err(before) => {
                let before = before.duration();
                let sec = i64::try_from(before.as_secs()).unwrap_or(i64::MAX);
                match before.subsec_nanos() {
                    0 => Self { sec: -sec, nsec: 0 },
                    nanos => Self {
                        sec: (-sec).saturating_sub(1),
                        nsec: 1_000_000_000 - nanos,
                    },
                }
            }
        }
    }
}

/// Metadata of one object, as `statx` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileStat {
    /// What the object is.
    pub file_type: FileType,
    /// Logical size in bytes (for a symlink, the length of its target).
    pub size: u64,
    /// Bytes of storage allocated.
    pub allocated: u64,
    /// Inode number, unique within `dev`.
    pub ino: u64,
    /// Device the object lives on.
    pub dev: u64,
    /// Number of hard links.
    pub nlink: u64,
    /// `st_mode`: file-type and permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Last access.
    pub atime: Timespec,
    /// Last data change.
    pub mtime: Timespec,
    /// Last metadata change.
    pub ctime: Timespec,
    /// Creation, where the file system records it.
    pub btime: Option<Timespec>,
}

/// File-system capacity and identity, as `statfs` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FsStat {
    /// Preferred I/O block size.
    pub block_size: u64,
    /// The unit of the block counts below.
    pub fragment_size: u64,
    /// Size of the file system, in fragments.
    pub total_blocks: u64,
    /// Free fragments.
    pub free_blocks: u64,
    /// Free fragments available to unprivileged users.
    pub avail_blocks: u64,
    /// Longest name, in bytes.
    pub max_name_len: u64,
    /// File-system identifier.
    pub fs_id: u64,
    /// `statfs` magic number of the file-system type (0 when there is none).
    pub fs_type: u64,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DirEntry {
    /// The entry's name (a valid [`VfsPath`](crate::VfsPath) component).
    pub name: String,
    /// Its inode number.
    pub ino: u64,
    /// Its type, not following symlinks.
    pub file_type: FileType,
}

/// `st_mode` file-type bits of a directory.
pub const S_IFDIR: u32 = 0o040_000;
/// `st_mode` file-type bits of a regular file.
pub const S_IFREG: u32 = 0o100_000;
/// `st_mode` file-type bits of a symbolic link.
pub const S_IFLNK: u32 = 0o120_000;
/// `st_mode` mask of the file-type bits.
pub const S_IFMT: u32 = 0o170_000;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn timespec_from_system_time() {
        let after = UNIX_EPOCH + Duration::new(1_700_000_000, 5);
        assert_eq!(
            Timespec::from_system_time(after),
            Timespec {
                sec: 1_700_000_000,
                nsec: 5
            }
        );
        let before = UNIX_EPOCH - Duration::new(1, 250_000_000);
        assert_eq!(
            Timespec::from_system_time(before),
            Timespec {
                sec: -2,
                nsec: 750_000_000
            }
        );
        let whole = UNIX_EPOCH - Duration::from_secs(3);
        assert_eq!(
            Timespec::from_system_time(whole),
            Timespec { sec: -3, nsec: 0 }
        );
    }

    #[test]
    fn directories_cannot_be_truncated() {
        let request = |kind, disposition| OpenRequest {
            access: Access::ReadWrite,
            disposition,
            kind,
            create_mode: 0o644,
        };
        assert_eq!(
            request(Kind::Directory, Disposition::Overwrite).validate(),
            Err(VfsError::Io(errno::EINVAL))
        );
        assert_eq!(
            request(Kind::Directory, Disposition::OverwriteOrCreate).validate(),
            Err(VfsError::Io(errno::EINVAL))
        );
        assert!(
            request(Kind::Directory, Disposition::OpenOrCreate)
                .validate()
                .is_ok()
        );
        assert!(
            request(Kind::Any, Disposition::Overwrite)
                .validate()
                .is_ok()
        );
    }
}

/// Whose quota a record is: a Unix user's or a Unix group's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QuotaKind {
    User,
    Group,
}

/// A user's or group's quota record on the file system holding the share, in bytes. A limit
/// of 0 is none, as Linux keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quota {
    /// Bytes charged to the user or group.
    pub used: u64,
    /// Soft limit (the warning threshold of Windows).
    pub soft_limit: u64,
    /// Hard limit: writes beyond it fail with `NoSpace`.
    pub hard_limit: u64,
}
