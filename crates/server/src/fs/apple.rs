//! What Mac clients see of a file beyond Windows' view, read as `apple` shares keep it: the
//! Finder info inside the AFP_AfpInfo stream and the length of the AFP_Resource stream (the
//! resource fork), both named streams of the file.

use smb3d_vfs::casefold::eq_ignore_case;
use smb3d_vfs::{FileStat, FileType, VfsFile, VfsResult};

use crate::fs::streams;

/// The stream holding the 60-byte AfpInfo (signature, version, backup time, Finder info).
pub(crate) const AFPINFO_STREAM: &str = "AFP_AfpInfo";
/// The stream holding the resource fork.
pub(crate) const RESOURCE_STREAM: &str = "AFP_Resource";
/// Where the 32 bytes of Finder info start in an AfpInfo.
const FINDER_INFO_OFFSET: usize = 16;

/// The ReadDirAttr extras of the entry `name` of `dir` whose metadata is `stat`: its resource
/// fork's length (none for directories) and the first 16 bytes of its Finder info, zero when
/// missing or unreadable (a listing shows what it can rather than failing).
pub(crate) fn listed_extras(dir: &dyn VfsFile, name: &str, stat: &FileStat) -> (u64, [u8; 16]) {
    let stream = |s: &str| {
        dir.get_child_xattr(name, &streams::xattr_name(s))
            .ok()
            .flatten()
    };
    let fork_len = if stat.file_type == FileType::Directory {
        0
    } else {
        stream(RESOURCE_STREAM).map_or(0, |v| streams::data_len(&v))
    };
    let mut finder = [0u8; 16];
    if let Some(info) = stream(AFPINFO_STREAM)
        && let Some(bytes) = info.get(FINDER_INFO_OFFSET..FINDER_INFO_OFFSET + finder.len())
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
