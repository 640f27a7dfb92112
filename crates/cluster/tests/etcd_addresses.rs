//! Public address assignment against a real etcd 3.4 (issue 18 item 4): two "nodes" in one
//! test split four addresses, one dies and the other takes them all, it comes back and they
//! split again, and no address is ever up on two nodes at once.

mod etcd;

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd::EtcdCluster;
use parking_lot::Mutex;
use smb3d_cluster::{AddressHost, Etcd, Membership, PublicAddresses, holders};

/// Which node has each address up, as the hosts would see it, and every moment where an
/// address came up while another node had it up.
#[derive(Default)]
struct Hosts {
    up: Mutex<BTreeMap<IpAddr, BTreeSet<String>>>,
    doubles: Mutex<Vec<String>>,
    /// Addresses brought up while the node's last view of the cluster did not name it.
    unannounced: Mutex<Vec<String>>,
    left: Mutex<Vec<(String, String)>>,
}

struct Host {
    node: String,
    hosts: Arc<Hosts>,
    /// The holders this node's host was last told of.
    view: Mutex<BTreeMap<IpAddr, String>>,
}

impl AddressHost for Host {
    fn bring_up(&self, ip: IpAddr) -> io::Result<()> {
        let mut up = self.hosts.up.lock();
        let on = up.entry(ip).or_default();
        if !on.is_empty() {
            self.hosts
                .doubles
                .lock()
                .push(format!("{ip} up on {} and {on:?}", self.node));
        }
        on.insert(self.node.clone());
        if self.view.lock().get(&ip) != Some(&self.node) {
            self.hosts
                .unannounced
                .lock()
                .push(format!("{ip} up on {} before its view named it", self.node));
        }
        Ok(())
    }

    fn cluster_read(&self, _live: &[String], holders: &BTreeMap<IpAddr, String>) {
        *self.view.lock() = holders.clone();
    }

    fn take_down(&self, ip: IpAddr) {
        if let Some(on) = self.hosts.up.lock().get_mut(&ip) {
            on.remove(&self.node);
        }
    }

    fn node_left(&self, name: &str) {
        self.hosts
            .left
            .lock()
            .push((self.node.clone(), name.to_owned()));
    }
}

const TTL: Duration = Duration::from_secs(1);

struct Node {
    addresses: PublicAddresses,
    _membership: Membership,
}

fn addresses() -> Vec<IpAddr> {
    (1..=4).map(|i| IpAddr::from([127, 0, 9, i])).collect()
}

fn node(etcd: &EtcdCluster, name: &str, hosts: &Arc<Hosts>) -> Node {
    let cluster = Arc::new(Etcd::connect(&etcd.endpoints, "/addr/").unwrap());
    let info = etcd::node_info(name);
    let deadline = Instant::now() + TTL * 3;
    let membership = loop {
        match Membership::join(cluster.clone(), &info, TTL) {
            Ok(m) => break m,
            // Its previous life's lease has not run out yet.
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("join {name}: {e}"),
        }
    };
    let host = Arc::new(Host {
        node: name.to_owned(),
        hosts: hosts.clone(),
        view: Mutex::default(),
    });
    Node {
        addresses: PublicAddresses::start(cluster, name, &membership, addresses(), host),
        _membership: membership,
    }
}

/// Waits (at most `within`) until every node holds its expected count, in etcd and up on its
/// host; returns how long it took.
fn settle(
    etcd: &Etcd,
    hosts: &Hosts,
    expected: &[(&Node, &str, usize)],
    within: Duration,
) -> Duration {
    let start = Instant::now();
    loop {
        let held = holders(etcd).unwrap();
        let up = hosts.up.lock().clone();
        let done = expected.iter().all(|(node, name, count)| {
            let in_etcd = held.values().filter(|h| h == name).count();
            let on_host = up.values().filter(|on| on.contains(*name)).count();
            node.addresses.held().len() == *count && in_etcd == *count && on_host == *count
        });
        if done {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "not settled within {within:?}: etcd {held:?}, hosts {up:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn two_nodes_split_four_addresses_and_take_over_a_dead_one_s() {
    let etcd = EtcdCluster::start(1);
    let view = Etcd::connect(&etcd.endpoints, "/addr/").unwrap();
    let hosts = Arc::new(Hosts::default());
    let a = node(&etcd, "a", &hosts);
    let b = node(&etcd, "b", &hosts);
    settle(
        &view,
        &hosts,
        &[(&a, "a", 2), (&b, "b", 2)],
        Duration::from_secs(10),
    );

    // Killed: its keepalives stop and its host's addresses vanish with it.
    drop(a);
    hosts.up.lock().values_mut().for_each(|on| {
        on.remove("a");
    });
    let took = settle(&view, &hosts, &[(&b, "b", 4)], TTL + Duration::from_secs(2));
    eprintln!("b served all four {took:?} after a died (node_ttl {TTL:?})");
    assert!(
        hosts
            .left
            .lock()
            .contains(&("b".to_owned(), "a".to_owned())),
        "b was not told that a left"
    );

    let a = node(&etcd, "a", &hosts);
    settle(
        &view,
        &hosts,
        &[(&a, "a", 2), (&b, "b", 2)],
        Duration::from_secs(10),
    );
    assert_eq!(*hosts.doubles.lock(), Vec::<String>::new());
    assert_eq!(*hosts.unannounced.lock(), Vec::<String>::new());
}
