//! TREE_CONNECT (MS-SMB2 2.2.9, 2.2.9.1, 2.2.9.2, 2.2.10).

use smb3d_dtyp::AccessMask;
use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Writer, decode_utf16le};

use crate::header::SMB2_HEADER_LEN;
use crate::util::{body, len16, len32, to_usize};

smb3d_wire::open_flags! {
    /// TREE_CONNECT request Flags (MS-SMB2 2.2.9; Reserved before 3.1.1).
    pub struct TreeConnectFlags(u16) {
        CLUSTER_RECONNECT = 0x0001,
        REDIRECT_TO_OWNER = 0x0002,
        EXTENSION_PRESENT = 0x0004,
    }
}

smb3d_wire::open_enum! {
    /// Tree connect context types (MS-SMB2 2.2.9.2).
    pub struct TreeConnectContextType(u16) {
        RESERVED = 0x0000,
        REMOTED_IDENTITY = 0x0001,
    }
}

smb3d_wire::open_enum! {
    /// ShareType (MS-SMB2 2.2.10).
    pub struct ShareType(u8) {
        DISK = 0x01,
        PIPE = 0x02,
        PRINT = 0x03,
    }
}

smb3d_wire::open_flags! {
    /// ShareFlags (MS-SMB2 2.2.10). The caching policy is the 2-bit field CACHING_MASK, whose
    /// value 0 is MANUAL_CACHING.
    pub struct ShareFlags(u32) {
        MANUAL_CACHING = 0x0000_0000,
        AUTO_CACHING = 0x0000_0010,
        VDO_CACHING = 0x0000_0020,
        NO_CACHING = 0x0000_0030,
        DFS = 0x0000_0001,
        DFS_ROOT = 0x0000_0002,
        RESTRICT_EXCLUSIVE_OPENS = 0x0000_0100,
        FORCE_SHARED_DELETE = 0x0000_0200,
        ALLOW_NAMESPACE_CACHING = 0x0000_0400,
        ACCESS_BASED_DIRECTORY_ENUM = 0x0000_0800,
        FORCE_LEVELII_OPLOCK = 0x0000_1000,
        ENABLE_HASH_V1 = 0x0000_2000,
        ENABLE_HASH_V2 = 0x0000_4000,
        ENCRYPT_DATA = 0x0000_8000,
        IDENTITY_REMOTING = 0x0004_0000,
        COMPRESS_DATA = 0x0010_0000,
        ISOLATED_TRANSPORT = 0x0020_0000,
    }
}

impl ShareFlags {
    /// The bits that hold the caching policy.
    pub const CACHING_MASK: ShareFlags = ShareFlags(0x0000_0030);
}

smb3d_wire::open_flags! {
    /// Share Capabilities (MS-SMB2 2.2.10).
    pub struct TreeCapabilities(u32) {
        DFS = 0x0000_0008,
        CONTINUOUS_AVAILABILITY = 0x0000_0010,
        SCALEOUT = 0x0000_0020,
        CLUSTER = 0x0000_0040,
        ASYMMETRIC = 0x0000_0080,
        REDIRECT_TO_OWNER = 0x0000_0100,
    }
}

/// An SMB2_TREE_CONNECT_CONTEXT (MS-SMB2 2.2.9.2), kept raw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeConnectContext<'a> {
    pub context_type: TreeConnectContextType,
    pub data: &'a [u8],
}

/// SMB2 TREE_CONNECT Request (MS-SMB2 2.2.9).
///
/// With EXTENSION_PRESENT (3.1.1 only; the server ignores it for other dialects) the buffer
/// starts with the TREE_CONNECT_Request_Extension (2.2.9.1). PathOffset and
/// TreeConnectContextOffset are read as offsets from the SMB2 header, like every other SMB2
/// offset; the contexts are 8-byte aligned like negotiate contexts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeConnectRequest<'a> {
    /// The flags as sent; EXTENSION_PRESENT is set on encode exactly when `contexts` is
    /// `Some`.
    pub flags: TreeConnectFlags,
    /// The share path, `\\server\share`.
    pub path: String,
    /// The extension's tree connect contexts, when the extension is present.
    pub contexts: Option<Vec<TreeConnectContext<'a>>>,
}

/// Fixed part of TREE_CONNECT_Request_Extension before PathName.
const EXTENSION_LEN: usize = 16;
/// Where the Buffer starts: after the 8-byte fixed part.
const REQUEST_BUFFER_OFFSET: usize = SMB2_HEADER_LEN + 8;

impl<'a> TreeConnectRequest<'a> {
    /// MS-SMB2 2.2.9.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 9)?;
        let flags = TreeConnectFlags(r.u16("Flags")?);
        let path_offset = usize::from(r.u16("PathOffset")?);
        let path_len = usize::from(r.u16("PathLength")?);
        let path = decode_utf16le(r.buffer_at(path_offset, path_len, "Path")?, "Path")?;
        let contexts = if flags.contains(TreeConnectFlags::EXTENSION_PRESENT) {
            let context_offset = to_usize(r.u32("TreeConnectContextOffset")?);
            let count = r.u16("TreeConnectContextCount")?;
            r.skip(10, "Reserved")?;
            Some(decode_contexts(&r, context_offset, count)?)
        } else {
            None
        };
        Ok(Self {
            flags,
            path,
            contexts,
        })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        let path_len = len16(self.path.encode_utf16().count() * 2);
        let Some(contexts) = &self.contexts else {
            w.u16(9)
                .u16(self.flags.without(TreeConnectFlags::EXTENSION_PRESENT).0)
                .u16(len16(REQUEST_BUFFER_OFFSET))
                .u16(path_len);
            w.utf16(&self.path);
            return;
        };
        w.u16(9)
            .u16(self.flags.union(TreeConnectFlags::EXTENSION_PRESENT).0)
            .u16(len16(REQUEST_BUFFER_OFFSET + EXTENSION_LEN))
            .u16(path_len);
        let context_offset = w.reserve_u32();
        w.u16(len16(contexts.len())).zeros(10);
        w.utf16(&self.path);
        for (i, c) in contexts.iter().enumerate() {
            w.align(8);
            if i == 0 {
                let first = len32(w.offset());
                w.patch_u32(context_offset, first);
            }
            w.u16(c.context_type.0)
                .u16(len16(c.data.len()))
                .u32(0)
                .bytes(c.data);
        }
    }
}

fn decode_contexts<'a>(
    body: &Reader<'a>,
    offset: usize,
    count: u16,
) -> Result<Vec<TreeConnectContext<'a>>, DecodeError> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if offset < SMB2_HEADER_LEN {
        return Err(DecodeError::new(
            "TreeConnectContextOffset",
            DecodeErrorKind::OutOfBounds,
        ));
    }
    let mut r = body.clone();
    r.seek(offset, "TreeConnectContextOffset")?;
    let mut out = Vec::with_capacity(usize::from(count).min(r.remaining() / 8));
    for i in 0..count {
        if i > 0 {
            let aligned = r.pos().checked_next_multiple_of(8).ok_or(DecodeError::new(
                "TreeConnectContext",
                DecodeErrorKind::Overflow,
            ))?;
            r.seek(aligned, "TreeConnectContext padding")?;
        }
        let context_type = TreeConnectContextType(r.u16("ContextType")?);
        let len = usize::from(r.u16("DataLength")?);
        r.skip(4, "Reserved")?;
        let data = r.bytes(len, "TreeConnectContext.Data")?;
        out.push(TreeConnectContext { context_type, data });
    }
    Ok(out)
}

/// SMB2 TREE_CONNECT Response (MS-SMB2 2.2.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeConnectResponse {
    pub share_type: ShareType,
    pub share_flags: ShareFlags,
    pub capabilities: TreeCapabilities,
    pub maximal_access: AccessMask,
}

impl TreeConnectResponse {
    /// MS-SMB2 2.2.10.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 16)?;
        let share_type = ShareType(r.u8("ShareType")?);
        r.skip(1, "Reserved")?;
        Ok(Self {
            share_type,
            share_flags: ShareFlags(r.u32("ShareFlags")?),
            capabilities: TreeCapabilities(r.u32("Capabilities")?),
            maximal_access: AccessMask(r.u32("MaximalAccess")?),
        })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(16)
            .u8(self.share_type.0)
            .u8(0)
            .u32(self.share_flags.0)
            .u32(self.capabilities.0)
            .u32(self.maximal_access.0);
    }
}

smb3d_wire::impl_codec!(TreeConnectRequest<'a>, TreeConnectResponse);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body};
    use proptest::prelude::*;

    // smbclient -m SMB3_11 against Samba 4.17: connecting to IPC$ and to the disk share.
    const REQUEST_IPC: &str = "
        fe534d42400001000000000003000100180000000000000003000000000000000000000000000000b523934800000000
        f92dd96eb24515d09cb9d1af9deff7df09000000480020005c005c003100320037002e0030002e0030002e0031005c00
        4900500043002400";
    const RESPONSE_IPC: &str = "
        fe534d42400001000000000003000100190000000000000003000000000000000000000055969cedb523934800000000
        4bec666bf65f9f9ec95d2811ce3df0d2100002000000000000000000a9001f00";
    const REQUEST_SHARE: &str = "
        fe534d42400001000000000003000100180000000000000006000000000000000000000000000000b523934800000000
        77cf98bda997c5881393e72e2d02091809000000480022005c005c003100320037002e0030002e0030002e0031005c00
        73006800610072006500";
    const RESPONSE_SHARE: &str = "
        fe534d424000010000000000030001001900000000000000060000000000000000000000a3d50cb7b523934800000000
        fd24e7c573213e8a03e939367a4ce1c5100001000000000000000000ff011f00";

    #[test]
    fn captured() {
        for (req_hex, rsp_hex, path, share_type, access) in [
            (
                REQUEST_IPC,
                RESPONSE_IPC,
                r"\\127.0.0.1\IPC$",
                ShareType::PIPE,
                0x001f_00a9,
            ),
            (
                REQUEST_SHARE,
                RESPONSE_SHARE,
                r"\\127.0.0.1\share",
                ShareType::DISK,
                0x001f_01ff,
            ),
        ] {
            let pdu = hex(req_hex);
            let req = golden::<TreeConnectRequest>(&pdu);
            assert_eq!(req.path, path);
            assert!(req.flags.is_empty());
            assert_eq!(req.contexts, None);

            let pdu = hex(rsp_hex);
            let rsp = golden::<TreeConnectResponse>(&pdu);
            assert_eq!(rsp.share_type, share_type);
            assert_eq!(rsp.share_flags, ShareFlags::MANUAL_CACHING);
            assert_eq!(rsp.maximal_access, AccessMask(access));
        }
    }

    #[test]
    fn extension_layout() {
        // Built by hand from MS-SMB2 2.2.9.1: PathOffset 88 (after the 16-byte extension
        // header), one REMOTED_IDENTITY context 8-byte aligned after the path.
        let req = TreeConnectRequest {
            flags: TreeConnectFlags::EXTENSION_PRESENT,
            path: r"\\s\x".into(),
            contexts: Some(vec![TreeConnectContext {
                context_type: TreeConnectContextType::REMOTED_IDENTITY,
                data: &[1, 2, 3],
            }]),
        };
        let mut buf = vec![0u8; 64];
        req.encode(&mut Writer::with_base(&mut buf, 0));
        assert_eq!(
            &buf[64..],
            &hex("
                0900 0400 5800 0a00
                68000000 0100 00000000000000000000
                5c005c0073005c007800 000000000000
                0100 0300 00000000 010203")[..]
        );
        assert_eq!(TreeConnectRequest::decode(&buf).unwrap(), req);
    }

    #[test]
    fn rejections() {
        let pdu = hex(REQUEST_SHARE);
        let mut bad = pdu.clone();
        bad[64 + 6] = 0x21;
        assert_eq!(
            TreeConnectRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::InvalidUtf16
        );
        let mut bad = pdu.clone();
        bad[64 + 6] = 0x24;
        assert_eq!(
            TreeConnectRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        let mut bad = pdu.clone();
        bad[64 + 4] = 0x3e;
        assert_eq!(
            TreeConnectRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        // An unpaired surrogate in the path.
        let mut bad = pdu.clone();
        bad[72..74].copy_from_slice(&[0x00, 0xD8]);
        assert_eq!(
            TreeConnectRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::InvalidUtf16
        );
        // EXTENSION_PRESENT on a request whose buffer is a plain path: the contexts offset
        // ("\\" "1" read as a u32) points far past the end.
        let mut bad = pdu.clone();
        bad[66] = 4;
        bad[72 + 6] = 1;
        assert!(TreeConnectRequest::decode(&bad).is_err());
        assert!(TreeConnectResponse::decode(&pdu_with_body(&[16, 0, 1, 0])).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(path in "[a-zA-Z0-9\\\\$.]{0,40}", flags in any::<u16>(), with in any::<bool>(), data in proptest::collection::vec(any::<u8>(), 0..20), n in 0usize..3) {
            let contexts = with.then(|| (0..n).map(|i| TreeConnectContext { context_type: TreeConnectContextType(i as u16), data: &data }).collect());
            let flags = TreeConnectFlags(flags);
            let req = TreeConnectRequest {
                flags: if with { flags.union(TreeConnectFlags::EXTENSION_PRESENT) } else { flags.without(TreeConnectFlags::EXTENSION_PRESENT) },
                path,
                contexts,
            };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&req, &mut buf), req);
        }
    }
}
