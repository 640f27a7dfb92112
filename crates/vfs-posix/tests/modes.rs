//! A new file or directory gets the mode the caller asked for, not one cut further by the
//! process umask (Samba's `create mask` semantics, issue 23 item 4), and a parent's default
//! POSIX ACL still decides where it has one. Its own binary: the test sets the process umask.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use rustix::fs::Mode;
use smb3d_vfs::{Access, Disposition, Kind, OpenRequest, Vfs, VfsPath};
use smb3d_vfs_posix::{PosixVfs, Resolver};

fn create(kind: Kind, access: Access, create_mode: u32) -> OpenRequest {
    OpenRequest {
        access,
        disposition: Disposition::Create,
        kind,
        create_mode,
    }
}

fn mode_of(path: &std::path::Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn new_files_and_directories_get_their_mode_whatever_the_umask() {
    // The systemd unit's UMask=0022, which cut Samba-style masks like 0660 to 0640.
    rustix::process::umask(Mode::from_bits_truncate(0o022));
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o2777)).unwrap();
    for resolver in [Resolver::Openat2, Resolver::Walk] {
        let vfs = PosixVfs::with_resolver(dir.path(), resolver).unwrap();
        let name = |n: &str| format!("{resolver:?}-{n}");
        let path = |n: &str| VfsPath::parse(&name(n)).unwrap();
        for (n, kind, access, mode, expected) in [
            ("f", Kind::File, Access::ReadWrite, 0o660, 0o660),
            ("meta", Kind::File, Access::MetadataOnly, 0o666, 0o666),
            // A setgid parent's bit stays on a new directory, as asked or not.
            ("d", Kind::Directory, Access::Read, 0o770, 0o2770),
            (
                "dmeta",
                Kind::Directory,
                Access::MetadataOnly,
                0o2777,
                0o2777,
            ),
        ] {
            vfs.open(&path(n), &create(kind, access, mode)).unwrap();
            assert_eq!(mode_of(&dir.path().join(name(n))), expected, "{}", name(n));
        }
        // A directory asked for with the setgid bit gets it below a parent without it.
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        vfs.open(&path("g"), &create(Kind::Directory, Access::Read, 0o2770))
            .unwrap();
        assert_eq!(mode_of(&dir.path().join(name("g"))), 0o2770);
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o2777)).unwrap();
    }
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test sets the ACL up as an admin would, outside the back end"
)]
fn a_default_acl_still_decides_below_it() {
    let dir = tempfile::tempdir().unwrap();
    let acl = dir.path().join("acl");
    fs::create_dir(&acl).unwrap();
    // Others get nothing below `acl`, whatever mode a creation asks for: the xattr form of
    // `setfacl -d -m u::rwx,g::rwx,o::---` (version 2; tag, permissions, id per entry).
    let mut default_acl = 2u32.to_le_bytes().to_vec();
    for (tag, perm) in [(0x01u16, 7u16), (0x04, 7), (0x20, 0)] {
        default_acl.extend(tag.to_le_bytes());
        default_acl.extend(perm.to_le_bytes());
        default_acl.extend(u32::MAX.to_le_bytes());
    }
    let flags = rustix::fs::XattrFlags::empty();
    if let Err(error) = rustix::fs::setxattr(&acl, "system.posix_acl_default", &default_acl, flags)
    {
        eprintln!("skipped: no POSIX ACLs here ({error})");
        return;
    }
    let vfs = PosixVfs::with_resolver(dir.path(), Resolver::Openat2).unwrap();
    let path = |n: &str| VfsPath::parse(n).unwrap();
    vfs.open(
        &path("acl/f"),
        &create(Kind::File, Access::ReadWrite, 0o666),
    )
    .unwrap();
    vfs.open(
        &path("acl/d"),
        &create(Kind::Directory, Access::Read, 0o777),
    )
    .unwrap();
    assert_eq!(mode_of(&acl.join("f")), 0o660);
    assert_eq!(mode_of(&acl.join("d")), 0o770);
}
