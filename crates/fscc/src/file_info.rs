//! File information classes for QUERY_INFO and SET_INFO with SMB2_0_INFO_FILE (MS-FSCC 2.4).
//!
//! Each structure has `encode` (appends the wire form) and `decode` (parses it; bytes past the
//! structure are ignored, as MS-FSA does for oversized input buffers).

use smb3d_dtyp::AccessMask;
use smb3d_wire::{DecodeError, DecodeErrorKind, FileTimes, Reader, Result, Writer};

use crate::attributes::{
    CompressionFormat, DispositionFlags, FileAttributes, FileMode, LinkFlags, RenameFlags,
};
use crate::name::{read_len_utf16, write_len_utf16};

/// FILE_BASIC_INFORMATION (MS-FSCC 2.4, FileBasicInformation). In SET_INFO a time of 0 means
/// "unchanged" and -1 "stop updating" (see [`smb3d_wire::FileTime::UNCHANGED`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileBasicInformation {
    pub times: FileTimes,
    pub file_attributes: FileAttributes,
}

impl FileBasicInformation {
    /// Wire size.
    pub const SIZE: usize = 40;

    fn write(&self, w: &mut Writer<'_>) {
        w.file_times(self.times).u32(self.file_attributes.0).u32(0);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let v = Self {
            times: r.file_times()?,
            file_attributes: FileAttributes(r.u32("FileAttributes")?),
        };
        r.skip(4, "Reserved")?;
        Ok(v)
    }
}
whole_struct_codec!(FileBasicInformation);

/// FILE_STANDARD_INFORMATION (MS-FSCC 2.4, FileStandardInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileStandardInformation {
    pub allocation_size: u64,
    pub end_of_file: u64,
    pub number_of_links: u32,
    pub delete_pending: bool,
    pub directory: bool,
}

impl FileStandardInformation {
    /// Wire size.
    pub const SIZE: usize = 24;

    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.allocation_size)
            .u64(self.end_of_file)
            .u32(self.number_of_links)
            .u8(self.delete_pending.into())
            .u8(self.directory.into())
            .u16(0);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let v = Self {
            allocation_size: r.u64("AllocationSize")?,
            end_of_file: r.u64("EndOfFile")?,
            number_of_links: r.u32("NumberOfLinks")?,
            delete_pending: r.u8("DeletePending")? != 0,
            directory: r.u8("Directory")? != 0,
        };
        r.skip(2, "Reserved")?;
        Ok(v)
    }
}
whole_struct_codec!(FileStandardInformation);

macro_rules! single_field_struct {
    ($(#[$m:meta])* $name:ident { $field:ident: $ty:ty, $wire:literal, $get:ident, $put:ident, $size:literal }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name {
            pub $field: $ty,
        }

        impl $name {
            /// Wire size.
            pub const SIZE: usize = $size;

            fn write(&self, w: &mut Writer<'_>) {
                w.$put(self.$field.into());
            }

            fn read(r: &mut Reader<'_>) -> Result<Self> {
                Ok(Self { $field: r.$get($wire)?.into() })
            }
        }
        whole_struct_codec!($name);
    };
}

single_field_struct! {
    /// FILE_INTERNAL_INFORMATION (MS-FSCC 2.4, FileInternalInformation): the 64-bit file ID.
    FileInternalInformation { index_number: u64, "IndexNumber", u64, u64, 8 }
}
single_field_struct! {
    /// FILE_EA_INFORMATION (MS-FSCC 2.4, FileEaInformation).
    FileEaInformation { ea_size: u32, "EaSize", u32, u32, 4 }
}
single_field_struct! {
    /// FILE_POSITION_INFORMATION (MS-FSCC 2.4, FilePositionInformation). Negative offsets are
    /// invalid in SET_INFO (MS-FSA 2.1.5.14.11).
    FilePositionInformation { current_byte_offset: i64, "CurrentByteOffset", i64, i64, 8 }
}
single_field_struct! {
    /// FILE_ALIGNMENT_INFORMATION (MS-FSCC 2.4, FileAlignmentInformation).
    FileAlignmentInformation { alignment_requirement: u32, "AlignmentRequirement", u32, u32, 4 }
}
single_field_struct! {
    /// FILE_END_OF_FILE_INFORMATION (MS-FSCC 2.4, FileEndOfFileInformation). Negative values
    /// are invalid (MS-FSA 2.1.5.14.4).
    FileEndOfFileInformation { end_of_file: i64, "EndOfFile", i64, i64, 8 }
}
single_field_struct! {
    /// FILE_ALLOCATION_INFORMATION (MS-FSCC 2.4, FileAllocationInformation).
    FileAllocationInformation { allocation_size: i64, "AllocationSize", i64, i64, 8 }
}
single_field_struct! {
    /// FILE_VALID_DATA_LENGTH_INFORMATION (MS-FSCC 2.4, FileValidDataLengthInformation).
    FileValidDataLengthInformation { valid_data_length: i64, "ValidDataLength", i64, i64, 8 }
}

/// FILE_ACCESS_INFORMATION (MS-FSCC 2.4, FileAccessInformation): the open's granted access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileAccessInformation {
    pub access_flags: AccessMask,
}

impl FileAccessInformation {
    /// Wire size.
    pub const SIZE: usize = 4;

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.access_flags.0);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            access_flags: AccessMask(r.u32("AccessFlags")?),
        })
    }
}
whole_struct_codec!(FileAccessInformation);

/// FILE_MODE_INFORMATION (MS-FSCC 2.4, FileModeInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileModeInformation {
    pub mode: FileMode,
}

impl FileModeInformation {
    /// Wire size.
    pub const SIZE: usize = 4;

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.mode.0);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            mode: FileMode(r.u32("Mode")?),
        })
    }
}
whole_struct_codec!(FileModeInformation);

/// FILE_NAME_INFORMATION (MS-FSCC 2.4, FileNameInformation); the same layout serves
/// FileAlternateNameInformation and FileNormalizedNameInformation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileNameInformation {
    pub file_name: String,
}

impl FileNameInformation {
    /// Size of the fixed part (FileNameLength).
    pub const FIXED_SIZE: usize = 4;

    fn write(&self, w: &mut Writer<'_>) {
        write_len_utf16(w, &self.file_name);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            file_name: read_len_utf16(r, "FileName")?,
        })
    }
}
whole_struct_codec!(FileNameInformation);

/// FILE_ALL_INFORMATION (MS-FSCC 2.4, FileAllInformation): the other structures back to back
/// with no padding between them, the name last (100 fixed bytes, then the name).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileAllInformation {
    pub basic: FileBasicInformation,
    pub standard: FileStandardInformation,
    pub internal: FileInternalInformation,
    pub ea: FileEaInformation,
    pub access: FileAccessInformation,
    pub position: FilePositionInformation,
    pub mode: FileModeInformation,
    pub alignment: FileAlignmentInformation,
    pub name: FileNameInformation,
}

impl FileAllInformation {
    /// Size of everything before the name's characters.
    pub const FIXED_SIZE: usize = 100;

    fn write(&self, w: &mut Writer<'_>) {
        self.basic.write(w);
        self.standard.write(w);
        self.internal.write(w);
        self.ea.write(w);
        self.access.write(w);
        self.position.write(w);
        self.mode.write(w);
        self.alignment.write(w);
        self.name.write(w);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            basic: FileBasicInformation::read(r)?,
            standard: FileStandardInformation::read(r)?,
            internal: FileInternalInformation::read(r)?,
            ea: FileEaInformation::read(r)?,
            access: FileAccessInformation::read(r)?,
            position: FilePositionInformation::read(r)?,
            mode: FileModeInformation::read(r)?,
            alignment: FileAlignmentInformation::read(r)?,
            name: FileNameInformation::read(r)?,
        })
    }
}
whole_struct_codec!(FileAllInformation);

/// FILE_NETWORK_OPEN_INFORMATION (MS-FSCC 2.4, FileNetworkOpenInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileNetworkOpenInformation {
    pub times: FileTimes,
    pub allocation_size: u64,
    pub end_of_file: u64,
    pub file_attributes: FileAttributes,
}

impl FileNetworkOpenInformation {
    /// Wire size.
    pub const SIZE: usize = 56;

    fn write(&self, w: &mut Writer<'_>) {
        w.file_times(self.times)
            .u64(self.allocation_size)
            .u64(self.end_of_file)
            .u32(self.file_attributes.0)
            .u32(0);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let v = Self {
            times: r.file_times()?,
            allocation_size: r.u64("AllocationSize")?,
            end_of_file: r.u64("EndOfFile")?,
            file_attributes: FileAttributes(r.u32("FileAttributes")?),
        };
        r.skip(4, "Reserved")?;
        Ok(v)
    }
}
whole_struct_codec!(FileNetworkOpenInformation);

/// FILE_ATTRIBUTE_TAG_INFORMATION (MS-FSCC 2.4, FileAttributeTagInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileAttributeTagInformation {
    pub file_attributes: FileAttributes,
    pub reparse_tag: u32,
}

impl FileAttributeTagInformation {
    /// Wire size.
    pub const SIZE: usize = 8;

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.file_attributes.0).u32(self.reparse_tag);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            file_attributes: FileAttributes(r.u32("FileAttributes")?),
            reparse_tag: r.u32("ReparseTag")?,
        })
    }
}
whole_struct_codec!(FileAttributeTagInformation);

/// FILE_COMPRESSION_INFORMATION (MS-FSCC 2.4, FileCompressionInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileCompressionInformation {
    pub compressed_file_size: u64,
    pub compression_format: CompressionFormat,
    pub compression_unit_shift: u8,
    pub chunk_shift: u8,
    pub cluster_shift: u8,
}

impl FileCompressionInformation {
    /// Wire size.
    pub const SIZE: usize = 16;

    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.compressed_file_size)
            .u16(self.compression_format.0)
            .u8(self.compression_unit_shift)
            .u8(self.chunk_shift)
            .u8(self.cluster_shift)
            .zeros(3);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let v = Self {
            compressed_file_size: r.u64("CompressedFileSize")?,
            compression_format: CompressionFormat(r.u16("CompressionFormat")?),
            compression_unit_shift: r.u8("CompressionUnitShift")?,
            chunk_shift: r.u8("ChunkShift")?,
            cluster_shift: r.u8("ClusterShift")?,
        };
        r.skip(3, "Reserved")?;
        Ok(v)
    }
}
whole_struct_codec!(FileCompressionInformation);

/// FILE_DISPOSITION_INFORMATION (MS-FSCC 2.4, FileDispositionInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileDispositionInformation {
    pub delete_pending: bool,
}

impl FileDispositionInformation {
    /// Wire size.
    pub const SIZE: usize = 1;

    fn write(&self, w: &mut Writer<'_>) {
        w.u8(self.delete_pending.into());
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            delete_pending: r.u8("DeletePending")? != 0,
        })
    }
}
whole_struct_codec!(FileDispositionInformation);

/// FILE_DISPOSITION_INFORMATION_EX (MS-FSCC 2.4, FileDispositionInformationEx).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileDispositionInformationEx {
    pub flags: DispositionFlags,
}

impl FileDispositionInformationEx {
    /// Wire size.
    pub const SIZE: usize = 4;

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.flags.0);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            flags: DispositionFlags(r.u32("Flags")?),
        })
    }
}
whole_struct_codec!(FileDispositionInformationEx);

/// FILE_RENAME_INFORMATION_TYPE_2 (MS-FSCC 2.4, FileRenameInformation for SMB2):
/// ReplaceIfExists, 7 reserved bytes, RootDirectory (zero over the network), FileNameLength,
/// FileName. FileLinkInformation has the same layout.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileRenameInformation {
    pub replace_if_exists: bool,
    pub root_directory: u64,
    pub file_name: String,
}

/// FILE_LINK_INFORMATION_TYPE_2 (MS-FSCC 2.4, FileLinkInformation for SMB2): the layout of
/// [`FileRenameInformation`], naming the new link.
pub type FileLinkInformation = FileRenameInformation;

impl FileRenameInformation {
    /// Size of the fixed part.
    pub const FIXED_SIZE: usize = 20;

    fn write(&self, w: &mut Writer<'_>) {
        w.u8(self.replace_if_exists.into())
            .zeros(7)
            .u64(self.root_directory);
        write_len_utf16(w, &self.file_name);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let replace_if_exists = r.u8("ReplaceIfExists")? != 0;
        r.skip(7, "Reserved")?;
        Ok(Self {
            replace_if_exists,
            root_directory: r.u64("RootDirectory")?,
            file_name: read_name(r)?,
        })
    }
}
whole_struct_codec!(FileRenameInformation);

/// An empty target name is malformed for rename and link (MS-FSA 2.1.5.14.11).
fn read_name(r: &mut Reader<'_>) -> Result<String> {
    let name = read_len_utf16(r, "FileName")?;
    if name.is_empty() {
        return Err(DecodeError::new("FileName", DecodeErrorKind::InvalidValue));
    }
    Ok(name)
}

/// FILE_RENAME_INFORMATION_EX (MS-FSCC 2.4, FileRenameInformationEx): Flags, 4 reserved bytes,
/// RootDirectory, FileNameLength, FileName.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileRenameInformationEx {
    pub flags: RenameFlags,
    pub root_directory: u64,
    pub file_name: String,
}

impl FileRenameInformationEx {
    /// Size of the fixed part.
    pub const FIXED_SIZE: usize = 20;

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.flags.0).zeros(4).u64(self.root_directory);
        write_len_utf16(w, &self.file_name);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let flags = RenameFlags(r.u32("Flags")?);
        r.skip(4, "Reserved")?;
        Ok(Self {
            flags,
            root_directory: r.u64("RootDirectory")?,
            file_name: read_name(r)?,
        })
    }
}
whole_struct_codec!(FileRenameInformationEx);

/// FILE_LINK_INFORMATION_EX (MS-FSCC 2.4, FileLinkInformationEx): the layout of
/// [`FileRenameInformationEx`] with link flags.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileLinkInformationEx {
    pub flags: LinkFlags,
    pub root_directory: u64,
    pub file_name: String,
}

impl FileLinkInformationEx {
    /// Size of the fixed part.
    pub const FIXED_SIZE: usize = 20;

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.flags.0).zeros(4).u64(self.root_directory);
        write_len_utf16(w, &self.file_name);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        let flags = LinkFlags(r.u32("Flags")?);
        r.skip(4, "Reserved")?;
        Ok(Self {
            flags,
            root_directory: r.u64("RootDirectory")?,
            file_name: read_name(r)?,
        })
    }
}
whole_struct_codec!(FileLinkInformationEx);

/// FILE_ID_INFORMATION (MS-FSCC 2.4, FileIdInformation): volume serial and 128-bit file ID.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileIdInformation {
    pub volume_serial_number: u64,
    pub file_id: [u8; 16],
}

impl FileIdInformation {
    /// Wire size.
    pub const SIZE: usize = 24;

    fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.volume_serial_number).bytes(&self.file_id);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            volume_serial_number: r.u64("VolumeSerialNumber")?,
            file_id: r.array("FileId")?,
        })
    }
}
whole_struct_codec!(FileIdInformation);

/// FILE_PIPE_INFORMATION (MS-FSCC 2.4, FilePipeInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FilePipeInformation {
    /// 0 byte stream, 1 message mode.
    pub read_mode: u32,
    /// 0 queue (blocking), 1 complete (non-blocking).
    pub completion_mode: u32,
}

impl FilePipeInformation {
    /// Wire size.
    pub const SIZE: usize = 8;

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.read_mode).u32(self.completion_mode);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            read_mode: r.u32("ReadMode")?,
            completion_mode: r.u32("CompletionMode")?,
        })
    }
}
whole_struct_codec!(FilePipeInformation);

/// FILE_PIPE_LOCAL_INFORMATION (MS-FSCC 2.4, FilePipeLocalInformation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FilePipeLocalInformation {
    pub named_pipe_type: u32,
    pub named_pipe_configuration: u32,
    pub maximum_instances: u32,
    pub current_instances: u32,
    pub inbound_quota: u32,
    pub read_data_available: u32,
    pub outbound_quota: u32,
    pub write_quota_available: u32,
    pub named_pipe_state: u32,
    pub named_pipe_end: u32,
}

impl FilePipeLocalInformation {
    /// Wire size.
    pub const SIZE: usize = 40;

    fn write(&self, w: &mut Writer<'_>) {
        w.u32(self.named_pipe_type)
            .u32(self.named_pipe_configuration)
            .u32(self.maximum_instances)
            .u32(self.current_instances)
            .u32(self.inbound_quota)
            .u32(self.read_data_available)
            .u32(self.outbound_quota)
            .u32(self.write_quota_available)
            .u32(self.named_pipe_state)
            .u32(self.named_pipe_end);
    }

    fn read(r: &mut Reader<'_>) -> Result<Self> {
        Ok(Self {
            named_pipe_type: r.u32("NamedPipeType")?,
            named_pipe_configuration: r.u32("NamedPipeConfiguration")?,
            maximum_instances: r.u32("MaximumInstances")?,
            current_instances: r.u32("CurrentInstances")?,
            inbound_quota: r.u32("InboundQuota")?,
            read_data_available: r.u32("ReadDataAvailable")?,
            outbound_quota: r.u32("OutboundQuota")?,
            write_quota_available: r.u32("WriteQuotaAvailable")?,
            named_pipe_state: r.u32("NamedPipeState")?,
            named_pipe_end: r.u32("NamedPipeEnd")?,
        })
    }
}
whole_struct_codec!(FilePipeLocalInformation);

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        let mut buf = Vec::new();
        f(&mut Writer::new(&mut buf));
        buf
    }

    #[test]
    fn rename_ex_layout() {
        // MS-FSCC FileRenameInformationEx: Flags, Reserved (4), RootDirectory (8),
        // FileNameLength, FileName.
        let bytes = [
            3, 0, 0, 0, 0xEE, 0xEE, 0xEE, 0xEE, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, b'n', 0, b'2',
            0,
        ];
        let v = FileRenameInformationEx::decode(&bytes).unwrap();
        assert_eq!(
            v,
            FileRenameInformationEx {
                flags: RenameFlags::REPLACE_IF_EXISTS | RenameFlags::POSIX_SEMANTICS,
                root_directory: 0,
                file_name: "n2".into(),
            }
        );
        // Reserved bytes are ignored on read and written as zero.
        let mut expected = bytes;
        expected[4..8].fill(0);
        assert_eq!(encoded(|w| v.encode(w)), expected);

        let link = FileLinkInformationEx::decode(&bytes).unwrap();
        assert_eq!(
            link.flags,
            LinkFlags::REPLACE_IF_EXISTS | LinkFlags::POSIX_SEMANTICS
        );
        assert_eq!(encoded(|w| link.encode(w)), expected);
    }

    #[test]
    fn rename_rejects_empty_and_overlong_names() {
        let mut bytes = vec![1u8, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF];
        bytes.extend_from_slice(&[0; 8]);
        bytes.extend_from_slice(&[0, 0, 0, 0]);
        let e = FileRenameInformation::decode(&bytes).unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::InvalidValue);
        bytes[16] = 4;
        bytes.extend_from_slice(&[b'a', 0]);
        let e = FileRenameInformation::decode(&bytes).unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::Truncated);
        bytes.extend_from_slice(&[b'b', 0]);
        let v = FileRenameInformation::decode(&bytes).unwrap();
        assert!(v.replace_if_exists);
        assert_eq!(v.file_name, "ab");
        bytes[16] = 0xFF;
        bytes[19] = 0xFF;
        assert!(FileRenameInformation::decode(&bytes).is_err());
    }

    #[test]
    fn disposition_ex_id_and_pipe_layouts() {
        let d = FileDispositionInformationEx::decode(&[0x13, 0, 0, 0]).unwrap();
        assert_eq!(
            d.flags,
            DispositionFlags::DELETE
                | DispositionFlags::POSIX_SEMANTICS
                | DispositionFlags::IGNORE_READONLY_ATTRIBUTE
        );
        assert_eq!(encoded(|w| d.encode(w)), [0x13, 0, 0, 0]);

        let id = FileIdInformation {
            volume_serial_number: 0x0102_0304_0506_0708,
            file_id: *b"0123456789abcdef",
        };
        let bytes = encoded(|w| id.encode(w));
        assert_eq!(bytes.len(), FileIdInformation::SIZE);
        assert_eq!(&bytes[..8], &[8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(FileIdInformation::decode(&bytes).unwrap(), id);

        let pipe = FilePipeLocalInformation {
            named_pipe_type: 1,
            named_pipe_end: 1,
            maximum_instances: 0xFFFF_FFFF,
            ..Default::default()
        };
        let bytes = encoded(|w| pipe.encode(w));
        assert_eq!(bytes.len(), FilePipeLocalInformation::SIZE);
        assert_eq!(FilePipeLocalInformation::decode(&bytes).unwrap(), pipe);
        let p = FilePipeInformation::decode(&[1, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!((p.read_mode, p.completion_mode), (1, 0));
        assert_eq!(
            FileValidDataLengthInformation::decode(&[9, 0, 0, 0, 0, 0, 0, 0x80])
                .unwrap()
                .valid_data_length,
            i64::MIN + 9
        );
    }

    #[test]
    fn short_buffers_are_truncated_errors() {
        assert_eq!(
            FileBasicInformation::decode(&[0; 39]).unwrap_err().kind,
            DecodeErrorKind::Truncated
        );
        assert!(FileBasicInformation::decode(&[0; 40]).is_ok());
        assert!(FileDispositionInformation::decode(&[]).is_err());
        assert!(FileAllInformation::decode(&[0; 99]).is_err());
        assert!(FileAllInformation::decode(&[0; 100]).is_ok());
        let mut with_name = vec![0u8; 100];
        with_name[96] = 2;
        assert!(FileAllInformation::decode(&with_name).is_err());
    }
}
