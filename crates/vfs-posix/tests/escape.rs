//! Symlinks and renames must never take an operation out of the share: a canary file beside
//! the share is never read, written, renamed or removed, whatever the share contains.
#![expect(
    clippy::disallowed_methods,
    reason = "the test sets up and inspects files as itself, not as the back end's work"
)]

use std::fs;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use rustix::fd::OwnedFd;
use rustix::fs::{CWD, RenameFlags, inotify, renameat_with};
use rustix::io::Errno;
use smb3d_vfs::{Access, CaseSensitivity, Disposition, Kind, OpenRequest, Vfs, VfsError, VfsPath};
use smb3d_vfs_posix::{ListingCacheLimits, PosixVfs, Resolver};
use tempfile::TempDir;

const CANARY: &[u8] = b"canary: must never be read or changed";
const RESOLVERS: [Resolver; 2] = [Resolver::Openat2, Resolver::Walk];
/// Every resolver with every way of matching names.
const SETUPS: [(Resolver, CaseSensitivity); 4] = [
    (Resolver::Openat2, CaseSensitivity::Sensitive),
    (Resolver::Openat2, CaseSensitivity::Insensitive),
    (Resolver::Walk, CaseSensitivity::Sensitive),
    (Resolver::Walk, CaseSensitivity::Insensitive),
];

/// `<tmp>/share` is the share; `<tmp>/outside` holds the canary and must stay untouched.
struct Layout {
    tmp: TempDir,
}

impl Layout {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("share")).unwrap();
        fs::create_dir(tmp.path().join("outside")).unwrap();
        fs::write(tmp.path().join("outside/canary"), CANARY).unwrap();
        Self { tmp }
    }

    fn share(&self) -> PathBuf {
        self.tmp.path().join("share")
    }

    fn outside(&self) -> PathBuf {
        self.tmp.path().join("outside")
    }

    fn vfs(&self, resolver: Resolver, case: CaseSensitivity) -> PosixVfs {
        PosixVfs::with_resolver(&self.share(), resolver)
            .unwrap()
            .with_case_sensitivity(case)
    }

    fn link(&self, target: impl AsRef<Path>, name: &str) {
        symlink(target, self.share().join(name)).unwrap();
    }

    /// Starts recording every open, read and change of the outside directory or anything in
    /// it, listings included.
    fn watch(&self) -> OutsideWatch {
        let flags = inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK;
        let fd = inotify::init(flags).unwrap();
        inotify::add_watch(&fd, self.outside(), inotify::WatchFlags::ALL_EVENTS).unwrap();
        OutsideWatch { fd }
    }

    /// The canary's content, inode and times, and the outside directory's listing.
    fn outside_state(&self) -> (Vec<u8>, u64, i64, i64, Vec<String>) {
        let canary = self.outside().join("canary");
        let meta = fs::metadata(&canary).unwrap();
        let mut names: Vec<String> = fs::read_dir(self.outside())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        (
            fs::read(&canary).unwrap(),
            meta.ino(),
            meta.mtime_nsec(),
            meta.ctime_nsec(),
            names,
        )
    }
}

/// An inotify watch on the outside directory: the kernel reports any access to it or its
/// entries (`getdents` included), however the share reached it.
struct OutsideWatch {
    fd: OwnedFd,
}

impl OutsideWatch {
    /// Fails if anything touched the outside since the watch began.
    fn assert_quiet(&self, context: &str) {
        let events = self.events();
        let first = &events[..events.len().min(4)];
        assert!(
            events.is_empty(),
            "{context}: {} events: {first:?}",
            events.len()
        );
    }

    /// The events since the watch began, as flags and the entry's name (empty for the
    /// directory itself).
    fn events(&self) -> Vec<(inotify::ReadFlags, String)> {
        let mut buf = Vec::with_capacity(4096);
        let mut reader = inotify::Reader::new(&self.fd, buf.spare_capacity_mut());
        let mut events = Vec::new();
        loop {
            match reader.next() {
                Ok(event) => {
                    let name = event
                        .file_name()
                        .map(|name| name.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    events.push((event.events(), name));
                }
                Err(Errno::AGAIN) => return events,
                Err(error) => panic!("inotify: {error}"),
            }
        }
    }
}

fn path(text: &str) -> VfsPath {
    VfsPath::parse(text).unwrap()
}

fn request(access: Access, disposition: Disposition, kind: Kind) -> OpenRequest {
    OpenRequest {
        access,
        disposition,
        kind,
        create_mode: 0o644,
    }
}

/// Tries everything the VFS offers on `at` and below it; each must fail with `expected`.
fn assert_refused(vfs: &PosixVfs, at: &str, expected: VfsError) {
    let target = path(at);
    assert_eq!(vfs.stat(&target).unwrap_err(), expected, "stat {at}");
    for access in [
        Access::MetadataOnly,
        Access::Read,
        Access::Write,
        Access::ReadWrite,
    ] {
        for disposition in [
            Disposition::Open,
            Disposition::OpenOrCreate,
            Disposition::Overwrite,
            Disposition::OverwriteOrCreate,
        ] {
            for kind in [Kind::File, Kind::Any] {
                let opened = vfs.open(&target, &request(access, disposition, kind));
                assert_eq!(
                    opened.err(),
                    Some(expected),
                    "open {at} {access:?} {disposition:?} {kind:?}"
                );
            }
        }
        let dir = vfs.open(
            &target,
            &request(access, Disposition::Open, Kind::Directory),
        );
        assert_eq!(dir.err(), Some(expected), "open dir {at} {access:?}");
    }
    let child = target.join("canary").unwrap();
    let new_child = target.join("new").unwrap();
    assert_eq!(vfs.stat(&child).unwrap_err(), expected, "stat {child}");
    for kind in [Kind::File, Kind::Directory] {
        let opened = vfs.open(&child, &request(Access::ReadWrite, Disposition::Open, kind));
        assert!(opened.is_err(), "open {child}");
        let created = vfs.open(
            &new_child,
            &request(Access::ReadWrite, Disposition::Create, kind),
        );
        assert!(created.is_err(), "create {new_child} {kind:?}");
    }
    assert!(vfs.unlink(&child).is_err(), "unlink {child}");
    assert!(
        vfs.rename(&child, &path("stolen"), true).is_err(),
        "rename {child}"
    );
    assert!(vfs.symlink("x", &new_child).is_err(), "symlink {new_child}");
}

#[test]
fn symlinks_out_of_the_share_are_refused() {
    for (resolver, case) in SETUPS {
        let layout = Layout::new();
        let before = layout.outside_state();
        let outside = layout.outside();
        layout.link("/etc/passwd", "passwd");
        layout.link("/etc", "etc");
        layout.link("/", "slash");
        layout.link("../outside/canary", "relative");
        layout.link(outside.join("canary"), "absolute");
        layout.link("../outside", "outdir");
        layout.link(&outside, "absdir");
        layout.link("chain2", "chain1");
        layout.link("chain3", "chain2");
        layout.link("../outside/canary", "chain3");
        layout.link("chain-dir2", "chain-dir1");
        layout.link("..", "chain-dir2");
        layout.link("/proc/self/root", "magic");
        layout.link("../share/../outside", "roundtrip");
        fs::create_dir(layout.share().join("sub")).unwrap();
        symlink("../../outside/canary", layout.share().join("sub/deep")).unwrap();
        symlink("../..", layout.share().join("sub/up2")).unwrap();
        fs::write(layout.share().join("mine"), b"mine").unwrap();
        let vfs = layout.vfs(resolver, case);
        let caseless = case == CaseSensitivity::Insensitive;
        let watch = layout.watch();

        for at in [
            "passwd",
            "etc",
            "etc/passwd",
            "slash",
            "relative",
            "absolute",
            "outdir",
            "absdir",
            "chain1",
            "chain-dir1",
            "magic",
            "roundtrip",
            "sub/deep",
            "sub/up2",
            "sub/up2/outside",
        ] {
            assert_refused(&vfs, at, VfsError::OutsideShare);
            if caseless {
                // Other spellings resolve to the same links, and are refused the same way.
                assert_refused(&vfs, &at.to_uppercase(), VfsError::OutsideShare);
            }
        }
        for intermediate in [
            "outdir/canary",
            "absdir/canary",
            "chain-dir1/outside/canary",
            "sub/up2/outside/canary",
            "etc/passwd",
        ] {
            assert_eq!(
                vfs.stat(&path(intermediate)).unwrap_err(),
                VfsError::OutsideShare,
                "{intermediate}"
            );
        }
        if caseless {
            for intermediate in [
                "OUTDIR/CANARY",
                "Absdir/Canary",
                "SUB/UP2/OUTSIDE/CANARY",
                "ETC/PASSWD",
            ] {
                assert_eq!(
                    vfs.stat(&path(intermediate)).unwrap_err(),
                    VfsError::OutsideShare,
                    "{intermediate}"
                );
            }
            // Case-insensitive lookups list directories of the share only: the outside
            // directory, which has a `canary`, is never listed to find `CANARY`.
            let dir = request(Access::Read, Disposition::Open, Kind::Directory);
            for through in ["OUTDIR", "ABSDIR", "Sub/Up2/Outside"] {
                assert_eq!(
                    vfs.open(&path(through), &dir).err(),
                    Some(VfsError::OutsideShare),
                    "{through}"
                );
            }
            assert_eq!(
                vfs.rename(&path("MINE"), &path("OUTDIR/CANARY"), true),
                Err(VfsError::OutsideShare),
            );
        }
        // Renaming into an escaping directory symlink is refused too.
        assert_eq!(
            vfs.rename(&path("mine"), &path("outdir/mine"), false),
            Err(VfsError::OutsideShare)
        );
        // The links themselves stay ordinary entries of the share.
        vfs.rename(&path("outdir"), &path("renamed-link"), false)
            .unwrap();
        vfs.unlink(&path("renamed-link")).unwrap();
        vfs.unlink(&path("relative")).unwrap();
        watch.assert_quiet(&format!("{resolver:?} {case:?}"));
        assert_eq!(layout.outside_state(), before, "{resolver:?} {case:?}");
    }
}

#[test]
fn dangling_and_internal_links_behave() {
    for (resolver, case) in SETUPS {
        let layout = Layout::new();
        let before = layout.outside_state();
        fs::create_dir(layout.share().join("dir")).unwrap();
        fs::write(layout.share().join("dir/file"), b"inside").unwrap();
        layout.link("nothing-here", "dangling");
        layout.link("dir/../dir/file", "internal");
        layout.link("../share/dir/file", "via-share-name");
        let vfs = layout.vfs(resolver, case);

        assert_eq!(vfs.stat(&path("dangling")).unwrap_err(), VfsError::NotFound);
        let create = request(Access::Write, Disposition::OpenOrCreate, Kind::File);
        assert_eq!(
            vfs.open(&path("dangling"), &create).err(),
            Some(VfsError::NotFound)
        );
        if case == CaseSensitivity::Insensitive {
            assert_eq!(
                vfs.open(&path("Dangling"), &create).err(),
                Some(VfsError::NotFound)
            );
            assert_eq!(
                vfs.stat(&path("VIA-SHARE-NAME")).unwrap_err(),
                VfsError::OutsideShare
            );
        }
        assert!(
            !layout.share().join("nothing-here").exists(),
            "not created through"
        );
        assert_eq!(vfs.stat(&path("internal")).unwrap().size, 6);
        // Naming the share from above is leaving it, even if the path comes back.
        assert_eq!(
            vfs.stat(&path("via-share-name")).unwrap_err(),
            VfsError::OutsideShare
        );
        assert_eq!(layout.outside_state(), before, "{resolver:?} {case:?}");
    }
}

/// One thread keeps exchanging a directory of the share with a symlink to the outside while
/// others open, read, write, stat, list and unlink through that name. Whatever interleaving
/// occurs, they see the inside file or an error, never the canary.
#[test]
fn rename_races_cannot_escape() {
    race(CaseSensitivity::Sensitive, None, |name| name.to_owned());
}

/// The same race with every name spelled in upper case, so that each operation takes the
/// case-insensitive path: the directory listings that resolve names must never list the
/// outside directory, where a `canary` would match `CANARY`.
#[test]
fn rename_races_cannot_escape_through_case_insensitive_lookups() {
    race(CaseSensitivity::Insensitive, None, str::to_uppercase);
}

/// The same again with every directory's names cached: the cache is keyed by the
/// directory's identity, so the exchange cannot make it answer for the outside.
#[test]
fn rename_races_cannot_escape_through_cached_names() {
    let everything = ListingCacheLimits {
        min_entries: 0,
        ..ListingCacheLimits::default()
    };
    race(
        CaseSensitivity::Insensitive,
        Some(everything),
        str::to_uppercase,
    );
}

fn race(case: CaseSensitivity, cache: Option<ListingCacheLimits>, spell: fn(&str) -> String) {
    const RUN_FOR: Duration = Duration::from_millis(1500);
    for resolver in RESOLVERS {
        let layout = Layout::new();
        let share = layout.share();
        fs::create_dir(share.join("dir")).unwrap();
        fs::write(share.join("dir/canary"), b"inside").unwrap();
        symlink("../outside", share.join("swap")).unwrap();
        let before = layout.outside_state();
        let canary_ino = before.1;
        let outside_ino = fs::metadata(layout.outside()).unwrap().ino();
        let vfs = Arc::new(layout.vfs(resolver, case).with_listing_cache(cache));
        let stop = Arc::new(AtomicBool::new(false));
        let watch = layout.watch();

        let swapper = {
            let (share, stop) = (share.clone(), Arc::clone(&stop));
            thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    renameat_with(
                        CWD,
                        share.join("dir"),
                        CWD,
                        share.join("swap"),
                        RenameFlags::EXCHANGE,
                    )
                    .unwrap();
                    swaps += 1;
                }
                swaps
            })
        };
        let workers: Vec<_> = (0..2)
            .map(|worker| {
                let vfs = Arc::clone(&vfs);
                thread::spawn(move || {
                    let spelled = |name: &str| path(&spell(name));
                    let (dir, target) = (spelled("dir"), spelled("dir/canary"));
                    let deadline = Instant::now() + RUN_FOR;
                    let (mut successes, mut attempts) = (0u64, 0u64);
                    while Instant::now() < deadline {
                        attempts += 1;
                        if let Ok(stat) = vfs.stat(&target) {
                            assert_ne!(stat.ino, canary_ino, "stat reached the canary");
                        }
                        let read = request(Access::Read, Disposition::Open, Kind::File);
                        if let Ok(opened) = vfs.open(&target, &read) {
                            assert_ne!(opened.file.stat().unwrap().ino, canary_ino);
                            let mut buf = [0; 64];
                            let len = opened.file.read_at(&mut buf, 0).unwrap();
                            assert!(!buf[..len].starts_with(b"canary"), "read the canary");
                            successes += 1;
                        }
                        let write =
                            request(Access::Write, Disposition::OverwriteOrCreate, Kind::File);
                        if let Ok(opened) = vfs.open(&target, &write) {
                            assert_ne!(opened.file.stat().unwrap().ino, canary_ino);
                            opened.file.write_at(b"inside", 0).unwrap();
                        }
                        let list = request(Access::Read, Disposition::Open, Kind::Directory);
                        if let Ok(opened) = vfs.open(&dir, &list) {
                            assert_ne!(opened.file.stat().unwrap().ino, outside_ino);
                            let name = spell("canary");
                            if let Ok(Some((_, stat))) = opened.file.lookup_child(&name) {
                                assert_ne!(stat.ino, canary_ino, "looked up the canary");
                            }
                        }
                        if worker == 1 && attempts % 7 == 0 {
                            let _ = vfs.unlink(&target);
                            let _ = vfs.rename(&spelled("dir/x"), &target, true);
                            let _ = vfs.symlink("y", &spelled("dir/y"));
                            let mkdir =
                                request(Access::MetadataOnly, Disposition::Create, Kind::Directory);
                            let _ = vfs.open(&spelled("dir/sub"), &mkdir);
                        }
                    }
                    (successes, attempts)
                })
            })
            .collect();
        let mut successes = 0;
        for worker in workers {
            successes += worker.join().unwrap().0;
        }
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(swaps > 100, "the swapper ran ({swaps} swaps)");
        assert!(successes > 0, "some operations got through ({resolver:?})");
        watch.assert_quiet(&format!("{resolver:?}"));
        assert_eq!(layout.outside_state(), before, "{resolver:?}");
    }
}

/// A subtree (a snapshot of the share) is a share of its own: its symlinks reach neither the
/// rest of the share nor beyond it, and a subtree that is a symlink out of the share is refused.
#[test]
fn subtrees_are_confined() {
    for (resolver, case) in SETUPS {
        let layout = Layout::new();
        let share = layout.share();
        fs::write(share.join("live"), b"live").unwrap();
        fs::create_dir_all(share.join("snaps/one")).unwrap();
        fs::write(share.join("snaps/one/old"), b"old").unwrap();
        symlink("../../live", share.join("snaps/one/to-share")).unwrap();
        symlink(layout.outside(), share.join("snaps/out")).unwrap();
        let vfs = layout.vfs(resolver, case);
        let one = vfs.subtree(&path("snaps/one")).unwrap();
        let read = request(Access::Read, Disposition::Open, Kind::File);
        let opened = one.open(&path("old"), &read).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(opened.file.read_at(&mut buf, 0).unwrap(), 3);
        assert!(one.open(&path("to-share"), &read).is_err(), "{resolver:?}");
        assert!(one.stat(&path("to-share")).is_err(), "{resolver:?}");
        assert!(vfs.subtree(&path("snaps/out")).is_err(), "{resolver:?}");
        assert!(vfs.subtree(&path("snaps/missing")).is_err(), "{resolver:?}");
        assert!(vfs.subtree(&path("live")).is_err(), "{resolver:?}");
        assert_eq!(fs::read(layout.outside().join("canary")).unwrap(), CANARY);
    }
}
