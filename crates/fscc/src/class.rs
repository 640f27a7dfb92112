use smb3d_dtyp::NtStatus;

smb3d_wire::open_enum! {
    /// FILE_INFORMATION_CLASS values (MS-FSCC 2.4).
    pub struct FileInformationClass(u8) {
        FILE_DIRECTORY_INFORMATION = 1,
        FILE_FULL_DIRECTORY_INFORMATION = 2,
        FILE_BOTH_DIRECTORY_INFORMATION = 3,
        FILE_BASIC_INFORMATION = 4,
        FILE_STANDARD_INFORMATION = 5,
        FILE_INTERNAL_INFORMATION = 6,
        FILE_EA_INFORMATION = 7,
        FILE_ACCESS_INFORMATION = 8,
        FILE_NAME_INFORMATION = 9,
        FILE_RENAME_INFORMATION = 10,
        FILE_LINK_INFORMATION = 11,
        FILE_NAMES_INFORMATION = 12,
        FILE_DISPOSITION_INFORMATION = 13,
        FILE_POSITION_INFORMATION = 14,
        FILE_FULL_EA_INFORMATION = 15,
        FILE_MODE_INFORMATION = 16,
        FILE_ALIGNMENT_INFORMATION = 17,
        FILE_ALL_INFORMATION = 18,
        FILE_ALLOCATION_INFORMATION = 19,
        FILE_END_OF_FILE_INFORMATION = 20,
        FILE_ALTERNATE_NAME_INFORMATION = 21,
        FILE_STREAM_INFORMATION = 22,
        FILE_PIPE_INFORMATION = 23,
        FILE_PIPE_LOCAL_INFORMATION = 24,
        FILE_PIPE_REMOTE_INFORMATION = 25,
        FILE_MAILSLOT_QUERY_INFORMATION = 26,
        FILE_MAILSLOT_SET_INFORMATION = 27,
        FILE_COMPRESSION_INFORMATION = 28,
        FILE_OBJECT_ID_INFORMATION = 29,
        FILE_COMPLETION_INFORMATION = 30,
        FILE_MOVE_CLUSTER_INFORMATION = 31,
        FILE_QUOTA_INFORMATION = 32,
        FILE_REPARSE_POINT_INFORMATION = 33,
        FILE_NETWORK_OPEN_INFORMATION = 34,
        FILE_ATTRIBUTE_TAG_INFORMATION = 35,
        FILE_TRACKING_INFORMATION = 36,
        FILE_ID_BOTH_DIRECTORY_INFORMATION = 37,
        FILE_ID_FULL_DIRECTORY_INFORMATION = 38,
        FILE_VALID_DATA_LENGTH_INFORMATION = 39,
        FILE_SHORT_NAME_INFORMATION = 40,
        FILE_IO_COMPLETION_NOTIFICATION_INFORMATION = 41,
        FILE_IO_STATUS_BLOCK_RANGE_INFORMATION = 42,
        FILE_IO_PRIORITY_HINT_INFORMATION = 43,
        FILE_SFIO_RESERVE_INFORMATION = 44,
        FILE_SFIO_VOLUME_INFORMATION = 45,
        FILE_HARD_LINK_INFORMATION = 46,
        FILE_PROCESS_IDS_USING_FILE_INFORMATION = 47,
        FILE_NORMALIZED_NAME_INFORMATION = 48,
        FILE_NETWORK_PHYSICAL_NAME_INFORMATION = 49,
        FILE_ID_GLOBAL_TX_DIRECTORY_INFORMATION = 50,
        FILE_IS_REMOTE_DEVICE_INFORMATION = 51,
        FILE_UNUSED_INFORMATION = 52,
        FILE_NUMA_NODE_INFORMATION = 53,
        FILE_STANDARD_LINK_INFORMATION = 54,
        FILE_REMOTE_PROTOCOL_INFORMATION = 55,
        FILE_RENAME_INFORMATION_BYPASS_ACCESS_CHECK = 56,
        FILE_LINK_INFORMATION_BYPASS_ACCESS_CHECK = 57,
        FILE_VOLUME_NAME_INFORMATION = 58,
        FILE_ID_INFORMATION = 59,
        FILE_ID_EXTD_DIRECTORY_INFORMATION = 60,
        FILE_REPLACE_COMPLETION_INFORMATION = 61,
        FILE_HARD_LINK_FULL_ID_INFORMATION = 62,
        FILE_ID_EXTD_BOTH_DIRECTORY_INFORMATION = 63,
        FILE_DISPOSITION_INFORMATION_EX = 64,
        FILE_RENAME_INFORMATION_EX = 65,
        FILE_RENAME_INFORMATION_EX_BYPASS_ACCESS_CHECK = 66,
        FILE_DESIRED_STORAGE_CLASS_INFORMATION = 67,
        FILE_STAT_INFORMATION = 68,
        FILE_MEMORY_PARTITION_INFORMATION = 69,
        FILE_STAT_LX_INFORMATION = 70,
        FILE_CASE_SENSITIVE_INFORMATION = 71,
        FILE_LINK_INFORMATION_EX = 72,
        FILE_LINK_INFORMATION_EX_BYPASS_ACCESS_CHECK = 73,
        FILE_STORAGE_RESERVE_ID_INFORMATION = 74,
        FILE_CASE_SENSITIVE_INFORMATION_FORCE_ACCESS_CHECK = 75,
        FILE_KNOWN_FOLDER_INFORMATION = 76,
        FILE_STAT_BASIC_INFORMATION = 77,
        FILE_ID_64_EXTD_DIRECTORY_INFORMATION = 78,
        FILE_ID_64_EXTD_BOTH_DIRECTORY_INFORMATION = 79,
        FILE_ID_ALL_EXTD_DIRECTORY_INFORMATION = 80,
        FILE_ID_ALL_EXTD_BOTH_DIRECTORY_INFORMATION = 81,
        FILE_STREAM_RESERVATION_INFORMATION = 82,
        FILE_MUP_PROVIDER_INFO = 83,
    }
}

smb3d_wire::open_enum! {
    /// FS_INFORMATION_CLASS values (MS-FSCC 2.5).
    pub struct FsInformationClass(u8) {
        FILE_FS_VOLUME_INFORMATION = 1,
        FILE_FS_LABEL_INFORMATION = 2,
        FILE_FS_SIZE_INFORMATION = 3,
        FILE_FS_DEVICE_INFORMATION = 4,
        FILE_FS_ATTRIBUTE_INFORMATION = 5,
        FILE_FS_CONTROL_INFORMATION = 6,
        FILE_FS_FULL_SIZE_INFORMATION = 7,
        FILE_FS_OBJECT_ID_INFORMATION = 8,
        FILE_FS_DRIVER_PATH_INFORMATION = 9,
        FILE_FS_VOLUME_FLAGS_INFORMATION = 10,
        FILE_FS_SECTOR_SIZE_INFORMATION = 11,
        FILE_FS_DATA_COPY_INFORMATION = 12,
        FILE_FS_METADATA_SIZE_INFORMATION = 13,
        FILE_FS_FULL_SIZE_INFORMATION_EX = 14,
    }
}

/// An information class this crate cannot encode or decode in the requested role; the server
/// answers STATUS_INVALID_INFO_CLASS (MS-SMB2 3.3.5.18, 3.3.5.20).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unsupported information class {0}")]
pub struct UnsupportedClass(pub u8);

impl UnsupportedClass {
    /// The status the server returns for it.
    pub const fn status(self) -> NtStatus {
        NtStatus::INVALID_INFO_CLASS
    }
}

/// How much room a QUERY_INFO answer of one class needs (MS-SMB2 3.3.5.20.1, 3.3.5.20.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputSize {
    /// The fixed part: a smaller OutputBufferLength gets STATUS_INFO_LENGTH_MISMATCH. This is
    /// the Windows `sizeof` of the structure (MS-FSA 2.1.5.12, 2.1.5.13), which for classes
    /// ending in a name includes one character and the structure's tail padding.
    pub min: usize,
    /// Whether a variable part follows, which may be cut short with STATUS_BUFFER_OVERFLOW.
    pub variable: bool,
}

/// The outcome of fitting an encoded answer into the client's OutputBufferLength.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFit {
    /// The whole answer fits.
    Fits,
    /// Not even the fixed part fits: STATUS_INFO_LENGTH_MISMATCH with no data.
    LengthMismatch,
    /// Send the first `len` bytes with STATUS_BUFFER_OVERFLOW.
    Overflow { len: usize },
}

impl OutputSize {
    const fn fixed(min: usize) -> Option<Self> {
        Some(Self {
            min,
            variable: false,
        })
    }

    const fn variable(min: usize) -> Option<Self> {
        Some(Self {
            min,
            variable: true,
        })
    }

    /// Decides how an answer of `encoded_len` bytes is returned in `output_buffer_length`.
    /// Variable tails of single-structure classes are UTF-16 names, cut on a character
    /// boundary (MS-FSA BlockAlignTruncate(.., 2)); list classes (streams, EAs) are instead
    /// built with their list encoders, which stop at a whole entry.
    pub const fn fit(self, encoded_len: usize, output_buffer_length: u32) -> OutputFit {
        let out = output_buffer_length as usize;
        if out < self.min {
            OutputFit::LengthMismatch
        } else if encoded_len <= out {
            OutputFit::Fits
        } else {
            OutputFit::Overflow { len: out & !1 }
        }
    }
}

impl FileInformationClass {
    /// Output sizing for the classes SMB2 QUERY_INFO returns with SMB2_0_INFO_FILE
    /// (MS-SMB2 2.2.37); `None` for any other class.
    pub const fn query_size(self) -> Option<OutputSize> {
        match self {
            Self::FILE_BASIC_INFORMATION => OutputSize::fixed(40),
            Self::FILE_STANDARD_INFORMATION => OutputSize::fixed(24),
            Self::FILE_INTERNAL_INFORMATION => OutputSize::fixed(8),
            Self::FILE_EA_INFORMATION => OutputSize::fixed(4),
            Self::FILE_ACCESS_INFORMATION => OutputSize::fixed(4),
            Self::FILE_POSITION_INFORMATION => OutputSize::fixed(8),
            Self::FILE_MODE_INFORMATION => OutputSize::fixed(4),
            Self::FILE_ALIGNMENT_INFORMATION => OutputSize::fixed(4),
            Self::FILE_PIPE_INFORMATION => OutputSize::fixed(8),
            Self::FILE_PIPE_LOCAL_INFORMATION => OutputSize::fixed(40),
            Self::FILE_PIPE_REMOTE_INFORMATION => OutputSize::fixed(16),
            Self::FILE_COMPRESSION_INFORMATION => OutputSize::fixed(16),
            Self::FILE_NETWORK_OPEN_INFORMATION => OutputSize::fixed(56),
            Self::FILE_ATTRIBUTE_TAG_INFORMATION => OutputSize::fixed(8),
            Self::FILE_ID_INFORMATION => OutputSize::fixed(24),
            // FILE_NAME_INFORMATION: BlockAlign(FieldOffset(FileName) + 2, 4).
            Self::FILE_NAME_INFORMATION
            | Self::FILE_ALTERNATE_NAME_INFORMATION
            | Self::FILE_NORMALIZED_NAME_INFORMATION => OutputSize::variable(8),
            // 100 bytes of fixed fields, one name character, padded to 8.
            Self::FILE_ALL_INFORMATION => OutputSize::variable(104),
            // 24 bytes of fixed fields, one name character, padded to 8.
            Self::FILE_STREAM_INFORMATION => OutputSize::variable(32),
            // No fixed part: whole entries only, STATUS_BUFFER_TOO_SMALL when not even the
            // first fits, STATUS_BUFFER_OVERFLOW when some are left (MS-FSA 2.1.5.12.12).
            Self::FILE_FULL_EA_INFORMATION => OutputSize::variable(0),
            _ => None,
        }
    }
}

impl FsInformationClass {
    /// Output sizing for the classes SMB2 QUERY_INFO returns with SMB2_0_INFO_FILESYSTEM
    /// (MS-SMB2 2.2.37); `None` for any other class.
    pub const fn query_size(self) -> Option<OutputSize> {
        match self {
            // BlockAlign(FieldOffset(VolumeLabel), 8) (MS-FSA 2.1.5.13.1).
            Self::FILE_FS_VOLUME_INFORMATION => OutputSize::variable(24),
            Self::FILE_FS_SIZE_INFORMATION => OutputSize::fixed(24),
            Self::FILE_FS_DEVICE_INFORMATION => OutputSize::fixed(8),
            // Windows' sizeof(FILE_FS_ATTRIBUTE_INFORMATION): the 12-byte fixed part and one
            // character, padded. MS-FSA 2.1.5.13.5 would allow 12, but Windows and Samba refuse
            // anything below 16 and smbtorture smb2.getinfo.qfs_buffercheck checks it.
            Self::FILE_FS_ATTRIBUTE_INFORMATION => OutputSize::variable(16),
            Self::FILE_FS_CONTROL_INFORMATION => OutputSize::fixed(48),
            Self::FILE_FS_FULL_SIZE_INFORMATION => OutputSize::fixed(32),
            Self::FILE_FS_OBJECT_ID_INFORMATION => OutputSize::fixed(64),
            Self::FILE_FS_SECTOR_SIZE_INFORMATION => OutputSize::fixed(28),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_unknown_values() {
        assert_eq!(
            format!("{:?}", FileInformationClass(37)),
            "FILE_ID_BOTH_DIRECTORY_INFORMATION"
        );
        assert_eq!(
            format!("{:?}", FileInformationClass(200)),
            "FileInformationClass(0xc8)"
        );
        assert_eq!(
            format!("{:?}", FsInformationClass(11)),
            "FILE_FS_SECTOR_SIZE_INFORMATION"
        );
    }

    #[test]
    fn fixed_class_fits_or_mismatches() {
        let basic = FileInformationClass::FILE_BASIC_INFORMATION
            .query_size()
            .unwrap();
        assert_eq!(basic.fit(40, 39), OutputFit::LengthMismatch);
        assert_eq!(basic.fit(40, 40), OutputFit::Fits);
        assert_eq!(basic.fit(40, 0), OutputFit::LengthMismatch);
    }

    #[test]
    fn variable_class_overflows_on_character_boundary() {
        let all = FileInformationClass::FILE_ALL_INFORMATION
            .query_size()
            .unwrap();
        // Samba answers STATUS_INFO_LENGTH_MISMATCH for FileAllInformation in 100 bytes.
        assert_eq!(all.fit(126, 100), OutputFit::LengthMismatch);
        assert_eq!(all.fit(126, 104), OutputFit::Overflow { len: 104 });
        assert_eq!(all.fit(126, 107), OutputFit::Overflow { len: 106 });
        assert_eq!(all.fit(126, 126), OutputFit::Fits);
    }

    #[test]
    fn minimums_match_samba() {
        // (class, largest OutputBufferLength Samba answered STATUS_INFO_LENGTH_MISMATCH to),
        // probed against the reference Samba on loopback.
        let file = [(4u8, 39u32), (18, 103), (21, 7), (22, 31)];
        for (class, refused) in file {
            let size = FileInformationClass(class).query_size().unwrap();
            assert_eq!(
                size.fit(1000, refused),
                OutputFit::LengthMismatch,
                "{class}"
            );
            assert_ne!(
                size.fit(1000, refused + 1),
                OutputFit::LengthMismatch,
                "{class}"
            );
        }
        for (class, refused) in [(1u8, 23u32), (3, 23), (5, 15)] {
            let size = FsInformationClass(class).query_size().unwrap();
            assert_eq!(
                size.fit(1000, refused),
                OutputFit::LengthMismatch,
                "{class}"
            );
            assert_ne!(
                size.fit(1000, refused + 1),
                OutputFit::LengthMismatch,
                "{class}"
            );
        }
        // Samba answers STATUS_BUFFER_OVERFLOW to FileFullEaInformation even in 0 bytes.
        let ea = FileInformationClass::FILE_FULL_EA_INFORMATION
            .query_size()
            .unwrap();
        assert_eq!(ea.fit(50, 0), OutputFit::Overflow { len: 0 });
    }

    #[test]
    fn unsupported_classes_have_no_size() {
        assert!(
            FileInformationClass::FILE_RENAME_INFORMATION
                .query_size()
                .is_none()
        );
        assert!(
            FsInformationClass::FILE_FS_LABEL_INFORMATION
                .query_size()
                .is_none()
        );
        assert_eq!(UnsupportedClass(99).status(), NtStatus::INVALID_INFO_CLASS);
    }
}
