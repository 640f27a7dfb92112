//! Node membership: each node holds an etcd lease of `node_ttl` and keeps it alive every
//! third of that; its key `<prefix>nodes/<name>` lives under the lease, so a node that dies or
//! falls silent disappears from the cluster by itself once the lease runs out, with no
//! election and no heartbeat protocol of ours (docs/cluster.md); a killed one's lease is
//! revoked sooner by the node that notices it (`alive`).

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp, TxnOpResponse};
use serde::{Deserialize, Serialize};

use crate::Etcd;

/// What a node tells the cluster about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    pub name: String,
    /// The addresses it serves SMB on.
    pub addresses: Vec<String>,
    /// The highest dialect it serves ("3.1.1"), for the cluster's dialect fence.
    pub max_dialect: String,
    pub pid: u32,
    /// When it joined, in seconds since the Unix epoch.
    pub started: u64,
    /// Its liveness endpoint (`ip:port`, see `alive`), if it has one: absent in records of
    /// nodes that predate it, which only their lease ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alive: Option<String>,
}

fn node_key(etcd: &Etcd, name: &str) -> String {
    format!("{}nodes/{name}", etcd.prefix())
}

/// The whole seconds of an etcd lease that lives at least `ttl`.
fn lease_seconds(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis().div_ceil(1000))
        .unwrap_or(i64::MAX)
        .max(1)
}

/// This node's place in the cluster, held until dropped (then its lease runs out) or
/// [`Membership::leave`] (then at once).
#[derive(Debug)]
pub struct Membership {
    etcd: Arc<Etcd>,
    lease: i64,
    healthy: Arc<AtomicBool>,
    gone: Arc<Gone>,
    keeper: tokio::task::JoinHandle<()>,
}

/// Set once etcd says the lease is gone: the cluster has released everything of this node.
#[derive(Debug, Default)]
struct Gone {
    flag: AtomicBool,
    told: tokio::sync::Notify,
}

impl Membership {
    /// Joins the cluster as `info.name`, refused while a live node holds that name.
    pub fn join(etcd: Arc<Etcd>, info: &NodeInfo, ttl: Duration) -> io::Result<Self> {
        let seconds = lease_seconds(ttl);
        let lease = etcd
            .run(move |mut client| async move { client.lease_grant(seconds, None).await })?
            .id();
        let key = node_key(&etcd, &info.name);
        let value = serde_json::to_vec(info).map_err(io::Error::other)?;
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                key.clone(),
                value,
                Some(PutOptions::new().with_lease(lease)),
            )])
            .or_else([TxnOp::get(key, None)]);
        let answer = etcd.txn(txn)?;
        if !answer.succeeded() {
            let _ = etcd.run(move |mut client| async move { client.lease_revoke(lease).await });
            let holder = answer.op_responses().into_iter().find_map(|r| match r {
                TxnOpResponse::Get(get) => get
                    .kvs()
                    .first()
                    .and_then(|kv| serde_json::from_slice::<NodeInfo>(kv.value()).ok()),
                _ => None,
            });
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "node name {:?} is held by a live node (pid {})",
                    info.name,
                    holder.map_or_else(|| "?".to_owned(), |h| h.pid.to_string())
                ),
            ));
        }
        let healthy = Arc::new(AtomicBool::new(true));
        let gone = Arc::new(Gone::default());
        let keeper = etcd.spawn(keep_alive(
            etcd.clone(),
            lease,
            ttl,
            healthy.clone(),
            gone.clone(),
        ));
        Ok(Self {
            etcd,
            lease,
            healthy,
            gone,
            keeper,
        })
    }

    /// False once the lease may have run out (no keepalive answered for `node_ttl`): the
    /// cluster has released this node's opens, so it must stop serving them.
    pub fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }

    /// Returns once etcd has said this node's lease is gone (it was revoked, or ran out while
    /// the node could not renew it): its keys are gone and other nodes may take its place, so
    /// it must stop serving. An etcd that does not answer is not that: see docs/cluster.md.
    pub async fn lost(&self) {
        loop {
            let told = self.gone.told.notified();
            if self.gone.flag.load(Ordering::Acquire) {
                return;
            }
            told.await;
        }
    }

    /// Revokes the lease now (a node stopping): its keys go at once, not after `node_ttl`.
    pub fn revoke(&self) -> io::Result<()> {
        self.keeper.abort();
        let lease = self.lease;
        self.etcd
            .run(move |mut client| async move { client.lease_revoke(lease).await })
            .map(drop)
    }

    /// The flag behind [`Membership::healthy`], for the tables that must stop granting when it
    /// falls.
    pub fn health(&self) -> Arc<AtomicBool> {
        self.healthy.clone()
    }

    /// The etcd lease this node's keys live under.
    pub fn lease(&self) -> i64 {
        self.lease
    }

    /// Leaves at once: the lease is revoked and every key under it goes.
    pub fn leave(self) -> io::Result<()> {
        self.revoke()
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.keeper.abort();
    }
}

/// Renews `lease` every `ttl / 3`, at the member calls go to (a member that fails or does not
/// answer a renewal hands the keepalive to the next); marks the node unhealthy when no renewal
/// has been answered for `ttl`, healthy again at the next renewal etcd answers (the lease
/// lived: etcd extends every lease when a leader is elected, so a lost quorum does not end it),
/// and gone when etcd says the lease is.
async fn keep_alive(
    etcd: Arc<Etcd>,
    lease: i64,
    ttl: Duration,
    healthy: Arc<AtomicBool>,
    gone: Arc<Gone>,
) {
    let every = ttl / 3;
    let mut renewed = Instant::now();
    loop {
        let (member, mut client) = etcd.members().caller();
        let opened = tokio::time::timeout(every, client.lease_keep_alive(lease)).await;
        // etcd-client refuses to open a keepalive for a lease that is gone rather than
        // answering it: ask etcd once whether that is why, or the node would go on trying.
        if matches!(opened, Ok(Err(_))) && lease_is_gone(&mut client, lease, every).await {
            return mark_gone(&healthy, &gone);
        }
        if let Ok(Ok((mut keeper, mut answers))) = opened {
            loop {
                let answered = async {
                    keeper.keep_alive().await?;
                    answers.message().await
                };
                match tokio::time::timeout(every, answered).await {
                    Ok(Ok(Some(answer))) if answer.ttl() > 0 => {
                        renewed = Instant::now();
                        if !healthy.swap(true, Ordering::AcqRel) {
                            tracing::warn!(
                                "etcd renews this node's lease again: new opens and locks are served"
                            );
                        }
                    }
                    Ok(Ok(Some(_))) => {
                        return mark_gone(&healthy, &gone);
                    }
                    // A slow answer is waited for on this stream; a member silent for half
                    // the TTL hands the keepalive to the next, before the lease is at risk.
                    Err(_) if renewed.elapsed() < ttl / 2 => {}
                    Ok(Ok(None) | Err(_)) | Err(_) => break,
                }
                tokio::time::sleep(every.saturating_sub(renewed.elapsed().min(every))).await;
            }
        }
        etcd.members().skip(member);
        if renewed.elapsed() >= ttl && healthy.swap(false, Ordering::AcqRel) {
            tracing::error!(
                "etcd has not renewed this node's lease for {ttl:?}: new opens and locks are refused until it does"
            );
        }
        tokio::time::sleep(every.min(Duration::from_millis(300))).await;
    }
}

/// etcd said the lease is gone: the node is no member any more, and [`Membership::lost`] returns.
fn mark_gone(healthy: &AtomicBool, gone: &Gone) {
    tracing::error!("the etcd lease of this node is gone: it left the cluster");
    healthy.store(false, Ordering::Release);
    gone.flag.store(true, Ordering::Release);
    gone.told.notify_waiters();
}

/// Whether etcd answers that `lease` no longer exists (TimeToLive gives -1 for a lease that was
/// revoked or ran out); no answer within `bound` is not that.
async fn lease_is_gone(client: &mut etcd_client::Client, lease: i64, bound: Duration) -> bool {
    matches!(
        tokio::time::timeout(bound, client.lease_time_to_live(lease, None)).await,
        Ok(Ok(answer)) if answer.ttl() <= 0
    )
}

/// The live members of the cluster, by name.
pub fn members(etcd: &Etcd) -> io::Result<Vec<NodeInfo>> {
    let prefix = format!("{}nodes/", etcd.prefix());
    let found = etcd.get_prefix(prefix)?;
    let mut nodes: Vec<NodeInfo> = found
        .kvs()
        .iter()
        .filter_map(|kv| serde_json::from_slice(kv.value()).ok())
        .collect();
    nodes.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(nodes)
}
