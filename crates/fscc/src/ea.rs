//! Extended-attribute lists: FILE_FULL_EA_INFORMATION (QUERY_INFO and SET_INFO
//! FileFullEaInformation, the CREATE ExtA context) and FILE_GET_EA_INFORMATION (the
//! QUERY_INFO input naming the EAs wanted), MS-FSCC 2.4. Entries are 4-byte aligned.

use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Result, Writer};

use crate::attributes::EaFlags;
use crate::list::{ChainWriter, EntryIter};

/// Entry alignment of both EA list forms.
const EA_ALIGN: usize = 4;
/// NextEntryOffset, Flags, EaNameLength, EaValueLength and the name's terminator.
const FULL_EA_MIN: usize = 9;
/// NextEntryOffset, EaNameLength and the name's terminator.
const GET_EA_MIN: usize = 6;

/// One FILE_FULL_EA_INFORMATION entry. The name is 8-bit characters without its terminator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FullEa<'a> {
    pub flags: EaFlags,
    pub name: &'a [u8],
    pub value: &'a [u8],
}

impl FullEa<'_> {
    /// Bytes the entry takes on the wire, without alignment padding.
    pub fn encoded_len(&self) -> usize {
        FULL_EA_MIN + self.name.len() + self.value.len()
    }

    /// Whether the name fits EaNameLength (8 bits) and the value EaValueLength (16 bits).
    pub fn is_encodable(&self) -> bool {
        u8::try_from(self.name.len()).is_ok() && u16::try_from(self.value.len()).is_ok()
    }

    fn parse(entry: &[u8]) -> Result<FullEa<'_>> {
        let mut r = Reader::new(entry);
        r.skip(4, "NextEntryOffset")?;
        let flags = EaFlags(r.u8("Flags")?);
        let name_len = usize::from(r.u8("EaNameLength")?);
        let value_len = usize::from(r.u16("EaValueLength")?);
        let name = r.bytes(name_len, "EaName")?;
        if r.u8("EaName")? != 0 {
            return Err(DecodeError::new("EaName", DecodeErrorKind::InvalidValue));
        }
        let value = r.bytes(value_len, "EaValue")?;
        Ok(FullEa { flags, name, value })
    }
}

/// Walks a FILE_FULL_EA_INFORMATION list, checking every offset and length.
pub fn full_ea_list(buf: &[u8]) -> EntryIter<'_, FullEa<'_>> {
    EntryIter::new(
        buf,
        EA_ALIGN,
        FULL_EA_MIN,
        "FILE_FULL_EA_INFORMATION",
        FullEa::parse,
    )
}

/// Builds a FILE_FULL_EA_INFORMATION list in at most `limit` bytes.
#[derive(Debug)]
pub struct FullEaListEncoder {
    chain: ChainWriter,
}

impl FullEaListEncoder {
    /// Starts a list at the writer's current position.
    pub fn new(w: &Writer<'_>, limit: usize) -> Self {
        Self {
            chain: ChainWriter::new(w, limit, EA_ALIGN),
        }
    }

    /// Appends `ea`; false, writing nothing, if it does not fit in the limit or is not
    /// [`FullEa::is_encodable`].
    pub fn push(&mut self, w: &mut Writer<'_>, ea: &FullEa<'_>) -> bool {
        let (Ok(name_len), Ok(value_len)) =
            (u8::try_from(ea.name.len()), u16::try_from(ea.value.len()))
        else {
            return false;
        };
        self.chain.push(w, ea.encoded_len(), |w| {
            w.u8(ea.flags.0)
                .u8(name_len)
                .u16(value_len)
                .bytes(ea.name)
                .u8(0)
                .bytes(ea.value);
        })
    }

    /// Entries written.
    pub fn count(&self) -> usize {
        self.chain.count()
    }

    /// Bytes written.
    pub fn len(&self, w: &Writer<'_>) -> usize {
        self.chain.len(w)
    }
}

/// One FILE_GET_EA_INFORMATION entry: the name of an EA to return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetEa<'a> {
    pub name: &'a [u8],
}

impl GetEa<'_> {
    fn parse(entry: &[u8]) -> Result<GetEa<'_>> {
        let mut r = Reader::new(entry);
        r.skip(4, "NextEntryOffset")?;
        let name_len = usize::from(r.u8("EaNameLength")?);
        let name = r.bytes(name_len, "EaName")?;
        if r.u8("EaName")? != 0 {
            return Err(DecodeError::new("EaName", DecodeErrorKind::InvalidValue));
        }
        Ok(GetEa { name })
    }
}

/// Walks a FILE_GET_EA_INFORMATION list, checking every offset and length.
pub fn get_ea_list(buf: &[u8]) -> EntryIter<'_, GetEa<'_>> {
    EntryIter::new(
        buf,
        EA_ALIGN,
        GET_EA_MIN,
        "FILE_GET_EA_INFORMATION",
        GetEa::parse,
    )
}

/// Appends a FILE_GET_EA_INFORMATION list naming `names`; false, leaving the list short, at
/// the first name longer than 255 bytes.
pub fn encode_get_ea_list<'n>(
    w: &mut Writer<'_>,
    names: impl IntoIterator<Item = &'n [u8]>,
) -> bool {
    let mut chain = ChainWriter::new(w, usize::MAX, EA_ALIGN);
    for name in names {
        let Ok(name_len) = u8::try_from(name.len()) else {
            return false;
        };
        chain.push(w, GET_EA_MIN + name.len(), |w| {
            w.u8(name_len).bytes(name).u8(0);
        });
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ea<'a>(name: &'a [u8], value: &'a [u8]) -> FullEa<'a> {
        FullEa {
            flags: EaFlags::empty(),
            name,
            value,
        }
    }

    fn build(eas: &[FullEa<'_>], limit: usize) -> (Vec<u8>, usize) {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        let mut list = FullEaListEncoder::new(&w, limit);
        for e in eas {
            if !list.push(&mut w, e) {
                break;
            }
        }
        (buf.clone(), list.count())
    }

    #[test]
    fn entries_are_four_byte_aligned_with_no_trailing_padding() {
        let (buf, n) = build(&[ea(b"A", b"1"), ea(b"BB", b""), ea(b"C", b"xyz")], 1000);
        assert_eq!(n, 3);
        assert_eq!(
            buf,
            [
                12, 0, 0, 0, 0, 1, 1, 0, b'A', 0, b'1', 0, //
                12, 0, 0, 0, 0, 2, 0, 0, b'B', b'B', 0, 0, //
                0, 0, 0, 0, 0, 1, 3, 0, b'C', 0, b'x', b'y', b'z'
            ]
        );
        let back: Vec<_> = full_ea_list(&buf).map(|e| e.unwrap()).collect();
        assert_eq!(back, [ea(b"A", b"1"), ea(b"BB", b""), ea(b"C", b"xyz")]);
    }

    #[test]
    fn encoder_respects_limit_and_wire_limits() {
        let (buf, n) = build(&[ea(b"A", b"1"), ea(b"B", b"2")], 22);
        assert_eq!((n, buf.len()), (1, 11));
        let long_name = [b'n'; 256];
        let (buf, n) = build(&[ea(&long_name, b"")], 10_000);
        assert_eq!((n, buf.len()), (0, 0));
        assert!(!ea(&long_name, b"").is_encodable());
        let big_value = vec![0u8; 65_536];
        assert!(!ea(b"v", &big_value).is_encodable());
        assert!(ea(b"v", &big_value[1..]).is_encodable());
    }

    #[test]
    fn malformed_lists_are_rejected() {
        let (good, _) = build(&[ea(b"A", b"1"), ea(b"B", b"2")], 1000);
        // NextEntryOffset pointing back into the entry itself (a loop).
        let mut looped = good.clone();
        looped[0] = 4;
        let e = full_ea_list(&looped).next().unwrap().unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::OutOfBounds);
        // Past the end of the buffer.
        let mut escaping = good.clone();
        escaping[0] = 0x40;
        assert!(full_ea_list(&escaping).next().unwrap().is_err());
        // Not a multiple of 4.
        let mut misaligned = good.clone();
        misaligned[0] = 13;
        let e = full_ea_list(&misaligned).next().unwrap().unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::Misaligned);
        // Missing name terminator.
        let mut unterminated = good.clone();
        unterminated[9] = b'X';
        let e = full_ea_list(&unterminated).next().unwrap().unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::InvalidValue);
        // Value longer than the entry.
        let mut long_value = good.clone();
        long_value[6] = 9;
        assert!(full_ea_list(&long_value).next().unwrap().is_err());
        // Truncated last entry.
        assert!(
            full_ea_list(&good[..good.len() - 1])
                .nth(1)
                .unwrap()
                .is_err()
        );
        // The walk stops after the first error.
        let mut it = full_ea_list(&looped);
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
    }

    #[test]
    fn get_ea_lists() {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        assert!(encode_get_ea_list(&mut w, [&b"EA1"[..], b"LONGER"]));
        assert_eq!(
            buf,
            [
                12, 0, 0, 0, 3, b'E', b'A', b'1', 0, 0, 0, 0, //
                0, 0, 0, 0, 6, b'L', b'O', b'N', b'G', b'E', b'R', 0
            ]
        );
        let names: Vec<_> = get_ea_list(&buf).map(|e| e.unwrap().name).collect();
        assert_eq!(names, [&b"EA1"[..], b"LONGER"]);
        buf[8] = 1;
        assert!(get_ea_list(&buf).next().unwrap().is_err());
        let mut buf = Vec::new();
        assert!(!encode_get_ea_list(
            &mut Writer::new(&mut buf),
            [&[b'x'; 300][..]]
        ));
    }
}
