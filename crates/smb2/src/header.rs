//! The SMB2 packet header (MS-SMB2 2.2.1).

use core::ops::Range;

use smb3d_dtyp::NtStatus;
use smb3d_wire::{DecodeError, Reader, Writer};

/// Length of the SMB2 header; every SMB2 offset counts from its first byte.
pub const SMB2_HEADER_LEN: usize = 64;
/// ProtocolId of an SMB2 message: 0xFE 'S' 'M' 'B' (MS-SMB2 2.2.1).
pub const PROTOCOL_ID: [u8; 4] = [0xFE, b'S', b'M', b'B'];
/// ProtocolId of an encrypted message: 0xFD 'S' 'M' 'B' (MS-SMB2 2.2.41).
pub const TRANSFORM_PROTOCOL_ID: [u8; 4] = [0xFD, b'S', b'M', b'B'];
/// ProtocolId of a compressed message: 0xFC 'S' 'M' 'B' (MS-SMB2 2.2.42).
pub const COMPRESSION_PROTOCOL_ID: [u8; 4] = [0xFC, b'S', b'M', b'B'];
/// ProtocolId of an SMB1 message: 0xFF 'S' 'M' 'B' (MS-SMB 2.2.3.1).
pub const SMB1_PROTOCOL_ID: [u8; 4] = [0xFF, b'S', b'M', b'B'];

/// Byte offset of the Status (ChannelSequence in 3.x requests) field.
pub const STATUS_OFFSET: usize = 8;
/// Byte offset of the Command field.
pub const COMMAND_OFFSET: usize = 12;
/// Byte offset of the CreditRequest/CreditResponse field.
pub const CREDITS_OFFSET: usize = 14;
/// Byte offset of the Flags field.
pub const FLAGS_OFFSET: usize = 16;
/// Byte offset of the NextCommand field.
pub const NEXT_COMMAND_OFFSET: usize = 20;
/// Byte offset of the MessageId field.
pub const MESSAGE_ID_OFFSET: usize = 24;
/// Byte offset of the AsyncId field (or Reserved/TreeId in the sync form).
pub const ASYNC_ID_OFFSET: usize = 32;
/// Byte offset of the TreeId field in the sync form.
pub const TREE_ID_OFFSET: usize = 36;
/// Byte offset of the SessionId field.
pub const SESSION_ID_OFFSET: usize = 40;
/// The Signature field, zeroed before a signature is computed over the message.
pub const SIGNATURE_RANGE: Range<usize> = 48..64;

smb3d_wire::open_enum! {
    /// SMB2 command codes (MS-SMB2 2.2.1.2).
    pub struct Command(u16) {
        NEGOTIATE = 0x0000,
        SESSION_SETUP = 0x0001,
        LOGOFF = 0x0002,
        TREE_CONNECT = 0x0003,
        TREE_DISCONNECT = 0x0004,
        CREATE = 0x0005,
        CLOSE = 0x0006,
        FLUSH = 0x0007,
        READ = 0x0008,
        WRITE = 0x0009,
        LOCK = 0x000A,
        IOCTL = 0x000B,
        CANCEL = 0x000C,
        ECHO = 0x000D,
        QUERY_DIRECTORY = 0x000E,
        CHANGE_NOTIFY = 0x000F,
        QUERY_INFO = 0x0010,
        SET_INFO = 0x0011,
        OPLOCK_BREAK = 0x0012,
    }
}

smb3d_wire::open_flags! {
    /// Header Flags (MS-SMB2 2.2.1.2).
    pub struct HeaderFlags(u32) {
        SERVER_TO_REDIR = 0x0000_0001,
        ASYNC_COMMAND = 0x0000_0002,
        RELATED_OPERATIONS = 0x0000_0004,
        SIGNED = 0x0000_0008,
        PRIORITY_MASK = 0x0000_0070,
        DFS_OPERATIONS = 0x1000_0000,
        REPLAY_OPERATION = 0x2000_0000,
    }
}

impl HeaderFlags {
    /// The 3-bit I/O priority value (MS-SMB2 2.2.1.2, 3.1.1 only).
    pub const fn priority(self) -> u8 {
        ((self.0 & Self::PRIORITY_MASK.0) >> 4) as u8
    }
}

/// The SMB2 header, in its sync (MS-SMB2 2.2.1.2) or async (2.2.1.1) form, selected by
/// [`HeaderFlags::ASYNC_COMMAND`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// Credits this request consumes (2.1+); 0 in 2.0.2.
    pub credit_charge: u16,
    /// Status in responses; ChannelSequence and Reserved in 3.x requests.
    pub status: NtStatus,
    pub command: Command,
    /// CreditRequest in requests, CreditResponse in responses.
    pub credits: u16,
    pub flags: HeaderFlags,
    /// Offset from this header to the next PDU of a compound, or 0.
    pub next_command: u32,
    pub message_id: u64,
    /// Only in the async form (0 in the sync form).
    pub async_id: u64,
    /// Only in the sync form (0 in the async form).
    pub process_id: u32,
    /// Only in the sync form (0 in the async form).
    pub tree_id: u32,
    pub session_id: u64,
    pub signature: [u8; 16],
}

impl Header {
    /// MS-SMB2 2.2.1: checks ProtocolId and StructureSize.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(pdu);
        if r.array::<4>("ProtocolId")? != PROTOCOL_ID {
            return Err(DecodeError::invalid("ProtocolId"));
        }
        r.structure_size(64)?;
        let credit_charge = r.u16("CreditCharge")?;
        let status = NtStatus(r.u32("Status")?);
        let command = Command(r.u16("Command")?);
        let credits = r.u16("CreditRequest/CreditResponse")?;
        let flags = HeaderFlags(r.u32("Flags")?);
        let next_command = r.u32("NextCommand")?;
        let message_id = r.u64("MessageId")?;
        let (async_id, process_id, tree_id) = if flags.contains(HeaderFlags::ASYNC_COMMAND) {
            (r.u64("AsyncId")?, 0, 0)
        } else {
            (0, r.u32("Reserved")?, r.u32("TreeId")?)
        };
        let session_id = r.u64("SessionId")?;
        let signature = r.array::<16>("Signature")?;
        Ok(Self {
            credit_charge,
            status,
            command,
            credits,
            flags,
            next_command,
            message_id,
            async_id,
            process_id,
            tree_id,
            session_id,
            signature,
        })
    }

    /// The 64 header bytes, for writing over a placeholder once the body is known.
    pub fn to_bytes(&self) -> [u8; SMB2_HEADER_LEN] {
        let mut out = [0u8; SMB2_HEADER_LEN];
        let mut put = |at: usize, bytes: &[u8]| {
            if let Some(dst) = out.get_mut(at..at + bytes.len()) {
                dst.copy_from_slice(bytes);
            }
        };
        put(0, &PROTOCOL_ID);
        put(4, &64u16.to_le_bytes());
        put(6, &self.credit_charge.to_le_bytes());
        put(STATUS_OFFSET, &self.status.0.to_le_bytes());
        put(COMMAND_OFFSET, &self.command.0.to_le_bytes());
        put(CREDITS_OFFSET, &self.credits.to_le_bytes());
        put(FLAGS_OFFSET, &self.flags.0.to_le_bytes());
        put(NEXT_COMMAND_OFFSET, &self.next_command.to_le_bytes());
        put(MESSAGE_ID_OFFSET, &self.message_id.to_le_bytes());
        if self.is_async() {
            put(ASYNC_ID_OFFSET, &self.async_id.to_le_bytes());
        } else {
            put(ASYNC_ID_OFFSET, &self.process_id.to_le_bytes());
            put(TREE_ID_OFFSET, &self.tree_id.to_le_bytes());
        }
        put(SESSION_ID_OFFSET, &self.session_id.to_le_bytes());
        put(SIGNATURE_RANGE.start, &self.signature);
        out
    }

    /// Writes the 64 header bytes.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.bytes(&self.to_bytes());
    }

    /// ChannelSequence: the low 16 bits of the Status field of a 3.x request (MS-SMB2 2.2.1.2).
    pub const fn channel_sequence(&self) -> u16 {
        (self.status.0 & 0xFFFF) as u16
    }

    /// SMB2_FLAGS_SERVER_TO_REDIR: the message is a response.
    pub const fn is_response(&self) -> bool {
        self.flags.contains(HeaderFlags::SERVER_TO_REDIR)
    }

    /// SMB2_FLAGS_ASYNC_COMMAND: the async header form.
    pub const fn is_async(&self) -> bool {
        self.flags.contains(HeaderFlags::ASYNC_COMMAND)
    }

    /// SMB2_FLAGS_RELATED_OPERATIONS: related to the previous PDU of a compound.
    pub const fn is_related(&self) -> bool {
        self.flags.contains(HeaderFlags::RELATED_OPERATIONS)
    }

    /// SMB2_FLAGS_SIGNED.
    pub const fn is_signed(&self) -> bool {
        self.flags.contains(HeaderFlags::SIGNED)
    }
}

smb3d_wire::impl_codec!(Header);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::hex;
    use smb3d_wire::DecodeErrorKind;

    // smbclient -m SMB3_11 against Samba 4.17 (neg311 capture): the WRITE request header.
    const SYNC_REQUEST: &str = "
        fe534d424000010000000000090001001000000000000000080000000000000000000000a3d50cb7b523934800000000
        00000000000000000000000000000000";
    // Same capture: Samba's interim STATUS_PENDING response to that WRITE (async form).
    const ASYNC_RESPONSE: &str = "
        fe534d42400000000301000009000100130000000000000008000000000000000800000000000000b523934800000000
        00000000000000000000000000000000";
    // Same capture: the signed final SESSION_SETUP response.
    const SIGNED_RESPONSE: &str = "
        fe534d42400001000000000001000020190000000000000002000000000000000000000000000000b523934800000000
        8134b9db7d2fabaa7e471c3751fbbc33";

    fn round_trip(bytes: &[u8]) -> Header {
        let h = Header::decode(bytes).unwrap();
        let mut out = Vec::new();
        h.encode(&mut Writer::new(&mut out));
        assert_eq!(out, bytes);
        assert_eq!(h.to_bytes(), bytes);
        h
    }

    #[test]
    fn sync_request_header() {
        let h = round_trip(&hex(SYNC_REQUEST));
        assert_eq!(h.command, Command::WRITE);
        assert_eq!(h.credit_charge, 1);
        assert_eq!(h.credits, 1);
        assert_eq!(h.flags.priority(), 1);
        assert!(!h.is_response() && !h.is_async());
        assert_eq!(h.message_id, 8);
        assert_eq!(h.tree_id, 0xb70c_d5a3);
        assert_eq!(h.process_id, 0);
        assert_eq!(h.session_id, 0x4893_23b5);
        assert_eq!(h.channel_sequence(), 0);
    }

    #[test]
    fn async_response_header() {
        let h = round_trip(&hex(ASYNC_RESPONSE));
        assert!(h.is_response() && h.is_async());
        assert_eq!(h.status, NtStatus::PENDING);
        assert_eq!(h.async_id, 8);
        assert_eq!(h.tree_id, 0);
        assert_eq!(h.credits, 1);
    }

    #[test]
    fn signed_response_header() {
        let bytes = hex(SIGNED_RESPONSE);
        let h = round_trip(&bytes);
        assert!(h.is_signed());
        assert_eq!(h.command, Command::SESSION_SETUP);
        assert_eq!(&h.signature[..], &bytes[SIGNATURE_RANGE]);
        assert_eq!(
            u64::from_le_bytes(bytes[MESSAGE_ID_OFFSET..][..8].try_into().unwrap()),
            h.message_id
        );
        assert_eq!(
            u16::from_le_bytes(bytes[COMMAND_OFFSET..][..2].try_into().unwrap()),
            h.command.0
        );
        assert_eq!(
            u32::from_le_bytes(bytes[FLAGS_OFFSET..][..4].try_into().unwrap()),
            h.flags.0
        );
    }

    proptest::proptest! {
        #[test]
        fn round_trips(
            charge in proptest::prelude::any::<u16>(),
            status in proptest::prelude::any::<u32>(),
            command in proptest::prelude::any::<u16>(),
            credits in proptest::prelude::any::<u16>(),
            flags in proptest::prelude::any::<u32>(),
            ids in proptest::prelude::any::<[u64; 4]>(),
            signature in proptest::prelude::any::<[u8; 16]>(),
        ) {
            let is_async = flags & HeaderFlags::ASYNC_COMMAND.0 != 0;
            let h = Header {
                credit_charge: charge,
                status: NtStatus(status),
                command: Command(command),
                credits,
                flags: HeaderFlags(flags),
                next_command: ids[0] as u32,
                message_id: ids[1],
                async_id: if is_async { ids[2] } else { 0 },
                process_id: if is_async { 0 } else { ids[2] as u32 },
                tree_id: if is_async { 0 } else { (ids[2] >> 32) as u32 },
                session_id: ids[3],
                signature,
            };
            proptest::prop_assert_eq!(Header::decode(&h.to_bytes()).unwrap(), h);
        }
    }

    #[test]
    fn channel_sequence_is_low_half_of_status() {
        let h = Header {
            status: NtStatus(0x0000_0102),
            ..Header::default()
        };
        assert_eq!(h.channel_sequence(), 0x102);
    }

    #[test]
    fn rejects_bad_protocol_size_and_truncation() {
        let good = hex(SYNC_REQUEST);
        let mut bad = good.clone();
        bad[0] = 0xFD;
        assert_eq!(Header::decode(&bad).unwrap_err().field, "ProtocolId");
        let mut bad = good.clone();
        bad[4] = 65;
        assert!(matches!(
            Header::decode(&bad).unwrap_err().kind,
            DecodeErrorKind::BadSize { .. }
        ));
        assert_eq!(
            Header::decode(&good[..63]).unwrap_err().kind,
            DecodeErrorKind::Truncated
        );
    }
}
