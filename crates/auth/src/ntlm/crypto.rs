//! NTLM's cryptographic functions (MS-NLMP 3.3.2, 3.4.4.2, 3.4.5, 6).

use hmac::{Hmac, KeyInit, Mac};
use md4::{Digest, Md4};
use md5::Md5;
use rc4::{Rc4, StreamCipher};
use zeroize::Zeroizing;

use super::messages::NegotiateFlags;

/// A 16-byte secret (hash or key) that is wiped when dropped.
pub type Key16 = Zeroizing<[u8; 16]>;

/// HMAC_MD5 over the concatenation of `parts` (MS-NLMP 6). Every NTLM HMAC key is 16 bytes;
/// zero-padding it to MD5's 64-byte block is what HMAC does with a short key (RFC 2104 2), and
/// lets the fixed-size constructor, which cannot fail, be used.
pub fn hmac_md5(key: &[u8; 16], parts: &[&[u8]]) -> [u8; 16] {
    let mut block = Zeroizing::new([0u8; 64]);
    for (b, k) in block.iter_mut().zip(key) {
        *b = *k;
    }
    let mut mac = <Hmac<Md5> as KeyInit>::new(&(*block).into());
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// MD5 over the concatenation of `parts`.
fn md5(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Md5::new();
    for part in parts {
        h.update(part);
    }
    h.finalize().into()
}

/// The NT hash, MD4 of the UTF-16LE password (NTOWFv1, MS-NLMP 3.3.1).
pub fn nt_hash(password: &str) -> Key16 {
    let mut utf16 = Zeroizing::new(Vec::with_capacity(smb3d_wire::utf16le_len(password)));
    smb3d_wire::encode_utf16le(password, &mut utf16);
    Zeroizing::new(Md4::digest(utf16.as_slice()).into())
}

/// NTOWFv2 from the NT hash: HMAC_MD5(NT hash, UNICODE(Uppercase(User) ‖ UserDom))
/// (MS-NLMP 3.3.2), Uppercase being Windows' (`names::fold`).
pub fn ntowf_v2(nt_hash: &[u8; 16], user: &str, domain: &str) -> Key16 {
    let mut identity = Vec::new();
    smb3d_wire::encode_utf16le(&crate::names::fold(user), &mut identity);
    smb3d_wire::encode_utf16le(domain, &mut identity);
    Zeroizing::new(hmac_md5(nt_hash, &[&identity]))
}

/// NTProofStr = HMAC_MD5(ResponseKeyNT, ServerChallenge ‖ temp) (MS-NLMP 3.3.2), where
/// `client_blob` is temp (the NTLMv2_CLIENT_CHALLENGE).
pub fn nt_proof_str(
    response_key_nt: &[u8; 16],
    server_challenge: &[u8; 8],
    client_blob: &[u8],
) -> [u8; 16] {
    hmac_md5(response_key_nt, &[server_challenge, client_blob])
}

/// SessionBaseKey = HMAC_MD5(ResponseKeyNT, NTProofStr) (MS-NLMP 3.3.2); for NTLMv2 it is
/// also the KeyExchangeKey (MS-NLMP 3.4.5.1).
pub fn session_base_key(response_key_nt: &[u8; 16], nt_proof_str: &[u8; 16]) -> Key16 {
    Zeroizing::new(hmac_md5(response_key_nt, &[nt_proof_str]))
}

/// RC4K: encrypts or decrypts 16 bytes with a fresh RC4 keyed by `key` (MS-NLMP 6).
pub fn rc4k(key: &[u8; 16], data: &[u8; 16]) -> Key16 {
    let mut out = Zeroizing::new(*data);
    if let Ok(mut cipher) = Rc4::new_from_slice(key) {
        cipher.apply_keystream(out.as_mut_slice());
    }
    out
}

/// Which side of the connection a derived key belongs to (MS-NLMP 3.4.5.2, 3.4.5.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
}

/// SIGNKEY with extended session security (MS-NLMP 3.4.5.2).
pub fn sign_key(exported_session_key: &[u8; 16], direction: Direction) -> Key16 {
    let magic: &[u8] = match direction {
        Direction::ClientToServer => {
            b"session key to client-to-server signing key magic constant\0"
        }
        Direction::ServerToClient => {
            b"session key to server-to-client signing key magic constant\0"
        }
    };
    Zeroizing::new(md5(&[exported_session_key, magic]))
}

/// SEALKEY with extended session security (MS-NLMP 3.4.5.3): the exported session key cut to
/// 128, 56 or 40 bits as negotiated, hashed with the direction's constant.
pub fn seal_key(
    exported_session_key: &[u8; 16],
    flags: NegotiateFlags,
    direction: Direction,
) -> Key16 {
    let len = if flags.contains(NegotiateFlags::NEGOTIATE_128) {
        16
    } else if flags.contains(NegotiateFlags::NEGOTIATE_56) {
        7
    } else {
        5
    };
    let magic: &[u8] = match direction {
        Direction::ClientToServer => {
            b"session key to client-to-server sealing key magic constant\0"
        }
        Direction::ServerToClient => {
            b"session key to server-to-client sealing key magic constant\0"
        }
    };
    let key = exported_session_key
        .get(..len)
        .unwrap_or(exported_session_key);
    Zeroizing::new(md5(&[key, magic]))
}

/// One direction's NTLM session security state: the signing key and the RC4 sealing handle
/// (MS-NLMP 3.4.4.2), for the SPNEGO mechListMIC.
pub struct SessionSecurity {
    signing_key: Key16,
    seal: Option<Rc4>,
}

impl SessionSecurity {
    /// The state for `direction` after authentication with extended session security. The
    /// RC4 handle is used only when key exchange was negotiated (MS-NLMP 3.4.4.2).
    pub fn new(
        exported_session_key: &[u8; 16],
        flags: NegotiateFlags,
        direction: Direction,
    ) -> Self {
        let signing_key = sign_key(exported_session_key, direction);
        let seal = if flags.contains(NegotiateFlags::KEY_EXCH) {
            Rc4::new_from_slice(seal_key(exported_session_key, flags, direction).as_slice()).ok()
        } else {
            None
        };
        Self { signing_key, seal }
    }

    /// MAC with extended session security (MS-NLMP 3.4.4.2): the 16-byte
    /// NTLMSSP_MESSAGE_SIGNATURE of `message` with sequence number `seq_num`.
    pub fn mac(&mut self, message: &[u8], seq_num: u32) -> [u8; 16] {
        let seq = seq_num.to_le_bytes();
        let digest = hmac_md5(&self.signing_key, &[&seq, message]);
        let mut checksum = [0u8; 8];
        for (c, d) in checksum.iter_mut().zip(digest) {
            *c = d;
        }
        if let Some(rc4) = &mut self.seal {
            rc4.apply_keystream(&mut checksum);
        }
        let signature = 1u32.to_le_bytes().into_iter().chain(checksum).chain(seq);
        let mut out = [0u8; 16];
        for (o, b) in out.iter_mut().zip(signature) {
            *o = b;
        }
        out
    }

    /// Seals `data` in place with the RC4 handle (the confidentiality half of
    /// GSS_WrapEx, MS-NLMP 3.4.3); without key exchange there is no handle and nothing changes.
    pub fn seal(&mut self, data: &mut [u8]) {
        if let Some(rc4) = &mut self.seal {
            rc4.apply_keystream(data);
        }
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

    /// MS-NLMP 4.2.4.1.3: the NTLMv2_CLIENT_CHALLENGE ("temp") of the examples: time 0, client
    /// challenge aa×8, AV pairs NbDomainName "Domain", NbComputerName "Server".
    const SPEC_TEMP: &str = "01010000000000000000000000000000aaaaaaaaaaaaaaaa00000000\
        02000c0044006f006d00610069006e0001000c0053006500720076006500720000000000\
        00000000";

    #[test]
    fn spec_4_2_4_ntlmv2_keys_and_response() {
        // MS-NLMP 4.2.2.1.2 and 4.2.4.1.1.
        let hash = nt_hash("Password");
        assert_eq!(hash.to_vec(), hex("a4f49c406510bdcab6824ee7c30fd852"));
        let response_key = ntowf_v2(&hash, "User", "Domain");
        assert_eq!(
            response_key.to_vec(),
            hex("0c868a403bfd7a93a3001ef22ef02e3f")
        );
        // Upper-casing the user is part of NTOWFv2, the domain is used as given.
        assert_eq!(*ntowf_v2(&hash, "user", "Domain"), *response_key);
        assert_ne!(*ntowf_v2(&hash, "User", "DOMAIN"), *response_key);

        // MS-NLMP 4.2.4.2.2 and 4.2.4.1.2.
        let temp = hex(SPEC_TEMP);
        let challenge = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
        let proof = nt_proof_str(&response_key, &challenge, &temp);
        assert_eq!(proof.to_vec(), hex("68cd0ab851e51c96aabc927bebef6a1c"));
        let base = session_base_key(&response_key, &proof);
        assert_eq!(base.to_vec(), hex("8de40ccadbc14a82f15cb0ad0de95ca3"));

        // MS-NLMP 4.2.4.2.3: RC4K(KeyExchangeKey, RandomSessionKey) and back.
        let encrypted = rc4k(&base, &[0x55; 16]);
        assert_eq!(encrypted.to_vec(), hex("c5dad2544fc9799094ce1ce90bc9d03e"));
        assert_eq!(*rc4k(&base, &encrypted), [0x55; 16]);
    }

    #[test]
    fn spec_4_2_4_4_session_keys_and_wrap() {
        let flags = NegotiateFlags(0xe28a_8233);
        let exported = [0x55u8; 16];
        // MS-NLMP 4.2.4.4.
        assert_eq!(
            sign_key(&exported, Direction::ClientToServer).to_vec(),
            hex("4788dc861b4782f35d43fd98fe1a2d39")
        );
        assert_eq!(
            seal_key(&exported, flags, Direction::ClientToServer).to_vec(),
            hex("59f600973cc4960a25480a7c196e4c58")
        );
        // GSS_WrapEx of "Plaintext": seal, then MAC with the same RC4 stream.
        let mut security = SessionSecurity::new(&exported, flags, Direction::ClientToServer);
        let mut plaintext = Vec::new();
        smb3d_wire::encode_utf16le("Plaintext", &mut plaintext);
        let mut sealed = plaintext.clone();
        security.seal(&mut sealed);
        assert_eq!(sealed, hex("54e50165bf1936dc996020c1811b0f06fb5f"));
        assert_eq!(
            security.mac(&plaintext, 0).to_vec(),
            hex("010000007fb38ec5c55d497600000000")
        );
    }

    #[test]
    fn seal_key_is_cut_to_the_negotiated_strength() {
        let key = [0x55u8; 16];
        let d = Direction::ServerToClient;
        let k128 = seal_key(&key, NegotiateFlags::NEGOTIATE_128, d);
        let k56 = seal_key(&key, NegotiateFlags::NEGOTIATE_56, d);
        let k40 = seal_key(&key, NegotiateFlags::empty(), d);
        assert_ne!(*k128, *k56);
        assert_ne!(*k56, *k40);
        assert_ne!(
            *k128,
            *seal_key(
                &key,
                NegotiateFlags::NEGOTIATE_128,
                Direction::ClientToServer
            )
        );
    }

    #[test]
    fn mac_without_key_exchange_leaves_checksum_clear() {
        let key = [7u8; 16];
        let mut s = SessionSecurity::new(
            &key,
            NegotiateFlags::EXTENDED_SESSIONSECURITY,
            Direction::ClientToServer,
        );
        let mac = s.mac(b"abc", 5);
        let signing = sign_key(&key, Direction::ClientToServer);
        let digest = hmac_md5(&signing, &[&5u32.to_le_bytes(), b"abc"]);
        assert_eq!(&mac[..4], &[1, 0, 0, 0]);
        assert_eq!(&mac[4..12], &digest[..8]);
        assert_eq!(&mac[12..], &[5, 0, 0, 0]);
    }
}
