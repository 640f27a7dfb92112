//! errno to [`VfsError`], in one place.

use rustix::io::Errno;
use smb3d_vfs::VfsError;

/// Maps the errno of a file-system call.
pub(crate) fn map_errno(errno: Errno) -> VfsError {
    match errno {
        Errno::NOENT | Errno::NODATA => VfsError::NotFound,
        Errno::NOTDIR => VfsError::NotADirectory,
        Errno::ISDIR => VfsError::IsADirectory,
        Errno::EXIST => VfsError::AlreadyExists,
        Errno::ACCESS | Errno::PERM => VfsError::PermissionDenied,
        Errno::NOTEMPTY => VfsError::NotEmpty,
        Errno::ILSEQ => VfsError::InvalidName,
        Errno::NAMETOOLONG => VfsError::NameTooLong,
        Errno::LOOP => VfsError::OutsideShare,
        Errno::NOSPC | Errno::DQUOT | Errno::FBIG => VfsError::NoSpace,
        Errno::ROFS => VfsError::ReadOnlyFs,
        Errno::MFILE | Errno::NFILE => VfsError::TooManyOpenFiles,
        Errno::BUSY | Errno::TXTBSY => VfsError::Busy,
        // A non-blocking open (or a change) of a file another program holds a lease or
        // delegation on: the kernel has told the holder to let go.
        Errno::AGAIN => VfsError::LeaseBreaking,
        Errno::XDEV => VfsError::CrossDevice,
        Errno::OPNOTSUPP => VfsError::Unsupported,
        other => VfsError::Io(other.raw_os_error()),
    }
}

/// Maps the errno of a path resolution, where `EXDEV` means that `RESOLVE_BENEATH` refused to
/// leave the share rather than a cross-device rename.
pub(crate) fn map_resolve_errno(errno: Errno) -> VfsError {
    match errno {
        Errno::XDEV => VfsError::OutsideShare,
        other => map_errno(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_table() {
        let table = [
            (Errno::NOENT, VfsError::NotFound),
            (Errno::NODATA, VfsError::NotFound),
            (Errno::NOTDIR, VfsError::NotADirectory),
            (Errno::ISDIR, VfsError::IsADirectory),
            (Errno::EXIST, VfsError::AlreadyExists),
            (Errno::ACCESS, VfsError::PermissionDenied),
            (Errno::PERM, VfsError::PermissionDenied),
            (Errno::NOTEMPTY, VfsError::NotEmpty),
            (Errno::ILSEQ, VfsError::InvalidName),
            (Errno::NAMETOOLONG, VfsError::NameTooLong),
            (Errno::LOOP, VfsError::OutsideShare),
            (Errno::NOSPC, VfsError::NoSpace),
            (Errno::DQUOT, VfsError::NoSpace),
            (Errno::FBIG, VfsError::NoSpace),
            (Errno::ROFS, VfsError::ReadOnlyFs),
            (Errno::MFILE, VfsError::TooManyOpenFiles),
            (Errno::NFILE, VfsError::TooManyOpenFiles),
            (Errno::BUSY, VfsError::Busy),
            (Errno::TXTBSY, VfsError::Busy),
            (Errno::AGAIN, VfsError::LeaseBreaking),
            (Errno::XDEV, VfsError::CrossDevice),
            (Errno::OPNOTSUPP, VfsError::Unsupported),
            (Errno::IO, VfsError::Io(5)),
            (Errno::INVAL, VfsError::Io(smb3d_vfs::errno::EINVAL)),
            (Errno::BADF, VfsError::Io(9)),
        ];
        for (errno, expected) in table {
            assert_eq!(map_errno(errno), expected, "{errno:?}");
        }
        assert_eq!(Errno::NOTSUP, Errno::OPNOTSUPP, "one errno on Linux");
        assert_eq!(Errno::IO.raw_os_error(), smb3d_vfs::errno::EIO);
    }

    #[test]
    fn resolution_errno_table() {
        assert_eq!(map_resolve_errno(Errno::XDEV), VfsError::OutsideShare);
        assert_eq!(map_resolve_errno(Errno::LOOP), VfsError::OutsideShare);
        assert_eq!(map_resolve_errno(Errno::NOENT), VfsError::NotFound);
        assert_eq!(map_resolve_errno(Errno::ACCESS), VfsError::PermissionDenied);
    }
}
