//! Change notify and directory leases across nodes against a real etcd 3.4 (issue 18 item
//! 3): two "nodes" in one test, each with its own connection and membership lease. Changes a
//! node could not send (its outbox full while etcd did not answer) reach the receiver as one
//! lost event for their share.

mod etcd;

use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use etcd::EtcdCluster;
use smb3d_cluster::{Etcd, EtcdNotify, Membership};
use smb3d_state::{ClusterNotify, DirChange, DirEvent, MAX_EVENT_TEXT};

struct Node {
    notify: EtcdNotify,
    etcd: Arc<Etcd>,
    membership: Membership,
    events: Receiver<DirEvent>,
}

fn node(etcd: &EtcdCluster, prefix: &str, name: &str) -> Node {
    let cluster = Arc::new(Etcd::connect(&etcd.endpoints, prefix).unwrap());
    let info = etcd::node_info(name);
    let membership = Membership::join(cluster.clone(), &info, Duration::from_secs(2)).unwrap();
    let notify = EtcdNotify::new(cluster.clone(), name, &membership);
    let (send, events) = channel();
    let send = std::sync::Mutex::new(send);
    notify.on_event(Arc::new(move |event| {
        let _ = send.lock().unwrap().send(event);
    }));
    Node {
        notify,
        etcd: cluster,
        membership,
        events,
    }
}

fn added(path: &str) -> DirEvent {
    DirEvent {
        share: "/srv/s".into(),
        path: path.into(),
        change: DirChange::Notify {
            action: 1,
            filter: 1,
        },
    }
}

/// Waits until `ready` holds, at most 10 s.
fn until(what: &str, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(Instant::now() < deadline, "{what}: not within 10 s");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The keys under `prefix`.
fn keys(etcd: &Etcd, prefix: &str) -> Vec<String> {
    let prefix = format!("{}{prefix}", etcd.prefix());
    etcd.run(move |mut client| {
        let prefix = prefix.clone();
        async move {
            client
                .get(prefix, Some(etcd_client::GetOptions::new().with_prefix()))
                .await
        }
    })
    .unwrap()
    .kvs()
    .iter()
    .map(|kv| String::from_utf8_lossy(kv.key()).into_owned())
    .collect()
}

#[test]
fn a_change_reaches_only_an_interested_node_once_and_interest_ends() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/n1/", "a");
    let b = node(&etcd, "/n1/", "b");
    // Nobody interested: nothing is sent, nothing is written.
    b.notify.changed(added("d/x"));
    assert!(!b.notify.anyone_else());
    a.notify.interested("/srv/s", "d", false);
    until("b learns a's interest", || b.notify.anyone_else());
    assert!(!a.notify.anyone_else(), "a's own interest is not another's");
    // Changes elsewhere, below the directory or in another share are not sent.
    b.notify.changed(added("e/x"));
    b.notify.changed(added("d/sub/x"));
    b.notify.changed(DirEvent {
        share: "/srv/other".into(),
        ..added("d/x")
    });
    let listing = DirEvent {
        share: "/srv/s".into(),
        path: "d/y".into(),
        change: DirChange::Listing {
            spared: Some([7; 16]),
        },
    };
    b.notify.changed(added("d/x"));
    b.notify.changed(listing.clone());
    let got = a.events.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(got, added("d/x"));
    assert_eq!(
        a.events.recv_timeout(Duration::from_secs(10)).unwrap(),
        listing
    );
    assert!(
        a.events.recv_timeout(Duration::from_millis(300)).is_err(),
        "only the changes in the watched directory, each once"
    );
    assert!(b.events.try_recv().is_err());
    until("a's handled events are deleted", || {
        keys(&a.etcd, "events/").is_empty()
    });
    // A tree interest hears of changes below; nested interests end with the last.
    a.notify.interested("/srv/s", "d", true);
    until("b learns the tree", || {
        b.notify.others_interested("/srv/s", "d/sub")
    });
    b.notify.changed(added("d/sub/deep/x"));
    assert_eq!(
        a.events.recv_timeout(Duration::from_secs(10)).unwrap(),
        added("d/sub/deep/x")
    );
    a.notify.uninterested("/srv/s", "d", true);
    until("the tree interest ends", || {
        !b.notify.others_interested("/srv/s", "d/sub")
    });
    assert!(b.notify.others_interested("/srv/s", "d"));
    a.notify.uninterested("/srv/s", "d", false);
    until("a's interest ends", || !b.notify.anyone_else());
    assert!(keys(&a.etcd, "interest/").is_empty());
}

#[test]
fn a_malformed_event_is_ignored_and_a_dead_node_s_interest_goes_with_its_lease() {
    let etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/n2/", "a");
    let b = node(&etcd, "/n2/", "b");
    a.notify.interested("/srv/s", "", false);
    until("b learns a's interest", || b.notify.anyone_else());
    // A record that is no event, then a good one: only the good one arrives.
    let bad = format!("{}events/a/junk", a.etcd.prefix());
    let lease = a.membership.lease();
    a.etcd
        .run(move |mut client| {
            let bad = bad.clone();
            async move {
                client
                    .put(
                        bad,
                        b"\x01\x09".to_vec(),
                        Some(etcd_client::PutOptions::new().with_lease(lease)),
                    )
                    .await
            }
        })
        .unwrap();
    b.notify.changed(added("x"));
    assert_eq!(
        a.events.recv_timeout(Duration::from_secs(10)).unwrap(),
        added("x")
    );
    // a dies (its lease is dropped without renewal): its interest goes, and changes cost b
    // nothing again.
    drop(a.notify);
    drop(a.membership);
    until("a's interest goes with its lease", || {
        !b.notify.anyone_else()
    });
    assert!(keys(&b.etcd, "interest/").is_empty());
}

#[test]
fn changes_an_overflowing_outbox_drops_reach_the_receiver_as_one_lost_event() {
    const CHANGES: usize = 5000;
    let mut etcd = EtcdCluster::start(1);
    let a = node(&etcd, "/n3/", "a");
    let b = node(&etcd, "/n3/", "b");
    a.notify.interested("/srv/s", "d", false);
    until("b learns a's interest", || b.notify.anyone_else());
    // etcd answers nothing: b's sender waits on its first batch, its outbox (4096) fills and
    // the rest of the changes are dropped.
    etcd.pause_member(0);
    std::thread::sleep(Duration::from_millis(100));
    for i in 0..CHANGES {
        b.notify.changed(added(&format!("d/{i}")));
    }
    etcd.resume_member(0);
    let mut changes = 0;
    let lost = loop {
        let event = a
            .events
            .recv_timeout(Duration::from_secs(20))
            .expect("a lost event after the changes that were sent");
        if event.change == DirChange::Lost {
            break event;
        }
        assert_eq!(
            event,
            added(&format!("d/{changes}")),
            "in order, none twice"
        );
        changes += 1;
    };
    assert_eq!(lost, DirEvent::lost("/srv/s"));
    assert!(changes < CHANGES, "some changes were dropped: {changes}");
    assert!(
        a.events.recv_timeout(Duration::from_millis(500)).is_err(),
        "the receiver is told once"
    );
    // Once the outbox drained, changes are sent again as they come.
    b.notify.changed(added("d/after"));
    assert_eq!(
        a.events.recv_timeout(Duration::from_secs(10)).unwrap(),
        added("d/after")
    );
    // A change whose path is too long to send is sent as lost.
    b.notify
        .changed(added(&format!("d/{}", "x".repeat(MAX_EVENT_TEXT))));
    assert_eq!(
        a.events.recv_timeout(Duration::from_secs(10)).unwrap(),
        DirEvent::lost("/srv/s")
    );
}
