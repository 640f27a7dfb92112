//! A minimal NTLM client (MS-NLMP 3.1.5) built on `smb3d_auth`'s primitives, to log on to a
//! live server whose CHALLENGE is not known beforehand, bare or wrapped in SPNEGO (RFC 4178).
//!
//! [`NtlmClient::start`] uses a fixed client challenge and session key, so that tests and fuzz
//! seeds replay byte for byte; [`NtlmClient::start_random`] draws both from the OS, as a client
//! that talks to a real server must.

use smb3d_auth::ntlm::crypto::{self, Direction, SessionSecurity};
use smb3d_auth::ntlm::{
    AuthenticateMessage, AvFlags, AvId, AvPairWriter, AvPairs, ChallengeMessage, NegotiateFlags,
    NegotiateMessage, Version,
};
use smb3d_auth::spnego::{self, NegTokenInit, NegTokenResp, NegotiationToken};

/// The flags smbclient 4.17 sends in its NEGOTIATE: Unicode, NTLM, signing, extended session
/// security, 128-bit keys, key exchange, version.
pub const CLIENT_FLAGS: NegotiateFlags = NegotiateFlags(0x6208_8215);

/// Who logs on, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Logon<'a> {
    /// The account name.
    pub user: &'a str,
    /// Its password (the NT hash is computed from it).
    pub password: &'a str,
    /// The domain sent and used in NTOWFv2.
    pub domain: &'a str,
    /// An anonymous logon (MS-NLMP 3.2.5.1.2): no user, no response, no keys.
    pub anonymous: bool,
    /// Send the AUTHENTICATE MIC (and, in SPNEGO, a mechListMIC).
    pub mic: bool,
    /// Wrap the tokens in SPNEGO, as Windows and smbclient do.
    pub spnego: bool,
}

/// The client side of one exchange: the NEGOTIATE sent, for the MIC.
#[derive(Debug, Clone)]
pub struct NtlmClient {
    negotiate: Vec<u8>,
    spnego: bool,
    client_challenge: [u8; 8],
    random_session_key: [u8; 16],
}

/// The last token of a successful exchange and the key it establishes.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The token for the second SESSION_SETUP.
    pub token: Vec<u8>,
    /// The session key (the exported session key; zero for anonymous).
    pub session_key: [u8; 16],
}

/// Why the client cannot answer a server token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadChallenge;

const MECH_TYPES: [&[u8]; 1] = [spnego::OID_NTLMSSP];

impl NtlmClient {
    /// Starts an exchange with the fixed client challenge and session key; returns the client
    /// and the first SESSION_SETUP token.
    pub fn start(spnego: bool) -> (Self, Vec<u8>) {
        Self::start_with(spnego, FIXED_CLIENT_CHALLENGE, FIXED_SESSION_KEY)
    }

    /// Starts an exchange with a client challenge and session key from the OS's random source.
    pub fn start_random(spnego: bool) -> Result<(Self, Vec<u8>), getrandom::Error> {
        let mut challenge = [0u8; 8];
        let mut key = [0u8; 16];
        getrandom::fill(&mut challenge)?;
        getrandom::fill(&mut key)?;
        Ok(Self::start_with(spnego, challenge, key))
    }

    /// Starts an exchange with the given client challenge (MS-NLMP 2.2.2.7) and random
    /// session key (3.1.5.1.2, sent encrypted under the session base key).
    pub fn start_with(
        spnego: bool,
        client_challenge: [u8; 8],
        random_session_key: [u8; 16],
    ) -> (Self, Vec<u8>) {
        let negotiate = NegotiateMessage {
            flags: CLIENT_FLAGS,
            domain: &[],
            workstation: &[],
            version: Some(Version::SERVER),
        }
        .encode()
        .unwrap_or_default();
        let token = if spnego {
            NegTokenInit {
                mech_types: MECH_TYPES.to_vec(),
                mech_token: Some(&negotiate),
                ..NegTokenInit::default()
            }
            .encode()
        } else {
            negotiate.clone()
        };
        (
            Self {
                negotiate,
                spnego,
                client_challenge,
                random_session_key,
            },
            token,
        )
    }

    /// Answers the server's token (a CHALLENGE, bare or in a NegTokenResp) with an
    /// AUTHENTICATE computed as MS-NLMP 3.1.5.1.2 prescribes for NTLMv2 with key exchange.
    pub fn authenticate(
        &self,
        server_token: &[u8],
        logon: &Logon<'_>,
    ) -> Result<Finished, BadChallenge> {
        let challenge = if self.spnego {
            match NegotiationToken::decode(server_token) {
                Ok(NegotiationToken::Resp(resp)) => resp.response_token.ok_or(BadChallenge)?,
                _ => return Err(BadChallenge),
            }
        } else {
            server_token
        };
        let chal = ChallengeMessage::decode(challenge).map_err(|_| BadChallenge)?;
        let flags = chal.flags.intersection(CLIENT_FLAGS);
        let (message, session_key) = if logon.anonymous {
            anonymous_authenticate(flags, &self.random_session_key)?
        } else {
            self.user_authenticate(challenge, &chal, flags, logon)?
        };
        let token = if !self.spnego {
            message
        } else {
            let mech_list_mic = (logon.mic && !logon.anonymous).then(|| {
                SessionSecurity::new(&session_key, flags, Direction::ClientToServer)
                    .mac(&spnego::encode_mech_types(&MECH_TYPES), 0)
            });
            NegTokenResp {
                response_token: Some(&message),
                mech_list_mic: mech_list_mic.as_ref().map(|m| m.as_slice()),
                ..NegTokenResp::default()
            }
            .encode()
        };
        Ok(Finished { token, session_key })
    }

    fn user_authenticate(
        &self,
        challenge: &[u8],
        chal: &ChallengeMessage<'_>,
        flags: NegotiateFlags,
        logon: &Logon<'_>,
    ) -> Result<(Vec<u8>, [u8; 16]), BadChallenge> {
        let timestamp = AvPairs::find(chal.target_info, AvId::TIMESTAMP)
            .map_err(|_| BadChallenge)?
            .and_then(|t| t.try_into().ok())
            .map(u64::from_le_bytes)
            .unwrap_or(0);
        let mut pairs = AvPairWriter::new();
        for pair in AvPairs::new(chal.target_info) {
            let (id, value) = pair.map_err(|_| BadChallenge)?;
            pairs.pair(id, value).map_err(|_| BadChallenge)?;
        }
        if logon.mic {
            pairs
                .pair(AvId::FLAGS, &AvFlags::MIC_PRESENT.0.to_le_bytes())
                .map_err(|_| BadChallenge)?;
        }
        // NTLMv2_CLIENT_CHALLENGE (MS-NLMP 2.2.2.7): versions, timestamp, client challenge,
        // the AV pairs.
        let mut blob = vec![1, 1, 0, 0, 0, 0, 0, 0];
        blob.extend_from_slice(&timestamp.to_le_bytes());
        blob.extend_from_slice(&self.client_challenge);
        blob.extend_from_slice(&[0; 4]);
        blob.extend_from_slice(&pairs.finish());
        blob.extend_from_slice(&[0; 4]);
        let response_key =
            crypto::ntowf_v2(&crypto::nt_hash(logon.password), logon.user, logon.domain);
        let proof = crypto::nt_proof_str(&response_key, &chal.server_challenge, &blob);
        let base = crypto::session_base_key(&response_key, &proof);
        let mut nt = proof.to_vec();
        nt.extend_from_slice(&blob);
        let (encrypted, exported) = if flags.contains(NegotiateFlags::KEY_EXCH) {
            (
                crypto::rc4k(&base, &self.random_session_key).to_vec(),
                self.random_session_key,
            )
        } else {
            (Vec::new(), *base)
        };
        let user = utf16(logon.user);
        let domain = utf16(logon.domain);
        let workstation = utf16("TESTKIT");
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
        .map_err(|_| BadChallenge)?;
        if logon.mic {
            let mic = crypto::hmac_md5(&exported, &[&self.negotiate, challenge, &msg]);
            if let Some(field) = msg.get_mut(MIC_RANGE) {
                field.copy_from_slice(&mic);
            }
        }
        Ok((msg, exported))
    }
}

/// Where the MIC sits in an AUTHENTICATE with a Version field (MS-NLMP 2.2.1.3).
const MIC_RANGE: core::ops::Range<usize> = 72..88;

/// The client challenge of [`NtlmClient::start`]: fixed, for tests that replay.
const FIXED_CLIENT_CHALLENGE: [u8; 8] = [0xc1; 8];

/// The random session key of [`NtlmClient::start`]: fixed, for tests that replay.
const FIXED_SESSION_KEY: [u8; 16] = [0x42; 16];

/// An anonymous AUTHENTICATE (MS-NLMP 3.2.5.1.2): the SessionBaseKey is Z(16), so with key
/// exchange the session key is the random one, sent encrypted under zeros.
fn anonymous_authenticate(
    flags: NegotiateFlags,
    random_session_key: &[u8; 16],
) -> Result<(Vec<u8>, [u8; 16]), BadChallenge> {
    let (encrypted, session_key) = if flags.contains(NegotiateFlags::KEY_EXCH) {
        (
            crypto::rc4k(&[0; 16], random_session_key).to_vec(),
            *random_session_key,
        )
    } else {
        (Vec::new(), [0; 16])
    };
    let message = AuthenticateMessage {
        lm_challenge_response: &[0],
        nt_challenge_response: &[],
        domain: &[],
        user: &[],
        workstation: &[],
        encrypted_random_session_key: &encrypted,
        flags: flags.union(NegotiateFlags::ANONYMOUS),
        version: Some(Version::SERVER),
        mic: None,
    }
    .encode()
    .map_err(|_| BadChallenge)?;
    Ok((message, session_key))
}

fn utf16(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    smb3d_wire::encode_utf16le(s, &mut out);
    out
}
