//! The cluster-wide byte-range lock table against a real etcd 3.4 (issue 18 item 3): two
//! "nodes" in one test, each with its own connection, membership lease and lock table.

mod etcd;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use etcd::EtcdCluster;
use smb3d_cluster::{Etcd, EtcdLocks, Membership};
use smb3d_state::{ByteRange, ClusterLocks, LockError};

struct Node {
    locks: EtcdLocks,
    membership: Membership,
}

fn node(etcd: &EtcdCluster, prefix: &str, name: &str, ttl: Duration) -> Node {
    let cluster = Arc::new(Etcd::connect(&etcd.endpoints, prefix).unwrap());
    let info = etcd::node_info(name);
    let membership = Membership::join(cluster.clone(), &info, ttl).unwrap();
    Node {
        locks: EtcdLocks::new(cluster, name, &membership).unwrap(),
        membership,
    }
}

fn x(offset: u64, length: u64) -> ByteRange {
    ByteRange {
        offset,
        length,
        exclusive: true,
    }
}

fn s(offset: u64, length: u64) -> ByteRange {
    ByteRange {
        offset,
        length,
        exclusive: false,
    }
}

/// Whether the lock was granted; etcd failing is a failed test.
fn granted(result: Result<(), LockError>) -> bool {
    match result {
        Ok(()) => true,
        Err(LockError::Conflict) => false,
        Err(LockError::Unavailable(e)) => panic!("etcd: {e}"),
    }
}

/// How long after its deadline a test waits for something etcd does on a timer (a lease's
/// expiry, a watch's event) before it calls it never done: CI's loaded cores delay it.
const LATE: Duration = Duration::from_secs(20);

/// Whether `future` resolves within `limit`.
fn resolves(future: smb3d_state::Released, limit: Duration) -> bool {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(async { tokio::time::timeout(limit, future).await.is_ok() })
}

/// Waits until `cond` holds (a watch's news arriving), at most `LATE`.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < LATE, "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn locks_conflict_both_ways_and_shared_ones_coexist() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/l1/", "a", Duration::from_secs(3));
    let b = node(&etcd, "/l1/", "b", Duration::from_secs(3));
    assert!(granted(a.locks.lock("f", 1, x(0, 10))));
    assert!(!granted(b.locks.lock("f", 2, x(5, 1))));
    assert!(
        !granted(b.locks.lock("f", 2, s(9, 1))),
        "shared under exclusive"
    );
    assert!(granted(b.locks.lock("f", 2, x(10, 10))), "beside it");
    assert!(granted(b.locks.lock("g", 2, x(0, 10))), "another file");
    assert!(
        !granted(a.locks.lock("f", 1, s(15, 1))),
        "and the other way"
    );
    // Shared locks of both nodes coexist; an exclusive one meets them.
    assert!(granted(a.locks.lock("f", 1, s(100, 10))));
    assert!(granted(b.locks.lock("f", 2, s(105, 10))));
    assert!(!granted(a.locks.lock("f", 1, x(108, 1))));
    // Zero-length: a point conflicts only with a range strictly around it (MS-FSA, as the
    // server's own table).
    assert!(granted(a.locks.lock("f", 1, x(1000, 0))));
    assert!(granted(b.locks.lock("f", 2, x(1000, 1))));
    assert!(granted(b.locks.lock("f", 2, x(1000, 0))));
    assert!(!granted(b.locks.lock("f", 2, x(999, 2))));
    // Refused locks left nothing behind, and an unlock frees the range.
    a.locks.unlock("f", 1, x(0, 10)).unwrap();
    assert!(granted(b.locks.lock("f", 2, x(5, 1))));
    // A close releases every lock of the open; only an open holding some needs it.
    assert!(b.locks.holds_any(2) && !b.locks.holds_any(1) && !b.locks.holds_any(9));
    b.locks.release("f", 2).unwrap();
    b.locks.release("g", 2).unwrap();
    assert!(!b.locks.holds_any(2));
    assert!(granted(a.locks.lock("f", 3, x(0, 2000))));
    assert!(a.locks.holds_any(3));
}

#[test]
fn reads_and_writes_meet_other_nodes_locks_without_asking_etcd() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/io/", "a", Duration::from_secs(3));
    let b = node(&etcd, "/io/", "b", Duration::from_secs(3));
    assert!(!b.locks.any_held());
    assert!(granted(a.locks.lock("f", 1, x(0, 10))));
    assert!(granted(a.locks.lock("f", 1, s(20, 10))));
    // Each lock reaches b in its own watch event: wait for the later one too.
    eventually("b learns a's locks", || {
        b.locks.stops_io("f", 5, 1, false) && b.locks.stops_io("f", 20, 5, true)
    });
    assert!(b.locks.any_held());
    assert!(b.locks.stops_io("f", 5, 1, true));
    assert!(
        !b.locks.stops_io("f", 20, 5, false),
        "a shared lock lets reads by"
    );
    assert!(b.locks.stops_io("f", 20, 5, true), "but no write");
    assert!(!b.locks.stops_io("f", 10, 10, true));
    assert!(!b.locks.stops_io("g", 5, 1, true));
    assert!(
        !a.locks.stops_io("f", 5, 1, true),
        "a node's own locks are its table's"
    );
    a.locks.release("f", 1).unwrap();
    eventually("b learns they are gone", || !b.locks.any_held());
    assert!(!b.locks.stops_io("f", 5, 1, true));
}

#[test]
fn a_waiting_lock_is_told_of_the_other_node_s_unlock() {
    let etcd = EtcdCluster::start(1);
    let a = Arc::new(node(&etcd, "/wait/", "a", Duration::from_secs(3)));
    let b = node(&etcd, "/wait/", "b", Duration::from_secs(3));
    assert!(granted(a.locks.lock("f", 1, x(0, 10))));
    let released = b.locks.released("f");
    assert!(!granted(b.locks.lock("f", 2, x(0, 1))));
    // Other files' news and a's new locks are not a release of this one.
    let other = b.locks.released("f");
    assert!(granted(a.locks.lock("g", 1, x(0, 10))));
    a.locks.unlock("g", 1, x(0, 10)).unwrap();
    assert!(granted(a.locks.lock("f", 1, x(50, 10))));
    assert!(
        !resolves(other, Duration::from_millis(700)),
        "woken while the lock is held"
    );
    let unlocker = {
        let a = a.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            a.locks.unlock("f", 1, x(0, 10)).unwrap();
        })
    };
    assert!(
        resolves(released, LATE),
        "the unlock on the other node wakes the waiter"
    );
    unlocker.join().unwrap();
    assert!(granted(b.locks.lock("f", 2, x(0, 1))));
}

#[test]
fn a_waiting_lock_is_told_of_the_other_node_s_death() {
    let etcd = EtcdCluster::start(1);
    let ttl = Duration::from_secs(1);
    let a = node(&etcd, "/death/", "a", ttl);
    let b = node(&etcd, "/death/", "b", ttl);
    assert!(granted(a.locks.lock("f", 1, x(0, 10))));
    let released = b.locks.released("f");
    assert!(!granted(b.locks.lock("f", 2, x(0, 1))));
    let dead_at = Instant::now();
    // Dropped without leaving: its keepalives stop, as when the process is killed.
    drop(a);
    assert!(
        resolves(released, ttl + LATE),
        "the lease's end wakes the waiter"
    );
    assert!(dead_at.elapsed() >= ttl, "woken before the lease could end");
    assert!(granted(b.locks.lock("f", 2, x(0, 1))));
    drop(b.membership);
}

#[test]
fn racing_exclusive_locks_are_never_both_granted() {
    let etcd = EtcdCluster::start(1);
    let a = Arc::new(node(&etcd, "/race/", "a", Duration::from_secs(3)));
    let b = Arc::new(node(&etcd, "/race/", "b", Duration::from_secs(3)));
    for round in 0..40u64 {
        let file = format!("f{round}");
        let start = Arc::new(Barrier::new(2));
        let racers: Vec<_> = [
            (a.clone(), 2 * round, x(0, 10)),
            (b.clone(), 2 * round + 1, x(9, 1)),
        ]
        .into_iter()
        .map(|(n, open, range)| {
            let (start, file) = (start.clone(), file.clone());
            std::thread::spawn(move || {
                start.wait();
                granted(n.locks.lock(&file, open, range))
            })
        })
        .collect();
        let won: Vec<bool> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        assert_eq!(
            won.iter().filter(|w| **w).count(),
            1,
            "round {round}: exactly one exclusive lock is granted, {won:?}"
        );
    }
}

#[test]
fn a_node_cut_off_from_etcd_grants_no_lock() {
    let mut etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/cut/", "a", Duration::from_secs(1));
    assert!(granted(a.locks.lock("f", 1, x(0, 1))));
    etcd.kill_member(0);
    let started = Instant::now();
    match a.locks.lock("f", 1, x(1, 1)) {
        Err(LockError::Unavailable(_)) => {}
        other => panic!("a lock without etcd: {other:?}"),
    }
    assert!(started.elapsed() < LATE);
    drop(a.membership);
}
