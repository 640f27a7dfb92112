smb3d_wire::open_flags! {
    /// ACCESS_MASK (MS-DTYP 2.4.3) with the file and directory specific rights of MS-SMB2
    /// 2.2.13.1.1 and 2.2.13.1.2 (the directory rights share their bit values).
    pub struct AccessMask(u32) {
        FILE_READ_DATA = 0x0000_0001,
        FILE_WRITE_DATA = 0x0000_0002,
        FILE_APPEND_DATA = 0x0000_0004,
        FILE_READ_EA = 0x0000_0008,
        FILE_WRITE_EA = 0x0000_0010,
        FILE_EXECUTE = 0x0000_0020,
        FILE_DELETE_CHILD = 0x0000_0040,
        FILE_READ_ATTRIBUTES = 0x0000_0080,
        FILE_WRITE_ATTRIBUTES = 0x0000_0100,
        DELETE = 0x0001_0000,
        READ_CONTROL = 0x0002_0000,
        WRITE_DAC = 0x0004_0000,
        WRITE_OWNER = 0x0008_0000,
        SYNCHRONIZE = 0x0010_0000,
        ACCESS_SYSTEM_SECURITY = 0x0100_0000,
        MAXIMUM_ALLOWED = 0x0200_0000,
        GENERIC_ALL = 0x1000_0000,
        GENERIC_EXECUTE = 0x2000_0000,
        GENERIC_WRITE = 0x4000_0000,
        GENERIC_READ = 0x8000_0000,
    }
}

impl AccessMask {
    /// Directory alias of FILE_READ_DATA.
    pub const FILE_LIST_DIRECTORY: AccessMask = AccessMask::FILE_READ_DATA;
    /// Directory alias of FILE_WRITE_DATA.
    pub const FILE_ADD_FILE: AccessMask = AccessMask::FILE_WRITE_DATA;
    /// Directory alias of FILE_APPEND_DATA.
    pub const FILE_ADD_SUBDIRECTORY: AccessMask = AccessMask::FILE_APPEND_DATA;
    /// Directory alias of FILE_EXECUTE.
    pub const FILE_TRAVERSE: AccessMask = AccessMask::FILE_EXECUTE;

    /// Every specific and standard right a file can grant (FILE_ALL_ACCESS).
    pub const FILE_ALL_ACCESS: AccessMask = AccessMask(0x001F_01FF);
    /// FILE_GENERIC_READ: what GENERIC_READ maps to for files.
    pub const FILE_GENERIC_READ: AccessMask = AccessMask(0x0012_0089);
    /// FILE_GENERIC_WRITE: what GENERIC_WRITE maps to for files.
    pub const FILE_GENERIC_WRITE: AccessMask = AccessMask(0x0012_0116);
    /// FILE_GENERIC_EXECUTE: what GENERIC_EXECUTE maps to for files.
    pub const FILE_GENERIC_EXECUTE: AccessMask = AccessMask(0x0012_00A0);

    /// Rights that modify the file or its metadata.
    pub const WRITE_RIGHTS: AccessMask = AccessMask(
        Self::FILE_WRITE_DATA.0
            | Self::FILE_APPEND_DATA.0
            | Self::FILE_WRITE_EA.0
            | Self::FILE_WRITE_ATTRIBUTES.0
            | Self::FILE_DELETE_CHILD.0
            | Self::DELETE.0
            | Self::WRITE_DAC.0
            | Self::WRITE_OWNER.0,
    );

    /// Replaces the GENERIC_* bits by the file rights they stand for (MS-DTYP 2.4.3).
    pub const fn map_generic(self) -> AccessMask {
        let mut m = self.0 & !(0xF000_0000);
        if self.0 & Self::GENERIC_READ.0 != 0 {
            m |= Self::FILE_GENERIC_READ.0;
        }
        if self.0 & Self::GENERIC_WRITE.0 != 0 {
            m |= Self::FILE_GENERIC_WRITE.0;
        }
        if self.0 & Self::GENERIC_EXECUTE.0 != 0 {
            m |= Self::FILE_GENERIC_EXECUTE.0;
        }
        if self.0 & Self::GENERIC_ALL.0 != 0 {
            m |= Self::FILE_ALL_ACCESS.0;
        }
        AccessMask(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_mapping() {
        assert_eq!(
            AccessMask::GENERIC_READ.map_generic(),
            AccessMask::FILE_GENERIC_READ
        );
        assert_eq!(
            (AccessMask::GENERIC_ALL | AccessMask::MAXIMUM_ALLOWED).map_generic(),
            AccessMask::FILE_ALL_ACCESS | AccessMask::MAXIMUM_ALLOWED
        );
    }
}
