//! [`EtcdNotify`]: change notify and directory leases across nodes (docs/cluster.md "Change
//! notify and directory leases across nodes").
//!
//! A node interested in a directory (a CHANGE_NOTIFY watch, a directory lease) holds
//! `<prefix>interest/<node>/<share hex>/<dir hex>` under its lease while it is, with
//! `{"v":1,"tree":…,"lease":…}` (whether it watches the tree below too, and its etcd lease).
//! Every node keeps all other nodes' interests in memory from a watch of `interest/`, so a
//! change through it costs nothing, no round trip, when no other node is interested in the
//! directory (one atomic load when none is in any). A change that concerns another node is
//! put at `<prefix>events/<that node>/<sender lease>-<n>` as a [`DirEvent`], under the
//! receiver's lease (so that what it never read goes with it); each node watches only its
//! own `events/<node>/`, hands each event to the server and deletes it. A node's interest
//! keys go with its lease when it dies.
//!
//! Changes that cannot be sent (the outbox is full while etcd does not answer, etcd refused
//! their transaction, or their path is too long for a [`DirEvent`]) are remembered per receiver and share, and once the outbox has
//! drained each such receiver is sent one [`DirChange::Lost`](smb3d_state::DirChange::Lost) event for the share: its watches
//! there complete with STATUS_NOTIFY_ENUM_DIR, so their clients list again (MS-SMB2 3.3.4.4).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use etcd_client::{GetOptions, PutOptions, Txn, TxnOp};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use smb3d_state::{ClusterNotify, DirEvent, DirEventSink, concerns};
use tokio::sync::{Notify, mpsc};

use crate::{Etcd, Membership, change};

/// The interest format this node writes; readers take any version and the fields they know.
const FORMAT: u32 = 1;
/// How long a broken watch waits before it reads and watches again, and a failed write
/// before it is tried again.
const RETRY_DELAY: Duration = Duration::from_secs(1);
/// Events waiting to be sent; beyond, changes are dropped (logged, and their receivers told
/// once the outbox drains): a node whose etcd does not answer keeps no unbounded queue.
const OUTBOX: usize = 4096;
/// Events sent in one transaction at most.
const BATCH: usize = 64;

/// An interest as stored.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    v: u32,
    #[serde(default)]
    tree: bool,
    /// The interested node's etcd lease, under which events for it are put.
    lease: i64,
}

fn hex(text: &str) -> String {
    use std::fmt::Write;
    text.bytes().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn unhex(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    let bytes = text
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()
}

/// The node, share and directory of an interest key, after `interest/`.
fn interest_of(rest: &str) -> Option<(&str, String, String)> {
    let (node, rest) = rest.split_once('/')?;
    let (share, dir) = rest.split_once('/')?;
    (!node.is_empty() && !share.is_empty() && !dir.contains('/'))
        .then(|| Some((node, unhex(share)?, unhex(dir)?)))?
}

/// Another node's interest.
#[derive(Debug, Clone)]
struct Peer {
    key: String,
    node: String,
    tree: bool,
    lease: i64,
}

/// The other nodes' interests: by share, then directory.
#[derive(Debug, Default)]
struct Interests {
    shares: HashMap<String, HashMap<String, Vec<Peer>>>,
    /// Where each key is, to forget it when it goes.
    keys: HashMap<String, (String, String)>,
}

impl Interests {
    fn forget(&mut self, key: &str) {
        let Some((share, dir)) = self.keys.remove(key) else {
            return;
        };
        if let Some(dirs) = self.shares.get_mut(&share) {
            if let Some(peers) = dirs.get_mut(&dir) {
                peers.retain(|p| p.key != key);
                if peers.is_empty() {
                    dirs.remove(&dir);
                }
            }
            if dirs.is_empty() {
                self.shares.remove(&share);
            }
        }
    }

    /// Learns one key's change (`value` `None`: deleted); keys of `own` node are not kept.
    fn learn(&mut self, prefix: &str, own: &str, key: &str, value: Option<&[u8]>) {
        self.forget(key);
        let (Some(value), Some(rest)) = (value, key.strip_prefix(prefix)) else {
            return;
        };
        let Some((node, share, dir)) = interest_of(rest) else {
            tracing::warn!("cluster: ignoring the malformed interest key {key}");
            return;
        };
        if node == own {
            return;
        }
        let Ok(stored) = serde_json::from_slice::<Stored>(value) else {
            tracing::warn!("cluster: ignoring the malformed interest record {key}");
            return;
        };
        let peer = Peer {
            key: key.to_owned(),
            node: node.to_owned(),
            tree: stored.tree,
            lease: stored.lease,
        };
        self.keys
            .insert(key.to_owned(), (share.clone(), dir.clone()));
        self.shares
            .entry(share)
            .or_default()
            .entry(dir)
            .or_default()
            .push(peer);
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether `node` is still interested in some directory under `lease` (a node that died
    /// is not: its keys went with its lease).
    fn holds(&self, node: &str, lease: i64) -> bool {
        self.shares
            .values()
            .flat_map(HashMap::values)
            .flatten()
            .any(|peer| peer.node == node && peer.lease == lease)
    }

    /// The nodes (and their leases) interested in a change in the directory `dir` of `share`,
    /// each once.
    fn targets(&self, share: &str, dir: &str) -> Vec<(String, i64)> {
        let mut found: Vec<(String, i64)> = Vec::new();
        let Some(dirs) = self.shares.get(share) else {
            return found;
        };
        // The directory itself, then each directory above it (a watch of its tree).
        let mut at = Some(dir);
        while let Some(watched) = at {
            for peer in dirs.get(watched).into_iter().flatten() {
                if concerns(watched, peer.tree, dir) && !found.iter().any(|(n, _)| *n == peer.node)
                {
                    found.push((peer.node.clone(), peer.lease));
                }
            }
            at = match watched {
                "" => None,
                _ => Some(watched.rsplit_once('/').map_or("", |(up, _)| up)),
            };
        }
        found
    }
}

/// What this node and its tasks share.
#[derive(Debug, Default)]
struct Shared {
    interests: Mutex<Interests>,
    /// `interests.len()`, read without the lock.
    count: AtomicUsize,
    /// This node's interests: (share, dir) -> (uses, uses watching the tree).
    mine: Mutex<HashMap<(String, String), (usize, usize)>>,
    /// Interest keys to write (`Some`) or delete (`None`) next.
    dirty: Mutex<HashMap<String, Option<Vec<u8>>>>,
    wake: Notify,
    /// The outbox was full since the receivers were last told: said in the log once.
    overflowed: AtomicBool,
    /// Receivers (node, lease) and the shares of theirs whose changes were not sent, to be
    /// sent a [`DirChange::Lost`](smb3d_state::DirChange::Lost) each. At most one entry per receiver and share.
    lost: Mutex<HashSet<Lost>>,
    /// Wakes the sender when `lost` gained an entry.
    lost_wake: Notify,
}

/// A receiver (node, lease) and a share of which it missed changes.
type Lost = (String, i64, String);

impl Shared {
    fn lose(&self, node: String, lease: i64, share: String) {
        if self.lost.lock().insert((node, lease, share)) {
            self.lost_wake.notify_one();
        }
    }
}

/// One event for one node.
struct Outgoing {
    node: String,
    lease: i64,
    /// The share of the change, for the [`DirChange::Lost`](smb3d_state::DirChange::Lost) the node is sent if this is not.
    share: String,
    bytes: Vec<u8>,
}

/// This node's side of change notify and directory leases across nodes.
#[derive(Debug)]
pub struct EtcdNotify {
    etcd: Arc<Etcd>,
    node: String,
    lease: i64,
    shared: Arc<Shared>,
    outbox: mpsc::Sender<Outgoing>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Drop for EtcdNotify {
    fn drop(&mut self) {
        for task in self.tasks.lock().drain(..) {
            task.abort();
        }
    }
}

impl EtcdNotify {
    /// The notify side of the node `membership` made a member under the name `node`: it
    /// starts following the other nodes' interests, publishing its own and sending events.
    pub fn new(etcd: Arc<Etcd>, node: &str, membership: &Membership) -> Self {
        let shared = Arc::new(Shared::default());
        let (outbox, outgoing) = mpsc::channel(OUTBOX);
        let lease = membership.lease();
        let interest_prefix = format!("{}interest/", etcd.prefix());
        let tasks = vec![
            etcd.spawn(follow_interests(
                etcd.clone(),
                interest_prefix,
                node.to_owned(),
                shared.clone(),
            )),
            etcd.spawn(publish(etcd.clone(), lease, shared.clone())),
            etcd.spawn(send(etcd.clone(), lease, outgoing, shared.clone())),
        ];
        Self {
            etcd,
            node: node.to_owned(),
            lease,
            shared,
            outbox,
            tasks: Mutex::new(tasks),
        }
    }

    fn interest_key(&self, share: &str, dir: &str) -> String {
        format!(
            "{}interest/{}/{}/{}",
            self.etcd.prefix(),
            self.node,
            hex(share),
            hex(dir)
        )
    }

    /// Records that the key of (share, dir) should now be as `uses` say.
    fn publish_later(&self, share: &str, dir: &str, uses: (usize, usize)) {
        let value = (uses.0 > 0).then(|| {
            serde_json::to_vec(&Stored {
                v: FORMAT,
                tree: uses.1 > 0,
                lease: self.lease,
            })
            .unwrap_or_default()
        });
        self.shared
            .dirty
            .lock()
            .insert(self.interest_key(share, dir), value);
        self.shared.wake.notify_one();
    }

    /// Whether some other node is interested in a change in `dir` of `share` (for tests).
    pub fn others_interested(&self, share: &str, dir: &str) -> bool {
        !self.shared.interests.lock().targets(share, dir).is_empty()
    }
}

impl ClusterNotify for EtcdNotify {
    fn interested(&self, share: &str, dir: &str, tree: bool) {
        let mut mine = self.shared.mine.lock();
        let uses = mine
            .entry((share.to_owned(), dir.to_owned()))
            .or_insert((0, 0));
        let before = *uses;
        uses.0 += 1;
        uses.1 += usize::from(tree);
        let after = *uses;
        // A key is written when it appears or starts covering the tree.
        if before.0 == 0 || (before.1 == 0) != (after.1 == 0) {
            self.publish_later(share, dir, after);
        }
    }

    fn uninterested(&self, share: &str, dir: &str, tree: bool) {
        let mut mine = self.shared.mine.lock();
        let key = (share.to_owned(), dir.to_owned());
        let Some(uses) = mine.get_mut(&key) else {
            return;
        };
        let before = *uses;
        uses.0 = uses.0.saturating_sub(1);
        if tree {
            uses.1 = uses.1.saturating_sub(1);
        }
        let after = *uses;
        if after.0 == 0 {
            mine.remove(&key);
        }
        if after.0 == 0 || (before.1 == 0) != (after.1 == 0) {
            self.publish_later(share, dir, after);
        }
    }

    fn anyone_else(&self) -> bool {
        self.shared.count.load(Ordering::Relaxed) != 0
    }

    fn changed(&self, event: DirEvent) {
        if !self.anyone_else() {
            return;
        }
        let targets = self
            .shared
            .interests
            .lock()
            .targets(&event.share, event.dir());
        if targets.is_empty() {
            return;
        }
        let Some(bytes) = event.encode() else {
            // A path too long to send: its receivers list again instead.
            tracing::debug!("cluster: a change of a path too long to send: sent as lost");
            for (node, lease) in targets {
                self.shared.lose(node, lease, event.share.clone());
            }
            return;
        };
        for (node, lease) in targets {
            let outgoing = Outgoing {
                node,
                lease,
                share: event.share.clone(),
                bytes: bytes.clone(),
            };
            if let Err(full) = self.outbox.try_send(outgoing) {
                if !self.shared.overflowed.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "cluster: more than {OUTBOX} directory changes wait for etcd; other nodes' watches will be told to list again"
                    );
                }
                let missed = full.into_inner();
                self.shared.lose(missed.node, missed.lease, missed.share);
            }
        }
    }

    fn on_event(&self, sink: DirEventSink) {
        let prefix = format!("{}events/{}/", self.etcd.prefix(), self.node);
        let task = self.etcd.spawn(receive(self.etcd.clone(), prefix, sink));
        self.tasks.lock().push(task);
    }
}

/// Keeps `shared.interests` as etcd has them: read everything, then follow the watch; a
/// broken watch reads everything again.
async fn follow_interests(etcd: Arc<Etcd>, prefix: String, node: String, shared: Arc<Shared>) {
    loop {
        let read = etcd
            .client()
            .get(prefix.clone(), Some(GetOptions::new().with_prefix()))
            .await;
        if let Ok(read) = read {
            let mut revision = read.header().map_or(0, |h| h.revision());
            {
                let mut interests = shared.interests.lock();
                *interests = Interests::default();
                for kv in read.kvs() {
                    if let Ok(key) = std::str::from_utf8(kv.key()) {
                        interests.learn(&prefix, &node, key, Some(kv.value()));
                    }
                }
                shared.count.store(interests.len(), Ordering::Relaxed);
            }
            let watched = etcd
                .watch_from(prefix.clone(), &mut revision, |events| {
                    let mut interests = shared.interests.lock();
                    for (key, value, _) in events.iter().filter_map(change) {
                        if let Ok(key) = std::str::from_utf8(key) {
                            interests.learn(&prefix, &node, key, value);
                        }
                    }
                    shared.count.store(interests.len(), Ordering::Relaxed);
                })
                .await;
            if let Err(e) = watched {
                tracing::warn!("etcd watch of directory interests broke: {e}; watching again");
            }
        }
        tokio::time::sleep(RETRY_DELAY).await;
    }
}

/// Writes this node's interest keys as they change, in one transaction per batch, in order.
async fn publish(etcd: Arc<Etcd>, lease: i64, shared: Arc<Shared>) {
    loop {
        shared.wake.notified().await;
        let batch: Vec<(String, Option<Vec<u8>>)> = shared.dirty.lock().drain().collect();
        if batch.is_empty() {
            continue;
        }
        let ops: Vec<TxnOp> = batch
            .iter()
            .map(|(key, value)| match value {
                Some(value) => TxnOp::put(
                    key.clone(),
                    value.clone(),
                    Some(PutOptions::new().with_lease(lease)),
                ),
                None => TxnOp::delete(key.clone(), None),
            })
            .collect();
        if let Err(e) = etcd.client().txn(Txn::new().and_then(ops)).await {
            tracing::warn!("cluster: publishing directory interests: {e}; trying again");
            {
                let mut dirty = shared.dirty.lock();
                for (key, value) in batch {
                    // A later change of the same key wins over the failed one.
                    dirty.entry(key).or_insert(value);
                }
            }
            tokio::time::sleep(RETRY_DELAY).await;
            shared.wake.notify_one();
        }
    }
}

/// A batch's events for one receiver: node, lease, the shares of its events, their puts.
type ForNode = (String, i64, HashSet<String>, Vec<TxnOp>);

/// Puts the events of the outbox, each under its receiver's lease, one transaction per
/// receiver and batch. A transaction refused (etcd does not answer, or the receiver's lease is
/// gone) loses its events: its receiver is owed a [`DirChange::Lost`](smb3d_state::DirChange::Lost) for their shares. When
/// the outbox is empty, what is owed is sent ([`send_lost`]).
async fn send(
    etcd: Arc<Etcd>,
    lease: i64,
    mut outgoing: mpsc::Receiver<Outgoing>,
    shared: Arc<Shared>,
) {
    let sequence = AtomicU64::new(0);
    let key = |node: &str| {
        let n = sequence.fetch_add(1, Ordering::Relaxed);
        format!("{}events/{node}/{lease:016x}-{n:016x}", etcd.prefix())
    };
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        tokio::select! {
            received = outgoing.recv_many(&mut batch, BATCH) => if received == 0 {
                return;
            },
            () = shared.lost_wake.notified() => {}
        }
        let mut by_node: Vec<ForNode> = Vec::new();
        for event in batch.drain(..) {
            let put = TxnOp::put(
                key(&event.node),
                event.bytes,
                Some(PutOptions::new().with_lease(event.lease)),
            );
            match by_node
                .iter_mut()
                .find(|(node, l, _, _)| *node == event.node && *l == event.lease)
            {
                Some((_, _, shares, ops)) => {
                    shares.insert(event.share);
                    ops.push(put);
                }
                None => by_node.push((
                    event.node,
                    event.lease,
                    HashSet::from([event.share]),
                    vec![put],
                )),
            }
        }
        for (node, lease, shares, ops) in by_node {
            if let Err(e) = etcd.client().txn(Txn::new().and_then(ops)).await {
                tracing::warn!("cluster: directory changes for node {node} not sent: {e}");
                for share in shares {
                    shared.lose(node.clone(), lease, share);
                }
            }
        }
        if outgoing.is_empty() && !send_lost(&etcd, &shared, &key).await {
            tokio::time::sleep(RETRY_DELAY).await;
        }
    }
}

/// Sends each receiver still alive the [`DirChange::Lost`](smb3d_state::DirChange::Lost) events it is owed, one transaction
/// per receiver; returns false when one failed (it stays owed, and the sender is woken to try
/// again). A receiver whose interests are gone (it died) is owed nothing.
async fn send_lost(etcd: &Etcd, shared: &Shared, key: &impl Fn(&str) -> String) -> bool {
    let owed: Vec<Lost> = shared.lost.lock().drain().collect();
    if owed.is_empty() {
        return true;
    }
    let mut by_node: Vec<(String, i64, Vec<TxnOp>, Vec<String>)> = Vec::new();
    {
        let interests = shared.interests.lock();
        for (node, lease, share) in owed {
            if !interests.holds(&node, lease) {
                continue;
            }
            let Some(bytes) = DirEvent::lost(&share).encode() else {
                continue;
            };
            let put = TxnOp::put(key(&node), bytes, Some(PutOptions::new().with_lease(lease)));
            match by_node
                .iter_mut()
                .find(|(n, l, _, _)| *n == node && *l == lease)
            {
                Some((_, _, ops, shares)) => {
                    ops.push(put);
                    shares.push(share);
                }
                None => by_node.push((node, lease, vec![put], vec![share])),
            }
        }
    }
    let mut all_sent = true;
    for (node, lease, ops, shares) in by_node {
        match etcd.client().txn(Txn::new().and_then(ops)).await {
            Ok(_) => tracing::info!(
                "cluster: node {node} told that it missed directory changes; its watches list again"
            ),
            Err(e) => {
                tracing::warn!("cluster: telling node {node} of missed directory changes: {e}");
                all_sent = false;
                for share in shares {
                    shared.lose(node.clone(), lease, share);
                }
            }
        }
    }
    if all_sent {
        shared.overflowed.store(false, Ordering::Relaxed);
    }
    all_sent
}

/// Hands the events other nodes put for this node to `sink`, in order, and deletes them.
async fn receive(etcd: Arc<Etcd>, prefix: String, sink: DirEventSink) {
    let hand = |key: &[u8], value: &[u8]| {
        match DirEvent::decode(value) {
            Ok(event) => sink(event),
            Err(e) => tracing::warn!(
                "cluster: ignoring the malformed directory change {}: {e}",
                String::from_utf8_lossy(key)
            ),
        }
        key.to_vec()
    };
    let remove = |keys: Vec<Vec<u8>>| {
        if keys.is_empty() {
            return;
        }
        let mut client = etcd.client();
        etcd.spawn(async move {
            let ops: Vec<TxnOp> = keys.into_iter().map(|k| TxnOp::delete(k, None)).collect();
            if let Err(e) = client.txn(Txn::new().and_then(ops)).await {
                tracing::debug!(
                    "cluster: handled directory changes stay until this node leaves: {e}"
                );
            }
        });
    };
    loop {
        let read = etcd
            .client()
            .get(prefix.clone(), Some(GetOptions::new().with_prefix()))
            .await;
        if let Ok(read) = read {
            let handled = read
                .kvs()
                .iter()
                .map(|kv| hand(kv.key(), kv.value()))
                .collect();
            remove(handled);
            let mut revision = read.header().map_or(0, |h| h.revision());
            let watched = etcd
                .watch_from(prefix.clone(), &mut revision, |events| {
                    let handled = events
                        .iter()
                        .filter_map(change)
                        .filter_map(|(key, value, _)| Some(hand(key, value?)))
                        .collect();
                    remove(handled);
                })
                .await;
            if let Err(e) = watched {
                tracing::warn!("etcd watch of directory changes broke: {e}; watching again");
            }
        }
        tokio::time::sleep(RETRY_DELAY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learned(keys: &[(&str, &str)]) -> Interests {
        let mut interests = Interests::default();
        for (key, value) in keys {
            interests.learn("/p/interest/", "me", key, Some(value.as_bytes()));
        }
        interests
    }

    #[test]
    fn interest_keys_name_node_share_and_directory() {
        let key = format!("n2/{}/{}", hex("/srv/a"), hex("d/e"));
        assert_eq!(
            interest_of(&key),
            Some(("n2", "/srv/a".to_owned(), "d/e".to_owned()))
        );
        let root = format!("n2/{}/", hex("/srv/a"));
        assert_eq!(interest_of(&root).map(|i| i.2), Some(String::new()));
        assert_eq!(interest_of("n2/zz/"), None);
        assert_eq!(interest_of("n2//00"), None);
        assert_eq!(interest_of("n2/61/62/63"), None);
    }

    #[test]
    fn only_interested_nodes_are_sent_a_change() {
        let share = hex("/s");
        let d = format!("/p/interest/n2/{share}/{}", hex("d"));
        let tree = format!("/p/interest/n3/{share}/{}", hex("t"));
        let own = format!("/p/interest/me/{share}/{}", hex("d"));
        let mut interests = learned(&[
            (&d, r#"{"v":1,"tree":false,"lease":7}"#),
            (&tree, r#"{"v":1,"tree":true,"lease":9}"#),
            (&own, r#"{"v":1,"tree":true,"lease":1}"#),
            ("/p/interest/n4/zz/", r#"{"v":1,"lease":1}"#),
            (&format!("/p/interest/n5/{share}/"), "not json"),
        ]);
        assert_eq!(
            interests.len(),
            2,
            "own, malformed keys and records ignored"
        );
        assert_eq!(interests.targets("/s", "d"), vec![("n2".to_owned(), 7)]);
        assert!(interests.targets("/s", "d/e").is_empty());
        assert!(interests.targets("/s", "").is_empty());
        assert!(interests.targets("/other", "d").is_empty());
        assert_eq!(interests.targets("/s", "t/u/v"), vec![("n3".to_owned(), 9)]);
        interests.learn("/p/interest/", "me", &d, None);
        assert!(interests.targets("/s", "d").is_empty());
        assert_eq!(interests.len(), 1);
    }
}
