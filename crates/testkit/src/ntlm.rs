//! A minimal NTLM client (MS-NLMP 3.1.5) built on `smb3d_auth`'s primitives, to log on to a
//! live server whose CHALLENGE is not known beforehand, bare or wrapped in SPNEGO (RFC 4178).

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
    /// Starts an exchange; returns the client and the first SESSION_SETUP token.
    pub fn start(spnego: bool) -> (Self, Vec<u8>) {
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
        (Self { negotiate, spnego }, token)
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
            anonymous_authenticate(flags)?
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
        blob.extend_from_slice(&[0xc1; 8]);
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
                crypto::rc4k(&base, &RANDOM_SESSION_KEY).to_vec(),
                RANDOM_SESSION_KEY,
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

/// The random session key the client picks: fixed, as nothing here needs secrecy.
const RANDOM_SESSION_KEY: [u8; 16] = [0x42; 16];

/// An anonymous AUTHENTICATE (MS-NLMP 3.2.5.1.2): the SessionBaseKey is Z(16), so with key
/// exchange the session key is the random one, sent encrypted under zeros.
fn anonymous_authenticate(flags: NegotiateFlags) -> Result<(Vec<u8>, [u8; 16]), BadChallenge> {
    let (encrypted, session_key) = if flags.contains(NegotiateFlags::KEY_EXCH) {
        (
            crypto::rc4k(&[0; 16], &RANDOM_SESSION_KEY).to_vec(),
            RANDOM_SESSION_KEY,
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
