//! One ncacn_ip_tcp association on the server side (MS-RPCE 2.1.1.1, C706 chapter 12): bind
//! and alter_context for the interfaces a listener serves, NTLMSSP authentication in three
//! legs (bind, bind_ack, auth3; MS-RPCE 3.3.1.5.2), each request's verifier checked and its
//! stub unsealed, requests reassembled within bounds, responses fragmented, signed and sealed.
//!
//! Sans-IO: the listener reads one PDU at a time ([`pdu_length`] delimits it), hands it to
//! [`Association::handle`] and writes what comes back. A complete request comes back as a
//! [`Call`] that the listener answers with [`Association::response`] or
//! [`Association::fault`], at once or later (a held WitnessrAsyncNotify).

use std::ops::Range;

use smb3d_wire::{DecodeError, Reader, Writer};

use crate::endpoint::PartialCall;
use crate::pdu::{
    self, Bind, BindAck, Fault, HEADER_LEN, Header, PacketType, PfcFlags, RESPONSE_HEADER_LEN,
    Request, Response, SyntaxId, nak_reason,
};
use crate::presentation::Contexts;
use crate::service::fault_status;

/// The largest fragment either side sends on ncacn_ip_tcp (Windows' default for TCP).
pub const MAX_FRAGMENT_LEN: u16 = 5840;
/// The smallest fragment size agreed to (C706 12.6.3.1: at least 1432; Windows 2048).
const MIN_FRAGMENT_LEN: u16 = 2048;
/// The largest reassembled request stub. Witness and endpoint mapper requests take a few
/// hundred bytes; nothing a served call takes comes near this.
pub const MAX_REQUEST_LEN: usize = 64 * 1024;
/// Fragments one request may take.
const MAX_REQUEST_FRAGMENTS: u32 = 64;
/// Presentation contexts one association may hold.
const MAX_CONTEXTS: usize = 16;

/// auth_type of NTLMSSP (MS-RPCE 2.2.1.1.7).
pub const AUTH_TYPE_NTLMSSP: u8 = 10;
/// auth_level values (MS-RPCE 2.2.1.1.8).
pub const AUTH_LEVEL_NONE: u8 = 1;
pub const AUTH_LEVEL_CONNECT: u8 = 2;
pub const AUTH_LEVEL_INTEGRITY: u8 = 5;
pub const AUTH_LEVEL_PRIVACY: u8 = 6;
/// The NTLMSSP_MESSAGE_SIGNATURE's length (MS-NLMP 2.2.2.9.1).
pub const SIGNATURE_LEN: usize = 16;
/// Response stubs are padded to this boundary before the sec_trailer (MS-RPCE 2.2.2.11 asks
/// for 4; Windows and Samba pad to 16).
const AUTH_PAD_ALIGN: usize = 16;

/// The sec_trailer (MS-RPCE 2.2.2.11) that precedes the auth_value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthTrailer {
    pub auth_type: u8,
    pub auth_level: u8,
    /// Bytes of padding between the stub and the trailer.
    pub pad_length: u8,
    pub context_id: u32,
}

impl AuthTrailer {
    /// Splits an auth_verifier (as [`pdu::split_auth`] gives it) into trailer and auth_value.
    pub fn decode(verifier: &[u8]) -> Result<(Self, &[u8]), DecodeError> {
        let mut r = Reader::new(verifier);
        let auth_type = r.u8("auth_type")?;
        let auth_level = r.u8("auth_level")?;
        let pad_length = r.u8("auth_pad_length")?;
        r.skip(1, "auth_reserved")?;
        let context_id = r.u32("auth_context_id")?;
        Ok((
            Self {
                auth_type,
                auth_level,
                pad_length,
                context_id,
            },
            r.rest(),
        ))
    }

    fn encode(&self, out: &mut Vec<u8>) {
        Writer::new(out)
            .u8(self.auth_type)
            .u8(self.auth_level)
            .u8(self.pad_length)
            .u8(0)
            .u32(self.context_id);
    }
}

/// The security package's acceptor, one per association.
pub trait Authenticator: Send {
    /// The bind's token (an NTLM NEGOTIATE): the token for bind_ack (the CHALLENGE), or None
    /// to refuse.
    fn challenge(&mut self, token: &[u8]) -> Option<Vec<u8>>;
    /// The auth3's token (an NTLM AUTHENTICATE): the account that proved its password and
    /// the per-message security of the logon, or None for a failed logon.
    fn authenticate(&mut self, token: &[u8]) -> Option<(String, Box<dyn PacketSecurity>)>;
}

/// Per-message security after a logon (MS-NLMP 3.4; MS-RPCE 3.3.1.5.2.2): what is signed is
/// the PDU from its first byte to the end of the sec_trailer.
pub trait PacketSecurity: Send {
    /// Checks an incoming PDU's `signature` over `pdu`, first decrypting `sealed` (a range of
    /// `pdu`) in place when it is not empty. False: the PDU is not the client's.
    fn unwrap(&mut self, pdu: &mut [u8], sealed: Range<usize>, signature: &[u8]) -> bool;
    /// Signs `pdu`, then encrypts `sealed` (a range of it) in place when it is not empty;
    /// returns the signature.
    fn wrap(&mut self, pdu: &mut [u8], sealed: Range<usize>) -> [u8; SIGNATURE_LEN];
}

/// The length a PDU's header announces, from the first [`HEADER_LEN`] bytes; None when it is
/// shorter than a header or not a version 5 PDU.
pub fn pdu_length(header: &[u8]) -> Option<usize> {
    let h = Header::decode(header).ok()?;
    let len = usize::from(h.frag_length);
    (h.rpc_vers == pdu::RPC_VERSION && len >= HEADER_LEN).then_some(len)
}

/// A complete, authenticated request for the listener to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub call_id: u32,
    pub context_id: u16,
    /// The interface the context was bound to.
    pub interface: SyntaxId,
    pub opnum: u16,
    pub stub: Vec<u8>,
    /// The account the association authenticated as, None without authentication.
    pub user: Option<String>,
    /// The level every message of the association is protected at.
    pub auth_level: u8,
}

/// What [`Association::handle`] asks of the listener.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to send (an auth3, a request fragment, a cancel).
    Nothing,
    /// Send these bytes.
    Send(Vec<u8>),
    /// Answer this call.
    Call(Call),
    /// Send these bytes (if any), then close the connection.
    Close(Vec<u8>),
}

enum Auth {
    /// No security context.
    None,
    /// The bind's NEGOTIATE was answered; the auth3 is awaited.
    Challenged {
        level: u8,
        context_id: u32,
        acceptor: Box<dyn Authenticator>,
    },
    /// The logon succeeded.
    Established {
        level: u8,
        context_id: u32,
        user: String,
        security: Box<dyn PacketSecurity>,
    },
}

/// The server side of one ncacn_ip_tcp connection.
pub struct Association {
    served: Vec<SyntaxId>,
    new_authenticator: Box<dyn FnMut() -> Box<dyn Authenticator> + Send>,
    bound: bool,
    contexts: Contexts,
    auth: Auth,
    call: Option<PartialCall>,
    max_frag: u16,
    assoc_group_id: u32,
    rpc_vers_minor: u8,
    /// The TCP port, the bind_ack's secondary address.
    port: u16,
}

impl core::fmt::Debug for Association {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Association")
            .field("served", &self.served)
            .field("bound", &self.bound)
            .field("contexts", &self.contexts)
            .finish_non_exhaustive()
    }
}

impl Association {
    /// An association of a listener on `port` serving `served`; `new_authenticator` makes
    /// the acceptor of a bind that asks for authentication.
    pub fn new(
        served: Vec<SyntaxId>,
        port: u16,
        assoc_group_id: u32,
        new_authenticator: Box<dyn FnMut() -> Box<dyn Authenticator> + Send>,
    ) -> Self {
        Self {
            served,
            new_authenticator,
            bound: false,
            contexts: Contexts::new(MAX_CONTEXTS),
            auth: Auth::None,
            call: None,
            max_frag: MAX_FRAGMENT_LEN,
            assoc_group_id: assoc_group_id | 1,
            rpc_vers_minor: 0,
            port,
        }
    }

    /// The negotiated fragment size: the listener reads no PDU longer than this.
    pub fn max_fragment(&self) -> u16 {
        self.max_frag
    }

    /// Whether a user has proven who they are on this association (the auth3 leg succeeded).
    pub fn authenticated(&self) -> bool {
        matches!(self.auth, Auth::Established { .. })
    }

    /// Handles one whole PDU (`pdu_length` bytes).
    pub fn handle(&mut self, pdu: &[u8]) -> Outcome {
        let Ok(header) = Header::decode(pdu) else {
            return Outcome::Close(Vec::new());
        };
        if header.rpc_vers != pdu::RPC_VERSION
            || header.rpc_vers_minor > 1
            || !header.is_little_endian()
            || usize::from(header.frag_length) != pdu.len()
        {
            return self.protocol_error(header.call_id);
        }
        match (self.bound, header.packet_type) {
            (false, PacketType::BIND) => self.bind(&header, pdu),
            (false, _) => self.protocol_error(header.call_id),
            (true, PacketType::BIND) => self.nak(nak_reason::NOT_SPECIFIED, &header),
            (true, PacketType::AUTH3) => self.auth3(&header, pdu),
            (true, PacketType::ALTER_CONTEXT) => self.alter_context(&header, pdu),
            (true, PacketType::REQUEST) => self.request(&header, pdu),
            (true, PacketType::CO_CANCEL | PacketType::ORPHANED) => Outcome::Nothing,
            (true, _) => self.protocol_error(header.call_id),
        }
    }

    fn bind(&mut self, header: &Header, pdu: &[u8]) -> Outcome {
        self.rpc_vers_minor = header.rpc_vers_minor;
        let Ok(bind) = Bind::decode(header, pdu) else {
            return self.nak(nak_reason::NOT_SPECIFIED, header);
        };
        if bind.contexts.is_empty() || bind.contexts.iter().any(|c| c.transfer_syntaxes.is_empty())
        {
            return self.nak(nak_reason::NOT_SPECIFIED, header);
        }
        let mut auth_token = None;
        if header.auth_length != 0 {
            let Ok((trailer, token)) = AuthTrailer::decode(bind.auth_verifier) else {
                return self.nak(nak_reason::NOT_SPECIFIED, header);
            };
            // Only NTLMSSP at integrity or privacy: connect level would leave the calls
            // unprotected, and no other package is offered.
            if trailer.auth_type != AUTH_TYPE_NTLMSSP
                || !matches!(
                    trailer.auth_level,
                    AUTH_LEVEL_INTEGRITY | AUTH_LEVEL_PRIVACY
                )
            {
                return self.nak(nak_reason::AUTHENTICATION_TYPE_NOT_RECOGNIZED, header);
            }
            let mut acceptor = (self.new_authenticator)();
            let Some(challenge) = acceptor.challenge(token) else {
                return self.nak(nak_reason::AUTHENTICATION_TYPE_NOT_RECOGNIZED, header);
            };
            self.auth = Auth::Challenged {
                level: trailer.auth_level,
                context_id: trailer.context_id,
                acceptor,
            };
            auth_token = Some((trailer, challenge));
        }
        let Ok(results) = self.contexts.present(&self.served, &bind.contexts, true) else {
            return self.nak(nak_reason::NOT_SPECIFIED, header);
        };
        self.max_frag = bind
            .max_xmit_frag
            .min(bind.max_recv_frag)
            .clamp(MIN_FRAGMENT_LEN, MAX_FRAGMENT_LEN);
        self.bound = true;
        let ack = BindAck {
            max_xmit_frag: self.max_frag,
            max_recv_frag: self.max_frag,
            assoc_group_id: self.assoc_group_id,
            secondary_address: self.port.to_string(),
            results,
        };
        let mut out = ack.to_pdu(PacketType::BIND_ACK, self.rpc_vers_minor, header.call_id);
        if let Some((trailer, token)) = auth_token {
            append_verifier(&mut out, &trailer, &token);
        }
        Outcome::Send(out)
    }

    /// The third leg (MS-RPCE 3.3.1.5.2.1): no answer on success; a failed logon ends the
    /// association, since the client expects no reply to auth3 and would otherwise go on
    /// with an association nobody authenticated.
    fn auth3(&mut self, header: &Header, pdu: &[u8]) -> Outcome {
        let Auth::Challenged { .. } = self.auth else {
            return self.protocol_error(header.call_id);
        };
        let Auth::Challenged {
            level,
            context_id,
            mut acceptor,
        } = core::mem::replace(&mut self.auth, Auth::None)
        else {
            return self.protocol_error(header.call_id);
        };
        let verifier = pdu::split_auth(header, pdu).map(|(_, v)| v);
        let Ok(Ok((trailer, token))) = verifier.map(AuthTrailer::decode) else {
            return self.protocol_error(header.call_id);
        };
        if trailer.auth_type != AUTH_TYPE_NTLMSSP
            || trailer.auth_level != level
            || trailer.context_id != context_id
        {
            return self.protocol_error(header.call_id);
        }
        match acceptor.authenticate(token) {
            Some((user, security)) => {
                self.auth = Auth::Established {
                    level,
                    context_id,
                    user,
                    security,
                };
                Outcome::Nothing
            }
            None => Outcome::Close(Vec::new()),
        }
    }

    fn alter_context(&mut self, header: &Header, pdu: &[u8]) -> Outcome {
        let Ok(alter) = Bind::decode(header, pdu) else {
            return self.protocol_error(header.call_id);
        };
        // A new security context on an established association is not offered.
        if header.auth_length != 0
            || alter.contexts.is_empty()
            || alter
                .contexts
                .iter()
                .any(|c| c.transfer_syntaxes.is_empty())
        {
            return self.protocol_error(header.call_id);
        }
        let Ok(results) = self.contexts.present(&self.served, &alter.contexts, false) else {
            return self.protocol_error(header.call_id);
        };
        let ack = BindAck {
            max_xmit_frag: self.max_frag,
            max_recv_frag: self.max_frag,
            assoc_group_id: self.assoc_group_id,
            secondary_address: String::new(),
            results,
        };
        Outcome::Send(ack.to_pdu(
            PacketType::ALTER_CONTEXT_RESP,
            self.rpc_vers_minor,
            header.call_id,
        ))
    }

    /// A request fragment: its verifier checked and stub unsealed (MS-RPCE 3.3.1.5.2.2),
    /// then reassembled (C706 12.6.4.9).
    fn request(&mut self, header: &Header, pdu: &[u8]) -> Outcome {
        let mut buf = pdu.to_vec();
        let Some(stub_range) = self.unwrap_request(header, &mut buf) else {
            return self.fault_close(header.call_id, 0, fault_status::ACCESS_DENIED);
        };
        let Ok(req) = Request::decode(header, pdu) else {
            return self.protocol_error(header.call_id);
        };
        let stub = buf.get(stub_range).unwrap_or_default();
        let first = header.flags.contains(PfcFlags::FIRST_FRAG);
        let last = header.flags.contains(PfcFlags::LAST_FRAG);
        let mut call = match self.call.take() {
            None if !first => {
                return self.fault_close(header.call_id, 0, fault_status::NCA_S_PROTO_ERROR);
            }
            None => {
                if usize::try_from(req.alloc_hint).map_or(true, |h| h > MAX_REQUEST_LEN) {
                    return self.fault_close(
                        header.call_id,
                        req.context_id,
                        fault_status::ACCESS_DENIED,
                    );
                }
                PartialCall {
                    call_id: header.call_id,
                    context_id: req.context_id,
                    opnum: req.opnum,
                    stub: Vec::new(),
                    fragments: 0,
                }
            }
            Some(call) => {
                if header.call_id != call.call_id
                    || first
                    || req.context_id != call.context_id
                    || req.opnum != call.opnum
                {
                    return self.fault_close(
                        call.call_id,
                        call.context_id,
                        fault_status::NCA_S_PROTO_ERROR,
                    );
                }
                call
            }
        };
        if call.stub.len().saturating_add(stub.len()) > MAX_REQUEST_LEN
            || call.fragments >= MAX_REQUEST_FRAGMENTS
        {
            return self.fault_close(call.call_id, call.context_id, fault_status::ACCESS_DENIED);
        }
        call.stub.extend_from_slice(stub);
        call.fragments += 1;
        if !last {
            self.call = Some(call);
            return Outcome::Nothing;
        }
        let Some(interface) = self.contexts.interface(call.context_id) else {
            return Outcome::Send(self.fault_pdu(
                call.call_id,
                0,
                fault_status::NCA_S_UNKNOWN_IF,
                PfcFlags::SINGLE | PfcFlags::DID_NOT_EXECUTE,
            ));
        };
        let (user, auth_level) = match &self.auth {
            Auth::Established { level, user, .. } => (Some(user.clone()), *level),
            _ => (None, AUTH_LEVEL_NONE),
        };
        Outcome::Call(Call {
            call_id: call.call_id,
            context_id: call.context_id,
            interface,
            opnum: call.opnum,
            stub: call.stub,
            user,
            auth_level,
        })
    }

    /// The range of `pdu` holding the fragment's stub, checked and unsealed in place; None
    /// when the verifier is missing, wrong or does not match the security context.
    fn unwrap_request(&mut self, header: &Header, pdu: &mut [u8]) -> Option<Range<usize>> {
        let object = if header.flags.contains(PfcFlags::OBJECT_UUID) {
            16
        } else {
            0
        };
        let stub_start = pdu::REQUEST_HEADER_LEN + object;
        let Auth::Established {
            level,
            context_id,
            security,
            ..
        } = &mut self.auth
        else {
            // Without a security context a verifier is refused; with one, its absence is.
            return (header.auth_length == 0 && pdu.len() >= stub_start)
                .then_some(stub_start..pdu.len());
        };
        let (body, verifier) = pdu::split_auth(header, pdu).ok()?;
        let body_len = body.len();
        let (trailer, signature) = AuthTrailer::decode(verifier).ok()?;
        if trailer.auth_type != AUTH_TYPE_NTLMSSP
            || trailer.auth_level != *level
            || trailer.context_id != *context_id
            || signature.len() != SIGNATURE_LEN
        {
            return None;
        }
        let signature: [u8; SIGNATURE_LEN] = signature.try_into().ok()?;
        let stub_end = body_len.checked_sub(usize::from(trailer.pad_length))?;
        if stub_end < stub_start {
            return None;
        }
        let signed_len = body_len + pdu::AUTH_TRAILER_LEN;
        let sealed = if *level == AUTH_LEVEL_PRIVACY {
            stub_start..body_len
        } else {
            0..0
        };
        let signed = pdu.get_mut(..signed_len)?;
        security
            .unwrap(signed, sealed, &signature)
            .then_some(stub_start..stub_end)
    }

    /// The response to `call` with `stub`, in as many fragments as the negotiated size needs,
    /// each signed and sealed as the association's security asks.
    pub fn response(&mut self, call: &Call, stub: &[u8]) -> Vec<u8> {
        let overhead = match self.auth {
            Auth::Established { .. } => pdu::AUTH_TRAILER_LEN + SIGNATURE_LEN + AUTH_PAD_ALIGN,
            _ => 0,
        };
        // Keeps each fragment's stub a multiple of the pad alignment, so that only the last
        // one needs padding.
        let room = (usize::from(self.max_frag) - RESPONSE_HEADER_LEN - overhead) / AUTH_PAD_ALIGN
            * AUTH_PAD_ALIGN;
        let mut out = Vec::with_capacity(stub.len() + RESPONSE_HEADER_LEN + overhead);
        let chunks = stub.len().div_ceil(room).max(1);
        let mut offset = 0;
        for i in 0..chunks {
            let end = (offset + room).min(stub.len());
            let chunk = stub.get(offset..end).unwrap_or_default();
            let mut flags = PfcFlags::empty();
            if i == 0 {
                flags |= PfcFlags::FIRST_FRAG;
            }
            if i + 1 == chunks {
                flags |= PfcFlags::LAST_FRAG;
            }
            let left = u32::try_from(stub.len() - offset).unwrap_or(u32::MAX);
            let mut frag = Vec::with_capacity(RESPONSE_HEADER_LEN + chunk.len() + overhead);
            let mut header = Header::new(PacketType::RESPONSE, flags, call.call_id, 0);
            header.rpc_vers_minor = self.rpc_vers_minor;
            let mut w = Writer::new(&mut frag);
            header.encode(&mut w);
            Response::encode_fields(left, call.context_id, &mut w);
            frag.extend_from_slice(chunk);
            self.protect(&mut frag, RESPONSE_HEADER_LEN);
            out.extend_from_slice(&frag);
            offset = end;
        }
        out
    }

    /// Pads, signs and seals a PDU whose body from `stub_start` is its stub, and sets its
    /// lengths; without a security context only the lengths.
    fn protect(&mut self, pdu: &mut Vec<u8>, stub_start: usize) {
        if let Auth::Established {
            level,
            context_id,
            security,
            ..
        } = &mut self.auth
        {
            let stub_len = pdu.len() - stub_start;
            let pad = (AUTH_PAD_ALIGN - stub_len % AUTH_PAD_ALIGN) % AUTH_PAD_ALIGN;
            pdu.resize(pdu.len() + pad, 0);
            let body_len = pdu.len();
            AuthTrailer {
                auth_type: AUTH_TYPE_NTLMSSP,
                auth_level: *level,
                pad_length: u8::try_from(pad).unwrap_or(0),
                context_id: *context_id,
            }
            .encode(pdu);
            set_lengths(pdu, SIGNATURE_LEN);
            let sealed = if *level == AUTH_LEVEL_PRIVACY {
                stub_start..body_len
            } else {
                0..0
            };
            let signature = security.wrap(pdu, sealed);
            pdu.extend_from_slice(&signature);
        } else {
            set_lengths(pdu, 0);
        }
    }

    /// A fault answering `call` (the connection stays).
    pub fn fault(&mut self, call: &Call, status: u32) -> Vec<u8> {
        self.fault_pdu(call.call_id, call.context_id, status, PfcFlags::SINGLE)
    }

    fn fault_pdu(
        &mut self,
        call_id: u32,
        context_id: u16,
        status: u32,
        flags: PfcFlags,
    ) -> Vec<u8> {
        Fault {
            alloc_hint: Fault::ALLOC_HINT,
            context_id,
            cancel_count: 0,
            flags: 0,
            status,
        }
        .to_pdu(flags, self.rpc_vers_minor, call_id)
    }

    fn fault_close(&mut self, call_id: u32, context_id: u16, status: u32) -> Outcome {
        Outcome::Close(self.fault_pdu(call_id, context_id, status, PfcFlags::SINGLE))
    }

    fn nak(&mut self, why: u16, header: &Header) -> Outcome {
        Outcome::Close(pdu::bind_nak_pdu(
            why,
            header.rpc_vers_minor,
            header.call_id,
        ))
    }

    /// Before a bind: bind_nak; after: a nca_s_proto_error fault; either way the end.
    fn protocol_error(&mut self, call_id: u32) -> Outcome {
        if self.bound {
            self.fault_close(call_id, 0, fault_status::NCA_S_PROTO_ERROR)
        } else {
            Outcome::Close(pdu::bind_nak_pdu(
                nak_reason::PROTOCOL_VERSION_NOT_SUPPORTED,
                self.rpc_vers_minor,
                call_id,
            ))
        }
    }
}

/// Appends sec_trailer and `token` to a PDU built without them, padding its body to 4 bytes.
fn append_verifier(pdu: &mut Vec<u8>, trailer: &AuthTrailer, token: &[u8]) {
    let pad = (4 - pdu.len() % 4) % 4;
    pdu.resize(pdu.len() + pad, 0);
    AuthTrailer {
        pad_length: u8::try_from(pad).unwrap_or(0),
        ..*trailer
    }
    .encode(pdu);
    set_lengths(pdu, token.len());
    pdu.extend_from_slice(token);
}

/// Sets frag_length to what `pdu` will be once `auth_value_len` more bytes follow, and
/// auth_length.
fn set_lengths(pdu: &mut [u8], auth_value_len: usize) {
    let frag = u16::try_from(pdu.len() + auth_value_len)
        .unwrap_or(u16::MAX)
        .to_le_bytes();
    let auth = u16::try_from(auth_value_len).unwrap_or(0).to_le_bytes();
    if let Some(dst) = pdu.get_mut(8..12) {
        dst.copy_from_slice(&[frag[0], frag[1], auth[0], auth[1]]);
    }
}

#[cfg(test)]
mod tests;
