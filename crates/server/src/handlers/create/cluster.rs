//! CREATE on a cluster node (MS-SMB2 3.3.5.9, MS-FSA 2.1.5.1.2 and 2.1.4.12 across nodes,
//! docs/cluster.md "Leases, oplocks and node death"): once this node's own table admitted the
//! open, the cluster records it and names the other nodes' oplocks and leases it breaks. The
//! CREATE goes async (STATUS_PENDING) while the breaks that need an acknowledgment are
//! carried out by their nodes, up to the break timeout, then answers with the caching that
//! other nodes' opens leave it.

use std::sync::Arc;

use smb3d_dtyp::NtStatus;
use smb3d_state::{AppInstanceRecord, BreakNeeded, ClusterOpens, Intent, OpenError, TakeOver};

use crate::blocking::blocking;
use crate::request::ctx::Ctx;
use crate::request::reply::{Reply, wait_async};
use crate::state::caching::{self, Granted};
use crate::state::cluster_opens::{self, file_key, refused};
use crate::state::files::{OpenEntry, SharedFile};
use crate::state::server::Server;
use crate::state::share::Share;
use crate::tasks;

/// The open `entry` of `shared`, granted `granted` here, as the cluster lets it be.
pub(super) struct Admission<'a> {
    pub cluster: &'a Arc<dyn ClusterOpens>,
    pub share: &'a Share,
    pub shared: &'a Arc<SharedFile>,
    pub entry: &'a OpenEntry,
    pub intent: Intent,
}

impl Admission<'_> {
    /// Records the open with the cluster, waits for the breaks it needs of other nodes'
    /// caching, and lowers `granted` to what their opens allow. On an error the open is not
    /// recorded; the caller takes it out of the local table.
    pub(super) async fn admit(
        &self,
        cx: &mut Ctx<'_>,
        reply: &mut Reply<'_>,
        granted: &mut Granted,
    ) -> Result<(), NtStatus> {
        let server = cx.conn.server.clone();
        let key = file_key(self.share, self.shared.key.ino);
        let id = self.entry.persistent_id;
        let mut entry = self.entry.clone();
        entry.caching = granted.caching.clone();
        let mut record = cluster_opens::record(&entry, false, caching::granted_bits(granted));
        let mut broke_handles = false;
        // An open the node answers from memory makes no call that blocks.
        let mut at_once = self.cluster.open_at_once(&key, id, &record, self.intent);
        let admitted = loop {
            let answer = match at_once.take() {
                Some(answer) => answer,
                None => blocking(|| self.cluster.open(&key, id, &record, self.intent)),
            };
            match answer {
                Ok(admitted) => break admitted,
                // Handle caching elsewhere in the way: its clients may close their cached
                // handles, then the open tries once more (MS-FSA 2.1.5.1.2).
                Err(OpenError::BreakFirst(breaks)) if !broke_handles => {
                    broke_handles = true;
                    let settled = self.settled(&server, &key, &breaks);
                    wait_async(cx, reply, settled).await?;
                }
                Err(e) => return Err(refused(e)),
            }
        };
        if admitted.breaks.iter().any(|b| b.wait) {
            let settled = self.settled(&server, &key, &admitted.breaks);
            if let Err(status) = wait_async(cx, reply, settled).await {
                // Cancelled (or the connection gone): the open never happened.
                let _ = blocking(|| self.cluster.close(&key, id));
                return Err(status);
            }
        } else if !admitted.breaks.is_empty() {
            // Breaks of read caching alone go without waiting (MS-SMB2 3.3.4.7).
            tasks::spawn(self.settled(&server, &key, &admitted.breaks));
        }
        if record.caching & !admitted.keep == 0 {
            return Ok(());
        }
        let volatile = self.entry.id;
        self.shared.with_caching(|state, _| {
            caching::cap_new_open(state, volatile, admitted.keep, granted);
        });
        record.caching = caching::granted_bits(granted);
        blocking(|| self.cluster.update(&key, id, &record)).map_err(|e| {
            let _ = blocking(|| self.cluster.close(&key, id));
            cluster_opens::unavailable("a new open's caching", &e)
        })
    }

    /// Asks the holders' nodes for `breaks`; resolves once all are done or the break timeout
    /// (MS-SMB2 3.3.2.1) passed: an unanswered break is the holder node's to end.
    fn settled(
        &self,
        server: &Server,
        key: &str,
        breaks: &[BreakNeeded],
    ) -> impl Future<Output = ()> + Send + 'static {
        let asked: Vec<_> = breaks
            .iter()
            .map(|need| self.cluster.request_break(key, need))
            .collect();
        let expired = server
            .settings
            .clock
            .sleep(server.settings.oplock_break_timeout);
        async move {
            let all = async {
                for settled in asked {
                    settled.await;
                }
            };
            tokio::select! {
                () = all => {}
                () = expired => {}
            }
        }
    }
}

/// Other nodes' opens that a CREATE of their application instance takes over (MS-SMB2
/// 3.3.5.9.13 across nodes, docs/cluster.md "Cluster Client Failover").
pub(super) struct AppInstanceOpens<'a> {
    cluster: &'a Arc<dyn ClusterOpens>,
    file: String,
    found: Vec<TakeOver>,
    asking: AppInstanceRecord,
}

impl<'a> AppInstanceOpens<'a> {
    /// Reads the records of the file's opens on other nodes that `asking` takes over;
    /// STATUS_FILE_FORCED_CLOSED when one of them has a newer or equal version, before any
    /// is touched.
    pub(super) fn find(
        cluster: &'a Arc<dyn ClusterOpens>,
        share: &Share,
        ino: u64,
        stream: Option<&str>,
        asking: AppInstanceRecord,
    ) -> Result<Self, NtStatus> {
        let file = file_key(share, ino);
        let found = blocking(|| cluster.app_instance_opens(&file, stream, &asking))
            .map_err(|e| cluster_opens::unavailable("an application instance's open", &e))?;
        if found.iter().any(|o| o.app_instance.refuses(&asking)) {
            return Err(NtStatus::FILE_FORCED_CLOSED);
        }
        Ok(Self {
            cluster,
            file,
            found,
            asking,
        })
    }

    /// Asks their nodes to close them, and waits (async, up to the break timeout) until their
    /// records are gone: an open its node could not close stands in the CREATE's way as any
    /// other open does.
    pub(super) async fn close(
        self,
        cx: &mut Ctx<'_>,
        reply: &mut Reply<'_>,
    ) -> Result<(), NtStatus> {
        if self.found.is_empty() {
            return Ok(());
        }
        let server = cx.conn.server.clone();
        let asked: Vec<_> = self
            .found
            .iter()
            .map(|open| self.cluster.request_close(&self.file, open, &self.asking))
            .collect();
        let expired = server
            .settings
            .clock
            .sleep(server.settings.oplock_break_timeout);
        let closed = async move {
            let all = async {
                for settled in asked {
                    settled.await;
                }
            };
            tokio::select! {
                () = all => {}
                () = expired => {}
            }
        };
        wait_async(cx, reply, closed).await
    }
}
