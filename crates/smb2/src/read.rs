//! READ (MS-SMB2 2.2.19, 2.2.20).

use smb3d_wire::{DecodeError, Slot32, Writer};

use crate::file_id::FileId;
use crate::header::SMB2_HEADER_LEN;
use crate::output::PendingOutput;
use crate::util::{body, len16, len32, to_usize};

smb3d_wire::open_flags! {
    /// READ request Flags (MS-SMB2 2.2.19).
    pub struct ReadFlags(u8) {
        READ_UNBUFFERED = 0x01,
        REQUEST_COMPRESSED = 0x02,
    }
}

smb3d_wire::open_flags! {
    /// READ response Flags (MS-SMB2 2.2.20; Reserved2 before 3.1.1).
    pub struct ReadResponseFlags(u32) {
        RDMA_TRANSFORM = 0x0000_0001,
    }
}

smb3d_wire::open_enum! {
    /// Channel of READ and WRITE (MS-SMB2 2.2.19, 2.2.21).
    pub struct Channel(u32) {
        NONE = 0x0000_0000,
        RDMA_V1 = 0x0000_0001,
        RDMA_V1_INVALIDATE = 0x0000_0002,
        RDMA_TRANSFORM = 0x0000_0003,
    }
}

/// SMB2 READ Request (MS-SMB2 2.2.19).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadRequest<'a> {
    /// The DataOffset the client would like in the response (Windows sends 0x50).
    pub padding: u8,
    pub flags: ReadFlags,
    pub length: u32,
    pub offset: u64,
    pub file_id: FileId,
    pub minimum_count: u32,
    pub channel: Channel,
    pub remaining_bytes: u32,
    /// SMB_DIRECT_BUFFER_DESCRIPTOR_V1 entries for RDMA channels.
    pub channel_info: &'a [u8],
}

/// Where a request's channel info starts: after the 48-byte fixed part.
const REQUEST_BUFFER_OFFSET: usize = 64 + 48;

impl<'a> ReadRequest<'a> {
    /// MS-SMB2 2.2.19.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 49)?;
        let padding = r.u8("Padding")?;
        let flags = ReadFlags(r.u8("Flags")?);
        let length = r.u32("Length")?;
        let offset = r.u64("Offset")?;
        let file_id = FileId::read(&mut r)?;
        let minimum_count = r.u32("MinimumCount")?;
        let channel = Channel(r.u32("Channel")?);
        let remaining_bytes = r.u32("RemainingBytes")?;
        let info_offset = usize::from(r.u16("ReadChannelInfoOffset")?);
        let info_len = usize::from(r.u16("ReadChannelInfoLength")?);
        let channel_info = r.buffer_at(info_offset, info_len, "ReadChannelInfo")?;
        Ok(Self {
            padding,
            flags,
            length,
            offset,
            file_id,
            minimum_count,
            channel,
            remaining_bytes,
            channel_info,
        })
    }

    /// The Length of the READ request `pdu`, read without decoding the rest: the server decides
    /// where a READ runs by it before its handler decodes the request.
    pub fn length_of(pdu: &[u8]) -> Option<u32> {
        const LENGTH: usize = SMB2_HEADER_LEN + 4;
        let field = pdu.get(LENGTH..LENGTH + 4)?;
        field.try_into().ok().map(u32::from_le_bytes)
    }

    /// Writes the body after the header (no channel info: offset 0 and a pad byte).
    pub fn encode(&self, w: &mut Writer<'_>) {
        let info_offset = if self.channel_info.is_empty() {
            0
        } else {
            REQUEST_BUFFER_OFFSET
        };
        w.u16(49)
            .u8(self.padding)
            .u8(self.flags.0)
            .u32(self.length)
            .u64(self.offset);
        self.file_id.write(w);
        w.u32(self.minimum_count)
            .u32(self.channel.0)
            .u32(self.remaining_bytes)
            .u16(len16(info_offset))
            .u16(len16(self.channel_info.len()));
        if self.channel_info.is_empty() {
            w.u8(0);
        } else {
            w.bytes(self.channel_info);
        }
    }
}

/// SMB2 READ Response (MS-SMB2 2.2.20).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadResponse<'a> {
    pub data: &'a [u8],
    /// Bytes still to come over RDMA; 0 otherwise.
    pub data_remaining: u32,
    pub flags: ReadResponseFlags,
}

/// A READ response whose data is being written in place: made by [`ReadResponse::begin`],
/// consumed by [`ReadResponse::finish`].
#[derive(Debug)]
#[must_use = "call ReadResponse::finish() to fill in the lengths"]
pub struct PendingRead {
    data: PendingOutput,
    remaining: Slot32,
}

impl PendingRead {
    /// The data's offset from the header start.
    pub fn offset(&self) -> usize {
        self.data.offset()
    }

    /// Bytes of data written so far.
    pub fn written(&self, w: &Writer<'_>) -> usize {
        self.data.written(w)
    }
}

impl<'a> ReadResponse<'a> {
    /// Writes the fixed part for `data_len` bytes of data, which the caller then appends (or
    /// reads directly into) right after. DataOffset is 0x50, right after the fixed part.
    pub fn encode_fixed(w: &mut Writer<'_>, data_len: u32, data_remaining: u32) {
        let data_offset = w.offset() + 16;
        w.u16(17)
            .u8(data_offset.to_le_bytes()[0])
            .u8(0)
            .u32(data_len)
            .u32(data_remaining)
            .u32(0);
    }

    /// Writes the fixed part with a placeholder length, for when the data's length is known
    /// only once it has been read into the writer; then call [`ReadResponse::finish`].
    pub fn begin(w: &mut Writer<'_>) -> PendingRead {
        let data_offset = w.offset() + 16;
        w.u16(17).u8(data_offset.to_le_bytes()[0]).u8(0);
        let data = PendingOutput::reserve(w, data_offset);
        let remaining = w.reserve_u32();
        w.u32(0);
        PendingRead { data, remaining }
    }

    /// Fills in DataLength from what was written since `begin`, and DataRemaining; returns
    /// the data length.
    pub fn finish(w: &mut Writer<'_>, pending: PendingRead, data_remaining: u32) -> u32 {
        w.patch_u32(pending.remaining, data_remaining);
        pending.data.finish(w)
    }

    /// Writes the body after the header with borrowed data.
    pub fn encode(&self, w: &mut Writer<'_>) {
        let data_offset = w.offset() + 16;
        w.u16(17)
            .u8(data_offset.to_le_bytes()[0])
            .u8(0)
            .u32(len32(self.data.len()))
            .u32(self.data_remaining)
            .u32(self.flags.0)
            .bytes(self.data);
    }

    /// MS-SMB2 2.2.20.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 17)?;
        let data_offset = usize::from(r.u8("DataOffset")?);
        r.skip(1, "Reserved")?;
        let data_len = to_usize(r.u32("DataLength")?);
        let data_remaining = r.u32("DataRemaining")?;
        let flags = ReadResponseFlags(r.u32("Flags")?);
        Ok(Self {
            data: r.buffer_at(data_offset, data_len, "Data")?,
            data_remaining,
            flags,
        })
    }
}

smb3d_wire::impl_codec!(ReadRequest<'a>, ReadResponse<'a>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body, with_header};
    use proptest::prelude::*;
    use smb3d_wire::DecodeErrorKind;

    // smbclient -m SMB3_11 against Samba 4.17: reading the 12 bytes of a.txt.
    const REQUEST: &str = "
        fe534d4240000100000000000800010010000000000000000c0000000000000000000000a3d50cb7b523934800000000
        00000000000000000000000000000000310000000c000000000000000000000078967c850000000018a1e54700000000
        0000000000000000000000000000000000";
    const RESPONSE: &str = "
        fe534d4240000100000000000800010011000000000000000c0000000000000000000000a3d50cb7b523934800000000
        00000000000000000000000000000000110050000c000000000000000000000068656c6c6f20776f726c640a";
    // smbtorture smb2.read.eof: a zero-length read answered with DataOffset 0x50, no data.
    const RESPONSE_EMPTY: &str = "
        fe534d4240000100000000000800010011000000000000000a0000000000000000000000952a7468c0f7a13100000000
        0000000000000000000000000000000011005000000000000000000000000000";

    #[test]
    fn captured() {
        let pdu = hex(REQUEST);
        let req = golden::<ReadRequest>(&pdu);
        assert_eq!((req.length, req.offset, req.minimum_count), (12, 0, 0));
        assert_eq!(ReadRequest::length_of(&pdu), Some(12));
        assert_eq!(req.channel, Channel::NONE);
        assert!(req.channel_info.is_empty());

        let pdu = hex(RESPONSE);
        let rsp = golden::<ReadResponse>(&pdu);
        assert_eq!(rsp.data, b"hello world\n");
        let fixed = with_header(&pdu, |w| {
            ReadResponse::encode_fixed(w, 12, 0);
            w.bytes(b"hello world\n");
        });
        assert_eq!(fixed, pdu);
        let in_place = with_header(&pdu, |w| {
            let pending = ReadResponse::begin(w);
            assert_eq!(pending.offset(), 0x50);
            w.bytes(b"hello world\n");
            assert_eq!(pending.written(w), 12);
            assert_eq!(ReadResponse::finish(w, pending, 0), 12);
        });
        assert_eq!(in_place, pdu);

        let pdu = hex(RESPONSE_EMPTY);
        let rsp = golden::<ReadResponse>(&pdu);
        assert!(rsp.data.is_empty());
    }

    #[test]
    fn rejections() {
        let pdu = hex(RESPONSE);
        let mut bad = pdu.clone();
        bad[66] = 0x20;
        assert_eq!(
            ReadResponse::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        let mut bad = pdu.clone();
        bad[68] = 13;
        assert_eq!(
            ReadResponse::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        let req = hex(REQUEST);
        let mut bad = req.clone();
        bad[64 + 44..64 + 48].copy_from_slice(&[0x70, 0, 2, 0]);
        assert_eq!(
            ReadRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        assert!(ReadRequest::decode(&req[..64 + 47]).is_err());
        assert_eq!(ReadRequest::length_of(&req[..64 + 8]), Some(12));
        assert_eq!(ReadRequest::length_of(&req[..64 + 7]), None);
        assert!(ReadRequest::decode(&pdu_with_body(&[48, 0])).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(pad in any::<u8>(), flags in any::<u8>(), n in any::<[u32; 4]>(), off in any::<u64>(), info in proptest::collection::vec(any::<u8>(), 0..40), data in proptest::collection::vec(any::<u8>(), 0..100)) {
            let req = ReadRequest { padding: pad, flags: ReadFlags(flags), length: n[0], offset: off, file_id: FileId::ANY, minimum_count: n[1], channel: Channel(n[2]), remaining_bytes: n[3], channel_info: &info };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&req, &mut buf), req);
            prop_assert_eq!(ReadRequest::length_of(&buf), Some(n[0]));
            let rsp = ReadResponse { data: &data, data_remaining: n[0], flags: ReadResponseFlags(n[1]) };
            prop_assert_eq!(pdu_round_trip(&rsp, &mut buf), rsp);
        }
    }
}
