//! LOCK: MS-SMB2 3.3.5.14, with the lock semantics of MS-FSA 2.1.5.7 and 2.1.5.8.

use std::sync::Arc;
use std::time::Duration;

use smb3d_dtyp::NtStatus;
use smb3d_smb2::lock::{LockElement, LockFlags, LockRequest, LockResponse};
use smb3d_smb2::negotiate::Capabilities;

use crate::escape::escape;
use crate::handlers::lookup_open;
use crate::limits::Limit;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::request::reply::{Reply, go_async};
use crate::state::cluster_locks;
use crate::state::locks::{RangeLock, check_range};
use crate::state::open::Open;
use crate::state::persistent;
use crate::state::session::Session;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    reply: &mut Reply<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = LockRequest::decode(pdu).map_err(malformed)?;
    if req.locks.is_empty() {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let open = lookup_open(cx, req.file_id)?;
    // MS-SMB2 3.3.5.14: opens that outlive their connection (and all opens where the server
    // offers multichannel) remember lock sequences, so that a LOCK resent after a lost
    // response is not done twice.
    let sequenced = cx.negotiated.dialect != 0x0202
        && (Capabilities(cx.negotiated.server_capabilities).contains(Capabilities::MULTI_CHANNEL)
            || cx
                .conn
                .server
                .durable
                .survives_disconnect(open.file_id.volatile));
    let sequence = (req.lock_sequence_index(), req.lock_sequence_number());
    if sequenced && open.replay.lock_replayed(sequence.0, sequence.1) {
        LockResponse.encode(&mut reply.writer());
        return Ok(NtStatus::SUCCESS);
    }
    let mut elements = req.locks.iter();
    let first = req.locks.iter().next().unwrap_or_default();
    if first.flags.contains(LockFlags::UNLOCK) {
        // A series of unlocks, each exactly an UNLOCK, processed in order.
        for element in elements {
            if element.flags != LockFlags::UNLOCK {
                return Err(NtStatus::INVALID_PARAMETER);
            }
            release(cx, &open, element)?;
        }
    } else {
        // An expired session may only unlock (3.3.5.2.9; Windows and Samba refuse a new lock,
        // smbtorture smb2.session.expire2s).
        if cx
            .session
            .as_ref()
            .is_some_and(|s| s.expired(&*cx.conn.server.settings.clock))
        {
            return Err(NtStatus::NETWORK_SESSION_EXPIRED);
        }
        admit_locks(cx, &open, req.locks.len())?;
        crate::state::caching::before_write(&cx.conn.server, &open);
        let several = req.locks.len() > 1;
        let mut granted: Vec<LockElement> = Vec::new();
        let result = elements.try_for_each(|element| {
            let lock = requested_lock(&element, open.file_id.volatile, several)?;
            match take(cx, &open, lock) {
                Ok(()) => {
                    granted.push(element);
                    Ok(())
                }
                Err(status) => Err((status, Some(lock))),
            }
        });
        match result {
            Ok(()) => {}
            // Only a single lock without FAIL_IMMEDIATELY gets here with a lock to wait for.
            Err((NtStatus::LOCK_NOT_GRANTED, Some(lock)))
                if !several && !first.flags.contains(LockFlags::FAIL_IMMEDIATELY) =>
            {
                let session = cx.session.clone().ok_or(NtStatus::USER_SESSION_DELETED)?;
                wait_for_lock(cx, reply, &session, &open, lock).await?;
            }
            Err((status, _)) => {
                // MS-SMB2 3.3.5.14: a failed element undoes the locks the request took before.
                for element in granted {
                    let _ = release(cx, &open, element);
                }
                return Err(status);
            }
        }
    }
    // A persistent open's locks outlive a restart (and a cluster node's durable open's, its
    // node's death): its record follows them. Locks that
    // could not be recorded are not granted; an unlock stands (the open keeps fewer locks
    // than its record says until the next write of it).
    if let Err(e) = persistent::save(&cx.conn.server, &open) {
        tracing::error!(
            path = &*escape(open.path().as_str()),
            "the locks of a persistent open could not be recorded: {e}"
        );
        if !first.flags.contains(LockFlags::UNLOCK) {
            for element in req.locks.iter() {
                let _ = release(cx, &open, element);
            }
            return Err(NtStatus::INSUFFICIENT_RESOURCES);
        }
    }
    if sequenced {
        open.replay.lock_succeeded(sequence.0, sequence.1);
    }
    LockResponse.encode(&mut reply.writer());
    Ok(NtStatus::SUCCESS)
}

/// Takes `lock` in the file's table and, on a cluster node, records it with the cluster, whose
/// refusal (another node's lock conflicts) takes it out of the table again.
fn take(cx: &Ctx<'_>, open: &Open, lock: RangeLock) -> Result<(), NtStatus> {
    let server = &cx.conn.server;
    let max_locks = server.limits().max_locks_per_file;
    open.shared
        .locks
        .try_lock(lock, max_locks, open.host_locks())?;
    cluster_locks::lock(server, open, lock).inspect_err(|_| {
        let _ = open
            .shared
            .locks
            .unlock(lock.owner, lock.offset, lock.length, open.host_locks());
    })
}

/// MS-FSA 2.1.5.8: removes one lock of `element`'s exact range from the file's table and, on
/// a cluster node, its record with the cluster.
fn release(cx: &Ctx<'_>, open: &Open, element: LockElement) -> Result<(), NtStatus> {
    let owner = open.file_id.volatile;
    let exclusive =
        open.shared
            .locks
            .unlock(owner, element.offset, element.length, open.host_locks())?;
    let lock = RangeLock {
        owner,
        offset: element.offset,
        length: element.length,
        exclusive,
    };
    cluster_locks::unlock(&cx.conn.server, open, lock);
    Ok(())
}

/// An open, and a file with all its opens, may hold a bounded number of locks (security.md
/// L15): a request that would take either beyond is refused whole with
/// STATUS_INSUFFICIENT_RESOURCES, as the per-open limit always was (MS-FSA 2.1.5.8 names no
/// status for a full lock list; this is Windows' answer for an exhausted resource).
/// `LockTable::try_lock` holds the file's limit also against requests that race this check.
fn admit_locks(cx: &Ctx<'_>, open: &Open, requested: usize) -> Result<(), NtStatus> {
    let server = &cx.conn.server;
    let limits = server.limits();
    let held = open.shared.locks.held_by(open.file_id.volatile);
    if held.saturating_add(requested) > limits.max_locks_per_open {
        server.limit_reached(
            Limit::Locks,
            &format_args!("an open holds {held} locks and asks for {requested} more"),
        );
        return Err(NtStatus::INSUFFICIENT_RESOURCES);
    }
    let on_file = open.shared.locks.len();
    if on_file.saturating_add(requested) > limits.max_locks_per_file {
        server.limit_reached(
            Limit::Locks,
            &format_args!("a file holds {on_file} locks and an open asks for {requested} more"),
        );
        return Err(NtStatus::INSUFFICIENT_RESOURCES);
    }
    Ok(())
}

/// The lock an element asks for: flags must be SHARED or EXCLUSIVE, with FAIL_IMMEDIATELY
/// when the request holds several locks (MS-SMB2 3.3.5.14), and the range must be valid.
fn requested_lock(
    element: &LockElement,
    owner: u64,
    several: bool,
) -> Result<RangeLock, (NtStatus, Option<RangeLock>)> {
    let kind = LockFlags(element.flags.0 & !LockFlags::FAIL_IMMEDIATELY.0);
    let exclusive = match kind {
        LockFlags::SHARED_LOCK => false,
        LockFlags::EXCLUSIVE_LOCK => true,
        _ => return Err((NtStatus::INVALID_PARAMETER, None)),
    };
    if several && !element.flags.contains(LockFlags::FAIL_IMMEDIATELY) {
        return Err((NtStatus::INVALID_PARAMETER, None));
    }
    check_range(element.offset, element.length).map_err(|status| (status, None))?;
    Ok(RangeLock {
        owner,
        offset: element.offset,
        length: element.length,
        exclusive,
    })
}

/// How long a blocking lock that other programs' locks may stop waits before trying again at
/// first, and at most: their unlocks wake nobody here (the kernel tells only waiters it
/// blocks, and a blocked worker could not be cancelled), so the wait doubles up to the most.
const HOST_RETRY_FIRST: Duration = Duration::from_millis(20);
const HOST_RETRY_MOST: Duration = Duration::from_secs(1);

/// A blocking lock: goes async and retries whenever a lock of the file goes away (on a
/// cluster node, another node's too, as its etcd watch tells; with `posix_locking`, now and
/// then for other programs' locks), until it is granted, cancelled,
/// or its open closes (STATUS_RANGE_NOT_LOCKED, as Windows answers).
async fn wait_for_lock(
    cx: &mut Ctx<'_>,
    reply: &mut Reply<'_>,
    session: &Session,
    open: &Arc<Open>,
    lock: RangeLock,
) -> Result<(), NtStatus> {
    let pending = go_async(cx, reply)?;
    let locks = &open.shared.locks;
    let mut host_retry = HOST_RETRY_FIRST;
    loop {
        let changed = locks.changed();
        tokio::pin!(changed);
        changed.as_mut().enable();
        // Made before the try, as `changed` is, so that no release elsewhere is missed.
        let released_elsewhere = cluster_locks::released(&cx.conn.server, open);
        let still_open = session
            .state
            .lock()
            .opens
            .get(&open.file_id.volatile)
            .is_some_and(|o| Arc::ptr_eq(o, open));
        if !still_open {
            return Err(NtStatus::RANGE_NOT_LOCKED);
        }
        match take(cx, open, lock) {
            Ok(()) => return Ok(()),
            Err(NtStatus::LOCK_NOT_GRANTED) => {}
            Err(status) => return Err(status),
        }
        let clock = &cx.conn.server.settings.clock;
        let host_wait = async {
            match open.host_locks() {
                Some(_) => clock.sleep(host_retry).await,
                None => std::future::pending().await,
            }
        };
        let elsewhere = async {
            match released_elsewhere {
                Some(released) => released.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = &mut changed => {}
            () = elsewhere => {}
            () = host_wait => host_retry = (host_retry * 2).min(HOST_RETRY_MOST),
            status = pending.cancelled() => return Err(status),
        }
    }
}
