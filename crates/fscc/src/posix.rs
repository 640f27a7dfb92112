//! The SMB3 POSIX extensions' structures (the published "SMB3 POSIX Extensions" and its MS-FSCC
//! part): the POSIX mode on the wire, the block a POSIX create context response and every POSIX
//! information entry share, and FILE_POSIX_INFORMATION (information class 100, in QUERY_INFO and
//! QUERY_DIRECTORY alike).
//!
//! The mode keeps the twelve permission bits where POSIX keeps them (0o7777) and puts the file
//! type in bits 12-15 as an enumeration of its own (0 file, 1 directory, 2 symlink, 3 character
//! device, 4 block device, 5 FIFO, 6 socket), not as the `S_IFMT` values.
//!
//! Owner and group are SIDs in the binary form of MS-DTYP 2.4.2.2, each as long as its
//! sub-authorities make it, one after the other.

use smb3d_dtyp::Sid;
use smb3d_wire::{DecodeError, FileTimes, Reader, Result, Writer};

use crate::list::{ChainWriter, EntryIter};
use crate::name::{read_utf16, utf16_len_u32};

/// The information class of FILE_POSIX_INFORMATION (QUERY_INFO) and of
/// SMB2_FIND_POSIX_INFORMATION (QUERY_DIRECTORY).
pub const POSIX_INFORMATION_CLASS: u8 = 100;

/// The permission bits a POSIX mode may carry: rwx for user, group and others, sticky,
/// set-group-id and set-user-id.
pub const PERMISSION_BITS: u32 = 0o7777;

/// Where the file type sits in a wire mode.
const TYPE_SHIFT: u32 = 12;
const TYPE_MASK: u32 = 0xF << TYPE_SHIFT;

/// The file types of a wire mode, in the spec's numbering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PosixFileType {
    File = 0,
    Directory = 1,
    Symlink = 2,
    CharDevice = 3,
    BlockDevice = 4,
    Fifo = 5,
    Socket = 6,
}

impl PosixFileType {
    /// The type of a Unix `st_mode` (its `S_IFMT` bits); an unknown type counts as a file.
    pub fn of_unix(st_mode: u32) -> Self {
        match st_mode & 0o170_000 {
            0o040_000 => Self::Directory,
            0o120_000 => Self::Symlink,
            0o020_000 => Self::CharDevice,
            0o060_000 => Self::BlockDevice,
            0o010_000 => Self::Fifo,
            0o140_000 => Self::Socket,
            _ => Self::File,
        }
    }

    fn of_wire(value: u32) -> Option<Self> {
        Some(match value {
            0 => Self::File,
            1 => Self::Directory,
            2 => Self::Symlink,
            3 => Self::CharDevice,
            4 => Self::BlockDevice,
            5 => Self::Fifo,
            6 => Self::Socket,
            _ => return None,
        })
    }
}

/// A mode as the POSIX extensions carry it: permission bits and file type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PosixMode {
    pub permissions: u32,
    pub file_type: PosixFileType,
}

impl PosixMode {
    /// The wire mode of a Unix `st_mode`.
    pub fn of_unix(st_mode: u32) -> Self {
        Self {
            permissions: st_mode & PERMISSION_BITS,
            file_type: PosixFileType::of_unix(st_mode),
        }
    }

    /// The 32-bit wire value.
    pub fn to_wire(self) -> u32 {
        self.permissions | ((self.file_type as u32) << TYPE_SHIFT)
    }

    /// Reads a wire value; bits above the type, or a type the spec does not name, are an error.
    pub fn from_wire(value: u32) -> Result<Self> {
        if value & !(PERMISSION_BITS | TYPE_MASK) != 0 {
            return Err(DecodeError::invalid("PosixMode"));
        }
        let file_type = PosixFileType::of_wire((value & TYPE_MASK) >> TYPE_SHIFT)
            .ok_or_else(|| DecodeError::invalid("PosixMode.Type"))?;
        Ok(Self {
            permissions: value & PERMISSION_BITS,
            file_type,
        })
    }
}

/// What a POSIX create context response holds, and what every POSIX information entry ends
/// with: link count, reparse tag, mode, owner and group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PosixCcInfo {
    pub number_of_links: u32,
    pub reparse_tag: u32,
    pub mode: PosixMode,
    pub owner: Sid,
    pub group: Sid,
}

impl PosixCcInfo {
    /// The encoded size.
    pub fn encoded_len(&self) -> usize {
        12 + self.owner.encoded_len() + self.group.encoded_len()
    }

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.number_of_links)
            .u32(self.reparse_tag)
            .u32(self.mode.to_wire());
        self.owner.encode(w);
        self.group.encode(w);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            number_of_links: r.u32("PosixInfo.NumberOfLinks")?,
            reparse_tag: r.u32("PosixInfo.ReparseTag")?,
            mode: PosixMode::from_wire(r.u32("PosixInfo.Mode")?)?,
            owner: Sid::decode(r)?,
            group: Sid::decode(r)?,
        })
    }
}
whole_struct_codec!(PosixCcInfo);

/// FILE_POSIX_INFORMATION: the times, sizes and attributes of FILE_NETWORK_OPEN_INFORMATION,
/// the inode and device, then [`PosixCcInfo`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilePosixInformation {
    pub times: FileTimes,
    pub end_of_file: u64,
    pub allocation_size: u64,
    pub file_attributes: u32,
    pub inode: u64,
    pub device: u32,
    pub cc: PosixCcInfo,
}

impl FilePosixInformation {
    /// The size before the owner and group SIDs.
    pub const FIXED_SIZE: usize = 80;

    /// The encoded size.
    pub fn encoded_len(&self) -> usize {
        68 + self.cc.encoded_len()
    }

    fn write(&self, w: &mut Writer<'_>) {
        w.file_times(self.times)
            .u64(self.end_of_file)
            .u64(self.allocation_size)
            .u32(self.file_attributes)
            .u64(self.inode)
            .u32(self.device)
            .u32(0);
        self.cc.write(w);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let times = r.file_times()?;
        let end_of_file = r.u64("EndOfFile")?;
        let allocation_size = r.u64("AllocationSize")?;
        let file_attributes = r.u32("FileAttributes")?;
        let inode = r.u64("Inode")?;
        let device = r.u32("DeviceId")?;
        r.skip(4, "Reserved")?;
        Ok(Self {
            times,
            end_of_file,
            allocation_size,
            file_attributes,
            inode,
            device,
            cc: PosixCcInfo::read(r)?,
        })
    }
}
whole_struct_codec!(FilePosixInformation);

/// Bytes of an SMB2_FIND_POSIX_INFORMATION entry besides FILE_POSIX_INFORMATION and the name:
/// NextEntryOffset, FileIndex (reserved) and FileNameLength.
const DIR_ENTRY_OVERHEAD: usize = 12;
const DIR_ALIGN: usize = 8;

/// The least OutputBufferLength a POSIX listing needs: an entry with SIDs of no
/// sub-authorities and an empty name.
pub const DIR_ENTRY_MIN: usize = DIR_ENTRY_OVERHEAD + FilePosixInformation::FIXED_SIZE + 16;

/// Appends SMB2_FIND_POSIX_INFORMATION entries (NextEntryOffset, FileIndex, the file's
/// FILE_POSIX_INFORMATION, FileNameLength, FileName) while they fit, 8-byte aligned like every
/// directory class.
#[derive(Debug)]
pub struct PosixDirListEncoder {
    chain: ChainWriter,
}

impl PosixDirListEncoder {
    /// Starts a listing at the writer's current position, holding at most `limit` bytes.
    pub fn new(w: &Writer<'_>, limit: usize) -> Self {
        Self {
            chain: ChainWriter::new(w, limit, DIR_ALIGN),
        }
    }

    /// Appends the entry of `name`; false, writing nothing, if it does not fit.
    pub fn push(&mut self, w: &mut Writer<'_>, info: &FilePosixInformation, name: &str) -> bool {
        let name_len = utf16_len_u32(name);
        let len = (DIR_ENTRY_OVERHEAD + info.encoded_len())
            .saturating_add(usize::try_from(name_len).unwrap_or(usize::MAX));
        self.chain.push(w, len, |w| {
            w.u32(0);
            info.write(w);
            w.u32(name_len);
            w.utf16(name);
        })
    }

    /// Whether no entry has been written.
    pub fn is_empty(&self) -> bool {
        self.chain.count() == 0
    }
}

/// Walks a POSIX listing, checking every offset and length; yields each entry's information
/// and name.
pub fn posix_dir_list(buf: &[u8]) -> EntryIter<'_, (FilePosixInformation, String)> {
    EntryIter::new(
        buf,
        DIR_ALIGN,
        DIR_ENTRY_MIN,
        "PosixDirEntry",
        parse_dir_entry,
    )
}

fn parse_dir_entry(entry: &[u8]) -> Result<(FilePosixInformation, String)> {
    let mut r = Reader::new(entry);
    r.skip(8, "NextEntryOffset, FileIndex")?;
    let info = FilePosixInformation::read(&mut r)?;
    let name_len = r.u32("FileNameLength")?;
    Ok((info, read_utf16(&mut r, name_len, "FileName")?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_wire::FileTime;

    fn encoded(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        let mut buf = Vec::new();
        f(&mut Writer::new(&mut buf));
        buf
    }

    /// S-1-22-1-1000 and S-1-22-2-100: Samba's SIDs of Unix user 1000 and group 100.
    const OWNER: [u8; 16] = [1, 2, 0, 0, 0, 0, 0, 22, 1, 0, 0, 0, 0xE8, 3, 0, 0];
    const GROUP: [u8; 16] = [1, 2, 0, 0, 0, 0, 0, 22, 2, 0, 0, 0, 100, 0, 0, 0];

    fn cc() -> PosixCcInfo {
        PosixCcInfo {
            number_of_links: 1,
            reparse_tag: 0,
            mode: PosixMode::of_unix(0o100_640),
            owner: Sid::unix_user(1000),
            group: Sid::unix_group(100),
        }
    }

    #[test]
    fn modes_keep_permissions_in_place_and_the_type_above_them() {
        assert_eq!(PosixMode::of_unix(0o100_640).to_wire(), 0o640);
        assert_eq!(PosixMode::of_unix(0o040_755).to_wire(), 0x1000 | 0o755);
        assert_eq!(PosixMode::of_unix(0o120_777).to_wire(), 0x2000 | 0o777);
        assert_eq!(PosixMode::of_unix(0o104_755).to_wire(), 0o4755);
        assert_eq!(PosixMode::of_unix(0o140_700).to_wire(), 0x6000 | 0o700);
        for wire in [0o640, 0x1000 | 0o755, 0x6000 | 0o7777] {
            assert_eq!(PosixMode::from_wire(wire).unwrap().to_wire(), wire);
        }
        // A type the spec does not name, or bits above the type, are refused.
        assert!(PosixMode::from_wire(0x7000).is_err());
        assert!(PosixMode::from_wire(0x1_0000 | 0o644).is_err());
    }

    /// The create context response of a regular file 0640 owned by 1000:100 with one link, laid
    /// out field by field as the spec draws it.
    #[test]
    fn create_context_response_golden() {
        let mut expected = vec![1, 0, 0, 0, 0, 0, 0, 0, 0xA0, 0x01, 0, 0];
        expected.extend_from_slice(&OWNER);
        expected.extend_from_slice(&GROUP);
        let bytes = encoded(|w| cc().encode(w));
        assert_eq!(bytes, expected);
        assert_eq!(cc().encoded_len(), expected.len());
        assert_eq!(PosixCcInfo::decode(&bytes).unwrap(), cc());
    }

    #[test]
    fn file_posix_information_golden() {
        let info = FilePosixInformation {
            times: FileTimes {
                creation: FileTime(0x0102_0304_0506_0708),
                last_access: FileTime(0x1112_1314_1516_1718),
                last_write: FileTime(0x2122_2324_2526_2728),
                change: FileTime(0x3132_3334_3536_3738),
            },
            end_of_file: 5,
            allocation_size: 4096,
            file_attributes: 0x20,
            inode: 0xABCD,
            device: 0x803,
            cc: cc(),
        };
        let mut expected = Vec::new();
        for t in [
            0x0102_0304_0506_0708u64,
            0x1112_1314_1516_1718,
            0x2122_2324_2526_2728,
            0x3132_3334_3536_3738,
            5,
            4096,
        ] {
            expected.extend_from_slice(&t.to_le_bytes());
        }
        expected.extend_from_slice(&0x20u32.to_le_bytes());
        expected.extend_from_slice(&0xABCDu64.to_le_bytes());
        expected.extend_from_slice(&[3, 8, 0, 0, 0, 0, 0, 0]);
        expected.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 0xA0, 0x01, 0, 0]);
        expected.extend_from_slice(&OWNER);
        expected.extend_from_slice(&GROUP);
        assert_eq!(expected.len(), FilePosixInformation::FIXED_SIZE + 32);
        let bytes = encoded(|w| info.encode(w));
        assert_eq!(bytes, expected);
        assert_eq!(info.encoded_len(), expected.len());
        assert_eq!(FilePosixInformation::decode(&bytes).unwrap(), info);
    }

    /// Two SMB2_FIND_POSIX_INFORMATION entries: the first padded to 8 bytes with its
    /// NextEntryOffset pointing past the padding, the last with 0.
    #[test]
    fn directory_entries_golden() {
        let info = FilePosixInformation {
            times: FileTimes::default(),
            end_of_file: 0,
            allocation_size: 0,
            file_attributes: 0x10,
            inode: 7,
            device: 1,
            cc: PosixCcInfo {
                mode: PosixMode::of_unix(0o040_750),
                ..cc()
            },
        };
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        let mut list = PosixDirListEncoder::new(&w, 4096);
        assert!(list.is_empty());
        assert!(list.push(&mut w, &info, "d"));
        assert!(list.push(&mut w, &info, "ab"));
        // 12 + 80 + 32 + 2 = 126, padded to 128.
        let first = 12 + 80 + 32 + 2;
        assert_eq!(&buf[..4], &128u32.to_le_bytes());
        assert_eq!(&buf[4..8], &[0, 0, 0, 0]);
        assert_eq!(
            &buf[8 + 80 - 12 + 8..8 + 80 - 12 + 12],
            &(0x1000u32 | 0o750).to_le_bytes()
        );
        assert_eq!(&buf[first - 6..first], &[2, 0, 0, 0, b'd', 0]);
        assert_eq!(&buf[first..128], &[0, 0]);
        assert_eq!(buf.len(), 128 + 12 + 80 + 32 + 4);
        assert_eq!(&buf[128..132], &[0, 0, 0, 0]);
        let entries: Vec<_> = posix_dir_list(&buf).collect::<Result<_>>().unwrap();
        assert_eq!(entries, [(info, "d".to_owned()), (info, "ab".to_owned())]);
        // An entry that does not fit is not written.
        let mut small = Vec::new();
        let mut w = Writer::new(&mut small);
        let mut list = PosixDirListEncoder::new(&w, first - 1);
        assert!(!list.push(&mut w, &info, "d"));
        assert!(small.is_empty());
    }

    #[test]
    fn short_or_bad_sids_are_errors() {
        let bytes = encoded(|w| cc().encode(w));
        for cut in 0..bytes.len() {
            assert!(PosixCcInfo::decode(&bytes[..cut]).is_err(), "{cut}");
        }
        let mut bad = bytes.clone();
        bad[12] = 2; // SID revision 2 does not exist
        assert!(PosixCcInfo::decode(&bad).is_err());
    }
}
