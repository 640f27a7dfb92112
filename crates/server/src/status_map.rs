//! The one place where back-end errors become NTSTATUS values.

use smb3d_dtyp::NtStatus;
use smb3d_vfs::VfsError;

/// Maps a VFS error to the status Windows gives for the same condition.
pub fn vfs_status(e: &VfsError) -> NtStatus {
    match e {
        VfsError::NotFound => NtStatus::OBJECT_NAME_NOT_FOUND,
        VfsError::ParentNotFound => NtStatus::OBJECT_PATH_NOT_FOUND,
        VfsError::NotADirectory => NtStatus::NOT_A_DIRECTORY,
        VfsError::IsADirectory => NtStatus::FILE_IS_A_DIRECTORY,
        VfsError::AlreadyExists => NtStatus::OBJECT_NAME_COLLISION,
        VfsError::PermissionDenied => NtStatus::ACCESS_DENIED,
        VfsError::NotEmpty => NtStatus::DIRECTORY_NOT_EMPTY,
        VfsError::InvalidName | VfsError::NameTooLong => NtStatus::OBJECT_NAME_INVALID,
        // A symlink that leaves the share is answered as if nothing were there, so clients
        // learn nothing about the file system outside the share.
        VfsError::OutsideShare => NtStatus::OBJECT_NAME_NOT_FOUND,
        VfsError::NoSpace => NtStatus::DISK_FULL,
        VfsError::ReadOnlyFs => NtStatus::MEDIA_WRITE_PROTECTED,
        VfsError::TooManyOpenFiles => NtStatus::TOO_MANY_OPENED_FILES,
        VfsError::Busy | VfsError::LeaseBreaking => NtStatus::SHARING_VIOLATION,
        VfsError::CrossDevice => NtStatus::NOT_SAME_DEVICE,
        VfsError::Unsupported => NtStatus::NOT_SUPPORTED,
        VfsError::InvalidArgument => NtStatus::INVALID_PARAMETER,
        VfsError::FixedSize => NtStatus::ALLOTTED_SPACE_EXCEEDED,
        VfsError::Io(_) => NtStatus::UNEXPECTED_IO_ERROR,
    }
}

/// Maps an error of the server's own files (the state store's records) as [`vfs_status`]
/// maps the same condition on a share.
pub fn io_status(e: &std::io::Error) -> NtStatus {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::StorageFull | ErrorKind::QuotaExceeded | ErrorKind::FileTooLarge => {
            NtStatus::DISK_FULL
        }
        ErrorKind::ReadOnlyFilesystem => NtStatus::MEDIA_WRITE_PROTECTED,
        _ => NtStatus::UNEXPECTED_IO_ERROR,
    }
}

/// `?`-friendly conversion of VFS results.
pub(crate) trait VfsResultExt<T> {
    fn status(self) -> Result<T, NtStatus>;
}

impl<T> VfsResultExt<T> for Result<T, VfsError> {
    fn status(self) -> Result<T, NtStatus> {
        self.map_err(|e| vfs_status(&e))
    }
}
