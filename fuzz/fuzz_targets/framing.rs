#![no_main]
//! Direct-TCP prefixes: a length is accepted only within the limit and re-encodes exactly.

use libfuzzer_sys::fuzz_target;
use smb3d_smb2::framing::{encode_frame_prefix, frame_len};

fuzz_target!(|data: &[u8]| {
    let Some((prefix, rest)) = data.split_first_chunk::<4>() else {
        return;
    };
    let max = rest
        .first_chunk::<4>()
        .map_or(1 << 20, |m| u32::from_le_bytes(*m) as usize);
    if let Ok(len) = frame_len(*prefix, max) {
        assert!(len <= max);
        assert_eq!(encode_frame_prefix(len).unwrap(), *prefix);
    }
});
