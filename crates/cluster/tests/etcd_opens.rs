//! The cluster-wide open table against a real etcd 3.4 (issue 18 items 2-3): two "nodes" in
//! one test, each with its own connection and membership lease.

mod etcd;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use etcd::EtcdCluster;
use smb3d_cluster::{Etcd, EtcdLocks, EtcdOpens, Membership};
use smb3d_state::{
    Admitted, AppInstanceRecord, ClusterOpens, Intent, OpenError, OpenRecord, Refusal,
};

const READ: u32 = 0x1;
const WRITE: u32 = 0x2;
const DELETE: u32 = 0x0001_0000;
const SHARE_ALL: u32 = 0x7;

struct Node {
    opens: EtcdOpens,
    membership: Membership,
}

fn node(etcd: &EtcdCluster, prefix: &str, name: &str, ttl: Duration) -> Node {
    let cluster = Arc::new(Etcd::connect(&etcd.endpoints, prefix).unwrap());
    let info = etcd::node_info(name);
    let membership = Membership::join(cluster.clone(), &info, ttl).unwrap();
    Node {
        opens: EtcdOpens::new(cluster, name, &membership),
        membership,
    }
}

impl Node {
    fn record(&self, access: u32, share: u32) -> OpenRecord {
        OpenRecord {
            access,
            share,
            stream: None,
            delete_pending: false,
            caching: 0,
            lease: None,
            app_instance: None,
        }
    }
}

fn refusal(result: Result<Admitted, OpenError>) -> Option<Refusal> {
    match result {
        Ok(_) => None,
        Err(OpenError::Refused(why)) => Some(why),
        Err(e) => panic!("etcd: {e}"),
    }
}

/// How long after its deadline a test waits for something etcd does on a timer (a lease's
/// expiry) before it calls it never done: CI's loaded cores delay it.
const LATE: Duration = Duration::from_secs(20);

#[test]
fn share_modes_hold_across_nodes_until_the_first_closes() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/o1/", "a", Duration::from_secs(3));
    let b = node(&etcd, "/o1/", "b", Duration::from_secs(3));
    let exclusive = a.record(READ | WRITE, 0);
    a.opens.open("f", 1, &exclusive, Intent::default()).unwrap();
    assert_eq!(
        refusal(
            b.opens
                .open("f", 2, &b.record(READ, SHARE_ALL), Intent::default())
        ),
        Some(Refusal::SharingViolation)
    );
    // Another file, and an attribute-only open of this one, are not in the way.
    b.opens
        .open("g", 3, &b.record(READ, 0), Intent::default())
        .unwrap();
    b.opens
        .open("f", 4, &b.record(0x80, 0), Intent::default())
        .unwrap();
    // The refused open left nothing behind: a third node's reader is refused by a's open
    // only, and is let in once a closed.
    a.opens.close("f", 1).unwrap();
    b.opens
        .open("f", 2, &b.record(READ, SHARE_ALL), Intent::default())
        .unwrap();
    assert_eq!(
        refusal(
            a.opens
                .open("f", 5, &a.record(WRITE, SHARE_ALL), Intent::default())
        ),
        None,
        "b shares everything"
    );
    assert_eq!(
        refusal(a.opens.open("f", 6, &a.record(READ, 0), Intent::default())),
        Some(Refusal::SharingViolation),
        "b reads, and this one shares no reading"
    );
}

#[test]
fn racing_exclusive_opens_never_both_succeed() {
    let etcd = EtcdCluster::start(1);
    let a = Arc::new(node(&etcd, "/race/", "a", Duration::from_secs(3)));
    let b = Arc::new(node(&etcd, "/race/", "b", Duration::from_secs(3)));
    for round in 0..40u64 {
        let file = format!("f{round}");
        let start = Arc::new(Barrier::new(2));
        let racers: Vec<_> = [(a.clone(), 2 * round), (b.clone(), 2 * round + 1)]
            .into_iter()
            .map(|(n, id)| {
                let (start, file) = (start.clone(), file.clone());
                std::thread::spawn(move || {
                    start.wait();
                    refusal(n.opens.open(
                        &file,
                        id,
                        &n.record(READ | WRITE | DELETE, 0),
                        Intent::default(),
                    ))
                    .is_none()
                })
            })
            .collect();
        let won: Vec<bool> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        assert_eq!(
            won.iter().filter(|w| **w).count(),
            1,
            "round {round}: exactly one exclusive open wins, {won:?}"
        );
    }
}

#[test]
fn delete_pending_is_seen_by_other_nodes() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/dp/", "a", Duration::from_secs(3));
    let b = node(&etcd, "/dp/", "b", Duration::from_secs(3));
    let mut deleting = a.record(DELETE, SHARE_ALL);
    a.opens.open("f", 1, &deleting, Intent::default()).unwrap();
    b.opens
        .open("f", 2, &b.record(READ, SHARE_ALL), Intent::default())
        .unwrap();
    deleting.delete_pending = true;
    a.opens.update("f", 1, &deleting).unwrap();
    assert_eq!(
        refusal(
            b.opens
                .open("f", 3, &b.record(READ, SHARE_ALL), Intent::default())
        ),
        Some(Refusal::DeletePending)
    );
    deleting.delete_pending = false;
    a.opens.update("f", 1, &deleting).unwrap();
    b.opens
        .open("f", 3, &b.record(READ, SHARE_ALL), Intent::default())
        .unwrap();
}

#[test]
fn a_dead_node_s_lease_releases_its_opens() {
    let etcd = EtcdCluster::start(1);
    let ttl = Duration::from_secs(1);
    let a = node(&etcd, "/dead/", "a", ttl);
    let b = node(&etcd, "/dead/", "b", ttl);
    a.opens
        .open("f", 1, &a.record(READ | WRITE, 0), Intent::default())
        .unwrap();
    let dead_at = Instant::now();
    // Dropped without leaving: its keepalives stop, as when the process is killed.
    drop(a);
    loop {
        match refusal(
            b.opens
                .open("f", 2, &b.record(READ, SHARE_ALL), Intent::default()),
        ) {
            None => break,
            Some(why) => assert_eq!(why, Refusal::SharingViolation),
        }
        assert!(
            dead_at.elapsed() < ttl + LATE,
            "the dead node's open outlived its lease"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(b.membership);
}

#[test]
fn a_change_to_a_record_the_cluster_released_is_refused() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/cas/", "a", Duration::from_secs(3));
    let b = node(&etcd, "/cas/", "b", Duration::from_secs(3));
    let mut record = a.record(DELETE, SHARE_ALL);
    a.opens.open("f", 1, &record, Intent::default()).unwrap();
    a.opens.close("f", 1).unwrap();
    record.delete_pending = true;
    let refused = a.opens.update("f", 1, &record).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::NotFound);
    // Nothing came back: b's open is not told of a pending delete.
    b.opens
        .open("f", 2, &b.record(READ, 0), Intent::default())
        .unwrap();
}

#[test]
fn a_node_cut_off_from_etcd_grants_no_open() {
    let mut etcd = EtcdCluster::start(1);
    let ttl = Duration::from_secs(1);
    let a = node(&etcd, "/cut/", "a", ttl);
    a.opens
        .open("f", 1, &a.record(READ, SHARE_ALL), Intent::default())
        .unwrap();
    etcd.kill_member(0);
    let started = Instant::now();
    match a
        .opens
        .open("f", 2, &a.record(READ, SHARE_ALL), Intent::default())
    {
        Err(OpenError::Unavailable(_)) => {}
        other => panic!("an open without etcd: {other:?}"),
    }
    assert!(started.elapsed() < LATE);
    drop(a.membership);
}

const R: u32 = smb3d_state::CACHE_READ;
const H: u32 = smb3d_state::CACHE_HANDLE;
const W: u32 = smb3d_state::CACHE_WRITE;

#[test]
fn a_break_asked_through_etcd_reaches_the_holder_and_settles_when_it_lowers() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/o7/", "a", Duration::from_secs(3));
    let b = node(&etcd, "/o7/", "b", Duration::from_secs(3));
    let (orders, received) = std::sync::mpsc::channel();
    let orders = std::sync::Mutex::new(orders);
    a.opens.on_break(Arc::new(move |order| {
        let _ = orders.lock().unwrap().send(order);
    }));
    let batch = OpenRecord {
        caching: R | W | H,
        ..a.record(READ | WRITE, SHARE_ALL)
    };
    a.opens.open("f", 1, &batch, Intent::default()).unwrap();
    let reader = OpenRecord {
        caching: R | W | H,
        ..b.record(READ, SHARE_ALL)
    };
    let admitted = b.opens.open("f", 2, &reader, Intent::default()).unwrap();
    assert_eq!(admitted.breaks.len(), 1);
    let need = &admitted.breaks[0];
    assert_eq!(
        (need.id, need.node.as_str(), need.held, need.to, need.wait),
        (1, "a", R | W | H, R, true)
    );
    // Beside the holder's open, broken to level II: no write caching.
    assert_eq!(admitted.keep, R | H);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let settled = b.opens.request_break("f", need);
    let order = received
        .recv_timeout(Duration::from_secs(10))
        .expect("a got no break order");
    assert_eq!((order.file.as_str(), order.id, order.to), ("f", 1, R));
    let mut settled = Box::pin(settled);
    let early = runtime
        .block_on(async { tokio::time::timeout(Duration::from_millis(300), &mut settled).await });
    assert!(
        early.is_err(),
        "settled before the holder lowered its record"
    );
    a.opens.lowered("f", 1, R).unwrap();
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), settled).await })
        .expect("the break did not settle once lowered");
    // A second break of a closed open settles at once.
    let again = b.opens.request_break("f", need);
    a.opens.close("f", 1).unwrap();
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), again).await })
        .expect("the break of a closed open did not settle");
}

#[test]
fn a_sharing_violation_with_handle_caching_asks_for_the_break_first() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/o8/", "a", Duration::from_secs(3));
    let b = node(&etcd, "/o8/", "b", Duration::from_secs(3));
    let cached = OpenRecord {
        caching: R | H,
        lease: Some([1; 32]),
        ..a.record(READ, SHARE_ALL & !2)
    };
    a.opens.open("f", 1, &cached, Intent::default()).unwrap();
    match b.opens.open(
        "f",
        2,
        &b.record(READ | WRITE, SHARE_ALL),
        Intent::default(),
    ) {
        Err(OpenError::BreakFirst(breaks)) => {
            assert_eq!((breaks.len(), breaks[0].to, breaks[0].wait), (1, R, true));
        }
        other => panic!("{other:?}"),
    }
    // Without handle caching the same open is refused outright.
    a.opens.lowered("f", 1, R).unwrap();
    assert_eq!(
        refusal(b.opens.open(
            "f",
            2,
            &b.record(READ | WRITE, SHARE_ALL),
            Intent::default()
        )),
        Some(Refusal::SharingViolation)
    );
}

fn instance(client: u8, version: Option<(u64, u64)>, user: &str) -> AppInstanceRecord {
    AppInstanceRecord {
        id: [9; 16],
        client: [client; 16],
        version,
        user: Some(user.to_owned()),
    }
}

#[test]
fn an_application_instance_s_open_is_closed_by_its_node_for_a_new_open_elsewhere() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/o9/", "a", Duration::from_secs(3));
    let b = node(&etcd, "/o9/", "b", Duration::from_secs(3));
    let (orders, received) = std::sync::mpsc::channel();
    let orders = std::sync::Mutex::new(orders);
    a.opens.on_break(Arc::new(move |order| {
        let _ = orders.lock().unwrap().send(order);
    }));
    let held = OpenRecord {
        app_instance: Some(instance(1, Some((1, 0)), "alice")),
        ..a.record(READ | WRITE, 0)
    };
    a.opens.open("f", 1, &held, Intent::default()).unwrap();
    // Another open of the file without an instance, and one of a's own node, are not found.
    a.opens
        .open("f", 2, &a.record(0x80, SHARE_ALL), Intent::default())
        .unwrap();
    let asking = instance(2, Some((2, 0)), "alice");
    let found = b.opens.app_instance_opens("f", None, &asking).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].node.as_str(), found[0].id), ("a", 1));
    assert_eq!(found[0].app_instance, instance(1, Some((1, 0)), "alice"));
    assert!(!found[0].app_instance.refuses(&asking));
    assert!(
        found[0]
            .app_instance
            .refuses(&instance(2, Some((1, 0)), "alice"))
    );
    // Another account, the same client, another stream, another file: nothing to take over.
    for (file, stream, other) in [
        ("f", None, instance(2, None, "mallory")),
        ("f", None, instance(1, None, "alice")),
        ("f", Some("s"), asking.clone()),
        ("g", None, asking.clone()),
    ] {
        assert!(
            b.opens
                .app_instance_opens(file, stream, &other)
                .unwrap()
                .is_empty()
        );
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut closed = Box::pin(b.opens.request_close("f", &found[0], &asking));
    let order = received
        .recv_timeout(Duration::from_secs(10))
        .expect("a got no close order");
    assert_eq!((order.file.as_str(), order.id), ("f", 1));
    assert_eq!(order.close_for, Some(asking.clone()));
    let early = runtime
        .block_on(async { tokio::time::timeout(Duration::from_millis(300), &mut closed).await });
    assert!(early.is_err(), "settled before the holder closed its open");
    // A lowered record is not a closed one.
    a.opens.lowered("f", 1, 0).unwrap();
    let early = runtime
        .block_on(async { tokio::time::timeout(Duration::from_millis(300), &mut closed).await });
    assert!(early.is_err(), "settled on a lowered record");
    a.opens.close("f", 1).unwrap();
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), closed).await })
        .expect("the close order did not settle once the open closed");
    // Now b's open of the file with share mode none goes on.
    b.opens
        .open("f", 3, &b.record(READ | WRITE, 0), Intent::default())
        .unwrap();
}

/// A node that follows `files/` (its lock table's watch) and so answers opens no other node
/// needs to see without recording them, as `serve` builds it.
struct Watching {
    opens: EtcdOpens,
    etcd: Arc<Etcd>,
    locks: Option<EtcdLocks>,
    membership: Membership,
}

fn watching_node(etcd: &EtcdCluster, prefix: &str, name: &str) -> Watching {
    let plain = node(etcd, prefix, name, Duration::from_secs(3));
    let cluster = Arc::new(Etcd::connect(&etcd.endpoints, prefix).unwrap());
    let locks = EtcdLocks::new(cluster.clone(), name, &plain.membership).unwrap();
    Watching {
        opens: EtcdOpens::new(cluster.clone(), name, &plain.membership)
            .with_marks(locks.delete_pending_marks()),
        etcd: cluster,
        locks: Some(locks),
        membership: plain.membership,
    }
}

impl Watching {
    fn record(&self, access: u32, share: u32) -> OpenRecord {
        OpenRecord {
            access,
            share,
            stream: None,
            delete_pending: false,
            caching: 0,
            lease: None,
            app_instance: None,
        }
    }

    /// etcd's revision now: unchanged when nothing was written.
    fn revision(&self) -> i64 {
        self.etcd
            .run(|mut client| async move { client.get("none", None).await })
            .unwrap()
            .header()
            .unwrap()
            .revision()
    }

    /// How many open records etcd holds under the test's prefix.
    fn records(&self) -> usize {
        self.etcd
            .run(|mut client| async move {
                client
                    .get("", Some(etcd_client::GetOptions::new().with_from_key()))
                    .await
            })
            .unwrap()
            .kvs()
            .iter()
            .filter(|kv| String::from_utf8_lossy(kv.key()).contains("/open/"))
            .count()
    }
}

/// FILE_READ_ATTRIBUTES: smbtorture's smb2.bench.path-contention-shared opens for this only.
const READ_ATTRIBUTES: u32 = 0x80;

#[test]
fn a_stat_open_costs_no_etcd_write_and_meets_no_share_mode() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/st1/", "a", Duration::from_secs(3));
    let mut b = watching_node(&etcd, "/st1/", "b");
    a.opens
        .open(
            "f",
            1,
            &a.record(READ | WRITE | DELETE, 0),
            Intent::default(),
        )
        .unwrap();
    let before = b.revision();
    let stat = b.record(READ_ATTRIBUTES, SHARE_ALL);
    for id in 10..20 {
        let admitted = b.opens.open("f", id, &stat, Intent::default()).unwrap();
        assert_eq!(admitted.breaks, Vec::new());
        b.opens.close("f", id).unwrap();
    }
    let kept = b.opens.open("f", 20, &stat, Intent::default()).unwrap();
    assert_eq!(kept.breaks, Vec::new());
    assert_eq!(b.revision(), before, "stat opens and closes wrote to etcd");
    assert_eq!(b.records(), 1, "only a's open is recorded");
    // b's open with data access still meets a's share mode through etcd, and a's new
    // exclusive open is not held back by b's stat open.
    assert_eq!(
        refusal(
            b.opens
                .open("f", 21, &b.record(READ, SHARE_ALL), Intent::default())
        ),
        Some(Refusal::SharingViolation)
    );
    a.opens
        .open(
            "g",
            2,
            &a.record(READ | WRITE | DELETE, 0),
            Intent::default(),
        )
        .unwrap();
    // A stat open with READ_CONTROL, or one asking a lease, is recorded as before.
    let control = b.record(READ_ATTRIBUTES | 0x0002_0000, SHARE_ALL);
    b.opens.open("g", 22, &control, Intent::default()).unwrap();
    let leased = OpenRecord {
        lease: Some([9; 32]),
        ..stat.clone()
    };
    b.opens.open("g", 23, &leased, Intent::default()).unwrap();
    assert_eq!(b.records(), 4);
    b.opens.close("g", 22).unwrap();
    b.opens.close("g", 23).unwrap();
    b.opens.close("f", 20).unwrap();
    assert_eq!(b.records(), 2);
    // Once nothing follows `files/` (here: the lock table and its watch gone), a stat open is
    // recorded and judged by etcd again.
    drop(b.locks.take());
    b.opens.open("f", 24, &stat, Intent::default()).unwrap();
    assert_eq!(b.records(), 3);
    drop(b.membership);
}

#[test]
fn a_stat_open_breaks_no_oplock_held_on_another_node() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/st2/", "a", Duration::from_secs(3));
    let b = watching_node(&etcd, "/st2/", "b");
    let (orders, received) = std::sync::mpsc::channel();
    let orders = std::sync::Mutex::new(orders);
    a.opens.on_break(Arc::new(move |order| {
        let _ = orders.lock().unwrap().send(order);
    }));
    let batch = OpenRecord {
        caching: R | W | H,
        ..a.record(READ | WRITE, 0)
    };
    a.opens.open("f", 1, &batch, Intent::default()).unwrap();
    let admitted = b
        .opens
        .open(
            "f",
            2,
            &b.record(READ_ATTRIBUTES, SHARE_ALL),
            Intent::default(),
        )
        .unwrap();
    assert_eq!(admitted.breaks, Vec::new());
    assert!(
        received.recv_timeout(Duration::from_millis(500)).is_err(),
        "a was asked to break"
    );
    // A later open of a beside b's stat open keeps write caching (nothing of b is seen).
    let second = OpenRecord {
        caching: R | W | H,
        ..a.record(READ, SHARE_ALL)
    };
    a.opens.close("f", 1).unwrap();
    let kept = a.opens.open("f", 3, &second, Intent::default()).unwrap();
    assert_eq!(kept.keep, R | W | H);
}

#[test]
fn a_stat_open_meets_another_node_s_delete_pending_through_the_watch() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/st3/", "a", Duration::from_secs(3));
    let b = watching_node(&etcd, "/st3/", "b");
    let stat = b.record(READ_ATTRIBUTES, SHARE_ALL);
    let mut deleting = a.record(DELETE, SHARE_ALL);
    a.opens.open("f", 1, &deleting, Intent::default()).unwrap();
    b.opens.open("f", 2, &stat, Intent::default()).unwrap();
    deleting.delete_pending = true;
    a.opens.update("f", 1, &deleting).unwrap();
    let marked = Instant::now();
    let revision = b.revision();
    // The watch tells b within its delay; until then a stat open may pass, as docs say.
    let mut id = 10;
    while refusal(b.opens.open("f", id, &stat, Intent::default())) != Some(Refusal::DeletePending) {
        b.opens.close("f", id).unwrap();
        id += 1;
        assert!(
            marked.elapsed() < LATE,
            "b never learnt of the pending delete"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    eprintln!(
        "the pending delete reached b's watch in {:?}",
        marked.elapsed()
    );
    assert_eq!(b.revision(), revision, "b's stat opens wrote to etcd");
    // Another file is not refused, and the mark goes with a's close.
    b.opens.open("g", 3, &stat, Intent::default()).unwrap();
    a.opens.close("f", 1).unwrap();
    let closed = Instant::now();
    while b.opens.open("f", 4, &stat, Intent::default()).is_err() {
        assert!(closed.elapsed() < LATE, "the mark outlived a's close");
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(b.membership);
}

#[test]
fn an_unrecorded_open_that_carries_a_delete_pending_mark_is_recorded_first() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/st4/", "a", Duration::from_secs(3));
    let b = watching_node(&etcd, "/st4/", "b");
    let mut stat = b.record(READ_ATTRIBUTES, SHARE_ALL);
    b.opens.open("f", 1, &stat, Intent::default()).unwrap();
    assert_eq!(b.records(), 0);
    // b's marking open closed while this one remains: the server carries the mark to it.
    stat.delete_pending = true;
    b.opens.update("f", 1, &stat).unwrap();
    assert_eq!(b.records(), 1);
    assert_eq!(
        refusal(a.opens.open(
            "f",
            2,
            &a.record(READ_ATTRIBUTES, SHARE_ALL),
            Intent::default()
        )),
        Some(Refusal::DeletePending)
    );
    b.opens.close("f", 1).unwrap();
    assert_eq!(
        b.records(),
        0,
        "the recorded open's close deletes its record"
    );
    a.opens
        .open(
            "f",
            2,
            &a.record(READ_ATTRIBUTES, SHARE_ALL),
            Intent::default(),
        )
        .unwrap();
}

/// A node as `serve` builds it: it follows `files/` and other nodes' orders, and leaves its
/// plain opens' records behind for reuse (docs/cluster.md "Retained records").
fn retaining_node(etcd: &EtcdCluster, prefix: &str, name: &str) -> Watching {
    let plain = watching_node(etcd, prefix, name);
    let opens = plain.opens.with_retention(16);
    opens.on_break(Arc::new(|_| {}));
    Watching { opens, ..plain }
}

/// smbclient's listing opens each directory for FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES,
/// sharing read and write.
const LIST: u32 = 0x81;
const SHARE_RW: u32 = 0x3;

#[test]
fn a_plain_open_reopened_on_its_node_makes_no_etcd_write() {
    let etcd = EtcdCluster::start(1);
    let a = retaining_node(&etcd, "/rt1/", "a");
    let list = a.record(LIST, SHARE_RW);
    a.opens.open("d", 1, &list, Intent::default()).unwrap();
    a.opens.close("d", 1).unwrap();
    assert_eq!(a.records(), 1, "the closed open's record stays, retained");
    let before = a.revision();
    for id in 2..12 {
        a.opens.open("d", id, &list, Intent::default()).unwrap();
        a.opens.close("d", id).unwrap();
    }
    assert_eq!(a.revision(), before, "reopening wrote to etcd");
    // Two at once: the second has a record of its own, as any open.
    a.opens.open("d", 20, &list, Intent::default()).unwrap();
    a.opens.open("d", 21, &list, Intent::default()).unwrap();
    assert_eq!(a.records(), 2);
    a.opens.close("d", 20).unwrap();
    a.opens.close("d", 21).unwrap();
    // Another record (more access) is written; an open with an overwrite is never reused.
    let before = a.revision();
    a.opens
        .open(
            "d",
            22,
            &a.record(LIST | WRITE, SHARE_RW),
            Intent::default(),
        )
        .unwrap();
    assert!(a.revision() > before);
    a.opens.close("d", 22).unwrap();
    let before = a.revision();
    let overwrite = Intent {
        overwrite: true,
        ..Intent::default()
    };
    a.opens.open("d", 23, &list, overwrite).unwrap();
    assert!(a.revision() > before, "an overwrite took a retained record");
    a.opens.close("d", 23).unwrap();
    drop(a.membership);
}

#[test]
fn another_node_s_conflicting_open_gets_a_retained_record_released() {
    let etcd = EtcdCluster::start(1);
    let a = retaining_node(&etcd, "/rt2/", "a");
    let b = retaining_node(&etcd, "/rt2/", "b");
    let list = a.record(LIST, SHARE_RW);
    a.opens.open("d", 1, &list, Intent::default()).unwrap();
    a.opens.close("d", 1).unwrap();
    // b's open that shares nothing meets a's retained record: released, then admitted.
    let exclusive = b.record(READ | DELETE, 0);
    let started = Instant::now();
    b.opens.open("d", 2, &exclusive, Intent::default()).unwrap();
    eprintln!("a retained record was released in {:?}", started.elapsed());
    assert_eq!(b.records(), 1, "a's record is gone, b's is there");
    // a's next open goes to etcd again and meets b's.
    assert_eq!(
        refusal(a.opens.open("d", 3, &list, Intent::default())),
        Some(Refusal::SharingViolation)
    );
    b.opens.close("d", 2).unwrap();
    // While a really has the directory open through a reused record, b is refused, and the
    // record, unmarked, goes with a's close.
    a.opens.open("d", 4, &list, Intent::default()).unwrap();
    a.opens.close("d", 4).unwrap();
    a.opens.open("d", 5, &list, Intent::default()).unwrap();
    assert_eq!(
        refusal(b.opens.open("d", 6, &exclusive, Intent::default())),
        Some(Refusal::SharingViolation)
    );
    a.opens.close("d", 5).unwrap();
    assert_eq!(a.records(), 0, "the unmarked record outlived its open");
    b.opens.open("d", 6, &exclusive, Intent::default()).unwrap();
    drop(a.membership);
    drop(b.membership);
}

#[test]
fn a_delete_pending_mark_releases_the_retained_records_it_did_not_conflict_with() {
    let etcd = EtcdCluster::start(1);
    let a = retaining_node(&etcd, "/rt3/", "a");
    let b = retaining_node(&etcd, "/rt3/", "b");
    let shared = a.record(LIST, SHARE_ALL);
    a.opens.open("d", 1, &shared, Intent::default()).unwrap();
    a.opens.close("d", 1).unwrap();
    // b's DELETE open shares with the retained record and is admitted beside it.
    let mut deleting = b.record(DELETE, SHARE_ALL);
    b.opens.open("d", 2, &deleting, Intent::default()).unwrap();
    assert_eq!(b.records(), 2);
    deleting.delete_pending = true;
    b.opens.update("d", 2, &deleting).unwrap();
    assert_eq!(b.records(), 1, "the retained record outlived the mark");
    // a's next open cannot take the record it retained: it meets the mark in etcd.
    assert_eq!(
        refusal(a.opens.open("d", 3, &shared, Intent::default())),
        Some(Refusal::DeletePending)
    );
    drop(a.membership);
    drop(b.membership);
}

#[test]
fn a_retained_record_costs_no_caching_elsewhere() {
    let etcd = EtcdCluster::start(1);
    let a = retaining_node(&etcd, "/rt4/", "a");
    let b = retaining_node(&etcd, "/rt4/", "b");
    let list = a.record(LIST, SHARE_ALL);
    a.opens.open("f", 1, &list, Intent::default()).unwrap();
    a.opens.close("f", 1).unwrap();
    // Beside a live open without caching b keeps no write caching (MS-FSA 2.1.5.18); beside
    // a closed open's retained record it keeps it all, once a released it.
    let leased = OpenRecord {
        caching: 0x7,
        lease: Some([5; 32]),
        ..b.record(READ | WRITE, SHARE_ALL)
    };
    let admitted = b.opens.open("f", 2, &leased, Intent::default()).unwrap();
    assert_eq!(admitted.keep & 0x7, 0x7);
    assert_eq!(b.records(), 1);
    b.opens.close("f", 2).unwrap();
    // A read-only open without caching is not held back by it: the record stays.
    a.opens.open("f", 3, &list, Intent::default()).unwrap();
    a.opens.close("f", 3).unwrap();
    b.opens
        .open("f", 4, &b.record(READ, SHARE_ALL), Intent::default())
        .unwrap();
    assert_eq!(b.records(), 2);
    drop(a.membership);
    drop(b.membership);
}
