//! FSCTL input and output structures (MS-FSCC 2.3) the server answers: pipes, block cloning,
//! sparse files, reparse points (2.1.2), object ids (2.1.3), integrity, trim and compression.
//!
//! Decoders take the IOCTL input as sent and never read past it; arrays are bounded by the
//! bytes present, never by a count alone.

use smb3d_wire::{DecodeError, Guid, Reader, Result, Writer};

use crate::name::{read_utf16, utf16_len_u32};

/// FSCTL_PIPE_PEEK reply (MS-FSCC 2.3.46): the pipe's state, what is queued, and the start of
/// the next message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FilePipePeekReply<'a> {
    pub named_pipe_state: u32,
    pub read_data_available: u32,
    pub number_of_messages: u32,
    pub message_length: u32,
    pub data: &'a [u8],
}

impl<'a> FilePipePeekReply<'a> {
    /// Size of the fields before Data.
    pub const HEADER_LEN: usize = 16;
    /// FILE_PIPE_CONNECTED_STATE.
    pub const CONNECTED: u32 = 3;

    /// Appends the wire form.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u32(self.named_pipe_state)
            .u32(self.read_data_available)
            .u32(self.number_of_messages)
            .u32(self.message_length)
            .bytes(self.data);
    }

    /// Parses the wire form; Data is the rest of the buffer.
    pub fn decode(buf: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        Ok(Self {
            named_pipe_state: r.u32("NamedPipeState")?,
            read_data_available: r.u32("ReadDataAvailable")?,
            number_of_messages: r.u32("NumberOfMessages")?,
            message_length: r.u32("MessageLength")?,
            data: r.rest(),
        })
    }
}

/// FSCTL_PIPE_WAIT request (MS-FSCC 2.3.49): the pipe to wait for, without `\PIPE\`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePipeWaitRequest {
    /// In 100-ns units, negative for relative, when `timeout_specified`.
    pub timeout: i64,
    pub timeout_specified: bool,
    pub name: String,
}

impl FilePipeWaitRequest {
    /// Appends the wire form.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.i64(self.timeout)
            .u32(utf16_len_u32(&self.name))
            .u8(self.timeout_specified.into())
            .u8(0);
        w.utf16(&self.name);
    }

    /// Parses the wire form; NameLength must lie within the buffer.
    pub fn decode(buf: &[u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        let timeout = r.i64("Timeout")?;
        let len = r.u32("NameLength")?;
        let timeout_specified = r.u8("TimeoutSpecified")? != 0;
        r.skip(1, "Padding")?;
        let name = read_utf16(&mut r, len, "Name")?;
        Ok(Self {
            timeout,
            timeout_specified,
            name,
        })
    }
}

/// SMB2_DUPLICATE_EXTENTS_DATA (MS-FSCC 2.3.7.2) and SMB2_DUPLICATE_EXTENTS_DATA_EX (2.3.9.2):
/// clone `byte_count` bytes of the source open at `source_offset` to the target at
/// `target_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DuplicateExtents {
    /// The source open's SMB2_FILEID: persistent, then volatile.
    pub source_file_id: (u64, u64),
    pub source_offset: i64,
    pub target_offset: i64,
    pub byte_count: i64,
    /// DUPLICATE_EXTENTS_DATA_EX_SOURCE_ATOMIC and the like (the _EX form only).
    pub flags: u32,
}

impl DuplicateExtents {
    /// Size of the plain form.
    pub const LEN: usize = 40;
    /// StructureSize of the _EX form, as MS-FSCC 2.3.9.2 requires.
    pub const EX_STRUCTURE_SIZE: u64 = 0x30;
    /// DUPLICATE_EXTENTS_DATA_EX_SOURCE_ATOMIC.
    pub const SOURCE_ATOMIC: u32 = 1;

    fn write_body(&self, w: &mut Writer<'_>) {
        w.u64(self.source_file_id.0)
            .u64(self.source_file_id.1)
            .i64(self.source_offset)
            .i64(self.target_offset)
            .i64(self.byte_count);
    }

    fn read_body(r: &mut Reader<'_>, flags: u32) -> Result<Self> {
        Ok(Self {
            source_file_id: (r.u64("SourceFileID")?, r.u64("SourceFileID")?),
            source_offset: r.i64("SourceFileOffset")?,
            target_offset: r.i64("TargetFileOffset")?,
            byte_count: r.i64("ByteCount")?,
            flags,
        })
    }

    /// Appends SMB2_DUPLICATE_EXTENTS_DATA.
    pub fn encode(&self, w: &mut Writer<'_>) {
        self.write_body(w);
    }

    /// Parses SMB2_DUPLICATE_EXTENTS_DATA.
    pub fn decode(buf: &[u8]) -> Result<Self> {
        Self::read_body(&mut Reader::new(buf), 0)
    }

    /// Appends SMB2_DUPLICATE_EXTENTS_DATA_EX.
    pub fn encode_ex(&self, w: &mut Writer<'_>) {
        w.u64(Self::EX_STRUCTURE_SIZE);
        self.write_body(w);
        w.u32(self.flags).u32(0);
    }

    /// Parses SMB2_DUPLICATE_EXTENTS_DATA_EX; StructureSize must be 0x30.
    pub fn decode_ex(buf: &[u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        if r.u64("StructureSize")? != Self::EX_STRUCTURE_SIZE {
            return Err(DecodeError::invalid("StructureSize"));
        }
        let mut body = Reader::new(r.bytes(Self::LEN, "Body")?);
        let flags = r.u32("Flags")?;
        r.skip(4, "Reserved")?;
        Self::read_body(&mut body, flags)
    }
}

/// FILE_SET_SPARSE_BUFFER (MS-FSCC 2.3.64): a missing buffer means "set".
pub fn decode_set_sparse(buf: &[u8]) -> Result<bool> {
    match buf.first() {
        None => Ok(true),
        Some(&flag) => Ok(flag != 0),
    }
}

/// FILE_ZERO_DATA_INFORMATION (MS-FSCC 2.3.85): zero `file_offset..beyond_final_zero`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileZeroDataInformation {
    pub file_offset: i64,
    pub beyond_final_zero: i64,
}

impl FileZeroDataInformation {
    /// Wire size.
    pub const LEN: usize = 16;

    /// Appends the wire form.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.i64(self.file_offset).i64(self.beyond_final_zero);
    }

    /// Parses the wire form.
    pub fn decode(buf: &[u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        Ok(Self {
            file_offset: r.i64("FileOffset")?,
            beyond_final_zero: r.i64("BeyondFinalZero")?,
        })
    }
}

/// FILE_ALLOCATED_RANGE_BUFFER (MS-FSCC 2.3.52): the range FSCTL_QUERY_ALLOCATED_RANGES asks
/// about, and each allocated range of its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileAllocatedRange {
    pub file_offset: i64,
    pub length: i64,
}

impl FileAllocatedRange {
    /// Wire size.
    pub const LEN: usize = 16;

    /// Appends the wire form.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.i64(self.file_offset).i64(self.length);
    }

    /// Parses the wire form.
    pub fn decode(buf: &[u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        Ok(Self {
            file_offset: r.i64("FileOffset")?,
            length: r.i64("Length")?,
        })
    }
}

smb3d_wire::open_enum! {
    /// Reparse tags (MS-FSCC 2.1.2.1) the server treats specially.
    pub struct ReparseTag(u32) {
        SYMLINK = 0xA000_000C,
        MOUNT_POINT = 0xA000_0003,
        NFS = 0x8000_0014,
        LX_SYMLINK = 0xA000_001D,
    }
}

impl ReparseTag {
    /// Microsoft tags (bit 31) carry no GUID (MS-FSCC 2.1.2.1, 2.1.2.3).
    pub fn is_microsoft(self) -> bool {
        self.0 & 0x8000_0000 != 0
    }
}

/// A reparse point as FSCTL_SET/GET/DELETE_REPARSE_POINT carry it: REPARSE_DATA_BUFFER (MS-FSCC
/// 2.1.2.2) for Microsoft tags, REPARSE_GUID_DATA_BUFFER (2.1.2.3) for others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReparseBuffer<'a> {
    pub tag: ReparseTag,
    /// The GUID of a non-Microsoft tag.
    pub guid: Option<Guid>,
    /// The tag-specific data (empty for DELETE_REPARSE_POINT).
    pub data: &'a [u8],
}

impl<'a> ReparseBuffer<'a> {
    /// ReparseTag, ReparseDataLength and Reserved.
    pub const HEADER_LEN: usize = 8;
    /// The most data a reparse point holds (MAXIMUM_REPARSE_DATA_BUFFER_SIZE is 16 KiB with
    /// the header).
    pub const MAX_DATA_LEN: usize = 16 * 1024 - Self::HEADER_LEN;

    /// Parses the buffer; ReparseDataLength must match the data present.
    pub fn decode(buf: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        let tag = ReparseTag(r.u32("ReparseTag")?);
        let len = usize::from(r.u16("ReparseDataLength")?);
        r.skip(2, "Reserved")?;
        let guid = if tag.is_microsoft() {
            None
        } else {
            Some(r.guid("ReparseGuid")?)
        };
        let data = r.bytes(len, "DataBuffer")?;
        Ok(Self { tag, guid, data })
    }

    /// Appends the wire form.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u32(self.tag.0)
            .u16(u16::try_from(self.data.len()).unwrap_or(u16::MAX))
            .u16(0);
        if let Some(guid) = &self.guid {
            w.guid(guid);
        }
        w.bytes(self.data);
    }

    /// Size of the wire form.
    pub fn encoded_len(&self) -> usize {
        Self::HEADER_LEN + if self.guid.is_some() { 16 } else { 0 } + self.data.len()
    }
}

/// The data of an IO_REPARSE_TAG_SYMLINK reparse point (MS-FSCC 2.1.2.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymlinkReparse {
    /// The target as the file system resolves it (`\??\C:\x` for absolute ones).
    pub substitute_name: String,
    /// The target as shown to users.
    pub print_name: String,
    /// The target is relative to the link's directory (SYMLINK_FLAG_RELATIVE).
    pub relative: bool,
}

impl SymlinkReparse {
    /// SYMLINK_FLAG_RELATIVE.
    const FLAG_RELATIVE: u32 = 1;
    /// The fields before PathBuffer.
    const FIXED_LEN: usize = 12;

    /// Parses the symlink data; both names must lie within PathBuffer.
    pub fn decode(data: &[u8]) -> Result<Self> {
        let mut r = Reader::new(data);
        let substitute_offset = usize::from(r.u16("SubstituteNameOffset")?);
        let substitute_len = usize::from(r.u16("SubstituteNameLength")?);
        let print_offset = usize::from(r.u16("PrintNameOffset")?);
        let print_len = usize::from(r.u16("PrintNameLength")?);
        let flags = r.u32("Flags")?;
        let path = Reader::new(r.rest());
        let name = |offset: usize, len: usize, field| {
            smb3d_wire::decode_utf16le(path.buffer_at(offset, len, field)?, field)
        };
        Ok(Self {
            substitute_name: name(substitute_offset, substitute_len, "SubstituteName")?,
            print_name: name(print_offset, print_len, "PrintName")?,
            relative: flags & Self::FLAG_RELATIVE != 0,
        })
    }

    /// Appends the symlink data: the substitute name, then the print name.
    pub fn encode(&self, w: &mut Writer<'_>) {
        let substitute = smb3d_wire::utf16le_len(&self.substitute_name);
        let print = smb3d_wire::utf16le_len(&self.print_name);
        let len16 = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
        w.u16(0)
            .u16(len16(substitute))
            .u16(len16(substitute))
            .u16(len16(print))
            .u32(if self.relative {
                Self::FLAG_RELATIVE
            } else {
                0
            });
        w.utf16(&self.substitute_name);
        w.utf16(&self.print_name);
    }

    /// Size of the encoded data.
    pub fn encoded_len(&self) -> usize {
        Self::FIXED_LEN
            + smb3d_wire::utf16le_len(&self.substitute_name)
            + smb3d_wire::utf16le_len(&self.print_name)
    }
}

/// FILE_OBJECTID_BUFFER (MS-FSCC 2.1.3.1): an object id with its three extended-information
/// GUIDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileObjectIdBuffer {
    pub object_id: Guid,
    pub birth_volume_id: Guid,
    pub birth_object_id: Guid,
    pub domain_id: Guid,
}

impl FileObjectIdBuffer {
    /// Wire size.
    pub const LEN: usize = 64;

    /// Appends the wire form.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.guid(&self.object_id)
            .guid(&self.birth_volume_id)
            .guid(&self.birth_object_id)
            .guid(&self.domain_id);
    }

    /// Parses the wire form.
    pub fn decode(buf: &[u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        Ok(Self {
            object_id: r.guid("ObjectId")?,
            birth_volume_id: r.guid("BirthVolumeId")?,
            birth_object_id: r.guid("BirthObjectId")?,
            domain_id: r.guid("DomainId")?,
        })
    }
}

/// FSCTL_GET_INTEGRITY_INFORMATION_BUFFER (MS-FSCC 2.3.21).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntegrityInformation {
    /// CHECKSUM_TYPE_NONE (0) or CHECKSUM_TYPE_CRC64 (2).
    pub checksum_algorithm: u16,
    /// FSCTL_INTEGRITY_FLAG_CHECKSUM_ENFORCEMENT_OFF (1).
    pub flags: u32,
    pub checksum_chunk_size: u32,
    pub cluster_size: u32,
}

impl IntegrityInformation {
    /// Wire size.
    pub const LEN: usize = 16;

    /// Appends the wire form.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(self.checksum_algorithm)
            .u16(0)
            .u32(self.flags)
            .u32(self.checksum_chunk_size)
            .u32(self.cluster_size);
    }

    /// Parses the wire form.
    pub fn decode(buf: &[u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        let checksum_algorithm = r.u16("ChecksumAlgorithm")?;
        r.skip(2, "Reserved")?;
        Ok(Self {
            checksum_algorithm,
            flags: r.u32("Flags")?,
            checksum_chunk_size: r.u32("ChecksumChunkSizeInBytes")?,
            cluster_size: r.u32("ClusterSizeInBytes")?,
        })
    }
}

/// FSCTL_SET_INTEGRITY_INFORMATION_BUFFER (MS-FSCC 2.3.71): the checksum algorithm asked for.
pub fn decode_set_integrity(buf: &[u8]) -> Result<(u16, u32)> {
    let mut r = Reader::new(buf);
    let algorithm = r.u16("ChecksumAlgorithm")?;
    r.skip(2, "Reserved")?;
    Ok((algorithm, r.u32("Flags")?))
}

/// FILE_LEVEL_TRIM (MS-FSCC 2.3.16): ranges the caller no longer needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileLevelTrim<'a> {
    pub key: u32,
    ranges: &'a [u8],
}

impl<'a> FileLevelTrim<'a> {
    /// Size of one FILE_LEVEL_TRIM_RANGE.
    const RANGE_LEN: usize = 16;

    /// Parses the header; NumRanges ranges must be present.
    pub fn decode(buf: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        let key = r.u32("Key")?;
        let count = r.u32("NumRanges")? as usize;
        let len = count
            .checked_mul(Self::RANGE_LEN)
            .ok_or_else(|| DecodeError::invalid("NumRanges"))?;
        Ok(Self {
            key,
            ranges: r.bytes(len, "Ranges")?,
        })
    }

    /// The ranges as (offset, length).
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + 'a {
        self.ranges.chunks_exact(Self::RANGE_LEN).filter_map(|c| {
            let mut r = Reader::new(c);
            Some((r.u64("Offset").ok()?, r.u64("Length").ok()?))
        })
    }

    /// Number of ranges.
    pub fn len(&self) -> usize {
        self.ranges.len() / Self::RANGE_LEN
    }

    /// Whether there are no ranges.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Appends FILE_LEVEL_TRIM with `ranges`.
    pub fn encode(key: u32, ranges: &[(u64, u64)], w: &mut Writer<'_>) {
        w.u32(key)
            .u32(u32::try_from(ranges.len()).unwrap_or(u32::MAX));
        for (offset, length) in ranges {
            w.u64(*offset).u64(*length);
        }
    }
}

/// COMPRESSION_FORMAT_* of FSCTL_GET/SET_COMPRESSION (MS-FSCC 2.3.12, 2.3.67): a USHORT.
pub fn decode_compression_state(buf: &[u8]) -> Result<u16> {
    Reader::new(buf).u16("CompressionState")
}

smb3d_wire::impl_codec!(
    FilePipePeekReply<'a>,
    FilePipeWaitRequest,
    DuplicateExtents,
    FileZeroDataInformation,
    FileAllocatedRange,
    ReparseBuffer<'a>,
    SymlinkReparse,
    FileObjectIdBuffer,
    IntegrityInformation,
);

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        let mut out = Vec::new();
        f(&mut Writer::new(&mut out));
        out
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn pipe_peek_reply() {
        let reply = FilePipePeekReply {
            named_pipe_state: FilePipePeekReply::CONNECTED,
            read_data_available: 0x74,
            number_of_messages: 1,
            message_length: 0x74,
            data: b"\x05\x00",
        };
        let bytes = encoded(|w| reply.encode(w));
        assert_eq!(bytes, hex("03000000 74000000 01000000 74000000 0500"));
        assert_eq!(FilePipePeekReply::decode(&bytes).unwrap(), reply);
        assert!(FilePipePeekReply::decode(&bytes[..15]).is_err());
    }

    #[test]
    fn pipe_wait_request() {
        // MS-FSCC 2.3.49 layout: Timeout, NameLength, TimeoutSpecified, Padding, Name.
        let bytes = hex("0000000000000000 0c000000 00 00 730072007600730076006300");
        let req = FilePipeWaitRequest::decode(&bytes).unwrap();
        assert_eq!(req.name, "srvsvc");
        assert!(!req.timeout_specified);
        assert_eq!(encoded(|w| req.encode(w)), bytes);
        // A name longer than the buffer.
        let mut bad = bytes.clone();
        bad[8] = 0x0e;
        assert!(FilePipeWaitRequest::decode(&bad).is_err());
        bad[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(FilePipeWaitRequest::decode(&bad).is_err());
    }

    #[test]
    fn duplicate_extents_both_forms() {
        let dup = DuplicateExtents {
            source_file_id: (0x1122, 0x3344),
            source_offset: 0x10000,
            target_offset: 0,
            byte_count: 0x20000,
            flags: 0,
        };
        let plain = encoded(|w| dup.encode(w));
        assert_eq!(plain.len(), DuplicateExtents::LEN);
        assert_eq!(DuplicateExtents::decode(&plain).unwrap(), dup);
        assert!(DuplicateExtents::decode(&plain[..39]).is_err());

        let atomic = DuplicateExtents {
            flags: DuplicateExtents::SOURCE_ATOMIC,
            ..dup
        };
        let ex = encoded(|w| atomic.encode_ex(w));
        assert_eq!(&ex[..8], &hex("3000000000000000")[..]);
        assert_eq!(ex.len(), 56);
        assert_eq!(DuplicateExtents::decode_ex(&ex).unwrap(), atomic);
        let mut bad = ex.clone();
        bad[0] = 0x38;
        assert!(DuplicateExtents::decode_ex(&bad).is_err());
        assert!(DuplicateExtents::decode_ex(&ex[..52]).is_err());
    }

    #[test]
    fn sparse_zero_and_ranges() {
        assert!(decode_set_sparse(&[]).unwrap());
        assert!(decode_set_sparse(&[1]).unwrap());
        assert!(!decode_set_sparse(&[0]).unwrap());
        let zero = FileZeroDataInformation {
            file_offset: 4096,
            beyond_final_zero: 8192,
        };
        let bytes = encoded(|w| zero.encode(w));
        assert_eq!(bytes, hex("0010000000000000 0020000000000000"));
        assert_eq!(FileZeroDataInformation::decode(&bytes).unwrap(), zero);
        assert!(FileZeroDataInformation::decode(&bytes[..15]).is_err());
        let range = FileAllocatedRange {
            file_offset: 0,
            length: 1024,
        };
        let bytes = encoded(|w| range.encode(w));
        assert_eq!(FileAllocatedRange::decode(&bytes).unwrap(), range);
    }

    // FSCTL_SET_REPARSE_POINT input of `smbclient -m SMB3_11 -c 'symlink target link1'`
    // (Samba 4.17), captured on loopback: a relative symlink to "target".
    const SYMLINK_REPARSE: &str = "0c0000a0 2400 0000 0000 0c00 0c00 0c00 01000000
        740061007200670065007400 740061007200670065007400";

    #[test]
    fn symlink_reparse_point() {
        let bytes = hex(SYMLINK_REPARSE);
        let buffer = ReparseBuffer::decode(&bytes).unwrap();
        assert_eq!(buffer.tag, ReparseTag::SYMLINK);
        assert_eq!(buffer.guid, None);
        let link = SymlinkReparse::decode(buffer.data).unwrap();
        assert_eq!(link.substitute_name, "target");
        assert_eq!(link.print_name, "target");
        assert!(link.relative);
        let again = encoded(|w| {
            ReparseBuffer {
                data: &encoded(|w| link.encode(w)),
                ..buffer
            }
            .encode(w)
        });
        assert_eq!(again, bytes);

        let link = SymlinkReparse {
            substitute_name: "dir\\file".into(),
            print_name: "dir\\file".into(),
            relative: true,
        };
        let data = encoded(|w| link.encode(w));
        assert_eq!(data.len(), link.encoded_len());
        assert_eq!(SymlinkReparse::decode(&data).unwrap(), link);
        let buffer = ReparseBuffer {
            tag: ReparseTag::SYMLINK,
            guid: None,
            data: &data,
        };
        let bytes = encoded(|w| buffer.encode(w));
        assert_eq!(bytes.len(), buffer.encoded_len());
        assert_eq!(ReparseBuffer::decode(&bytes).unwrap(), buffer);

        // Names outside PathBuffer, and a data length beyond the buffer.
        let mut bad = data.clone();
        bad[0] = 0x40;
        assert!(SymlinkReparse::decode(&bad).is_err());
        let mut bad = bytes.clone();
        bad[4] = 0xff;
        assert!(ReparseBuffer::decode(&bad).is_err());
    }

    #[test]
    fn guid_reparse_point() {
        let guid = Guid([7; 16]);
        let buffer = ReparseBuffer {
            tag: ReparseTag(0x0000_1234),
            guid: Some(guid),
            data: b"abc",
        };
        let bytes = encoded(|w| buffer.encode(w));
        assert_eq!(&bytes[..8], &hex("34120000 0300 0000")[..]);
        assert_eq!(bytes.len(), 8 + 16 + 3);
        assert_eq!(ReparseBuffer::decode(&bytes).unwrap(), buffer);
        assert!(ReparseBuffer::decode(&bytes[..20]).is_err());
    }

    #[test]
    fn object_id_integrity_trim_compression() {
        let id = FileObjectIdBuffer {
            object_id: Guid([1; 16]),
            birth_volume_id: Guid([2; 16]),
            birth_object_id: Guid([1; 16]),
            domain_id: Guid::ZERO,
        };
        let bytes = encoded(|w| id.encode(w));
        assert_eq!(bytes.len(), FileObjectIdBuffer::LEN);
        assert_eq!(FileObjectIdBuffer::decode(&bytes).unwrap(), id);
        assert!(FileObjectIdBuffer::decode(&bytes[..63]).is_err());

        let info = IntegrityInformation {
            checksum_algorithm: 0,
            flags: 0,
            checksum_chunk_size: 4096,
            cluster_size: 4096,
        };
        let bytes = encoded(|w| info.encode(w));
        assert_eq!(bytes, hex("0000 0000 00000000 00100000 00100000"));
        assert_eq!(IntegrityInformation::decode(&bytes).unwrap(), info);
        assert_eq!(
            decode_set_integrity(&hex("0200 0000 01000000")).unwrap(),
            (2, 1)
        );

        let bytes = encoded(|w| FileLevelTrim::encode(9, &[(0, 4096), (8192, 512)], w));
        let trim = FileLevelTrim::decode(&bytes).unwrap();
        assert_eq!(trim.key, 9);
        assert_eq!(trim.len(), 2);
        assert_eq!(trim.ranges().collect::<Vec<_>>(), [(0, 4096), (8192, 512)]);
        // A count the bytes do not hold, and one that overflows.
        let mut bad = bytes.clone();
        bad[4] = 3;
        assert!(FileLevelTrim::decode(&bad).is_err());
        bad[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(FileLevelTrim::decode(&bad).is_err());

        assert_eq!(decode_compression_state(&[2, 0]).unwrap(), 2);
        assert!(decode_compression_state(&[2]).is_err());
    }
}
