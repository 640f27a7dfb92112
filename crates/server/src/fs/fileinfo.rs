//! What clients see of a file: NT times, DOS attributes and sizes, from a VFS stat and the
//! `user.DOSATTRIB` xattr Samba keeps DOS attributes and the create time in, and the tag of a
//! reparse point kept in `user.SmbReparse`, in one place for CREATE, CLOSE, QUERY_INFO,
//! SET_INFO, QUERY_DIRECTORY and the reparse FSCTLs.

use smb3d_dtyp::NtStatus;
use smb3d_dtyp::samba::{DosAttrib, XATTR_DOSATTRIB_NAME};
use smb3d_fscc::{
    Expression, FileAttributes, FileBasicInformation, FileNetworkOpenInformation,
    FileStandardInformation, ReparseBuffer,
};
use smb3d_vfs::{FileStat, FileType, Timespec, Vfs, VfsError, VfsFile};
use smb3d_wire::{FileTime, FileTimes};

use crate::blocking::as_service;
use crate::status_map::vfs_status;

/// Attributes clients set and the server keeps (MS-FSCC 2.6); DIRECTORY follows the object,
/// SPARSE is set by FSCTL_SET_SPARSE, the rest are not kept.
pub(crate) const SETTABLE_ATTRIBUTES: FileAttributes = FileAttributes(
    FileAttributes::READONLY.0
        | FileAttributes::HIDDEN.0
        | FileAttributes::SYSTEM.0
        | FileAttributes::ARCHIVE.0
        | FileAttributes::TEMPORARY.0
        | FileAttributes::OFFLINE.0
        | FileAttributes::NOT_CONTENT_INDEXED.0,
);
const KEPT_ATTRIBUTES: FileAttributes = FileAttributes(
    SETTABLE_ATTRIBUTES.0 | FileAttributes::SPARSE_FILE.0 | FileAttributes::REPARSE_POINT.0,
);

pub(crate) fn filetime(t: Timespec) -> FileTime {
    FileTime::from_unix(t.sec, t.nsec)
}

/// A file as clients see it.
pub(crate) struct Meta {
    pub stat: FileStat,
    /// The attributes as stored (or defaulted), before DIRECTORY and NORMAL are applied.
    pub stored: FileAttributes,
    pub creation: FileTime,
    /// The share shows the name hidden (dot files, `hide_files`), whatever is stored.
    pub hidden_by_name: bool,
    /// The share's rounding of AllocationSize.
    allocation_roundup: u64,
    /// LastWriteTime (and ChangeTime) as kept while the file is open, instead of the mtime.
    pub write_time: Option<FileTime>,
    /// The share keeps attributes in the mode, not in DOSATTRIB (`store_dos_attributes` off).
    in_mode: bool,
}

impl Meta {
    /// Combines a stat with the file's DOSATTRIB. Without one (a file made on the server
    /// itself) no attribute is set, as Samba shows such files, so both servers show them alike;
    /// the create time is the birth time, or failing that the oldest time we have.
    pub fn new(
        stat: FileStat,
        dos: Option<DosAttrib>,
        name: &str,
        presentation: &Presentation,
    ) -> Meta {
        let in_mode = !presentation.xattrs.dos_attributes;
        let stored = if in_mode {
            attributes_of_mode(&stat)
        } else {
            dos.map_or(FileAttributes::empty(), |d| {
                FileAttributes(d.attributes) & KEPT_ATTRIBUTES
            })
        };
        let creation = dos
            .and_then(|d| d.create_time)
            .unwrap_or_else(|| birth_time(&stat));
        Meta {
            allocation_roundup: presentation.allocation_roundup,
            stat,
            stored,
            creation,
            hidden_by_name: presentation.hides(name),
            write_time: None,
            in_mode,
        }
    }

    /// The same with the last-write time clients see while the file is open.
    pub fn with_write_time(self, time: FileTime) -> Meta {
        Meta {
            write_time: Some(time),
            ..self
        }
    }

    /// The file as [`store`] left it: on a share without DOSATTRIB, with the mode the
    /// attributes went to and only the attributes the mode keeps.
    #[must_use]
    pub fn into_stored(mut self) -> Meta {
        if self.in_mode {
            if changes_mode(&self) {
                self.stat.mode =
                    (self.stat.mode & !0o7777) | mode_of_attributes(self.stat.mode, self.stored);
            }
            self.stored = attributes_of_mode(&self.stat);
        }
        self
    }

    pub fn is_directory(&self) -> bool {
        self.stat.file_type == FileType::Directory
    }

    /// FileAttributes as returned to clients: DIRECTORY for directories, NORMAL when no other
    /// bit is set.
    pub fn attributes(&self) -> FileAttributes {
        let mut attrs = self.stored;
        if self.hidden_by_name {
            attrs |= FileAttributes::HIDDEN;
        }
        if self.is_directory() {
            attrs |= FileAttributes::DIRECTORY;
        }
        // Only an open of the link itself (FILE_OPEN_REPARSE_POINT) sees the symlink.
        if self.stat.file_type == FileType::Symlink {
            attrs |= FileAttributes::REPARSE_POINT;
        }
        if attrs.is_empty() {
            FileAttributes::NORMAL
        } else {
            attrs
        }
    }

    pub fn readonly(&self) -> bool {
        self.stored.contains(FileAttributes::READONLY)
    }

    pub fn times(&self) -> FileTimes {
        let last_write = self.write_time.unwrap_or_else(|| filetime(self.stat.mtime));
        FileTimes {
            creation: self.creation,
            last_access: filetime(self.stat.atime),
            last_write,
            // Linux cannot set a ctime, but clients set ChangeTime together with
            // LastWriteTime and expect to read it back; like Samba, the write time stands in.
            change: last_write,
        }
    }

    /// EndOfFile: directories have none on NTFS.
    pub fn end_of_file(&self) -> u64 {
        if self.is_directory() {
            0
        } else {
            self.stat.size
        }
    }

    /// AllocationSize: what the file system allocated, rounded as the share says (0 for
    /// empty files and directories).
    pub fn allocation_size(&self) -> u64 {
        if self.is_directory() {
            0
        } else {
            round_allocation(self.stat.allocated, self.allocation_roundup)
        }
    }

    pub fn basic(&self) -> FileBasicInformation {
        FileBasicInformation {
            times: self.times(),
            file_attributes: self.attributes(),
        }
    }

    pub fn standard(&self, delete_pending: bool) -> FileStandardInformation {
        FileStandardInformation {
            allocation_size: self.allocation_size(),
            end_of_file: self.end_of_file(),
            number_of_links: u32::try_from(self.stat.nlink).unwrap_or(u32::MAX),
            delete_pending,
            directory: self.is_directory(),
        }
    }

    pub fn network_open(&self) -> FileNetworkOpenInformation {
        FileNetworkOpenInformation {
            times: self.times(),
            allocation_size: self.allocation_size(),
            end_of_file: self.end_of_file(),
            file_attributes: self.attributes(),
        }
    }
}

fn birth_time(stat: &FileStat) -> FileTime {
    let oldest = |a: Timespec, b: Timespec| {
        if (a.sec, a.nsec) <= (b.sec, b.nsec) {
            a
        } else {
            b
        }
    };
    filetime(
        stat.btime
            .unwrap_or_else(|| oldest(oldest(stat.atime, stat.mtime), stat.ctime)),
    )
}

/// The attributes a share without DOSATTRIB shows, as Samba maps them by default (`map
/// archive` on, `map readonly`, `map system` and `map hidden` off): a file's owner execute bit
/// is ARCHIVE; a directory shows none of its own.
fn attributes_of_mode(stat: &FileStat) -> FileAttributes {
    if stat.file_type == FileType::File && stat.mode & 0o100 != 0 {
        FileAttributes::ARCHIVE
    } else {
        FileAttributes::empty()
    }
}

/// The mode that keeps `attributes` in a file of mode `mode`, as Samba sets it without
/// DOSATTRIB: READONLY clears every write bit and its absence gives the owner write back (as
/// the owner could with chmod; the group's and others' bits are never widened), ARCHIVE is
/// the owner execute bit. The other attributes have no place in the mode and are dropped.
fn mode_of_attributes(mode: u32, attributes: FileAttributes) -> u32 {
    let mut mode = mode & 0o7777;
    if attributes.contains(FileAttributes::READONLY) {
        mode &= !0o222;
    } else {
        mode |= 0o200;
    }
    if attributes.contains(FileAttributes::ARCHIVE) {
        mode | 0o100
    } else {
        mode & !0o100
    }
}

/// Decodes a DOSATTRIB value; one that cannot be read counts as absent, as Samba treats it.
fn decode(value: Option<Vec<u8>>) -> Option<DosAttrib> {
    DosAttrib::decode(&value?).ok()
}

/// Reads an open file's metadata (one statx and one getxattr).
pub(crate) fn load(
    file: &dyn VfsFile,
    name: &str,
    presentation: &Presentation,
) -> Result<Meta, VfsError> {
    load_with(file, None, name, presentation)
}

/// [`load`], with the file's status when the caller has it already (from the open).
pub(crate) fn load_with(
    file: &dyn VfsFile,
    stat: Option<FileStat>,
    name: &str,
    presentation: &Presentation,
) -> Result<Meta, VfsError> {
    let stat = match stat {
        Some(stat) => stat,
        None => file.stat()?,
    };
    let dos = if presentation.xattrs.dos_attributes {
        match file.get_xattr(XATTR_DOSATTRIB_NAME) {
            Ok(value) => decode(value),
            Err(VfsError::Unsupported | VfsError::PermissionDenied) => None,
            Err(e) => return Err(e),
        }
    } else {
        None
    };
    Ok(Meta::new(stat, dos, name, presentation))
}

/// Reads a directory entry's DOSATTRIB without opening it (none on a share that keeps none).
pub(crate) fn load_child_dos(
    dir: &dyn VfsFile,
    name: &str,
    presentation: &Presentation,
) -> Option<DosAttrib> {
    if !presentation.xattrs.dos_attributes {
        return None;
    }
    decode(dir.get_child_xattr(name, XATTR_DOSATTRIB_NAME).ok()?)
}

/// Stores attributes and the create time in `user.DOSATTRIB` (Samba's version 5 layout). A
/// file system without user xattrs keeps nothing, as Samba with "store dos attributes" off.
/// Callers have checked the user's right to write attributes; when only the POSIX mode stands
/// in the way (a read-only file the ACL lets the user change), the service writes them, as
/// Samba does. On a share without DOSATTRIB the attributes go to the mode instead.
pub(crate) fn store(vfs: &dyn Vfs, file: &dyn VfsFile, meta: &Meta) -> Result<(), NtStatus> {
    if meta.in_mode {
        return store_in_mode(file, meta);
    }
    let mut attributes = meta.stored;
    if meta.is_directory() {
        attributes |= FileAttributes::DIRECTORY;
    }
    let value = DosAttrib {
        attributes: attributes.0,
        create_time: Some(meta.creation),
    }
    .to_xattr();
    let write = || match file.set_xattr(XATTR_DOSATTRIB_NAME, &value) {
        Ok(()) | Err(VfsError::Unsupported) => Ok(()),
        Err(e) => Err(e),
    };
    match write() {
        Err(VfsError::PermissionDenied) => as_service(vfs, || write().map_err(|e| vfs_status(&e))),
        result => result.map_err(|e| vfs_status(&e)),
    }
}

/// Keeps a file's attributes in its mode ([`mode_of_attributes`]); a directory's mode keeps
/// none, as Samba's. The mode changes only when READONLY is set or ARCHIVE changes, so a
/// client that sets what it read back (READONLY is never shown), or only attributes the mode
/// cannot keep (HIDDEN, SPARSE, ...), leaves it alone. It is changed with the user's
/// credentials: only the owner may, as with chmod, so no client widens access through
/// attributes.
fn store_in_mode(file: &dyn VfsFile, meta: &Meta) -> Result<(), NtStatus> {
    if !changes_mode(meta) {
        return Ok(());
    }
    let mode = mode_of_attributes(meta.stat.mode, meta.stored);
    if mode == meta.stat.mode & 0o7777 {
        return Ok(());
    }
    file.set_mode(mode).map_err(|e| vfs_status(&e))
}

/// Whether [`store_in_mode`] changes the mode of `meta`'s file.
fn changes_mode(meta: &Meta) -> bool {
    !meta.is_directory()
        && (meta.stored.contains(FileAttributes::READONLY)
            || meta.stored.contains(FileAttributes::ARCHIVE)
                != attributes_of_mode(&meta.stat).contains(FileAttributes::ARCHIVE))
}

/// What a share keeps in xattrs (the share options `store_dos_attributes`, `ea_support` and
/// `streams_xattr`); a share with one off makes no xattr call for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadataXattrs {
    /// DOS attributes and the create time, in `user.DOSATTRIB`.
    pub dos_attributes: bool,
    /// Clients' extended attributes, as `user.` xattrs.
    pub eas: bool,
    /// Named streams, in `user.DosStream.` xattrs.
    pub streams: bool,
}

impl Default for MetadataXattrs {
    fn default() -> Self {
        Self {
            dos_attributes: true,
            eas: true,
            streams: true,
        }
    }
}

/// How a share presents its files: names shown hidden and the rounding of allocation sizes.
#[derive(Debug, Clone)]
pub struct Presentation {
    /// Names starting with a dot are hidden (Samba's `hide dot files`).
    pub hide_dot_files: bool,
    /// Names matching one of these are hidden (Samba's `hide files`, case-insensitive).
    hide_patterns: Vec<Expression>,
    /// Names matching one of these are vetoed (Samba's `veto files`, case-insensitive).
    veto_patterns: Vec<Expression>,
    /// AllocationSize is rounded up to a multiple of this; 0 for none.
    pub allocation_roundup: u64,
    /// What the share keeps in xattrs.
    pub xattrs: MetadataXattrs,
}

impl Default for Presentation {
    /// Samba's defaults: dot files hidden, nothing else, sizes as allocated.
    fn default() -> Self {
        Self::new(true, &[], 0)
    }
}

/// `allocated` rounded up to a multiple of `unit` (0: unchanged).
pub(crate) fn round_allocation(allocated: u64, unit: u64) -> u64 {
    match unit {
        0 => allocated,
        unit => allocated.div_ceil(unit).saturating_mul(unit),
    }
}

impl Presentation {
    pub fn new(hide_dot_files: bool, hide_files: &[String], allocation_roundup: u64) -> Self {
        Self {
            hide_dot_files,
            hide_patterns: hide_files
                .iter()
                .map(|p| Expression::new(p, true))
                .collect(),
            veto_patterns: Vec::new(),
            allocation_roundup,
            xattrs: MetadataXattrs::default(),
        }
    }

    /// The same, keeping in xattrs only what `xattrs` says.
    #[must_use]
    pub fn with_xattrs(mut self, xattrs: MetadataXattrs) -> Self {
        self.xattrs = xattrs;
        self
    }

    /// The same, with `veto_files`' patterns vetoed.
    #[must_use]
    pub fn with_veto(mut self, veto_files: &[String]) -> Self {
        self.veto_patterns = veto_files
            .iter()
            .map(|p| Expression::new(p, true))
            .collect();
        self
    }

    /// Whether the share vetoes some names.
    pub fn vetoes_any(&self) -> bool {
        !self.veto_patterns.is_empty()
    }

    /// Whether `name` is vetoed: not listed, not opened, not created.
    pub fn vetoes(&self, name: &str) -> bool {
        self.veto_patterns.iter().any(|p| p.matches(name))
    }

    /// How a path through a vetoed name is answered, as Samba answers it: its last component
    /// vetoed is a missing name, one on the way a missing path.
    pub fn vetoed_path<'a>(
        &self,
        components: impl ExactSizeIterator<Item = &'a str>,
    ) -> Option<NtStatus> {
        if self.veto_patterns.is_empty() {
            return None;
        }
        let last = components.len().checked_sub(1)?;
        components
            .enumerate()
            .find(|(_, name)| self.vetoes(name))
            .map(|(at, _)| {
                if at == last {
                    NtStatus::OBJECT_NAME_NOT_FOUND
                } else {
                    NtStatus::OBJECT_PATH_NOT_FOUND
                }
            })
    }

    /// Whether `name` is shown with FILE_ATTRIBUTE_HIDDEN whatever is stored.
    pub fn hides(&self, name: &str) -> bool {
        (self.hide_dot_files && name.starts_with('.') && name != "." && name != "..")
            || self.hide_patterns.iter().any(|p| p.matches(name))
    }
}

/// Samba's xattr for reparse points other than symlinks.
pub(crate) const REPARSE_XATTR: &str = "user.SmbReparse";

/// The tag of the reparse point kept in the xattr of `file` (0 when there is none), for
/// FileAttributeTagInformation and listings (MS-FSCC 2.4.6, 2.4.8). Symlinks are followed
/// there, so they report the target's.
pub(crate) fn stored_tag(file: &dyn VfsFile) -> u32 {
    tag_of(file.get_xattr(REPARSE_XATTR).ok().flatten())
}

/// [`stored_tag`] of the entry `name` of the directory `dir`.
pub(crate) fn stored_child_tag(dir: &dyn VfsFile, name: &str) -> u32 {
    tag_of(dir.get_child_xattr(name, REPARSE_XATTR).ok().flatten())
}

fn tag_of(buffer: Option<Vec<u8>>) -> u32 {
    buffer
        .and_then(|b| ReparseBuffer::decode(&b).ok().map(|r| r.tag.0))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samba's answers: a vetoed last component is a missing name, one on the way a missing
    /// path; patterns are case-insensitive wildcards.
    #[test]
    fn vetoed_paths() {
        let veto = Presentation::default().with_veto(&["*.tmp".into(), ".DS_Store".into()]);
        let path = |text: &'static str| text.split('\\').collect::<Vec<_>>();
        let status = |text| veto.vetoed_path(path(text).into_iter());
        assert_eq!(status("x.TMP"), Some(NtStatus::OBJECT_NAME_NOT_FOUND));
        assert_eq!(
            status("a\\.ds_store"),
            Some(NtStatus::OBJECT_NAME_NOT_FOUND)
        );
        assert_eq!(status("v.tmp\\in"), Some(NtStatus::OBJECT_PATH_NOT_FOUND));
        assert_eq!(status("a\\x.tmpx"), None);
        assert!(veto.vetoes_any() && !Presentation::default().vetoes_any());
        assert_eq!(
            Presentation::default().vetoed_path(path("x.tmp").into_iter()),
            None
        );
    }

    fn stat(file_type: FileType) -> FileStat {
        let t = Timespec { sec: 100, nsec: 0 };
        FileStat {
            file_type,
            size: 5,
            allocated: 4096,
            ino: 1,
            dev: 1,
            nlink: 1,
            mode: 0o644,
            uid: 0,
            gid: 0,
            atime: t,
            mtime: t,
            ctime: t,
            btime: Some(Timespec { sec: 50, nsec: 0 }),
        }
    }

    #[test]
    fn defaults_without_dosattrib() {
        let file = Meta::new(
            stat(FileType::File),
            None,
            "a.txt",
            &Presentation::default(),
        );
        assert_eq!(file.attributes(), FileAttributes::NORMAL);
        assert_eq!(file.creation, FileTime::from_unix(50, 0));
        let executable = FileStat {
            mode: 0o744,
            ..stat(FileType::File)
        };
        assert_eq!(
            Meta::new(executable, None, "run.sh", &Presentation::default()).attributes(),
            FileAttributes::NORMAL
        );
        let dir = Meta::new(
            stat(FileType::Directory),
            None,
            "d",
            &Presentation::default(),
        );
        assert_eq!(dir.attributes(), FileAttributes::DIRECTORY);
        assert_eq!(dir.end_of_file(), 0);
        let dot = Meta::new(
            stat(FileType::File),
            None,
            ".profile",
            &Presentation::default(),
        );
        assert_eq!(dot.attributes(), FileAttributes::HIDDEN);
    }

    /// Samba's mapping without DOSATTRIB, as smbclient's setmode showed it against Samba
    /// 4 with `store dos attributes = no`: READONLY clears every write bit, its absence
    /// gives the owner write back and widens nothing else, ARCHIVE is the owner execute bit.
    #[test]
    fn attributes_map_to_the_mode() {
        let ro = FileAttributes::READONLY;
        let a = FileAttributes::ARCHIVE;
        assert_eq!(mode_of_attributes(0o644, a), 0o744);
        assert_eq!(mode_of_attributes(0o744, ro | a), 0o544);
        assert_eq!(mode_of_attributes(0o666, ro), 0o444);
        assert_eq!(mode_of_attributes(0o544, FileAttributes::empty()), 0o644);
        assert_eq!(mode_of_attributes(0o440, a), 0o740);
        assert_eq!(mode_of_attributes(0o4755, FileAttributes::HIDDEN), 0o4655);
        let of = |mode, file_type| {
            attributes_of_mode(&FileStat {
                mode,
                ..stat(file_type)
            })
        };
        assert_eq!(of(0o744, FileType::File), a);
        assert_eq!(of(0o444, FileType::File), FileAttributes::empty());
        assert_eq!(of(0o755, FileType::Directory), FileAttributes::empty());
    }

    /// With `store_dos_attributes` off a stored DOSATTRIB is neither read nor written: the
    /// attributes come from the mode, go to the mode, and the create time is the birth time.
    #[test]
    fn without_dosattrib_the_mode_decides() {
        use smb3d_vfs::{Access, Disposition, Kind, MemoryVfs, OpenRequest, VfsPath};
        let vfs = MemoryVfs::new();
        let request = OpenRequest {
            access: Access::ReadWrite,
            disposition: Disposition::Create,
            kind: Kind::File,
            create_mode: 0o644,
        };
        let file = vfs
            .open(&VfsPath::parse("f").unwrap(), &request)
            .unwrap()
            .file;
        let stored = DosAttrib {
            attributes: (FileAttributes::READONLY | FileAttributes::SYSTEM).0,
            create_time: Some(FileTime::from_unix(7, 0)),
        };
        file.set_xattr(XATTR_DOSATTRIB_NAME, &stored.to_xattr())
            .unwrap();
        let kept = Presentation::default();
        let in_mode = Presentation::default().with_xattrs(MetadataXattrs {
            dos_attributes: false,
            ..MetadataXattrs::default()
        });
        let meta = load(file.as_ref(), "f", &kept).unwrap();
        assert_eq!(
            meta.attributes(),
            FileAttributes::READONLY | FileAttributes::SYSTEM
        );
        let mut meta = load(file.as_ref(), "f", &in_mode).unwrap();
        assert_eq!(meta.attributes(), FileAttributes::NORMAL);
        assert_ne!(meta.creation, FileTime::from_unix(7, 0));
        meta.stored = FileAttributes::READONLY | FileAttributes::ARCHIVE | FileAttributes::HIDDEN;
        meta.creation = FileTime::from_unix(9, 0);
        store(&vfs, file.as_ref(), &meta).unwrap();
        assert_eq!(file.stat().unwrap().mode & 0o7777, 0o544);
        assert_eq!(
            meta.into_stored().attributes(),
            FileAttributes::ARCHIVE,
            "what the mode keeps"
        );
        // DOSATTRIB is as it was: not written, and not what the share shows.
        assert_eq!(
            file.get_xattr(XATTR_DOSATTRIB_NAME).unwrap(),
            Some(stored.to_xattr().to_vec())
        );
        let meta = load(file.as_ref(), "f", &in_mode).unwrap();
        assert_eq!(meta.attributes(), FileAttributes::ARCHIVE);
        assert!(load_child_dos(file.as_ref(), "f", &in_mode).is_none());
    }

    #[test]
    fn the_share_presentation_applies() {
        let shown = Presentation::new(false, &["*.tmp".into()], 65536);
        let allocated = FileStat {
            allocated: 4096,
            ..stat(FileType::File)
        };
        let tmp = Meta::new(allocated, None, "A.TMP", &shown);
        assert_eq!(tmp.attributes(), FileAttributes::HIDDEN);
        assert_eq!(tmp.allocation_size(), 65536);
        let dot = Meta::new(stat(FileType::File), None, ".profile", &shown);
        assert_eq!(dot.attributes(), FileAttributes::NORMAL);
    }

    #[test]
    fn stored_attributes_and_create_time() {
        let dos = DosAttrib {
            attributes: 0x10 | 0x1,
            create_time: Some(FileTime(123)),
        };
        let dir = Meta::new(
            stat(FileType::Directory),
            Some(dos),
            "d",
            &Presentation::default(),
        );
        assert_eq!(
            dir.attributes(),
            FileAttributes::DIRECTORY | FileAttributes::READONLY
        );
        assert_eq!(dir.creation, FileTime(123));
        let none = DosAttrib {
            attributes: 0,
            create_time: None,
        };
        assert_eq!(
            Meta::new(
                stat(FileType::File),
                Some(none),
                "f",
                &Presentation::default()
            )
            .attributes(),
            FileAttributes::NORMAL
        );
    }

    #[test]
    fn presentation_hides_and_rounds() {
        let p = Presentation::new(true, &["hide*".into(), "?.TMP".into()], 1 << 20);
        assert!(p.hides(".profile") && p.hides("HideFile") && p.hides("a.tmp"));
        assert!(!p.hides(".") && !p.hides("..") && !p.hides("file") && !p.hides("ab.tmp"));
        assert!(!Presentation::new(false, &[], 0).hides(".profile"));
        assert_eq!(round_allocation(0, 1 << 20), 0);
        assert_eq!(round_allocation(4096, 1 << 20), 1 << 20);
        assert_eq!(round_allocation((1 << 20) + 1, 1 << 20), 2 << 20);
        assert_eq!(round_allocation(u64::MAX, 1 << 20), u64::MAX);
        assert_eq!(round_allocation(4096, 0), 4096);
    }
}
