//! NEGOTIATE (MS-SMB2 2.2.3, 2.2.4) and the 3.1.1 negotiate contexts (2.2.3.1, 2.2.4.1).

use smb3d_wire::{DecodeError, DecodeErrorKind, FileTime, Guid, Reader, Writer};

use crate::header::SMB2_HEADER_LEN;
use crate::util::{body, le16, len16, len32, to_usize};

smb3d_wire::open_enum! {
    /// Dialect revision numbers (MS-SMB2 2.2.3, 2.2.4).
    pub struct Dialect(u16) {
        SMB2_0_2 = 0x0202,
        SMB2_1 = 0x0210,
        SMB3_0 = 0x0300,
        SMB3_0_2 = 0x0302,
        SMB3_1_1 = 0x0311,
        /// "SMB 2.???": the answer to an SMB1 negotiate that offers SMB2 beyond 2.0.2.
        SMB2_WILDCARD = 0x02FF,
    }
}

impl Dialect {
    /// Whether this is one of the SMB 3.x dialects.
    pub const fn is_smb3(self) -> bool {
        matches!(self.0, 0x0300 | 0x0302 | 0x0311)
    }
}

smb3d_wire::open_flags! {
    /// SecurityMode (MS-SMB2 2.2.3, 2.2.4, 2.2.5; one byte in SESSION_SETUP).
    pub struct SecurityMode(u16) {
        SIGNING_ENABLED = 0x0001,
        SIGNING_REQUIRED = 0x0002,
    }
}

smb3d_wire::open_flags! {
    /// Global capabilities (MS-SMB2 2.2.3, 2.2.4).
    pub struct Capabilities(u32) {
        DFS = 0x0000_0001,
        LEASING = 0x0000_0002,
        LARGE_MTU = 0x0000_0004,
        MULTI_CHANNEL = 0x0000_0008,
        PERSISTENT_HANDLES = 0x0000_0010,
        DIRECTORY_LEASING = 0x0000_0020,
        ENCRYPTION = 0x0000_0040,
        NOTIFICATIONS = 0x0000_0080,
    }
}

smb3d_wire::open_enum! {
    /// Negotiate context types (MS-SMB2 2.2.3.1).
    pub struct NegotiateContextType(u16) {
        PREAUTH_INTEGRITY_CAPABILITIES = 0x0001,
        ENCRYPTION_CAPABILITIES = 0x0002,
        COMPRESSION_CAPABILITIES = 0x0003,
        NETNAME_NEGOTIATE_CONTEXT_ID = 0x0005,
        TRANSPORT_CAPABILITIES = 0x0006,
        RDMA_TRANSFORM_CAPABILITIES = 0x0007,
        SIGNING_CAPABILITIES = 0x0008,
        CONTEXTTYPE_RESERVED = 0x0100,
    }
}

smb3d_wire::open_enum! {
    /// Preauthentication integrity hash algorithms (MS-SMB2 2.2.3.1.1).
    pub struct HashAlgorithm(u16) {
        SHA512 = 0x0001,
    }
}

smb3d_wire::open_enum! {
    /// Encryption ciphers (MS-SMB2 2.2.3.1.2).
    pub struct Cipher(u16) {
        AES128_CCM = 0x0001,
        AES128_GCM = 0x0002,
        AES256_CCM = 0x0003,
        AES256_GCM = 0x0004,
    }
}

smb3d_wire::open_enum! {
    /// Compression algorithms (MS-SMB2 2.2.3.1.3).
    pub struct CompressionAlgorithm(u16) {
        NONE = 0x0000,
        LZNT1 = 0x0001,
        LZ77 = 0x0002,
        LZ77_HUFFMAN = 0x0003,
        PATTERN_V1 = 0x0004,
        LZ4 = 0x0005,
    }
}

smb3d_wire::open_flags! {
    /// COMPRESSION_CAPABILITIES Flags (MS-SMB2 2.2.3.1.3).
    pub struct CompressionCapabilityFlags(u32) {
        CHAINED = 0x0000_0001,
    }
}

smb3d_wire::open_flags! {
    /// TRANSPORT_CAPABILITIES Flags (MS-SMB2 2.2.3.1.5).
    pub struct TransportCapabilityFlags(u32) {
        ACCEPT_TRANSPORT_LEVEL_SECURITY = 0x0000_0001,
    }
}

smb3d_wire::open_enum! {
    /// RDMA transform ids (MS-SMB2 2.2.3.1.6).
    pub struct RdmaTransformId(u16) {
        NONE = 0x0000,
        ENCRYPTION = 0x0001,
        SIGNING = 0x0002,
    }
}

smb3d_wire::open_enum! {
    /// Signing algorithms (MS-SMB2 2.2.3.1.7).
    pub struct SigningAlgorithm(u16) {
        HMAC_SHA256 = 0x0000,
        AES_CMAC = 0x0001,
        AES_GMAC = 0x0002,
    }
}

/// A negotiate context (MS-SMB2 2.2.3.1), typed where the type is known.
///
/// Counts of zero decode (the server rejects them per MS-SMB2 3.3.5.4); counts larger than the
/// context's data are a decode error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NegotiateContext<'a> {
    /// SMB2_PREAUTH_INTEGRITY_CAPABILITIES (2.2.3.1.1).
    PreauthIntegrity {
        hash_algorithms: Vec<HashAlgorithm>,
        salt: &'a [u8],
    },
    /// SMB2_ENCRYPTION_CAPABILITIES (2.2.3.1.2).
    Encryption { ciphers: Vec<Cipher> },
    /// SMB2_COMPRESSION_CAPABILITIES (2.2.3.1.3).
    Compression {
        flags: CompressionCapabilityFlags,
        algorithms: Vec<CompressionAlgorithm>,
    },
    /// SMB2_NETNAME_NEGOTIATE_CONTEXT_ID (2.2.3.1.4). Informational only, so unpaired
    /// surrogates are replaced rather than failing the negotiate.
    NetName(String),
    /// SMB2_TRANSPORT_CAPABILITIES (2.2.3.1.5).
    TransportCapabilities { flags: TransportCapabilityFlags },
    /// SMB2_RDMA_TRANSFORM_CAPABILITIES (2.2.3.1.6).
    RdmaTransform { transform_ids: Vec<RdmaTransformId> },
    /// SMB2_SIGNING_CAPABILITIES (2.2.3.1.7).
    Signing { algorithms: Vec<SigningAlgorithm> },
    /// Any other context type, kept raw.
    Unknown {
        context_type: NegotiateContextType,
        data: &'a [u8],
    },
}

/// Reads `count` 16-bit values, refusing counts larger than the bytes present before
/// allocating.
fn u16_list<T>(
    r: &mut Reader<'_>,
    count: u16,
    field: &'static str,
    wrap: fn(u16) -> T,
) -> Result<Vec<T>, DecodeError> {
    let raw = r.bytes(usize::from(count) * 2, field)?;
    Ok(raw.chunks_exact(2).map(|c| wrap(le16(c))).collect())
}

fn write_u16_list<T: Copy>(w: &mut Writer<'_>, items: &[T], value: fn(T) -> u16) {
    for &item in items {
        w.u16(value(item));
    }
}

impl<'a> NegotiateContext<'a> {
    /// The context's ContextType.
    pub fn context_type(&self) -> NegotiateContextType {
        match self {
            Self::PreauthIntegrity { .. } => NegotiateContextType::PREAUTH_INTEGRITY_CAPABILITIES,
            Self::Encryption { .. } => NegotiateContextType::ENCRYPTION_CAPABILITIES,
            Self::Compression { .. } => NegotiateContextType::COMPRESSION_CAPABILITIES,
            Self::NetName(_) => NegotiateContextType::NETNAME_NEGOTIATE_CONTEXT_ID,
            Self::TransportCapabilities { .. } => NegotiateContextType::TRANSPORT_CAPABILITIES,
            Self::RdmaTransform { .. } => NegotiateContextType::RDMA_TRANSFORM_CAPABILITIES,
            Self::Signing { .. } => NegotiateContextType::SIGNING_CAPABILITIES,
            Self::Unknown { context_type, .. } => *context_type,
        }
    }

    /// Decodes a context's Data field given its ContextType.
    pub fn decode(context_type: NegotiateContextType, data: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(data);
        Ok(match context_type {
            NegotiateContextType::PREAUTH_INTEGRITY_CAPABILITIES => {
                let count = r.u16("HashAlgorithmCount")?;
                let salt_len = usize::from(r.u16("SaltLength")?);
                let hash_algorithms = u16_list(&mut r, count, "HashAlgorithms", HashAlgorithm)?;
                let salt = r.bytes(salt_len, "Salt")?;
                Self::PreauthIntegrity {
                    hash_algorithms,
                    salt,
                }
            }
            NegotiateContextType::ENCRYPTION_CAPABILITIES => {
                let count = r.u16("CipherCount")?;
                Self::Encryption {
                    ciphers: u16_list(&mut r, count, "Ciphers", Cipher)?,
                }
            }
            NegotiateContextType::COMPRESSION_CAPABILITIES => {
                let count = r.u16("CompressionAlgorithmCount")?;
                r.skip(2, "Padding")?;
                let flags = CompressionCapabilityFlags(r.u32("Flags")?);
                let algorithms =
                    u16_list(&mut r, count, "CompressionAlgorithms", CompressionAlgorithm)?;
                Self::Compression { flags, algorithms }
            }
            NegotiateContextType::NETNAME_NEGOTIATE_CONTEXT_ID => {
                let units = data.chunks_exact(2).map(le16);
                Self::NetName(
                    char::decode_utf16(units)
                        .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                        .collect(),
                )
            }
            NegotiateContextType::TRANSPORT_CAPABILITIES => Self::TransportCapabilities {
                flags: TransportCapabilityFlags(r.u32("Flags")?),
            },
            NegotiateContextType::RDMA_TRANSFORM_CAPABILITIES => {
                let count = r.u16("TransformCount")?;
                r.skip(6, "Reserved")?;
                Self::RdmaTransform {
                    transform_ids: u16_list(&mut r, count, "RDMATransformIds", RdmaTransformId)?,
                }
            }
            NegotiateContextType::SIGNING_CAPABILITIES => {
                let count = r.u16("SigningAlgorithmCount")?;
                Self::Signing {
                    algorithms: u16_list(&mut r, count, "SigningAlgorithms", SigningAlgorithm)?,
                }
            }
            context_type => Self::Unknown { context_type, data },
        })
    }

    /// Writes the context (header and data), starting where the writer is.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(self.context_type().0);
        let len = w.reserve_u16();
        w.u32(0);
        let start = w.offset();
        match self {
            Self::PreauthIntegrity {
                hash_algorithms,
                salt,
            } => {
                w.u16(len16(hash_algorithms.len())).u16(len16(salt.len()));
                write_u16_list(w, hash_algorithms, |a| a.0);
                w.bytes(salt);
            }
            Self::Encryption { ciphers } => {
                w.u16(len16(ciphers.len()));
                write_u16_list(w, ciphers, |c| c.0);
            }
            Self::Compression { flags, algorithms } => {
                w.u16(len16(algorithms.len())).u16(0).u32(flags.0);
                write_u16_list(w, algorithms, |a| a.0);
            }
            Self::NetName(name) => {
                w.utf16(name);
            }
            Self::TransportCapabilities { flags } => {
                w.u32(flags.0);
            }
            Self::RdmaTransform { transform_ids } => {
                w.u16(len16(transform_ids.len())).u16(0).u32(0);
                write_u16_list(w, transform_ids, |t| t.0);
            }
            Self::Signing { algorithms } => {
                w.u16(len16(algorithms.len()));
                write_u16_list(w, algorithms, |a| a.0);
            }
            Self::Unknown { data, .. } => {
                w.bytes(data);
            }
        }
        let data_len = len16(w.offset() - start);
        w.patch_u16(len, data_len);
    }
}

/// Decodes `count` negotiate contexts starting at `offset` (from the header start), each
/// 8-byte aligned relative to the header (MS-SMB2 2.2.3.1).
pub fn decode_contexts(
    pdu: &[u8],
    offset: u32,
    count: u16,
) -> Result<Vec<NegotiateContext<'_>>, DecodeError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let offset = to_usize(offset);
    if offset < SMB2_HEADER_LEN {
        return Err(DecodeError::new(
            "NegotiateContextOffset",
            DecodeErrorKind::OutOfBounds,
        ));
    }
    if !offset.is_multiple_of(8) {
        return Err(DecodeError::new(
            "NegotiateContextOffset",
            DecodeErrorKind::Misaligned,
        ));
    }
    let mut r = Reader::after_header(pdu, SMB2_HEADER_LEN, "SMB2 header")?;
    r.seek(offset, "NegotiateContextOffset")?;
    // Each context takes at least 8 bytes, which bounds the allocation by the bytes present.
    let mut out = Vec::with_capacity(usize::from(count).min(r.remaining() / 8));
    for i in 0..count {
        if i > 0 {
            let aligned = r.pos().checked_next_multiple_of(8).ok_or(DecodeError::new(
                "NegotiateContext",
                DecodeErrorKind::Overflow,
            ))?;
            r.seek(aligned, "NegotiateContext padding")?;
        }
        let context_type = NegotiateContextType(r.u16("ContextType")?);
        let data_len = usize::from(r.u16("DataLength")?);
        r.skip(4, "Reserved")?;
        let data = r.bytes(data_len, "NegotiateContext.Data")?;
        out.push(NegotiateContext::decode(context_type, data)?);
    }
    Ok(out)
}

/// Writes contexts each 8-byte aligned relative to the header; returns the first's offset.
fn encode_contexts(w: &mut Writer<'_>, contexts: &[NegotiateContext<'_>]) -> u32 {
    w.align(8);
    let first = len32(w.offset());
    for (i, c) in contexts.iter().enumerate() {
        if i > 0 {
            w.align(8);
        }
        c.encode(w);
    }
    first
}

/// SMB2 NEGOTIATE Request (MS-SMB2 2.2.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NegotiateRequest<'a> {
    pub security_mode: SecurityMode,
    pub capabilities: Capabilities,
    pub client_guid: Guid,
    /// The offered dialects, in the client's order (possibly empty: the server refuses that).
    pub dialects: Vec<Dialect>,
    /// Negotiate contexts; only present when `dialects` contains 3.1.1 (otherwise the field is
    /// ClientStartTime and ignored).
    pub contexts: Vec<NegotiateContext<'a>>,
}

impl<'a> NegotiateRequest<'a> {
    /// MS-SMB2 2.2.3.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 36)?;
        let count = r.u16("DialectCount")?;
        let security_mode = SecurityMode(r.u16("SecurityMode")?);
        r.skip(2, "Reserved")?;
        let capabilities = Capabilities(r.u32("Capabilities")?);
        let client_guid = r.guid("ClientGuid")?;
        let context_offset = r.u32("NegotiateContextOffset")?;
        let context_count = r.u16("NegotiateContextCount")?;
        r.skip(2, "Reserved2")?;
        let dialects = u16_list(&mut r, count, "Dialects", Dialect)?;
        let contexts = if dialects.contains(&Dialect::SMB3_1_1) {
            decode_contexts(pdu, context_offset, context_count)?
        } else {
            Vec::new()
        };
        Ok(Self {
            security_mode,
            capabilities,
            client_guid,
            dialects,
            contexts,
        })
    }

    /// Writes the body after the header (contexts only if `dialects` contains 3.1.1).
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(36)
            .u16(len16(self.dialects.len()))
            .u16(self.security_mode.0)
            .u16(0)
            .u32(self.capabilities.0)
            .guid(&self.client_guid);
        let with_contexts = self.dialects.contains(&Dialect::SMB3_1_1) && !self.contexts.is_empty();
        let offset_slot = w.reserve_u32();
        w.u16(if with_contexts {
            len16(self.contexts.len())
        } else {
            0
        })
        .u16(0);
        write_u16_list(w, &self.dialects, |d| d.0);
        if with_contexts {
            let first = encode_contexts(w, &self.contexts);
            w.patch_u32(offset_slot, first);
        }
    }
}

/// SMB2 NEGOTIATE Response (MS-SMB2 2.2.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NegotiateResponse<'a> {
    pub security_mode: SecurityMode,
    pub dialect_revision: Dialect,
    pub server_guid: Guid,
    pub capabilities: Capabilities,
    pub max_transact_size: u32,
    pub max_read_size: u32,
    pub max_write_size: u32,
    pub system_time: FileTime,
    pub server_start_time: FileTime,
    /// The GSS token (SPNEGO init) the client starts authentication with.
    pub security_buffer: &'a [u8],
    /// Negotiate contexts, written only for dialect 3.1.1.
    pub contexts: Vec<NegotiateContext<'a>>,
}

/// Where the security buffer starts: right after the 64-byte fixed part.
const RESPONSE_BUFFER_OFFSET: usize = SMB2_HEADER_LEN + 64;

impl<'a> NegotiateResponse<'a> {
    /// MS-SMB2 2.2.4.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 65)?;
        let security_mode = SecurityMode(r.u16("SecurityMode")?);
        let dialect_revision = Dialect(r.u16("DialectRevision")?);
        let context_count = r.u16("NegotiateContextCount")?;
        let server_guid = r.guid("ServerGuid")?;
        let capabilities = Capabilities(r.u32("Capabilities")?);
        let max_transact_size = r.u32("MaxTransactSize")?;
        let max_read_size = r.u32("MaxReadSize")?;
        let max_write_size = r.u32("MaxWriteSize")?;
        let system_time = r.filetime("SystemTime")?;
        let server_start_time = r.filetime("ServerStartTime")?;
        let sec_offset = usize::from(r.u16("SecurityBufferOffset")?);
        let sec_len = usize::from(r.u16("SecurityBufferLength")?);
        let context_offset = r.u32("NegotiateContextOffset")?;
        let security_buffer = r.buffer_at(sec_offset, sec_len, "SecurityBuffer")?;
        let contexts = if dialect_revision == Dialect::SMB3_1_1 {
            decode_contexts(pdu, context_offset, context_count)?
        } else {
            Vec::new()
        };
        Ok(Self {
            security_mode,
            dialect_revision,
            server_guid,
            capabilities,
            max_transact_size,
            max_read_size,
            max_write_size,
            system_time,
            server_start_time,
            security_buffer,
            contexts,
        })
    }

    /// Writes the body after the header (`w.offset() == 64`).
    pub fn encode(&self, w: &mut Writer<'_>) {
        let with_contexts = self.dialect_revision == Dialect::SMB3_1_1 && !self.contexts.is_empty();
        w.u16(65)
            .u16(self.security_mode.0)
            .u16(self.dialect_revision.0)
            .u16(if with_contexts {
                len16(self.contexts.len())
            } else {
                0
            })
            .guid(&self.server_guid)
            .u32(self.capabilities.0)
            .u32(self.max_transact_size)
            .u32(self.max_read_size)
            .u32(self.max_write_size)
            .filetime(self.system_time)
            .filetime(self.server_start_time)
            .u16(len16(RESPONSE_BUFFER_OFFSET))
            .u16(len16(self.security_buffer.len()));
        let offset_slot = w.reserve_u32();
        w.bytes(self.security_buffer);
        if with_contexts {
            let first = encode_contexts(w, &self.contexts);
            w.patch_u32(offset_slot, first);
        }
    }
}

smb3d_wire::impl_codec!(NegotiateRequest<'a>, NegotiateResponse<'a>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body};
    use proptest::prelude::*;

    // smbclient -m SMB2_02 against Samba 4.17.
    const REQ_202: &str = "
        fe534d42400000000000000000001f000000000000000000000000000000000000000000000000000000000000000000
        000000000000000000000000000000002400010001000000000000000000000000000000000000000000000000000000
        000000000202";
    const RSP_202: &str = "
        fe534d424000000000000000000001000100000000000000000000000000000000000000000000000000000000000000
        000000000000000000000000000000004100010002020000766d00000000000000000000000000000100000000000100
        000001000000010076657e8a217add01000000000000000080004a0000000000604806062b0601050502a03e303ca00e
        300c060a2b06010401823702020aa32a3028a0261b246e6f745f646566696e65645f696e5f5246433431373840706c65
        6173655f69676e6f7265";
    // smbclient -m SMB2_10.
    const REQ_210: &str = "
        fe534d42400000000000000000001f000000000000000000000000000000000000000000000000000000000000000000
        000000000000000000000000000000002400020001000000000000003b796fc4f69ec844a501090110c90d7600000000
        0000000002021002";
    const RSP_210: &str = "
        fe534d424000000000000000000001000100000000000000000000000000000000000000000000000000000000000000
        000000000000000000000000000000004100010010020000766d00000000000000000000000000000700000000008000
        00008000000080000add438c217add01000000000000000080004a0000000000604806062b0601050502a03e303ca00e
        300c060a2b06010401823702020aa32a3028a0261b246e6f745f646566696e65645f696e5f5246433431373840706c65
        6173655f69676e6f7265";
    // smbclient -m SMB3_00.
    const REQ_300: &str = "
        fe534d42400000000000000000001f000000000000000000000000000000000000000000000000000000000000000000
        0000000000000000000000000000000024000300010000007f000000590439a36a2a28419eb6b8407a897cb900000000
        00000000020210020003";
    const RSP_300: &str = "
        fe534d424000000000000000000001000100000000000000000000000000000000000000000000000000000000000000
        000000000000000000000000000000004100010000030000766d00000000000000000000000000004f00000000008000
        0000800000008000a6e6198e217add01000000000000000080004a0000000000604806062b0601050502a03e303ca00e
        300c060a2b06010401823702020aa32a3028a0261b246e6f745f646566696e65645f696e5f5246433431373840706c65
        6173655f69676e6f7265";
    // smbclient -m SMB3_02.
    const REQ_302: &str = "
        fe534d42400000000000000000001f000000000000000000000000000000000000000000000000000000000000000000
        0000000000000000000000000000000024000400010000007f0000004e1dab3c3710dd40b003ccc404907d7e00000000
        000000000202100200030203";
    const RSP_302: &str = "
        fe534d424000000000000000000001000100000000000000000000000000000000000000000000000000000000000000
        000000000000000000000000000000004100010002030000766d00000000000000000000000000004f00000000008000
        000080000000800090d0e98f217add01000000000000000080004a0000000000604806062b0601050502a03e303ca00e
        300c060a2b06010401823702020aa32a3028a0261b246e6f745f646566696e65645f696e5f5246433431373840706c65
        6173655f69676e6f7265";
    // smbclient -m SMB3_11: preauth, encryption, signing and netname contexts.
    const REQ_311: &str = "
        fe534d42400000000000000000001f000000000000000000000000000000000000000000000000000000000000000000
        0000000000000000000000000000000024000500010000007f000000e2226b681098fc4a93c76c34b7b0034a70000000
        040000000202100200030203110300000100260000000000010020000100a5333f53480d6499a1af6bee41ae4fb07d68
        3093c56b73e1d2a0617c3fc271a3000002000a0000000000040002000100040003000000000000000800080000000000
        030002000100000005001200000000003100320037002e0030002e0030002e003100";
    const RSP_311: &str = "
        fe534d424000000000000000000001000100000000000000000000000000000000000000000000000000000000000000
        000000000000000000000000000000004100010011030300766d00000000000000000000000000000f00000000008000
        0000800000008000ca12b291217add01000000000000000080004a00d0000000604806062b0601050502a03e303ca00e
        300c060a2b06010401823702020aa32a3028a0261b246e6f745f646566696e65645f696e5f5246433431373840706c65
        6173655f69676e6f72650000000000000100260000000000010020000100ccce8aefd25a1f264bcb3dc5e2fa470ded81
        23aebb9fc39d04d5d323608eebf2000002000400000000000100020000000000080004000000000001000200";
    // Python smbprotocol 1.17, dialect 3.1.1 only; netname before signing.
    const REQ_311_SMBPROTOCOL: &str = "
        fe534d424000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
        000000000000000000000000000000002400010002000000450000001111111122223333444455555555555568000000
        0400000011030000010026000000000001002000010084631e112de6e0aeecb89bcaa20c3b466f1b8f8a1013b6299256
        dade6c8c6e96000002000a00000000000400020001000400030000000000000005001200000000003100320037002e00
        30002e0030002e00310000000000000008000800000000000300020001000000";
    // smbclient with 'client min protocol = NT1': Samba's answer to the SMB1 multi-protocol
    // negotiate, dialect 0x02FF.
    const RSP_WILDCARD: &str = "
        fe534d424000000000000000000001000100000000000000000000000000000000000000000000000000000000000000
        0000000000000000000000000000000041000100ff020000766d00000000000000000000000000000700000000008000
        0000800000008000a00b54fd217add01000000000000000080004a0000000000604806062b0601050502a03e303ca00e
        300c060a2b06010401823702020aa32a3028a0261b246e6f745f646566696e65645f696e5f5246433431373840706c65
        6173655f69676e6f7265";

    // impacket 0.13.1 (SMBConnection) against Samba 4.17: Capabilities asks for encryption
    // alone; the contexts are padded with 0xFF.
    const REQ_311_IMPACKET: &str = "
        fe534d42400001000000000000000000000000000100000000000000000000000000000000000000000000000000
        0000000000000000000000000000000000002400050001000000400000007555796b53616c675876714b58426861
        700000000200000002021002000302031103ffff01002600000000000100200001006e4a5761614374474851556f
        7841566258685373524f48434d744c4541757846ffff020004000000000001000100";
    // Samba grants none of the 3.x capabilities it was not asked for.
    const RSP_311_IMPACKET: &str = "
        fe534d424000010000000000000001000100000000000000010000000000000000000000000000000000000000000000
        000000000000000000000000000000004100010011030200766d00000000000000000000000000000700000000008000
        000080000000800010ad180f227edd01000000000000000080004a00d0000000604806062b0601050502a03e303ca00e
        300c060a2b06010401823702020aa32a3028a0261b246e6f745f646566696e65645f696e5f5246433431373840706c65
        6173655f69676e6f72650000000000000100260000000000010020000100a4c76de6f47f0c2315da80a49a71b01fd4ab
        320f761e7af767f9ddf2cc34d4350000020004000000000001000100";

    #[test]
    fn smb2_0_2() {
        let pdu = hex(REQ_202);
        let req = golden::<NegotiateRequest>(&pdu);
        assert_eq!(req.dialects, [Dialect::SMB2_0_2]);
        assert_eq!(req.security_mode, SecurityMode::SIGNING_ENABLED);
        assert!(req.client_guid.is_zero());
        let pdu = hex(RSP_202);
        let rsp = golden::<NegotiateResponse>(&pdu);
        assert_eq!(rsp.dialect_revision, Dialect::SMB2_0_2);
        assert_eq!(rsp.capabilities, Capabilities::DFS);
        assert_eq!(rsp.max_transact_size, 65536);
        assert_eq!(rsp.security_buffer.len(), 74);
        assert!(rsp.contexts.is_empty());
    }

    #[test]
    fn smb2_1_and_3_0_x() {
        let pdu = hex(REQ_210);
        let req = golden::<NegotiateRequest>(&pdu);
        assert_eq!(req.dialects, [Dialect::SMB2_0_2, Dialect::SMB2_1]);
        let pdu = hex(RSP_210);
        let rsp = golden::<NegotiateResponse>(&pdu);
        assert_eq!(rsp.dialect_revision, Dialect::SMB2_1);
        assert_eq!(
            rsp.capabilities,
            Capabilities::DFS | Capabilities::LEASING | Capabilities::LARGE_MTU
        );
        assert_eq!(rsp.max_read_size, 8 << 20);
        let pdu = hex(REQ_300);
        let req = golden::<NegotiateRequest>(&pdu);
        assert_eq!(req.dialects.last(), Some(&Dialect::SMB3_0));
        assert!(req.capabilities.contains(Capabilities::ENCRYPTION));
        let pdu = hex(RSP_300);
        let rsp = golden::<NegotiateResponse>(&pdu);
        assert_eq!(rsp.dialect_revision, Dialect::SMB3_0);
        let pdu = hex(REQ_302);
        let req = golden::<NegotiateRequest>(&pdu);
        assert_eq!(req.dialects.len(), 4);
        assert!(req.contexts.is_empty());
        let pdu = hex(RSP_302);
        let rsp = golden::<NegotiateResponse>(&pdu);
        assert_eq!(rsp.dialect_revision, Dialect::SMB3_0_2);
        assert!(rsp.dialect_revision.is_smb3());
        assert!(rsp.capabilities.contains(Capabilities::ENCRYPTION));
    }

    #[test]
    fn smb3_1_1_from_a_client_that_asks_for_encryption_alone() {
        let pdu = hex(REQ_311_IMPACKET);
        let req = NegotiateRequest::decode(&pdu).unwrap();
        assert_eq!(req.capabilities, Capabilities::ENCRYPTION);
        assert_eq!(req.dialects.len(), 5);
        assert_eq!(req.contexts.len(), 2);
        assert_eq!(
            req.contexts[1],
            NegotiateContext::Encryption {
                ciphers: vec![Cipher::AES128_CCM]
            }
        );
        let pdu = hex(RSP_311_IMPACKET);
        let rsp = golden::<NegotiateResponse>(&pdu);
        assert_eq!(rsp.dialect_revision, Dialect::SMB3_1_1);
        assert_eq!(
            rsp.capabilities,
            Capabilities::DFS | Capabilities::LEASING | Capabilities::LARGE_MTU
        );
    }

    #[test]
    fn smb3_1_1_with_contexts() {
        let pdu = hex(REQ_311);
        let req = golden::<NegotiateRequest>(&pdu);
        assert_eq!(req.dialects.len(), 5);
        assert_eq!(req.contexts.len(), 4);
        match &req.contexts[0] {
            NegotiateContext::PreauthIntegrity {
                hash_algorithms,
                salt,
            } => {
                assert_eq!(hash_algorithms, &[HashAlgorithm::SHA512]);
                assert_eq!(salt.len(), 32);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            req.contexts[1],
            NegotiateContext::Encryption {
                ciphers: vec![
                    Cipher::AES128_GCM,
                    Cipher::AES128_CCM,
                    Cipher::AES256_GCM,
                    Cipher::AES256_CCM
                ]
            }
        );
        assert_eq!(
            req.contexts[2],
            NegotiateContext::Signing {
                algorithms: vec![
                    SigningAlgorithm::AES_GMAC,
                    SigningAlgorithm::AES_CMAC,
                    SigningAlgorithm::HMAC_SHA256
                ]
            }
        );
        assert_eq!(
            req.contexts[3],
            NegotiateContext::NetName("127.0.0.1".into())
        );

        let pdu = hex(RSP_311);
        let rsp = golden::<NegotiateResponse>(&pdu);
        assert_eq!(rsp.dialect_revision, Dialect::SMB3_1_1);
        assert_eq!(rsp.contexts.len(), 3);
        assert_eq!(
            rsp.contexts[1],
            NegotiateContext::Encryption {
                ciphers: vec![Cipher::AES128_GCM]
            }
        );
        assert_eq!(
            rsp.contexts[2],
            NegotiateContext::Signing {
                algorithms: vec![SigningAlgorithm::AES_GMAC]
            }
        );
    }

    #[test]
    fn smbprotocol_request() {
        let pdu = hex(REQ_311_SMBPROTOCOL);
        let req = golden::<NegotiateRequest>(&pdu);
        assert_eq!(req.dialects, [Dialect::SMB3_1_1]);
        assert_eq!(
            req.client_guid.to_string(),
            "11111111-2222-3333-4444-555555555555"
        );
        assert_eq!(
            req.contexts
                .iter()
                .map(|c| c.context_type())
                .collect::<Vec<_>>(),
            [
                NegotiateContextType::PREAUTH_INTEGRITY_CAPABILITIES,
                NegotiateContextType::ENCRYPTION_CAPABILITIES,
                NegotiateContextType::NETNAME_NEGOTIATE_CONTEXT_ID,
                NegotiateContextType::SIGNING_CAPABILITIES
            ]
        );
    }

    #[test]
    fn wildcard_response() {
        let pdu = hex(RSP_WILDCARD);
        let rsp = golden::<NegotiateResponse>(&pdu);
        assert_eq!(rsp.dialect_revision, Dialect::SMB2_WILDCARD);
    }

    #[test]
    fn other_contexts_round_trip() {
        let contexts = vec![
            NegotiateContext::Compression {
                flags: CompressionCapabilityFlags::CHAINED,
                algorithms: vec![CompressionAlgorithm::LZ77, CompressionAlgorithm::PATTERN_V1],
            },
            NegotiateContext::TransportCapabilities {
                flags: TransportCapabilityFlags::ACCEPT_TRANSPORT_LEVEL_SECURITY,
            },
            NegotiateContext::RdmaTransform {
                transform_ids: vec![RdmaTransformId::ENCRYPTION],
            },
            NegotiateContext::Unknown {
                context_type: NegotiateContextType(0x42),
                data: &[1, 2, 3],
            },
        ];
        let mut buf = vec![0u8; SMB2_HEADER_LEN];
        let first = encode_contexts(&mut Writer::with_base(&mut buf, 0), &contexts);
        assert_eq!(first, 64);
        // Compression: count 2, padding, flags 1, LZ77, PATTERN_V1 (MS-SMB2 2.2.3.1.3 layout).
        assert_eq!(
            &buf[64..64 + 20],
            &hex("0300 0c00 00000000 0200 0000 01000000 0200 0400")[..]
        );
        assert_eq!(decode_contexts(&buf, first, 4).unwrap(), contexts);
    }

    #[test]
    fn zero_counts_decode_for_the_server_to_refuse() {
        let ctx = NegotiateContext::decode(
            NegotiateContextType::PREAUTH_INTEGRITY_CAPABILITIES,
            &[0, 0, 0, 0],
        )
        .unwrap();
        assert_eq!(
            ctx,
            NegotiateContext::PreauthIntegrity {
                hash_algorithms: vec![],
                salt: &[]
            }
        );
        let mut body = vec![0u8; 36];
        body[0] = 36;
        let pdu = pdu_with_body(&body);
        assert!(NegotiateRequest::decode(&pdu).unwrap().dialects.is_empty());
    }

    #[test]
    fn rejections() {
        let pdu = hex(REQ_311);
        // DialectCount beyond the bytes present.
        let mut bad = pdu.clone();
        bad[66] = 0xFF;
        assert_eq!(
            NegotiateRequest::decode(&bad).unwrap_err().field,
            "Dialects"
        );
        // Bad StructureSize.
        let mut bad = pdu.clone();
        bad[64] = 37;
        assert!(matches!(
            NegotiateRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::BadSize { .. }
        ));
        // Context offset into the header, misaligned, past the end.
        for (offset, kind) in [
            (8u32, DecodeErrorKind::OutOfBounds),
            (0x74, DecodeErrorKind::Misaligned),
            (0x1000, DecodeErrorKind::Truncated),
            (u32::MAX - 7, DecodeErrorKind::Truncated),
        ] {
            let mut bad = pdu.clone();
            bad[64 + 28..64 + 32].copy_from_slice(&offset.to_le_bytes());
            assert_eq!(
                NegotiateRequest::decode(&bad).unwrap_err().kind,
                kind,
                "{offset}"
            );
        }
        // Context count beyond the contexts present.
        let mut bad = pdu.clone();
        bad[64 + 32] = 5;
        assert!(NegotiateRequest::decode(&bad).is_err());
        // Context DataLength past the end.
        let mut bad = pdu.clone();
        let last = bad.len() - 18 - 6;
        bad[last] = 0x40;
        assert_eq!(
            NegotiateRequest::decode(&bad).unwrap_err().field,
            "NegotiateContext.Data"
        );
        // HashAlgorithmCount and SaltLength beyond the context data.
        assert_eq!(
            NegotiateContext::decode(
                NegotiateContextType::PREAUTH_INTEGRITY_CAPABILITIES,
                &[5, 0, 0, 0, 1, 0]
            )
            .unwrap_err()
            .field,
            "HashAlgorithms"
        );
        assert_eq!(
            NegotiateContext::decode(
                NegotiateContextType::PREAUTH_INTEGRITY_CAPABILITIES,
                &[1, 0, 9, 0, 1, 0, 7]
            )
            .unwrap_err()
            .field,
            "Salt"
        );
        // Response security buffer pointing into the header or past the end.
        let rsp = hex(RSP_302);
        let mut bad = rsp.clone();
        bad[64 + 56] = 0x10;
        assert_eq!(
            NegotiateResponse::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        let mut bad = rsp.clone();
        bad[64 + 58] = 0xFF;
        assert_eq!(
            NegotiateResponse::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
    }

    fn arb_context() -> impl Strategy<Value = NegotiateContext<'static>> {
        let salt: &'static [u8] = &[7; 32];
        prop_oneof![
            proptest::collection::vec(any::<u16>(), 0..4).prop_map(move |a| {
                NegotiateContext::PreauthIntegrity {
                    hash_algorithms: a.into_iter().map(HashAlgorithm).collect(),
                    salt,
                }
            }),
            proptest::collection::vec(any::<u16>(), 0..6).prop_map(|c| {
                NegotiateContext::Encryption {
                    ciphers: c.into_iter().map(Cipher).collect(),
                }
            }),
            (any::<u32>(), proptest::collection::vec(any::<u16>(), 0..6)).prop_map(|(f, a)| {
                NegotiateContext::Compression {
                    flags: CompressionCapabilityFlags(f),
                    algorithms: a.into_iter().map(CompressionAlgorithm).collect(),
                }
            }),
            "[a-z0-9.]{0,20}".prop_map(NegotiateContext::NetName),
            any::<u32>().prop_map(|f| NegotiateContext::TransportCapabilities {
                flags: TransportCapabilityFlags(f)
            }),
            proptest::collection::vec(any::<u16>(), 0..4).prop_map(|t| {
                NegotiateContext::RdmaTransform {
                    transform_ids: t.into_iter().map(RdmaTransformId).collect(),
                }
            }),
            proptest::collection::vec(any::<u16>(), 0..4).prop_map(|a| NegotiateContext::Signing {
                algorithms: a.into_iter().map(SigningAlgorithm).collect()
            }),
        ]
    }

    proptest! {
        #[test]
        fn request_round_trips(
            mode in any::<u16>(),
            caps in any::<u32>(),
            guid in any::<[u8; 16]>(),
            mut dialects in proptest::collection::vec(any::<u16>(), 0..8),
            contexts in proptest::collection::vec(arb_context(), 1..6),
        ) {
            dialects.push(0x0311);
            let req = NegotiateRequest {
                security_mode: SecurityMode(mode),
                capabilities: Capabilities(caps),
                client_guid: Guid(guid),
                dialects: dialects.into_iter().map(Dialect).collect(),
                contexts,
            };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&req, &mut buf), req);
        }

        #[test]
        fn response_round_trips(
            dialect in any::<u16>(),
            sizes in any::<[u32; 3]>(),
            times in any::<[u64; 2]>(),
            security_buffer in proptest::collection::vec(any::<u8>(), 0..100),
            contexts in proptest::collection::vec(arb_context(), 0..6),
        ) {
            let dialect = Dialect(dialect);
            let rsp = NegotiateResponse {
                security_mode: SecurityMode::SIGNING_ENABLED,
                dialect_revision: dialect,
                server_guid: Guid([3; 16]),
                capabilities: Capabilities::LEASING,
                max_transact_size: sizes[0],
                max_read_size: sizes[1],
                max_write_size: sizes[2],
                system_time: FileTime(times[0]),
                server_start_time: FileTime(times[1]),
                security_buffer: &security_buffer,
                contexts: if dialect == Dialect::SMB3_1_1 { contexts } else { vec![] },
            };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&rsp, &mut buf), rsp);
        }

        #[test]
        fn decoders_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
            let pdu = pdu_with_body(&body);
            let _ = NegotiateRequest::decode(&pdu);
            let _ = NegotiateResponse::decode(&pdu);
        }
    }
}
