//! The cluster-wide view of a file's opens (issue 18, docs/cluster.md): on a cluster node,
//! an open the server's own table admitted is also recorded with the cluster, which refuses
//! it when another node's earlier open conflicts (share access, delete-pending); a close
//! removes the record. A single server has no such view (`Settings::cluster_opens` is
//! `None`): each call here is then one test of an `Option`, and nothing else.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use smb3d_dtyp::NtStatus;
use smb3d_smb2::create::AppInstanceVersion;
use smb3d_state::{AppInstanceRecord, BreakOrder, OpenError, OpenRecord, Refusal};
use smb3d_wire::Guid;

use crate::blocking::blocking;
use crate::state::app_instance::{self, AppInstance};
use crate::state::caching::{self, Caching};
use crate::state::files::{OpenEntry, SharedFile};
use crate::state::open::Open;
use crate::state::server::Server;
use crate::state::share::Share;

/// The file's identity on every node: the share's volume name and the inode number, never
/// `st_dev`, which differs between nodes mounting one file system. The volume name is the
/// share's path, which every node of a cluster configures alike (issue 18 item 1); it is
/// written in hex so that no path can make one file's keys a prefix of another's.
pub(crate) fn file_key(share: &Share, ino: u64) -> String {
    key_of(&share.path, ino)
}

/// [`file_key`] of the share at `path`. Every open and close of a cluster node names its
/// file: no formatting call per byte.
fn key_of(path: &str, ino: u64) -> String {
    use std::fmt::Write;
    let digit = |nibble: u8| char::from_digit(u32::from(nibble), 16).unwrap_or('0');
    let mut key = String::with_capacity(path.len() * 2 + 17);
    for byte in path.as_bytes() {
        key.push(digit(byte >> 4));
        key.push(digit(byte & 0xf));
    }
    let _ = write!(key, "-{ino:x}");
    key
}

/// The lease an open's caching is, as the cluster names it: ClientGuid, then LeaseKey.
fn lease_name(caching: &Caching) -> Option<[u8; 32]> {
    let Caching::Lease(id) = caching else {
        return None;
    };
    let mut name = [0u8; 32];
    let (client, key) = name.split_at_mut(16);
    client.copy_from_slice(&id.client.0);
    key.copy_from_slice(&id.key.0);
    Some(name)
}

/// The record of `entry`, an open caching with the lease bits `caching`.
pub(crate) fn record(entry: &OpenEntry, delete_pending: bool, caching: u32) -> OpenRecord {
    OpenRecord {
        access: entry.access.0,
        share: entry.share.0,
        stream: entry.stream.as_deref().map(str::to_owned),
        delete_pending,
        caching,
        lease: lease_name(&entry.caching),
        app_instance: entry.app_instance.as_ref().map(|a| a.record()),
    }
}

/// The record of open `id` of `file` as it is now, its caching included.
fn current_record(file: &SharedFile, entry: &OpenEntry, delete_pending: bool) -> OpenRecord {
    let bits = caching::open_bits(&file.state.lock(), entry.id);
    record(entry, delete_pending, bits)
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

/// The status a refusal of the cluster answers.
pub(crate) fn refused(error: OpenError) -> NtStatus {
    match error {
        OpenError::Refused(Refusal::SharingViolation) | OpenError::BreakFirst(_) => {
            NtStatus::SHARING_VIOLATION
        }
        OpenError::Refused(Refusal::DeletePending) => NtStatus::DELETE_PENDING,
        OpenError::Unavailable(e) => unavailable("a new open", &e),
    }
}

/// Starts handing the breaks other nodes ask of this node's opens to [`settle`], on the
/// current runtime; nothing without a cluster.
pub(crate) fn follow_breaks(server: &Arc<Server>) {
    let Some(cluster) = &server.settings.cluster_opens else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let weak = Arc::downgrade(server);
    cluster.on_break(Arc::new(move |order: BreakOrder| {
        if let Some(server) = weak.upgrade() {
            runtime.spawn(settle(server, order));
        }
    }));
}

/// The inode number at the end of a file key ([`file_key`]).
fn ino_of(file: &str) -> Option<u64> {
    let (_, ino) = file.rsplit_once('-')?;
    u64::from_str_radix(ino, 16).ok()
}

/// Carries out a break another node asked of one of this node's opens (MS-SMB2 3.3.4.6,
/// 3.3.4.7, as for a conflicting open here): the break goes to the open's client, and once
/// its caching is within the order's (acknowledged, timed out, or the open closed) the
/// open's record says so, which the asking node waits for.
async fn settle(server: Arc<Server>, order: BreakOrder) {
    let Some(cluster) = server.settings.cluster_opens.clone() else {
        return;
    };
    if let Some(asking) = &order.close_for {
        blocking(|| close_for(&server, &order, asking));
        return;
    }
    let found = ino_of(&order.file).and_then(|ino| server.files.by_persistent(ino, order.id));
    let bits = match found {
        None => 0,
        Some((file, open)) => loop {
            let change = file.caching_change();
            tokio::pin!(change);
            change.as_mut().enable();
            let ((), breaks) = file.start_breaks(|state, out| {
                caching::breaks_for_local_open(state, open, order.to, out);
            });
            caching::deliver(&server, &file, breaks);
            let bits = caching::open_bits(&file.state.lock(), open);
            if bits & !order.to == 0 {
                break bits;
            }
            change.await;
        },
    };
    if let Err(e) = blocking(|| cluster.lowered(&order.file, order.id, bits)) {
        tracing::warn!("cluster: a broken open's record keeps its caching: {e}");
    }
}

/// MS-SMB2 3.3.5.9.13 across nodes: another node's CREATE of an application instance asks
/// this node to close its open of the same instance. The open is checked here as the asker
/// checked its record (same instance, another client, the same account, no newer version),
/// then closed as CLOSE would; its record goes with it, which the asker waits for. An order
/// the open does not meet closes nothing.
fn close_for(server: &Server, order: &BreakOrder, asking: &AppInstanceRecord) {
    let Some((file, volatile)) =
        ino_of(&order.file).and_then(|ino| server.files.by_persistent(ino, order.id))
    else {
        return;
    };
    let Some(entry) = server.files.entry(&file, volatile) else {
        return;
    };
    let (Some(held), Some(account)) = (&entry.app_instance, &asking.user) else {
        return;
    };
    if !held.record().taken_over_by(asking) {
        return;
    }
    let taker = AppInstance {
        id: Guid(asking.id),
        version: asking
            .version
            .map(|(high, low)| AppInstanceVersion { high, low }),
        client: Guid(asking.client),
        user: None,
    };
    if let Err(status) = app_instance::take_over(
        server,
        None,
        &app_instance::user_of(account),
        &file,
        &taker,
        entry.stream.as_ref(),
    ) {
        tracing::debug!(
            file_id = volatile,
            "an open kept for another node's CREATE: {status:?}"
        );
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
    let record = current_record(&open.shared, &entry, pending);
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
    let record = current_record(&open.shared, &carrier, true);
    if let Err(e) = blocking(|| cluster.update(&key, carrier.persistent_id, &record)) {
        tracing::warn!("cluster: other nodes may not see a pending delete: {e}");
    }
}

/// Whether another node marked the file of inode `ino` in `share` delete-pending, as this
/// node's watch knows it: a listing leaves such a file out (issue 18 item 7). Without a
/// cluster one test of an `Option`; on a cluster node one atomic load while no other node
/// marks any file.
pub(crate) fn marked_elsewhere(server: &Server, share: &Share, ino: u64) -> bool {
    let Some(cluster) = &server.settings.cluster_opens else {
        return false;
    };
    cluster.any_marked_elsewhere() && cluster.marked_elsewhere(&file_key(share, ino))
}

/// Removes the record of `open`, which closed. A record that cannot be removed now goes
/// with this node's lease.
pub(crate) fn closed(server: &Server, share: &Share, ino: u64, persistent_id: u64) {
    let Some(cluster) = &server.settings.cluster_opens else {
        return;
    };
    if cluster.closed_at_once(persistent_id) {
        return;
    }
    let key = file_key(share, ino);
    if let Err(e) = blocking(|| cluster.close(&key, persistent_id)) {
        tracing::warn!("cluster: the record of a closed open stays until this node leaves: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_keys_are_the_share_path_in_hex_and_the_inode() {
        assert_eq!(key_of("/srv/a", 0x1a), "2f7372762f61-1a");
        assert_eq!(key_of("/\u{e9}", 0), "2fc3a9-0");
        assert_eq!(key_of("", u64::MAX), "-ffffffffffffffff");
        assert_eq!(ino_of(&key_of("/srv/a", 77)), Some(77));
    }
}
