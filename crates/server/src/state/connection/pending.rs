//! Requests that may wait (MS-SMB2 3.3.1.13 Request), as a connection keeps them by MessageId
//! so that CANCEL, a close, a logoff or a disconnect can end them.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use smb3d_dtyp::NtStatus;
use tokio::sync::Notify;

/// No frame held (see [`PendingRequest::hold_frame`]).
const NO_FRAME: u64 = u64::MAX;

/// A request that may wait, as CANCEL finds it (MS-SMB2 3.3.1.13 Request).
pub(crate) struct PendingRequest {
    /// Request.MessageId.
    pub message_id: u64,
    /// The SessionId of the request's header.
    pub session_id: u64,
    /// Request.AsyncId once an interim response went out, else 0.
    async_id: AtomicU64,
    /// The status the request is to end with, once something cancelled it.
    cancelled: Mutex<Option<NtStatus>>,
    /// The frame number a CANCEL gave the request once it had gone async ([`NO_FRAME`]: none):
    /// the connection's later requests wait for it as for an earlier frame, so that the
    /// STATUS_CANCELLED goes out before their answers, as a client that cancels and then goes
    /// on expects (smbtorture smb2.session.expire2s: a CHANGE_NOTIFY cancelled, then another).
    held_frame: AtomicU64,
    wake: Notify,
}

impl PendingRequest {
    pub fn new(message_id: u64, session_id: u64) -> Self {
        Self {
            message_id,
            session_id,
            async_id: AtomicU64::new(0),
            cancelled: Mutex::new(None),
            held_frame: AtomicU64::new(NO_FRAME),
            wake: Notify::new(),
        }
    }

    pub fn async_id(&self) -> u64 {
        self.async_id.load(Ordering::Relaxed)
    }

    /// Records the AsyncId its interim response gave it.
    pub fn set_async_id(&self, async_id: u64) {
        self.async_id.store(async_id, Ordering::Relaxed);
    }

    /// Ends the wait with `status`; the first cancellation wins.
    pub fn cancel(&self, status: NtStatus) {
        self.cancelled.lock().get_or_insert(status);
        self.wake.notify_waiters();
    }

    /// Holds the connection's later requests behind `frame` until the request ends (set
    /// under the connection's state lock, as the request leaves the pending table).
    pub fn hold_frame(&self, frame: u64) {
        self.held_frame.store(frame, Ordering::Relaxed);
    }

    /// The frame [`PendingRequest::hold_frame`] gave the request, to settle when it ends.
    pub fn held_frame(&self) -> Option<u64> {
        let frame = self.held_frame.load(Ordering::Relaxed);
        (frame != NO_FRAME).then_some(frame)
    }

    /// The status a cancellation set, if any.
    pub fn cancelled_with(&self) -> Option<NtStatus> {
        *self.cancelled.lock()
    }

    /// Resolves when the request is cancelled, with the status to answer.
    pub async fn cancelled(&self) -> NtStatus {
        loop {
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if let Some(status) = self.cancelled_with() {
                return status;
            }
            woken.await;
        }
    }
}
