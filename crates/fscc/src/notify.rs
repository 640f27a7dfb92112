//! FILE_NOTIFY_INFORMATION lists (MS-FSCC 2.7.1): the changes a CHANGE_NOTIFY response
//! reports, one 4-byte aligned entry per change.

use smb3d_wire::{Reader, Result, Writer};

use crate::list::{ChainWriter, EntryIter};
use crate::name::{read_utf16, utf16_len_u32};

const NOTIFY_ALIGN: usize = 4;
/// Bytes before FileName.
const NOTIFY_FIXED: usize = 12;

smb3d_wire::open_enum! {
    /// FILE_NOTIFY_INFORMATION Action (MS-FSCC 2.7.1).
    pub struct NotifyAction(u32) {
        ADDED = 0x0000_0001,
        REMOVED = 0x0000_0002,
        MODIFIED = 0x0000_0003,
        RENAMED_OLD_NAME = 0x0000_0004,
        RENAMED_NEW_NAME = 0x0000_0005,
        ADDED_STREAM = 0x0000_0006,
        REMOVED_STREAM = 0x0000_0007,
        MODIFIED_STREAM = 0x0000_0008,
    }
}

/// One decoded FILE_NOTIFY_INFORMATION entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NotifyEntry {
    pub action: NotifyAction,
    /// The name relative to the watched directory, components separated by `\`.
    pub file_name: String,
}

impl NotifyEntry {
    fn parse(entry: &[u8]) -> Result<Self> {
        let mut r = Reader::new(entry);
        r.skip(4, "NextEntryOffset")?;
        let action = NotifyAction(r.u32("Action")?);
        let name_len = r.u32("FileNameLength")?;
        Ok(Self {
            action,
            file_name: read_utf16(&mut r, name_len, "FileName")?,
        })
    }
}

/// Walks a FILE_NOTIFY_INFORMATION list, checking every offset and length.
pub fn notify_list(buf: &[u8]) -> EntryIter<'_, NotifyEntry> {
    EntryIter::new(
        buf,
        NOTIFY_ALIGN,
        NOTIFY_FIXED,
        "FILE_NOTIFY_INFORMATION",
        NotifyEntry::parse,
    )
}

/// The bytes one entry for `name` takes, without alignment padding.
pub fn notify_entry_len(name: &str) -> usize {
    NOTIFY_FIXED.saturating_add(usize::try_from(utf16_len_u32(name)).unwrap_or(usize::MAX))
}

/// Builds a FILE_NOTIFY_INFORMATION list in at most `limit` bytes (the CHANGE_NOTIFY
/// OutputBufferLength).
#[derive(Debug)]
pub struct NotifyListEncoder {
    chain: ChainWriter,
}

impl NotifyListEncoder {
    /// Starts a list at the writer's current position.
    pub fn new(w: &Writer<'_>, limit: usize) -> Self {
        Self {
            chain: ChainWriter::new(w, limit, NOTIFY_ALIGN),
        }
    }

    /// Appends one change. False, writing nothing, if it does not fit.
    pub fn push(&mut self, w: &mut Writer<'_>, action: NotifyAction, name: &str) -> bool {
        let name_len = utf16_len_u32(name);
        self.chain.push(w, notify_entry_len(name), |w| {
            w.u32(action.0).u32(name_len);
            w.utf16(name);
        })
    }

    /// Entries written.
    pub fn count(&self) -> usize {
        self.chain.count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The output of a CHANGE_NOTIFY response of Samba 4.17 to smbtorture smb2.notify.valid-req
    // (crates/smb2/src/change_notify.rs holds the whole capture): one ADDED entry for
    // "smb2-notify01.dat", padded to 48 bytes by Samba.
    const CAPTURED: &str = "00000000010000002200000073006d00620032002d006e006f007400690066007900300031002e006400610074000000";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn captured_entry() {
        let captured = hex(CAPTURED);
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        let mut list = NotifyListEncoder::new(&w, 4096);
        assert!(list.push(&mut w, NotifyAction::ADDED, "smb2-notify01.dat"));
        assert_eq!(buf, captured[..46]);
        let entries: Vec<_> = notify_list(&captured).map(|e| e.unwrap()).collect();
        assert_eq!(
            entries,
            [NotifyEntry {
                action: NotifyAction::ADDED,
                file_name: "smb2-notify01.dat".into()
            }]
        );
    }

    #[test]
    fn entries_are_aligned_and_limited() {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        let mut list = NotifyListEncoder::new(&w, 40);
        assert!(list.push(&mut w, NotifyAction::RENAMED_OLD_NAME, "a"));
        assert!(list.push(&mut w, NotifyAction::RENAMED_NEW_NAME, "bc"));
        // 14 + 2 padding, then 16 = 32; a third entry of 14 would end at 46.
        assert!(!list.push(&mut w, NotifyAction::ADDED, "d"));
        assert_eq!(list.count(), 2);
        let entries: Vec<_> = notify_list(&buf).map(|e| e.unwrap()).collect();
        assert_eq!(entries[1].file_name, "bc");
        assert_eq!(&buf[..4], &16u32.to_le_bytes());
    }
}
