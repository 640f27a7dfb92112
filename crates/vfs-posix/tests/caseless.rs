//! Case-insensitive lookups on Linux: what they cost, measured as the directory listings the
//! kernel reports through inotify; how they behave where a directory cannot be listed or
//! holds names that are not UTF-8; and the cache of large directories' names, which must
//! follow every change made by anyone.
#![expect(
    clippy::disallowed_methods,
    reason = "the test sets up and inspects files as itself, not as the back end's work"
)]

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rustix::fd::OwnedFd;
use rustix::fs::inotify;
use rustix::io::Errno;
use smb3d_vfs::{Access, CaseSensitivity, Disposition, Kind, OpenRequest, Vfs, VfsError, VfsPath};
use smb3d_vfs_posix::{ListingCacheLimits, PosixVfs, Resolver};

const RESOLVERS: [Resolver; 2] = [Resolver::Openat2, Resolver::Walk];

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

/// Counts how often directories are opened for reading or read, through inotify. A listing
/// opens a readable descriptor, which reports `IN_OPEN` for the directory itself (`O_PATH`
/// descriptors, which resolution uses, report nothing), and reads it, which reports
/// `IN_ACCESS` once per `getdents` call.
struct Listings {
    fd: OwnedFd,
    dirs: Vec<i32>,
    kind: inotify::ReadFlags,
}

impl Listings {
    /// Counts opens for reading: one per listing, whatever the size of the directory.
    fn watch(dirs: &[&Path]) -> Self {
        Self::watch_for(dirs, inotify::WatchFlags::OPEN, inotify::ReadFlags::OPEN)
    }

    /// Counts `getdents` calls: none when cached names answer.
    fn watch_reads(dirs: &[&Path]) -> Self {
        Self::watch_for(
            dirs,
            inotify::WatchFlags::ACCESS,
            inotify::ReadFlags::ACCESS,
        )
    }

    fn watch_for(dirs: &[&Path], watch: inotify::WatchFlags, kind: inotify::ReadFlags) -> Self {
        let flags = inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK;
        let fd = inotify::init(flags).unwrap();
        let dirs = dirs
            .iter()
            .map(|dir| inotify::add_watch(&fd, *dir, watch).unwrap())
            .collect();
        Self { fd, dirs, kind }
    }

    /// How often each watched directory was opened or read since the last call.
    fn take(&self) -> Vec<usize> {
        let mut counts = vec![0; self.dirs.len()];
        let mut buf = Vec::with_capacity(4096);
        let mut reader = inotify::Reader::new(&self.fd, buf.spare_capacity_mut());
        loop {
            match reader.next() {
                Ok(event) => {
                    let listed = event.file_name().is_none_or(|name| name.is_empty())
                        && event.events().contains(self.kind);
                    let index = self.dirs.iter().position(|&wd| wd == event.wd());
                    if let (true, Some(index)) = (listed, index) {
                        counts[index] += 1;
                    }
                }
                Err(Errno::AGAIN) => return counts,
                Err(error) => panic!("inotify: {error}"),
            }
        }
    }
}

#[test]
fn exact_spellings_list_nothing_and_other_spellings_list_once() {
    for resolver in RESOLVERS {
        let dir = tempfile::tempdir().unwrap();
        let (root, sub) = (dir.path(), dir.path().join("Sub"));
        fs::create_dir(&sub).unwrap();
        for i in 0..300 {
            fs::write(sub.join(format!("entry-{i}")), b"").unwrap();
        }
        fs::write(sub.join("File.txt"), b"data").unwrap();
        let vfs = PosixVfs::with_resolver(root, resolver)
            .unwrap()
            .with_listing_cache(None);
        let listings = Listings::watch(&[root, &sub]);
        let read = request(Access::Read, Disposition::Open, Kind::File);
        let open_or_create = request(Access::ReadWrite, Disposition::OpenOrCreate, Kind::File);
        let create = request(Access::ReadWrite, Disposition::Create, Kind::File);

        // As spelled: no listing at all.
        vfs.stat(&path("Sub/File.txt")).unwrap();
        vfs.open(&path("Sub/File.txt"), &read).unwrap();
        vfs.open(&path("Sub/File.txt"), &open_or_create).unwrap();
        let handle = vfs
            .open(
                &path("Sub"),
                &request(Access::MetadataOnly, Disposition::Open, Kind::Directory),
            )
            .unwrap()
            .file;
        assert_eq!(
            handle.lookup_child("File.txt").unwrap().unwrap().0,
            "File.txt"
        );
        assert_eq!(listings.take(), [0, 0], "{resolver:?}: exact spellings");

        // Another spelling of the last component: its directory is listed once.
        vfs.stat(&path("Sub/FILE.TXT")).unwrap();
        assert_eq!(listings.take(), [0, 1], "{resolver:?}: stat");
        vfs.open(&path("Sub/file.txt"), &read).unwrap();
        assert_eq!(listings.take(), [0, 1], "{resolver:?}: open");
        assert_eq!(
            handle.lookup_child("FILE.txt").unwrap().unwrap().0,
            "File.txt"
        );
        assert_eq!(listings.take(), [0, 1], "{resolver:?}: lookup_child");
        // Every missing component's directory once.
        vfs.stat(&path("SUB/FILE.TXT")).unwrap();
        assert_eq!(listings.take(), [1, 1], "{resolver:?}: two components");
        // A miss costs one listing; so does the check that a new name is free.
        assert_eq!(
            vfs.stat(&path("Sub/missing")).err(),
            Some(VfsError::NotFound)
        );
        assert_eq!(listings.take(), [0, 1], "{resolver:?}: miss");
        assert!(vfs.open(&path("Sub/New"), &create).unwrap().created);
        assert_eq!(listings.take(), [0, 1], "{resolver:?}: create");
        assert!(
            vfs.open(&path("Sub/Newer"), &open_or_create)
                .unwrap()
                .created
        );
        assert_eq!(listings.take(), [0, 1], "{resolver:?}: open or create");

        // Without case-insensitivity, nothing is ever listed.
        let exact = PosixVfs::with_resolver(root, resolver)
            .unwrap()
            .with_case_sensitivity(CaseSensitivity::Sensitive);
        assert_eq!(
            exact.stat(&path("SUB/FILE.TXT")).err(),
            Some(VfsError::ParentNotFound)
        );
        assert!(exact.open(&path("Sub/Newest"), &create).unwrap().created);
        assert_eq!(listings.take(), [0, 0], "{resolver:?}: case-sensitive");
    }
}

#[test]
fn names_that_are_not_utf8_do_not_disturb_lookups() {
    for resolver in RESOLVERS {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(OsStr::from_bytes(b"LATIN1-\xe9")), b"").unwrap();
        fs::write(dir.path().join("Plain"), b"plain").unwrap();
        let vfs = PosixVfs::with_resolver(dir.path(), resolver).unwrap();
        assert_eq!(vfs.stat(&path("PLAIN")).unwrap().size, 5);
        assert_eq!(vfs.stat(&path("latin1-é")).err(), Some(VfsError::NotFound));
        let root = vfs
            .open(
                &VfsPath::root(),
                &request(Access::Read, Disposition::Open, Kind::Directory),
            )
            .unwrap()
            .file;
        assert_eq!(root.lookup_child("plain").unwrap().unwrap().0, "Plain");
    }
}

/// The uid and gid tests switch to when run as root, so that permissions apply.
const NOBODY: u32 = 65_534;

/// Runs `check` on a thread with an unprivileged uid (only that thread: the raw system calls
/// change one thread's credentials), or directly when not root.
fn unprivileged(check: impl FnOnce() + Send) {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                if rustix::process::geteuid().is_root() {
                    let gid = rustix::process::Gid::from_raw(NOBODY);
                    rustix::thread::set_thread_groups(&[]).unwrap();
                    rustix::thread::set_thread_res_gid(gid, gid, gid).unwrap();
                    rustix::thread::set_thread_uid(rustix::process::Uid::from_raw(NOBODY)).unwrap();
                }
                check();
            })
            .join()
            .unwrap();
    });
}

/// A directory that may be searched and written but not listed (a drop box): names spelled
/// exactly work, other spellings find nothing, and `lookup_child` reports why.
#[test]
fn directories_that_cannot_be_listed() {
    for resolver in RESOLVERS {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let drop_box = dir.path().join("drop");
        fs::create_dir(&drop_box).unwrap();
        fs::write(drop_box.join("Known"), b"known").unwrap();
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(&drop_box, Some(NOBODY), Some(NOBODY)).unwrap();
            std::os::unix::fs::chown(drop_box.join("Known"), Some(NOBODY), Some(NOBODY)).unwrap();
        }
        fs::set_permissions(&drop_box, fs::Permissions::from_mode(0o300)).unwrap();
        let vfs = PosixVfs::with_resolver(dir.path(), resolver).unwrap();
        unprivileged(|| {
            assert_eq!(vfs.stat(&path("drop/Known")).unwrap().size, 5);
            assert_eq!(
                vfs.stat(&path("drop/KNOWN")).err(),
                Some(VfsError::NotFound)
            );
            let create = request(Access::Write, Disposition::Create, Kind::File);
            assert!(vfs.open(&path("drop/New"), &create).unwrap().created);
            let handle = vfs
                .open(
                    &path("drop"),
                    &request(Access::MetadataOnly, Disposition::Open, Kind::Directory),
                )
                .unwrap()
                .file;
            assert_eq!(handle.lookup_child("Known").unwrap().unwrap().0, "Known");
            assert_eq!(
                handle.lookup_child("KNOWN").err(),
                Some(VfsError::PermissionDenied)
            );
        });
    }
}

/// Caches every directory it lists.
const CACHE_EVERYTHING: ListingCacheLimits = ListingCacheLimits {
    min_entries: 0,
    max_directories: 64,
    max_names: 262_144,
};

/// Once a directory's names are cached, lookups read it no more, and see every change that
/// other processes make (here `std::fs`, beside the share's back).
#[test]
fn cached_names_follow_every_change() {
    for resolver in RESOLVERS {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        fs::create_dir(&big).unwrap();
        for i in 0..2000 {
            fs::write(big.join(format!("Entry-{i}")), b"").unwrap();
        }
        let vfs = PosixVfs::with_resolver(dir.path(), resolver).unwrap();
        let reads = Listings::watch_reads(&[&big]);
        let stat = |name: &str| vfs.stat(&path(&format!("big/{name}"))).map(|s| s.ino);
        assert!(stat("ENTRY-7").is_ok());
        assert!(reads.take()[0] > 0, "the first lookup lists");
        assert!(stat("entry-1999").is_ok());
        assert_eq!(stat("ENTRY-2000"), Err(VfsError::NotFound));
        assert_eq!(reads.take(), [0], "{resolver:?}: later ones use the cache");

        fs::write(big.join("Added"), b"").unwrap();
        assert!(stat("ADDED").is_ok(), "created by someone else");
        fs::remove_file(big.join("Entry-7")).unwrap();
        assert_eq!(stat("entry-7"), Err(VfsError::NotFound), "removed");
        fs::rename(big.join("Entry-8"), big.join("Renamed")).unwrap();
        assert_eq!(stat("ENTRY-8"), Err(VfsError::NotFound), "renamed away");
        assert!(stat("RENAMED").is_ok(), "renamed to");
        fs::rename(big.join("Entry-9"), dir.path().join("moved-out")).unwrap();
        assert_eq!(stat("entry-9"), Err(VfsError::NotFound), "moved out");
        fs::rename(dir.path().join("moved-out"), big.join("Moved-In")).unwrap();
        assert!(stat("MOVED-IN").is_ok(), "moved in");
        fs::create_dir(big.join("SubDir")).unwrap();
        std::os::unix::fs::symlink("Added", big.join("Link")).unwrap();
        assert!(stat("subdir").is_ok());
        assert!(stat("LINK").is_ok());
        // A spelling that now differs from the only one left, and one that appears beside it.
        fs::write(big.join("entry-10"), b"").unwrap();
        assert_eq!(
            stat("ENTRY-10").unwrap(),
            stat("Entry-10").unwrap(),
            "lowest"
        );
        fs::remove_file(big.join("Entry-10")).unwrap();
        assert_eq!(stat("ENTRY-10").unwrap(), stat("entry-10").unwrap());
        assert_eq!(reads.take(), [0], "{resolver:?}: all from the cache");

        // The share's own changes, through both spellings.
        let create = request(Access::Write, Disposition::Create, Kind::File);
        assert_eq!(
            vfs.open(&path("big/added"), &create).err(),
            Some(VfsError::AlreadyExists)
        );
        assert!(vfs.open(&path("big/Fresh"), &create).unwrap().created);
        assert_eq!(
            vfs.open(&path("big/FRESH"), &create).err(),
            Some(VfsError::AlreadyExists)
        );
        vfs.rename(&path("big/fresh"), &path("big/FRESH"), false)
            .unwrap();
        assert!(fs::symlink_metadata(big.join("FRESH")).is_ok());
        vfs.unlink(&path("big/fresh")).unwrap();
        assert_eq!(stat("Fresh"), Err(VfsError::NotFound));
        assert_eq!(reads.take(), [0], "{resolver:?}: the share's changes too");

        let handle = vfs
            .open(
                &path("big"),
                &request(Access::MetadataOnly, Disposition::Open, Kind::Directory),
            )
            .unwrap()
            .file;
        assert_eq!(
            handle.lookup_child("RENAMED").unwrap().unwrap().0,
            "Renamed"
        );
        assert_eq!(handle.lookup_child("entry-7").unwrap(), None);
        assert_eq!(reads.take(), [0], "{resolver:?}: lookup_child");
    }
}

/// A change to the directory that comes with no entry event (its mode, here) moves its
/// ctime: the cached names are dropped and the directory listed again.
#[test]
fn a_ctime_change_without_events_drops_cached_names() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("Name"), b"").unwrap();
    let vfs = PosixVfs::new(dir.path())
        .unwrap()
        .with_listing_cache(Some(CACHE_EVERYTHING));
    let reads = Listings::watch_reads(&[dir.path()]);
    assert!(vfs.stat(&path("NAME")).is_ok());
    assert!(vfs.stat(&path("NAME")).is_ok());
    assert!(reads.take()[0] > 0);
    assert!(vfs.stat(&path("name")).is_ok());
    assert_eq!(reads.take(), [0], "cached");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o750)).unwrap();
    assert!(vfs.stat(&path("name")).is_ok());
    assert!(reads.take()[0] > 0, "listed again");
    assert!(vfs.stat(&path("nAmE")).is_ok());
    assert_eq!(reads.take(), [0], "cached again");
}

/// More changes than the inotify queue holds, made while the share looks nothing up: the
/// overflow drops every cached listing, and lookups list again.
#[test]
fn an_event_queue_overflow_drops_cached_names() {
    let queue: usize = fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if queue > 100_000 {
        eprintln!("skipped: the inotify queue holds {queue} events");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let vfs = PosixVfs::new(dir.path())
        .unwrap()
        .with_listing_cache(Some(CACHE_EVERYTHING));
    assert_eq!(vfs.stat(&path("LATE")).err(), Some(VfsError::NotFound));
    for i in 0..queue + 10 {
        fs::write(dir.path().join(format!("f{i}")), b"").unwrap();
    }
    fs::write(dir.path().join("Late"), b"").unwrap();
    assert!(vfs.stat(&path("LATE")).is_ok());
    assert!(vfs.stat(&path(&format!("F{}", queue / 2))).is_ok());
}

/// With room for two directories, lookups across three keep evicting and refilling, and
/// stay right.
#[test]
fn evicted_listings_are_refilled() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["One", "Two", "Three"] {
        fs::create_dir(dir.path().join(name)).unwrap();
        fs::write(dir.path().join(name).join("File"), name).unwrap();
    }
    let vfs = PosixVfs::new(dir.path())
        .unwrap()
        .with_listing_cache(Some(ListingCacheLimits {
            max_directories: 2,
            ..CACHE_EVERYTHING
        }));
    for round in 0..5 {
        for name in ["One", "Two", "Three"] {
            let upper = name.to_uppercase();
            assert!(vfs.stat(&path(&format!("{upper}/FILE"))).is_ok(), "{round}");
            let extra = format!("{upper}/EXTRA-{round}");
            assert_eq!(vfs.stat(&path(&extra)).err(), Some(VfsError::NotFound));
            fs::write(dir.path().join(name).join(format!("Extra-{round}")), b"").unwrap();
            assert!(vfs.stat(&path(&extra)).is_ok(), "{round} {name}");
        }
    }
}

/// Cached names answer only those who may list the directory, as a listing would.
#[test]
fn cached_names_answer_only_those_who_may_list() {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let private = dir.path().join("private");
    fs::create_dir(&private).unwrap();
    fs::write(private.join("Secret"), b"").unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o711)).unwrap();
    let vfs = PosixVfs::new(dir.path())
        .unwrap()
        .with_listing_cache(Some(CACHE_EVERYTHING));
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: needs root to list what another user cannot");
        return;
    }
    assert!(vfs.stat(&path("private/SECRET")).is_ok(), "root lists it");
    unprivileged(|| {
        assert!(vfs.stat(&path("private/Secret")).is_ok(), "as spelled");
        assert_eq!(
            vfs.stat(&path("private/SECRET")).err(),
            Some(VfsError::NotFound)
        );
        let handle = vfs
            .open(
                &path("private"),
                &request(Access::MetadataOnly, Disposition::Open, Kind::Directory),
            )
            .unwrap()
            .file;
        assert_eq!(
            handle.lookup_child("SECRET").err(),
            Some(VfsError::PermissionDenied)
        );
    });
}
