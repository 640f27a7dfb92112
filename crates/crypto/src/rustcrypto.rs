//! The pure-Rust back end: RustCrypto's `aes` (AES-NI detected at run time), `aes-gcm`
//! (CLMUL GHASH), `ccm`, `cmac`, `hmac` and `sha2` (SHA-NI).

use aes::{Aes128, Aes256};
use aes_gcm::aead::array::Array;
use aes_gcm::aead::consts::{U11, U16};
use aes_gcm::aead::{AeadCore, AeadInOut, KeyInit};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use ccm::Ccm;
use cmac::Cmac;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::signing::{HeaderSigner, Mac16, gmac_nonce};
use crate::{
    Cipher, CryptoError, CryptoProvider, MessageCipher, MessageSigner, SigningAlgorithm, check_key,
    check_nonce, first16,
};

/// Every algorithm from the RustCrypto crates, in safe Rust.
#[derive(Debug, Clone, Copy, Default)]
pub struct RustCryptoProvider;

impl CryptoProvider for RustCryptoProvider {
    fn signer(&self, alg: SigningAlgorithm, key: &[u8; 16]) -> Box<dyn MessageSigner> {
        match alg {
            SigningAlgorithm::HmacSha256 => hmac_signer(key),
            SigningAlgorithm::AesCmac => cmac_signer(key),
            SigningAlgorithm::AesGmac => {
                Box::new(HeaderSigner(GmacMac(Aes128Gcm::new(&Array::from(*key)))))
            }
        }
    }

    fn cipher(&self, cipher: Cipher, key: &[u8]) -> Result<Box<dyn MessageCipher>, CryptoError> {
        match cipher {
            Cipher::Aes128Gcm => aead::<Aes128Gcm>(cipher, key),
            Cipher::Aes256Gcm => aead::<Aes256Gcm>(cipher, key),
            Cipher::Aes128Ccm | Cipher::Aes256Ccm => ccm_cipher(cipher, key),
        }
    }

    fn fill_random(&self, buf: &mut [u8]) {
        fill_os_random(buf);
    }
}

/// Reads the kernel's CSPRNG. Without it no key or nonce could be trusted, so failing (which
/// Linux's getrandom(2) does not do once the pool is initialised) aborts the process.
pub(crate) fn fill_os_random(buf: &mut [u8]) {
    if getrandom::fill(buf).is_err() {
        std::process::abort();
    }
}

/// An HMAC-SHA256 signer (dialects 2.0.2 and 2.1).
pub(crate) fn hmac_signer(key: &[u8; 16]) -> Box<dyn MessageSigner> {
    Box::new(HeaderSigner(RcMac(<Hmac<Sha256> as KeyInit>::new(
        &Array::from(pad_hmac_key(key)),
    ))))
}

/// An AES-128-CMAC signer.
pub(crate) fn cmac_signer(key: &[u8; 16]) -> Box<dyn MessageSigner> {
    Box::new(HeaderSigner(RcMac(<Cmac<Aes128> as KeyInit>::new(
        &Array::from(*key),
    ))))
}

/// An AES-CCM cipher (11-byte nonce, 16-byte tag, as MS-SMB2 2.2.41 fixes them).
pub(crate) fn ccm_cipher(
    cipher: Cipher,
    key: &[u8],
) -> Result<Box<dyn MessageCipher>, CryptoError> {
    match cipher {
        Cipher::Aes256Ccm | Cipher::Aes256Gcm => {
            aead::<Ccm<Aes256, U16, U11>>(Cipher::Aes256Ccm, key)
        }
        Cipher::Aes128Ccm | Cipher::Aes128Gcm => {
            aead::<Ccm<Aes128, U16, U11>>(Cipher::Aes128Ccm, key)
        }
    }
}

/// HMAC's key block: a 16-byte key zero-padded to SHA-256's 64-byte block, which is what HMAC
/// does with a short key, so the keyed state is built without a fallible length check.
fn pad_hmac_key(key: &[u8; 16]) -> [u8; 64] {
    let mut block = [0u8; 64];
    let (head, _) = block.split_at_mut(16);
    head.copy_from_slice(key);
    block
}

/// HMAC-SHA256 or AES-CMAC, keyed once: each message is MACed by a copy of the keyed state,
/// on the stack.
struct RcMac<M>(M);

impl<M: Mac + Clone + Send + Sync> Mac16 for RcMac<M> {
    fn mac(&self, msg: &[u8]) -> [u8; 16] {
        let mut m = self.0.clone();
        m.update(msg);
        first16(&m.finalize().into_bytes())
    }
}

/// AES-128-GMAC: GCM over an empty plaintext with the message as associated data (RFC 4543).
struct GmacMac(Aes128Gcm);

impl Mac16 for GmacMac {
    fn mac(&self, msg: &[u8]) -> [u8; 16] {
        let nonce = Array::from(gmac_nonce(msg));
        // Only a message beyond GCM's 2^61-byte associated-data limit fails; its all-zero
        // MAC cannot match a real signature.
        self.0
            .encrypt_inout_detached(&nonce, msg, (&mut [][..]).into())
            .map_or([0; 16], |tag| first16(&tag))
    }
}

/// A RustCrypto AEAD behind [`MessageCipher`].
struct RcAead<A> {
    aead: A,
    cipher: Cipher,
}

fn aead<A>(cipher: Cipher, key: &[u8]) -> Result<Box<dyn MessageCipher>, CryptoError>
where
    A: AeadInOut + KeyInit + Send + Sync + 'static,
{
    check_key(cipher, key)?;
    let aead = A::new_from_slice(key).map_err(|_| CryptoError::InvalidKeyLength {
        expected: cipher.key_len(),
        got: key.len(),
    })?;
    Ok(Box::new(RcAead { aead, cipher }))
}

impl<A: AeadCore> RcAead<A> {
    fn nonce<'n>(&self, nonce: &'n [u8]) -> Result<&'n Array<u8, A::NonceSize>, CryptoError> {
        check_nonce(self.cipher, nonce)?;
        nonce
            .try_into()
            .map_err(|_| CryptoError::InvalidNonceLength {
                expected: self.cipher.nonce_len(),
                got: nonce.len(),
            })
    }
}

impl<A> MessageCipher for RcAead<A>
where
    A: AeadInOut + Send + Sync,
{
    fn encrypt(&self, nonce: &[u8], aad: &[u8], buf: &mut [u8]) -> Result<[u8; 16], CryptoError> {
        let nonce = self.nonce(nonce)?;
        let tag = self
            .aead
            .encrypt_inout_detached(nonce, aad, buf.into())
            .map_err(|_| CryptoError::TooLong)?;
        Ok(first16(&tag))
    }

    fn decrypt(
        &self,
        nonce: &[u8],
        aad: &[u8],
        buf: &mut [u8],
        tag: &[u8; 16],
    ) -> Result<(), CryptoError> {
        let nonce = self.nonce(nonce)?;
        let tag = <&Array<u8, <A as AeadCore>::TagSize>>::try_from(tag.as_slice())
            .map_err(|_| CryptoError::AuthenticationFailed)?;
        self.aead
            .decrypt_inout_detached(nonce, aad, buf.into(), tag)
            .map_err(|_| CryptoError::AuthenticationFailed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testvectors::{check_cmac, check_hmac};

    #[test]
    fn cmac_rfc4493() {
        check_cmac(&|k, m| RcMac(<Cmac<Aes128> as KeyInit>::new(&Array::from(*k))).mac(m));
    }

    #[test]
    fn hmac_rfc4231() {
        check_hmac(&|k, m| {
            RcMac(<Hmac<Sha256> as KeyInit>::new(&Array::from(pad_hmac_key(
                k,
            ))))
            .mac(m)
        });
    }
}
