//! What clients see of a file: NT times, attributes and sizes derived from a VFS stat, in one
//! place for CREATE, CLOSE, QUERY_INFO and QUERY_DIRECTORY.

use smb3d_fscc::{
    FileAttributes, FileBasicInformation, FileNetworkOpenInformation, FileStandardInformation,
};
use smb3d_vfs::{FileStat, FileType, Timespec};
use smb3d_wire::FileTime;

pub(crate) fn filetime(t: Timespec) -> FileTime {
    FileTime::from_unix(t.sec, t.nsec)
}

/// The four NT times. Without a birth time, the oldest of the others stands in for it.
pub(crate) struct Times {
    pub creation: FileTime,
    pub last_access: FileTime,
    pub last_write: FileTime,
    pub change: FileTime,
}

pub(crate) fn times(stat: &FileStat) -> Times {
    let creation = stat
        .btime
        .unwrap_or_else(|| oldest(oldest(stat.atime, stat.mtime), stat.ctime));
    Times {
        creation: filetime(creation),
        last_access: filetime(stat.atime),
        last_write: filetime(stat.mtime),
        change: filetime(stat.ctime),
    }
}

fn oldest(a: Timespec, b: Timespec) -> Timespec {
    if (a.sec, a.nsec) <= (b.sec, b.nsec) {
        a
    } else {
        b
    }
}

pub(crate) fn is_directory(stat: &FileStat) -> bool {
    stat.file_type == FileType::Directory
}

/// DOS attributes: directory or archive, and hidden for dot files as Samba's default "hide dot
/// files" shows them. Stored DOS attributes come with the file-semantics work.
pub(crate) fn attributes(stat: &FileStat, name: &str) -> FileAttributes {
    let mut attrs = if is_directory(stat) {
        FileAttributes::DIRECTORY
    } else {
        FileAttributes::ARCHIVE
    };
    if name.starts_with('.') && name != "." && name != ".." {
        attrs |= FileAttributes::HIDDEN;
    }
    attrs
}

/// EndOfFile: directories have none on NTFS.
pub(crate) fn end_of_file(stat: &FileStat) -> u64 {
    if is_directory(stat) { 0 } else { stat.size }
}

/// AllocationSize: what the file system allocated (0 for empty files and directories).
pub(crate) fn allocation_size(stat: &FileStat) -> u64 {
    if is_directory(stat) {
        0
    } else {
        stat.allocated
    }
}

pub(crate) fn basic(stat: &FileStat, name: &str) -> FileBasicInformation {
    let t = times(stat);
    FileBasicInformation {
        creation_time: t.creation,
        last_access_time: t.last_access,
        last_write_time: t.last_write,
        change_time: t.change,
        file_attributes: attributes(stat, name),
    }
}

pub(crate) fn standard(stat: &FileStat, delete_pending: bool) -> FileStandardInformation {
    FileStandardInformation {
        allocation_size: allocation_size(stat),
        end_of_file: end_of_file(stat),
        number_of_links: u32::try_from(stat.nlink).unwrap_or(u32::MAX),
        delete_pending,
        directory: is_directory(stat),
    }
}

pub(crate) fn network_open(stat: &FileStat, name: &str) -> FileNetworkOpenInformation {
    let t = times(stat);
    FileNetworkOpenInformation {
        creation_time: t.creation,
        last_access_time: t.last_access,
        last_write_time: t.last_write,
        change_time: t.change,
        allocation_size: allocation_size(stat),
        end_of_file: end_of_file(stat),
        file_attributes: attributes(stat, name),
    }
}
