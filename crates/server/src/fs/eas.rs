//! Extended attributes (MS-FSCC 2.4.15 FILE_FULL_EA_INFORMATION) stored as `user.<name>`
//! xattrs, as Samba stores them, so that a share moves between the two servers with its EAs.

use smb3d_dtyp::NtStatus;
use smb3d_dtyp::samba::{XATTR_DOSATTRIB_NAME, XATTR_NTACL_NAME};
use smb3d_fscc::{EaFlags, FullEa, full_ea_list};
use smb3d_vfs::{VfsError, VfsFile};

use crate::fs::fileinfo::REPARSE_XATTR;
use crate::fs::streams::STREAM_XATTR_PREFIX;
use crate::limits::MAX_EA_SIZE_LIMIT;
use crate::security::{POSIX_ACL_ACCESS, POSIX_ACL_DEFAULT, XATTR_NTACL_USER};
use crate::status_map::VfsResultExt;

/// EAs are the `user.` xattrs of this prefix and name, as Samba stores them.
const XATTR_PREFIX: &str = "user.";
/// Longest EA name (EaNameLength is one byte).
const MAX_NAME_LEN: usize = 255;

/// Every xattr the server gives a meaning to, or Samba does on the shares both serve: the one
/// list that every path to EAs (SET_INFO, the EA buffer of a CREATE, QUERY_INFO and EaSize)
/// keeps clients away from. Writing one as an EA would skip the checks of the request that
/// sets it (a reparse point's of FSCTL_SET_REPARSE_POINT, a descriptor's of SET_INFO
/// security). A name ending in `.` stands for every name it begins. Names outside `user.`
/// cannot be spelled as EAs at all; they are listed so that the list says what is protected.
const SERVER_XATTRS: &[&str] = &[
    XATTR_DOSATTRIB_NAME,
    XATTR_NTACL_NAME,
    XATTR_NTACL_USER,
    POSIX_ACL_ACCESS,
    POSIX_ACL_DEFAULT,
    STREAM_XATTR_PREFIX,
    REPARSE_XATTR,
    // Samba's inheritance flags of POSIX ACLs (vfs_acl_*), and its marker of stream xattrs.
    "user.SAMBA_PAI",
    "user.SAMBA_STREAMS",
    // A Mac's Finder info, kept as Netatalk and Samba's vfs_fruit keep it (fs::apple); Samba
    // hides it from EAs too.
    crate::fs::apple::METADATA_XATTR,
];

/// Whether `xattr` is no EA: outside `user.`, or one of [`SERVER_XATTRS`]. Names compare
/// without case, as EA names do (MS-FSCC 2.4.15) and as Samba compares its private names, so
/// that no spelling of an EA name reaches one.
fn is_private(xattr: &str) -> bool {
    let begins = |prefix: &str| {
        xattr
            .as_bytes()
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
    };
    !begins(XATTR_PREFIX)
        || SERVER_XATTRS.iter().any(|name| {
            if name.ends_with('.') {
                begins(name)
            } else {
                xattr.eq_ignore_ascii_case(name)
            }
        })
}

/// Characters MS-FSCC 2.4.15 allows in an EA name: printable ASCII other than these.
fn valid_name(name: &[u8]) -> bool {
    const FORBIDDEN: &[u8] = b"\"*+,/:;<=>?[\\]|";
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .iter()
            .all(|&b| (0x20..0x7f).contains(&b) && !FORBIDDEN.contains(&b))
}

/// A file's EAs as (name, value), in the order the file system lists them.
pub(crate) fn read(file: &dyn VfsFile) -> Result<Vec<(String, Vec<u8>)>, NtStatus> {
    let names = match file.list_xattr() {
        Ok(names) => names,
        Err(VfsError::Unsupported) => return Ok(Vec::new()),
        Err(e) => return Err(crate::status_map::vfs_status(&e)),
    };
    let mut eas = Vec::new();
    for xattr in names {
        let Some(name) = xattr.strip_prefix(XATTR_PREFIX) else {
            continue;
        };
        if is_private(&xattr) {
            continue;
        }
        if let Some(value) = file.get_xattr(&xattr).status()? {
            eas.push((name.to_owned(), value));
        }
    }
    Ok(eas)
}

/// [`read`] on a share that keeps EAs; a share without them (`ea_support` off) has none and
/// asks the file system nothing.
pub(crate) fn read_kept(
    kept: bool,
    file: &dyn VfsFile,
) -> Result<Vec<(String, Vec<u8>)>, NtStatus> {
    if kept { read(file) } else { Ok(Vec::new()) }
}

/// EaSize as Samba reports it: the bytes of the whole FILE_FULL_EA_INFORMATION list, 0 when
/// there are no EAs.
pub(crate) fn size(eas: &[(String, Vec<u8>)]) -> u32 {
    let total: usize = eas
        .iter()
        .map(|(name, value)| {
            FullEa {
                flags: EaFlags::empty(),
                name: name.as_bytes(),
                value,
            }
            .encoded_len()
            .next_multiple_of(4)
        })
        .sum();
    u32::try_from(total).unwrap_or(u32::MAX)
}

/// EaSize of the entry `name` of the directory `dir`, whose xattrs a listing has just listed
/// as `xattrs`: only the EAs among them are read. A file without EAs costs nothing more.
pub(crate) fn child_size(dir: &dyn VfsFile, name: &str, xattrs: &[String]) -> u32 {
    let eas: Vec<(String, Vec<u8>)> = xattrs
        .iter()
        .filter(|xattr| !is_private(xattr))
        .filter_map(|xattr| {
            let ea = xattr.strip_prefix(XATTR_PREFIX)?;
            let value = dir.get_child_xattr(name, xattr).ok()??;
            Some((ea.to_owned(), value))
        })
        .collect();
    size(&eas)
}

/// The xattr holding EA `name` (valid names are ASCII, so this is lossless).
fn xattr_name(name: &[u8]) -> String {
    format!("{XATTR_PREFIX}{}", String::from_utf8_lossy(name))
}

/// Checks a FILE_FULL_EA_INFORMATION list (SET_INFO, or the ExtA create context) whole,
/// before anything changes: a list longer than `max_size` is STATUS_EA_TOO_LARGE, a malformed
/// one STATUS_EA_LIST_INCONSISTENT (MS-FSA 2.1.5.14.4, as Windows' IoCheckEaBufferValidity
/// answers), a bad name STATUS_INVALID_EA_NAME, and a name of one of the xattrs that hold the
/// server's own metadata STATUS_ACCESS_DENIED (as Samba answers): no client may overwrite them.
pub(crate) fn check(buf: &[u8], max_size: usize) -> Result<Vec<FullEa<'_>>, NtStatus> {
    if buf.len() > max_size.min(MAX_EA_SIZE_LIMIT) {
        return Err(NtStatus::EA_TOO_LARGE);
    }
    let mut list = Vec::new();
    for ea in full_ea_list(buf) {
        let ea = ea.map_err(|_| NtStatus::EA_LIST_INCONSISTENT)?;
        if !valid_name(ea.name) {
            return Err(NtStatus::INVALID_EA_NAME);
        }
        if is_private(&xattr_name(ea.name)) {
            return Err(NtStatus::ACCESS_DENIED);
        }
        list.push(ea);
    }
    Ok(list)
}

/// Applies an EA list that [`check`] accepted: an empty value removes the EA (MS-FSA
/// 2.1.5.14.4); nothing changes if the list is malformed.
pub(crate) fn write(file: &dyn VfsFile, buf: &[u8]) -> Result<(), NtStatus> {
    for ea in check(buf, MAX_EA_SIZE_LIMIT)? {
        let name = xattr_name(ea.name);
        let result = if ea.value.is_empty() {
            file.remove_xattr(&name)
        } else {
            file.set_xattr(&name, ea.value)
        };
        match result {
            Ok(()) | Err(VfsError::NotFound) => {}
            Err(VfsError::Unsupported) => return Err(NtStatus::EAS_NOT_SUPPORTED),
            Err(e) => return Err(crate::status_map::vfs_status(&e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_xattrs_cannot_be_written_as_eas() {
        let vfs = smb3d_vfs::MemoryVfs::new();
        let request = smb3d_vfs::OpenRequest {
            access: smb3d_vfs::Access::ReadWrite,
            disposition: smb3d_vfs::Disposition::Create,
            kind: smb3d_vfs::Kind::File,
            create_mode: 0o644,
        };
        use smb3d_vfs::Vfs;
        let file = vfs
            .open(&smb3d_vfs::VfsPath::parse("f").unwrap(), &request)
            .unwrap()
            .file;
        let mut buf = Vec::new();
        {
            let mut w = smb3d_wire::Writer::new(&mut buf);
            let mut list = smb3d_fscc::FullEaListEncoder::new(&w, usize::MAX);
            for (name, value) in [(&b"Author"[..], &b"me"[..]), (b"DOSATTRIB", b"\0")] {
                list.push(
                    &mut w,
                    &FullEa {
                        flags: EaFlags::empty(),
                        name,
                        value,
                    },
                );
            }
        }
        assert_eq!(
            write(file.as_ref(), &buf).err(),
            Some(NtStatus::ACCESS_DENIED)
        );
        // Nothing was applied, not even the allowed EA before it.
        assert_eq!(file.get_xattr("user.Author").unwrap(), None);
    }

    #[test]
    fn names() {
        assert!(valid_name(b"EAONE"));
        assert!(valid_name(b"second ea.x"));
        assert!(!valid_name(b""));
        assert!(!valid_name(b"a:b"));
        assert!(!valid_name(b"a\x01"));
        assert!(!valid_name(&[b'a'; 256]));
    }

    #[test]
    fn private_xattrs_are_not_eas() {
        assert!(is_private("user.DOSATTRIB"));
        assert!(is_private("user.DosStream.foo:$DATA"));
        assert!(is_private("user.org.netatalk.Metadata"));
        assert!(!is_private("user.EAONE"));
    }

    fn one_ea(name: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut w = smb3d_wire::Writer::new(&mut buf);
        let mut list = smb3d_fscc::FullEaListEncoder::new(&w, usize::MAX);
        assert!(list.push(
            &mut w,
            &FullEa {
                flags: EaFlags::empty(),
                name,
                value: b"forged",
            },
        ));
        buf
    }

    /// Every `user.` xattr the server or Samba gives a meaning to is refused as an EA name, in
    /// any spelling.
    #[test]
    fn no_ea_name_reaches_the_servers_xattrs() {
        for name in [
            &b"DOSATTRIB"[..],
            b"NTACL",
            b"SAMBA_PAI",
            b"SAMBA_STREAMS",
            b"SmbReparse",
            b"smbreparse",
            b"DosStream.x",
            b"dosstream.x",
        ] {
            assert_eq!(
                check(&one_ea(name), MAX_EA_SIZE_LIMIT).err(),
                Some(NtStatus::ACCESS_DENIED),
                "{}",
                String::from_utf8_lossy(name)
            );
        }
        assert!(check(&one_ea(b"SmbReparseNot"), MAX_EA_SIZE_LIMIT).is_ok());
    }

    /// A file's reparse data and other server xattrs are not listed among its EAs.
    #[test]
    fn reading_eas_skips_the_servers_xattrs() {
        use smb3d_vfs::Vfs;
        let vfs = smb3d_vfs::MemoryVfs::new();
        let request = smb3d_vfs::OpenRequest {
            access: smb3d_vfs::Access::ReadWrite,
            disposition: smb3d_vfs::Disposition::Create,
            kind: smb3d_vfs::Kind::File,
            create_mode: 0o644,
        };
        let file = vfs
            .open(&smb3d_vfs::VfsPath::parse("f").unwrap(), &request)
            .unwrap()
            .file;
        for xattr in ["user.SmbReparse", "user.DOSATTRIB", "user.Author"] {
            file.set_xattr(xattr, b"x").unwrap();
        }
        let names: Vec<String> = read(file.as_ref())
            .unwrap()
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(names, ["Author"]);
    }

    #[test]
    fn size_is_the_aligned_list() {
        let eas = vec![
            ("EAONE".to_owned(), b"VALUE1".to_vec()),
            ("SECONDEA".to_owned(), b"ValueTwo".to_vec()),
        ];
        // 9 + 5 + 6 = 20, 9 + 8 + 8 = 25 -> 28: 48 in all.
        assert_eq!(size(&eas), 48);
        assert_eq!(size(&[]), 0);
    }
}
