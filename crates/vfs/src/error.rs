/// The result of every VFS operation.
pub type VfsResult<T> = Result<T, VfsError>;

/// Why a VFS operation failed, in protocol-neutral terms; the server maps these to NTSTATUS in
/// one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum VfsError {
    /// The last component of the path does not exist (its parent does).
    #[error("not found")]
    NotFound,
    /// A directory on the way to the last component does not exist or is not a directory.
    #[error("parent directory not found")]
    ParentNotFound,
    /// A directory was required and the object is something else.
    #[error("not a directory")]
    NotADirectory,
    /// A non-directory was required and the object is a directory.
    #[error("is a directory")]
    IsADirectory,
    /// The name to create is taken (by any kind of object, including a symlink).
    #[error("already exists")]
    AlreadyExists,
    /// The file system or the handle's access refused the operation.
    #[error("permission denied")]
    PermissionDenied,
    /// A directory to remove or replace still has entries.
    #[error("directory not empty")]
    NotEmpty,
    /// A name the VFS or the file system cannot represent.
    #[error("invalid name")]
    InvalidName,
    /// A name or path longer than the file system allows.
    #[error("name too long")]
    NameTooLong,
    /// Resolution would leave the share (a symlink out of it, or too many symlinks).
    #[error("outside the share")]
    OutsideShare,
    /// The file system is full, a quota is exhausted, or a file would exceed the largest size.
    #[error("no space left")]
    NoSpace,
    /// The file system is mounted read-only.
    #[error("read-only file system")]
    ReadOnlyFs,
    /// The process or the system ran out of file descriptors.
    #[error("too many open files")]
    TooManyOpenFiles,
    /// The object is in use (a mount point, the share root, a running executable).
    #[error("busy")]
    Busy,
    /// Another program holds a kernel lease on the file (a local process's Linux file lease,
    /// the NFS server's delegation), which the call has started breaking: the same call
    /// succeeds once the holder lets go, within the kernel's `lease-break-time`.
    #[error("a lease on the file is being broken")]
    LeaseBreaking,
    /// A rename across file systems.
    #[error("cross-device")]
    CrossDevice,
    /// The file system does not support the operation.
    #[error("unsupported")]
    Unsupported,
    /// The arguments do not make a valid request for this object (a WRITE that is no AfpInfo
    /// to a Mac's AFP_AfpInfo stream).
    #[error("invalid argument")]
    InvalidArgument,
    /// The object has a fixed size it cannot grow beyond (a Mac's 60-byte AFP_AfpInfo stream).
    #[error("fixed size exceeded")]
    FixedSize,
    /// Any other failure, with its Linux errno value.
    #[error("I/O error (errno {0})")]
    Io(i32),
}

/// Linux errno values that back ends report through [`VfsError::Io`], so that every back end
/// reports the same number for the same failure.
pub mod errno {
    /// `EIO`: an input/output error.
    pub const EIO: i32 = 5;
    /// `EINVAL`: an invalid combination of arguments (e.g. moving a directory into itself).
    pub const EINVAL: i32 = 22;
}
