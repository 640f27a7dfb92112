//! [`EtcdStore`]: state-store records in etcd, one key per record
//! (`<prefix>records/<table>/<id in 16 hex digits>`), each write a compare-and-swap on the
//! revision this node last saw of the record, so that two nodes can never both take one
//! record: the second, whose knowledge is older than the first's write, is refused. What this
//! node knows is a cache fed by its own writes and by a watch on the records' prefix.
//!
//! A store of a cluster node ([`EtcdStore::owned_by`]) marks each record with the node's name:
//! it loads only its own records (a restarted node's) and those of nodes whose lease is gone,
//! which it adopts (rewrites as its own, a compare-and-swap, so that one node alone adopts
//! each); a live node's records are never loaded by another.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, Txn, TxnOp, TxnOpResponse};
use parking_lot::Mutex;
use smb3d_state::{RecordGuard, RecordLocks, StateStore, Table};

use crate::{Etcd, change};

/// The largest record kept in etcd: etcd refuses requests over 1.5 MiB unless told otherwise
/// (`--max-request-bytes`), and a record travels in one.
pub const ETCD_MAX_RECORD: usize = 1 << 20;

/// The first bytes of a record value that names its node: then the name's length (one byte),
/// the name, and the record.
const OWNER_MAGIC: &[u8; 8] = b"smb3down";

/// A record's owner and bytes, from its value in etcd; `None` owner: written without one.
fn unwrap_owner(value: &[u8]) -> (Option<&str>, &[u8]) {
    let owned = value.strip_prefix(OWNER_MAGIC).and_then(|rest| {
        let (&len, rest) = rest.split_first()?;
        let (name, bytes) = rest.split_at_checked(usize::from(len))?;
        Some((std::str::from_utf8(name).ok()?, bytes))
    });
    match owned {
        Some((name, bytes)) => (Some(name), bytes),
        None => (None, value),
    }
}

fn wrap_owner(owner: Option<&str>, bytes: &[u8]) -> Vec<u8> {
    let Some(owner) = owner else {
        return bytes.to_vec();
    };
    // Node names are at most 63 bytes (the configuration checks it).
    let name = owner.as_bytes().get(..255).unwrap_or(owner.as_bytes());
    let mut value = Vec::with_capacity(OWNER_MAGIC.len() + 1 + name.len() + bytes.len());
    value.extend_from_slice(OWNER_MAGIC);
    value.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
    value.extend_from_slice(name);
    value.extend_from_slice(bytes);
    value
}

/// How long a broken watch waits before it reads and watches again.
const REWATCH_DELAY: Duration = Duration::from_secs(1);

fn table_name(table: Table) -> &'static str {
    match table {
        Table::PersistentOpens => "persistent-opens",
    }
}

fn table_named(name: &str) -> Option<Table> {
    match name {
        "persistent-opens" => Some(Table::PersistentOpens),
        _ => None,
    }
}

/// What this node knows of one record: its value in etcd (`None`: deleted) at an etcd
/// revision.
#[derive(Debug, Clone)]
struct Known {
    bytes: Option<Vec<u8>>,
    revision: i64,
}

#[derive(Debug, Default)]
struct Cache {
    records: BTreeMap<(Table, u64), Known>,
    /// Deleted records kept, by the revision of their deletion, until the watch has passed
    /// it: an older event still on its way must not bring them back. Without a watch none
    /// is kept.
    deleted: BTreeSet<(i64, Table, u64)>,
    /// The revision the watch has delivered up to; `None` without a watch.
    watched: Option<i64>,
}

impl Cache {
    /// Takes `bytes` at `revision` unless what is known is as new.
    fn learn(&mut self, record: (Table, u64), bytes: Option<Vec<u8>>, revision: i64) {
        let known = self.records.get(&record).map_or(0, |k| k.revision);
        if revision <= known {
            return;
        }
        match (&bytes, self.watched) {
            (None, Some(watched)) if revision > watched => {
                self.deleted.insert((revision, record.0, record.1));
            }
            (None, _) => {
                self.records.remove(&record);
                return;
            }
            (Some(_), _) => {}
        }
        self.records.insert(record, Known { bytes, revision });
    }

    /// The watch has delivered every change up to `revision`: deletions up to it are final.
    fn watched_to(&mut self, revision: i64) {
        self.watched = Some(self.watched.map_or(revision, |w| w.max(revision)));
        while let Some(&(at, table, id)) = self.deleted.first() {
            if at > revision {
                break;
            }
            self.deleted.pop_first();
            if self
                .records
                .get(&(table, id))
                .is_some_and(|k| k.bytes.is_none() && k.revision == at)
            {
                self.records.remove(&(table, id));
            }
        }
    }

    /// The revision a write of `record` must find: 0 when it is not known to exist.
    fn revision(&self, record: (Table, u64)) -> i64 {
        self.records
            .get(&record)
            .filter(|k| k.bytes.is_some())
            .map_or(0, |k| k.revision)
    }
}

/// State-store records in etcd.
#[derive(Debug)]
pub struct EtcdStore {
    etcd: Arc<Etcd>,
    locks: RecordLocks,
    cache: Arc<Mutex<Cache>>,
    watch: Option<tokio::task::JoinHandle<()>>,
    /// The node whose records these are; `None`: every record is this store's.
    owner: Option<String>,
    /// Records this process wrote or loaded: a later load does not hand them out again.
    in_hand: Mutex<HashSet<(Table, u64)>>,
}

impl EtcdStore {
    /// A store whose cache follows every change of the cluster's records through a watch.
    pub fn new(etcd: Arc<Etcd>) -> io::Result<Self> {
        let mut store = Self::without_watch(etcd);
        let revision = read_all(&store.etcd, &store.cache)?;
        store.cache.lock().watched_to(revision);
        let (etcd, cache) = (store.etcd.clone(), store.cache.clone());
        store.watch = Some(store.etcd.spawn(follow(etcd, cache, revision)));
        Ok(store)
    }

    /// A store that learns of other nodes' writes only when it loads (for one-shot tools): a
    /// write it makes over a record changed since then is refused.
    pub fn without_watch(etcd: Arc<Etcd>) -> Self {
        Self {
            etcd,
            locks: RecordLocks::default(),
            cache: Arc::new(Mutex::new(Cache::default())),
            watch: None,
            owner: None,
            in_hand: Mutex::new(HashSet::new()),
        }
    }

    /// The store of cluster node `node`: its records carry its name, and it loads only its own
    /// and those it adopts from nodes whose lease is gone.
    #[must_use]
    pub fn owned_by(mut self, node: &str) -> Self {
        self.owner = Some(node.to_owned());
        self
    }

    /// The record as this node knows it now, without asking etcd (a watched store is
    /// current to within the watch's delay).
    pub fn cached(&self, table: Table, id: u64) -> Option<Vec<u8>> {
        self.cache
            .lock()
            .records
            .get(&(table, id))
            .and_then(|k| k.bytes.as_deref().map(|v| unwrap_owner(v).1.to_vec()))
    }

    fn key(&self, table: Table, id: u64) -> String {
        format!(
            "{}{}/{id:016x}",
            records_prefix(&self.etcd),
            table_name(table)
        )
    }

    /// One compare-and-swap: `op` if the record is still at the revision this node knows,
    /// else what it is now is learnt and the write refused.
    fn swap(&self, held: &RecordGuard<'_>, bytes: Option<&[u8]>) -> io::Result<()> {
        let record = (held.table(), held.id());
        let key = self.key(held.table(), held.id());
        let expected = self.cache.lock().revision(record);
        let value = bytes.map(|b| wrap_owner(self.owner.as_deref(), b));
        let op = match &value {
            Some(value) => TxnOp::put(key.clone(), value.clone(), None),
            None => TxnOp::delete(key.clone(), None),
        };
        let txn = Txn::new()
            .when([Compare::mod_revision(
                key.clone(),
                CompareOp::Equal,
                expected,
            )])
            .and_then([op])
            .or_else([TxnOp::get(key, None)]);
        let answer = self.etcd.txn(txn)?;
        let revision = answer.header().map_or(0, |h| h.revision());
        let mut cache = self.cache.lock();
        if answer.succeeded() {
            cache.learn(record, value, revision);
            drop(cache);
            let mut in_hand = self.in_hand.lock();
            if bytes.is_some() {
                in_hand.insert(record);
            } else {
                in_hand.remove(&record);
            }
            return Ok(());
        }
        let now = answer.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Get(get) => Some(
                get.kvs()
                    .first()
                    .map(|kv| (kv.value().to_vec(), kv.mod_revision())),
            ),
            _ => None,
        });
        match now.flatten() {
            Some((bytes, at)) => cache.learn(record, Some(bytes), at),
            None => cache.learn(record, None, revision),
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "record {:016x} of {} was changed by another node",
                held.id(),
                table_name(held.table())
            ),
        ))
    }
}

impl Drop for EtcdStore {
    fn drop(&mut self) {
        if let Some(watch) = self.watch.take() {
            watch.abort();
        }
    }
}

/// Reads every record into `cache`; returns the revision read at.
fn read_all(etcd: &Etcd, cache: &Mutex<Cache>) -> io::Result<i64> {
    let prefix = records_prefix(etcd);
    let found = etcd.get_prefix(prefix)?;
    let revision = found.header().map_or(0, |h| h.revision());
    let mut cache = cache.lock();
    let mut seen = HashSet::new();
    for kv in found.kvs() {
        if let Some(record) = parse_key(etcd, kv.key()) {
            seen.insert(record);
            cache.learn(record, Some(kv.value().to_vec()), kv.mod_revision());
        }
    }
    // What the read no longer shows was deleted at or before its revision.
    let gone: Vec<(Table, u64)> = cache
        .records
        .iter()
        .filter(|(record, known)| !seen.contains(*record) && known.revision <= revision)
        .map(|(record, _)| *record)
        .collect();
    for record in gone {
        cache.learn(record, None, revision);
    }
    Ok(revision)
}

fn records_prefix(etcd: &Etcd) -> String {
    format!("{}records/", etcd.prefix())
}

/// The record a key names, if it is one of this cluster's.
fn parse_key(etcd: &Etcd, key: &[u8]) -> Option<(Table, u64)> {
    let key = std::str::from_utf8(key).ok()?;
    let rest = key.strip_prefix(&records_prefix(etcd))?;
    let (table, id) = rest.split_once('/')?;
    if id.len() != 16 {
        return None;
    }
    Some((table_named(table)?, u64::from_str_radix(id, 16).ok()?))
}

/// Keeps `cache` current from `revision` on; a broken watch (etcd restarted, history
/// compacted) reads everything again and watches from there.
async fn follow(etcd: Arc<Etcd>, cache: Arc<Mutex<Cache>>, mut revision: i64) {
    loop {
        if let Err(e) = watch_from(&etcd, &cache, &mut revision).await {
            tracing::warn!("etcd watch of state records broke: {e}; watching again");
        }
        tokio::time::sleep(REWATCH_DELAY).await;
        let read = {
            let (etcd, cache) = (etcd.clone(), cache.clone());
            tokio::task::spawn_blocking(move || read_all(&etcd, &cache)).await
        };
        if let Ok(Ok(read)) = read {
            revision = read;
        }
    }
}

async fn watch_from(
    etcd: &Arc<Etcd>,
    cache: &Arc<Mutex<Cache>>,
    revision: &mut i64,
) -> Result<(), etcd_client::Error> {
    let mut seen = *revision;
    etcd.watch_from(records_prefix(etcd), revision, |events| {
        let mut cache = cache.lock();
        for (key, value, changed) in events.iter().filter_map(change) {
            seen = seen.max(changed);
            if let Some(record) = parse_key(etcd, key) {
                cache.learn(record, value.map(<[u8]>::to_vec), changed);
            }
        }
        cache.watched_to(seen);
    })
    .await
}

impl StateStore for EtcdStore {
    fn lock(&self, table: Table, id: u64) -> RecordGuard<'_> {
        self.locks.lock(table, id)
    }

    fn put(&self, held: &RecordGuard<'_>, bytes: &[u8]) -> io::Result<()> {
        held.check(&self.locks)?;
        if bytes.len() > ETCD_MAX_RECORD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a record of {} bytes is over etcd's {ETCD_MAX_RECORD}",
                    bytes.len()
                ),
            ));
        }
        self.swap(held, Some(bytes))
    }

    fn remove(&self, held: &RecordGuard<'_>) -> io::Result<()> {
        held.check(&self.locks)?;
        self.swap(held, None)
    }

    /// Reads etcd (not the cache): loading is what a node does when it starts or takes over,
    /// and it must see every record. A node's store hands out its own records not in hand yet
    /// and those it adopts from nodes that are gone.
    fn load(&self, table: Table) -> io::Result<Vec<(u64, Vec<u8>)>> {
        read_all(&self.etcd, &self.cache)?;
        let live = match &self.owner {
            Some(_) => crate::members(&self.etcd)?
                .into_iter()
                .map(|n| n.name)
                .collect(),
            None => HashSet::new(),
        };
        let found: Vec<(u64, Option<String>, Vec<u8>)> = self
            .cache
            .lock()
            .records
            .range((table, 0)..=(table, u64::MAX))
            .filter_map(|((_, id), known)| {
                let (owner, bytes) = unwrap_owner(known.bytes.as_ref()?);
                (bytes.len() <= ETCD_MAX_RECORD)
                    .then(|| (*id, owner.map(str::to_owned), bytes.to_vec()))
            })
            .collect();
        let mut loaded = Vec::new();
        for (id, owner, bytes) in found {
            if self.owner.is_some() && self.in_hand.lock().contains(&(table, id)) {
                continue;
            }
            match (&self.owner, owner) {
                (None, _) => {}
                (Some(me), Some(owner)) if *me == owner => {}
                (Some(_), Some(owner)) if live.contains(&owner) => continue,
                // A gone node's (or one written without an owner): adopt it, unless another
                // node was first.
                (Some(_), owner) => {
                    let held = self.lock(table, id);
                    if let Err(e) = self.swap(&held, Some(&bytes)) {
                        tracing::info!("record {id:016x} of node {owner:?} not adopted: {e}");
                        continue;
                    }
                    tracing::info!("record {id:016x} of node {owner:?} adopted");
                }
            }
            self.in_hand.lock().insert((table, id));
            loaded.push((id, bytes));
        }
        Ok(loaded)
    }

    fn max_record(&self) -> usize {
        ETCD_MAX_RECORD
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_round_trip_and_a_short_or_foreign_value_has_none() {
        let value = wrap_owner(Some("n1"), b"record");
        assert_eq!(unwrap_owner(&value), (Some("n1"), &b"record"[..]));
        assert_eq!(wrap_owner(None, b"record"), b"record");
        // A length past the end, or a name that is not UTF-8: the whole value is the record.
        let mut cut = OWNER_MAGIC.to_vec();
        cut.push(200);
        cut.extend_from_slice(b"n1");
        assert_eq!(unwrap_owner(&cut), (None, &cut[..]));
        let mut bad = OWNER_MAGIC.to_vec();
        bad.extend_from_slice(&[1, 0xff]);
        assert_eq!(unwrap_owner(&bad), (None, &bad[..]));
        assert_eq!(unwrap_owner(b""), (None, &b""[..]));
    }
}
