#![no_main]
//! Every request decoder: the first byte picks the command, the rest is the PDU.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((&kind, pdu)) = data.split_first() {
        smb3d_fuzz::check_request(kind, pdu);
    }
});
