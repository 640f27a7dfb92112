//! Security descriptors clients see (MS-DTYP 2.4.6). Until NT ACLs are stored in
//! `security.NTACL`, a file's descriptor is derived from its POSIX owner, group and mode, with
//! the Unix-id SIDs Samba uses for accounts it has no other SID for (S-1-22-1-uid,
//! S-1-22-2-gid).

use smb3d_dtyp::{AccessMask, Ace, AceFlags, Acl, SecurityDescriptor, Sid};
use smb3d_vfs::FileStat;

use crate::fileinfo;

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

/// The descriptor for a file: owner and group from the file, one allow ACE each for the owner,
/// the group and Everyone from the permission bits. The owner may always change the ACL and
/// ownership, as on Unix.
pub(crate) fn posix_descriptor(stat: &FileStat) -> SecurityDescriptor {
    let dir = fileinfo::is_directory(stat);
    let owner = Sid::unix_user(stat.uid);
    let group = Sid::unix_group(stat.gid);
    let owner_rights =
        rights(stat.mode >> 6, dir) | AccessMask::WRITE_DAC | AccessMask::WRITE_OWNER;
    let aces = vec![
        Ace::allow(owner, owner_rights, AceFlags::empty()),
        Ace::allow(group, rights(stat.mode >> 3, dir), AceFlags::empty()),
        Ace::allow(Sid::EVERYONE, rights(stat.mode, dir), AceFlags::empty()),
    ];
    SecurityDescriptor::new(owner, group, Acl::new(aces))
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_dtyp::SdControl;
    use smb3d_vfs::FileType;

    fn stat(mode: u32, file_type: FileType) -> FileStat {
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

    #[test]
    fn mode_0750_directory() {
        let sd = posix_descriptor(&stat(0o750, FileType::Directory));
        assert_eq!(sd.owner.unwrap().to_string(), "S-1-22-1-1000");
        assert_eq!(sd.group.unwrap().to_string(), "S-1-22-2-100");
        assert!(sd.control.contains(SdControl::DACL_PRESENT));
        let dacl = sd.dacl.unwrap();
        let masks: Vec<AccessMask> = dacl
            .aces
            .iter()
            .map(|a| a.mask_and_sid().unwrap().0)
            .collect();
        assert_eq!(
            masks[0],
            AccessMask::FILE_ALL_ACCESS | AccessMask::WRITE_DAC | AccessMask::WRITE_OWNER
        );
        assert!(
            masks[1].contains(AccessMask::FILE_GENERIC_READ | AccessMask::FILE_GENERIC_EXECUTE)
        );
        assert!(!masks[1].intersects(AccessMask::FILE_WRITE_DATA));
        assert!(!masks[2].intersects(AccessMask::FILE_READ_DATA));
    }

    #[test]
    fn write_bit_grants_delete() {
        let sd = posix_descriptor(&stat(0o620, FileType::File));
        let group = sd.dacl.unwrap().aces[1].mask_and_sid().unwrap().0;
        assert!(group.contains(AccessMask::FILE_GENERIC_WRITE | AccessMask::DELETE));
    }
}
