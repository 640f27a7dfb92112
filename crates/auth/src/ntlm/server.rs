//! The NTLM server (MS-NLMP 3.2.5): CHALLENGE from NEGOTIATE, then verification of the
//! AUTHENTICATE.

use std::sync::Arc;

use smb3d_wire::{FileTime, decode_utf16le};
use subtle::{Choice, ConditionallySelectable, ConstantTimeEq};
use zeroize::Zeroizing;

use super::crypto::{self, Direction, Key16, SessionSecurity};
use super::messages::{
    AUTHENTICATE_MIC_OFFSET, AuthenticateMessage, AvFlags, AvId, AvPairWriter, AvPairs,
    ChallengeMessage, NegotiateFlags, NegotiateMessage, Version,
};
use crate::{AuthError, CredentialStore, Principal, ServerIdentity};

/// Flags the server grants when the client asks for them (MS-NLMP 3.2.5.1.1).
const ECHOED_FLAGS: NegotiateFlags = NegotiateFlags(
    NegotiateFlags::REQUEST_TARGET.0
        | NegotiateFlags::SIGN.0
        | NegotiateFlags::SEAL.0
        | NegotiateFlags::ALWAYS_SIGN.0
        | NegotiateFlags::EXTENDED_SESSIONSECURITY.0
        | NegotiateFlags::VERSION.0
        | NegotiateFlags::NEGOTIATE_128.0
        | NegotiateFlags::KEY_EXCH.0
        | NegotiateFlags::NEGOTIATE_56.0,
);

/// Flags the server always sets: Unicode (the only encoding it speaks), NTLM, TargetInfo
/// (NTLMv2 needs it) and "the target is a server" (standalone, not a domain).
const SERVER_FLAGS: NegotiateFlags = NegotiateFlags(
    NegotiateFlags::UNICODE.0
        | NegotiateFlags::NTLM.0
        | NegotiateFlags::TARGET_INFO.0
        | NegotiateFlags::TARGET_TYPE_SERVER.0,
);

/// Length of the fixed part of NTLMv2_CLIENT_CHALLENGE before its AV pairs (MS-NLMP 2.2.2.7).
const CLIENT_CHALLENGE_FIXED_LEN: usize = 28;
/// Length of an NTLMv1 (or LM) response (MS-NLMP 2.2.2.3, 2.2.2.6).
const NTLM_V1_RESPONSE_LEN: usize = 24;

/// An NTLM response of a user the credential store does not know, for the domain's DC.
pub struct UnknownUser<'a> {
    pub user: &'a str,
    pub domain: &'a str,
    pub workstation: &'a str,
    pub server_challenge: [u8; 8],
    pub nt_response: &'a [u8],
    pub lm_response: &'a [u8],
}

/// Checks an [`UnknownUser`] elsewhere: the account's name and the SessionBaseKey, or None.
pub type AskDomain<'a> = &'a mut dyn FnMut(&UnknownUser<'_>) -> Option<(String, Key16)>;

/// What the server keeps between its CHALLENGE and the client's AUTHENTICATE: both earlier
/// messages (the MIC covers them) and the challenge it issued.
pub struct ChallengeState {
    negotiate: Vec<u8>,
    challenge: Vec<u8>,
    server_challenge: [u8; 8],
    flags: NegotiateFlags,
}

/// A successful NTLM authentication.
pub struct NtlmOutcome {
    pub principal: Principal,
    /// ExportedSessionKey (MS-NLMP 3.2.5.1.2), the SMB2 session key.
    pub exported_session_key: Key16,
    /// The flags both sides agreed on.
    pub flags: NegotiateFlags,
    /// Whether the AUTHENTICATE carried a MIC (MsvAvFlags bit 0x2).
    pub mic_present: bool,
}

impl core::fmt::Debug for NtlmOutcome {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NtlmOutcome")
            .field("principal", &self.principal)
            .field("flags", &self.flags)
            .field("mic_present", &self.mic_present)
            .finish_non_exhaustive()
    }
}

impl NtlmOutcome {
    /// Signing and sealing state for one direction, for the SPNEGO mechListMIC
    /// (MS-SPNG 3.3.5.1: each check starts from a fresh RC4 handle).
    pub fn session_security(&self, direction: Direction) -> SessionSecurity {
        SessionSecurity::new(&self.exported_session_key, self.flags, direction)
    }
}

fn invalid(e: smb3d_wire::DecodeError) -> AuthError {
    AuthError::InvalidToken(e.field)
}

impl ChallengeState {
    /// Answers a NEGOTIATE_MESSAGE with a CHALLENGE_MESSAGE (MS-NLMP 3.2.5.1.1) that carries
    /// `server_challenge` and, as MsvAvTimestamp, `now`.
    pub fn new(
        negotiate: &[u8],
        identity: &ServerIdentity,
        server_challenge: [u8; 8],
        now: FileTime,
    ) -> Result<Self, AuthError> {
        let neg = NegotiateMessage::decode(negotiate).map_err(invalid)?;
        if !neg.flags.contains(NegotiateFlags::UNICODE) {
            return Err(AuthError::Unsupported("NTLM without Unicode"));
        }
        let flags = SERVER_FLAGS | neg.flags.intersection(ECHOED_FLAGS);
        let mut target_name = Vec::new();
        smb3d_wire::encode_utf16le(&identity.netbios_name, &mut target_name);
        // Windows' order; the timestamp tells the client to send a MIC (MS-NLMP 3.1.5.2.1).
        let mut info = AvPairWriter::new();
        info.utf16(AvId::NB_DOMAIN_NAME, &identity.netbios_domain)
            .and_then(|w| w.utf16(AvId::NB_COMPUTER_NAME, &identity.netbios_name))
            .and_then(|w| w.utf16(AvId::DNS_DOMAIN_NAME, &identity.dns_domain))
            .and_then(|w| w.utf16(AvId::DNS_COMPUTER_NAME, &identity.dns_name))
            .and_then(|w| w.timestamp(now))
            .map_err(|_| AuthError::Unsupported("server name too long for NTLM"))?;
        let target_info = info.finish();
        let challenge = ChallengeMessage {
            target_name: &target_name,
            flags,
            server_challenge,
            target_info: &target_info,
            version: flags
                .contains(NegotiateFlags::VERSION)
                .then_some(Version::SERVER),
        }
        .encode()
        .map_err(|_| AuthError::Unsupported("server name too long for NTLM"))?;
        Ok(Self {
            negotiate: negotiate.to_vec(),
            challenge,
            server_challenge,
            flags,
        })
    }

    /// Resumes from a NEGOTIATE and a CHALLENGE that were exchanged elsewhere (for replaying
    /// a captured exchange).
    pub fn from_messages(negotiate: Vec<u8>, challenge: Vec<u8>) -> Result<Self, AuthError> {
        NegotiateMessage::decode(&negotiate).map_err(invalid)?;
        let parsed = ChallengeMessage::decode(&challenge).map_err(invalid)?;
        let (server_challenge, flags) = (parsed.server_challenge, parsed.flags);
        Ok(Self {
            negotiate,
            challenge,
            server_challenge,
            flags,
        })
    }

    /// The CHALLENGE_MESSAGE to send.
    pub fn challenge_message(&self) -> &[u8] {
        &self.challenge
    }

    /// Verifies an AUTHENTICATE_MESSAGE (MS-NLMP 3.2.5.1.2, 3.3.2). A wrong password, an
    /// unknown user, NTLMv1, LM and a bad MIC all give [`AuthError::LogonFailure`], and an
    /// unknown user costs the same work as a known one.
    pub fn authenticate(
        &self,
        message: &[u8],
        store: &Arc<dyn CredentialStore>,
    ) -> Result<NtlmOutcome, AuthError> {
        self.authenticate_or_ask(message, store, None)
    }

    /// [`ChallengeState::authenticate`], with the response of a user the store does not know
    /// given to `ask` (the domain's DC, which answers with the account's name and the
    /// SessionBaseKey, or None for a refusal).
    pub fn authenticate_or_ask(
        &self,
        message: &[u8],
        store: &Arc<dyn CredentialStore>,
        ask: Option<AskDomain<'_>>,
    ) -> Result<NtlmOutcome, AuthError> {
        let auth = AuthenticateMessage::decode(message).map_err(invalid)?;
        let flags = self.flags.intersection(auth.flags);
        let key_exchange = flags.contains(NegotiateFlags::KEY_EXCH)
            && flags.intersects(NegotiateFlags::SIGN | NegotiateFlags::SEAL);
        let encrypted_key: Option<[u8; 16]> = if key_exchange {
            Some(
                auth.encrypted_random_session_key
                    .try_into()
                    .map_err(|_| AuthError::InvalidToken("EncryptedRandomSessionKey"))?,
            )
        } else {
            None
        };
        let exported = |key_exchange_key: &[u8; 16]| match &encrypted_key {
            Some(encrypted) => crypto::rc4k(key_exchange_key, encrypted),
            None => Zeroizing::new(*key_exchange_key),
        };

        let anonymous = auth.user.is_empty()
            && auth.nt_challenge_response.is_empty()
            && matches!(auth.lm_challenge_response, [] | [0]);
        if anonymous {
            // MS-NLMP 3.3.2: the anonymous SessionBaseKey is Z(16).
            return Ok(NtlmOutcome {
                principal: Principal::Anonymous,
                exported_session_key: exported(&[0; 16]),
                flags,
                mic_present: false,
            });
        }

        let nt = auth.nt_challenge_response;
        if nt.len() <= NTLM_V1_RESPONSE_LEN {
            // Empty (LM only) or 24 bytes (NTLMv1, with or without extended session security).
            return Err(AuthError::LogonFailure);
        }
        if !flags.contains(NegotiateFlags::EXTENDED_SESSIONSECURITY) {
            return Err(AuthError::LogonFailure);
        }
        let (sent_proof, client_blob) = nt
            .split_at_checked(16)
            .ok_or(AuthError::InvalidToken("NtChallengeResponse"))?;
        let av_pairs = client_blob
            .get(CLIENT_CHALLENGE_FIXED_LEN..)
            .ok_or(AuthError::InvalidToken("NTLMv2_CLIENT_CHALLENGE"))?;
        let av_flags = match AvPairs::find(av_pairs, AvId::FLAGS).map_err(invalid)? {
            None => AvFlags::empty(),
            Some(value) => AvFlags(u32::from_le_bytes(
                value
                    .try_into()
                    .map_err(|_| AuthError::InvalidToken("MsvAvFlags"))?,
            )),
        };
        let mic_present = av_flags.contains(AvFlags::MIC_PRESENT);
        let sent_mic = match (mic_present, auth.mic) {
            (true, Some(mic)) => Some(mic),
            // The response (which the NTProofStr protects) promises a MIC the message lacks.
            (true, None) => return Err(AuthError::LogonFailure),
            (false, _) => None,
        };
        let user = decode_utf16le(auth.user, "UserName").map_err(invalid)?;
        let domain = decode_utf16le(auth.domain, "DomainName").map_err(invalid)?;

        let (account, disabled, base_key) = match ask {
            Some(ask) if store.account(&user).is_none() => {
                let workstation =
                    decode_utf16le(auth.workstation, "Workstation").map_err(invalid)?;
                let unknown = UnknownUser {
                    user: &user,
                    domain: &domain,
                    workstation: &workstation,
                    server_challenge: self.server_challenge,
                    nt_response: nt,
                    lm_response: auth.lm_challenge_response,
                };
                let (name, key) = ask(&unknown).ok_or(AuthError::LogonFailure)?;
                (name, false, key)
            }
            _ => self.verify_response(&user, &domain, sent_proof, client_blob, store)?,
        };
        let exported_session_key = exported(&base_key);

        if let Some(sent_mic) = sent_mic {
            let mut zeroed = message.to_vec();
            if let Some(mic) = zeroed.get_mut(AUTHENTICATE_MIC_OFFSET..AUTHENTICATE_MIC_OFFSET + 16)
            {
                mic.fill(0);
            }
            let expected = crypto::hmac_md5(
                &exported_session_key,
                &[&self.negotiate, &self.challenge, &zeroed],
            );
            if !bool::from(expected.ct_eq(&sent_mic)) {
                return Err(AuthError::LogonFailure);
            }
        }
        // Only a client that proved the password learns that the account is disabled.
        if disabled {
            return Err(AuthError::AccountDisabled);
        }

        Ok(NtlmOutcome {
            principal: Principal::User {
                name: account,
                claimed_domain: domain,
            },
            exported_session_key,
            flags,
            mic_present,
        })
    }

    /// Checks the NTProofStr against the stored NT hash with the domain as sent and with an
    /// empty domain (clients differ in which they use), and returns the account's name as the
    /// store spells it, whether it is disabled, and the SessionBaseKey. Both candidates are always computed, the
    /// comparison is constant-time, and a user the store does not know is checked against a
    /// stand-in hash whose result is then discarded.
    fn verify_response(
        &self,
        user: &str,
        domain: &str,
        sent_proof: &[u8],
        client_blob: &[u8],
        store: &Arc<dyn CredentialStore>,
    ) -> Result<(String, bool, Key16), AuthError> {
        let account = store.account(user);
        let known = Choice::from(u8::from(account.is_some()));
        let (name, disabled, hash) = match account {
            Some(account) => (account.name, account.disabled, account.nt_hash),
            None => (String::new(), false, Zeroizing::new([0x5a; 16])),
        };
        let mut matched = Choice::from(0);
        let mut base_key = Zeroizing::new([0u8; 16]);
        for candidate_domain in [domain, ""] {
            let response_key = crypto::ntowf_v2(&hash, user, candidate_domain);
            let proof = crypto::nt_proof_str(&response_key, &self.server_challenge, client_blob);
            let equal = proof.as_slice().ct_eq(sent_proof);
            let candidate_key = crypto::session_base_key(&response_key, &proof);
            let take = equal & !matched;
            for (k, c) in base_key.iter_mut().zip(candidate_key.iter()) {
                k.conditional_assign(c, take);
            }
            matched |= equal;
        }
        if bool::from(matched & known) {
            Ok((name, disabled, base_key))
        } else {
            Err(AuthError::LogonFailure)
        }
    }
}
