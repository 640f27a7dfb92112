//! Public addresses (issue 18 item 4, docs/cluster.md): each one is served by exactly one live
//! node, the holder of its key `<prefix>addresses/<ip>` (value: the node's name), written
//! under the holder's etcd lease by a create-only transaction, so that at most one node holds
//! it and a dead node's addresses are free the moment its lease ends.
//!
//! Every node runs one task that reads `nodes/` and `addresses/` at one revision, takes or
//! gives back addresses towards its quota, then waits on a watch of both prefixes (never
//! polling): a node's lease ending deletes its `nodes/` key and its addresses' keys in one
//! revision, and the live nodes take them at once. An address is brought up only after its key
//! was taken and taken down before its key is given back, so no moment has two nodes serving
//! one address.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{
    Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse, WatchOptions,
};
use parking_lot::Mutex;

use crate::{Etcd, Membership};

/// How long a failed round waits before it reads etcd again.
const RETRY_DELAY: Duration = Duration::from_secs(1);

/// What a node does with the addresses it takes and gives back. Calls come from a blocking
/// thread, one at a time.
pub trait AddressHost: Send + Sync + 'static {
    /// Makes `ip` answer on this host and serves SMB on it; an error gives the address back
    /// to the cluster.
    fn bring_up(&self, ip: IpAddr) -> io::Result<()>;
    /// Stops serving `ip` (its connections end) and removes it from this host.
    fn take_down(&self, ip: IpAddr);
    /// Node `name` left the cluster (its lease ended): called before any of its addresses is
    /// brought up here, so that what its clients reclaim is ready when they reconnect.
    fn node_left(&self, name: &str);
    /// The cluster as read at each change of `nodes/` or `addresses/`: the live nodes
    /// (sorted) and who holds each held address (the witness service's view).
    fn cluster_read(&self, _live: &[String], _holders: &BTreeMap<IpAddr, String>) {}
}

/// This node's share of the public addresses, kept until dropped.
#[derive(Debug)]
pub struct PublicAddresses {
    held: Arc<Mutex<BTreeSet<IpAddr>>>,
    host: Arc<dyn AddressHost>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for dyn AddressHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AddressHost")
    }
}

impl PublicAddresses {
    /// Starts taking this node's share of `addresses` as `node`, under `membership`'s lease.
    /// Every address is first taken down here: a node starting holds none.
    pub fn start(
        etcd: Arc<Etcd>,
        node: &str,
        membership: &Membership,
        addresses: Vec<IpAddr>,
        host: Arc<dyn AddressHost>,
    ) -> Self {
        let held = Arc::new(Mutex::new(BTreeSet::new()));
        let balancer = Balancer {
            etcd: etcd.clone(),
            node: node.to_owned(),
            lease: membership.lease(),
            addresses,
            host: host.clone(),
            held: held.clone(),
        };
        let task = etcd.spawn(balancer.run());
        Self { held, host, task }
    }

    /// Stops taking addresses and takes down those held, from the calling thread (a node
    /// stopping): an address added to an interface must not outlive the process that served
    /// it. Their keys go with the node's lease.
    pub fn release(&self) {
        self.task.abort();
        let held = std::mem::take(&mut *self.held.lock());
        for ip in held {
            self.host.take_down(ip);
        }
    }

    /// The addresses this node serves now.
    pub fn held(&self) -> Vec<IpAddr> {
        self.held.lock().iter().copied().collect()
    }
}

impl Drop for PublicAddresses {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Which node holds each public address that is held, by address.
pub fn holders(etcd: &Etcd) -> io::Result<BTreeMap<IpAddr, String>> {
    let prefix = addresses_prefix(etcd);
    let found = etcd.get_prefix(prefix)?;
    Ok(parse_holders(etcd, found.kvs()))
}

fn addresses_prefix(etcd: &Etcd) -> String {
    format!("{}addresses/", etcd.prefix())
}

fn nodes_prefix(etcd: &Etcd) -> String {
    format!("{}nodes/", etcd.prefix())
}

fn parse_holders(etcd: &Etcd, kvs: &[etcd_client::KeyValue]) -> BTreeMap<IpAddr, String> {
    let prefix = addresses_prefix(etcd);
    kvs.iter()
        .filter_map(|kv| {
            let ip = std::str::from_utf8(kv.key())
                .ok()?
                .strip_prefix(&prefix)?
                .parse()
                .ok()?;
            Some((ip, String::from_utf8(kv.value().to_vec()).ok()?))
        })
        .collect()
}

/// How many of `total` addresses `node` serves among `live` nodes (sorted by name): the first
/// `total % n` nodes one more than the others, so every node computes the same split.
fn quota(node: &str, live: &[String], total: usize) -> usize {
    let Some(rank) = live.iter().position(|n| n == node) else {
        return 0;
    };
    let n = live.len();
    total / n + usize::from(rank < total % n)
}

struct Balancer {
    etcd: Arc<Etcd>,
    node: String,
    lease: i64,
    addresses: Vec<IpAddr>,
    host: Arc<dyn AddressHost>,
    /// What is up on this host now.
    held: Arc<Mutex<BTreeSet<IpAddr>>>,
}

/// One read of the cluster: live nodes (sorted) and address holders, at `revision`.
struct View {
    live: Vec<String>,
    holders: BTreeMap<IpAddr, String>,
    revision: i64,
}

impl Balancer {
    async fn run(self) {
        for ip in self.addresses.clone() {
            self.call(move |host| host.take_down(ip)).await;
        }
        let mut live_before: Option<Vec<String>> = None;
        loop {
            let revision = match self.round(&mut live_before).await {
                Ok(revision) => revision,
                Err(e) => {
                    tracing::warn!("cluster: public addresses: {e}; trying again");
                    tokio::time::sleep(RETRY_DELAY).await;
                    continue;
                }
            };
            if let Err(e) = self.wait_for_change(revision).await {
                tracing::warn!("cluster: watch of public addresses broke: {e}");
                tokio::time::sleep(RETRY_DELAY).await;
            }
        }
    }

    /// Runs `call` with the host on a blocking thread and waits for it.
    async fn call(&self, call: impl FnOnce(&dyn AddressHost) + Send + 'static) {
        let host = self.host.clone();
        let _ = tokio::task::spawn_blocking(move || call(host.as_ref())).await;
    }

    async fn view(&self) -> Result<View, etcd_client::Error> {
        let txn = Txn::new().and_then([
            TxnOp::get(
                nodes_prefix(&self.etcd),
                Some(GetOptions::new().with_prefix().with_keys_only()),
            ),
            TxnOp::get(
                addresses_prefix(&self.etcd),
                Some(GetOptions::new().with_prefix()),
            ),
        ]);
        let answer = self.etcd.client().txn(txn).await?;
        let revision = answer.header().map_or(0, |h| h.revision());
        let mut gets = answer.op_responses().into_iter().filter_map(|r| match r {
            TxnOpResponse::Get(get) => Some(get),
            _ => None,
        });
        let nodes = nodes_prefix(&self.etcd);
        let mut live: Vec<String> = gets
            .next()
            .map(|get| {
                get.kvs()
                    .iter()
                    .filter_map(|kv| {
                        let key = std::str::from_utf8(kv.key()).ok()?;
                        Some(key.strip_prefix(&nodes)?.to_owned())
                    })
                    .collect()
            })
            .unwrap_or_default();
        live.sort();
        let holders = gets
            .next()
            .map(|get| parse_holders(&self.etcd, get.kvs()))
            .unwrap_or_default();
        Ok(View {
            live,
            holders,
            revision,
        })
    }

    /// Brings this node's share of addresses towards its quota; returns the revision read.
    async fn round(
        &self,
        live_before: &mut Option<Vec<String>>,
    ) -> Result<i64, etcd_client::Error> {
        let view = self.view().await?;
        self.host.cluster_read(&view.live, &view.holders);
        if let Some(before) = live_before.as_ref() {
            for gone in before.iter().filter(|n| !view.live.contains(n)) {
                if *gone != self.node {
                    tracing::warn!("cluster: node {gone} left; taking over what it served");
                    let gone = gone.clone();
                    self.call(move |host| host.node_left(&gone)).await;
                }
            }
        }
        *live_before = Some(view.live.clone());
        let mine: BTreeSet<IpAddr> = self
            .addresses
            .iter()
            .copied()
            .filter(|ip| view.holders.get(ip) == Some(&self.node))
            .collect();
        // Up here but no longer ours in etcd (our lease ran out and came back): down first.
        let lost: Vec<IpAddr> = self.held.lock().difference(&mine).copied().collect();
        for ip in lost {
            self.take_down(ip).await;
        }
        let quota = quota(&self.node, &view.live, self.addresses.len());
        let mut kept = 0;
        for ip in mine {
            if kept < quota {
                kept += 1;
                if !self.held.lock().contains(&ip) {
                    self.bring_up(ip).await?;
                }
            } else {
                self.give_back(ip).await?;
            }
        }
        let free = self
            .addresses
            .iter()
            .copied()
            .filter(|ip| !view.holders.contains_key(ip));
        let mut holders = view.holders.clone();
        for ip in free {
            if kept >= quota {
                break;
            }
            if self.take(ip, &view.live, &mut holders).await? {
                kept += 1;
            }
        }
        Ok(view.revision)
    }

    async fn take_down(&self, ip: IpAddr) {
        self.held.lock().remove(&ip);
        tracing::info!("cluster: public address {ip} taken down");
        self.call(move |host| host.take_down(ip)).await;
    }

    /// Brings up `ip`, whose key this node holds; one that will not come up is given back.
    async fn bring_up(&self, ip: IpAddr) -> Result<(), etcd_client::Error> {
        let host = self.host.clone();
        let up = tokio::task::spawn_blocking(move || host.bring_up(ip))
            .await
            .unwrap_or_else(|e| Err(io::Error::other(e)));
        match up {
            Ok(()) => {
                self.held.lock().insert(ip);
                tracing::info!("cluster: serving public address {ip}");
                Ok(())
            }
            Err(e) => {
                tracing::error!("cluster: public address {ip} could not be brought up: {e}");
                self.call(move |host| host.take_down(ip)).await;
                self.delete_if_mine(ip).await
            }
        }
    }

    /// Takes `ip` if no node holds it (a create-only transaction under this node's lease) and
    /// brings it up; false when another node was first. `holders` (of `live` nodes) is what
    /// this round read, and learns the taking.
    async fn take(
        &self,
        ip: IpAddr,
        live: &[String],
        holders: &mut BTreeMap<IpAddr, String>,
    ) -> Result<bool, etcd_client::Error> {
        let key = format!("{}{ip}", addresses_prefix(&self.etcd));
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key,
                self.node.clone(),
                Some(PutOptions::new().with_lease(self.lease)),
            )]);
        if !self.etcd.client().txn(txn).await?.succeeded() {
            return Ok(false);
        }
        // The host's view (the witness service's interface list) names this node before the
        // address answers, not only after the next round reads the taking back from etcd.
        holders.insert(ip, self.node.clone());
        self.host.cluster_read(live, holders);
        self.bring_up(ip).await?;
        Ok(self.held.lock().contains(&ip))
    }

    /// Takes `ip` down here, then gives its key back for another node to take.
    async fn give_back(&self, ip: IpAddr) -> Result<(), etcd_client::Error> {
        self.take_down(ip).await;
        self.delete_if_mine(ip).await
    }

    async fn delete_if_mine(&self, ip: IpAddr) -> Result<(), etcd_client::Error> {
        let key = format!("{}{ip}", addresses_prefix(&self.etcd));
        let txn = Txn::new()
            .when([Compare::value(
                key.clone(),
                CompareOp::Equal,
                self.node.clone(),
            )])
            .and_then([TxnOp::delete(key, None)]);
        self.etcd.client().txn(txn).await.map(drop)
    }

    /// Returns after the first change of `nodes/` or `addresses/` after `revision`.
    async fn wait_for_change(&self, revision: i64) -> Result<(), etcd_client::Error> {
        let options = || {
            Some(
                WatchOptions::new()
                    .with_prefix()
                    .with_start_revision(revision + 1),
            )
        };
        let mut client = self.etcd.client();
        let mut nodes = client.watch(nodes_prefix(&self.etcd), options()).await?;
        let mut addresses = client
            .watch(addresses_prefix(&self.etcd), options())
            .await?;
        loop {
            let answer = tokio::select! {
                answer = nodes.message() => answer?,
                answer = addresses.message() => answer?,
            };
            match answer {
                Some(answer) if answer.canceled() => return Ok(()),
                Some(answer) if answer.events().is_empty() => {}
                _ => return Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_split_every_address_once() {
        let live: Vec<String> = ["a", "b", "c"].iter().map(|s| (*s).to_owned()).collect();
        for total in 0..10 {
            let sum: usize = live.iter().map(|n| quota(n, &live, total)).sum();
            assert_eq!(sum, total);
            let most = live.iter().map(|n| quota(n, &live, total)).max().unwrap();
            let least = live.iter().map(|n| quota(n, &live, total)).min().unwrap();
            assert!(most - least <= 1);
        }
        assert_eq!(quota("d", &live, 4), 0);
    }
}
