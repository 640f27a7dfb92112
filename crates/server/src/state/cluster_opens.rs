//! The cluster-wide view of a file's opens (issue 18, docs/cluster.md): on a cluster node,
//! an open the server's own table admitted is also recorded with the cluster, which refuses
//! it when another node's earlier open conflicts (share access, delete-pending); a close
//! removes the record. A single server has no such view (`Settings::cluster_opens` is
//! `None`): each call here is then one test of an `Option`, and nothing else.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use smb3d_dtyp::NtStatus;
use smb3d_state::{ClusterOpens, OpenError, OpenRecord, Refusal};

use crate::blocking::blocking;
use crate::state::files::OpenEntry;
use crate::state::open::Open;
use crate::state::server::Server;
use crate::state::share::Share;

/// The file's identity on every node: the share's volume name and the inode number, never
/// `st_dev`, which differs between nodes mounting one file system. The volume name is the
/// share's path, which every node of a cluster configures alike (issue 18 item 1); it is
/// written in hex so that no path can make one file's keys a prefix of another's.
pub(crate) fn file_key(share: &Share, ino: u64) -> String {
    use std::fmt::Write;
    let mut key = String::with_capacity(share.path.len() * 2 + 17);
    for byte in share.path.as_bytes() {
        let _ = write!(key, "{byte:02x}");
    }
    let _ = write!(key, "-{ino:x}");
    key
}

fn record(entry: &OpenEntry, delete_pending: bool) -> OpenRecord {
    OpenRecord {
        access: entry.access.0,
        share: entry.share.0,
        stream: entry.stream.as_deref().map(str::to_owned),
        delete_pending,
    }
}

/// The second of the last "cluster unavailable" log line: one a minute is enough to name
/// the cause (docs/cluster.md failure table).
static LAST_COMPLAINT: AtomicU64 = AtomicU64::new(0);

pub(crate) fn unavailable(what: &str, e: &dyn std::fmt::Display) -> NtStatus {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let last = LAST_COMPLAINT.load(Ordering::Relaxed);
    if now >= last + 60
        && LAST_COMPLAINT
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        tracing::error!("cluster: {what} refused, etcd cannot be reached: {e}");
    }
    NtStatus::INSUFFICIENT_RESOURCES
}

/// Records the open `entry` of the file `ino` on `share` with the cluster, after the local
/// table admitted it; on a refusal the caller takes it out of the local table again.
pub(crate) fn admit(
    cluster: &dyn ClusterOpens,
    share: &Share,
    ino: u64,
    entry: &OpenEntry,
) -> Result<(), NtStatus> {
    let key = file_key(share, ino);
    let record = record(entry, false);
    match blocking(|| cluster.open(&key, entry.persistent_id, &record)) {
        Ok(()) => Ok(()),
        Err(OpenError::Refused(Refusal::SharingViolation)) => Err(NtStatus::SHARING_VIOLATION),
        Err(OpenError::Refused(Refusal::DeletePending)) => Err(NtStatus::DELETE_PENDING),
        Err(OpenError::Unavailable(e)) => Err(unavailable("a new open", &e)),
    }
}

/// Tells the cluster that `open` marked (or unmarked) its file or stream delete-pending,
/// before the local table does: a mark the cluster did not take is not made at all.
pub(crate) fn delete_pending(server: &Server, open: &Open, pending: bool) -> Result<(), NtStatus> {
    let Some(cluster) = &server.settings.cluster_opens else {
        return Ok(());
    };
    let Some(entry) = server.files.entry(&open.shared, open.file_id.volatile) else {
        return Ok(());
    };
    let key = file_key(&open.share, open.shared.key.ino);
    let record = record(&entry, pending);
    blocking(|| cluster.update(&key, open.file_id.persistent, &record))
        .map_err(|e| unavailable("a delete-pending mark", &e))
}

/// After `open` closed, its file is still delete-pending here (marked through it, or through
/// its delete-on-close, while other opens of the file on this node remain): one of those
/// carries the mark in its record, so that other nodes still refuse new opens.
pub(crate) fn carry_delete_pending(server: &Server, open: &Open) {
    let Some(cluster) = &server.settings.cluster_opens else {
        return;
    };
    if !open.shared.delete_pending() {
        return;
    }
    let Some(carrier) = server.files.default_stream_entry(&open.shared) else {
        return;
    };
    let key = file_key(&open.share, open.shared.key.ino);
    let record = record(&carrier, true);
    if let Err(e) = blocking(|| cluster.update(&key, carrier.persistent_id, &record)) {
        tracing::warn!("cluster: other nodes may not see a pending delete: {e}");
    }
}

/// Removes the record of `open`, which closed. A record that cannot be removed now goes
/// with this node's lease.
pub(crate) fn closed(server: &Server, share: &Share, ino: u64, persistent_id: u64) {
    let Some(cluster) = &server.settings.cluster_opens else {
        return;
    };
    let key = file_key(share, ino);
    if let Err(e) = blocking(|| cluster.close(&key, persistent_id)) {
        tracing::warn!("cluster: the record of a closed open stays until this node leaves: {e}");
    }
}
