//! The VFS conformance suite on a temporary directory, with both resolvers, with names that
//! ignore case (the default) and with names that do not, with every directory's names
//! cached, and through the fault-injecting layer.

use std::ops::Deref;
use std::sync::Arc;

use smb3d_vfs::{CaseSensitivity, Vfs};
use smb3d_vfs_posix::{ListingCacheLimits, PosixVfs, Resolver};
use tempfile::TempDir;

/// A share in a temporary directory, removed when the last share on it is dropped.
struct Share {
    vfs: PosixVfs,
    _dir: Arc<TempDir>,
}

impl Deref for Share {
    type Target = dyn Vfs;

    fn deref(&self) -> &(dyn Vfs + 'static) {
        &self.vfs
    }
}

fn share_on(dir: &Arc<TempDir>, resolver: Resolver, case: CaseSensitivity) -> Share {
    let vfs = PosixVfs::with_resolver(dir.path(), resolver)
        .unwrap()
        .with_case_sensitivity(case);
    Share {
        vfs,
        _dir: Arc::clone(dir),
    }
}

fn share(resolver: Resolver, case: CaseSensitivity) -> Share {
    share_on(&Arc::new(tempfile::tempdir().unwrap()), resolver, case)
}

/// One directory seen through a case-sensitive and a case-insensitive share.
fn views(resolver: Resolver) -> (Share, Share) {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    (
        share_on(&dir, resolver, CaseSensitivity::Sensitive),
        share_on(&dir, resolver, CaseSensitivity::Insensitive),
    )
}

/// A cache that holds the names of every directory listed, however small, so that the
/// suite runs its lookups against cached names kept current by inotify.
const CACHE_EVERYTHING: ListingCacheLimits = ListingCacheLimits {
    min_entries: 0,
    max_directories: 64,
    max_names: 262_144,
};

fn cached(share: Share) -> Share {
    Share {
        vfs: share.vfs.with_listing_cache(Some(CACHE_EVERYTHING)),
        _dir: share._dir,
    }
}

mod openat2 {
    use super::*;

    smb3d_vfs::conformance_tests!(|| share(Resolver::Openat2, CaseSensitivity::Insensitive));
    smb3d_vfs::case_conformance_tests!(|| views(Resolver::Openat2));

    mod case_sensitive {
        use super::*;

        smb3d_vfs::conformance_tests!(|| share(Resolver::Openat2, CaseSensitivity::Sensitive));
    }
}

mod cached {
    use super::*;

    smb3d_vfs::conformance_tests!(|| cached(share(
        Resolver::Openat2,
        CaseSensitivity::Insensitive
    )));
    smb3d_vfs::case_conformance_tests!(|| {
        let (exact, caseless) = views(Resolver::Walk);
        (exact, cached(caseless))
    });
}

/// The fault-injecting layer with no rule keeps every promise of the back end under it
/// (copies and clones between its handles included).
mod fault_layer {
    use super::*;
    use smb3d_vfs::FaultVfs;

    /// The layer over a share, keeping the temporary directory until it is dropped.
    struct Layered {
        vfs: FaultVfs,
        _dir: Arc<TempDir>,
    }

    impl Deref for Layered {
        type Target = dyn Vfs;

        fn deref(&self) -> &(dyn Vfs + 'static) {
            &self.vfs
        }
    }

    fn layered() -> Layered {
        let Share { vfs, _dir } = share(Resolver::Openat2, CaseSensitivity::Insensitive);
        Layered {
            vfs: FaultVfs::new(Arc::new(vfs), Arc::default()),
            _dir,
        }
    }

    smb3d_vfs::conformance_tests!(layered);
}

mod walk {
    use super::*;

    smb3d_vfs::conformance_tests!(|| share(Resolver::Walk, CaseSensitivity::Insensitive));
    smb3d_vfs::case_conformance_tests!(|| views(Resolver::Walk));

    mod case_sensitive {
        use super::*;

        smb3d_vfs::conformance_tests!(|| share(Resolver::Walk, CaseSensitivity::Sensitive));
    }
}

#[test]
fn new_picks_openat2_on_this_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let vfs = PosixVfs::new(dir.path()).unwrap();
    assert_eq!(vfs.resolver(), Resolver::Openat2);
}

#[test]
fn names_ignore_case_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let vfs = PosixVfs::new(dir.path()).unwrap();
    assert_eq!(vfs.case_sensitivity(), CaseSensitivity::Insensitive);
    let exact = vfs.with_case_sensitivity(CaseSensitivity::Sensitive);
    assert_eq!(exact.case_sensitivity(), CaseSensitivity::Sensitive);
}
