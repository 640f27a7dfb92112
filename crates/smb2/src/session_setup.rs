//! SESSION_SETUP (MS-SMB2 2.2.5, 2.2.6).

use smb3d_wire::{DecodeError, Writer};

use crate::negotiate::{Capabilities, SecurityMode};
use crate::util::{body, len16};

smb3d_wire::open_flags! {
    /// SESSION_SETUP request Flags (MS-SMB2 2.2.5).
    pub struct SessionSetupFlags(u8) {
        /// Bind this connection to an existing session (multichannel).
        BINDING = 0x01,
    }
}

smb3d_wire::open_flags! {
    /// SessionFlags of the response (MS-SMB2 2.2.6).
    pub struct SessionFlags(u16) {
        IS_GUEST = 0x0001,
        IS_NULL = 0x0002,
        ENCRYPT_DATA = 0x0004,
    }
}

/// SMB2 SESSION_SETUP Request (MS-SMB2 2.2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSetupRequest<'a> {
    pub flags: SessionSetupFlags,
    /// One byte on the wire; widened to the NEGOTIATE type.
    pub security_mode: SecurityMode,
    pub capabilities: Capabilities,
    /// Channel: reserved, 0.
    pub channel: u32,
    pub previous_session_id: u64,
    /// The GSS token.
    pub security_buffer: &'a [u8],
}

/// Where a request's security buffer starts: after the 24-byte fixed part.
const REQUEST_BUFFER_OFFSET: usize = 64 + 24;

impl<'a> SessionSetupRequest<'a> {
    /// MS-SMB2 2.2.5.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 25)?;
        let flags = SessionSetupFlags(r.u8("Flags")?);
        let security_mode = SecurityMode(u16::from(r.u8("SecurityMode")?));
        let capabilities = Capabilities(r.u32("Capabilities")?);
        let channel = r.u32("Channel")?;
        let offset = usize::from(r.u16("SecurityBufferOffset")?);
        let len = usize::from(r.u16("SecurityBufferLength")?);
        let previous_session_id = r.u64("PreviousSessionId")?;
        let security_buffer = r.buffer_at(offset, len, "SecurityBuffer")?;
        Ok(Self {
            flags,
            security_mode,
            capabilities,
            channel,
            previous_session_id,
            security_buffer,
        })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(25)
            .u8(self.flags.0)
            .u8(self.security_mode.0.to_le_bytes()[0])
            .u32(self.capabilities.0)
            .u32(self.channel)
            .u16(len16(REQUEST_BUFFER_OFFSET))
            .u16(len16(self.security_buffer.len()))
            .u64(self.previous_session_id)
            .bytes(self.security_buffer);
    }
}

/// SMB2 SESSION_SETUP Response (MS-SMB2 2.2.6), also the body of a
/// STATUS_MORE_PROCESSING_REQUIRED response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSetupResponse<'a> {
    pub session_flags: SessionFlags,
    /// The GSS token.
    pub security_buffer: &'a [u8],
}

/// Where a response's security buffer starts: after the 8-byte fixed part.
const RESPONSE_BUFFER_OFFSET: usize = 64 + 8;

impl<'a> SessionSetupResponse<'a> {
    /// MS-SMB2 2.2.6.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 9)?;
        let session_flags = SessionFlags(r.u16("SessionFlags")?);
        let offset = usize::from(r.u16("SecurityBufferOffset")?);
        let len = usize::from(r.u16("SecurityBufferLength")?);
        Ok(Self {
            session_flags,
            security_buffer: r.buffer_at(offset, len, "SecurityBuffer")?,
        })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(9)
            .u16(self.session_flags.0)
            .u16(len16(RESPONSE_BUFFER_OFFSET))
            .u16(len16(self.security_buffer.len()))
            .bytes(self.security_buffer);
    }
}

smb3d_wire::impl_codec!(SessionSetupRequest<'a>, SessionSetupResponse<'a>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body};
    use proptest::prelude::*;
    use smb3d_dtyp::NtStatus;
    use smb3d_wire::DecodeErrorKind;

    use crate::header::Header;

    // smbclient -m SMB3_11 against Samba 4.17: SPNEGO/NTLMSSP NEGOTIATE, Samba's CHALLENGE
    // (STATUS_MORE_PROCESSING_REQUIRED) and the final signed response.
    const REQUEST: &str = "
        fe534d424000010000000000010000201000000000000000010000000000000000000000000000000000000000000000
        0000000000000000000000000000000019000001010000000000000058004a000000000000000000604806062b060105
        0502a03e303ca00e300c060a2b06010401823702020aa22a04284e544c4d535350000100000015820862000000002800
        00000000000028000000060100000000000f";
    const RESPONSE_CHALLENGE: &str = "
        fe534d4240000100160000c001000100110000000000000001000000000000000000000000000000b523934800000000
        000000000000000000000000000000000900000048008400a18181307fa0030a0101a10c060a2b06010401823702020a
        a26a04684e544c4d5353500002000000040004003800000015828a6239dfe288d9736e8b00000000000000002c002c00
        3c000000060100000000000f56004d000200040056004d000100040056004d00040000000300040076006d0007000800
        1ccfb291217add0100000000";
    const RESPONSE_FINAL: &str = "
        fe534d42400001000000000001000020190000000000000002000000000000000000000000000000b523934800000000
        8134b9db7d2fabaa7e471c3751fbbc330900000048001d00a11b3019a0030a0100a312041001000000188e78e985ee68
        d700000000";

    #[test]
    fn captured() {
        let pdu = hex(REQUEST);
        let req = golden::<SessionSetupRequest>(&pdu);
        assert!(req.flags.is_empty());
        assert_eq!(req.security_mode, SecurityMode::SIGNING_ENABLED);
        assert_eq!(req.capabilities, Capabilities::DFS);
        assert_eq!(req.previous_session_id, 0);
        assert_eq!(req.security_buffer.len(), 74);
        assert_eq!(&req.security_buffer[..2], &[0x60, 0x48]);

        let pdu = hex(RESPONSE_CHALLENGE);
        assert_eq!(
            Header::decode(&pdu).unwrap().status,
            NtStatus::MORE_PROCESSING_REQUIRED
        );
        let rsp = golden::<SessionSetupResponse>(&pdu);
        assert_eq!(rsp.security_buffer.len(), 0x84);

        let pdu = hex(RESPONSE_FINAL);
        let rsp = golden::<SessionSetupResponse>(&pdu);
        assert!(rsp.session_flags.is_empty());
        assert_eq!(rsp.security_buffer.len(), 29);
    }

    #[test]
    fn rejections() {
        let pdu = hex(REQUEST);
        let mut bad = pdu.clone();
        bad[64 + 12] = 0x20;
        assert_eq!(
            SessionSetupRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        let mut bad = pdu.clone();
        bad[64 + 14] = 0x4b;
        assert_eq!(
            SessionSetupRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        assert!(SessionSetupRequest::decode(&pdu[..64 + 23]).is_err());
        let mut bad = pdu.clone();
        bad[64] = 24;
        assert!(SessionSetupRequest::decode(&bad).is_err());
        assert!(SessionSetupResponse::decode(&pdu_with_body(&[9, 0, 0, 0, 72, 0, 1, 0])).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(flags in any::<u8>(), mode in any::<u8>(), caps in any::<u32>(), channel in any::<u32>(), prev in any::<u64>(), token in proptest::collection::vec(any::<u8>(), 0..200), sflags in any::<u16>()) {
            let req = SessionSetupRequest { flags: SessionSetupFlags(flags), security_mode: SecurityMode(u16::from(mode)), capabilities: Capabilities(caps), channel, previous_session_id: prev, security_buffer: &token };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&req, &mut buf), req);
            let rsp = SessionSetupResponse { session_flags: SessionFlags(sflags), security_buffer: &token };
            prop_assert_eq!(pdu_round_trip(&rsp, &mut buf), rsp);
        }
    }
}
