#![no_main]
//! Every response decoder (what the test client reads): the first byte picks the command (19:
//! the error response), the rest is the PDU.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some((&kind, pdu)) = data.split_first() {
        smb3d_fuzz::check_response(kind, pdu);
    }
});
