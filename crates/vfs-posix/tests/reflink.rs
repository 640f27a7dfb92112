//! Block cloning on a file system that shares extents: an XFS image made with `reflink=1`,
//! loop-mounted for the test and removed after it. Needs root, `mkfs.xfs` and loop devices;
//! without them the tests say so and pass (CI runs as root with xfsprogs).
#![expect(
    clippy::disallowed_methods,
    reason = "the test sets up and inspects files as itself, not as the back end's work"
)]

use std::path::PathBuf;
use std::process::Command;

use smb3d_vfs::{Access, Disposition, Kind, OpenRequest, Vfs, VfsPath, conformance};
use smb3d_vfs_posix::PosixVfs;

/// An XFS file system on a loop-mounted image, unmounted and deleted on drop.
struct XfsImage {
    dir: tempfile::TempDir,
    mounted: bool,
}

impl XfsImage {
    /// Makes and mounts an image; `None` (with the reason printed) where the machine cannot.
    fn new(reflink: bool) -> Option<Self> {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: loop mounts need root");
            return None;
        }
        let dir = tempfile::tempdir().ok()?;
        let image = dir.path().join("xfs.img");
        std::fs::File::create(&image)
            .and_then(|f| f.set_len(320 << 20))
            .ok()?;
        let option = format!("reflink={}", u8::from(reflink));
        let made = Command::new("mkfs.xfs")
            .args(["-q", "-m", &option])
            .arg(&image)
            .status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("skipped: mkfs.xfs is missing or failed");
            return None;
        }
        let mount = dir.path().join("mnt");
        std::fs::create_dir(&mount).ok()?;
        let mounted = Command::new("mount")
            .args(["-o", "loop"])
            .arg(&image)
            .arg(&mount)
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            eprintln!("skipped: the image cannot be loop-mounted here");
            return None;
        }
        Some(Self { dir, mounted })
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }
}

impl Drop for XfsImage {
    fn drop(&mut self) {
        if self.mounted {
            let _ = Command::new("umount").arg(self.root()).status();
        }
    }
}

/// A share on a new directory `name` of the image, so that each conformance test starts empty.
fn share(image: &XfsImage, name: &str) -> PosixVfs {
    let root = image.root().join(name);
    std::fs::create_dir(&root).unwrap();
    PosixVfs::new(&root).unwrap()
}

#[test]
fn xfs_with_reflink_clones() {
    let Some(image) = XfsImage::new(true) else {
        return;
    };
    assert!(share(&image, "probe").can_clone());
    conformance::clone_range(&share(&image, "clone"));
    conformance::copy_range(&share(&image, "copy"));
    conformance::copy_range_within_one_file(&share(&image, "within"));
    conformance::punch_hole_and_allocated_ranges(&share(&image, "holes"));
    let vfs = share(&image, "sharing");

    // A cloned megabyte shares its extents: the file system's free space barely moves.
    let request = |disposition| OpenRequest {
        access: Access::ReadWrite,
        disposition,
        kind: Kind::File,
        create_mode: 0o644,
    };
    let big = vfs
        .open(
            &VfsPath::parse("big").unwrap(),
            &request(Disposition::Create),
        )
        .unwrap()
        .file;
    big.write_at(&vec![5u8; 8 << 20], 0).unwrap();
    big.sync().unwrap();
    let before = vfs.fs_stat().unwrap();
    let copy = vfs
        .open(
            &VfsPath::parse("copy").unwrap(),
            &request(Disposition::Create),
        )
        .unwrap()
        .file;
    copy.clone_range(&*big, 0, 0, 8 << 20).unwrap();
    copy.sync().unwrap();
    let after = vfs.fs_stat().unwrap();
    let used = (before.free_blocks - after.free_blocks) * before.block_size;
    assert!(used < 1 << 20, "cloning 8 MiB used {used} bytes");
    // copy_file_range shares extents too on such a file system.
    let again = vfs
        .open(
            &VfsPath::parse("again").unwrap(),
            &request(Disposition::Create),
        )
        .unwrap()
        .file;
    assert_eq!(again.copy_range(&*big, 0, 0, 8 << 20).unwrap(), 8 << 20);
    again.sync().unwrap();
    let last = vfs.fs_stat().unwrap();
    let used = (after.free_blocks - last.free_blocks) * before.block_size;
    assert!(used < 1 << 20, "copying 8 MiB used {used} bytes");
}

#[test]
fn xfs_without_reflink_does_not() {
    let Some(image) = XfsImage::new(false) else {
        return;
    };
    assert!(!share(&image, "probe").can_clone());
    conformance::clone_range(&share(&image, "clone"));
    conformance::copy_range(&share(&image, "copy"));
}
