//! OPLOCK_BREAK (MS-SMB2 2.2.23, 2.2.24, 2.2.25): oplock and lease break notifications,
//! acknowledgments and responses. The body's StructureSize tells them apart: 24 for the oplock
//! forms, 44 for a lease break notification, 36 for a lease break acknowledgment or response.

use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Writer};

use crate::create::{LeaseKey, LeaseState, OplockLevel};
use crate::file_id::FileId;
use crate::util::body;

smb3d_wire::open_flags! {
    /// Lease break notification Flags (MS-SMB2 2.2.23.2).
    pub struct LeaseBreakFlags(u32) {
        ACK_REQUIRED = 0x0000_0001,
    }
}

/// Oplock break notification, acknowledgment or response (MS-SMB2 2.2.23.1, 2.2.24.1,
/// 2.2.25.1): all three share this layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OplockBreak {
    pub oplock_level: OplockLevel,
    pub file_id: FileId,
}

impl OplockBreak {
    /// MS-SMB2 2.2.23.1.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 24)?;
        let oplock_level = OplockLevel(r.u8("OplockLevel")?);
        r.skip(5, "Reserved")?;
        Ok(Self {
            oplock_level,
            file_id: FileId::read(&mut r)?,
        })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(24).u8(self.oplock_level.0).u8(0).u32(0);
        self.file_id.write(w);
    }
}

/// Lease Break Notification (MS-SMB2 2.2.23.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseBreakNotification {
    /// The lease's new epoch (v2 leases; 0 otherwise).
    pub new_epoch: u16,
    pub flags: LeaseBreakFlags,
    pub lease_key: LeaseKey,
    pub current_lease_state: LeaseState,
    pub new_lease_state: LeaseState,
    /// BreakReason, AccessMaskHint, ShareMaskHint: reserved, 0.
    pub break_reason: u32,
    pub access_mask_hint: u32,
    pub share_mask_hint: u32,
}

impl LeaseBreakNotification {
    /// MS-SMB2 2.2.23.2.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 44)?;
        Ok(Self {
            new_epoch: r.u16("NewEpoch")?,
            flags: LeaseBreakFlags(r.u32("Flags")?),
            lease_key: LeaseKey(r.array("LeaseKey")?),
            current_lease_state: LeaseState(r.u32("CurrentLeaseState")?),
            new_lease_state: LeaseState(r.u32("NewLeaseState")?),
            break_reason: r.u32("BreakReason")?,
            access_mask_hint: r.u32("AccessMaskHint")?,
            share_mask_hint: r.u32("ShareMaskHint")?,
        })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(44)
            .u16(self.new_epoch)
            .u32(self.flags.0)
            .bytes(&self.lease_key.0)
            .u32(self.current_lease_state.0)
            .u32(self.new_lease_state.0)
            .u32(self.break_reason)
            .u32(self.access_mask_hint)
            .u32(self.share_mask_hint);
    }
}

/// Lease Break Acknowledgment or Response (MS-SMB2 2.2.24.2, 2.2.25.2): same layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseBreakAck {
    /// Reserved, 0.
    pub flags: u32,
    pub lease_key: LeaseKey,
    pub lease_state: LeaseState,
    /// Reserved, 0.
    pub lease_duration: u64,
}

impl LeaseBreakAck {
    /// MS-SMB2 2.2.24.2.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 36)?;
        r.skip(2, "Reserved")?;
        Ok(Self {
            flags: r.u32("Flags")?,
            lease_key: LeaseKey(r.array("LeaseKey")?),
            lease_state: LeaseState(r.u32("LeaseState")?),
            lease_duration: r.u64("LeaseDuration")?,
        })
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(36)
            .u16(0)
            .u32(self.flags)
            .bytes(&self.lease_key.0)
            .u32(self.lease_state.0)
            .u64(self.lease_duration);
    }
}

/// Any OPLOCK_BREAK body, told apart by its StructureSize. A server receives `Oplock` or
/// `LeaseAck` (acknowledgments) and sends all three; a client receives all three.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OplockBreakMessage {
    /// Oplock break notification, acknowledgment or response.
    Oplock(OplockBreak),
    /// Lease break notification.
    LeaseNotification(LeaseBreakNotification),
    /// Lease break acknowledgment or response.
    LeaseAck(LeaseBreakAck),
}

impl OplockBreakMessage {
    /// Decodes by StructureSize; other sizes are an error.
    pub fn decode(pdu: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::after_header(pdu, crate::header::SMB2_HEADER_LEN, "SMB2 header")?;
        match r.u16("StructureSize")? {
            24 => OplockBreak::decode(pdu).map(Self::Oplock),
            44 => LeaseBreakNotification::decode(pdu).map(Self::LeaseNotification),
            36 => LeaseBreakAck::decode(pdu).map(Self::LeaseAck),
            got => Err(DecodeError::new(
                "StructureSize",
                DecodeErrorKind::BadSize {
                    expected: 24,
                    got: u32::from(got),
                },
            )),
        }
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        match self {
            Self::Oplock(m) => m.encode(w),
            Self::LeaseNotification(m) => m.encode(w),
            Self::LeaseAck(m) => m.encode(w),
        }
    }
}

smb3d_wire::impl_codec!(
    OplockBreak,
    LeaseBreakNotification,
    LeaseBreakAck,
    OplockBreakMessage
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::Header;
    use crate::testutil::{golden, hex, pdu_round_trip, pdu_with_body};
    use proptest::prelude::*;

    // smbtorture smb2.oplock.batch1 against Samba 4.17: break of a batch oplock to level II
    // (notification with MessageId all ones), the client's acknowledgment and Samba's response.
    const OPLOCK_NOTIFICATION: &str = "
        fe534d424000000000000000120000000100000000000000ffffffffffffffff0000000000000000a5c18efa00000000
        0000000000000000000000000000000018000100000000002c1fa0b700000000dfc7042200000000";
    const OPLOCK_ACK: &str = "
        fe534d424000010000000000120001001000000000000000070000000000000000000000ad75ffcba5c18efa00000000
        0000000000000000000000000000000018000100000000002c1fa0b700000000dfc7042200000000";
    const OPLOCK_RESPONSE: &str = "
        fe534d424000010000000000120001001100000000000000070000000000000000000000ad75ffcba5c18efa00000000
        0000000000000000000000000000000018000100000000002c1fa0b700000000dfc7042200000000";
    // smbtorture smb2.lease.break: RW -> R with ACK_REQUIRED, the acknowledgment, the response.
    const LEASE_NOTIFICATION: &str = "
        fe534d424000000000000000120000000100000000000000ffffffffffffffff00000000000000000000000000000000
        000000000000000000000000000000002c000000010000000df0dde0fe0fdcbaf20f221f01f023450500000001000000
        000000000000000000000000";
    const LEASE_ACK: &str = "
        fe534d42400001000000000012000200100000000000000047000000000000000000000065c21c2ca507f4a300000000
        0000000000000000000000000000000024000000000000000df0dde0fe0fdcbaf20f221f01f023450100000000000000
        00000000";
    const LEASE_RESPONSE: &str = "
        fe534d42400001000000000012000200110000000000000047000000000000000000000065c21c2ca507f4a300000000
        0000000000000000000000000000000024000000000000000df0dde0fe0fdcbaf20f221f01f023450100000000000000
        00000000";
    // smbtorture smb2.lease.v2_breaking3: a v2 lease break carrying NewEpoch 0x13.
    const LEASE_V2_NOTIFICATION: &str = "
        fe534d424000000000000000120000000100000000000000ffffffffffffffff00000000000000000000000000000000
        000000000000000000000000000000002c001300010000000df0dde0fe0fdcbaf20f221f01f023450700000003000000
        000000000000000000000000";

    fn round_trip(vector: &str) -> OplockBreakMessage {
        golden(&hex(vector))
    }

    #[test]
    fn oplock_break() {
        let notification = round_trip(OPLOCK_NOTIFICATION);
        let h = Header::decode(&hex(OPLOCK_NOTIFICATION)).unwrap();
        assert_eq!(h.message_id, u64::MAX);
        let OplockBreakMessage::Oplock(n) = notification else {
            panic!("{notification:?}");
        };
        assert_eq!(n.oplock_level, OplockLevel::II);
        assert_eq!(round_trip(OPLOCK_ACK), notification);
        assert_eq!(round_trip(OPLOCK_RESPONSE), notification);
        assert_eq!(OplockBreak::decode(&hex(OPLOCK_ACK)).unwrap(), n);
    }

    #[test]
    fn lease_break() {
        let key = LeaseKey(hex("0df0dde0fe0fdcbaf20f221f01f02345").try_into().unwrap());
        assert_eq!(
            round_trip(LEASE_NOTIFICATION),
            OplockBreakMessage::LeaseNotification(LeaseBreakNotification {
                new_epoch: 0,
                flags: LeaseBreakFlags::ACK_REQUIRED,
                lease_key: key,
                current_lease_state: LeaseState::READ_CACHING | LeaseState::WRITE_CACHING,
                new_lease_state: LeaseState::READ_CACHING,
                break_reason: 0,
                access_mask_hint: 0,
                share_mask_hint: 0,
            })
        );
        let ack = LeaseBreakAck {
            flags: 0,
            lease_key: key,
            lease_state: LeaseState::READ_CACHING,
            lease_duration: 0,
        };
        assert_eq!(round_trip(LEASE_ACK), OplockBreakMessage::LeaseAck(ack));
        assert_eq!(
            round_trip(LEASE_RESPONSE),
            OplockBreakMessage::LeaseAck(ack)
        );
        let OplockBreakMessage::LeaseNotification(v2) = round_trip(LEASE_V2_NOTIFICATION) else {
            panic!();
        };
        assert_eq!(v2.new_epoch, 0x13);
        assert_eq!(v2.current_lease_state, LeaseState(7));
        assert_eq!(v2.new_lease_state, LeaseState(3));
    }

    #[test]
    fn rejections() {
        let mut body = [0u8; 44];
        body[0] = 40;
        assert!(OplockBreakMessage::decode(&pdu_with_body(&body)).is_err());
        body[0] = 44;
        assert!(OplockBreakMessage::decode(&pdu_with_body(&body[..43])).is_err());
        body[0] = 36;
        assert!(OplockBreakMessage::decode(&pdu_with_body(&body[..35])).is_err());
        body[0] = 24;
        assert!(OplockBreakMessage::decode(&pdu_with_body(&body[..23])).is_err());
        assert!(OplockBreakMessage::decode(&pdu_with_body(&[])).is_err());
        assert!(LeaseBreakAck::decode(&hex(OPLOCK_ACK)).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(level in any::<u8>(), ids in any::<[u64; 2]>(), key in any::<[u8; 16]>(), n in any::<[u32; 6]>(), epoch in any::<u16>()) {
            for m in [
                OplockBreakMessage::Oplock(OplockBreak { oplock_level: OplockLevel(level), file_id: FileId { persistent: ids[0], volatile: ids[1] } }),
                OplockBreakMessage::LeaseNotification(LeaseBreakNotification { new_epoch: epoch, flags: LeaseBreakFlags(n[0]), lease_key: LeaseKey(key), current_lease_state: LeaseState(n[1]), new_lease_state: LeaseState(n[2]), break_reason: n[3], access_mask_hint: n[4], share_mask_hint: n[5] }),
                OplockBreakMessage::LeaseAck(LeaseBreakAck { flags: n[0], lease_key: LeaseKey(key), lease_state: LeaseState(n[1]), lease_duration: ids[0] }),
            ] {
                let mut buf = Vec::new();
                prop_assert_eq!(pdu_round_trip(&m, &mut buf), m);
            }
        }
    }
}
