//! One client connection: its negotiated state, credit window and sessions, and the request
//! pipeline of MS-SMB2 3.3.5.2 (frame → compound split → credits → signature → session and
//! tree → handler → response → sign → send).

pub mod credits;
pub(crate) mod file_tail;
pub(crate) mod limits;
pub(crate) mod pending;
pub(crate) mod response;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime};

use parking_lot::Mutex;
use smb3d_crypto::{Cipher, MessageSigner, PreauthHash, SigningAlgorithm};
use smb3d_dtyp::NtStatus;
use smb3d_smb2::Command;
use smb3d_smb2::header::{Header, HeaderFlags};
use smb3d_smb2::transform::TransformHeader;
use smb3d_vfs::PipedData;
use smb3d_wire::{Guid, Writer};
use tokio::sync::Notify;

use crate::address_slots::AddressSlot;
use crate::handlers;
use crate::limits::{ClientKey, Limit};
use crate::panic_guard;
use crate::request::ctx::{ChainState, Ctx, sign_refusal, signature_holds};
use crate::request::reply::Reply;
use crate::scheduling;
use crate::state::caching::Route;
use crate::state::connection::credits::{CreditWindow, OutOfWindow};
pub use crate::state::connection::file_tail::FileTail;
use crate::state::connection::limits::{Inflight, Watchdog};
use crate::state::connection::pending::PendingRequest;
use crate::state::connection::response::ResponseFrame;
use crate::state::encryption::SessionCipher;
use crate::state::server::Server;
use crate::state::session::{AuthExchange, Session, Tree};

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

struct ConnState {
    credits: CreditWindow,
    /// An SMB1 negotiate was answered with the 2.??? wildcard: an SMB2 NEGOTIATE must follow.
    smb1_upgraded: bool,
    /// Connection.SessionTable.
    sessions: HashMap<u64, Arc<Session>>,
    /// Authentications binding this connection to another connection's session, by SessionId
    /// (Connection.PreauthSessionTable for bindings, MS-SMB2 3.3.5.5).
    bindings: HashMap<u64, AuthExchange>,
    /// The channel signers of the last sessions that ended on this connection, newest last:
    /// a request still naming one is refused with a signed STATUS_USER_SESSION_DELETED.
    ended: VecDeque<(u64, Arc<dyn MessageSigner>)>,
    /// Requests that may wait, by MessageId (Connection.RequestList and AsyncCommandList for
    /// the commands CANCEL can reach).
    pending: HashMap<u64, Arc<PendingRequest>>,
    /// The last AsyncId given out.
    last_async_id: u64,
    /// Frames by arrival number whose requests are still running synchronously.
    unsettled: BTreeSet<u64>,
    /// The unsettled frames that carry a CHANGE_NOTIFY (see [`Connection::wait_for_notifies`]).
    unsettled_notifies: BTreeSet<u64>,
    /// The arrival number of the next frame.
    next_frame: u64,
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
    state: Mutex<ConnState>,
    /// Timeouts and in-flight bytes (`connection::limits`).
    pub(crate) watchdog: Arc<Watchdog>,
    /// Fires when a frame settles (see [`Connection::wait_for_earlier`]).
    settled: Notify,
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
            connected_at: SystemTime::now(),
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
                unsettled: BTreeSet::new(),
                unsettled_notifies: BTreeSet::new(),
                next_frame: 0,
            }),
            watchdog: Arc::new(Watchdog::new(
                peer.map(|(addr, place)| (ClientKey::of(addr.ip()), place)),
            )),
            settled: Notify::new(),
        });
        server.connections.lock().insert(id, Arc::downgrade(&conn));
        conn
    }

    /// Handles one received frame (without its 4-byte prefix). An error means the connection
    /// must be closed.
    pub fn on_frame(self: &Arc<Self>, frame: Vec<u8>) -> Result<(), Disconnect> {
        let inflight = self.watchdog.admit(frame.len());
        match frame.get(..4) {
            Some([0xFF, b'S', b'M', b'B']) => self.on_smb1_negotiate(&frame),
            Some([0xFE, b'S', b'M', b'B']) => self.on_smb2(frame, 0, None, inflight, None),
            Some([0xFD, b'S', b'M', b'B']) => self.on_transform(frame, inflight),
            Some([0xFC, b'S', b'M', b'B']) => {
                Err(Disconnect("compressed message without compression"))
            }
            _ => Err(Disconnect("not an SMB2 message")),
        }
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

    /// MS-SMB2 3.3.5.3.1: an SMB1 NEGOTIATE offering SMB2 dialects is answered with an SMB2
    /// NEGOTIATE response; anything else SMB1 is refused.
    fn on_smb1_negotiate(self: &Arc<Self>, frame: &[u8]) -> Result<(), Disconnect> {
        let offer = smb3d_smb2::smb1::Smb1Negotiate::decode(frame)
            .map_err(|_| Disconnect("SMB1 traffic"))?;
        {
            let mut st = self.state.lock();
            if self.negotiated.get().is_some() || st.smb1_upgraded {
                return Err(Disconnect("SMB1 negotiate after negotiation"));
            }
            // The SMB1 negotiate takes message id 0.
            st.credits
                .consume(0, 1)
                .map_err(|OutOfWindow| Disconnect("credits"))?;
        }
        let mut out = ResponseFrame::new();
        let upgraded = handlers::negotiate::smb1_upgrade(self, &offer, &mut out)?;
        self.state.lock().smb1_upgraded = upgraded;
        self.queue(out.finish());
        Ok(())
    }

    /// MS-SMB2 3.3.5.2.1.1: an encrypted message is decrypted with its session's key; any
    /// failure (unknown session, no cipher, wrong tag, malformed header) ends the connection
    /// before anything is processed.
    fn on_transform(
        self: &Arc<Self>,
        mut frame: Vec<u8>,
        inflight: Inflight,
    ) -> Result<(), Disconnect> {
        let unreadable = Disconnect("undecryptable message");
        let (header, ciphertext) = TransformHeader::decode(&frame).map_err(|_| unreadable)?;
        let session = self.session(header.session_id).ok_or(unreadable)?;
        let (cipher, _) = session.encryption().ok_or(unreadable)?;
        let message = cipher
            .open(&mut frame, &header, ciphertext)
            .map_err(|_| unreadable)?;
        self.server.metrics.encrypted_message();
        if frame.get(message.start..message.start + 4) != Some(&[0xFE, b'S', b'M', b'B']) {
            return Err(unreadable);
        }
        self.on_smb2(
            frame,
            message.start,
            Some((header.session_id, cipher)),
            inflight,
            None,
        )
    }

    /// Handles the SMB2 message at `frame[base..]`; `sealed_by` names the session whose key
    /// decrypted it, `piped` holds the data of a WRITE that the frame ends before.
    pub(crate) fn on_smb2(
        self: &Arc<Self>,
        mut frame: Vec<u8>,
        base: usize,
        sealed_by: Option<Seal>,
        mut inflight: Inflight,
        piped: Option<PipedData>,
    ) -> Result<(), Disconnect> {
        let mut requests: Vec<(Header, Range<usize>)> = Vec::new();
        let message = frame.get(base..).unwrap_or_default();
        let mut offset = base;
        for item in smb3d_smb2::compound::split(message) {
            let (hdr, pdu) = item.map_err(|_| Disconnect("malformed compound"))?;
            // MS-SMB2 3.3.5.2.6: an unknown command disconnects without a response.
            if hdr.command.0 > Command::OPLOCK_BREAK.0 {
                return Err(Disconnect("unknown command"));
            }
            if requests.len() == self.server.settings.limits.max_compound {
                self.server
                    .limit_counters
                    .hit(Limit::Compound, &"a compound too long");
                return Err(Disconnect("compound too long"));
            }
            requests.push((hdr, offset..offset + pdu.len()));
            offset += pdu.len();
        }
        if let Some((session_id, _)) = &sealed_by {
            // Every request inside a transform belongs to its session (3.3.5.2.1.1).
            let foreign = requests
                .iter()
                .any(|(h, _)| !h.is_related() && h.session_id != *session_id);
            if foreign
                || requests
                    .iter()
                    .any(|(h, _)| h.command == Command::NEGOTIATE)
            {
                return Err(Disconnect("encrypted request of another session"));
            }
        }
        let negotiated = self.negotiated.get();
        let mut credits_charged = 0;
        {
            let mut st = self.state.lock();
            for (hdr, _) in &requests {
                // MS-SMB2 3.3.5.2.3: every request but CANCEL spends its message ids.
                if hdr.command != Command::CANCEL {
                    let charge = if negotiated.is_some_and(Negotiated::multi_credit) {
                        hdr.credit_charge
                    } else {
                        1
                    };
                    st.credits
                        .consume(hdr.message_id, charge)
                        .map_err(|OutOfWindow| {
                            Disconnect("message id outside the credit window")
                        })?;
                    credits_charged += usize::from(charge.max(1));
                }
            }
        }
        // MS-SMB2 3.3.5.2.5: a request's CreditCharge covers the larger of its payload and its
        // response's, 64 KiB a credit. The responses' room is counted now, so that a client
        // cannot make the server take on requests for more response bytes than its budget
        // holds (security.md L6); handlers refuse a READ, QUERY_INFO or QUERY_DIRECTORY whose
        // response would outgrow its charge.
        inflight.reserve((credits_charged * CREDIT_BYTES).saturating_sub(inflight.len()));
        let Some((first, first_range)) = requests.first() else {
            return Err(Disconnect("empty message"));
        };
        if first.command == Command::NEGOTIATE {
            if requests.len() != 1 || self.negotiated.get().is_some() {
                return Err(Disconnect("NEGOTIATE after negotiation or in a compound"));
            }
            let mut out = ResponseFrame::new();
            let pdu = frame.get(first_range.clone()).unwrap_or_default();
            let started = Instant::now();
            let negotiated = handlers::negotiate::handle(self, first, pdu, &mut out);
            self.server
                .metrics
                .request(Command::NEGOTIATE, started.elapsed(), negotiated.is_err());
            negotiated?;
            self.state.lock().smb1_upgraded = false;
            self.queue(out.finish());
            return Ok(());
        }
        if negotiated.is_none() {
            return Err(Disconnect("request before NEGOTIATE"));
        }
        if requests
            .iter()
            .any(|(h, _)| h.command == Command::NEGOTIATE)
        {
            return Err(Disconnect("NEGOTIATE inside a compound"));
        }
        // CANCEL gets no response (MS-SMB2 3.3.5.16); it acts here, in arrival order, so it
        // finds a request of an earlier frame even before that request's handler has run.
        let mut waiting = Vec::new();
        let arrival = {
            let mut st = self.state.lock();
            // A related request acts in the session of the one before it (3.3.5.2.7.2).
            let mut chain_session = 0;
            for (hdr, range) in &requests {
                let session_id = if hdr.is_related() {
                    chain_session
                } else {
                    hdr.session_id
                };
                chain_session = session_id;
                if hdr.command == Command::CANCEL {
                    // Verified in place: nothing reads a CANCEL after this.
                    let pdu = frame.get_mut(range.clone()).unwrap_or_default();
                    self.cancel(&st, hdr, pdu, sealed_by.is_some());
                } else if may_wait(hdr.command) || Self::is_pipe_io(&st, hdr) {
                    let request = Arc::new(PendingRequest::new(hdr.message_id, session_id));
                    st.pending.insert(hdr.message_id, request.clone());
                    waiting.push(request);
                }
            }
            let arrival = st.next_frame;
            st.next_frame += 1;
            st.unsettled.insert(arrival);
            if requests
                .iter()
                .any(|(h, _)| h.command == Command::CHANGE_NOTIFY)
            {
                st.unsettled_notifies.insert(arrival);
            }
            arrival
        };
        if requests.iter().all(|(h, _)| h.command == Command::CANCEL) {
            self.settle(arrival);
            return Ok(());
        }
        let inline = piped.is_none() && scheduling::runs_inline(&frame, &requests);
        let conn = self.clone();
        let chain = async move {
            let chain = conn.clone().run_chain(
                frame, requests, sealed_by, waiting, arrival, piped, inflight,
            );
            if let Err(why) = panic_guard::contain_async(chain).await {
                conn.panicked(&why);
            }
        };
        if inline {
            scheduling::run_here_until_it_waits(chain);
        } else {
            tokio::spawn(chain);
        }
        Ok(())
    }

    /// The key that must encrypt the responses to an unencrypted frame: that of a session or
    /// tree connect with EncryptData (MS-SMB2 3.3.4.1.4). SESSION_SETUP responses are never
    /// encrypted that way; the client has no keys until it reads the last one.
    fn required_seal(&self, first: &Header) -> Option<Seal> {
        if first.command == Command::SESSION_SETUP {
            return None;
        }
        let session = self.session(first.session_id)?;
        let (cipher, session_encrypts) = session.encryption()?;
        let tree_encrypts = session
            .state
            .lock()
            .trees
            .get(&first.tree_id)
            .is_some_and(|t| t.encrypt_data);
        (session_encrypts || tree_encrypts).then_some((first.session_id, cipher))
    }

    /// READ and IOCTL on a named pipe may wait for the client's next write (`handlers::pipe`),
    /// so CANCEL must find them like the commands of [`may_wait`].
    fn is_pipe_io(st: &ConnState, hdr: &Header) -> bool {
        matches!(hdr.command, Command::READ | Command::IOCTL)
            && !hdr.is_related()
            && st.sessions.get(&hdr.session_id).is_some_and(|session| {
                session
                    .state
                    .lock()
                    .trees
                    .get(&hdr.tree_id)
                    .is_some_and(|tree| tree.share.is_ipc())
            })
    }

    /// MS-SMB2 3.3.5.16: the request named by AsyncId (async header) or MessageId ends with
    /// STATUS_CANCELLED, if it is a request of the session the CANCEL names (whose SessionId
    /// the client copies from the request, 3.2.4.24): one session on a shared connection
    /// cannot end another's. A CANCEL that names no request of its session, or that is not
    /// its session's ([`Connection::speaks_for_session`]), is ignored; it has no response.
    fn cancel(&self, st: &ConnState, hdr: &Header, pdu: &mut [u8], sealed: bool) {
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
        if let Some(request) = target.filter(|p| p.session_id == hdr.session_id) {
            request.cancel(NtStatus::CANCELLED);
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

    /// The frame `arrival` no longer runs synchronously (it ended, or its request went async).
    pub(crate) fn settle(&self, arrival: u64) {
        let mut st = self.state.lock();
        st.unsettled_notifies.remove(&arrival);
        if st.unsettled.remove(&arrival) {
            drop(st);
            self.settled.notify_waiters();
        }
    }

    /// Waits until every frame that arrived before `arrival` has settled. Frames run
    /// concurrently; requests that end an open (CLOSE, TREE_DISCONNECT, LOGOFF) wait so that
    /// they never overtake an earlier request on the same open, which would then fail with
    /// STATUS_FILE_CLOSED instead of being served (or, for CHANGE_NOTIFY, ended with
    /// STATUS_NOTIFY_CLEANUP); CHANGE_NOTIFY waits so that changes go to the oldest request
    /// (MS-FSA 2.1.5.11).
    async fn wait_for_earlier(&self, arrival: u64) {
        self.wait_until(|st| st.unsettled.range(..arrival).next().is_none())
            .await;
    }

    /// Waits until every CHANGE_NOTIFY that arrived before `arrival` has settled (registered
    /// its watch and gone async, or ended): a change made by a later request of the same
    /// connection must reach it, as it would had the requests run one after the other.
    async fn wait_for_notifies(&self, arrival: u64) {
        self.wait_until(|st| st.unsettled_notifies.range(..arrival).next().is_none())
            .await;
    }

    async fn wait_until(&self, done: impl Fn(&ConnState) -> bool) {
        loop {
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            if done(&self.state.lock()) {
                return;
            }
            settled.await;
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
    fn queue(&self, mut frame: OutFrame) {
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

    /// Processes the requests of one frame in order and sends their responses as one frame
    /// (MS-SMB2 3.3.4.1.3).
    #[allow(clippy::too_many_arguments)]
    async fn run_chain(
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
            if matches!(
                hdr.command,
                Command::CLOSE
                    | Command::TREE_DISCONNECT
                    | Command::LOGOFF
                    | Command::CHANGE_NOTIFY
            ) {
                self.wait_for_earlier(arrival).await;
            } else {
                self.wait_for_notifies(arrival).await;
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
            let started = Instant::now();
            let admitted = self.admit(&mut cx, pdu, index);
            let result = match admitted {
                Ok(()) => handlers::dispatch(&mut cx, pdu, &mut reply).await,
                Err(status) => Err(status),
            };
            let start = reply.start;
            self.server
                .metrics
                .request(hdr.command, started.elapsed(), result.is_err());
            if let Some(why) = cx.disconnect {
                tracing::warn!("closing connection: {why}");
                self.sink.disconnect();
                return;
            }
            let status = match result {
                Ok(status) => status,
                Err(status) => {
                    tracing::debug!(command = ?hdr.command, message_id = hdr.message_id, %status, "request failed");
                    out.error_body(start, &cx.error_data);
                    status
                }
            };
            let related = hdr.flags.contains(HeaderFlags::RELATED_OPERATIONS);
            let session_id = cx.response_session_id.unwrap_or(if related {
                cx.chain.session_id
            } else {
                hdr.session_id
            });
            let tree_id = cx.response_tree_id.unwrap_or(if related {
                cx.chain.tree_id
            } else {
                hdr.tree_id
            });
            // Encrypted responses are not signed (MS-SMB2 3.3.4.1.1).
            let signer = if seal.is_some() {
                None
            } else {
                cx.sign_with
                    .take()
                    .or_else(|| self.response_signer(&hdr, session_id, status, cx.tree.as_deref()))
            };
            // The preauth hash takes the response as sent, signature included (a binding's
            // responses are signed), and signing waits until the frame is finished.
            let preauth = cx
                .preauth_session
                .take()
                .map(|session| (session, signer.clone()));
            cx.chain.session_id = session_id;
            cx.chain.tree_id = tree_id;
            // What the related requests after this one inherit (as Windows answers them,
            // smbtorture smb2.compound.related4-9, invalid2): a failed CREATE fails them with
            // its status, and so does every request after it; a request refused before it ran
            // (no session, tree or file to inherit) with STATUS_INVALID_PARAMETER; any other
            // failure not at all, so that a READ after a refused WRITE on the same open runs.
            if !cx.isolated_failure {
                if admitted.is_err() && hdr.command != Command::CREATE {
                    if !cx.chain.status.is_error() {
                        cx.chain.status = NtStatus::INVALID_PARAMETER;
                    }
                } else if hdr.command == Command::CREATE || !status.is_error() {
                    cx.chain.status = status;
                }
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
                &hdr,
                status,
                credits,
                session_id,
                tree_id,
                cx.async_id,
                signer,
            );
            if let Some((session, signer)) = preauth {
                hash_response(&self, &session, out.message(start), signer.as_deref());
            }
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

    /// MS-SMB2 3.3.5.2.7-3.3.5.2.11: related-request inheritance, signature, session and tree
    /// checks, before the handler runs.
    fn admit(&self, cx: &mut Ctx<'_>, pdu: &mut [u8], index: usize) -> Result<(), NtStatus> {
        let hdr = cx.hdr;
        let related = hdr.flags.contains(HeaderFlags::RELATED_OPERATIONS);
        if related {
            if index == 0 {
                return Err(NtStatus::INVALID_PARAMETER);
            }
            if cx.chain.status.is_error() {
                return Err(cx.chain.status);
            }
        } else {
            cx.chain.file_id = None;
        }
        let session_id = if related {
            cx.chain.session_id
        } else {
            hdr.session_id
        };
        let tree_id = if related {
            cx.chain.tree_id
        } else {
            hdr.tree_id
        };

        let signed = hdr.flags.contains(HeaderFlags::SIGNED);
        if hdr.command == Command::SESSION_SETUP {
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
        if hdr.command == Command::ECHO && session_id == 0 {
            return Ok(());
        }
        let Some(session) = self.session(session_id) else {
            sign_refusal(cx, pdu);
            return Err(NtStatus::USER_SESSION_DELETED);
        };
        let (signer, signing_required) = match session.signing(self.id) {
            Some(signing) => signing,
            None if matches!(
                hdr.command,
                Command::LOGOFF | Command::CLOSE | Command::LOCK
            ) =>
            {
                (None, false)
            }
            None => return Err(NtStatus::USER_SESSION_DELETED),
        };
        // A decrypted message is authenticated by its tag; its signature is not checked
        // (3.3.5.2.4).
        if !cx.encrypted {
            if signed {
                let valid = signer.as_ref().is_some_and(|s| s.verify(pdu));
                if !valid {
                    return Err(NtStatus::ACCESS_DENIED);
                }
                session.seen.note_signed();
                self.server.metrics.signed_request();
            } else if signing_required {
                return Err(NtStatus::ACCESS_DENIED);
            }
            // Session.EncryptData: plaintext requests are refused (3.3.5.2.9).
            if session.encryption().is_some_and(|(_, required)| required) {
                return Err(NtStatus::ACCESS_DENIED);
            }
        }
        if cx.encrypted {
            session.seen.note_encrypted();
        }
        if needs_tree(hdr.command) {
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

    /// The signer for a response (MS-SMB2 3.3.4.1.1): responses to signed requests, and every
    /// response of a session that requires signing, except interim ones.
    fn response_signer(
        &self,
        hdr: &Header,
        session_id: u64,
        status: NtStatus,
        tree: Option<&Tree>,
    ) -> Option<Arc<dyn MessageSigner>> {
        if session_id == 0 || status == NtStatus::PENDING {
            return None;
        }
        let session = self.session(session_id)?;
        let share_requires = tree.is_some_and(|t| t.share.require_signing);
        self.response_signer_of(hdr, &session, share_requires)
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

/// Removes a chain's requests from the pending table and settles its frame when the chain
/// ends, however it ends.
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

/// How many ended sessions a connection remembers for
/// [`sign_refusal`](crate::request::ctx::sign_refusal).
const ENDED_SESSIONS_KEPT: usize = 8;

/// Size at which a frame of compounded responses is sent before the chain ends.
const FRAME_FLUSH_LEN: usize = 4 * 1024 * 1024;

/// The payload one credit pays for (MS-SMB2 3.3.5.2.5).
const CREDIT_BYTES: usize = 64 * 1024;

/// Commands that act within a tree connect.
fn needs_tree(command: Command) -> bool {
    !matches!(
        command,
        Command::NEGOTIATE
            | Command::SESSION_SETUP
            | Command::LOGOFF
            | Command::TREE_CONNECT
            | Command::ECHO
            | Command::CANCEL
    )
}

/// Whether requests of `command` may wait and so must be findable by CANCEL.
fn may_wait(command: Command) -> bool {
    matches!(
        command,
        Command::LOCK | Command::CHANGE_NOTIFY | Command::CREATE | Command::SET_INFO
    )
}
