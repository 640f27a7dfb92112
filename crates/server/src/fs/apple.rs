//! What Mac clients see of a file beyond Windows' view, kept as Samba's vfs_fruit keeps it on
//! `apple` shares (its defaults `fruit:metadata = netatalk`, `fruit:resource = file`): the
//! AFP_AfpInfo stream is made from the Finder info in the `org.netatalk.Metadata` xattr (an
//! AppleDouble header, fs::apple_double), so Netatalk, Samba and smb3d share it; the
//! AFP_Resource stream (the resource fork) of a file is in its `._` file (fs::resource_fork),
//! a directory's is a named stream like any other.

use smb3d_vfs::casefold::eq_ignore_case;
use smb3d_vfs::{FileStat, FileType, Vfs, VfsError, VfsFile, VfsPath, VfsResult};

use crate::fs::apple_double::{self, FINDER_INFO_LEN};
use crate::fs::resource_fork::ResourceFork;
use crate::fs::streams;

/// The stream holding the 60-byte AfpInfo (signature, version, backup time, Finder info).
pub(crate) const AFPINFO_STREAM: &str = "AFP_AfpInfo";
/// The stream holding the resource fork.
pub(crate) const RESOURCE_STREAM: &str = "AFP_Resource";
/// Where the 32 bytes of Finder info start in an AfpInfo.
const FINDER_INFO_OFFSET: usize = 16;
/// An AfpInfo: signature, version, reserved, backup time, Finder info, ProDOS info, reserved.
pub(crate) const AFPINFO_LEN: usize = 60;
/// The xattr holding a file's Finder info as Netatalk keeps it (Linux puts it in `user.`).
pub(crate) const METADATA_XATTR: &str = "user.org.netatalk.Metadata";
const AFPINFO_SIGNATURE: &[u8; 4] = b"AFP\0";
const AFPINFO_VERSION: u32 = 0x0000_0100;
/// The backup time of a file never backed up: the earliest AFP date.
const NEVER_BACKED_UP: u32 = 0x8000_0000;

/// The AfpInfo that shows `finder`.
pub(crate) fn afp_info(finder: &[u8; FINDER_INFO_LEN]) -> [u8; AFPINFO_LEN] {
    let mut info = [0u8; AFPINFO_LEN];
    let fields = [
        (0, AFPINFO_SIGNATURE.as_slice()),
        (4, &AFPINFO_VERSION.to_be_bytes()),
        (12, &NEVER_BACKED_UP.to_be_bytes()),
        (FINDER_INFO_OFFSET, finder.as_slice()),
    ];
    for (at, bytes) in fields {
        if let Some(slot) = info.get_mut(at..at + bytes.len()) {
            slot.copy_from_slice(bytes);
        }
    }
    info
}

/// The Finder info of `file`; `None` when it has no (well-formed) metadata xattr.
pub(crate) fn finder_info(file: &dyn VfsFile) -> VfsResult<Option<[u8; FINDER_INFO_LEN]>> {
    Ok(file
        .get_xattr(METADATA_XATTR)?
        .and_then(|x| apple_double::finder_info_of(&x)))
}

/// Stores `finder` as the Finder info of `file`. All zeros deletes the metadata, as writing an
/// all-zero AfpInfo deletes the stream on a Mac.
pub(crate) fn store_finder_info(
    file: &dyn VfsFile,
    finder: &[u8; FINDER_INFO_LEN],
) -> VfsResult<()> {
    if finder.iter().all(|&b| b == 0) {
        return match file.remove_xattr(METADATA_XATTR) {
            Ok(()) | Err(VfsError::NotFound) => Ok(()),
            Err(e) => Err(e),
        };
    }
    let existing = file.get_xattr(METADATA_XATTR)?;
    file.set_xattr(
        METADATA_XATTR,
        &apple_double::with_finder_info(existing.as_deref(), finder),
    )
}

/// What a WRITE of `data` at `offset` to an AfpInfo stream stores, as a Mac answers it: fewer
/// than 3 bytes, fewer than a whole AfpInfo anywhere but at 0, or no AFP signature and version
/// is STATUS_INVALID_PARAMETER; anything else is an AfpInfo written at 0 whatever the offset,
/// and one that ends before the Finder info changes nothing (`None`).
pub(crate) fn afpinfo_written(
    offset: u64,
    data: &[u8],
) -> VfsResult<Option<[u8; FINDER_INFO_LEN]>> {
    let whole = data.len() >= AFPINFO_LEN;
    if data.len() < 3 || (offset != 0 && !whole) || data.get(..3) != AFPINFO_SIGNATURE.get(..3) {
        return Err(VfsError::InvalidArgument);
    }
    if data.len() <= FINDER_INFO_OFFSET {
        return Ok(None);
    }
    let mut info = [0u8; AFPINFO_LEN];
    let n = data.len().min(AFPINFO_LEN);
    if let (Some(to), Some(from)) = (info.get_mut(..n), data.get(..n)) {
        to.copy_from_slice(from);
    }
    if info.get(..8) != afp_info(&[0; FINDER_INFO_LEN]).get(..8) {
        return Err(VfsError::InvalidArgument);
    }
    let mut finder = [0u8; FINDER_INFO_LEN];
    if let Some(from) = info.get(FINDER_INFO_OFFSET..FINDER_INFO_OFFSET + FINDER_INFO_LEN) {
        finder.copy_from_slice(from);
    }
    Ok(Some(finder))
}

/// The length of the resource fork of the file at `path` (in its `._` file,
/// fs::resource_fork), 0 when it has none or it cannot be read (a listing shows what it can
/// rather than failing).
pub(crate) fn resource_fork_len(vfs: &dyn Vfs, path: &VfsPath) -> u64 {
    ResourceFork::open(vfs, path, false)
        .and_then(|fork| fork.len())
        .unwrap_or(0)
}

/// The ReadDirAttr extras of the entry `name` of `dir` (at `dir_path`) whose metadata is
/// `stat`: its resource fork's length (none for directories) and the first 16 bytes of its
/// Finder info, zero when missing or unreadable.
pub(crate) fn listed_extras(
    vfs: &dyn Vfs,
    dir_path: &VfsPath,
    dir: &dyn VfsFile,
    name: &str,
    stat: &FileStat,
) -> (u64, [u8; 16]) {
    let fork_len = match dir_path.join(name) {
        Ok(path) if stat.file_type != FileType::Directory => resource_fork_len(vfs, &path),
        _ => 0,
    };
    let mut finder = [0u8; 16];
    if let Some(info) = dir
        .get_child_xattr(name, METADATA_XATTR)
        .ok()
        .flatten()
        .and_then(|x| apple_double::finder_info_of(&x))
        && let Some(bytes) = info.get(..finder.len())
    {
        finder.copy_from_slice(bytes);
    }
    (fork_len, finder)
}

/// Whether the stored stream `stored` of `file` is an empty resource fork, which Mac clients
/// (and Samba's vfs_fruit) take for none: it is not listed, and opening it without creating it
/// finds nothing.
pub(crate) fn is_empty_resource_fork(file: &dyn VfsFile, stored: &str) -> VfsResult<bool> {
    if !eq_ignore_case(stored, RESOURCE_STREAM) {
        return Ok(false);
    }
    Ok(file
        .get_xattr(&streams::xattr_name(stored))?
        .is_none_or(|v| streams::data_len(&v) == 0))
}

/// The named streams of `file` (`stored`, as [`streams::list`] finds them) as Mac clients see
/// them: AFP_AfpInfo while the file has Finder info other than zeros, whatever xattr stream
/// of that name another share wrote; AFP_Resource while `fork_len` (the file's resource fork,
/// fs::resource_fork; a directory's is an xattr stream) is not 0, an empty fork being none;
/// names carry the private-use stand-ins of characters NTFS forbids.
pub(crate) fn listed_streams(
    file: &dyn VfsFile,
    stored: Vec<(String, u64)>,
    fork_len: Option<u64>,
) -> VfsResult<Vec<(String, u64)>> {
    let mut listed: Vec<(String, u64)> = stored
        .into_iter()
        .filter(|(name, size)| {
            let afp_info = eq_ignore_case(name, AFPINFO_STREAM);
            let fork = eq_ignore_case(name, RESOURCE_STREAM) && (*size == 0 || fork_len.is_some());
            !afp_info && !fork
        })
        .map(|(name, size)| (stream_name_to_client(&name), size))
        .collect();
    if let Some(len) = fork_len.filter(|&len| len > 0) {
        listed.push((RESOURCE_STREAM.to_owned(), len));
    }
    if finder_info(file)?.is_some_and(|f| f.iter().any(|&b| b != 0)) {
        listed.push((AFPINFO_STREAM.to_owned(), AFPINFO_LEN as u64));
    }
    Ok(listed)
}

/// The characters NTFS forbids in names, which Mac clients send as Unicode private-use
/// characters (the mapping of Services for Macintosh): control characters 1-31 as U+F001 to
/// U+F01F, and these. Samba's `fruit:encoding = native` keeps them as themselves on disk.
const MAC_PRIVATE: [(char, char); 8] = [
    ('"', '\u{F020}'),
    ('*', '\u{F021}'),
    (':', '\u{F022}'),
    ('<', '\u{F023}'),
    ('>', '\u{F024}'),
    ('?', '\u{F025}'),
    ('\\', '\u{F026}'),
    ('|', '\u{F027}'),
];
const CONTROL_BASE: u32 = 0xF000;

fn to_native(c: char) -> char {
    let code = u32::from(c);
    if (CONTROL_BASE + 1..CONTROL_BASE + 0x20).contains(&code) {
        return char::from_u32(code - CONTROL_BASE).unwrap_or(c);
    }
    MAC_PRIVATE
        .iter()
        .find(|&&(_, private)| private == c)
        .map_or(c, |&(native, _)| native)
}

fn to_private(c: char) -> char {
    let code = u32::from(c);
    if (1..0x20).contains(&code) {
        return char::from_u32(code + CONTROL_BASE).unwrap_or(c);
    }
    MAC_PRIVATE
        .iter()
        .find(|&&(native, _)| native == c)
        .map_or(c, |&(_, private)| private)
}

/// A stream name as a Mac client sent it, as stored: its private-use characters as the
/// characters they stand for.
pub(crate) fn stream_name_to_native(name: &str) -> String {
    name.chars().map(to_native).collect()
}

/// A stored stream name as Mac clients expect it: characters NTFS forbids (a local program
/// or Samba may have stored them) as their private-use stand-ins.
pub(crate) fn stream_name_to_client(name: &str) -> String {
    name.chars().map(to_private).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::streams::{Stream, StreamFile};
    use smb3d_vfs::{Access, Disposition, Kind, MemoryVfs, OpenRequest, Vfs, VfsPath};

    fn file() -> Box<dyn VfsFile> {
        let request = OpenRequest {
            access: Access::MetadataOnly,
            disposition: Disposition::Create,
            kind: Kind::File,
            create_mode: 0o644,
        };
        let path = VfsPath::parse("f").unwrap();
        MemoryVfs::new().open(&path, &request).unwrap().file
    }

    fn info_with(finder: &[u8]) -> Vec<u8> {
        let mut f = [0u8; 32];
        f[..finder.len()].copy_from_slice(finder);
        afp_info(&f).to_vec()
    }

    #[test]
    fn forbidden_characters_map_to_the_private_use_area_and_back() {
        assert_eq!(stream_name_to_client("bar:baz"), "bar\u{F022}baz");
        assert_eq!(stream_name_to_native("foo\u{F022}bar"), "foo:bar");
        let all = "\u{1}\u{1F}\"*:<>?\\|x";
        let private = stream_name_to_client(all);
        assert!(
            private
                .chars()
                .take(10)
                .all(|c| ('\u{F001}'..='\u{F027}').contains(&c))
        );
        assert!(private.ends_with('x'));
        assert_eq!(stream_name_to_native(&private), all);
        assert_eq!(
            stream_name_to_native("\u{F000}\u{F028}"),
            "\u{F000}\u{F028}"
        );
    }

    #[test]
    fn an_afpinfo_is_60_bytes_with_signature_version_and_backup_time() {
        let info = info_with(b"TEXTttxt");
        assert_eq!(&info[..16], b"AFP\0\0\0\x01\0\0\0\0\0\x80\0\0\0");
        assert_eq!(&info[16..24], b"TEXTttxt");
        assert!(info[24..].iter().all(|&b| b == 0));
    }

    #[test]
    fn writes_are_checked_as_a_mac_checks_them() {
        let info = info_with(b"FOO BAR ");
        let mut finder = [0u8; 32];
        finder[..8].copy_from_slice(b"FOO BAR ");
        assert_eq!(afpinfo_written(0, &info), Ok(Some(finder)));
        // Anywhere, a whole AfpInfo lands at 0; more than 60 bytes are cut.
        let mut long = info.clone();
        long.resize(1024, 0xEE);
        assert_eq!(afpinfo_written(10_000, &long), Ok(Some(finder)));
        // Up to the Finder info: accepted, nothing stored.
        assert_eq!(afpinfo_written(0, &info[..16]), Ok(None));
        assert_eq!(afpinfo_written(0, &info[..3]), Ok(None));
        let mut partial = [0u8; 32];
        partial[..1].copy_from_slice(b"F");
        assert_eq!(afpinfo_written(0, &info[..17]), Ok(Some(partial)));
        for (offset, data) in [
            (0, &info[..2]),
            (1, &info[..59]),
            (60, &info[..3]),
            (0, &[0u8; 60][..]),
        ] {
            assert_eq!(
                afpinfo_written(offset, data),
                Err(VfsError::InvalidArgument)
            );
        }
        let mut bad_version = info.clone();
        bad_version[6] = 2;
        assert_eq!(
            afpinfo_written(0, &bad_version),
            Err(VfsError::InvalidArgument)
        );
    }

    #[test]
    fn the_stream_is_the_finder_info_in_netatalks_xattr() {
        let stream = StreamFile(Stream::afp_info(file()));
        let mut buf = [0u8; 64];
        // Before any write: an AfpInfo showing no Finder info, and no xattr.
        assert_eq!(stream.read_at(&mut buf, 0).unwrap(), 60);
        assert_eq!(buf[..60], info_with(b"")[..]);
        assert_eq!(stream.stat().unwrap().size, 60);
        assert_eq!(finder_info(stream.0.base()).unwrap(), None);
        stream.write_at(&info_with(b"SMB,OLE!"), 0).unwrap();
        let xattr = stream.get_xattr(METADATA_XATTR).unwrap().unwrap();
        assert_eq!(&xattr[0x7A..0x82], b"SMB,OLE!");
        assert_eq!(
            listed_streams(stream.0.base(), Vec::new(), None).unwrap(),
            [(AFPINFO_STREAM.to_owned(), 60)]
        );
        // Offsets up to 60 read from the start; beyond, nothing.
        assert_eq!(stream.read_at(&mut buf[..2], 59).unwrap(), 2);
        assert_eq!(&buf[..2], b"AF");
        assert_eq!(stream.read_at(&mut buf, 61).unwrap(), 0);
        assert_eq!(stream.set_len(61), Err(VfsError::FixedSize));
        stream.set_len(0).unwrap();
        assert_eq!(stream.stat().unwrap().size, 60);
        assert_eq!(stream.write_at(b"xyz", 0), Err(VfsError::InvalidArgument));
        // All zeros deletes it.
        stream.write_at(&info_with(b""), 0).unwrap();
        assert_eq!(stream.get_xattr(METADATA_XATTR).unwrap(), None);
        assert!(
            listed_streams(stream.0.base(), Vec::new(), None)
                .unwrap()
                .is_empty()
        );
    }
}
