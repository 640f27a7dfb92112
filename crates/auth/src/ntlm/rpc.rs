//! NTLMSSP as a DCE/RPC security package (MS-RPCE 2.2.1.1.7, auth_type 10): the acceptor of
//! an ncacn_ip_tcp bind and the per-PDU signing and sealing of MS-NLMP 3.4 with extended
//! session security and key exchange.

use std::ops::Range;
use std::sync::Arc;

use smb3d_rpc::tcp::{Authenticator, PacketSecurity, SIGNATURE_LEN};
use smb3d_wire::FileTime;
use subtle::ConstantTimeEq;

use super::crypto::{Direction, SessionSecurity};
use super::messages::{AuthenticateMessage, ChallengeMessage, NegotiateFlags, SIGNATURE};
use crate::{Acceptor, Principal, Step};

/// One bind's NTLM exchange, through the same acceptor (user database, domain logons) as an
/// SMB session setup, with bare NTLMSSP tokens.
pub struct RpcNtlm {
    acceptor: Acceptor,
    now: fn() -> FileTime,
    challenge_flags: NegotiateFlags,
}

impl RpcNtlm {
    /// An exchange with `acceptor`; `now` gives the CHALLENGE's MsvAvTimestamp.
    pub fn new(acceptor: Acceptor, now: fn() -> FileTime) -> Self {
        Self {
            acceptor,
            now,
            challenge_flags: NegotiateFlags::empty(),
        }
    }
}

/// What per-message security needs: extended session security (the only MAC this server
/// computes) and key exchange (an RC4 handle per direction), as Windows and Samba clients
/// negotiate them.
const REQUIRED: NegotiateFlags =
    NegotiateFlags(NegotiateFlags::EXTENDED_SESSIONSECURITY.0 | NegotiateFlags::KEY_EXCH.0);

impl Authenticator for RpcNtlm {
    fn challenge(&mut self, token: &[u8]) -> Option<Vec<u8>> {
        if !token.starts_with(SIGNATURE) {
            return None;
        }
        match self.acceptor.step(token, (self.now)()) {
            Ok(Step::Continue { token }) => {
                self.challenge_flags = ChallengeMessage::decode(&token).ok()?.flags;
                Some(token)
            }
            _ => None,
        }
    }

    fn authenticate(&mut self, token: &[u8]) -> Option<(String, Box<dyn PacketSecurity>)> {
        let flags = AuthenticateMessage::decode(token)
            .ok()?
            .flags
            .intersection(self.challenge_flags);
        let Ok(Step::Done {
            principal: Principal::User { name, .. },
            session_key,
            ..
        }) = self.acceptor.step(token, (self.now)())
        else {
            return None;
        };
        if !flags.contains(REQUIRED)
            || !flags.intersects(NegotiateFlags::SIGN | NegotiateFlags::SEAL)
        {
            return None;
        }
        Some((name, Box::new(NtlmPacketSecurity::new(&session_key, flags))))
    }
}

/// Both directions' session security and sequence numbers (MS-NLMP 3.4.4.2, 3.4.3): each side
/// counts the messages it sends from 0.
pub struct NtlmPacketSecurity {
    receive: SessionSecurity,
    send: SessionSecurity,
    receive_seq: u32,
    send_seq: u32,
}

impl NtlmPacketSecurity {
    /// The server's state for `exported_session_key` and the negotiated `flags`.
    pub fn new(exported_session_key: &[u8; 16], flags: NegotiateFlags) -> Self {
        Self {
            receive: SessionSecurity::new(exported_session_key, flags, Direction::ClientToServer),
            send: SessionSecurity::new(exported_session_key, flags, Direction::ServerToClient),
            receive_seq: 0,
            send_seq: 0,
        }
    }

    /// The client's side of the same logon, to test against.
    pub fn client(exported_session_key: &[u8; 16], flags: NegotiateFlags) -> Self {
        Self {
            receive: SessionSecurity::new(exported_session_key, flags, Direction::ServerToClient),
            send: SessionSecurity::new(exported_session_key, flags, Direction::ClientToServer),
            receive_seq: 0,
            send_seq: 0,
        }
    }
}

impl PacketSecurity for NtlmPacketSecurity {
    fn unwrap(&mut self, pdu: &mut [u8], sealed: Range<usize>, signature: &[u8]) -> bool {
        // GSS_UnwrapEx: decrypt, then the MAC of the plaintext continues the RC4 stream.
        if let Some(data) = pdu.get_mut(sealed) {
            self.receive.seal(data);
        }
        let expected = self.receive.mac(pdu, self.receive_seq);
        self.receive_seq = self.receive_seq.wrapping_add(1);
        bool::from(expected.as_slice().ct_eq(signature))
    }

    fn wrap(&mut self, pdu: &mut [u8], sealed: Range<usize>) -> [u8; SIGNATURE_LEN] {
        // GSS_WrapEx (MS-NLMP 3.4.3): the data is encrypted first and the checksum after it
        // on the same RC4 stream, but the MAC covers the plaintext.
        let signature = if sealed.is_empty() {
            self.send.mac(pdu, self.send_seq)
        } else {
            let plain = pdu.to_vec();
            if let Some(data) = pdu.get_mut(sealed) {
                self.send.seal(data);
            }
            self.send.mac(&plain, self.send_seq)
        };
        self.send_seq = self.send_seq.wrapping_add(1);
        signature
    }
}

/// The RPC security of `acceptor`'s exchanges, for [`smb3d_rpc::tcp::Association::new`].
pub fn authenticators(
    make: Arc<dyn Fn() -> Acceptor + Send + Sync>,
    now: fn() -> FileTime,
) -> Box<dyn FnMut() -> Box<dyn Authenticator> + Send> {
    Box::new(move || Box::new(RpcNtlm::new(make(), now)))
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

    /// MS-NLMP 4.2.4.4: GSS_WrapEx of "Plaintext" with extended session security, key
    /// exchange and 128-bit keys, from the client (sequence number 0), as the server's
    /// counterpart unwraps it.
    #[test]
    fn spec_4_2_4_4_wrap_and_unwrap() {
        let flags = NegotiateFlags(0xe28a_8233);
        let key = [0x55u8; 16];
        let mut client = NtlmPacketSecurity::client(&key, flags);
        let mut message = Vec::new();
        smb3d_wire::encode_utf16le("Plaintext", &mut message);
        let len = message.len();
        let signature = client.wrap(&mut message, 0..len);
        assert_eq!(message, hex("54e50165bf1936dc996020c1811b0f06fb5f"));
        assert_eq!(signature.to_vec(), hex("010000007fb38ec5c55d497600000000"));

        let mut server = NtlmPacketSecurity::new(&key, flags);
        assert!(server.unwrap(&mut message, 0..len, &signature));
        let mut plain = Vec::new();
        smb3d_wire::encode_utf16le("Plaintext", &mut plain);
        assert_eq!(message, plain);
    }

    #[test]
    fn tampering_and_replay_are_caught() {
        let flags = NegotiateFlags(0xe28a_8233);
        let key = [0x11u8; 16];
        let mut client = NtlmPacketSecurity::client(&key, flags);
        let mut server = NtlmPacketSecurity::new(&key, flags);
        let mut first = b"header and stub".to_vec();
        let sig = client.wrap(&mut first, 11..15);
        let mut tampered = first.clone();
        tampered[0] ^= 1;
        // A changed signed byte outside the sealed part fails...
        assert!(!NtlmPacketSecurity::new(&key, flags).unwrap(&mut tampered, 11..15, &sig));
        // ...the genuine one passes once, and the same message again (sequence 1) fails.
        let again = first.clone();
        assert!(server.unwrap(&mut first, 11..15, &sig));
        assert_eq!(&first, b"header and stub");
        let mut again = again;
        assert!(!server.unwrap(&mut again, 11..15, &sig));
        // Integrity only: nothing is encrypted, the server's answer checks at the client.
        let mut answer = b"response".to_vec();
        let sig = server.wrap(&mut answer, 0..0);
        assert_eq!(&answer, b"response");
        assert!(client.unwrap(&mut answer, 0..0, &sig));
    }
}
