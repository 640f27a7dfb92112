#![no_main]
//! What the server does with a frame: split the compound, then decode each PDU with the
//! decoder its header's command selects (responses with the response decoders).

use libfuzzer_sys::fuzz_target;
use smb3d_smb2::compound::split;

fuzz_target!(|data: &[u8]| {
    for item in split(data) {
        let Ok((header, pdu)) = item else { break };
        let Ok(command) = u8::try_from(header.command.0) else {
            continue;
        };
        if command > 18 {
            continue;
        }
        if header.is_response() {
            smb3d_fuzz::check_response(command, pdu);
            smb3d_fuzz::check_response(19, pdu);
        } else {
            smb3d_fuzz::check_request(command, pdu);
        }
    }
});
