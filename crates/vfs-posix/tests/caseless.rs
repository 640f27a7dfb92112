//! Case-insensitive lookups on Linux: what they cost, measured as the directory listings the
//! kernel reports through inotify, and how they behave where a directory cannot be listed or
//! holds names that are not UTF-8.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rustix::fd::OwnedFd;
use rustix::fs::inotify;
use rustix::io::Errno;
use smb3d_vfs::{Access, CaseSensitivity, Disposition, Kind, OpenRequest, Vfs, VfsError, VfsPath};
use smb3d_vfs_posix::{PosixVfs, Resolver};

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

/// Counts how often directories are listed, through inotify: listing takes a readable
/// descriptor, and opening one reports `IN_OPEN` for the directory itself (`O_PATH`
/// descriptors, which resolution uses, report nothing). Counting `getdents` calls instead
/// would depend on the size of the buffer.
struct Listings {
    fd: OwnedFd,
    dirs: Vec<i32>,
}

impl Listings {
    fn watch(dirs: &[&Path]) -> Self {
        let flags = inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK;
        let fd = inotify::init(flags).unwrap();
        let dirs = dirs
            .iter()
            .map(|dir| inotify::add_watch(&fd, *dir, inotify::WatchFlags::OPEN).unwrap())
            .collect();
        Self { fd, dirs }
    }

    /// How often each watched directory was listed since the last call.
    fn take(&self) -> Vec<usize> {
        let mut counts = vec![0; self.dirs.len()];
        let mut buf = Vec::with_capacity(4096);
        let mut reader = inotify::Reader::new(&self.fd, buf.spare_capacity_mut());
        loop {
            match reader.next() {
                Ok(event) => {
                    let listed = event.file_name().is_none_or(|name| name.is_empty())
                        && event.events().contains(inotify::ReadFlags::OPEN);
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
        let vfs = PosixVfs::with_resolver(root, resolver).unwrap();
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
