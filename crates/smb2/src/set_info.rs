//! SET_INFO (MS-SMB2 2.2.39, 2.2.40).

use smb3d_wire::{DecodeError, Writer};

use crate::file_id::FileId;
use crate::query_info::InfoType;
use crate::util::{body, len16, len32, to_usize};

/// SMB2 SET_INFO Request (MS-SMB2 2.2.39).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetInfoRequest<'a> {
    pub info_type: InfoType,
    /// FileInfoClass (an MS-FSCC information class; 0 for security and quota).
    pub file_info_class: u8,
    /// The information to set, borrowed from the PDU.
    pub buffer: &'a [u8],
    /// Security information flags for SECURITY.
    pub additional_information: u32,
    pub file_id: FileId,
}

/// Where the buffer starts: after the 32-byte fixed part.
const REQUEST_BUFFER_OFFSET: usize = 64 + 32;

impl<'a> SetInfoRequest<'a> {
    /// MS-SMB2 2.2.39.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 33)?;
        let info_type = InfoType(r.u8("InfoType")?);
        let file_info_class = r.u8("FileInfoClass")?;
        let len = to_usize(r.u32("BufferLength")?);
        let offset = usize::from(r.u16("BufferOffset")?);
        r.skip(2, "Reserved")?;
        let additional_information = r.u32("AdditionalInformation")?;
        let file_id = FileId::read(&mut r)?;
        Ok(Self {
            info_type,
            file_info_class,
            buffer: r.buffer_at(offset, len, "Buffer")?,
            additional_information,
            file_id,
        })
    }

    /// Writes the body after the header (a pad byte if the buffer is empty).
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(33)
            .u8(self.info_type.0)
            .u8(self.file_info_class)
            .u32(len32(self.buffer.len()))
            .u16(len16(REQUEST_BUFFER_OFFSET))
            .u16(0)
            .u32(self.additional_information);
        self.file_id.write(w);
        if self.buffer.is_empty() {
            w.u8(0);
        } else {
            w.bytes(self.buffer);
        }
    }
}

/// SMB2 SET_INFO Response (MS-SMB2 2.2.40): StructureSize only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SetInfoResponse;

impl SetInfoResponse {
    /// MS-SMB2 2.2.40.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        body(pdu, 2)?;
        Ok(Self)
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(2);
    }
}

smb3d_wire::impl_codec!(SetInfoRequest<'a>, SetInfoResponse);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body};
    use proptest::prelude::*;
    use smb3d_wire::DecodeErrorKind;

    // smbclient -m SMB3_11 against Samba 4.17: FileBasicInformation (setmode +r: times -1/0,
    // attributes 0x21), a rename to "b.txt" (FileRenameInformation), and delete-on-close
    // (FileDispositionInformation, one byte).
    const REQUEST_BASIC: &str = "
        fe534d4240000100000000001100010010000000000000001e0000000000000000000000a3d50cb7b523934800000000
        0000000000000000000000000000000021000104280000006000000000000000baa04bb400000000b125445000000000
        ffffffffffffffffffffffffffffffff0000000000000000ffffffffffffffff2100000000000000";
    const RESPONSE: &str = "
        fe534d4240000100000000001100010011000000000000001e0000000000000000000000a3d50cb7b523934800000000
        000000000000000000000000000000000200";
    const REQUEST_RENAME: &str = "
        fe534d4240000100000000001100010010000000000000002e0100000000000000000000a3d50cb7b523934800000000
        000000000000000000000000000000002100010a1e0000006000000000000000207af7590000000026389c4a00000000
        000000000000000000000000000000000a00000062002e00740078007400";
    const REQUEST_DISPOSITION: &str = "
        fe534d424000010000000000110001001000000000000000340200000000000000000000a3d50cb7b523934800000000
        000000000000000000000000000000002100010d010000006000000000000000195bbd8a000000007a1fab3e00000000
        01";

    #[test]
    fn captured() {
        let pdu = hex(REQUEST_BASIC);
        let req = golden::<SetInfoRequest>(&pdu);
        assert_eq!((req.info_type, req.file_info_class), (InfoType::FILE, 4));
        assert_eq!(req.buffer.len(), 40);
        assert_eq!(&req.buffer[32..36], &[0x21, 0, 0, 0]);

        let pdu = hex(REQUEST_RENAME);
        let req = golden::<SetInfoRequest>(&pdu);
        assert_eq!(req.file_info_class, 10);
        assert_eq!(req.buffer.len(), 30);

        let pdu = hex(REQUEST_DISPOSITION);
        let req = golden::<SetInfoRequest>(&pdu);
        assert_eq!((req.file_info_class, req.buffer), (13, &[1u8][..]));

        let pdu = hex(RESPONSE);
        golden::<SetInfoResponse>(&pdu);
    }

    #[test]
    fn rejections() {
        let pdu = hex(REQUEST_BASIC);
        let mut bad = pdu.clone();
        bad[64 + 4] = 41;
        assert_eq!(
            SetInfoRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        let mut bad = pdu.clone();
        bad[64 + 8] = 0x20;
        assert_eq!(
            SetInfoRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        let mut bad = pdu.clone();
        bad[64 + 4..64 + 8].copy_from_slice(&[0xFF; 4]);
        assert!(SetInfoRequest::decode(&bad).is_err());
        assert!(SetInfoRequest::decode(&pdu[..64 + 31]).is_err());
        assert!(SetInfoResponse::decode(&pdu_with_body(&[3, 0])).is_err());
        assert!(SetInfoResponse::decode(&pdu_with_body(&[2])).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(t in any::<u8>(), c in any::<u8>(), add in any::<u32>(), buffer in proptest::collection::vec(any::<u8>(), 0..80)) {
            let req = SetInfoRequest { info_type: InfoType(t), file_info_class: c, buffer: &buffer, additional_information: add, file_id: FileId::ANY };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&req, &mut buf), req);
        }
    }
}
