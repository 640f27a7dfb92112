//! A killed node noticed through its liveness endpoint, against a real etcd 3.4 (issue 18
//! items 4 and 11, docs/cluster.md): an observer holding a connection to a node's endpoint
//! revokes the node's lease when the connection ends and a connect is refused, long before
//! the lease (10 s here) could run out; a connection that ends while the endpoint still
//! accepts, or an endpoint that refused from the first connect (a firewall), proves nothing
//! and leaves the lease alone. The endpoint itself holds at most `MAX_HELD` connections and
//! ignores what is sent to it.

mod etcd;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd::EtcdCluster;
use smb3d_cluster::{Etcd, Liveness, MAX_HELD, Membership, NodeInfo, bind_alive, members};

/// Far longer than any check below waits: a node gone within it was revoked, not timed out.
const TTL: Duration = Duration::from_secs(10);
/// How long a revocation may take on CI's loaded cores; still well before `TTL`.
const LATE: Duration = Duration::from_secs(5);

fn connect(etcd: &EtcdCluster, prefix: &str) -> Arc<Etcd> {
    Arc::new(Etcd::connect(&etcd.endpoints, prefix).unwrap())
}

/// Joins as `name` naming `alive` as its endpoint.
fn join(cluster: &Arc<Etcd>, name: &str, alive: Option<String>) -> Membership {
    let info = NodeInfo {
        alive,
        ..etcd::node_info(name)
    };
    Membership::join(cluster.clone(), &info, TTL).unwrap()
}

fn live(cluster: &Etcd, name: &str) -> bool {
    members(cluster).unwrap().iter().any(|n| n.name == name)
}

/// A node "victim" whose process is `endpoint`, which this test controls, and an observer
/// node: the victim's etcd, its membership and the observer's.
fn observed(
    etcd: &EtcdCluster,
    prefix: &str,
    endpoint: &TcpListener,
) -> (Arc<Etcd>, Membership, (Membership, Liveness)) {
    let cluster = connect(etcd, prefix);
    let alive = endpoint.local_addr().unwrap().to_string();
    let node = join(&cluster, "victim", Some(alive));
    let observer = connect(etcd, prefix);
    let own = bind_alive([127, 0, 0, 1].into()).unwrap();
    let membership = join(
        &observer,
        "observer",
        Some(own.local_addr().unwrap().to_string()),
    );
    let liveness = Liveness::start(observer, "observer", own);
    (cluster, node, (membership, liveness))
}

/// The next connection to `endpoint`, which must come within `LATE`.
fn accept(endpoint: &TcpListener) -> TcpStream {
    endpoint.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + LATE;
    loop {
        match endpoint.accept() {
            Ok((stream, _)) => return stream,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "the observer never connected");
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

#[test]
fn a_node_whose_endpoint_closes_and_refuses_is_revoked_at_once() {
    let etcd = EtcdCluster::start(1);
    let endpoint = TcpListener::bind("127.0.0.1:0").unwrap();
    let (cluster, _node, _observer) = observed(&etcd, "/alive-dead/", &endpoint);
    let held = accept(&endpoint);
    // The process dies: its kernel closes the connection and refuses connects to the port.
    let died = Instant::now();
    drop(endpoint);
    drop(held);
    while live(&cluster, "victim") {
        assert!(
            died.elapsed() < LATE,
            "the dead node's lease was not revoked"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    println!(
        "victim revoked {:?} after its endpoint closed",
        died.elapsed()
    );
}

#[test]
fn a_revocation_etcd_could_not_take_is_tried_again_when_it_answers() {
    let mut etcd = EtcdCluster::start(1);
    let endpoint = TcpListener::bind("127.0.0.1:0").unwrap();
    let (cluster, _node, _observer) = observed(&etcd, "/alive-down/", &endpoint);
    let held = accept(&endpoint);
    // etcd down (killed: the revocation is refused, not queued) when the node dies, for longer
    // than one call keeps trying (REQUEST_TIMEOUT); started again, etcd gives every lease its
    // full TTL (10 s) again.
    etcd.kill_member(0);
    drop(endpoint);
    drop(held);
    std::thread::sleep(smb3d_cluster::REQUEST_TIMEOUT + Duration::from_secs(1));
    etcd.start_member(0);
    etcd.wait_healthy();
    let back = Instant::now();
    while live(&cluster, "victim") {
        assert!(
            back.elapsed() < LATE,
            "the revocation was not tried again once etcd answered"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("victim revoked {:?} after etcd came back", back.elapsed());
}

#[test]
fn a_connection_that_ends_while_the_endpoint_accepts_proves_nothing() {
    let etcd = EtcdCluster::start(1);
    let endpoint = TcpListener::bind("127.0.0.1:0").unwrap();
    let (cluster, _node, _observer) = observed(&etcd, "/alive-glitch/", &endpoint);
    let held = accept(&endpoint);
    drop(held);
    // The observer connects again, and holds that connection.
    let _again = accept(&endpoint);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        live(&cluster, "victim"),
        "a live endpoint's node keeps its lease"
    );
}

#[test]
fn an_endpoint_refused_from_the_first_connect_leaves_the_lease_to_decide() {
    let etcd = EtcdCluster::start(1);
    // A port nothing listens on (a firewall that rejects it looks the same).
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let cluster = connect(&etcd, "/alive-firewall/");
    let _node = join(&cluster, "victim", Some(format!("127.0.0.1:{port}")));
    let observer = connect(&etcd, "/alive-firewall/");
    let own = bind_alive([127, 0, 0, 1].into()).unwrap();
    let _liveness = Liveness::start(observer, "observer", own);
    std::thread::sleep(Duration::from_millis(2000));
    assert!(
        live(&cluster, "victim"),
        "a refusal never preceded by a held connection is no proof"
    );
}

#[test]
fn the_endpoint_holds_at_most_max_held_connections_and_ignores_what_it_is_sent() {
    let etcd = EtcdCluster::start(1);
    let cluster = connect(&etcd, "/alive-bound/");
    let own = bind_alive([127, 0, 0, 1].into()).unwrap();
    let at = own.local_addr().unwrap();
    let _liveness = Liveness::start(cluster, "node", own);
    let mut held: Vec<TcpStream> = (0..MAX_HELD)
        .map(|_| TcpStream::connect(at).unwrap())
        .collect();
    // Open and silent: a read finds nothing to read, not the end of the connection.
    let silent = |stream: &mut TcpStream| {
        stream.set_nonblocking(true).unwrap();
        let mut buf = [0_u8; 16];
        matches!(stream.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    };
    // Junk, a lot of it, changes nothing: it is read and dropped, nothing is answered.
    held[0].write_all(&vec![0xa5_u8; 1 << 20]).unwrap();
    assert!(
        silent(&mut held[0]),
        "the endpoint says nothing and keeps the connection"
    );
    std::thread::sleep(Duration::from_millis(200));
    let mut extra = TcpStream::connect(at).unwrap();
    extra.set_read_timeout(Some(LATE)).unwrap();
    let mut buf = [0_u8; 16];
    assert_eq!(
        extra.read(&mut buf).unwrap(),
        0,
        "one more than MAX_HELD is closed at once"
    );
    assert!(held.iter_mut().all(silent), "the held ones stay");
    // A held one closing frees its place.
    drop(held.pop());
    std::thread::sleep(Duration::from_millis(200));
    let mut next = TcpStream::connect(at).unwrap();
    assert!(silent(&mut next), "a freed place is taken again");
}
