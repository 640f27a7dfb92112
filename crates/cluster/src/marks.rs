//! [`DeletePendingMarks`]: the other nodes' delete-pending marks as this node's watch of
//! `files/` knows them (docs/cluster.md "Stat opens go unrecorded"). An open that no other
//! node needs to see makes no etcd round trip; all it must still meet of the others is a
//! pending delete (MS-FSA 2.1.5.1.2), which it reads here, in memory.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;
use smb3d_state::OpenRecord;

use crate::opens::mark_of;

/// Other nodes' open records that carry a delete-pending mark, by file key, then by record
/// key: the stream marked (`None`: the file).
#[derive(Debug, Default)]
pub struct DeletePendingMarks {
    files: Mutex<HashMap<String, HashMap<String, Option<String>>>>,
    /// How many marks `files` holds, read without its mutex by every unrecorded open.
    count: AtomicUsize,
    /// The watch follows `files/` now: false from its start until its first complete read,
    /// and from a broken watch until it has read everything again.
    current: AtomicBool,
}

/// The file key of an open record's key (`<prefix>files/<file>/open/<id>`), without the
/// prefix; `None` for any other key.
fn file_of(key: &str) -> Option<&str> {
    let (head, _) = key.rsplit_once("/open/")?;
    let (_, file) = head.rsplit_once("files/")?;
    (!file.contains('/')).then_some(file)
}

impl DeletePendingMarks {
    /// Learns what a record under `files/` now says (`None`: deleted); this node's own
    /// records (`node`) are its own table's business.
    pub(crate) fn learn(&self, node: &str, key: &str, value: Option<&[u8]>) {
        let Some(file) = file_of(key) else { return };
        let marked = value.and_then(mark_of).filter(|(owner, _)| owner != node);
        let mut files = self.files.lock();
        match marked {
            Some((_, stream)) => {
                let marks = files.entry(file.to_owned()).or_default();
                if marks.insert(key.to_owned(), stream).is_none() {
                    self.count.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                let Some(marks) = files.get_mut(file) else {
                    return;
                };
                if marks.remove(key).is_some() {
                    self.count.fetch_sub(1, Ordering::Relaxed);
                }
                if marks.is_empty() {
                    files.remove(file);
                }
            }
        }
    }

    /// Forgets every mark, before the watch reads `files/` anew.
    pub(crate) fn clear(&self) {
        self.files.lock().clear();
        self.count.store(0, Ordering::Relaxed);
    }

    /// Whether the watch is following `files/` (the marks are as current as its delay).
    pub(crate) fn set_current(&self, current: bool) {
        self.current.store(current, Ordering::Release);
    }

    /// Whether the marks can be trusted now; when not, an open must be recorded and judged
    /// by etcd as every other.
    pub fn current(&self) -> bool {
        self.current.load(Ordering::Acquire)
    }

    /// Whether any other node's record carries a mark.
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    /// Whether another node's record marks `file` itself (not only a stream of it).
    pub fn file_marked(&self, file: &str) -> bool {
        self.any()
            && self
                .files
                .lock()
                .get(file)
                .is_some_and(|marks| marks.values().any(Option::is_none))
    }

    /// Whether another node's mark of `file` refuses the new open `record`
    /// ([`OpenRecord::refused_by_mark`]).
    pub fn refuses(&self, file: &str, record: &OpenRecord) -> bool {
        if self.count.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.files.lock().get(file).is_some_and(|marks| {
            marks
                .values()
                .any(|stream| record.refused_by_mark(stream.as_deref()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(stream: Option<&str>) -> OpenRecord {
        OpenRecord {
            access: 0x80,
            share: 7,
            stream: stream.map(str::to_owned),
            delete_pending: false,
            caching: 0,
            lease: None,
            app_instance: None,
        }
    }

    #[test]
    fn marks_follow_other_nodes_records() {
        let marks = DeletePendingMarks::default();
        let key = "/p/files/2f-1a/open/0000000000000001";
        let pending = br#"{"v":3,"node":"n1","access":65536,"share":7,"delete_pending":true}"#;
        let plain = br#"{"v":3,"node":"n1","access":65536,"share":7}"#;
        assert!(!marks.refuses("2f-1a", &stat(None)));
        marks.learn("n2", key, Some(pending));
        assert!(marks.refuses("2f-1a", &stat(None)));
        assert!(!marks.refuses("2f-1b", &stat(None)), "another file");
        // Unmarked again, then marked and deleted: nothing left.
        marks.learn("n2", key, Some(plain));
        assert!(!marks.refuses("2f-1a", &stat(None)));
        marks.learn("n2", key, Some(pending));
        marks.learn("n2", key, None);
        assert!(!marks.refuses("2f-1a", &stat(None)));
        assert!(marks.files.lock().is_empty());
        // This node's own mark is its table's business; lock keys and garbage are no marks.
        marks.learn("n1", key, Some(pending));
        marks.learn("n2", "/p/files/2f-1a/lock/01/02", Some(pending));
        marks.learn("n2", key, Some(b"\xff{"));
        assert!(!marks.refuses("2f-1a", &stat(None)));
        // A stream's mark refuses that stream's opens only.
        let stream =
            br#"{"v":3,"node":"n1","access":65536,"share":7,"stream":"s","delete_pending":true}"#;
        marks.learn("n2", key, Some(stream));
        assert!(marks.refuses("2f-1a", &stat(Some("s"))));
        assert!(!marks.refuses("2f-1a", &stat(None)));
        assert!(
            marks.any() && !marks.file_marked("2f-1a"),
            "a stream's mark"
        );
        marks.learn("n2", "/p/files/2f-1a/open/02", Some(pending));
        assert!(marks.file_marked("2f-1a") && !marks.file_marked("2f-1b"));
        marks.clear();
        assert!(!marks.refuses("2f-1a", &stat(Some("s"))));
        assert!(!marks.any() && !marks.file_marked("2f-1a"));
    }

    #[test]
    fn open_keys_name_their_file() {
        assert_eq!(file_of("/p/files/2f-1a/open/00"), Some("2f-1a"));
        assert_eq!(file_of("/p/files/2f-1a/lock/00/01"), None);
        assert_eq!(file_of("/p/files/a/b/open/00"), None);
    }
}
