//! In-place output buffers: responses whose payload the caller writes straight into the
//! message (see the crate docs).

use smb3d_wire::{Slot32, Writer};

use crate::util::len32;

/// A response buffer being written in place: made by a response's `begin`, consumed by its
/// `finish`, which patches the buffer's length from what the caller wrote in between.
#[derive(Debug)]
#[must_use = "call the response's finish() to fill in the length"]
pub struct PendingOutput {
    length: Slot32,
    start: usize,
}

impl PendingOutput {
    /// Reserves the 32-bit length field at the writer's position; the buffer itself will start
    /// at `start` (relative to the header).
    pub(crate) fn reserve(w: &mut Writer<'_>, start: usize) -> Self {
        Self {
            length: w.reserve_u32(),
            start,
        }
    }

    /// The buffer's offset from the header start.
    pub fn offset(&self) -> usize {
        self.start
    }

    /// Bytes written into the buffer so far.
    pub fn written(&self, w: &Writer<'_>) -> usize {
        w.offset().saturating_sub(self.start)
    }

    /// Patches the length with what was written since the buffer started; returns it.
    pub(crate) fn finish(self, w: &mut Writer<'_>) -> u32 {
        let len = len32(self.written(w));
        w.patch_u32(self.length, len);
        len
    }
}

/// The shared layout of the QUERY_INFO, QUERY_DIRECTORY and CHANGE_NOTIFY responses:
/// StructureSize 9, OutputBufferOffset (u16), OutputBufferLength (u32), Buffer.
pub(crate) mod offset16_length32 {
    use smb3d_wire::{DecodeError, Writer};

    use super::PendingOutput;
    use crate::util::{body, len16, to_usize};

    /// Writes the fixed part; the caller writes the buffer, then calls `finish`.
    pub(crate) fn begin(w: &mut Writer<'_>) -> PendingOutput {
        let start = w.offset() + 8;
        w.u16(9).u16(len16(start));
        PendingOutput::reserve(w, start)
    }

    /// The buffer of such a response.
    pub(crate) fn decode(pdu: &[u8]) -> Result<&[u8], DecodeError> {
        let mut r = body(pdu, 9)?;
        let offset = usize::from(r.u16("OutputBufferOffset")?);
        let len = to_usize(r.u32("OutputBufferLength")?);
        r.buffer_at(offset, len, "OutputBuffer")
    }
}
