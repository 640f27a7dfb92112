//! `[cluster]` for `serve` (docs/cluster.md): the node joins the cluster's etcd (its
//! membership lease, kept alive every third of `node_ttl`) and keeps persistent handles in
//! etcd rather than in `state_dir`, so that a node killed and started again, or another node,
//! reclaims them.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use smb3d_cluster::{
    DEFAULT_PREFIX, DialectWatch, Etcd, EtcdLocks, EtcdNotify, EtcdOpens, EtcdStore, Liveness,
    Membership, NodeInfo, PublicAddresses,
};
use smb3d_config::{ClusterConfig, Config, Dialect};
use smb3d_server::ClusterDialect;

use crate::AnyError;
use crate::serve::NodeState;

/// How many closed opens' records a node keeps in etcd for reuse: a listing's directories
/// (docs/cluster.md "Retained records"), each a key in etcd and about 200 bytes here.
const RETAINED_RECORDS: usize = 4096;

/// This process's membership: it lives as long as the process (a killed node's lease runs
/// out by itself).
static MEMBERSHIP: OnceLock<Membership> = OnceLock::new();
/// What [`serve_public_addresses`] needs of the node that joined.
static JOINED: OnceLock<(Arc<Etcd>, String, ClusterConfig)> = OnceLock::new();
/// This node's share of the public addresses, held as long as the process.
static PUBLIC: OnceLock<PublicAddresses> = OnceLock::new();
/// The watch of the members' dialects that keeps the dialect fence current.
static DIALECTS: OnceLock<DialectWatch> = OnceLock::new();
/// This node's liveness endpoint and its watch of the others' (a killed node is noticed at
/// once, not when its lease runs out).
static LIVENESS: OnceLock<Liveness> = OnceLock::new();

/// The state store and the open table of a cluster node, once it has joined; `None`
/// without `[cluster]`.
pub fn join(config: &Config) -> Result<Option<NodeState>, AnyError> {
    let Some(cluster) = &config.cluster else {
        return Ok(None);
    };
    let etcd = Arc::new(
        Etcd::connect(&cluster.etcd, DEFAULT_PREFIX)
            .map_err(|e| format!("cluster: etcd at {}: {e}", cluster.etcd.join(", ")))?,
    );
    let mut info = node_info(config, cluster);
    let alive = alive_endpoint(config, cluster);
    info.alive = alive
        .as_ref()
        .and_then(|l| l.local_addr().ok())
        .map(|a| a.to_string());
    let membership = join_when_free(&etcd, &info, cluster.node_ttl)?;
    if let Some(listener) = alive {
        let _ = LIVENESS.set(Liveness::start(etcd.clone(), &info.name, listener));
    }
    tracing::info!(
        "cluster: joined as node {} (etcd lease {:x}, node_ttl {:?}); persistent handles are kept in etcd",
        info.name,
        membership.lease(),
        cluster.node_ttl
    );
    let locks = EtcdLocks::new(etcd.clone(), &info.name, &membership)
        .map_err(|e| format!("cluster: etcd byte-range locks: {e}"))?;
    // Opens no other node needs to see answer from the watch of `files/` the lock table
    // keeps, without a round trip (docs/cluster.md "Stat opens go unrecorded"); plain opens
    // leave their records behind for the next equal open (docs/cluster.md "Retained records").
    let opens = EtcdOpens::new(etcd.clone(), &info.name, &membership)
        .with_marks(locks.delete_pending_marks())
        .with_retention(RETAINED_RECORDS);
    let notify = EtcdNotify::new(etcd.clone(), &info.name, &membership);
    let _ = MEMBERSHIP.set(membership);
    let _ = JOINED.set((etcd.clone(), info.name.clone(), cluster.clone()));
    let own = max_dialect(config, cluster).revision();
    let fence = Arc::new(ClusterDialect::new(own));
    let dialects = smb3d_cluster::follow_dialects(etcd.clone(), fence.clone(), own, |d| {
        Dialect::parse(d).map(Dialect::revision)
    })
    .map_err(|e| format!("cluster: etcd nodes (the dialect fence): {e}"))?;
    let _ = DIALECTS.set(dialects);
    let store = EtcdStore::new(etcd)
        .map_err(|e| format!("cluster: etcd state records: {e}"))?
        .owned_by(&info.name);
    Ok(Some(NodeState {
        store: Arc::new(store),
        cluster_opens: Some(Arc::new(opens)),
        cluster_locks: Some(Arc::new(locks)),
        cluster_dialect: Some(fence),
        cluster_notify: Some(Arc::new(notify)),
    }))
}

/// Starts taking this node's share of the public addresses, served at `port`: what comes up
/// and goes down arrives on the returned channel, with the node's witness service that
/// serves them too. `None` without `[cluster]` or without public addresses.
pub fn serve_public_addresses(
    server: &Arc<smb3d_server::Server>,
    port: u16,
) -> Option<(
    tokio::sync::mpsc::UnboundedReceiver<crate::public_addresses::Listen>,
    Arc<crate::witness::WitnessService>,
)> {
    let (etcd, name, cluster) = JOINED.get()?;
    let membership = MEMBERSHIP.get()?;
    if cluster.public_addresses.is_empty() {
        return None;
    }
    let (listen, requests) = tokio::sync::mpsc::unbounded_channel();
    let witness = crate::witness::WitnessService::new(
        server.clone(),
        cluster.public_addresses.clone(),
        cluster.witness_port,
    );
    let host = crate::public_addresses::NodeAddresses {
        interface: cluster.public_interface.clone(),
        port,
        server: server.clone(),
        listen,
        witness: witness.clone(),
    };
    let public = PublicAddresses::start(
        etcd.clone(),
        name,
        membership,
        cluster.public_addresses.clone(),
        Arc::new(host),
    );
    let _ = PUBLIC.set(public);
    Some((requests, witness))
}

/// Returns when this node's etcd lease is gone (never without `[cluster]`).
pub async fn lease_lost() {
    match MEMBERSHIP.get() {
        Some(membership) => membership.lost().await,
        None => std::future::pending().await,
    }
}

/// A node stopping leaves at once, so that its name and keys are free without waiting for
/// its lease to run out.
pub fn leave() {
    if let Some(public) = PUBLIC.get() {
        public.release();
    }
    if let Some(membership) = MEMBERSHIP.get() {
        match membership.revoke() {
            Ok(()) => tracing::info!("cluster: left (etcd lease revoked)"),
            Err(e) => tracing::warn!("cluster: leaving: {e}; the lease runs out by itself"),
        }
    }
}

fn node_info(config: &Config, cluster: &ClusterConfig) -> NodeInfo {
    // Public addresses move between nodes: `cluster status` shows their holders.
    let addresses: Vec<String> = config
        .server
        .listen
        .iter()
        .map(ToString::to_string)
        .collect();
    NodeInfo {
        name: cluster.node_name(),
        addresses,
        max_dialect: max_dialect(config, cluster).as_str().to_owned(),
        pid: std::process::id(),
        started: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        alive: None,
    }
}

/// Binds this node's liveness endpoint (docs/cluster.md) on the address of its first
/// `server.listen` entry, or, when that is unspecified (`0.0.0.0`), on the address this host
/// reaches the first etcd member from, which the other nodes reach it at too. `None` (logged:
/// then only its lease tells the others it died) when neither gives an address.
fn alive_endpoint(config: &Config, cluster: &ClusterConfig) -> Option<std::net::TcpListener> {
    let listen = config.server.listen.first().map(std::net::SocketAddr::ip);
    let ip = match listen {
        Some(ip) if !ip.is_unspecified() => Some(ip),
        _ => cluster.etcd.first().and_then(|e| route_source(e)),
    };
    let bound = ip
        .ok_or_else(|| "no address to bind it at".to_owned())
        .and_then(|ip| smb3d_cluster::bind_alive(ip).map_err(|e| format!("{ip}: {e}")));
    match bound {
        Ok(listener) => Some(listener),
        Err(e) => {
            tracing::warn!(
                "cluster: no liveness endpoint ({e}): the other nodes notice this node's death only when its lease runs out"
            );
            None
        }
    }
}

/// The local address the kernel would send from to etcd's `endpoint` (`http://host:port`):
/// a UDP socket's connect only picks the route, nothing is sent.
fn route_source(endpoint: &str) -> Option<std::net::IpAddr> {
    use std::net::ToSocketAddrs;
    let authority = endpoint.split("://").nth(1)?.split('/').next()?;
    let target = authority.to_socket_addrs().ok()?.next()?;
    let any: std::net::SocketAddr = if target.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = std::net::UdpSocket::bind(any).ok()?;
    socket.connect(target).ok()?;
    Some(socket.local_addr().ok()?.ip())
}

/// The highest dialect this node serves cluster shares at: `[cluster] max_dialect`, else the
/// server's own.
fn max_dialect(config: &Config, cluster: &ClusterConfig) -> Dialect {
    cluster
        .max_dialect
        .unwrap_or(*config.server.max_dialect.get_ref())
}

/// Joins as `info.name`; while the name's previous holder's lease lives (this node, killed a
/// moment ago), waits for it to run out, up to twice `ttl`: two live processes never share
/// a name.
fn join_when_free(
    etcd: &Arc<Etcd>,
    info: &NodeInfo,
    ttl: Duration,
) -> Result<Membership, AnyError> {
    let deadline = Instant::now() + ttl * 2 + Duration::from_secs(1);
    let mut told = false;
    loop {
        match Membership::join(etcd.clone(), info, ttl) {
            Ok(membership) => return Ok(membership),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && Instant::now() < deadline => {
                if !told {
                    tracing::warn!("cluster: {e}; waiting for its lease to run out");
                    told = true;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => return Err(format!("cluster: joining as node {}: {e}", info.name).into()),
        }
    }
}

/// `smb3d cluster ...`.
#[derive(clap::Subcommand)]
pub enum ClusterAction {
    /// Show the cluster's nodes (each one holding a live etcd lease is up), their addresses
    /// and the cluster's dialect (the lowest max dialect of its nodes).
    Status {
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start a cluster on this machine to try it: etcd on 127.0.0.20 and N nodes on
    /// 127.0.0.21, 127.0.0.22, ... sharing one directory as "demo", until Ctrl-C.
    Demo(crate::cluster_demo::DemoArgs),
}

pub fn run(action: ClusterAction, config_path: &std::path::Path) -> Result<(), AnyError> {
    let json = match action {
        ClusterAction::Status { json } => json,
        ClusterAction::Demo(args) => return crate::cluster_demo::run(args),
    };
    let config = crate::config_cmd::load(config_path)?;
    let cluster = config
        .cluster
        .as_ref()
        .ok_or_else(|| format!("{} has no [cluster] section", config_path.display()))?;
    let etcd = Etcd::connect(&cluster.etcd, DEFAULT_PREFIX)
        .map_err(|e| format!("etcd at {}: {e}", cluster.etcd.join(", ")))?;
    let nodes = smb3d_cluster::members(&etcd)?;
    let holders = smb3d_cluster::holders(&etcd)?;
    let dialect = nodes
        .iter()
        .filter_map(|n| smb3d_config::Dialect::parse(&n.max_dialect))
        .min()
        .map(smb3d_config::Dialect::as_str);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if json {
        let nodes: Vec<serde_json::Value> = nodes
            .iter()
            .map(|n| {
                serde_json::json!({
                    "name": n.name, "health": "up", "pid": n.pid, "addresses": n.addresses,
                    "max_dialect": n.max_dialect, "started": n.started,
                })
            })
            .collect();
        let public: Vec<serde_json::Value> = cluster
            .public_addresses
            .iter()
            .map(|ip| serde_json::json!({"address": ip.to_string(), "node": holders.get(ip)}))
            .collect();
        let report = serde_json::json!({
            "etcd": cluster.etcd, "node_ttl_ms": cluster.node_ttl.as_millis() as u64,
            "dialect": dialect, "nodes": nodes, "public_addresses": public,
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "cluster at etcd {}: {} node(s) up, dialect {}",
        cluster.etcd.join(", "),
        nodes.len(),
        dialect.unwrap_or("-")
    );
    for n in &nodes {
        println!(
            "node {}  up {} s  pid {}  max dialect {}  addresses {}",
            n.name,
            now.saturating_sub(n.started),
            n.pid,
            n.max_dialect,
            n.addresses.join(", ")
        );
    }
    for ip in &cluster.public_addresses {
        println!(
            "public address {ip}  {}",
            holders
                .get(ip)
                .map_or_else(|| "not served".to_owned(), |n| format!("node {n}"))
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::route_source;

    #[test]
    fn the_liveness_endpoint_of_a_node_listening_everywhere_is_where_it_reaches_etcd_from() {
        assert_eq!(
            route_source("http://127.0.0.1:2379"),
            Some([127, 0, 0, 1].into())
        );
        assert_eq!(route_source("no-scheme:2379"), None);
        assert_eq!(route_source("http://"), None);
    }
}
