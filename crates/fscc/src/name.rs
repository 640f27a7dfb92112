//! UTF-16 name fields: a 32-bit byte length followed by the characters.

use smb3d_wire::{
    DecodeError, DecodeErrorKind, Reader, Result, Writer, decode_utf16le, utf16le_len,
};

/// The UTF-16 byte length of `s` as a 32-bit length field. Names long enough to overflow it
/// cannot come from a file system; they saturate rather than wrap.
pub(crate) fn utf16_len_u32(s: &str) -> u32 {
    u32::try_from(utf16le_len(s)).unwrap_or(u32::MAX)
}

/// Reads `len` bytes of UTF-16 from `r`.
pub(crate) fn read_utf16(r: &mut Reader<'_>, len: u32, field: &'static str) -> Result<String> {
    let len =
        usize::try_from(len).map_err(|_| DecodeError::new(field, DecodeErrorKind::TooLong))?;
    decode_utf16le(r.bytes(len, field)?, field)
}

/// Reads a 32-bit length and that many bytes of UTF-16.
pub(crate) fn read_len_utf16(r: &mut Reader<'_>, field: &'static str) -> Result<String> {
    let len = r.u32(field)?;
    read_utf16(r, len, field)
}

/// Writes a 32-bit length and `s` as UTF-16.
pub(crate) fn write_len_utf16(w: &mut Writer<'_>, s: &str) {
    w.u32(utf16_len_u32(s));
    w.utf16(s);
}
