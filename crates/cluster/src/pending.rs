//! Deletes of this node's own keys that etcd could not take when they were made (a close, an
//! unlock, a refused open's record while quorum is lost): kept and retried until etcd takes
//! them, so that the client is answered at once and no record of a closed open outlives the
//! outage (the node's lease, which etcd extends across a leader loss, would keep it for good).
//! At most one per open or lock the node held, since new ones are refused meanwhile.

use std::sync::Arc;
use std::time::Duration;

use etcd_client::DeleteOptions;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::failover::Members;

/// How long a failed retry waits before the next.
const RETRY_DELAY: Duration = Duration::from_secs(1);

/// A key, and whether it is a prefix.
type Delete = (String, bool);

#[derive(Default)]
pub(crate) struct Pending {
    deletes: Mutex<Vec<Delete>>,
    wake: Notify,
}

impl Pending {
    /// Keeps `delete` to retry.
    pub(crate) fn keep(&self, delete: Delete, why: &std::io::Error) {
        let mut deletes = self.deletes.lock();
        if deletes.is_empty() {
            tracing::warn!(
                "cluster: etcd cannot take deletes now ({why}); the records of closed opens and \
                 released locks are deleted when it answers again"
            );
        }
        deletes.push(delete);
        drop(deletes);
        self.wake.notify_one();
    }

    /// Retries what is kept, in order, whenever there is any.
    pub(crate) async fn retry(self: Arc<Self>, members: Arc<Members>) {
        loop {
            self.wake.notified().await;
            let mut done = 0_usize;
            loop {
                let next = self.deletes.lock().first().cloned();
                let Some((key, prefix)) = next else { break };
                let options = prefix.then(|| DeleteOptions::new().with_prefix());
                let deleted = members
                    .call(|mut client| {
                        let (key, options) = (key.clone(), options.clone());
                        async move { client.delete(key, options).await }
                    })
                    .await;
                if deleted.is_err() {
                    tokio::time::sleep(RETRY_DELAY).await;
                    continue;
                }
                let mut deletes = self.deletes.lock();
                if deletes.first().is_some_and(|d| *d == (key.clone(), prefix)) {
                    deletes.remove(0);
                }
                done += 1;
                if deletes.is_empty() {
                    tracing::info!("cluster: etcd answers again; {done} kept delete(s) done");
                }
            }
        }
    }
}
