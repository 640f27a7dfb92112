//! The session-setup acceptor: SPNEGO around NTLM, or bare NTLMSSP.

use core::fmt;
use std::sync::Arc;

use smb3d_dtyp::NtStatus;
use smb3d_wire::{FileTime, decode_utf16le};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::krb5::{KerberosService, Pac};
use crate::names;
use crate::netlogon::{LogonAnswer, NetlogonClient, NetworkLogon};
use crate::ntlm::messages::{AuthenticateMessage, NegotiateFlags, SIGNATURE};
use crate::ntlm::server::UnknownUser;
use crate::ntlm::{ChallengeState, Direction, NtlmOutcome};
use crate::spnego::{self, NegState, NegTokenResp, NegotiationToken};

/// An account as its store holds it.
pub struct Account {
    /// The account's name as the store spells it: what the session acts as once the password
    /// is proven, whatever spelling the client sent.
    pub name: String,
    /// The NT hash of its password (MS-NLMP 3.3.1 NTOWFv1).
    pub nt_hash: Zeroizing<[u8; 16]>,
    /// The account may not log on: a logon that proves its password is refused with
    /// STATUS_ACCOUNT_DISABLED (as Samba and Windows answer), a wrong password fails as any.
    pub disabled: bool,
}

impl Account {
    /// The account `name` with `nt_hash` when `asked` names it ([`names::same`]), for stores
    /// of a single account.
    pub fn if_named(asked: &str, name: &str, nt_hash: [u8; 16]) -> Option<Account> {
        names::same(asked, name).then(|| Account {
            name: name.to_owned(),
            nt_hash: Zeroizing::new(nt_hash),
            disabled: false,
        })
    }
}

/// Where accounts come from; a name finds an account as [`names`] compares them.
pub trait CredentialStore: Send + Sync {
    /// The account `user` names, disabled ones included; None when there is none or its
    /// stored secret means nothing.
    fn account(&self, user: &str) -> Option<Account>;

    /// The Unix uid `user` acts as. A user without one has no account to act as: the server
    /// refuses its logon even when the password is right.
    fn uid(&self, _user: &str) -> Option<u32> {
        None
    }

    /// Changes `user`'s password if `change` proves the old one, persisting it before it
    /// returns; the account's own spelling on success. Stores that cannot change passwords
    /// refuse.
    fn change_password(
        &self,
        _user: &str,
        _change: &crate::samr::PasswordChange,
    ) -> Result<String, crate::samr::PasswordChangeError> {
        Err(crate::samr::PasswordChangeError::Store)
    }
}

/// The names the server announces in its NTLM CHALLENGE (MS-NLMP 2.2.2.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerIdentity {
    pub netbios_domain: String,
    pub netbios_name: String,
    pub dns_domain: String,
    pub dns_name: String,
}

/// Who authenticated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Principal {
    /// A user whose password was proven: the account's name as the store spells it, and the
    /// domain the client claimed, which nothing checks (any domain, or none, proves the same
    /// password).
    User {
        name: String,
        claimed_domain: String,
    },
    /// An anonymous logon (MS-NLMP 3.2.5.1.2): no user name and no NT response.
    Anonymous,
    /// A logon with a user name the store does not know, taken as a guest logon (Samba's
    /// `map to guest = bad user`, [`Acceptor::mapping_unknown_users_to_guest`]): nothing was
    /// proven, so there are no keys, as for an anonymous logon.
    Guest,
}

/// Why a session setup failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// Wrong password, unknown user, a refused protocol variant or a failed integrity check;
    /// deliberately not more specific.
    #[error("logon failure")]
    LogonFailure,
    /// The password was right but the account is disabled.
    #[error("account disabled")]
    AccountDisabled,
    /// The token is malformed or arrived at the wrong point of the exchange.
    #[error("invalid token: {0}")]
    InvalidToken(&'static str),
    /// The client asked for something this server does not do.
    #[error("not supported: {0}")]
    Unsupported(&'static str),
}

impl AuthError {
    /// The status the SESSION_SETUP response carries (MS-SMB2 3.3.5.5.3).
    pub fn status(self) -> NtStatus {
        match self {
            Self::LogonFailure => NtStatus::LOGON_FAILURE,
            Self::AccountDisabled => NtStatus::ACCOUNT_DISABLED,
            Self::InvalidToken(_) => NtStatus::INVALID_PARAMETER,
            Self::Unsupported(_) => NtStatus::NOT_SUPPORTED,
        }
    }
}

/// What to send back after one step.
pub enum Step {
    /// Send `token` with STATUS_MORE_PROCESSING_REQUIRED and wait for the next one.
    Continue { token: Vec<u8> },
    /// Send `token` (possibly empty) with STATUS_SUCCESS; `session_key` is the SMB2 session
    /// key (the NTLM ExportedSessionKey).
    Done {
        token: Vec<u8>,
        principal: Principal,
        session_key: [u8; 16],
    },
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Continue { token } => f
                .debug_struct("Continue")
                .field("token_len", &token.len())
                .finish(),
            Self::Done {
                token, principal, ..
            } => f
                .debug_struct("Done")
                .field("token_len", &token.len())
                .field("principal", principal)
                .finish_non_exhaustive(),
        }
    }
}

/// A source of random bytes for server challenges; tests inject a fixed one.
pub trait RandomSource: Send + Sync {
    /// Fills `buf`; fails only when the system has no randomness to give.
    fn fill(&self, buf: &mut [u8]) -> Result<(), AuthError>;
}

/// The operating system's random source.
#[derive(Clone, Copy, Debug, Default)]
pub struct OsRandom;

impl RandomSource for OsRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), AuthError> {
        getrandom::fill(buf).map_err(|_| AuthError::Unsupported("no system random source"))
    }
}

/// What SPNEGO remembers for the mechListMIC (RFC 4178 5).
struct MicState {
    /// The DER of the MechTypeList the client sent, which both MICs cover.
    mech_types_der: Vec<u8>,
    /// NTLM was not the client's first choice, so a MIC must prove the list was not altered.
    required: bool,
}

enum State {
    Start,
    /// SPNEGO chose NTLM but the client has not yet sent an NTLM NEGOTIATE.
    AwaitingNegotiate(MicState),
    AwaitingAuthenticate {
        ntlm: ChallengeState,
        spnego: Option<MicState>,
    },
    Finished,
}

/// Who an AUTHENTICATE message says the client is, before anything is checked: what a logon
/// audit names, whether the logon succeeds or not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claim {
    pub user: String,
    pub domain: String,
    pub workstation: String,
    /// The security package the logon used, as the audit names it: "NTLMSSP" or "Kerberos".
    pub method: &'static str,
}

impl Claim {
    /// The claim of an NTLM AUTHENTICATE message; None when it cannot be decoded (the
    /// exchange then fails as an invalid token).
    fn of(authenticate: &[u8]) -> Option<Self> {
        let auth = AuthenticateMessage::decode(authenticate).ok()?;
        let text = |bytes| decode_utf16le(bytes, "").ok();
        Some(Self {
            user: text(auth.user)?,
            domain: text(auth.domain)?,
            workstation: text(auth.workstation)?,
            method: "NTLMSSP",
        })
    }
}

/// One SESSION_SETUP exchange. Accepts SPNEGO-wrapped NTLM or bare NTLMSSP tokens; after a
/// result or an error every further step fails.
pub struct Acceptor {
    identity: Arc<ServerIdentity>,
    store: Arc<dyn CredentialStore>,
    random: Arc<dyn RandomSource>,
    state: State,
    claim: Option<Claim>,
    unknown_users_are_guests: bool,
    kerberos: Option<Arc<KerberosService>>,
    ticket_end: Option<i64>,
    pac: Option<Pac>,
    full_session_key: Option<Zeroizing<Vec<u8>>>,
    netlogon: Option<Arc<NetlogonClient>>,
}

impl Acceptor {
    /// An acceptor drawing challenges from the operating system.
    pub fn new(identity: Arc<ServerIdentity>, store: Arc<dyn CredentialStore>) -> Self {
        Self::with_random(identity, store, Arc::new(OsRandom))
    }

    /// An acceptor drawing challenges from `random`.
    pub fn with_random(
        identity: Arc<ServerIdentity>,
        store: Arc<dyn CredentialStore>,
        random: Arc<dyn RandomSource>,
    ) -> Self {
        Self {
            identity,
            store,
            random,
            state: State::Start,
            claim: None,
            unknown_users_are_guests: false,
            kerberos: None,
            ticket_end: None,
            pac: None,
            full_session_key: None,
            netlogon: None,
        }
    }

    /// Passes NTLM logons of users the store does not know, claiming `client`'s domain, to
    /// the DC. Its answer takes up to the client's timeout: the caller runs [`Acceptor::step`]
    /// where blocking is allowed.
    #[must_use]
    pub fn with_netlogon(mut self, client: Option<Arc<NetlogonClient>>) -> Self {
        self.netlogon = client;
        self
    }

    /// Makes a logon with a user name the store does not know a guest logon
    /// ([`Principal::Guest`]) instead of a failure; a known user's wrong password still fails.
    #[must_use]
    pub fn mapping_unknown_users_to_guest(mut self, on: bool) -> Self {
        self.unknown_users_are_guests = on;
        self
    }

    /// Accepts Kerberos AP-REQs verified by `service` besides NTLM.
    #[must_use]
    pub fn with_kerberos(mut self, service: Option<Arc<KerberosService>>) -> Self {
        self.kerberos = service;
        self
    }

    /// The Kerberos acceptor this exchange uses, if any.
    pub fn kerberos_service(&self) -> Option<Arc<KerberosService>> {
        self.kerberos.clone()
    }

    /// When the Kerberos ticket of a finished logon ends (seconds since 1970); None for NTLM.
    pub fn ticket_end(&self) -> Option<i64> {
        self.ticket_end
    }

    /// The verified PAC of a finished Kerberos logon of a domain user who is not in the user
    /// database: the SIDs the server maps to Unix ids (`[idmap]`). None otherwise.
    pub fn pac(&self) -> Option<&Pac> {
        self.pac.as_ref()
    }

    /// Session.FullSessionKey of a finished Kerberos logon (MS-SMB2 3.3.5.5.3): the whole
    /// authenticator subkey, 32 bytes for AES-256, whose first 16 are the session key; None
    /// for NTLM, whose key is those 16 bytes.
    pub fn full_session_key(&self) -> Option<&[u8]> {
        self.full_session_key.as_deref().map(Vec::as_slice)
    }

    /// Verifies an AUTHENTICATE message, mapping an unknown user to a guest when asked.
    fn authenticate(
        &mut self,
        ntlm: &ChallengeState,
        message: &[u8],
    ) -> Result<NtlmOutcome, AuthError> {
        let result = match self.netlogon.clone() {
            None => ntlm.authenticate(message, &self.store),
            Some(dc) => {
                let mut pac = None;
                let mut ask = |unknown: &UnknownUser<'_>| {
                    let (user_pac, key) = ask_dc(&dc, unknown)?;
                    let name = user_pac.account.clone();
                    pac = Some(user_pac);
                    Some((name, key))
                };
                let result = ntlm.authenticate_or_ask(message, &self.store, Some(&mut ask));
                if result.is_ok() {
                    self.pac = pac;
                }
                result
            }
        };
        match result {
            Err(AuthError::LogonFailure)
                if self.unknown_users_are_guests
                    && self.claim.as_ref().is_some_and(|c| {
                        !c.user.is_empty() && self.store.account(&c.user).is_none()
                    }) =>
            {
                Ok(NtlmOutcome {
                    principal: Principal::Guest,
                    exported_session_key: Zeroizing::new([0; 16]),
                    flags: NegotiateFlags::empty(),
                    mic_present: false,
                })
            }
            other => other,
        }
    }

    /// Who the client's AUTHENTICATE message said it was, once one arrived.
    pub fn claim(&self) -> Option<&Claim> {
        self.claim.as_ref()
    }

    /// Takes the client's next security token; `now` is the MsvAvTimestamp of the CHALLENGE.
    pub fn step(&mut self, token: &[u8], now: FileTime) -> Result<Step, AuthError> {
        match core::mem::replace(&mut self.state, State::Finished) {
            State::Start if token.starts_with(SIGNATURE) => {
                let ntlm = self.challenge(token, now)?;
                let token = ntlm.challenge_message().to_vec();
                self.state = State::AwaitingAuthenticate { ntlm, spnego: None };
                Ok(Step::Continue { token })
            }
            State::Start => self.spnego_init(token, now),
            State::AwaitingNegotiate(mic) => {
                let resp = NegTokenResp::decode(token).map_err(invalid)?;
                let negotiate = resp
                    .response_token
                    .ok_or(AuthError::InvalidToken("responseToken"))?;
                self.spnego_challenge(negotiate, mic, NegState::ACCEPT_INCOMPLETE, now)
            }
            State::AwaitingAuthenticate { ntlm, spnego: None } => {
                self.claim = Claim::of(token);
                let outcome = self.authenticate(&ntlm, token)?;
                Ok(done(Vec::new(), outcome))
            }
            State::AwaitingAuthenticate {
                ntlm,
                spnego: Some(mic),
            } => {
                let resp = NegTokenResp::decode(token).map_err(invalid)?;
                let authenticate = resp
                    .response_token
                    .ok_or(AuthError::InvalidToken("responseToken"))?;
                self.claim = Claim::of(authenticate);
                let outcome = self.authenticate(&ntlm, authenticate)?;
                let server_mic = check_mech_list_mic(&mic, resp.mech_list_mic, &outcome)?;
                let token = NegTokenResp {
                    neg_state: Some(NegState::ACCEPT_COMPLETED),
                    mech_list_mic: server_mic.as_ref().map(|m| m.as_slice()),
                    ..NegTokenResp::default()
                }
                .encode();
                Ok(done(token, outcome))
            }
            State::Finished => Err(AuthError::InvalidToken("exchange already finished")),
        }
    }

    /// Handles the client's NegTokenInit: picks NTLM and answers its optimistic token, or asks
    /// for an NTLM token when the optimistic one was for another mechanism.
    fn spnego_init(&mut self, token: &[u8], now: FileTime) -> Result<Step, AuthError> {
        let NegotiationToken::Init(init) = NegotiationToken::decode(token).map_err(invalid)? else {
            return Err(AuthError::InvalidToken("NegTokenInit"));
        };
        if let (Some(service), Some(first), Some(ap_req)) = (
            self.kerberos.clone(),
            init.mech_types.first(),
            init.mech_token,
        ) && KerberosService::is_kerberos(first)
        {
            return self.kerberos_logon(&service, &init, first, ap_req, now);
        }
        let position = init
            .mech_types
            .iter()
            .position(|m| *m == spnego::OID_NTLMSSP)
            .ok_or(AuthError::Unsupported("no mechanism in common"))?;
        let mic = MicState {
            mech_types_der: init.mech_types_der.to_vec(),
            required: position != 0,
        };
        match init.mech_token {
            Some(negotiate) if position == 0 => {
                self.spnego_challenge(negotiate, mic, NegState::ACCEPT_INCOMPLETE, now)
            }
            _ => {
                // RFC 4178 5: a counter-proposal asks for a MIC when it is not the
                // initiator's first choice.
                let neg_state = if mic.required {
                    NegState::REQUEST_MIC
                } else {
                    NegState::ACCEPT_INCOMPLETE
                };
                let token = NegTokenResp {
                    neg_state: Some(neg_state),
                    supported_mech: Some(spnego::OID_NTLMSSP),
                    ..NegTokenResp::default()
                }
                .encode();
                self.state = State::AwaitingNegotiate(mic);
                Ok(Step::Continue { token })
            }
        }
    }

    /// Verifies the client's optimistic Kerberos AP-REQ, its first choice (MS-SPNG 3.3.5.1),
    /// and completes in one leg with the AP-REP. The user is the client principal's name when
    /// it is a one-component principal of the service's realm that the store knows.
    fn kerberos_logon(
        &mut self,
        service: &KerberosService,
        init: &spnego::NegTokenInit<'_>,
        mech: &[u8],
        ap_req: &[u8],
        now: FileTime,
    ) -> Result<Step, AuthError> {
        let mut accepted = service.accept(ap_req, unix_seconds(now), &*self.random)?;
        let user = match accepted.client.as_slice() {
            [user] => user.clone(),
            _ => accepted.client.join("/"),
        };
        self.claim = Some(Claim {
            user: user.clone(),
            domain: accepted.client_realm.clone(),
            workstation: String::new(),
            method: "Kerberos",
        });
        if accepted.client.len() != 1 || accepted.client_realm != service.realm() {
            return Err(AuthError::LogonFailure);
        }
        // A user of the database keeps its uid and SIDs; a domain user who is not one is
        // known by its verified PAC alone, as DOMAIN\account.
        let (name, claimed_domain, pac) = match (self.store.uid(&user), accepted.pac.take()) {
            (Some(_), _) => (user, accepted.client_realm.clone(), None),
            (None, Some(pac)) => (
                format!("{}\\{}", pac.domain, pac.account),
                pac.domain.clone(),
                Some(pac),
            ),
            (None, None) => return Err(AuthError::LogonFailure),
        };
        if self.store.account(&name).is_some_and(|a| a.disabled) {
            return Err(AuthError::AccountDisabled);
        }
        // A client MIC is checked and answered; none is needed, Kerberos being its first
        // choice (RFC 4178 5).
        let server_mic = match init.mech_list_mic {
            Some(mic) => {
                accepted.verify_mic(init.mech_types_der, mic)?;
                Some(accepted.mic(init.mech_types_der)?)
            }
            None => None,
        };
        let token = NegTokenResp {
            neg_state: Some(NegState::ACCEPT_COMPLETED),
            supported_mech: Some(mech),
            response_token: Some(&accepted.reply),
            mech_list_mic: server_mic.as_deref(),
        }
        .encode();
        self.ticket_end = Some(accepted.ticket_end);
        self.pac = pac;
        self.full_session_key = Some(Zeroizing::new(accepted.full_session_key().to_vec()));
        Ok(Step::Done {
            token,
            principal: Principal::User {
                name,
                claimed_domain,
            },
            session_key: accepted.session_key,
        })
    }

    /// Answers an NTLM NEGOTIATE carried in SPNEGO.
    fn spnego_challenge(
        &mut self,
        negotiate: &[u8],
        mic: MicState,
        neg_state: NegState,
        now: FileTime,
    ) -> Result<Step, AuthError> {
        let ntlm = self.challenge(negotiate, now)?;
        let token = NegTokenResp {
            neg_state: Some(neg_state),
            supported_mech: Some(spnego::OID_NTLMSSP),
            response_token: Some(ntlm.challenge_message()),
            mech_list_mic: None,
        }
        .encode();
        self.state = State::AwaitingAuthenticate {
            ntlm,
            spnego: Some(mic),
        };
        Ok(Step::Continue { token })
    }

    fn challenge(&self, negotiate: &[u8], now: FileTime) -> Result<ChallengeState, AuthError> {
        let mut server_challenge = [0u8; 8];
        self.random.fill(&mut server_challenge)?;
        ChallengeState::new(negotiate, &self.identity, server_challenge, now)
    }
}

/// Seconds since 1970 of a FILETIME.
/// The DC's check of an unknown user's response, when the user claims the DC's domain.
fn ask_dc(dc: &NetlogonClient, unknown: &UnknownUser<'_>) -> Option<(Pac, Zeroizing<[u8; 16]>)> {
    if !names::same(unknown.domain, dc.domain()) {
        return None;
    }
    let logon = NetworkLogon {
        domain: unknown.domain,
        user: unknown.user,
        workstation: unknown.workstation,
        challenge: unknown.server_challenge,
        nt_response: unknown.nt_response,
        lm_response: unknown.lm_response,
    };
    match dc.logon(&logon) {
        Ok(LogonAnswer::Valid(pac, key)) => Some((*pac, Zeroizing::new(key))),
        Ok(LogonAnswer::Refused(_)) => None,
        Err(e) => {
            tracing::warn!(
                "NTLM logon of {}\\{} not checked: {e}",
                unknown.domain,
                unknown.user
            );
            None
        }
    }
}

fn unix_seconds(t: FileTime) -> i64 {
    (t.0 / 10_000_000) as i64 - 11_644_473_600
}

fn invalid(e: smb3d_wire::DecodeError) -> AuthError {
    AuthError::InvalidToken(e.field)
}

fn done(token: Vec<u8>, outcome: NtlmOutcome) -> Step {
    Step::Done {
        token,
        session_key: *outcome.exported_session_key,
        principal: outcome.principal,
    }
}

/// Applies the mechListMIC rules (RFC 4178 5, MS-SPNG 3.3.5.1) and returns the server's MIC,
/// if one is to be sent. A client MIC is always checked and answered. Without one, the
/// exchange fails when the MIC was required: NTLM was not the client's first choice, or its
/// AUTHENTICATE carried an NTLM MIC (as Windows and Samba require since CVE-2016-2110). An
/// anonymous logon has no keys, so no MIC is checked or sent.
fn check_mech_list_mic(
    mic: &MicState,
    client_mic: Option<&[u8]>,
    outcome: &NtlmOutcome,
) -> Result<Option<[u8; 16]>, AuthError> {
    if matches!(outcome.principal, Principal::Anonymous | Principal::Guest) {
        return Ok(None);
    }
    let Some(client_mic) = client_mic else {
        return if mic.required || outcome.mic_present {
            Err(AuthError::LogonFailure)
        } else {
            Ok(None)
        };
    };
    let expected = outcome
        .session_security(Direction::ClientToServer)
        .mac(&mic.mech_types_der, 0);
    if !bool::from(expected.as_slice().ct_eq(client_mic)) {
        return Err(AuthError::LogonFailure);
    }
    Ok(Some(
        outcome
            .session_security(Direction::ServerToClient)
            .mac(&mic.mech_types_der, 0),
    ))
}
