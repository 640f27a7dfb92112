//! The VFS conformance suite on a temporary directory, with both resolvers.

use std::ops::Deref;

use smb3d_vfs::Vfs;
use smb3d_vfs_posix::{PosixVfs, Resolver};
use tempfile::TempDir;

/// A share in a fresh temporary directory, removed on drop.
struct Share {
    vfs: PosixVfs,
    _dir: TempDir,
}

impl Deref for Share {
    type Target = dyn Vfs;

    fn deref(&self) -> &(dyn Vfs + 'static) {
        &self.vfs
    }
}

fn share(resolver: Resolver) -> Share {
    let dir = tempfile::tempdir().unwrap();
    let vfs = PosixVfs::with_resolver(dir.path(), resolver).unwrap();
    Share { vfs, _dir: dir }
}

mod openat2 {
    use super::*;

    smb3d_vfs::conformance_tests!(|| share(Resolver::Openat2));
}

mod walk {
    use super::*;

    smb3d_vfs::conformance_tests!(|| share(Resolver::Walk));
}

#[test]
fn new_picks_openat2_on_this_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let vfs = PosixVfs::new(dir.path()).unwrap();
    assert_eq!(vfs.resolver(), Resolver::Openat2);
}
