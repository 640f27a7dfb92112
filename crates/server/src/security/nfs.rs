//! The NFS ACEs Mac clients negotiate in the AAPL create context: the owner, group and UNIX
//! mode of a file shown in its DACL as ACCESS_DENIED entries with an empty mask (so they
//! change no access check) for the SIDs S-1-5-88-1-uid, S-1-5-88-2-gid and S-1-5-88-3-mode,
//! as Windows' NFS server names them and Samba's vfs_fruit shows them. A Mac reads the mode
//! there and changes it by setting a DACL with another mode entry.

use smb3d_dtyp::{AccessMask, Ace, AceFlags, SecurityDescriptor, Sid};
use smb3d_vfs::FileStat;

/// SECURITY_NT_AUTHORITY.
const NT_AUTHORITY: u64 = 5;
/// The NFS sub-authority, followed by 1 (users), 2 (groups) or 3 (mode).
const NFS: u32 = 88;
const USERS: u32 = 1;
const GROUPS: u32 = 2;
const MODE: u32 = 3;
/// The mode bits a client may set: never set-user-id, set-group-id or sticky.
const SETTABLE_MODE: u32 = 0o777;

/// S-1-5-88-`kind`-`value` (always some: three sub-authorities fit a SID).
fn nfs_sid(kind: u32, value: u32) -> Option<Sid> {
    Sid::new(NT_AUTHORITY, &[NFS, kind, value])
}

/// The NFS kind (1, 2 or 3) and value of an S-1-5-88 SID.
fn nfs_kind(sid: &Sid) -> Option<(u32, u32)> {
    match sid.sub_authorities() {
        [NFS, kind, value] if sid.authority() == NT_AUTHORITY => Some((*kind, *value)),
        _ => None,
    }
}

/// `sd` with the file's owner, group and mode entries appended to its DACL.
pub(crate) fn with_nfs_aces(mut sd: SecurityDescriptor, stat: &FileStat) -> SecurityDescriptor {
    if let Some(dacl) = sd.dacl.as_mut() {
        for sid in [
            nfs_sid(MODE, stat.mode & 0o7777),
            nfs_sid(USERS, stat.uid),
            nfs_sid(GROUPS, stat.gid),
        ]
        .into_iter()
        .flatten()
        {
            dacl.aces
                .push(Ace::deny(sid, AccessMask::empty(), AceFlags::empty()));
        }
    }
    sd
}

/// Takes every NFS entry out of a DACL a client sets (they are the file's own state, never
/// stored) and returns the permission bits of its mode entry, if it has one.
pub(crate) fn take_nfs_aces(sd: &mut SecurityDescriptor) -> Option<u32> {
    let dacl = sd.dacl.as_mut()?;
    let mut mode = None;
    dacl.aces.retain(|ace| {
        let Some((kind, value)) = ace.mask_and_sid().and_then(|(_, sid)| nfs_kind(sid)) else {
            return true;
        };
        if kind == MODE {
            mode = Some(value & SETTABLE_MODE);
        }
        false
    });
    mode
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_dtyp::Acl;

    fn stat(mode: u32) -> FileStat {
        crate::security::tests::stat(mode, smb3d_vfs::FileType::File)
    }

    fn sd() -> SecurityDescriptor {
        let acl = Acl::new(vec![Ace::allow(
            Sid::unix_user(1000),
            AccessMask::FILE_ALL_ACCESS,
            AceFlags::empty(),
        )]);
        SecurityDescriptor::new(Sid::unix_user(1000), Sid::unix_group(100), acl)
    }

    /// Golden bytes of the mode entry: ACCESS_DENIED, no flags, size 28, empty mask,
    /// S-1-5-88-3-0644.
    #[test]
    fn the_mode_entry_is_s_1_5_88_3_mode_denying_nothing() {
        let shown = with_nfs_aces(sd(), &stat(0o100_644));
        let aces = &shown.dacl.as_ref().unwrap().aces;
        assert_eq!(aces.len(), 4);
        let mut buf = Vec::new();
        aces[1].encode(&mut smb3d_wire::Writer::new(&mut buf));
        assert_eq!(
            buf,
            [
                1, 0, 28, 0, 0, 0, 0, 0, 1, 3, 0, 0, 0, 0, 0, 5, 88, 0, 0, 0, 3, 0, 0, 0, 0xa4, 1,
                0, 0
            ]
        );
        assert_eq!(
            aces[2].mask_and_sid().unwrap().1,
            &nfs_sid(USERS, 1000).unwrap()
        );
        assert_eq!(
            aces[3].mask_and_sid().unwrap().1,
            &nfs_sid(GROUPS, 100).unwrap()
        );
    }

    #[test]
    fn setting_takes_every_nfs_entry_out_and_keeps_the_mode() {
        let mut set = with_nfs_aces(sd(), &stat(0o100_640));
        let extra = Ace::deny(
            nfs_sid(USERS, 27).unwrap(),
            AccessMask::empty(),
            AceFlags::empty(),
        );
        set.dacl
            .as_mut()
            .unwrap()
            .aces
            .extend([extra.clone(), extra]);
        assert_eq!(take_nfs_aces(&mut set), Some(0o640));
        assert_eq!(set, sd());
        // Set-user-id and friends are never taken from the network.
        let mut set = sd();
        set.dacl.as_mut().unwrap().aces.push(Ace::deny(
            nfs_sid(MODE, 0o4755).unwrap(),
            AccessMask::empty(),
            AceFlags::empty(),
        ));
        assert_eq!(take_nfs_aces(&mut set), Some(0o755));
        let mut plain = sd();
        assert_eq!(take_nfs_aces(&mut plain), None);
        assert_eq!(plain, sd());
    }
}
