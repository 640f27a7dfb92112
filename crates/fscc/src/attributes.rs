smb3d_wire::open_flags! {
    /// File attributes (MS-FSCC 2.6).
    pub struct FileAttributes(u32) {
        READONLY = 0x0000_0001,
        HIDDEN = 0x0000_0002,
        SYSTEM = 0x0000_0004,
        DIRECTORY = 0x0000_0010,
        ARCHIVE = 0x0000_0020,
        NORMAL = 0x0000_0080,
        TEMPORARY = 0x0000_0100,
        SPARSE_FILE = 0x0000_0200,
        REPARSE_POINT = 0x0000_0400,
        COMPRESSED = 0x0000_0800,
        OFFLINE = 0x0000_1000,
        NOT_CONTENT_INDEXED = 0x0000_2000,
        ENCRYPTED = 0x0000_4000,
        INTEGRITY_STREAM = 0x0000_8000,
        NO_SCRUB_DATA = 0x0002_0000,
        RECALL_ON_OPEN = 0x0004_0000,
        PINNED = 0x0008_0000,
        UNPINNED = 0x0010_0000,
        RECALL_ON_DATA_ACCESS = 0x0040_0000,
    }
}

smb3d_wire::open_flags! {
    /// FileSystemAttributes of FILE_FS_ATTRIBUTE_INFORMATION (MS-FSCC 2.5, FileFsAttributeInformation).
    pub struct FsAttributes(u32) {
        CASE_SENSITIVE_SEARCH = 0x0000_0001,
        CASE_PRESERVED_NAMES = 0x0000_0002,
        UNICODE_ON_DISK = 0x0000_0004,
        PERSISTENT_ACLS = 0x0000_0008,
        FILE_COMPRESSION = 0x0000_0010,
        VOLUME_QUOTAS = 0x0000_0020,
        SUPPORTS_SPARSE_FILES = 0x0000_0040,
        SUPPORTS_REPARSE_POINTS = 0x0000_0080,
        SUPPORTS_REMOTE_STORAGE = 0x0000_0100,
        RETURNS_CLEANUP_RESULT_INFO = 0x0000_0200,
        SUPPORTS_POSIX_UNLINK_RENAME = 0x0000_0400,
        SUPPORTS_BYPASS_IO = 0x0000_0800,
        VOLUME_IS_COMPRESSED = 0x0000_8000,
        SUPPORTS_OBJECT_IDS = 0x0001_0000,
        SUPPORTS_ENCRYPTION = 0x0002_0000,
        NAMED_STREAMS = 0x0004_0000,
        READ_ONLY_VOLUME = 0x0008_0000,
        SEQUENTIAL_WRITE_ONCE = 0x0010_0000,
        SUPPORTS_TRANSACTIONS = 0x0020_0000,
        SUPPORTS_HARD_LINKS = 0x0040_0000,
        SUPPORTS_EXTENDED_ATTRIBUTES = 0x0080_0000,
        SUPPORTS_OPEN_BY_FILE_ID = 0x0100_0000,
        SUPPORTS_USN_JOURNAL = 0x0200_0000,
        SUPPORT_INTEGRITY_STREAMS = 0x0400_0000,
        SUPPORTS_BLOCK_REFCOUNTING = 0x0800_0000,
        SUPPORTS_SPARSE_VDL = 0x1000_0000,
        DAX_VOLUME = 0x2000_0000,
        SUPPORTS_GHOSTING = 0x4000_0000,
    }
}

smb3d_wire::open_flags! {
    /// Mode of FILE_MODE_INFORMATION (MS-FSCC 2.4, FileModeInformation).
    pub struct FileMode(u32) {
        WRITE_THROUGH = 0x0000_0002,
        SEQUENTIAL_ONLY = 0x0000_0004,
        NO_INTERMEDIATE_BUFFERING = 0x0000_0008,
        SYNCHRONOUS_IO_ALERT = 0x0000_0010,
        SYNCHRONOUS_IO_NONALERT = 0x0000_0020,
        DELETE_ON_CLOSE = 0x0000_1000,
    }
}

smb3d_wire::open_flags! {
    /// Flags of FILE_DISPOSITION_INFORMATION_EX (MS-FSCC 2.4, FileDispositionInformationEx); zero means "do not delete".
    pub struct DispositionFlags(u32) {
        DELETE = 0x0000_0001,
        POSIX_SEMANTICS = 0x0000_0002,
        FORCE_IMAGE_SECTION_CHECK = 0x0000_0004,
        ON_CLOSE = 0x0000_0008,
        IGNORE_READONLY_ATTRIBUTE = 0x0000_0010,
    }
}

smb3d_wire::open_flags! {
    /// Flags of FILE_RENAME_INFORMATION_EX (MS-FSCC 2.4, FileRenameInformationEx).
    pub struct RenameFlags(u32) {
        REPLACE_IF_EXISTS = 0x0000_0001,
        POSIX_SEMANTICS = 0x0000_0002,
        SUPPRESS_PIN_STATE_INHERITANCE = 0x0000_0004,
        SUPPRESS_STORAGE_RESERVE_INHERITANCE = 0x0000_0008,
        NO_INCREASE_AVAILABLE_SPACE = 0x0000_0010,
        NO_DECREASE_AVAILABLE_SPACE = 0x0000_0020,
        IGNORE_READONLY_ATTRIBUTE = 0x0000_0040,
        FORCE_RESIZE_TARGET_SR = 0x0000_0080,
        FORCE_RESIZE_SOURCE_SR = 0x0000_0100,
    }
}

smb3d_wire::open_flags! {
    /// Flags of FILE_LINK_INFORMATION_EX (MS-FSCC 2.4, FileLinkInformationEx).
    pub struct LinkFlags(u32) {
        REPLACE_IF_EXISTS = 0x0000_0001,
        POSIX_SEMANTICS = 0x0000_0002,
        SUPPRESS_STORAGE_RESERVE_INHERITANCE = 0x0000_0008,
        NO_INCREASE_AVAILABLE_SPACE = 0x0000_0010,
        NO_DECREASE_AVAILABLE_SPACE = 0x0000_0020,
        IGNORE_READONLY_ATTRIBUTE = 0x0000_0040,
        FORCE_RESIZE_TARGET_SR = 0x0000_0080,
        FORCE_RESIZE_SOURCE_SR = 0x0000_0100,
    }
}

smb3d_wire::open_flags! {
    /// Flags of FILE_FULL_EA_INFORMATION (MS-FSCC 2.4, FileFullEaInformation).
    pub struct EaFlags(u8) {
        NEED_EA = 0x80,
    }
}

smb3d_wire::open_flags! {
    /// Characteristics of FILE_FS_DEVICE_INFORMATION (MS-FSCC 2.5, FileFsDeviceInformation).
    pub struct DeviceCharacteristics(u32) {
        REMOVABLE_MEDIA = 0x0000_0001,
        READ_ONLY_DEVICE = 0x0000_0002,
        FLOPPY_DISKETTE = 0x0000_0004,
        WRITE_ONCE_MEDIA = 0x0000_0008,
        REMOTE_DEVICE = 0x0000_0010,
        DEVICE_IS_MOUNTED = 0x0000_0020,
        VIRTUAL_VOLUME = 0x0000_0040,
        DEVICE_SECURE_OPEN = 0x0000_0100,
        CHARACTERISTIC_TS_DEVICE = 0x0000_1000,
        CHARACTERISTIC_WEBDAV_DEVICE = 0x0000_2000,
        DEVICE_ALLOW_APPCONTAINER_TRAVERSAL = 0x0002_0000,
        PORTABLE_DEVICE = 0x0004_0000,
    }
}

smb3d_wire::open_enum! {
    /// DeviceType of FILE_FS_DEVICE_INFORMATION (MS-FSCC 2.5, FileFsDeviceInformation).
    pub struct DeviceType(u32) {
        CD_ROM = 0x0000_0002,
        DISK = 0x0000_0007,
    }
}

smb3d_wire::open_flags! {
    /// FileSystemControlFlags of FILE_FS_CONTROL_INFORMATION (MS-FSCC 2.5, FileFsControlInformation).
    pub struct FsControlFlags(u32) {
        QUOTA_TRACK = 0x0000_0001,
        QUOTA_ENFORCE = 0x0000_0002,
        CONTENT_INDEX_DISABLED = 0x0000_0008,
        LOG_QUOTA_THRESHOLD = 0x0000_0010,
        LOG_QUOTA_LIMIT = 0x0000_0020,
        LOG_VOLUME_THRESHOLD = 0x0000_0040,
        LOG_VOLUME_LIMIT = 0x0000_0080,
        QUOTAS_INCOMPLETE = 0x0000_0100,
        QUOTAS_REBUILDING = 0x0000_0200,
    }
}

smb3d_wire::open_flags! {
    /// Flags of FILE_FS_SECTOR_SIZE_INFORMATION (MS-FSCC 2.5, FileFsSectorSizeInformation).
    pub struct SectorSizeFlags(u32) {
        ALIGNED_DEVICE = 0x0000_0001,
        PARTITION_ALIGNED_ON_DEVICE = 0x0000_0002,
        NO_SEEK_PENALTY = 0x0000_0004,
        TRIM_ENABLED = 0x0000_0008,
    }
}

smb3d_wire::open_enum! {
    /// CompressionFormat of FILE_COMPRESSION_INFORMATION (MS-FSCC 2.4, FileCompressionInformation).
    pub struct CompressionFormat(u16) {
        NONE = 0x0000,
        DEFAULT = 0x0001,
        LZNT1 = 0x0002,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_debug_names_and_unknown_bits() {
        let a = FileAttributes::READONLY | FileAttributes::ARCHIVE | FileAttributes(0x40);
        assert_eq!(format!("{a:?}"), "READONLY | ARCHIVE | 0x40");
        assert_eq!(a.bits(), 0x61);
    }
}
