//! CLOSE (MS-SMB2 2.2.15, 2.2.16).

use smb3d_wire::{DecodeError, FileTimes, Writer};

use crate::file_id::FileId;
use crate::util::body;

smb3d_wire::open_flags! {
    /// CLOSE Flags (MS-SMB2 2.2.15, 2.2.16).
    pub struct CloseFlags(u16) {
        POSTQUERY_ATTRIB = 0x0001,
    }
}

/// SMB2 CLOSE Request (MS-SMB2 2.2.15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloseRequest {
    pub flags: CloseFlags,
    pub file_id: FileId,
}

impl CloseRequest {
    /// MS-SMB2 2.2.15.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 24)?;
        let flags = CloseFlags(r.u16("Flags")?);
        r.skip(4, "Reserved")?;
        Ok(Self {
            flags,
            file_id: FileId::read(&mut r)?,
        })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(24).u16(self.flags.0).u32(0);
        self.file_id.write(w);
    }
}

/// The attributes a CLOSE response carries when the client asked for POSTQUERY_ATTRIB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CloseAttributes {
    pub times: FileTimes,
    pub allocation_size: u64,
    pub end_of_file: u64,
    pub file_attributes: u32,
}

/// SMB2 CLOSE Response (MS-SMB2 2.2.16). Flags is POSTQUERY_ATTRIB exactly when `attributes`
/// is present; otherwise the attribute fields are zero on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CloseResponse {
    pub attributes: Option<CloseAttributes>,
}

impl CloseResponse {
    /// MS-SMB2 2.2.16.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 60)?;
        let flags = CloseFlags(r.u16("Flags")?);
        r.skip(4, "Reserved")?;
        let attributes = CloseAttributes {
            times: r.file_times()?,
            allocation_size: r.u64("AllocationSize")?,
            end_of_file: r.u64("EndofFile")?,
            file_attributes: r.u32("FileAttributes")?,
        };
        Ok(Self {
            attributes: flags
                .contains(CloseFlags::POSTQUERY_ATTRIB)
                .then_some(attributes),
        })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        let flags = if self.attributes.is_some() {
            CloseFlags::POSTQUERY_ATTRIB
        } else {
            CloseFlags::empty()
        };
        let a = self.attributes.unwrap_or_default();
        w.u16(60)
            .u16(flags.0)
            .u32(0)
            .file_times(a.times)
            .u64(a.allocation_size)
            .u64(a.end_of_file)
            .u32(a.file_attributes);
    }
}

smb3d_wire::impl_codec!(CloseRequest, CloseResponse);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body};
    use proptest::prelude::*;
    use smb3d_wire::FileTime;

    // Python smbprotocol 1.17 against Samba 4.17: close with POSTQUERY_ATTRIB after writing
    // 100 bytes.
    const REQUEST_POSTQUERY: &str = "
        fe534d4240000100000000000600010008000000000000000a0000000000000000000000dd34ed0a912c51bf00000000
        14e3efe34621de0786499cdc323f53c718000100000000009bcaa32500000000844fae8e00000000";
    const RESPONSE_POSTQUERY: &str = "
        fe534d4240000100000000000600010009000000000000000a0000000000000000000000dd34ed0a912c51bf00000000
        8597ab6b203037aff1b434cd512e4c213c00010000000000515422f5217add01eeda22f5217add01252a23f5217add01
        252a23f5217add010020000000000000640000000000000020000000";
    // smbclient -m SMB3_11: a plain close and its attribute-less response.
    const REQUEST_PLAIN: &str = "
        fe534d424000010000000000060001001000000000000000090000000000000000000000a3d50cb7b523934800000000
        0000000000000000000000000000000018000000000000002608bb1400000000a985037600000000";
    const RESPONSE_PLAIN: &str = "
        fe534d424000010000000000060001001100000000000000090000000000000000000000a3d50cb7b523934800000000
        000000000000000000000000000000003c00000000000000000000000000000000000000000000000000000000000000
        00000000000000000000000000000000000000000000000000000000";

    #[test]
    fn captured_with_attributes() {
        let pdu = hex(REQUEST_POSTQUERY);
        let req = golden::<CloseRequest>(&pdu);
        assert_eq!(req.flags, CloseFlags::POSTQUERY_ATTRIB);

        let pdu = hex(RESPONSE_POSTQUERY);
        let rsp = golden::<CloseResponse>(&pdu);
        let a = rsp.attributes.unwrap();
        assert_eq!(a.end_of_file, 100);
        assert_eq!(a.allocation_size, 8192);
        assert_eq!(a.file_attributes, 0x20);
        assert_eq!(a.times.creation, FileTime(0x01dd_7a21_f522_5451));
    }

    #[test]
    fn captured_plain() {
        let pdu = hex(REQUEST_PLAIN);
        let req = golden::<CloseRequest>(&pdu);
        assert!(req.flags.is_empty());
        let pdu = hex(RESPONSE_PLAIN);
        let rsp = golden::<CloseResponse>(&pdu);
        assert_eq!(rsp.attributes, None);
    }

    #[test]
    fn rejections() {
        let pdu = hex(REQUEST_PLAIN);
        assert!(CloseRequest::decode(&pdu[..87]).is_err());
        let mut bad = pdu.clone();
        bad[64] = 25;
        assert!(CloseRequest::decode(&bad).is_err());
        assert!(CloseResponse::decode(&pdu_with_body(&[60, 0])).is_err());
        assert!(CloseResponse::decode(&hex(RESPONSE_PLAIN)[..123]).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(flags in any::<u16>(), ids in any::<[u64; 2]>(), t in any::<[u64; 6]>(), attr in any::<u32>(), with in any::<bool>()) {
            let req = CloseRequest { flags: CloseFlags(flags), file_id: FileId { persistent: ids[0], volatile: ids[1] } };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&req, &mut buf), req);

            let rsp = CloseResponse { attributes: with.then_some(CloseAttributes {
                times: FileTimes { creation: FileTime(t[0]), last_access: FileTime(t[1]), last_write: FileTime(t[2]), change: FileTime(t[3]) },
                allocation_size: t[4], end_of_file: t[5], file_attributes: attr,
            }) };
            prop_assert_eq!(pdu_round_trip(&rsp, &mut buf), rsp);
        }
    }
}
