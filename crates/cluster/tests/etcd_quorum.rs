//! etcd faults against a real three-member etcd 3.4 (issue 18 item 8, docs/cluster.md
//! "Failure table"): losing one member changes nothing a node's callers see; losing quorum
//! refuses new opens and locks promptly, lets closes answer and keeps the node's lease, and
//! service resumes by itself when quorum returns.

mod etcd;

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd::EtcdCluster;
use smb3d_cluster::{Etcd, EtcdLocks, EtcdOpens, Membership};
use smb3d_state::{
    ByteRange, ClusterLocks, ClusterOpens, Intent, LockError, OpenError, OpenRecord, Refusal,
};

const READ: u32 = 0x1;
const WRITE: u32 = 0x2;
const SHARE_ALL: u32 = 0x7;

/// How long after its deadline a test waits for something etcd does on a timer (an
/// election, a lease's renewal) before it calls it never done: CI's loaded cores delay it.
const LATE: Duration = Duration::from_secs(30);

struct Node {
    opens: EtcdOpens,
    locks: EtcdLocks,
    membership: Membership,
}

fn node(etcd: &EtcdCluster, prefix: &str, name: &str) -> Node {
    let cluster = Arc::new(Etcd::connect(&etcd.endpoints, prefix).unwrap());
    let info = etcd::node_info(name);
    let membership = Membership::join(cluster.clone(), &info, Duration::from_secs(2)).unwrap();
    Node {
        opens: EtcdOpens::new(cluster.clone(), name, &membership),
        locks: EtcdLocks::new(cluster, name, &membership).unwrap(),
        membership,
    }
}

fn record(access: u32, share: u32) -> OpenRecord {
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

fn exclusive(offset: u64) -> ByteRange {
    ByteRange {
        offset,
        length: 1,
        exclusive: true,
    }
}

/// The answer to an open and how long it took.
fn timed<T>(call: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let answer = call();
    (answer, started.elapsed())
}

/// A node's view while a member is lost: every call answers as with all three, and none
/// waits for the lost member (a dead endpoint must not stall calls). Returns the slowest.
fn nothing_changes(a: &Node, b: &Node, round: u64) -> Duration {
    let mut slowest = Duration::ZERO;
    for i in 0..6 {
        let id = 100 * round + i;
        let (refused, took) = timed(|| {
            b.opens
                .open("held", id, &record(READ, SHARE_ALL), Intent::default())
        });
        slowest = slowest.max(took);
        assert!(
            matches!(refused, Err(OpenError::Refused(Refusal::SharingViolation))),
            "round {round}/{i}: {refused:?}"
        );
        let (opened, took) = timed(|| {
            a.opens
                .open("free", id, &record(READ, SHARE_ALL), Intent::default())
        });
        slowest = slowest.max(took);
        opened.unwrap();
        let (closed, took) = timed(|| a.opens.close("free", id));
        slowest = slowest.max(took);
        closed.unwrap();
        let (conflict, took) = timed(|| b.locks.lock("held", id, exclusive(0)));
        slowest = slowest.max(took);
        assert!(matches!(conflict, Err(LockError::Conflict)), "{conflict:?}");
        assert!(a.membership.healthy() && b.membership.healthy());
    }
    slowest
}

#[test]
fn one_member_lost_changes_nothing() {
    let mut etcd = EtcdCluster::start(3);
    let a = node(&etcd, "/member/", "a");
    let b = node(&etcd, "/member/", "b");
    a.opens
        .open("held", 1, &record(READ | WRITE, 0), Intent::default())
        .unwrap();
    a.locks.lock("held", 1, exclusive(0)).unwrap();
    // Frozen first (its connections hang), then killed (they are refused). Member 0 is the
    // first endpoint each node was given.
    etcd.pause_member(0);
    let paused = nothing_changes(&a, &b, 1);
    etcd.kill_member(0);
    let killed = nothing_changes(&a, &b, 2);
    eprintln!("slowest call: {paused:?} with member 0 frozen, {killed:?} with it killed");
    // A call that waited for the lost member would take etcd's request timeout (5 s).
    assert!(paused < Duration::from_secs(3), "{paused:?}");
    assert!(killed < Duration::from_secs(3), "{killed:?}");
}

#[test]
fn quorum_lost_refuses_promptly_keeps_the_lease_and_comes_back_by_itself() {
    let mut etcd = EtcdCluster::start(3);
    let a = node(&etcd, "/quorum/", "a");
    let b = node(&etcd, "/quorum/", "b");
    a.opens
        .open("held", 1, &record(READ | WRITE, 0), Intent::default())
        .unwrap();
    a.opens
        .open("closed", 2, &record(READ | WRITE, 0), Intent::default())
        .unwrap();
    a.locks.lock("closed", 2, exclusive(0)).unwrap();
    etcd.kill_member(1);
    etcd.kill_member(2);
    let lost = Instant::now();
    // The first refusal waits for a member that does not yet know it has no leader (1.5 s),
    // then for a leader to be elected (3 s: a lost leader is not a lost quorum); the next ones
    // are told at once.
    let (first, first_took) = timed(|| {
        a.opens
            .open("new", 3, &record(READ, SHARE_ALL), Intent::default())
    });
    assert!(matches!(first, Err(OpenError::Unavailable(_))), "{first:?}");
    let (again, again_took) = timed(|| {
        a.opens
            .open("new", 4, &record(READ, SHARE_ALL), Intent::default())
    });
    assert!(matches!(again, Err(OpenError::Unavailable(_))), "{again:?}");
    let (lock, lock_took) = timed(|| a.locks.lock("held", 1, exclusive(5)));
    assert!(matches!(lock, Err(LockError::Unavailable(_))), "{lock:?}");
    // A close answers (its records' deletes are kept to retry), and promptly.
    let (released, release_took) = timed(|| a.locks.release("closed", 2));
    released.unwrap();
    let (closed, close_took) = timed(|| a.opens.close("closed", 2));
    closed.unwrap();
    eprintln!(
        "without quorum: first refusal {first_took:?}, next {again_took:?}, lock {lock_took:?}, \
         release {release_took:?}, close {close_took:?}"
    );
    assert!(first_took < Duration::from_millis(5500), "{first_took:?}");
    for took in [again_took, lock_took, release_took, close_took] {
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
    // Longer than node_ttl without quorum: the node knows it is cut off, and keeps its lease.
    while lost.elapsed() < Duration::from_secs(4) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!a.membership.healthy());
    etcd.start_member(1);
    etcd.start_member(2);
    let back = Instant::now();
    while !(a.membership.healthy() && b.membership.healthy()) {
        assert!(back.elapsed() < LATE, "never healthy again");
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("healthy again {:?} after quorum returned", back.elapsed());
    // The lease lived through the outage: a's open still holds, its closed one is gone (the
    // delete was retried), and so are its locks; new opens and locks work again.
    let eventually = |what: &str, cond: &dyn Fn() -> bool| {
        while !cond() {
            assert!(back.elapsed() < LATE, "never: {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    eventually("the closed open's record deleted", &|| {
        b.opens
            .open("closed", 20, &record(READ | WRITE, 0), Intent::default())
            .is_ok()
    });
    eventually("the closed open's lock deleted", &|| {
        b.locks.lock("closed", 20, exclusive(0)).is_ok()
    });
    assert!(matches!(
        b.opens
            .open("held", 21, &record(READ, SHARE_ALL), Intent::default()),
        Err(OpenError::Refused(Refusal::SharingViolation))
    ));
    a.opens
        .open("new", 5, &record(READ, SHARE_ALL), Intent::default())
        .unwrap();
    a.locks.lock("held", 1, exclusive(5)).unwrap();
    assert!(matches!(
        b.locks.lock("held", 21, exclusive(5)),
        Err(LockError::Conflict)
    ));
}
