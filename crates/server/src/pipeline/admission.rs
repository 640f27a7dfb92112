//! Which requests are admitted to their handlers (MS-SMB2 3.3.5.2.4-3.3.5.2.11): a related
//! request's place in its compound, its session and tree connect, its signature, and the
//! encryption its session or share requires; and whether a CANCEL is its session's. Which
//! responses are signed (3.3.4.1.1) is `Ctx::response_signer`'s, which the READ handler asks
//! too.

use smb3d_dtyp::NtStatus;
use smb3d_smb2::Command;
use smb3d_smb2::header::{Header, HeaderFlags};

use crate::request::commands::{self, Session};
use crate::request::ctx::{ChainState, Ctx, sign_refusal, signature_holds};
use crate::state::connection::{ConnState, Connection};

impl Connection {
    /// MS-SMB2 3.3.5.2.7-3.3.5.2.11: related-request inheritance, signature, session and tree
    /// checks, before the handler runs.
    pub(super) fn admit(
        &self,
        cx: &mut Ctx<'_>,
        pdu: &mut [u8],
        index: usize,
    ) -> Result<(), NtStatus> {
        let hdr = cx.hdr;
        if !hdr.flags.contains(HeaderFlags::RELATED_OPERATIONS) {
            cx.chain.file_id = None;
        }
        let (session_id, tree_id) = acts_in(hdr, index, cx.chain)?;

        let signed = hdr.flags.contains(HeaderFlags::SIGNED);
        let spec = commands::spec(hdr.command);
        if spec.session == Session::Own {
            // SESSION_SETUP finds (or makes) its session itself (3.3.5.5); one that
            // re-authenticates an established session is signed with this channel's key as any
            // request (3.3.5.2.4), verified on a copy since the preauth hash takes it whole.
            let session = self.session(session_id);
            if let Some(session) = &session
                && !cx.encrypted
                && let Some((signer, required)) = session.signing(self.id)
            {
                if signed {
                    if !signer.is_some_and(|s| signature_holds(s.as_ref(), pdu)) {
                        return Err(NtStatus::ACCESS_DENIED);
                    }
                } else if required {
                    return Err(NtStatus::ACCESS_DENIED);
                }
            }
            cx.session = session;
            return Ok(());
        }
        if spec.session == Session::Never || (spec.session == Session::IfNamed && session_id == 0) {
            return Ok(());
        }
        let Some(session) = self.session(session_id) else {
            sign_refusal(cx, pdu);
            return Err(NtStatus::USER_SESSION_DELETED);
        };
        let (signer, signing_required) = match session.signing(self.id) {
            Some(signing) => signing,
            None if spec.may_be_unsigned => (None, false),
            None => return Err(NtStatus::USER_SESSION_DELETED),
        };
        // A decrypted message is authenticated by its tag; its signature is not checked
        // (3.3.5.2.4).
        if !cx.encrypted {
            let valid = signed && signer.as_ref().is_some_and(|s| s.verify(pdu));
            if valid {
                session.seen.note_signed();
                self.server.metrics.signed_request();
            }
            let encrypts = session.encryption().is_some_and(|(_, required)| required);
            plaintext_admitted(signed, valid, signing_required, encrypts)?;
        }
        if cx.encrypted {
            session.seen.note_encrypted();
        }
        // 3.3.5.2.9: an expired session still logs off, closes and unlocks (a LOCK that takes
        // a lock is refused by its handler), and echoes as Windows and Samba do (smbtorture
        // smb2.session.expire2s); anything else waits for a re-authentication.
        if !matches!(
            hdr.command,
            Command::LOGOFF | Command::CLOSE | Command::LOCK | Command::ECHO
        ) && session.expired(&*self.server.settings.clock)
        {
            return Err(NtStatus::NETWORK_SESSION_EXPIRED);
        }
        if spec.needs_tree {
            let tree = session.state.lock().trees.get(&tree_id).cloned();
            let tree = tree.ok_or(NtStatus::NETWORK_NAME_DELETED)?;
            // TreeConnect.EncryptData and per-share signing (3.3.5.2.11).
            if !cx.encrypted && (tree.encrypt_data || (tree.share.require_signing && !signed)) {
                return Err(NtStatus::ACCESS_DENIED);
            }
            cx.tree = Some(tree);
        }
        cx.session = Some(session);
        Ok(())
    }

    /// MS-SMB2 3.3.5.16: the request named by AsyncId (async header) or MessageId ends with
    /// STATUS_CANCELLED, if it is a request of the session the CANCEL names (whose SessionId
    /// the client copies from the request, 3.2.4.24): one session on a shared connection
    /// cannot end another's. A CANCEL that names no request of its session, or that is not
    /// its session's ([`Connection::speaks_for_session`]), is ignored; it has no response.
    /// A request that had gone async answers from its own task: the connection's later
    /// requests wait for that answer as for an earlier frame's (a CANCEL is rare, and such a
    /// request's wait ends at once), so it never comes after theirs.
    pub(super) fn cancel(&self, st: &mut ConnState, hdr: &Header, pdu: &mut [u8], sealed: bool) {
        if !self.speaks_for_session(st, hdr, pdu, sealed) {
            return;
        }
        let target = if hdr.is_async() {
            st.pending
                .values()
                .find(|p| p.async_id() == hdr.async_id && hdr.async_id != 0)
        } else {
            st.pending.get(&hdr.message_id)
        };
        let Some(request) = target.filter(|p| p.session_id == hdr.session_id).cloned() else {
            return;
        };
        request.cancel(NtStatus::CANCELLED);
        if request.async_id() != 0 && request.held_frame().is_none() {
            request.hold_frame(st.order.arrive(true, None));
        }
    }

    /// Whether a CANCEL comes from the session it names, as any request must: the session is
    /// on this connection (3.3.5.2.9), and the CANCEL was sealed with its key, or carries a
    /// signature that holds under the channel's key (3.3.5.2.4), or is plain where the session
    /// neither requires signing nor encrypts (3.3.5.2.9 Session.EncryptData). A related CANCEL
    /// names no session of its own and is never one.
    fn speaks_for_session(
        &self,
        st: &ConnState,
        hdr: &Header,
        pdu: &mut [u8],
        sealed: bool,
    ) -> bool {
        if hdr.is_related() {
            return false;
        }
        let Some(session) = st.sessions.get(&hdr.session_id) else {
            return false;
        };
        // `on_smb2` refused a transform holding another session's request.
        if sealed {
            return true;
        }
        let Some((signer, signing_required)) = session.signing(self.id) else {
            return false;
        };
        if session.encryption().is_some_and(|(_, required)| required) {
            return false;
        }
        if hdr.flags.contains(HeaderFlags::SIGNED) {
            signer.is_some_and(|s| s.verify(pdu))
        } else {
            !signing_required
        }
    }
}

/// The SessionId and TreeId a request acts in: its own, or for a related request those the
/// request before it left (MS-SMB2 3.3.5.2.7.2). A related request first in its compound, or
/// after one that failed, is refused with STATUS_INVALID_PARAMETER or that failure.
fn acts_in(hdr: &Header, index: usize, chain: &ChainState) -> Result<(u64, u32), NtStatus> {
    if !hdr.flags.contains(HeaderFlags::RELATED_OPERATIONS) {
        return Ok((hdr.session_id, hdr.tree_id));
    }
    if index == 0 {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if chain.status.is_error() {
        return Err(chain.status);
    }
    Ok((chain.session_id, chain.tree_id))
}

/// MS-SMB2 3.3.5.2.4 and 3.3.5.2.9 for a request that did not arrive encrypted: a signed one
/// needs a `valid` signature, an unsigned one a session that does not require signing, and
/// neither may come to a session that `encrypts` (Session.EncryptData): STATUS_ACCESS_DENIED.
fn plaintext_admitted(
    signed: bool,
    valid: bool,
    signing_required: bool,
    encrypts: bool,
) -> Result<(), NtStatus> {
    if (signed && !valid) || (!signed && signing_required) || encrypts {
        return Err(NtStatus::ACCESS_DENIED);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_smb2::Command;

    fn header(related: bool) -> Header {
        Header {
            command: Command::READ,
            session_id: 7,
            tree_id: 3,
            flags: if related {
                HeaderFlags::RELATED_OPERATIONS
            } else {
                HeaderFlags::empty()
            },
            ..Header::default()
        }
    }

    #[test]
    fn related_requests_act_in_what_the_request_before_left() {
        let chain = ChainState {
            session_id: 9,
            tree_id: 5,
            ..ChainState::default()
        };
        assert_eq!(acts_in(&header(false), 1, &chain), Ok((7, 3)));
        assert_eq!(acts_in(&header(true), 1, &chain), Ok((9, 5)));
        assert_eq!(
            acts_in(&header(true), 0, &chain),
            Err(NtStatus::INVALID_PARAMETER),
            "nothing before it"
        );
        let failed = ChainState {
            status: NtStatus::OBJECT_NAME_NOT_FOUND,
            ..chain
        };
        assert_eq!(
            acts_in(&header(true), 1, &failed),
            Err(NtStatus::OBJECT_NAME_NOT_FOUND)
        );
        // An unrelated request starts afresh.
        assert_eq!(acts_in(&header(false), 1, &failed), Ok((7, 3)));
    }

    #[test]
    fn plaintext_requests_are_admitted_as_the_session_requires() {
        let denied = Err(NtStatus::ACCESS_DENIED);
        // (signed, valid, signing required, encrypts)
        assert_eq!(plaintext_admitted(false, false, false, false), Ok(()));
        assert_eq!(plaintext_admitted(true, true, false, false), Ok(()));
        assert_eq!(plaintext_admitted(true, true, true, false), Ok(()));
        assert_eq!(
            plaintext_admitted(true, false, false, false),
            denied,
            "bad signature"
        );
        assert_eq!(
            plaintext_admitted(false, false, true, false),
            denied,
            "unsigned"
        );
        assert_eq!(
            plaintext_admitted(true, true, true, true),
            denied,
            "not encrypted"
        );
    }
}
