//! IOCTL (MS-SMB2 2.2.31, 2.2.32) and the VALIDATE_NEGOTIATE_INFO bodies (2.2.31.4,
//! 2.2.32.6). Server-side copy and network interfaces are in `fsctl`; MS-FSCC FSCTL bodies
//! live in the fscc crate.

use smb3d_wire::{DecodeError, Guid, Reader, Writer};

use crate::file_id::FileId;
use crate::negotiate::{Capabilities, Dialect, SecurityMode};
use crate::output::PendingOutput;
use crate::util::{body, len16, len32, to_usize};

smb3d_wire::open_enum! {
    /// The CtlCode values MS-SMB2 2.2.31 names, and the MS-FSCC 2.3 file system controls the
    /// server answers; any other FSCTL or IOCTL code is kept.
    pub struct CtlCode(u32) {
        FSCTL_DFS_GET_REFERRALS = 0x0006_0194,
        FSCTL_PIPE_PEEK = 0x0011_400C,
        FSCTL_PIPE_WAIT = 0x0011_0018,
        FSCTL_PIPE_TRANSCEIVE = 0x0011_C017,
        FSCTL_SRV_COPYCHUNK = 0x0014_40F2,
        FSCTL_SRV_ENUMERATE_SNAPSHOTS = 0x0014_4064,
        FSCTL_SRV_REQUEST_RESUME_KEY = 0x0014_0078,
        FSCTL_SRV_READ_HASH = 0x0014_41BB,
        FSCTL_SRV_COPYCHUNK_WRITE = 0x0014_80F2,
        FSCTL_LMR_REQUEST_RESILIENCY = 0x0014_01D4,
        FSCTL_QUERY_NETWORK_INTERFACE_INFO = 0x0014_01FC,
        FSCTL_SET_REPARSE_POINT = 0x0009_00A4,
        FSCTL_DFS_GET_REFERRALS_EX = 0x0006_01B0,
        FSCTL_FILE_LEVEL_TRIM = 0x0009_8208,
        FSCTL_VALIDATE_NEGOTIATE_INFO = 0x0014_0204,
        FSCTL_GET_COMPRESSION = 0x0009_003C,
        FSCTL_SET_COMPRESSION = 0x0009_C040,
        FSCTL_SET_OBJECT_ID = 0x0009_0098,
        FSCTL_GET_OBJECT_ID = 0x0009_009C,
        FSCTL_DELETE_OBJECT_ID = 0x0009_00A0,
        FSCTL_GET_REPARSE_POINT = 0x0009_00A8,
        FSCTL_DELETE_REPARSE_POINT = 0x0009_00AC,
        FSCTL_SET_OBJECT_ID_EXTENDED = 0x0009_00BC,
        FSCTL_CREATE_OR_GET_OBJECT_ID = 0x0009_00C0,
        FSCTL_SET_SPARSE = 0x0009_00C4,
        FSCTL_SET_ZERO_DATA = 0x0009_80C8,
        FSCTL_QUERY_ALLOCATED_RANGES = 0x0009_40CF,
        FSCTL_GET_INTEGRITY_INFORMATION = 0x0009_027C,
        FSCTL_SET_INTEGRITY_INFORMATION = 0x0009_C280,
        FSCTL_SET_INTEGRITY_INFORMATION_EX = 0x0009_0380,
        FSCTL_DUPLICATE_EXTENTS_TO_FILE = 0x0009_8344,
        FSCTL_DUPLICATE_EXTENTS_TO_FILE_EX = 0x0009_83E8,
        FSCTL_IS_PATHNAME_VALID = 0x0009_002C,
        FSCTL_FILESYSTEM_GET_STATISTICS = 0x0009_0060,
        FSCTL_GET_NTFS_VOLUME_DATA = 0x0009_0064,
        FSCTL_GET_RETRIEVAL_POINTERS = 0x0009_0073,
        FSCTL_FIND_FILES_BY_SID = 0x0009_008F,
        FSCTL_QUERY_FILE_REGIONS = 0x0009_0284,
        FSCTL_OFFLOAD_READ = 0x0009_4264,
        FSCTL_OFFLOAD_WRITE = 0x0009_8268,
        FSCTL_READ_FILE_USN_DATA = 0x0009_00EB,
        FSCTL_WRITE_USN_CLOSE_RECORD = 0x0009_00EF,
        FSCTL_SET_ZERO_ON_DEALLOCATION = 0x0009_0194,
        FSCTL_SET_SHORT_NAME_BEHAVIOR = 0x0009_01B4,
        FSCTL_QUERY_ON_DISK_VOLUME_INFO = 0x0009_013C,
        FSCTL_SIS_COPYFILE = 0x0009_0100,
        FSCTL_MARK_HANDLE = 0x0009_00FC,
    }
}

smb3d_wire::open_flags! {
    /// IOCTL request Flags (MS-SMB2 2.2.31): 0 is SMB2_0_IOCTL_IS_IOCTL.
    pub struct IoctlFlags(u32) {
        IS_FSCTL = 0x0000_0001,
    }
}

/// SMB2 IOCTL Request (MS-SMB2 2.2.31).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoctlRequest<'a> {
    pub ctl_code: CtlCode,
    pub file_id: FileId,
    pub input: &'a [u8],
    pub max_input_response: u32,
    /// The client's output buffer (used by a few FSCTLs; usually empty).
    pub output: &'a [u8],
    pub max_output_response: u32,
    pub flags: IoctlFlags,
}

/// Where a request's buffers start: after the 56-byte fixed part.
const REQUEST_BUFFER_OFFSET: usize = 64 + 56;

impl<'a> IoctlRequest<'a> {
    /// MS-SMB2 2.2.31.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 57)?;
        r.skip(2, "Reserved")?;
        let ctl_code = CtlCode(r.u32("CtlCode")?);
        let file_id = FileId::read(&mut r)?;
        let input_offset = to_usize(r.u32("InputOffset")?);
        let input_count = to_usize(r.u32("InputCount")?);
        let max_input_response = r.u32("MaxInputResponse")?;
        let output_offset = to_usize(r.u32("OutputOffset")?);
        let output_count = to_usize(r.u32("OutputCount")?);
        let max_output_response = r.u32("MaxOutputResponse")?;
        let flags = IoctlFlags(r.u32("Flags")?);
        r.skip(4, "Reserved2")?;
        Ok(Self {
            ctl_code,
            file_id,
            input: r.buffer_at(input_offset, input_count, "Input")?,
            max_input_response,
            output: r.buffer_at(output_offset, output_count, "Output")?,
            max_output_response,
            flags,
        })
    }

    /// Writes the body after the header: the input at 0x78, the output after it; empty
    /// buffers have offset 0, and a pad byte stands in when both are empty.
    pub fn encode(&self, w: &mut Writer<'_>) {
        let input_offset = if self.input.is_empty() {
            0
        } else {
            REQUEST_BUFFER_OFFSET
        };
        let output_offset = if self.output.is_empty() {
            0
        } else {
            REQUEST_BUFFER_OFFSET + self.input.len()
        };
        w.u16(57).u16(0).u32(self.ctl_code.0);
        self.file_id.write(w);
        w.u32(len32(input_offset))
            .u32(len32(self.input.len()))
            .u32(self.max_input_response)
            .u32(len32(output_offset))
            .u32(len32(self.output.len()))
            .u32(self.max_output_response)
            .u32(self.flags.0)
            .u32(0)
            .bytes(self.input)
            .bytes(self.output);
        if self.input.is_empty() && self.output.is_empty() {
            w.u8(0);
        }
    }
}

/// SMB2 IOCTL Response (MS-SMB2 2.2.32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoctlResponse<'a> {
    pub ctl_code: CtlCode,
    pub file_id: FileId,
    /// Echoed input, for the few FSCTLs that return it; usually empty.
    pub input: &'a [u8],
    pub output: &'a [u8],
}

impl<'a> IoctlResponse<'a> {
    /// Writes the fixed part with no input and the output to follow; append the output, then
    /// call [`IoctlResponse::finish`].
    pub fn begin(w: &mut Writer<'_>, ctl_code: CtlCode, file_id: FileId) -> PendingOutput {
        let start = w.offset() + 48;
        w.u16(49).u16(0).u32(ctl_code.0);
        file_id.write(w);
        w.u32(len32(start)).u32(0).u32(len32(start));
        let pending = PendingOutput::reserve(w, start);
        w.u32(0).u32(0);
        pending
    }

    /// Fills in OutputCount from what was written since `begin`; returns it.
    pub fn finish(w: &mut Writer<'_>, pending: PendingOutput) -> u32 {
        pending.finish(w)
    }

    /// Writes the body after the header: the input (if any) right after the fixed part, the
    /// output 8-byte aligned after it.
    pub fn encode(&self, w: &mut Writer<'_>) {
        let input_offset = w.offset() + 48;
        let output_offset = if self.input.is_empty() {
            input_offset
        } else {
            (input_offset + self.input.len()).next_multiple_of(8)
        };
        w.u16(49).u16(0).u32(self.ctl_code.0);
        self.file_id.write(w);
        w.u32(len32(input_offset))
            .u32(len32(self.input.len()))
            .u32(len32(output_offset))
            .u32(len32(self.output.len()))
            .u32(0)
            .u32(0)
            .bytes(self.input);
        if !self.input.is_empty() {
            w.align(8);
        }
        w.bytes(self.output);
    }

    /// MS-SMB2 2.2.32.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 49)?;
        r.skip(2, "Reserved")?;
        let ctl_code = CtlCode(r.u32("CtlCode")?);
        let file_id = FileId::read(&mut r)?;
        let input_offset = to_usize(r.u32("InputOffset")?);
        let input_count = to_usize(r.u32("InputCount")?);
        let output_offset = to_usize(r.u32("OutputOffset")?);
        let output_count = to_usize(r.u32("OutputCount")?);
        r.skip(8, "Flags/Reserved2")?;
        Ok(Self {
            ctl_code,
            file_id,
            input: r.buffer_at(input_offset, input_count, "Input")?,
            output: r.buffer_at(output_offset, output_count, "Output")?,
        })
    }
}

/// VALIDATE_NEGOTIATE_INFO request, the IOCTL input (MS-SMB2 2.2.31.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidateNegotiateInfoRequest {
    pub capabilities: Capabilities,
    pub guid: Guid,
    pub security_mode: SecurityMode,
    pub dialects: Vec<Dialect>,
}

impl ValidateNegotiateInfoRequest {
    /// Decodes the IOCTL input; the dialect count must match the bytes present.
    pub fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(input);
        let capabilities = Capabilities(r.u32("Capabilities")?);
        let guid = r.guid("Guid")?;
        let security_mode = SecurityMode(r.u16("SecurityMode")?);
        let count = usize::from(r.u16("DialectCount")?);
        let raw = r.bytes(count * 2, "Dialects")?;
        Ok(Self {
            capabilities,
            guid,
            security_mode,
            dialects: raw
                .chunks_exact(2)
                .map(|c| Dialect(crate::util::le16(c)))
                .collect(),
        })
    }

    /// Writes the IOCTL input.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u32(self.capabilities.0)
            .guid(&self.guid)
            .u16(self.security_mode.0)
            .u16(len16(self.dialects.len()));
        for d in &self.dialects {
            w.u16(d.0);
        }
    }
}

/// NETWORK_RESILIENCY_REQUEST, the input of FSCTL_LMR_REQUEST_RESILIENCY (MS-SMB2 2.2.31.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkResiliencyRequest {
    /// How long the server keeps the open after a disconnect, in milliseconds.
    pub timeout_ms: u32,
}

impl NetworkResiliencyRequest {
    /// Size of the input.
    pub const LEN: usize = 8;

    /// Decodes the IOCTL input; Reserved is ignored, bytes after it too.
    pub fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(input);
        let timeout_ms = r.u32("Timeout")?;
        r.u32("Reserved")?;
        Ok(Self { timeout_ms })
    }

    /// Writes the IOCTL input.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u32(self.timeout_ms).u32(0);
    }
}

/// VALIDATE_NEGOTIATE_INFO response, the IOCTL output (MS-SMB2 2.2.32.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidateNegotiateInfoResponse {
    pub capabilities: Capabilities,
    pub guid: Guid,
    pub security_mode: SecurityMode,
    pub dialect: Dialect,
}

impl ValidateNegotiateInfoResponse {
    /// Size of the output.
    pub const LEN: usize = 24;

    /// Decodes the IOCTL output.
    pub fn decode(output: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(output);
        Ok(Self {
            capabilities: Capabilities(r.u32("Capabilities")?),
            guid: r.guid("Guid")?,
            security_mode: SecurityMode(r.u16("SecurityMode")?),
            dialect: Dialect(r.u16("Dialect")?),
        })
    }

    /// Writes the IOCTL output.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u32(self.capabilities.0)
            .guid(&self.guid)
            .u16(self.security_mode.0)
            .u16(self.dialect.0);
    }
}

smb3d_wire::impl_codec!(
    IoctlRequest<'a>,
    IoctlResponse<'a>,
    ValidateNegotiateInfoRequest,
    ValidateNegotiateInfoResponse,
    NetworkResiliencyRequest
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body, with_header};
    use proptest::prelude::*;
    use smb3d_wire::DecodeErrorKind;

    // The input smbtorture smb2.lock.replay_broken_windows sends: a 1000 ms timeout.
    #[test]
    fn network_resiliency_request_round_trips() {
        let input = hex("e803000000000000");
        let req = NetworkResiliencyRequest::decode(&input).unwrap();
        assert_eq!(req.timeout_ms, 1000);
        let mut out = Vec::new();
        req.encode(&mut Writer::new(&mut out));
        assert_eq!(out, input);
        assert!(NetworkResiliencyRequest::decode(&input[..7]).is_err());
    }

    // smbclient -m SMB3_00 against Samba 4.17: FSCTL_VALIDATE_NEGOTIATE_INFO and its response.
    // smbclient puts an empty output at the input's offset; we write 0.
    const VALIDATE_REQUEST: &str = "
        fe534d4240000100000000000b0001000800000000000000040000000000000000000000ccf139389bc213a400000000
        5a10af601521f0b2a19a44ae0efa58d83900000004021400ffffffffffffffffffffffffffffffff780000001e000000
        0000000078000000000000001800000001000000000000007f000000590439a36a2a28419eb6b8407a897cb901000300
        020210020003";
    const VALIDATE_RESPONSE: &str = "
        fe534d4240000100000000000b0001000900000000000000040000000000000000000000ccf139389bc213a400000000
        2a51fc9eb29e5741ee2e3a8d14f0f70a3100000004021400ffffffffffffffffffffffffffffffff7000000000000000
        700000001800000000000000000000004f000000766d000000000000000000000000000001000003";
    // smbclient -m SMB3_11: FSCTL_DFS_GET_REFERRALS on IPC$ and
    // FSCTL_SRV_ENUMERATE_SNAPSHOTS (no buffers: offsets 0 and a pad byte).
    const DFS_REQUEST: &str = "
        fe534d4240000100000000000b000100100000000000000004000000000000000000000055969cedb523934800000000
        000000000000000000000000000000003900000094010600ffffffffffffffffffffffffffffffff7800000024000000
        000000007800000000000000ffff0000010000000000000003005c003100320037002e0030002e0030002e0031005c00
        730068006100720065000000";
    const SNAPSHOTS_REQUEST: &str = "
        fe534d4240000100000000000b0001001000000000000000180000000000000000000000a3d50cb7b523934800000000
        00000000000000000000000000000000390000006440140037c94527000000003ffb5ae3000000000000000000000000
        00000000000000000000000010000000010000000000000000";
    // smbtorture smb2.ioctl.copy_chunk_simple: FSCTL_SRV_REQUEST_RESUME_KEY and
    // FSCTL_SRV_COPYCHUNK with Samba's responses.
    const RESUME_KEY_REQUEST: &str = "
        fe534d4240000100000000000b00010010000000000000000900000000000000000000008728403a62d14fe700000000
        000000000000000000000000000000003900000078001400966eb1f70000000011c9760b000000000000000000000000
        00000000000000000000000020000000010000000000000000";
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

    fn request(pdu: &[u8]) -> IoctlRequest<'_> {
        let req = IoctlRequest::decode(pdu).unwrap();
        assert_eq!(req.flags, IoctlFlags::IS_FSCTL);
        req
    }

    fn response_round_trip(pdu: &[u8]) -> IoctlResponse<'_> {
        let rsp = golden::<IoctlResponse>(pdu);
        let in_place = with_header(pdu, |w| {
            let pending = IoctlResponse::begin(w, rsp.ctl_code, rsp.file_id);
            w.bytes(rsp.output);
            IoctlResponse::finish(w, pending);
        });
        assert_eq!(in_place, pdu);
        rsp
    }

    #[test]
    fn validate_negotiate() {
        let pdu = hex(VALIDATE_REQUEST);
        let req = request(&pdu);
        assert_eq!(req.ctl_code, CtlCode::FSCTL_VALIDATE_NEGOTIATE_INFO);
        assert!(req.file_id.is_any());
        assert_eq!(req.max_output_response, 24);
        let mut expected = pdu.clone();
        expected[64 + 36] = 0;
        assert_eq!(with_header(&pdu, |w| req.encode(w)), expected);
        let info = ValidateNegotiateInfoRequest::decode(req.input).unwrap();
        assert_eq!(info.capabilities, Capabilities(0x7f));
        assert_eq!(info.security_mode, SecurityMode::SIGNING_ENABLED);
        assert_eq!(
            info.dialects,
            [Dialect::SMB2_0_2, Dialect::SMB2_1, Dialect::SMB3_0]
        );
        let mut again = Vec::new();
        info.encode(&mut Writer::new(&mut again));
        assert_eq!(again, req.input);

        let pdu = hex(VALIDATE_RESPONSE);
        let rsp = response_round_trip(&pdu);
        let info = ValidateNegotiateInfoResponse::decode(rsp.output).unwrap();
        assert_eq!(info.dialect, Dialect::SMB3_0);
        assert_eq!(info.capabilities, Capabilities(0x4f));
        let mut again = Vec::new();
        info.encode(&mut Writer::new(&mut again));
        assert_eq!(again, rsp.output);
    }

    #[test]
    fn other_fsctls() {
        let pdu = hex(DFS_REQUEST);
        let req = request(&pdu);
        assert_eq!(req.ctl_code, CtlCode::FSCTL_DFS_GET_REFERRALS);
        assert_eq!(req.input.len(), 0x24);
        assert_eq!(req.max_output_response, 0xffff);

        for vector in [SNAPSHOTS_REQUEST, RESUME_KEY_REQUEST, COPYCHUNK_REQUEST] {
            let pdu = hex(vector);
            let req = request(&pdu);
            assert_eq!(with_header(&pdu, |w| req.encode(w)), pdu);
        }
        let pdu = hex(COPYCHUNK_REQUEST);
        let req = request(&pdu);
        assert_eq!(req.ctl_code, CtlCode::FSCTL_SRV_COPYCHUNK);
        assert_eq!(req.input.len(), 0x38);

        let pdu = hex(RESUME_KEY_RESPONSE);
        let rsp = response_round_trip(&pdu);
        assert_eq!(rsp.ctl_code, CtlCode::FSCTL_SRV_REQUEST_RESUME_KEY);
        assert_eq!(rsp.output.len(), 32);
        let pdu = hex(COPYCHUNK_RESPONSE);
        let rsp = response_round_trip(&pdu);
        assert_eq!(rsp.output, &hex("01000000 00000000 00100000")[..]);
    }

    #[test]
    fn rejections() {
        let pdu = hex(COPYCHUNK_REQUEST);
        for (field_at, value, kind) in [
            (24usize, 0x20u32, DecodeErrorKind::OutOfBounds),
            (28, 0x39, DecodeErrorKind::OutOfBounds),
            (24, u32::MAX, DecodeErrorKind::OutOfBounds),
        ] {
            let mut bad = pdu.clone();
            bad[64 + field_at..64 + field_at + 4].copy_from_slice(&value.to_le_bytes());
            assert_eq!(IoctlRequest::decode(&bad).unwrap_err().kind, kind);
        }
        let mut bad = pdu.clone();
        bad[64 + 36..64 + 44].copy_from_slice(&[0x78, 0, 0, 0, 0x80, 0, 0, 0]);
        assert_eq!(IoctlRequest::decode(&bad).unwrap_err().field, "Output");
        assert!(IoctlRequest::decode(&pdu[..64 + 55]).is_err());
        assert!(IoctlResponse::decode(&pdu_with_body(&[49, 0])).is_err());
        assert_eq!(
            ValidateNegotiateInfoRequest::decode(&[0; 23])
                .unwrap_err()
                .field,
            "DialectCount"
        );
        let mut input = vec![0u8; 24];
        input[22] = 2;
        input.extend_from_slice(&[2, 2]);
        assert_eq!(
            ValidateNegotiateInfoRequest::decode(&input)
                .unwrap_err()
                .field,
            "Dialects"
        );
        assert!(ValidateNegotiateInfoResponse::decode(&[0; 23]).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(code in any::<u32>(), n in any::<[u32; 3]>(), input in proptest::collection::vec(any::<u8>(), 0..50), output in proptest::collection::vec(any::<u8>(), 0..50)) {
            let req = IoctlRequest { ctl_code: CtlCode(code), file_id: FileId::ANY, input: &input, max_input_response: n[0], output: &output, max_output_response: n[1], flags: IoctlFlags(n[2]) };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&req, &mut buf), req);
            let rsp = IoctlResponse { ctl_code: CtlCode(code), file_id: FileId::ANY, input: &input, output: &output };
            prop_assert_eq!(pdu_round_trip(&rsp, &mut buf), rsp);
        }
    }
}
