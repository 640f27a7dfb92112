//! Known-answer vectors for the MACs, shared by the back ends' unit tests (the signer API
//! zeroes a signature field, so the raw MACs are checked here, below it).

/// A MAC under test: key and message to a 16-byte tag.
pub(crate) type MacFn<'a> = &'a dyn Fn(&[u8; 16], &[u8]) -> [u8; 16];

pub(crate) fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// RFC 4493 section 4 (also NIST SP800-38B, `cryptography_vectors` CMAC/nist-800-38b-aes128.txt
/// COUNT 0-3): AES-128-CMAC of 0, 16, 40 and 64 bytes.
pub(crate) fn check_cmac(mac: MacFn<'_>) {
    let key: [u8; 16] = hex("2b7e151628aed2a6abf7158809cf4f3c").try_into().unwrap();
    let msg = hex(
        "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51\
         30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710",
    );
    let cases = [
        (0, "bb1d6929e95937287fa37d129b756746"),
        (16, "070a16b46b4d4144f79bdd9dd04a287c"),
        (40, "dfa66747de9ae63030ca32611497c827"),
        (64, "51f0bebf7e3b9d92fc49741779363cfe"),
    ];
    for (len, expected) in cases {
        assert_eq!(
            mac(&key, &msg[..len]).to_vec(),
            hex(expected),
            "CMAC len {len}"
        );
    }
}

/// RFC 4231 test case 2 (key "Jefe"), truncated to 16 bytes as SMB2 signing does. HMAC pads
/// a short key with zeros, so the 16-byte zero-padded key gives the same MAC.
pub(crate) fn check_hmac(mac: MacFn<'_>) {
    let mut key = [0u8; 16];
    key[..4].copy_from_slice(b"Jefe");
    let expected = hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    assert_eq!(
        mac(&key, b"what do ya want for nothing?").to_vec(),
        expected[..16].to_vec()
    );
}
