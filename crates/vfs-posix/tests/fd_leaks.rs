//! Every descriptor the back end opens is closed again. The only test in its binary, so that
//! no other test opens descriptors while it counts.

use std::fs;

use smb3d_vfs::{Access, Disposition, Kind, OpenRequest, Vfs, VfsPath};
use smb3d_vfs_posix::{PosixVfs, Resolver};

fn open_descriptors() -> usize {
    fs::read_dir("/proc/self/fd").unwrap().count()
}

fn exercise(vfs: &PosixVfs) {
    let path = |text: &str| VfsPath::parse(text).unwrap();
    let create = |kind| OpenRequest {
        access: Access::ReadWrite,
        disposition: Disposition::OpenOrCreate,
        kind,
        create_mode: 0o755,
    };
    vfs.open(&path("d"), &create(Kind::Directory)).unwrap();
    vfs.open(&path("d/sub"), &create(Kind::Directory)).unwrap();
    vfs.symlink("d", &path("link")).unwrap();
    vfs.symlink("..", &path("d/up")).unwrap();
    let file = vfs.open(&path("link/f"), &create(Kind::File)).unwrap().file;
    file.write_at(b"data", 0).unwrap();
    let _ = file.set_xattr("user.x", b"1");
    let _ = file.get_xattr("user.x");
    let _ = file.list_xattr();
    drop(file);
    let metadata = OpenRequest {
        access: Access::MetadataOnly,
        disposition: Disposition::Open,
        kind: Kind::Any,
        create_mode: 0,
    };
    let dir = vfs.open(&path("d/up/d"), &metadata).unwrap().file;
    dir.read_dir().unwrap();
    dir.stat_child("f").unwrap();
    let _ = dir.set_xattr("user.y", b"2");
    drop(dir);
    for failing in ["missing", "d/missing/x", "d/up/up", "link/f/x"] {
        assert!(vfs.stat(&path(failing)).is_err());
        assert!(vfs.open(&path(failing), &metadata).is_err());
    }
    vfs.stat(&path("d/up/link/f")).unwrap();
    // Other spellings, which list directories to find the real names.
    vfs.stat(&path("D/SUB")).unwrap();
    let caseless = vfs.open(&path("LINK/F"), &metadata).unwrap().file;
    drop(caseless);
    let dir = vfs.open(&path("D"), &metadata).unwrap().file;
    assert_eq!(dir.lookup_child("F").unwrap().unwrap().0, "f");
    assert_eq!(dir.lookup_child("none").unwrap(), None);
    drop(dir);
    assert!(vfs.open(&path("D/F"), &create(Kind::Directory)).is_err());
    assert!(vfs.stat(&path("D/NONE/X")).is_err());
    vfs.rename(&path("D/F"), &path("d/F"), false).unwrap();
    vfs.rename(&path("D/F"), &path("d/f"), false).unwrap();
    vfs.rename(&path("d/f"), &path("d/sub/g"), false).unwrap();
    vfs.unlink(&path("D/Sub/G")).unwrap();
    vfs.unlink(&path("d/sub")).unwrap();
    vfs.unlink(&path("d/up")).unwrap();
    vfs.unlink(&path("d")).unwrap();
    vfs.unlink(&path("link")).unwrap();
    vfs.fs_stat().unwrap();
}

#[test]
fn no_descriptor_leaks() {
    let dir = tempfile::tempdir().unwrap();
    for resolver in [Resolver::Openat2, Resolver::Walk] {
        let vfs = PosixVfs::with_resolver(dir.path(), resolver).unwrap();
        exercise(&vfs);
        let before = open_descriptors();
        for _ in 0..3 {
            exercise(&vfs);
        }
        assert_eq!(open_descriptors(), before, "{resolver:?}");
        drop(vfs);
        assert_eq!(
            open_descriptors(),
            before - 1,
            "the root closes with the share"
        );
    }
}
