//! What the SMB3 POSIX extensions report of a file (`smb3d_fscc::posix`): its mode with the
//! file type, link count, owner and group as SIDs, and the reparse tag a POSIX client sees
//! for a symlink or a special file.

use smb3d_fscc::posix::{FilePosixInformation, PosixCcInfo, PosixFileType, PosixMode};
use smb3d_vfs::{FileStat, FileType};
use smb3d_wire::Writer;

use super::fileinfo::Meta;
use crate::identity::IdMap;

/// IO_REPARSE_TAG_SYMLINK (MS-FSCC 2.1.2.1).
const IO_REPARSE_TAG_SYMLINK: u32 = 0xA000_000C;
/// IO_REPARSE_TAG_NFS (MS-FSCC 2.1.2.1): FIFOs, sockets and device nodes, as the POSIX
/// extensions show special files.
const IO_REPARSE_TAG_NFS: u32 = 0x8000_0014;

/// The wire mode of `stat`: its permission bits and its type (from `S_IFMT` where the file
/// system gives one, else from the VFS's kind).
pub(crate) fn mode(stat: &FileStat) -> PosixMode {
    let file_type = if stat.mode & 0o170_000 != 0 {
        PosixFileType::of_unix(stat.mode)
    } else {
        match stat.file_type {
            FileType::Directory => PosixFileType::Directory,
            FileType::Symlink => PosixFileType::Symlink,
            FileType::File | FileType::Other => PosixFileType::File,
        }
    };
    PosixMode {
        permissions: stat.mode & smb3d_fscc::posix::PERMISSION_BITS,
        file_type,
    }
}

/// The reparse tag a POSIX client sees: symlinks and special files are reparse points.
pub(crate) fn reparse_tag(stat: &FileStat) -> u32 {
    match mode(stat).file_type {
        PosixFileType::Symlink => IO_REPARSE_TAG_SYMLINK,
        PosixFileType::File | PosixFileType::Directory => 0,
        _ => IO_REPARSE_TAG_NFS,
    }
}

/// The block of a POSIX create context response (and of every POSIX information entry).
pub(crate) fn cc_info(stat: &FileStat, ids: &IdMap) -> PosixCcInfo {
    PosixCcInfo {
        number_of_links: u32::try_from(stat.nlink).unwrap_or(u32::MAX),
        reparse_tag: reparse_tag(stat),
        mode: mode(stat),
        owner: ids.user_sid(stat.uid),
        group: ids.group_sid(stat.gid),
    }
}

/// The data of a POSIX create context response.
pub(crate) fn cc_bytes(stat: &FileStat, ids: &IdMap) -> Vec<u8> {
    let info = cc_info(stat, ids);
    let mut data = Vec::with_capacity(info.encoded_len());
    info.encode(&mut Writer::new(&mut data));
    data
}

/// FILE_POSIX_INFORMATION of the file `meta` describes.
pub(crate) fn file_info(meta: &Meta, ids: &IdMap) -> FilePosixInformation {
    FilePosixInformation {
        times: meta.times(),
        end_of_file: meta.end_of_file(),
        allocation_size: meta.allocation_size(),
        file_attributes: meta.attributes().0,
        inode: meta.stat.ino,
        // The low 32 bits: the field is that wide, and the device only tells files apart.
        device: meta.stat.dev as u32,
        cc: cc_info(&meta.stat, ids),
    }
}
