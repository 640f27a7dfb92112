//! Directory listings for QUERY_DIRECTORY (MS-FSCC 2.4): one protocol-neutral [`DirEntry`]
//! written in any supported class by [`DirListEncoder`], and a checked decoder per class.
//!
//! Every class is a NextEntryOffset chain of 8-byte aligned entries. After NextEntryOffset
//! and FileIndex, all classes but FileNamesInformation share the times, sizes, attributes and
//! FileNameLength; each then adds its own tail of fields before FileName.

use smb3d_wire::{DecodeError, DecodeErrorKind, FileTime, Reader, Result, Writer};

use crate::attributes::FileAttributes;
use crate::class::{FileInformationClass, UnsupportedClass};
use crate::list::{ChainWriter, EntryIter};
use crate::name::{read_utf16, utf16_len_u32};

const DIR_ALIGN: usize = 8;
/// NextEntryOffset through FileNameLength, shared by every class except FileNamesInformation.
const COMMON_FIXED: usize = 64;
/// NextEntryOffset, FileIndex, FileNameLength.
const NAMES_FIXED: usize = 12;
/// ShortName is 12 UTF-16 code units.
const SHORT_NAME_BYTES: usize = 24;

/// One directory entry, independent of the information class it is listed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DirEntry<'a> {
    pub file_index: u32,
    pub creation_time: FileTime,
    pub last_access_time: FileTime,
    pub last_write_time: FileTime,
    pub change_time: FileTime,
    pub end_of_file: u64,
    pub allocation_size: u64,
    pub file_attributes: FileAttributes,
    pub ea_size: u32,
    pub reparse_tag: u32,
    pub file_id: u64,
    pub file_id_128: [u8; 16],
    /// The 8.3 name; empty if none. Written only if it fits ShortName's 24 bytes.
    pub short_name: &'a str,
    pub name: &'a str,
}

/// A decoded directory entry; fields the class does not carry are zero or empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DirEntryBuf {
    pub file_index: u32,
    pub creation_time: FileTime,
    pub last_access_time: FileTime,
    pub last_write_time: FileTime,
    pub change_time: FileTime,
    pub end_of_file: u64,
    pub allocation_size: u64,
    pub file_attributes: FileAttributes,
    pub ea_size: u32,
    pub reparse_tag: u32,
    pub file_id: u64,
    pub file_id_128: [u8; 16],
    pub short_name: String,
    pub name: String,
}

impl DirEntryBuf {
    /// Borrows it as a [`DirEntry`], for re-encoding.
    pub fn as_entry(&self) -> DirEntry<'_> {
        DirEntry {
            file_index: self.file_index,
            creation_time: self.creation_time,
            last_access_time: self.last_access_time,
            last_write_time: self.last_write_time,
            change_time: self.change_time,
            end_of_file: self.end_of_file,
            allocation_size: self.allocation_size,
            file_attributes: self.file_attributes,
            ea_size: self.ea_size,
            reparse_tag: self.reparse_tag,
            file_id: self.file_id,
            file_id_128: self.file_id_128,
            short_name: &self.short_name,
            name: &self.name,
        }
    }
}

/// A class-specific field between FileNameLength and FileName.
#[derive(Clone, Copy)]
enum Tail {
    /// EaSize, or the reparse tag when FILE_ATTRIBUTE_REPARSE_POINT is set (the classes
    /// without a ReparsePointTag field).
    EaOrTag,
    EaSize,
    ReparseTag,
    /// ShortNameLength, Reserved, ShortName.
    ShortName,
    Reserved16,
    Reserved32,
    FileId64,
    FileId128,
}

impl Tail {
    const fn len(self) -> usize {
        match self {
            Self::EaOrTag | Self::EaSize | Self::ReparseTag | Self::Reserved32 => 4,
            Self::ShortName => 2 + SHORT_NAME_BYTES,
            Self::Reserved16 => 2,
            Self::FileId64 => 8,
            Self::FileId128 => 16,
        }
    }
}

use Tail::{EaOrTag, EaSize, FileId64, FileId128, ReparseTag, Reserved16, Reserved32, ShortName};

/// The layout of one directory class: FileNamesInformation, or the common fields and a tail.
#[derive(Clone, Copy)]
enum Layout {
    Names,
    Common(&'static [Tail]),
}

impl Layout {
    fn of(class: FileInformationClass) -> core::result::Result<Self, UnsupportedClass> {
        Ok(match class {
            FileInformationClass::FILE_NAMES_INFORMATION => Self::Names,
            FileInformationClass::FILE_DIRECTORY_INFORMATION => Self::Common(&[]),
            FileInformationClass::FILE_FULL_DIRECTORY_INFORMATION => Self::Common(&[EaOrTag]),
            FileInformationClass::FILE_BOTH_DIRECTORY_INFORMATION => {
                Self::Common(&[EaOrTag, ShortName])
            }
            FileInformationClass::FILE_ID_BOTH_DIRECTORY_INFORMATION => {
                Self::Common(&[EaOrTag, ShortName, Reserved16, FileId64])
            }
            FileInformationClass::FILE_ID_FULL_DIRECTORY_INFORMATION => {
                Self::Common(&[EaOrTag, Reserved32, FileId64])
            }
            FileInformationClass::FILE_ID_EXTD_DIRECTORY_INFORMATION => {
                Self::Common(&[EaSize, ReparseTag, FileId128])
            }
            FileInformationClass::FILE_ID_EXTD_BOTH_DIRECTORY_INFORMATION => {
                Self::Common(&[EaSize, ReparseTag, FileId128, ShortName])
            }
            FileInformationClass::FILE_ID_64_EXTD_DIRECTORY_INFORMATION => {
                Self::Common(&[EaSize, ReparseTag, FileId64])
            }
            FileInformationClass::FILE_ID_64_EXTD_BOTH_DIRECTORY_INFORMATION => {
                Self::Common(&[EaSize, ReparseTag, FileId64, ShortName])
            }
            FileInformationClass::FILE_ID_ALL_EXTD_DIRECTORY_INFORMATION => {
                Self::Common(&[EaSize, ReparseTag, FileId64, FileId128])
            }
            FileInformationClass::FILE_ID_ALL_EXTD_BOTH_DIRECTORY_INFORMATION => {
                Self::Common(&[EaSize, ReparseTag, FileId64, FileId128, ShortName])
            }
            other => return Err(UnsupportedClass(other.0)),
        })
    }

    fn fixed_len(self) -> usize {
        match self {
            Self::Names => NAMES_FIXED,
            Self::Common(tail) => COMMON_FIXED + tail.iter().map(|t| t.len()).sum::<usize>(),
        }
    }

    /// Writes everything after NextEntryOffset.
    fn write(self, w: &mut Writer<'_>, e: &DirEntry<'_>, name_len: u32) {
        w.u32(e.file_index);
        let tail = match self {
            Self::Names => {
                w.u32(name_len);
                w.utf16(e.name);
                return;
            }
            Self::Common(tail) => tail,
        };
        w.filetime(e.creation_time)
            .filetime(e.last_access_time)
            .filetime(e.last_write_time)
            .filetime(e.change_time)
            .u64(e.end_of_file)
            .u64(e.allocation_size)
            .u32(e.file_attributes.0)
            .u32(name_len);
        for field in tail {
            match field {
                EaOrTag if e.file_attributes.contains(FileAttributes::REPARSE_POINT) => {
                    w.u32(e.reparse_tag);
                }
                EaOrTag | EaSize => {
                    w.u32(e.ea_size);
                }
                ReparseTag => {
                    w.u32(e.reparse_tag);
                }
                ShortName => write_short_name(w, e.short_name),
                Reserved16 => {
                    w.u16(0);
                }
                Reserved32 => {
                    w.u32(0);
                }
                FileId64 => {
                    w.u64(e.file_id);
                }
                FileId128 => {
                    w.bytes(&e.file_id_128);
                }
            }
        }
        w.utf16(e.name);
    }

    fn parse(self, entry: &[u8]) -> Result<DirEntryBuf> {
        let mut r = Reader::new(entry);
        r.skip(4, "NextEntryOffset")?;
        let mut e = DirEntryBuf {
            file_index: r.u32("FileIndex")?,
            ..DirEntryBuf::default()
        };
        let tail = match self {
            Self::Names => {
                e.name = read_name(&mut r)?;
                return Ok(e);
            }
            Self::Common(tail) => tail,
        };
        e.creation_time = r.filetime("CreationTime")?;
        e.last_access_time = r.filetime("LastAccessTime")?;
        e.last_write_time = r.filetime("LastWriteTime")?;
        e.change_time = r.filetime("ChangeTime")?;
        e.end_of_file = r.u64("EndOfFile")?;
        e.allocation_size = r.u64("AllocationSize")?;
        e.file_attributes = FileAttributes(r.u32("FileAttributes")?);
        let name_len = r.u32("FileNameLength")?;
        for field in tail {
            match field {
                EaOrTag if e.file_attributes.contains(FileAttributes::REPARSE_POINT) => {
                    e.reparse_tag = r.u32("EaSize")?
                }
                EaOrTag | EaSize => e.ea_size = r.u32("EaSize")?,
                ReparseTag => e.reparse_tag = r.u32("ReparsePointTag")?,
                ShortName => e.short_name = read_short_name(&mut r)?,
                Reserved16 => r.skip(2, "Reserved")?,
                Reserved32 => r.skip(4, "Reserved")?,
                FileId64 => e.file_id = r.u64("FileId")?,
                FileId128 => e.file_id_128 = r.array("FileId")?,
            }
        }
        e.name = read_utf16(&mut r, name_len, "FileName")?;
        Ok(e)
    }
}

fn read_name(r: &mut Reader<'_>) -> Result<String> {
    let len = r.u32("FileNameLength")?;
    read_utf16(r, len, "FileName")
}

fn write_short_name(w: &mut Writer<'_>, short_name: &str) {
    let len = smb3d_wire::utf16le_len(short_name);
    if len > SHORT_NAME_BYTES {
        w.zeros(2 + SHORT_NAME_BYTES);
        return;
    }
    // At most 24, checked above.
    w.u8(len as u8).u8(0);
    w.utf16(short_name);
    w.zeros(SHORT_NAME_BYTES - len);
}

fn read_short_name(r: &mut Reader<'_>) -> Result<String> {
    let len = usize::from(r.u8("ShortNameLength")?);
    r.skip(1, "Reserved")?;
    let field = r.bytes(SHORT_NAME_BYTES, "ShortName")?;
    let used = field.get(..len).ok_or(DecodeError::new(
        "ShortNameLength",
        DecodeErrorKind::OutOfBounds,
    ))?;
    smb3d_wire::decode_utf16le(used, "ShortName")
}

/// Appends directory entries of one class to a QUERY_DIRECTORY output buffer while they fit
/// in its OutputBufferLength, 8-byte aligning each entry and chaining NextEntryOffset (the last
/// entry's stays zero, and no padding follows it).
#[derive(Debug)]
pub struct DirListEncoder {
    layout: LayoutDebug,
    chain: ChainWriter,
}

/// [`Layout`] with a Debug impl that does not print the tail table.
#[derive(Clone, Copy)]
struct LayoutDebug(Layout);

impl core::fmt::Debug for LayoutDebug {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Layout(fixed {})", self.0.fixed_len())
    }
}

impl DirListEncoder {
    /// Starts a listing at the writer's current position, holding at most `limit` bytes.
    pub fn new(
        class: FileInformationClass,
        w: &Writer<'_>,
        limit: usize,
    ) -> core::result::Result<Self, UnsupportedClass> {
        Ok(Self {
            layout: LayoutDebug(Layout::of(class)?),
            chain: ChainWriter::new(w, limit, DIR_ALIGN),
        })
    }

    /// Appends `entry`; false, writing nothing, if it does not fit (the server keeps it for the
    /// next QUERY_DIRECTORY).
    pub fn push(&mut self, w: &mut Writer<'_>, entry: &DirEntry<'_>) -> bool {
        let layout = self.layout.0;
        let name_len = utf16_len_u32(entry.name);
        let len = layout
            .fixed_len()
            .saturating_add(usize::try_from(name_len).unwrap_or(usize::MAX));
        self.chain
            .push(w, len, |w| layout.write(w, entry, name_len))
    }

    /// Entries written.
    pub fn count(&self) -> usize {
        self.chain.count()
    }

    /// Whether no entry has been written.
    pub fn is_empty(&self) -> bool {
        self.chain.count() == 0
    }

    /// Bytes written.
    pub fn len(&self, w: &Writer<'_>) -> usize {
        self.chain.len(w)
    }
}

/// Bytes of a class's entry before FileName (`FieldOffset(.., FileName)`), the least
/// OutputBufferLength that can hold an entry (MS-FSA 2.1.5.6.3).
pub fn dir_entry_fixed_size(
    class: FileInformationClass,
) -> core::result::Result<usize, UnsupportedClass> {
    Ok(Layout::of(class)?.fixed_len())
}

/// Walks a QUERY_DIRECTORY output buffer of `class`, checking every offset and length.
pub fn dir_list(
    class: FileInformationClass,
    buf: &[u8],
) -> core::result::Result<EntryIter<'_, DirEntryBuf>, UnsupportedClass> {
    let layout = Layout::of(class)?;
    let parse: fn(&[u8]) -> Result<DirEntryBuf> = match class {
        FileInformationClass::FILE_NAMES_INFORMATION => parse_class::<12>,
        FileInformationClass::FILE_DIRECTORY_INFORMATION => parse_class::<1>,
        FileInformationClass::FILE_FULL_DIRECTORY_INFORMATION => parse_class::<2>,
        FileInformationClass::FILE_BOTH_DIRECTORY_INFORMATION => parse_class::<3>,
        FileInformationClass::FILE_ID_BOTH_DIRECTORY_INFORMATION => parse_class::<37>,
        FileInformationClass::FILE_ID_FULL_DIRECTORY_INFORMATION => parse_class::<38>,
        FileInformationClass::FILE_ID_EXTD_DIRECTORY_INFORMATION => parse_class::<60>,
        FileInformationClass::FILE_ID_EXTD_BOTH_DIRECTORY_INFORMATION => parse_class::<63>,
        FileInformationClass::FILE_ID_64_EXTD_DIRECTORY_INFORMATION => parse_class::<78>,
        FileInformationClass::FILE_ID_64_EXTD_BOTH_DIRECTORY_INFORMATION => parse_class::<79>,
        FileInformationClass::FILE_ID_ALL_EXTD_DIRECTORY_INFORMATION => parse_class::<80>,
        FileInformationClass::FILE_ID_ALL_EXTD_BOTH_DIRECTORY_INFORMATION => parse_class::<81>,
        other => return Err(UnsupportedClass(other.0)),
    };
    Ok(EntryIter::new(
        buf,
        DIR_ALIGN,
        layout.fixed_len(),
        "FileDirectoryInformation",
        parse,
    ))
}

/// A plain function per class, so the entry walker can hold a function pointer.
fn parse_class<const CLASS: u8>(entry: &[u8]) -> Result<DirEntryBuf> {
    Layout::of(FileInformationClass(CLASS))
        .map_err(|_| DecodeError::invalid("FileInformationClass"))?
        .parse(entry)
}
