#![no_main]
//! Smb1Negotiate::decode over arbitrary SMB1 messages.

use libfuzzer_sys::fuzz_target;
use smb3d_smb2::smb1::Smb1Negotiate;

fuzz_target!(|data: &[u8]| {
    if let Ok(n) = Smb1Negotiate::decode(data) {
        assert!(n.dialect_count * 2 <= data.len());
    }
});
