//! `user.DOSATTRIB`: DOS attributes and the create time (Samba's `xattr_DOSATTRIB`).

use smb3d_wire::{DecodeError, FileTime, Reader};

use super::{align_reader, nul_terminated};

/// The xattr Samba's smbd keeps DOS attributes in.
pub const XATTR_DOSATTRIB_NAME: &str = "user.DOSATTRIB";

/// xattr_DosInfoValidFlags: the attribute field is valid.
const VALID_ATTRIB: u32 = 0x0000_0001;
/// xattr_DosInfoValidFlags: the create time field is valid.
const VALID_CREATE_TIME: u32 = 0x0000_0010;
/// The version Samba 4.17 writes.
const VERSION_5: u16 = 5;

/// What `user.DOSATTRIB` holds, as Samba 4.17 reads it.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct DosAttrib {
    /// FILE_ATTRIBUTE_* bits as stored (MS-FSCC 2.6). When reading, Samba keeps only
    /// READONLY, HIDDEN, SYSTEM, DIRECTORY, ARCHIVE, OFFLINE and SPARSE and adds DIRECTORY for
    /// directories; that policy belongs to the caller.
    pub attributes: u32,
    /// The create (birth) time, when the blob holds a valid non-zero one.
    pub create_time: Option<FileTime>,
}

impl DosAttrib {
    /// Decodes every form Samba has written: the bare hex text of Samba 3.0 (`0x20`, with or
    /// without NUL) and the binary `xattr_DOSATTRIB` versions 1 to 5 behind that text. Bytes
    /// after the version's fields are ignored, as Samba does. Version 2 create times are not
    /// used (Samba cannot tell whether they are valid); for versions 3 to 5 the create time
    /// needs its valid flag.
    pub fn decode(blob: &[u8]) -> Result<DosAttrib, DecodeError> {
        let mut r = Reader::new(blob);
        let text = match nul_terminated(&mut r, "DosAttrib.AttribHex") {
            Ok(text) => text,
            // No NUL at all: Samba 3.0 stored the text alone.
            Err(_) => return Self::from_text(blob),
        };
        if r.is_empty() {
            return Self::from_text(text);
        }
        align_reader(&mut r, 2, "DosAttrib.Version")?;
        let version = r.u16("DosAttrib.Version")?;
        if r.u16("DosAttrib.Level")? != version {
            return Err(DecodeError::invalid("DosAttrib.Level"));
        }
        align_reader(&mut r, 4, "DosAttrib.Info")?;
        let nonzero = |t: FileTime| (t.0 != 0).then_some(t);
        match version {
            1 => {
                let attributes = r.u32("DosInfo1.Attrib")?;
                r.skip(4 + 8 + 8, "DosInfo1.Sizes")?;
                let create_time = r.filetime("DosInfo1.CreateTime")?;
                r.skip(8, "DosInfo1.ChangeTime")?;
                Ok(DosAttrib {
                    attributes,
                    create_time: nonzero(create_time),
                })
            }
            2 => {
                r.skip(4, "DosInfo2.Flags")?;
                let attributes = r.u32("DosInfo2.Attrib")?;
                r.skip(4 + 8 + 8 + 8 + 8 + 8, "DosInfo2.Times")?;
                nul_terminated(&mut r, "DosInfo2.Name")?;
                Ok(DosAttrib {
                    attributes,
                    create_time: None,
                })
            }
            3..=5 => {
                let valid = r.u32("DosInfo.ValidFlags")?;
                let attributes = r.u32("DosInfo.Attrib")?;
                match version {
                    3 => r.skip(4 + 8 + 8, "DosInfo3.Sizes")?,
                    4 => r.skip(8, "DosInfo4.Itime")?,
                    _ => {}
                }
                let create_time = r.filetime("DosInfo.CreateTime")?;
                if version == 3 {
                    r.skip(8, "DosInfo3.ChangeTime")?;
                }
                Ok(DosAttrib {
                    attributes,
                    create_time: nonzero(create_time).filter(|_| valid & VALID_CREATE_TIME != 0),
                })
            }
            _ => Err(DecodeError::invalid("DosAttrib.Version")),
        }
    }

    /// The hex text form, read the way `sscanf("%x")` does: optional `0x`, then hex digits up
    /// to the first other character.
    fn from_text(text: &[u8]) -> Result<DosAttrib, DecodeError> {
        let text = text.trim_ascii_start();
        let digits = text
            .strip_prefix(b"0x")
            .or_else(|| text.strip_prefix(b"0X"))
            .unwrap_or(text);
        let end = digits
            .iter()
            .position(|b| !b.is_ascii_hexdigit())
            .unwrap_or(digits.len());
        let hex = digits
            .get(..end)
            .filter(|h| !h.is_empty())
            .and_then(|h| core::str::from_utf8(h).ok())
            .ok_or(DecodeError::invalid("DosAttrib.AttribHex"))?;
        let attributes = u32::from_str_radix(hex, 16)
            .map_err(|_| DecodeError::invalid("DosAttrib.AttribHex"))?;
        Ok(DosAttrib {
            attributes,
            create_time: None,
        })
    }

    /// The version-5 blob exactly as Samba 4.17's `set_ea_dos_attribute` writes it: an empty
    /// hex string, version 5, and both the attribute and create-time valid flags (only the
    /// attribute flag when there is no create time). Samba clears FILE_ATTRIBUTE_OFFLINE
    /// before storing; callers that want the same do it themselves.
    pub fn to_xattr(&self) -> [u8; 24] {
        let mut valid = VALID_ATTRIB;
        if self.create_time.is_some() {
            valid |= VALID_CREATE_TIME;
        }
        let mut out = [0u8; 24];
        let fields = VERSION_5
            .to_le_bytes()
            .into_iter()
            .chain(VERSION_5.to_le_bytes())
            .chain([0, 0])
            .chain(valid.to_le_bytes())
            .chain(self.attributes.to_le_bytes())
            .chain(self.create_time.unwrap_or_default().0.to_le_bytes());
        // Byte 0 is the empty string's NUL and byte 1 aligns the version.
        for (slot, b) in out.iter_mut().skip(2).zip(fields) {
            *slot = b;
        }
        out
    }
}
