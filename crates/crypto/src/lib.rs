//! SMB2/SMB3 message signing, encryption and key derivation behind a [`CryptoProvider`].
//!
//! The server asks a provider for a [`MessageSigner`] or a [`MessageCipher`] once per key (at
//! session setup), and then signs, verifies, encrypts and decrypts messages in place with it;
//! key schedules are expanded once, so no call allocates. [`default_provider`] picks, per
//! algorithm, the implementation measured fastest on x86-64 with AES-NI/VAES (`docs/crypto.md`).
//!
//! Key derivation ([`kdf`], [`SessionKeys`]) and the SMB 3.1.1 pre-authentication hash
//! ([`PreauthHash`]) do not depend on the provider.
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

#[cfg(feature = "aws-lc")]
mod awslc;
#[cfg(feature = "aws-lc")]
mod awslc_cbcmac;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
#[cfg(any(feature = "aws-lc", feature = "ring"))]
mod gcm;
mod keys;
pub mod netlogon;
#[cfg(feature = "ring")]
mod ringcrypto;
mod rustcrypto;
mod signing;
#[cfg(test)]
mod testvectors;

use std::sync::Arc;

#[cfg(feature = "aws-lc")]
pub use awslc::AwsLcProvider;
pub use keys::{CipherKey, PreauthHash, SessionKeys, kdf};
#[cfg(feature = "ring")]
pub use ringcrypto::RingProvider;
pub use rustcrypto::RustCryptoProvider;

/// A signing algorithm; MS-SMB2 2.2.3.1.7 (SMB2_SIGNING_CAPABILITIES ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SigningAlgorithm {
    /// HMAC-SHA256 truncated to 16 bytes: dialects 2.0.2 and 2.1.
    HmacSha256,
    /// AES-128-CMAC (RFC 4493): dialects 3.0 and 3.0.2, and 3.1.1 unless GMAC is negotiated.
    AesCmac,
    /// AES-128-GMAC (RFC 4543): 3.1.1 with SMB2_SIGNING_CAPABILITIES.
    AesGmac,
}

impl SigningAlgorithm {
    /// The SigningAlgorithmId on the wire; MS-SMB2 2.2.3.1.7.
    pub const fn id(self) -> u16 {
        match self {
            Self::HmacSha256 => 0,
            Self::AesCmac => 1,
            Self::AesGmac => 2,
        }
    }

    /// The algorithm for a wire id, if it is one this crate implements.
    pub const fn from_id(id: u16) -> Option<Self> {
        match id {
            0 => Some(Self::HmacSha256),
            1 => Some(Self::AesCmac),
            2 => Some(Self::AesGmac),
            _ => None,
        }
    }
}

/// An encryption cipher; MS-SMB2 2.2.3.1.2 (SMB2_ENCRYPTION_CAPABILITIES ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cipher {
    /// AES-128-CCM: 3.0, 3.0.2 and 3.1.1.
    Aes128Ccm,
    /// AES-128-GCM: 3.1.1.
    Aes128Gcm,
    /// AES-256-CCM: 3.1.1.
    Aes256Ccm,
    /// AES-256-GCM: 3.1.1.
    Aes256Gcm,
}

impl Cipher {
    /// The Cipher id on the wire; MS-SMB2 2.2.3.1.2.
    pub const fn id(self) -> u16 {
        match self {
            Self::Aes128Ccm => 1,
            Self::Aes128Gcm => 2,
            Self::Aes256Ccm => 3,
            Self::Aes256Gcm => 4,
        }
    }

    /// The cipher for a wire id, if it is one this crate implements.
    pub const fn from_id(id: u16) -> Option<Self> {
        match id {
            1 => Some(Self::Aes128Ccm),
            2 => Some(Self::Aes128Gcm),
            3 => Some(Self::Aes256Ccm),
            4 => Some(Self::Aes256Gcm),
            _ => None,
        }
    }

    /// Key length in bytes (16 or 32).
    pub const fn key_len(self) -> usize {
        match self {
            Self::Aes128Ccm | Self::Aes128Gcm => 16,
            Self::Aes256Ccm | Self::Aes256Gcm => 32,
        }
    }

    /// Nonce length in bytes: 11 for CCM, 12 for GCM; MS-SMB2 2.2.41 (the leading part of the
    /// transform header's 16-byte Nonce field; the rest is zero).
    pub const fn nonce_len(self) -> usize {
        match self {
            Self::Aes128Ccm | Self::Aes256Ccm => 11,
            Self::Aes128Gcm | Self::Aes256Gcm => 12,
        }
    }

    /// True for the 256-bit ciphers, whose keys SMB 3.1.1 derives from the full session key.
    pub const fn is_256(self) -> bool {
        matches!(self, Self::Aes256Ccm | Self::Aes256Gcm)
    }
}

/// Why a cryptographic operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// The key is not as long as the cipher needs.
    #[error("key length {got}, cipher needs {expected}")]
    InvalidKeyLength { expected: usize, got: usize },
    /// The nonce is not 11 (CCM) or 12 (GCM) bytes.
    #[error("nonce length {got}, cipher needs {expected}")]
    InvalidNonceLength { expected: usize, got: usize },
    /// The tag does not match: the message was altered or the key is wrong.
    #[error("authentication failed")]
    AuthenticationFailed,
    /// The message or associated data is longer than the cipher allows.
    #[error("message too long for the cipher")]
    TooLong,
}

/// A source of signers, ciphers and randomness; one per process, shared by all connections.
pub trait CryptoProvider: Send + Sync + 'static {
    /// A signer for one signing key (MS-SMB2 3.1.4.1, 3.1.5.1).
    fn signer(&self, alg: SigningAlgorithm, key: &[u8; 16]) -> Box<dyn MessageSigner>;
    /// An AEAD cipher for one encryption or decryption key (MS-SMB2 3.1.4.3, 3.3.5.2.1.1).
    fn cipher(&self, cipher: Cipher, key: &[u8]) -> Result<Box<dyn MessageCipher>, CryptoError>;
    /// Fills `buf` from a cryptographically secure random source.
    fn fill_random(&self, buf: &mut [u8]);
}

/// Signs and verifies SMB2 messages under one key; MS-SMB2 3.1.4.1 and 3.1.5.1.
pub trait MessageSigner: Send + Sync {
    /// Signs one SMB2 message (header + body + padding, a single compound element) in place:
    /// zeroes the signature field, computes, writes the signature. For AES-GMAC the nonce comes
    /// from the message's MessageId, SERVER_TO_REDIR flag and CANCEL command (MS-SMB2 3.1.4.1).
    /// A message shorter than an SMB2 header has no signature field and is left as it is.
    fn sign(&self, msg: &mut [u8]);
    /// Verifies in constant time; may zero the signature field while computing (the caller
    /// does not need it afterwards). False for messages shorter than a header.
    fn verify(&self, msg: &mut [u8]) -> bool;
}

/// AEAD encryption under one key, for SMB2 TRANSFORM_HEADER messages; MS-SMB2 3.1.4.3.
pub trait MessageCipher: Send + Sync {
    /// AEAD-encrypts `buf` in place; returns the 16-byte tag. `nonce` is 11 (CCM) or 12 (GCM) bytes.
    fn encrypt(&self, nonce: &[u8], aad: &[u8], buf: &mut [u8]) -> Result<[u8; 16], CryptoError>;
    /// Checks the tag and decrypts `buf` in place. On failure the contents of `buf` are
    /// unspecified (some back ends wipe it) and must be discarded.
    fn decrypt(
        &self,
        nonce: &[u8],
        aad: &[u8],
        buf: &mut [u8],
        tag: &[u8; 16],
    ) -> Result<(), CryptoError>;
}

/// The provider to use: per algorithm the fastest implementation measured (`docs/crypto.md`).
///
/// With the default `aws-lc` feature that is [`AwsLcProvider`] (AES-GCM, AES-GMAC, AES-CCM and
/// AES-CMAC on AWS-LC, HMAC-SHA256 from RustCrypto); without it, [`RustCryptoProvider`].
pub fn default_provider() -> Arc<dyn CryptoProvider> {
    #[cfg(feature = "aws-lc")]
    {
        Arc::new(AwsLcProvider)
    }
    #[cfg(not(feature = "aws-lc"))]
    {
        Arc::new(RustCryptoProvider)
    }
}

/// Checks a nonce against the cipher's length (shared by the back ends).
fn check_nonce(cipher: Cipher, nonce: &[u8]) -> Result<(), CryptoError> {
    if nonce.len() == cipher.nonce_len() {
        Ok(())
    } else {
        Err(CryptoError::InvalidNonceLength {
            expected: cipher.nonce_len(),
            got: nonce.len(),
        })
    }
}

/// Checks a key against the cipher's length (shared by the back ends).
fn check_key(cipher: Cipher, key: &[u8]) -> Result<(), CryptoError> {
    if key.len() == cipher.key_len() {
        Ok(())
    } else {
        Err(CryptoError::InvalidKeyLength {
            expected: cipher.key_len(),
            got: key.len(),
        })
    }
}

/// The first 16 bytes of a MAC or tag (SMB2 signatures are 16 bytes); zero if shorter.
fn first16(b: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    if let Some(src) = b.get(..16) {
        out.copy_from_slice(src);
    }
    out
}
