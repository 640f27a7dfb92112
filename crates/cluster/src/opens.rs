//! [`EtcdOpens`]: the cluster-wide open table in etcd (docs/cluster.md "One write per open,
//! one per close"). Each open is one key, `<prefix>files/<file-key>/open/<persistent id>`,
//! written in one transaction that also reads every key of the file at the same revision: the
//! records it sees were all there before it, so of two racing conflicting opens the later one
//! sees the earlier and withdraws, and the earlier cannot see the later. A close is one delete.
//! Records live under the node's etcd lease: a node that dies takes its opens with it.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use serde::{Deserialize, Serialize};
use smb3d_state::{ClusterOpens, OpenError, OpenRecord, Refusal};

use crate::{Etcd, Membership};

/// The record format this node writes; a reader takes any version and the fields it knows,
/// so that later versions can add fields (lease state, reconnect data) without a flag day.
const FORMAT: u32 = 1;

/// An open record as stored.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    v: u32,
    node: String,
    access: u32,
    share: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream: Option<String>,
    #[serde(default)]
    delete_pending: bool,
}

impl Stored {
    fn of(node: &str, record: &OpenRecord) -> Self {
        Self {
            v: FORMAT,
            node: node.to_owned(),
            access: record.access,
            share: record.share,
            stream: record.stream.clone(),
            delete_pending: record.delete_pending,
        }
    }

    fn record(self) -> OpenRecord {
        OpenRecord {
            access: self.access,
            share: self.share,
            stream: self.stream,
            delete_pending: self.delete_pending,
        }
    }
}

/// This node's opens in etcd, and the other nodes' as each new open finds them.
#[derive(Debug)]
pub struct EtcdOpens {
    etcd: Arc<Etcd>,
    node: String,
    lease: i64,
    /// The membership's health: once renewals have gone unanswered for `node_ttl`, the
    /// cluster may have released this node's opens, and it grants no new one.
    healthy: Arc<AtomicBool>,
}

impl EtcdOpens {
    /// The open table of the node `membership` made a member under the name `node`.
    pub fn new(etcd: Arc<Etcd>, node: &str, membership: &Membership) -> Self {
        Self {
            etcd,
            node: node.to_owned(),
            lease: membership.lease(),
            healthy: membership.health(),
        }
    }

    fn file_prefix(&self, file: &str) -> String {
        format!("{}files/{file}/", self.etcd.prefix())
    }

    fn key(&self, file: &str, id: u64) -> String {
        format!("{}open/{id:016x}", self.file_prefix(file))
    }

    fn value(&self, record: &OpenRecord) -> io::Result<Vec<u8>> {
        serde_json::to_vec(&Stored::of(&self.node, record)).map_err(io::Error::other)
    }

    fn usable(&self) -> io::Result<()> {
        if self.healthy.load(Ordering::Acquire) {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "etcd has not renewed this node's lease for node_ttl",
            ))
        }
    }

    /// Whether the records of other nodes found beside `record` let it stand.
    fn judge(
        &self,
        own: &str,
        record: &OpenRecord,
        found: &[(String, Vec<u8>)],
    ) -> Result<(), Refusal> {
        for (key, value) in found {
            if key == own || !key.contains("/open/") {
                continue;
            }
            // An unreadable record is another node's open all the same: assume it shares
            // nothing rather than let a conflicting open through.
            let other = match serde_json::from_slice::<Stored>(value) {
                Ok(stored) if stored.node == self.node => continue,
                Ok(stored) => stored.record(),
                Err(_) => OpenRecord {
                    access: 0x0001_0003,
                    share: 0,
                    stream: record.stream.clone(),
                    delete_pending: false,
                },
            };
            record.admitted_beside(&other)?;
        }
        Ok(())
    }
}

impl ClusterOpens for EtcdOpens {
    fn open(&self, file: &str, id: u64, record: &OpenRecord) -> Result<(), OpenError> {
        self.usable().map_err(OpenError::Unavailable)?;
        let key = self.key(file, id);
        let value = self.value(record).map_err(OpenError::Unavailable)?;
        let found =
            match self
                .etcd
                .put_and_read(key.clone(), value, self.lease, self.file_prefix(file))
            {
                Ok(found) => found,
                Err(e) => {
                    // An unanswered put may still be committed when quorum returns.
                    self.etcd.delete_surely(key, false);
                    return Err(OpenError::Unavailable(e));
                }
            };
        if let Err(why) = self.judge(&key, record, &found) {
            // Until this delete, later opens see the withdrawn record and may be refused for
            // it: a moment's false conflict, never a missed one.
            self.etcd.delete_surely(key, false);
            return Err(OpenError::Refused(why));
        }
        Ok(())
    }

    /// A compare-and-swap on the record's existence: a record the cluster released (this
    /// node's lease ran out) is not brought back by a late change.
    fn update(&self, file: &str, id: u64, record: &OpenRecord) -> io::Result<()> {
        self.usable()?;
        let key = self.key(file, id);
        let value = self.value(record)?;
        let txn = Txn::new()
            .when([Compare::version(key.clone(), CompareOp::Greater, 0)])
            .and_then([TxnOp::put(
                key,
                value,
                Some(PutOptions::new().with_lease(self.lease)),
            )]);
        let answer = self.etcd.txn(txn)?;
        if answer.succeeded() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("open {id:016x}: its record is gone from the cluster"),
            ))
        }
    }

    /// Never fails: a delete etcd cannot take now is retried until it can.
    fn close(&self, file: &str, id: u64) -> io::Result<()> {
        self.etcd.delete_surely(self.key(file, id), false);
        Ok(())
    }
}
