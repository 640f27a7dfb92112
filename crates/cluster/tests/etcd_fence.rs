//! The cluster dialect fence against a real etcd 3.4 (issue 18 item 5, MS-SMB2 3.3.5.7): the
//! lowest max dialect of the live nodes, learnt from the `nodes/` watch, rising by itself
//! when the last node of a lower dialect leaves.

mod etcd;

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd::EtcdCluster;
use smb3d_cluster::{Etcd, Membership, NodeInfo, follow_dialects};
use smb3d_state::ClusterDialect;

const TTL: Duration = Duration::from_secs(3);
/// How long a test waits for the watch's news before it calls it never coming: CI's loaded
/// cores delay it.
const LATE: Duration = Duration::from_secs(20);

fn parse(dialect: &str) -> Option<u16> {
    match dialect {
        "3.0.2" => Some(0x0302),
        "3.1.1" => Some(0x0311),
        _ => None,
    }
}

fn join(etcd: &EtcdCluster, prefix: &str, name: &str, dialect: &str) -> (Arc<Etcd>, Membership) {
    let cluster = Arc::new(Etcd::connect(&etcd.endpoints, prefix).unwrap());
    let info = NodeInfo {
        max_dialect: dialect.to_owned(),
        ..etcd::node_info(name)
    };
    let membership = Membership::join(cluster.clone(), &info, TTL).unwrap();
    (cluster, membership)
}

fn becomes(fence: &ClusterDialect, want: u16) {
    let deadline = Instant::now() + LATE;
    while fence.max() != want {
        assert!(
            Instant::now() < deadline,
            "the fence stayed at {:#06x}, not {want:#06x}",
            fence.max()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_fence_is_the_lowest_live_node_and_rises_when_it_leaves() {
    let etcd = EtcdCluster::start(1);
    let (b_etcd, _b) = join(&etcd, "/fence/", "b", "3.1.1");
    let fence = Arc::new(ClusterDialect::new(0x0311));
    let _watch = follow_dialects(b_etcd, fence.clone(), 0x0311, parse).unwrap();
    assert_eq!(fence.max(), 0x0311, "b alone");
    let (_a_etcd, a) = join(&etcd, "/fence/", "a", "3.0.2");
    becomes(&fence, 0x0302);
    assert_eq!(fence.admit(0x0311, false), Err(0x0302));
    // A node of an unknown dialect does not lower it; one of another cluster is not seen.
    let (_c_etcd, _c) = join(&etcd, "/fence/", "c", "9.9");
    let (_d_etcd, _d) = join(&etcd, "/other/", "d", "3.0.2");
    a.leave().unwrap();
    becomes(&fence, 0x0311);
    // Rolling upgrade: a rejoins upgraded, and nothing moves.
    let (_a_etcd, _a) = join(&etcd, "/fence/", "a", "3.1.1");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(fence.max(), 0x0311);
}

#[test]
fn a_node_that_dies_lowers_the_fence_no_longer_once_its_lease_ran_out() {
    let etcd = EtcdCluster::start(1);
    let (b_etcd, _b) = join(&etcd, "/dies/", "b", "3.1.1");
    let (a_etcd, a) = join(&etcd, "/dies/", "a", "3.0.2");
    let fence = Arc::new(ClusterDialect::new(0x0311));
    let _watch = follow_dialects(b_etcd, fence.clone(), 0x0311, parse).unwrap();
    assert_eq!(fence.max(), 0x0302, "read at start, before any event");
    // Killed: no revoke, its keepalives stop; the key goes when the lease runs out.
    drop(a);
    drop(a_etcd);
    becomes(&fence, 0x0311);
}
