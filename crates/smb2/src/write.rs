//! WRITE (MS-SMB2 2.2.21, 2.2.22).

use core::ops::Range;

use smb3d_wire::{DecodeError, Writer};

use crate::file_id::FileId;
use crate::read::Channel;
use crate::util::{body, len16, len32, to_usize};

smb3d_wire::open_flags! {
    /// WRITE request Flags (MS-SMB2 2.2.21).
    pub struct WriteFlags(u32) {
        WRITE_THROUGH = 0x0000_0001,
        WRITE_UNBUFFERED = 0x0000_0002,
    }
}

/// SMB2 WRITE Request (MS-SMB2 2.2.21).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteRequest<'a> {
    /// The file offset (0xFFFFFFFFFFFFFFFF: append, on handles opened for append only).
    pub offset: u64,
    pub file_id: FileId,
    pub channel: Channel,
    pub remaining_bytes: u32,
    pub flags: WriteFlags,
    /// The data, borrowed from the PDU.
    pub data: &'a [u8],
    /// Where `data` lies in the PDU (from the header start), for handing the payload on
    /// without copying.
    pub data_range: Range<usize>,
    /// SMB_DIRECT_BUFFER_DESCRIPTOR_V1 entries for RDMA channels.
    pub channel_info: &'a [u8],
}

/// Where the data starts: after the 48-byte fixed part.
const REQUEST_BUFFER_OFFSET: usize = 64 + 48;

impl<'a> WriteRequest<'a> {
    /// MS-SMB2 2.2.21.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        Self::decode_with(pdu, None)
    }

    /// MS-SMB2 2.2.21, for a request whose `data_len` bytes of data the transport kept apart
    /// (in a pipe): they must follow the fixed part at once, and `pdu` ends before them.
    /// `data` comes back empty and `data_range` names where the data would lie.
    pub fn decode_without_data(pdu: &'a [u8], data_len: usize) -> Result<Self, DecodeError> {
        Self::decode_with(pdu, Some(data_len))
    }

    fn decode_with(pdu: &'a [u8], kept_apart: Option<usize>) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 49)?;
        let data_offset = usize::from(r.u16("DataOffset")?);
        let length = to_usize(r.u32("Length")?);
        let offset = r.u64("Offset")?;
        let file_id = FileId::read(&mut r)?;
        let channel = Channel(r.u32("Channel")?);
        let remaining_bytes = r.u32("RemainingBytes")?;
        let info_offset = usize::from(r.u16("WriteChannelInfoOffset")?);
        let info_len = usize::from(r.u16("WriteChannelInfoLength")?);
        let flags = WriteFlags(r.u32("Flags")?);
        let (data_range, data) = match kept_apart {
            None => (
                r.range_at(data_offset, length, "Data")?,
                r.buffer_at(data_offset, length, "Data")?,
            ),
            Some(kept) if data_offset == REQUEST_BUFFER_OFFSET && pdu.len() == data_offset => {
                if length != kept {
                    return Err(DecodeError::invalid("Length"));
                }
                (data_offset..data_offset + length, &[][..])
            }
            Some(_) => return Err(DecodeError::invalid("DataOffset")),
        };
        let channel_info = r.buffer_at(info_offset, info_len, "WriteChannelInfo")?;
        Ok(Self {
            offset,
            file_id,
            channel,
            remaining_bytes,
            flags,
            data,
            data_range,
            channel_info,
        })
    }

    /// Writes the body after the header: data at 0x70, then the channel info (with no data
    /// and no channel info, a pad byte).
    pub fn encode(&self, w: &mut Writer<'_>) {
        let info_offset = if self.channel_info.is_empty() {
            0
        } else {
            REQUEST_BUFFER_OFFSET + self.data.len()
        };
        w.u16(49)
            .u16(len16(REQUEST_BUFFER_OFFSET))
            .u32(len32(self.data.len()))
            .u64(self.offset);
        self.file_id.write(w);
        w.u32(self.channel.0)
            .u32(self.remaining_bytes)
            .u16(len16(info_offset))
            .u16(len16(self.channel_info.len()))
            .u32(self.flags.0)
            .bytes(self.data)
            .bytes(self.channel_info);
        if self.data.is_empty() && self.channel_info.is_empty() {
            w.u8(0);
        }
    }
}

/// SMB2 WRITE Response (MS-SMB2 2.2.22).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteResponse {
    /// Bytes written.
    pub count: u32,
    /// Reserved (0).
    pub remaining: u32,
}

impl WriteResponse {
    /// MS-SMB2 2.2.22.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 17)?;
        r.skip(2, "Reserved")?;
        let count = r.u32("Count")?;
        let remaining = r.u32("Remaining")?;
        r.skip(4, "WriteChannelInfoOffset/Length")?;
        Ok(Self { count, remaining })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(17)
            .u16(0)
            .u32(self.count)
            .u32(self.remaining)
            .u16(0)
            .u16(0);
    }
}

smb3d_wire::impl_codec!(WriteRequest<'a>, WriteResponse);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body};
    use proptest::prelude::*;
    use smb3d_wire::DecodeErrorKind;

    // smbclient -m SMB3_11 against Samba 4.17: writing "hello world\n" to a.txt, and Samba's
    // final (async, after STATUS_PENDING) response.
    const REQUEST: &str = "
        fe534d424000010000000000090001001000000000000000080000000000000000000000a3d50cb7b523934800000000
        00000000000000000000000000000000310070000c00000000000000000000002608bb1400000000a985037600000000
        0000000000000000000000000000000068656c6c6f20776f726c640a";
    const RESPONSE: &str = "
        fe534d42400001000000000009000000130000000000000008000000000000000800000000000000b523934800000000
        00000000000000000000000000000000110000000c0000000000000000000000";

    #[test]
    fn captured_without_its_data() {
        let pdu = hex(REQUEST);
        let head = &pdu[..REQUEST_BUFFER_OFFSET];
        let req = WriteRequest::decode_without_data(head, 12).unwrap();
        assert_eq!(req.data, b"");
        assert_eq!(req.data_range, 112..124);
        assert_eq!(req.file_id, WriteRequest::decode(&pdu).unwrap().file_id);
        // The data kept apart must be what Length says, and right after the fixed part.
        assert_eq!(
            WriteRequest::decode_without_data(head, 11)
                .unwrap_err()
                .field,
            "Length"
        );
        assert_eq!(
            WriteRequest::decode_without_data(&pdu[..113], 11)
                .unwrap_err()
                .field,
            "DataOffset"
        );
        let mut moved = head.to_vec();
        moved[66] = 0x78;
        assert_eq!(
            WriteRequest::decode_without_data(&moved, 12)
                .unwrap_err()
                .field,
            "DataOffset"
        );
    }

    #[test]
    fn captured() {
        let pdu = hex(REQUEST);
        let req = golden::<WriteRequest>(&pdu);
        assert_eq!(req.data, b"hello world\n");
        assert_eq!(req.data_range, 112..124);
        assert_eq!(&pdu[req.data_range.clone()], req.data);
        assert_eq!(req.offset, 0);
        assert!(req.flags.is_empty());

        let pdu = hex(RESPONSE);
        let rsp = golden::<WriteResponse>(&pdu);
        assert_eq!(
            rsp,
            WriteResponse {
                count: 12,
                remaining: 0
            }
        );
    }

    #[test]
    fn rejections() {
        let pdu = hex(REQUEST);
        // Length past the end of the PDU (a short write must not read beyond it).
        let mut bad = pdu.clone();
        bad[68] = 13;
        assert_eq!(
            WriteRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        // DataOffset 0 with data, and into the header.
        for offset in [0u8, 0x30] {
            let mut bad = pdu.clone();
            bad[66] = offset;
            assert_eq!(
                WriteRequest::decode(&bad).unwrap_err().kind,
                DecodeErrorKind::OutOfBounds
            );
        }
        // Offset + length overflowing.
        let mut bad = pdu.clone();
        bad[66..68].copy_from_slice(&[0xFF, 0xFF]);
        bad[68..72].copy_from_slice(&[0xFF; 4]);
        assert!(WriteRequest::decode(&bad).is_err());
        assert!(WriteRequest::decode(&pdu[..64 + 47]).is_err());
        assert!(WriteResponse::decode(&pdu_with_body(&[17, 0, 0, 0])).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(off in any::<u64>(), n in any::<[u32; 3]>(), data in proptest::collection::vec(any::<u8>(), 0..100), info in proptest::collection::vec(any::<u8>(), 0..40)) {
            let data_range = if data.is_empty() { 0..0 } else { 112..112 + data.len() };
            let req = WriteRequest { offset: off, file_id: FileId::ANY, channel: Channel(n[0]), remaining_bytes: n[1], flags: WriteFlags(n[2]), data: &data, data_range, channel_info: &info };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&req, &mut buf), req);
            let rsp = WriteResponse { count: n[0], remaining: n[1] };
            prop_assert_eq!(pdu_round_trip(&rsp, &mut buf), rsp);
        }
    }
}
