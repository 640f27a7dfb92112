//! Byte-range locks across the nodes of a cluster (issue 18, docs/cluster.md "Byte-range
//! locks"): a lock the server's own table granted is also recorded with the cluster, which
//! refuses it when another node's earlier lock conflicts; unlocks and closes remove the
//! records, and READ and WRITE also meet other nodes' locks as this node's watch knows them.
//! A single server has no cluster (`Settings::cluster_locks` is `None`): each call here is
//! then one test of an `Option`, and nothing else.

use smb3d_dtyp::NtStatus;
use smb3d_state::{LockError, Released};

use crate::blocking::blocking;
use crate::state::cluster_opens::{file_key, unavailable};
use crate::state::locks::RangeLock;
use crate::state::open::Open;
use crate::state::server::Server;

/// Records `lock`, which `open`'s file table granted, with the cluster: STATUS_LOCK_NOT_GRANTED
/// when another node's lock conflicts, as the local table answers. The caller takes the lock
/// out of its own table again on an error.
pub(crate) fn lock(server: &Server, open: &Open, lock: RangeLock) -> Result<(), NtStatus> {
    let Some(cluster) = &server.settings.cluster_locks else {
        return Ok(());
    };
    let key = file_key(&open.share, open.shared.key.ino);
    match blocking(|| cluster.lock(&key, open.file_id.persistent, lock.range())) {
        Ok(()) => Ok(()),
        Err(LockError::Conflict) => Err(NtStatus::LOCK_NOT_GRANTED),
        Err(LockError::Unavailable(e)) => Err(unavailable("a new lock", &e)),
    }
}

/// Removes the record of one lock `open` held on `range`, after its own table did. A record
/// that cannot be removed now goes with this node's lease.
pub(crate) fn unlock(server: &Server, open: &Open, lock: RangeLock) {
    let Some(cluster) = &server.settings.cluster_locks else {
        return;
    };
    let key = file_key(&open.share, open.shared.key.ino);
    if let Err(e) = blocking(|| cluster.unlock(&key, open.file_id.persistent, lock.range())) {
        tracing::warn!("cluster: the record of a released lock stays until this node leaves: {e}");
    }
}

/// Removes every lock record of `open`, which closed (the back end knows its own opens' locks:
/// one that held none costs no round trip, nor a hand-off of the worker's tasks).
pub(crate) fn closed(server: &Server, open: &Open) {
    let Some(cluster) = &server.settings.cluster_locks else {
        return;
    };
    if !cluster.holds_any(open.file_id.persistent) {
        return;
    }
    let key = file_key(&open.share, open.shared.key.ino);
    if let Err(e) = blocking(|| cluster.release(&key, open.file_id.persistent)) {
        tracing::warn!("cluster: the locks of a closed open stay until this node leaves: {e}");
    }
}

/// MS-FSA 2.1.4.10 against other nodes' locks: STATUS_FILE_LOCK_CONFLICT when one stops this
/// READ (`write` false) or WRITE. No network round trip: the answer is this node's watch-fed
/// knowledge, and while no other node holds any lock, not even the file's key is made.
pub(crate) fn check_io(
    server: &Server,
    open: &Open,
    offset: u64,
    length: u64,
    write: bool,
) -> Result<(), NtStatus> {
    let Some(cluster) = &server.settings.cluster_locks else {
        return Ok(());
    };
    if length == 0 || !cluster.any_held() {
        return Ok(());
    }
    let key = file_key(&open.share, open.shared.key.ino);
    let length = length.min(u64::MAX - offset);
    if cluster.stops_io(&key, offset, length, write) {
        Err(NtStatus::FILE_LOCK_CONFLICT)
    } else {
        Ok(())
    }
}

/// What a blocking lock of `open` waits on besides its own table: the next release of another
/// node's lock of the file; `None` on a single server.
pub(crate) fn released(server: &Server, open: &Open) -> Option<Released> {
    let cluster = server.settings.cluster_locks.as_ref()?;
    Some(cluster.released(&file_key(&open.share, open.shared.key.ino)))
}
