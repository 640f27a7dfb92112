#![no_main]
//! MS-PAC: the PACTYPE, its buffers, KERB_VALIDATION_INFO's NDR, PAC_CLIENT_INFO and
//! UPN_DNS_INFO, decoded and verified with the service key of the captured Samba AD PAC
//! (corpus seed). Never panics, and what verifies decodes to the same SIDs unverified.

use libfuzzer_sys::fuzz_target;
use smb3d_auth::krb5::pac::{self, TicketFacts};

const KEY: [u8; 32] = [
    0x2b, 0x98, 0x68, 0x48, 0x47, 0xfe, 0x70, 0x65, 0x79, 0xa1, 0x17, 0x8b, 0xcc, 0x8f, 0xb8, 0x94,
    0x49, 0x50, 0xea, 0x3c, 0xa9, 0x7b, 0xf8, 0xb0, 0x38, 0x1d, 0xfb, 0xeb, 0xd5, 0xb9, 0x73, 0x6e,
];

fuzz_target!(|data: &[u8]| {
    let decoded = pac::decode_unverified(data);
    let facts = TicketFacts { client: "dora", auth_time: 1_795_810_369, key: &KEY, etype: 18 };
    if let Ok(Some(verified)) = pac::verify(data, &facts) {
        assert_eq!(Ok(verified), decoded, "a verified PAC decodes alike");
    }
});
