//! SMB3 encryption of a session (MS-SMB2 3.1.4.3, 3.3.4.1.4, 3.3.5.2.1.1): the transform
//! header, the AEAD keys in both directions, and nonces that never repeat for a key.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use smb3d_crypto::{Cipher, CipherKey, CryptoProvider, MessageCipher, SessionKeys};
use smb3d_smb2::transform::{AAD_RANGE, TransformFlags, TransformHeader};
use smb3d_wire::Writer;

/// Length of the SMB2 TRANSFORM_HEADER (MS-SMB2 2.2.41).
pub(crate) const TRANSFORM_HEADER_LEN: usize = 52;

/// Why an encrypted message was refused; any of these ends the connection (MS-SMB2
/// 3.3.5.2.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unreadable;

/// A session's ciphers. The nonce is a per-key 64-bit counter followed by bytes fixed for the
/// session (docs/crypto.md): it cannot repeat before 2^64 messages, and the session refuses to
/// encrypt rather than wrap.
///
/// Each direction's cipher is made from its key when it is first used: every session of a
/// dialect with encryption has the keys, but most never encrypt, and AWS-LC's AES-GCM context
/// is about 600 bytes a direction, held for the session's life (docs/benchmarks.md,
/// `idle-memory`).
pub(crate) struct SessionCipher {
    cipher: Cipher,
    provider: Arc<dyn CryptoProvider>,
    /// Server to client (Session.EncryptionKey).
    sealer: Direction,
    /// Client to server (Session.DecryptionKey).
    opener: Direction,
    counter: AtomicU64,
    fixed: [u8; 4],
}

/// One direction's key, and its cipher once made.
struct Direction {
    key: CipherKey,
    made: OnceLock<Box<dyn MessageCipher>>,
}

impl Direction {
    fn new(key: &CipherKey) -> Self {
        Self {
            key: key.clone(),
            made: OnceLock::new(),
        }
    }

    /// The cipher, made at the first call; None if the provider refuses the key (which a key
    /// derived for `cipher` never is: `SessionCipher::new` checks its length).
    fn get(&self, provider: &dyn CryptoProvider, cipher: Cipher) -> Option<&dyn MessageCipher> {
        if let Some(made) = self.made.get() {
            return Some(made.as_ref());
        }
        let made = provider.cipher(cipher, &self.key).ok()?;
        Some(self.made.get_or_init(|| made).as_ref())
    }
}

impl SessionCipher {
    pub fn new(
        provider: &Arc<dyn CryptoProvider>,
        cipher: Cipher,
        keys: &SessionKeys,
    ) -> Option<Self> {
        if keys.encryption.len() != cipher.key_len() || keys.decryption.len() != cipher.key_len() {
            return None;
        }
        let mut fixed = [0u8; 4];
        provider.fill_random(&mut fixed);
        Some(Self {
            cipher,
            provider: provider.clone(),
            sealer: Direction::new(&keys.encryption),
            opener: Direction::new(&keys.decryption),
            counter: AtomicU64::new(0),
            fixed,
        })
    }

    /// The cipher the session encrypts with.
    pub fn cipher(&self) -> Cipher {
        self.cipher
    }

    fn next_nonce(&self) -> Option<[u8; 16]> {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        if n == u64::MAX {
            return None;
        }
        let mut nonce = [0u8; 16];
        let (counter, fixed) = nonce.split_at_mut(8);
        counter.copy_from_slice(&n.to_le_bytes());
        let fixed_len = self.cipher.nonce_len().saturating_sub(8);
        for (byte, source) in fixed.iter_mut().zip(self.fixed.iter()).take(fixed_len) {
            *byte = *source;
        }
        Some(nonce)
    }

    /// Encrypts `buf[start + 52..]` in place and writes the transform header at
    /// `buf[start..start + 52]`. None when the nonce space is exhausted.
    pub fn seal(&self, buf: &mut [u8], start: usize, session_id: u64) -> Option<()> {
        let nonce = self.next_nonce()?;
        let message_start = start + TRANSFORM_HEADER_LEN;
        let original_message_size = u32::try_from(buf.len().checked_sub(message_start)?).ok()?;
        let header = TransformHeader {
            signature: [0; 16],
            nonce,
            original_message_size,
            // Flags = Encrypted in 3.1.1; EncryptionAlgorithm = AES-128-CCM in 3.0: both 1.
            flags: TransformFlags::ENCRYPTED,
            session_id,
        };
        let mut encoded = Vec::with_capacity(TRANSFORM_HEADER_LEN);
        header.encode(&mut Writer::new(&mut encoded));
        buf.get_mut(start..message_start)?.copy_from_slice(&encoded);
        let (head, message) = buf.get_mut(start..)?.split_at_mut(TRANSFORM_HEADER_LEN);
        let aad = head.get(AAD_RANGE)?;
        let tag = self
            .sealer
            .get(self.provider.as_ref(), self.cipher)?
            .encrypt(nonce.get(..self.cipher.nonce_len())?, aad, message)
            .ok()?;
        head.get_mut(4..20)?.copy_from_slice(&tag);
        Some(())
    }

    /// Decrypts an encrypted frame in place; returns the range of the plaintext message.
    pub fn open(
        &self,
        frame: &mut [u8],
        header: &TransformHeader,
        ciphertext: Range<usize>,
    ) -> Result<Range<usize>, Unreadable> {
        if header.flags != TransformFlags::ENCRYPTED {
            return Err(Unreadable);
        }
        let (head, rest) = frame.split_at_mut(ciphertext.start);
        let aad = head.get(AAD_RANGE).ok_or(Unreadable)?;
        let message = rest.get_mut(..ciphertext.len()).ok_or(Unreadable)?;
        let nonce = header
            .nonce
            .get(..self.cipher.nonce_len())
            .ok_or(Unreadable)?;
        self.opener
            .get(self.provider.as_ref(), self.cipher)
            .ok_or(Unreadable)?
            .decrypt(nonce, aad, message, &header.signature)
            .map_err(|_| Unreadable)?;
        Ok(ciphertext)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use smb3d_crypto::fuzzing::NullProvider;
    use smb3d_crypto::{CryptoError, MessageSigner, SigningAlgorithm};

    use super::*;

    /// The no-cryptography provider, counting the ciphers it makes.
    #[derive(Default)]
    struct Counting(AtomicUsize);

    impl CryptoProvider for Counting {
        fn signer(&self, algorithm: SigningAlgorithm, key: &[u8; 16]) -> Box<dyn MessageSigner> {
            NullProvider.signer(algorithm, key)
        }

        fn cipher(
            &self,
            cipher: Cipher,
            key: &[u8],
        ) -> Result<Box<dyn MessageCipher>, CryptoError> {
            self.0.fetch_add(1, Ordering::Relaxed);
            NullProvider.cipher(cipher, key)
        }

        fn fill_random(&self, buf: &mut [u8]) {
            NullProvider.fill_random(buf);
        }
    }

    /// A session that never encrypts holds no cipher: each is made at its first message and
    /// then kept (before, both were made at logon, 1.2 KiB per session with AWS-LC).
    #[test]
    fn ciphers_are_made_at_their_first_message() {
        let counting = Arc::new(Counting::default());
        let provider: Arc<dyn CryptoProvider> = counting.clone();
        let keys = SessionKeys::derive(0x0311, &[7; 16], None, Some(Cipher::Aes128Gcm));
        let cipher = SessionCipher::new(&provider, Cipher::Aes128Gcm, &keys).unwrap();
        assert_eq!(counting.0.load(Ordering::Relaxed), 0);
        for _ in 0..2 {
            let mut buf = vec![0u8; TRANSFORM_HEADER_LEN + 80];
            cipher.seal(&mut buf, 0, 9).unwrap();
        }
        assert_eq!(counting.0.load(Ordering::Relaxed), 1);
        let mut frame = vec![0u8; TRANSFORM_HEADER_LEN + 80];
        cipher.seal(&mut frame, 0, 9).unwrap();
        let (header, ciphertext) = TransformHeader::decode(&frame).unwrap();
        let range = cipher.open(&mut frame, &header, ciphertext).unwrap();
        assert_eq!(range.len(), 80);
        assert_eq!(counting.0.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn keys_of_another_length_than_the_cipher_make_no_session_cipher() {
        let provider: Arc<dyn CryptoProvider> = Arc::new(NullProvider);
        let keys = SessionKeys::derive(0x0311, &[7; 16], None, Some(Cipher::Aes128Gcm));
        assert!(SessionCipher::new(&provider, Cipher::Aes256Gcm, &keys).is_none());
    }
}
