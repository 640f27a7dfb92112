//! Changing a file's descriptor: a security SET_INFO (MS-SMB2 3.3.5.21.3, MS-FSA 2.1.5.16),
//! the SD_BUFFER create context (MS-SMB2 2.2.13.2.3) and the descriptor a new file inherits.
//! Every change reaches the POSIX side the way Samba's acl_xattr does: an owner or group with
//! a Unix id becomes the file's owner or group, a DACL its mode and POSIX ACLs, and the stored
//! descriptor carries the hash of the result.

use smb3d_dtyp::{NtStatus, SdControl, SecurityDescriptor, SecurityInformation};
use smb3d_vfs::{FileStat, Vfs, VfsFile};

use super::posix::PosixView;
use super::store;
use crate::blocking::as_service;
use crate::identity::{IdMap, Identity, UnixId};
use crate::status_map::{VfsResultExt, vfs_status};

/// The parts a descriptor sent with a create carries.
pub(crate) fn parts_of(sd: &SecurityDescriptor) -> SecurityInformation {
    let mut info = SecurityInformation::empty();
    if sd.owner.is_some() {
        info |= SecurityInformation::OWNER;
    }
    if sd.group.is_some() {
        info |= SecurityInformation::GROUP;
    }
    if sd.control.contains(SdControl::DACL_PRESENT) {
        info |= SecurityInformation::DACL;
    }
    if sd.control.contains(SdControl::SACL_PRESENT) {
        info |= SecurityInformation::SACL;
    }
    info
}

/// Gives the file the mode and POSIX ACLs `sd` maps to and stores `sd`. The POSIX side is
/// changed with the service's credentials: whoever may change the DACL may change it, owner
/// or not. A server not running as root owns every file and needs its own permissions on all
/// of them, and users' access is decided by the descriptor alone: the mode stays.
pub(crate) fn apply(
    vfs: &dyn Vfs,
    file: &dyn VfsFile,
    ids: &IdMap,
    sd: &SecurityDescriptor,
) -> Result<(), NtStatus> {
    if vfs.runs_as_users() {
        let stat = file.stat().status()?;
        as_service(vfs, || {
            PosixView::of(sd, &stat, ids)
                .apply(file, &stat)
                .map_err(|e| vfs_status(&e))
        })?;
    }
    store(vfs, file, sd)
}

/// Sets the parts `info` of `update` on a file whose descriptor is `current`, on behalf of
/// `who` (who holds WRITE_OWNER for the owner and group and WRITE_DAC for the DACL, or is
/// creating the file). The SACL needs a privilege no SMB user holds here.
pub(crate) fn change(
    vfs: &dyn Vfs,
    file: &dyn VfsFile,
    who: &Identity,
    ids: &IdMap,
    info: SecurityInformation,
    update: &SecurityDescriptor,
    current: &SecurityDescriptor,
) -> Result<(), NtStatus> {
    if info.contains(SecurityInformation::SACL) {
        return Err(NtStatus::PRIVILEGE_NOT_HELD);
    }
    let stat = file.stat().status()?;
    let uid = match update
        .owner
        .filter(|_| info.contains(SecurityInformation::OWNER))
    {
        Some(sid) if current.owner == Some(sid) => None,
        Some(sid) => new_owner(vfs, who, &stat, ids.unix_id(&sid))?,
        None => None,
    };
    let gid = update
        .group
        .filter(|_| info.contains(SecurityInformation::GROUP))
        .and_then(|sid| new_group(vfs, &stat, ids.unix_id(&sid)));
    if uid.is_some() || gid.is_some() {
        as_service(vfs, || file.set_owner(uid, gid).status())?;
    }
    let merged = current.merged(update, info);
    if info.contains(SecurityInformation::DACL) {
        apply(vfs, file, ids, &merged)
    } else {
        store(vfs, file, &merged)
    }
}

/// The uid a new owner (not the current one) makes the file's owner. A user SID with a Unix
/// id other than the file's own must be the caller's (taking ownership, as WRITE_OWNER allows
/// on Windows) unless the caller is root: giving files away is STATUS_INVALID_OWNER. SIDs
/// without a Unix id (groups, well-known SIDs) are kept in the descriptor only, as Samba keeps
/// them. A server not running as root owns every file itself and records owners in
/// descriptors only.
fn new_owner(
    vfs: &dyn Vfs,
    who: &Identity,
    stat: &FileStat,
    id: Option<UnixId>,
) -> Result<Option<u32>, NtStatus> {
    let Some(UnixId::User(uid)) = id else {
        return Ok(None);
    };
    if uid == stat.uid && vfs.runs_as_users() {
        return Ok(None);
    }
    if who.unix.uid != 0 && uid != who.unix.uid {
        return Err(NtStatus::INVALID_OWNER);
    }
    Ok(vfs.runs_as_users().then_some(uid))
}

/// The gid a new primary group makes the file's group: any group with a Unix id, as
/// WRITE_OWNER allows on Windows.
fn new_group(vfs: &dyn Vfs, stat: &FileStat, id: Option<UnixId>) -> Option<u32> {
    match id {
        Some(UnixId::Group(gid)) if gid != stat.gid && vfs.runs_as_users() => Some(gid),
        _ => None,
    }
}
