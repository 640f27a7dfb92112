#![no_main]
//! The encryption and compression transform headers; accepted frames re-encode to the same
//! values (reserved fields become zero).

use libfuzzer_sys::fuzz_target;
use smb3d_smb2::transform::{CompressedMessage, TransformHeader, aad};
use smb3d_wire::Writer;

fuzz_target!(|data: &[u8]| {
    if let Ok((h, ciphertext)) = TransformHeader::decode(data) {
        assert_eq!(ciphertext.end, data.len());
        assert_eq!(aad(data).len(), 32);
        let mut out = Vec::new();
        h.encode(&mut Writer::new(&mut out));
        out.extend_from_slice(&data[ciphertext.clone()]);
        assert_eq!(TransformHeader::decode(&out).unwrap(), (h, ciphertext));
    }
    if let Ok(m) = CompressedMessage::decode(data) {
        let mut once = Vec::new();
        m.encode(&mut Writer::new(&mut once));
        let again = CompressedMessage::decode(&once).expect("re-encoded message decodes");
        assert_eq!(again, m);
    }
});
