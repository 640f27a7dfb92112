//! The status of a path the VFS cannot take whole: one whose resolution leaves the share, or
//! one longer than the file system's path limit. Windows answers by the component that fails:
//! the last one missing is STATUS_OBJECT_NAME_NOT_FOUND, a directory on the way
//! STATUS_OBJECT_PATH_NOT_FOUND.

use smb3d_dtyp::NtStatus;
use smb3d_vfs::{MAX_NAME_LEN, MAX_PATH_LEN, Vfs, VfsPath};

/// `path` resolved outside the share (`VfsError::OutsideShare`). A symlink leaving the share is
/// answered as if nothing were there, so clients learn nothing of what lies outside: at the
/// last component STATUS_OBJECT_NAME_NOT_FOUND, on the way STATUS_OBJECT_PATH_NOT_FOUND (as
/// Samba answers since CVE-2021-44141). Runs as the user: it looks the parent up.
pub(crate) fn outside_share(vfs: &dyn Vfs, path: &VfsPath) -> NtStatus {
    match path.parent_and_name() {
        Some((parent, _)) if !parent.is_root() && vfs.stat(&parent).is_err() => {
            NtStatus::OBJECT_PATH_NOT_FOUND
        }
        _ => NtStatus::OBJECT_NAME_NOT_FOUND,
    }
}

/// `components` do not make a [`VfsPath`]. Windows takes paths of up to 32,767 characters
/// (MS-FSCC 2.1.5) and Linux 4,095 bytes: a longer path whose components are each valid is
/// STATUS_OBJECT_PATH_NOT_FOUND when a directory within the first 4,095 bytes is missing (the
/// answer Windows and Samba give for a path under missing directories), else
/// STATUS_OBJECT_NAME_INVALID. Runs as the user: it looks that directory up.
pub(crate) fn unrepresentable(vfs: &dyn Vfs, components: &[String]) -> NtStatus {
    if components.iter().any(|c| c.len() > MAX_NAME_LEN) {
        return NtStatus::OBJECT_NAME_INVALID;
    }
    let Some((_, directories)) = components.split_last() else {
        return NtStatus::OBJECT_NAME_INVALID;
    };
    let mut len = 0;
    let fitting = directories
        .iter()
        .take_while(|c| {
            len += c.len() + usize::from(len > 0);
            len <= MAX_PATH_LEN
        })
        .count();
    let Some(prefix) = directories
        .get(..fitting)
        .and_then(|p| VfsPath::from_components(p).ok())
    else {
        return NtStatus::OBJECT_NAME_INVALID;
    };
    match vfs.stat(&prefix) {
        Ok(stat) if stat.file_type == smb3d_vfs::FileType::Directory => {
            NtStatus::OBJECT_NAME_INVALID
        }
        _ => NtStatus::OBJECT_PATH_NOT_FOUND,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_vfs::{Access, Disposition, Kind, MemoryVfs, OpenRequest};

    fn share() -> MemoryVfs {
        let vfs = MemoryVfs::new();
        let dir = OpenRequest {
            access: Access::Read,
            disposition: Disposition::Create,
            kind: Kind::Directory,
            create_mode: 0o755,
        };
        vfs.open(&VfsPath::parse("d").unwrap(), &dir).unwrap();
        vfs.symlink("../outside", &VfsPath::parse("out").unwrap())
            .unwrap();
        vfs
    }

    #[test]
    fn leaving_the_share_on_the_way_is_a_missing_path() {
        let vfs = share();
        assert_eq!(
            outside_share(&vfs, &VfsPath::parse("out").unwrap()),
            NtStatus::OBJECT_NAME_NOT_FOUND
        );
        assert_eq!(
            outside_share(&vfs, &VfsPath::parse("out/canary").unwrap()),
            NtStatus::OBJECT_PATH_NOT_FOUND
        );
        assert_eq!(
            outside_share(&vfs, &VfsPath::parse("d/out").unwrap()),
            NtStatus::OBJECT_NAME_NOT_FOUND
        );
    }

    #[test]
    fn long_paths_under_missing_directories_are_missing_paths() {
        let vfs = share();
        let deep = |first: &str| -> Vec<String> {
            std::iter::once(first.to_owned())
                .chain(std::iter::repeat_n("x".repeat(250), 126))
                .collect()
        };
        assert_eq!(
            unrepresentable(&vfs, &deep("missing")),
            NtStatus::OBJECT_PATH_NOT_FOUND
        );
        assert_eq!(
            unrepresentable(&vfs, &deep("d")),
            NtStatus::OBJECT_PATH_NOT_FOUND
        );
        assert_eq!(
            unrepresentable(&vfs, &["n".repeat(256)]),
            NtStatus::OBJECT_NAME_INVALID
        );
        assert_eq!(unrepresentable(&vfs, &[]), NtStatus::OBJECT_NAME_INVALID);
    }

    #[test]
    fn long_paths_through_existing_directories_are_invalid_names() {
        let vfs = MemoryVfs::new();
        let dir = OpenRequest {
            access: Access::Read,
            disposition: Disposition::Create,
            kind: Kind::Directory,
            create_mode: 0o755,
        };
        let name = "y".repeat(250);
        let mut path = VfsPath::root();
        let mut components = Vec::new();
        // 16 directories of 250 bytes fill 4,015 bytes of the 4,095.
        for _ in 0..16 {
            path = path.join(&name).unwrap();
            vfs.open(&path, &dir).unwrap();
            components.push(name.clone());
        }
        components.push(name.clone());
        components.push("leaf".to_owned());
        assert_eq!(
            unrepresentable(&vfs, &components),
            NtStatus::OBJECT_NAME_INVALID
        );
    }
}
