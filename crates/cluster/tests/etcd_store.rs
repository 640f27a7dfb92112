//! The etcd state store against a real etcd 3.4 (issue 18 item 4): the conformance suite that
//! DiskStore and MemoryStore pass, compare-and-swap between nodes, the watch-fed cache, and
//! node membership through etcd leases.

mod etcd;

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd::EtcdCluster;
use smb3d_cluster::{Etcd, EtcdStore, Membership, NodeInfo, members};
use smb3d_state::{RecordGuard, StateStore, Table};

const T: Table = Table::PersistentOpens;

/// A store on an etcd of its own, which lives as long as the store.
#[derive(Debug)]
struct OwnEtcd {
    store: EtcdStore,
    _etcd: EtcdClusterHandle,
}

struct EtcdClusterHandle(#[allow(dead_code)] EtcdCluster);

impl std::fmt::Debug for EtcdClusterHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("etcd")
    }
}

impl StateStore for OwnEtcd {
    fn lock(&self, table: Table, id: u64) -> RecordGuard<'_> {
        self.store.lock(table, id)
    }
    fn put(&self, held: &RecordGuard<'_>, bytes: &[u8]) -> io::Result<()> {
        self.store.put(held, bytes)
    }
    fn remove(&self, held: &RecordGuard<'_>) -> io::Result<()> {
        self.store.remove(held)
    }
    fn load(&self, table: Table) -> io::Result<Vec<(u64, Vec<u8>)>> {
        self.store.load(table)
    }
    fn max_record(&self) -> usize {
        self.store.max_record()
    }
}

fn connect(etcd: &EtcdCluster, prefix: &str) -> Arc<Etcd> {
    Arc::new(Etcd::connect(&etcd.endpoints, prefix).unwrap())
}

fn own_store() -> Arc<dyn StateStore> {
    let etcd = EtcdCluster::start(1);
    let store = EtcdStore::new(connect(&etcd, "/smb3d-test/")).unwrap();
    Arc::new(OwnEtcd {
        store,
        _etcd: EtcdClusterHandle(etcd),
    })
}

mod conformance {
    smb3d_state::store_conformance_tests!(super::own_store);
}

/// Waits (up to 10 s) until `check` holds.
fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How long after its deadline a test waits for something etcd does on a timer (a lease's
/// expiry, a keepalive's answer) before it calls it never done: CI's loaded cores delay both.
const LATE: Duration = Duration::from_secs(20);

#[test]
fn a_node_whose_knowledge_is_stale_cannot_take_a_record() {
    let etcd = EtcdCluster::start(1);
    let a = EtcdStore::without_watch(connect(&etcd, "/c/"));
    let b = EtcdStore::without_watch(connect(&etcd, "/c/"));
    let c = EtcdStore::without_watch(connect(&etcd, "/c/"));
    a.put(&a.lock(T, 1), b"a1").unwrap();
    let refused = b.put(&b.lock(T, 1), b"b1").unwrap_err();
    assert_eq!(refused.kind(), io::ErrorKind::AlreadyExists, "{refused}");
    assert!(
        c.remove(&c.lock(T, 1)).is_err(),
        "c does not know a1 either"
    );
    // A refused write learns what the record is now: b may write over a1 knowingly.
    b.put(&b.lock(T, 1), b"b1").unwrap();
    assert!(a.put(&a.lock(T, 1), b"a2").is_err(), "a's a1 is stale now");
    assert_eq!(a.load(T).unwrap(), vec![(1, b"b1".to_vec())]);
    a.remove(&a.lock(T, 1)).unwrap();
    assert!(b.load(T).unwrap().is_empty());
    assert!(c.load(T).unwrap().is_empty());
}

#[test]
fn two_nodes_taking_one_new_record_at_once_cannot_both_succeed() {
    let etcd = EtcdCluster::start(1);
    for round in 0..20u64 {
        let a = Arc::new(EtcdStore::without_watch(connect(&etcd, "/race/")));
        let b = Arc::new(EtcdStore::without_watch(connect(&etcd, "/race/")));
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let take = |store: Arc<EtcdStore>, barrier: Arc<std::sync::Barrier>| {
            std::thread::spawn(move || {
                barrier.wait();
                store.put(&store.lock(T, round), b"mine").is_ok()
            })
        };
        let (ta, tb) = (take(a, barrier.clone()), take(b, barrier));
        let won = [ta.join().unwrap(), tb.join().unwrap()];
        assert_eq!(
            won.iter().filter(|w| **w).count(),
            1,
            "round {round}: {won:?}"
        );
    }
}

#[test]
fn a_watched_store_learns_other_nodes_writes_and_deletes() {
    let etcd = EtcdCluster::start(1);
    let writer = EtcdStore::without_watch(connect(&etcd, "/w/"));
    writer.put(&writer.lock(T, 3), b"before").unwrap();
    let watcher = EtcdStore::new(connect(&etcd, "/w/")).unwrap();
    assert_eq!(watcher.cached(T, 3).as_deref(), Some(&b"before"[..]));
    writer.put(&writer.lock(T, 3), b"after").unwrap();
    writer.put(&writer.lock(T, 4), b"new").unwrap();
    eventually("the watcher sees record 4", || {
        watcher.cached(T, 4).as_deref() == Some(&b"new"[..])
    });
    assert_eq!(watcher.cached(T, 3).as_deref(), Some(&b"after"[..]));
    // Knowing the latest revision, the watcher may change the record without loading.
    watcher.put(&watcher.lock(T, 3), b"watcher's").unwrap();
    writer.remove(&writer.lock(T, 4)).unwrap();
    eventually("the watcher sees record 4 go", || {
        watcher.cached(T, 4).is_none()
    });
    let other = EtcdStore::without_watch(connect(&etcd, "/elsewhere/"));
    other.put(&other.lock(T, 5), b"another cluster").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        watcher.cached(T, 5),
        None,
        "another prefix is another cluster"
    );
}

#[test]
fn records_over_etcd_s_limit_are_refused_before_reaching_it() {
    let etcd = EtcdCluster::start(1);
    let store = EtcdStore::new(connect(&etcd, "/big/")).unwrap();
    let max = store.max_record();
    assert_eq!(max, smb3d_cluster::ETCD_MAX_RECORD);
    let err = store.put(&store.lock(T, 1), &vec![0; max + 1]).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

fn node(name: &str) -> NodeInfo {
    NodeInfo {
        addresses: vec!["127.0.0.21".to_owned()],
        ..etcd::node_info(name)
    }
}

#[test]
fn a_member_stays_while_it_renews_its_lease_and_goes_when_it_stops() {
    let etcd = EtcdCluster::start(1);
    let ttl = Duration::from_secs(2);
    let cluster = connect(&etcd, "/m/");
    let one = Membership::join(cluster.clone(), &node("one"), ttl).unwrap();
    let two = Membership::join(cluster.clone(), &node("two"), ttl).unwrap();
    let taken = Membership::join(cluster.clone(), &node("one"), ttl).unwrap_err();
    assert_eq!(taken.kind(), io::ErrorKind::AddrInUse, "{taken}");
    std::thread::sleep(ttl * 2);
    assert!(one.healthy() && two.healthy());
    let names = |nodes: Vec<NodeInfo>| nodes.into_iter().map(|n| n.name).collect::<Vec<_>>();
    assert_eq!(names(members(&cluster).unwrap()), ["one", "two"]);
    assert_eq!(members(&cluster).unwrap()[0], node("one"));
    // A node that stops renewing (killed) is gone once its lease runs out; one that leaves,
    // at once.
    let stopped = Instant::now();
    drop(one);
    two.leave().unwrap();
    assert_eq!(names(members(&cluster).unwrap()), ["one"]);
    eventually("the killed node's lease runs out", || {
        members(&cluster).unwrap().is_empty()
    });
    assert!(
        stopped.elapsed() >= Duration::from_secs(1),
        "{:?}",
        stopped.elapsed()
    );
    Membership::join(cluster, &node("one"), ttl).unwrap();
}

#[test]
fn a_node_cut_off_from_etcd_knows_it_within_its_ttl() {
    let mut etcd = EtcdCluster::start(1);
    let ttl = Duration::from_secs(2);
    let member = Membership::join(connect(&etcd, "/cut/"), &node("n"), ttl).unwrap();
    etcd.kill_member(0);
    let cut = Instant::now();
    // The bound only ends a test whose node never learns: how late after the TTL a loaded
    // machine's timers and etcd answer has no bound worth asserting.
    let deadline = cut + ttl + LATE;
    while member.healthy() {
        assert!(
            Instant::now() < deadline,
            "still healthy {:?} after the cut",
            cut.elapsed()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        cut.elapsed() >= ttl - Duration::from_millis(700),
        "{:?}",
        cut.elapsed()
    );
}

#[test]
fn a_node_learns_that_its_lease_was_revoked() {
    let etcd = EtcdCluster::start(1);
    let cluster = connect(&etcd, "/revoked/");
    let ttl = Duration::from_secs(3);
    let member = Membership::join(cluster.clone(), &node("n"), ttl).unwrap();
    let lease = member.lease();
    cluster
        .run(move |mut client| async move { client.lease_revoke(lease).await })
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let learnt = runtime.block_on(async { tokio::time::timeout(ttl + LATE, member.lost()).await });
    assert!(
        learnt.is_ok(),
        "the node never learnt its lease was revoked"
    );
    assert!(!member.healthy());
    assert!(members(&cluster).unwrap().is_empty());
}

fn member(etcd: &Arc<Etcd>, name: &str) -> smb3d_cluster::Membership {
    let info = etcd::node_info(name);
    smb3d_cluster::Membership::join(etcd.clone(), &info, Duration::from_secs(1)).unwrap()
}

#[test]
fn a_live_node_s_records_are_its_own_and_a_dead_node_s_are_adopted_once() {
    let etcd = EtcdCluster::start(1);
    let (ea, eb) = (connect(&etcd, "/own/"), connect(&etcd, "/own/"));
    let a_lease = member(&ea, "a");
    let _b_lease = member(&eb, "b");
    let a = EtcdStore::new(ea).unwrap().owned_by("a");
    let b = EtcdStore::new(eb).unwrap().owned_by("b");
    a.put(&a.lock(T, 1), b"a's").unwrap();
    b.put(&b.lock(T, 2), b"b's").unwrap();
    // b holds its own record already; a's is a live node's.
    assert!(b.load(T).unwrap().is_empty());
    // A restarted b (a new process under its name) finds its own record, not a's.
    let b_again = EtcdStore::new(connect(&etcd, "/own/"))
        .unwrap()
        .owned_by("b");
    assert_eq!(b_again.load(T).unwrap(), vec![(2, b"b's".to_vec())]);
    drop(b_again);
    drop(a_lease);
    let dead_at = Instant::now();
    loop {
        let adopted = b.load(T).unwrap();
        if !adopted.is_empty() {
            assert_eq!(adopted, vec![(1, b"a's".to_vec())]);
            break;
        }
        assert!(dead_at.elapsed() < LATE, "a's record was never adopted");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(b.load(T).unwrap().is_empty(), "adopted once");
    // The record is b's now: a coming back does not take it again.
    let _a_lease = member(&connect(&etcd, "/own/"), "a");
    let a = EtcdStore::new(connect(&etcd, "/own/"))
        .unwrap()
        .owned_by("a");
    assert!(a.load(T).unwrap().is_empty());
    b.put(&b.lock(T, 1), b"b's now").unwrap();
}
