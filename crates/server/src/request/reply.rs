//! Requests that wait: interim responses and AsyncIds (MS-SMB2 3.3.4.2), CANCEL (3.3.5.16) and
//! the other ways a waiting request ends early (close, logoff, disconnect).
//!
//! A request whose command may wait (byte-range locks, change notify) is registered in its
//! connection's table by MessageId before its handler runs, so a CANCEL that overtakes the
//! handler still finds it. When the handler decides to wait it calls [`go_async`]: the
//! responses before it in the compound and an interim STATUS_PENDING response leave at once,
//! and the final response follows with the async header.

use std::sync::Arc;

use smb3d_dtyp::NtStatus;
use smb3d_wire::Writer;

use crate::request::commands::{self, Waits};
use crate::request::ctx::Ctx;
use crate::state::connection::pending::PendingRequest;
use crate::state::connection::response::ResponseFrame;

/// Where a handler's response goes: the frame being built and the start of this request's
/// response in it. [`go_async`] moves the response to a new frame.
pub(crate) struct Reply<'a> {
    pub(crate) frame: &'a mut ResponseFrame,
    pub(crate) start: usize,
}

impl Reply<'_> {
    /// A writer for the response body; offsets count from its header.
    pub fn writer(&mut self) -> Writer<'_> {
        self.frame.body_writer(self.start)
    }
}

/// Makes the request asynchronous before it waits (MS-SMB2 3.3.4.2): sends the responses that
/// precede it in the compound together with an interim STATUS_PENDING response granting the
/// request's credits, and returns the request's entry to wait for cancellation on.
///
/// A request that was cancelled already ends with that status instead. Inside a compound only
/// the last request may wait, and one whose command waits `Anywhere` (a CREATE waiting for
/// oplock breaks); any other fails with STATUS_INTERNAL_ERROR as Windows answers (MS-SMB2
/// 3.3.5.2.7 and <206>, smbtorture smb2.compound.interim2). One beyond the connection's limit of waiting requests fails with
/// STATUS_INSUFFICIENT_RESOURCES (security.md L7).
pub(crate) fn go_async(
    cx: &mut Ctx<'_>,
    reply: &mut Reply<'_>,
) -> Result<Arc<PendingRequest>, NtStatus> {
    let pending = cx.pending.clone().ok_or(NtStatus::INTERNAL_ERROR)?;
    if let Some(status) = pending.cancelled_with() {
        return Err(status);
    }
    if cx.async_id != 0 {
        return Ok(pending);
    }
    if !cx.last_in_chain && commands::spec(cx.hdr.command).waits != Waits::Anywhere {
        cx.isolated_failure = true;
        return Err(NtStatus::INTERNAL_ERROR);
    }
    cx.conn.admit_async()?;
    let async_id = cx.conn.allocate_async_id();
    pending.set_async_id(async_id);
    let credits = cx.conn.grant_credits(cx.hdr.credits);
    let session_id = if cx.hdr.is_related() {
        cx.chain.session_id
    } else {
        cx.hdr.session_id
    };
    let (interim, start) =
        reply
            .frame
            .split_interim(reply.start, cx.hdr, credits, session_id, async_id);
    reply.start = start;
    cx.conn.send(interim, cx.seal);
    // A request may wait for hours: the room held for its response would keep the reader
    // from taking others. Its response is counted once it is queued.
    cx.inflight.release_reserved();
    cx.conn.settle(cx.chain.frame);
    cx.async_id = async_id;
    Ok(pending)
}

/// Waits for `change` as an async request ([`go_async`], once), or ends with the status that
/// cancelled the request.
pub(crate) async fn wait_async(
    cx: &mut Ctx<'_>,
    reply: &mut Reply<'_>,
    change: impl Future<Output = ()>,
) -> Result<(), NtStatus> {
    let pending = go_async(cx, reply)?;
    tokio::select! {
        () = change => Ok(()),
        status = pending.cancelled() => Err(status),
    }
}
