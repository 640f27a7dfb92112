#![no_main]
//! MS-NRPC answers of a domain controller, which crosses the network: byte 0 picks ept_map's
//! answer (tower counts and lengths), NetrLogonSamLogonEx's answer (the validation union and
//! NETLOGON_VALIDATION_SAM_INFO2's NDR), or a sealed PDU (a 56-byte NL_AUTH_SHA2_SIGNATURE,
//! then the payload) unsealed with the session key of the recorded Samba exchange, whose
//! answer is then decoded. Never panics, allocates within the input's size.

use libfuzzer_sys::fuzz_target;
use smb3d_auth::netlogon::{Sealer, ept_map_port, sam_logon_ex_answer};
use zeroize::Zeroizing;

const SESSION_KEY: [u8; 16] = [
    0x31, 0xa6, 0x8e, 0xc3, 0x0a, 0xaf, 0x47, 0x0a, 0x7c, 0x3b, 0xac, 0x85, 0xf7, 0x2b, 0x26, 0xda,
];

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 3 {
        0 => {
            let _ = ept_map_port(rest);
        }
        1 => {
            let _ = sam_logon_ex_answer(rest);
        }
        _ => {
            let Some((token, payload)) = rest.split_at_checked(56) else {
                return;
            };
            let mut payload = payload.to_vec();
            let mut sealer = Sealer::client(Zeroizing::new(SESSION_KEY)).at_sequence(1);
            if sealer.unseal(&mut payload, token).is_ok() {
                let _ = sam_logon_ex_answer(&payload);
            }
        }
    }
});
