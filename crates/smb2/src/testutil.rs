//! Helpers for the golden-vector tests.

use smb3d_wire::Writer;

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

/// A PDU made of a 64-byte all-zero header and `body`, for rejection tests.
pub(crate) fn pdu_with_body(body: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; SMB2_HEADER_LEN];
    v.extend_from_slice(body);
    v
}
