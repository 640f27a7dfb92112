//! [`EtcdOpens`]: the cluster-wide open table in etcd (docs/cluster.md "One write per open,
//! one per close"). Each open is one key, `<prefix>files/<file-key>/open/<persistent id>`,
//! written in one transaction that also reads every key of the file at the same revision: the
//! records it sees were all there before it, so of two racing conflicting opens the later one
//! sees the earlier and withdraws, and the earlier cannot see the later. A close is one delete.
//! Records live under the node's etcd lease: a node that dies takes its opens with it.
//!
//! A record carries the open's oplock or lease (docs/cluster.md "Leases, oplocks and node
//! death"). A new open that must break another node's caching writes
//! `<prefix>breaks/<holder node>/<file-key>/<open id>` under its own lease: each node watches
//! only its own `breaks/<node>/` (no node hears of breaks that are not its business), sends
//! the break to its client and, once it is acknowledged, timed out or the open closed, lowers
//! the open's record; the breaker watches that one record (never polling) and deletes its
//! request when it is done or when it stops waiting.

use std::collections::HashSet;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use etcd_client::{
    Compare, CompareOp, EventType, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse, WatchOptions,
};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use smb3d_state::{
    Admitted, AppInstanceRecord, BreakNeeded, BreakOrder, BreakSink, ClusterOpens, Intent,
    OpenError, OpenRecord, Refusal, Settled, TakeOver,
};

use crate::retained::{Closed, Release, Retained, retainable};
use crate::{DeletePendingMarks, Etcd, Membership, change};

/// The record format this node writes; a reader takes any version and the fields it knows,
/// so that later versions can add fields (reconnect data) without a flag day. Version 2
/// added `caching` and `lease`, which a version 1 record lacks: no caching. Version 3 added
/// `app_instance`, which older readers ignore (they never take such an open over). Version 4
/// added `retained`, which older readers take for an ordinary open (they refuse beside it
/// what they would beside a live one, and never ask for its release).
const FORMAT: u32 = 4;

/// How long a node waits for other nodes to release their retained records before it takes
/// them for live opens (MS-SMB2 3.3.2.1's bound on a break, for an order no client answers).
const RELEASE_WAIT: Duration = Duration::from_secs(35);

/// How long a broken watch of break requests waits before it reads and watches again.
const REWATCH_DELAY: Duration = Duration::from_secs(1);

/// An open record as stored.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    v: u32,
    node: String,
    access: u32,
    share: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream: Option<String>,
    #[serde(default)]
    delete_pending: bool,
    /// Lease bits (an oplock as the bits its level stands for).
    #[serde(default)]
    caching: u32,
    /// The lease, ClientGuid and LeaseKey in hex (64 digits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lease: Option<String>,
    /// The application instance the open was made for (MS-SMB2 3.3.5.9.13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    app_instance: Option<StoredAppInstance>,
    /// Left behind by a closed open for its node to reuse (docs/cluster.md "Retained
    /// records"): another node its presence would refuse or cost caching asks for it to be
    /// released first.
    #[serde(default, skip_serializing_if = "is_false")]
    retained: bool,
}

/// serde's test for fields left out when false (it hands a reference).
fn is_false(value: &bool) -> bool {
    !*value
}

/// An [`AppInstanceRecord`] as stored: the ids in hex (32 digits each).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredAppInstance {
    id: String,
    client: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<(u64, u64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    user: Option<String>,
}

impl StoredAppInstance {
    fn of(record: &AppInstanceRecord) -> Self {
        Self {
            id: hex(&record.id),
            client: hex(&record.client),
            version: record.version,
            user: record.user.clone(),
        }
    }

    /// The record; one whose ids this node cannot read is nobody's instance.
    fn record(&self) -> Option<AppInstanceRecord> {
        Some(AppInstanceRecord {
            id: unhex16(&self.id)?,
            client: unhex16(&self.client)?,
            version: self.version,
            user: self.user.clone(),
        })
    }
}

/// A break request as stored: the caching the holder may keep, and who asks; with `close`,
/// an order to close the open for a new open of its application instance instead (an older
/// node reads it as a break of all caching, and the asker waits out its bound).
#[derive(Debug, Serialize, Deserialize)]
struct Request {
    v: u32,
    to: u32,
    by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    close: Option<StoredAppInstance>,
    /// An order to release a retained record (only nodes that retain records get one).
    #[serde(default, skip_serializing_if = "is_false")]
    release: bool,
}

/// What an asker waits for in the record it asked about.
#[derive(Debug, Clone, Copy)]
enum Until {
    /// The record goes.
    Gone,
    /// Its caching is within these bits (or it goes).
    Within(u32),
    /// It loses its retained mark (or goes).
    Unretained,
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// The lease of a stored record; a lease this node cannot read is a lease of nobody else.
fn unhex(text: &str) -> Option<[u8; 32]> {
    unhex_n(text)
}

/// A 16-byte id of a stored record (an AppInstanceId, a ClientGuid).
fn unhex16(text: &str) -> Option<[u8; 16]> {
    unhex_n(text)
}

fn unhex_n<const N: usize>(text: &str) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    if text.len() != 2 * N || !text.is_ascii() {
        return None;
    }
    for (byte, pair) in out.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

impl Stored {
    fn of(node: &str, record: &OpenRecord) -> Self {
        Self {
            v: FORMAT,
            node: node.to_owned(),
            access: record.access,
            share: record.share,
            stream: record.stream.clone(),
            delete_pending: record.delete_pending,
            caching: record.caching,
            lease: record.lease.as_ref().map(|l| hex(l)),
            app_instance: record.app_instance.as_ref().map(StoredAppInstance::of),
            retained: false,
        }
    }

    fn record(self) -> OpenRecord {
        // An unreadable lease is kept apart from every lease: it is broken like an oplock's
        // neighbour would be, never taken for the new open's own.
        let lease = self
            .lease
            .as_deref()
            .map(|l| unhex(l).unwrap_or([0xff; 32]));
        OpenRecord {
            access: self.access,
            share: self.share,
            stream: self.stream,
            delete_pending: self.delete_pending,
            caching: self.caching,
            lease,
            app_instance: self
                .app_instance
                .as_ref()
                .and_then(StoredAppInstance::record),
        }
    }
}

/// The node and the marked stream (`None`: the file) of a stored open record that carries a
/// delete-pending mark; `None` for any other record, and for one this node cannot read (as
/// [`EtcdOpens::open`]'s judgement takes it: an open that shares nothing, not a mark).
pub(crate) fn mark_of(value: &[u8]) -> Option<(String, Option<String>)> {
    let stored: Stored = serde_json::from_slice(value).ok()?;
    stored
        .delete_pending
        .then_some((stored.node, stored.stream))
}

/// A put of `key` under the etcd `lease`, made only when `when` holds.
fn put_when(lease: i64, when: Compare, key: String, value: impl Into<Vec<u8>>) -> Txn {
    Txn::new().when([when]).and_then([TxnOp::put(
        key,
        value,
        Some(PutOptions::new().with_lease(lease)),
    )])
}

/// The open id at the end of a record key (`.../open/<16 hex>`).
fn open_id(key: &str) -> Option<u64> {
    let (_, id) = key.rsplit_once("/open/")?;
    u64::from_str_radix(id, 16).ok()
}

/// The file key and open id of a break request's key, after `breaks/<node>/`.
fn order_of(rest: &str) -> Option<(String, u64)> {
    let (file, id) = rest.rsplit_once('/')?;
    (!file.is_empty() && !file.contains('/'))
        .then(|| Some((file.to_owned(), u64::from_str_radix(id, 16).ok()?)))?
}

/// This node's opens in etcd, and the other nodes' as each new open finds them.
#[derive(Debug)]
pub struct EtcdOpens {
    etcd: Arc<Etcd>,
    node: String,
    lease: i64,
    /// The membership's health: once renewals have gone unanswered for `node_ttl`, the
    /// cluster may have released this node's opens, and it grants no new one.
    healthy: Arc<AtomicBool>,
    /// The watch of this node's break requests, once [`ClusterOpens::on_break`] started it.
    orders: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Other nodes' delete-pending marks from the watch of `files/`, when this node follows
    /// it ([`EtcdOpens::with_marks`]): opens no other node needs to see are then not
    /// recorded.
    marks: Option<Arc<DeletePendingMarks>>,
    /// The persistent FileIds of this node's opens that have no record (docs/cluster.md
    /// "Stat opens go unrecorded"): their close makes no round trip, and a change that others
    /// must see records them first.
    unrecorded: Mutex<HashSet<u64>>,
    /// The records this node leaves behind at a close and reuses, when it does
    /// ([`EtcdOpens::with_retention`]).
    retained: Option<Arc<Retained>>,
}

impl Drop for EtcdOpens {
    fn drop(&mut self) {
        if let Some(watch) = self.orders.lock().take() {
            watch.abort();
        }
    }
}

impl EtcdOpens {
    /// The open table of the node `membership` made a member under the name `node`.
    pub fn new(etcd: Arc<Etcd>, node: &str, membership: &Membership) -> Self {
        Self {
            etcd,
            node: node.to_owned(),
            lease: membership.lease(),
            healthy: membership.health(),
            orders: Mutex::new(None),
            marks: None,
            unrecorded: Mutex::new(HashSet::new()),
            retained: None,
        }
    }

    /// Leaves the records of plain opens ([`retainable`]) in etcd when they close, marked
    /// as retained, up to `capacity` of them (the least recently used goes first), and
    /// reuses one for a later open of this node with the same record, with no etcd call
    /// (docs/cluster.md "Retained records"). Another node that meets one asks this node to
    /// release it; this node retains nothing while it does not follow those orders
    /// ([`ClusterOpens::on_break`]), and reuses only while the marks of
    /// [`EtcdOpens::with_marks`] are current.
    #[must_use]
    pub fn with_retention(mut self, capacity: usize) -> Self {
        self.retained = Some(Arc::new(Retained::new(capacity)));
        self
    }

    /// Answers opens that no other node needs to see ([`OpenRecord::unseen`]) without a
    /// round trip, from `marks` (the watch of `files/` that [`crate::EtcdLocks`] keeps):
    /// refused when another node's record marks the file delete-pending, otherwise admitted
    /// with no record. Without it every open is recorded.
    #[must_use]
    pub fn with_marks(mut self, marks: Arc<DeletePendingMarks>) -> Self {
        self.marks = Some(marks);
        self
    }

    /// Whether open `id` has no record.
    fn is_unrecorded(&self, id: u64) -> bool {
        self.marks.is_some() && self.unrecorded.lock().contains(&id)
    }

    fn orders_prefix(etcd: &Etcd, node: &str) -> String {
        format!("{}breaks/{node}/", etcd.prefix())
    }

    fn file_prefix(&self, file: &str) -> String {
        format!("{}files/{file}/", self.etcd.prefix())
    }

    fn key(&self, file: &str, id: u64) -> String {
        format!("{}open/{id:016x}", self.file_prefix(file))
    }

    fn value(&self, record: &OpenRecord) -> io::Result<Vec<u8>> {
        serde_json::to_vec(&Stored::of(&self.node, record)).map_err(io::Error::other)
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

    /// Writes `request` for open `id` of `file` held by `node`, and resolves once the open's
    /// record is as `until` says; the request is deleted then, or when the future is
    /// dropped.
    fn ask(&self, file: &str, node: &str, id: u64, request: Request, until: Until) -> Settled {
        let order = format!("{}{file}/{id:016x}", Self::orders_prefix(&self.etcd, node));
        let record = self.key(file, id);
        let (done, settled) = tokio::sync::oneshot::channel::<()>();
        let etcd = self.etcd.clone();
        let lease = self.lease;
        self.etcd.spawn(async move {
            let mut done = done;
            let mut client = etcd.client();
            tokio::select! {
                outcome = ask_and_wait(&etcd, order.clone(), request, record, until, lease) => {
                    if let Err(e) = outcome {
                        tracing::warn!("cluster: a request to another node failed: {e}; not waiting for it");
                    }
                    let _ = done.send(());
                }
                () = done.closed() => {}
            }
            if let Err(e) = client.delete(order, None).await {
                tracing::debug!("cluster: a request to another node stays until this node leaves: {e}");
            }
        });
        Box::pin(async move {
            let _ = settled.await;
        })
    }

    /// Open `id` of `file` takes a record this node retained, equal to `record`, if there is
    /// one and no other node marked the file delete-pending as far as the watch knows
    /// (a mark is written only after every retained record of the file was released).
    fn reuse(
        &self,
        file: &str,
        id: u64,
        record: &OpenRecord,
        intent: Intent,
        marks: &DeletePendingMarks,
    ) -> Option<Result<Admitted, OpenError>> {
        let retained = self.retained.as_ref()?;
        if !retainable(record, intent)
            || !self.healthy.load(Ordering::Acquire)
            || marks.refuses(file, record)
            || !retained.reuse(file, id, record)
        {
            return None;
        }
        Some(Ok(Admitted {
            breaks: Vec::new(),
            keep: record.caching_beside(&[]),
        }))
    }

    /// Leaves the record of open `id`, which closed, in etcd marked as retained; a record
    /// that is gone (this node's lease ran out) is not written again. Records the bound
    /// evicts, and one whose mark was not written, are deleted.
    fn mark_retained(&self, file: &str, id: u64, record: &OpenRecord) {
        let Some(retained) = &self.retained else {
            return;
        };
        let key = self.key(file, id);
        let mut stored = Stored::of(&self.node, record);
        stored.retained = true;
        let marked = serde_json::to_vec(&stored)
            .map_err(io::Error::other)
            .and_then(|value| {
                let txn = put_when(
                    self.lease,
                    Compare::version(key.clone(), CompareOp::Greater, 0),
                    key.clone(),
                    value,
                );
                self.etcd.txn(txn)
            })
            .is_ok_and(|answer| answer.succeeded());
        for (file, gone) in retained.marked(id, marked) {
            self.etcd.delete_surely(self.key(&file, gone), false);
        }
        if !marked {
            self.etcd.delete_surely(key, false);
        }
    }

    /// Asks the nodes of `holders` (node, record id) to release their retained records of
    /// `file`, and waits until each is gone or unmarked, or [`RELEASE_WAIT`] passed.
    fn release(&self, file: &str, holders: &[(String, u64)]) {
        let asked: Vec<_> = holders
            .iter()
            .map(|(node, id)| {
                let request = Request {
                    v: 1,
                    to: 0,
                    by: self.node.clone(),
                    close: None,
                    release: true,
                };
                self.ask(file, node, *id, request, Until::Unretained)
            })
            .collect();
        let (done, wait) = std::sync::mpsc::sync_channel(1);
        self.etcd.spawn(async move {
            let all = async {
                for settled in asked {
                    settled.await;
                }
            };
            if tokio::time::timeout(RELEASE_WAIT, all).await.is_err() {
                tracing::warn!(
                    "cluster: a retained record was not released in time; it counts as an open"
                );
            }
            let _ = done.send(());
        });
        let _ = wait.recv();
    }

    /// Releases every other node's retained record of `file`.
    fn release_retained(&self, file: &str) -> io::Result<()> {
        let found = self.etcd.get_prefix(self.file_prefix(file))?;
        let holders: Vec<_> = found
            .kvs()
            .iter()
            .filter_map(|kv| {
                let id = open_id(std::str::from_utf8(kv.key()).ok()?)?;
                let stored: Stored = serde_json::from_slice(kv.value()).ok()?;
                (stored.retained && stored.node != self.node).then_some((stored.node, id))
            })
            .collect();
        if !holders.is_empty() {
            self.release(file, &holders);
        }
        Ok(())
    }

    /// Whether the records of other nodes found beside `record` let it stand, and the
    /// breaks of their caching it needs. With `release`, the retained records that would
    /// refuse it or cost it caching are collected there (their nodes and ids) instead of
    /// judged: once released, the open tries again.
    fn judge(
        &self,
        own: &str,
        record: &OpenRecord,
        intent: Intent,
        found: &[(String, Vec<u8>)],
        mut release: Option<&mut Vec<(String, u64)>>,
    ) -> Result<Admitted, OpenError> {
        let mut admitted = Admitted::default();
        let mut first = Vec::new();
        let mut after = Vec::new();
        for (key, value) in found {
            if key == own || !key.contains("/open/") {
                continue;
            }
            // An unreadable record is another node's open all the same: assume it shares
            // nothing rather than let a conflicting open through.
            let (node, other) = match serde_json::from_slice::<Stored>(value) {
                Ok(stored) if stored.node == self.node => continue,
                Ok(stored) if stored.retained && release.is_some() => {
                    let other = stored.node.clone();
                    let held = stored.record();
                    if in_the_way(record, &held, intent)
                        && let (Some(list), Some(id)) = (release.as_deref_mut(), open_id(key))
                    {
                        list.push((other, id));
                        continue;
                    }
                    (other, held)
                }
                Ok(stored) => (stored.node.clone(), stored.record()),
                Err(_) => (
                    String::new(),
                    OpenRecord {
                        access: 0x0001_0003,
                        share: 0,
                        stream: record.stream.clone(),
                        delete_pending: false,
                        caching: 0,
                        lease: None,
                        app_instance: None,
                    },
                ),
            };
            let id = open_id(key).unwrap_or(0);
            let need = |(to, wait)| BreakNeeded {
                id,
                node: node.clone(),
                held: other.caching,
                to,
                wait,
            };
            match record.admitted_beside(&other) {
                Ok(()) => {}
                Err(Refusal::SharingViolation) => {
                    // Handle caching in the way: its client may close the cached handle.
                    let violation = Intent {
                        sharing_violation: true,
                        ..intent
                    };
                    match record.break_of(&other, violation) {
                        Some(cut @ (_, true)) => {
                            first.push(need(cut));
                            continue;
                        }
                        _ => return Err(OpenError::Refused(Refusal::SharingViolation)),
                    }
                }
                Err(why) => return Err(OpenError::Refused(why)),
            }
            let mut kept = other.clone();
            if let Some(cut) = record.break_of(&other, intent) {
                kept.caching = cut.0;
                admitted.breaks.push(need(cut));
            }
            after.push(kept);
        }
        if !first.is_empty() {
            return Err(OpenError::BreakFirst(first));
        }
        admitted.keep = record.caching_beside(&after);
        Ok(admitted)
    }
}

impl ClusterOpens for EtcdOpens {
    fn open(
        &self,
        file: &str,
        id: u64,
        record: &OpenRecord,
        intent: Intent,
    ) -> Result<Admitted, OpenError> {
        if let Some(answer) = self.open_at_once(file, id, record, intent) {
            return answer;
        }
        self.usable().map_err(OpenError::Unavailable)?;
        let key = self.key(file, id);
        let value = self.value(record).map_err(OpenError::Unavailable)?;
        // Other nodes' retained records in the way are released once, then the open is
        // judged again; one still there (its node did not answer) counts as a live open.
        let mut asked = false;
        loop {
            let found = match self.etcd.put_and_read(
                key.clone(),
                value.clone(),
                self.lease,
                self.file_prefix(file),
            ) {
                Ok(found) => found,
                Err(e) => {
                    // An unanswered put may still be committed when quorum returns.
                    self.etcd.delete_surely(key, false);
                    return Err(OpenError::Unavailable(e));
                }
            };
            let mut in_way = Vec::new();
            let judged = self.judge(
                &key,
                record,
                intent,
                &found,
                (!asked).then_some(&mut in_way),
            );
            if judged.is_err() || !in_way.is_empty() {
                // Until this delete, later opens see the withdrawn record and may be refused
                // for it: a moment's false conflict, never a missed one.
                self.etcd.delete_surely(key.clone(), false);
            }
            if !in_way.is_empty() && judged.is_ok() {
                asked = true;
                self.release(file, &in_way);
                continue;
            }
            if let (Ok(_), Some(retained)) = (&judged, &self.retained)
                && retainable(record, intent)
            {
                retained.admitted(file, id, record);
            }
            return judged;
        }
    }

    fn open_at_once(
        &self,
        file: &str,
        id: u64,
        record: &OpenRecord,
        intent: Intent,
    ) -> Option<Result<Admitted, OpenError>> {
        let marks = self.marks.as_ref()?;
        if !marks.current() {
            return None;
        }
        if !record.unseen(intent) {
            return self.reuse(file, id, record, intent, marks);
        }
        if let Err(e) = self.usable() {
            return Some(Err(OpenError::Unavailable(e)));
        }
        // Share modes, breaks and caching never involve this open (MS-FSA 2.1.5.1.2.2,
        // 2.1.4.12); a pending delete elsewhere still refuses it (2.1.5.1.2), as far as the
        // watch has told this node.
        if marks.refuses(file, record) {
            return Some(Err(OpenError::Refused(Refusal::DeletePending)));
        }
        self.unrecorded.lock().insert(id);
        Some(Ok(Admitted {
            breaks: Vec::new(),
            keep: record.caching_beside(&[]),
        }))
    }

    fn closed_at_once(&self, id: u64) -> bool {
        (self.marks.is_some() && self.unrecorded.lock().remove(&id))
            || self.retained.as_ref().is_some_and(|r| r.closed_at_once(id))
    }

    /// A compare-and-swap on the record's existence: a record the cluster released (this
    /// node's lease ran out) is not brought back by a late change. An open without a record
    /// that now says what others must see (a delete-pending mark carried to it) is recorded
    /// first, created under this node's lease.
    fn update(&self, file: &str, id: u64, record: &OpenRecord) -> io::Result<()> {
        self.usable()?;
        if record.delete_pending {
            // Every later open must meet the mark in etcd: none may be a reuse of a record
            // retained beside a DELETE open that shared delete (MS-FSA 2.1.5.1.2).
            self.release_retained(file)?;
        }
        let id = self.retained.as_ref().map_or(id, |r| r.changed(id));
        let key = self.key(file, id);
        let value = self.value(record)?;
        if self.is_unrecorded(id) {
            if record.unseen(Intent::default()) {
                return Ok(());
            }
            let txn = put_when(
                self.lease,
                Compare::version(key.clone(), CompareOp::Equal, 0),
                key,
                value,
            );
            self.etcd.txn(txn)?;
            self.unrecorded.lock().remove(&id);
            return Ok(());
        }
        let txn = put_when(
            self.lease,
            Compare::version(key.clone(), CompareOp::Greater, 0),
            key,
            value,
        );
        let answer = self.etcd.txn(txn)?;
        if answer.succeeded() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("open {id:016x}: its record is gone from the cluster"),
            ))
        }
    }

    fn app_instance_opens(
        &self,
        file: &str,
        stream: Option<&str>,
        asking: &AppInstanceRecord,
    ) -> io::Result<Vec<TakeOver>> {
        self.usable()?;
        let prefix = self.file_prefix(file);
        let found = self.etcd.run(move |mut client| {
            let prefix = prefix.clone();
            async move {
                client
                    .get(prefix, Some(GetOptions::new().with_prefix()))
                    .await
            }
        })?;
        Ok(found
            .kvs()
            .iter()
            .filter_map(|kv| {
                let id = open_id(std::str::from_utf8(kv.key()).ok()?)?;
                let stored: Stored = serde_json::from_slice(kv.value()).ok()?;
                if stored.node == self.node || stored.stream.as_deref() != stream {
                    return None;
                }
                let held = stored.app_instance.as_ref()?.record()?;
                held.taken_over_by(asking).then_some(TakeOver {
                    node: stored.node,
                    id,
                    app_instance: held,
                })
            })
            .collect())
    }

    fn any_marked_elsewhere(&self) -> bool {
        self.marks.as_ref().is_some_and(|m| m.any())
    }

    fn marked_elsewhere(&self, file: &str) -> bool {
        self.marks.as_ref().is_some_and(|m| m.file_marked(file))
    }

    fn request_close(&self, file: &str, open: &TakeOver, asking: &AppInstanceRecord) -> Settled {
        let request = Request {
            v: 1,
            to: 0,
            by: self.node.clone(),
            close: Some(StoredAppInstance::of(asking)),
            release: false,
        };
        self.ask(file, &open.node, open.id, request, Until::Gone)
    }

    /// Never fails: a delete etcd cannot take now is retried until it can. An open without
    /// a record costs nothing.
    fn close(&self, file: &str, id: u64) -> io::Result<()> {
        if self.closed_at_once(id) {
            return Ok(());
        }
        let retain = self.orders.lock().is_some() && self.healthy.load(Ordering::Acquire);
        match self.retained.as_ref().and_then(|r| r.closed(id, retain)) {
            None => self.etcd.delete_surely(self.key(file, id), false),
            Some(Closed::Delete(key)) => self.etcd.delete_surely(self.key(file, key), false),
            Some(Closed::Mark(record)) => self.mark_retained(file, id, &record),
        }
        Ok(())
    }

    fn request_break(&self, file: &str, need: &BreakNeeded) -> Settled {
        let request = Request {
            v: 1,
            to: need.to,
            by: self.node.clone(),
            close: None,
            release: false,
        };
        self.ask(file, &need.node, need.id, request, Until::Within(need.to))
    }

    fn on_break(&self, sink: BreakSink) {
        let mut orders = self.orders.lock();
        if let Some(old) = orders.take() {
            old.abort();
        }
        let prefix = Self::orders_prefix(&self.etcd, &self.node);
        let releases = self.retained.clone().map(|retained| Releases {
            retained,
            files: format!("{}files/", self.etcd.prefix()),
            node: self.node.clone(),
            lease: self.lease,
        });
        *orders = Some(
            self.etcd
                .spawn(follow_orders(self.etcd.clone(), prefix, sink, releases)),
        );
    }

    fn lowered(&self, file: &str, id: u64, caching: u32) -> io::Result<()> {
        if self.is_unrecorded(id) {
            return Ok(());
        }
        self.usable()?;
        let key = self.key(file, id);
        for _ in 0..3 {
            let get = key.clone();
            let found = self.etcd.run(move |mut client| {
                let get = get.clone();
                async move { client.get(get, None).await }
            })?;
            let Some(kv) = found.kvs().first() else {
                return Ok(());
            };
            let mut stored: Stored = serde_json::from_slice(kv.value())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            if stored.caching & !caching == 0 {
                return Ok(());
            }
            stored.v = FORMAT;
            stored.caching &= caching;
            let value = serde_json::to_vec(&stored).map_err(io::Error::other)?;
            let txn = put_when(
                self.lease,
                Compare::mod_revision(key.clone(), CompareOp::Equal, kv.mod_revision()),
                key.clone(),
                value,
            );
            if self.etcd.txn(txn)?.succeeded() {
                return Ok(());
            }
        }
        Err(io::Error::other(format!(
            "open {id:016x}: its record kept changing"
        )))
    }
}

/// What a node that retains records needs to release one when another node asks.
struct Releases {
    retained: Arc<Retained>,
    /// `<prefix>files/`.
    files: String,
    node: String,
    lease: i64,
}

impl Releases {
    /// Releases this node's retained record `id` of `file` (from the watch of orders, on the
    /// etcd runtime): an idle one is deleted, one an open uses loses its mark. Decided under
    /// the table's lock, so a reuse of it is either before (the record stays, unmarked) or
    /// never.
    fn release(&self, etcd: &Arc<Etcd>, file: &str, id: u64) {
        let key = format!("{}{file}/open/{id:016x}", self.files);
        let mut client = etcd.client();
        match self.retained.release(file, id) {
            Release::Nothing => {}
            Release::Delete => {
                tokio::spawn(async move {
                    if let Err(e) = client.delete(key, None).await {
                        tracing::warn!(
                            "cluster: a released record stays until this node leaves: {e}"
                        );
                    }
                });
            }
            Release::Unmark(record) => {
                let Ok(value) = serde_json::to_vec(&Stored::of(&self.node, &record)) else {
                    return;
                };
                let txn = put_when(
                    self.lease,
                    Compare::version(key.clone(), CompareOp::Greater, 0),
                    key,
                    value,
                );
                tokio::spawn(async move {
                    if let Err(e) = client.txn(txn).await {
                        tracing::warn!("cluster: a released record keeps its mark: {e}");
                    }
                });
            }
        }
    }
}

/// Whether another node's retained record `held` would refuse the new open `record` or cost
/// it anything a closed open must not (MS-FSA 2.1.5.1.2 share access and delete-pending,
/// 2.1.4.12 breaks, MS-SMB2 3.3.5.9 / MS-FSA 2.1.5.18 the caching it may keep, which a live
/// open without caching would lower): then it is released first rather than counted.
fn in_the_way(record: &OpenRecord, held: &OpenRecord, intent: Intent) -> bool {
    record.admitted_beside(held).is_err()
        || record.break_of(held, intent).is_some()
        || record.caching & !record.caching_beside(std::slice::from_ref(held)) != 0
}

/// Writes a request and reads the holder's record at the same revision, then watches that
/// record until it is as `until` says (an unreadable one ends a wait for its mark).
async fn ask_and_wait(
    etcd: &Etcd,
    order: String,
    request: Request,
    record: String,
    until: Until,
    lease: i64,
) -> Result<(), etcd_client::Error> {
    let value = serde_json::to_vec(&request).unwrap_or_default();
    let txn = Txn::new().and_then([
        TxnOp::put(order, value, Some(PutOptions::new().with_lease(lease))),
        TxnOp::get(record.clone(), None),
    ]);
    let answer = etcd.client().txn(txn).await?;
    let revision = answer.header().map_or(0, |h| h.revision());
    let current = answer.op_responses().into_iter().find_map(|r| match r {
        TxnOpResponse::Get(get) => Some(get.kvs().first().map(|kv| kv.value().to_vec())),
        _ => None,
    });
    let settled = |value: Option<&[u8]>| match (value, until) {
        (None, _) => true,
        (Some(_), Until::Gone) => false,
        (Some(value), Until::Within(to)) => {
            serde_json::from_slice::<Stored>(value).is_ok_and(|s| s.caching & !to == 0)
        }
        (Some(value), Until::Unretained) => {
            serde_json::from_slice::<Stored>(value).map_or(true, |s| !s.retained)
        }
    };
    if settled(current.flatten().as_deref()) {
        return Ok(());
    }
    let options = WatchOptions::new().with_start_revision(revision + 1);
    let mut stream = etcd.client().watch(record, Some(options)).await?;
    while let Some(answer) = stream.message().await? {
        for event in answer.events() {
            let value = match event.event_type() {
                EventType::Put => event.kv().map(|kv| kv.value()),
                EventType::Delete => None,
            };
            if settled(value) {
                return Ok(());
            }
        }
        if answer.canceled() {
            break;
        }
    }
    Ok(())
}

/// Hands every break request for this node to `sink`: those already there, then each new
/// one as the watch of `prefix` sees it. A broken watch reads them all again (a request
/// handed over twice is a break already under way: nothing more happens).
async fn follow_orders(
    etcd: Arc<Etcd>,
    prefix: String,
    sink: BreakSink,
    releases: Option<Releases>,
) {
    let hand = |key: &[u8], value: &[u8]| {
        let Some(rest) = std::str::from_utf8(key)
            .ok()
            .and_then(|k| k.strip_prefix(prefix.as_str()))
        else {
            return;
        };
        let (Some((file, id)), Ok(request)) =
            (order_of(rest), serde_json::from_slice::<Request>(value))
        else {
            return;
        };
        if request.release {
            if let Some(releases) = &releases {
                releases.release(&etcd, &file, id);
            }
            return;
        }
        sink(BreakOrder {
            file,
            id,
            to: request.to,
            close_for: request.close.as_ref().and_then(StoredAppInstance::record),
        });
    };
    loop {
        let get = prefix.clone();
        let read = etcd
            .client()
            .get(get, Some(GetOptions::new().with_prefix()))
            .await;
        if let Ok(read) = read {
            for kv in read.kvs() {
                hand(kv.key(), kv.value());
            }
            let mut revision = read.header().map_or(0, |h| h.revision());
            let watched = etcd
                .watch_from(prefix.clone(), &mut revision, |events| {
                    for (key, value, _) in events.iter().filter_map(change) {
                        if let Some(value) = value {
                            hand(key, value);
                        }
                    }
                })
                .await;
            if let Err(e) = watched {
                tracing::warn!("etcd watch of break requests broke: {e}; watching again");
            }
        }
        tokio::time::sleep(REWATCH_DELAY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_carry_caching_and_older_ones_have_none() {
        let record = OpenRecord {
            access: 3,
            share: 7,
            stream: None,
            delete_pending: false,
            caching: 7,
            lease: Some([0xa5; 32]),
            app_instance: None,
        };
        let stored = serde_json::to_vec(&Stored::of("n1", &record)).unwrap();
        let back: Stored = serde_json::from_slice(&stored).unwrap();
        assert_eq!(back.v, FORMAT);
        assert_eq!(back.record(), record);
        // Version 3: the application instance, when the open named one.
        let instance = OpenRecord {
            app_instance: Some(AppInstanceRecord {
                id: [1; 16],
                client: [2; 16],
                version: Some((3, u64::MAX)),
                user: Some("alice".into()),
            }),
            ..record.clone()
        };
        let stored = serde_json::to_vec(&Stored::of("n1", &instance)).unwrap();
        let back: Stored = serde_json::from_slice(&stored).unwrap();
        assert_eq!(back.record(), instance);
        // Unreadable ids are nobody's instance.
        let bad =
            br#"{"v":3,"node":"n2","access":1,"share":1,"app_instance":{"id":"zz","client":"00"}}"#;
        let bad: Stored = serde_json::from_slice(bad).unwrap();
        assert_eq!(bad.record().app_instance, None);
        // A version 1 record (no caching) and a later one with fields unknown here.
        let v1 = br#"{"v":1,"node":"n2","access":1,"share":1}"#;
        let old: Stored = serde_json::from_slice(v1).unwrap();
        assert_eq!((old.caching, old.lease.is_none()), (0, true));
        let v9 = br#"{"v":9,"node":"n2","access":1,"share":1,"caching":1,"lease":"zz","x":[1]}"#;
        let later = serde_json::from_slice::<Stored>(v9).unwrap().record();
        assert_eq!(later.caching, 1);
        assert_eq!(
            later.lease,
            Some([0xff; 32]),
            "an unreadable lease is nobody's"
        );
    }

    #[test]
    fn break_request_keys_name_their_file_and_open() {
        assert_eq!(
            order_of("2f7372-1a/00000000000000ff"),
            Some(("2f7372-1a".to_owned(), 0xff))
        );
        assert_eq!(order_of("a/b/00"), None);
        assert_eq!(order_of("/00"), None);
        assert_eq!(order_of("f/zz"), None);
        assert_eq!(open_id("/p/files/f/open/0000000000000010"), Some(16));
    }
}
