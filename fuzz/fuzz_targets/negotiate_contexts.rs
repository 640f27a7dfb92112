#![no_main]
//! negotiate::decode_contexts: the first byte is the count, the rest follows a zeroed header
//! (so the list starts at offset 64); accepted lists re-encode to the same contexts.

use libfuzzer_sys::fuzz_target;
use smb3d_smb2::header::SMB2_HEADER_LEN;
use smb3d_smb2::negotiate::decode_contexts;
use smb3d_wire::Writer;

fuzz_target!(|data: &[u8]| {
    let Some((&count, rest)) = data.split_first() else {
        return;
    };
    let mut pdu = vec![0u8; SMB2_HEADER_LEN];
    pdu.extend_from_slice(rest);
    if let Ok(contexts) = decode_contexts(&pdu, SMB2_HEADER_LEN as u32, u16::from(count)) {
        let mut again = vec![0u8; SMB2_HEADER_LEN];
        let mut w = Writer::with_base(&mut again, 0);
        for (i, c) in contexts.iter().enumerate() {
            if i > 0 {
                w.align(8);
            }
            c.encode(&mut w);
        }
        let reparsed = decode_contexts(&again, SMB2_HEADER_LEN as u32, u16::from(count))
            .expect("re-encoded contexts decode");
        assert_eq!(reparsed.len(), contexts.len());
    }
});
