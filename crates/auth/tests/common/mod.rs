//! A minimal NTLMv2 client, written from MS-NLMP 3.1.5 with the crate's own primitives, to
//! drive the acceptor through variants no captured client produces.

#![allow(dead_code)]

use std::sync::Arc;

use smb3d_auth::ntlm::crypto::{self, Direction, SessionSecurity};
use smb3d_auth::ntlm::{
    AuthenticateMessage, AvFlags, AvId, AvPairWriter, AvPairs, ChallengeMessage, NegotiateFlags,
    NegotiateMessage, Version,
};
use smb3d_auth::{Account, AuthError, CredentialStore, RandomSource, ServerIdentity};
use smb3d_wire::FileTime;

pub fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub fn utf16(s: &str) -> Vec<u8> {
    let mut v = Vec::new();
    smb3d_wire::encode_utf16le(s, &mut v);
    v
}

pub struct FixedChallenge(pub [u8; 8]);

impl RandomSource for FixedChallenge {
    fn fill(&self, buf: &mut [u8]) -> Result<(), AuthError> {
        buf.copy_from_slice(&self.0[..buf.len()]);
        Ok(())
    }
}

/// Users and passwords, matched case-insensitively.
pub struct Users(pub Vec<(&'static str, &'static str)>);

impl CredentialStore for Users {
    fn account(&self, user: &str) -> Option<Account> {
        self.0
            .iter()
            .find_map(|(name, password)| Account::if_named(user, name, *crypto::nt_hash(password)))
    }
}

pub fn store() -> Arc<dyn CredentialStore> {
    Arc::new(Users(vec![("alice", "Secret1!"), ("bench", "pass")]))
}

pub fn identity() -> Arc<ServerIdentity> {
    Arc::new(ServerIdentity {
        netbios_domain: "WORKGROUP".into(),
        netbios_name: "FILESRV".into(),
        dns_domain: "example.test".into(),
        dns_name: "filesrv.example.test".into(),
    })
}

pub const NOW: FileTime = FileTime(0x01dc_0000_1234_5678);

/// The flags smbclient sends.
pub const CLIENT_FLAGS: NegotiateFlags = NegotiateFlags(0x6208_8215);

pub fn negotiate(flags: NegotiateFlags) -> Vec<u8> {
    NegotiateMessage {
        flags,
        domain: &[],
        workstation: &[],
        version: Some(Version::SERVER),
    }
    .encode()
    .unwrap()
}

/// How the test client answers a CHALLENGE.
#[derive(Clone)]
pub struct ClientOptions {
    pub user: &'static str,
    pub password: &'static str,
    pub domain: &'static str,
    /// The domain NTOWFv2 is computed with (clients differ: as sent, or empty).
    pub hash_domain: &'static str,
    pub send_mic: bool,
    pub flags: NegotiateFlags,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            user: "alice",
            password: "Secret1!",
            domain: "WORKGROUP",
            hash_domain: "WORKGROUP",
            send_mic: true,
            flags: CLIENT_FLAGS,
        }
    }
}

/// The AUTHENTICATE and the exported session key.
pub struct Authenticated {
    pub message: Vec<u8>,
    pub exported_session_key: [u8; 16],
    pub flags: NegotiateFlags,
}

impl Authenticated {
    /// The client's mechListMIC over `mech_types_der` (MS-SPNG 3.3.5.1).
    pub fn mech_list_mic(&self, mech_types_der: &[u8]) -> [u8; 16] {
        SessionSecurity::new(
            &self.exported_session_key,
            self.flags,
            Direction::ClientToServer,
        )
        .mac(mech_types_der, 0)
    }

    /// The server's mechListMIC, as the client checks it.
    pub fn server_mech_list_mic(&self, mech_types_der: &[u8]) -> [u8; 16] {
        SessionSecurity::new(
            &self.exported_session_key,
            self.flags,
            Direction::ServerToClient,
        )
        .mac(mech_types_der, 0)
    }
}

/// MS-NLMP 3.1.5.1.2 with NTLMv2 (3.3.2), key exchange and optionally a MIC.
pub fn authenticate(negotiate: &[u8], challenge: &[u8], o: &ClientOptions) -> Authenticated {
    let chal = ChallengeMessage::decode(challenge).unwrap();
    let flags = chal.flags.intersection(o.flags);
    let timestamp = AvPairs::find(chal.target_info, AvId::TIMESTAMP)
        .unwrap()
        .map(|t| u64::from_le_bytes(t.try_into().unwrap()))
        .unwrap_or(0);
    let mut pairs = AvPairWriter::new();
    for pair in AvPairs::new(chal.target_info) {
        let (id, value) = pair.unwrap();
        pairs.pair(id, value).unwrap();
    }
    if o.send_mic {
        pairs
            .pair(AvId::FLAGS, &AvFlags::MIC_PRESENT.0.to_le_bytes())
            .unwrap();
    }
    let av = pairs.finish();
    let mut blob = vec![1, 1, 0, 0, 0, 0, 0, 0];
    blob.extend_from_slice(&timestamp.to_le_bytes());
    blob.extend_from_slice(&[0xc1; 8]);
    blob.extend_from_slice(&[0; 4]);
    blob.extend_from_slice(&av);
    blob.extend_from_slice(&[0; 4]);
    let response_key = crypto::ntowf_v2(&crypto::nt_hash(o.password), o.user, o.hash_domain);
    let proof = crypto::nt_proof_str(&response_key, &chal.server_challenge, &blob);
    let base = crypto::session_base_key(&response_key, &proof);
    let mut nt = proof.to_vec();
    nt.extend_from_slice(&blob);
    let random_session_key = [0x42u8; 16];
    let key_exchange = flags.contains(NegotiateFlags::KEY_EXCH);
    let (encrypted, exported) = if key_exchange {
        (
            crypto::rc4k(&base, &random_session_key).to_vec(),
            random_session_key,
        )
    } else {
        (Vec::new(), *base)
    };
    let user = utf16(o.user);
    let domain = utf16(o.domain);
    let workstation = utf16("CLIENT");
    let mut msg = AuthenticateMessage {
        lm_challenge_response: &[0; 24],
        nt_challenge_response: &nt,
        domain: &domain,
        user: &user,
        workstation: &workstation,
        encrypted_random_session_key: &encrypted,
        flags,
        version: Some(Version::SERVER),
        mic: None,
    }
    .encode()
    .unwrap();
    if o.send_mic {
        let mic = crypto::hmac_md5(&exported, &[negotiate, challenge, &msg]);
        msg[72..88].copy_from_slice(&mic);
    }
    Authenticated {
        message: msg,
        exported_session_key: exported,
        flags,
    }
}
