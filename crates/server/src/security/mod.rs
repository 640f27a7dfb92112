//! Security descriptors (MS-DTYP 2.4.6) of files, stored as Samba stores them: the descriptor
//! in `security.NTACL` (version 4, with the hash of the file's POSIX owner, group, mode and
//! ACLs), trusted only while that hash still matches, so that a local chmod, chown or setfacl
//! wins, as it does with Samba. Without a valid stored descriptor, one is derived from the
//! POSIX owner and group, and the mode or the POSIX ACLs where the file has them. A server
//! that cannot write `security.` xattrs (not running as root) keeps them in `user.NTACL`
//! instead (docs/security-model.md).
//!
//! `access` decides what opens get, `posix` maps a descriptor to the POSIX mode and ACLs that
//! local users see, `change` applies SET_INFO and create-time descriptors.

mod access;
mod change;
mod nfs;
mod posix;

pub(crate) use access::{Parent, grant, maximal, may_place, readable};
pub(crate) use change::{apply, change, give_to, own_inherited, parts_of};
pub(crate) use nfs::{take_nfs_aces, with_nfs_aces};

use smb3d_dtyp::samba::{NtAclXattr, PosixAcl, PosixAclState, PosixAclTag, XATTR_NTACL_NAME};
use smb3d_dtyp::{
    AccessMask, Ace, AceFlags, Acl, NtStatus, SecurityDescriptor, Sid, access_check, inherit,
};
use smb3d_vfs::{FileStat, FileType, Vfs, VfsError, VfsFile, VfsResult};
use smb3d_wire::FileTime;

use crate::blocking::as_service;
use crate::identity::{IdMap, Identity};
use crate::status_map::vfs_status;

pub(crate) const POSIX_ACL_ACCESS: &str = "system.posix_acl_access";
pub(crate) const POSIX_ACL_DEFAULT: &str = "system.posix_acl_default";
/// Where an unprivileged server keeps NT ACLs: the `security.` namespace needs
/// CAP_SYS_ADMIN to write, and `user.` is writable only by those who may write the file, which
/// on such a server is the service account alone. Hidden from EAs like Samba's own names.
pub(crate) const XATTR_NTACL_USER: &str = "user.NTACL";
/// Descriptors larger than this are refused when set (MS-FSA leaves the limit to the file
/// system; 64 KiB is what one xattr holds).
pub(crate) const MAX_DESCRIPTOR_LEN: usize = 64 * 1024 - 512;

/// What read, write and execute permission bits grant.
fn rights(bits: u32, is_directory: bool) -> AccessMask {
    if bits & 7 == 7 {
        return AccessMask::FILE_ALL_ACCESS;
    }
    // Attributes, EAs and the descriptor itself are readable by anyone the ACL names.
    let mut mask = AccessMask::READ_CONTROL
        | AccessMask::SYNCHRONIZE
        | AccessMask::FILE_READ_ATTRIBUTES
        | AccessMask::FILE_READ_EA;
    if bits & 4 != 0 {
        mask |= AccessMask::FILE_GENERIC_READ;
    }
    if bits & 2 != 0 {
        mask |= AccessMask::FILE_GENERIC_WRITE | AccessMask::DELETE;
        if is_directory {
            mask |= AccessMask::FILE_DELETE_CHILD;
        }
    }
    if bits & 1 != 0 {
        mask |= AccessMask::FILE_GENERIC_EXECUTE;
    }
    mask
}

/// What the owner's permission bits grant. The owner may always change the ACL, the
/// ownership and the attributes and times, as on Unix (chmod, chown, utime; a share with
/// `store_dos_attributes` off keeps attributes in the mode, where an owner who set READONLY
/// must be able to clear it, as Samba lets it); so an owner who may read and write gets full
/// control (withholding execute would protect nothing, and Windows clients open their own
/// files asking for all rights).
fn owner_rights(bits: u32, is_directory: bool) -> AccessMask {
    if bits & 6 == 6 {
        AccessMask::FILE_ALL_ACCESS
    } else {
        rights(bits, is_directory)
            | AccessMask::WRITE_DAC
            | AccessMask::WRITE_OWNER
            | AccessMask::FILE_WRITE_ATTRIBUTES
    }
}

/// A file's POSIX ACLs (`system.posix_acl_access`, and a directory's `_default`), where it has
/// them: without an access ACL the mode says it all.
#[derive(Default)]
pub(crate) struct PosixAcls {
    access: Option<PosixAcl>,
    default: Option<PosixAcl>,
}

impl PosixAcls {
    /// Reads them through `xattr`; an ACL that does not decode counts as none, as the kernel
    /// would not have stored it.
    fn read(
        stat: &FileStat,
        xattr: &dyn Fn(&str) -> VfsResult<Option<Vec<u8>>>,
    ) -> Result<Self, VfsError> {
        let read_acl = |name: &str| -> Result<Option<PosixAcl>, VfsError> {
            match xattr(name) {
                Ok(Some(value)) => Ok(PosixAcl::decode_xattr(&value).ok()),
                Ok(None) | Err(VfsError::Unsupported) => Ok(None),
                Err(e) => Err(e),
            }
        };
        Ok(Self {
            access: read_acl(POSIX_ACL_ACCESS)?,
            default: if stat.file_type == FileType::Directory {
                read_acl(POSIX_ACL_DEFAULT)?
            } else {
                None
            },
        })
    }
}

/// The descriptor for a file without a valid stored one, from its POSIX state: owner and group
/// from the file; without an access ACL, one allow ACE each for the owner, the group and
/// Everyone from the permission bits; with one, an ACE per entry (named users and groups
/// limited by the mask, other as Everyone). A directory's default ACL becomes inheritable-only
/// ACEs, its owning user and group entries standing for CREATOR OWNER and CREATOR GROUP.
pub(crate) fn posix_descriptor(
    stat: &FileStat,
    acls: &PosixAcls,
    ids: &IdMap,
) -> SecurityDescriptor {
    let dir = stat.file_type == FileType::Directory;
    let owner = ids.user_sid(stat.uid);
    let group = ids.group_sid(stat.gid);
    let mut aces = match &acls.access {
        None => vec![
            Ace::allow(owner, owner_rights(stat.mode >> 6, dir), AceFlags::empty()),
            Ace::allow(group, rights(stat.mode >> 3, dir), AceFlags::empty()),
            Ace::allow(Sid::EVERYONE, rights(stat.mode, dir), AceFlags::empty()),
        ],
        Some(acl) => acl_aces(acl, ids, [owner, group], AceFlags::empty(), dir),
    };
    if let Some(default) = &acls.default {
        let inherit = AceFlags::OBJECT_INHERIT | AceFlags::CONTAINER_INHERIT;
        let creators = [Sid::CREATOR_OWNER, Sid::CREATOR_GROUP];
        // What is created below may be a file or a directory: the directory reading of the
        // bits, as `with_inheritable_entries` gives.
        for passed_on in acl_aces(
            default,
            ids,
            creators,
            inherit | AceFlags::INHERIT_ONLY,
            true,
        ) {
            // An entry the directory has for itself and passes on alike is one ACE that also
            // inherits, as Samba shows it.
            match aces
                .iter_mut()
                .find(|a| a.flags.is_empty() && a.mask_and_sid() == passed_on.mask_and_sid())
            {
                Some(both) => both.flags = inherit,
                None => aces.push(passed_on),
            }
        }
    }
    SecurityDescriptor::new(owner, group, Acl::new(aces))
}

/// One allow ACE per entry of `acl` other than the mask: the owning user's and group's for the
/// SIDs in `owners`, named entries and the owning group limited by the mask (POSIX.1e), other
/// as Everyone. The owning user's rights are [`owner_rights`] when the ACEs apply to the file
/// itself.
fn acl_aces(
    acl: &PosixAcl,
    ids: &IdMap,
    owners: [Sid; 2],
    flags: AceFlags,
    directory: bool,
) -> Vec<Ace> {
    let mask = acl
        .entries
        .iter()
        .find(|e| e.tag == PosixAclTag::Mask)
        .map_or(7, |e| e.perm);
    let on_the_file = !flags.contains(AceFlags::INHERIT_ONLY);
    acl.entries
        .iter()
        .filter_map(|entry| {
            let own = u32::from(entry.perm);
            let limited = u32::from(entry.perm & mask);
            let (sid, granted) = match entry.tag {
                PosixAclTag::UserObj if on_the_file => (owners[0], owner_rights(own, directory)),
                PosixAclTag::UserObj => (owners[0], rights(own, directory)),
                PosixAclTag::User(uid) => (ids.user_sid(uid), rights(limited, directory)),
                PosixAclTag::GroupObj => (owners[1], rights(limited, directory)),
                PosixAclTag::Group(gid) => (ids.group_sid(gid), rights(limited, directory)),
                PosixAclTag::Other => (Sid::EVERYONE, rights(own, directory)),
                PosixAclTag::Mask => return None,
            };
            Some(Ace::allow(sid, granted, flags))
        })
        .collect()
}

/// The descriptor a file `who` just created starts from, before anything is inherited or
/// set: its POSIX state's. A server not running as root creates every file as itself, so the
/// creator is made its owner and primary group there, in the descriptor only.
pub(crate) fn initial_descriptor(
    vfs: &dyn Vfs,
    file: &dyn VfsFile,
    stat: &FileStat,
    ids: &IdMap,
    who: &Identity,
) -> SecurityDescriptor {
    if vfs.runs_as_users() {
        descriptor(vfs, file, stat, ids)
    } else {
        let as_created = FileStat {
            uid: who.unix.uid,
            gid: who.unix.gid,
            ..*stat
        };
        posix_descriptor(&as_created, &PosixAcls::default(), ids)
    }
}

/// The xattr names a share's NT ACL is read from, in order of preference: `security.NTACL`
/// only when users work under their own credentials (they cannot write it; `user.NTACL` they
/// could forge); else `user.NTACL`, falling back to what Samba stored before.
fn acl_xattrs(vfs: &dyn Vfs) -> &'static [&'static str] {
    if vfs.runs_as_users() {
        &[XATTR_NTACL_NAME]
    } else {
        &[XATTR_NTACL_USER, XATTR_NTACL_NAME]
    }
}

/// The hash of the POSIX state Samba's acl_xattr ties a stored descriptor to.
fn posix_state_hash(stat: &FileStat, acls: &PosixAcls) -> [u8; 64] {
    let from_mode;
    let access = match &acls.access {
        Some(acl) => acl,
        None => {
            from_mode = PosixAcl::from_mode(stat.mode);
            &from_mode
        }
    };
    let no_default = PosixAcl::default();
    let default = (stat.file_type == FileType::Directory)
        .then(|| acls.default.as_ref().unwrap_or(&no_default));
    PosixAclState {
        access: Some(access),
        default,
        uid: stat.uid,
        gid: stat.gid,
        mode: stat.mode,
    }
    .hash()
}

/// The descriptor in force for a file.
pub(crate) fn descriptor(
    vfs: &dyn Vfs,
    file: &dyn VfsFile,
    stat: &FileStat,
    ids: &IdMap,
) -> SecurityDescriptor {
    in_force(vfs, stat, ids, &|name| file.get_xattr(name)).sd
}

/// The descriptor in force for the entry `name` of the directory `dir`, whose metadata (not
/// following a symlink) is `stat`: read without opening it, as listings need.
pub(crate) fn child_descriptor(
    vfs: &dyn Vfs,
    dir: &dyn VfsFile,
    name: &str,
    stat: &FileStat,
    ids: &IdMap,
) -> SecurityDescriptor {
    in_force(vfs, stat, ids, &|xattr| dir.get_child_xattr(name, xattr)).sd
}

/// A file's descriptor, and whether it is derived from the POSIX state.
pub(crate) struct InForce {
    pub sd: SecurityDescriptor,
    pub derived: bool,
}

/// The stored descriptor if there is one and it still matches the POSIX state, else the one
/// derived from that state; the xattrs are read through `xattr`. POSIX ACLs that cannot be
/// read count as none.
pub(crate) fn in_force(
    vfs: &dyn Vfs,
    stat: &FileStat,
    ids: &IdMap,
    xattr: &dyn Fn(&str) -> VfsResult<Option<Vec<u8>>>,
) -> InForce {
    let blob = acl_xattrs(vfs)
        .iter()
        .find_map(|name| xattr(name).ok().flatten());
    let acls = PosixAcls::read(stat, xattr).unwrap_or_default();
    let stored = blob
        .and_then(|blob| NtAclXattr::decode(&blob).ok())
        .filter(|ntacl| ntacl.matches_file(Some(&posix_state_hash(stat, &acls)), None));
    match stored {
        Some(ntacl) => InForce {
            sd: ntacl.sd,
            derived: false,
        },
        None => InForce {
            sd: posix_descriptor(stat, &acls, ids),
            derived: true,
        },
    }
}

/// Stores a descriptor for the file in its current POSIX state. The xattr is written with the
/// service's credentials (users cannot write `security.` xattrs); callers have checked
/// WRITE_DAC/WRITE_OWNER or are creating the file.
pub(crate) fn store(
    vfs: &dyn Vfs,
    file: &dyn VfsFile,
    sd: &SecurityDescriptor,
) -> Result<(), NtStatus> {
    let stat = file.stat().map_err(|e| vfs_status(&e))?;
    let acls = PosixAcls::read(&stat, &|name| file.get_xattr(name)).map_err(|e| vfs_status(&e))?;
    let hash = posix_state_hash(&stat, &acls);
    let blob = NtAclXattr::posix_v4(sd.clone(), [0; 64], hash, FileTime::now()).to_bytes();
    let name = acl_xattrs(vfs).first().copied().unwrap_or(XATTR_NTACL_NAME);
    as_service(vfs, || match file.set_xattr(name, &blob) {
        Ok(()) => Ok(()),
        // A file system without xattrs cannot keep ACLs.
        Err(VfsError::Unsupported | VfsError::PermissionDenied) => Err(NtStatus::NOT_SUPPORTED),
        Err(e) => Err(vfs_status(&e)),
    })
}

/// Whether the descriptor lets `who` do `access` (root always may).
pub(crate) fn allows(sd: &SecurityDescriptor, who: &Identity, access: AccessMask) -> bool {
    who.unix.uid == 0 || access_check(sd, &who.token, access).is_ok()
}

/// What a directory whose descriptor is derived from its POSIX state (nothing valid stored)
/// passes on with `inherit_acls`, as Samba's acl_xattr synthesizes it for a directory without
/// inheritable entries: its derived ACL plus CREATOR OWNER, CREATOR GROUP and Everyone
/// entries that only inherit (OI|CI|IO), with the rights of the owner, group and other bits of
/// `new_modes`, the modes the share gives new directories and files there (OR-ed). No bits
/// give no rights at all, so that Everyone's inherited entry grants nothing on 0o770. A
/// directory with a default POSIX ACL passes on what that says, unchanged.
pub(crate) fn with_inheritable_entries(
    derived: &SecurityDescriptor,
    new_modes: u32,
) -> SecurityDescriptor {
    let inherit_only =
        AceFlags::OBJECT_INHERIT | AceFlags::CONTAINER_INHERIT | AceFlags::INHERIT_ONLY;
    let inheritable = AceFlags::OBJECT_INHERIT | AceFlags::CONTAINER_INHERIT;
    if derived
        .dacl
        .as_ref()
        .is_some_and(|dacl| dacl.aces.iter().any(|a| a.flags.intersects(inheritable)))
    {
        return derived.clone();
    }
    let entry = |sid, bits: u32| {
        let mask = match bits & 7 {
            0 => AccessMask::empty(),
            bits => rights(bits, true),
        };
        Ace::allow(sid, mask, inherit_only)
    };
    let mut sd = derived.clone();
    let mut aces = sd.dacl.take().map(|dacl| dacl.aces).unwrap_or_default();
    aces.extend([
        entry(Sid::CREATOR_OWNER, new_modes >> 6),
        entry(Sid::CREATOR_GROUP, new_modes >> 3),
        entry(Sid::EVERYONE, new_modes),
    ]);
    sd.dacl = Some(Acl::new(aces));
    sd
}

/// The descriptor of a new file or directory created by `who` under a directory with
/// descriptor `parent` (MS-DTYP 2.5.3.4.1), when the parent has something to pass on.
/// `owner`, when set, is its owner instead of `who` (`inherit_owner`).
pub(crate) fn inherited(
    parent: &SecurityDescriptor,
    is_directory: bool,
    who: &Identity,
    owner: Option<Sid>,
) -> Option<SecurityDescriptor> {
    let group = who.token.groups.first().copied().unwrap_or(who.token.user);
    inherit(
        parent,
        is_directory,
        &owner.unwrap_or(who.token.user),
        &group,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_dtyp::SdControl;

    pub(super) fn stat(mode: u32, file_type: FileType) -> FileStat {
        let t = smb3d_vfs::Timespec { sec: 0, nsec: 0 };
        FileStat {
            file_type,
            size: 0,
            allocated: 0,
            ino: 1,
            dev: 1,
            nlink: 1,
            mode,
            uid: 1000,
            gid: 100,
            atime: t,
            mtime: t,
            ctime: t,
            btime: None,
        }
    }

    /// A new file `f` of `mode` on `vfs`.
    fn new_file(vfs: &smb3d_vfs::MemoryVfs, mode: u32) -> smb3d_vfs::Opened {
        let request = smb3d_vfs::OpenRequest {
            access: smb3d_vfs::Access::ReadWrite,
            disposition: smb3d_vfs::Disposition::Create,
            kind: smb3d_vfs::Kind::File,
            create_mode: mode,
        };
        vfs.open(&smb3d_vfs::VfsPath::parse("f").unwrap(), &request)
            .unwrap()
    }

    /// The user `uid` with the primary group `gid` and no other.
    fn identity(ids: &IdMap, uid: u32, gid: u32) -> Identity {
        Identity {
            token: smb3d_dtyp::Token {
                user: ids.user_sid(uid),
                groups: vec![ids.group_sid(gid)],
                privileges: smb3d_dtyp::Privileges::empty(),
            },
            unix: smb3d_vfs::Credentials {
                uid,
                gid,
                groups: Vec::new(),
            },
        }
    }

    #[test]
    fn mode_0750_directory() {
        let ids = IdMap::new("T");
        let sd = posix_descriptor(
            &stat(0o750, FileType::Directory),
            &PosixAcls::default(),
            &ids,
        );
        assert_eq!(sd.owner.unwrap(), ids.user_sid(1000));
        assert_eq!(sd.group.unwrap(), ids.group_sid(100));
        assert!(sd.control.contains(SdControl::DACL_PRESENT));
        let dacl = sd.dacl.unwrap();
        let masks: Vec<AccessMask> = dacl
            .aces
            .iter()
            .map(|a| a.mask_and_sid().unwrap().0)
            .collect();
        assert_eq!(masks[0], AccessMask::FILE_ALL_ACCESS);
        assert!(
            masks[1].contains(AccessMask::FILE_GENERIC_READ | AccessMask::FILE_GENERIC_EXECUTE)
        );
        assert!(!masks[1].intersects(AccessMask::FILE_WRITE_DATA));
        assert!(!masks[2].intersects(AccessMask::FILE_READ_DATA));
    }

    #[test]
    fn owner_who_may_write_gets_full_control() {
        let owner = |mode| {
            let sd = posix_descriptor(
                &stat(mode, FileType::File),
                &PosixAcls::default(),
                &IdMap::new("T"),
            );
            sd.dacl.unwrap().aces[0].mask_and_sid().unwrap().0
        };
        assert_eq!(owner(0o644), AccessMask::FILE_ALL_ACCESS);
        let read_only = owner(0o444);
        assert!(read_only.contains(
            AccessMask::FILE_GENERIC_READ
                | AccessMask::WRITE_DAC
                | AccessMask::FILE_WRITE_ATTRIBUTES
        ));
        assert!(!read_only.intersects(AccessMask::FILE_WRITE_DATA | AccessMask::DELETE));
    }

    /// Without per-user credentials a new file is the service's on disk; its descriptor makes
    /// the creator the owner. With them, the file system already has.
    #[test]
    fn creator_owns_new_files_in_the_descriptor() {
        let ids = IdMap::new("T");
        let vfs = smb3d_vfs::MemoryVfs::new();
        let opened = new_file(&vfs, 0o640);
        let stat = opened.file.stat().unwrap();
        let creator = identity(&ids, 4242, 77);
        assert!(!vfs.runs_as_users());
        let sd = initial_descriptor(&vfs, opened.file.as_ref(), &stat, &ids, &creator);
        assert_eq!(sd.owner, Some(ids.user_sid(4242)));
        assert_eq!(sd.group, Some(ids.group_sid(77)));
        let aces = sd.dacl.unwrap().aces;
        assert_eq!(
            aces[0].mask_and_sid().unwrap(),
            (AccessMask::FILE_ALL_ACCESS, &ids.user_sid(4242))
        );
        assert_ne!(stat.uid, 4242, "the file itself is not the creator's");
    }

    /// A directory 0o2777 without a stored ACL on a share whose new files get 0o660 and new
    /// directories 0o2770 passes on what Samba 4.17's acl_xattr gave a new file there: its
    /// creator and the creator's group full control, Everyone nothing; a new directory also
    /// keeps CREATOR OWNER and CREATOR GROUP for its own children (MS-DTYP 2.5.3.4.1).
    #[test]
    fn a_derived_directory_acl_passes_on_creator_entries() {
        let ids = IdMap::new("T");
        let parent = posix_descriptor(
            &stat(0o2777, FileType::Directory),
            &PosixAcls::default(),
            &ids,
        );
        assert!(inherit(&parent, false, &ids.user_sid(7), &ids.group_sid(8)).is_none());
        let synthesized = with_inheritable_entries(&parent, 0o2770 | 0o660);
        let (creator, group) = (ids.user_sid(4242), ids.group_sid(77));
        let file = inherit(&synthesized, false, &creator, &group).unwrap();
        let entries: Vec<(AccessMask, Sid, AceFlags)> = file
            .dacl
            .unwrap()
            .aces
            .iter()
            .map(|a| {
                (
                    a.mask_and_sid().unwrap().0,
                    *a.mask_and_sid().unwrap().1,
                    a.flags,
                )
            })
            .collect();
        assert_eq!(
            entries,
            [
                (AccessMask::FILE_ALL_ACCESS, creator, AceFlags::empty()),
                (AccessMask::FILE_ALL_ACCESS, group, AceFlags::empty()),
                (AccessMask::empty(), Sid::EVERYONE, AceFlags::empty()),
            ]
        );
        let dir = inherit(&synthesized, true, &creator, &group).unwrap();
        let sids: Vec<Sid> = dir
            .dacl
            .unwrap()
            .aces
            .iter()
            .map(|a| *a.mask_and_sid().unwrap().1)
            .collect();
        assert_eq!(
            sids,
            [
                creator,
                Sid::CREATOR_OWNER,
                group,
                Sid::CREATOR_GROUP,
                Sid::EVERYONE
            ]
        );
    }

    fn acl(entries: &[(PosixAclTag, u8)]) -> PosixAcl {
        PosixAcl {
            entries: entries
                .iter()
                .map(|&(tag, perm)| smb3d_dtyp::samba::PosixAce { tag, perm })
                .collect(),
        }
    }

    fn aces(sd: &SecurityDescriptor) -> Vec<(AccessMask, Sid, AceFlags)> {
        let dacl = sd.dacl.as_ref().unwrap();
        dacl.aces
            .iter()
            .map(|a| {
                let (mask, sid) = a.mask_and_sid().unwrap();
                (mask, *sid, a.flags)
            })
            .collect()
    }

    /// `setfacl -m u:2000:rw,g:300:rwx,m::r`: the named entries and the owning group get no
    /// more than the mask allows, the owner what the owner entry says.
    #[test]
    fn named_acl_entries_become_aces_limited_by_the_mask() {
        use PosixAclTag::*;
        let ids = IdMap::new("T");
        let acls = PosixAcls {
            access: Some(acl(&[
                (UserObj, 6),
                (User(2000), 6),
                (GroupObj, 6),
                (Group(300), 7),
                (Mask, 4),
                (Other, 0),
            ])),
            default: None,
        };
        let sd = posix_descriptor(&stat(0o100640, FileType::File), &acls, &ids);
        let read = rights(4, false);
        assert_eq!(
            aces(&sd),
            [
                (
                    AccessMask::FILE_ALL_ACCESS,
                    ids.user_sid(1000),
                    AceFlags::empty()
                ),
                (read, ids.user_sid(2000), AceFlags::empty()),
                (read, ids.group_sid(100), AceFlags::empty()),
                (read, ids.group_sid(300), AceFlags::empty()),
                (rights(0, false), Sid::EVERYONE, AceFlags::empty()),
            ]
        );
        assert!(!read.intersects(AccessMask::FILE_WRITE_DATA));
    }

    /// A directory's default ACL is what it passes on: a new file's descriptor names the user
    /// the default ACL names, and `inherit_acls` adds nothing of the mode's to it.
    #[test]
    fn a_default_acl_is_passed_on() {
        use PosixAclTag::*;
        let ids = IdMap::new("T");
        let team = acl(&[
            (UserObj, 7),
            (User(2000), 7),
            (GroupObj, 0),
            (Mask, 7),
            (Other, 0),
        ]);
        let acls = PosixAcls {
            access: Some(team.clone()),
            default: Some(team),
        };
        let parent = posix_descriptor(&stat(0o40770, FileType::Directory), &acls, &ids);
        let oi_ci = AceFlags::OBJECT_INHERIT | AceFlags::CONTAINER_INHERIT;
        let io = oi_ci | AceFlags::INHERIT_ONLY;
        let none = rights(0, true);
        assert_eq!(
            aces(&parent),
            [
                (
                    AccessMask::FILE_ALL_ACCESS,
                    ids.user_sid(1000),
                    AceFlags::empty()
                ),
                (AccessMask::FILE_ALL_ACCESS, ids.user_sid(2000), oi_ci),
                (none, ids.group_sid(100), AceFlags::empty()),
                (none, Sid::EVERYONE, oi_ci),
                (AccessMask::FILE_ALL_ACCESS, Sid::CREATOR_OWNER, io),
                (none, Sid::CREATOR_GROUP, io),
            ]
        );
        assert_eq!(with_inheritable_entries(&parent, 0o777), parent);
        let (creator, group) = (ids.user_sid(4242), ids.group_sid(77));
        let file = inherit(&parent, false, &creator, &group).unwrap();
        let granted: Vec<(AccessMask, Sid)> = aces(&file).iter().map(|a| (a.0, a.1)).collect();
        assert_eq!(
            granted,
            [
                (AccessMask::FILE_ALL_ACCESS, ids.user_sid(2000)),
                (none, Sid::EVERYONE),
                (AccessMask::FILE_ALL_ACCESS, creator),
                (none, group),
            ]
        );
    }

    /// A stored descriptor holds until a local setfacl changes the POSIX state; then the ACL
    /// speaks (before, the mode alone did and the user it names was refused).
    #[test]
    fn a_local_setfacl_replaces_the_stored_descriptor_with_the_acl() {
        let ids = IdMap::new("T");
        let vfs = smb3d_vfs::MemoryVfs::new();
        let opened = new_file(&vfs, 0o600);
        let file = opened.file.as_ref();
        let stat = file.stat().unwrap();
        let mine = posix_descriptor(&stat, &PosixAcls::default(), &ids);
        store(&vfs, file, &mine).unwrap();
        assert!(!in_force(&vfs, &stat, &ids, &|n| file.get_xattr(n)).derived);
        // The memory file system keeps no `system.` xattrs: the ACL is given as the kernel
        // would report it.
        let named = acl(&[
            (PosixAclTag::UserObj, 6),
            (PosixAclTag::User(2000), 6),
            (PosixAclTag::GroupObj, 0),
            (PosixAclTag::Mask, 6),
            (PosixAclTag::Other, 0),
        ])
        .to_xattr();
        let with_acl = |n: &str| match n {
            POSIX_ACL_ACCESS => Ok(Some(named.clone())),
            _ => file.get_xattr(n),
        };
        let now = in_force(&vfs, &stat, &ids, &with_acl);
        assert!(now.derived);
        let who = identity(&ids, 2000, 2000);
        assert!(allows(
            &now.sd,
            &who,
            AccessMask::FILE_GENERIC_READ | AccessMask::FILE_GENERIC_WRITE
        ));
        assert!(!allows(&mine, &who, AccessMask::FILE_GENERIC_READ));
    }

    /// A POSIX ACL xattr that does not decode (truncated, a wrong version, an entry cut in
    /// half) counts as none: the mode speaks, and nothing panics.
    #[test]
    fn an_acl_that_does_not_decode_leaves_the_mode_to_speak() {
        let ids = IdMap::new("T");
        let vfs = smb3d_vfs::MemoryVfs::new();
        let opened = new_file(&vfs, 0o640);
        let file = opened.file.as_ref();
        let stat = file.stat().unwrap();
        let from_mode = posix_descriptor(&stat, &PosixAcls::default(), &ids);
        let good = acl(&[(PosixAclTag::UserObj, 6), (PosixAclTag::Other, 0)]).to_xattr();
        for bad in [
            Vec::new(),
            vec![2],
            [&3u32.to_le_bytes()[..], &good[4..]].concat(),
            good[..good.len() - 3].to_vec(),
        ] {
            let hostile = |n: &str| match n {
                POSIX_ACL_ACCESS => Ok(Some(bad.clone())),
                _ => file.get_xattr(n),
            };
            let got = in_force(&vfs, &stat, &ids, &hostile);
            assert!(got.derived);
            assert_eq!(got.sd, from_mode, "{bad:?}");
        }
    }

    #[test]
    fn write_bit_grants_delete() {
        let sd = posix_descriptor(
            &stat(0o620, FileType::File),
            &PosixAcls::default(),
            &IdMap::new("T"),
        );
        let group = sd.dacl.unwrap().aces[1].mask_and_sid().unwrap().0;
        assert!(group.contains(AccessMask::FILE_GENERIC_WRITE | AccessMask::DELETE));
    }
}
