//! The state store: what must outlive a connection or the server itself (persistent opens
//! now; share modes, leases and locks when several servers share them, issue 18) is kept as
//! records behind [`StateStore`], injected through the server's `Settings` the way file
//! systems are behind `Vfs`. A record is opaque bytes under a table and a 64-bit id: the
//! server encodes and checks it; a back end only keeps it.
//!
//! Changing a record takes that record's [`RecordGuard`], and only that one: writes of two
//! records never wait for each other, and no server-wide lock is held while a back end waits
//! for its disk (or, in a cluster, its network). The guard is a parameter of every write, so a
//! write made without it does not compile.
//!
//! The server's `DiskStore` keeps each record in a file of its own (today's format and
//! speed); [`MemoryStore`] keeps them in memory, for tests and servers without a state
//! directory; `smb3d-cluster`'s `EtcdStore` keeps them in etcd. The trait lives in this small
//! crate, below both the server and the etcd back end, so that neither depends on the other:
//! the server links no gRPC, and the etcd crate builds in parallel with the protocol core.
//! `conformance` (feature `conformance`) is the suite every back end passes.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io;

use parking_lot::{Condvar, Mutex};

mod fence;
mod locks;
mod notify;
mod opens;

pub use fence::ClusterDialect;
pub use locks::{ByteRange, ClusterLocks, LockError, Released, overlap};
pub use notify::{ClusterNotify, DirChange, DirEvent, DirEventSink, MAX_EVENT_TEXT, concerns};
pub use opens::{
    Admitted, AppInstanceRecord, BreakNeeded, BreakOrder, BreakSink, CACHE_HANDLE, CACHE_READ,
    CACHE_WRITE, ClusterOpens, Intent, OpenError, OpenRecord, Refusal, Settled, Sharing, TakeOver,
};

/// The largest record a store takes or gives back (a persistent open holding a million
/// byte-range locks fits).
pub const MAX_RECORD: usize = 32 << 20;

/// A kind of record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Table {
    /// Persistent opens (MS-SMB2 3.3.1.10 Open.IsPersistent), by their persistent FileId.
    PersistentOpens,
}

/// Which records are being changed, so that a second change of one waits for the first.
#[derive(Default)]
pub struct RecordLocks {
    busy: Mutex<HashSet<(Table, u64)>>,
    freed: Condvar,
}

impl fmt::Debug for RecordLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordLocks")
            .field("busy", &self.busy.lock().len())
            .finish()
    }
}

impl RecordLocks {
    /// Waits until no one changes record `id` of `table`, then holds it until the guard is
    /// dropped. The table's lock is held only to look the record up, never while waiting.
    pub fn lock(&self, table: Table, id: u64) -> RecordGuard<'_> {
        let mut busy = self.busy.lock();
        while !busy.insert((table, id)) {
            self.freed.wait(&mut busy);
        }
        RecordGuard {
            locks: self,
            table,
            id,
        }
    }
}

/// The right to change one record, until dropped.
#[derive(Debug)]
pub struct RecordGuard<'a> {
    locks: &'a RecordLocks,
    table: Table,
    id: u64,
}

impl RecordGuard<'_> {
    pub fn table(&self) -> Table {
        self.table
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Refuses a guard taken on another store: it excludes no one from this one.
    pub fn check(&self, locks: &RecordLocks) -> io::Result<()> {
        if std::ptr::eq(self.locks, locks) {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the record's guard was taken on another store",
            ))
        }
    }
}

impl Drop for RecordGuard<'_> {
    fn drop(&mut self) {
        self.locks.busy.lock().remove(&(self.table, self.id));
        self.locks.freed.notify_all();
    }
}

/// Where records that outlive a connection are kept. Calls may block on I/O: callers run
/// them off the async workers.
pub trait StateStore: Send + Sync + fmt::Debug {
    /// Takes the right to change record `id` of `table`, waiting while someone else holds it.
    fn lock(&self, table: Table, id: u64) -> RecordGuard<'_>;
    /// Replaces the record `held` names with `bytes`, durably: once this returns, the record
    /// survives a crash. Records over [`MAX_RECORD`] bytes are refused.
    fn put(&self, held: &RecordGuard<'_>, bytes: &[u8]) -> io::Result<()>;
    /// Removes the record `held` names, durably; removing a missing record succeeds.
    fn remove(&self, held: &RecordGuard<'_>) -> io::Result<()>;
    /// Every record of `table`, by id, in id order.
    fn load(&self, table: Table) -> io::Result<Vec<(u64, Vec<u8>)>>;
    /// The largest record this back end keeps, at most [`MAX_RECORD`]; larger ones are
    /// refused. A replicated store has a smaller limit (etcd takes requests of 1.5 MiB).
    fn max_record(&self) -> usize {
        MAX_RECORD
    }
}

/// Refuses a record over [`MAX_RECORD`] bytes.
pub fn check_size(bytes: &[u8]) -> io::Result<()> {
    if bytes.len() > MAX_RECORD {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a record of {} bytes is over {MAX_RECORD}", bytes.len()),
        ));
    }
    Ok(())
}

/// Records in memory: lost when the server stops.
#[derive(Debug, Default)]
pub struct MemoryStore {
    locks: RecordLocks,
    records: Mutex<BTreeMap<(Table, u64), Vec<u8>>>,
}

impl StateStore for MemoryStore {
    fn lock(&self, table: Table, id: u64) -> RecordGuard<'_> {
        self.locks.lock(table, id)
    }

    fn put(&self, held: &RecordGuard<'_>, bytes: &[u8]) -> io::Result<()> {
        held.check(&self.locks)?;
        check_size(bytes)?;
        self.records
            .lock()
            .insert((held.table(), held.id()), bytes.to_vec());
        Ok(())
    }

    fn remove(&self, held: &RecordGuard<'_>) -> io::Result<()> {
        held.check(&self.locks)?;
        self.records.lock().remove(&(held.table(), held.id()));
        Ok(())
    }

    fn load(&self, table: Table) -> io::Result<Vec<(u64, Vec<u8>)>> {
        Ok(self
            .records
            .lock()
            .range((table, 0)..=(table, u64::MAX))
            .map(|((_, id), bytes)| (*id, bytes.clone()))
            .collect())
    }
}

/// The suite every back end passes; each case takes a fresh, empty store.
#[cfg(any(test, feature = "conformance"))]
pub mod conformance {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    const T: Table = Table::PersistentOpens;

    /// Expands one `#[test]` per case, each on a store `$make` returns.
    #[macro_export]
    macro_rules! store_conformance_tests {
        ($make:expr) => {
            $crate::store_conformance_tests!(@each $make;
                records_round_trip_and_the_latest_write_wins,
                removed_records_are_gone_and_removal_is_idempotent,
                oversized_records_are_refused,
                a_guard_of_another_store_is_refused,
                one_record_s_writers_take_turns,
                writers_of_different_records_do_not_wait,
            );
        };
        (@each $make:expr; $($case:ident),* $(,)?) => {
            $(
                #[test]
                fn $case() {
                    $crate::conformance::$case(($make)());
                }
            )*
        };
    }
    pub use store_conformance_tests;

    pub fn records_round_trip_and_the_latest_write_wins(store: Arc<dyn StateStore>) {
        assert!(store.load(T).unwrap().is_empty());
        store.put(&store.lock(T, 7), b"first").unwrap();
        store.put(&store.lock(T, 7), b"second").unwrap();
        store.put(&store.lock(T, u64::MAX), b"").unwrap();
        store.put(&store.lock(T, 0), &[0xff; 300]).unwrap();
        assert_eq!(
            store.load(T).unwrap(),
            vec![
                (0, vec![0xff; 300]),
                (7, b"second".to_vec()),
                (u64::MAX, Vec::new())
            ]
        );
    }

    pub fn removed_records_are_gone_and_removal_is_idempotent(store: Arc<dyn StateStore>) {
        store.put(&store.lock(T, 1), b"one").unwrap();
        store.put(&store.lock(T, 2), b"two").unwrap();
        store.remove(&store.lock(T, 1)).unwrap();
        store.remove(&store.lock(T, 1)).unwrap();
        store.remove(&store.lock(T, 99)).unwrap();
        assert_eq!(store.load(T).unwrap(), vec![(2, b"two".to_vec())]);
    }

    pub fn oversized_records_are_refused(store: Arc<dyn StateStore>) {
        let max = store.max_record();
        assert!(max <= MAX_RECORD);
        let held = store.lock(T, 3);
        assert!(store.put(&held, &vec![0; max + 1]).is_err());
        assert!(store.load(T).unwrap().is_empty());
        store.put(&held, &vec![1; max]).unwrap();
        assert_eq!(store.load(T).unwrap(), vec![(3, vec![1; max])]);
        store.remove(&held).unwrap();
    }

    pub fn a_guard_of_another_store_is_refused(store: Arc<dyn StateStore>) {
        let other = MemoryStore::default();
        let foreign = other.lock(T, 4);
        assert!(store.put(&foreign, b"x").is_err());
        assert!(store.remove(&foreign).is_err());
        assert!(store.load(T).unwrap().is_empty());
    }

    pub fn one_record_s_writers_take_turns(store: Arc<dyn StateStore>) {
        let held = store.lock(T, 5);
        let done = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (store, done) = (store.clone(), done.clone());
            std::thread::spawn(move || {
                let held = store.lock(T, 5);
                done.store(true, Ordering::SeqCst);
                store.put(&held, b"second").unwrap();
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!done.load(Ordering::SeqCst), "the second writer waits");
        store.put(&held, b"first").unwrap();
        drop(held);
        waiter.join().unwrap();
        assert_eq!(store.load(T).unwrap(), vec![(5, b"second".to_vec())]);
    }

    pub fn writers_of_different_records_do_not_wait(store: Arc<dyn StateStore>) {
        let held = store.lock(T, 6);
        let (done, written) = std::sync::mpsc::channel();
        let other = {
            let store = store.clone();
            std::thread::spawn(move || {
                store.put(&store.lock(T, 8), b"eight").unwrap();
                done.send(()).unwrap();
            })
        };
        let waited = written.recv_timeout(Duration::from_secs(10)).is_err();
        drop(held);
        other.join().unwrap();
        assert!(!waited, "record 8 waited for record 6");
        assert_eq!(store.load(T).unwrap(), vec![(8, b"eight".to_vec())]);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    crate::store_conformance_tests!(|| Arc::new(MemoryStore::default()) as Arc<dyn StateStore>);
}
