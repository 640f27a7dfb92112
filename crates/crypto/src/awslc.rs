//! The AWS-LC back end (`aws-lc-rs`): AES-GCM and GMAC with AWS-LC's VAES/VPCLMULQDQ (AVX-512)
//! and AES-NI/CLMUL assembly, and AES-CMAC and AES-CCM composed from its AES-CBC and AES-CTR
//! (`awslc_cbcmac`). HMAC-SHA256 comes from RustCrypto: as fast (both use SHA-NI) and its keyed
//! state is copied on the stack, where AWS-LC's HMAC context copy may allocate.

use crate::awslc_cbcmac::{Ccm, Cmac};
use crate::rustcrypto::{fill_os_random, hmac_signer};
use crate::signing::{HeaderSigner, Mac16, gmac_nonce};
use crate::{
    Cipher, CryptoError, CryptoProvider, MessageCipher, MessageSigner, SigningAlgorithm, check_key,
    check_nonce,
};
use aws_lc_rs::aead::{AES_128_GCM, AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};

/// The fastest implementation measured for each algorithm (docs/crypto.md): AWS-LC for
/// AES-GCM, AES-GMAC, AES-CCM and AES-CMAC; RustCrypto for HMAC-SHA256.
#[derive(Debug, Clone, Copy, Default)]
pub struct AwsLcProvider;

impl CryptoProvider for AwsLcProvider {
    fn signer(&self, alg: SigningAlgorithm, key: &[u8; 16]) -> Box<dyn MessageSigner> {
        match alg {
            SigningAlgorithm::HmacSha256 => hmac_signer(key),
            SigningAlgorithm::AesCmac => cmac_signer(key),
            SigningAlgorithm::AesGmac => gmac_signer(key),
        }
    }

    fn cipher(&self, cipher: Cipher, key: &[u8]) -> Result<Box<dyn MessageCipher>, CryptoError> {
        match cipher {
            Cipher::Aes128Gcm | Cipher::Aes256Gcm => gcm_cipher(cipher, key),
            Cipher::Aes128Ccm | Cipher::Aes256Ccm => Ok(Box::new(Ccm::new(cipher, key)?)),
        }
    }

    fn fill_random(&self, buf: &mut [u8]) {
        fill_os_random(buf);
    }
}

fn gcm_key(cipher: Cipher, key: &[u8]) -> Result<LessSafeKey, CryptoError> {
    check_key(cipher, key)?;
    let alg = if cipher.is_256() {
        &AES_256_GCM
    } else {
        &AES_128_GCM
    };
    let unbound = UnboundKey::new(alg, key).map_err(|_| CryptoError::InvalidKeyLength {
        expected: cipher.key_len(),
        got: key.len(),
    })?;
    Ok(LessSafeKey::new(unbound))
}

/// An AES-GCM cipher.
pub(crate) fn gcm_cipher(
    cipher: Cipher,
    key: &[u8],
) -> Result<Box<dyn MessageCipher>, CryptoError> {
    Ok(Box::new(Gcm {
        key: gcm_key(cipher, key)?,
        cipher,
    }))
}

/// An AES-128-GMAC signer.
pub(crate) fn gmac_signer(key: &[u8; 16]) -> Box<dyn MessageSigner> {
    match gcm_key(Cipher::Aes128Gcm, key) {
        Ok(key) => Box::new(HeaderSigner(Gmac(key))),
        // A 16-byte AES-128 key is always accepted; should AWS-LC ever refuse one, the
        // RustCrypto signer computes the same MAC.
        Err(_) => crate::RustCryptoProvider.signer(SigningAlgorithm::AesGmac, key),
    }
}

/// An AES-128-CMAC signer.
pub(crate) fn cmac_signer(key: &[u8; 16]) -> Box<dyn MessageSigner> {
    match Cmac::new(key) {
        Some(cmac) => Box::new(HeaderSigner(cmac)),
        // AES-128 accepts every 16-byte key; RustCrypto computes the same MAC.
        None => crate::RustCryptoProvider.signer(SigningAlgorithm::AesCmac, key),
    }
}

fn nonce_of(cipher: Cipher, nonce: &[u8]) -> Result<Nonce, CryptoError> {
    check_nonce(cipher, nonce)?;
    Nonce::try_assume_unique_for_key(nonce).map_err(|_| CryptoError::InvalidNonceLength {
        expected: cipher.nonce_len(),
        got: nonce.len(),
    })
}

fn first16(b: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    if let Some(src) = b.get(..16) {
        out.copy_from_slice(src);
    }
    out
}

struct Gcm {
    key: LessSafeKey,
    cipher: Cipher,
}

impl MessageCipher for Gcm {
    fn encrypt(&self, nonce: &[u8], aad: &[u8], buf: &mut [u8]) -> Result<[u8; 16], CryptoError> {
        let nonce = nonce_of(self.cipher, nonce)?;
        let tag = self
            .key
            .seal_in_place_separate_tag(nonce, Aad::from(aad), buf)
            .map_err(|_| CryptoError::TooLong)?;
        Ok(first16(tag.as_ref()))
    }

    fn decrypt(
        &self,
        nonce: &[u8],
        aad: &[u8],
        buf: &mut [u8],
        tag: &[u8; 16],
    ) -> Result<(), CryptoError> {
        let nonce = nonce_of(self.cipher, nonce)?;
        self.key
            .open_in_place_separate_tag(nonce, Aad::from(aad), tag, buf)
            .map(|_| ())
            .map_err(|_| CryptoError::AuthenticationFailed)
    }
}

/// AES-128-GMAC: GCM over an empty plaintext with the message as associated data (RFC 4543).
struct Gmac(LessSafeKey);

impl Mac16 for Gmac {
    fn mac(&self, msg: &[u8]) -> [u8; 16] {
        let nonce = Nonce::assume_unique_for_key(gmac_nonce(msg));
        // Only input beyond GCM's limits fails; an all-zero MAC then matches no real signature.
        self.0
            .seal_in_place_separate_tag(nonce, Aad::from(msg), &mut [])
            .map_or([0; 16], |tag| first16(tag.as_ref()))
    }
}
