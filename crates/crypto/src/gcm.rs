//! AES-GCM and AES-GMAC over a back end's one-shot GCM: what the AWS-LC and ring back ends
//! share (their `LessSafeKey`s have the same shape), so that each states only how its key
//! is made, seals and opens. Generic, not boxed: the per-message calls stay static.

use crate::signing::{HeaderSigner, Mac16, gmac_nonce};
use crate::{
    Cipher, CryptoError, CryptoProvider, MessageCipher, MessageSigner, SigningAlgorithm, check_key,
};

/// A back end's AES-GCM key: seals and opens in place with a detached 16-byte tag.
pub(crate) trait GcmKey: Send + Sync + Sized + 'static {
    /// The key for AES-128-GCM or AES-256-GCM (`key` has the cipher's length); `None` if the
    /// back end refuses it.
    fn for_cipher(cipher: Cipher, key: &[u8]) -> Option<Self>;
    /// Encrypts `buf` in place and returns the tag; `None` for input beyond GCM's limits.
    fn seal(&self, nonce: [u8; 12], aad: &[u8], buf: &mut [u8]) -> Option<[u8; 16]>;
    /// Checks the tag and decrypts `buf` in place; false if the tag does not match.
    fn open(&self, nonce: [u8; 12], aad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> bool;
}

/// An AES-GCM cipher.
pub(crate) fn gcm_cipher<K: GcmKey>(
    cipher: Cipher,
    key: &[u8],
) -> Result<Box<dyn MessageCipher>, CryptoError> {
    check_key(cipher, key)?;
    let gcm_key = K::for_cipher(cipher, key).ok_or(CryptoError::InvalidKeyLength {
        expected: cipher.key_len(),
        got: key.len(),
    })?;
    Ok(Box::new(Gcm {
        key: gcm_key,
        cipher,
    }))
}

/// An AES-128-GMAC signer.
pub(crate) fn gmac_signer<K: GcmKey>(key: &[u8; 16]) -> Box<dyn MessageSigner> {
    match K::for_cipher(Cipher::Aes128Gcm, key) {
        Some(gcm_key) => Box::new(HeaderSigner(Gmac(gcm_key))),
        // AES-128 accepts every 16-byte key; should a back end ever refuse one, the
        // RustCrypto signer computes the same MAC.
        None => crate::RustCryptoProvider.signer(SigningAlgorithm::AesGmac, key),
    }
}

struct Gcm<K> {
    key: K,
    cipher: Cipher,
}

impl<K> Gcm<K> {
    fn nonce(&self, nonce: &[u8]) -> Result<[u8; 12], CryptoError> {
        <[u8; 12]>::try_from(nonce).map_err(|_| CryptoError::InvalidNonceLength {
            expected: self.cipher.nonce_len(),
            got: nonce.len(),
        })
    }
}

impl<K: GcmKey> MessageCipher for Gcm<K> {
    fn encrypt(&self, nonce: &[u8], aad: &[u8], buf: &mut [u8]) -> Result<[u8; 16], CryptoError> {
        let nonce = self.nonce(nonce)?;
        self.key.seal(nonce, aad, buf).ok_or(CryptoError::TooLong)
    }

    fn decrypt(
        &self,
        nonce: &[u8],
        aad: &[u8],
        buf: &mut [u8],
        tag: &[u8; 16],
    ) -> Result<(), CryptoError> {
        let nonce = self.nonce(nonce)?;
        if self.key.open(nonce, aad, buf, tag) {
            Ok(())
        } else {
            Err(CryptoError::AuthenticationFailed)
        }
    }
}

/// AES-128-GMAC: GCM over an empty plaintext with the message as associated data (RFC 4543).
struct Gmac<K>(K);

impl<K: GcmKey> Mac16 for Gmac<K> {
    fn mac(&self, msg: &[u8]) -> [u8; 16] {
        // Only input beyond GCM's limits fails; an all-zero MAC then matches no real signature.
        self.0
            .seal(gmac_nonce(msg), msg, &mut [])
            .unwrap_or([0; 16])
    }
}
