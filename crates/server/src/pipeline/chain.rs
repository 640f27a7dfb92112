//! One frame's requests, in order (MS-SMB2 3.3.5.2.7, 3.3.4.1.3): each waits for the frames
//! before it as its command's `Order` says (`ordering`), is admitted, dispatched to its handler, and answered in
//! the frame's response, signed or sealed; a compound passes its session, tree, open and
//! failure on to its related requests.

use std::ops::Range;
use std::sync::Arc;

use smb3d_dtyp::NtStatus;
use smb3d_smb2::Command;
use smb3d_smb2::header::Header;
use smb3d_vfs::PipedData;

use super::dispatch;
use crate::request::commands::{self, Order};
use crate::request::ctx::{ChainState, Ctx};
use crate::request::reply::Reply;
use crate::state::connection::limits::Inflight;
use crate::state::connection::pending::PendingRequest;
use crate::state::connection::response::ResponseFrame;
use crate::state::connection::{Connection, Seal, hash_response};

impl Connection {
    /// Processes the requests of one frame in order and sends their responses as one frame
    /// (MS-SMB2 3.3.4.1.3).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_chain(
        self: Arc<Self>,
        mut frame: Vec<u8>,
        requests: Vec<(Header, Range<usize>)>,
        sealed_by: Option<Seal>,
        waiting: Vec<Arc<PendingRequest>>,
        arrival: u64,
        mut piped: Option<PipedData>,
        mut inflight: Inflight,
    ) {
        let _unregister = Unregister {
            conn: &self,
            requests: &waiting,
            arrival,
        };
        let Some(negotiated) = self.negotiated.get() else {
            return;
        };
        let count = requests.len();
        let encrypted = sealed_by.is_some();
        let seal = sealed_by.or_else(|| requests.first().and_then(|(h, _)| self.required_seal(h)));
        let mut out = ResponseFrame::new();
        let mut chain = ChainState {
            frame: arrival,
            ..ChainState::default()
        };
        for (index, (hdr, range)) in requests.into_iter().enumerate() {
            let Some(pdu) = frame.get_mut(range) else {
                continue;
            };
            if hdr.command == Command::CANCEL {
                continue;
            }
            match commands::spec(hdr.command).order {
                Order::AfterAll => self.wait_for_earlier(arrival).await,
                Order::BehindItsOpen => {
                    self.wait_for_earlier_on(arrival, commands::file_id_of(&hdr, pdu))
                        .await;
                }
                Order::AfterWatches => self.wait_for_notifies(arrival).await,
            }
            let start = out.begin();
            let pending = waiting
                .iter()
                .find(|p| p.message_id == hdr.message_id)
                .cloned();
            let mut cx = Ctx {
                conn: &self,
                negotiated,
                hdr: &hdr,
                session: None,
                tree: None,
                chain: &mut chain,
                response_session_id: None,
                response_tree_id: None,
                sign_with: None,
                preauth_session: None,
                disconnect: None,
                encrypted,
                error_data: Vec::new(),
                error_contexts: 0,
                pending,
                last_in_chain: index + 1 == count,
                seal: seal.as_ref(),
                async_id: 0,
                isolated_failure: false,
                piped: piped.take(),
                inflight: &mut inflight,
            };
            let mut reply = Reply {
                frame: &mut out,
                start,
            };
            let (refused, result) = self.process(&mut cx, pdu, index, &mut reply).await;
            // A request that went async moved its response.
            let start = reply.start;
            if let Some(why) = cx.disconnect {
                tracing::warn!("closing connection: {why}");
                self.end();
                return;
            }
            self.respond(&mut cx, &mut out, start, refused, result);
            // Compounded responses may be sent separately (MS-SMB2 3.3.4.1.3); a frame that
            // grows large goes now, so that several large READs never exceed the 24-bit frame
            // length.
            if out.len() >= FRAME_FLUSH_LEN {
                self.send(
                    std::mem::replace(&mut out, ResponseFrame::new()),
                    seal.as_ref(),
                );
            }
        }
        if !out.is_empty() {
            self.send(out, seal.as_ref());
        }
    }

    /// Admits the request (MS-SMB2 3.3.5.2.4-3.3.5.2.11) and runs its command's handler
    /// (3.3.5.4 and on), counted in the metrics: whether admission refused it, and the result.
    async fn process(
        &self,
        cx: &mut Ctx<'_>,
        pdu: &mut [u8],
        index: usize,
        reply: &mut Reply<'_>,
    ) -> (bool, Result<NtStatus, NtStatus>) {
        let clock = &*self.server.settings.clock;
        let started = clock.now();
        let admitted = self.admit(cx, pdu, index);
        let result = match admitted {
            Ok(()) => dispatch::dispatch(cx, pdu, reply).await,
            Err(status) => Err(status),
        };
        self.server.metrics.request(
            cx.hdr.command,
            clock.now().saturating_duration_since(started),
            result.is_err(),
        );
        (admitted.is_err(), result)
    }

    /// Finishes the request's response at `start` of `out` (MS-SMB2 3.3.4.1): an error body
    /// for a failure, its SessionId and TreeId, the credits it grants (3.3.1.2) and its
    /// signer (3.3.4.1.1), its place in the preauth hash; and what the related requests after
    /// it inherit (3.3.5.2.7.2).
    // Inlined into the chain's loop as it was before it was a function of its own: called
    // apart, it cost 27 more instructions per request (callgrind, request_costs echo).
    #[inline(always)]
    fn respond(
        &self,
        cx: &mut Ctx<'_>,
        out: &mut ResponseFrame,
        start: usize,
        refused: bool,
        result: Result<NtStatus, NtStatus>,
    ) {
        let hdr = cx.hdr;
        let status = match result {
            Ok(status) => status,
            Err(status) => {
                tracing::debug!(command = ?hdr.command, message_id = hdr.message_id, %status, "request failed");
                out.error_body(start, cx.error_contexts, &cx.error_data);
                status
            }
        };
        let (session_id, tree_id) = cx.response_ids();
        let signer = cx.response_signer(session_id, status);
        // The preauth hash takes the response as sent, signature included (a binding's
        // responses are signed), and signing waits until the frame is finished.
        let preauth = cx
            .preauth_session
            .take()
            .map(|session| (session, signer.clone()));
        cx.chain.session_id = session_id;
        cx.chain.tree_id = tree_id;
        if !cx.isolated_failure {
            cx.chain.status = inherited(cx.chain.status, hdr.command, refused, status);
        }
        // The credits of a request that went async were granted with its interim response
        // (MS-SMB2 3.3.4.3).
        let credits = if cx.async_id == 0 {
            self.grant_credits(hdr.credits)
        } else {
            0
        };
        out.end(
            start,
            hdr,
            status,
            credits,
            session_id,
            tree_id,
            cx.async_id,
            signer,
        );
        if let Some((session, signer)) = preauth {
            hash_response(self, &session, out.message(start), signer.as_deref());
        }
    }
}

/// Removes a chain's requests from the pending table and settles its frame, and the frames
/// CANCELs held behind them, when the chain ends, however it ends.
struct Unregister<'a> {
    conn: &'a Connection,
    requests: &'a [Arc<PendingRequest>],
    arrival: u64,
}

impl Drop for Unregister<'_> {
    fn drop(&mut self) {
        self.conn.settle(self.arrival);
        if self.requests.is_empty() {
            return;
        }
        let mut st = self.conn.state.lock();
        for request in self.requests {
            if st
                .pending
                .get(&request.message_id)
                .is_some_and(|p| Arc::ptr_eq(p, request))
            {
                st.pending.remove(&request.message_id);
            }
        }
        drop(st);
        // Out of the table, no CANCEL holds them any more: the answer was sent above.
        for frame in self.requests.iter().filter_map(|r| r.held_frame()) {
            self.conn.settle(frame);
        }
    }
}

/// The chain status the related requests after a request inherit (as Windows answers them,
/// smbtorture smb2.compound.related4-9, invalid2), from the status `chain` they would have
/// inherited before it: a failed CREATE fails them with its status, and so does every request
/// after it; a request `refused` before it ran (no session, tree or file to inherit) with
/// STATUS_INVALID_PARAMETER; any other failure not at all, so that a READ after a refused WRITE
/// on the same open runs.
fn inherited(chain: NtStatus, command: Command, refused: bool, status: NtStatus) -> NtStatus {
    if refused && command != Command::CREATE {
        if chain.is_error() {
            chain
        } else {
            NtStatus::INVALID_PARAMETER
        }
    } else if command == Command::CREATE || !status.is_error() {
        status
    } else {
        chain
    }
}

/// Size at which a frame of compounded responses is sent before the chain ends.
const FRAME_FLUSH_LEN: usize = 4 * 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    const OK: NtStatus = NtStatus::SUCCESS;

    #[test]
    fn a_failed_create_fails_the_requests_after_it() {
        let chain = inherited(OK, Command::CREATE, false, NtStatus::OBJECT_NAME_NOT_FOUND);
        assert_eq!(chain, NtStatus::OBJECT_NAME_NOT_FOUND);
        // The READ after it is refused with that status, and passes it on.
        assert_eq!(
            inherited(chain, Command::READ, true, chain),
            NtStatus::OBJECT_NAME_NOT_FOUND
        );
        // A CREATE refused before it ran passes its own status on.
        assert_eq!(
            inherited(OK, Command::CREATE, true, NtStatus::USER_SESSION_DELETED),
            NtStatus::USER_SESSION_DELETED
        );
    }

    #[test]
    fn a_request_refused_before_it_ran_fails_the_rest_with_invalid_parameter() {
        assert_eq!(
            inherited(OK, Command::WRITE, true, NtStatus::FILE_CLOSED),
            NtStatus::INVALID_PARAMETER
        );
    }

    #[test]
    fn other_failures_are_not_inherited() {
        assert_eq!(
            inherited(OK, Command::WRITE, false, NtStatus::ACCESS_DENIED),
            OK
        );
        assert_eq!(inherited(OK, Command::READ, false, OK), OK);
        // A success after an inherited failure clears it: the request was not related.
        assert_eq!(
            inherited(NtStatus::ACCESS_DENIED, Command::READ, false, OK),
            OK
        );
    }
}
