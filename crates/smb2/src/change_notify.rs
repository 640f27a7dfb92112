//! CHANGE_NOTIFY (MS-SMB2 2.2.35, 2.2.36).

use smb3d_wire::{DecodeError, Writer};

use crate::file_id::FileId;
use crate::output::{PendingOutput, offset16_length32};
use crate::util::body;

smb3d_wire::open_flags! {
    /// CHANGE_NOTIFY Flags (MS-SMB2 2.2.35).
    pub struct ChangeNotifyFlags(u16) {
        WATCH_TREE = 0x0001,
    }
}

smb3d_wire::open_flags! {
    /// CompletionFilter (MS-SMB2 2.2.35).
    pub struct CompletionFilter(u32) {
        FILE_NAME = 0x0000_0001,
        DIR_NAME = 0x0000_0002,
        ATTRIBUTES = 0x0000_0004,
        SIZE = 0x0000_0008,
        LAST_WRITE = 0x0000_0010,
        LAST_ACCESS = 0x0000_0020,
        CREATION = 0x0000_0040,
        EA = 0x0000_0080,
        SECURITY = 0x0000_0100,
        STREAM_NAME = 0x0000_0200,
        STREAM_SIZE = 0x0000_0400,
        STREAM_WRITE = 0x0000_0800,
    }
}

/// SMB2 CHANGE_NOTIFY Request (MS-SMB2 2.2.35).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeNotifyRequest {
    pub flags: ChangeNotifyFlags,
    /// The most notification data the client accepts.
    pub output_buffer_length: u32,
    pub file_id: FileId,
    pub completion_filter: CompletionFilter,
}

impl ChangeNotifyRequest {
    /// MS-SMB2 2.2.35.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 32)?;
        let flags = ChangeNotifyFlags(r.u16("Flags")?);
        let output_buffer_length = r.u32("OutputBufferLength")?;
        let file_id = FileId::read(&mut r)?;
        let completion_filter = CompletionFilter(r.u32("CompletionFilter")?);
        r.skip(4, "Reserved")?;
        Ok(Self {
            flags,
            output_buffer_length,
            file_id,
            completion_filter,
        })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(32).u16(self.flags.0).u32(self.output_buffer_length);
        self.file_id.write(w);
        w.u32(self.completion_filter.0).u32(0);
    }
}

/// SMB2 CHANGE_NOTIFY Response (MS-SMB2 2.2.36).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChangeNotifyResponse<'a> {
    /// FILE_NOTIFY_INFORMATION entries (MS-FSCC 2.7.1).
    pub output: &'a [u8],
}

impl<'a> ChangeNotifyResponse<'a> {
    /// Writes the fixed part; append the notify entries, then call
    /// [`ChangeNotifyResponse::finish`].
    pub fn begin(w: &mut Writer<'_>) -> PendingOutput {
        offset16_length32::begin(w)
    }

    /// Fills in OutputBufferLength from what was written since `begin`; returns it.
    pub fn finish(w: &mut Writer<'_>, pending: PendingOutput) -> u32 {
        pending.finish(w)
    }

    /// Writes the body after the header with borrowed entries.
    pub fn encode(&self, w: &mut Writer<'_>) {
        let pending = Self::begin(w);
        w.bytes(self.output);
        Self::finish(w, pending);
    }

    /// MS-SMB2 2.2.36.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        Ok(Self {
            output: offset16_length32::decode(pdu)?,
        })
    }
}

smb3d_wire::impl_codec!(ChangeNotifyRequest, ChangeNotifyResponse<'a>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::Header;
    use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body};
    use proptest::prelude::*;

    // smbtorture smb2.notify.valid-req against Samba 4.17: a watch with every filter bit, and
    // the final (async) response carrying one FILE_NOTIFY_INFORMATION for
    // "smb2-notify01.dat".
    const REQUEST: &str = "
        fe534d4240008000000000000f0001001000000000000000060000000000000000000000ce5bbeda221ae61500000000
        000000000000000000000000000000002000000000008000a1f26bb70000000000bed80a00000000ff0f000000000000";
    const RESPONSE: &str = "
        fe534d4240008000000000000f000000130000000000000006000000000000000600000000000000221ae61500000000
        00000000000000000000000000000000090048003000000000000000010000002200000073006d00620032002d006e00
        6f007400690066007900300031002e006400610074000000";

    #[test]
    fn captured() {
        let pdu = hex(REQUEST);
        let req = golden::<ChangeNotifyRequest>(&pdu);
        assert!(req.flags.is_empty());
        assert_eq!(req.output_buffer_length, 0x0080_0000);
        assert_eq!(req.completion_filter, CompletionFilter(0x0FFF));

        let pdu = hex(RESPONSE);
        assert!(Header::decode(&pdu).unwrap().is_async());
        let rsp = golden::<ChangeNotifyResponse>(&pdu);
        assert_eq!(rsp.output.len(), 48);
        assert_eq!(&rsp.output[4..8], &[1, 0, 0, 0], "FILE_ACTION_ADDED");
    }

    #[test]
    fn rejections() {
        assert!(ChangeNotifyRequest::decode(&pdu_with_body(&[32, 0, 0, 0])).is_err());
        let mut body = [0u8; 32];
        body[0] = 33;
        assert!(ChangeNotifyRequest::decode(&pdu_with_body(&body)).is_err());
        let mut body = hex(RESPONSE)[64..].to_vec();
        body[4] = 0x31;
        assert!(ChangeNotifyResponse::decode(&pdu_with_body(&body)).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(flags in any::<u16>(), len in any::<u32>(), filter in any::<u32>()) {
            let req = ChangeNotifyRequest { flags: ChangeNotifyFlags(flags), output_buffer_length: len, file_id: FileId::ANY, completion_filter: CompletionFilter(filter) };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&req, &mut buf), req);
        }
    }
}
