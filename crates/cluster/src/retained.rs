//! [`Retained`]: the open records this node left in etcd when their opens closed
//! (docs/cluster.md "Retained records"), so that a later open of the same file with the same
//! record reuses one with no etcd call. A slot is in use by at most one open at a time; the
//! idle ones are kept in least-recently-used order and the oldest is deleted when the table
//! is full. Every change, including another node's release, happens under one lock, so a
//! release and this node's reuse of the same record are never both taken.

use std::collections::{BTreeMap, HashMap};

use parking_lot::Mutex;
use smb3d_state::{Intent, OpenRecord};

/// Whether an open whose record is `record` may leave it behind when it closes, and reuse one
/// left behind: it caches nothing, holds no lease (a lease key's later open may raise the state
/// it shares) and no application instance (another node's CREATE may order it closed), is not
/// delete-pending, and neither overwrites nor deletes on close, so that a reuse would break
/// nothing a fresh open of the same record breaks (MS-FSA 2.1.4.12).
pub(crate) fn retainable(record: &OpenRecord, intent: Intent) -> bool {
    record.caching == 0
        && record.lease.is_none()
        && record.app_instance.is_none()
        && !record.delete_pending
        && intent == Intent::default()
}

/// A record left behind.
#[derive(Debug)]
struct Slot {
    file: String,
    record: OpenRecord,
    /// The open using it now.
    user: Option<u64>,
    /// Its place in the idle order; `None` while in use or while its mark is being written.
    stamp: Option<u64>,
}

/// An open of this node that has a record it may leave behind, or uses one left behind.
#[derive(Debug)]
struct Live {
    file: String,
    /// The open id its record is keyed by: its own, or the one of the open that left it.
    key: u64,
    /// Its record while the open may leave it behind.
    record: Option<OpenRecord>,
}

#[derive(Debug, Default)]
struct Table {
    slots: HashMap<u64, Slot>,
    by_file: HashMap<String, Vec<u64>>,
    idle: BTreeMap<u64, u64>,
    live: HashMap<u64, Live>,
    clock: u64,
}

/// What a close leaves to etcd.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// Delete the record keyed by this id.
    Delete(u64),
    /// Mark the open's own record as retained (a slot waits for [`Retained::marked`]).
    Mark(OpenRecord),
}

/// What another node's release asks of etcd.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Release {
    /// The record is nobody's open: delete it.
    Delete,
    /// An open of this node uses it: it stays, without its mark.
    Unmark(OpenRecord),
    /// Nothing (the record is already gone or unmarked).
    Nothing,
}

/// The table, bounded to `capacity` records.
#[derive(Debug)]
pub(crate) struct Retained {
    table: Mutex<Table>,
    capacity: usize,
}

impl Table {
    fn remove_slot(&mut self, key: u64) -> Option<Slot> {
        let slot = self.slots.remove(&key)?;
        if let Some(stamp) = slot.stamp {
            self.idle.remove(&stamp);
        }
        if let Some(keys) = self.by_file.get_mut(&slot.file) {
            keys.retain(|k| *k != key);
            if keys.is_empty() {
                self.by_file.remove(&slot.file);
            }
        }
        Some(slot)
    }

    fn idle(&mut self, key: u64) {
        self.clock += 1;
        let stamp = self.clock;
        if let Some(slot) = self.slots.get_mut(&key) {
            slot.user = None;
            slot.stamp = Some(stamp);
            self.idle.insert(stamp, key);
        }
    }
}

impl Retained {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            table: Mutex::new(Table::default()),
            capacity: capacity.max(1),
        }
    }

    /// Open `id` of `file` was recorded under its own id with `record`, which it may leave
    /// behind when it closes.
    pub(crate) fn admitted(&self, file: &str, id: u64, record: &OpenRecord) {
        self.table.lock().live.insert(
            id,
            Live {
                file: file.to_owned(),
                key: id,
                record: Some(record.clone()),
            },
        );
    }

    /// Gives open `id` of `file` an idle record equal to `record`, if there is one.
    pub(crate) fn reuse(&self, file: &str, id: u64, record: &OpenRecord) -> bool {
        let mut table = self.table.lock();
        let table = &mut *table;
        let Some(key) = table.by_file.get(file).and_then(|keys| {
            keys.iter().copied().find(|k| {
                table
                    .slots
                    .get(k)
                    .is_some_and(|s| s.stamp.is_some() && s.record == *record)
            })
        }) else {
            return false;
        };
        let Some(slot) = table.slots.get_mut(&key) else {
            return false;
        };
        if let Some(stamp) = slot.stamp.take() {
            table.idle.remove(&stamp);
        }
        slot.user = Some(id);
        table.live.insert(
            id,
            Live {
                file: file.to_owned(),
                key,
                record: Some(record.clone()),
            },
        );
        true
    }

    /// Open `id` closed, if that needs no etcd call: it used a record left behind, which
    /// stays behind for the next.
    pub(crate) fn closed_at_once(&self, id: u64) -> bool {
        let mut table = self.table.lock();
        let Some(live) = table.live.get(&id) else {
            return false;
        };
        let key = live.key;
        if table.slots.get(&key).is_none_or(|s| s.user != Some(id)) {
            return false;
        }
        table.live.remove(&id);
        table.idle(key);
        true
    }

    /// Open `id` closed: what etcd must do with its record (`None`: an open this table
    /// does not know, whose own record is deleted). `retain` says whether this node may
    /// leave records behind now (it follows other nodes' release orders).
    pub(crate) fn closed(&self, id: u64, retain: bool) -> Option<Closed> {
        let mut table = self.table.lock();
        let live = table.live.remove(&id)?;
        match live.record {
            Some(record) if retain && live.key == id => {
                table.slots.insert(
                    id,
                    Slot {
                        file: live.file.clone(),
                        record: record.clone(),
                        user: None,
                        stamp: None,
                    },
                );
                table.by_file.entry(live.file).or_default().push(id);
                Some(Closed::Mark(record))
            }
            _ => Some(Closed::Delete(live.key)),
        }
    }

    /// The mark of record `key` was written (`ok`) or not: a marked record becomes idle and
    /// may be reused; the ids of the records evicted to keep the bound, with their files,
    /// are returned for deletion (and, when `!ok`, the record itself).
    pub(crate) fn marked(&self, key: u64, ok: bool) -> Vec<(String, u64)> {
        let mut table = self.table.lock();
        let mut gone = Vec::new();
        if table.slots.get(&key).is_none_or(|s| s.user.is_some()) {
            return gone;
        }
        if !ok {
            if let Some(slot) = table.remove_slot(key) {
                gone.push((slot.file, key));
            }
            return gone;
        }
        table.idle(key);
        while table.slots.len() > self.capacity {
            let Some((_, oldest)) = table.idle.pop_first() else {
                break;
            };
            if let Some(slot) = table.slots.get_mut(&oldest) {
                slot.stamp = None;
            }
            if let Some(slot) = table.remove_slot(oldest) {
                gone.push((slot.file, oldest));
            }
        }
        gone
    }

    /// Open `id`'s record changes (a delete-pending mark, caching): it is no longer a record
    /// to leave behind nor one left behind. Returns the id its record is keyed by.
    pub(crate) fn changed(&self, id: u64) -> u64 {
        let mut table = self.table.lock();
        let Some(live) = table.live.get_mut(&id) else {
            return id;
        };
        live.record = None;
        let key = live.key;
        if table.slots.get(&key).is_some_and(|s| s.user == Some(id)) {
            table.remove_slot(key);
        }
        key
    }

    /// Another node asks for record `key` of `file`, which it found marked, to be released.
    pub(crate) fn release(&self, file: &str, key: u64) -> Release {
        let mut table = self.table.lock();
        match table.slots.get(&key) {
            Some(slot) if slot.file == file => {
                let user = slot.user;
                let record = slot.record.clone();
                table.remove_slot(key);
                match user {
                    None => Release::Delete,
                    Some(open) => {
                        if let Some(live) = table.live.get_mut(&open) {
                            live.record = None;
                        }
                        Release::Unmark(record)
                    }
                }
            }
            Some(_) => Release::Nothing,
            // No slot: an open of this node may still use it unmarked (released before);
            // otherwise it is left over (a mark whose slot was evicted) and goes.
            None if table.live.values().any(|l| l.key == key && l.file == file) => Release::Nothing,
            None => Release::Delete,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(access: u32) -> OpenRecord {
        OpenRecord {
            access,
            share: 7,
            stream: None,
            delete_pending: false,
            caching: 0,
            lease: None,
            app_instance: None,
        }
    }

    #[test]
    fn which_opens_leave_their_record_behind() {
        let plain = record(0x81);
        assert!(retainable(&plain, Intent::default()));
        let overwrite = Intent {
            overwrite: true,
            ..Intent::default()
        };
        assert!(!retainable(&plain, overwrite));
        assert!(!retainable(
            &OpenRecord {
                caching: 1,
                ..plain.clone()
            },
            Intent::default()
        ));
        assert!(!retainable(
            &OpenRecord {
                lease: Some([1; 32]),
                ..plain.clone()
            },
            Intent::default()
        ));
        assert!(!retainable(
            &OpenRecord {
                delete_pending: true,
                ..plain
            },
            Intent::default()
        ));
    }

    #[test]
    fn a_closed_record_is_reused_by_an_equal_open_only_once_marked() {
        let table = Retained::new(8);
        let r = record(0x81);
        table.admitted("f", 1, &r);
        assert_eq!(table.closed(1, true), Some(Closed::Mark(r.clone())));
        assert!(!table.reuse("f", 2, &r), "not before its mark is written");
        assert!(table.marked(1, true).is_empty());
        assert!(!table.reuse("g", 2, &r), "another file");
        assert!(!table.reuse("f", 2, &record(0x1)), "another record");
        assert!(table.reuse("f", 2, &r));
        assert!(!table.reuse("f", 3, &r), "one user at a time");
        assert!(table.closed_at_once(2));
        assert!(table.reuse("f", 4, &r));
        // A change makes the record the open's own: its close deletes it.
        assert_eq!(table.changed(4), 1);
        assert!(!table.closed_at_once(4));
        assert_eq!(table.closed(4, true), Some(Closed::Delete(1)));
        assert_eq!(table.closed(9, true), None);
    }

    #[test]
    fn a_release_deletes_an_idle_record_and_unmarks_one_in_use() {
        let table = Retained::new(8);
        let r = record(0x81);
        for id in [1, 2] {
            table.admitted("f", id, &r);
            table.closed(id, true);
            table.marked(id, true);
        }
        // The first equal record found is taken: 1.
        assert!(table.reuse("f", 10, &r));
        let used = 1;
        assert_eq!(table.release("f", 2), Release::Delete);
        assert_eq!(
            table.release("g", used),
            Release::Nothing,
            "another file's id"
        );
        assert_eq!(table.release("f", used), Release::Unmark(r.clone()));
        // Neither is reusable now; the one in use is an ordinary open of its own.
        assert!(!table.reuse("f", 11, &r));
        assert_eq!(
            table.release("f", used),
            Release::Nothing,
            "still in use, unmarked"
        );
        assert!(!table.closed_at_once(10));
        assert_eq!(table.closed(10, true), Some(Closed::Delete(used)));
        assert_eq!(table.release("f", used), Release::Delete, "left over");
    }

    #[test]
    fn the_bound_evicts_the_least_recently_used() {
        let table = Retained::new(2);
        let r = record(0x81);
        let mut evicted = Vec::new();
        for id in 1..=3 {
            let file = format!("f{id}");
            table.admitted(&file, id, &r);
            table.closed(id, true);
            evicted.extend(table.marked(id, true));
        }
        assert_eq!(evicted, vec![("f1".to_owned(), 1)]);
        assert!(!table.reuse("f1", 9, &r));
        assert!(table.reuse("f2", 9, &r));
        // Without retention (no release orders followed) a close deletes.
        table.admitted("f4", 4, &r);
        assert_eq!(table.closed(4, false), Some(Closed::Delete(4)));
        // A mark that failed drops its slot.
        table.admitted("f5", 5, &r);
        table.closed(5, true);
        assert_eq!(table.marked(5, false), vec![("f5".to_owned(), 5)]);
        assert!(!table.reuse("f5", 6, &r));
    }
}
