//! What an open of an existing file is granted (MS-FSA 2.1.5.1.2.1, MS-DTYP 2.5.3.2), the
//! maximal access the MxAc create context reports (MS-SMB2 3.3.5.9.5), and whether a listing
//! shows an entry to a user (access-based enumeration).

use std::cell::OnceCell;

use smb3d_dtyp::{AccessMask, NtStatus, SecurityDescriptor, access_check, maximum_allowed};
use smb3d_vfs::{Access, Disposition, Kind, OpenRequest, Vfs, VfsPath};

use smb3d_vfs::FileStat;

use super::{allows, descriptor, in_force};
use crate::identity::{IdMap, Identity};

/// Rights the containing directory can give on a file the file's own ACL withholds
/// (MS-FSA 2.1.5.1.2.1): DELETE to whoever may delete the directory's children, and
/// FILE_READ_ATTRIBUTES to whoever may list it.
const FROM_PARENT: [(AccessMask, AccessMask); 2] = [
    (AccessMask::DELETE, AccessMask::FILE_DELETE_CHILD),
    (
        AccessMask::FILE_READ_ATTRIBUTES,
        AccessMask::FILE_LIST_DIRECTORY,
    ),
];

/// The directory containing a file, whose descriptor is read at most once and only when a
/// rule needs it.
pub(crate) struct Parent<'a> {
    vfs: &'a dyn Vfs,
    path: &'a VfsPath,
    ids: &'a IdMap,
    sd: OnceCell<Option<ParentDescriptor>>,
}

/// A parent's descriptor and POSIX state, and whether the descriptor is derived from it.
struct ParentDescriptor {
    sd: SecurityDescriptor,
    stat: FileStat,
    derived: bool,
}

impl<'a> Parent<'a> {
    /// The parent of `path` (none for the share root).
    pub fn of(vfs: &'a dyn Vfs, path: &'a VfsPath, ids: &'a IdMap) -> Self {
        Self {
            vfs,
            path,
            ids,
            sd: OnceCell::new(),
        }
    }

    /// The parent's descriptor, `None` at the share root or if it cannot be read.
    pub fn descriptor(&self) -> Option<&SecurityDescriptor> {
        self.read().map(|parent| &parent.sd)
    }

    /// The parent's POSIX state, when its descriptor is derived from it (none valid stored).
    pub fn derived_from(&self) -> Option<&FileStat> {
        self.read()
            .filter(|parent| parent.derived)
            .map(|parent| &parent.stat)
    }

    /// The parent's POSIX state.
    pub fn stat(&self) -> Option<&FileStat> {
        self.read().map(|parent| &parent.stat)
    }

    fn read(&self) -> Option<&ParentDescriptor> {
        self.sd
            .get_or_init(|| {
                let (parent, _) = self.path.parent_and_name()?;
                let request = OpenRequest {
                    access: Access::MetadataOnly,
                    disposition: Disposition::Open,
                    kind: Kind::Directory,
                    create_mode: 0,
                };
                let dir = self.vfs.open(&parent, &request).ok()?;
                let stat = dir.file.stat().ok()?;
                let file = dir.file.as_ref();
                let in_force = in_force(self.vfs, &stat, self.ids, &|name| file.get_xattr(name));
                Some(ParentDescriptor {
                    derived: in_force.derived,
                    sd: in_force.sd,
                    stat,
                })
            })
            .as_ref()
    }

    /// Whether the parent grants `access` to `who`.
    pub fn allows(&self, who: &Identity, access: AccessMask) -> bool {
        self.descriptor().is_some_and(|sd| allows(sd, who, access))
    }
}

/// The rights `who` has on a file protected by `sd`: what its DACL grants, and of `wanted`
/// what the parent adds. Root, like Samba's, is not checked.
fn allowed(
    sd: &SecurityDescriptor,
    who: &Identity,
    wanted: AccessMask,
    parent: &Parent<'_>,
) -> AccessMask {
    if who.unix.uid == 0 {
        return AccessMask::FILE_ALL_ACCESS;
    }
    let mut allowed = maximum_allowed(sd, &who.token);
    for (right, parent_right) in FROM_PARENT {
        if wanted.contains(right) && !allowed.contains(right) && parent.allows(who, parent_right) {
            allowed |= right;
        }
    }
    allowed
}

/// Every right `who` has on the file: MaximalAccess for the MxAc create context.
pub(crate) fn maximal(sd: &SecurityDescriptor, who: &Identity, parent: &Parent<'_>) -> AccessMask {
    allowed(sd, who, AccessMask::FILE_ALL_ACCESS, parent)
}

/// The rights an open of an existing file gets: with MAXIMUM_ALLOWED everything `who` may
/// have, else exactly `desired` (generic rights already mapped), or STATUS_ACCESS_DENIED.
/// `required` holds rights the operation needs without the open being granted them (an
/// overwrite needs FILE_WRITE_DATA, as Samba and Windows check).
pub(crate) fn grant(
    sd: &SecurityDescriptor,
    who: &Identity,
    desired: AccessMask,
    required: AccessMask,
    parent: &Parent<'_>,
) -> Result<AccessMask, NtStatus> {
    let maximum = desired.contains(AccessMask::MAXIMUM_ALLOWED);
    let requested = desired.without(AccessMask::MAXIMUM_ALLOWED);
    let wanted = if maximum {
        AccessMask::FILE_ALL_ACCESS
    } else {
        requested | required
    };
    let allowed = allowed(sd, who, wanted, parent);
    if !allowed.contains(requested | required) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    Ok(if maximum {
        allowed | requested
    } else {
        requested
    })
}

/// Whether `who` may put a file (a directory with `is_directory`) at `to` by renaming it there:
/// the target's directory must let it add the entry, as the I/O manager checks by opening that
/// directory before a rename; and a file it replaces (with `replace`) must grant it DELETE,
/// from its own ACL or the directory's FILE_DELETE_CHILD (MS-FSA 2.1.5.1.2.1).
pub(crate) fn may_place(
    vfs: &dyn Vfs,
    to: &VfsPath,
    is_directory: bool,
    replace: bool,
    who: &Identity,
    ids: &IdMap,
) -> Result<(), NtStatus> {
    let parent = Parent::of(vfs, to, ids);
    let add = if is_directory {
        AccessMask::FILE_ADD_SUBDIRECTORY
    } else {
        AccessMask::FILE_ADD_FILE
    };
    if parent.descriptor().is_some() && !parent.allows(who, add) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    if replace {
        let request = OpenRequest {
            access: Access::MetadataOnly,
            disposition: Disposition::Open,
            kind: Kind::Any,
            create_mode: 0,
        };
        if let Ok(target) = vfs.open(to, &request)
            && let Ok(stat) = target.file.stat()
        {
            let sd = descriptor(vfs, target.file.as_ref(), &stat, ids);
            grant(&sd, who, AccessMask::DELETE, AccessMask::empty(), &parent)?;
        }
    }
    Ok(())
}

/// Whether a listing shows an entry with descriptor `sd` to `who` on a share that hides what
/// users cannot read: only with all of FILE_GENERIC_READ from the entry's own ACL, as Windows'
/// access-based enumeration and Samba's `hide unreadable` decide (the parent's rights do not
/// count).
pub(crate) fn readable(sd: &SecurityDescriptor, who: &Identity) -> bool {
    who.unix.uid == 0 || access_check(sd, &who.token, AccessMask::FILE_GENERIC_READ).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_dtyp::{Ace, AceFlags, Acl, Privileges, Sid, Token};
    use smb3d_vfs::{Credentials, MemoryVfs};

    use crate::security::store;

    fn user(uid: u32, ids: &IdMap) -> Identity {
        Identity {
            token: Token {
                user: ids.user_sid(uid),
                groups: vec![Sid::EVERYONE],
                privileges: Privileges::empty(),
            },
            unix: Credentials {
                uid,
                gid: uid,
                groups: Vec::new(),
            },
        }
    }

    fn dir_with(vfs: &MemoryVfs, name: &str, sd: &SecurityDescriptor) {
        let opened = vfs
            .open(
                &VfsPath::parse(name).unwrap(),
                &OpenRequest {
                    access: Access::MetadataOnly,
                    disposition: Disposition::Create,
                    kind: Kind::Directory,
                    create_mode: 0o755,
                },
            )
            .unwrap();
        store(vfs, opened.file.as_ref(), sd).unwrap();
    }

    /// smb2.acls OWNER and GENERIC: an ACL granting the owner nothing still leaves the owner's
    /// READ_CONTROL and WRITE_DAC, DELETE from a parent granting FILE_DELETE_CHILD and
    /// FILE_READ_ATTRIBUTES from a parent granting FILE_LIST_DIRECTORY.
    #[test]
    fn parent_gives_delete_and_read_attributes() {
        let ids = IdMap::new("T");
        let vfs = MemoryVfs::new();
        let alice = user(1000, &ids);
        let owner = alice.token.user;
        let parent_sd = |mask| {
            SecurityDescriptor::new(
                owner,
                owner,
                Acl::new(vec![Ace::allow(owner, mask, AceFlags::empty())]),
            )
        };
        dir_with(&vfs, "all", &parent_sd(AccessMask::FILE_ALL_ACCESS));
        dir_with(&vfs, "list", &parent_sd(AccessMask::FILE_LIST_DIRECTORY));
        let file_sd = parent_sd(AccessMask::empty());
        let path = |p| VfsPath::parse(p).unwrap();

        let all = path("all/f");
        let parent = Parent::of(&vfs, &all, &ids);
        assert_eq!(
            maximal(&file_sd, &alice, &parent),
            AccessMask::READ_CONTROL
                | AccessMask::WRITE_DAC
                | AccessMask::DELETE
                | AccessMask::FILE_READ_ATTRIBUTES
        );
        let write = AccessMask::FILE_WRITE_DATA;
        assert_eq!(
            grant(&file_sd, &alice, write, AccessMask::empty(), &parent),
            Err(NtStatus::ACCESS_DENIED)
        );
        assert_eq!(
            grant(
                &file_sd,
                &alice,
                AccessMask::FILE_READ_ATTRIBUTES,
                AccessMask::empty(),
                &parent
            ),
            Ok(AccessMask::FILE_READ_ATTRIBUTES)
        );

        let list = path("list/f");
        let parent = Parent::of(&vfs, &list, &ids);
        assert_eq!(
            grant(
                &file_sd,
                &alice,
                AccessMask::MAXIMUM_ALLOWED,
                AccessMask::empty(),
                &parent
            ),
            Ok(AccessMask::READ_CONTROL | AccessMask::WRITE_DAC | AccessMask::FILE_READ_ATTRIBUTES)
        );
        assert_eq!(
            grant(
                &file_sd,
                &alice,
                AccessMask::DELETE,
                AccessMask::empty(),
                &parent
            ),
            Err(NtStatus::ACCESS_DENIED)
        );
    }

    /// smb2.acls OVERWRITE_READ_ONLY_FILE: reading is allowed, overwriting needs
    /// FILE_WRITE_DATA, which the open does not get.
    #[test]
    fn overwrite_needs_write_data() {
        let ids = IdMap::new("T");
        let vfs = MemoryVfs::new();
        let alice = user(1000, &ids);
        let owner = alice.token.user;
        let sd = SecurityDescriptor::new(
            owner,
            owner,
            Acl::new(vec![Ace::allow(
                owner,
                AccessMask::FILE_READ_DATA,
                AceFlags::empty(),
            )]),
        );
        let path = VfsPath::parse("f").unwrap();
        let parent = Parent::of(&vfs, &path, &ids);
        let read = AccessMask::FILE_READ_DATA;
        assert_eq!(
            grant(&sd, &alice, read, AccessMask::empty(), &parent),
            Ok(read)
        );
        assert_eq!(
            grant(&sd, &alice, read, AccessMask::FILE_WRITE_DATA, &parent),
            Err(NtStatus::ACCESS_DENIED)
        );
        let owner_rw = SecurityDescriptor::new(
            owner,
            owner,
            Acl::new(vec![Ace::allow(
                owner,
                read | AccessMask::FILE_WRITE_DATA,
                AceFlags::empty(),
            )]),
        );
        assert_eq!(
            grant(
                &owner_rw,
                &alice,
                read,
                AccessMask::FILE_WRITE_DATA,
                &parent
            ),
            Ok(read)
        );
    }

    /// A rename needs the target directory to allow adding the entry, and DELETE on a file
    /// it replaces (here from the directory's FILE_DELETE_CHILD).
    #[test]
    fn rename_target_rights() {
        let ids = IdMap::new("T");
        let vfs = MemoryVfs::new();
        let alice = user(1000, &ids);
        let owner = alice.token.user;
        let dir_sd = |mask| {
            SecurityDescriptor::new(
                owner,
                owner,
                Acl::new(vec![Ace::allow(owner, mask, AceFlags::empty())]),
            )
        };
        let add = AccessMask::FILE_ADD_FILE | AccessMask::FILE_LIST_DIRECTORY;
        dir_with(&vfs, "open", &dir_sd(add | AccessMask::FILE_DELETE_CHILD));
        dir_with(&vfs, "addonly", &dir_sd(add));
        dir_with(&vfs, "closed", &dir_sd(AccessMask::FILE_LIST_DIRECTORY));
        for dir in ["open", "addonly"] {
            let target = VfsPath::parse(&format!("{dir}/t")).unwrap();
            let created = vfs
                .open(
                    &target,
                    &OpenRequest {
                        access: Access::ReadWrite,
                        disposition: Disposition::Create,
                        kind: Kind::File,
                        create_mode: 0o644,
                    },
                )
                .unwrap();
            store(&vfs, created.file.as_ref(), &dir_sd(AccessMask::empty())).unwrap();
        }
        let place = |path: &str, dir: bool, replace: bool| {
            may_place(
                &vfs,
                &VfsPath::parse(path).unwrap(),
                dir,
                replace,
                &alice,
                &ids,
            )
        };
        assert_eq!(place("open/new", false, false), Ok(()));
        assert_eq!(
            place("open/new", true, false),
            Err(NtStatus::ACCESS_DENIED),
            "adding a subdirectory is another right"
        );
        assert_eq!(
            place("closed/new", false, false),
            Err(NtStatus::ACCESS_DENIED)
        );
        assert_eq!(place("open/t", false, true), Ok(()));
        assert_eq!(
            place("addonly/t", false, true),
            Err(NtStatus::ACCESS_DENIED)
        );
        assert_eq!(
            place("addonly/t", false, false),
            Ok(()),
            "without replacing, the collision is the rename's to report"
        );
    }

    /// smb2.acls ACCESSBASED: an entry is listed only with all of FILE_GENERIC_READ.
    #[test]
    fn listing_needs_generic_read() {
        let ids = IdMap::new("T");
        let alice = user(1000, &ids);
        let owner = alice.token.user;
        let sd = |mask| {
            SecurityDescriptor::new(
                owner,
                owner,
                Acl::new(vec![Ace::allow(owner, mask, AceFlags::empty())]),
            )
        };
        let read = AccessMask::FILE_GENERIC_READ;
        assert!(readable(&sd(read), &alice));
        for missing in [
            AccessMask::FILE_READ_EA,
            AccessMask::FILE_READ_ATTRIBUTES,
            AccessMask::FILE_READ_DATA,
        ] {
            assert!(!readable(&sd(read.without(missing)), &alice));
        }
        assert!(!readable(&sd(read), &user(1001, &ids)));
        assert!(readable(&sd(AccessMask::empty()), &user(0, &ids)));
    }
}
