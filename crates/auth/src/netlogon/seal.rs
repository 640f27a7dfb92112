//! The Netlogon SSP's per-message protection with AES (MS-NRPC 3.3.4.2): the
//! NL_AUTH_SHA2_SIGNATURE (2.2.1.3.3) of a sealed PDU, made by the client and checked on the
//! server's answers.

use smb3d_crypto::netlogon::{Cfb8, hmac_sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

/// NL_AUTH_SHA2_SIGNATURE's size: 8 bytes of algorithms and flags, SequenceNumber, Checksum,
/// Confounder, and 24 reserved bytes.
pub const SIGNATURE_LEN: usize = 56;
/// SignatureAlgorithm HMAC-SHA256, SealAlgorithm AES-128, Pad, Flags (little-endian).
const TOKEN_HEADER: [u8; 8] = [0x13, 0x00, 0x1a, 0x00, 0xff, 0xff, 0x00, 0x00];

/// Why a server's signature is refused (SEC_E_MESSAGE_ALTERED in MS-NRPC 3.3.4.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the Netlogon signature does not verify")]
pub struct MessageAltered;

/// One direction-aware sealing context: the session key and the sequence number, which counts
/// every PDU sent and received on the channel.
pub struct Sealer {
    session_key: Zeroizing<[u8; 16]>,
    sealing_key: Zeroizing<[u8; 16]>,
    sequence: u64,
    initiator: bool,
}

impl Sealer {
    /// A context for the client side of a channel keyed with `session_key`.
    pub fn client(session_key: Zeroizing<[u8; 16]>) -> Self {
        Self::new(session_key, true)
    }

    fn new(session_key: Zeroizing<[u8; 16]>, initiator: bool) -> Self {
        // MS-NRPC 3.3.4.2.1: the sealing key is the session key with each byte XORed with 0xF0.
        let mut sealing_key = Zeroizing::new(*session_key);
        for b in sealing_key.iter_mut() {
            *b ^= 0xf0;
        }
        Self {
            session_key,
            sealing_key,
            sequence: 0,
            initiator,
        }
    }

    /// The context after `sequence` PDUs (for tests and fuzzing of recorded exchanges).
    #[must_use]
    pub fn at_sequence(mut self, sequence: u64) -> Self {
        self.sequence = sequence;
        self
    }

    /// The 8-byte sequence number of MS-NRPC 3.3.4.2.1: the low and high 32 bits big-endian,
    /// the top bit of byte 4 set when the client sends.
    fn sequence_bytes(&self, from_client: bool) -> [u8; 8] {
        let mut out = [0u8; 8];
        let (low, high) = out.split_at_mut(4);
        low.copy_from_slice(&(self.sequence as u32).to_be_bytes());
        high.copy_from_slice(&((self.sequence >> 32) as u32).to_be_bytes());
        if from_client && let Some(b) = out.get_mut(4) {
            *b |= 0x80;
        }
        out
    }

    /// Encrypts `payload` (stub and padding) in place and returns its signature.
    pub fn seal(&mut self, payload: &mut [u8], confounder: [u8; 8]) -> [u8; SIGNATURE_LEN] {
        let sequence = self.sequence_bytes(self.initiator);
        self.sequence = self.sequence.wrapping_add(1);
        let digest = hmac_sha256(&*self.session_key, &[&TOKEN_HEADER, &confounder, payload]);
        let mut checksum = [0u8; 8];
        checksum.copy_from_slice(digest.get(..8).unwrap_or(&[0; 8]));
        let mut confounder = confounder;
        let mut stream = Cfb8::new(&self.sealing_key, &doubled(&sequence));
        stream.encrypt(&mut confounder);
        stream.encrypt(payload);
        let mut sealed_sequence = sequence;
        Cfb8::new(&self.session_key, &doubled(&checksum)).encrypt(&mut sealed_sequence);
        let mut token = [0u8; SIGNATURE_LEN];
        for (dst, src) in token.iter_mut().zip(
            TOKEN_HEADER
                .iter()
                .chain(&sealed_sequence)
                .chain(&checksum)
                .chain(&confounder),
        ) {
            *dst = *src;
        }
        token
    }

    /// Checks the signature of a server's PDU and decrypts its `payload` in place (MS-NRPC
    /// 3.3.4.2.2). On failure the payload is garbage and the channel must be dropped.
    pub fn unseal(&mut self, payload: &mut [u8], token: &[u8]) -> Result<(), MessageAltered> {
        let field = |at: usize| -> Result<[u8; 8], MessageAltered> {
            let mut out = [0u8; 8];
            out.copy_from_slice(token.get(at..at + 8).ok_or(MessageAltered)?);
            Ok(out)
        };
        if field(0)? != TOKEN_HEADER {
            return Err(MessageAltered);
        }
        let mut sequence = field(8)?;
        let checksum = field(16)?;
        let mut confounder = field(24)?;
        Cfb8::new(&self.session_key, &doubled(&checksum)).decrypt(&mut sequence);
        let expected = self.sequence_bytes(!self.initiator);
        self.sequence = self.sequence.wrapping_add(1);
        if !bool::from(sequence.ct_eq(&expected)) {
            return Err(MessageAltered);
        }
        let mut stream = Cfb8::new(&self.sealing_key, &doubled(&sequence));
        stream.decrypt(&mut confounder);
        stream.decrypt(payload);
        let digest = hmac_sha256(&*self.session_key, &[&TOKEN_HEADER, &confounder, payload]);
        if bool::from(digest.get(..8).unwrap_or(&[]).ct_eq(&checksum)) {
            Ok(())
        } else {
            Err(MessageAltered)
        }
    }
}

/// An 8-byte value concatenated with itself: the IVs of MS-NRPC 3.3.4.2.1.
fn doubled(half: &[u8; 8]) -> [u8; 16] {
    let mut iv = [0u8; 16];
    let (a, b) = iv.split_at_mut(8);
    a.copy_from_slice(half);
    b.copy_from_slice(half);
    iv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_answer_round_trips_and_any_change_is_refused() {
        let key = [7u8; 16];
        let mut client = Sealer::client(Zeroizing::new(key));
        let mut server = Sealer::new(Zeroizing::new(key), false);
        let request = b"request stub 16b".to_vec();
        let mut sealed = request.clone();
        let token = client.seal(&mut sealed, [1; 8]);
        assert_eq!(&token[..8], &TOKEN_HEADER);
        assert_ne!(sealed, request);
        server.unseal(&mut sealed, &token).unwrap();
        assert_eq!(sealed, request);

        let answer = b"answer stub, 32 bytes long......".to_vec();
        let mut sealed = answer.clone();
        let token = server.seal(&mut sealed, [2; 8]);
        let fresh = |sequence| {
            let mut s = Sealer::client(Zeroizing::new(key));
            s.sequence = sequence;
            s
        };
        let mut copy = sealed.clone();
        fresh(1).unseal(&mut copy, &token).unwrap();
        assert_eq!(copy, answer);
        // Algorithm bytes, sequence number, checksum, confounder.
        for bit in [0usize, 8 * 8 + 3, 20 * 8, 26 * 8 + 7] {
            let mut bad = token;
            bad[bit / 8] ^= 1 << (bit % 8);
            let mut copy = sealed.clone();
            assert_eq!(fresh(1).unseal(&mut copy, &bad), Err(MessageAltered));
        }
        let mut flipped = sealed.clone();
        flipped[5] ^= 4;
        assert_eq!(fresh(1).unseal(&mut flipped, &token), Err(MessageAltered));
        // The same answer at another point of the exchange (a replay) is refused.
        let mut copy = sealed.clone();
        assert_eq!(fresh(3).unseal(&mut copy, &token), Err(MessageAltered));
        // The client's own PDU reflected back is refused: the direction bit differs.
        let mut mine = request.clone();
        let reflected = fresh(1).seal(&mut mine, [3; 8]);
        assert_eq!(fresh(1).unseal(&mut mine, &reflected), Err(MessageAltered));
        assert_eq!(fresh(0).unseal(&mut [], &token[..20]), Err(MessageAltered));
    }
}
