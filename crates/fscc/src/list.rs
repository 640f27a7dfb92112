//! NextEntryOffset chains: the list layout shared by directory listings, stream lists and EA
//! lists (MS-FSCC 2.4). Each entry starts with a 32-bit offset to the next entry, zero on the
//! last; entries are aligned, and no padding follows the last one.

use smb3d_wire::{DecodeError, DecodeErrorKind, Result, Slot32, Writer};

/// A checked walk over a NextEntryOffset chain, yielding each entry's bytes (up to the next
/// entry, or to the end of the buffer for the last one) parsed by `parse`. Offsets must be
/// aligned, must not point into the entry itself, and must stay inside the buffer, so the walk
/// always moves forward and ends. It stops after the first error.
#[derive(Clone)]
pub struct EntryIter<'a, T> {
    rest: &'a [u8],
    done: bool,
    align: usize,
    min_entry: usize,
    field: &'static str,
    parse: fn(&'a [u8]) -> Result<T>,
}

impl<'a, T> EntryIter<'a, T> {
    pub(crate) fn new(
        buf: &'a [u8],
        align: usize,
        min_entry: usize,
        field: &'static str,
        parse: fn(&'a [u8]) -> Result<T>,
    ) -> Self {
        Self {
            rest: buf,
            done: buf.is_empty(),
            align,
            min_entry,
            field,
            parse,
        }
    }

    fn step(&mut self) -> Result<T> {
        let head: [u8; 4] = self
            .rest
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .ok_or(DecodeError::truncated(self.field))?;
        let next = usize::try_from(u32::from_le_bytes(head))
            .map_err(|_| DecodeError::new(self.field, DecodeErrorKind::Overflow))?;
        if next == 0 {
            self.done = true;
            return (self.parse)(self.rest);
        }
        if !next.is_multiple_of(self.align) {
            return Err(DecodeError::new(self.field, DecodeErrorKind::Misaligned));
        }
        if next < self.min_entry || next >= self.rest.len() {
            return Err(DecodeError::new(self.field, DecodeErrorKind::OutOfBounds));
        }
        let (entry, rest) = self
            .rest
            .split_at_checked(next)
            .ok_or(DecodeError::new(self.field, DecodeErrorKind::OutOfBounds))?;
        self.rest = rest;
        (self.parse)(entry)
    }
}

impl<T> Iterator for EntryIter<'_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.step();
        if item.is_err() {
            self.done = true;
        }
        Some(item)
    }
}

impl<T> core::iter::FusedIterator for EntryIter<'_, T> {}

/// Appends aligned entries to a list while they fit in a byte limit, linking each to the
/// previous one through its NextEntryOffset.
#[derive(Debug)]
pub(crate) struct ChainWriter {
    start: usize,
    limit: usize,
    align: usize,
    last: Option<(usize, Slot32)>,
    count: usize,
}

impl ChainWriter {
    pub(crate) fn new(w: &Writer<'_>, limit: usize, align: usize) -> Self {
        Self {
            start: w.offset(),
            limit,
            align,
            last: None,
            count: 0,
        }
    }

    /// Writes one entry of `len` bytes (NextEntryOffset included) with `body`, which writes
    /// everything after the NextEntryOffset. Returns false, writing nothing, if the entry and
    /// the padding before it would pass the limit.
    pub(crate) fn push(
        &mut self,
        w: &mut Writer<'_>,
        len: usize,
        body: impl FnOnce(&mut Writer<'_>),
    ) -> bool {
        let used = w.offset().saturating_sub(self.start);
        let pad = if self.last.is_some() {
            (self.align - used % self.align) % self.align
        } else {
            0
        };
        let fits = used
            .checked_add(pad)
            .and_then(|n| n.checked_add(len))
            .is_some_and(|end| end <= self.limit);
        if !fits {
            return false;
        }
        w.zeros(pad);
        let entry_at = w.offset();
        if let Some((prev_at, prev_slot)) = self.last {
            // Bounded by the limit, which came from a 32-bit length.
            let delta = u32::try_from(entry_at - prev_at).unwrap_or(u32::MAX);
            w.patch_u32(prev_slot, delta);
        }
        let slot = w.reserve_u32();
        body(w);
        self.last = Some((entry_at, slot));
        self.count += 1;
        true
    }

    pub(crate) fn count(&self) -> usize {
        self.count
    }

    pub(crate) fn len(&self, w: &Writer<'_>) -> usize {
        w.offset().saturating_sub(self.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(entry: &[u8]) -> Result<usize> {
        Ok(entry.len())
    }

    #[test]
    fn chain_writer_links_pads_and_stops_at_limit() {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        let mut c = ChainWriter::new(&w, 30, 8);
        assert!(c.push(&mut w, 6, |w| {
            w.u16(0xAAAA);
        }));
        assert!(c.push(&mut w, 5, |w| {
            w.u8(0xBB);
        }));
        // 13 used, 3 padding, 16 more would end at 32 > 30.
        assert!(!c.push(&mut w, 16, |w| {
            w.zeros(12);
        }));
        assert_eq!(c.count(), 2);
        assert_eq!(c.len(&w), 13);
        assert_eq!(buf, [8, 0, 0, 0, 0xAA, 0xAA, 0, 0, 0, 0, 0, 0, 0xBB]);
        let lens: Vec<_> = EntryIter::new(&buf, 8, 4, "e", whole)
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(lens, [8, 5]);
    }

    #[test]
    fn rejects_self_loop_misalignment_and_escape() {
        // NextEntryOffset 0 would end the list; smaller than the entry header would loop
        // inside the entry.
        let looping = [2u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let e = EntryIter::new(&looping, 2, 4, "e", whole)
            .next()
            .unwrap()
            .unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::OutOfBounds);
        let misaligned = [4u8, 0, 0, 0, 0, 0, 0, 0];
        let e = EntryIter::new(&misaligned, 8, 4, "e", whole)
            .next()
            .unwrap()
            .unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::Misaligned);
        let escaping = [8u8, 0, 0, 0, 0, 0, 0, 0];
        let mut it = EntryIter::new(&escaping, 8, 4, "e", whole);
        assert_eq!(
            it.next().unwrap().unwrap_err().kind,
            DecodeErrorKind::OutOfBounds
        );
        assert!(it.next().is_none());
        let huge = [0xF8u8, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0];
        assert!(
            EntryIter::new(&huge, 8, 4, "e", whole)
                .next()
                .unwrap()
                .is_err()
        );
        assert!(
            EntryIter::new(&[1u8, 0], 8, 4, "e", whole)
                .next()
                .unwrap()
                .is_err()
        );
        assert!(EntryIter::new(&[], 8, 4, "e", whole).next().is_none());
    }
}
