//! Noticing a killed node before its lease runs out (issue 18 items 4 and 11, docs/cluster.md
//! "A killed node in under a second"). Each node listens on an endpoint of its own, named in
//! its `nodes/` record (`alive`), that only holds the connections made to it: it reads
//! nothing it acts on and says nothing, so anyone may connect and learn only that the process
//! lives. Every node holds one connection to each other live node's endpoint. When one ends,
//! the observer connects again at once: a connect that is *refused*, to an endpoint this
//! observer has held a connection to under the same lease, proves that no process listens
//! there any more (the kernel of a live host closes a killed process's sockets and refuses
//! connects to its port), and the observer revokes the dead node's etcd lease, which every
//! node then sees exactly as a lease that ran out. Anything else (a connect that times out,
//! an unreachable network, a connect that is accepted) proves nothing and leaves the decision
//! to the lease: a network glitch between two live nodes never ends one of them.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{EventType, GetOptions};
use tokio::io::AsyncReadExt;

use crate::{Etcd, NodeInfo};

/// Connections the endpoint holds at once; one more is closed as soon as it is accepted (an
/// observer then only learns less, and the lease still decides).
pub const MAX_HELD: usize = 64;
/// How long a connect to another node's endpoint may take before it proves nothing.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The pause after a probe that proved nothing, or after [`SHORT_HOLDS`] connections in a row
/// that each ended within it.
const RETRY: Duration = Duration::from_millis(500);
/// Connections in a row that end within [`RETRY`] before the next probe waits: a process
/// being killed may still accept one connect while its sockets close (it ends at once), so
/// the probe after it must not wait; a full endpoint closes every one, and must not make a
/// busy loop.
const SHORT_HOLDS: u32 = 3;

/// Binds this node's endpoint at `ip` on a port the kernel chooses, before the node joins, so
/// that its record can name it and no moment has the record name an endpoint not yet there.
pub fn bind_alive(ip: IpAddr) -> io::Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind(SocketAddr::new(ip, 0))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// This node's endpoint and its watch of the other nodes' endpoints, kept until dropped.
#[derive(Debug)]
pub struct Liveness {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Liveness {
    /// Serves `listener` (from [`bind_alive`]) and watches every other node's endpoint as
    /// `node`.
    pub fn start(etcd: Arc<Etcd>, node: &str, listener: std::net::TcpListener) -> Self {
        let serve = etcd.spawn(hold_all(listener));
        let observe = etcd.spawn(observe(etcd.clone(), node.to_owned()));
        Self {
            tasks: vec![serve, observe],
        }
    }
}

impl Drop for Liveness {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Accepts connections and holds each until its peer closes it, at most [`MAX_HELD`] at once.
/// Whatever a peer sends is read into one small buffer and dropped. The listener is never
/// closed while the process lives: its closing is what tells the other nodes it died.
async fn hold_all(listener: std::net::TcpListener) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!(
                "cluster: the liveness endpoint: {e}; a killed node is noticed only when its lease runs out"
            );
            return;
        }
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_HELD));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors or a connection reset before it was taken: wait a
                // little, never give the listener up.
                tracing::debug!("cluster: liveness endpoint accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        tokio::spawn(async move {
            let mut stream = stream;
            let mut sink = [0_u8; 64];
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
            drop(slot);
        });
    }
}

/// Key of the watched nodes: their name, lease and endpoint. A node restarted under its name
/// has another lease, and is watched afresh.
type Watched = HashMap<String, (i64, SocketAddr, tokio::task::JoinHandle<()>)>;

/// Follows `nodes/` and keeps one watcher per other node that names an endpoint.
async fn observe(etcd: Arc<Etcd>, node: String) {
    let prefix = format!("{}nodes/", etcd.prefix());
    let mut watched = Watched::new();
    loop {
        let read = etcd
            .client()
            .get(prefix.clone(), Some(GetOptions::new().with_prefix()))
            .await;
        let mut revision = match read {
            Ok(read) => {
                let present: Vec<_> = read
                    .kvs()
                    .iter()
                    .filter_map(|kv| record(&prefix, kv.key(), kv.value(), kv.lease()))
                    .collect();
                watched.retain(|name, (lease, at, task)| {
                    let keep = present
                        .iter()
                        .any(|(n, l, a)| n == name && l == lease && a == at);
                    if !keep {
                        task.abort();
                    }
                    keep
                });
                for (name, lease, at) in present {
                    follow(&etcd, &node, &mut watched, name, lease, at);
                }
                read.header()
                    .map_or(0, etcd_client::ResponseHeader::revision)
            }
            Err(e) => {
                tracing::debug!("cluster: liveness: reading nodes: {e}");
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        let watch = etcd
            .watch_from(prefix.clone(), &mut revision, |events| {
                for event in events {
                    let Some(kv) = event.kv() else { continue };
                    match event.event_type() {
                        EventType::Put => {
                            if let Some((name, lease, at)) =
                                record(&prefix, kv.key(), kv.value(), kv.lease())
                            {
                                follow(&etcd, &node, &mut watched, name, lease, at);
                            }
                        }
                        EventType::Delete => {
                            let name = std::str::from_utf8(kv.key())
                                .ok()
                                .and_then(|k| k.strip_prefix(&prefix));
                            if let Some((_, _, task)) = name.and_then(|n| watched.remove(n)) {
                                task.abort();
                            }
                        }
                    }
                }
            })
            .await;
        if let Err(e) = watch {
            tracing::debug!("cluster: liveness: watch of nodes broke: {e}");
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// A node's name, lease and endpoint from its record, if it names a usable one.
fn record(prefix: &str, key: &[u8], value: &[u8], lease: i64) -> Option<(String, i64, SocketAddr)> {
    let name = std::str::from_utf8(key).ok()?.strip_prefix(prefix)?;
    let info: NodeInfo = serde_json::from_slice(value).ok()?;
    let at: SocketAddr = info.alive?.parse().ok()?;
    (info.name == name && lease != 0 && !at.ip().is_unspecified() && at.port() != 0)
        .then_some((info.name, lease, at))
}

/// Starts watching `name` at `at` under `lease`, unless it is this node or already watched so.
fn follow(
    etcd: &Arc<Etcd>,
    node: &str,
    watched: &mut Watched,
    name: String,
    lease: i64,
    at: SocketAddr,
) {
    if name == node {
        return;
    }
    if let Some((l, a, task)) = watched.get(&name) {
        if *l == lease && *a == at {
            return;
        }
        task.abort();
    }
    let task = tokio::spawn(watch_node(etcd.clone(), name.clone(), lease, at));
    watched.insert(name, (lease, at, task));
}

/// What one connect to an endpoint showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Probe {
    /// Accepted: a process listens there.
    Accepted,
    /// Refused: no process listens there (or something on the way says so).
    Refused,
    /// Timed out or failed otherwise: nothing is known.
    Unknown,
}

/// Whether a probe proves the node dead: only a refusal from an endpoint this observer has
/// seen accept under the same lease. A refusal from the first connect may be a firewall that
/// rejects the port; then the lease decides.
pub(crate) fn proves_dead(held_before: bool, probe: Probe) -> bool {
    held_before && probe == Probe::Refused
}

async fn probe(at: SocketAddr) -> (Probe, Option<tokio::net::TcpStream>) {
    match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(at)).await {
        Ok(Ok(stream)) => (Probe::Accepted, Some(stream)),
        Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => (Probe::Refused, None),
        Ok(Err(_)) | Err(_) => (Probe::Unknown, None),
    }
}

/// Holds a connection to `name`'s endpoint; when it ends, connects again at once, and revokes
/// `lease` when that proves the node dead. Ends when the node is proven dead (or is aborted
/// when its record changes or goes).
async fn watch_node(etcd: Arc<Etcd>, name: String, lease: i64, at: SocketAddr) {
    let mut held_before = false;
    let mut shorts = 0_u32;
    loop {
        let started = tokio::time::Instant::now();
        let pause = match probe(at).await {
            (Probe::Accepted, Some(mut stream)) => {
                held_before = true;
                // The endpoint never sends: a read ends only when the connection does.
                let mut sink = [0_u8; 64];
                while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
                // Probe again at once (a killed node refuses now), unless connections keep
                // ending at once (see SHORT_HOLDS).
                shorts = if started.elapsed() < RETRY {
                    shorts + 1
                } else {
                    0
                };
                shorts >= SHORT_HOLDS
            }
            (found, _) if proves_dead(held_before, found) => {
                tracing::warn!(
                    "cluster: node {name} is dead (its liveness endpoint {at} refuses connections): revoking its etcd lease {lease:x}"
                );
                // Until etcd takes it: a revocation etcd could not take (no quorum) is tried
                // again, and this task ends with the node's record (the lease gone, whoever
                // ended it: the record's deletion aborts it).
                loop {
                    let revoked = etcd
                        .members()
                        .call(move |mut client| async move { client.lease_revoke(lease).await })
                        .await;
                    match revoked {
                        Ok(_) => {
                            tracing::info!("cluster: node {name}'s lease revoked");
                            return;
                        }
                        Err(e) => {
                            tracing::warn!(
                                "cluster: revoking node {name}'s lease: {e}; trying again"
                            );
                            tokio::time::sleep(RETRY).await;
                        }
                    }
                }
            }
            (Probe::Refused, _) => {
                tracing::debug!(
                    "cluster: node {name}'s liveness endpoint {at} refuses before this node ever held it: its lease decides"
                );
                shorts = 0;
                true
            }
            _ => {
                shorts = 0;
                true
            }
        };
        if pause {
            tokio::time::sleep_until(started + RETRY).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_refusal_after_a_held_connection_proves_death() {
        assert!(proves_dead(true, Probe::Refused));
        assert!(
            !proves_dead(false, Probe::Refused),
            "a firewall may reject the first connect"
        );
        assert!(!proves_dead(true, Probe::Unknown), "a timeout is no proof");
        assert!(!proves_dead(true, Probe::Accepted));
    }

    #[test]
    fn a_record_names_a_usable_endpoint_under_its_own_key_only() {
        let info = |name: &str, alive: Option<&str>| {
            serde_json::to_vec(&NodeInfo {
                name: name.into(),
                addresses: Vec::new(),
                max_dialect: "3.1.1".into(),
                pid: 1,
                started: 0,
                alive: alive.map(str::to_owned),
            })
            .unwrap()
        };
        let p = "/x/nodes/";
        assert_eq!(
            record(p, b"/x/nodes/n1", &info("n1", Some("10.0.0.1:4000")), 7),
            Some(("n1".into(), 7, "10.0.0.1:4000".parse().unwrap()))
        );
        assert_eq!(
            record(p, b"/x/nodes/n2", &info("n1", Some("10.0.0.1:4000")), 7),
            None
        );
        assert_eq!(record(p, b"/x/nodes/n1", &info("n1", None), 7), None);
        assert_eq!(
            record(p, b"/x/nodes/n1", &info("n1", Some("0.0.0.0:4000")), 7),
            None
        );
        assert_eq!(
            record(p, b"/x/nodes/n1", &info("n1", Some("10.0.0.1:0")), 7),
            None
        );
        assert_eq!(
            record(p, b"/x/nodes/n1", &info("n1", Some("10.0.0.1:4000")), 0),
            None
        );
        assert_eq!(record(p, b"/x/nodes/n1", b"{not json", 7), None);
    }
}
