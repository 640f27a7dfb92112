//! Key derivation (MS-SMB2 3.1.4.2, 3.3.5.5.3) and the pre-authentication integrity hash
//! (MS-SMB2 3.3.5.4, 3.3.5.5).

use core::ops::Deref;

use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};
use zeroize::{Zeroize, ZeroizeOnDrop};

use crate::Cipher;

type HmacSha256 = hmac::Hmac<Sha256>;

/// SP800-108 counter-mode KDF with HMAC-SHA256 as MS-SMB2 3.1.4.2 uses it (L = out.len()*8).
///
/// Each block is HMAC(key, i || label || 0x00 || context || L) with `i` and `L` as 32-bit
/// big-endian integers (r = 32). SMB's labels and 3.0 contexts carry their own NUL
/// terminator in addition to the separator byte.
pub fn kdf(key: &[u8], label: &[u8], context: &[u8], out: &mut [u8]) {
    let bits = u32::try_from(out.len().saturating_mul(8)).unwrap_or(u32::MAX);
    counter_mode(key, &[label, &[0], context, &bits.to_be_bytes()], out);
}

/// SP800-108 counter mode (counter before the fixed input, r = 32) with HMAC-SHA256 as PRF:
/// block i is HMAC(key, i || fixed_input), where `fixed_input` is `parts` concatenated.
fn counter_mode(key: &[u8], fixed_input: &[&[u8]], out: &mut [u8]) {
    // HMAC takes keys of any length, so this cannot fail.
    let Ok(keyed) = HmacSha256::new_from_slice(key) else {
        return;
    };
    for (i, chunk) in (1u32..).zip(out.chunks_mut(32)) {
        let mut prf = keyed.clone();
        prf.update(&i.to_be_bytes());
        for part in fixed_input {
            prf.update(part);
        }
        let mut block = prf.finalize().into_bytes();
        chunk.copy_from_slice(block.get(..chunk.len()).unwrap_or_default());
        block.zeroize();
    }
}

/// The SMB 3.1.1 pre-authentication integrity hash (SHA-512 chain); MS-SMB2 3.3.5.4, 3.3.5.5.1.
#[derive(Clone, PartialEq, Eq)]
pub struct PreauthHash([u8; 64]);

impl PreauthHash {
    /// The initial value: 64 zero bytes.
    pub const fn new() -> Self {
        Self([0; 64])
    }

    /// A hash with a known value (a copy kept elsewhere, or a published test vector).
    pub const fn from_bytes(value: [u8; 64]) -> Self {
        Self(value)
    }

    /// Chains one message (from its SMB2 header to its end): hash = SHA-512(hash || msg).
    pub fn update(&mut self, msg: &[u8]) {
        let mut h = Sha512::new();
        h.update(self.0);
        h.update(msg);
        self.0.copy_from_slice(&h.finalize());
    }

    /// The current hash value.
    pub const fn as_bytes(&self) -> &[u8; 64] {
        &self.0
    }
}

impl Default for PreauthHash {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for PreauthHash {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PreauthHash(")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        f.write_str(")")
    }
}

/// An encryption or decryption key: 16 bytes for AES-128, 32 for AES-256, empty when the
/// dialect has no encryption. Dereferences to the key bytes.
#[derive(Clone, PartialEq, Eq, Zeroize, ZeroizeOnDrop)]
pub struct CipherKey {
    bytes: [u8; 32],
    len: usize,
}

impl CipherKey {
    const EMPTY: Self = Self {
        bytes: [0; 32],
        len: 0,
    };

    /// Derives a key of `len` (16 or 32) bytes with [`kdf`].
    fn derive(key: &[u8], label: &[u8], context: &[u8], len: usize) -> Self {
        let mut k = Self::EMPTY;
        k.len = len.min(32);
        kdf(
            key,
            label,
            context,
            k.bytes.get_mut(..k.len).unwrap_or_default(),
        );
        k
    }
}

impl Deref for CipherKey {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes.get(..self.len).unwrap_or_default()
    }
}

impl core::fmt::Debug for CipherKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "CipherKey({} bytes)", self.len)
    }
}

/// The keys of one session (or one channel's signing key); MS-SMB2 3.3.5.5.3 and 3.2.5.3.1.
/// Named from the server's side: it encrypts with `encryption` and decrypts with `decryption`.
#[derive(Clone, PartialEq, Eq, Zeroize, ZeroizeOnDrop)]
pub struct SessionKeys {
    /// Session.SigningKey (Channel.SigningKey for a bound channel).
    pub signing: [u8; 16],
    /// Session.EncryptionKey: server to client ("ServerOut", "SMBS2CCipherKey").
    pub encryption: CipherKey,
    /// Session.DecryptionKey: client to server ("ServerIn ", "SMBC2SCipherKey").
    pub decryption: CipherKey,
    /// Session.ApplicationKey, for named-pipe RPC security contexts.
    pub application: [u8; 16],
}

/// Dialect 3.0.0; MS-SMB2 2.2.3.
const DIALECT_300: u16 = 0x0300;
/// Dialect 3.1.1; MS-SMB2 2.2.3.
const DIALECT_311: u16 = 0x0311;

impl SessionKeys {
    /// Derives the keys from Session.SessionKey (the first 16 bytes of the authentication
    /// protocol's key, zero-padded). Equivalent to [`SessionKeys::derive_from_full_key`] when the
    /// authentication key is exactly 16 bytes, as it is with NTLM.
    pub fn derive(
        dialect: u16,
        session_key: &[u8; 16],
        preauth: Option<&PreauthHash>,
        cipher: Option<Cipher>,
    ) -> SessionKeys {
        Self::derive_from_full_key(dialect, session_key, preauth, cipher)
    }

    /// Derives the keys from Session.FullSessionKey, the whole key the authentication protocol
    /// returned (32 bytes with Kerberos AES-256), as MS-SMB2 3.3.5.5.3 requires: signing and
    /// application keys, and 128-bit cipher keys, come from Session.SessionKey (its first 16
    /// bytes, zero-padded); 3.1.1's AES-256 cipher keys come from the full key with L = 256.
    ///
    /// - 2.0.2 and 2.1 (`dialect` below 0x0300): the signing key and the application key are
    ///   the session key itself; there is no encryption, so the cipher keys are empty.
    /// - 3.0 and 3.0.2: fixed labels and contexts; cipher keys are AES-128-CCM keys.
    /// - 3.1.1: the labels of 3.1.4.2 with `preauth` (Session.PreauthIntegrityHashValue) as
    ///   context; a missing `preauth` is taken as the initial all-zero value, which matches no
    ///   real exchange, so the caller must pass it. Cipher keys are sized for `cipher`
    ///   (16 bytes when `None`).
    pub fn derive_from_full_key(
        dialect: u16,
        full_session_key: &[u8],
        preauth: Option<&PreauthHash>,
        cipher: Option<Cipher>,
    ) -> SessionKeys {
        let mut session_key = [0u8; 16];
        let n = full_session_key.len().min(16);
        if let (Some(dst), Some(src)) = (session_key.get_mut(..n), full_session_key.get(..n)) {
            dst.copy_from_slice(src);
        }
        let mut keys = SessionKeys {
            signing: session_key,
            encryption: CipherKey::EMPTY,
            decryption: CipherKey::EMPTY,
            application: session_key,
        };
        if dialect < DIALECT_300 {
            session_key.zeroize();
            return keys;
        }
        if dialect < DIALECT_311 {
            kdf(
                &session_key,
                b"SMB2AESCMAC\0",
                b"SmbSign\0",
                &mut keys.signing,
            );
            kdf(
                &session_key,
                b"SMB2APP\0",
                b"SmbRpc\0",
                &mut keys.application,
            );
            keys.encryption = CipherKey::derive(&session_key, b"SMB2AESCCM\0", b"ServerOut\0", 16);
            keys.decryption = CipherKey::derive(&session_key, b"SMB2AESCCM\0", b"ServerIn \0", 16);
        } else {
            let initial = PreauthHash::new();
            let context = preauth.unwrap_or(&initial).as_bytes();
            kdf(&session_key, b"SMBSigningKey\0", context, &mut keys.signing);
            kdf(&session_key, b"SMBAppKey\0", context, &mut keys.application);
            let (cipher_kdf_key, len): (&[u8], usize) = match cipher {
                Some(c) if c.is_256() => (full_session_key, 32),
                _ => (&session_key, 16),
            };
            keys.encryption = CipherKey::derive(cipher_kdf_key, b"SMBS2CCipherKey\0", context, len);
            keys.decryption = CipherKey::derive(cipher_kdf_key, b"SMBC2SCipherKey\0", context, len);
        }
        session_key.zeroize();
        keys
    }
}

impl core::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("SessionKeys(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// NIST CAVS 14.4 SP800-108 KDF vectors (KBKDF-CTR, PRF=HMAC_SHA256,
    /// CTRLOCATION=BEFORE_FIXED, RLEN=32_BITS), as shipped in the `cryptography_vectors`
    /// package (KDF/nist-800-108-KBKDF-CTR.txt): COUNT=0 (L=128) and COUNT=30 (L=320, a
    /// partial second block).
    #[test]
    fn sp800_108_counter_mode_nist() {
        let cases = [
            (
                "dd1d91b7d90b2bd3138533ce92b272fbf8a369316aefe242e659cc0ae238afe0",
                "01322b96b30acd197979444e468e1c5c6859bf1b1cf951b7e725303e237e46b864a145fab25e517b08f8683d0315bb2911d80a0e8aba17f3b413faac",
                "10621342bfb0fd40046c0e29f2cfdbf0",
            ),
            (
                "c4bedbddb66493e7c7259a3bbbc25f8c7e0ca7fe284d92d431d9cd99a0d214ac",
                "1c69c54766791e315c2cc5c47ecd3ffab87d0d273dd920e70955814c220eacace6a5946542da3dfe24ff626b4897898cafb7db83bdff3c14fa46fd4b",
                "1da47638d6c9c4d04d74d4640bbd42ab814d9e8cc22f4326695239f96b0693f12d0dd1152cf44430",
            ),
        ];
        for (ki, fixed, ko) in cases {
            let expected = hex(ko);
            let mut out = vec![0u8; expected.len()];
            counter_mode(&hex(ki), &[&hex(fixed)], &mut out);
            assert_eq!(out, expected);
        }
    }

    /// `kdf` is counter mode over label || 0x00 || context || L (MS-SMB2 3.1.4.2).
    #[test]
    fn kdf_fixed_input_layout() {
        let mut a = [0u8; 32];
        kdf(b"key", b"LBL\0", b"CTX", &mut a);
        let mut b = [0u8; 32];
        counter_mode(b"key", &[b"LBL\0\0CTX\0\0\x01\0"], &mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn cipher_key_lengths() {
        let k = SessionKeys::derive(
            0x0311,
            &[1; 16],
            Some(&PreauthHash::new()),
            Some(Cipher::Aes256Gcm),
        );
        assert_eq!(k.encryption.len(), 32);
        assert_eq!(k.decryption.len(), 32);
        let k = SessionKeys::derive(0x0311, &[1; 16], Some(&PreauthHash::new()), None);
        assert_eq!(k.encryption.len(), 16);
        let k = SessionKeys::derive(0x0300, &[1; 16], None, Some(Cipher::Aes128Ccm));
        assert_eq!(k.decryption.len(), 16);
        let k = SessionKeys::derive(0x0210, &[1; 16], None, None);
        assert!(k.encryption.is_empty());
        assert_eq!(k.signing, [1; 16]);
        assert_eq!(k.application, [1; 16]);
    }

    /// With a 16-byte authentication key, AES-256 keys come from the same key material as
    /// `derive`; with a longer one (Kerberos), only the 256-bit cipher keys change.
    #[test]
    fn full_session_key_feeds_only_256_bit_cipher_keys() {
        let preauth = PreauthHash::new();
        let full: Vec<u8> = (0u8..32).collect();
        let mut first16 = [0u8; 16];
        first16.copy_from_slice(&full[..16]);
        let long = SessionKeys::derive_from_full_key(
            0x0311,
            &full,
            Some(&preauth),
            Some(Cipher::Aes256Gcm),
        );
        let short = SessionKeys::derive(0x0311, &first16, Some(&preauth), Some(Cipher::Aes256Gcm));
        assert_eq!(long.signing, short.signing);
        assert_eq!(long.application, short.application);
        assert_ne!(&*long.encryption, &*short.encryption);
        let mut expected = [0u8; 32];
        kdf(
            &full,
            b"SMBS2CCipherKey\0",
            preauth.as_bytes(),
            &mut expected,
        );
        assert_eq!(&*long.encryption, &expected[..]);
        let long128 = SessionKeys::derive_from_full_key(
            0x0311,
            &full,
            Some(&preauth),
            Some(Cipher::Aes128Gcm),
        );
        let short128 =
            SessionKeys::derive(0x0311, &first16, Some(&preauth), Some(Cipher::Aes128Gcm));
        assert_eq!(long128, short128);
    }
}
