//! Building the frame that carries one or more responses (MS-SMB2 3.3.4.1): headers, padding
//! between compounded responses, NextCommand, signatures, and the Direct-TCP prefix.

use std::sync::Arc;

use smb3d_crypto::MessageSigner;
use smb3d_dtyp::NtStatus;
use smb3d_smb2::header::{Header, HeaderFlags, SMB2_HEADER_LEN};
use smb3d_wire::Writer;

use crate::state::connection::OutFrame;
use crate::state::connection::file_tail::FileTail;
use crate::state::encryption::{SessionCipher, TRANSFORM_HEADER_LEN};

/// Room before the first message: the 4-byte Direct-TCP prefix and the 52-byte transform header,
/// so that an encrypted frame is built in place without moving the messages.
const PREFIX_LEN: usize = 4;
const MESSAGES_START: usize = PREFIX_LEN + TRANSFORM_HEADER_LEN;
/// Offset of NextCommand within the SMB2 header.
const NEXT_COMMAND_OFFSET: usize = 20;

struct Element {
    start: usize,
    signer: Option<Arc<dyn MessageSigner>>,
}

pub(crate) struct ResponseFrame {
    buf: Vec<u8>,
    /// The last response added, not yet signed: its NextCommand and padding are known only
    /// when the next one starts or the frame ends.
    current: Option<Element>,
    /// File data that follows the last response on the wire (`file_tail`).
    tail: Option<FileTail>,
}

impl ResponseFrame {
    pub fn new() -> Self {
        let mut buf = Vec::with_capacity(512);
        buf.resize(MESSAGES_START, 0);
        Self {
            buf,
            current: None,
            tail: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.buf.len() == MESSAGES_START
    }

    /// Bytes of messages so far.
    pub fn len(&self) -> usize {
        self.buf.len() - MESSAGES_START + self.tail.as_ref().map_or(0, FileTail::len)
    }

    /// Ends the last response with data sent from its file. Only the last response of a
    /// frame that is neither signed nor encrypted may have one; anything else reads it in.
    pub fn set_tail(&mut self, tail: FileTail) {
        self.tail = Some(tail);
    }

    /// Reads a tail into the buffer, for a response that must be signed or encrypted or be
    /// followed by another after all. The response already promised the data, so a failed
    /// read leaves zeros rather than a frame of the wrong length.
    fn take_in_tail(&mut self) {
        if let Some(tail) = self.tail.take() {
            let start = self.buf.len();
            if let Err(e) = tail.read_into(&mut self.buf) {
                tracing::warn!("reading a READ response's data failed: {e}");
                self.buf.resize(start + tail.len(), 0);
            }
        }
    }

    /// Starts a response: seals the previous one (padding, NextCommand, signature) and
    /// reserves the header. Returns the new response's start.
    pub fn begin(&mut self) -> usize {
        self.take_in_tail();
        if let Some(prev) = self.current.take() {
            let pad = (8 - (self.buf.len() - MESSAGES_START) % 8) % 8;
            self.buf.resize(self.buf.len() + pad, 0);
            let next = (self.buf.len() - prev.start) as u32;
            put(
                &mut self.buf,
                prev.start + NEXT_COMMAND_OFFSET,
                &next.to_le_bytes(),
            );
            Self::sign(
                self.buf.get_mut(prev.start..).unwrap_or_default(),
                prev.signer.as_deref(),
            );
        }
        let start = self.buf.len();
        self.buf.resize(start + SMB2_HEADER_LEN, 0);
        start
    }

    /// A writer for the body of the response that starts at `start`; offsets count from its
    /// header, as on the wire.
    pub fn body_writer(&mut self, start: usize) -> Writer<'_> {
        Writer::with_base(&mut self.buf, start)
    }

    /// Replaces whatever body was written with the error response body (MS-SMB2 2.2.2);
    /// `error_data` holds `error_context_count` 3.1.1 error contexts, or none.
    pub fn error_body(&mut self, start: usize, error_context_count: u8, error_data: &[u8]) {
        self.tail = None;
        self.buf.truncate(start + SMB2_HEADER_LEN);
        let mut w = Writer::with_base(&mut self.buf, start);
        smb3d_smb2::error::ErrorResponse {
            error_context_count,
            error_data,
        }
        .encode(&mut w);
    }

    /// Fills in the header of the response that starts at `start`: the async form (MS-SMB2
    /// 2.2.1.1) when `async_id` is nonzero.
    #[allow(clippy::too_many_arguments)]
    pub fn end(
        &mut self,
        start: usize,
        request: &Header,
        status: NtStatus,
        credits: u16,
        session_id: u64,
        tree_id: u32,
        async_id: u64,
        signer: Option<Arc<dyn MessageSigner>>,
    ) {
        let mut flags = HeaderFlags::SERVER_TO_REDIR;
        if request.flags.contains(HeaderFlags::RELATED_OPERATIONS) {
            flags |= HeaderFlags::RELATED_OPERATIONS;
        }
        if signer.is_some() {
            flags |= HeaderFlags::SIGNED;
            self.take_in_tail();
        }
        if async_id != 0 {
            flags |= HeaderFlags::ASYNC_COMMAND;
        }
        let (process_id, tree_id) = if async_id == 0 {
            (request.process_id, tree_id)
        } else {
            (0, 0)
        };
        let header = Header {
            credit_charge: request.credit_charge,
            status,
            command: request.command,
            credits,
            flags,
            next_command: 0,
            message_id: request.message_id,
            async_id,
            process_id,
            tree_id,
            session_id,
            signature: [0; 16],
        };
        put(&mut self.buf, start, &header.to_bytes());
        self.current = Some(Element { start, signer });
    }

    /// Turns the response that starts at `start` into an interim STATUS_PENDING response
    /// (MS-SMB2 3.3.4.2: async header, never signed) and returns the frame that carries it
    /// after the responses before it; `self` is left holding only a fresh header for the same
    /// request's final response, whose start is returned.
    pub fn split_interim(
        &mut self,
        start: usize,
        request: &Header,
        credits: u16,
        session_id: u64,
        async_id: u64,
    ) -> (ResponseFrame, usize) {
        self.error_body(start, 0, &[]);
        self.end(
            start,
            request,
            NtStatus::PENDING,
            credits,
            session_id,
            0,
            async_id,
            None,
        );
        let mut rest = ResponseFrame::new();
        let new_start = rest.begin();
        (std::mem::replace(self, rest), new_start)
    }

    /// The bytes of the response that starts at `start`, as built so far.
    pub fn message(&self, start: usize) -> &[u8] {
        self.buf.get(start..).unwrap_or_default()
    }

    /// Seals the last response and prefixes the frame.
    pub fn finish(mut self) -> OutFrame {
        if let Some(last) = self.current.take() {
            self.pad_last_of_compound(last.start);
            Self::sign(
                self.buf.get_mut(last.start..).unwrap_or_default(),
                last.signer.as_deref(),
            );
        }
        let start = MESSAGES_START - PREFIX_LEN;
        // Responses are bounded by the negotiated sizes, far below the 24-bit frame limit;
        // the chain is split before it could exceed it.
        let prefix = smb3d_smb2::framing::encode_frame_prefix(self.len()).unwrap_or([0; 4]);
        put(&mut self.buf, start, &prefix);
        OutFrame::new(self.buf, start, self.tail)
    }

    /// Seals the last response, encrypts all of them under one transform header (MS-SMB2
    /// 3.3.4.1.4) and prefixes the frame. None if the session can encrypt no more.
    pub fn finish_sealed(mut self, cipher: &SessionCipher, session_id: u64) -> Option<OutFrame> {
        self.take_in_tail();
        if let Some(last) = self.current.take() {
            self.pad_last_of_compound(last.start);
            Self::sign(
                self.buf.get_mut(last.start..).unwrap_or_default(),
                last.signer.as_deref(),
            );
        }
        cipher.seal(&mut self.buf, PREFIX_LEN, session_id)?;
        let prefix = smb3d_smb2::framing::encode_frame_prefix(self.buf.len() - PREFIX_LEN).ok()?;
        put(&mut self.buf, 0, &prefix);
        Some(OutFrame::new(self.buf, 0, None))
    }

    /// The last response of a frame that carries several is padded to 8 bytes as the others
    /// are (as Windows sends them; smbtorture smb2.compound.compound-padding); a response
    /// alone in its frame is not.
    fn pad_last_of_compound(&mut self, last_start: usize) {
        if last_start == MESSAGES_START {
            return;
        }
        self.take_in_tail();
        let pad = (8 - (self.buf.len() - MESSAGES_START) % 8) % 8;
        self.buf.resize(self.buf.len() + pad, 0);
    }

    fn sign(message: &mut [u8], signer: Option<&dyn MessageSigner>) {
        if let Some(signer) = signer {
            signer.sign(message);
        }
    }
}

/// Writes `bytes` at `at`, a place the frame has already reserved.
fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    let place = at
        .checked_add(bytes.len())
        .and_then(|end| buf.get_mut(at..end));
    debug_assert!(place.is_some(), "writing past the frame");
    if let Some(place) = place {
        place.copy_from_slice(bytes);
    }
}
