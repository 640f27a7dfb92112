//! AES-CMAC (RFC 4493) and AES-CCM (NIST SP800-38C, RFC 3610) built on AWS-LC's AES-CBC and
//! AES-CTR, which run on AES-NI/VAES without per-call allocation. AWS-LC offers neither mode
//! with SMB's parameters (CCM with an 11-byte nonce; CMAC without a heap context per call), and
//! RustCrypto's block-at-a-time CBC-MAC measured 3-5 times slower (docs/crypto.md).
//!
//! A CBC-MAC is the last block of a CBC encryption with a zero IV. [`CbcMac`] feeds the input
//! through a stack buffer that it CBC-encrypts a few KiB at a time, keeping only the chaining
//! value, so the caller's data is never modified.

use aws_lc_rs::cipher::{AES_128, AES_256, EncryptingKey, EncryptionContext, UnboundCipherKey};
use aws_lc_rs::iv::FixedLength;
use subtle::ConstantTimeEq;

use crate::signing::Mac16;
use crate::{Cipher, CryptoError, MessageCipher, check_key, check_nonce};

const BLOCK: usize = 16;
/// Bytes CBC-encrypted per call into AWS-LC: enough to amortise the call, small for the stack.
const SCRATCH: usize = 4096;

/// An AES key in CBC mode used only to compute CBC-MACs.
struct CbcKey(EncryptingKey);

impl CbcKey {
    fn new(alg: &'static aws_lc_rs::cipher::Algorithm, key: &[u8]) -> Option<Self> {
        let unbound = UnboundCipherKey::new(alg, key).ok()?;
        EncryptingKey::cbc(unbound).ok().map(Self)
    }

    /// The AES encryption of one block (CBC over one block with a zero IV).
    fn encrypt_block(&self, block: [u8; BLOCK]) -> [u8; BLOCK] {
        let mut mac = CbcMac::new(self);
        mac.update(&block);
        mac.finish()
    }
}

/// A running CBC-MAC. Input that does not end on a block boundary must be padded with
/// [`CbcMac::pad`] before more input or [`CbcMac::finish`].
struct CbcMac<'k> {
    key: &'k CbcKey,
    chain: [u8; BLOCK],
    scratch: [u8; SCRATCH],
    filled: usize,
}

impl<'k> CbcMac<'k> {
    fn new(key: &'k CbcKey) -> Self {
        Self {
            key,
            chain: [0; BLOCK],
            scratch: [0; SCRATCH],
            filled: 0,
        }
    }

    fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let room = SCRATCH - self.filled;
            let take = room.min(data.len());
            let (now, rest) = data.split_at(take);
            if let Some(dst) = self.scratch.get_mut(self.filled..self.filled + take) {
                dst.copy_from_slice(now);
            }
            self.filled += take;
            data = rest;
            if self.filled == SCRATCH {
                self.flush();
            }
        }
    }

    /// Zero-pads the input to a block boundary.
    fn pad(&mut self) {
        let partial = self.filled % BLOCK;
        if partial != 0 {
            self.update([0u8; BLOCK].get(partial..).unwrap_or_default());
        }
    }

    /// CBC-encrypts the whole blocks gathered so far and keeps the last one as chaining value.
    fn flush(&mut self) {
        let whole = self.filled - self.filled % BLOCK;
        if whole == 0 {
            return;
        }
        let Some(blocks) = self.scratch.get_mut(..whole) else {
            return;
        };
        let iv = EncryptionContext::Iv128(FixedLength::from(self.chain));
        // CBC fails only for input that is not whole blocks, which `whole` rules out.
        if self.key.0.less_safe_encrypt(blocks, iv).is_ok()
            && let Some(last) = blocks.get(whole - BLOCK..)
        {
            self.chain.copy_from_slice(last);
        }
        self.scratch.copy_within(whole..self.filled, 0);
        self.filled -= whole;
    }

    /// The MAC of block-aligned input.
    fn finish(mut self) -> [u8; BLOCK] {
        self.pad();
        self.flush();
        self.chain
    }
}

/// AES-128-CMAC, RFC 4493.
pub(crate) struct Cmac {
    key: CbcKey,
    k1: [u8; BLOCK],
    k2: [u8; BLOCK],
}

impl Cmac {
    pub(crate) fn new(key: &[u8; 16]) -> Option<Self> {
        let key = CbcKey::new(&AES_128, key)?;
        // RFC 4493 2.3: L = AES(K, 0); K1 = L << 1 (^ Rb), K2 = K1 << 1 (^ Rb).
        let l = key.encrypt_block([0; BLOCK]);
        let k1 = double(l);
        let k2 = double(k1);
        Some(Self { key, k1, k2 })
    }
}

/// Multiplication by x in GF(2^128) as RFC 4493 2.3 defines it (big-endian, Rb = 0x87).
fn double(block: [u8; BLOCK]) -> [u8; BLOCK] {
    let v = u128::from_be_bytes(block);
    let reduce = if v >> 127 == 1 { 0x87 } else { 0 };
    ((v << 1) ^ reduce).to_be_bytes()
}

impl Mac16 for Cmac {
    fn mac(&self, msg: &[u8]) -> [u8; 16] {
        // RFC 4493 2.4: every block but the last is chained as is; the last is XORed with K1
        // when complete, or padded with 10* and XORed with K2.
        let head_len = msg.len().saturating_sub(1) / BLOCK * BLOCK;
        let (head, tail) = msg.split_at(head_len);
        let mut last = [0u8; BLOCK];
        let subkey = if tail.len() == BLOCK {
            last.copy_from_slice(tail);
            &self.k1
        } else {
            if let Some(dst) = last.get_mut(..tail.len()) {
                dst.copy_from_slice(tail);
            }
            if let Some(marker) = last.get_mut(tail.len()) {
                *marker = 0x80;
            }
            &self.k2
        };
        for (b, k) in last.iter_mut().zip(subkey) {
            *b ^= k;
        }
        let mut mac = CbcMac::new(&self.key);
        mac.update(head);
        mac.update(&last);
        mac.finish()
    }
}

/// AES-CCM with SMB's parameters: an 11-byte nonce (so a 4-byte length and counter field,
/// L = 4) and a 16-byte tag; MS-SMB2 2.2.41, NIST SP800-38C appendix A.
pub(crate) struct Ccm {
    mac_key: CbcKey,
    ctr_key: EncryptingKey,
    cipher: Cipher,
}

/// Length of CCM's length/counter field for an 11-byte nonce.
const CCM_L: usize = 4;

impl Ccm {
    pub(crate) fn new(cipher: Cipher, key: &[u8]) -> Result<Self, CryptoError> {
        check_key(cipher, key)?;
        let invalid = CryptoError::InvalidKeyLength {
            expected: cipher.key_len(),
            got: key.len(),
        };
        let alg = if cipher.is_256() { &AES_256 } else { &AES_128 };
        let mac_key = CbcKey::new(alg, key).ok_or(invalid)?;
        let ctr_key = UnboundCipherKey::new(alg, key)
            .and_then(EncryptingKey::ctr)
            .map_err(|_| invalid)?;
        Ok(Self {
            mac_key,
            ctr_key,
            cipher,
        })
    }

    /// The CBC-MAC T of SP800-38C A.2: B0 (flags, nonce, length), the associated data with its
    /// length prefix, then the plaintext, each zero-padded to whole blocks.
    fn tag(&self, nonce: &[u8], aad: &[u8], plaintext: &[u8]) -> Result<[u8; BLOCK], CryptoError> {
        let len = u32::try_from(plaintext.len()).map_err(|_| CryptoError::TooLong)?;
        // Flags: Adata, (t - 2) / 2 for t = 16, and L - 1.
        let flags = (u8::from(!aad.is_empty()) << 6) | (7 << 3) | (CCM_L as u8 - 1);
        let b0 = ccm_block(flags, nonce, len);
        let mut mac = CbcMac::new(&self.mac_key);
        mac.update(&b0);
        if !aad.is_empty() {
            // A.2.2: a 2-byte length below 2^16 - 2^8, else 0xFFFE and a 4-byte length.
            match u16::try_from(aad.len()) {
                Ok(short) if short < 0xFF00 => mac.update(&short.to_be_bytes()),
                _ => {
                    let long = u32::try_from(aad.len()).map_err(|_| CryptoError::TooLong)?;
                    mac.update(&[0xFF, 0xFE]);
                    mac.update(&long.to_be_bytes());
                }
            }
            mac.update(aad);
            mac.pad();
        }
        mac.update(plaintext);
        Ok(mac.finish())
    }

    /// Counter block i (SP800-38C A.3): flags L - 1, the nonce, i as 4 bytes big-endian.
    fn counter(nonce: &[u8], i: u32) -> FixedLength<BLOCK> {
        FixedLength::from(ccm_block(CCM_L as u8 - 1, nonce, i))
    }

    /// XORs `buf` with the key stream from counter block `first`. The 4-byte counter never
    /// wraps into the nonce: CCM's length field caps a message at 2^32 bytes, 2^28 blocks.
    fn ctr(&self, nonce: &[u8], first: u32, buf: &mut [u8]) -> Result<(), CryptoError> {
        self.ctr_key
            .less_safe_encrypt(buf, EncryptionContext::Iv128(Self::counter(nonce, first)))
            .map(|_| ())
            .map_err(|_| CryptoError::TooLong)
    }
}

/// A CCM block: one flags byte, the 11-byte nonce, a 4-byte big-endian length or counter.
fn ccm_block(flags: u8, nonce: &[u8], tail: u32) -> [u8; BLOCK] {
    let mut block = [0u8; BLOCK];
    let bytes = core::iter::once(flags)
        .chain(nonce.iter().copied())
        .chain(tail.to_be_bytes());
    for (dst, src) in block.iter_mut().zip(bytes) {
        *dst = src;
    }
    block
}

impl MessageCipher for Ccm {
    fn encrypt(&self, nonce: &[u8], aad: &[u8], buf: &mut [u8]) -> Result<[u8; 16], CryptoError> {
        check_nonce(self.cipher, nonce)?;
        let mut tag = self.tag(nonce, aad, buf)?;
        self.ctr(nonce, 0, &mut tag)?;
        self.ctr(nonce, 1, buf)?;
        Ok(tag)
    }

    fn decrypt(
        &self,
        nonce: &[u8],
        aad: &[u8],
        buf: &mut [u8],
        tag: &[u8; 16],
    ) -> Result<(), CryptoError> {
        check_nonce(self.cipher, nonce)?;
        u32::try_from(buf.len()).map_err(|_| CryptoError::TooLong)?;
        self.ctr(nonce, 1, buf)?;
        let mut expected = self.tag(nonce, aad, buf)?;
        self.ctr(nonce, 0, &mut expected)?;
        if bool::from(expected.ct_eq(tag)) {
            Ok(())
        } else {
            // Unauthenticated plaintext must not reach anyone.
            buf.fill(0);
            Err(CryptoError::AuthenticationFailed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testvectors::check_cmac;

    #[test]
    fn cmac_rfc4493() {
        check_cmac(&|k, m| Cmac::new(k).unwrap().mac(m));
    }

    /// Messages longer than the scratch buffer, and not block-aligned, give RustCrypto's MAC.
    #[test]
    fn long_messages_match_rustcrypto() {
        use crate::{CryptoProvider, RustCryptoProvider};
        let key = [7u8; 16];
        for len in [4095, 4096, 4097, 10_000, 65_536 + 5] {
            let mut a: Vec<u8> = (0..len).map(|i| (i * 31) as u8).collect();
            let mut b = a.clone();
            use crate::MessageSigner;
            crate::signing::HeaderSigner(Cmac::new(&key).unwrap()).sign(&mut a);
            RustCryptoProvider
                .signer(crate::SigningAlgorithm::AesCmac, &key)
                .sign(&mut b);
            assert_eq!(a, b, "CMAC len {len}");

            let reference = RustCryptoProvider.cipher(Cipher::Aes128Ccm, &key).unwrap();
            let ours = Ccm::new(Cipher::Aes128Ccm, &key).unwrap();
            let aad = vec![3u8; len % 300];
            let mut x: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let mut y = x.clone();
            let nonce = [9u8; 11];
            let t1 = ours.encrypt(&nonce, &aad, &mut x).unwrap();
            let t2 = reference.encrypt(&nonce, &aad, &mut y).unwrap();
            assert_eq!((t1, &x), (t2, &y), "CCM len {len}");
            ours.decrypt(&nonce, &aad, &mut x, &t1).unwrap();
            let mut bad = t1;
            bad[0] ^= 1;
            assert!(ours.decrypt(&nonce, &aad, &mut y, &bad).is_err());
            assert!(y.iter().all(|&b| b == 0));
        }
    }
}
