//! FLUSH (MS-SMB2 2.2.17, 2.2.18).

use smb3d_wire::{DecodeError, Writer};

use crate::file_id::FileId;
use crate::util::{body, reserved_only_pdu};

/// SMB2 FLUSH Request (MS-SMB2 2.2.17).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushRequest {
    pub file_id: FileId,
}

impl FlushRequest {
    /// MS-SMB2 2.2.17.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 24)?;
        r.skip(6, "Reserved")?;
        Ok(Self {
            file_id: FileId::read(&mut r)?,
        })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(24).u16(0).u32(0);
        self.file_id.write(w);
    }
}

reserved_only_pdu! {
    /// SMB2 FLUSH Response (MS-SMB2 2.2.18).
    FlushResponse
}

smb3d_wire::impl_codec!(FlushRequest);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_with_body};
    use crate::util::reserved_only_tests::check;

    // Python smbprotocol 1.17 against Samba 4.17.
    const REQUEST: &str = "
        fe534d424000010000000000070001000800000000000000070000000000000000000000dd34ed0a912c51bf00000000
        05b4b5a3550a46e1f447ff2a4dc3b63c18000000000000009bcaa32500000000844fae8e00000000";
    const RESPONSE: &str = "
        fe534d424000010000000000070001000900000000000000070000000000000000000000dd34ed0a912c51bf00000000
        5dd9a320c63d75b2557ccb94872976fa04000000";

    #[test]
    fn captured() {
        let pdu = hex(REQUEST);
        let req = golden::<FlushRequest>(&pdu);
        assert_eq!(
            req.file_id,
            FileId {
                persistent: 0x25a3_ca9b,
                volatile: 0x8eae_4f84
            }
        );
        check::<FlushResponse>(RESPONSE);
    }

    #[test]
    fn rejections() {
        assert!(FlushRequest::decode(&pdu_with_body(&[24, 0, 0, 0, 0, 0, 0, 0])).is_err());
        let mut body = [0u8; 24];
        body[0] = 25;
        assert!(FlushRequest::decode(&pdu_with_body(&body)).is_err());
    }
}
