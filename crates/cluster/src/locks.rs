//! [`EtcdLocks`]: the cluster-wide byte-range lock table in etcd (docs/cluster.md "Byte-range
//! locks"). Each granted lock is one key, `<prefix>files/<file-key>/lock/<open id>/<n>`
//! (`n` a number this node never uses twice), written in one transaction that also reads
//! every lock key of the file at the same revision: the records it sees were all there before
//! it, so of two racing conflicting locks the later one sees the earlier and withdraws, and
//! the earlier cannot see the later. An unlock deletes one key, a close the open's prefix.
//! Records live under the node's etcd lease: a node that dies takes its locks with it.
//!
//! Other nodes' locks are also kept in memory, current through a watch of `files/`: READ and
//! WRITE are checked against them without a round trip, and a blocking lock waits on the
//! watch's news of a release (never polling). The same watch keeps other nodes'
//! delete-pending marks ([`DeletePendingMarks`]) for the opens that go unrecorded.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use smb3d_state::{ByteRange, ClusterLocks, LockError, Released};
use tokio::sync::watch;

use crate::{DeletePendingMarks, Etcd, Membership, change};

/// The record format this node writes; a reader takes any version and the fields it knows.
const FORMAT: u32 = 1;

/// How long a broken watch waits before it reads and watches again.
const REWATCH_DELAY: Duration = Duration::from_secs(1);

/// A lock record as stored.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    v: u32,
    node: String,
    offset: u64,
    length: u64,
    exclusive: bool,
}

impl Stored {
    fn range(&self) -> ByteRange {
        ByteRange {
            offset: self.offset,
            length: self.length,
            exclusive: self.exclusive,
        }
    }
}

/// Other nodes' locks as this node's watch knows them, and the blocking locks waiting for
/// one of a file to go.
#[derive(Debug, Default)]
struct Foreign {
    /// By file key, then by record key.
    files: HashMap<String, HashMap<String, ByteRange>>,
    waiters: HashMap<String, watch::Sender<u64>>,
}

impl Foreign {
    fn learn(&mut self, node: &str, key: &str, value: Option<&[u8]>, count: &AtomicUsize) {
        let Some(file) = file_of(key) else { return };
        match value {
            Some(value) => {
                // An unreadable record is another node's lock all the same: of everything.
                let range = match serde_json::from_slice::<Stored>(value) {
                    Ok(stored) if stored.node == node => return,
                    Ok(stored) => stored.range(),
                    Err(_) => ByteRange {
                        offset: 0,
                        length: u64::MAX,
                        exclusive: true,
                    },
                };
                let file = self.files.entry(file.to_owned()).or_default();
                if file.insert(key.to_owned(), range).is_none() {
                    count.fetch_add(1, Ordering::Relaxed);
                }
            }
            None => {
                let Some(locks) = self.files.get_mut(file) else {
                    return;
                };
                if locks.remove(key).is_none() {
                    return;
                }
                count.fetch_sub(1, Ordering::Relaxed);
                if locks.is_empty() {
                    self.files.remove(file);
                }
                self.wake(file);
            }
        }
    }

    fn wake(&mut self, file: &str) {
        if let Some(waiters) = self.waiters.get(file) {
            waiters.send_modify(|n| *n = n.wrapping_add(1));
            if waiters.receiver_count() == 0 {
                self.waiters.remove(file);
            }
        }
    }
}

/// The file key of a lock record's key (`<prefix>files/<file>/lock/<open>/<n>`), without the
/// prefix; `None` for any other key.
fn file_of(key: &str) -> Option<&str> {
    let (head, _) = key.rsplit_once("/lock/")?;
    let (_, file) = head.rsplit_once("files/")?;
    (!file.contains('/')).then_some(file)
}

/// One of this node's lock records: its key and range.
type Recorded = (String, ByteRange);

/// This node's locks in etcd, and the other nodes' as its watch learns them.
#[derive(Debug)]
pub struct EtcdLocks {
    etcd: Arc<Etcd>,
    node: String,
    lease: i64,
    healthy: Arc<AtomicBool>,
    next: AtomicU64,
    /// This node's lock records, by file and open: their keys and ranges.
    mine: Mutex<HashMap<(String, u64), Vec<Recorded>>>,
    foreign: Arc<Mutex<Foreign>>,
    /// How many locks `foreign` holds, read without its mutex by every READ and WRITE.
    foreign_count: Arc<AtomicUsize>,
    marks: Arc<DeletePendingMarks>,
    watch: Option<tokio::task::JoinHandle<()>>,
}

impl EtcdLocks {
    /// The lock table of the node `membership` made a member under the name `node`; reads
    /// the other nodes' locks and follows them from there.
    pub fn new(etcd: Arc<Etcd>, node: &str, membership: &Membership) -> io::Result<Self> {
        let mut locks = Self {
            etcd,
            node: node.to_owned(),
            lease: membership.lease(),
            healthy: membership.health(),
            next: AtomicU64::new(0),
            mine: Mutex::new(HashMap::new()),
            foreign: Arc::new(Mutex::new(Foreign::default())),
            foreign_count: Arc::new(AtomicUsize::new(0)),
            marks: Arc::new(DeletePendingMarks::default()),
            watch: None,
        };
        let follower = Follower {
            etcd: locks.etcd.clone(),
            node: locks.node.clone(),
            foreign: locks.foreign.clone(),
            count: locks.foreign_count.clone(),
            marks: locks.marks.clone(),
        };
        let revision = follower.read_all()?;
        locks.watch = Some(locks.etcd.spawn(follower.follow(revision)));
        Ok(locks)
    }

    /// The other nodes' delete-pending marks this table's watch of `files/` keeps current
    /// ([`crate::EtcdOpens::with_marks`]).
    pub fn delete_pending_marks(&self) -> Arc<DeletePendingMarks> {
        self.marks.clone()
    }

    fn lock_prefix(&self, file: &str) -> String {
        format!("{}files/{file}/lock/", self.etcd.prefix())
    }

    fn usable(&self) -> io::Result<()> {
        if self.healthy.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "etcd has not renewed this node's lease for node_ttl",
            ))
        }
    }

    /// Whether another node's record among `found` refuses `range`.
    fn conflicts(&self, own: &str, range: &ByteRange, found: &[(String, Vec<u8>)]) -> bool {
        found.iter().any(|(key, value)| {
            if key == own {
                return false;
            }
            match serde_json::from_slice::<Stored>(value) {
                Ok(stored) => stored.node != self.node && stored.range().blocks(range, false),
                Err(_) => true,
            }
        })
    }
}

impl Drop for EtcdLocks {
    fn drop(&mut self) {
        if let Some(watch) = self.watch.take() {
            watch.abort();
        }
        // Nothing follows `files/` any more: opens that used the marks are recorded again.
        self.marks.set_current(false);
    }
}

impl ClusterLocks for EtcdLocks {
    fn lock(&self, file: &str, open: u64, range: ByteRange) -> Result<(), LockError> {
        self.usable().map_err(LockError::Unavailable)?;
        let prefix = self.lock_prefix(file);
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let key = format!("{prefix}{open:016x}/{n:016x}");
        let stored = Stored {
            v: FORMAT,
            node: self.node.clone(),
            offset: range.offset,
            length: range.length,
            exclusive: range.exclusive,
        };
        let value = serde_json::to_vec(&stored).map_err(|e| LockError::Unavailable(e.into()))?;
        let found = match self
            .etcd
            .put_and_read(key.clone(), value, self.lease, prefix)
        {
            Ok(found) => found,
            Err(e) => {
                // An unanswered put may still be committed when quorum returns.
                self.etcd.delete_surely(key, false);
                return Err(LockError::Unavailable(e));
            }
        };
        if self.conflicts(&key, &range, &found) {
            // Until this delete, later locks see the withdrawn record and may be refused (or
            // wait) for it: a moment's false conflict, never a missed one.
            self.etcd.delete_surely(key, false);
            return Err(LockError::Conflict);
        }
        self.mine
            .lock()
            .entry((file.to_owned(), open))
            .or_default()
            .push((key, range));
        Ok(())
    }

    fn unlock(&self, file: &str, open: u64, range: ByteRange) -> io::Result<()> {
        let key = {
            let mut mine = self.mine.lock();
            let id = (file.to_owned(), open);
            let Some(held) = mine.get_mut(&id) else {
                return Ok(());
            };
            let Some(index) = held.iter().position(|(_, r)| *r == range) else {
                return Ok(());
            };
            let (key, _) = held.remove(index);
            if held.is_empty() {
                mine.remove(&id);
            }
            key
        };
        self.etcd.delete_surely(key, false);
        Ok(())
    }

    fn release(&self, file: &str, open: u64) -> io::Result<()> {
        if self.mine.lock().remove(&(file.to_owned(), open)).is_none() {
            return Ok(());
        }
        self.etcd
            .delete_surely(format!("{}{open:016x}/", self.lock_prefix(file)), true);
        Ok(())
    }

    fn holds_any(&self, open: u64) -> bool {
        let mine = self.mine.lock();
        !mine.is_empty() && mine.keys().any(|(_, held)| *held == open)
    }

    fn any_held(&self) -> bool {
        self.foreign_count.load(Ordering::Relaxed) != 0
    }

    fn stops_io(&self, file: &str, offset: u64, length: u64, write: bool) -> bool {
        self.foreign.lock().files.get(file).is_some_and(|locks| {
            locks
                .values()
                .any(|l| l.stops_io(offset, length, write, false))
        })
    }

    fn released(&self, file: &str) -> Released {
        let mut foreign = self.foreign.lock();
        if foreign.waiters.len() > 64 {
            foreign.waiters.retain(|_, w| w.receiver_count() > 0);
        }
        let mut waiter = foreign
            .waiters
            .entry(file.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        Box::pin(async move {
            let _ = waiter.changed().await;
        })
    }
}

/// What the watch task keeps current.
struct Follower {
    etcd: Arc<Etcd>,
    node: String,
    foreign: Arc<Mutex<Foreign>>,
    count: Arc<AtomicUsize>,
    marks: Arc<DeletePendingMarks>,
}

impl Follower {
    fn files_prefix(&self) -> String {
        format!("{}files/", self.etcd.prefix())
    }

    /// Reads every lock record and delete-pending mark of other nodes anew; returns the
    /// revision read at. Waiters are woken: a release may have been missed while the watch
    /// was broken. The marks count as current from here.
    fn read_all(&self) -> io::Result<i64> {
        let prefix = self.files_prefix();
        let found = self.etcd.get_prefix(prefix)?;
        let mut foreign = self.foreign.lock();
        foreign.files.clear();
        self.count.store(0, Ordering::Relaxed);
        self.marks.clear();
        for kv in found.kvs() {
            if let Ok(key) = std::str::from_utf8(kv.key()) {
                foreign.learn(&self.node, key, Some(kv.value()), &self.count);
                self.marks.learn(&self.node, key, Some(kv.value()));
            }
        }
        self.marks.set_current(true);
        let files: Vec<String> = foreign.waiters.keys().cloned().collect();
        for file in files {
            foreign.wake(&file);
        }
        Ok(found.header().map_or(0, |h| h.revision()))
    }

    async fn follow(self, mut revision: i64) {
        loop {
            let watched = self.watch_from(&mut revision).await;
            // Until everything is read again, changes may be missed: opens are recorded.
            self.marks.set_current(false);
            if let Err(e) = watched {
                tracing::warn!("etcd watch of byte-range locks broke: {e}; watching again");
            }
            tokio::time::sleep(REWATCH_DELAY).await;
            let this = Follower {
                etcd: self.etcd.clone(),
                node: self.node.clone(),
                foreign: self.foreign.clone(),
                count: self.count.clone(),
                marks: self.marks.clone(),
            };
            if let Ok(Ok(read)) = tokio::task::spawn_blocking(move || this.read_all()).await {
                revision = read;
            }
        }
    }

    async fn watch_from(&self, revision: &mut i64) -> Result<(), etcd_client::Error> {
        self.etcd
            .watch_from(self.files_prefix(), revision, |events| {
                let mut foreign = self.foreign.lock();
                for (key, value, _) in events.iter().filter_map(change) {
                    if let Ok(key) = std::str::from_utf8(key) {
                        foreign.learn(&self.node, key, value, &self.count);
                        self.marks.learn(&self.node, key, value);
                    }
                }
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_name_their_file() {
        assert_eq!(file_of("/p/files/2f7372-1a/lock/00/01"), Some("2f7372-1a"));
        assert_eq!(file_of("/p/files/2f7372-1a/open/00"), None);
        assert_eq!(file_of("/p/nodes/a"), None);
    }
}
