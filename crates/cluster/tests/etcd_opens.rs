//! The cluster-wide open table against a real etcd 3.4 (issue 18 items 2-3): two "nodes" in
//! one test, each with its own connection and membership lease.

mod etcd;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use etcd::EtcdCluster;
use smb3d_cluster::{Etcd, EtcdOpens, Membership, NodeInfo};
use smb3d_state::{ClusterOpens, OpenError, OpenRecord, Refusal};

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
    let info = NodeInfo {
        name: name.to_owned(),
        addresses: Vec::new(),
        max_dialect: "3.1.1".into(),
        pid: std::process::id(),
        started: 0,
    };
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
        }
    }
}

fn refusal(result: Result<(), OpenError>) -> Option<Refusal> {
    match result {
        Ok(()) => None,
        Err(OpenError::Refused(why)) => Some(why),
        Err(OpenError::Unavailable(e)) => panic!("etcd: {e}"),
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
    a.opens.open("f", 1, &exclusive).unwrap();
    assert_eq!(
        refusal(b.opens.open("f", 2, &b.record(READ, SHARE_ALL))),
        Some(Refusal::SharingViolation)
    );
    // Another file, and an attribute-only open of this one, are not in the way.
    b.opens.open("g", 3, &b.record(READ, 0)).unwrap();
    b.opens.open("f", 4, &b.record(0x80, 0)).unwrap();
    // The refused open left nothing behind: a third node's reader is refused by a's open
    // only, and is let in once a closed.
    a.opens.close("f", 1).unwrap();
    b.opens.open("f", 2, &b.record(READ, SHARE_ALL)).unwrap();
    assert_eq!(
        refusal(a.opens.open("f", 5, &a.record(WRITE, SHARE_ALL))),
        None,
        "b shares everything"
    );
    assert_eq!(
        refusal(a.opens.open("f", 6, &a.record(READ, 0))),
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
                    refusal(n.opens.open(&file, id, &n.record(READ | WRITE | DELETE, 0))).is_none()
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
    a.opens.open("f", 1, &deleting).unwrap();
    b.opens.open("f", 2, &b.record(READ, SHARE_ALL)).unwrap();
    deleting.delete_pending = true;
    a.opens.update("f", 1, &deleting).unwrap();
    assert_eq!(
        refusal(b.opens.open("f", 3, &b.record(READ, SHARE_ALL))),
        Some(Refusal::DeletePending)
    );
    deleting.delete_pending = false;
    a.opens.update("f", 1, &deleting).unwrap();
    b.opens.open("f", 3, &b.record(READ, SHARE_ALL)).unwrap();
}

#[test]
fn a_dead_node_s_lease_releases_its_opens() {
    let etcd = EtcdCluster::start(1);
    let ttl = Duration::from_secs(1);
    let a = node(&etcd, "/dead/", "a", ttl);
    let b = node(&etcd, "/dead/", "b", ttl);
    a.opens.open("f", 1, &a.record(READ | WRITE, 0)).unwrap();
    let dead_at = Instant::now();
    // Dropped without leaving: its keepalives stop, as when the process is killed.
    drop(a);
    loop {
        match refusal(b.opens.open("f", 2, &b.record(READ, SHARE_ALL))) {
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
    a.opens.open("f", 1, &record).unwrap();
    a.opens.close("f", 1).unwrap();
    record.delete_pending = true;
    let refused = a.opens.update("f", 1, &record).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::NotFound);
    // Nothing came back: b's open is not told of a pending delete.
    b.opens.open("f", 2, &b.record(READ, 0)).unwrap();
}

#[test]
fn a_node_cut_off_from_etcd_grants_no_open() {
    let mut etcd = EtcdCluster::start(1);
    let ttl = Duration::from_secs(1);
    let a = node(&etcd, "/cut/", "a", ttl);
    a.opens.open("f", 1, &a.record(READ, SHARE_ALL)).unwrap();
    etcd.kill_member(0);
    let started = Instant::now();
    match a.opens.open("f", 2, &a.record(READ, SHARE_ALL)) {
        Err(OpenError::Unavailable(_)) => {}
        other => panic!("an open without etcd: {other:?}"),
    }
    assert!(started.elapsed() < LATE);
    drop(a.membership);
}
