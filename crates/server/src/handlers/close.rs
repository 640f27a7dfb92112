//! CLOSE: MS-SMB2 3.3.5.10.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use smb3d_dtyp::NtStatus;
use smb3d_smb2::close::{CloseAttributes, CloseFlags, CloseRequest, CloseResponse};
use smb3d_wire::Writer;

use crate::audit;
use crate::blocking::{Wait, as_user};
use crate::connection::Ctx;
use crate::dir_leases;
use crate::escape::escape;
use crate::files::Deletion;
use crate::handlers::lookup_open;
use crate::notify::ShareKey;
use crate::open::Open;
use crate::server::Server;
use crate::status_map::VfsResultExt;
use smb3d_fscc::NotifyAction;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = CloseRequest::decode(pdu).map_err(|_| NtStatus::INVALID_PARAMETER)?;
    let open = lookup_open(cx, req.file_id)?;
    let session = cx.session.clone().ok_or(NtStatus::USER_SESSION_DELETED)?;
    session.state.lock().opens.remove(&open.file_id.volatile);

    // With POSTQUERY_ATTRIB the attributes are taken before a delete-on-close removes the
    // file; what is returned describes the file as it was closed.
    let mut response = CloseResponse { attributes: None };
    let wrote = open.finish_writes();
    if req.flags.contains(CloseFlags::POSTQUERY_ATTRIB)
        && let Ok(meta) = open.io(|| open.meta())
    {
        response.attributes = Some(CloseAttributes {
            times: meta.times(),
            allocation_size: meta.allocation_size(),
            end_of_file: meta.end_of_file(),
            file_attributes: meta.attributes().0,
        });
    }
    close_written(&cx.conn.server, &open, wrote);
    if cx.chain.file_id == Some(open.file_id) {
        cx.chain.file_id = None;
    }
    response.encode(w);
    Ok(NtStatus::SUCCESS)
}

/// Ends an open that was already removed from its session: a delete-on-close open leaves the
/// file (or its stream) delete-pending, and the last open of a delete-pending file or stream
/// deletes it (MS-FSA 2.1.5.4), with the credentials of the open that made it delete-pending.
pub(crate) fn close_open(server: &Server, open: &Arc<Open>) {
    close_written(server, open, false);
}

/// [`close_open`] for an open whose writes were finished already; `wrote` says whether it had
/// written. The close of a file that was written changes it in its directory's listing, which
/// breaks the directory's leases (smbtorture smb2.lease.v2_request), as does its deletion.
fn close_written(server: &Server, open: &Arc<Open>, wrote: bool) {
    let wrote = open.finish_writes() || wrote;
    // Known before the open leaves its lease behind.
    let changed_by = dir_leases::spared_by(server, open);
    // Its locks go (MS-FSA 2.1.5.4), lock requests waiting on this open learn it closed, and
    // so do its change notifications.
    open.shared.locks.release_owner(open.file_id.volatile);
    if let Some(share) = server.notify.closed(open.file_id.volatile) {
        server.host_changes.release(share);
    }
    if open.watches_host.swap(false, Ordering::Relaxed) {
        server.host_changes.release(ShareKey::of(&open.vfs));
    }
    if server.durable.forget(open.file_id) {
        crate::persistent::remove(server, open.file_id.persistent);
    }
    if open.delete_on_close {
        server.files.set_delete_pending(
            &open.shared,
            open.stream_key().as_ref(),
            Some(open.deleter()),
        );
    }
    let path = open.path();
    let released = server.files.release(&open.shared, open.file_id.volatile);
    if wrote && !matches!(released, Some(Deletion::File(..))) {
        dir_leases::child_changed(server, ShareKey::of(&open.vfs), &path, changed_by);
    }
    let vfs = open.vfs.as_ref();
    // The deletion runs as whoever asked for it, not as this open's user (see `Deleter`).
    let (deleted, by) = match released {
        None => {
            if open.is_directory && open.shared.delete_pending() {
                server.notify.delete_pending(&open.shared);
            }
            return;
        }
        Some(Deletion::File(path, by)) => {
            let deleted = as_user(vfs, &by.identity, Wait::Long, || {
                vfs.unlink(&path).status()?;
                open.share.sync_parent(vfs, &path).status()
            })
            .inspect(|()| {
                server.notify.report_name(
                    ShareKey::of(&open.vfs),
                    &path,
                    NotifyAction::REMOVED,
                    open.is_directory,
                );
                dir_leases::child_changed(server, ShareKey::of(&open.vfs), &path, changed_by);
            });
            (deleted, by)
        }
        Some(Deletion::Stream(by)) => {
            let deleted = match &open.stream {
                Some(stream) => as_user(vfs, &by.identity, Wait::Long, || stream.remove().status()),
                None => Ok(()),
            };
            (deleted, by)
        }
    };
    match deleted {
        Ok(()) => {
            if let Some(who) = &by.audit {
                let stream = open.stream.as_ref().map(|s| s.name());
                audit::deleted(who, &path, stream.as_deref(), open.is_directory);
            }
        }
        Err(e) => tracing::debug!(
            path = &*escape(path.as_str()),
            "delete on close failed: {e}"
        ),
    }
}
