//! SMB3 encryption of a session (MS-SMB2 3.1.4.3, 3.3.4.1.4, 3.3.5.2.1.1): the transform
//! header, the AEAD keys in both directions, and nonces that never repeat for a key.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use smb3d_crypto::{Cipher, CryptoProvider, MessageCipher, SessionKeys};
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
pub(crate) struct SessionCipher {
    cipher: Cipher,
    /// Server to client (Session.EncryptionKey).
    sealer: Box<dyn MessageCipher>,
    /// Client to server (Session.DecryptionKey).
    opener: Box<dyn MessageCipher>,
    counter: AtomicU64,
    fixed: [u8; 4],
}

impl SessionCipher {
    pub fn new(provider: &dyn CryptoProvider, cipher: Cipher, keys: &SessionKeys) -> Option<Self> {
        let sealer = provider.cipher(cipher, &keys.encryption).ok()?;
        let opener = provider.cipher(cipher, &keys.decryption).ok()?;
        let mut fixed = [0u8; 4];
        provider.fill_random(&mut fixed);
        Some(Self {
            cipher,
            sealer,
            opener,
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
            .decrypt(nonce, aad, message, &header.signature)
            .map_err(|_| Unreadable)?;
        Ok(ciphertext)
    }
}
