//! The cluster dialect fence (MS-SMB2 3.3.5.7, docs/cluster.md "The dialect fence"): the
//! lowest `max_dialect` of the live nodes' `nodes/<name>` keys, kept in a [`ClusterDialect`]
//! by a watch of `nodes/`, so a TREE_CONNECT reads one atomic and never calls etcd. A node's
//! key goes with its lease, so the fence rises by itself when the last node of a lower
//! dialect stops, dies or rejoins upgraded.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use smb3d_state::ClusterDialect;

use crate::{Etcd, NodeInfo, change};

/// How long a broken watch waits before it reads and watches again.
const REWATCH_DELAY: Duration = Duration::from_millis(500);

/// Reads a node key's `max_dialect` ("3.0.2") as a dialect revision; `None` for one this
/// node does not know, which then does not lower the fence.
pub type ParseDialect = fn(&str) -> Option<u16>;

/// The watch that keeps a fence current; it stops when dropped.
#[derive(Debug)]
pub struct DialectWatch {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for DialectWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Sets `fence` from the live nodes now, then keeps it current from a watch of `nodes/`;
/// `own` is this node's max dialect, which caps the fence whatever the keys say.
pub fn follow_dialects(
    etcd: Arc<Etcd>,
    fence: Arc<ClusterDialect>,
    own: u16,
    parse: ParseDialect,
) -> io::Result<DialectWatch> {
    let mut follower = Follower {
        etcd,
        fence,
        own,
        parse,
        nodes: HashMap::new(),
    };
    let revision = follower.read_all()?;
    let task = follower.etcd.clone().spawn(follower.follow(revision));
    Ok(DialectWatch { task })
}

struct Follower {
    etcd: Arc<Etcd>,
    fence: Arc<ClusterDialect>,
    own: u16,
    parse: ParseDialect,
    /// Each live node's max dialect, by its key.
    nodes: HashMap<String, u16>,
}

impl Follower {
    fn prefix(&self) -> String {
        format!("{}nodes/", self.etcd.prefix())
    }

    fn learn(&mut self, key: &[u8], value: Option<&[u8]>) {
        let key = String::from_utf8_lossy(key).into_owned();
        let dialect = value
            .and_then(|v| serde_json::from_slice::<NodeInfo>(v).ok())
            .and_then(|info| (self.parse)(&info.max_dialect));
        match dialect {
            Some(dialect) => self.nodes.insert(key, dialect),
            None => self.nodes.remove(&key),
        };
    }

    fn settle(&self) {
        let before = self.fence.max();
        let now = self.fence.follow(self.own, self.nodes.values().copied());
        if now != before {
            tracing::info!(
                "cluster: the cluster dialect is now {now:#06x} (was {before:#06x}), the lowest of {} node(s)",
                self.nodes.len()
            );
        }
    }

    /// Reads every node key anew; returns the revision read at.
    fn read_all(&mut self) -> io::Result<i64> {
        let prefix = self.prefix();
        let found = self.etcd.get_prefix(prefix)?;
        self.nodes.clear();
        for kv in found.kvs() {
            self.learn(kv.key(), Some(kv.value()));
        }
        self.settle();
        Ok(found.header().map_or(0, |h| h.revision()))
    }

    async fn follow(mut self, mut revision: i64) {
        loop {
            if let Err(e) = self.watch_from(&mut revision).await {
                tracing::warn!("etcd watch of the cluster's nodes broke: {e}; watching again");
            }
            tokio::time::sleep(REWATCH_DELAY).await;
            // Etcd::run blocks: on a thread that may, and the follower comes back.
            let Ok((follower, read)) = tokio::task::spawn_blocking(move || {
                let read = self.read_all();
                (self, read)
            })
            .await
            else {
                return;
            };
            self = follower;
            if let Ok(read) = read {
                revision = read;
            }
        }
    }

    async fn watch_from(&mut self, revision: &mut i64) -> Result<(), etcd_client::Error> {
        let etcd = self.etcd.clone();
        etcd.watch_from(self.prefix(), revision, |events| {
            for (key, value, _) in events.iter().filter_map(change) {
                self.learn(key, value);
            }
            self.settle();
        })
        .await
    }
}
