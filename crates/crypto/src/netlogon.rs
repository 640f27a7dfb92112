//! The cryptography of a Netlogon secure channel with AES (MS-NRPC 3.1.4.3.1, 3.1.4.4.1 and
//! 3.3.4.2): the session key from the machine account's NT hash and the two challenges, the
//! AES-128-CFB8 credentials, and the HMAC-SHA256 checksum and AES-128-CFB8 sealing of the
//! NL_AUTH_SHA2_SIGNATURE that protects each RPC PDU.

use aes::Aes128;
use aes::cipher::{Array, BlockCipherEncrypt, KeyInit};
use hmac::Mac;
use sha2::Sha256;
use zeroize::{Zeroize, Zeroizing};

type HmacSha256 = hmac::Hmac<Sha256>;

/// The session key of MS-NRPC 3.1.4.3.1 (AES): HMAC-SHA256 keyed with the NT hash of the
/// shared secret over ClientChallenge || ServerChallenge, its first 16 bytes.
pub fn netlogon_session_key(
    nt_hash: &[u8; 16],
    client_challenge: &[u8; 8],
    server_challenge: &[u8; 8],
) -> Zeroizing<[u8; 16]> {
    let mut digest = hmac_sha256(nt_hash, &[client_challenge, server_challenge]);
    let mut key = Zeroizing::new([0u8; 16]);
    key.copy_from_slice(digest.get(..16).unwrap_or(&[0; 16]));
    digest.zeroize();
    key
}

/// ComputeNetlogonCredential with AES (MS-NRPC 3.1.4.4.1): AES-128-CFB8 of the 8-byte input
/// under the session key with an all-zero IV.
pub fn netlogon_credential(input: &[u8; 8], session_key: &[u8; 16]) -> [u8; 8] {
    let mut out = *input;
    Cfb8::new(session_key, &[0; 16]).encrypt(&mut out);
    out
}

/// HMAC-SHA256 of the concatenated `parts` (the checksum of NL_AUTH_SHA2_SIGNATURE takes its
/// first 8 bytes).
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes keys of any length, so this cannot fail.
    let Ok(mut mac) = <HmacSha256 as KeyInit>::new_from_slice(key) else {
        return [0; 32];
    };
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// AES-128 in 8-bit cipher feedback mode (NIST SP 800-38A 6.3 with s = 8), the mode MS-NRPC
/// uses for credentials and sealing. The state runs on across calls, so a confounder and the
/// data after it form one stream, as MS-NRPC 3.3.4.2.1 encrypts them.
pub struct Cfb8 {
    cipher: Aes128,
    register: [u8; 16],
}

impl Cfb8 {
    /// A stream under `key` starting from `iv`.
    pub fn new(key: &[u8; 16], iv: &[u8; 16]) -> Self {
        Self {
            cipher: Aes128::new(&Array::from(*key)),
            register: *iv,
        }
    }

    /// Encrypts `data` in place.
    pub fn encrypt(&mut self, data: &mut [u8]) {
        for byte in data {
            *byte ^= self.keystream_byte();
            self.shift_in(*byte);
        }
    }

    /// Decrypts `data` in place.
    pub fn decrypt(&mut self, data: &mut [u8]) {
        for byte in data {
            let cipher_byte = *byte;
            *byte ^= self.keystream_byte();
            self.shift_in(cipher_byte);
        }
    }

    fn keystream_byte(&self) -> u8 {
        let mut block = Array::from(self.register);
        self.cipher.encrypt_block(&mut block);
        block.first().copied().unwrap_or(0)
    }

    fn shift_in(&mut self, cipher_byte: u8) {
        self.register.copy_within(1.., 0);
        if let Some(last) = self.register.last_mut() {
            *last = cipher_byte;
        }
    }
}

impl Drop for Cfb8 {
    fn drop(&mut self) {
        self.register.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// NIST SP 800-38A F.3.7 (CFB8-AES128.Encrypt) and F.3.8 (Decrypt).
    #[test]
    fn cfb8_matches_sp800_38a() {
        let key: [u8; 16] = unhex("2b7e151628aed2a6abf7158809cf4f3c")
            .try_into()
            .unwrap();
        let iv: [u8; 16] = unhex("000102030405060708090a0b0c0d0e0f")
            .try_into()
            .unwrap();
        let plain = unhex("6bc1bee22e409f96e93d7e117393172aae2d");
        let cipher = unhex("3b79424c9c0dd436bace9e0ed4586a4f32b9");
        let mut data = plain.clone();
        Cfb8::new(&key, &iv).encrypt(&mut data);
        assert_eq!(data, cipher);
        // The stream continues across calls: split anywhere, the same bytes come out.
        let mut split = plain.clone();
        let mut stream = Cfb8::new(&key, &iv);
        let (a, b) = split.split_at_mut(5);
        stream.encrypt(a);
        stream.encrypt(b);
        assert_eq!(split, cipher);
        Cfb8::new(&key, &iv).decrypt(&mut data);
        assert_eq!(data, plain);
    }

    #[test]
    fn hmac_sha256_matches_rfc4231() {
        // RFC 4231 4.3, test case 2.
        let mac = hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        assert_eq!(
            mac.to_vec(),
            unhex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        );
    }
}
