#![no_main]
//! SIDs: the string parser and the binary decoder; what either accepts survives the other
//! form and back.

use libfuzzer_sys::fuzz_target;
use smb3d_dtyp::Sid;
use smb3d_wire::{Reader, Writer};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = core::str::from_utf8(data)
        && let Ok(sid) = text.parse::<Sid>()
    {
        assert_eq!(sid.to_string().parse::<Sid>().expect("display parses"), sid);
    }
    if let Ok(sid) = Sid::decode(&mut Reader::new(data)) {
        let mut once = Vec::new();
        sid.encode(&mut Writer::new(&mut once));
        assert_eq!(once.len(), sid.encoded_len());
        assert_eq!(once, data[..once.len()]);
        assert_eq!(sid.to_string().parse::<Sid>().expect("display parses"), sid);
    }
});
