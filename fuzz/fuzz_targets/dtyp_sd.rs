#![no_main]
//! SecurityDescriptor::decode: accepted descriptors re-encode stably; filtering, merging,
//! access checks and inheritance over them never panic and keep their invariants.

use libfuzzer_sys::fuzz_target;
use smb3d_dtyp::{
    AccessMask, Privileges, SecurityDescriptor, SecurityInformation, Sid, Token, access_check,
    inherit, maximum_allowed,
};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let Ok(sd) = SecurityDescriptor::decode(bytes) else {
        return;
    };
    let once = sd.to_bytes();
    assert_eq!(once.len(), sd.encoded_len());
    let again = SecurityDescriptor::decode(&once).expect("re-encoded descriptor decodes");
    assert_eq!(again, sd, "decode(encode(sd)) == sd");

    let info = SecurityInformation(u32::from(selector) | (u32::from(selector & 0x80) << 9));
    let filtered = sd.filtered(info);
    assert_eq!(
        SecurityDescriptor::decode(&filtered.to_bytes()).expect("filtered decodes"),
        filtered
    );
    let merged = sd.merged(&filtered, info);
    let _ = merged.to_bytes();

    let token = Token {
        user: sd.owner.unwrap_or(Sid::EVERYONE),
        groups: sd.group.into_iter().chain([Sid::EVERYONE]).collect(),
        privileges: Privileges(u32::from(selector >> 6)),
    };
    let max = maximum_allowed(&sd, &token);
    let desired = AccessMask(u32::from_le_bytes([
        selector,
        selector & 1,
        0x1F,
        selector & 0xF3,
    ]));
    if let Ok(granted) = access_check(&sd, &token, desired) {
        assert!(max.contains(granted.without(AccessMask::MAXIMUM_ALLOWED)));
    }
    for is_directory in [false, true] {
        if let Some(child) = inherit(&sd, is_directory, &token.user, &token.user) {
            let bytes = child.to_bytes();
            assert_eq!(
                SecurityDescriptor::decode(&bytes).expect("child decodes"),
                child
            );
        }
    }
});
