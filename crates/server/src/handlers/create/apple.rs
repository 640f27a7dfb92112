//! The AAPL create context of Mac clients ([`smb3d_smb2::aapl`]), answered on `apple` shares
//! as Samba's vfs_fruit answers it (MS-SMB2 does not define it; 3.3.5.9 leaves unknown
//! contexts to the server). Elsewhere it is an unknown context and ignored.

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::aapl::{AaplRequest, ServerQueryResponse, bitmap, server_caps, volume_caps};
use smb3d_smb2::create::{CreateContext, CreateRequest, ShareAccess};
use smb3d_vfs::VfsFile;

use crate::request::malformed;
use crate::state::locks::LockTable;
use crate::state::share::Share;

/// The ServerCaps offered to every Mac client: Unix underneath, and copyfile (a
/// FSCTL_SRV_COPYCHUNK without chunks copies the whole file with its streams), which Samba
/// offers whether asked or not and smbtorture expects so.
const SERVER_CAPS: u64 = server_caps::UNIX_BASED | server_caps::OSX_COPYFILE;
/// The ServerCaps granted only to a client whose ClientCaps ask for them, as Samba grants
/// them: ReadDirAttr changes what its listings carry, NFS ACEs its security descriptors.
const ASKED_CAPS: u64 = server_caps::READ_DIR_ATTR | server_caps::NFS_ACE;

/// The answer to the request's AAPL server query on `share`, worked out before anything is
/// opened: a malformed query or another command fails the CREATE with
/// STATUS_INVALID_PARAMETER, as Samba fails it.
pub(super) fn answer(
    req: &CreateRequest<'_>,
    share: &Share,
) -> Result<Option<ServerQueryResponse>, NtStatus> {
    let Some(apple) = &share.apple else {
        return Ok(None);
    };
    let Some(data) = req.contexts.iter().flatten().find_map(|c| match c {
        CreateContext::Other(raw) if raw.name == smb3d_smb2::aapl::NAME => Some(raw.data),
        _ => None,
    }) else {
        return Ok(None);
    };
    let AaplRequest::ServerQuery(query) = AaplRequest::decode(data).map_err(malformed)? else {
        return Err(NtStatus::INVALID_PARAMETER);
    };
    // Names are matched ignoring case on every share, so the volume is never case-sensitive.
    let volume = if apple.time_machine {
        volume_caps::FULL_SYNC
    } else {
        0
    };
    Ok(Some(ServerQueryResponse {
        reply_bitmap: query.request_bitmap,
        server_caps: SERVER_CAPS | (ASKED_CAPS & query.client_caps),
        volume_caps: volume,
        model: if query.request_bitmap & bitmap::MODEL_INFO != 0 {
            apple.model.clone()
        } else {
            String::new()
        },
    }))
}

/// Netatalk's one-byte locks at the top of the 63-bit range (its `AD_FILELOCK_*`) by which an
/// AFP server's opens of a data fork and their deny modes show to other servers.
const NETATALK_OPEN_WR: u64 = 0x7FFF_FFFF_FFFF_FFFF - 9;
const NETATALK_OPEN_RD: u64 = NETATALK_OPEN_WR + 1;
const NETATALK_DENY_WR: u64 = NETATALK_OPEN_WR + 4;
const NETATALK_DENY_RD: u64 = NETATALK_OPEN_WR + 5;

/// Whether an open of a data fork with `access` and `share_access` on an `apple` share
/// conflicts with an AFP open shown by Netatalk's locks, held in the file's lock table or, with
/// `posix_locking`, by another program: STATUS_SHARING_VIOLATION then, as Samba's
/// `fruit:locking = netatalk` answers it, although the SMB share modes agree. Costs nothing
/// on a file without locks and a share without `posix_locking`.
pub(super) fn check_netatalk_modes(
    share: &Share,
    locks: &LockTable,
    file: &dyn VfsFile,
    access: AccessMask,
    share_access: ShareAccess,
) -> Result<(), NtStatus> {
    let held = locks.held();
    let taken = |offset: u64| {
        held.iter()
            .any(|l| offset >= l.offset && offset - l.offset < l.length)
            || (share.posix_locking && file.host_lock_conflicts(offset, 1, true).unwrap_or(false))
    };
    let conflict = (access.contains(AccessMask::FILE_READ_DATA) && taken(NETATALK_DENY_RD))
        || (!share_access.contains(ShareAccess::READ) && taken(NETATALK_OPEN_RD))
        || (access.contains(AccessMask::FILE_WRITE_DATA) && taken(NETATALK_DENY_WR))
        || (!share_access.contains(ShareAccess::WRITE) && taken(NETATALK_OPEN_WR));
    if conflict {
        return Err(NtStatus::SHARING_VIOLATION);
    }
    Ok(())
}
