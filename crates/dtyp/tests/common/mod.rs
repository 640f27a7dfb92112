//! Helpers and captured vectors shared by the integration tests (each test crate uses a
//! different part of them).
#![allow(dead_code)]

pub mod samba417;
pub mod wire;

/// Bytes from hex, ignoring whitespace (so vectors can be wrapped).
pub fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    assert!(digits.len().is_multiple_of(2), "odd hex length");
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}
