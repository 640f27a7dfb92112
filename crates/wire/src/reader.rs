#![cfg_attr(not(test), deny(clippy::arithmetic_side_effects))]

use crate::error::{DecodeError, DecodeErrorKind, Result};
use crate::types::{FileTime, FileTimes, Guid};

/// A cursor over one message. Offsets given to [`Reader::buffer_at`] are relative to the start
/// of the message the reader was created over (for SMB2, the start of the SMB2 header).
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    msg: &'a [u8],
    pos: usize,
    /// Variable-length buffers must not start before this offset (the end of the header).
    min_buffer_offset: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `msg`; buffers may lie anywhere in it.
    pub const fn new(msg: &'a [u8]) -> Self {
        Self {
            msg,
            pos: 0,
            min_buffer_offset: 0,
        }
    }

    /// A reader positioned at `header_len` (the body), whose buffers may not overlap the header.
    pub fn after_header(msg: &'a [u8], header_len: usize, field: &'static str) -> Result<Self> {
        if msg.len() < header_len {
            return Err(DecodeError::truncated(field));
        }
        Ok(Self {
            msg,
            pos: header_len,
            min_buffer_offset: header_len,
        })
    }

    pub const fn pos(&self) -> usize {
        self.pos
    }

    pub const fn message(&self) -> &'a [u8] {
        self.msg
    }

    pub const fn remaining(&self) -> usize {
        self.msg.len().saturating_sub(self.pos)
    }

    pub const fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread part of the message.
    pub fn rest(&self) -> &'a [u8] {
        self.msg.get(self.pos..).unwrap_or(&[])
    }

    /// Takes the next `n` bytes.
    pub fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or(DecodeError::new(field, DecodeErrorKind::Overflow))?;
        let out = self
            .msg
            .get(self.pos..end)
            .ok_or(DecodeError::truncated(field))?;
        self.pos = end;
        Ok(out)
    }

    pub fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N]> {
        let b = self.bytes(N, field)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    pub fn skip(&mut self, n: usize, field: &'static str) -> Result<()> {
        self.bytes(n, field).map(|_| ())
    }

    /// Moves to an absolute position within the message (for example past a padded body).
    pub fn seek(&mut self, pos: usize, field: &'static str) -> Result<()> {
        if pos > self.msg.len() {
            return Err(DecodeError::truncated(field));
        }
        self.pos = pos;
        Ok(())
    }

    pub fn u8(&mut self, field: &'static str) -> Result<u8> {
        Ok(u8::from_le_bytes(self.array(field)?))
    }
    pub fn u16(&mut self, field: &'static str) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array(field)?))
    }
    pub fn u32(&mut self, field: &'static str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }
    pub fn u64(&mut self, field: &'static str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }
    pub fn i64(&mut self, field: &'static str) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array(field)?))
    }
    pub fn u16_be(&mut self, field: &'static str) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array(field)?))
    }
    pub fn u32_be(&mut self, field: &'static str) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array(field)?))
    }
    pub fn guid(&mut self, field: &'static str) -> Result<Guid> {
        Ok(Guid(self.array(field)?))
    }
    pub fn filetime(&mut self, field: &'static str) -> Result<FileTime> {
        Ok(FileTime(self.u64(field)?))
    }
    /// CreationTime, LastAccessTime, LastWriteTime and ChangeTime.
    pub fn file_times(&mut self) -> Result<FileTimes> {
        Ok(FileTimes {
            creation: self.filetime("CreationTime")?,
            last_access: self.filetime("LastAccessTime")?,
            last_write: self.filetime("LastWriteTime")?,
            change: self.filetime("ChangeTime")?,
        })
    }

    /// Reads a StructureSize field and checks it.
    pub fn structure_size(&mut self, expected: u16) -> Result<()> {
        let got = self.u16("StructureSize")?;
        if got != expected {
            return Err(DecodeError::new(
                "StructureSize",
                DecodeErrorKind::BadSize {
                    expected: u32::from(expected),
                    got: u32::from(got),
                },
            ));
        }
        Ok(())
    }

    /// Resolves an (offset, length) pair relative to the message start. An empty buffer is
    /// valid whatever its offset (clients send offset 0 or a stale offset with length 0).
    pub fn buffer_at(&self, offset: usize, len: usize, field: &'static str) -> Result<&'a [u8]> {
        if len == 0 {
            return Ok(&[]);
        }
        if offset < self.min_buffer_offset {
            return Err(DecodeError::new(field, DecodeErrorKind::OutOfBounds));
        }
        let end = offset
            .checked_add(len)
            .ok_or(DecodeError::new(field, DecodeErrorKind::Overflow))?;
        self.msg
            .get(offset..end)
            .ok_or(DecodeError::new(field, DecodeErrorKind::OutOfBounds))
    }

    /// Like [`Reader::buffer_at`], returning the buffer's range instead of the bytes, for
    /// payloads that are handed on without copying.
    pub fn range_at(
        &self,
        offset: usize,
        len: usize,
        field: &'static str,
    ) -> Result<core::ops::Range<usize>> {
        self.buffer_at(offset, len, field)?;
        if len == 0 {
            return Ok(0..0);
        }
        // `buffer_at` checked that this neither overflows nor leaves the message.
        Ok(offset..offset.saturating_add(len))
    }

    /// A reader over `sub` that keeps nothing of this one (for nested structures whose offsets
    /// are relative to their own start).
    pub const fn nested(sub: &'a [u8]) -> Self {
        Self::new(sub)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_little_endian() {
        let msg = [1, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0];
        let mut r = Reader::new(&msg);
        assert_eq!(r.u16("a").unwrap(), 1);
        assert_eq!(r.u32("b").unwrap(), 2);
        assert_eq!(r.u64("c").unwrap(), 3);
        assert!(r.is_empty());
        assert_eq!(r.u8("d"), Err(DecodeError::truncated("d")));
    }

    #[test]
    fn truncation_does_not_move_cursor() {
        let msg = [1, 2, 3];
        let mut r = Reader::new(&msg);
        assert!(r.u32("x").is_err());
        assert_eq!(r.pos(), 0);
        assert_eq!(r.u16("y").unwrap(), 0x0201);
    }

    #[test]
    fn buffers_checked_against_header_and_end() {
        let msg = [0u8; 80];
        let r = Reader::after_header(&msg, 64, "hdr").unwrap();
        assert_eq!(r.buffer_at(64, 16, "buf").unwrap().len(), 16);
        assert_eq!(r.buffer_at(0, 0, "buf").unwrap().len(), 0);
        assert_eq!(
            r.buffer_at(60, 4, "buf").unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        assert_eq!(
            r.buffer_at(72, 9, "buf").unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        assert_eq!(
            r.buffer_at(usize::MAX, 2, "buf").unwrap_err().kind,
            DecodeErrorKind::Overflow
        );
        assert_eq!(r.range_at(70, 10, "buf").unwrap(), 70..80);
    }

    #[test]
    fn structure_size_mismatch_names_field() {
        let msg = [9, 0];
        let e = Reader::new(&msg).structure_size(8).unwrap_err();
        assert_eq!(e.field, "StructureSize");
        assert_eq!(
            e.kind,
            DecodeErrorKind::BadSize {
                expected: 8,
                got: 9
            }
        );
    }
}
