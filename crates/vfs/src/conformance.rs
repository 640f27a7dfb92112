//! The back-end conformance suite: every back end must pass it, so that the server sees one
//! semantics whichever it runs on.
//!
//! Each test takes a fresh, empty [`Vfs`]. A back end's tests expand
//! [`conformance_tests!`](crate::conformance_tests) with a constructor.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use crate::{
    Access, Disposition, FileType, Kind, OpenRequest, Opened, PipedData, S_IFDIR, S_IFMT, S_IFREG,
    Timespec, Vfs, VfsError, VfsFile, VfsPath, errno,
};

/// Generates one `#[test]` per case-sensitivity test. `$make` is a closure returning a pair
/// `(exact, caseless)`: one fresh, empty tree seen through
/// [`CaseSensitivity::Sensitive`](crate::CaseSensitivity::Sensitive) and through
/// [`CaseSensitivity::Insensitive`](crate::CaseSensitivity::Insensitive), each dereferencing
/// to `dyn Vfs`. The exact view makes what the caseless one must cope with: names that differ
/// only in case.
#[macro_export]
macro_rules! case_conformance_tests {
    ($make:expr) => {
        $crate::case_conformance_tests!(@each $make;
            caseless_lookup, caseless_creation_collides, caseless_rename, caseless_ambiguity,
            caseless_unlink_and_symlink, caseless_lookup_child, case_sensitive_names_are_distinct,
        );
    };
    (@each $make:expr; $($test:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                let (exact, caseless) = ($make)();
                $crate::conformance::$test(&*exact, &*caseless);
            }
        )*
    };
}

/// Generates one `#[test]` per conformance test. `$make` is a closure returning a fresh
/// subject that dereferences to `dyn Vfs` (a `Box<dyn Vfs>`, or a guard that also owns a
/// temporary directory).
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance_tests!(@each $make;
            missing_objects, dispositions, kinds, directories_open_for_any_access,
            read_write_and_size, read_append, try_read_append, write_piped, allocate, preallocate, sync_dir, hard_links, access_is_enforced, times, xattrs, directory_listing,
            stat_child, unlink, unlink_keeps_open_handles, rename, rename_directories,
            symlinks_inside_the_share, symlinks_leaving_the_share, dangling_symlinks,
            symlink_targets_resolve_through_what_exists, create_modes, modes_and_ownership, fs_stat, removed_directory_handles, copy_range,
            copy_range_within_one_file, clone_range, punch_hole_and_allocated_ranges,
            read_link, links_open_as_themselves,
        );
    };
    (@each $make:expr; $($test:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                let subject = ($make)();
                $crate::conformance::$test(&*subject);
            }
        )*
    };
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

fn open(
    vfs: &dyn Vfs,
    at: &str,
    access: Access,
    disposition: Disposition,
    kind: Kind,
) -> Result<Opened, VfsError> {
    vfs.open(&path(at), &request(access, disposition, kind))
}

fn open_file(vfs: &dyn Vfs, at: &str, access: Access) -> Box<dyn VfsFile> {
    open(vfs, at, access, Disposition::Open, Kind::File)
        .unwrap()
        .file
}

fn write_file(vfs: &dyn Vfs, at: &str, data: &[u8]) {
    let file = open(
        vfs,
        at,
        Access::Write,
        Disposition::OverwriteOrCreate,
        Kind::File,
    )
    .unwrap()
    .file;
    assert_eq!(file.write_at(data, 0).unwrap(), data.len());
}

fn read_file(vfs: &dyn Vfs, at: &str) -> Vec<u8> {
    let file = open_file(vfs, at, Access::Read);
    let mut data = vec![0; usize::try_from(file.stat().unwrap().size).unwrap()];
    assert_eq!(file.read_at(&mut data, 0).unwrap(), data.len());
    data
}

fn mkdir(vfs: &dyn Vfs, at: &str) {
    let opened = open(
        vfs,
        at,
        Access::MetadataOnly,
        Disposition::Create,
        Kind::Directory,
    )
    .unwrap();
    assert!(opened.created);
}

fn error<T>(result: Result<T, VfsError>) -> VfsError {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(error) => error,
    }
}

/// Missing objects and parents, and parents that are files.
pub fn missing_objects(vfs: &dyn Vfs) {
    for kind in [Kind::File, Kind::Directory, Kind::Any] {
        let missing = open(vfs, "missing", Access::Read, Disposition::Open, kind);
        assert_eq!(error(missing), VfsError::NotFound);
    }
    assert_eq!(error(vfs.stat(&path("missing"))), VfsError::NotFound);
    assert_eq!(error(vfs.stat(&path("no/such"))), VfsError::ParentNotFound);
    let deep = open(
        vfs,
        "no/such/file",
        Access::Read,
        Disposition::OpenOrCreate,
        Kind::File,
    );
    assert_eq!(error(deep), VfsError::ParentNotFound);
    let dir = open(
        vfs,
        "no/dir",
        Access::Read,
        Disposition::Create,
        Kind::Directory,
    );
    assert_eq!(error(dir), VfsError::ParentNotFound);

    write_file(vfs, "file", b"x");
    assert_eq!(
        error(vfs.stat(&path("file/child"))),
        VfsError::ParentNotFound
    );
    let under_file = open(
        vfs,
        "file/child",
        Access::Write,
        Disposition::Create,
        Kind::File,
    );
    assert_eq!(error(under_file), VfsError::ParentNotFound);
    assert_eq!(
        error(vfs.symlink("file", &path("file/link"))),
        VfsError::ParentNotFound
    );
}

/// Each disposition on existing and missing files, and whether the open reports a creation.
pub fn dispositions(vfs: &dyn Vfs) {
    let rw = Access::ReadWrite;
    let created = open(vfs, "f", rw, Disposition::Create, Kind::File).unwrap();
    assert!(created.created);
    created.file.write_at(b"hello", 0).unwrap();
    drop(created);
    assert_eq!(
        error(open(vfs, "f", rw, Disposition::Create, Kind::File)),
        VfsError::AlreadyExists
    );

    let opened = open(vfs, "f", rw, Disposition::Open, Kind::File).unwrap();
    assert!(!opened.created);
    assert_eq!(opened.file.stat().unwrap().size, 5);

    let kept = open(vfs, "f", rw, Disposition::OpenOrCreate, Kind::File).unwrap();
    assert!(!kept.created);
    assert_eq!(kept.file.stat().unwrap().size, 5);

    let truncated = open(vfs, "f", rw, Disposition::Overwrite, Kind::File).unwrap();
    assert!(!truncated.created);
    assert_eq!(truncated.file.stat().unwrap().size, 0);
    assert_eq!(
        opened.file.stat().unwrap().size,
        0,
        "same object through another handle"
    );

    write_file(vfs, "f", b"again");
    let overwritten = open(vfs, "f", rw, Disposition::OverwriteOrCreate, Kind::File).unwrap();
    assert!(!overwritten.created);
    assert_eq!(overwritten.file.stat().unwrap().size, 0);

    assert_eq!(
        error(open(vfs, "g", rw, Disposition::Overwrite, Kind::File)),
        VfsError::NotFound
    );
    let made = open(vfs, "g", rw, Disposition::OverwriteOrCreate, Kind::File).unwrap();
    assert!(made.created);
    let made = open(vfs, "h", rw, Disposition::OpenOrCreate, Kind::Any).unwrap();
    assert!(made.created);
    assert_eq!(made.file.stat().unwrap().file_type, FileType::File);

    // Metadata-only and read-only creations still create.
    let quiet = open(
        vfs,
        "m",
        Access::MetadataOnly,
        Disposition::Create,
        Kind::File,
    )
    .unwrap();
    assert!(quiet.created);
    assert_eq!(vfs.stat(&path("m")).unwrap().file_type, FileType::File);
    write_file(vfs, "t", b"data");
    let metadata_overwrite = open(
        vfs,
        "t",
        Access::MetadataOnly,
        Disposition::Overwrite,
        Kind::File,
    )
    .unwrap();
    assert_eq!(metadata_overwrite.file.stat().unwrap().size, 0);
}

/// What `Kind` requires of existing objects and what it creates.
pub fn kinds(vfs: &dyn Vfs) {
    mkdir(vfs, "d");
    write_file(vfs, "f", b"x");
    let read = Access::Read;
    for access in [Access::MetadataOnly, Access::Read, Access::ReadWrite] {
        let dir_as_file = open(vfs, "d", access, Disposition::Open, Kind::File);
        assert_eq!(error(dir_as_file), VfsError::IsADirectory, "{access:?}");
        let file_as_dir = open(vfs, "f", access, Disposition::Open, Kind::Directory);
        assert_eq!(error(file_as_dir), VfsError::NotADirectory, "{access:?}");
    }
    let any_dir = open(vfs, "d", read, Disposition::Open, Kind::Any).unwrap();
    assert_eq!(any_dir.file.stat().unwrap().file_type, FileType::Directory);
    let any_file = open(vfs, "f", read, Disposition::Open, Kind::Any).unwrap();
    assert_eq!(any_file.file.stat().unwrap().file_type, FileType::File);

    assert_eq!(
        error(open(vfs, "d", read, Disposition::Create, Kind::Directory)),
        VfsError::AlreadyExists
    );
    assert_eq!(
        error(open(vfs, "f", read, Disposition::Create, Kind::Directory)),
        VfsError::AlreadyExists
    );
    let existing = open(vfs, "d", read, Disposition::OpenOrCreate, Kind::Directory).unwrap();
    assert!(!existing.created);
    let new = open(vfs, "d2", read, Disposition::OpenOrCreate, Kind::Directory).unwrap();
    assert!(new.created);
    assert_eq!(new.file.stat().unwrap().file_type, FileType::Directory);
    assert_eq!(
        error(open(
            vfs,
            "f",
            read,
            Disposition::OpenOrCreate,
            Kind::Directory
        )),
        VfsError::NotADirectory
    );

    for disposition in [Disposition::Overwrite, Disposition::OverwriteOrCreate] {
        let truncate_dir = open(vfs, "d", Access::Write, disposition, Kind::Directory);
        assert_eq!(error(truncate_dir), VfsError::Io(errno::EINVAL));
        let truncate_any = open(vfs, "d", Access::Write, disposition, Kind::Any);
        assert_eq!(error(truncate_any), VfsError::IsADirectory);
    }

    let root = open(vfs, "", read, Disposition::Open, Kind::Directory).unwrap();
    assert_eq!(root.file.stat().unwrap().file_type, FileType::Directory);
    assert_eq!(
        vfs.stat(&VfsPath::root()).unwrap().file_type,
        FileType::Directory
    );
    for kind in [Kind::File, Kind::Directory] {
        let root_again = open(vfs, "", read, Disposition::Create, kind);
        assert_eq!(error(root_again), VfsError::AlreadyExists);
    }
}

/// Directories open for listing whatever data access is asked; data calls on them fail.
pub fn directories_open_for_any_access(vfs: &dyn Vfs) {
    mkdir(vfs, "d");
    write_file(vfs, "d/inner", b"x");
    for access in [
        Access::MetadataOnly,
        Access::Read,
        Access::Write,
        Access::ReadWrite,
    ] {
        for kind in [Kind::Directory, Kind::Any] {
            let dir = open(vfs, "d", access, Disposition::Open, kind)
                .unwrap()
                .file;
            assert_eq!(dir.stat().unwrap().file_type, FileType::Directory);
            assert_eq!(dir.read_dir().unwrap().len(), 1, "{access:?} {kind:?}");
            let mut buf = [0; 4];
            assert_eq!(error(dir.read_at(&mut buf, 0)), VfsError::IsADirectory);
            assert_eq!(error(dir.write_at(b"x", 0)), VfsError::IsADirectory);
            assert_eq!(error(dir.set_len(0)), VfsError::IsADirectory);
        }
    }
    let dir = open(vfs, "d", Access::Read, Disposition::Open, Kind::Directory).unwrap();
    dir.file.sync().unwrap();
}

/// Reads fill the buffer up to the end of the file; writes extend with zero-filled gaps;
/// `set_len` truncates and extends.
pub fn read_write_and_size(vfs: &dyn Vfs) {
    let file = open(vfs, "f", Access::ReadWrite, Disposition::Create, Kind::File)
        .unwrap()
        .file;
    assert_eq!(file.write_at(b"hello world", 0).unwrap(), 11);
    assert_eq!(file.write_at(b"", 100).unwrap(), 0);
    assert_eq!(file.stat().unwrap().size, 11, "empty writes do not extend");
    let mut buf = [0; 5];
    assert_eq!(file.read_at(&mut buf, 6).unwrap(), 5);
    assert_eq!(&buf, b"world");
    let mut tail = [0xaa; 8];
    assert_eq!(file.read_at(&mut tail, 8).unwrap(), 3);
    assert_eq!(&tail[..3], b"rld");
    assert_eq!(file.read_at(&mut tail, 11).unwrap(), 0);
    assert_eq!(file.read_at(&mut tail, 1 << 40).unwrap(), 0);

    file.write_at(b"!", 20).unwrap();
    assert_eq!(file.stat().unwrap().size, 21);
    let mut all = [0xaa; 21];
    assert_eq!(file.read_at(&mut all, 0).unwrap(), 21);
    assert_eq!(&all[..11], b"hello world");
    assert_eq!(&all[11..20], &[0; 9]);
    assert_eq!(all[20], b'!');

    file.set_len(5).unwrap();
    assert_eq!(file.stat().unwrap().size, 5);
    file.set_len(8).unwrap();
    let mut grown = [0xaa; 8];
    assert_eq!(file.read_at(&mut grown, 0).unwrap(), 8);
    assert_eq!(&grown, b"hello\0\0\0");

    // Larger than a page, across page boundaries.
    let big: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    file.write_at(&big, 4000).unwrap();
    let mut back = vec![0; big.len()];
    assert_eq!(file.read_at(&mut back, 4000).unwrap(), big.len());
    assert_eq!(back, big);
    assert_eq!(vfs.stat(&path("f")).unwrap().size, 24_000);
    file.sync().unwrap();
}

/// `read_append` appends what `read_at` would read and nothing more; `data_fd`, where a back
/// end has one, reads the same bytes and is offered only to handles that may read.
pub fn read_append(vfs: &dyn Vfs) {
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 253) as u8).collect();
    write_file(vfs, "f", &data);
    let file = open_file(vfs, "f", Access::Read);
    let mut buf = b"head".to_vec();
    assert_eq!(file.read_append(&mut buf, 3000, 100).unwrap(), 3000);
    assert_eq!(&buf[..4], b"head");
    assert_eq!(&buf[4..], &data[100..3100]);
    // A spare capacity larger than asked for is not filled.
    let mut roomy = Vec::with_capacity(20_000);
    assert_eq!(file.read_append(&mut roomy, 10, 0).unwrap(), 10);
    assert_eq!(roomy, &data[..10]);
    // The end of the file shortens the read; beyond it nothing is appended.
    let mut tail = Vec::new();
    assert_eq!(file.read_append(&mut tail, 500, 9_800).unwrap(), 200);
    assert_eq!(tail, &data[9_800..]);
    assert_eq!(file.read_append(&mut tail, 500, 20_000).unwrap(), 0);
    assert_eq!(tail.len(), 200);
    assert_eq!(file.read_append(&mut tail, 0, 0).unwrap(), 0);
    // Just below the largest offset, into an exact and a roomy buffer: the end of the file.
    let last = i64::MAX as u64 - 1;
    assert_eq!(file.read_append(&mut Vec::new(), 1, last).unwrap(), 0);
    assert_eq!(
        file.read_append(&mut Vec::with_capacity(4096), 1, last)
            .unwrap(),
        0
    );

    if let Some(fd) = file.data_fd() {
        let mut first = [0u8; 16];
        let read = std::fs::File::from(fd.try_clone_to_owned().unwrap());
        assert_eq!(
            std::os::unix::fs::FileExt::read_at(&read, &mut first, 50).unwrap(),
            16
        );
        assert_eq!(&first, &data[50..66]);
    }
    let write_only = open_file(vfs, "f", Access::Write);
    assert!(write_only.data_fd().is_none(), "a handle that may not read");
    assert_eq!(
        error(write_only.read_append(&mut Vec::new(), 10, 0)),
        VfsError::PermissionDenied
    );
    mkdir(vfs, "d");
    let dir = open(vfs, "d", Access::Read, Disposition::Open, Kind::Directory)
        .unwrap()
        .file;
    assert!(dir.data_fd().is_none(), "a directory");
}

/// `try_read_append` appends what `read_append` would, or declines (`None`) and leaves the
/// buffer as it was; a handle that may not read never gets data.
pub fn try_read_append(vfs: &dyn Vfs) {
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    write_file(vfs, "f", &data);
    let file = open_file(vfs, "f", Access::Read);
    for (len, offset, expect) in [
        (4096, 100, &data[100..4196]),
        (500, 9_800, &data[9_800..]),
        (500, 20_000, &data[..0]),
        (1, i64::MAX as u64 - 1, &data[..0]),
    ] {
        let mut buf = b"head".to_vec();
        match file.try_read_append(&mut buf, len, offset) {
            Some(read) => {
                assert_eq!(read.unwrap(), expect.len(), "{len} at {offset}");
                assert_eq!(&buf[4..], expect);
            }
            None => assert_eq!(buf, b"head", "declined, yet the buffer changed"),
        }
        assert_eq!(&buf[..4], b"head");
    }
    // A spare capacity larger than asked for is not filled.
    let mut roomy = Vec::with_capacity(20_000);
    roomy.extend_from_slice(b"head");
    if let Some(read) = file.try_read_append(&mut roomy, 10, 0) {
        assert_eq!(read.unwrap(), 10);
        assert_eq!(&roomy[4..], &data[..10]);
    }
    let write_only = open_file(vfs, "f", Access::Write);
    let mut buf = Vec::new();
    if let Some(read) = write_only.try_read_append(&mut buf, 10, 0) {
        assert_eq!(error(read), VfsError::PermissionDenied);
    }
    assert!(buf.is_empty());
}

/// `data` in pipes of at most 16 KiB each, their write ends closed.
fn piped(data: &[u8]) -> PipedData {
    use std::io::Write;
    let mut piped = PipedData::new();
    for part in data.chunks(16 * 1024) {
        let (reader, mut writer) = std::io::pipe().unwrap();
        writer.write_all(part).unwrap();
        drop(writer);
        piped.push(std::os::fd::OwnedFd::from(reader), part.len());
    }
    piped
}

/// `write_piped` writes the data of pipes as `write_at` would: over existing data, beyond the end
/// (the gap reads as zeros), and not on a handle that may not write.
pub fn write_piped(vfs: &dyn Vfs) {
    write_file(vfs, "f", &pattern(1000, 1));
    let file = open_file(vfs, "f", Access::ReadWrite);
    let data = pattern(40_000, 7);
    assert_eq!(
        file.write_piped(&mut piped(&data), 500).unwrap(),
        data.len()
    );
    assert_eq!(read_range(&*file, 0, 500), pattern(1000, 1)[..500]);
    assert_eq!(read_range(&*file, 500, 40_000), data);
    assert_eq!(file.write_piped(&mut piped(b"end"), 50_000).unwrap(), 3);
    assert_eq!(file.stat().unwrap().size, 50_003);
    assert_eq!(read_range(&*file, 40_500, 9_500), vec![0; 9_500]);
    // A pipe that holds less than it promised fails instead of writing what it has.
    let mut short = piped(b"12345");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(writer);
    short.push(std::os::fd::OwnedFd::from(reader), 10);
    assert!(file.write_piped(&mut short, 0).is_err());
    let read_only = open_file(vfs, "f", Access::Read);
    assert_eq!(
        error(read_only.write_piped(&mut piped(b"x"), 0)),
        VfsError::PermissionDenied
    );
}

/// `allocate` reserves storage and extends the size like `fallocate` mode 0.
pub fn allocate(vfs: &dyn Vfs) {
    let file = open(vfs, "f", Access::ReadWrite, Disposition::Create, Kind::File)
        .unwrap()
        .file;
    match file.allocate(0, 65536) {
        Err(VfsError::Unsupported) => return,
        result => result.unwrap(),
    }
    let stat = file.stat().unwrap();
    assert_eq!(stat.size, 65536);
    assert!(stat.allocated >= 65536, "{stat:?}");
    file.allocate(0, 4096).unwrap();
    assert_eq!(
        file.stat().unwrap().size,
        65536,
        "allocating inside does not shrink"
    );
    let mut buf = [0xaa; 16];
    assert_eq!(file.read_at(&mut buf, 1000).unwrap(), 16);
    assert_eq!(buf, [0; 16]);
    assert_eq!(error(file.allocate(0, 0)), VfsError::Io(errno::EINVAL));
}

/// `preallocate` reserves storage and keeps the size, like `fallocate` with KEEP_SIZE.
pub fn preallocate(vfs: &dyn Vfs) {
    let file = open(vfs, "f", Access::ReadWrite, Disposition::Create, Kind::File)
        .unwrap()
        .file;
    file.write_at(b"abc", 0).unwrap();
    match file.preallocate(0, 65536) {
        Err(VfsError::Unsupported) => return,
        result => result.unwrap(),
    }
    let stat = file.stat().unwrap();
    assert_eq!(stat.size, 3);
    assert!(stat.allocated >= 65536, "{stat:?}");
    let mut buf = [0; 8];
    assert_eq!(file.read_at(&mut buf, 0).unwrap(), 3);
    assert_eq!(&buf[..3], b"abc");
    assert_eq!(error(file.preallocate(0, 0)), VfsError::Io(errno::EINVAL));
    let read_only = open(vfs, "f", Access::Read, Disposition::Open, Kind::File)
        .unwrap()
        .file;
    assert_eq!(
        error(read_only.preallocate(0, 10)),
        VfsError::PermissionDenied
    );
}

/// `link` adds a name to a file: both names reach the same data, the link count follows, and
/// the file lives until its last name and handle are gone.
pub fn hard_links(vfs: &dyn Vfs) {
    mkdir(vfs, "d");
    let file = open(vfs, "f", Access::ReadWrite, Disposition::Create, Kind::File)
        .unwrap()
        .file;
    file.write_at(b"shared", 0).unwrap();
    vfs.link(&path("f"), &path("d/g")).unwrap();
    let (f, g) = (
        vfs.stat(&path("f")).unwrap(),
        vfs.stat(&path("d/g")).unwrap(),
    );
    assert_eq!((f.ino, f.nlink), (g.ino, 2));
    assert_eq!(
        error(vfs.link(&path("f"), &path("d/g"))),
        VfsError::AlreadyExists
    );
    assert_eq!(
        error(vfs.link(&path("d"), &path("e"))),
        VfsError::PermissionDenied
    );
    assert_eq!(
        error(vfs.link(&path("missing"), &path("h"))),
        VfsError::NotFound
    );
    vfs.unlink(&path("f")).unwrap();
    drop(file);
    let g = open(vfs, "d/g", Access::Read, Disposition::Open, Kind::File)
        .unwrap()
        .file;
    let mut buf = [0; 6];
    assert_eq!(g.read_at(&mut buf, 0).unwrap(), 6);
    assert_eq!(&buf, b"shared");
    assert_eq!(g.stat().unwrap().nlink, 1);
}

/// `sync_dir` syncs directories that exist, the root included.
pub fn sync_dir(vfs: &dyn Vfs) {
    mkdir(vfs, "d");
    open(
        vfs,
        "d/f",
        Access::ReadWrite,
        Disposition::Create,
        Kind::File,
    )
    .unwrap();
    vfs.sync_dir(&path("d")).unwrap();
    vfs.sync_dir(&VfsPath::root()).unwrap();
    assert_eq!(error(vfs.sync_dir(&path("missing"))), VfsError::NotFound);
}

/// Handles refuse data operations their access does not include.
pub fn access_is_enforced(vfs: &dyn Vfs) {
    write_file(vfs, "f", b"data");
    let mut buf = [0; 4];
    let read_only = open_file(vfs, "f", Access::Read);
    assert_eq!(
        error(read_only.write_at(b"x", 0)),
        VfsError::PermissionDenied
    );
    assert_eq!(error(read_only.set_len(0)), VfsError::PermissionDenied);
    assert_eq!(error(read_only.allocate(0, 10)), VfsError::PermissionDenied);
    read_only.sync().unwrap();
    let write_only = open_file(vfs, "f", Access::Write);
    assert_eq!(
        error(write_only.read_at(&mut buf, 0)),
        VfsError::PermissionDenied
    );
    write_only.write_at(b"D", 0).unwrap();
    let metadata = open_file(vfs, "f", Access::MetadataOnly);
    assert_eq!(
        error(metadata.read_at(&mut buf, 0)),
        VfsError::PermissionDenied
    );
    assert_eq!(
        error(metadata.write_at(b"x", 0)),
        VfsError::PermissionDenied
    );
    assert_eq!(error(metadata.set_len(0)), VfsError::PermissionDenied);
    assert_eq!(error(metadata.sync()), VfsError::PermissionDenied);
    assert_eq!(metadata.stat().unwrap().size, 4);
    assert_eq!(read_file(vfs, "f"), b"Data");
}

/// Times set explicitly stick; `None` leaves a time alone; writes move mtime.
pub fn times(vfs: &dyn Vfs) {
    write_file(vfs, "f", b"x");
    let past = Timespec {
        sec: 1_000_000_000,
        nsec: 123_456_789,
    };
    let later = Timespec {
        sec: 1_100_000_000,
        nsec: 5,
    };
    for access in [Access::MetadataOnly, Access::Read, Access::Write] {
        let file = open_file(vfs, "f", access);
        file.set_times(Some(past), Some(later)).unwrap();
        let stat = file.stat().unwrap();
        assert_eq!((stat.atime, stat.mtime), (past, later), "{access:?}");
        file.set_times(None, Some(past)).unwrap();
        let stat = vfs.stat(&path("f")).unwrap();
        assert_eq!((stat.atime, stat.mtime), (past, past), "{access:?}");
        file.set_times(Some(later), None).unwrap();
        let stat = file.stat().unwrap();
        assert_eq!((stat.atime, stat.mtime), (later, past), "{access:?}");
        assert!(stat.ctime > later, "setting times changes ctime");
    }
    let file = open_file(vfs, "f", Access::Write);
    file.write_at(b"y", 0).unwrap();
    let stat = file.stat().unwrap();
    assert!(stat.mtime > later && stat.ctime >= stat.mtime, "{stat:?}");
    if let Some(btime) = stat.btime {
        assert!(btime <= stat.ctime);
    }
    mkdir(vfs, "d");
    let dir = open(
        vfs,
        "d",
        Access::MetadataOnly,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    dir.set_times(Some(past), Some(past)).unwrap();
    assert_eq!(vfs.stat(&path("d")).unwrap().mtime, past);
    write_file(vfs, "d/child", b"");
    assert!(
        vfs.stat(&path("d")).unwrap().mtime > past,
        "entries change the directory"
    );
}

/// `user.` extended attributes through every kind of handle; skipped where unsupported.
pub fn xattrs(vfs: &dyn Vfs) {
    write_file(vfs, "f", b"x");
    let file = open_file(vfs, "f", Access::MetadataOnly);
    match file.set_xattr("user.probe", b"1") {
        Err(VfsError::Unsupported) => return,
        result => result.unwrap(),
    }
    file.remove_xattr("user.probe").unwrap();
    let user = |names: Vec<String>| -> Vec<String> {
        let mut names: Vec<String> = names
            .into_iter()
            .filter(|n| n.starts_with("user."))
            .collect();
        names.sort();
        names
    };
    assert_eq!(file.get_xattr("user.missing").unwrap(), None);
    assert_eq!(error(file.remove_xattr("user.missing")), VfsError::NotFound);
    assert!(user(file.list_xattr().unwrap()).is_empty());

    file.set_xattr("user.DOSATTRIB", b"\x00\x01binary\xff")
        .unwrap();
    file.set_xattr("user.empty", b"").unwrap();
    let big = vec![0x5a; 4000];
    file.set_xattr("user.big", &big).unwrap();
    assert_eq!(
        file.get_xattr("user.DOSATTRIB").unwrap().unwrap(),
        b"\x00\x01binary\xff"
    );
    assert_eq!(file.get_xattr("user.empty").unwrap().unwrap(), b"");
    assert_eq!(file.get_xattr("user.big").unwrap().unwrap(), big);
    assert_eq!(
        user(file.list_xattr().unwrap()),
        ["user.DOSATTRIB", "user.big", "user.empty"]
    );
    file.set_xattr("user.DOSATTRIB", b"new").unwrap();
    let root = vfs
        .open(
            &VfsPath::root(),
            &OpenRequest {
                access: Access::MetadataOnly,
                disposition: Disposition::Open,
                kind: Kind::Directory,
                create_mode: 0,
            },
        )
        .unwrap()
        .file;
    assert_eq!(
        root.get_child_xattr("f", "user.DOSATTRIB")
            .unwrap()
            .unwrap(),
        b"new"
    );
    assert_eq!(root.get_child_xattr("f", "user.big").unwrap().unwrap(), big);
    assert_eq!(root.get_child_xattr("f", "user.missing").unwrap(), None);
    assert_eq!(
        error(root.get_child_xattr("absent", "user.DOSATTRIB")),
        VfsError::NotFound
    );
    assert_eq!(
        error(file.get_child_xattr("f", "user.DOSATTRIB")),
        VfsError::NotADirectory
    );
    assert_eq!(
        user(root.list_child_xattr("f").unwrap()),
        ["user.DOSATTRIB", "user.big", "user.empty"]
    );
    assert_eq!(error(root.list_child_xattr("absent")), VfsError::NotFound);
    assert_eq!(error(file.list_child_xattr("f")), VfsError::NotADirectory);
    let other = open_file(vfs, "f", Access::ReadWrite);
    assert_eq!(other.get_xattr("user.DOSATTRIB").unwrap().unwrap(), b"new");
    other.remove_xattr("user.empty").unwrap();
    assert_eq!(
        user(file.list_xattr().unwrap()),
        ["user.DOSATTRIB", "user.big"]
    );

    assert_eq!(error(file.get_xattr("nonamespace")), VfsError::Unsupported);
    assert_eq!(error(file.set_xattr("user.", b"")), VfsError::InvalidName);
    assert_eq!(
        error(file.set_xattr("user.huge", &vec![0; 65_537])),
        VfsError::NoSpace
    );

    mkdir(vfs, "d");
    let dir = open(
        vfs,
        "d",
        Access::MetadataOnly,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    dir.set_xattr("user.dir", b"yes").unwrap();
    let listing = open(vfs, "d", Access::Read, Disposition::Open, Kind::Directory)
        .unwrap()
        .file;
    assert_eq!(listing.get_xattr("user.dir").unwrap().unwrap(), b"yes");
}

/// `read_dir` lists every entry once, without `.` and `..`, with types not following links.
pub fn directory_listing(vfs: &dyn Vfs) {
    mkdir(vfs, "d");
    mkdir(vfs, "d/sub");
    write_file(vfs, "d/file", b"x");
    write_file(vfs, "d/ünïcødé", b"");
    vfs.symlink("file", &path("d/link")).unwrap();
    vfs.symlink("sub", &path("d/dirlink")).unwrap();
    let dir = open(
        vfs,
        "d",
        Access::MetadataOnly,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    let mut entries = dir.read_dir().unwrap();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let listed: Vec<(&str, FileType)> = entries
        .iter()
        .map(|e| (e.name.as_str(), e.file_type))
        .collect();
    assert_eq!(
        listed,
        [
            ("dirlink", FileType::Symlink),
            ("file", FileType::File),
            ("link", FileType::Symlink),
            ("sub", FileType::Directory),
            ("ünïcødé", FileType::File),
        ]
    );
    let file_entry = entries.iter().find(|e| e.name == "file").unwrap();
    assert_eq!(file_entry.ino, vfs.stat(&path("d/file")).unwrap().ino);
    let empty = open(
        vfs,
        "d/sub",
        Access::Read,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    assert!(empty.read_dir().unwrap().is_empty());
    let file = open_file(vfs, "d/file", Access::Read);
    assert_eq!(error(file.read_dir()), VfsError::NotADirectory);
    let through_link = open(
        vfs,
        "d/dirlink",
        Access::Read,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    assert!(through_link.read_dir().unwrap().is_empty());
    let root = open(vfs, "", Access::Read, Disposition::Open, Kind::Directory)
        .unwrap()
        .file;
    let names: Vec<String> = root
        .read_dir()
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["d"]);
}

/// `stat_child` stats an entry without following it and accepts only plain names.
pub fn stat_child(vfs: &dyn Vfs) {
    mkdir(vfs, "d");
    write_file(vfs, "d/file", b"12345");
    vfs.symlink("file", &path("d/link")).unwrap();
    let dir = open(
        vfs,
        "d",
        Access::MetadataOnly,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    let file = dir.stat_child("file").unwrap();
    assert_eq!((file.file_type, file.size), (FileType::File, 5));
    assert_eq!(file.mode & S_IFMT, S_IFREG);
    let link = dir.stat_child("link").unwrap();
    assert_eq!((link.file_type, link.size), (FileType::Symlink, 4));
    assert_ne!(link.ino, file.ino);
    assert_eq!(error(dir.stat_child("missing")), VfsError::NotFound);
    for bad in ["..", ".", "a/b", ""] {
        assert_eq!(error(dir.stat_child(bad)), VfsError::InvalidName, "{bad:?}");
    }
    let not_dir = open_file(vfs, "d/file", Access::MetadataOnly);
    assert_eq!(error(not_dir.stat_child("x")), VfsError::NotADirectory);
}

/// `unlink` removes files, symlinks (not their targets) and empty directories only.
pub fn unlink(vfs: &dyn Vfs) {
    mkdir(vfs, "d");
    write_file(vfs, "d/file", b"x");
    vfs.symlink("d", &path("link")).unwrap();
    assert_eq!(error(vfs.unlink(&path("d"))), VfsError::NotEmpty);
    vfs.unlink(&path("link")).unwrap();
    assert_eq!(vfs.stat(&path("d")).unwrap().file_type, FileType::Directory);
    assert_eq!(error(vfs.stat(&path("link"))), VfsError::NotFound);
    vfs.unlink(&path("d/file")).unwrap();
    assert_eq!(error(vfs.stat(&path("d/file"))), VfsError::NotFound);
    vfs.unlink(&path("d")).unwrap();
    assert_eq!(error(vfs.unlink(&path("d"))), VfsError::NotFound);
    assert_eq!(error(vfs.unlink(&path("d/file"))), VfsError::ParentNotFound);
    assert_eq!(error(vfs.unlink(&VfsPath::root())), VfsError::Busy);
    vfs.symlink("nowhere", &path("dangling")).unwrap();
    vfs.unlink(&path("dangling")).unwrap();
}

/// An open handle outlives the unlink of its object.
pub fn unlink_keeps_open_handles(vfs: &dyn Vfs) {
    write_file(vfs, "f", b"still here");
    let file = open_file(vfs, "f", Access::ReadWrite);
    vfs.unlink(&path("f")).unwrap();
    let mut buf = [0; 10];
    assert_eq!(file.read_at(&mut buf, 0).unwrap(), 10);
    assert_eq!(&buf, b"still here");
    file.write_at(b"!", 10).unwrap();
    let stat = file.stat().unwrap();
    assert_eq!((stat.size, stat.nlink), (11, 0));
    assert_eq!(error(vfs.stat(&path("f"))), VfsError::NotFound);
    write_file(vfs, "f", b"new");
    assert_eq!(read_file(vfs, "f"), b"new");
}

/// Renames of files and symlinks, with and without replacing.
pub fn rename(vfs: &dyn Vfs) {
    write_file(vfs, "a", b"A");
    write_file(vfs, "b", b"B");
    let handle = open_file(vfs, "a", Access::Read);
    let ino = handle.stat().unwrap().ino;
    assert_eq!(
        error(vfs.rename(&path("a"), &path("b"), false)),
        VfsError::AlreadyExists
    );
    assert_eq!(read_file(vfs, "b"), b"B");
    vfs.rename(&path("a"), &path("b"), true).unwrap();
    assert_eq!(read_file(vfs, "b"), b"A");
    assert_eq!(error(vfs.stat(&path("a"))), VfsError::NotFound);
    assert_eq!(vfs.stat(&path("b")).unwrap().ino, ino);
    assert_eq!(handle.stat().unwrap().ino, ino, "handles follow the object");

    mkdir(vfs, "d");
    vfs.rename(&path("b"), &path("d/c"), false).unwrap();
    assert_eq!(read_file(vfs, "d/c"), b"A");
    assert_eq!(
        error(vfs.rename(&path("b"), &path("x"), false)),
        VfsError::NotFound
    );
    assert_eq!(
        error(vfs.rename(&path("no/b"), &path("x"), false)),
        VfsError::ParentNotFound
    );
    assert_eq!(
        error(vfs.rename(&path("d/c"), &path("no/x"), false)),
        VfsError::ParentNotFound
    );
    assert_eq!(
        error(vfs.rename(&VfsPath::root(), &path("x"), false)),
        VfsError::Busy
    );
    assert_eq!(
        error(vfs.rename(&path("d"), &VfsPath::root(), true)),
        VfsError::Busy
    );

    vfs.rename(&path("d/c"), &path("d/c"), true).unwrap();
    assert_eq!(
        error(vfs.rename(&path("d/c"), &path("d/c"), false)),
        VfsError::AlreadyExists
    );

    vfs.symlink("d/c", &path("link")).unwrap();
    vfs.rename(&path("link"), &path("d/moved"), false).unwrap();
    assert_eq!(
        vfs.stat(&path("d/c")).unwrap().ino,
        ino,
        "the link moved, not its target"
    );
    assert_eq!(
        error(vfs.stat(&path("d/moved"))),
        VfsError::NotFound,
        "relative target"
    );
    vfs.symlink("nowhere", &path("dangling")).unwrap();
    vfs.rename(&path("dangling"), &path("still-dangling"), false)
        .unwrap();
}

/// Renames of directories: over empty and non-empty directories, over files, into themselves.
pub fn rename_directories(vfs: &dyn Vfs) {
    mkdir(vfs, "src");
    write_file(vfs, "src/inner", b"i");
    mkdir(vfs, "empty");
    mkdir(vfs, "full");
    write_file(vfs, "full/x", b"x");
    write_file(vfs, "file", b"f");

    assert_eq!(
        error(vfs.rename(&path("src"), &path("full"), true)),
        VfsError::NotEmpty
    );
    assert_eq!(
        error(vfs.rename(&path("src"), &path("file"), true)),
        VfsError::NotADirectory
    );
    assert_eq!(
        error(vfs.rename(&path("file"), &path("empty"), true)),
        VfsError::IsADirectory
    );
    assert_eq!(
        error(vfs.rename(&path("src"), &path("empty"), false)),
        VfsError::AlreadyExists
    );
    assert_eq!(
        error(vfs.rename(&path("src"), &path("src/inside"), false)),
        VfsError::Io(errno::EINVAL)
    );
    mkdir(vfs, "src/deeper");
    assert_eq!(
        error(vfs.rename(&path("src"), &path("src/deeper/inside"), false)),
        VfsError::Io(errno::EINVAL)
    );
    assert_eq!(
        error(vfs.rename(&path("src/deeper"), &path("src"), true)),
        VfsError::NotEmpty,
        "a directory cannot replace its own ancestor"
    );

    vfs.rename(&path("src"), &path("empty"), true).unwrap();
    assert_eq!(read_file(vfs, "empty/inner"), b"i");
    assert_eq!(error(vfs.stat(&path("src"))), VfsError::NotFound);
    vfs.rename(&path("empty"), &path("full/moved"), false)
        .unwrap();
    assert_eq!(read_file(vfs, "full/moved/inner"), b"i");
    vfs.rename(&path("full/moved"), &path("back"), false)
        .unwrap();
    assert_eq!(read_file(vfs, "back/inner"), b"i");
}

/// Symlinks that stay inside the share are followed by `open` and `stat`, in any component.
pub fn symlinks_inside_the_share(vfs: &dyn Vfs) {
    mkdir(vfs, "dir");
    mkdir(vfs, "dir/sub");
    write_file(vfs, "dir/sub/target", b"target data");
    vfs.symlink("dir/sub/target", &path("to-file")).unwrap();
    vfs.symlink("dir/sub", &path("to-dir")).unwrap();
    vfs.symlink("../sub/target", &path("dir/sub/up-and-back"))
        .unwrap();
    vfs.symlink("../../to-file", &path("dir/sub/chain"))
        .unwrap();
    vfs.symlink(".", &path("dir/self")).unwrap();

    let target = vfs.stat(&path("dir/sub/target")).unwrap();
    for via in [
        "to-file",
        "to-dir/target",
        "dir/sub/up-and-back",
        "dir/sub/chain",
        "to-dir/chain",
        "dir/self/self/sub/target",
    ] {
        let stat = vfs.stat(&path(via)).unwrap();
        assert_eq!(
            (stat.ino, stat.file_type, stat.size),
            (target.ino, FileType::File, 11),
            "{via}"
        );
        assert_eq!(read_file(vfs, via), b"target data", "{via}");
    }
    assert_eq!(
        vfs.stat(&path("to-dir")).unwrap().file_type,
        FileType::Directory
    );
    let dir = open(
        vfs,
        "to-dir",
        Access::Read,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap();
    assert_eq!(
        dir.file.stat().unwrap().ino,
        vfs.stat(&path("dir/sub")).unwrap().ino
    );
    assert_eq!(
        error(open(
            vfs,
            "to-dir",
            Access::Read,
            Disposition::Open,
            Kind::File
        )),
        VfsError::IsADirectory
    );
    let through = open(
        vfs,
        "to-dir/new",
        Access::Write,
        Disposition::Create,
        Kind::File,
    )
    .unwrap();
    assert!(through.created);
    assert!(vfs.stat(&path("dir/sub/new")).is_ok());
    write_file(vfs, "to-file", b"written through");
    assert_eq!(read_file(vfs, "dir/sub/target"), b"written through");
    assert_eq!(
        error(vfs.symlink("x", &path("to-file"))),
        VfsError::AlreadyExists
    );
    assert_eq!(
        error(open(
            vfs,
            "to-file",
            Access::Read,
            Disposition::Create,
            Kind::File
        )),
        VfsError::AlreadyExists
    );
    // A trailing slash in a target requires a directory, as in any path.
    vfs.symlink("dir/sub/", &path("slash-dir")).unwrap();
    vfs.symlink("dir/sub/target/", &path("slash-file")).unwrap();
    assert_eq!(
        vfs.stat(&path("slash-dir")).unwrap().file_type,
        FileType::Directory
    );
    assert_eq!(
        error(vfs.stat(&path("slash-file"))),
        VfsError::NotADirectory
    );
    let dir_handle = open(vfs, "dir", Access::Read, Disposition::Open, Kind::Directory)
        .unwrap()
        .file;
    let link = dir_handle.stat_child("self").unwrap();
    assert_eq!(link.file_type, FileType::Symlink);
}

/// A symlink target is checked by resolving it from the link's directory through what
/// exists, symlinks included, not by its spelling: through `d/e/s`, a link to the root,
/// `s/..` is the share's parent. Where something is missing, only names may follow.
pub fn symlink_targets_resolve_through_what_exists(vfs: &dyn Vfs) {
    mkdir(vfs, "d");
    mkdir(vfs, "d/e");
    write_file(vfs, "d/file", b"x");
    vfs.symlink("../..", &path("d/e/s")).unwrap();
    vfs.symlink("../../..", &path("d/e/up")).unwrap();
    vfs.symlink("/etc", &path("d/abs")).unwrap();
    vfs.symlink("loop", &path("d/e/loop")).unwrap();
    let link = path("d/e/new");
    for inside in [
        "s",
        "s/d/file",
        "s/d/e/s/d",
        "s/d/../d/file",
        "..",
        "../file",
        "../../d",
        "s/missing",
        "missing/deeper",
        "./missing/",
    ] {
        assert_eq!(vfs.check_symlink_target(&link, inside), Ok(()), "{inside}");
    }
    for outside in [
        "s/..",
        "s/../d",
        "s/d/e/s/..",
        "../../..",
        "up",
        "up/d",
        "../abs",
        "../abs/passwd",
        "/etc/passwd",
        "loop",
        "missing/../../x",
        "s/missing/../..",
        "../file/../x",
    ] {
        assert_eq!(
            vfs.check_symlink_target(&link, outside),
            Err(VfsError::OutsideShare),
            "{outside}"
        );
    }
    assert_eq!(
        vfs.check_symlink_target(&link, ""),
        Err(VfsError::InvalidName)
    );
}

/// Symlinks leaving the share, absolute ones and loops are refused wherever they appear.
pub fn symlinks_leaving_the_share(vfs: &dyn Vfs) {
    mkdir(vfs, "d");
    write_file(vfs, "d/file", b"x");
    vfs.symlink("/etc/passwd", &path("absolute")).unwrap();
    vfs.symlink("..", &path("up")).unwrap();
    vfs.symlink("../outside", &path("out")).unwrap();
    vfs.symlink("../../escape", &path("d/deep-out")).unwrap();
    vfs.symlink("d/deep-out", &path("chain-out")).unwrap();
    vfs.symlink("/", &path("d/root")).unwrap();
    vfs.symlink("loop-b", &path("loop-a")).unwrap();
    vfs.symlink("loop-a", &path("loop-b")).unwrap();
    vfs.symlink("../d/file", &path("d/fine")).unwrap();
    for bad in [
        "absolute",
        "up",
        "up/d/file",
        "out",
        "d/deep-out",
        "chain-out",
        "d/root",
        "d/root/etc/passwd",
        "loop-a",
        "loop-b/x",
    ] {
        assert_eq!(
            error(vfs.stat(&path(bad))),
            VfsError::OutsideShare,
            "stat {bad}"
        );
        for disposition in [
            Disposition::Open,
            Disposition::OpenOrCreate,
            Disposition::Overwrite,
        ] {
            let opened = open(vfs, bad, Access::ReadWrite, disposition, Kind::Any);
            assert_eq!(
                error(opened),
                VfsError::OutsideShare,
                "open {bad} {disposition:?}"
            );
        }
    }
    for parent in ["up", "d/root", "out"] {
        let child = format!("{parent}/new");
        let created = open(vfs, &child, Access::Write, Disposition::Create, Kind::File);
        assert_eq!(error(created), VfsError::OutsideShare, "create {child}");
        let dir = open(
            vfs,
            &child,
            Access::Read,
            Disposition::Create,
            Kind::Directory,
        );
        assert_eq!(error(dir), VfsError::OutsideShare, "mkdir {child}");
        assert_eq!(
            error(vfs.unlink(&path(&child))),
            VfsError::OutsideShare,
            "unlink {child}"
        );
        assert_eq!(
            error(vfs.rename(&path("d/file"), &path(&child), false)),
            VfsError::OutsideShare,
            "rename to {child}"
        );
        assert_eq!(
            error(vfs.rename(&path(&child), &path("d/x"), false)),
            VfsError::OutsideShare,
            "rename from {child}"
        );
        assert_eq!(
            error(vfs.symlink("x", &path(&child))),
            VfsError::OutsideShare
        );
    }
    // The links themselves can be listed, stat'ed without following, renamed and removed.
    assert_eq!(read_file(vfs, "d/fine"), b"x");
    vfs.rename(&path("absolute"), &path("d/absolute"), false)
        .unwrap();
    vfs.unlink(&path("d/absolute")).unwrap();
    vfs.unlink(&path("up")).unwrap();
    let root = open(
        vfs,
        "",
        Access::MetadataOnly,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    assert_eq!(
        root.stat_child("loop-a").unwrap().file_type,
        FileType::Symlink
    );
}

/// Dangling symlinks: missing when followed, taken when creating, never created through.
/// `open_link` opens a symlink itself wherever it points (inside, outside, nowhere), never
/// what it points to, and only symlinks; the link can then be unlinked without its target.
pub fn links_open_as_themselves(vfs: &dyn Vfs) {
    mkdir(vfs, "d");
    write_file(vfs, "d/file", b"keep");
    vfs.symlink("file", &path("d/inside")).unwrap();
    vfs.symlink("../../outside", &path("d/out")).unwrap();
    vfs.symlink("/etc/passwd", &path("absolute")).unwrap();
    vfs.symlink("missing", &path("dangling")).unwrap();
    vfs.symlink("../outside", &path("escape")).unwrap();
    for link in ["d/inside", "d/out", "absolute", "dangling"] {
        let opened = vfs.open_link(&path(link)).unwrap().expect(link);
        let stat = opened.file.stat().unwrap();
        assert_eq!(stat.file_type, FileType::Symlink, "{link}");
        assert!(opened.file.read_at(&mut [0; 4], 0).is_err(), "{link}");
        assert!(opened.file.write_at(b"gone", 0).is_err(), "{link}");
        assert!(opened.file.set_len(0).is_err(), "{link}");
        drop(opened);
        vfs.unlink(&path(link)).unwrap();
        assert_eq!(
            vfs.read_link(&path(link)).map(|_| ()).err(),
            Some(VfsError::NotFound),
            "{link}"
        );
    }
    assert_eq!(read_file(vfs, "d/file"), b"keep");
    assert!(vfs.open_link(&path("d/file")).unwrap().is_none());
    assert!(vfs.open_link(&path("d")).unwrap().is_none());
    assert_eq!(error(vfs.open_link(&path("nothing"))), VfsError::NotFound);
    // The directories before the last component are followed only within the share.
    assert_eq!(
        error(vfs.open_link(&path("escape/x"))),
        VfsError::OutsideShare
    );
}

pub fn dangling_symlinks(vfs: &dyn Vfs) {
    vfs.symlink("missing", &path("dangling")).unwrap();
    vfs.symlink("nodir/missing", &path("deep-dangling"))
        .unwrap();
    for link in ["dangling", "deep-dangling"] {
        assert_eq!(error(vfs.stat(&path(link))), VfsError::NotFound, "{link}");
        for disposition in [
            Disposition::Open,
            Disposition::OpenOrCreate,
            Disposition::Overwrite,
            Disposition::OverwriteOrCreate,
        ] {
            let opened = open(vfs, link, Access::ReadWrite, disposition, Kind::File);
            assert_eq!(error(opened), VfsError::NotFound, "{link} {disposition:?}");
        }
        let created = open(
            vfs,
            link,
            Access::ReadWrite,
            Disposition::Create,
            Kind::File,
        );
        assert_eq!(error(created), VfsError::AlreadyExists, "{link}");
        let mkdir = open(
            vfs,
            link,
            Access::Read,
            Disposition::Create,
            Kind::Directory,
        );
        assert_eq!(error(mkdir), VfsError::AlreadyExists, "{link}");
    }
    assert_eq!(
        error(vfs.stat(&path("missing"))),
        VfsError::NotFound,
        "no target appeared"
    );
    assert_eq!(
        error(vfs.stat(&path("dangling/x"))),
        VfsError::ParentNotFound
    );
}

/// Created objects carry the requested permission bits (with the usual umask bits clear).
pub fn create_modes(vfs: &dyn Vfs) {
    let file = vfs
        .open(
            &path("private"),
            &OpenRequest {
                access: Access::Write,
                disposition: Disposition::Create,
                kind: Kind::File,
                create_mode: 0o600,
            },
        )
        .unwrap()
        .file;
    let stat = file.stat().unwrap();
    assert_eq!(stat.mode & S_IFMT, S_IFREG);
    assert_eq!(stat.mode & 0o7777, 0o600);
    assert_eq!((stat.nlink, stat.size), (1, 0));
    let dir = vfs
        .open(
            &path("dir"),
            &OpenRequest {
                access: Access::MetadataOnly,
                disposition: Disposition::Create,
                kind: Kind::Directory,
                create_mode: 0o700,
            },
        )
        .unwrap()
        .file;
    let stat = dir.stat().unwrap();
    assert_eq!(stat.mode & S_IFMT, S_IFDIR);
    assert_eq!(stat.mode & 0o7777, 0o700);
    let other = vfs.stat(&path("private")).unwrap();
    assert_ne!(other.ino, stat.ino);
    assert_eq!(other.dev, stat.dev);
}

/// Permission bits and ownership change through any handle, metadata-only ones included,
/// and keep the file type.
pub fn modes_and_ownership(vfs: &dyn Vfs) {
    write_file(vfs, "f", b"data");
    mkdir(vfs, "d");
    for (name, kind) in [("f", S_IFREG), ("d", S_IFDIR)] {
        for access in [Access::MetadataOnly, Access::Read] {
            let handle = open(vfs, name, access, Disposition::Open, Kind::Any)
                .unwrap()
                .file;
            handle.set_mode(0o640).unwrap();
            let stat = handle.stat().unwrap();
            assert_eq!(stat.mode & S_IFMT, kind);
            assert_eq!(stat.mode & 0o7777, 0o640);
            handle.set_mode(0o10755).unwrap();
            assert_eq!(vfs.stat(&path(name)).unwrap().mode & 0o7777, 0o755);
            // Giving an object to its own owner and group is always allowed.
            handle.set_owner(Some(stat.uid), None).unwrap();
            handle.set_owner(None, Some(stat.gid)).unwrap();
            handle.set_owner(Some(stat.uid), Some(stat.gid)).unwrap();
            let after = handle.stat().unwrap();
            assert_eq!((after.uid, after.gid), (stat.uid, stat.gid));
        }
    }
}

/// File-system statistics are self-consistent.
pub fn fs_stat(vfs: &dyn Vfs) {
    let stat = vfs.fs_stat().unwrap();
    assert!(stat.block_size > 0 && stat.fragment_size > 0, "{stat:?}");
    assert!(stat.total_blocks >= stat.free_blocks, "{stat:?}");
    assert!(stat.free_blocks >= stat.avail_blocks, "{stat:?}");
    assert!(stat.max_name_len >= 255, "{stat:?}");
}

/// A removed directory's handle stays valid: it lists nothing and has no children.
pub fn removed_directory_handles(vfs: &dyn Vfs) {
    mkdir(vfs, "gone");
    let dir = open(
        vfs,
        "gone",
        Access::Read,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    vfs.unlink(&path("gone")).unwrap();
    assert_eq!(dir.stat().unwrap().file_type, FileType::Directory);
    assert!(dir.read_dir().unwrap().is_empty());
    assert_eq!(error(dir.stat_child("x")), VfsError::NotFound);
    assert_eq!(dir.lookup_child("x").unwrap(), None);
    assert_eq!(dir.stat().unwrap().nlink, 0);
}

/// The names in a directory, sorted.
fn names(vfs: &dyn Vfs, dir: &str) -> Vec<String> {
    let handle = open(vfs, dir, Access::Read, Disposition::Open, Kind::Directory)
        .unwrap()
        .file;
    let mut names: Vec<String> = handle
        .read_dir()
        .unwrap()
        .into_iter()
        .map(|entry| entry.name)
        .collect();
    names.sort();
    names
}

/// Files and directories are found whatever the case of any component, Unicode included;
/// symlink targets are followed as spelled.
pub fn caseless_lookup(exact: &dyn Vfs, caseless: &dyn Vfs) {
    mkdir(caseless, "Docs");
    mkdir(caseless, "Docs/Sub");
    write_file(caseless, "Docs/Sub/Report.TXT", b"report");
    let ino = caseless.stat(&path("Docs/Sub/Report.TXT")).unwrap().ino;
    for spelling in [
        "docs/sub/report.txt",
        "DOCS/SUB/REPORT.TXT",
        "dOCS/Sub/rEPORT.txt",
        "Docs/Sub/report.txt",
    ] {
        assert_eq!(
            caseless.stat(&path(spelling)).unwrap().ino,
            ino,
            "{spelling}"
        );
        assert_eq!(read_file(caseless, spelling), b"report", "{spelling}");
        assert!(exact.stat(&path(spelling)).is_err(), "{spelling}");
    }
    assert_eq!(
        error(exact.stat(&path("docs/sub/report.txt"))),
        VfsError::ParentNotFound
    );
    let sub = open(
        caseless,
        "docs/SUB",
        Access::Read,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    assert_eq!(
        sub.stat().unwrap().ino,
        caseless.stat(&path("Docs/Sub")).unwrap().ino
    );
    let sub_as_file = open(
        caseless,
        "DOCS/sub",
        Access::Read,
        Disposition::Open,
        Kind::File,
    );
    assert_eq!(error(sub_as_file), VfsError::IsADirectory);
    let truncated = open(
        caseless,
        "docs/sub/REPORT.txt",
        Access::Write,
        Disposition::Overwrite,
        Kind::File,
    )
    .unwrap();
    assert!(!truncated.created);
    assert_eq!(truncated.file.stat().unwrap().ino, ino);
    assert_eq!(caseless.stat(&path("Docs/Sub/Report.TXT")).unwrap().size, 0);

    assert_eq!(
        error(caseless.stat(&path("DOCS/missing"))),
        VfsError::NotFound
    );
    assert_eq!(
        error(caseless.stat(&path("nodir/x"))),
        VfsError::ParentNotFound
    );
    assert_eq!(
        error(caseless.stat(&path("docs/sub/report.txt/x"))),
        VfsError::ParentNotFound
    );
    for disposition in [Disposition::Open, Disposition::Overwrite] {
        let missing = open(
            caseless,
            "DOCS/missing",
            Access::Read,
            disposition,
            Kind::Any,
        );
        assert_eq!(error(missing), VfsError::NotFound, "{disposition:?}");
        let no_parent = open(caseless, "NODIR/x", Access::Read, disposition, Kind::Any);
        assert_eq!(
            error(no_parent),
            VfsError::ParentNotFound,
            "{disposition:?}"
        );
    }

    write_file(caseless, "Ünïcödé ΣΊΣΥΦΟΣ straße", b"u");
    assert_eq!(read_file(caseless, "üNÏCÖDÉ σίσυφος STRAẞE"), b"u");
    assert_eq!(
        error(caseless.stat(&path("ÜNÏCÖDÉ ΣΊΣΥΦΟΣ STRASSE"))),
        VfsError::NotFound,
        "simple folding: ß is not ss"
    );
    // Names whose spellings differ in length: the Kelvin sign is three bytes, `k` one.
    write_file(caseless, "\u{212a}elvin", b"K");
    assert_eq!(read_file(caseless, "KELVIN"), b"K");
    assert_eq!(names(caseless, "").len(), 3);

    caseless.symlink("Docs/Sub", &path("Shortcut")).unwrap();
    assert_eq!(
        caseless.stat(&path("SHORTCUT/report.txt")).unwrap().ino,
        ino
    );
    caseless.symlink("docs/sub", &path("Misspelt")).unwrap();
    assert_eq!(
        error(caseless.stat(&path("MISSPELT"))),
        VfsError::NotFound,
        "a symlink's target is followed as spelled"
    );
}

/// Creating a name an existing entry matches opens that entry or collides with it; new names
/// keep the spelling given.
pub fn caseless_creation_collides(exact: &dyn Vfs, caseless: &dyn Vfs) {
    let rw = Access::ReadWrite;
    write_file(caseless, "readme", b"original");
    let ino = caseless.stat(&path("readme")).unwrap().ino;
    for kind in [Kind::File, Kind::Directory, Kind::Any] {
        let created = open(caseless, "README", rw, Disposition::Create, kind);
        assert_eq!(error(created), VfsError::AlreadyExists, "{kind:?}");
    }
    let opened = open(
        caseless,
        "README",
        rw,
        Disposition::OpenOrCreate,
        Kind::File,
    )
    .unwrap();
    assert!(!opened.created);
    assert_eq!(opened.file.stat().unwrap().ino, ino);
    let mut buf = [0; 8];
    assert_eq!(opened.file.read_at(&mut buf, 0).unwrap(), 8);
    assert_eq!(&buf, b"original");
    let overwritten = open(
        caseless,
        "ReadMe",
        rw,
        Disposition::OverwriteOrCreate,
        Kind::File,
    )
    .unwrap();
    assert!(!overwritten.created);
    let stat = overwritten.file.stat().unwrap();
    assert_eq!((stat.ino, stat.size), (ino, 0));
    let as_dir = open(
        caseless,
        "README",
        rw,
        Disposition::OpenOrCreate,
        Kind::Directory,
    );
    assert_eq!(error(as_dir), VfsError::NotADirectory);
    assert_eq!(names(caseless, ""), ["readme"]);

    let new = open(
        caseless,
        "New File.TXT",
        rw,
        Disposition::Create,
        Kind::File,
    )
    .unwrap();
    assert!(new.created);
    mkdir(caseless, "Docs");
    let inner = open(caseless, "DOCS/Inner", rw, Disposition::Create, Kind::File).unwrap();
    assert!(inner.created);
    assert_eq!(names(caseless, "Docs"), ["Inner"]);
    let dir = open(
        caseless,
        "docs",
        rw,
        Disposition::OpenOrCreate,
        Kind::Directory,
    )
    .unwrap();
    assert!(!dir.created);
    let again = open(caseless, "DOCS", rw, Disposition::Create, Kind::Directory);
    assert_eq!(error(again), VfsError::AlreadyExists);
    let inner_again = open(caseless, "docs/INNER", rw, Disposition::Create, Kind::File);
    assert_eq!(error(inner_again), VfsError::AlreadyExists);
    let no_parent = open(
        caseless,
        "NODIR/x",
        rw,
        Disposition::OpenOrCreate,
        Kind::File,
    );
    assert_eq!(error(no_parent), VfsError::ParentNotFound);
    assert_eq!(names(caseless, ""), ["Docs", "New File.TXT", "readme"]);

    // A dangling symlink takes its name in every spelling, and nothing is created through it.
    caseless.symlink("target", &path("Dangling")).unwrap();
    let through = open(
        caseless,
        "DANGLING",
        rw,
        Disposition::OpenOrCreate,
        Kind::File,
    );
    assert_eq!(error(through), VfsError::NotFound);
    let over = open(caseless, "dangling", rw, Disposition::Create, Kind::File);
    assert_eq!(error(over), VfsError::AlreadyExists);
    assert_eq!(error(caseless.stat(&path("target"))), VfsError::NotFound);

    // The exact view creates what the caseless one refuses.
    let twin = open(exact, "README", rw, Disposition::Create, Kind::File).unwrap();
    assert!(twin.created);
    assert_ne!(twin.file.stat().unwrap().ino, ino);
}

/// A rename that changes only case works; a target that another entry matches collides with
/// it or replaces it; sources and target parents are found in any case.
pub fn caseless_rename(_exact: &dyn Vfs, caseless: &dyn Vfs) {
    let rename =
        |from: &str, to: &str, replace: bool| caseless.rename(&path(from), &path(to), replace);
    write_file(caseless, "a", b"moving");
    let ino = caseless.stat(&path("a")).unwrap().ino;
    rename("a", "A", false).unwrap();
    assert_eq!(names(caseless, ""), ["A"]);
    assert_eq!(caseless.stat(&path("a")).unwrap().ino, ino);
    rename("A", "a", true).unwrap();
    assert_eq!(names(caseless, ""), ["a"]);
    rename("A", "b", false).unwrap();
    assert_eq!(names(caseless, ""), ["b"]);
    // Onto itself in its own spelling, the usual rules apply.
    assert_eq!(error(rename("B", "b", false)), VfsError::AlreadyExists);
    rename("B", "b", true).unwrap();
    assert_eq!(names(caseless, ""), ["b"]);

    write_file(caseless, "c", b"replaced");
    assert_eq!(error(rename("b", "C", false)), VfsError::AlreadyExists);
    assert_eq!(read_file(caseless, "c"), b"replaced");
    rename("b", "C", true).unwrap();
    assert_eq!(
        names(caseless, ""),
        ["c"],
        "the replaced entry's spelling stays"
    );
    assert_eq!(caseless.stat(&path("C")).unwrap().ino, ino);
    assert_eq!(read_file(caseless, "c"), b"moving");

    mkdir(caseless, "Dir");
    write_file(caseless, "dir/x", b"x");
    rename("DIR", "dir", false).unwrap();
    assert_eq!(names(caseless, ""), ["c", "dir"]);
    assert_eq!(read_file(caseless, "DIR/X"), b"x");
    rename("C", "DIR/Moved", false).unwrap();
    assert_eq!(names(caseless, "dir"), ["Moved", "x"]);
    rename("Dir/moved", "DIR/MOVED", false).unwrap();
    assert_eq!(names(caseless, "dir"), ["MOVED", "x"]);
    assert_eq!(
        error(rename("dir/moved", "dir/X", false)),
        VfsError::AlreadyExists
    );
    rename("dir/X", "dir/Y", false).unwrap();
    assert_eq!(names(caseless, "dir"), ["MOVED", "Y"]);
    // The same name in another directory is another entry: a collision, not a change of case.
    mkdir(caseless, "other");
    write_file(caseless, "other/y", b"other");
    assert_eq!(
        error(rename("dir/Y", "OTHER/Y", false)),
        VfsError::AlreadyExists
    );
    rename("dir/y", "Other/Y", true).unwrap();
    assert_eq!(names(caseless, "other"), ["y"]);
    assert_eq!(read_file(caseless, "OTHER/Y"), b"x");
    assert_eq!(names(caseless, "dir"), ["MOVED"]);
    assert_eq!(error(rename("dir/y", "dir/z", false)), VfsError::NotFound);
    assert_eq!(
        error(rename("nodir/y", "z", false)),
        VfsError::ParentNotFound
    );
    assert_eq!(
        error(rename("dir/moved", "NODIR/z", false)),
        VfsError::ParentNotFound
    );
}

/// Where several entries match a name in different cases, the exact spelling wins, else the
/// lowest in code-point order; a directory chosen that way is not backtracked from.
pub fn caseless_ambiguity(exact: &dyn Vfs, caseless: &dyn Vfs) {
    for name in ["Foo", "foo", "FOO"] {
        write_file(exact, name, name.as_bytes());
    }
    for name in ["Foo", "foo", "FOO"] {
        assert_eq!(read_file(caseless, name), name.as_bytes());
    }
    assert_eq!(read_file(caseless, "fOO"), b"FOO");
    let root = open(
        caseless,
        "",
        Access::MetadataOnly,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    assert_eq!(root.lookup_child("fOO").unwrap().unwrap().0, "FOO");
    caseless.unlink(&path("fOO")).unwrap();
    assert_eq!(read_file(caseless, "fOO"), b"Foo");
    assert_eq!(root.lookup_child("fOO").unwrap().unwrap().0, "Foo");
    let opened = open(
        caseless,
        "fOO",
        Access::Read,
        Disposition::OpenOrCreate,
        Kind::File,
    )
    .unwrap();
    assert!(!opened.created);
    assert_eq!(
        opened.file.stat().unwrap().ino,
        caseless.stat(&path("Foo")).unwrap().ino
    );

    mkdir(exact, "Dir");
    mkdir(exact, "dir");
    write_file(exact, "Dir/upper-only", b"u");
    write_file(exact, "dir/lower-only", b"l");
    assert_eq!(read_file(caseless, "DIR/upper-only"), b"u");
    assert_eq!(read_file(caseless, "dir/lower-only"), b"l");
    assert_eq!(
        error(caseless.stat(&path("DIR/lower-only"))),
        VfsError::NotFound
    );
}

/// `unlink` and `symlink` find their last component's parent in any case; `unlink` removes a
/// link, not its target; `symlink` collides with any spelling of an existing name.
pub fn caseless_unlink_and_symlink(_exact: &dyn Vfs, caseless: &dyn Vfs) {
    mkdir(caseless, "Dir");
    write_file(caseless, "Dir/File", b"f");
    caseless.symlink("Dir/File", &path("Link")).unwrap();
    caseless.unlink(&path("LINK")).unwrap();
    assert_eq!(read_file(caseless, "dir/file"), b"f");
    assert_eq!(error(caseless.unlink(&path("DIR"))), VfsError::NotEmpty);
    caseless.unlink(&path("dir/FILE")).unwrap();
    caseless.unlink(&path("DIR")).unwrap();
    assert!(names(caseless, "").is_empty());
    assert_eq!(error(caseless.unlink(&path("dir"))), VfsError::NotFound);
    assert_eq!(
        error(caseless.unlink(&path("dir/x"))),
        VfsError::ParentNotFound
    );

    caseless.symlink("x", &path("NewLink")).unwrap();
    assert_eq!(
        error(caseless.symlink("y", &path("newlink"))),
        VfsError::AlreadyExists
    );
    mkdir(caseless, "Sub");
    caseless.symlink("t", &path("SUB/Link")).unwrap();
    assert_eq!(names(caseless, "Sub"), ["Link"]);
    assert_eq!(
        error(caseless.symlink("t", &path("NOSUB/Link"))),
        VfsError::ParentNotFound
    );
    assert_eq!(names(caseless, ""), ["NewLink", "Sub"]);
}

/// `lookup_child` finds an entry of a directory handle in any case, without following it, and
/// returns its real name.
pub fn caseless_lookup_child(exact: &dyn Vfs, caseless: &dyn Vfs) {
    mkdir(caseless, "D");
    write_file(caseless, "D/Mixed.Case", b"12345");
    caseless.symlink("Mixed.Case", &path("D/Link")).unwrap();
    let ino = caseless.stat(&path("D/Mixed.Case")).unwrap().ino;
    let dir = open(
        caseless,
        "d",
        Access::MetadataOnly,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    for spelling in ["MIXED.CASE", "mixed.case", "Mixed.Case"] {
        let (name, stat) = dir.lookup_child(spelling).unwrap().unwrap();
        assert_eq!(name, "Mixed.Case", "{spelling}");
        assert_eq!((stat.ino, stat.size), (ino, 5), "{spelling}");
    }
    let (name, link) = dir.lookup_child("link").unwrap().unwrap();
    assert_eq!((name.as_str(), link.file_type), ("Link", FileType::Symlink));
    assert_eq!(dir.lookup_child("missing").unwrap(), None);
    for bad in ["..", ".", "a/b", ""] {
        assert_eq!(
            error(dir.lookup_child(bad)),
            VfsError::InvalidName,
            "{bad:?}"
        );
    }
    let file = open_file(caseless, "d/mixed.case", Access::MetadataOnly);
    assert_eq!(error(file.lookup_child("x")), VfsError::NotADirectory);

    let exact_dir = open(
        exact,
        "D",
        Access::MetadataOnly,
        Disposition::Open,
        Kind::Directory,
    )
    .unwrap()
    .file;
    assert_eq!(exact_dir.lookup_child("MIXED.CASE").unwrap(), None);
    let (name, _) = exact_dir.lookup_child("Mixed.Case").unwrap().unwrap();
    assert_eq!(name, "Mixed.Case");
}

/// With case sensitivity, names that differ in case are different names.
pub fn case_sensitive_names_are_distinct(exact: &dyn Vfs, caseless: &dyn Vfs) {
    let rw = Access::ReadWrite;
    write_file(exact, "name", b"lower");
    write_file(exact, "NAME", b"upper");
    let third = open(exact, "Name", rw, Disposition::OpenOrCreate, Kind::File).unwrap();
    assert!(third.created);
    assert_eq!(names(exact, ""), ["NAME", "Name", "name"]);
    assert_eq!(read_file(exact, "name"), b"lower");
    assert_eq!(read_file(exact, "NAME"), b"upper");
    assert_eq!(error(exact.stat(&path("nAME"))), VfsError::NotFound);
    assert_eq!(error(exact.unlink(&path("nAME"))), VfsError::NotFound);
    assert_eq!(
        error(exact.rename(&path("name"), &path("NAME"), false)),
        VfsError::AlreadyExists
    );
    exact.rename(&path("name"), &path("nAmE"), false).unwrap();
    assert_eq!(names(exact, ""), ["NAME", "Name", "nAmE"]);
    mkdir(exact, "dir");
    assert_eq!(error(exact.stat(&path("DIR/x"))), VfsError::ParentNotFound);
    let collides = open(caseless, "name", rw, Disposition::Create, Kind::File);
    assert_eq!(error(collides), VfsError::AlreadyExists);
    assert_eq!(read_file(caseless, "name"), b"upper", "NAME is the lowest");
}

/// Bytes that differ at every offset, so that a copy from the wrong place shows.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8 ^ seed).collect()
}

fn read_range(file: &dyn VfsFile, offset: u64, len: usize) -> Vec<u8> {
    let mut data = vec![0; len];
    let read = file.read_at(&mut data, offset).unwrap();
    data.truncate(read);
    data
}

/// Copies between files: ranges, growth of the target, a short copy at the end of the
/// source, access, and directories.
pub fn copy_range(vfs: &dyn Vfs) {
    let data = pattern(200_000, 7);
    write_file(vfs, "src", &data);
    let src = open_file(vfs, "src", Access::Read);
    let dst = open(
        vfs,
        "dst",
        Access::ReadWrite,
        Disposition::Create,
        Kind::File,
    )
    .unwrap()
    .file;
    assert_eq!(dst.copy_range(&*src, 1000, 5000, 100_000).unwrap(), 100_000);
    assert_eq!(dst.stat().unwrap().size, 105_000);
    assert_eq!(
        read_range(&*dst, 0, 5000),
        vec![0; 5000],
        "the gap reads as zeros"
    );
    assert_eq!(read_range(&*dst, 5000, 100_000), &data[1000..101_000]);
    // Past the end of the source: what is there.
    assert_eq!(dst.copy_range(&*src, 150_000, 0, 100_000).unwrap(), 50_000);
    assert_eq!(read_range(&*dst, 0, 50_000), &data[150_000..]);
    assert_eq!(dst.copy_range(&*src, 300_000, 0, 10).unwrap(), 0);
    assert_eq!(dst.copy_range(&*src, 0, 0, 0).unwrap(), 0);
    // The source needs read access, the target write access.
    let write_only = open_file(vfs, "src", Access::Write);
    assert_eq!(
        error(dst.copy_range(&*write_only, 0, 0, 10)),
        VfsError::PermissionDenied
    );
    let read_only = open_file(vfs, "dst", Access::Read);
    assert_eq!(
        error(read_only.copy_range(&*src, 0, 0, 10)),
        VfsError::PermissionDenied
    );
    mkdir(vfs, "d");
    let dir = open(vfs, "d", Access::Read, Disposition::Open, Kind::Directory)
        .unwrap()
        .file;
    assert_eq!(
        error(dst.copy_range(&*dir, 0, 0, 10)),
        VfsError::IsADirectory
    );
    assert_eq!(read_file(vfs, "src"), data, "the source is untouched");
}

/// Copies within one file behave as if the source range were read whole first, whichever way
/// the ranges overlap.
pub fn copy_range_within_one_file(vfs: &dyn Vfs) {
    let data = pattern(64 * 1024, 3);
    for (from, to, len) in [
        (0u64, 2040u64, 2048u64),
        (2040, 0, 2048),
        (0, 40_000, 20_000),
    ] {
        write_file(vfs, "same", &data);
        let file = open_file(vfs, "same", Access::ReadWrite);
        assert_eq!(file.copy_range(&*file, from, to, len).unwrap(), len);
        let mut expected = data.clone();
        let (from, to, len) = (from as usize, to as usize, len as usize);
        expected.copy_within(from..from + len, to);
        assert_eq!(read_file(vfs, "same"), expected, "{from} -> {to}");
    }
}

/// Block cloning where the back end can, `Unsupported` where it cannot.
pub fn clone_range(vfs: &dyn Vfs) {
    const BLOCK: u64 = 4096;
    let data = pattern(16 * BLOCK as usize + 100, 9);
    write_file(vfs, "src", &data);
    let src = open_file(vfs, "src", Access::Read);
    let dst = open(
        vfs,
        "dst",
        Access::ReadWrite,
        Disposition::Create,
        Kind::File,
    )
    .unwrap()
    .file;
    let result = dst.clone_range(&*src, BLOCK, 2 * BLOCK, 4 * BLOCK);
    if !vfs.can_clone() {
        assert_eq!(error(result), VfsError::Unsupported);
        return;
    }
    result.unwrap();
    assert_eq!(dst.stat().unwrap().size, 6 * BLOCK);
    assert_eq!(
        read_range(&*dst, 2 * BLOCK, 4 * BLOCK as usize),
        &data[BLOCK as usize..5 * BLOCK as usize]
    );
    // A range that ends with the source may end off a block boundary.
    dst.clone_range(&*src, 8 * BLOCK, 0, 8 * BLOCK + 100)
        .unwrap();
    assert_eq!(
        read_range(&*dst, 0, 8 * BLOCK as usize + 100),
        &data[8 * BLOCK as usize..]
    );
    // Writes after the clone do not show through the other file.
    dst.write_at(b"changed", 0).unwrap();
    assert_eq!(read_file(vfs, "src"), data);
    assert_eq!(dst.clone_range(&*src, 0, 0, 0), Ok(()));
    assert_eq!(
        error(dst.clone_range(&*src, 1, 0, BLOCK)),
        VfsError::Io(errno::EINVAL),
        "unaligned"
    );
    let same = open_file(vfs, "src", Access::ReadWrite);
    assert_eq!(
        error(same.clone_range(&*same, 0, BLOCK, 2 * BLOCK)),
        VfsError::Io(errno::EINVAL),
        "overlapping ranges of one file"
    );
    same.clone_range(&*same, 0, 4 * BLOCK, 2 * BLOCK).unwrap();
    let read_only = open_file(vfs, "dst", Access::Read);
    assert_eq!(
        error(read_only.clone_range(&*src, 0, 0, BLOCK)),
        VfsError::PermissionDenied
    );
}

/// Punched holes read as zeros and leave the size; allocated ranges find the data.
pub fn punch_hole_and_allocated_ranges(vfs: &dyn Vfs) {
    const MIB: u64 = 1 << 20;
    let file = open(
        vfs,
        "sparse",
        Access::ReadWrite,
        Disposition::Create,
        Kind::File,
    )
    .unwrap()
    .file;
    assert_eq!(file.allocated_ranges(0, MIB, usize::MAX).unwrap(), []);
    file.write_at(&[1; 4096], 0).unwrap();
    file.write_at(&[2; 4096], 2 * MIB).unwrap();
    let size = 2 * MIB + 4096;
    let ranges = file.allocated_ranges(0, u64::MAX, usize::MAX).unwrap();
    // The first range holds the first write, the last ends with the file; the hole between
    // (at least the middle MiB, whatever the file system's block size) is in none.
    assert_eq!(ranges.first().map(|r| r.0), Some(0));
    assert!(ranges.first().unwrap().1 >= 4096);
    let last = ranges.last().unwrap();
    assert_eq!(last.0 + last.1, size);
    assert!(
        ranges
            .iter()
            .all(|&(o, l)| o + l <= MIB || o >= 2 * MIB - 65536),
        "{ranges:?}"
    );
    // At most as many ranges as asked for.
    assert_eq!(file.allocated_ranges(0, u64::MAX, 1).unwrap(), ranges[..1]);
    assert_eq!(file.allocated_ranges(0, u64::MAX, 0).unwrap(), []);
    // Cut to the range asked for.
    assert_eq!(
        file.allocated_ranges(100, 50, usize::MAX).unwrap(),
        [(100, 50)]
    );
    assert_eq!(file.allocated_ranges(MIB, 4096, usize::MAX).unwrap(), []);
    assert_eq!(file.allocated_ranges(size, 100, usize::MAX).unwrap(), []);

    file.punch_hole(0, 4096).unwrap();
    assert_eq!(file.stat().unwrap().size, size);
    assert_eq!(read_range(&*file, 0, 4096), vec![0; 4096]);
    assert_eq!(file.allocated_ranges(0, MIB, usize::MAX).unwrap(), []);
    // A partial block is zeroed.
    file.punch_hole(2 * MIB + 100, 100).unwrap();
    let mut expected = vec![2; 4096];
    expected[100..200].fill(0);
    assert_eq!(read_range(&*file, 2 * MIB, 4096), expected);
    file.punch_hole(size, MIB).unwrap();
    assert_eq!(
        file.stat().unwrap().size,
        size,
        "beyond the end changes nothing"
    );
    let read_only = open_file(vfs, "sparse", Access::Read);
    assert_eq!(
        error(read_only.punch_hole(0, 10)),
        VfsError::PermissionDenied
    );
}

/// Symlinks read back as stored, without following them.
pub fn read_link(vfs: &dyn Vfs) {
    write_file(vfs, "file", b"x");
    mkdir(vfs, "dir");
    vfs.symlink("file", &path("link")).unwrap();
    vfs.symlink("../../outside", &path("dir/escape")).unwrap();
    vfs.symlink("missing", &path("dangling")).unwrap();
    assert_eq!(
        vfs.read_link(&path("link")).unwrap().as_deref(),
        Some("file")
    );
    assert_eq!(
        vfs.read_link(&path("dir/escape")).unwrap().as_deref(),
        Some("../../outside")
    );
    assert_eq!(
        vfs.read_link(&path("dangling")).unwrap().as_deref(),
        Some("missing")
    );
    assert_eq!(vfs.read_link(&path("file")).unwrap(), None);
    assert_eq!(vfs.read_link(&path("dir")).unwrap(), None);
    assert_eq!(error(vfs.read_link(&path("nothing"))), VfsError::NotFound);
    assert_eq!(
        error(vfs.read_link(&path("nothing/x"))),
        VfsError::ParentNotFound
    );
}
