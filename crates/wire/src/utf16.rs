use crate::error::{DecodeError, DecodeErrorKind, Result};

/// Decodes UTF-16LE. An odd byte count or an unpaired surrogate is an error: such names cannot
/// be represented on a Linux file system without a lossy mapping.
pub fn decode_utf16le(bytes: &[u8], field: &'static str) -> Result<String> {
    if !bytes.len().is_multiple_of(2) {
        return Err(DecodeError::new(field, DecodeErrorKind::InvalidUtf16));
    }
    let units = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes(c.try_into().unwrap_or_default()));
    let mut out = String::with_capacity(bytes.len() / 2);
    for ch in char::decode_utf16(units) {
        out.push(ch.map_err(|_| DecodeError::new(field, DecodeErrorKind::InvalidUtf16))?);
    }
    Ok(out)
}

/// Appends `s` as UTF-16LE.
pub fn encode_utf16le(s: &str, out: &mut Vec<u8>) {
    out.reserve(s.len() * 2);
    for unit in s.encode_utf16() {
        out.extend_from_slice(&unit.to_le_bytes());
    }
}

/// The byte length of `s` in UTF-16.
pub fn utf16le_len(s: &str) -> usize {
    s.encode_utf16().count() * 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_supplementary_plane() {
        let s = "a\u{e9}\u{1F600}";
        let mut b = Vec::new();
        encode_utf16le(s, &mut b);
        assert_eq!(b.len(), utf16le_len(s));
        assert_eq!(decode_utf16le(&b, "n").unwrap(), s);
    }

    #[test]
    fn rejects_odd_length_and_lone_surrogate() {
        assert!(decode_utf16le(&[0x61], "n").is_err());
        assert!(decode_utf16le(&[0x00, 0xD8, 0x61, 0x00], "n").is_err());
    }
}
