//! QUERY_DIRECTORY (MS-SMB2 2.2.33, 2.2.34).

use smb3d_wire::{DecodeError, DecodeErrorKind, Writer};

use crate::file_id::FileId;
use crate::output::{PendingOutput, offset16_length32};
use crate::util::{body, len16};

smb3d_wire::open_flags! {
    /// QUERY_DIRECTORY Flags (MS-SMB2 2.2.33).
    pub struct QueryDirectoryFlags(u8) {
        RESTART_SCANS = 0x01,
        RETURN_SINGLE_ENTRY = 0x02,
        INDEX_SPECIFIED = 0x04,
        REOPEN = 0x10,
    }
}

/// SMB2 QUERY_DIRECTORY Request (MS-SMB2 2.2.33).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryDirectoryRequest<'a> {
    /// FileInformationClass (an MS-FSCC directory information class).
    pub file_information_class: u8,
    pub flags: QueryDirectoryFlags,
    /// Where to resume, when INDEX_SPECIFIED is set.
    pub file_index: u32,
    pub file_id: FileId,
    /// The search pattern, raw UTF-16LE (even length; the server validates it).
    pub file_name: &'a [u8],
    /// The most output the client accepts.
    pub output_buffer_length: u32,
}

/// Where the file name starts: after the 32-byte fixed part.
const REQUEST_BUFFER_OFFSET: usize = 64 + 32;

impl<'a> QueryDirectoryRequest<'a> {
    /// MS-SMB2 2.2.33.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 33)?;
        let file_information_class = r.u8("FileInformationClass")?;
        let flags = QueryDirectoryFlags(r.u8("Flags")?);
        let file_index = r.u32("FileIndex")?;
        let file_id = FileId::read(&mut r)?;
        let name_offset = usize::from(r.u16("FileNameOffset")?);
        let name_len = usize::from(r.u16("FileNameLength")?);
        let output_buffer_length = r.u32("OutputBufferLength")?;
        if !name_len.is_multiple_of(2) {
            return Err(DecodeError::new("FileName", DecodeErrorKind::InvalidUtf16));
        }
        let file_name = r.buffer_at(name_offset, name_len, "FileName")?;
        Ok(Self {
            file_information_class,
            flags,
            file_index,
            file_id,
            file_name,
            output_buffer_length,
        })
    }

    /// Writes the body after the header (an empty pattern as offset 0 and a pad byte).
    pub fn encode(&self, w: &mut Writer<'_>) {
        let offset = if self.file_name.is_empty() {
            0
        } else {
            REQUEST_BUFFER_OFFSET
        };
        w.u16(33)
            .u8(self.file_information_class)
            .u8(self.flags.0)
            .u32(self.file_index);
        self.file_id.write(w);
        w.u16(len16(offset))
            .u16(len16(self.file_name.len()))
            .u32(self.output_buffer_length);
        if self.file_name.is_empty() {
            w.u8(0);
        } else {
            w.bytes(self.file_name);
        }
    }
}

/// SMB2 QUERY_DIRECTORY Response (MS-SMB2 2.2.34).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryDirectoryResponse<'a> {
    /// The directory entries, in the requested information class.
    pub output: &'a [u8],
}

impl<'a> QueryDirectoryResponse<'a> {
    /// Writes the fixed part; append the entries, then call
    /// [`QueryDirectoryResponse::finish`].
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

    /// MS-SMB2 2.2.34.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        Ok(Self {
            output: offset16_length32::decode(pdu)?,
        })
    }
}

smb3d_wire::impl_codec!(QueryDirectoryRequest<'a>, QueryDirectoryResponse<'a>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_round_trip};
    use proptest::prelude::*;

    // smbtorture smb2.lock.cancel against Samba 4.17: FileNamesInformation (class 0x0C) with
    // pattern "*": the entries ".", ".." and "cancel.txt".
    const REQUEST: &str = "
        fe534d4240000100000000000e0001001000000000000000180000000000000000000000cbec1692ae772cdf00000000
        0000000000000000000000000000000021000c0000000000d9d921ba00000000a32cbeb3000000006000020000000100
        2a00";
    const RESPONSE: &str = "
        fe534d4240000100000000000e0001001100000000000000180000000000000000000000cbec1692ae772cdf00000000
        0000000000000000000000000000000009004800400000001000000000000000020000002e0000001000000000000000
        040000002e002e00000000000000000014000000630061006e00630065006c002e00740078007400";
    // smbclient -m SMB3_11: FileIdBothDirectoryInformation (0x25) with pattern "b.txt",
    // RESTART_SCANS clear, CreditCharge 0x80 for an 8 MiB output limit.
    const REQUEST_NAMED: &str = "
        fe534d4240008000000000000e0001001000000000000000310100000000000000000000a3d50cb7b523934800000000
        000000000000000000000000000000002100250000000000b3a3a5e0000000007e7b99d60000000060000a0000008000
        62002e00740078007400";

    #[test]
    fn captured() {
        let pdu = hex(REQUEST);
        let req = golden::<QueryDirectoryRequest>(&pdu);
        assert_eq!(req.file_information_class, 0x0C);
        assert!(req.flags.is_empty());
        assert_eq!(req.file_name, b"*\0");
        assert_eq!(req.output_buffer_length, 0x0001_0000);

        let pdu = hex(REQUEST_NAMED);
        let req = golden::<QueryDirectoryRequest>(&pdu);
        assert_eq!(req.file_information_class, 0x25);
        assert_eq!(req.file_name, b"b\0.\0t\0x\0t\0");
        assert_eq!(req.output_buffer_length, 0x0080_0000);

        let pdu = hex(RESPONSE);
        let rsp = golden::<QueryDirectoryResponse>(&pdu);
        assert_eq!(rsp.output.len(), 64);
    }

    #[test]
    fn rejections() {
        let pdu = hex(REQUEST);
        let mut bad = pdu.clone();
        bad[64 + 26] = 3;
        assert_eq!(
            QueryDirectoryRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::InvalidUtf16
        );
        let mut bad = pdu.clone();
        bad[64 + 26] = 4;
        assert_eq!(
            QueryDirectoryRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        let mut bad = pdu.clone();
        bad[64 + 24] = 0x3E;
        assert_eq!(
            QueryDirectoryRequest::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        assert!(QueryDirectoryRequest::decode(&pdu[..95]).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(class in any::<u8>(), flags in any::<u8>(), index in any::<u32>(), len in any::<u32>(), file_name in proptest::collection::vec(any::<u16>(), 0..20)) {
            let file_name: Vec<u8> = file_name.iter().flat_map(|u| u.to_le_bytes()).collect();
            let req = QueryDirectoryRequest { file_information_class: class, flags: QueryDirectoryFlags(flags), file_index: index, file_id: FileId { persistent: 1, volatile: 2 }, file_name: &file_name, output_buffer_length: len };
            let mut buf = Vec::new();
            prop_assert_eq!(pdu_round_trip(&req, &mut buf), req);
        }
    }
}
