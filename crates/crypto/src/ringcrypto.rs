//! The ring back end: AES-GCM and GMAC from ring's BoringSSL-derived assembly, and
//! HMAC-SHA256. ring has neither AES-CCM nor AES-CMAC; those come from RustCrypto.

use ring::aead::{AES_128_GCM, AES_256_GCM, Aad, LessSafeKey, Nonce, Tag, UnboundKey};
use ring::hmac;

use crate::gcm::{GcmKey, gcm_cipher, gmac_signer};
use crate::rustcrypto::{ccm_cipher, cmac_signer, fill_os_random};
use crate::signing::{HeaderSigner, Mac16};
use crate::{
    Cipher, CryptoError, CryptoProvider, MessageCipher, MessageSigner, SigningAlgorithm, first16,
};

/// ring for GCM, GMAC and HMAC-SHA256; CCM and CMAC from RustCrypto.
#[derive(Debug, Clone, Copy, Default)]
pub struct RingProvider;

impl CryptoProvider for RingProvider {
    fn signer(&self, alg: SigningAlgorithm, key: &[u8; 16]) -> Box<dyn MessageSigner> {
        match alg {
            SigningAlgorithm::HmacSha256 => Box::new(HeaderSigner(HmacMac(hmac::Key::new(
                hmac::HMAC_SHA256,
                key,
            )))),
            SigningAlgorithm::AesCmac => cmac_signer(key),
            SigningAlgorithm::AesGmac => gmac_signer::<LessSafeKey>(key),
        }
    }

    fn cipher(&self, cipher: Cipher, key: &[u8]) -> Result<Box<dyn MessageCipher>, CryptoError> {
        match cipher {
            Cipher::Aes128Gcm | Cipher::Aes256Gcm => gcm_cipher::<LessSafeKey>(cipher, key),
            Cipher::Aes128Ccm | Cipher::Aes256Ccm => ccm_cipher(cipher, key),
        }
    }

    fn fill_random(&self, buf: &mut [u8]) {
        fill_os_random(buf);
    }
}

impl GcmKey for LessSafeKey {
    fn for_cipher(cipher: Cipher, key: &[u8]) -> Option<Self> {
        let alg = if cipher.is_256() {
            &AES_256_GCM
        } else {
            &AES_128_GCM
        };
        UnboundKey::new(alg, key).ok().map(LessSafeKey::new)
    }

    // Inlined into Gcm's and Gmac's per-message calls, so that sharing them adds no call.
    #[inline(always)]
    fn seal(&self, nonce: [u8; 12], aad: &[u8], buf: &mut [u8]) -> Option<[u8; 16]> {
        let nonce = Nonce::assume_unique_for_key(nonce);
        self.seal_in_place_separate_tag(nonce, Aad::from(aad), buf)
            .ok()
            .map(|tag| first16(tag.as_ref()))
    }

    #[inline(always)]
    fn open(&self, nonce: [u8; 12], aad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> bool {
        let nonce = Nonce::assume_unique_for_key(nonce);
        self.open_in_place_separate_tag(nonce, Aad::from(aad), Tag::from(*tag), buf, 0..)
            .is_ok()
    }
}

struct HmacMac(hmac::Key);

impl Mac16 for HmacMac {
    fn mac(&self, msg: &[u8]) -> [u8; 16] {
        first16(hmac::sign(&self.0, msg).as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testvectors::check_hmac;

    #[test]
    fn hmac_rfc4231() {
        check_hmac(&|k, m| HmacMac(hmac::Key::new(hmac::HMAC_SHA256, k)).mac(m));
    }
}
