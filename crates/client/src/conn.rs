//! One connection: a writer task, a reader task, the credits and the requests in flight.
//!
//! A caller builds a [`Message`] (one request or a compound), [`Shared::send`] takes the
//! credits it costs, numbers it, signs or encrypts it on the caller's task and queues the frame
//! for the writer; the reader matches each response to its waiter by MessageId after checking
//! its framing and its signature or encryption. Interim responses (STATUS_PENDING, async) grant
//! credits and keep the waiter waiting. Any failure of the socket or of the protocol ends the
//! connection and fails every request in flight with the same error.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use smb3d_crypto::{Cipher, MessageCipher, MessageSigner, PreauthHash};
use smb3d_dtyp::NtStatus;
use smb3d_smb2::compound;
use smb3d_smb2::framing::{self, MAX_FRAME_LEN};
use smb3d_smb2::header::{PROTOCOL_ID, TRANSFORM_PROTOCOL_ID};
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::transform::{AAD_RANGE, TRANSFORM_HEADER_LEN, TransformFlags, TransformHeader};
use smb3d_smb2::{Command, Header, HeaderFlags, SMB2_HEADER_LEN};
use smb3d_wire::{Guid, Writer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::error::{Error, Result};

/// The 4-byte Direct-TCP prefix (MS-SMB2 2.1).
const PREFIX_LEN: usize = 4;
/// Bytes one credit pays for in a multi-credit request (MS-SMB2 3.1.5.2).
const CREDIT_UNIT: usize = 65536;
/// Socket buffering: enough to batch a burst of small requests or responses in one system call.
const IO_BUFFER: usize = 256 * 1024;
/// More credits than this are not needed however many requests the caller keeps in flight,
/// and a server that grants more is not believed.
const MAX_CREDITS: usize = 1 << 16;
/// The MessageId of an oplock or lease break notification (MS-SMB2 3.3.4.6).
const NOTIFICATION_ID: u64 = u64::MAX;

/// Buffers a connection keeps for reuse.
const POOLED_BUFFERS: usize = 32;
/// Larger buffers are freed rather than kept.
const POOLED_CAPACITY: usize = 2 << 20;

/// Frame buffers freed by sent requests and dropped responses, handed out again: a new
/// 1 MiB buffer per READ or WRITE costs its page faults every time (the allocator returns
/// large blocks to the system), which made them a third of the client's CPU.
#[derive(Default)]
pub(crate) struct BufferPool {
    free: Mutex<Vec<Vec<u8>>>,
}

impl BufferPool {
    /// An empty buffer with room for at least `capacity` bytes.
    fn take(&self, capacity: usize) -> Vec<u8> {
        let mut buf = self.free.lock().pop().unwrap_or_default();
        buf.clear();
        buf.reserve(capacity);
        buf
    }

    fn give(&self, buf: Vec<u8>) {
        if buf.capacity() > 0 && buf.capacity() <= POOLED_CAPACITY {
            let mut free = self.free.lock();
            if free.len() < POOLED_BUFFERS {
                free.push(buf);
            }
        }
    }
}

/// What NEGOTIATE settled (MS-SMB2 3.2.5.2).
#[derive(Debug, Clone)]
pub struct Negotiated {
    pub dialect: Dialect,
    pub server_guid: Guid,
    pub max_transact: u32,
    pub max_read: u32,
    pub max_write: u32,
    /// Multi-credit requests (2.1 and later with SMB2_GLOBAL_CAP_LARGE_MTU).
    pub large_mtu: bool,
    /// The server requires signing (SecurityMode in its NEGOTIATE response).
    pub signing_required: bool,
    /// The signing algorithm sessions of this connection use.
    pub signing: smb3d_crypto::SigningAlgorithm,
    /// The cipher, if the dialect and the server offer encryption.
    pub cipher: Option<Cipher>,
    /// The server answered SMB3_POSIX_EXTENSIONS_AVAILABLE.
    pub posix: bool,
}

/// The keys of one session, from the client's side.
pub(crate) struct SessionCrypto {
    pub id: u64,
    pub signer: Box<dyn MessageSigner>,
    /// Client to server (the server's "decryption" key).
    pub encryptor: Option<Box<dyn MessageCipher>>,
    /// Server to client.
    pub decryptor: Option<Box<dyn MessageCipher>>,
    pub cipher: Option<Cipher>,
}

/// One response: its header and the PDU (from its header to the next one of a compound).
#[derive(Clone)]
pub struct Response {
    pub header: Header,
    buf: Vec<u8>,
    range: Range<usize>,
    /// Where the buffer goes back when the response is dropped.
    pool: Option<Arc<BufferPool>>,
}

impl core::fmt::Debug for Response {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Response")
            .field("header", &self.header)
            .field("len", &self.range.len())
            .finish()
    }
}

impl Drop for Response {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            pool.give(std::mem::take(&mut self.buf));
        }
    }
}

impl Response {
    /// The PDU from the start of its header, as the `smb3d_smb2` decoders take it.
    pub fn pdu(&self) -> &[u8] {
        self.buf.get(self.range.clone()).unwrap_or_default()
    }

    /// The status the server answered.
    pub fn status(&self) -> NtStatus {
        self.header.status
    }

    /// The response if its status is STATUS_SUCCESS, its status as an [`Error`] otherwise.
    pub fn ok(self) -> Result<Self> {
        if self.header.status == NtStatus::SUCCESS {
            Ok(self)
        } else {
            Err(Error::Status {
                command: self.header.command,
                status: self.header.status,
            })
        }
    }

    fn pdu_mut(&mut self) -> &mut [u8] {
        self.buf.get_mut(self.range.clone()).unwrap_or_default()
    }
}

/// A request or a compound of requests being built, in the buffer it is sent from: room for
/// the Direct-TCP prefix and (when encrypting) the transform header, then the PDUs.
pub(crate) struct Message {
    buf: Vec<u8>,
    elements: Vec<Element>,
    session: Option<Arc<SessionCrypto>>,
    sign: bool,
    encrypt: bool,
    /// Keep a copy of the first request as sent (for the 3.1.1 preauthentication hash).
    pub keep_request: bool,
}

struct Element {
    start: usize,
    charge: u16,
    command: Command,
}

impl Message {
    /// An empty message in `buf` for `session` (none before a logon), signed or encrypted
    /// as asked.
    fn new(
        mut buf: Vec<u8>,
        session: Option<Arc<SessionCrypto>>,
        sign: bool,
        encrypt: bool,
    ) -> Self {
        let head = if encrypt {
            PREFIX_LEN + TRANSFORM_HEADER_LEN
        } else {
            PREFIX_LEN
        };
        buf.clear();
        buf.resize(head, 0);
        Self {
            buf,
            elements: Vec::new(),
            session,
            sign: sign && !encrypt,
            encrypt,
            keep_request: false,
        }
    }

    /// Appends a request: `header` (MessageId, CreditCharge and CreditRequest are filled in
    /// when sent) and the body `encode` writes, for `charge` credits.
    pub fn push(&mut self, mut header: Header, charge: u16, encode: impl FnOnce(&mut Writer<'_>)) {
        if let Some(last) = self.elements.last() {
            compound::pad_and_link(&mut self.buf, last.start);
        }
        let start = self.buf.len();
        header.session_id = self.session.as_ref().map_or(header.session_id, |s| s.id);
        if self.sign {
            header.flags.insert(HeaderFlags::SIGNED);
        }
        self.buf.extend_from_slice(&header.to_bytes());
        encode(&mut Writer::with_base(&mut self.buf, start));
        self.elements.push(Element {
            start,
            charge,
            command: header.command,
        });
    }

    /// Reserves room for `extra` more bytes (a WRITE's data) before a push.
    pub fn reserve(&mut self, extra: usize) {
        self.buf.reserve(extra);
    }

    /// Signs each request of a signed message in place (MS-SMB2 3.2.4.1.1), after linking.
    fn sign_elements(&mut self) -> Result<()> {
        if !self.sign {
            return Ok(());
        }
        let session = self
            .session
            .clone()
            .ok_or_else(|| Error::Unsupported("signing without a session".into()))?;
        for i in 0..self.elements.len() {
            let range = self.element_range(i);
            if let Some(pdu) = self.buf.get_mut(range) {
                session.signer.sign(pdu);
            }
        }
        Ok(())
    }

    fn element_range(&self, i: usize) -> Range<usize> {
        let start = self.elements.get(i).map_or(0, |e| e.start);
        let end = self.elements.get(i + 1).map_or(self.buf.len(), |e| e.start);
        start..end
    }
}

/// A request waiting for its response.
struct Waiter {
    tx: oneshot::Sender<Result<Response>>,
    command: Command,
    charge: u16,
    /// The session whose key signed the request: its response must be signed too.
    signed_by: Option<Arc<SessionCrypto>>,
    /// The session the request was encrypted for: its response must come encrypted for it.
    encrypted_for: Option<u64>,
}

/// The requests in flight, and why the connection ended once it has.
#[derive(Default)]
struct Table {
    waiters: HashMap<u64, Waiter>,
    failure: Option<Error>,
}

/// What the caller's tasks and the connection's two tasks share.
pub(crate) struct Shared {
    out: mpsc::UnboundedSender<Vec<u8>>,
    table: Mutex<Table>,
    credits: Semaphore,
    next_message_id: AtomicU64,
    /// Credits charged by requests still in flight.
    in_flight: AtomicU64,
    /// Credits the client asks to hold (available plus in flight).
    target_credits: u64,
    sessions: RwLock<Vec<Arc<SessionCrypto>>>,
    negotiated: RwLock<Option<Negotiated>>,
    /// Connection.PreauthIntegrityHashValue (3.1.1): NEGOTIATE request and response.
    preauth: Mutex<PreauthHash>,
    nonce_counter: AtomicU64,
    nonce_salt: [u8; 4],
    request_timeout: Duration,
    pool: Arc<BufferPool>,
}

/// One connection to a server. Cloning shares it; dropping the last clone (and every
/// [`crate::Session`] and [`crate::Tree`] made on it) closes it.
#[derive(Clone)]
pub struct Connection {
    handle: Arc<Handle>,
}

struct Handle {
    shared: Arc<Shared>,
    tasks: [JoinHandle<()>; 2],
}

impl Drop for Handle {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        self.shared
            .fail(Error::Closed("the client closed the connection".into()));
    }
}

impl Connection {
    /// A connection over a stream split into its two halves, before NEGOTIATE. Must be called
    /// within a tokio runtime, which runs its reader and writer tasks.
    pub fn from_parts<R, W>(reader: R, writer: W, target_credits: u16, timeout: Duration) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, rx) = mpsc::unbounded_channel();
        let mut salt = [0u8; 4];
        // A salt from the clock is enough when the OS has no randomness to give: nonces only
        // need to be unique per key, which the counter after the salt makes them.
        if getrandom::fill(&mut salt).is_err() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            salt = nanos.to_le_bytes();
        }
        let shared = Arc::new(Shared {
            out,
            table: Mutex::new(Table::default()),
            // NEGOTIATE goes out on the one credit a connection starts with (MS-SMB2 3.2.4.1.3).
            credits: Semaphore::new(1),
            next_message_id: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            target_credits: u64::from(target_credits.max(1)),
            sessions: RwLock::new(Vec::new()),
            negotiated: RwLock::new(None),
            preauth: Mutex::new(PreauthHash::new()),
            nonce_counter: AtomicU64::new(1),
            nonce_salt: salt,
            request_timeout: timeout,
            pool: Arc::new(BufferPool::default()),
        });
        let reader_task = tokio::spawn(read_loop(
            shared.clone(),
            BufReader::with_capacity(IO_BUFFER, reader),
        ));
        let writer_task = tokio::spawn(write_loop(
            shared.clone(),
            rx,
            BufWriter::with_capacity(IO_BUFFER, writer),
        ));
        Self {
            handle: Arc::new(Handle {
                shared,
                tasks: [reader_task, writer_task],
            }),
        }
    }

    /// What NEGOTIATE settled, once it has run.
    pub fn negotiated(&self) -> Option<Negotiated> {
        self.shared().negotiated.read().clone()
    }

    /// Credits the client holds now (available to new requests).
    pub fn available_credits(&self) -> usize {
        self.shared().credits.available_permits()
    }

    /// Why the connection ended, if it has.
    pub fn failure(&self) -> Option<Error> {
        self.shared().table.lock().failure.clone()
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.handle.shared
    }

    /// An empty message of `session` (none before a logon), in a buffer from the pool.
    pub(crate) fn message(
        &self,
        session: Option<Arc<SessionCrypto>>,
        sign: bool,
        encrypt: bool,
    ) -> Message {
        Message::new(self.shared().pool.take(512), session, sign, encrypt)
    }

    /// Sends ECHO (MS-SMB2 2.2.28) and waits for its answer.
    pub async fn echo(&self) -> Result<()> {
        let mut message = self.message(None, false, false);
        message.push(
            Header {
                command: Command::ECHO,
                ..Header::default()
            },
            1,
            |w| {
                w.u16(4).u16(0);
            },
        );
        self.send_one(message).await?.ok().map(drop)
    }

    /// Sends a message and returns the response of its single request.
    pub(crate) async fn send_one(&self, message: Message) -> Result<Response> {
        self.send(message)
            .await?
            .pop()
            .ok_or_else(|| Error::protocol("no response"))
    }

    /// Sends a message and returns the responses of its requests, in order.
    pub(crate) async fn send(&self, message: Message) -> Result<Vec<Response>> {
        Ok(self.send_keeping(message).await?.1)
    }

    /// Sends a message and returns its first request as sent (if the message kept it) and
    /// the responses of its requests, in order.
    pub(crate) async fn send_keeping(
        &self,
        message: Message,
    ) -> Result<(Option<Vec<u8>>, Vec<Response>)> {
        let shared = self.shared();
        let (request, receivers) = shared.dispatch(message).await?;
        let mut responses = Vec::with_capacity(receivers.len());
        for (id, rx) in receivers {
            let answer = tokio::time::timeout(shared.request_timeout, rx).await;
            match answer {
                Ok(Ok(result)) => responses.push(result?),
                Ok(Err(_)) => return Err(shared.closed_error()),
                Err(_) => {
                    shared.forget(id);
                    return Err(Error::Closed(format!(
                        "no response to MessageId {id} within {:?}",
                        shared.request_timeout
                    )));
                }
            }
        }
        Ok((request, responses))
    }

    /// The credits a request moving `payload` bytes costs (MS-SMB2 3.1.5.2).
    pub(crate) fn charge(&self, payload: usize) -> u16 {
        let large_mtu = self
            .shared()
            .negotiated
            .read()
            .as_ref()
            .is_some_and(|n| n.large_mtu);
        if large_mtu {
            u16::try_from(payload.saturating_sub(1) / CREDIT_UNIT + 1).unwrap_or(u16::MAX)
        } else {
            1
        }
    }

    pub(crate) fn set_negotiated(&self, negotiated: Negotiated, preauth: PreauthHash) {
        *self.shared().negotiated.write() = Some(negotiated);
        *self.shared().preauth.lock() = preauth;
    }

    /// The connection's preauthentication hash, where a session's starts.
    pub(crate) fn preauth(&self) -> PreauthHash {
        self.shared().preauth.lock().clone()
    }

    pub(crate) fn add_session(&self, session: Arc<SessionCrypto>) {
        self.shared().sessions.write().push(session);
    }

    pub(crate) fn remove_session(&self, id: u64) {
        self.shared().sessions.write().retain(|s| s.id != id);
    }
}

impl Shared {
    /// Takes the credits, numbers, signs or encrypts and queues `message`; returns the
    /// receivers of its responses with their MessageIds.
    #[allow(clippy::type_complexity)]
    async fn dispatch(
        &self,
        mut message: Message,
    ) -> Result<(
        Option<Vec<u8>>,
        Vec<(u64, oneshot::Receiver<Result<Response>>)>,
    )> {
        let total: u32 = message.elements.iter().map(|e| u32::from(e.charge)).sum();
        let first = self.take_credits(total.max(1)).await?;
        let (waiters, receivers) = self.number(&mut message, first);
        message.sign_elements()?;
        let request = message
            .keep_request
            .then(|| {
                message
                    .buf
                    .get(message.element_range(0))
                    .map(<[u8]>::to_vec)
            })
            .flatten();
        if message.encrypt {
            self.seal(&mut message)?;
        }
        let frame_len = message.buf.len() - PREFIX_LEN;
        let prefix = framing::encode_frame_prefix(frame_len)
            .map_err(|_| Error::Unsupported(format!("a frame of {frame_len} bytes")))?;
        put(&mut message.buf, 0, &prefix);
        {
            let mut table = self.table.lock();
            if let Some(failure) = &table.failure {
                return Err(failure.clone());
            }
            for (id, waiter) in waiters {
                self.in_flight
                    .fetch_add(u64::from(waiter.charge), Ordering::Relaxed);
                table.waiters.insert(id, waiter);
            }
        }
        self.out
            .send(message.buf)
            .map_err(|_| self.closed_error())?;
        Ok((request, receivers))
    }

    /// Takes `total` credits, waiting for the server to grant them; returns the first of the
    /// `total` MessageIds they pay for.
    async fn take_credits(&self, total: u32) -> Result<u64> {
        // A server that grants no credits must not hold the caller forever.
        let permit = tokio::time::timeout(self.request_timeout, self.credits.acquire_many(total))
            .await
            .map_err(|_| {
                Error::Closed(format!(
                    "no credits for {total} within {:?}",
                    self.request_timeout
                ))
            })?
            .map_err(|_| self.closed_error())?;
        permit.forget();
        Ok(self
            .next_message_id
            .fetch_add(u64::from(total), Ordering::Relaxed))
    }

    /// Writes each request's MessageId (from `first`), CreditCharge and CreditRequest (asking
    /// for more while the client holds fewer than it targets); returns their waiters and the
    /// receivers of their responses.
    #[allow(clippy::type_complexity)]
    fn number(
        &self,
        message: &mut Message,
        first: u64,
    ) -> (
        Vec<(u64, Waiter)>,
        Vec<(u64, oneshot::Receiver<Result<Response>>)>,
    ) {
        let held = self.credits.available_permits() as u64 + self.in_flight.load(Ordering::Relaxed);
        let mut want_more = self.target_credits.saturating_sub(held);
        let dialect_202 = self
            .negotiated
            .read()
            .as_ref()
            .is_some_and(|n| n.dialect == Dialect::SMB2_0_2);
        let signed_by = message.sign.then(|| message.session.clone()).flatten();
        let encrypted_for = message
            .encrypt
            .then(|| message.session.as_ref().map(|s| s.id))
            .flatten();
        let mut id = first;
        let mut waiters = Vec::with_capacity(message.elements.len());
        let mut receivers = Vec::with_capacity(message.elements.len());
        for i in 0..message.elements.len() {
            let range = message.element_range(i);
            let Some(element) = message.elements.get(i) else {
                break;
            };
            let charge = element.charge.max(1);
            let ask = u16::try_from(u64::from(charge) + want_more.min(256)).unwrap_or(u16::MAX);
            want_more = want_more.saturating_sub(u64::from(ask - charge));
            // NEGOTIATE, and every request in 2.0.2, carries CreditCharge 0 (MS-SMB2 3.2.4.1.5).
            let wire_charge = if element.command == Command::NEGOTIATE || dialect_202 {
                0
            } else {
                charge
            };
            if let Some(head) = message
                .buf
                .get_mut(range.start..range.start + SMB2_HEADER_LEN)
            {
                put(head, 6, &wire_charge.to_le_bytes());
                put(head, 14, &ask.to_le_bytes());
                put(head, 24, &id.to_le_bytes());
            }
            let (tx, rx) = oneshot::channel();
            let waiter = Waiter {
                tx,
                command: element.command,
                charge,
                signed_by: signed_by.clone(),
                encrypted_for,
            };
            waiters.push((id, waiter));
            receivers.push((id, rx));
            id += u64::from(charge);
        }
        (waiters, receivers)
    }

    /// Encrypts the message after its transform header (MS-SMB2 3.2.4.1.8).
    fn seal(&self, message: &mut Message) -> Result<()> {
        let session = message
            .session
            .clone()
            .ok_or_else(|| Error::Unsupported("encryption without a session".into()))?;
        let (Some(cipher), Some(kind)) = (session.encryptor.as_ref(), session.cipher) else {
            return Err(Error::Unsupported(
                "encryption: the connection negotiated no cipher".into(),
            ));
        };
        let mut nonce = [0u8; 16];
        let counter = self.nonce_counter.fetch_add(1, Ordering::Relaxed);
        let salt_len = kind.nonce_len() - 8;
        put(
            &mut nonce,
            0,
            self.nonce_salt.get(..salt_len).unwrap_or_default(),
        );
        put(&mut nonce, salt_len, &counter.to_le_bytes());
        let plain_len = message.buf.len() - PREFIX_LEN - TRANSFORM_HEADER_LEN;
        let header = TransformHeader {
            signature: [0; 16],
            nonce,
            original_message_size: u32::try_from(plain_len)
                .map_err(|_| Error::Unsupported("a message over 4 GiB".into()))?,
            flags: TransformFlags::ENCRYPTED,
            session_id: session.id,
        };
        let mut head = Vec::with_capacity(TRANSFORM_HEADER_LEN);
        header.encode(&mut Writer::new(&mut head));
        let (front, body) = message
            .buf
            .split_at_mut_checked(PREFIX_LEN + TRANSFORM_HEADER_LEN)
            .ok_or_else(|| Error::protocol("short message"))?;
        let aad = head.get(AAD_RANGE).unwrap_or_default();
        let tag = cipher
            .encrypt(nonce.get(..kind.nonce_len()).unwrap_or_default(), aad, body)
            .map_err(|e| Error::Unsupported(format!("encryption: {e}")))?;
        put(&mut head, 4, &tag);
        put(front, PREFIX_LEN, &head);
        Ok(())
    }

    fn closed_error(&self) -> Error {
        self.table
            .lock()
            .failure
            .clone()
            .unwrap_or_else(|| Error::Closed("the connection ended".into()))
    }

    /// Drops the waiter of a request that timed out; its response, if it comes, is refused.
    fn forget(&self, id: u64) {
        if let Some(waiter) = self.table.lock().waiters.remove(&id) {
            self.in_flight
                .fetch_sub(u64::from(waiter.charge), Ordering::Relaxed);
        }
    }

    /// Ends the connection: every request in flight and every later one fails with `error`.
    fn fail(&self, error: Error) {
        let waiters: Vec<Waiter> = {
            let mut table = self.table.lock();
            if table.failure.is_none() {
                table.failure = Some(error.clone());
            }
            table.waiters.drain().map(|(_, w)| w).collect()
        };
        self.credits.close();
        for waiter in waiters {
            let _ = waiter.tx.send(Err(error.clone()));
        }
    }

    fn session(&self, id: u64) -> Option<Arc<SessionCrypto>> {
        self.sessions.read().iter().find(|s| s.id == id).cloned()
    }

    /// One frame from the server: decrypted if sealed, split into its responses, each checked
    /// and handed to its waiter.
    fn on_frame(&self, mut frame: Vec<u8>) -> Result<()> {
        let result = self.split_frame(&mut frame);
        self.pool.give(frame);
        result
    }

    fn split_frame(&self, frame: &mut Vec<u8>) -> Result<()> {
        let (start, sealed_for) = match frame.get(..4) {
            Some(p) if p == TRANSFORM_PROTOCOL_ID => {
                let session = self.open_sealed(frame)?;
                (TRANSFORM_HEADER_LEN, Some(session))
            }
            Some(p) if p == PROTOCOL_ID => (0, None),
            _ => return Err(Error::protocol("a frame that is not an SMB2 message")),
        };
        let plain = frame.get(start..).unwrap_or_default();
        let mut parts = Vec::new();
        let mut at = start;
        for item in compound::split(plain) {
            let (header, pdu) = item.map_err(|error| Error::Malformed {
                command: Command(0xFFFF),
                error,
            })?;
            parts.push((header, at..at + pdu.len()));
            at += pdu.len();
        }
        if parts.len() == 1 {
            if let Some((header, range)) = parts.pop() {
                self.on_response(
                    Response {
                        header,
                        buf: std::mem::take(frame),
                        range,
                        pool: Some(self.pool.clone()),
                    },
                    sealed_for,
                )?;
            }
            return Ok(());
        }
        for (header, range) in parts {
            let bytes = frame.get(range.clone()).unwrap_or_default().to_vec();
            let len = bytes.len();
            self.on_response(
                Response {
                    header,
                    buf: bytes,
                    range: 0..len,
                    pool: None,
                },
                sealed_for,
            )?;
        }
        Ok(())
    }

    /// Decrypts a sealed frame in place (MS-SMB2 3.2.5.1.1.1); returns its SessionId.
    fn open_sealed(&self, frame: &mut [u8]) -> Result<u64> {
        let (header, _) = TransformHeader::decode(frame).map_err(|error| Error::Malformed {
            command: Command(0xFFFF),
            error,
        })?;
        if !header.flags.contains(TransformFlags::ENCRYPTED) {
            return Err(Error::protocol(
                "a transform header without the encrypted flag",
            ));
        }
        let session = self
            .session(header.session_id)
            .ok_or_else(|| Error::protocol("an encrypted frame for no session of ours"))?;
        let (Some(cipher), Some(kind)) = (session.decryptor.as_ref(), session.cipher) else {
            return Err(Error::protocol(
                "an encrypted frame for a session without a cipher",
            ));
        };
        let (head, body) = frame
            .split_at_mut_checked(TRANSFORM_HEADER_LEN)
            .ok_or(Error::Decrypt)?;
        let nonce = header.nonce.get(..kind.nonce_len()).unwrap_or_default();
        cipher
            .decrypt(
                nonce,
                head.get(AAD_RANGE).unwrap_or_default(),
                body,
                &header.signature,
            )
            .map_err(|_| Error::Decrypt)?;
        Ok(header.session_id)
    }

    fn on_response(&self, mut response: Response, sealed_for: Option<u64>) -> Result<()> {
        let header = response.header;
        if !header.is_response() {
            return Err(Error::protocol("a request from the server"));
        }
        if self.credits.available_permits() < MAX_CREDITS {
            self.credits.add_permits(usize::from(header.credits));
        }
        if header.message_id == NOTIFICATION_ID && header.command == Command::OPLOCK_BREAK {
            // No oplock or lease is ever requested, so a break needs no answer.
            return Ok(());
        }
        let interim = header.status == NtStatus::PENDING && header.is_async();
        let waiter = {
            let mut table = self.table.lock();
            if interim {
                return if table.waiters.contains_key(&header.message_id) {
                    Ok(())
                } else {
                    Err(Error::protocol(format!(
                        "an interim response to MessageId {}, which is not in flight",
                        header.message_id
                    )))
                };
            }
            table.waiters.remove(&header.message_id)
        };
        let Some(waiter) = waiter else {
            return Err(Error::protocol(format!(
                "a response to MessageId {}, which is not in flight",
                header.message_id
            )));
        };
        self.in_flight
            .fetch_sub(u64::from(waiter.charge), Ordering::Relaxed);
        let checked = check_response(&mut response, &waiter, sealed_for, |id| self.session(id));
        let _ = waiter.tx.send(checked.map(|()| response));
        Ok(())
    }
}

/// Whether a response is what its request calls for: the command it asked, encrypted if the
/// request was, signed (and verifying) if the request was signed.
fn check_response(
    response: &mut Response,
    waiter: &Waiter,
    sealed_for: Option<u64>,
    session: impl Fn(u64) -> Option<Arc<SessionCrypto>>,
) -> Result<()> {
    let header = response.header;
    if header.command != waiter.command {
        return Err(Error::protocol(format!(
            "a {:?} response to a {:?} request",
            header.command, waiter.command
        )));
    }
    if let Some(id) = waiter.encrypted_for {
        return if sealed_for == Some(id) {
            Ok(())
        } else {
            Err(Error::protocol(format!(
                "the {:?} response to an encrypted request came in the clear",
                header.command
            )))
        };
    }
    if sealed_for.is_some() {
        return Ok(());
    }
    let signer = waiter.signed_by.clone().or_else(|| {
        header
            .is_signed()
            .then(|| session(header.session_id))
            .flatten()
    });
    match signer {
        Some(s) if header.is_signed() => {
            if s.signer.verify(response.pdu_mut()) {
                Ok(())
            } else {
                Err(Error::BadSignature(header.command))
            }
        }
        Some(_) => Err(Error::protocol(format!(
            "the {:?} response to a signed request is not signed",
            header.command
        ))),
        // A signed response of a session the client does not have keys for yet: the final
        // SESSION_SETUP response, which the logon checks once it has derived them.
        None => Ok(()),
    }
}

/// Copies `bytes` into `buf` at `at`, if they fit.
fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    if let Some(dst) = buf.get_mut(at..at + bytes.len()) {
        dst.copy_from_slice(bytes);
    }
}

async fn read_loop<R: AsyncRead + Unpin>(shared: Arc<Shared>, mut reader: BufReader<R>) {
    let error = loop {
        match read_frame(&mut reader, &shared.pool).await {
            Ok(frame) => {
                if let Err(e) = shared.on_frame(frame) {
                    break e;
                }
            }
            Err(e) => break e,
        }
    };
    shared.fail(error);
}

/// One Direct-TCP frame, its length checked before anything is allocated for it.
async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    pool: &BufferPool,
) -> Result<Vec<u8>> {
    let mut prefix = [0u8; PREFIX_LEN];
    match reader.read_exact(&mut prefix).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(Error::Closed("the server closed the connection".into()));
        }
        Err(e) => return Err(e.into()),
    }
    let len = framing::frame_len(prefix, MAX_FRAME_LEN)
        .map_err(|e| Error::protocol(format!("frame prefix: {e:?}")))?;
    let mut frame = pool.take(len);
    let got = (&mut *reader)
        .take(len as u64)
        .read_to_end(&mut frame)
        .await?;
    if got != len {
        return Err(Error::Closed(
            "the server closed the connection mid-frame".into(),
        ));
    }
    Ok(frame)
}

async fn write_loop<W: AsyncWrite + Unpin>(
    shared: Arc<Shared>,
    mut frames: mpsc::UnboundedReceiver<Vec<u8>>,
    mut writer: BufWriter<W>,
) {
    while let Some(frame) = frames.recv().await {
        let mut result = writer.write_all(&frame).await;
        shared.pool.give(frame);
        // Frames queued meanwhile go out in the same system call.
        while result.is_ok() {
            match frames.try_recv() {
                Ok(frame) => {
                    result = writer.write_all(&frame).await;
                    shared.pool.give(frame);
                }
                Err(_) => break,
            }
        }
        if let Err(e) = match result {
            Ok(()) => writer.flush().await,
            Err(e) => Err(e),
        } {
            shared.fail(e.into());
            return;
        }
    }
    let _ = writer.shutdown().await;
}
