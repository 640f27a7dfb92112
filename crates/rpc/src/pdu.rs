//! Connection-oriented DCE/RPC PDUs (C706 chapter 12.6 with the extensions of MS-RPCE 2.2.2):
//! the common header and the bodies of bind, bind_ack, bind_nak, alter_context,
//! alter_context_resp, request, response and fault.

use smb3d_wire::{DecodeError, DecodeErrorKind, Guid, Reader, Writer};

/// The common header's length (C706 12.6.3.1).
pub const HEADER_LEN: usize = 16;
/// Request header length with its body fields, without an object UUID.
pub const REQUEST_HEADER_LEN: usize = 24;
/// Response header length with its body fields (C706 12.6.4.10).
pub const RESPONSE_HEADER_LEN: usize = 24;
/// A fault PDU's length without extended error data (C706 12.6.4.7).
pub const FAULT_LEN: usize = 32;
/// The only major version of the connection-oriented protocol (C706 12.6.3.1).
pub const RPC_VERSION: u8 = 5;
/// The auth_verifier's fixed part that precedes the credentials (C706 13.2.6.1).
pub const AUTH_TRAILER_LEN: usize = 8;

smb3d_wire::open_enum! {
    /// PTYPE (C706 12.6.3.1, MS-RPCE 2.2.2.1).
    pub struct PacketType(u8) {
        REQUEST = 0,
        PING = 1,
        RESPONSE = 2,
        FAULT = 3,
        WORKING = 4,
        NOCALL = 5,
        REJECT = 6,
        ACK = 7,
        CL_CANCEL = 8,
        FACK = 9,
        CANCEL_ACK = 10,
        BIND = 11,
        BIND_ACK = 12,
        BIND_NAK = 13,
        ALTER_CONTEXT = 14,
        ALTER_CONTEXT_RESP = 15,
        AUTH3 = 16,
        SHUTDOWN = 17,
        CO_CANCEL = 18,
        ORPHANED = 19,
    }
}

smb3d_wire::open_flags! {
    /// pfc_flags (C706 12.6.3.1, MS-RPCE 2.2.2.3).
    pub struct PfcFlags(u8) {
        FIRST_FRAG = 0x01,
        LAST_FRAG = 0x02,
        /// In requests; in bind and alter_context it is PFC_SUPPORT_HEADER_SIGN.
        PENDING_CANCEL = 0x04,
        RESERVED_1 = 0x08,
        CONC_MPX = 0x10,
        DID_NOT_EXECUTE = 0x20,
        MAYBE = 0x40,
        OBJECT_UUID = 0x80,
    }
}

impl PfcFlags {
    /// A PDU that is a whole message by itself.
    pub const SINGLE: PfcFlags = PfcFlags(0x03);
}

/// The common header of every connection-oriented PDU (C706 12.6.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Major protocol version, 5.
    pub rpc_vers: u8,
    /// Minor protocol version, 0 or 1.
    pub rpc_vers_minor: u8,
    /// PTYPE.
    pub packet_type: PacketType,
    /// pfc_flags.
    pub flags: PfcFlags,
    /// NDR data representation label; byte 0 bit 4 set means little-endian integers.
    pub drep: [u8; 4],
    /// The whole PDU's length, header included.
    pub frag_length: u16,
    /// Length of the credentials in the auth_verifier (0 without one).
    pub auth_length: u16,
    /// Pairs answers with calls.
    pub call_id: u32,
}

/// Little-endian integers, ASCII characters, IEEE floats: what every Windows peer sends and
/// the only representation this crate speaks.
pub const DREP_LITTLE_ENDIAN: [u8; 4] = [0x10, 0, 0, 0];

impl Header {
    /// A header for a PDU of `frag_length` bytes in little-endian representation.
    pub fn new(packet_type: PacketType, flags: PfcFlags, call_id: u32, frag_length: u16) -> Self {
        Self {
            rpc_vers: RPC_VERSION,
            rpc_vers_minor: 0,
            packet_type,
            flags,
            drep: DREP_LITTLE_ENDIAN,
            frag_length,
            auth_length: 0,
            call_id,
        }
    }

    /// Whether the peer's integers are little-endian.
    pub const fn is_little_endian(&self) -> bool {
        self.drep[0] & 0xf0 == 0x10
    }

    /// Reads the header at the start of `bytes`. The lengths and call id are read in the byte
    /// order the data representation label gives, so a big-endian PDU is still delimited
    /// correctly before it is refused.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let rpc_vers = r.u8("rpc_vers")?;
        let rpc_vers_minor = r.u8("rpc_vers_minor")?;
        let packet_type = PacketType(r.u8("PTYPE")?);
        let flags = PfcFlags(r.u8("pfc_flags")?);
        let drep = r.array::<4>("packed_drep")?;
        let little = drep[0] & 0xf0 == 0x10;
        let (frag_length, auth_length, call_id) = if little {
            (
                r.u16("frag_length")?,
                r.u16("auth_length")?,
                r.u32("call_id")?,
            )
        } else {
            (
                r.u16_be("frag_length")?,
                r.u16_be("auth_length")?,
                r.u32_be("call_id")?,
            )
        };
        Ok(Self {
            rpc_vers,
            rpc_vers_minor,
            packet_type,
            flags,
            drep,
            frag_length,
            auth_length,
            call_id,
        })
    }

    /// Writes the header (always in the representation `drep` names as little-endian).
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u8(self.rpc_vers)
            .u8(self.rpc_vers_minor)
            .u8(self.packet_type.0)
            .u8(self.flags.0)
            .bytes(&self.drep)
            .u16(self.frag_length)
            .u16(self.auth_length)
            .u32(self.call_id);
    }

    /// The header as bytes.
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut buf = Vec::with_capacity(HEADER_LEN);
        self.encode(&mut Writer::new(&mut buf));
        let mut out = [0u8; HEADER_LEN];
        out.copy_from_slice(buf.get(..HEADER_LEN).unwrap_or(&[0; HEADER_LEN]));
        out
    }
}

/// A presentation syntax: interface or transfer syntax UUID and version (C706 12.6.3.1
/// p_syntax_id_t; the version is major in the low 16 bits, minor in the high).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SyntaxId {
    /// Interface or transfer syntax UUID.
    pub uuid: Guid,
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
}

/// Builds a GUID from the fields of its string form.
pub(crate) const fn guid(d1: u32, d2: u16, d3: u16, d4: [u8; 8]) -> Guid {
    let a = d1.to_le_bytes();
    let b = d2.to_le_bytes();
    let c = d3.to_le_bytes();
    Guid([
        a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], d4[0], d4[1], d4[2], d4[3], d4[4], d4[5],
        d4[6], d4[7],
    ])
}

impl SyntaxId {
    /// The wire size.
    pub const LEN: usize = 20;

    /// NDR 2.0, 8a885d04-1ceb-11c9-9fe8-08002b104860 v2.0 (C706 appendix I).
    pub const NDR: SyntaxId = SyntaxId {
        uuid: guid(
            0x8a88_5d04,
            0x1ceb,
            0x11c9,
            [0x9f, 0xe8, 0x08, 0x00, 0x2b, 0x10, 0x48, 0x60],
        ),
        major: 2,
        minor: 0,
    };

    /// NDR64, 71710533-beba-4937-8319-b5dbef9ccc36 v1.0 (MS-RPCE 2.2.5.1).
    pub const NDR64: SyntaxId = SyntaxId {
        uuid: guid(
            0x7171_0533,
            0xbeba,
            0x4937,
            [0x83, 0x19, 0xb5, 0xdb, 0xef, 0x9c, 0xcc, 0x36],
        ),
        major: 1,
        minor: 0,
    };

    /// The all-zero syntax a server puts in rejected and negotiate_ack results.
    pub const NULL: SyntaxId = SyntaxId {
        uuid: Guid::ZERO,
        major: 0,
        minor: 0,
    };

    /// The UUID prefix 6CB71C2C-9812-4540 that marks bind time feature negotiation
    /// (MS-RPCE 3.3.1.5.3), as the first eight bytes appear on the wire.
    const BIND_TIME_FEATURE_PREFIX: [u8; 8] = [0x2c, 0x1c, 0xb7, 0x6c, 0x12, 0x98, 0x40, 0x45];

    /// The bind time feature negotiation syntax for `features` (MS-RPCE 2.2.2.14).
    pub fn bind_time_features(features: u64) -> SyntaxId {
        let mut uuid = [0u8; 16];
        let (prefix, bitmask) = uuid.split_at_mut(8);
        prefix.copy_from_slice(&Self::BIND_TIME_FEATURE_PREFIX);
        bitmask.copy_from_slice(&features.to_le_bytes());
        SyntaxId {
            uuid: Guid(uuid),
            major: 1,
            minor: 0,
        }
    }

    /// The BindTimeFeatureNegotiationBitmask if this is a feature negotiation syntax (prefix
    /// and version 1.0, MS-RPCE 3.3.1.5.3).
    pub fn feature_bits(&self) -> Option<u64> {
        let (prefix, bitmask) = self.uuid.0.split_at(8);
        if prefix != Self::BIND_TIME_FEATURE_PREFIX || self.major != 1 || self.minor != 0 {
            return None;
        }
        let mut bits = [0u8; 8];
        bits.copy_from_slice(bitmask);
        Some(u64::from_le_bytes(bits))
    }

    /// Reads a p_syntax_id_t.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            uuid: r.guid("if_uuid")?,
            major: r.u16("if_version")?,
            minor: r.u16("if_version")?,
        })
    }

    /// Writes a p_syntax_id_t.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.guid(&self.uuid).u16(self.major).u16(self.minor);
    }
}

/// One presentation context a client proposes (p_cont_elem_t).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextElement {
    /// p_cont_id, chosen by the client.
    pub context_id: u16,
    /// The interface.
    pub abstract_syntax: SyntaxId,
    /// Proposed transfer syntaxes, in the client's order of preference.
    pub transfer_syntaxes: Vec<SyntaxId>,
}

/// The body of a bind or alter_context PDU (C706 12.6.4.3, 12.6.4.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind<'a> {
    /// Largest fragment the client will send.
    pub max_xmit_frag: u16,
    /// Largest fragment the client will take.
    pub max_recv_frag: u16,
    /// Association group to join, 0 for a new one.
    pub assoc_group_id: u32,
    /// Proposed presentation contexts.
    pub contexts: Vec<ContextElement>,
    /// The auth_verifier (trailer and credentials), empty when auth_length is 0.
    pub auth_verifier: &'a [u8],
}

impl<'a> Bind<'a> {
    /// Decodes the body of a bind or alter_context PDU; `pdu` is the whole PDU.
    pub fn decode(header: &Header, pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let (body, auth_verifier) = split_auth(header, pdu)?;
        let mut r = Reader::new(body);
        r.skip(HEADER_LEN, "header")?;
        let max_xmit_frag = r.u16("max_xmit_frag")?;
        let max_recv_frag = r.u16("max_recv_frag")?;
        let assoc_group_id = r.u32("assoc_group_id")?;
        let count = r.u8("n_context_elem")?;
        r.skip(3, "reserved")?;
        // Each element takes at least 24 bytes, so the count is checked against what is left
        // before anything is allocated.
        let min_len = usize::from(count) * (4 + SyntaxId::LEN);
        if min_len > r.remaining() {
            return Err(DecodeError::truncated("p_cont_elem"));
        }
        let mut contexts = Vec::with_capacity(usize::from(count));
        for _ in 0..count {
            let context_id = r.u16("p_cont_id")?;
            let n_transfer = r.u8("n_transfer_syn")?;
            r.skip(1, "reserved")?;
            let abstract_syntax = SyntaxId::decode(&mut r)?;
            if usize::from(n_transfer) * SyntaxId::LEN > r.remaining() {
                return Err(DecodeError::truncated("transfer_syntaxes"));
            }
            let mut transfer_syntaxes = Vec::with_capacity(usize::from(n_transfer));
            for _ in 0..n_transfer {
                transfer_syntaxes.push(SyntaxId::decode(&mut r)?);
            }
            contexts.push(ContextElement {
                context_id,
                abstract_syntax,
                transfer_syntaxes,
            });
        }
        Ok(Self {
            max_xmit_frag,
            max_recv_frag,
            assoc_group_id,
            contexts,
            auth_verifier,
        })
    }

    /// A whole bind (or alter_context, by `packet_type`) PDU without authentication.
    pub fn to_pdu(&self, packet_type: PacketType, flags: PfcFlags, call_id: u32) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        w.zeros(HEADER_LEN);
        w.u16(self.max_xmit_frag)
            .u16(self.max_recv_frag)
            .u32(self.assoc_group_id)
            .u8(u8::try_from(self.contexts.len()).unwrap_or(u8::MAX))
            .zeros(3);
        for c in self.contexts.iter().take(usize::from(u8::MAX)) {
            w.u16(c.context_id)
                .u8(u8::try_from(c.transfer_syntaxes.len()).unwrap_or(u8::MAX))
                .u8(0);
            c.abstract_syntax.encode(&mut w);
            for t in c.transfer_syntaxes.iter().take(usize::from(u8::MAX)) {
                t.encode(&mut w);
            }
        }
        finish_pdu(buf, packet_type, flags, call_id)
    }
}

/// One result of a bind_ack or alter_context_resp (p_result_t).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextResult {
    /// A [`result`] value.
    pub result: u16,
    /// A [`reason`] value, or the negotiated features for negotiate_ack.
    pub reason: u16,
    /// The accepted transfer syntax, zero otherwise.
    pub transfer_syntax: SyntaxId,
}

/// p_cont_def_result_t values (C706 12.6.3.1, MS-RPCE 2.2.2.4 adds negotiate_ack).
pub mod result {
    /// The context is accepted.
    pub const ACCEPTANCE: u16 = 0;
    /// Refused by the server application.
    pub const USER_REJECTION: u16 = 1;
    /// Refused by the RPC runtime.
    pub const PROVIDER_REJECTION: u16 = 2;
    /// Answer to bind time feature negotiation (MS-RPCE).
    pub const NEGOTIATE_ACK: u16 = 3;
}

/// p_provider_reason_t values (C706 12.6.3.1).
pub mod reason {
    /// No reason given.
    pub const NOT_SPECIFIED: u16 = 0;
    /// The interface is not served here.
    pub const ABSTRACT_SYNTAX_NOT_SUPPORTED: u16 = 1;
    /// None of the transfer syntaxes is supported.
    pub const PROPOSED_TRANSFER_SYNTAXES_NOT_SUPPORTED: u16 = 2;
    /// A server limit was reached.
    pub const LOCAL_LIMIT_EXCEEDED: u16 = 3;
}

/// The body of a bind_ack or alter_context_resp (C706 12.6.4.4, 12.6.4.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindAck {
    /// Largest fragment the server will send.
    pub max_xmit_frag: u16,
    /// Largest fragment the server will take.
    pub max_recv_frag: u16,
    /// The association group the connection is in.
    pub assoc_group_id: u32,
    /// The secondary address (the pipe's name, e.g. `\PIPE\srvsvc`), without terminator;
    /// empty in alter_context_resp.
    pub secondary_address: String,
    /// One result per proposed context, in order.
    pub results: Vec<ContextResult>,
}

impl BindAck {
    /// A whole bind_ack or alter_context_resp PDU.
    pub fn to_pdu(&self, packet_type: PacketType, rpc_vers_minor: u8, call_id: u32) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        w.zeros(HEADER_LEN);
        w.u16(self.max_xmit_frag)
            .u16(self.max_recv_frag)
            .u32(self.assoc_group_id);
        // port_any_t: the length counts the terminating NUL; an empty address has length 0.
        if self.secondary_address.is_empty() {
            w.u16(0);
        } else {
            let len = self.secondary_address.len().saturating_add(1);
            w.u16(u16::try_from(len).unwrap_or(u16::MAX))
                .bytes(self.secondary_address.as_bytes())
                .u8(0);
        }
        w.align(4);
        w.u8(u8::try_from(self.results.len()).unwrap_or(u8::MAX))
            .zeros(3);
        for res in self.results.iter().take(usize::from(u8::MAX)) {
            w.u16(res.result).u16(res.reason);
            res.transfer_syntax.encode(&mut w);
        }
        let mut pdu = finish_pdu(buf, packet_type, PfcFlags::SINGLE, call_id);
        set_minor(&mut pdu, rpc_vers_minor);
        pdu
    }

    /// Decodes a bind_ack or alter_context_resp (what a client reads; used by tests and fuzzing).
    pub fn decode(header: &Header, pdu: &[u8]) -> Result<Self, DecodeError> {
        let (body, _) = split_auth(header, pdu)?;
        let mut r = Reader::new(body);
        r.skip(HEADER_LEN, "header")?;
        let max_xmit_frag = r.u16("max_xmit_frag")?;
        let max_recv_frag = r.u16("max_recv_frag")?;
        let assoc_group_id = r.u32("assoc_group_id")?;
        let len = usize::from(r.u16("sec_addr.length")?);
        let addr = r.bytes(len, "sec_addr.port_spec")?;
        let addr = addr.strip_suffix(&[0]).unwrap_or(addr);
        let secondary_address = core::str::from_utf8(addr)
            .map_err(|_| DecodeError::invalid("sec_addr.port_spec"))?
            .to_owned();
        let pad = r.pos().wrapping_neg() & 3;
        r.skip(pad, "pad")?;
        let count = r.u8("n_results")?;
        r.skip(3, "reserved")?;
        if usize::from(count) * (4 + SyntaxId::LEN) > r.remaining() {
            return Err(DecodeError::truncated("p_results"));
        }
        let mut results = Vec::with_capacity(usize::from(count));
        for _ in 0..count {
            results.push(ContextResult {
                result: r.u16("result")?,
                reason: r.u16("reason")?,
                transfer_syntax: SyntaxId::decode(&mut r)?,
            });
        }
        Ok(Self {
            max_xmit_frag,
            max_recv_frag,
            assoc_group_id,
            secondary_address,
            results,
        })
    }
}

/// provider_reject_reason values of bind_nak (C706 12.6.3.1, MS-RPCE 2.2.2.5).
pub mod nak_reason {
    /// No reason given.
    pub const NOT_SPECIFIED: u16 = 0;
    /// The server is too busy.
    pub const TEMPORARY_CONGESTION: u16 = 1;
    /// A server limit was reached.
    pub const LOCAL_LIMIT_EXCEEDED: u16 = 2;
    /// The PDU is not a bind the server can take (also its answer to other PDUs first).
    pub const PROTOCOL_VERSION_NOT_SUPPORTED: u16 = 4;
    /// The auth_verifier asks for security the server does not do.
    pub const AUTHENTICATION_TYPE_NOT_RECOGNIZED: u16 = 8;
}

/// A whole bind_nak PDU (C706 12.6.4.5): the reason and the one protocol version supported,
/// 5 with the client's minor version, padded to 4 bytes as Windows does.
pub fn bind_nak_pdu(reason: u16, rpc_vers_minor: u8, call_id: u32) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut w = Writer::new(&mut buf);
    w.zeros(HEADER_LEN);
    w.u16(reason)
        .u8(1)
        .u8(RPC_VERSION)
        .u8(rpc_vers_minor)
        .zeros(3);
    let mut pdu = finish_pdu(buf, PacketType::BIND_NAK, PfcFlags::SINGLE, call_id);
    set_minor(&mut pdu, rpc_vers_minor);
    pdu
}

/// The body of a request PDU (C706 12.6.4.9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// The client's hint of the whole stub's size.
    pub alloc_hint: u32,
    /// The presentation context the call uses.
    pub context_id: u16,
    /// The operation.
    pub opnum: u16,
    /// Present when PFC_OBJECT_UUID is set.
    pub object: Option<Guid>,
    /// This fragment's part of the stub.
    pub stub: &'a [u8],
    /// The auth_verifier, empty when auth_length is 0.
    pub auth_verifier: &'a [u8],
}

impl<'a> Request<'a> {
    /// Decodes the body of a request; `pdu` is the whole PDU.
    pub fn decode(header: &Header, pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let (body, auth_verifier) = split_auth(header, pdu)?;
        let mut r = Reader::new(body);
        r.skip(HEADER_LEN, "header")?;
        let alloc_hint = r.u32("alloc_hint")?;
        let context_id = r.u16("p_cont_id")?;
        let opnum = r.u16("opnum")?;
        let object = if header.flags.contains(PfcFlags::OBJECT_UUID) {
            Some(r.guid("object")?)
        } else {
            None
        };
        Ok(Self {
            alloc_hint,
            context_id,
            opnum,
            object,
            stub: r.rest(),
            auth_verifier,
        })
    }

    /// A whole unauthenticated request PDU (for clients: tests and fuzz seeds).
    pub fn to_pdu(&self, flags: PfcFlags, call_id: u32) -> Vec<u8> {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        w.zeros(HEADER_LEN);
        w.u32(self.alloc_hint).u16(self.context_id).u16(self.opnum);
        let flags = match &self.object {
            Some(object) => {
                w.guid(object);
                flags | PfcFlags::OBJECT_UUID
            }
            None => flags.without(PfcFlags::OBJECT_UUID),
        };
        w.bytes(self.stub);
        finish_pdu(buf, PacketType::REQUEST, flags, call_id)
    }
}

/// The body of a response PDU (C706 12.6.4.10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response<'a> {
    /// The stub bytes from this fragment on.
    pub alloc_hint: u32,
    /// The request's presentation context.
    pub context_id: u16,
    /// Cancels the server received for the call.
    pub cancel_count: u8,
    /// This fragment's part of the stub.
    pub stub: &'a [u8],
}

impl<'a> Response<'a> {
    /// Decodes the body of a response; `pdu` is the whole PDU.
    pub fn decode(header: &Header, pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let (body, _) = split_auth(header, pdu)?;
        let mut r = Reader::new(body);
        r.skip(HEADER_LEN, "header")?;
        let alloc_hint = r.u32("alloc_hint")?;
        let context_id = r.u16("p_cont_id")?;
        let cancel_count = r.u8("cancel_count")?;
        r.skip(1, "reserved")?;
        Ok(Self {
            alloc_hint,
            context_id,
            cancel_count,
            stub: r.rest(),
        })
    }

    /// Writes the response header fields (after the common header) into `w`.
    pub fn encode_fields(alloc_hint: u32, context_id: u16, w: &mut Writer<'_>) {
        w.u32(alloc_hint).u16(context_id).u8(0).u8(0);
    }
}

/// The body of a fault PDU (C706 12.6.4.7, MS-RPCE 2.2.2.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// Size hint of the fault's body.
    pub alloc_hint: u32,
    /// The request's presentation context, or 0.
    pub context_id: u16,
    /// Cancels the server received for the call.
    pub cancel_count: u8,
    /// MS-RPCE: bit 0 says extended error information follows.
    pub flags: u8,
    /// Why the call failed (an nca_s_* or Windows error code).
    pub status: u32,
}

impl Fault {
    /// The alloc_hint Samba puts in a fault without extended error data.
    pub const ALLOC_HINT: u32 = 24;

    /// A whole fault PDU.
    pub fn to_pdu(&self, flags: PfcFlags, rpc_vers_minor: u8, call_id: u32) -> Vec<u8> {
        let mut buf = Vec::with_capacity(FAULT_LEN);
        let mut w = Writer::new(&mut buf);
        w.zeros(HEADER_LEN);
        w.u32(self.alloc_hint)
            .u16(self.context_id)
            .u8(self.cancel_count)
            .u8(self.flags)
            .u32(self.status)
            .u32(0);
        let mut pdu = finish_pdu(buf, PacketType::FAULT, flags, call_id);
        set_minor(&mut pdu, rpc_vers_minor);
        pdu
    }

    /// Decodes the body of a fault; `pdu` is the whole PDU.
    pub fn decode(header: &Header, pdu: &[u8]) -> Result<Self, DecodeError> {
        let (body, _) = split_auth(header, pdu)?;
        let mut r = Reader::new(body);
        r.skip(HEADER_LEN, "header")?;
        let fault = Self {
            alloc_hint: r.u32("alloc_hint")?,
            context_id: r.u16("p_cont_id")?,
            cancel_count: r.u8("cancel_count")?,
            flags: r.u8("flags")?,
            status: r.u32("status")?,
        };
        r.skip(4, "reserved")?;
        Ok(fault)
    }
}

/// Splits a PDU into the part before the auth_verifier and the auth_verifier (trailer and
/// credentials). The header's frag_length must equal the PDU's length.
pub fn split_auth<'a>(header: &Header, pdu: &'a [u8]) -> Result<(&'a [u8], &'a [u8]), DecodeError> {
    if usize::from(header.frag_length) != pdu.len() {
        return Err(DecodeError::new(
            "frag_length",
            DecodeErrorKind::BadSize {
                expected: u32::try_from(pdu.len()).unwrap_or(u32::MAX),
                got: u32::from(header.frag_length),
            },
        ));
    }
    if header.auth_length == 0 {
        return Ok((pdu, &[]));
    }
    let verifier_len = usize::from(header.auth_length) + AUTH_TRAILER_LEN;
    let split = pdu
        .len()
        .checked_sub(verifier_len)
        .filter(|s| *s >= HEADER_LEN)
        .ok_or(DecodeError::new(
            "auth_length",
            DecodeErrorKind::OutOfBounds,
        ))?;
    Ok(pdu.split_at(split))
}

/// Writes the common header over the first 16 bytes of `buf` (a little-endian PDU).
fn finish_pdu(mut buf: Vec<u8>, packet_type: PacketType, flags: PfcFlags, call_id: u32) -> Vec<u8> {
    let len = u16::try_from(buf.len()).unwrap_or(u16::MAX);
    let header = Header::new(packet_type, flags, call_id, len).to_bytes();
    if let Some(dst) = buf.get_mut(..HEADER_LEN) {
        dst.copy_from_slice(&header);
    }
    buf
}

/// Sets rpc_vers_minor in a finished PDU.
fn set_minor(pdu: &mut [u8], rpc_vers_minor: u8) {
    if let Some(b) = pdu.get_mut(1) {
        *b = rpc_vers_minor;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The bind rpcclient 4.17 sent for srvsvc (tests/captures/samba-rpcclient.txt).
    const RPCCLIENT_BIND: &str = "05000b03100000004800000001000000b810b81000000000010000000000\
        0100c84f324b7016d30112785a47bf6ee18803000000045d888aeb1cc9119fe808002b10486002000000";

    /// Samba 4.17's answer to it, with its assoc_group_id.
    const SAMBA_BIND_ACK: &str = "05000c03100000004400000001000000b810b810400000000d005c706970\
        655c73727673766300000100000000000000045d888aeb1cc9119fe808002b10486002000000";

    #[test]
    fn bind_decodes_and_reencodes() {
        let pdu = unhex(RPCCLIENT_BIND);
        let h = Header::decode(&pdu).unwrap();
        assert_eq!(h.packet_type, PacketType::BIND);
        assert_eq!(h.flags, PfcFlags::SINGLE);
        assert_eq!(h.frag_length, 72);
        let bind = Bind::decode(&h, &pdu).unwrap();
        assert_eq!((bind.max_xmit_frag, bind.max_recv_frag), (4280, 4280));
        assert_eq!(bind.contexts.len(), 1);
        let ctx = &bind.contexts[0];
        assert_eq!(
            ctx.abstract_syntax.uuid.to_string(),
            "4b324fc8-1670-01d3-1278-5a47bf6ee188"
        );
        assert_eq!(
            (ctx.abstract_syntax.major, ctx.abstract_syntax.minor),
            (3, 0)
        );
        assert_eq!(ctx.transfer_syntaxes, vec![SyntaxId::NDR]);
        assert_eq!(bind.to_pdu(PacketType::BIND, PfcFlags::SINGLE, 1), pdu);
    }

    #[test]
    fn bind_ack_matches_samba() {
        let ack = BindAck {
            max_xmit_frag: 4280,
            max_recv_frag: 4280,
            assoc_group_id: 0x40,
            secondary_address: "\\pipe\\srvsvc".into(),
            results: vec![ContextResult {
                result: result::ACCEPTANCE,
                reason: reason::NOT_SPECIFIED,
                transfer_syntax: SyntaxId::NDR,
            }],
        };
        let pdu = ack.to_pdu(PacketType::BIND_ACK, 0, 1);
        assert_eq!(pdu, unhex(SAMBA_BIND_ACK));
        let h = Header::decode(&pdu).unwrap();
        assert_eq!(BindAck::decode(&h, &pdu).unwrap(), ack);
    }

    #[test]
    fn alter_context_resp_has_empty_address() {
        // Samba 4.17's alter_context_resp to an alter proposing NDR, NDR64 and feature
        // negotiation (tests/captures/samba-probes.txt, "alter"): empty address, 2 bytes of
        // padding, and negotiation is not honoured outside bind.
        let ack = BindAck {
            max_xmit_frag: 4280,
            max_recv_frag: 4280,
            assoc_group_id: 0x4e14,
            secondary_address: String::new(),
            results: vec![
                ContextResult {
                    result: result::ACCEPTANCE,
                    reason: 0,
                    transfer_syntax: SyntaxId::NDR,
                },
                ContextResult {
                    result: result::PROVIDER_REJECTION,
                    reason: reason::PROPOSED_TRANSFER_SYNTAXES_NOT_SUPPORTED,
                    transfer_syntax: SyntaxId::NULL,
                },
                ContextResult {
                    result: result::PROVIDER_REJECTION,
                    reason: reason::PROPOSED_TRANSFER_SYNTAXES_NOT_SUPPORTED,
                    transfer_syntax: SyntaxId::NULL,
                },
            ],
        };
        let expected = "05000f03100000006800000002000000b810b810144e00000000000003000000\
            00000000045d888aeb1cc9119fe808002b1048600200000002000200000000000000000000000000\
            0000000000000000020002000000000000000000000000000000000000000000";
        assert_eq!(
            ack.to_pdu(PacketType::ALTER_CONTEXT_RESP, 0, 2),
            unhex(expected)
        );
    }

    #[test]
    fn bind_nak_and_fault_match_samba() {
        // Samba 4.17's answers to a request before any bind and to an unknown context id.
        assert_eq!(
            bind_nak_pdu(nak_reason::PROTOCOL_VERSION_NOT_SUPPORTED, 0, 1),
            unhex("05000d031000000018000000010000000400010500000000")
        );
        let fault = Fault {
            alloc_hint: Fault::ALLOC_HINT,
            context_id: 0,
            cancel_count: 0,
            flags: 0,
            status: 0x1c01_0003,
        };
        let pdu = fault.to_pdu(PfcFlags::SINGLE | PfcFlags::DID_NOT_EXECUTE, 0, 2);
        assert_eq!(
            pdu,
            unhex("0500032310000000200000000200000018000000000000000300011c00000000")
        );
        assert_eq!(
            Fault::decode(&Header::decode(&pdu).unwrap(), &pdu).unwrap(),
            fault
        );
    }

    #[test]
    fn request_with_object_uuid_round_trips() {
        let req = Request {
            alloc_hint: 4,
            context_id: 1,
            opnum: 21,
            object: Some(Guid([7; 16])),
            stub: &[1, 2, 3, 4],
            auth_verifier: &[],
        };
        let pdu = req.to_pdu(PfcFlags::SINGLE, 9);
        let h = Header::decode(&pdu).unwrap();
        assert!(h.flags.contains(PfcFlags::OBJECT_UUID));
        assert_eq!(Request::decode(&h, &pdu).unwrap(), req);
    }

    #[test]
    fn big_endian_header_is_delimited() {
        let pdu = [5, 0, 0, 3, 0, 0, 0, 0, 0, 24, 0, 0, 0, 0, 0, 7];
        let h = Header::decode(&pdu).unwrap();
        assert!(!h.is_little_endian());
        assert_eq!(h.frag_length, 24);
        assert_eq!(h.call_id, 7);
    }

    #[test]
    fn auth_length_beyond_the_pdu_is_refused() {
        let mut pdu = unhex(RPCCLIENT_BIND);
        pdu[10] = 0x40;
        let h = Header::decode(&pdu).unwrap();
        assert_eq!(
            Bind::decode(&h, &pdu).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
    }

    #[test]
    fn context_counts_are_checked_against_the_bytes() {
        let mut pdu = unhex(RPCCLIENT_BIND);
        pdu[24] = 200;
        let h = Header::decode(&pdu).unwrap();
        assert!(Bind::decode(&h, &pdu).is_err());
        let mut pdu = unhex(RPCCLIENT_BIND);
        pdu[30] = 200;
        assert!(Bind::decode(&h, &pdu).is_err());
    }

    #[test]
    fn feature_negotiation_syntax() {
        let s = SyntaxId::bind_time_features(3);
        assert_eq!(s.uuid.to_string(), "6cb71c2c-9812-4540-0300-000000000000");
        assert_eq!(s.feature_bits(), Some(3));
        assert_eq!(SyntaxId::NDR.feature_bits(), None);
        let mut v2 = s;
        v2.major = 2;
        assert_eq!(v2.feature_bits(), None);
    }
}
