//! SMB2_FILEID (MS-SMB2 2.2.14.1).

use smb3d_wire::{DecodeError, Reader, Writer};

/// An open's identifier: a persistent part that survives reconnects and a volatile part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct FileId {
    pub persistent: u64,
    pub volatile: u64,
}

impl FileId {
    /// All ones: "the FileId of the previous operation" in a related compound (MS-SMB2
    /// 3.3.5.2.7.2), and the FileId of IOCTLs that address no open.
    pub const ANY: FileId = FileId {
        persistent: u64::MAX,
        volatile: u64::MAX,
    };

    /// Whether this is [`FileId::ANY`].
    pub const fn is_any(&self) -> bool {
        self.persistent == u64::MAX && self.volatile == u64::MAX
    }

    /// Reads the 16-byte wire form.
    pub fn read(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            persistent: r.u64("FileId.Persistent")?,
            volatile: r.u64("FileId.Volatile")?,
        })
    }

    /// Writes the 16-byte wire form.
    pub fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.persistent).u64(self.volatile);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_form_and_any() {
        let mut out = Vec::new();
        let id = FileId {
            persistent: 0x0102_0304_0506_0708,
            volatile: 0x1112_1314_1516_1718,
        };
        id.write(&mut Writer::new(&mut out));
        assert_eq!(
            out,
            [
                8, 7, 6, 5, 4, 3, 2, 1, 0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11
            ]
        );
        assert_eq!(FileId::read(&mut Reader::new(&out)).unwrap(), id);
        assert!(
            FileId::read(&mut Reader::new(&[0xFF; 16]))
                .unwrap()
                .is_any()
        );
        assert!(FileId::read(&mut Reader::new(&out[..15])).is_err());
    }
}
