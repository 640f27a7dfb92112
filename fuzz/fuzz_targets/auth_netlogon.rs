#![no_main]
//! MS-NRPC and MS-LSAT answers of a domain controller, which crosses the network: byte 0 picks
//! ept_map's answer (tower counts and lengths), NetrLogonSamLogonEx's answer (the validation
//! union and NETLOGON_VALIDATION_SAM_INFO2's NDR), LsarLookupNames4's or LsarLookupSids3's
//! answer (to as many names or SIDs as byte 1 says, up to 15), or a sealed PDU (a 56-byte NL_AUTH_SHA2_SIGNATURE,
//! then the payload) unsealed with the session key of the recorded Samba exchange, whose
//! answer is then decoded. Never panics, allocates within the input's size.

use libfuzzer_sys::fuzz_target;
use smb3d_auth::netlogon::{
    Sealer, ept_map_port, lookup_names4_answer, lookup_sids3_answer, sam_logon_ex_answer,
};
use smb3d_dtyp::Sid;
use zeroize::Zeroizing;

const SESSION_KEY: [u8; 16] = [
    0x31, 0xa6, 0x8e, 0xc3, 0x0a, 0xaf, 0x47, 0x0a, 0x7c, 0x3b, 0xac, 0x85, 0xf7, 0x2b, 0x26, 0xda,
];

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let asked = usize::from(rest.first().copied().unwrap_or(0) % 16);
    match which % 5 {
        0 => {
            let _ = ept_map_port(rest);
        }
        1 => {
            let _ = sam_logon_ex_answer(rest);
        }
        2 => {
            let names: Vec<String> = (0..asked).map(|i| format!("AD\\name{i}")).collect();
            if let Ok(answer) = lookup_names4_answer(rest.get(1..).unwrap_or_default(), &names) {
                assert_eq!(answer.len(), asked);
            }
        }
        3 => {
            let sids: Vec<Sid> = (0..asked)
                .filter_map(|i| Sid::new(5, &[21, 1, 2, 3, 1000 + u32::try_from(i).unwrap_or(0)]))
                .collect();
            if let Ok(answer) = lookup_sids3_answer(rest.get(1..).unwrap_or_default(), &sids) {
                assert_eq!(answer.len(), sids.len());
            }
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
