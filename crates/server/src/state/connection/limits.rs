//! The limits one connection lives under (docs/limits.md): the frame size it may send before
//! and after logon, the bytes it may have in flight (requests being processed, the responses
//! their credits allow, and responses waiting to be sent), the timeouts that close it
//! (negotiate, logon, idle) or drop its stalled SESSION_SETUP exchanges, and the counts of
//! sessions, tree connects and opens it may hold. The transport asks [`Connection`] for the
//! frame size and the next deadline, and calls [`Connection::check_timers`] when it passes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use smb3d_dtyp::NtStatus;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::address_slots::AddressSlot;
use crate::clock::Clock;
use crate::limits::{ClientKey, Limit, Limits, enabled};
use crate::state::connection::{Connection, Disconnect};
use crate::state::session::{Session, SessionState, tear_down};

/// A connection's clocks and in-flight bytes.
pub(crate) struct Watchdog {
    /// The server's clock, which the deadlines below are on.
    clock: Arc<dyn Clock>,
    accepted: Instant,
    peer: Option<ClientKey>,
    /// The connection's place among its address's connections that no user has logged on
    /// through, until one does.
    unproven: Mutex<Option<AddressSlot>>,
    last_frame: Mutex<Instant>,
    /// A session has been established on the connection (once set, stays set).
    logged_on: AtomicBool,
    /// Bytes of requests being processed, of the responses their credit charges allow, and
    /// of responses not yet taken by the socket.
    inflight: AtomicUsize,
    /// The reader waits for in-flight bytes to go down: only then is `room` worth a wake-up
    /// (notifying takes a lock, which a release per frame should not).
    reader_waits: AtomicBool,
    /// Fires when in-flight bytes go down while the reader waits.
    room: Notify,
    /// Fires when a deadline appeared that [`Connection::next_timer`] did not report before.
    timers_changed: Notify,
}

impl Watchdog {
    pub fn new(peer: Option<(ClientKey, AddressSlot)>, clock: Arc<dyn Clock>) -> Self {
        let now = clock.now();
        let (peer, place) = peer.unzip();
        Self {
            clock,
            accepted: now,
            peer,
            unproven: Mutex::new(place),
            last_frame: Mutex::new(now),
            logged_on: AtomicBool::new(false),
            inflight: AtomicUsize::new(0),
            reader_waits: AtomicBool::new(false),
            room: Notify::new(),
            timers_changed: Notify::new(),
        }
    }

    /// A frame of `len` bytes arrived; its bytes count as in flight until the guard drops.
    pub fn admit(self: &Arc<Self>, len: usize) -> Inflight {
        *self.last_frame.lock() = self.clock.now();
        self.hold(len)
    }

    /// Counts `len` bytes as in flight until the guard drops.
    pub fn hold(self: &Arc<Self>, len: usize) -> Inflight {
        self.inflight.fetch_add(len, Ordering::SeqCst);
        Inflight {
            watchdog: self.clone(),
            len,
            reserved: 0,
        }
    }

    fn release(&self, len: usize) {
        self.inflight.fetch_sub(len, Ordering::SeqCst);
        // Pairs with `wait_for_room`, which sets the flag before it looks at the count: either
        // it sees the bytes gone, or this sees it waiting.
        if self.reader_waits.load(Ordering::SeqCst) {
            self.room.notify_waiters();
        }
    }

    /// A session was established; `by_user` unless it is a null session.
    pub fn logged_on(&self, by_user: bool) {
        self.logged_on.store(true, Ordering::Release);
        if by_user {
            self.unproven.lock().take();
        }
    }

    /// A SESSION_SETUP exchange started or went on: its deadline is new.
    pub fn exchange_moved(&self) {
        self.timers_changed.notify_one();
    }

    pub fn peer(&self) -> Option<ClientKey> {
        self.peer
    }
}

/// In-flight bytes: of a frame being processed (with the responses it may produce), or of a
/// response waiting to be sent. Dropping it gives them back.
pub(crate) struct Inflight {
    watchdog: Arc<Watchdog>,
    len: usize,
    /// Of `len`, what [`Inflight::reserve`] added.
    reserved: usize,
}

impl Inflight {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Counts `more` bytes for responses still to be made, until they are made or the request
    /// goes async ([`Inflight::release_reserved`]).
    pub(crate) fn reserve(&mut self, more: usize) {
        if more > 0 {
            self.watchdog.inflight.fetch_add(more, Ordering::SeqCst);
            self.len += more;
            self.reserved += more;
        }
    }

    /// Gives back what [`Inflight::reserve`] counted.
    pub(crate) fn release_reserved(&mut self) {
        let reserved = std::mem::take(&mut self.reserved);
        if reserved > 0 {
            self.len -= reserved;
            self.watchdog.release(reserved);
        }
    }
}

impl Drop for Inflight {
    fn drop(&mut self) {
        self.watchdog.release(self.len);
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn deadline(from: Instant, timeout: Duration) -> Option<Instant> {
    enabled(timeout).and_then(|t| from.checked_add(t))
}

/// The deadline of a session's SESSION_SETUP exchange, if one is under way.
fn exchange_deadline(st: &SessionState, limits: &Limits) -> Option<Instant> {
    st.exchange
        .as_ref()
        .and_then(|e| deadline(e.last_leg, limits.session_setup_timeout))
}

impl Connection {
    fn limits(&self) -> &Limits {
        &self.server.settings.limits
    }

    /// The client address the limits count this connection under, if the transport gave one.
    pub fn client(&self) -> Option<ClientKey> {
        self.watchdog.peer()
    }

    /// The largest frame the transport may read next (security.md L1, L2).
    pub fn max_frame(&self) -> usize {
        let limits = self.limits();
        if self.watchdog.logged_on.load(Ordering::Acquire) {
            limits.max_frame
        } else {
            limits.max_frame_before_logon
        }
    }

    /// Waits until a frame of `len` bytes fits the connection's in-flight budget (security.md
    /// L6); the transport stops reading meanwhile, so a client that does not read its
    /// responses cannot make the server hold more of them. A connection with nothing in
    /// flight takes any frame, so one larger than the budget still goes through.
    pub async fn wait_for_room(&self, len: usize) {
        let max = self.limits().max_inflight_bytes;
        let w = &self.watchdog;
        let fits = || {
            let inflight = w.inflight.load(Ordering::SeqCst);
            inflight == 0 || inflight.saturating_add(len) <= max
        };
        // Nearly always: no waiter to register.
        if fits() {
            return;
        }
        w.reader_waits.store(true, Ordering::SeqCst);
        loop {
            let room = w.room.notified();
            tokio::pin!(room);
            room.as_mut().enable();
            if fits() {
                break;
            }
            room.await;
        }
        w.reader_waits.store(false, Ordering::SeqCst);
    }

    /// Resolves when a deadline earlier than the last [`Connection::next_timer`] may exist.
    pub async fn timers_changed(&self) {
        self.watchdog.timers_changed.notified().await;
    }

    /// The time on the server's clock, which [`Connection::check_timers`] and
    /// [`Connection::next_timer`] count in.
    pub fn now(&self) -> Instant {
        self.watchdog.clock.now()
    }

    /// When [`Connection::check_timers`] next has something to do, if ever.
    pub fn next_timer(&self) -> Option<Instant> {
        let limits = self.limits();
        let w = &self.watchdog;
        let mut next = None;
        if self.negotiated.get().is_none() {
            next = earliest(next, deadline(w.accepted, limits.negotiate_timeout));
        }
        if !w.logged_on.load(Ordering::Acquire) {
            next = earliest(next, deadline(w.accepted, limits.logon_timeout));
        }
        let sessions = self.sessions();
        for session in &sessions {
            next = earliest(next, exchange_deadline(&session.state.lock(), limits));
        }
        if let Some(leg) = self.oldest_binding_leg() {
            next = earliest(next, deadline(leg, limits.session_setup_timeout));
        }
        if self.is_idle(&sessions) {
            next = earliest(next, deadline(*w.last_frame.lock(), limits.idle_timeout));
        }
        next
    }

    /// Applies the timeouts as of `now`: stalled SESSION_SETUP exchanges are dropped (the
    /// session with them if it was never established); `Err` when the connection must close
    /// because NEGOTIATE or the first logon did not come in time or it sat idle.
    pub fn check_timers(&self, now: Instant) -> Result<(), Disconnect> {
        let limits = self.limits();
        let w = &self.watchdog;
        let counters = &self.server.limit_counters;
        let client = self.client_name();
        let passed =
            |from: Instant, timeout: Duration| deadline(from, timeout).is_some_and(|d| now >= d);
        if self.negotiated.get().is_none() && passed(w.accepted, limits.negotiate_timeout) {
            counters.hit(Limit::NegotiateTimeout, &client);
            return Err(Disconnect("no NEGOTIATE in time"));
        }
        if !w.logged_on.load(Ordering::Acquire) && passed(w.accepted, limits.logon_timeout) {
            counters.hit(Limit::LogonTimeout, &client);
            return Err(Disconnect("no session established in time"));
        }
        let sessions = self.sessions();
        for session in &sessions {
            let expired = {
                let mut st = session.state.lock();
                let expired = exchange_deadline(&st, limits).is_some_and(|d| now >= d);
                if expired {
                    st.exchange = None;
                }
                expired && st.established.is_none()
            };
            if expired {
                counters.hit(Limit::SessionSetupTimeout, &client);
                if let Some(session) = self.remove_session(session.id) {
                    tear_down(&self.server, &session);
                }
            }
        }
        if let Some(timeout) = enabled(limits.session_setup_timeout)
            && let Some(cutoff) = now.checked_sub(timeout)
            && self.drop_bindings_before(cutoff)
        {
            counters.hit(Limit::SessionSetupTimeout, &client);
        }
        if self.is_idle(&sessions) && passed(*w.last_frame.lock(), limits.idle_timeout) {
            counters.hit(Limit::IdleTimeout, &client);
            return Err(Disconnect("idle"));
        }
        Ok(())
    }

    /// No open, no named pipe and no request waiting: nothing is lost by closing.
    fn is_idle(&self, sessions: &[Arc<Session>]) -> bool {
        self.pending_count() == 0
            && sessions.iter().all(|s| {
                let st = s.state.lock();
                st.opens.is_empty() && st.trees.values().all(|t| t.pipes.len() == 0)
            })
    }

    fn client_name(&self) -> String {
        self.client()
            .map_or_else(|| "a client".to_owned(), |c| format!("client {c}"))
    }

    /// MS-SMB2 3.3.5.5 for a new session: refused with STATUS_INSUFFICIENT_RESOURCES when
    /// the connection holds as many sessions as allowed, or as many still authenticating
    /// (security.md L9).
    pub(crate) fn admit_new_session(&self) -> Result<(), NtStatus> {
        let limits = self.limits();
        let sessions = self.sessions();
        let in_progress = sessions
            .iter()
            .filter(|s| s.state.lock().established.is_none())
            .count();
        if sessions.len() >= limits.max_sessions_per_connection
            || in_progress >= limits.max_session_setups_in_progress
        {
            self.server.limit_counters.hit(
                Limit::Sessions,
                &format_args!(
                    "{} has {} sessions, {in_progress} being set up",
                    self.client_name(),
                    sessions.len()
                ),
            );
            return Err(NtStatus::INSUFFICIENT_RESOURCES);
        }
        Ok(())
    }

    /// A SESSION_SETUP exchange starting (a new session, a re-authentication, a binding)
    /// counts against its client's address while it is under way (security.md L16), unless
    /// the connection counts there still: it holds the place for its own logons until a user
    /// has logged on through it. STATUS_INSUFFICIENT_RESOURCES when the address has as many
    /// connections and logons without a proven user as allowed.
    pub(crate) fn admit_logon(&self) -> Result<Option<AddressSlot>, NtStatus> {
        let Some(client) = self.client() else {
            return Ok(None);
        };
        if self.watchdog.unproven.lock().is_some() {
            return Ok(None);
        }
        match self.server.address_slots().take(client) {
            Ok(place) => Ok(Some(place)),
            Err(held) => {
                self.server.limit_counters.hit(
                    Limit::Connections,
                    &format_args!(
                        "{held} connections and logons without a proven user from {client}, the most allowed"
                    ),
                );
                Err(NtStatus::INSUFFICIENT_RESOURCES)
            }
        }
    }

    /// A pending request may go async unless the connection has as many waiting as allowed
    /// (security.md L7): STATUS_INSUFFICIENT_RESOURCES.
    pub(crate) fn admit_async(&self) -> Result<(), NtStatus> {
        if self.async_count() >= self.limits().max_async_requests {
            self.server
                .limit_counters
                .hit(Limit::AsyncRequests, &self.client_name());
            return Err(NtStatus::INSUFFICIENT_RESOURCES);
        }
        Ok(())
    }
}

/// A new tree connect in `session` (security.md L11): STATUS_INSUFFICIENT_RESOURCES when it
/// has as many as allowed.
pub(crate) fn admit_tree(conn: &Connection, session: &Session) -> Result<(), NtStatus> {
    let trees = session.state.lock().trees.len();
    if trees >= conn.limits().max_trees_per_session {
        conn.server.limit_counters.hit(
            Limit::Trees,
            &format_args!("session {:#x} has {trees} tree connects", session.id),
        );
        return Err(NtStatus::INSUFFICIENT_RESOURCES);
    }
    Ok(())
}

/// A new open (file or named pipe) in `session` (security.md L12):
/// STATUS_TOO_MANY_OPENED_FILES when it has as many as allowed.
pub(crate) fn admit_open(conn: &Connection, session: &Session) -> Result<(), NtStatus> {
    let opens = {
        let st = session.state.lock();
        st.opens.len() + st.trees.values().map(|t| t.pipes.len()).sum::<usize>()
    };
    if opens >= conn.limits().max_opens_per_session {
        conn.server.limit_counters.hit(
            Limit::Opens,
            &format_args!("session {:#x} has {opens} opens", session.id),
        );
        return Err(NtStatus::TOO_MANY_OPENED_FILES);
    }
    Ok(())
}

/// Files and directories open in the whole server, against `max_open_files` (each holds a
/// descriptor of the process).
pub(crate) struct OpenFiles {
    held: AtomicUsize,
    max: usize,
}

/// One open's place among them, given back when the open is dropped (its descriptor closed).
pub(crate) struct OpenFileSlot(Arc<OpenFiles>);

impl OpenFiles {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            held: AtomicUsize::new(0),
            max,
        })
    }

    /// A place for one more open, unless the server holds as many as allowed.
    pub fn take(self: &Arc<Self>) -> Option<OpenFileSlot> {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                (held < self.max).then_some(held + 1)
            })
            .ok()
            .map(|_| OpenFileSlot(self.clone()))
    }
}

impl Drop for OpenFileSlot {
    fn drop(&mut self) {
        self.0.held.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A new open of a file or directory, before it is made (security.md L12 for the server):
/// STATUS_INSUFFICIENT_RESOURCES when the server holds `max_open_files`, so that opens never
/// take the descriptors the process needs for its connections and itself.
pub(crate) fn admit_open_file(conn: &Connection) -> Result<OpenFileSlot, NtStatus> {
    conn.server.open_files.take().ok_or_else(|| {
        conn.server.limit_counters.hit(
            Limit::OpenFiles,
            &format_args!(
                "{} files and directories are open, the most allowed",
                conn.limits().max_open_files
            ),
        );
        NtStatus::INSUFFICIENT_RESOURCES
    })
}
