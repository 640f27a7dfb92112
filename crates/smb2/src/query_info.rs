//! QUERY_INFO (MS-SMB2 2.2.37, 2.2.38).

use smb3d_wire::{DecodeError, Writer};

use crate::file_id::FileId;
use crate::output::{PendingOutput, offset16_length32};
use crate::util::{body, len16, len32, to_usize};

smb3d_wire::open_enum! {
    /// InfoType (MS-SMB2 2.2.37), shared with SET_INFO.
    pub struct InfoType(u8) {
        FILE = 0x01,
        FILESYSTEM = 0x02,
        SECURITY = 0x03,
        QUOTA = 0x04,
    }
}

smb3d_wire::open_flags! {
    /// QUERY_INFO Flags (MS-SMB2 2.2.37), used with FileFullEaInformation.
    pub struct QueryInfoFlags(u32) {
        RESTART_SCAN = 0x0000_0001,
        RETURN_SINGLE_ENTRY = 0x0000_0002,
        INDEX_SPECIFIED = 0x0000_0004,
    }
}

/// SMB2 QUERY_INFO Request (MS-SMB2 2.2.37).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryInfoRequest<'a> {
    pub info_type: InfoType,
    /// FileInfoClass (an MS-FSCC information class; 0 for security and quota queries).
    pub file_info_class: u8,
    /// The most output the client accepts.
    pub output_buffer_length: u32,
    /// Quota query parameters or an EA name list, depending on the query.
    pub input: &'a [u8],
    /// Security information flags for SECURITY, EA index for FileFullEaInformation.
    pub additional_information: u32,
    pub flags: QueryInfoFlags,
    pub file_id: FileId,
}

/// Where a QUERY_INFO request's input buffer starts: after the 40-byte fixed part.
const REQUEST_BUFFER_OFFSET: usize = 64 + 40;

impl<'a> QueryInfoRequest<'a> {
    /// MS-SMB2 2.2.37.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 41)?;
        let info_type = InfoType(r.u8("InfoType")?);
        let file_info_class = r.u8("FileInfoClass")?;
        let output_buffer_length = r.u32("OutputBufferLength")?;
        let input_offset = usize::from(r.u16("InputBufferOffset")?);
        r.skip(2, "Reserved")?;
        let input_len = to_usize(r.u32("InputBufferLength")?);
        let additional_information = r.u32("AdditionalInformation")?;
        let flags = QueryInfoFlags(r.u32("Flags")?);
        let file_id = FileId::read(&mut r)?;
        let input = r.buffer_at(input_offset, input_len, "InputBuffer")?;
        Ok(Self {
            info_type,
            file_info_class,
            output_buffer_length,
            input,
            additional_information,
            flags,
            file_id,
        })
    }

    /// Writes the body after the header. An empty input has offset 0 and a pad byte, as
    /// Windows and Samba clients send it.
    pub fn encode(&self, w: &mut Writer<'_>) {
        let offset = if self.input.is_empty() {
            0
        } else {
            REQUEST_BUFFER_OFFSET
        };
        w.u16(41)
            .u8(self.info_type.0)
            .u8(self.file_info_class)
            .u32(self.output_buffer_length)
            .u16(len16(offset))
            .u16(0)
            .u32(len32(self.input.len()))
            .u32(self.additional_information)
            .u32(self.flags.0);
        self.file_id.write(w);
        if self.input.is_empty() {
            w.u8(0);
        } else {
            w.bytes(self.input);
        }
    }
}

/// SMB2 QUERY_INFO Response (MS-SMB2 2.2.38).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryInfoResponse<'a> {
    pub output: &'a [u8],
}

impl<'a> QueryInfoResponse<'a> {
    /// Writes the fixed part; append the output, then call [`QueryInfoResponse::finish`].
    pub fn begin(w: &mut Writer<'_>) -> PendingOutput {
        offset16_length32::begin(w)
    }

    /// Fills in OutputBufferLength from what was written since `begin`; returns it.
    pub fn finish(w: &mut Writer<'_>, pending: PendingOutput) -> u32 {
        pending.finish(w)
    }

    /// Writes the body after the header with a borrowed output.
    pub fn encode(&self, w: &mut Writer<'_>) {
        let pending = Self::begin(w);
        w.bytes(self.output);
        Self::finish(w, pending);
    }

    /// MS-SMB2 2.2.38.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        Ok(Self {
            output: offset16_length32::decode(pdu)?,
        })
    }
}

smb3d_wire::impl_codec!(QueryInfoRequest<'a>, QueryInfoResponse<'a>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body, with_header};
    use proptest::prelude::*;
    use smb3d_wire::DecodeErrorKind;

    // smbclient -m SMB3_11 against Samba 4.17: FileAllInformation (class 0x12) of a.txt.
    const REQUEST_ALL_INFO: &str = "
        fe534d4240000100000000001000010010000000000000000b0000000000000000000000a3d50cb7b523934800000000
        0000000000000000000000000000000029000112ffff00000000000000000000000000000000000078967c8500000000
        18a1e5470000000000";
    const RESPONSE_ALL_INFO: &str = "
        fe534d4240000100000000001000010011000000000000000b0000000000000000000000a3d50cb7b523934800000000
        000000000000000000000000000000000900480070000000194eb691217add01194eb691217add01fbf2b691217add01
        fbf2b691217add01200000000000000000200000000000000c00000000000000010000000000000099c3980000000000
        0000000089001200000000000000000020000000000000000c0000005c0061002e00740078007400";
    // Python smbprotocol 1.17: a security descriptor query (owner, group, DACL), which it sends
    // without the pad byte.
    const REQUEST_SECURITY: &str = "
        fe534d424000010000000000100001000800000000000000090000000000000000000000dd34ed0a912c51bf00000000
        88fecf37766ff368608c76d6c05034112900030000100000000000000000000007000000000000009bcaa32500000000
        844fae8e00000000";

    #[test]
    fn captured_file_all_information() {
        let pdu = hex(REQUEST_ALL_INFO);
        let req = golden::<QueryInfoRequest>(&pdu);
        assert_eq!(req.info_type, InfoType::FILE);
        assert_eq!(req.file_info_class, 0x12);
        assert_eq!(req.output_buffer_length, 0xffff);
        assert!(req.input.is_empty());

        let pdu = hex(RESPONSE_ALL_INFO);
        let rsp = golden::<QueryInfoResponse>(&pdu);
        assert_eq!(rsp.output.len(), 0x70);
        // The in-place form produces the same bytes.
        let in_place = with_header(&pdu, |w| {
            let pending = QueryInfoResponse::begin(w);
            assert_eq!(pending.offset(), 72);
            w.bytes(rsp.output);
            assert_eq!(pending.written(w), 0x70);
            assert_eq!(QueryInfoResponse::finish(w, pending), 0x70);
        });
        assert_eq!(in_place, pdu);
    }

    #[test]
    fn captured_security_query() {
        let pdu = hex(REQUEST_SECURITY);
        let req = QueryInfoRequest::decode(&pdu).unwrap();
        assert_eq!(req.info_type, InfoType::SECURITY);
        assert_eq!(req.additional_information, 7);
        assert_eq!(req.output_buffer_length, 4096);
        let mut padded = pdu.clone();
        padded.push(0);
        assert_eq!(with_header(&pdu, |w| req.encode(w)), padded);
    }

    #[test]
    fn rejections() {
        let pdu = hex(REQUEST_ALL_INFO);
        // Input buffer inside the header, past the end, overflowing.
        for (offset, len, kind) in [
            (0x20u16, 4u32, DecodeErrorKind::OutOfBounds),
            (0x68, 2, DecodeErrorKind::OutOfBounds),
            (0xFFFF, u32::MAX, DecodeErrorKind::OutOfBounds),
        ] {
            let mut bad = pdu.clone();
            bad[64 + 8..64 + 10].copy_from_slice(&offset.to_le_bytes());
            bad[64 + 12..64 + 16].copy_from_slice(&len.to_le_bytes());
            assert_eq!(QueryInfoRequest::decode(&bad).unwrap_err().kind, kind);
        }
        assert!(QueryInfoRequest::decode(&pdu[..103]).is_err());
        let mut bad = pdu.clone();
        bad[64] = 40;
        assert!(QueryInfoRequest::decode(&bad).is_err());
        let rsp = hex(RESPONSE_ALL_INFO);
        assert!(QueryInfoResponse::decode(&rsp[..rsp.len() - 1]).is_err());
        assert!(QueryInfoResponse::decode(&pdu_with_body(&[9, 0, 8, 0, 1, 0, 0, 0])).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(t in any::<u8>(), c in any::<u8>(), n in any::<[u32; 3]>(), input in proptest::collection::vec(any::<u8>(), 0..64), output in proptest::collection::vec(any::<u8>(), 0..64)) {
            let req = QueryInfoRequest { info_type: InfoType(t), file_info_class: c, output_buffer_length: n[0], input: &input, additional_information: n[1], flags: QueryInfoFlags(n[2]), file_id: FileId::ANY };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&req, &mut buf), req);
            let rsp = QueryInfoResponse { output: &output };
            prop_assert_eq!(pdu_round_trip(&rsp, &mut buf), rsp);
        }
    }
}
