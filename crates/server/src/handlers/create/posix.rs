//! The SMB2_CREATE_POSIX context of the SMB3 POSIX extensions ([`smb3d_smb2::posix`]): on a
//! `posix` share, from a client that negotiated the extensions, a new file or directory gets
//! the mode the request names instead of the one its DOS attributes map to, and the response
//! says the file's mode, link count, reparse tag, owner and group. Elsewhere the context is
//! one the server does not know and is ignored (MS-SMB2 3.3.5.9).

use smb3d_dtyp::NtStatus;
use smb3d_fscc::posix::PERMISSION_BITS;
use smb3d_smb2::create::{CreateContext, CreateRequest};
use smb3d_smb2::posix::{PosixCreateRequest, TAG};
use smb3d_vfs::Vfs;

use crate::request::malformed;
use crate::state::connection::Connection;
use crate::state::share::Share;

/// S_ISUID | S_ISGID.
const SET_ID_BITS: u32 = 0o6000;

/// A POSIX open: the mode its context asked for.
#[derive(Debug, Clone, Copy)]
pub(super) struct PosixOpen {
    pub mode: u32,
}

/// The request's POSIX context, when this connection and share honour it; checked before
/// anything is opened: a context of another size, or a mode beyond 0o7777 (a file type among
/// them), fails the CREATE with STATUS_INVALID_PARAMETER.
pub(super) fn ask(
    conn: &Connection,
    req: &CreateRequest<'_>,
    share: &Share,
) -> Result<Option<PosixOpen>, NtStatus> {
    if !share.posix || !conn.negotiated.get().is_some_and(|n| n.posix) {
        return Ok(None);
    }
    let Some(data) = req.contexts.iter().flatten().find_map(|c| match c {
        CreateContext::Other(raw) if raw.name == TAG => Some(raw.data),
        _ => None,
    }) else {
        return Ok(None);
    };
    let asked = PosixCreateRequest::decode(data).map_err(malformed)?;
    if asked.mode & !PERMISSION_BITS != 0 {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    Ok(Some(PosixOpen { mode: asked.mode }))
}

/// The mode a POSIX open creates with: the one asked for, cut by the share's mask and given
/// its forced bits as any new file's (Samba applies `create mask` to Unix-extension modes
/// too). Set-user-id and set-group-id survive only where the file system runs as the user, so
/// that the kernel decides whether this user may set them; a server working as itself would
/// otherwise make set-id files of its own.
pub(super) fn create_mode(share: &Share, vfs: &dyn Vfs, directory: bool, open: PosixOpen) -> u32 {
    let (mask, forced) = if directory {
        (share.directory_mask, share.force_directory_mode)
    } else {
        (share.create_mask, share.force_create_mode)
    };
    let mode = (open.mode & mask) | forced;
    if vfs.runs_as_users() {
        mode
    } else {
        mode & !SET_ID_BITS
    }
}
