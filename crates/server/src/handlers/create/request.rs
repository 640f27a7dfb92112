//! The parts of a CREATE request checked before any file system call (MS-SMB2 3.3.5.9, MS-FSA
//! 2.1.5.1): option and disposition combinations, and the access the open will have.

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_fscc::FileAttributes;
use smb3d_smb2::create::{CreateDisposition, CreateOptions, CreateRequest, ImpersonationLevel};
use smb3d_vfs::{Access, Kind};

use crate::state::session::Tree;

pub(super) fn check(req: &CreateRequest<'_>) -> Result<(), NtStatus> {
    if req.impersonation_level.0 > ImpersonationLevel::DELEGATE.0 {
        return Err(NtStatus::BAD_IMPERSONATION_LEVEL);
    }
    let options = req.create_options;
    if options.contains(CreateOptions::DIRECTORY_FILE | CreateOptions::NON_DIRECTORY_FILE) {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if req.create_disposition.0 > CreateDisposition::OVERWRITE_IF.0 {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if options.contains(CreateOptions::DIRECTORY_FILE) {
        if !matches!(
            req.create_disposition,
            CreateDisposition::CREATE | CreateDisposition::OPEN | CreateDisposition::OPEN_IF
        ) {
            return Err(NtStatus::INVALID_PARAMETER);
        }
        // A directory cannot be temporary (MS-FSA 2.1.5.1).
        if FileAttributes(req.file_attributes).contains(FileAttributes::TEMPORARY) {
            return Err(NtStatus::INVALID_PARAMETER);
        }
    }
    if req.contexts.iter().any(|c| c.is_err()) {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    Ok(())
}

/// What the open asks for, in the server's terms.
pub(super) struct Intent {
    /// DesiredAccess with generic rights mapped; MAXIMUM_ALLOWED is kept for the access check.
    pub desired: AccessMask,
    /// The disposition after the share's limits (a read-only share only opens).
    pub disposition: CreateDisposition,
    pub kind: Kind,
    /// How the file is opened on the back end; with MAXIMUM_ALLOWED the widest that works.
    pub vfs_access: Access,
    pub truncates: bool,
    pub writes_data: bool,
    pub delete_on_close: bool,
}

/// Access (MS-SMB2 3.3.5.9 and MS-FSA 2.1.5.1.1): generic rights mapped, nothing requested
/// beyond the tree's maximal access.
pub(super) fn intent(req: &CreateRequest<'_>, tree: &Tree) -> Result<Intent, NtStatus> {
    let options = req.create_options;
    let mut disposition = req.create_disposition;
    let desired = req.desired_access.map_generic();
    let maximum = desired.contains(AccessMask::MAXIMUM_ALLOWED);
    let requested =
        desired.without(AccessMask::MAXIMUM_ALLOWED | AccessMask::ACCESS_SYSTEM_SECURITY);
    if !tree.maximal_access.contains(requested) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    if tree.read_only {
        // Nothing may be created or truncated; OPEN_IF can still open what exists.
        disposition = match disposition {
            CreateDisposition::OPEN | CreateDisposition::OPEN_IF => CreateDisposition::OPEN,
            _ => return Err(NtStatus::ACCESS_DENIED),
        };
    }
    if desired.contains(AccessMask::ACCESS_SYSTEM_SECURITY) {
        return Err(NtStatus::PRIVILEGE_NOT_HELD);
    }
    let delete_on_close = options.contains(CreateOptions::DELETE_ON_CLOSE);
    if delete_on_close && !desired.contains(AccessMask::DELETE) {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    // A new read-only file could never be deleted on close (MS-FSA 2.1.5.1.1).
    if delete_on_close
        && disposition != CreateDisposition::OPEN
        && FileAttributes(req.file_attributes).contains(FileAttributes::READONLY)
    {
        return Err(NtStatus::CANNOT_DELETE);
    }
    let kind = if options.contains(CreateOptions::DIRECTORY_FILE) {
        Kind::Directory
    } else if options.contains(CreateOptions::NON_DIRECTORY_FILE) {
        Kind::File
    } else {
        Kind::Any
    };
    let truncates = matches!(
        disposition,
        CreateDisposition::SUPERSEDE
            | CreateDisposition::OVERWRITE
            | CreateDisposition::OVERWRITE_IF
    );
    let writable = !tree.read_only;
    let reads =
        maximum || requested.intersects(AccessMask::FILE_READ_DATA | AccessMask::FILE_EXECUTE);
    let writes_data =
        requested.intersects(AccessMask::FILE_WRITE_DATA | AccessMask::FILE_APPEND_DATA);
    let vfs_access = match (reads, writes_data || truncates || (maximum && writable)) {
        (true, true) => Access::ReadWrite,
        (false, true) => Access::Write,
        (true, false) => Access::Read,
        (false, false) => Access::MetadataOnly,
    };
    Ok(Intent {
        desired,
        disposition,
        kind,
        vfs_access,
        truncates,
        writes_data,
        delete_on_close,
    })
}

/// An open in a snapshot (MS-SMB2 3.3.5.9.8) may ask for any access, as Windows and Samba
/// grant it, but the file is opened read-only: nothing is created, overwritten or deleted
/// there (STATUS_MEDIA_WRITE_PROTECTED, MS-FSA's answer for a read-only volume), and writes
/// through the open are refused later with the same status.
pub(super) fn in_snapshot(intent: &mut Intent) -> Result<(), NtStatus> {
    intent.disposition = match intent.disposition {
        CreateDisposition::OPEN | CreateDisposition::OPEN_IF => CreateDisposition::OPEN,
        _ => return Err(NtStatus::MEDIA_WRITE_PROTECTED),
    };
    if intent.delete_on_close {
        return Err(NtStatus::MEDIA_WRITE_PROTECTED);
    }
    intent.truncates = false;
    intent.writes_data = false;
    intent.vfs_access = match intent.vfs_access {
        Access::ReadWrite | Access::Read => Access::Read,
        Access::Write | Access::MetadataOnly => Access::MetadataOnly,
    };
    Ok(())
}
