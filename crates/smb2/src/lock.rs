//! LOCK (MS-SMB2 2.2.26, 2.2.27).

use smb3d_wire::{DecodeError, Reader, Writer};

use crate::file_id::FileId;
use crate::util::{body, len16, reserved_only_pdu};

smb3d_wire::open_flags! {
    /// SMB2_LOCK_ELEMENT Flags (MS-SMB2 2.2.26.1).
    pub struct LockFlags(u32) {
        SHARED_LOCK = 0x0000_0001,
        EXCLUSIVE_LOCK = 0x0000_0002,
        UNLOCK = 0x0000_0004,
        FAIL_IMMEDIATELY = 0x0000_0010,
    }
}

/// SMB2_LOCK_ELEMENT (MS-SMB2 2.2.26.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LockElement {
    pub offset: u64,
    pub length: u64,
    pub flags: LockFlags,
}

/// Size of one lock element on the wire.
const LOCK_ELEMENT_LEN: usize = 24;

impl LockElement {
    /// Writes the 24-byte element.
    pub fn write(&self, w: &mut Writer<'_>) {
        w.u64(self.offset).u64(self.length).u32(self.flags.0).u32(0);
    }

    fn read(chunk: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(chunk);
        Ok(Self {
            offset: r.u64("Lock.Offset")?,
            length: r.u64("Lock.Length")?,
            flags: LockFlags(r.u32("Lock.Flags")?),
        })
    }
}

/// The lock elements of a request, borrowed from the PDU (their count was checked against the
/// bytes present).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LockElements<'a>(&'a [u8]);

impl<'a> LockElements<'a> {
    /// Wraps encoded elements; `None` unless the length is a multiple of 24.
    pub fn new(raw: &'a [u8]) -> Option<Self> {
        raw.len()
            .is_multiple_of(LOCK_ELEMENT_LEN)
            .then_some(Self(raw))
    }

    /// How many elements there are.
    pub fn len(&self) -> usize {
        self.0.len() / LOCK_ELEMENT_LEN
    }

    /// Whether there are none (LockCount 0, which the server refuses).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The elements in request order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = LockElement> + 'a {
        self.0
            .chunks_exact(LOCK_ELEMENT_LEN)
            .map(|c| LockElement::read(c).unwrap_or_default())
    }

    /// The encoded elements.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
}

/// SMB2 LOCK Request (MS-SMB2 2.2.26).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockRequest<'a> {
    /// LockSequenceNumber (low 4 bits) and LockSequenceIndex (high 28 bits).
    pub lock_sequence: u32,
    pub file_id: FileId,
    pub locks: LockElements<'a>,
}

impl<'a> LockRequest<'a> {
    /// MS-SMB2 2.2.26. A LockCount of 0 decodes (the server answers INVALID_PARAMETER);
    /// LockCount elements must be present.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 48)?;
        let count = usize::from(r.u16("LockCount")?);
        let lock_sequence = r.u32("LockSequence")?;
        let file_id = FileId::read(&mut r)?;
        let locks = LockElements(r.bytes(count * LOCK_ELEMENT_LEN, "Locks")?);
        Ok(Self {
            lock_sequence,
            file_id,
            locks,
        })
    }

    /// LockSequenceNumber (MS-SMB2 2.2.26).
    pub const fn lock_sequence_number(&self) -> u8 {
        (self.lock_sequence & 0xF) as u8
    }

    /// LockSequenceIndex (MS-SMB2 2.2.26).
    pub const fn lock_sequence_index(&self) -> u32 {
        self.lock_sequence >> 4
    }

    /// Writes the body after the header.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(48)
            .u16(len16(self.locks.len()))
            .u32(self.lock_sequence);
        self.file_id.write(w);
        w.bytes(self.locks.as_bytes());
    }
}

reserved_only_pdu! {
    /// SMB2 LOCK Response (MS-SMB2 2.2.27).
    LockResponse
}

smb3d_wire::impl_codec!(LockRequest<'a>);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{golden, hex, pdu_round_trip};
    use crate::util::reserved_only_tests::check;
    use proptest::prelude::*;

    // smbtorture smb2.lock.cancel against Samba 4.17: one exclusive lock of 10 bytes at 100.
    const REQUEST_ONE: &str = "
        fe534d4240000100000000000a0001001000000000000000090000000000000000000000cbec1692ae772cdf00000000
        0000000000000000000000000000000030000100000000007029578300000000426da671000000006400000000000000
        0a000000000000000200000000000000";
    const RESPONSE: &str = "
        fe534d4240000100000000000a0001001100000000000000090000000000000000000000cbec1692ae772cdf00000000
        0000000000000000000000000000000004000000";
    // smbtorture smb2.lock.valid-request: two elements (flags 0, then UNLOCK), and LockCount 0.
    const REQUEST_TWO: &str = "
        fe534d4240000100000000000a00010010000000000000001800000000000000000000004d86d7c4457fe16400000000
        00000000000000000000000000000000300002000000000092eb941800000000c37309b8000000000f27000000000000
        010000000000000000000000000000000f2700000000000001000000000000000400000000000000";
    const REQUEST_NONE: &str = "
        fe534d4240000100000000000a00010010000000000000000600000000000000000000004d86d7c4457fe16400000000
        00000000000000000000000000000000300000000000000092eb941800000000c37309b800000000";

    #[test]
    fn captured() {
        let pdu = hex(REQUEST_ONE);
        let req = golden::<LockRequest>(&pdu);
        assert_eq!(req.locks.len(), 1);
        assert_eq!(
            req.locks.iter().collect::<Vec<_>>(),
            [LockElement {
                offset: 100,
                length: 10,
                flags: LockFlags::EXCLUSIVE_LOCK
            }]
        );

        let pdu = hex(REQUEST_TWO);
        let req = golden::<LockRequest>(&pdu);
        let locks: Vec<_> = req.locks.iter().collect();
        assert_eq!(locks.len(), 2);
        assert!(
            locks[0].flags.is_empty(),
            "an invalid combination the test sends on purpose"
        );
        assert_eq!((locks[0].offset, locks[0].length), (9999, 1));
        assert_eq!(locks[1].flags, LockFlags::UNLOCK);
        assert_eq!(
            (req.lock_sequence_number(), req.lock_sequence_index()),
            (0, 0)
        );

        let pdu = hex(REQUEST_NONE);
        let req = golden::<LockRequest>(&pdu);
        assert!(req.locks.is_empty());

        check::<LockResponse>(RESPONSE);
    }

    #[test]
    fn count_beyond_bytes_present() {
        let mut pdu = hex(REQUEST_TWO);
        pdu[66] = 3;
        assert_eq!(LockRequest::decode(&pdu).unwrap_err().field, "Locks");
        pdu[66..68].copy_from_slice(&[0xFF, 0xFF]);
        assert_eq!(LockRequest::decode(&pdu).unwrap_err().field, "Locks");
        assert!(LockRequest::decode(&hex(REQUEST_NONE)[..87]).is_err());
        assert!(LockElements::new(&[0; 25]).is_none());
    }

    #[test]
    fn sequence_bits() {
        let req = LockRequest {
            lock_sequence: 0x0000_0123,
            file_id: FileId::ANY,
            locks: LockElements::default(),
        };
        assert_eq!(req.lock_sequence_number(), 3);
        assert_eq!(req.lock_sequence_index(), 0x12);
    }

    proptest! {
        #[test]
        fn round_trips(seq in any::<u32>(), locks in proptest::collection::vec(any::<(u64, u64, u32)>(), 0..10)) {
            let elements: Vec<_> = locks.iter().map(|&(offset, length, flags)| LockElement { offset, length, flags: LockFlags(flags) }).collect();
            let mut raw = Vec::new();
            let mut w = Writer::new(&mut raw);
            for e in &elements {
                e.write(&mut w);
            }
            let req = LockRequest { lock_sequence: seq, file_id: FileId::ANY, locks: LockElements::new(&raw).unwrap() };
            let mut buf = Vec::new();
            let decoded = pdu_round_trip(&req, &mut buf);
            prop_assert_eq!(&decoded, &req);
            prop_assert_eq!(decoded.locks.iter().collect::<Vec<_>>(), elements);
        }
    }
}
