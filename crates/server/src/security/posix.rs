//! The POSIX view of an NT ACL, as Samba's acl_xattr over posix_acls keeps one: when a DACL is
//! set, the file's mode and POSIX ACLs change so that local users, and the kernel's checks on
//! the server's own calls made as a user, allow what the DACL allows.
//!
//! Each POSIX class gets the read, write and execute bits of the rights the DACL gives a token
//! standing for it (MS-DTYP 2.5.3.2): the file's owner, its group, other users, and every user
//! or group an ACE names that has a Unix id (named ACL entries). Every such token also holds
//! Everyone, Authenticated Users and BUILTIN\Users, which every session holds. A directory's
//! inheritable ACEs become its default ACL, CREATOR OWNER and CREATOR GROUP standing for the
//! new object's owner and group.

use smb3d_dtyp::samba::{PosixAce, PosixAcl, PosixAclTag};
use smb3d_dtyp::{
    AccessMask, AceFlags, Acl, Privileges, SecurityDescriptor, Sid, Token, maximum_allowed,
};
use smb3d_vfs::{FileStat, FileType, VfsError, VfsFile};

use super::{POSIX_ACL_ACCESS, POSIX_ACL_DEFAULT};
use crate::identity::{IdMap, UnixId};

/// Groups every session's token holds.
const EVERYBODY: [Sid; 3] = [Sid::EVERYONE, Sid::AUTHENTICATED_USERS, Sid::BUILTIN_USERS];

/// Read, write and execute bits for a set of rights.
fn bits(rights: AccessMask, directory: bool) -> u8 {
    let mut bits = 0;
    if rights.contains(AccessMask::FILE_READ_DATA) {
        bits |= 4;
    }
    // Write permission lets a file be overwritten, not only appended to; in a directory it
    // lets both files and subdirectories be added.
    let write = if directory {
        AccessMask::FILE_ADD_FILE | AccessMask::FILE_ADD_SUBDIRECTORY
    } else {
        AccessMask::FILE_WRITE_DATA
    };
    if rights.intersects(write) {
        bits |= 2;
    }
    if rights.contains(AccessMask::FILE_EXECUTE) {
        bits |= 1;
    }
    // Windows does not check traversal (every token has SeChangeNotifyPrivilege): a directory
    // that may be listed or written may be searched.
    if directory && bits != 0 {
        bits |= 1;
    }
    bits
}

/// The bits `sd` gives a token made of `principal`, `aliases` of it and [`EVERYBODY`].
fn class_bits(sd: &SecurityDescriptor, principal: Sid, aliases: &[Sid], directory: bool) -> u8 {
    let mut groups = EVERYBODY.to_vec();
    groups.extend_from_slice(aliases);
    let token = Token {
        user: principal,
        groups,
        privileges: Privileges::empty(),
    };
    bits(maximum_allowed(sd, &token), directory)
}

/// The mode and POSIX ACLs a descriptor maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PosixView {
    owner: u8,
    group: u8,
    other: u8,
    /// Named users and groups, in kernel order.
    named: Vec<PosixAce>,
    /// A directory's default ACL, when it has inheritable ACEs.
    default: Option<PosixAcl>,
}

/// The named entries for the users and groups `acl` names, other than `exclude` (the owning
/// user and group, which have entries of their own).
fn named_entries(
    sd: &SecurityDescriptor,
    acl: &Acl,
    ids: &IdMap,
    exclude: (Option<u32>, Option<u32>),
    directory: bool,
) -> Vec<PosixAce> {
    let mut entries: Vec<PosixAce> = Vec::new();
    for ace in acl
        .aces
        .iter()
        .filter(|a| !a.flags.contains(AceFlags::INHERIT_ONLY))
    {
        let Some((_, sid)) = ace.mask_and_sid() else {
            continue;
        };
        let user = |uid: u32| {
            (Some(uid) != exclude.0).then(|| {
                let aliases = [Sid::unix_user(uid), ids.user_sid(uid)];
                (PosixAclTag::User(uid), aliases)
            })
        };
        let group = |gid: u32| {
            (Some(gid) != exclude.1).then(|| {
                let aliases = [Sid::unix_group(gid), ids.group_sid(gid)];
                (PosixAclTag::Group(gid), aliases)
            })
        };
        let tags = match ids.unix_id(sid) {
            Some(UnixId::User(uid)) => [user(uid), None],
            Some(UnixId::Group(gid)) => [None, group(gid)],
            // A domain account's id is its uid and its gid alike: the entry is given as both,
            // and only the one the account acts as ever matches.
            Some(UnixId::Account(id)) => [user(id), group(id)],
            None => continue,
        };
        for (tag, aliases) in tags.into_iter().flatten() {
            if entries.iter().any(|e| e.tag == tag) {
                continue;
            }
            let perm = class_bits(sd, *sid, &aliases, directory);
            entries.push(PosixAce { tag, perm });
        }
    }
    // Kernel order: named users by uid, then named groups by gid.
    entries.sort_by_key(|e| match e.tag {
        PosixAclTag::User(uid) => (0, uid),
        PosixAclTag::Group(gid) => (1, gid),
        _ => (2, 0),
    });
    entries
}

/// A full POSIX ACL from class bits and named entries, with the mask every named entry needs.
fn full_acl(owner: u8, group: u8, other: u8, named: &[PosixAce]) -> PosixAcl {
    let users = named
        .iter()
        .filter(|e| matches!(e.tag, PosixAclTag::User(_)));
    let groups = named
        .iter()
        .filter(|e| matches!(e.tag, PosixAclTag::Group(_)));
    let mut entries = vec![PosixAce {
        tag: PosixAclTag::UserObj,
        perm: owner,
    }];
    entries.extend(users.copied());
    entries.push(PosixAce {
        tag: PosixAclTag::GroupObj,
        perm: group,
    });
    entries.extend(groups.copied());
    if !named.is_empty() {
        let mask = named.iter().fold(group, |m, e| m | e.perm);
        entries.push(PosixAce {
            tag: PosixAclTag::Mask,
            perm: mask,
        });
    }
    entries.push(PosixAce {
        tag: PosixAclTag::Other,
        perm: other,
    });
    PosixAcl { entries }
}

impl PosixView {
    /// The view of `sd` for a file or directory with metadata `stat`.
    pub fn of(sd: &SecurityDescriptor, stat: &FileStat, ids: &IdMap) -> PosixView {
        let directory = stat.file_type == FileType::Directory;
        let owner = class_bits(
            sd,
            ids.user_sid(stat.uid),
            &[Sid::unix_user(stat.uid)],
            directory,
        );
        let group = class_bits(
            sd,
            ids.group_sid(stat.gid),
            &[Sid::unix_group(stat.gid)],
            directory,
        );
        let other = class_bits(sd, Sid::EVERYONE, &[], directory);
        let named = sd.effective_dacl().map_or_else(Vec::new, |dacl| {
            named_entries(sd, dacl, ids, (Some(stat.uid), Some(stat.gid)), directory)
        });
        let default = if directory {
            default_acl(sd, ids)
        } else {
            None
        };
        PosixView {
            owner,
            group,
            other,
            named,
            default,
        }
    }

    /// The access ACL, when the mode alone cannot say it (there are named entries).
    pub fn access_acl(&self) -> Option<PosixAcl> {
        (!self.named.is_empty()).then(|| full_acl(self.owner, self.group, self.other, &self.named))
    }

    /// `mode` with its permission bits replaced by the classes' (the group bits are the
    /// mask's when there are named entries, as the kernel shows them).
    pub fn mode(&self, mode: u32) -> u32 {
        let group = self.named.iter().fold(self.group, |m, e| m | e.perm);
        (mode & !0o777)
            | (u32::from(self.owner) << 6)
            | (u32::from(group) << 3)
            | u32::from(self.other)
    }

    /// Sets the file's mode and ACLs to this view. Where the file system has no POSIX ACLs,
    /// the mode alone carries it (named users and groups then go without).
    pub fn apply(&self, file: &dyn VfsFile, stat: &FileStat) -> Result<(), VfsError> {
        let fallback_mode = (stat.mode & !0o777)
            | (u32::from(self.owner) << 6)
            | (u32::from(self.group) << 3)
            | u32::from(self.other);
        match self.access_acl() {
            Some(acl) => match file.set_xattr(POSIX_ACL_ACCESS, &acl.to_xattr()) {
                // The kernel derives the mode from the ACL.
                Ok(()) => {}
                Err(VfsError::Unsupported) => file.set_mode(fallback_mode)?,
                Err(e) => return Err(e),
            },
            None => {
                remove(file, POSIX_ACL_ACCESS)?;
                file.set_mode(self.mode(stat.mode))?;
            }
        }
        if stat.file_type == FileType::Directory {
            match &self.default {
                Some(acl) => match file.set_xattr(POSIX_ACL_DEFAULT, &acl.to_xattr()) {
                    Ok(()) | Err(VfsError::Unsupported) => {}
                    Err(e) => return Err(e),
                },
                None => remove(file, POSIX_ACL_DEFAULT)?,
            }
        }
        Ok(())
    }
}

/// Removes an ACL xattr that may not exist, on a file system that may not have them.
fn remove(file: &dyn VfsFile, name: &str) -> Result<(), VfsError> {
    match file.remove_xattr(name) {
        Ok(()) | Err(VfsError::NotFound | VfsError::Unsupported) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The default ACL of a directory: its inheritable ACEs, evaluated as if they applied, with
/// CREATOR OWNER and CREATOR GROUP as the owning user and group of what will be created.
fn default_acl(sd: &SecurityDescriptor, ids: &IdMap) -> Option<PosixAcl> {
    let dacl = sd.effective_dacl()?;
    let inheritable = AceFlags::OBJECT_INHERIT | AceFlags::CONTAINER_INHERIT;
    let aces: Vec<_> = dacl
        .aces
        .iter()
        .filter(|a| a.flags.intersects(inheritable))
        .map(|a| {
            let mut ace = a.clone();
            ace.flags.remove(AceFlags::INHERIT_ONLY);
            ace
        })
        .collect();
    if aces.is_empty() {
        return None;
    }
    let children = SecurityDescriptor::new(Sid::NOBODY, Sid::NOBODY, Acl::new(aces));
    // What is created below may be a file or a directory: the directory reading of the bits
    // (search permission with read or write) is what the default ACL passes to both, and the
    // kernel clears execute for files created without it.
    let owner = class_bits(&children, Sid::CREATOR_OWNER, &[], true);
    let group = class_bits(&children, Sid::CREATOR_GROUP, &[], true);
    let other = class_bits(&children, Sid::EVERYONE, &[], true);
    let named = children.dacl.as_ref().map_or_else(Vec::new, |acl| {
        named_entries(&children, acl, ids, (None, None), true)
    });
    Some(full_acl(owner, group, other, &named))
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_dtyp::Ace;

    use crate::security::tests::stat;

    fn view(aces: Vec<Ace>, file_type: FileType) -> (PosixView, IdMap) {
        let ids = IdMap::new("T");
        let st = stat(0o100644, file_type);
        let owner = ids.user_sid(st.uid);
        let sd = SecurityDescriptor::new(owner, ids.group_sid(st.gid), Acl::new(aces));
        (PosixView::of(&sd, &st, &ids), ids)
    }

    const READ: AccessMask = AccessMask::FILE_GENERIC_READ;
    const WRITE: AccessMask = AccessMask::FILE_GENERIC_WRITE;

    #[test]
    fn classes_from_owner_group_and_everyone() {
        let ids = IdMap::new("T");
        let (v, _) = view(
            vec![
                Ace::allow(ids.user_sid(1000), READ | WRITE, AceFlags::empty()),
                Ace::allow(ids.group_sid(100), READ, AceFlags::empty()),
            ],
            FileType::File,
        );
        assert_eq!(v.mode(0o100777), 0o100640);
        assert_eq!(v.access_acl(), None);
        assert_eq!(v.default, None);
        // Everyone's rights reach every class, as every token holds Everyone.
        let (v, _) = view(
            vec![Ace::allow(Sid::EVERYONE, READ, AceFlags::empty())],
            FileType::File,
        );
        assert_eq!(v.mode(0o100000), 0o100444);
    }

    #[test]
    fn deny_and_owner_rights() {
        let ids = IdMap::new("T");
        let owner = ids.user_sid(1000);
        let (v, _) = view(
            vec![
                Ace::deny(owner, AccessMask::FILE_WRITE_DATA, AceFlags::empty()),
                Ace::allow(Sid::EVERYONE, READ | WRITE, AceFlags::empty()),
            ],
            FileType::File,
        );
        assert_eq!(v.mode(0o100000), 0o100466);
        let (v, _) = view(
            vec![Ace::allow(
                Sid::OWNER_RIGHTS,
                AccessMask::FILE_WRITE_DATA,
                AceFlags::empty(),
            )],
            FileType::File,
        );
        assert_eq!(v.mode(0o100000), 0o100200);
    }

    #[test]
    fn named_users_and_groups_need_an_acl() {
        let ids = IdMap::new("T");
        let (v, _) = view(
            vec![
                Ace::allow(ids.user_sid(1000), READ | WRITE, AceFlags::empty()),
                Ace::allow(Sid::unix_user(2000), READ, AceFlags::empty()),
                Ace::allow(ids.group_sid(300), WRITE, AceFlags::empty()),
                // Without a Unix id: nobody in particular to name.
                Ace::allow(Sid::OWNER_RIGHTS, READ, AceFlags::INHERIT_ONLY),
            ],
            FileType::File,
        );
        let acl = v.access_acl().unwrap();
        let entries: Vec<(PosixAclTag, u8)> = acl.entries.iter().map(|e| (e.tag, e.perm)).collect();
        assert_eq!(
            entries,
            [
                (PosixAclTag::UserObj, 6),
                (PosixAclTag::User(2000), 4),
                (PosixAclTag::GroupObj, 0),
                (PosixAclTag::Group(300), 2),
                (PosixAclTag::Mask, 6),
                (PosixAclTag::Other, 0),
            ]
        );
        assert_eq!(v.mode(0o100000), 0o100660);
    }

    #[test]
    fn directories_search_what_they_list_or_write() {
        let ids = IdMap::new("T");
        let (v, _) = view(
            vec![
                Ace::allow(
                    ids.user_sid(1000),
                    AccessMask::FILE_ADD_FILE,
                    AceFlags::empty(),
                ),
                Ace::allow(
                    Sid::EVERYONE,
                    AccessMask::FILE_READ_ATTRIBUTES,
                    AceFlags::empty(),
                ),
            ],
            FileType::Directory,
        );
        assert_eq!(v.mode(0o40000), 0o40300);
        assert_eq!(v.default, None);
    }

    #[test]
    fn inheritable_aces_make_the_default_acl() {
        let ids = IdMap::new("T");
        let (v, _) = view(
            vec![
                Ace::allow(
                    ids.user_sid(1000),
                    AccessMask::FILE_ALL_ACCESS,
                    AceFlags::empty(),
                ),
                Ace::allow(
                    Sid::CREATOR_OWNER,
                    READ | WRITE,
                    AceFlags::INHERIT_ONLY | AceFlags::OBJECT_INHERIT,
                ),
                Ace::allow(
                    Sid::unix_user(2000),
                    READ,
                    AceFlags::CONTAINER_INHERIT | AceFlags::OBJECT_INHERIT,
                ),
            ],
            FileType::Directory,
        );
        // The ACE for user 2000 applies to the directory too.
        assert_eq!(v.access_acl().unwrap().entries.len(), 5);
        let default = v.default.unwrap();
        let entries: Vec<(PosixAclTag, u8)> =
            default.entries.iter().map(|e| (e.tag, e.perm)).collect();
        assert_eq!(
            entries,
            [
                (PosixAclTag::UserObj, 7),
                (PosixAclTag::User(2000), 5),
                (PosixAclTag::GroupObj, 0),
                (PosixAclTag::Mask, 5),
                (PosixAclTag::Other, 0),
            ]
        );
    }

    #[test]
    fn no_dacl_is_everything() {
        let ids = IdMap::new("T");
        let st = stat(0o100600, FileType::File);
        let mut sd =
            SecurityDescriptor::new(ids.user_sid(1000), ids.group_sid(100), Acl::new(vec![]));
        assert_eq!(PosixView::of(&sd, &st, &ids).mode(st.mode), 0o100000);
        sd.dacl = None;
        assert_eq!(PosixView::of(&sd, &st, &ids).mode(st.mode), 0o100777);
    }
}
