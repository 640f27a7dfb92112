//! Behaviour specific to the Linux back end: special files, names that are not UTF-8, the
//! share root itself.
#![expect(
    clippy::disallowed_methods,
    reason = "the test sets up and inspects files as itself, not as the back end's work"
)]

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{PermissionsExt, symlink};

use rustix::fs::{CWD, Mode, mkfifoat};
use smb3d_vfs::{
    Access, Disposition, FileType, Kind, OpenRequest, Vfs, VfsError, VfsFile, VfsPath,
};
use smb3d_vfs_posix::{PosixVfs, Resolver};

const RESOLVERS: [Resolver; 2] = [Resolver::Openat2, Resolver::Walk];

fn path(text: &str) -> VfsPath {
    VfsPath::parse(text).unwrap()
}

fn request(access: Access, kind: Kind) -> OpenRequest {
    OpenRequest {
        access,
        disposition: Disposition::Open,
        kind,
        create_mode: 0o644,
    }
}

fn open_root(vfs: &PosixVfs) -> Box<dyn VfsFile> {
    vfs.open(
        &VfsPath::root(),
        &request(Access::MetadataOnly, Kind::Directory),
    )
    .unwrap()
    .file
}

#[test]
fn fifos_open_without_blocking_and_refuse_data() {
    for resolver in RESOLVERS {
        let dir = tempfile::tempdir().unwrap();
        mkfifoat(CWD, dir.path().join("fifo"), Mode::from_raw_mode(0o644)).unwrap();
        let vfs = PosixVfs::with_resolver(dir.path(), resolver).unwrap();
        let fifo = path("fifo");
        assert_eq!(vfs.stat(&fifo).unwrap().file_type, FileType::Other);
        let metadata = vfs
            .open(&fifo, &request(Access::MetadataOnly, Kind::Any))
            .unwrap();
        assert_eq!(metadata.file.stat().unwrap().file_type, FileType::Other);
        // Without O_NONBLOCK this open would wait for a writer forever.
        let reader = vfs.open(&fifo, &request(Access::Read, Kind::File)).unwrap();
        let mut buf = [0; 4];
        assert_eq!(reader.file.read_at(&mut buf, 0), Err(VfsError::Unsupported));
        let root = vfs
            .open(&VfsPath::root(), &request(Access::Read, Kind::Directory))
            .unwrap();
        let entries = root.file.read_dir().unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].file_type, FileType::Other);
        assert_eq!(
            root.file.stat_child("fifo").unwrap().file_type,
            FileType::Other
        );
    }
}

#[test]
fn names_that_are_not_utf8_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(OsStr::from_bytes(b"latin1-\xe9")), b"").unwrap();
    fs::write(dir.path().join("plain"), b"").unwrap();
    let vfs = PosixVfs::new(dir.path()).unwrap();
    let root = vfs
        .open(
            &VfsPath::root(),
            &request(Access::MetadataOnly, Kind::Directory),
        )
        .unwrap();
    let names: Vec<String> = root
        .file
        .read_dir()
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["plain"]);
}

/// The uid and gid tests switch to when run as root, so that permissions apply.
const NOBODY: u32 = 65_534;

/// The account tests switch to.
fn nobody() -> smb3d_vfs::Credentials {
    smb3d_vfs::Credentials {
        uid: NOBODY,
        gid: NOBODY,
        groups: vec![],
    }
}

/// A temporary directory with `mode`, for tests that switch credentials: `None` unless the
/// tests run as root.
fn dir_for_switching(mode: u32) -> Option<tempfile::TempDir> {
    if !rustix::process::geteuid().is_root() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(mode)).unwrap();
    Some(dir)
}

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

#[test]
fn metadata_only_opens_need_no_read_permission() {
    for resolver in RESOLVERS {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let locked = dir.path().join("locked");
        fs::write(&locked, b"secret").unwrap();
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(&locked, Some(NOBODY), Some(NOBODY)).unwrap();
        }
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
        let vfs = PosixVfs::with_resolver(dir.path(), resolver).unwrap();
        unprivileged(|| {
            let read = vfs.open(&path("locked"), &request(Access::Read, Kind::File));
            assert_eq!(read.err(), Some(VfsError::PermissionDenied));
            let file = vfs
                .open(&path("locked"), &request(Access::MetadataOnly, Kind::File))
                .unwrap()
                .file;
            let stat = file.stat().unwrap();
            assert_eq!((stat.size, stat.mode & 0o777), (6, 0));
            let when = smb3d_vfs::Timespec {
                sec: 86_400,
                nsec: 0,
            };
            file.set_times(Some(when), Some(when)).unwrap();
            assert_eq!(vfs.stat(&path("locked")).unwrap().mtime, when);
        });
    }
}

#[test]
fn share_root_must_be_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("file"), b"").unwrap();
    assert_eq!(
        PosixVfs::new(&dir.path().join("missing")).err(),
        Some(VfsError::NotFound)
    );
    assert_eq!(
        PosixVfs::new(&dir.path().join("file")).err(),
        Some(VfsError::NotADirectory)
    );
    // A symlink in the configured root path is the administrator's choice and is followed.
    symlink(dir.path(), dir.path().join("alias")).unwrap();
    let vfs = PosixVfs::new(&dir.path().join("alias")).unwrap();
    assert_eq!(vfs.stat(&path("file")).unwrap().file_type, FileType::File);
}

#[test]
fn fs_stat_reports_the_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let vfs = PosixVfs::new(dir.path()).unwrap();
    let stat = vfs.fs_stat().unwrap();
    let statvfs = rustix::fs::statvfs(dir.path()).unwrap();
    assert_eq!(stat.total_blocks, statvfs.f_blocks);
    assert_eq!(stat.fs_id, statvfs.f_fsid);
    assert_ne!(stat.fs_type, 0);
}

/// As root, work run as another user creates files owned by that user and meets that user's
/// permission checks. The thread keeps the user's credentials afterwards (switching is lazy),
/// but calls outside the work that depend on credentials run as root again, also on threads
/// started while the user's were held.
#[test]
fn run_as_switches_and_restores_credentials() {
    use smb3d_vfs::{Disposition, Kind, OpenRequest};
    use std::os::unix::fs::MetadataExt;

    let Some(dir) = dir_for_switching(0o777) else {
        return;
    };
    std::fs::write(dir.path().join("secret"), b"root only").unwrap();
    std::fs::set_permissions(
        dir.path().join("secret"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let vfs = PosixVfs::new(dir.path())
        .unwrap()
        .with_credential_switching(true);
    let nobody = nobody();
    let create = OpenRequest {
        access: Access::ReadWrite,
        disposition: Disposition::Create,
        kind: Kind::File,
        create_mode: 0o644,
    };
    let read = OpenRequest {
        access: Access::Read,
        disposition: Disposition::Open,
        kind: Kind::File,
        create_mode: 0,
    };
    let mut created = None;
    let mut denied = None;
    vfs.run_as(&nobody, &mut || {
        created = Some(
            vfs.open(&VfsPath::parse("mine").unwrap(), &create)
                .map(|_| ()),
        );
        denied = Some(
            vfs.open(&VfsPath::parse("secret").unwrap(), &read)
                .map(|_| ()),
        );
    });
    assert_eq!(created, Some(Ok(())));
    assert_eq!(
        denied.map(|r| r.err()),
        Some(Some(VfsError::PermissionDenied))
    );
    assert_eq!(
        std::fs::metadata(dir.path().join("mine")).unwrap().uid(),
        65534
    );
    assert_eq!(
        rustix::process::geteuid().as_raw(),
        65534,
        "the user's credentials are kept for the next work"
    );
    let secret = VfsPath::parse("secret").unwrap();
    let on_new_thread = std::thread::scope(|s| {
        s.spawn(|| vfs.open(&secret, &read).map(|_| ()))
            .join()
            .unwrap()
    });
    assert_eq!(on_new_thread, Ok(()), "a thread that inherited them");
    assert_eq!(vfs.open(&secret, &read).map(|_| ()), Ok(()));
    assert!(rustix::process::geteuid().is_root(), "credentials restored");
    // Inside the user's work, privileged work runs as root and the user's credentials return.
    let mut inside = Vec::new();
    vfs.run_as(&nobody, &mut || {
        vfs.run_privileged(&mut || {
            vfs.run_privileged(&mut || inside.push(rustix::process::geteuid().as_raw()));
            inside.push(rustix::process::geteuid().as_raw());
        });
        inside.push(rustix::process::geteuid().as_raw());
    });
    assert_eq!(
        inside,
        [0, 0, 65534],
        "nested privileged work stays privileged"
    );
    // The user's work inside privileged work is the user's again, not root's.
    let mut nested = Vec::new();
    vfs.run_as(&nobody, &mut || {
        vfs.run_privileged(&mut || {
            vfs.run_as(&nobody, &mut || {
                nested.push(rustix::process::geteuid().as_raw());
            });
        });
        nested.push(rustix::process::geteuid().as_raw());
    });
    assert_eq!(nested, [65534, 65534]);
    // Without switching, the same work runs as root.
    let plain = PosixVfs::new(dir.path())
        .unwrap()
        .with_credential_switching(false);
    let mut opened = None;
    plain.run_as(&nobody, &mut || {
        opened = Some(
            plain
                .open(&VfsPath::parse("secret").unwrap(), &read)
                .map(|_| ()),
        )
    });
    assert_eq!(opened, Some(Ok(())));
}

/// POSIX ACLs are the kernel's `system.posix_acl_*` xattrs: readable and writable here, also
/// through metadata-only handles, and the kernel derives the mode's group bits from the mask.
#[test]
fn posix_acls_are_xattrs() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("f"), b"").unwrap();
    fs::set_permissions(dir.path().join("f"), fs::Permissions::from_mode(0o600)).unwrap();
    let vfs = PosixVfs::new(dir.path()).unwrap();
    let file = vfs
        .open(&path("f"), &request(Access::MetadataOnly, Kind::File))
        .unwrap()
        .file;
    // user::rw-, user:4242:r--, group::---, mask::r--, other::---
    let acl: Vec<u8> = [
        &2u32.to_le_bytes()[..],
        &[1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff],
        &[2, 0, 4, 0, 0x92, 0x10, 0, 0],
        &[4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
        &[0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff],
        &[0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
    ]
    .concat();
    match file.set_xattr("system.posix_acl_access", &acl) {
        Ok(()) => {}
        // A file system mounted without ACL support.
        Err(VfsError::Unsupported) => return,
        Err(e) => panic!("{e:?}"),
    }
    assert_eq!(
        file.get_xattr("system.posix_acl_access")
            .unwrap()
            .as_deref(),
        Some(&acl[..])
    );
    assert_eq!(file.stat().unwrap().mode & 0o777, 0o640);
    file.remove_xattr("system.posix_acl_access").unwrap();
    assert_eq!(file.get_xattr("system.posix_acl_access").unwrap(), None);
    assert_eq!(
        file.set_xattr("system.other", b"x"),
        Err(VfsError::Unsupported)
    );
}

/// A directory whose default POSIX ACL leaves owners no read permission: a user creating a
/// subdirectory still gets it open for listing, as its creator, while a later open as that
/// user meets the permissions the ACL gave it.
#[test]
fn new_directory_opens_for_its_creator_whatever_its_acl() {
    let Some(dir) = dir_for_switching(0o777) else {
        return;
    };
    let vfs = PosixVfs::new(dir.path())
        .unwrap()
        .with_credential_switching(true);
    // user::-w-, group::---, other::--- as the default ACL of the share root.
    let default_acl: Vec<u8> = [
        &2u32.to_le_bytes()[..],
        &[1, 0, 2, 0, 0xff, 0xff, 0xff, 0xff],
        &[4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
        &[0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
    ]
    .concat();
    let root = open_root(&vfs);
    if root
        .set_xattr("system.posix_acl_default", &default_acl)
        .is_err()
    {
        return;
    }
    let nobody = nobody();
    let create = OpenRequest {
        access: Access::Read,
        disposition: Disposition::Create,
        kind: Kind::Directory,
        create_mode: 0o755,
    };
    let mut listed = None;
    let mut reopened = None;
    vfs.run_as(&nobody, &mut || {
        let made = vfs.open(&path("sub"), &create).unwrap();
        listed = Some(made.file.read_dir().map(|entries| entries.len()));
        reopened = Some(
            vfs.open(&path("sub"), &request(Access::Read, Kind::Directory))
                .err(),
        );
    });
    assert_eq!(listed, Some(Ok(0)));
    assert_eq!(reopened, Some(Some(VfsError::PermissionDenied)));
    assert_eq!(
        fs::metadata(dir.path().join("sub"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o200
    );
}

/// An entry's xattr is read from the entry itself: a symlink in the share is not followed to a
/// file outside it, whose xattrs would otherwise show through the listing.
#[test]
fn child_xattrs_never_follow_a_symlink() {
    let top = tempfile::tempdir().unwrap();
    let share = top.path().join("share");
    fs::create_dir(&share).unwrap();
    let secret = top.path().join("secret");
    fs::write(&secret, b"outside").unwrap();
    rustix::fs::setxattr(
        &secret,
        "user.DOSATTRIB",
        b"secret",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    symlink(&secret, share.join("link")).unwrap();
    let vfs = PosixVfs::new(&share).unwrap();
    let root = open_root(&vfs);
    assert_eq!(
        root.get_child_xattr("link", "user.DOSATTRIB").unwrap(),
        None
    );
}

/// A directory opened for metadata only (an O_PATH descriptor) reads its own xattrs, small and
/// large, and says which it lacks.
#[test]
fn a_metadata_only_directory_reads_its_own_xattrs() {
    let dir = tempfile::tempdir().unwrap();
    let big = vec![0x5a; 3000];
    for (name, value) in [("user.DOSATTRIB", &b"dos"[..]), ("user.big", &big)] {
        rustix::fs::setxattr(dir.path(), name, value, rustix::fs::XattrFlags::empty()).unwrap();
    }
    let vfs = PosixVfs::new(dir.path()).unwrap();
    let root = open_root(&vfs);
    assert_eq!(root.get_xattr("user.DOSATTRIB").unwrap().unwrap(), b"dos");
    assert_eq!(root.get_xattr("user.big").unwrap().unwrap(), big);
    assert_eq!(root.get_xattr("user.missing").unwrap(), None);
}

/// A user who may read a directory but not search it still reads its xattrs through a
/// metadata-only handle (getxattrat's lookup of `.` needs search permission; the /proc link the
/// handle falls back to does not).
#[test]
fn a_directory_without_search_permission_still_reads_its_xattrs() {
    let Some(top) = dir_for_switching(0o755) else {
        return;
    };
    let share = top.path().join("share");
    fs::create_dir(&share).unwrap();
    rustix::fs::setxattr(
        &share,
        "user.DOSATTRIB",
        b"dos",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    fs::set_permissions(&share, fs::Permissions::from_mode(0o744)).unwrap();
    let vfs = PosixVfs::new(&share)
        .unwrap()
        .with_credential_switching(true);
    let root = open_root(&vfs);
    let nobody = nobody();
    let mut read = None;
    vfs.run_as(&nobody, &mut || {
        read = Some(root.get_xattr("user.DOSATTRIB"))
    });
    assert_eq!(read.unwrap().unwrap().unwrap(), b"dos");
}

/// A local process that exchanges names in a shared writable directory races every directory a
/// user creates there, swapping in someone else's directory between the `mkdirat` and the
/// open of what it made. Whatever the interleaving, the open never hands out that directory as
/// the one just created (which the server would then give the creator's access and
/// descriptor): not when the user may read it, and not when only the service's reopen (for
/// creators whose default ACL withholds read) could open it.
#[test]
fn a_directory_swapped_in_for_a_new_one_is_never_taken_for_it() {
    use std::os::unix::fs::MetadataExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    use rustix::fs::{RenameFlags, renameat_with};

    const RUN_FOR: Duration = Duration::from_millis(1500);
    // Someone else's directories, one only its owner may read and one anyone may, and, on a
    // server that does not switch credentials and so owns every directory, an older one of
    // its own.
    for (switching, victim_uid, victim_mode) in
        [(true, 0, 0o700), (true, 4242, 0o755), (false, 0, 0o700)]
    {
        let Some(dir) = dir_for_switching(0o777) else {
            return;
        };
        let share = dir.path().to_owned();
        let victim = share.join("victim");
        fs::create_dir(&victim).unwrap();
        fs::write(victim.join("kept"), b"not empty, so never removed").unwrap();
        std::os::unix::fs::chown(&victim, Some(victim_uid), Some(victim_uid)).unwrap();
        fs::set_permissions(&victim, fs::Permissions::from_mode(victim_mode)).unwrap();
        let victim_ino = fs::metadata(&victim).unwrap().ino();
        if !switching {
            if fs::metadata(&victim).unwrap().created().is_err() {
                // Without birth times, nothing tells a service's directory from another.
                continue;
            }
            // Older than any directory made from now on can seem.
            std::thread::sleep(Duration::from_millis(1100));
        }
        let vfs = Arc::new(
            PosixVfs::new(&share)
                .unwrap()
                .with_credential_switching(switching),
        );
        let stop = Arc::new(AtomicBool::new(false));
        // Swaps the victim in whenever `new` exists, then back after a moment.
        let swapper = {
            let (share, stop) = (share.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let exchange = || {
                    renameat_with(
                        CWD,
                        share.join("new"),
                        CWD,
                        share.join("victim"),
                        RenameFlags::EXCHANGE,
                    )
                };
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if exchange().is_ok() {
                        swaps += 1;
                        let until = Instant::now() + Duration::from_micros(200);
                        while Instant::now() < until {}
                        while exchange().is_err() && !stop.load(Ordering::Relaxed) {}
                    }
                }
                swaps
            })
        };
        // On a thread of its own: the user's credentials stay with the thread that ran its work.
        let made = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let mut made = 0u64;
                    let deadline = Instant::now() + RUN_FOR;
                    let new = path("new");
                    vfs.run_as(&nobody(), &mut || {
                        let mut attempt = 0u64;
                        while Instant::now() < deadline {
                            attempt += 1;
                            let disposition = if attempt.is_multiple_of(2) {
                                Disposition::Create
                            } else {
                                Disposition::OpenOrCreate
                            };
                            let create = OpenRequest {
                                access: Access::Read,
                                disposition,
                                kind: Kind::Directory,
                                create_mode: 0o755,
                            };
                            // Opening it as an existing directory is the user's right where the
                            // mode allows; taking it for the new one is not.
                            if let Ok(opened) = vfs.open(&new, &create)
                                && opened.created
                            {
                                let ino = opened.file.stat().unwrap().ino;
                                assert_ne!(
                                    ino, victim_ino,
                                    "the swapped-in directory was taken as new"
                                );
                                made += 1;
                            }
                            // Ours is empty and goes; the victim at that name is not.
                            let _ = vfs.unlink(&new);
                        }
                    });
                    made
                })
                .join()
                .unwrap()
        });
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(
            swaps > 0 && made > 0,
            "swaps {swaps}, directories made {made}"
        );
        let after = fs::metadata(&victim).unwrap();
        assert_eq!(
            (after.ino(), after.uid(), after.mode() & 0o7777),
            (victim_ino, victim_uid, victim_mode)
        );
    }
}

/// `data_cached` says whether a range's pages are all in the page cache (`cachestat`): a file
/// just read is; after its pages are dropped (fsync, then POSIX_FADV_DONTNEED) it is not; a
/// range past the end of the file never is.
#[test]
fn data_cached_follows_the_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    let data = vec![0x42; 256 * 1024];
    fs::write(dir.path().join("f"), &data).unwrap();
    let local = fs::File::open(dir.path().join("f")).unwrap();
    local.sync_all().unwrap();
    let vfs = PosixVfs::new(dir.path()).unwrap();
    let file = vfs
        .open(&path("f"), &request(Access::Read, Kind::File))
        .unwrap()
        .file;
    let mut buf = vec![0; data.len()];
    assert_eq!(file.read_at(&mut buf, 0).unwrap(), data.len());
    assert!(
        file.data_cached(0, data.len()),
        "a file just read is cached"
    );
    assert!(file.data_cached(4096 + 17, 100_000));
    assert!(file.data_cached(0, 0));
    assert!(!file.data_cached(0, data.len() + 4096), "past the end");
    rustix::fs::fadvise(&local, 0, None, rustix::fs::Advice::DontNeed).unwrap();
    assert!(!file.data_cached(0, data.len()), "dropped from the cache");
}
