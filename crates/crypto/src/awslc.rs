//! The AWS-LC back end (`aws-lc-rs`): AES-GCM and GMAC with AWS-LC's VAES/VPCLMULQDQ (AVX-512)
//! and AES-NI/CLMUL assembly, and AES-CMAC and AES-CCM composed from its AES-CBC and AES-CTR
//! (`awslc_cbcmac`). HMAC-SHA256 comes from RustCrypto: as fast (both use SHA-NI) and its keyed
//! state is copied on the stack, where AWS-LC's HMAC context copy may allocate.

use aws_lc_rs::aead::{AES_128_GCM, AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};

use crate::awslc_cbcmac::{Ccm, Cmac};
use crate::gcm::{GcmKey, gcm_cipher, gmac_signer};
use crate::rustcrypto::{fill_os_random, hmac_signer};
use crate::signing::HeaderSigner;
use crate::{
    Cipher, CryptoError, CryptoProvider, MessageCipher, MessageSigner, SigningAlgorithm, first16,
};

/// The fastest implementation measured for each algorithm (docs/crypto.md): AWS-LC for
/// AES-GCM, AES-GMAC, AES-CCM and AES-CMAC; RustCrypto for HMAC-SHA256.
#[derive(Debug, Clone, Copy, Default)]
pub struct AwsLcProvider;

impl CryptoProvider for AwsLcProvider {
    fn signer(&self, alg: SigningAlgorithm, key: &[u8; 16]) -> Box<dyn MessageSigner> {
        match alg {
            SigningAlgorithm::HmacSha256 => hmac_signer(key),
            SigningAlgorithm::AesCmac => cmac_signer(key),
            SigningAlgorithm::AesGmac => gmac_signer::<LessSafeKey>(key),
        }
    }

    fn cipher(&self, cipher: Cipher, key: &[u8]) -> Result<Box<dyn MessageCipher>, CryptoError> {
        match cipher {
            Cipher::Aes128Gcm | Cipher::Aes256Gcm => gcm_cipher::<LessSafeKey>(cipher, key),
            Cipher::Aes128Ccm | Cipher::Aes256Ccm => Ok(Box::new(Ccm::new(cipher, key)?)),
        }
    }

    fn fill_random(&self, buf: &mut [u8]) {
        fill_os_random(buf);
    }
}

/// An AES-128-CMAC signer.
fn cmac_signer(key: &[u8; 16]) -> Box<dyn MessageSigner> {
    match Cmac::new(key) {
        Some(cmac) => Box::new(HeaderSigner(cmac)),
        // AES-128 accepts every 16-byte key; RustCrypto computes the same MAC.
        None => crate::RustCryptoProvider.signer(SigningAlgorithm::AesCmac, key),
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
        self.open_in_place_separate_tag(nonce, Aad::from(aad), tag, buf)
            .is_ok()
    }
}
