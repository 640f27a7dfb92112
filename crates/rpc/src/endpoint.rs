//! One open named pipe: the server side of a connection-oriented DCE/RPC association (C706
//! chapter 12 with the extensions of MS-RPCE 3.3), answering as Windows does on `\PIPE\`
//! endpoints.
//!
//! Bytes the client writes may hold part of a PDU or several; complete PDUs are handled as soon
//! as they are there. Answers are queued as messages (one fragment each), since RPC pipes are
//! message-mode pipes: a read returns at most the rest of one message.

use std::collections::VecDeque;
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;

use smb3d_wire::Writer;

use crate::ndr::NdrWriter;
use crate::pdu::{
    self, Bind, BindAck, Fault, HEADER_LEN, Header, PacketType, PfcFlags, RESPONSE_HEADER_LEN,
    Request, Response, SyntaxId, nak_reason,
};
use crate::presentation::Contexts;
use crate::service::{CallContext, Service, fault_status};
use crate::{CallerInfo, Directory, pipe_kind};

/// The largest fragment either side may send over SMB named pipes; Windows negotiates no more
/// on `\PIPE\` endpoints and faults a request fragment that exceeds it.
pub const MAX_FRAGMENT_LEN: u16 = 4280;
/// The smallest fragment size Windows agrees to, whatever smaller size the client proposes.
const MIN_FRAGMENT_LEN: u16 = 2048;
/// The largest reassembled request stub (Windows' default limit): a larger alloc_hint or total
/// is refused with ERROR_ACCESS_DENIED.
pub const MAX_REQUEST_LEN: usize = 4 * 1024 * 1024;
/// Fragments one request may take. Clients send at least 2,024 stub bytes per fragment but the
/// last, so a 4 MiB request needs about 2,100; this bounds work on a flood of tiny fragments.
const MAX_REQUEST_FRAGMENTS: u32 = 4096;
/// Presentation contexts one association may hold.
const MAX_CONTEXTS: usize = 64;
/// Unread answer bytes after which writes are refused until the client reads.
const MAX_BACKLOG: usize = 8 * 1024 * 1024;
/// The auth_type/auth_level pair of an auth_verifier that asks for no security at all.
const AUTH_TYPE_NONE: u8 = 0;
const AUTH_LEVEL_NONE: u8 = 1;

/// Why a write was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PipeError {
    /// The association ended after a protocol error (the last answer, a fault or bind_nak, can
    /// still be read); the server reports STATUS_PIPE_DISCONNECTED.
    Disconnected,
    /// Too many answers are waiting to be read; nothing was consumed.
    Busy,
}

impl core::fmt::Display for PipeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Self::Disconnected => "the RPC association ended after a protocol error",
            Self::Busy => "too many unread answers are queued on the pipe",
        })
    }
}

impl std::error::Error for PipeError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Only a bind is acceptable.
    AwaitingBind,
    Bound,
    /// A protocol error ended the association.
    Closed,
}

/// A request whose first fragments arrived (on a pipe or a TCP association).
pub(crate) struct PartialCall {
    pub call_id: u32,
    pub context_id: u16,
    pub opnum: u16,
    pub stub: Vec<u8>,
    pub fragments: u32,
}

/// One open pipe (one per SMB2 CREATE on `IPC$`): the DCE/RPC association state and the bound
/// service.
pub struct PipeEndpoint {
    service: Service,
    directory: Arc<dyn Directory>,
    caller: CallerInfo,
    state: State,
    /// Client bytes not handled yet: the start of a PDU whose end has not arrived, or PDUs
    /// held back while the backlog is full.
    input: Vec<u8>,
    /// Accepted presentation contexts (all for the pipe's one interface).
    contexts: Contexts,
    call: Option<PartialCall>,
    /// The negotiated fragment size, used for both directions.
    max_frag: u16,
    assoc_group_id: u32,
    /// The client's minor protocol version, echoed in answers.
    rpc_vers_minor: u8,
    output: VecDeque<Vec<u8>>,
    /// Bytes of the front message already read.
    head_read: usize,
    /// Unread bytes over all queued messages.
    queued: usize,
}

impl core::fmt::Debug for PipeEndpoint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PipeEndpoint")
            .field("interface", &self.service.interface())
            .field("state", &self.state)
            .field("contexts", &self.contexts)
            .field("max_frag", &self.max_frag)
            .field("queued", &self.queued)
            .finish_non_exhaustive()
    }
}

impl PipeEndpoint {
    /// Opens the pipe `name` (see [`crate::pipe_exists`]) for `caller`; `None` if no such pipe.
    pub fn open(name: &str, directory: Arc<dyn Directory>, caller: CallerInfo) -> Option<Self> {
        let kind = pipe_kind(name)?;
        // Association groups and policy handles only need to be unpredictable and distinct,
        // not secret; the standard library's per-process random keys are enough.
        let random = RandomState::new().hash_one(name);
        Some(Self {
            service: Service::new(kind, random),
            directory,
            caller,
            state: State::AwaitingBind,
            input: Vec::new(),
            contexts: Contexts::new(MAX_CONTEXTS),
            call: None,
            max_frag: MAX_FRAGMENT_LEN,
            // Windows' ids are small non-zero numbers; keep the low 24 bits and never 0.
            assoc_group_id: u32::try_from(random & 0x00ff_ffff).unwrap_or(1) | 1,
            rpc_vers_minor: 0,
            output: VecDeque::new(),
            head_read: 0,
            queued: 0,
        })
    }

    /// Takes bytes the client wrote (SMB2 WRITE, or the input of FSCTL_PIPE_TRANSCEIVE). They
    /// may hold part of a PDU or several PDUs; complete ones are answered before this returns,
    /// unless unread answers pile up, in which case the rest waits for the client to read.
    pub fn write(&mut self, data: &[u8]) -> Result<(), PipeError> {
        if self.state == State::Closed {
            return Err(PipeError::Disconnected);
        }
        if self.queued >= MAX_BACKLOG {
            return Err(PipeError::Busy);
        }
        let mut data = data;
        if !self.input.is_empty() {
            // Below the backlog limit the buffer holds at most the start of one PDU.
            data = self.fill_input(data);
            match pdu_length(&self.input) {
                Some(len) if self.input.len() == len => {
                    let pdu = core::mem::take(&mut self.input);
                    self.handle_pdu(&pdu);
                    self.input = pdu;
                    self.input.clear();
                }
                Some(_) => return Ok(()),
                None if self.input.len() < HEADER_LEN => return Ok(()),
                None => {
                    let call_id = Header::decode(&self.input).map_or(0, |h| h.call_id);
                    self.input.clear();
                    self.protocol_error(call_id);
                }
            }
        }
        // Whole PDUs are handled straight from the caller's buffer; only what is left over
        // is copied.
        let rest = self.process(data);
        self.input.extend_from_slice(rest);
        Ok(())
    }

    /// Bytes ready for the client (SMB2 READ or the transceive output): at most `max` bytes of
    /// the message at the head of the queue. What does not fit stays queued; [`Self::pending`]
    /// then tells how much (STATUS_BUFFER_OVERFLOW for the read).
    pub fn read(&mut self, max: usize) -> Vec<u8> {
        let Some(front) = self.output.front() else {
            return Vec::new();
        };
        let rest = front.get(self.head_read..).unwrap_or_default();
        let out = if self.head_read == 0 && rest.len() <= max {
            self.queued -= rest.len();
            self.output.pop_front().unwrap_or_default()
        } else {
            let out = rest.get(..max.min(rest.len())).unwrap_or_default().to_vec();
            self.head_read += out.len();
            self.queued -= out.len();
            if self.head_read == front.len() {
                self.output.pop_front();
                self.head_read = 0;
            }
            out
        };
        if !self.input.is_empty() && self.queued < MAX_BACKLOG {
            self.pump();
        }
        out
    }

    /// Unread bytes of the message at the head of the queue: after a read, non-zero means the
    /// message did not fit; before one, it is the next message's length.
    pub fn pending(&self) -> usize {
        self.output
            .front()
            .map_or(0, |m| m.len().saturating_sub(self.head_read))
    }

    /// The unread rest of the message at the head of the queue, left queued (FSCTL_PIPE_PEEK's
    /// Data).
    pub fn peek(&self) -> &[u8] {
        self.output
            .front()
            .and_then(|m| m.get(self.head_read..))
            .unwrap_or_default()
    }

    /// Unread bytes over all queued messages (FSCTL_PIPE_PEEK's ReadDataAvailable).
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Number of queued messages, the partly read one included (FSCTL_PIPE_PEEK's
    /// NumberOfMessages).
    pub fn queued_messages(&self) -> usize {
        self.output.len()
    }

    /// Whether a protocol error ended the association. Queued answers can still be read;
    /// once they are, reads and writes fail with STATUS_PIPE_DISCONNECTED.
    pub fn is_disconnected(&self) -> bool {
        self.state == State::Closed
    }

    /// Handles the complete PDUs at the start of `data` while the association lives and the
    /// backlog allows; returns what is left (nothing once the association is closed).
    fn process<'d>(&mut self, mut data: &'d [u8]) -> &'d [u8] {
        while self.state != State::Closed && self.queued < MAX_BACKLOG {
            if data.len() < HEADER_LEN {
                break;
            }
            let Some(len) = pdu_length(data) else {
                self.protocol_error(Header::decode(data).map_or(0, |h| h.call_id));
                break;
            };
            let Some((pdu, rest)) = data.split_at_checked(len) else {
                break;
            };
            self.handle_pdu(pdu);
            data = rest;
        }
        if self.state == State::Closed {
            &[]
        } else {
            data
        }
    }

    /// Goes on with PDUs left waiting by a full backlog.
    fn pump(&mut self) {
        let mut input = core::mem::take(&mut self.input);
        let left = self.process(&input).len();
        input.drain(..input.len() - left);
        self.input = input;
    }

    /// Appends to the partial PDU what it still lacks; returns the unused rest of `data`.
    fn fill_input<'d>(&mut self, data: &'d [u8]) -> &'d [u8] {
        let want = if self.input.len() < HEADER_LEN {
            HEADER_LEN - self.input.len()
        } else {
            0
        };
        let (head, mut rest) = data.split_at(want.min(data.len()));
        self.input.extend_from_slice(head);
        if let Some(len) = pdu_length(&self.input) {
            let more = len.saturating_sub(self.input.len()).min(rest.len());
            let (body, tail) = rest.split_at(more);
            self.input.extend_from_slice(body);
            rest = tail;
        }
        rest
    }

    fn handle_pdu(&mut self, pdu: &[u8]) {
        let Ok(header) = Header::decode(pdu) else {
            self.protocol_error(0);
            return;
        };
        if header.rpc_vers != pdu::RPC_VERSION
            || header.rpc_vers_minor > 1
            || !header.is_little_endian()
        {
            self.protocol_error(header.call_id);
            return;
        }
        match (self.state, header.packet_type) {
            (State::Closed, _) => {}
            (State::AwaitingBind, PacketType::BIND) => self.bind(&header, pdu),
            (State::AwaitingBind, _) => self.protocol_error(header.call_id),
            // One bind per association (C706 12.6.4.3); Windows refuses the second.
            (State::Bound, PacketType::BIND) => {
                self.nak_and_close(nak_reason::NOT_SPECIFIED, &header)
            }
            (State::Bound, PacketType::ALTER_CONTEXT) => self.alter_context(&header, pdu),
            (State::Bound, PacketType::REQUEST) => self.request(&header, pdu),
            // Calls run to completion before their answer is queued, so there is nothing to
            // cancel; Windows keeps the connection and goes on with the call.
            (State::Bound, PacketType::CO_CANCEL | PacketType::ORPHANED) => {}
            (State::Bound, _) => self.protocol_error(header.call_id),
        }
    }

    fn bind(&mut self, header: &Header, pdu: &[u8]) {
        self.rpc_vers_minor = header.rpc_vers_minor;
        let Ok(bind) = Bind::decode(header, pdu) else {
            self.nak_and_close(nak_reason::NOT_SPECIFIED, header);
            return;
        };
        if header.auth_length != 0 {
            // No DCE/RPC security on pipes: refuse any verifier as Windows refuses an
            // unknown one; a verifier asking for no security at all gets "not specified".
            let reason = match bind.auth_verifier {
                [AUTH_TYPE_NONE, AUTH_LEVEL_NONE, ..] => nak_reason::NOT_SPECIFIED,
                _ => nak_reason::AUTHENTICATION_TYPE_NOT_RECOGNIZED,
            };
            self.nak_and_close(reason, header);
            return;
        }
        // Association groups are not shared between pipes, so a group to join is unknown.
        if bind.assoc_group_id != 0 {
            self.nak_and_close(nak_reason::NOT_SPECIFIED, header);
            return;
        }
        if bind.contexts.is_empty() {
            self.nak_and_close(nak_reason::PROTOCOL_VERSION_NOT_SUPPORTED, header);
            return;
        }
        let negotiations = bind
            .contexts
            .iter()
            .filter(|c| {
                c.transfer_syntaxes
                    .first()
                    .and_then(SyntaxId::feature_bits)
                    .is_some()
            })
            .count();
        if negotiations > 1 || bind.contexts.iter().any(|c| c.transfer_syntaxes.is_empty()) {
            self.nak_and_close(nak_reason::NOT_SPECIFIED, header);
            return;
        }
        let Ok(results) = self
            .contexts
            .present(&[self.service.interface()], &bind.contexts, true)
        else {
            self.nak_and_close(nak_reason::NOT_SPECIFIED, header);
            return;
        };
        self.max_frag = negotiate_fragment(bind.max_xmit_frag, bind.max_recv_frag);
        self.state = State::Bound;
        let ack = BindAck {
            max_xmit_frag: self.max_frag,
            max_recv_frag: self.max_frag,
            assoc_group_id: self.assoc_group_id,
            secondary_address: self.service.secondary_address().into(),
            results,
        };
        self.push(ack.to_pdu(PacketType::BIND_ACK, self.rpc_vers_minor, header.call_id));
    }

    /// C706 12.6.4.1: adds presentation contexts to the association. The fragment sizes and
    /// association group of the bind stand; the ones in the request are ignored, as Windows
    /// ignores them.
    fn alter_context(&mut self, header: &Header, pdu: &[u8]) {
        let Ok(alter) = Bind::decode(header, pdu) else {
            self.protocol_error(header.call_id);
            return;
        };
        if header.auth_length != 0
            || alter.contexts.is_empty()
            || alter
                .contexts
                .iter()
                .any(|c| c.transfer_syntaxes.is_empty())
        {
            self.protocol_error(header.call_id);
            return;
        }
        let Ok(results) =
            self.contexts
                .present(&[self.service.interface()], &alter.contexts, false)
        else {
            self.protocol_error(header.call_id);
            return;
        };
        let ack = BindAck {
            max_xmit_frag: self.max_frag,
            max_recv_frag: self.max_frag,
            assoc_group_id: self.assoc_group_id,
            secondary_address: String::new(),
            results,
        };
        self.push(ack.to_pdu(
            PacketType::ALTER_CONTEXT_RESP,
            self.rpc_vers_minor,
            header.call_id,
        ));
    }

    /// C706 12.6.4.9: reassembles a request from its fragments and runs it. Fragments of one
    /// call must follow each other with the same context and opnum; the limits on size and
    /// fragment count and the faults for breaking the rules are Windows'.
    fn request(&mut self, header: &Header, pdu: &[u8]) {
        let Ok(req) = Request::decode(header, pdu) else {
            self.protocol_error(header.call_id);
            return;
        };
        if header.auth_length != 0 {
            // A verifier on an association without a security context.
            self.fault_and_close(
                header.call_id,
                req.context_id,
                fault_status::ACCESS_DENIED,
                PfcFlags::SINGLE,
            );
            return;
        }
        let first = header.flags.contains(PfcFlags::FIRST_FRAG);
        let last = header.flags.contains(PfcFlags::LAST_FRAG);
        match self.call.take() {
            None => {
                if !first {
                    self.fault_and_close(
                        header.call_id,
                        0,
                        fault_status::NCA_S_PROTO_ERROR,
                        PfcFlags::SINGLE,
                    );
                } else if header.flags.contains(PfcFlags::PENDING_CANCEL) {
                    self.fault_and_close(
                        header.call_id,
                        0,
                        fault_status::RPC_S_NO_CALL_ACTIVE,
                        PfcFlags::SINGLE | PfcFlags::DID_NOT_EXECUTE,
                    );
                } else if usize::try_from(req.alloc_hint).map_or(true, |h| h > MAX_REQUEST_LEN) {
                    self.fault_and_close(
                        header.call_id,
                        req.context_id,
                        fault_status::ACCESS_DENIED,
                        PfcFlags::SINGLE,
                    );
                } else if last {
                    self.dispatch(header.call_id, req.context_id, req.opnum, req.stub);
                } else {
                    self.call = Some(PartialCall {
                        call_id: header.call_id,
                        context_id: req.context_id,
                        opnum: req.opnum,
                        stub: req.stub.to_vec(),
                        fragments: 1,
                    });
                }
            }
            Some(mut call) => {
                if header.call_id != call.call_id {
                    // Fragments of different calls may not interleave without CONC_MPX; the
                    // call in progress is the one that fails.
                    self.fault_and_close(
                        call.call_id,
                        call.context_id,
                        fault_status::NCA_S_PROTO_ERROR,
                        PfcFlags::SINGLE,
                    );
                } else if first || req.context_id != call.context_id || req.opnum != call.opnum {
                    self.fault_and_close(
                        header.call_id,
                        req.context_id,
                        fault_status::NCA_S_PROTO_ERROR,
                        PfcFlags::SINGLE,
                    );
                } else if call.stub.len().saturating_add(req.stub.len()) > MAX_REQUEST_LEN {
                    self.fault_and_close(
                        call.call_id,
                        call.context_id,
                        fault_status::ACCESS_DENIED,
                        PfcFlags::SINGLE,
                    );
                } else if call.fragments >= MAX_REQUEST_FRAGMENTS {
                    self.fault_and_close(
                        call.call_id,
                        call.context_id,
                        fault_status::NCA_S_PROTO_ERROR,
                        PfcFlags::SINGLE,
                    );
                } else {
                    call.stub.extend_from_slice(req.stub);
                    call.fragments += 1;
                    if last {
                        self.dispatch(call.call_id, call.context_id, call.opnum, &call.stub);
                    } else {
                        self.call = Some(call);
                    }
                }
            }
        }
    }

    /// Runs a complete call and queues its response fragments or its fault.
    fn dispatch(&mut self, call_id: u32, context_id: u16, opnum: u16, stub: &[u8]) {
        if self.contexts.interface(context_id).is_none() {
            self.push_fault(
                call_id,
                0,
                fault_status::NCA_S_UNKNOWN_IF,
                PfcFlags::SINGLE | PfcFlags::DID_NOT_EXECUTE,
            );
            return;
        }
        // The stub is written after room for the response header, so a response that fits
        // one fragment is queued without copying.
        let mut buf = Vec::with_capacity(usize::from(self.max_frag));
        buf.resize(RESPONSE_HEADER_LEN, 0);
        let outcome = {
            let cx = CallContext {
                directory: self.directory.as_ref(),
                caller: &self.caller,
            };
            let mut w = NdrWriter::with_base(&mut buf, RESPONSE_HEADER_LEN);
            self.service.call(&cx, opnum, stub, &mut w)
        };
        match outcome {
            Ok(()) => self.push_response(call_id, context_id, buf),
            Err(fault) => {
                let flags = if fault.did_not_execute() {
                    PfcFlags::SINGLE | PfcFlags::DID_NOT_EXECUTE
                } else {
                    PfcFlags::SINGLE
                };
                self.push_fault(call_id, context_id, fault.status(), flags);
            }
        }
    }

    /// Splits a response stub (after `RESPONSE_HEADER_LEN` bytes of room in `buf`) into
    /// fragments of the negotiated size. Each alloc_hint is the stub left from that fragment.
    fn push_response(&mut self, call_id: u32, context_id: u16, mut buf: Vec<u8>) {
        let room = usize::from(self.max_frag) - RESPONSE_HEADER_LEN;
        let stub_len = buf.len() - RESPONSE_HEADER_LEN;
        if stub_len <= room {
            let header =
                self.response_header(call_id, context_id, PfcFlags::SINGLE, stub_len, stub_len);
            if let Some(dst) = buf.get_mut(..RESPONSE_HEADER_LEN) {
                dst.copy_from_slice(&header);
            }
            self.push(buf);
            return;
        }
        let stub = buf.get(RESPONSE_HEADER_LEN..).unwrap_or_default();
        let mut offset = 0;
        let mut fragments = Vec::with_capacity(stub_len.div_ceil(room));
        for chunk in stub.chunks(room) {
            let mut flags = PfcFlags::empty();
            if offset == 0 {
                flags |= PfcFlags::FIRST_FRAG;
            }
            if offset + chunk.len() == stub_len {
                flags |= PfcFlags::LAST_FRAG;
            }
            let header =
                self.response_header(call_id, context_id, flags, chunk.len(), stub_len - offset);
            let mut frag = Vec::with_capacity(RESPONSE_HEADER_LEN + chunk.len());
            frag.extend_from_slice(&header);
            frag.extend_from_slice(chunk);
            fragments.push(frag);
            offset += chunk.len();
        }
        for frag in fragments {
            self.push(frag);
        }
    }

    /// A response's common header and fields for a fragment carrying `stub_len` bytes, with
    /// `stub_left` bytes of the stub from this fragment on.
    fn response_header(
        &self,
        call_id: u32,
        context_id: u16,
        flags: PfcFlags,
        stub_len: usize,
        stub_left: usize,
    ) -> [u8; RESPONSE_HEADER_LEN] {
        let frag_len = u16::try_from(RESPONSE_HEADER_LEN + stub_len).unwrap_or(u16::MAX);
        let mut header = Header::new(PacketType::RESPONSE, flags, call_id, frag_len);
        header.rpc_vers_minor = self.rpc_vers_minor;
        let mut buf = Vec::with_capacity(RESPONSE_HEADER_LEN);
        let mut w = Writer::new(&mut buf);
        header.encode(&mut w);
        Response::encode_fields(
            u32::try_from(stub_left).unwrap_or(u32::MAX),
            context_id,
            &mut w,
        );
        let mut out = [0u8; RESPONSE_HEADER_LEN];
        if let Some(src) = buf.get(..RESPONSE_HEADER_LEN) {
            out.copy_from_slice(src);
        }
        out
    }

    fn push_fault(&mut self, call_id: u32, context_id: u16, status: u32, flags: PfcFlags) {
        let fault = Fault {
            alloc_hint: Fault::ALLOC_HINT,
            context_id,
            cancel_count: 0,
            flags: 0,
            status,
        };
        self.push(fault.to_pdu(flags, self.rpc_vers_minor, call_id));
    }

    fn fault_and_close(&mut self, call_id: u32, context_id: u16, status: u32, flags: PfcFlags) {
        self.push_fault(call_id, context_id, status, flags);
        self.close();
    }

    fn nak_and_close(&mut self, reason: u16, header: &Header) {
        self.push(pdu::bind_nak_pdu(
            reason,
            header.rpc_vers_minor,
            header.call_id,
        ));
        self.close();
    }

    /// A PDU that breaks the protocol ends the association: before a bind Windows answers with
    /// bind_nak (protocol version not supported), after it with a nca_s_proto_error fault.
    fn protocol_error(&mut self, call_id: u32) {
        if self.state == State::AwaitingBind {
            self.push(pdu::bind_nak_pdu(
                nak_reason::PROTOCOL_VERSION_NOT_SUPPORTED,
                self.rpc_vers_minor,
                call_id,
            ));
            self.close();
        } else {
            self.fault_and_close(
                call_id,
                0,
                fault_status::NCA_S_PROTO_ERROR,
                PfcFlags::SINGLE | PfcFlags::DID_NOT_EXECUTE,
            );
        }
    }

    fn close(&mut self) {
        self.state = State::Closed;
        self.call = None;
        self.input = Vec::new();
    }

    fn push(&mut self, message: Vec<u8>) {
        self.queued += message.len();
        self.output.push_back(message);
    }
}

/// The length of the PDU starting at `bytes` once its header is there; `None` before that or
/// when frag_length is outside what a pipe carries (shorter than a header or longer than
/// [`MAX_FRAGMENT_LEN`]).
fn pdu_length(bytes: &[u8]) -> Option<usize> {
    let header = Header::decode(bytes).ok()?;
    let len = usize::from(header.frag_length);
    (HEADER_LEN..=usize::from(MAX_FRAGMENT_LEN))
        .contains(&len)
        .then_some(len)
}

/// The feature bits of a context element whose first transfer syntax is the bind time feature
/// negotiation syntax (only the first counts, MS-RPCE 3.3.1.5.3).
/// The fragment size both directions use: the smaller of the client's two, at least 2,048, at
/// most what pipes carry, rounded down to 8 bytes (as Windows negotiates).
fn negotiate_fragment(max_xmit: u16, max_recv: u16) -> u16 {
    max_xmit
        .min(max_recv)
        .clamp(MIN_FRAGMENT_LEN, MAX_FRAGMENT_LEN)
        & !7
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragment_negotiation_follows_windows() {
        // The values Windows answers on \PIPE\ endpoints (Samba's raw_protocol tests).
        assert_eq!(negotiate_fragment(0xffff, 0xffff), 4280);
        assert_eq!(negotiate_fragment(0, 0xffff), 2048);
        assert_eq!(negotiate_fragment(0xffff, 0), 2048);
        assert_eq!(negotiate_fragment(3199, 0xffff), 3192);
        assert_eq!(negotiate_fragment(0xffff, 3199), 3192);
        assert_eq!(negotiate_fragment(4283, 4283), 4280);
        assert_eq!(negotiate_fragment(1000, 1000), 2048);
    }

    #[test]
    fn pdu_length_bounds() {
        let mut h = [5u8, 0, 0, 3, 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0];
        h[8..10].copy_from_slice(&16u16.to_le_bytes());
        assert_eq!(pdu_length(&h), Some(16));
        h[8..10].copy_from_slice(&15u16.to_le_bytes());
        assert_eq!(pdu_length(&h), None);
        h[8..10].copy_from_slice(&4281u16.to_le_bytes());
        assert_eq!(pdu_length(&h), None);
        assert_eq!(pdu_length(&h[..10]), None);
    }
}
