#![no_main]
//! Header::decode: accepted headers survive to_bytes/decode unchanged.

use libfuzzer_sys::fuzz_target;
use smb3d_smb2::header::Header;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Header::decode(data) {
        assert_eq!(Header::decode(&h.to_bytes()).unwrap(), h);
        let _ = h.channel_sequence();
    }
});
