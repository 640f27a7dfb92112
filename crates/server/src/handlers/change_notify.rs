//! CHANGE_NOTIFY: MS-SMB2 3.3.5.19, with the watch semantics of MS-FSA 2.1.5.11.

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_fscc::NotifyListEncoder;
use smb3d_smb2::change_notify::{ChangeNotifyFlags, ChangeNotifyRequest, ChangeNotifyResponse};

use crate::handlers::lookup_open;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::request::reply::{Reply, go_async};
use crate::state::cluster_notify;
use crate::state::notify::{Kept, ShareKey};

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    reply: &mut Reply<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = ChangeNotifyRequest::decode(pdu).map_err(malformed)?;
    let open = lookup_open(cx, req.file_id)?;
    if req.output_buffer_length > cx.conn.server.settings.max_io_size {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if !open.is_directory || open.stream.is_some() {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if !open.may(AccessMask::FILE_LIST_DIRECTORY) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    // MS-FSA 2.1.5.11: a directory already delete-pending is watched no more. This also
    // answers a request that a change made through another connection overtook.
    if open.shared.delete_pending() {
        return Err(NtStatus::DELETE_PENDING);
    }
    let server = &cx.conn.server;
    let tree = req.flags.contains(ChangeNotifyFlags::WATCH_TREE);
    let (watch, new) = server.notify.watch(
        open.file_id.volatile,
        ShareKey::of(&open.vfs),
        &open.shared,
        req.completion_filter,
        tree,
    );
    if new {
        server.host_changes.acquire(server, &open.vfs);
        // Changes made through other cluster nodes complete it too (MS-FSA 2.1.4.17).
        cluster_notify::interested(
            server,
            open.file_id.volatile,
            &open.share,
            &open.path(),
            tree,
        );
    }
    let limit = req.output_buffer_length as usize;
    let ticket = watch.enqueue(cx.hdr.message_id);
    let mut pending = None;
    let kept = loop {
        let woken = watch.woken();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let kept = watch.take(&ticket, limit);
        if kept.closed || kept.delete_pending || kept.overflow || !kept.changes.is_empty() {
            break kept;
        }
        let pending = match &pending {
            Some(pending) => pending,
            None => pending.insert(go_async(cx, reply)?),
        };
        tokio::select! {
            () = &mut woken => {}
            status = pending.cancelled() => return Err(status),
        }
    };
    respond(reply, kept, limit)
}

/// Writes the response for what the watch held.
fn respond(reply: &mut Reply<'_>, kept: Kept, limit: usize) -> Result<NtStatus, NtStatus> {
    if kept.delete_pending && !kept.closed {
        return Err(NtStatus::DELETE_PENDING);
    }
    let mut w = reply.writer();
    let status = if kept.closed {
        NtStatus::NOTIFY_CLEANUP
    } else if kept.overflow {
        NtStatus::NOTIFY_ENUM_DIR
    } else {
        NtStatus::SUCCESS
    };
    let pending = ChangeNotifyResponse::begin(&mut w);
    if status == NtStatus::SUCCESS {
        let mut list = NotifyListEncoder::new(&w, limit);
        for (action, name) in &kept.changes {
            list.push(&mut w, *action, name);
        }
    }
    ChangeNotifyResponse::finish(&mut w, pending);
    Ok(status)
}
