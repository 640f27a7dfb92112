//! Extended attributes (MS-FSCC 2.4.15 FILE_FULL_EA_INFORMATION) stored as `user.<name>`
//! xattrs, as Samba stores them, so that a share moves between the two servers with its EAs.

use smb3d_dtyp::NtStatus;
use smb3d_fscc::{EaFlags, FullEa, full_ea_list};
use smb3d_vfs::{VfsError, VfsFile};

use crate::status_map::VfsResultExt;

const XATTR_PREFIX: &str = "user.";
/// Longest EA name (EaNameLength is one byte).
const MAX_NAME_LEN: usize = 255;
/// Most EA data a file may carry, as NTFS limits it.
pub(crate) const MAX_TOTAL_EA_SIZE: usize = 65536;

/// `user.` xattrs that hold Samba's (and our) own metadata and are not EAs.
fn is_private(xattr: &str) -> bool {
    const PRIVATE: &[&str] = &[
        "user.DOSATTRIB",
        "user.SAMBA_PAI",
        "user.DosStream.",
        "user.SAMBA_STREAMS",
    ];
    PRIVATE.iter().any(|p| {
        if p.ends_with('.') {
            xattr.starts_with(p)
        } else {
            xattr == *p
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

/// Checks a FILE_FULL_EA_INFORMATION list (SET_INFO, or the ExtA create context) whole.
pub(crate) fn check(buf: &[u8]) -> Result<Vec<FullEa<'_>>, NtStatus> {
    if buf.len() > MAX_TOTAL_EA_SIZE {
        return Err(NtStatus::EA_TOO_LARGE);
    }
    let mut list = Vec::new();
    for ea in full_ea_list(buf) {
        let ea = ea.map_err(|_| NtStatus::INVALID_PARAMETER)?;
        if !valid_name(ea.name) {
            return Err(NtStatus::INVALID_EA_NAME);
        }
        list.push(ea);
    }
    Ok(list)
}

/// Applies a checked EA list: an empty value removes the EA (MS-FSA 2.1.5.14.4); nothing
/// changes if the list is malformed.
pub(crate) fn write(file: &dyn VfsFile, buf: &[u8]) -> Result<(), NtStatus> {
    for ea in check(buf)? {
        // Valid names are ASCII, so this is lossless.
        let name = format!("{XATTR_PREFIX}{}", String::from_utf8_lossy(ea.name));
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
        assert!(!is_private("user.EAONE"));
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
