//! NDR 2.0 transfer syntax (C706 chapter 14), little-endian with 32-bit pointers: the subset the
//! served calls need. Alignment is relative to the start of the stub, which the PDU places on an
//! 8-byte boundary.
//!
//! The reader never follows pointers: a referent id only says whether the pointee follows, and
//! the call decoders read pointees in NDR's deferred order themselves. Every count a peer sends
//! is checked against the bytes still present before anything is allocated for it.

use smb3d_dtyp::{MAX_SUB_AUTHORITIES, Sid};
use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Writer, decode_utf16le};

/// The first referent id Windows and Samba use; later ones count up by 4.
const FIRST_REFERENT_ID: u32 = 0x0002_0000;

/// The wire size of a context handle (MS-RPCE 2.2.4.1: attributes and a GUID).
pub const CONTEXT_HANDLE_LEN: usize = 20;

/// Reads an NDR stub.
#[derive(Debug)]
pub struct NdrReader<'a> {
    r: Reader<'a>,
}

/// The fixed part of an RPC_UNICODE_STRING (MS-DTYP 2.3.10): byte lengths and whether the
/// buffer follows in the deferred part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountedStringHeader {
    /// Length in bytes, without terminator.
    pub length: u16,
    /// Size of the buffer in bytes.
    pub maximum_length: u16,
    /// The buffer pointer was not NULL.
    pub present: bool,
}

impl<'a> NdrReader<'a> {
    /// A reader at the start of `stub`.
    pub const fn new(stub: &'a [u8]) -> Self {
        Self {
            r: Reader::new(stub),
        }
    }

    /// Bytes not read yet.
    pub const fn remaining(&self) -> usize {
        self.r.remaining()
    }

    /// Skips padding up to a multiple of `n` (a power of two) from the stub start.
    pub fn align(&mut self, n: usize, field: &'static str) -> Result<(), DecodeError> {
        let pad = self.r.pos().wrapping_neg() & (n - 1);
        self.r.skip(pad, field)
    }

    /// A byte (no alignment).
    pub fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        self.r.u8(field)
    }

    /// A 16-bit integer, aligned to 2.
    pub fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        self.align(2, field)?;
        self.r.u16(field)
    }

    /// A 32-bit integer, aligned to 4.
    pub fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        self.align(4, field)?;
        self.r.u32(field)
    }

    /// Takes `n` raw bytes.
    pub fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DecodeError> {
        self.r.bytes(n, field)
    }

    /// A fixed-size byte array (`unsigned char x[N]`, alignment 1).
    pub fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        self.r.array(field)
    }

    /// A unique or full pointer's referent id: whether the pointee follows.
    pub fn pointer(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        Ok(self.u32(field)? != 0)
    }

    /// A context handle (the `[in]` policy handles).
    pub fn context_handle(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; CONTEXT_HANDLE_LEN], DecodeError> {
        self.align(4, field)?;
        self.r.array(field)
    }

    /// The conformance (maximum count) of an array whose elements take at least `min_elem_size`
    /// bytes each; refuses a count that the remaining bytes cannot hold.
    pub fn array_count(
        &mut self,
        min_elem_size: usize,
        field: &'static str,
    ) -> Result<usize, DecodeError> {
        let count = usize::try_from(self.u32(field)?)
            .map_err(|_| DecodeError::new(field, DecodeErrorKind::TooLong))?;
        let needed = count
            .checked_mul(min_elem_size)
            .ok_or(DecodeError::new(field, DecodeErrorKind::Overflow))?;
        if needed > self.remaining() {
            return Err(DecodeError::new(field, DecodeErrorKind::TooLong));
        }
        Ok(count)
    }

    /// A conformant varying UTF-16 string (`[string] wchar_t*`'s pointee): maximum count, offset
    /// (0), actual count, then the characters. The terminating NUL, if sent, is dropped.
    pub fn string(&mut self, field: &'static str) -> Result<String, DecodeError> {
        let max = self.u32(field)?;
        let offset = self.u32(field)?;
        let actual = self.u32(field)?;
        if offset != 0 || actual > max {
            return Err(DecodeError::invalid(field));
        }
        let chars = self.utf16_units(actual, field)?;
        let text = chars.strip_suffix(&[0, 0]).unwrap_or(chars);
        decode_utf16le(text, field)
    }

    /// The fixed part of an RPC_UNICODE_STRING (aligned to 4, as its pointer is).
    pub fn counted_string_header(
        &mut self,
        field: &'static str,
    ) -> Result<CountedStringHeader, DecodeError> {
        self.align(4, field)?;
        let length = self.u16(field)?;
        let maximum_length = self.u16(field)?;
        let present = self.pointer(field)?;
        if length % 2 != 0 || length > maximum_length {
            return Err(DecodeError::invalid(field));
        }
        Ok(CountedStringHeader {
            length,
            maximum_length,
            present,
        })
    }

    /// The deferred buffer of an RPC_UNICODE_STRING (`[size_is(MaximumLength/2),
    /// length_is(Length/2)]`); the counts must agree with the header.
    pub fn counted_string_body(
        &mut self,
        header: CountedStringHeader,
        field: &'static str,
    ) -> Result<String, DecodeError> {
        let max = self.u32(field)?;
        let offset = self.u32(field)?;
        let actual = self.u32(field)?;
        if offset != 0
            || max != u32::from(header.maximum_length / 2)
            || actual != u32::from(header.length / 2)
        {
            return Err(DecodeError::invalid(field));
        }
        let chars = self.utf16_units(actual, field)?;
        decode_utf16le(chars, field)
    }

    /// An RPC_SID (MS-DTYP 2.4.2.3): the conformance (sub-authority count), then the SID.
    pub fn sid(&mut self, field: &'static str) -> Result<Sid, DecodeError> {
        let count = self.u32(field)?;
        if usize::try_from(count).map_or(true, |c| c > MAX_SUB_AUTHORITIES) {
            return Err(DecodeError::new(field, DecodeErrorKind::TooLong));
        }
        let sid = Sid::decode(&mut self.r)?;
        if sid.sub_authorities().len() != count as usize {
            return Err(DecodeError::invalid(field));
        }
        Ok(sid)
    }

    fn utf16_units(&mut self, units: u32, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let len = usize::try_from(units)
            .ok()
            .and_then(|u| u.checked_mul(2))
            .ok_or(DecodeError::new(field, DecodeErrorKind::Overflow))?;
        self.r.bytes(len, field)
    }
}

/// Writes an NDR stub into a buffer after whatever precedes it (the PDU header), aligning
/// relative to where the stub starts.
#[derive(Debug)]
pub struct NdrWriter<'b> {
    w: Writer<'b>,
    next_referent: u32,
}

impl<'b> NdrWriter<'b> {
    /// A writer whose stub starts at `base` in `buf`.
    pub fn with_base(buf: &'b mut Vec<u8>, base: usize) -> Self {
        Self {
            w: Writer::with_base(buf, base),
            next_referent: FIRST_REFERENT_ID,
        }
    }

    /// Pads with zeros to a multiple of `n` from the stub start.
    pub fn align(&mut self, n: usize) -> &mut Self {
        self.w.align(n);
        self
    }

    /// A 16-bit integer, aligned to 2.
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.w.align(2).u16(v);
        self
    }

    /// A 32-bit integer, aligned to 4.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.w.align(4).u32(v);
        self
    }

    /// Raw bytes (no alignment).
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.w.bytes(b);
        self
    }

    /// A unique pointer: a fresh referent id when the pointee follows later, else NULL.
    pub fn pointer(&mut self, present: bool) -> &mut Self {
        let id = if present {
            let id = self.next_referent;
            self.next_referent = self.next_referent.wrapping_add(4);
            id
        } else {
            0
        };
        self.u32(id)
    }

    /// The pointee of a `[string] wchar_t*`: counts including the terminator, the characters
    /// and a NUL.
    pub fn string(&mut self, s: &str) -> &mut Self {
        let units = utf16_units(s).saturating_add(1);
        self.u32(units).u32(0).u32(units);
        self.w.utf16(s);
        self.w.u16(0);
        self
    }

    /// The fixed part of an RPC_UNICODE_STRING (aligned to 4, as its pointer is). `None` is
    /// the NULL string (lengths 0, NULL buffer); `room_for_nul` sets MaximumLength two bytes
    /// past Length, as Windows and Samba do for domain names. Strings longer than the 16-bit
    /// lengths allow are cut.
    pub fn counted_string_header(&mut self, s: Option<&str>, room_for_nul: bool) -> &mut Self {
        self.align(4);
        match s {
            None => self.u16(0).u16(0).pointer(false),
            Some(s) => {
                let units = counted_units(s, room_for_nul);
                let length = units * 2;
                let maximum = if room_for_nul { length + 2 } else { length };
                self.u16(length).u16(maximum).pointer(true)
            }
        }
    }

    /// The deferred buffer of an RPC_UNICODE_STRING written by
    /// [`NdrWriter::counted_string_header`] with the same arguments.
    pub fn counted_string_body(&mut self, s: Option<&str>, room_for_nul: bool) -> &mut Self {
        if let Some(s) = s {
            let units = counted_units(s, room_for_nul);
            let maximum = if room_for_nul { units + 1 } else { units };
            self.u32(u32::from(maximum)).u32(0).u32(u32::from(units));
            for unit in s.encode_utf16().take(usize::from(units)) {
                self.w.u16(unit);
            }
        }
        self
    }

    /// An RPC_SID: conformance, then the binary SID.
    pub fn sid(&mut self, sid: &Sid) -> &mut Self {
        let count = u32::try_from(sid.sub_authorities().len()).unwrap_or(0);
        self.u32(count);
        sid.encode(&mut self.w);
        self
    }
}

/// UTF-16 code units in `s`, saturated at what a 32-bit count can say.
fn utf16_units(s: &str) -> u32 {
    u32::try_from(s.encode_utf16().count()).unwrap_or(u32::MAX)
}

/// The UTF-16 units of `s` an RPC_UNICODE_STRING carries: MaximumLength, a 16-bit even byte
/// count, bounds it to 32,767 units (32,766 when it leaves room for a terminator).
fn counted_units(s: &str, room_for_nul: bool) -> u16 {
    let limit: u16 = if room_for_nul { 32_766 } else { 32_767 };
    u16::try_from(utf16_units(s)).map_or(limit, |u| u.min(limit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(f: impl FnOnce(&mut NdrWriter<'_>)) -> Vec<u8> {
        let mut buf = Vec::new();
        f(&mut NdrWriter::with_base(&mut buf, 0));
        buf
    }

    #[test]
    fn string_layout_matches_samba() {
        // From the NetrShareEnum request rpcclient sent to Samba 4.17 (tests/captures): the
        // unique pointer to "127.0.0.1" and its conformant varying body.
        let bytes = write(|w| {
            w.pointer(true).string("127.0.0.1");
        });
        let expected = "00000200 0a000000 00000000 0a000000 \
            3100320037002e0030002e0030002e0031000000";
        assert_eq!(hex(&bytes), expected.replace(' ', ""));
        let mut r = NdrReader::new(&bytes);
        assert!(r.pointer("p").unwrap());
        assert_eq!(r.string("s").unwrap(), "127.0.0.1");
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn counted_string_with_and_without_room() {
        // Samba's "WORKGROUP" in a primary domain answer: Length 18, MaximumLength 20, max count
        // 10, actual 9, then padding to 4 before whatever follows.
        let bytes = write(|w| {
            w.counted_string_header(Some("WORKGROUP"), true);
            w.counted_string_body(Some("WORKGROUP"), true);
            w.u32(0);
        });
        assert_eq!(
            hex(&bytes),
            "12001400000002000a000000000000000900000057004f0052004b00470052004f00550050000000\
             00000000"
        );
        let mut r = NdrReader::new(&bytes);
        let h = r.counted_string_header("h").unwrap();
        assert_eq!(
            h,
            CountedStringHeader {
                length: 18,
                maximum_length: 20,
                present: true
            }
        );
        assert_eq!(r.counted_string_body(h, "b").unwrap(), "WORKGROUP");
        assert_eq!(r.u32("tail").unwrap(), 0);
        let null = write(|w| {
            w.counted_string_header(None, false);
        });
        assert_eq!(hex(&null), "0000000000000000");
    }

    #[test]
    fn counted_string_is_aligned_and_bounded() {
        let bytes = write(|w| {
            w.u16(1).counted_string_header(Some("ab"), false);
        });
        assert_eq!(hex(&bytes), "010000000400040000000200");
        let long = "x".repeat(40_000);
        let bytes = write(|w| {
            w.counted_string_header(Some(&long), true);
            w.counted_string_body(Some(&long), true);
        });
        let mut r = NdrReader::new(&bytes);
        let h = r.counted_string_header("h").unwrap();
        assert_eq!((h.length, h.maximum_length), (65_532, 65_534));
        assert_eq!(r.counted_string_body(h, "b").unwrap().len(), 32_766);
    }

    #[test]
    fn sid_round_trip() {
        let sid: Sid = "S-1-5-21-3612864239-3087396031-2650304592-1000"
            .parse()
            .unwrap();
        let bytes = write(|w| {
            w.sid(&sid);
        });
        assert_eq!(
            hex(&bytes),
            "05000000010500000000000515000000efee57d7bfec05b85070f89de8030000"
        );
        assert_eq!(NdrReader::new(&bytes).sid("s").unwrap(), sid);
    }

    #[test]
    fn sid_conformance_must_match() {
        let mut bytes = write(|w| {
            w.sid(&Sid::EVERYONE);
        });
        bytes[0] = 2;
        assert!(NdrReader::new(&bytes).sid("s").is_err());
        bytes[0] = 16;
        assert_eq!(
            NdrReader::new(&bytes).sid("s").unwrap_err().kind,
            DecodeErrorKind::TooLong
        );
    }

    #[test]
    fn huge_counts_are_refused_before_allocating() {
        let mut r = NdrReader::new(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        assert_eq!(
            r.array_count(4, "a").unwrap_err().kind,
            DecodeErrorKind::TooLong
        );
        let mut r = NdrReader::new(&[0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f]);
        assert!(r.string("s").is_err());
        let mut r = NdrReader::new(&[2, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            r.array_count(4, "a").unwrap_err().kind,
            DecodeErrorKind::TooLong
        );
        let mut r = NdrReader::new(&[1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(r.array_count(4, "a").unwrap(), 1);
    }

    #[test]
    fn string_rejects_offsets_and_overlong_actual() {
        let mut bytes = write(|w| {
            w.string("ab");
        });
        bytes[4] = 1;
        assert!(NdrReader::new(&bytes).string("s").is_err());
        bytes[4] = 0;
        bytes[8] = 4;
        assert!(NdrReader::new(&bytes).string("s").is_err());
    }

    #[test]
    fn alignment_is_relative_to_the_stub() {
        let bytes = write(|w| {
            w.u16(1).u32(2).u16(3).align(8).u32(4);
        });
        assert_eq!(hex(&bytes), "0100000002000000030000000000000004000000");
        let mut r = NdrReader::new(&bytes);
        assert_eq!(r.u16("a").unwrap(), 1);
        assert_eq!(r.u32("b").unwrap(), 2);
        assert_eq!(r.u16("c").unwrap(), 3);
        r.align(8, "pad").unwrap();
        assert_eq!(r.u32("d").unwrap(), 4);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn referent_ids_count_up_by_four() {
        let bytes = write(|w| {
            w.pointer(true).pointer(false).pointer(true);
        });
        assert_eq!(hex(&bytes), "000002000000000004000200");
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
}
