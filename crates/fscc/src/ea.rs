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
