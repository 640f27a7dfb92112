use crate::types::{FileTime, FileTimes, Guid};

/// Appends little-endian fields to a buffer. Offsets ([`Writer::offset`]) are relative to the
/// position the writer started at, which for SMB2 messages is the start of the SMB2 header, so
/// that offset fields can be filled in without arithmetic in the encoders.
#[derive(Debug)]
pub struct Writer<'b> {
    buf: &'b mut Vec<u8>,
    base: usize,
}

/// A reserved 16-bit field to fill in later.
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct Slot16(usize);

/// A reserved 32-bit field to fill in later.
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct Slot32(usize);

impl<'b> Writer<'b> {
    /// A writer whose offsets count from the current end of `buf`.
    pub fn new(buf: &'b mut Vec<u8>) -> Self {
        let base = buf.len();
        Self { buf, base }
    }

    /// A writer whose offsets count from `base`, an earlier position in `buf` (for a body
    /// written after its header).
    pub fn with_base(buf: &'b mut Vec<u8>, base: usize) -> Self {
        let base = base.min(buf.len());
        Self { buf, base }
    }

    /// Bytes written since the base.
    pub fn offset(&self) -> usize {
        self.buf.len() - self.base
    }

    /// The bytes written since the base.
    pub fn written(&self) -> &[u8] {
        self.buf.get(self.base..).unwrap_or_default()
    }

    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.buf.push(v);
        self
    }
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.bytes(&v.to_le_bytes())
    }
    pub fn u16_be(&mut self, v: u16) -> &mut Self {
        self.bytes(&v.to_be_bytes())
    }
    pub fn u32_be(&mut self, v: u32) -> &mut Self {
        self.bytes(&v.to_be_bytes())
    }
    pub fn guid(&mut self, v: &Guid) -> &mut Self {
        self.bytes(&v.0)
    }
    pub fn filetime(&mut self, v: FileTime) -> &mut Self {
        self.u64(v.0)
    }
    /// CreationTime, LastAccessTime, LastWriteTime and ChangeTime.
    pub fn file_times(&mut self, v: FileTimes) -> &mut Self {
        self.filetime(v.creation)
            .filetime(v.last_access)
            .filetime(v.last_write)
            .filetime(v.change)
    }
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(b);
        self
    }
    pub fn zeros(&mut self, n: usize) -> &mut Self {
        self.buf.resize(self.buf.len() + n, 0);
        self
    }

    /// Appends `n` zero bytes and returns them, for a payload produced in place (file data read
    /// straight into the response).
    pub fn zeroed_tail(&mut self, n: usize) -> &mut [u8] {
        let start = self.buf.len();
        self.buf.resize(start + n, 0);
        self.buf.get_mut(start..).unwrap_or_default()
    }

    /// Lets `fill` append to the buffer directly, for a payload produced in place without
    /// zeroing it first (file data read straight into a response); `fill` must only append.
    pub fn append_in_place<R>(&mut self, fill: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        let result = fill(self.buf);
        // A fill that cut into what was written before the base would break the offsets.
        if self.buf.len() < self.base {
            self.buf.resize(self.base, 0);
        }
        result
    }

    /// Writes `s` as UTF-16LE without terminator; returns the byte count.
    pub fn utf16(&mut self, s: &str) -> usize {
        let start = self.buf.len();
        crate::utf16::encode_utf16le(s, self.buf);
        self.buf.len() - start
    }

    /// Pads with zeros to a multiple of `align` bytes from the base.
    pub fn align(&mut self, align: usize) -> &mut Self {
        let pad = (align - self.offset() % align) % align;
        self.zeros(pad)
    }

    pub fn reserve_u16(&mut self) -> Slot16 {
        let at = self.buf.len();
        self.u16(0);
        Slot16(at)
    }
    pub fn reserve_u32(&mut self) -> Slot32 {
        let at = self.buf.len();
        self.u32(0);
        Slot32(at)
    }
    pub fn patch_u16(&mut self, slot: Slot16, v: u16) {
        self.patch(slot.0, &v.to_le_bytes());
    }
    pub fn patch_u32(&mut self, slot: Slot32, v: u32) {
        self.patch(slot.0, &v.to_le_bytes());
    }

    fn patch(&mut self, at: usize, bytes: &[u8]) {
        // Slots are only made by `reserve_*` on this buffer, so the range exists.
        if let Some(dst) = self.buf.get_mut(at..at + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
    }

    /// Drops everything written after `offset` (relative to the base), for an entry that did
    /// not fit in the space the peer allowed.
    pub fn truncate(&mut self, offset: usize) {
        self.buf.truncate(self.base + offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_relative_to_base_and_patching() {
        let mut buf = vec![0xAA; 4];
        let mut w = Writer::new(&mut buf);
        let slot = w.reserve_u16();
        w.u8(1).align(8);
        assert_eq!(w.offset(), 8);
        let off = w.offset() as u16;
        w.patch_u16(slot, off);
        w.utf16("ab");
        assert_eq!(
            buf,
            [
                0xAA, 0xAA, 0xAA, 0xAA, 8, 0, 1, 0, 0, 0, 0, 0, b'a', 0, b'b', 0
            ]
        );
    }

    #[test]
    fn with_base_counts_from_header() {
        let mut buf = vec![0u8; 70];
        let w = Writer::with_base(&mut buf, 64);
        assert_eq!(w.offset(), 6);
    }
}
