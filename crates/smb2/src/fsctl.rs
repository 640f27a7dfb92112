//! The FSCTL bodies MS-SMB2 defines beside VALIDATE_NEGOTIATE_INFO: server-side copy
//! (SRV_REQUEST_RESUME_KEY 2.2.32.3, SRV_COPYCHUNK_COPY 2.2.31.1, SRV_COPYCHUNK_RESPONSE
//! 2.2.32.1) and NETWORK_INTERFACE_INFO (2.2.32.5).

use std::net::IpAddr;

use smb3d_wire::{DecodeError, Reader, Result, Writer};

/// The opaque key naming an open as a copy source (MS-SMB2 2.2.32.3).
pub type ResumeKey = [u8; 24];

/// SRV_REQUEST_RESUME_KEY Response (MS-SMB2 2.2.32.3): the key, and no context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumeKeyResponse {
    pub resume_key: ResumeKey,
}

impl ResumeKeyResponse {
    /// Size: the key, ContextLength and 4 bytes of (empty) Context as Windows sends them.
    pub const LEN: usize = 32;

    /// Appends the wire form.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.bytes(&self.resume_key).u32(0).u32(0);
    }

    /// Parses the wire form; the context is ignored.
    pub fn decode(buf: &[u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        let resume_key = r.array("ResumeKey")?;
        r.u32("ContextLength")?;
        Ok(Self { resume_key })
    }
}

/// One SRV_COPYCHUNK (MS-SMB2 2.2.31.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyChunk {
    pub source_offset: u64,
    pub target_offset: u64,
    pub length: u32,
}

impl CopyChunk {
    /// Wire size.
    pub const LEN: usize = 24;
}

/// SRV_COPYCHUNK_COPY (MS-SMB2 2.2.31.1). The chunks stay in the request buffer and are read
/// as iterated, so a huge ChunkCount costs nothing before the server checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyChunkCopy<'a> {
    pub source_key: ResumeKey,
    pub chunk_count: u32,
    chunks: &'a [u8],
}

impl<'a> CopyChunkCopy<'a> {
    /// Size of the fields before Chunks.
    pub const HEADER_LEN: usize = 32;

    /// Parses the header. The chunks are not required to be there: the server answers a
    /// count its limits refuse before it looks at them ([`Self::chunks`] checks the bytes).
    pub fn decode(buf: &'a [u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        let source_key = r.array("SourceKey")?;
        let chunk_count = r.u32("ChunkCount")?;
        r.skip(4, "Reserved")?;
        Ok(Self {
            source_key,
            chunk_count,
            chunks: r.rest(),
        })
    }

    /// The ChunkCount chunks, or an error if the buffer does not hold them all.
    pub fn chunks(&self) -> Result<impl Iterator<Item = CopyChunk> + 'a> {
        let len = usize::try_from(self.chunk_count)
            .ok()
            .and_then(|n| n.checked_mul(CopyChunk::LEN))
            .ok_or_else(|| DecodeError::invalid("ChunkCount"))?;
        let bytes = Reader::new(self.chunks).bytes(len, "Chunks")?;
        Ok(bytes.chunks_exact(CopyChunk::LEN).filter_map(|c| {
            let mut r = Reader::new(c);
            Some(CopyChunk {
                source_offset: r.u64("SourceOffset").ok()?,
                target_offset: r.u64("TargetOffset").ok()?,
                length: r.u32("Length").ok()?,
            })
        }))
    }

    /// Appends SRV_COPYCHUNK_COPY with `chunks`.
    pub fn encode(source_key: &ResumeKey, chunks: &[CopyChunk], w: &mut Writer<'_>) {
        w.bytes(source_key)
            .u32(u32::try_from(chunks.len()).unwrap_or(u32::MAX))
            .u32(0);
        for chunk in chunks {
            w.u64(chunk.source_offset)
                .u64(chunk.target_offset)
                .u32(chunk.length)
                .u32(0);
        }
    }
}

/// SRV_COPYCHUNK_RESPONSE (MS-SMB2 2.2.32.1). With STATUS_INVALID_PARAMETER it carries the
/// server's limits instead: chunks, bytes per chunk, bytes per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyChunkResponse {
    pub chunks_written: u32,
    pub chunk_bytes_written: u32,
    pub total_bytes_written: u32,
}

impl CopyChunkResponse {
    /// Wire size.
    pub const LEN: usize = 12;

    /// Appends the wire form.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u32(self.chunks_written)
            .u32(self.chunk_bytes_written)
            .u32(self.total_bytes_written);
    }

    /// Parses the wire form.
    pub fn decode(buf: &[u8]) -> Result<Self> {
        let mut r = Reader::new(buf);
        Ok(Self {
            chunks_written: r.u32("ChunksWritten")?,
            chunk_bytes_written: r.u32("ChunkBytesWritten")?,
            total_bytes_written: r.u32("TotalBytesWritten")?,
        })
    }
}

smb3d_wire::open_flags! {
    /// NETWORK_INTERFACE_INFO Capability (MS-SMB2 2.2.32.5).
    pub struct InterfaceCapability(u32) {
        RSS = 0x0000_0001,
        RDMA = 0x0000_0002,
    }
}

/// One NETWORK_INTERFACE_INFO entry (MS-SMB2 2.2.32.5): one address of one interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkInterface {
    pub if_index: u32,
    pub capability: InterfaceCapability,
    /// Bits per second.
    pub link_speed: u64,
    pub address: IpAddr,
}

impl NetworkInterface {
    /// Size of one entry: 24 bytes of fields and a 128-byte SOCKADDR_STORAGE.
    pub const LEN: usize = 152;
    const SOCKADDR_LEN: usize = 128;
    const AF_INET: u16 = 0x0002;
    const AF_INET6: u16 = 0x0017;

    /// Appends the entries as a list: each Next points at the following one, the last is 0.
    pub fn encode_list(interfaces: &[NetworkInterface], w: &mut Writer<'_>) {
        for (i, interface) in interfaces.iter().enumerate() {
            let next = if i + 1 == interfaces.len() {
                0
            } else {
                Self::LEN as u32
            };
            interface.encode(next, w);
        }
    }

    fn encode(&self, next: u32, w: &mut Writer<'_>) {
        w.u32(next)
            .u32(self.if_index)
            .u32(self.capability.0)
            .u32(0)
            .u64(self.link_speed);
        let start = w.offset();
        match self.address {
            IpAddr::V4(v4) => {
                w.u16(Self::AF_INET).u16(0).bytes(&v4.octets());
            }
            IpAddr::V6(v6) => {
                w.u16(Self::AF_INET6)
                    .u16(0)
                    .u32(0)
                    .bytes(&v6.octets())
                    .u32(0);
            }
        }
        w.zeros(Self::SOCKADDR_LEN - (w.offset() - start));
    }

    /// Walks a list by its Next offsets; each entry must lie within the buffer and Next must
    /// move forward.
    pub fn decode_list(buf: &[u8]) -> Result<Vec<NetworkInterface>> {
        let mut list = Vec::new();
        let mut at = 0usize;
        loop {
            let entry = Reader::new(buf).buffer_at(at, Self::LEN, "NETWORK_INTERFACE_INFO")?;
            let mut r = Reader::new(entry);
            let next = r.u32("Next")? as usize;
            let if_index = r.u32("IfIndex")?;
            let capability = InterfaceCapability(r.u32("Capability")?);
            r.skip(4, "Reserved")?;
            let link_speed = r.u64("LinkSpeed")?;
            let address = match r.u16("Family")? {
                Self::AF_INET => {
                    r.skip(2, "Port")?;
                    IpAddr::from(r.array::<4>("IPv4Address")?)
                }
                Self::AF_INET6 => {
                    r.skip(6, "Port/FlowInfo")?;
                    IpAddr::from(r.array::<16>("IPv6Address")?)
                }
                _ => return Err(DecodeError::invalid("Family")),
            };
            list.push(NetworkInterface {
                if_index,
                capability,
                link_speed,
                address,
            });
            if next == 0 {
                return Ok(list);
            }
            if next < Self::LEN {
                return Err(DecodeError::invalid("Next"));
            }
            at = at
                .checked_add(next)
                .ok_or_else(|| DecodeError::invalid("Next"))?;
        }
    }
}

smb3d_wire::impl_codec!(ResumeKeyResponse, CopyChunkResponse);

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;
    use crate::ioctl::{IoctlRequest, IoctlResponse};
    use crate::testutil::hex;

    fn encoded(f: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
        let mut out = Vec::new();
        f(&mut Writer::new(&mut out));
        out
    }

    // smbtorture smb2.ioctl.copy_chunk_simple against Samba 4.17 (the vectors of
    // `ioctl::tests`): the resume key, a copy of one 4 KiB chunk, and its answer.
    const RESUME_KEY_RESPONSE: &str = "
        fe534d4240000100000000000b00010011000000000000000900000000000000000000008728403a62d14fe700000000
        000000000000000000000000000000003100000078001400966eb1f70000000011c9760b000000007000000000000000
        70000000200000000000000000000000966eb1f70000000011c9760b0000000078001400000000000000000000000000";
    const COPYCHUNK_REQUEST: &str = "
        fe534d4240000100000000000b00010010000000000000000a00000000000000000000008728403a62d14fe700000000
        0000000000000000000000000000000039000000f240140096bd7e2a00000000ec98299e000000007800000038000000
        0000000000000000000000000c0000000100000000000000966eb1f70000000011c9760b000000007800140000000000
        0100000000000000000000000000000000000000000000000010000000000000";
    const COPYCHUNK_RESPONSE: &str = "
        fe534d4240000100000000000b00010011000000000000000a00000000000000000000008728403a62d14fe700000000
        0000000000000000000000000000000031000000f240140096bd7e2a00000000ec98299e000000007000000000000000
        700000000c0000000000000000000000010000000000000000100000";
    // smbtorture smb2.ioctl.network_interface_info against Samba 4.17 with `interfaces = lo`:
    // the output of FSCTL_QUERY_NETWORK_INTERFACE_INFO (127.0.0.1 and ::1 at 1 Gbit/s).
    const INTERFACES: &str = "
        9800000001000000000000000000000000ca9a3b00000000020000007f00000100000000000000000000000000000000
        000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
        000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
        00000000000000000000000001000000000000000000000000ca9a3b0000000017000000000000000000000000000000
        000000000000000100000000000000000000000000000000000000000000000000000000000000000000000000000000
        000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
        00000000000000000000000000000000";

    #[test]
    fn resume_key() {
        let pdu = hex(RESUME_KEY_RESPONSE);
        let output = IoctlResponse::decode(&pdu).unwrap().output;
        let rsp = ResumeKeyResponse::decode(output).unwrap();
        assert_eq!(&rsp.resume_key[..8], &hex("966eb1f700000000")[..]);
        assert_eq!(encoded(|w| rsp.encode(w)), output);
        assert!(ResumeKeyResponse::decode(&output[..27]).is_err());
    }

    #[test]
    fn copy_chunk_request_and_response() {
        let pdu = hex(COPYCHUNK_REQUEST);
        let input = IoctlRequest::decode(&pdu).unwrap().input;
        let copy = CopyChunkCopy::decode(input).unwrap();
        assert_eq!(copy.chunk_count, 1);
        let chunks: Vec<CopyChunk> = copy.chunks().unwrap().collect();
        assert_eq!(
            chunks,
            [CopyChunk {
                source_offset: 0,
                target_offset: 0,
                length: 4096
            }]
        );
        assert_eq!(
            encoded(|w| CopyChunkCopy::encode(&copy.source_key, &chunks, w)),
            input
        );
        // More chunks than the bytes hold, and a count whose size overflows.
        let mut short = input.to_vec();
        short[24] = 2;
        assert!(CopyChunkCopy::decode(&short).unwrap().chunks().is_err());
        short[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(CopyChunkCopy::decode(&short).unwrap().chunks().is_err());
        assert!(CopyChunkCopy::decode(&input[..31]).is_err());

        let pdu = hex(COPYCHUNK_RESPONSE);
        let output = IoctlResponse::decode(&pdu).unwrap().output;
        let rsp = CopyChunkResponse::decode(output).unwrap();
        assert_eq!(
            rsp,
            CopyChunkResponse {
                chunks_written: 1,
                chunk_bytes_written: 0,
                total_bytes_written: 4096
            }
        );
        assert_eq!(encoded(|w| rsp.encode(w)), output);
        assert!(CopyChunkResponse::decode(&output[..11]).is_err());
    }

    #[test]
    fn network_interfaces() {
        let bytes = hex(INTERFACES);
        let list = NetworkInterface::decode_list(&bytes).unwrap();
        let expected = [
            NetworkInterface {
                if_index: 1,
                capability: InterfaceCapability::empty(),
                link_speed: 1_000_000_000,
                address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            },
            NetworkInterface {
                if_index: 1,
                capability: InterfaceCapability::empty(),
                link_speed: 1_000_000_000,
                address: IpAddr::V6(Ipv6Addr::LOCALHOST),
            },
        ];
        assert_eq!(list, expected);
        assert_eq!(
            encoded(|w| NetworkInterface::encode_list(&expected, w)),
            bytes
        );
        // Truncated, an unknown family, and a Next pointing backwards.
        assert!(NetworkInterface::decode_list(&bytes[..200]).is_err());
        let mut bad = bytes.clone();
        bad[24] = 9;
        assert!(NetworkInterface::decode_list(&bad).is_err());
        let mut bad = bytes.clone();
        bad[0] = 4;
        assert!(NetworkInterface::decode_list(&bad).is_err());
    }
}
