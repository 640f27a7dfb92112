//! FILE_STREAM_INFORMATION lists (MS-FSCC 2.4, FileStreamInformation): one 8-byte aligned
//! entry per data stream, named `::$DATA` or `:name:$DATA`.

use smb3d_wire::{Reader, Result, Writer};

use crate::list::{ChainWriter, EntryIter};
use crate::name::{read_utf16, utf16_len_u32};

const STREAM_ALIGN: usize = 8;
/// Bytes before StreamName.
const STREAM_FIXED: usize = 24;

/// One decoded FILE_STREAM_INFORMATION entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileStreamEntry {
    pub stream_name: String,
    pub stream_size: u64,
    pub stream_allocation_size: u64,
}

impl FileStreamEntry {
    fn parse(entry: &[u8]) -> Result<Self> {
        let mut r = Reader::new(entry);
        r.skip(4, "NextEntryOffset")?;
        let name_len = r.u32("StreamNameLength")?;
        let stream_size = r.u64("StreamSize")?;
        let stream_allocation_size = r.u64("StreamAllocationSize")?;
        Ok(Self {
            stream_name: read_utf16(&mut r, name_len, "StreamName")?,
            stream_size,
            stream_allocation_size,
        })
    }
}

/// Walks a FILE_STREAM_INFORMATION list, checking every offset and length.
pub fn file_stream_list(buf: &[u8]) -> EntryIter<'_, FileStreamEntry> {
    EntryIter::new(
        buf,
        STREAM_ALIGN,
        STREAM_FIXED,
        "FILE_STREAM_INFORMATION",
        FileStreamEntry::parse,
    )
}

/// Builds a FILE_STREAM_INFORMATION list in at most `limit` bytes (the QUERY_INFO
/// OutputBufferLength). When an entry does not fit, the server answers
/// STATUS_BUFFER_OVERFLOW with the entries written so far (MS-FSA 2.1.5.12.29).
#[derive(Debug)]
pub struct StreamListEncoder {
    chain: ChainWriter,
}

impl StreamListEncoder {
    /// Starts a list at the writer's current position.
    pub fn new(w: &Writer<'_>, limit: usize) -> Self {
        Self {
            chain: ChainWriter::new(w, limit, STREAM_ALIGN),
        }
    }

    /// Appends one stream; `name` is the full form (`::$DATA`, `:name:$DATA`). False, writing
    /// nothing, if it does not fit.
    pub fn push(
        &mut self,
        w: &mut Writer<'_>,
        name: &str,
        stream_size: u64,
        stream_allocation_size: u64,
    ) -> bool {
        let name_len = utf16_len_u32(name);
        let len = STREAM_FIXED.saturating_add(usize::try_from(name_len).unwrap_or(usize::MAX));
        self.chain.push(w, len, |w| {
            w.u32(name_len).u64(stream_size).u64(stream_allocation_size);
            w.utf16(name);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_keeps_whole_entries_only() {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        let mut list = StreamListEncoder::new(&w, 70);
        assert!(list.push(&mut w, "::$DATA", 11, 4096));
        // 24 + 14 = 38 at offset 40 would end at 78.
        assert!(!list.push(&mut w, "::$DATA", 1, 1));
        assert_eq!((list.count(), list.len(&w)), (1, 38));
        let entries: Vec<_> = file_stream_list(&buf).map(|e| e.unwrap()).collect();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].stream_allocation_size, 4096);
    }

    #[test]
    fn misaligned_chain_is_rejected() {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        let mut list = StreamListEncoder::new(&w, 1000);
        assert!(list.push(&mut w, ":a:$DATA", 1, 1));
        assert!(list.push(&mut w, "::$DATA", 1, 1));
        buf[0] = 44;
        assert!(file_stream_list(&buf).next().unwrap().is_err());
    }
}
