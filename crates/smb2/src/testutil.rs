//! Helpers for the golden-vector tests.

use smb3d_wire::{Codec, Writer};

use crate::header::SMB2_HEADER_LEN;

/// Decodes hex, ignoring whitespace (vectors are pasted as wrapped lines).
pub(crate) fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits");
    digits
        .chunks(2)
        .map(|p| {
            let s = std::str::from_utf8(p).unwrap();
            u8::from_str_radix(s, 16).unwrap()
        })
        .collect()
}

/// Re-encodes a body after the original PDU's header, so the result can be compared with the
/// whole captured PDU.
pub(crate) fn with_header(pdu: &[u8], body: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut w = Writer::new(&mut buf);
    w.bytes(&pdu[..SMB2_HEADER_LEN]);
    body(&mut w);
    buf
}

/// Decodes a captured PDU and checks that its body re-encodes, after the captured header, to
/// the same bytes.
pub(crate) fn golden<'a, T: Codec<'a>>(pdu: &'a [u8]) -> T {
    let value = T::decode(pdu).unwrap();
    assert_eq!(with_header(pdu, |w| value.encode(w)), pdu);
    value
}

/// A PDU made of a 64-byte all-zero header and `body`, for rejection tests.
pub(crate) fn pdu_with_body(body: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; SMB2_HEADER_LEN];
    v.extend_from_slice(body);
    v
}

/// Encodes `value` after a zeroed header into `buf` and decodes the PDU back; the result may
/// borrow from `buf`.
pub(crate) fn pdu_round_trip<'a, T: Codec<'a>>(value: &T, buf: &'a mut Vec<u8>) -> T {
    buf.clear();
    buf.resize(SMB2_HEADER_LEN, 0);
    value.encode(&mut Writer::with_base(buf, 0));
    T::decode(buf).unwrap()
}
