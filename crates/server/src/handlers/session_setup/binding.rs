//! Binding a connection to an existing session (multichannel): MS-SMB2 3.3.5.5 step 4, and
//! 3.3.5.5.3 for the channel's key. The binding authenticates the same user again on the new
//! connection; its exchange lives in that connection (Connection.PreauthSessionTable) and a
//! failure leaves the session as it was.

use std::sync::Arc;

use smb3d_auth::Step;
use smb3d_crypto::{MessageSigner, SessionKeys, SigningAlgorithm};
use smb3d_dtyp::NtStatus;
use smb3d_smb2::header::HeaderFlags;
use smb3d_smb2::session_setup::{SessionFlags, SessionSetupRequest};
use smb3d_wire::Writer;

use super::{failed, logged_on, more_processing, new_exchange, take_leg};
use crate::limits::Limit;
use crate::request::ctx::{Ctx, signature_holds};
use crate::state::session::{Channel, Session, SessionUser};

pub(super) async fn handle(
    cx: &mut Ctx<'_>,
    req: &SessionSetupRequest<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
    arrived: tokio::time::Instant,
) -> Result<NtStatus, NtStatus> {
    let server = cx.conn.server.clone();
    let session = server
        .session(cx.hdr.session_id)
        .ok_or(NtStatus::USER_SESSION_DELETED)?;
    if session.state.lock().established.is_none() {
        return Err(NtStatus::REQUEST_NOT_ACCEPTED);
    }
    // The request is signed with Session.SigningKey (3.3.5.2.4). Once its signature holds, the
    // answers are signed with that key too, refusals included: the client has no other key to
    // trust them by yet. A wrong signature is refused unsigned.
    let signed = cx.hdr.flags.contains(HeaderFlags::SIGNED);
    if signed && let Some(signer) = session.session_signer() {
        if !signature_holds(signer.as_ref(), pdu) {
            return Err(NtStatus::ACCESS_DENIED);
        }
        cx.sign_with = Some(signer);
    }
    admit(cx, &session, signed)?;

    let negotiated = cx.negotiated;
    let mut exchange = match cx.conn.take_binding(session.id) {
        Some(exchange) => exchange,
        None => new_exchange(cx, arrived, cx.conn.admit_logon()?),
    };
    let step = take_leg(
        &mut exchange,
        req,
        pdu,
        arrived,
        &*cx.conn.server.settings.clock,
        cx.conn.server.settings.netlogon.is_some(),
    );
    cx.conn.watchdog.exchange_moved();
    match step {
        Ok(Step::Continue { token }) => {
            if !cx.conn.keep_binding(session.id, exchange) {
                return Err(NtStatus::INSUFFICIENT_RESOURCES);
            }
            Ok(more_processing(cx, session, &token, w))
        }
        Ok(Step::Done {
            token,
            principal,
            session_key,
        }) => {
            // Only the user the session acts for may bind to it.
            let user = SessionUser::from(principal);
            if !session.user().is_some_and(|u| u.same_account(&user)) {
                server.metrics.auth_failure();
                return Err(NtStatus::ACCESS_DENIED);
            }
            // Channel.SigningKey: from this authentication's key (and, for 3.1.1, this
            // exchange's preauth hash), for the algorithm this connection negotiated.
            let keys = SessionKeys::derive(
                negotiated.dialect,
                &session_key,
                exchange.preauth.as_ref(),
                negotiated.cipher,
            );
            let signer: Arc<dyn MessageSigner> = Arc::from(
                server
                    .crypto
                    .signer(negotiated.signing_algorithm, &keys.signing),
            );
            let flags = {
                let mut st = session.state.lock();
                let Some(established) = st.established.as_ref() else {
                    return Err(NtStatus::USER_SESSION_DELETED);
                };
                let flags = if established.encrypt_data {
                    SessionFlags::ENCRYPT_DATA
                } else {
                    SessionFlags::empty()
                };
                st.channels.retain(|_, c| c.conn.strong_count() > 0);
                let max = server.settings.limits.max_channels_per_session;
                if st.channels.len() >= max {
                    drop(st);
                    server.limit_counters.hit(
                        Limit::Channels,
                        &format_args!("session {:#x} has {max} channels", session.id),
                    );
                    return Err(NtStatus::INSUFFICIENT_RESOURCES);
                }
                st.channels.insert(
                    cx.conn.id,
                    Channel {
                        conn: Arc::downgrade(cx.conn),
                        signer: Some(signer.clone()),
                    },
                );
                flags
            };
            cx.conn.add_channel(session);
            // The final response is signed with the new channel's key (3.3.5.5.3).
            cx.sign_with = Some(signer);
            Ok(logged_on(cx, flags, &token, w))
        }
        Err(e) => Err(failed(cx, e, arrived).await),
    }
}

/// MS-SMB2 3.3.5.5 step 4: whether this connection may bind to `session`, with the statuses
/// Windows answers (smbtorture smb2.session.bind_negative_*), in its order: a GMAC-signing
/// session binds only over GMAC and the reverse, 2.x connections and a server without
/// multichannel refuse, then the request must be signed and match the session's dialect and
/// cipher. A different ClientGuid is accepted, as Windows does.
fn admit(cx: &Ctx<'_>, session: &Session, signed: bool) -> Result<(), NtStatus> {
    let negotiated = cx.negotiated;
    let origin = session.origin;
    let gmac = SigningAlgorithm::AesGmac;
    if origin.signing_algorithm == gmac && negotiated.signing_algorithm != gmac {
        return Err(NtStatus::REQUEST_OUT_OF_SEQUENCE);
    }
    if negotiated.signing_algorithm == gmac && origin.signing_algorithm != gmac {
        return Err(NtStatus::NOT_SUPPORTED);
    }
    if !negotiated.is_smb3() || !cx.conn.server.settings.multichannel {
        return Err(NtStatus::REQUEST_NOT_ACCEPTED);
    }
    if !signed || negotiated.dialect != origin.dialect || negotiated.cipher != origin.cipher {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let st = session.state.lock();
    if st.channels.contains_key(&cx.conn.id) {
        return Err(NtStatus::REQUEST_NOT_ACCEPTED);
    }
    if st
        .established
        .as_ref()
        .is_none_or(|e| e.user == SessionUser::Anonymous)
    {
        return Err(NtStatus::NOT_SUPPORTED);
    }
    Ok(())
}
