//! Directory listings for QUERY_DIRECTORY (MS-FSCC 2.4): one protocol-neutral [`DirEntry`]
//! written in any supported class by [`DirListEncoder`], and a checked decoder per class.
//!
//! Every class is a NextEntryOffset chain of 8-byte aligned entries. After NextEntryOffset
//! and FileIndex, all classes but FileNamesInformation share the times, sizes, attributes and
//! FileNameLength; each then adds its own tail of fields before FileName.

use smb3d_wire::{DecodeError, DecodeErrorKind, FileTimes, Reader, Result, Writer};

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
    pub times: FileTimes,
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
    /// Apple's ReadDirAttr extras, written in place of EaSize, ShortName and Reserved.
    pub mac: Option<MacDirAttr>,
}

/// What a Mac client that negotiated ReadDirAttr (AAPL create context) reads from an entry
/// of a FileIdBothDirectoryInformation listing instead of the fields they stand in: EaSize
/// holds `max_access`, ShortNameLength is 24 and ShortName holds the resource fork's length
/// (8 bytes, little-endian) then the first 16 bytes of the Finder info, and the Reserved
/// field after ShortName holds the low 16 bits of the UNIX mode. MS-FSCC does not define this;
/// it is what Apple's client, Samba's vfs_fruit and smbtorture's vfs.fruit tests agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MacDirAttr {
    pub max_access: u32,
    pub resource_fork_len: u64,
    pub finder_info: [u8; 16],
    pub unix_mode: u16,
}

/// A decoded directory entry; fields the class does not carry are zero or empty.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DirEntryBuf {
    pub file_index: u32,
    pub times: FileTimes,
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
            times: self.times,
            end_of_file: self.end_of_file,
            allocation_size: self.allocation_size,
            file_attributes: self.file_attributes,
            ea_size: self.ea_size,
            reparse_tag: self.reparse_tag,
            file_id: self.file_id,
            file_id_128: self.file_id_128,
            short_name: &self.short_name,
            name: &self.name,
            mac: None,
        }
    }
}

/// A class-specific field between FileNameLength and FileName.
#[derive(Debug, Clone, Copy)]
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
#[derive(Debug, Clone, Copy)]
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
        w.file_times(e.times)
            .u64(e.end_of_file)
            .u64(e.allocation_size)
            .u32(e.file_attributes.0)
            .u32(name_len);
        for field in tail {
            if let Some(mac) = &e.mac
                && write_mac(w, *field, mac)
            {
                continue;
            }
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
        e.times = r.file_times()?;
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

/// Writes `field` as [`MacDirAttr`] fills it, if it is one of those it stands in for.
fn write_mac(w: &mut Writer<'_>, field: Tail, mac: &MacDirAttr) -> bool {
    match field {
        EaOrTag | EaSize => {
            w.u32(mac.max_access);
        }
        ShortName => {
            w.u8(SHORT_NAME_BYTES as u8).u8(0);
            w.u64(mac.resource_fork_len).bytes(&mac.finder_info);
        }
        Reserved16 => {
            w.u16(mac.unix_mode);
        }
        _ => return false,
    }
    true
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
    layout: Layout,
    chain: ChainWriter,
}

impl DirListEncoder {
    /// Starts a listing at the writer's current position, holding at most `limit` bytes.
    pub fn new(
        class: FileInformationClass,
        w: &Writer<'_>,
        limit: usize,
    ) -> core::result::Result<Self, UnsupportedClass> {
        Ok(Self {
            layout: Layout::of(class)?,
            chain: ChainWriter::new(w, limit, DIR_ALIGN),
        })
    }

    /// Appends `entry`; false, writing nothing, if it does not fit (the server keeps it for the
    /// next QUERY_DIRECTORY).
    pub fn push(&mut self, w: &mut Writer<'_>, entry: &DirEntry<'_>) -> bool {
        let layout = self.layout;
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

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_wire::FileTime;

    const ALL_CLASSES: [(u8, usize); 12] = [
        (1, 64),
        (2, 68),
        (3, 94),
        (12, 12),
        (37, 104),
        (38, 80),
        (60, 88),
        (63, 114),
        (78, 80),
        (79, 106),
        (80, 96),
        (81, 122),
    ];

    fn sample(name: &str) -> DirEntry<'_> {
        DirEntry {
            file_index: 0,
            times: FileTimes {
                creation: FileTime(1),
                last_access: FileTime(2),
                last_write: FileTime(3),
                change: FileTime(4),
            },
            end_of_file: 5,
            allocation_size: 4096,
            file_attributes: FileAttributes::ARCHIVE,
            ea_size: 42,
            reparse_tag: 0,
            file_id: 0x1122_3344,
            file_id_128: [7; 16],
            short_name: "LONGNA~1.TXT",
            name,
            mac: None,
        }
    }

    fn list(class: u8, entries: &[DirEntry<'_>], limit: usize) -> (Vec<u8>, usize) {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        let mut enc = DirListEncoder::new(FileInformationClass(class), &w, limit).unwrap();
        for e in entries {
            if !enc.push(&mut w, e) {
                break;
            }
        }
        let count = enc.count();
        assert_eq!(enc.len(&w), w.offset());
        (buf, count)
    }

    /// Only the fields a class carries survive decoding.
    fn as_listed(class: u8, e: &DirEntry<'_>) -> DirEntryBuf {
        let mut out = DirEntryBuf {
            file_index: e.file_index,
            name: e.name.into(),
            ..DirEntryBuf::default()
        };
        if class == 12 {
            return out;
        }
        out.times = e.times;
        out.end_of_file = e.end_of_file;
        out.allocation_size = e.allocation_size;
        out.file_attributes = e.file_attributes;
        if class != 1 {
            out.ea_size = e.ea_size;
        }
        if matches!(class, 3 | 37 | 63 | 79 | 81) {
            out.short_name = e.short_name.into();
        }
        if matches!(class, 37 | 38 | 78 | 79 | 80 | 81) {
            out.file_id = e.file_id;
        }
        if matches!(class, 60 | 63 | 80 | 81) {
            out.file_id_128 = e.file_id_128;
        }
        out
    }

    #[test]
    fn every_class_round_trips_with_fixed_sizes_and_alignment() {
        let entries = [sample("a"), sample("longer name.txt"), sample("\u{1F600}")];
        for (class, fixed) in ALL_CLASSES {
            assert_eq!(
                dir_entry_fixed_size(FileInformationClass(class)).unwrap(),
                fixed
            );
            let (buf, count) = list(class, &entries, 65536);
            assert_eq!(count, 3);
            // First entry: fixed part, "a", padded to 8.
            let first_next = u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize;
            assert_eq!(first_next, (fixed + 2).next_multiple_of(8), "class {class}");
            let decoded: Vec<_> = dir_list(FileInformationClass(class), &buf)
                .unwrap()
                .map(|e| e.unwrap())
                .collect();
            let expected: Vec<_> = entries.iter().map(|e| as_listed(class, e)).collect();
            assert_eq!(decoded, expected, "class {class}");
            // The last entry has no padding after it.
            let last = &decoded[2];
            assert!(
                buf.len() > fixed && buf.ends_with(&[0x3D, 0xD8, 0x00, 0xDE]),
                "{last:?}"
            );
        }
    }

    #[test]
    fn ea_size_carries_the_reparse_tag_where_the_class_has_no_tag_field() {
        let mut e = sample("link");
        e.file_attributes = FileAttributes::REPARSE_POINT;
        e.reparse_tag = 0xA000_000C;
        for (class, ea_at) in [(2u8, 64usize), (3, 64), (37, 64), (38, 64), (60, 64)] {
            let (buf, _) = list(class, &[e], 4096);
            let field = u32::from_le_bytes(buf[ea_at..ea_at + 4].try_into().unwrap());
            let expected = if class == 60 { 42 } else { 0xA000_000C };
            assert_eq!(field, expected, "class {class}");
            let back = dir_list(FileInformationClass(class), &buf)
                .unwrap()
                .next()
                .unwrap()
                .unwrap();
            assert_eq!(back.reparse_tag, 0xA000_000C);
        }
    }

    #[test]
    fn encoder_stops_when_the_next_entry_does_not_fit() {
        let entries = [sample("one"), sample("two"), sample("three")];
        // Class 1: 64 + 6 = 70, padded to 72; two entries need 72 + 70 = 142.
        let (buf, count) = list(1, &entries, 141);
        assert_eq!((count, buf.len()), (1, 70));
        assert_eq!(&buf[..4], &[0, 0, 0, 0]);
        let (buf, count) = list(1, &entries, 142);
        assert_eq!((count, buf.len()), (2, 142));
        let (_, count) = list(1, &entries, 69);
        assert_eq!(count, 0);
    }

    #[test]
    fn too_long_short_name_is_left_out() {
        let mut e = sample("x");
        e.short_name = "THIRTEEN.CHAR";
        let (buf, _) = list(3, &[e], 4096);
        let back = dir_list(FileInformationClass(3), &buf)
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        assert_eq!(back.short_name, "");
    }

    #[test]
    fn unsupported_classes_are_a_distinct_error() {
        let mut buf = Vec::new();
        let w = Writer::new(&mut buf);
        let err =
            DirListEncoder::new(FileInformationClass::FILE_BASIC_INFORMATION, &w, 10).unwrap_err();
        assert_eq!(err, UnsupportedClass(4));
        assert!(dir_list(FileInformationClass(200), &[]).is_err());
        assert!(dir_entry_fixed_size(FileInformationClass(61)).is_err());
    }

    #[test]
    fn malformed_entries_are_rejected() {
        let (mut buf, _) = list(12, &[sample("abc")], 4096);
        // FileNameLength larger than the entry.
        buf[8] = 200;
        let e = dir_list(FileInformationClass(12), &buf)
            .unwrap()
            .next()
            .unwrap();
        assert_eq!(e.unwrap_err().kind, DecodeErrorKind::Truncated);
        // A name that does not fit before the next entry.
        let (mut buf, _) = list(12, &[sample("abc"), sample("d")], 4096);
        buf[8] = 14;
        let e = dir_list(FileInformationClass(12), &buf)
            .unwrap()
            .next()
            .unwrap();
        assert!(e.is_err());
        // ShortNameLength past ShortName.
        let (mut buf, _) = list(3, &[sample("abc")], 4096);
        buf[68] = 26;
        let e = dir_list(FileInformationClass(3), &buf)
            .unwrap()
            .next()
            .unwrap();
        assert_eq!(e.unwrap_err().kind, DecodeErrorKind::OutOfBounds);
        // Odd name length.
        let (mut buf, _) = list(1, &[sample("abc")], 4096);
        buf[60] = 5;
        let e = dir_list(FileInformationClass(1), &buf)
            .unwrap()
            .next()
            .unwrap();
        assert_eq!(e.unwrap_err().kind, DecodeErrorKind::InvalidUtf16);
        // Truncated fixed part.
        let e = dir_list(FileInformationClass(37), &buf[..40])
            .unwrap()
            .next()
            .unwrap();
        assert_eq!(e.unwrap_err().kind, DecodeErrorKind::Truncated);
    }

    /// Golden bytes of a ReadDirAttr entry (the layout smbtorture's vfs.fruit test_aapl reads:
    /// max access at EaSize, 24 in ShortNameLength, the fork length then Finder info in
    /// ShortName, the mode in Reserved).
    #[test]
    fn mac_extras_stand_in_for_ea_size_short_name_and_reserved() {
        let mut e = sample("ab");
        e.mac = Some(MacDirAttr {
            max_access: 0x001f_01ff,
            resource_fork_len: 3,
            finder_info: *b"SMB,OLE!\x01\x02\x03\x04\x05\x06\x07\x08",
            unix_mode: 0o100_644,
        });
        let (buf, n) = list(37, &[e], 4096);
        assert_eq!(n, 1);
        assert_eq!(&buf[64..68], &0x001f_01ffu32.to_le_bytes());
        assert_eq!(&buf[68..70], &[24, 0]);
        assert_eq!(&buf[70..78], &3u64.to_le_bytes());
        assert_eq!(&buf[78..94], b"SMB,OLE!\x01\x02\x03\x04\x05\x06\x07\x08");
        assert_eq!(&buf[94..96], &[0xa4, 0x81]);
        assert_eq!(&buf[96..104], &0x1122_3344u64.to_le_bytes());
        assert_eq!(&buf[104..108], &[b'a', 0, b'b', 0]);
        // Without them the same entry carries its EaSize and short name.
        let (plain, _) = list(37, &[sample("ab")], 4096);
        assert_eq!(&plain[64..68], &42u32.to_le_bytes());
        assert_eq!(plain[68], 24);
        assert_eq!(&plain[70..72], &[b'L', 0]);
        assert_eq!(&plain[94..96], &[0, 0]);
    }
}
