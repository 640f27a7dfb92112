//! SESSION_SETUP: MS-SMB2 3.3.5.5 (new sessions 3.3.5.5.1, re-authentication 3.3.5.5.2,
//! completing authentication 3.3.5.5.3; binding a channel in `binding`).

mod binding;

use std::sync::Arc;

use smb3d_auth::{Acceptor, AuthError, Claim, Principal, Step};
use smb3d_crypto::{PreauthHash, SessionKeys};
use smb3d_dtyp::NtStatus;
use smb3d_smb2::negotiate::SecurityMode;
use smb3d_smb2::session_setup::{
    SessionFlags, SessionSetupFlags, SessionSetupRequest, SessionSetupResponse,
};
use smb3d_wire::Writer;

use crate::clock::Clock;

use crate::address_slots::AddressSlot;
use crate::handlers::tree_connect;
use crate::identity::{Accounts, Identity};
use crate::limits::Limit;
use crate::request::ctx::{Ctx, sign_refusal};
use crate::request::malformed;
use crate::state::audit::{self, LogonResult};
use crate::state::encryption::SessionCipher;
use crate::state::server::{EncryptionPolicy, Server};
use crate::state::session::{
    AuthExchange, Channel, Established, Origin, Session, SessionUser, Tree, tear_down,
};

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let arrived = cx.conn.server.settings.clock.now();
    let req = SessionSetupRequest::decode(pdu).map_err(malformed)?;
    let negotiated = cx.negotiated;
    let server = cx.conn.server.clone();
    // A server that requires encryption refuses clients that cannot encrypt (3.3.5.5 steps 1
    // and 2).
    if server.settings.encryption == EncryptionPolicy::Required && negotiated.cipher.is_none() {
        return Err(NtStatus::ACCESS_DENIED);
    }
    // Step 4; a client speaking 2.x that asks is answered as Windows does (smbtorture
    // smb2.session.bind_negative_smb2*).
    if cx.hdr.session_id != 0 && req.flags.contains(SessionSetupFlags::BINDING) {
        return binding::handle(cx, &req, pdu, w, arrived).await;
    }
    // An exchange that starts counts as a logon under way (security.md L16), checked before
    // a new session is made for it.
    let starts = cx.hdr.session_id == 0
        || cx
            .session
            .as_ref()
            .is_some_and(|s| s.state.lock().exchange.is_none());
    let address_slot = if starts {
        if cx.hdr.session_id == 0 {
            cx.conn.admit_new_session()?;
        }
        cx.conn.admit_logon()?
    } else {
        None
    };
    let session = if cx.hdr.session_id == 0 {
        let origin = Origin {
            dialect: negotiated.dialect,
            signing_algorithm: negotiated.signing_algorithm,
            cipher: negotiated.cipher,
        };
        let session = Arc::new(Session::new(server.allocate_session_id(), origin));
        cx.conn.add_session(session.clone());
        session
    } else {
        match cx.session.clone() {
            Some(session) => session,
            None => {
                sign_refusal(cx, pdu);
                return Err(NtStatus::USER_SESSION_DELETED);
            }
        }
    };
    cx.response_session_id = Some(session.id);

    let (step, claim) = {
        let mut st = session.state.lock();
        let exchange = st
            .exchange
            .get_or_insert_with(|| new_exchange(cx, arrived, address_slot));
        let pass_through = server.settings.netlogon.is_some();
        let step = take_leg(
            exchange,
            &req,
            pdu,
            arrived,
            &*server.settings.clock,
            pass_through,
        );
        let ended = !matches!(step, Ok(Step::Continue { .. }));
        (
            step,
            ended.then(|| exchange.acceptor.claim().cloned()).flatten(),
        )
    };
    cx.conn.watchdog.exchange_moved();
    match step {
        Ok(Step::Continue { token }) => Ok(more_processing(cx, session, &token, w)),
        Ok(Step::Done {
            token,
            principal,
            session_key,
        }) => {
            let flags = match complete(cx, &session, &req, principal, &session_key) {
                Ok(flags) => {
                    let result = match session.user() {
                        _ if flags.contains(SessionFlags::IS_GUEST) => LogonResult::Guest,
                        Some(user) => LogonResult::Success(user),
                        None => LogonResult::Failure("the session ended meanwhile"),
                    };
                    audit::logon(cx.conn, claim.as_ref(), &result);
                    flags
                }
                Err(status) => {
                    let reason = format!("refused after authentication: {status}");
                    audit::logon(cx.conn, claim.as_ref(), &LogonResult::Failure(&reason));
                    cx.sign_with = cx.conn.response_signer_of(cx.hdr, &session, false);
                    tear_down(&server, &session);
                    server.metrics.auth_failure();
                    return Err(status);
                }
            };
            Ok(logged_on(cx, flags, &token, w))
        }
        Err(e) => {
            // A failed exchange ends the session (3.3.5.5.3), including a failed
            // re-authentication, on every channel; the answer to a re-authentication is signed
            // as the session's answers were.
            cx.sign_with = cx.conn.response_signer_of(cx.hdr, &session, false);
            tear_down(&server, &session);
            let reason = failure_reason(&server, claim.as_ref(), e);
            audit::logon(cx.conn, claim.as_ref(), &LogonResult::Failure(&reason));
            Err(failed(cx, e, arrived).await)
        }
    }
}

/// An authentication starting on this connection, counted against its address by
/// `address_slot` if it must be ([`Connection::admit_logon`]); on 3.1.1 its preauth hash
/// starts from the connection's (MS-SMB2 3.3.5.5.1, 3.3.5.5.3).
fn new_exchange(
    cx: &Ctx<'_>,
    arrived: tokio::time::Instant,
    address_slot: Option<AddressSlot>,
) -> AuthExchange {
    let server = &cx.conn.server;
    AuthExchange {
        acceptor: Acceptor::new(server.identity.clone(), server.credentials.clone())
            .mapping_unknown_users_to_guest(server.settings.map_to_guest)
            .with_kerberos(server.settings.kerberos.clone())
            .with_netlogon(server.settings.netlogon.clone()),
        preauth: cx.negotiated.preauth.clone(),
        last_leg: arrived,
        _address_slot: address_slot,
    }
}

/// One leg of an exchange: the request joins its preauth hash and its token goes to the
/// security package.
fn take_leg(
    exchange: &mut AuthExchange,
    req: &SessionSetupRequest<'_>,
    pdu: &[u8],
    arrived: tokio::time::Instant,
    clock: &dyn Clock,
    pass_through: bool,
) -> Result<Step, AuthError> {
    exchange.last_leg = arrived;
    if let Some(preauth) = exchange.preauth.as_mut() {
        preauth.update(pdu);
    }
    let mut step = || {
        exchange
            .acceptor
            .step(req.security_buffer, clock.filetime())
    };
    // A leg may wait on the DC (NTLM pass-through, bounded by its timeout).
    if pass_through {
        crate::blocking::blocking(step)
    } else {
        step()
    }
}

/// The exchange needs another leg: the package's token goes back, and the response joins the
/// preauth hash of the exchange (`hash_response`).
fn more_processing(
    cx: &mut Ctx<'_>,
    session: Arc<Session>,
    token: &[u8],
    w: &mut Writer<'_>,
) -> NtStatus {
    cx.preauth_session = Some(session);
    SessionSetupResponse {
        session_flags: SessionFlags::empty(),
        security_buffer: token,
    }
    .encode(w);
    NtStatus::MORE_PROCESSING_REQUIRED
}

/// The exchange succeeded: the connection has logged on, through a user unless it made a
/// null session.
fn logged_on(cx: &Ctx<'_>, flags: SessionFlags, token: &[u8], w: &mut Writer<'_>) -> NtStatus {
    cx.conn.server.metrics.logon();
    cx.conn
        .watchdog
        .logged_on(!flags.contains(SessionFlags::IS_NULL));
    SessionSetupResponse {
        session_flags: flags,
        security_buffer: token,
    }
    .encode(w);
    NtStatus::SUCCESS
}

/// Why the security package refused, for the logon audit: an unknown user name is told from a
/// wrong password here, after the fact (the client learns neither).
fn failure_reason(server: &Server, claim: Option<&Claim>, e: AuthError) -> String {
    match (e, claim) {
        // A claim of Kerberos comes from a ticket that decrypted with the keytab's key.
        (AuthError::LogonFailure, Some(c)) if c.method == "Kerberos" => {
            let ours = server
                .settings
                .kerberos
                .as_ref()
                .is_some_and(|k| k.realm() == c.domain);
            if !ours || server.credentials.uid(&c.user).is_none() {
                "Kerberos principal without a local user of this realm".into()
            } else {
                "Kerberos authenticator refused (replayed, clock skew or a wrong MIC)".into()
            }
        }
        (AuthError::LogonFailure, Some(c)) if server.credentials.account(&c.user).is_none() => {
            "unknown user".into()
        }
        (AuthError::LogonFailure, Some(_)) => {
            "wrong password (or a refused NTLM response or MIC)".into()
        }
        (e, _) => e.to_string(),
    }
}

/// The security package refused: counted, and a failed logon answered late.
async fn failed(cx: &Ctx<'_>, e: AuthError, arrived: tokio::time::Instant) -> NtStatus {
    cx.conn.server.metrics.auth_failure();
    if e == AuthError::LogonFailure {
        answer_failure_late(cx, arrived).await;
    }
    e.status()
}

/// A failed logon is answered once its delay has passed (`throttle`): the same for every
/// reason of failure, longer for an address that keeps failing.
async fn answer_failure_late(cx: &Ctx<'_>, arrived: tokio::time::Instant) {
    let server = &cx.conn.server;
    let client = cx.conn.client();
    let wait = server
        .logon_throttle
        .failed(client, arrived, server.limits());
    if wait.throttled {
        let who = client.map_or_else(|| "a client".to_owned(), |c| c.to_string());
        server.limit_counters.hit(
            Limit::LogonThrottled,
            &format_args!("failed logons from {who} answered after {:?}", wait.delay),
        );
    }
    server
        .settings
        .clock
        .sleep_until(arrived + wait.delay)
        .await;
}

/// MS-SMB2 3.3.5.5.3 after the security package succeeded: keys, signing, and the previous
/// session of the same user closed.
fn complete(
    cx: &mut Ctx<'_>,
    session: &Arc<Session>,
    req: &SessionSetupRequest<'_>,
    principal: Principal,
    session_key: &[u8; 16],
) -> Result<SessionFlags, NtStatus> {
    let server = &cx.conn.server;
    let exchange = session.state.lock().exchange.take();
    let ticket_end = exchange.as_ref().and_then(|e| e.acceptor.ticket_end());
    let pac = exchange.as_ref().and_then(|e| e.acceptor.pac().cloned());
    // Session.FullSessionKey: the 3.1.1 AES-256 cipher keys come from all of a Kerberos
    // key's 32 bytes; NTLM's is the 16-byte session key.
    let full_key = exchange
        .as_ref()
        .and_then(|e| e.acceptor.full_session_key())
        .unwrap_or(session_key);
    let preauth = exchange.as_ref().and_then(|e| e.preauth.as_ref());
    let guest = principal == Principal::Guest;
    let user = SessionUser::from(principal);
    let owner = session.owner();
    if let Some(owner) = &owner
        && !may_reauthenticate(owner, &user)
    {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let anonymous = user == SessionUser::Anonymous;
    let identity = identity_of(server, &user, pac.as_ref())?;
    let protection = Protection::new(cx, req, anonymous, full_key, preauth)?;
    end_previous_session(server, req, session, &user);
    // The session's tree connects, as the new identity may have them.
    let trees = owner
        .is_some()
        .then(|| tree_connect::renew_trees(cx.conn, session, &user, &identity));
    let encrypt_data = establish(cx, session, user, identity, protection, trees);
    // Session.ExpirationTime (3.3.5.5.3): a Kerberos logon lasts as long as its ticket; a
    // re-authentication renews it.
    session.expires.store(
        ticket_end.unwrap_or(0),
        std::sync::atomic::Ordering::Relaxed,
    );
    Ok(if guest {
        SessionFlags::IS_GUEST
    } else if anonymous {
        SessionFlags::IS_NULL
    } else if encrypt_data {
        SessionFlags::ENCRYPT_DATA
    } else {
        SessionFlags::empty()
    })
}

/// Whose credentials the session's work runs with: a database user's, or a domain user's
/// from the verified PAC of its ticket (`pac`) and `[idmap]`.
fn identity_of(
    server: &Server,
    user: &SessionUser,
    pac: Option<&smb3d_auth::krb5::Pac>,
) -> Result<Arc<Identity>, NtStatus> {
    Ok(Arc::new(match user {
        // A user with no uid has no account to act as (it went after its password was
        // checked, or its domain has no range): the logon fails rather than run as the
        // server's own account.
        SessionUser::User { name, .. } => match (server.credentials.uid(name), pac) {
            (Some(uid), _) => server.ids.identity(uid),
            (None, Some(pac)) => {
                let identity = server
                    .ids
                    .domain_identity(pac)
                    .ok_or(NtStatus::LOGON_FAILURE)?;
                server
                    .domain_names
                    .learn(pac.user_sid, &pac.account, &pac.domain);
                identity
            }
            (None, None) => return Err(NtStatus::LOGON_FAILURE),
        },
        SessionUser::Anonymous => match &server.settings.guest_account {
            None => server.ids.anonymous(),
            Some(account) => {
                let uid = Accounts::read().uid_of(account).ok_or_else(|| {
                    tracing::error!("guest_account {account:?} is not a Unix user");
                    NtStatus::LOGON_FAILURE
                })?;
                server.ids.guest(uid)
            }
        },
    }))
}

/// The signing and encryption an authentication sets up (MS-SMB2 3.3.5.5.3); a
/// re-authentication keeps those of the first.
struct Protection {
    signer: Option<Arc<dyn smb3d_crypto::MessageSigner>>,
    signing_required: bool,
    cipher: Option<Arc<SessionCipher>>,
    encrypt_data: bool,
}

impl Protection {
    fn new(
        cx: &Ctx<'_>,
        req: &SessionSetupRequest<'_>,
        anonymous: bool,
        full_session_key: &[u8],
        preauth: Option<&PreauthHash>,
    ) -> Result<Self, NtStatus> {
        let negotiated = cx.negotiated;
        let server = &cx.conn.server;
        let keys = SessionKeys::derive_from_full_key(
            negotiated.dialect,
            full_session_key,
            preauth,
            negotiated.cipher,
        );
        let signer: Option<Arc<dyn smb3d_crypto::MessageSigner>> = if anonymous {
            None
        } else {
            Some(Arc::from(
                server
                    .crypto
                    .signer(negotiated.signing_algorithm, &keys.signing),
            ))
        };
        // Session.SigningRequired: the server's policy, or the client asked for it at NEGOTIATE
        // (Connection.ShouldSign) or now.
        let client_requires = SecurityMode(negotiated.client_security_mode)
            .contains(SecurityMode::SIGNING_REQUIRED)
            || req.security_mode.contains(SecurityMode::SIGNING_REQUIRED);
        let signing_required = !anonymous && (server.settings.require_signing || client_requires);

        // Session.EncryptData (3.3.5.5.3): a null session has no keys to encrypt with, so where
        // encryption is required it is refused.
        let cipher = negotiated
            .cipher
            .filter(|_| !anonymous)
            .and_then(|c| SessionCipher::new(&server.crypto, c, &keys))
            .map(Arc::new);
        let policy = server.settings.encryption;
        if policy == EncryptionPolicy::Required && cipher.is_none() {
            return Err(NtStatus::ACCESS_DENIED);
        }
        let encrypt_data = cipher.is_some() && policy.asks();
        Ok(Self {
            signer,
            signing_required,
            cipher,
            encrypt_data,
        })
    }
}

/// PreviousSessionId: the client lost its earlier connection; that session goes if it is the
/// same user's (3.3.5.5.3).
fn end_previous_session(
    server: &Arc<Server>,
    req: &SessionSetupRequest<'_>,
    session: &Session,
    user: &SessionUser,
) {
    if req.previous_session_id != 0
        && req.previous_session_id != session.id
        && let Some(previous) = server.session(req.previous_session_id)
        && previous.user().is_some_and(|p| p.same_account(user))
    {
        server.sessions.lock().remove(&previous.id);
        // On its own connection (this one or another) its id stops working at once
        // (smbtorture smb2.notify.session-reconnect, smb2.durable-open.reopen1a); its durable
        // opens wait for a reconnect.
        server.forget_session(previous.id);
        crate::state::durable::disconnect_session(server, &previous);
    }
}

/// Records who the session acts for now, with its protection and renewed tree connects.
/// Returns whether the session encrypts its data.
fn establish(
    cx: &mut Ctx<'_>,
    session: &Session,
    user: SessionUser,
    identity: Arc<Identity>,
    protection: Protection,
    trees: Option<Vec<Arc<Tree>>>,
) -> bool {
    let mut st = session.state.lock();
    // A re-authentication (3.3.5.5.2) renews who the session acts for, not its keys: the
    // client keeps signing and encrypting with the ones of the first authentication.
    let (owner, protection) = match st.established.take() {
        Some(first) => (
            first.owner,
            Protection {
                signer: first.signer,
                signing_required: first.signing_required,
                cipher: first.cipher,
                encrypt_data: first.encrypt_data,
            },
        ),
        None => {
            // The first authentication: this connection is the session's first channel, and
            // its Channel.SigningKey is Session.SigningKey.
            st.channels.insert(
                cx.conn.id,
                Channel {
                    conn: Arc::downgrade(cx.conn),
                    signer: protection.signer.clone(),
                },
            );
            (user.clone(), protection)
        }
    };
    for tree in trees.into_iter().flatten() {
        st.renew_tree(tree);
    }
    // 3.1.1 signs the final response with the channel's key whatever the signing policy.
    if cx.negotiated.dialect == 0x0311 {
        cx.sign_with = st.channels.get(&cx.conn.id).and_then(|c| c.signer.clone());
    }
    let encrypt_data = protection.encrypt_data;
    st.established = Some(Established {
        owner,
        user,
        identity,
        signer: protection.signer,
        signing_required: protection.signing_required,
        cipher: protection.cipher,
        encrypt_data,
    });
    encrypt_data
}

/// MS-SMB2 3.3.5.5.2: whether a session whose first authentication proved `owner` may
/// re-authenticate as `user`. Renewing the same user keeps it, and a user's session may drop to
/// anonymous and come back (smbtorture smb2.session.reauth2-5). It never becomes another
/// user's, nor does an anonymous session (unsigned, with no keys) gain one: the session keeps
/// its first logon's keys, so whoever holds them would act for any user whose logon they
/// relay, signing required or not.
fn may_reauthenticate(owner: &SessionUser, user: &SessionUser) -> bool {
    *user == SessionUser::Anonymous || user.same_account(owner)
}
