//! One client connection (MS-SMB2 3.3.1.7): what NEGOTIATE settled, its sessions and the
//! bindings under way, its credit window, the requests that may wait, the order of its
//! frames, its limits, and the frames it sends. The request pipeline that works on them
//! (MS-SMB2 3.3.5.2) is `crate::pipeline`.

pub mod credits;
pub(crate) mod file_tail;
pub(crate) mod limits;
pub(crate) mod ordering;
pub(crate) mod pending;
pub(crate) mod response;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use parking_lot::Mutex;
use smb3d_crypto::{Cipher, MessageSigner, PreauthHash, SigningAlgorithm};
use smb3d_dtyp::NtStatus;
use smb3d_smb2::Command;
use smb3d_smb2::header::{Header, HeaderFlags};
use smb3d_wire::{Guid, Writer};
use tokio::sync::Notify;

use crate::address_slots::AddressSlot;
use crate::limits::{ClientKey, Limit};
use crate::state::caching::Route;
use crate::state::connection::credits::CreditWindow;
pub use crate::state::connection::file_tail::FileTail;
use crate::state::connection::limits::{Inflight, Watchdog};
use crate::state::connection::ordering::FrameOrder;
use crate::state::connection::pending::PendingRequest;
use crate::state::connection::response::ResponseFrame;
use crate::state::encryption::SessionCipher;
use crate::state::server::Server;
use crate::state::session::{AuthExchange, Session};

/// Where a connection's outgoing frames go (the transport's writer).
pub trait FrameSink: Send + Sync + 'static {
    /// Queues a complete frame, Direct-TCP prefix included.
    fn send(&self, frame: OutFrame);
    /// Ends the connection.
    fn disconnect(&self);
}

/// A frame ready to send: `buf[start..]`, then the file data of `tail` if there is one (the
/// Direct-TCP prefix counts both). Its bytes count against its connection's in-flight budget
/// until it is dropped, so a sink drops it once the socket has taken it.
pub struct OutFrame {
    pub buf: Vec<u8>,
    pub start: usize,
    pub tail: Option<FileTail>,
    /// The frame's place in the budget, from when the connection queues it.
    counted: Option<Inflight>,
}

impl OutFrame {
    pub(crate) fn new(buf: Vec<u8>, start: usize, tail: Option<FileTail>) -> Self {
        Self {
            buf,
            start,
            tail,
            counted: None,
        }
    }

    /// The bytes held in memory: the whole frame unless it has a tail.
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or_default()
    }

    /// The frame's length on the wire, tail included.
    pub fn len(&self) -> usize {
        self.bytes().len() + self.tail.as_ref().map_or(0, FileTail::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole frame in one buffer, the tail read from its file (for test harnesses and
    /// senders without `sendfile`).
    pub fn into_vec(mut self) -> std::io::Result<Vec<u8>> {
        if let Some(tail) = self.tail.take() {
            tail.read_into(&mut self.buf)?;
        }
        self.buf.drain(..self.start.min(self.buf.len()));
        Ok(self.buf)
    }
}

/// The peer broke the protocol in a way that ends the connection (MS-SMB2 3.3.5.2: framing
/// errors, out-of-window message ids, a second NEGOTIATE, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disconnect(pub &'static str);

/// What NEGOTIATE settled (MS-SMB2 3.3.1.7 Connection.*). Fixed for the connection's life.
pub(crate) struct Negotiated {
    pub dialect: u16,
    pub client_guid: Guid,
    pub client_capabilities: u32,
    pub client_security_mode: u16,
    pub client_dialects: Vec<u16>,
    pub server_capabilities: u32,
    pub server_security_mode: u16,
    pub signing_algorithm: SigningAlgorithm,
    pub cipher: Option<Cipher>,
    /// Connection.PreauthIntegrityHashValue after the NEGOTIATE exchange (3.1.1 only).
    pub preauth: Option<PreauthHash>,
    /// The client asked for the SMB3 POSIX extensions and was answered: its CREATEs on
    /// `posix` shares may carry the POSIX create context.
    pub posix: bool,
}

impl Negotiated {
    pub fn is_smb3(&self) -> bool {
        self.dialect >= 0x0300
    }

    /// Connection.SupportsMultiCredit.
    pub fn multi_credit(&self) -> bool {
        self.dialect >= 0x0210
    }
}

/// The connection's tables, under one lock. The pipeline (`crate::pipeline`) charges credits,
/// registers waiting requests and numbers frames under it as well.
pub(crate) struct ConnState {
    pub(crate) credits: CreditWindow,
    /// An SMB1 negotiate was answered with the 2.??? wildcard: an SMB2 NEGOTIATE must follow.
    pub(crate) smb1_upgraded: bool,
    /// Connection.SessionTable.
    pub(crate) sessions: HashMap<u64, Arc<Session>>,
    /// Authentications binding this connection to another connection's session, by SessionId
    /// (Connection.PreauthSessionTable for bindings, MS-SMB2 3.3.5.5).
    bindings: HashMap<u64, AuthExchange>,
    /// The channel signers of the last sessions that ended on this connection, newest last:
    /// a request still naming one is refused with a signed STATUS_USER_SESSION_DELETED.
    ended: VecDeque<(u64, Arc<dyn MessageSigner>)>,
    /// Requests that may wait, by MessageId (Connection.RequestList and AsyncCommandList for
    /// the commands CANCEL can reach).
    pub(crate) pending: HashMap<u64, Arc<PendingRequest>>,
    /// The last AsyncId given out.
    last_async_id: u64,
    /// Which frames still run synchronously.
    pub(crate) order: FrameOrder,
}

pub struct Connection {
    pub(crate) server: Arc<Server>,
    /// Server-unique, for status reports.
    pub(crate) id: u64,
    /// The client's address, when the transport gave it.
    pub(crate) peer: Option<SocketAddr>,
    pub(crate) connected_at: SystemTime,
    sink: Arc<dyn FrameSink>,
    pub(crate) negotiated: OnceLock<Negotiated>,
    pub(crate) state: Mutex<ConnState>,
    /// Timeouts and in-flight bytes (`connection::limits`).
    pub(crate) watchdog: Arc<Watchdog>,
    /// Fires when a frame settles (see [`Connection::wait_for_earlier`]).
    settled: Notify,
    /// The AAPL ServerCaps the first answer to a Mac client's server query granted: what
    /// the connection's later requests on `apple` shares get (listings with ReadDirAttr).
    pub(crate) apple: OnceLock<u64>,
}

/// A session id and the ciphers that encrypt for it.
pub(crate) type Seal = (u64, Arc<SessionCipher>);

impl Connection {
    /// A connection whose peer address is unknown (limits per address do not apply to it).
    pub fn new(server: Arc<Server>, sink: Arc<dyn FrameSink>) -> Arc<Self> {
        Self::create(server, sink, None)
    }

    /// A connection from the client at `peer`, holding its address's place until a user logs
    /// on through it (`address_slots`).
    pub fn accepted(
        server: Arc<Server>,
        sink: Arc<dyn FrameSink>,
        peer: SocketAddr,
        place: AddressSlot,
    ) -> Arc<Self> {
        Self::create(server, sink, Some((peer, place)))
    }

    fn create(
        server: Arc<Server>,
        sink: Arc<dyn FrameSink>,
        peer: Option<(SocketAddr, AddressSlot)>,
    ) -> Arc<Self> {
        let max_credits = server.settings.max_credits;
        let id = server.allocate_connection_id();
        let conn = Arc::new(Self {
            server: server.clone(),
            id,
            peer: peer.as_ref().map(|(addr, _)| *addr),
            connected_at: server.settings.clock.wall(),
            sink,
            negotiated: OnceLock::new(),
            state: Mutex::new(ConnState {
                credits: CreditWindow::new(max_credits),
                smb1_upgraded: false,
                sessions: HashMap::new(),
                bindings: HashMap::new(),
                ended: VecDeque::new(),
                pending: HashMap::new(),
                last_async_id: 0,
                order: FrameOrder::default(),
            }),
            watchdog: Arc::new(Watchdog::new(
                peer.map(|(addr, place)| (ClientKey::of(addr.ip()), place)),
                server.settings.clock.clone(),
            )),
            settled: Notify::new(),
            apple: OnceLock::new(),
        });
        server.connections.lock().insert(id, Arc::downgrade(&conn));
        conn
    }

    /// The connection ended: every session it had is logged off (MS-SMB2 3.3.7.1) and its
    /// waiting requests end, unless the session works on another channel still: then only
    /// this channel goes, and the requests carry on (a CREATE waiting for a break still opens
    /// the file, which a replay on another channel then finds, as Windows and Samba do).
    pub fn on_disconnect(&self) {
        self.server.connections.lock().remove(&self.id);
        let (sessions, pending): (Vec<Arc<Session>>, Vec<Arc<PendingRequest>>) = {
            let mut st = self.state.lock();
            st.bindings.clear();
            (
                st.sessions.drain().map(|(_, s)| s).collect(),
                st.pending.drain().map(|(_, p)| p).collect(),
            )
        };
        let (living, ended): (Vec<Arc<Session>>, Vec<Arc<Session>>) =
            sessions.into_iter().partition(|s| s.unbind(self.id));
        for request in pending {
            if !living.iter().any(|s| s.id == request.session_id) {
                request.cancel(NtStatus::CANCELLED);
            }
        }
        for session in ended {
            crate::state::durable::disconnect_session(&self.server, &session);
        }
    }

    /// A nonzero AsyncId unique among the connection's requests (MS-SMB2 3.3.4.2).
    pub(crate) fn allocate_async_id(&self) -> u64 {
        let mut st = self.state.lock();
        st.last_async_id = st.last_async_id.wrapping_add(1).max(1);
        st.last_async_id
    }

    /// Sends a frame, encrypted under `seal` if given.
    pub(crate) fn send(&self, out: ResponseFrame, seal: Option<&Seal>) {
        let frame = match seal {
            None => Some(out.finish()),
            Some((session_id, cipher)) => out.finish_sealed(cipher, *session_id),
        };
        match frame {
            Some(frame) => self.queue(frame),
            None => {
                tracing::warn!("closing connection: session nonce space exhausted");
                self.sink.disconnect();
            }
        }
    }

    /// Hands a frame to the sink, its bytes counted in flight until the sink drops it. Nothing
    /// that sends waits for room: only the reader does, so an oplock break or an interim
    /// response goes out even to a connection whose budget is full (they are small, and as
    /// many as the opens and waiting requests).
    pub(crate) fn queue(&self, mut frame: OutFrame) {
        frame.counted = Some(self.watchdog.hold(frame.len()));
        self.sink.send(frame);
    }

    /// Sends an OPLOCK_BREAK notification (MS-SMB2 3.3.4.6, 3.3.4.7): MessageId all ones, no
    /// credits, never signed; encrypted when the route's session or tree connect encrypts.
    /// `header_session` is the SessionId of the header (0 for lease breaks).
    pub(crate) fn send_break(
        &self,
        header_session: u64,
        route: &Route,
        body: impl FnOnce(&mut Writer<'_>),
    ) {
        let mut out = ResponseFrame::new();
        let start = out.begin();
        body(&mut out.body_writer(start));
        let header = Header {
            command: Command::OPLOCK_BREAK,
            message_id: u64::MAX,
            ..Header::default()
        };
        out.end(
            start,
            &header,
            NtStatus::SUCCESS,
            0,
            header_session,
            0,
            0,
            None,
        );
        let seal = self.session(route.session_id).and_then(|session| {
            let (cipher, session_encrypts) = session.encryption()?;
            (session_encrypts || route.encrypt).then_some((route.session_id, cipher))
        });
        self.send(out, seal.as_ref());
    }

    /// The signer for a response of `session` on this connection, when the request was signed
    /// or signing is required. A request that ends its session (LOGOFF, a failed
    /// re-authentication) takes it before the session goes: the answer is still signed.
    pub(crate) fn response_signer_of(
        &self,
        hdr: &Header,
        session: &Session,
        share_requires: bool,
    ) -> Option<Arc<dyn MessageSigner>> {
        let (signer, required) = session.signing(self.id)?;
        if hdr.flags.contains(HeaderFlags::SIGNED) || required || share_requires {
            signer
        } else {
            None
        }
    }

    /// Grants credits for a response (MS-SMB2 3.3.1.2).
    pub(crate) fn grant_credits(&self, requested: u16) -> u16 {
        self.state.lock().credits.grant(requested)
    }

    /// Records the outcome of NEGOTIATE; it cannot change afterwards.
    pub(crate) fn set_negotiated(&self, negotiated: Negotiated) {
        let _ = self.negotiated.set(negotiated);
    }

    pub(crate) fn session(&self, id: u64) -> Option<Arc<Session>> {
        self.state.lock().sessions.get(&id).cloned()
    }

    /// Requests registered as possibly waiting.
    pub(crate) fn pending_count(&self) -> usize {
        self.state.lock().pending.len()
    }

    /// Requests that went async.
    pub(crate) fn async_count(&self) -> usize {
        self.state
            .lock()
            .pending
            .values()
            .filter(|p| p.async_id() != 0)
            .count()
    }

    /// A panic in this connection's work was caught: it is logged and the connection closes.
    pub fn panicked(&self, why: &str) {
        tracing::error!("closing connection after a panic: {why}");
        self.server.limit_counters.hit(Limit::Panic, &why);
        self.sink.disconnect();
    }

    pub(crate) fn add_session(&self, session: Arc<Session>) {
        self.state
            .lock()
            .sessions
            .insert(session.id, session.clone());
        self.server.sessions.lock().insert(session.id, session);
    }

    pub(crate) fn remove_session(&self, id: u64) -> Option<Arc<Session>> {
        self.server.sessions.lock().remove(&id);
        let mut st = self.state.lock();
        let session = st.sessions.remove(&id)?;
        if let Some((Some(signer), _)) = session.signing(self.id) {
            if st.ended.len() == ENDED_SESSIONS_KEPT {
                st.ended.pop_front();
            }
            st.ended.push_back((id, signer));
        }
        Some(session)
    }

    /// The channel signer of session `id` if it ended on this connection lately.
    pub(crate) fn ended_signer(&self, id: u64) -> Option<Arc<dyn MessageSigner>> {
        let st = self.state.lock();
        st.ended
            .iter()
            .rev()
            .find(|(ended, _)| *ended == id)
            .map(|(_, signer)| signer.clone())
    }

    /// Adds a session of another connection that this connection is now bound to.
    pub(crate) fn add_channel(&self, session: Arc<Session>) {
        self.state.lock().sessions.insert(session.id, session);
    }

    /// Takes the binding exchange under way on this connection for session `id`, if any.
    pub(crate) fn take_binding(&self, id: u64) -> Option<AuthExchange> {
        self.state.lock().bindings.remove(&id)
    }

    /// When the least recent leg of a binding exchange under way arrived.
    pub(crate) fn oldest_binding_leg(&self) -> Option<tokio::time::Instant> {
        self.state
            .lock()
            .bindings
            .values()
            .map(|e| e.last_leg)
            .min()
    }

    /// Drops the binding exchanges whose last leg came at or before `cutoff`; true if any.
    pub(crate) fn drop_bindings_before(&self, cutoff: tokio::time::Instant) -> bool {
        let mut st = self.state.lock();
        let before = st.bindings.len();
        st.bindings.retain(|_, e| e.last_leg > cutoff);
        st.bindings.len() != before
    }

    /// Keeps a binding exchange for its next leg; false when the connection already has as
    /// many under way as it may have sessions being set up.
    pub(crate) fn keep_binding(&self, id: u64, exchange: AuthExchange) -> bool {
        let max = self.server.settings.limits.max_session_setups_in_progress;
        let mut st = self.state.lock();
        if st.bindings.len() >= max {
            return false;
        }
        st.bindings.insert(id, exchange);
        true
    }

    /// The sessions on this connection (Connection.SessionTable), established or not.
    pub(crate) fn sessions(&self) -> Vec<Arc<Session>> {
        self.state.lock().sessions.values().cloned().collect()
    }

    /// Asks the transport to close the connection.
    pub(crate) fn end(&self) {
        self.sink.disconnect();
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // A connection dropped without on_disconnect (a test harness) leaves the registry too.
        self.server.connections.lock().remove(&self.id);
    }
}

/// Adds a MORE_PROCESSING_REQUIRED response to the preauth hash of its exchange (3.3.5.5.3):
/// the binding of `conn` to the session, or else the session's own authentication. A response
/// to be signed with `signer` is hashed signed.
pub(crate) fn hash_response(
    conn: &Connection,
    session: &Session,
    message: &[u8],
    signer: Option<&dyn MessageSigner>,
) {
    let signed;
    let message = match signer {
        Some(signer) => {
            signed = {
                let mut copy = message.to_vec();
                signer.sign(&mut copy);
                copy
            };
            &signed[..]
        }
        None => message,
    };
    if let Some(mut exchange) = conn.take_binding(session.id) {
        if let Some(preauth) = exchange.preauth.as_mut() {
            preauth.update(message);
        }
        conn.keep_binding(session.id, exchange);
        return;
    }
    if let Some(preauth) = session
        .state
        .lock()
        .exchange
        .as_mut()
        .and_then(|e| e.preauth.as_mut())
    {
        preauth.update(message);
    }
}

/// How many ended sessions a connection remembers, for the signed refusal of a request that
/// still names one (`request::ctx::sign_refusal`).
const ENDED_SESSIONS_KEPT: usize = 8;
