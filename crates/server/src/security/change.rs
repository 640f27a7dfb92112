//! Changing a file's descriptor: a security SET_INFO (MS-SMB2 3.3.5.21.3, MS-FSA 2.1.5.16),
//! the SD_BUFFER create context (MS-SMB2 2.2.13.2.3) and the descriptor a new file inherits.
//! Every change reaches the POSIX side the way Samba's acl_xattr does: an owner or group with
//! a Unix id becomes the file's owner or group, a DACL its mode and POSIX ACLs, and the stored
//! descriptor carries the hash of the result.

use smb3d_dtyp::{NtStatus, SdControl, SecurityDescriptor, SecurityInformation};
use smb3d_vfs::{FileStat, Vfs, VfsFile};

use super::posix::PosixView;
use super::{POSIX_ACL_ACCESS, POSIX_ACL_DEFAULT, store};
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

/// Gives a file just created by root (an `admin_users` session, whose token is still its
/// user's) the owner and group its inherited descriptor names, as Samba's acl_xattr does:
/// the kernel made it root's. Anyone else created it as the owner it inherits.
pub(crate) fn own_inherited(
    vfs: &dyn Vfs,
    file: &dyn VfsFile,
    who: &Identity,
    ids: &IdMap,
    sd: &SecurityDescriptor,
) -> Result<(), NtStatus> {
    if who.unix.uid != 0 || !vfs.runs_as_users() {
        return Ok(());
    }
    let stat = file.stat().status()?;
    let uid = match sd.owner.and_then(|sid| ids.unix_id(&sid)) {
        Some(UnixId::User(uid) | UnixId::Account(uid)) if uid != stat.uid => Some(uid),
        _ => None,
    };
    let gid = match sd.group.and_then(|sid| ids.unix_id(&sid)) {
        Some(UnixId::Group(gid) | UnixId::Account(gid)) if gid != stat.gid => Some(gid),
        _ => None,
    };
    if uid.is_none() && gid.is_none() {
        return Ok(());
    }
    as_service(vfs, || file.set_owner(uid, gid).status())
}

/// Makes `uid` a new file's owner on disk, with the service's credentials (the share's
/// `inherit_owner` asks for it, not the creator).
pub(crate) fn give_to(vfs: &dyn Vfs, file: &dyn VfsFile, uid: u32) -> Result<(), NtStatus> {
    if file.stat().status()?.uid == uid {
        return Ok(());
    }
    as_service(vfs, || file.set_owner(Some(uid), None).status())
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
    let before = vfs
        .runs_as_users()
        .then(|| as_service(vfs, || PosixBefore::of(file)))
        .transpose()?;
    let changed = change_posix_then_store(vfs, file, who, ids, info, update, current);
    if let (Err(status), Some(before)) = (changed, before) {
        before.restore(vfs, file, status);
    }
    changed
}

/// `change` after its first check: the owner and group, then the DACL's mode and ACLs, then
/// the stored descriptor, which may fail (a full disk) after the POSIX side changed.
fn change_posix_then_store(
    vfs: &dyn Vfs,
    file: &dyn VfsFile,
    who: &Identity,
    ids: &IdMap,
    info: SecurityInformation,
    update: &SecurityDescriptor,
    current: &SecurityDescriptor,
) -> Result<(), NtStatus> {
    let stat = &file.stat().status()?;
    let uid = match update
        .owner
        .filter(|_| info.contains(SecurityInformation::OWNER))
    {
        Some(sid) if current.owner == Some(sid) => None,
        Some(sid) => new_owner(vfs, who, stat, ids.unix_id(&sid))?,
        None => None,
    };
    let gid = match update
        .group
        .filter(|_| info.contains(SecurityInformation::GROUP))
    {
        Some(sid) if current.group == Some(sid) => None,
        Some(sid) => new_group(vfs, who, stat, ids.unix_id(&sid))?,
        None => None,
    };
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

/// What a security change may alter on the POSIX side, read before it, so that a change whose
/// descriptor cannot be stored (a full disk) is undone: a failed request changes nothing.
struct PosixBefore {
    uid: u32,
    gid: u32,
    mode: u32,
    acls: [(&'static str, Option<Vec<u8>>); 2],
}

impl PosixBefore {
    fn of(file: &dyn VfsFile) -> Result<Self, NtStatus> {
        let stat = file.stat().status()?;
        let acl = |name| file.get_xattr(name).ok().flatten();
        Ok(Self {
            uid: stat.uid,
            gid: stat.gid,
            mode: stat.mode,
            acls: [
                (POSIX_ACL_ACCESS, acl(POSIX_ACL_ACCESS)),
                (POSIX_ACL_DEFAULT, acl(POSIX_ACL_DEFAULT)),
            ],
        })
    }

    /// Puts back what differs: the ACLs first (the kernel derives the mode from the access
    /// ACL), then the owner (chown clears set-id bits), then the mode.
    fn restore(&self, vfs: &dyn Vfs, file: &dyn VfsFile, failure: NtStatus) {
        let undone = as_service(vfs, || {
            for (name, value) in &self.acls {
                if file.get_xattr(name).ok().flatten() != *value {
                    match value {
                        Some(value) => file.set_xattr(name, value),
                        None => file.remove_xattr(name),
                    }
                    .status()?;
                }
            }
            let now = file.stat().status()?;
            if (now.uid, now.gid) != (self.uid, self.gid) {
                file.set_owner(Some(self.uid), Some(self.gid)).status()?;
            }
            if file.stat().status()?.mode != self.mode {
                file.set_mode(self.mode).status()?;
            }
            Ok(())
        });
        if let Err(status) = undone {
            tracing::warn!(
                "a security change failed ({failure:?}) and its POSIX side could not be undone: {status:?}"
            );
        }
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
    let Some(UnixId::User(uid) | UnixId::Account(uid)) = id else {
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

/// The gid a new primary group (not the current one) makes the file's group. A group with a
/// Unix id other than the file's own must be one of the caller's groups unless the caller is
/// root, as chown(2) allows a file's owner and as Samba answers (STATUS_INVALID_OWNER, checked
/// against 4.17): a file given to another group would give that group its group permissions
/// and charge that group's quota. SIDs without a Unix id are kept in the descriptor only. A
/// server not running as root records groups in descriptors only.
fn new_group(
    vfs: &dyn Vfs,
    who: &Identity,
    stat: &FileStat,
    id: Option<UnixId>,
) -> Result<Option<u32>, NtStatus> {
    let Some(UnixId::Group(gid) | UnixId::Account(gid)) = id else {
        return Ok(None);
    };
    if gid == stat.gid && vfs.runs_as_users() {
        return Ok(None);
    }
    let member = gid == who.unix.gid || who.unix.groups.contains(&gid);
    if who.unix.uid != 0 && !member {
        return Err(NtStatus::INVALID_OWNER);
    }
    Ok(vfs.runs_as_users().then_some(gid))
}

#[cfg(test)]
mod tests {
    use smb3d_dtyp::{Privileges, Sid, Token};
    use smb3d_vfs::{
        Access, Credentials, Disposition, Kind, MemoryVfs, OpenRequest, VfsFile, VfsPath,
    };

    use super::*;
    use crate::security::descriptor;

    /// A new file "f" (mode 0640) of `vfs`.
    fn new_file(vfs: &MemoryVfs) -> Box<dyn VfsFile> {
        let create = OpenRequest {
            access: Access::ReadWrite,
            disposition: Disposition::Create,
            kind: Kind::File,
            create_mode: 0o640,
        };
        vfs.open(&VfsPath::parse("f").unwrap(), &create)
            .unwrap()
            .file
    }

    /// A user whose primary group is 77 and who is also in group 78 may make a file's group
    /// either; root may make it any; anyone else's group is STATUS_INVALID_OWNER and leaves
    /// the descriptor as it was.
    #[test]
    fn a_files_group_is_one_of_the_callers() {
        let ids = IdMap::new("T");
        let vfs = MemoryVfs::new();
        let file = new_file(&vfs);
        let who = |uid: u32| Identity {
            token: Token {
                user: ids.user_sid(uid),
                groups: vec![ids.group_sid(77), ids.group_sid(78)],
                privileges: Privileges::empty(),
            },
            unix: Credentials {
                uid,
                gid: 77,
                groups: vec![78],
            },
        };
        let set_group = |who: &Identity, gid: u32| {
            let stat = file.stat().unwrap();
            let current = descriptor(&vfs, file.as_ref(), &stat, &ids);
            let update = SecurityDescriptor {
                group: Some(ids.group_sid(gid)),
                ..SecurityDescriptor::default()
            };
            change(
                &vfs,
                file.as_ref(),
                who,
                &ids,
                SecurityInformation::GROUP,
                &update,
                &current,
            )
        };
        let group_now = || {
            let stat = file.stat().unwrap();
            descriptor(&vfs, file.as_ref(), &stat, &ids).group
        };
        let user = who(4242);
        assert_eq!(set_group(&user, 78), Ok(()));
        assert_eq!(group_now(), Some(ids.group_sid(78)));
        assert_eq!(set_group(&user, 77), Ok(()));
        for other in [0, 100] {
            assert_eq!(set_group(&user, other), Err(NtStatus::INVALID_OWNER));
            assert_eq!(group_now(), Some(ids.group_sid(77)));
        }
        assert_eq!(set_group(&who(0), 100), Ok(()));
        assert_eq!(group_now(), Some(ids.group_sid(100)));
    }

    /// The SIDs of an `[idmap]` domain name their ids as owner and group: a domain user may
    /// make its file's group a domain group it is in, or itself the owner, but no other
    /// domain account (STATUS_INVALID_OWNER, the descriptor unchanged); a SID of a domain
    /// without a range is kept in the descriptor only, as before.
    #[test]
    fn domain_sids_are_owners_and_groups_by_their_ids() {
        let sid = |s: &str| s.parse::<Sid>().unwrap();
        let ids = IdMap::new("T").with_domains(smb3d_dtyp::idmap::DomainIdmap {
            domains: vec![smb3d_dtyp::idmap::IdmapDomain {
                name: "AD".into(),
                sid: sid("S-1-5-21-1-2-3"),
                low: 100_000,
                high: 199_999,
            }],
        });
        let vfs = MemoryVfs::new();
        let file = new_file(&vfs);
        let dana = Identity {
            token: Token {
                user: sid("S-1-5-21-1-2-3-1105"),
                groups: vec![sid("S-1-5-21-1-2-3-513"), sid("S-1-5-21-1-2-3-1200")],
                privileges: Privileges::empty(),
            },
            unix: Credentials {
                uid: 101_105,
                gid: 100_513,
                groups: vec![101_200],
            },
        };
        let set = |info: SecurityInformation, to: &str| {
            let stat = file.stat().unwrap();
            let current = descriptor(&vfs, file.as_ref(), &stat, &ids);
            let update = SecurityDescriptor {
                owner: Some(sid(to)),
                group: Some(sid(to)),
                ..SecurityDescriptor::default()
            };
            change(&vfs, file.as_ref(), &dana, &ids, info, &update, &current)
        };
        let now = || {
            let stat = file.stat().unwrap();
            let sd = descriptor(&vfs, file.as_ref(), &stat, &ids);
            (sd.owner, sd.group)
        };
        let (group, owner) = (SecurityInformation::GROUP, SecurityInformation::OWNER);
        assert_eq!(set(group, "S-1-5-21-1-2-3-1200"), Ok(()));
        assert_eq!(set(owner, "S-1-5-21-1-2-3-1105"), Ok(()));
        let before = now();
        assert_eq!(before.1, Some(sid("S-1-5-21-1-2-3-1200")));
        for other in ["S-1-5-21-1-2-3-1300", "S-1-5-21-1-2-3-512"] {
            assert_eq!(set(group, other), Err(NtStatus::INVALID_OWNER));
            assert_eq!(set(owner, other), Err(NtStatus::INVALID_OWNER));
            assert_eq!(now(), before);
        }
        assert_eq!(set(group, "S-1-5-21-9-9-9-1300"), Ok(()));
        assert_eq!(now().1, Some(sid("S-1-5-21-9-9-9-1300")));
    }
}
