//! The part of signing that does not depend on the MAC: where the signature sits in the SMB2
//! header, zeroing it, comparing in constant time, and the AES-GMAC nonce (MS-SMB2 3.1.4.1).

use subtle::ConstantTimeEq;

use crate::MessageSigner;

/// Length of the SMB2 sync/async header; MS-SMB2 2.2.1.
const HEADER_LEN: usize = 64;
/// Command (2 bytes) in the SMB2 header.
const COMMAND: core::ops::Range<usize> = 12..14;
/// Flags (4 bytes) in the SMB2 header.
const FLAGS: core::ops::Range<usize> = 16..20;
/// MessageId (8 bytes) in the SMB2 header.
const MESSAGE_ID: core::ops::Range<usize> = 24..32;
/// Signature (16 bytes) in the SMB2 header.
const SIGNATURE: core::ops::Range<usize> = 48..64;

/// SMB2_FLAGS_SERVER_TO_REDIR; MS-SMB2 2.2.1.
const FLAG_SERVER_TO_REDIR: u32 = 0x0000_0001;
/// SMB2 CANCEL; MS-SMB2 2.2.1.
const COMMAND_CANCEL: u16 = 0x000C;

/// Computes a 16-byte MAC over a whole message whose signature field is already zero.
pub(crate) trait Mac16: Send + Sync {
    fn mac(&self, msg: &[u8]) -> [u8; 16];
}

/// A [`MessageSigner`] from a MAC: the steps of MS-SMB2 3.1.4.1 and 3.1.5.1 around it.
pub(crate) struct HeaderSigner<M>(pub(crate) M);

impl<M: Mac16> MessageSigner for HeaderSigner<M> {
    fn sign(&self, msg: &mut [u8]) {
        if msg.len() < HEADER_LEN {
            return;
        }
        if let Some(sig) = msg.get_mut(SIGNATURE) {
            sig.fill(0);
        }
        let mac = self.0.mac(msg);
        if let Some(sig) = msg.get_mut(SIGNATURE) {
            sig.copy_from_slice(&mac);
        }
    }

    fn verify(&self, msg: &mut [u8]) -> bool {
        let Some(sig) = msg.get_mut(SIGNATURE) else {
            return false;
        };
        let mut received = [0u8; 16];
        received.copy_from_slice(sig);
        sig.fill(0);
        let mac = self.0.mac(msg);
        bool::from(mac.ct_eq(&received))
    }
}

/// The 12-byte AES-GMAC nonce of a message; MS-SMB2 3.1.4.1: MessageId (little-endian), then
/// a 32-bit little-endian word with bit 0 set when the server sends the message and bit 1 set
/// for an SMB2 CANCEL request. The sender is read from SMB2_FLAGS_SERVER_TO_REDIR, so signer
/// and verifier derive the same nonce from the same bytes.
pub(crate) fn gmac_nonce(msg: &[u8]) -> [u8; 12] {
    let mut nonce = [0u8; 12];
    let (id, role) = nonce.split_at_mut(8);
    if let Some(message_id) = msg.get(MESSAGE_ID) {
        id.copy_from_slice(message_id);
    }
    let flags = read_u32(msg, FLAGS);
    let command = read_u16(msg, COMMAND);
    let from_server = flags & FLAG_SERVER_TO_REDIR != 0;
    let mut word = 0u32;
    if from_server {
        word |= 1;
    } else if command == COMMAND_CANCEL {
        word |= 2;
    }
    role.copy_from_slice(&word.to_le_bytes());
    nonce
}

fn read_u16(msg: &[u8], at: core::ops::Range<usize>) -> u16 {
    msg.get(at)
        .and_then(|b| <[u8; 2]>::try_from(b).ok())
        .map_or(0, u16::from_le_bytes)
}

fn read_u32(msg: &[u8], at: core::ops::Range<usize>) -> u32 {
    msg.get(at)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, u32::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header with the given command, flags and message id.
    fn header(command: u16, flags: u32, message_id: u64) -> [u8; 64] {
        let mut h = [0u8; 64];
        h[..4].copy_from_slice(b"\xfeSMB");
        h[COMMAND].copy_from_slice(&command.to_le_bytes());
        h[FLAGS].copy_from_slice(&flags.to_le_bytes());
        h[MESSAGE_ID].copy_from_slice(&message_id.to_le_bytes());
        h
    }

    #[test]
    fn gmac_nonce_request_response_cancel() {
        let id = 0x0102_0304_0506_0708u64;
        let mut expected = [0u8; 12];
        expected[..8].copy_from_slice(&id.to_le_bytes());
        assert_eq!(gmac_nonce(&header(5, 0x8, id)), expected);
        expected[8] = 1;
        assert_eq!(gmac_nonce(&header(5, 0x9, id)), expected);
        expected[8] = 2;
        assert_eq!(gmac_nonce(&header(COMMAND_CANCEL, 0x2, id)), expected);
    }

    struct Sum;
    impl Mac16 for Sum {
        fn mac(&self, msg: &[u8]) -> [u8; 16] {
            let s = msg.iter().fold(0u8, |a, b| a.wrapping_add(*b));
            [s; 16]
        }
    }

    #[test]
    fn short_messages() {
        let signer = HeaderSigner(Sum);
        let mut short = [7u8; 63];
        signer.sign(&mut short);
        assert_eq!(short, [7u8; 63]);
        assert!(!signer.verify(&mut short));
    }

    #[test]
    fn sign_zeroes_signature_before_mac() {
        let signer = HeaderSigner(Sum);
        let mut msg = header(8, 1, 9);
        msg[SIGNATURE].fill(0xAA);
        signer.sign(&mut msg);
        let mut expected = header(8, 1, 9);
        let s = expected.iter().fold(0u8, |a, b| a.wrapping_add(*b));
        expected[SIGNATURE].fill(s);
        assert_eq!(msg, expected);
        assert!(signer.verify(&mut msg));
    }
}
