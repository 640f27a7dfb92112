//! The small part of ASN.1 DER (ITU-T X.690) that SPNEGO needs: definite-length TLVs with
//! one-byte tags, read over borrowed input and written into a `Vec`.
//!
//! Decoding never recurses on its own: callers walk a fixed schema, so nesting depth is bounded
//! by the schema, and lengths are checked against the bytes actually present before anything
//! is sliced.

use smb3d_wire::{DecodeError, DecodeErrorKind, Result};

/// Tag: UNIVERSAL 3, BIT STRING.
pub const BIT_STRING: u8 = 0x03;
/// Tag: UNIVERSAL 4, OCTET STRING.
pub const OCTET_STRING: u8 = 0x04;
/// Tag: UNIVERSAL 6, OBJECT IDENTIFIER.
pub const OID: u8 = 0x06;
/// Tag: UNIVERSAL 10, ENUMERATED.
pub const ENUMERATED: u8 = 0x0a;
/// Tag: UNIVERSAL 27, GeneralString.
pub const GENERAL_STRING: u8 = 0x1b;
/// Tag: constructed UNIVERSAL 16, SEQUENCE / SEQUENCE OF.
pub const SEQUENCE: u8 = 0x30;
/// Tag: constructed [APPLICATION 0], the GSS-API InitialContextToken (RFC 2743 3.1).
pub const APPLICATION_0: u8 = 0x60;

/// The tag of a constructed context-specific field `[n]` (n < 31).
pub const fn context(n: u8) -> u8 {
    0xa0 | n
}

/// A cursor over a run of TLVs (the contents of one constructed value).
#[derive(Clone, Debug)]
pub struct DerReader<'a> {
    rest: &'a [u8],
}

/// One TLV: its tag, its contents, and the whole encoding (tag and length included).
#[derive(Clone, Copy, Debug)]
pub struct Tlv<'a> {
    pub tag: u8,
    pub contents: &'a [u8],
    pub encoded: &'a [u8],
}

impl<'a> DerReader<'a> {
    /// A reader over `bytes`.
    pub const fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    /// True when every TLV has been read.
    pub const fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The unread bytes.
    pub const fn remaining(&self) -> &'a [u8] {
        self.rest
    }

    /// The tag of the next TLV, without consuming it.
    pub fn peek_tag(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    /// Reads the next TLV. Lengths may use the long form with up to four length bytes (BER
    /// senders sometimes use a non-minimal form); the indefinite form is refused.
    pub fn read(&mut self, field: &'static str) -> Result<Tlv<'a>> {
        let input = self.rest;
        let (&tag, after_tag) = input.split_first().ok_or(DecodeError::truncated(field))?;
        if tag & 0x1f == 0x1f {
            // High tag numbers (X.690 8.1.2.4) occur nowhere in SPNEGO.
            return Err(DecodeError::invalid(field));
        }
        let (&first, mut after_len) = after_tag
            .split_first()
            .ok_or(DecodeError::truncated(field))?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            let count = usize::from(first & 0x7f);
            if count == 0 || count > 4 {
                return Err(DecodeError::new(field, DecodeErrorKind::TooLong));
            }
            let (len_bytes, rest) = after_len
                .split_at_checked(count)
                .ok_or(DecodeError::truncated(field))?;
            after_len = rest;
            len_bytes
                .iter()
                .fold(0usize, |acc, &b| (acc << 8) | usize::from(b))
        };
        let contents = after_len
            .get(..len)
            .ok_or(DecodeError::new(field, DecodeErrorKind::OutOfBounds))?;
        let header_len = input.len() - after_len.len();
        let total = header_len + len;
        let encoded = input.get(..total).ok_or(DecodeError::truncated(field))?;
        self.rest = input.get(total..).unwrap_or_default();
        Ok(Tlv {
            tag,
            contents,
            encoded,
        })
    }

    /// Reads the next TLV and checks its tag.
    pub fn expect(&mut self, tag: u8, field: &'static str) -> Result<Tlv<'a>> {
        let tlv = self.read(field)?;
        if tlv.tag != tag {
            return Err(DecodeError::invalid(field));
        }
        Ok(tlv)
    }

    /// Reads the next TLV if it has `tag`.
    pub fn optional(&mut self, tag: u8, field: &'static str) -> Result<Option<Tlv<'a>>> {
        if self.peek_tag() == Some(tag) {
            self.read(field).map(Some)
        } else {
            Ok(None)
        }
    }

    /// Reads a context-specific field `[n]` holding exactly one value with tag `inner`.
    pub fn explicit(&mut self, n: u8, inner: u8, field: &'static str) -> Result<Option<Tlv<'a>>> {
        let Some(wrapper) = self.optional(context(n), field)? else {
            return Ok(None);
        };
        let mut r = DerReader::new(wrapper.contents);
        let value = r.expect(inner, field)?;
        if !r.is_empty() {
            return Err(DecodeError::invalid(field));
        }
        Ok(Some(value))
    }

    /// Skips TLVs until one with a tag other than the context-specific fields `[from..]`, for
    /// SEQUENCE extensions the schema does not know (RFC 4178 4.2 marks them with `...`).
    pub fn skip_unknown_fields(&mut self, from: u8, field: &'static str) -> Result<()> {
        while let Some(tag) = self.peek_tag() {
            if tag & 0xe0 == 0xa0 && tag & 0x1f >= from {
                self.read(field)?;
            } else {
                return Err(DecodeError::invalid(field));
            }
        }
        Ok(())
    }
}

/// Appends the DER length octets for `len`.
fn write_len(len: usize, out: &mut Vec<u8>) {
    if len < 0x80 {
        out.push(len as u8);
        return;
    }
    let bytes = (len as u64).to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count();
    let significant = bytes.get(skip..).unwrap_or_default();
    out.push(0x80 | significant.len() as u8);
    out.extend_from_slice(significant);
}

/// Appends a TLV whose contents are already encoded.
pub fn write_tlv(tag: u8, contents: &[u8], out: &mut Vec<u8>) {
    out.push(tag);
    write_len(contents.len(), out);
    out.extend_from_slice(contents);
}

/// Appends a TLV whose contents `build` writes, then fixes up the length.
pub fn write_nested(tag: u8, out: &mut Vec<u8>, build: impl FnOnce(&mut Vec<u8>)) {
    let mut contents = Vec::new();
    build(&mut contents);
    write_tlv(tag, &contents, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_lengths_round_trip() {
        for len in [0usize, 1, 127, 128, 255, 256, 70_000] {
            let contents = vec![0x5a; len];
            let mut out = Vec::new();
            write_tlv(OCTET_STRING, &contents, &mut out);
            let mut r = DerReader::new(&out);
            let tlv = r.expect(OCTET_STRING, "x").unwrap();
            assert_eq!(tlv.contents.len(), len);
            assert_eq!(tlv.encoded, &out[..]);
            assert!(r.is_empty());
        }
        let mut out = Vec::new();
        write_tlv(OCTET_STRING, &[0; 200], &mut out);
        assert_eq!(&out[..3], &[0x04, 0x81, 200]);
    }

    #[test]
    fn rejects_lengths_beyond_input_indefinite_and_oversized() {
        let cases: &[&[u8]] = &[
            &[0x04],
            &[0x04, 0x05, 1, 2],
            &[0x04, 0x80, 0, 0],
            &[0x04, 0x85, 1, 0, 0, 0, 0],
            &[0x04, 0x84, 0xff, 0xff, 0xff, 0xff, 0],
            &[0x04, 0x82, 0x01],
            &[0x1f, 0x01, 0x00],
        ];
        for case in cases {
            assert!(DerReader::new(case).read("x").is_err(), "{case:02x?}");
        }
    }

    #[test]
    fn explicit_requires_exactly_one_inner_value() {
        let ok = [0xa2, 0x03, 0x04, 0x01, 0x07];
        let tlv = DerReader::new(&ok).explicit(2, OCTET_STRING, "x").unwrap();
        assert_eq!(tlv.unwrap().contents, &[7]);
        let trailing = [0xa2, 0x05, 0x04, 0x01, 0x07, 0x05, 0x00];
        assert!(
            DerReader::new(&trailing)
                .explicit(2, OCTET_STRING, "x")
                .is_err()
        );
        let absent = [0xa3, 0x00];
        assert!(
            DerReader::new(&absent)
                .explicit(2, OCTET_STRING, "x")
                .unwrap()
                .is_none()
        );
    }
}
