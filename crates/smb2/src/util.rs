//! Small helpers shared by the command modules.

use smb3d_wire::{DecodeError, Reader};

use crate::header::SMB2_HEADER_LEN;

/// A reader over `pdu` positioned after the header and past a checked StructureSize.
pub(crate) fn body(pdu: &[u8], structure_size: u16) -> Result<Reader<'_>, DecodeError> {
    let mut r = Reader::after_header(pdu, SMB2_HEADER_LEN, "SMB2 header")?;
    r.structure_size(structure_size)?;
    Ok(r)
}

/// Widens a wire offset or length. Values that do not fit (never on 64-bit) become
/// `usize::MAX`, which every bounds check then rejects.
pub(crate) fn to_usize(v: u32) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// A length or offset for a 16-bit field (see the crate docs on saturation).
pub(crate) fn len16(n: usize) -> u16 {
    debug_assert!(
        n <= usize::from(u16::MAX),
        "{n} does not fit a 16-bit field"
    );
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// A length or offset for a 32-bit field (see the crate docs on saturation).
pub(crate) fn len32(n: usize) -> u32 {
    debug_assert!(u32::try_from(n).is_ok(), "{n} does not fit a 32-bit field");
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A little-endian u16 from a 2-byte chunk (shorter chunks read as zero-padded).
pub(crate) fn le16(c: &[u8]) -> u16 {
    let mut b = [0u8; 2];
    for (d, s) in b.iter_mut().zip(c) {
        *d = *s;
    }
    u16::from_le_bytes(b)
}

/// Declares a PDU whose body is only StructureSize 4 and a reserved u16 (ECHO, CANCEL, LOGOFF,
/// TREE_DISCONNECT, FLUSH and LOCK responses).
macro_rules! reserved_only_pdu {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;

        impl $name {
            /// Checks StructureSize 4; the Reserved field is ignored.
            pub fn decode(pdu: &[u8]) -> Result<Self, smb3d_wire::DecodeError> {
                crate::util::body(pdu, 4)?.skip(2, "Reserved")?;
                Ok(Self)
            }

            /// Writes StructureSize 4 and a zero Reserved field.
            pub fn encode(&self, w: &mut smb3d_wire::Writer<'_>) {
                w.u16(4).u16(0);
            }
        }

        smb3d_wire::impl_codec!($name);
    };
}
pub(crate) use reserved_only_pdu;

#[cfg(test)]
pub(crate) mod reserved_only_tests {
    use smb3d_wire::{Codec, DecodeErrorKind};

    use crate::testutil::{golden, hex, pdu_with_body};

    /// Checks a captured 4-byte PDU decodes and re-encodes exactly, and that a bad
    /// StructureSize and a truncated body are refused.
    pub(crate) fn check<T: for<'a> Codec<'a>>(vector: &str) {
        let pdu = hex(vector);
        golden::<T>(&pdu);
        assert!(matches!(
            T::decode(&pdu_with_body(&[5, 0, 0, 0])).err().unwrap().kind,
            DecodeErrorKind::BadSize { .. }
        ));
        assert_eq!(
            T::decode(&pdu_with_body(&[4, 0, 0])).err().unwrap().kind,
            DecodeErrorKind::Truncated
        );
        assert!(T::decode(&pdu[..63]).is_err());
    }
}
