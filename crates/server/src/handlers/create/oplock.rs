//! CREATE's oplock and lease phase (MS-SMB2 3.3.5.9, 3.3.5.9.8, 3.3.5.9.11): what the request
//! asks for, and the registration of the open, which waits asynchronously (interim
//! STATUS_PENDING) while the breaks it caused are acknowledged or time out.

use std::sync::Arc;

use smb3d_dtyp::NtStatus;
use smb3d_smb2::create::{CreateContext, CreateRequest, LeaseKey, OplockLevel};
use smb3d_smb2::negotiate::Capabilities;
use smb3d_vfs::VfsPath;
use smb3d_vfs::casefold::eq_ignore_case;

use crate::fs::streams;
use crate::request::ctx::Ctx;
use crate::request::reply::{Reply, wait_async};
use crate::state::caching::{
    self, Breaks, Granted, KernelHold, LeaseId, LeaseRequest, Opening, Request,
};
use crate::state::files::{Admission, FileKey, OpenEntry, SharedFile};

/// MS-SMB2 3.3.5.9.8: a lease key the client holds on another file (or stream) cannot name
/// this one (STATUS_INVALID_PARAMETER), checked before anything is opened or created. A lease
/// follows its file through renames.
pub(super) fn check_lease_key(
    cx: &Ctx<'_>,
    req: &CreateRequest<'_>,
    path: &VfsPath,
    stream: Option<&str>,
) -> Result<(), NtStatus> {
    let Request::Lease(lease) = request(cx, req, false) else {
        return Ok(());
    };
    let Some((file, leased_stream)) = cx.conn.server.files.leases.lookup(lease.id) else {
        return Ok(());
    };
    let same_file = eq_ignore_case(file.path().as_str(), path.as_str());
    let same_stream = leased_stream == stream.map(streams::key);
    if same_file && same_stream {
        Ok(())
    } else {
        Err(NtStatus::INVALID_PARAMETER)
    }
}

/// The caching a CREATE asks for. Leases need SMB 2.1 (the version 2 context SMB 3), a nonzero
/// key and a RequestedOplockLevel of LEASE; anything else is no request. Directories get no
/// oplocks; they get leases (R or RH, never W) only through the version 2 context, on a
/// connection that negotiated directory leasing (MS-SMB2 3.3.5.9.11).
pub(super) fn request(cx: &Ctx<'_>, req: &CreateRequest<'_>, directory: bool) -> Request {
    let asked = if directory {
        directory_request(cx, req)
    } else {
        file_request(cx, req)
    };
    scale_out(cx, asked)
}

/// MS-SMB2 3.3.5.9, 3.3.5.9.8 and 3.3.5.9.11: on a scale-out share (Share.Type
/// STYPE_CLUSTER_SOFS, announced to SMB 3 as SCALEOUT; `scale_out` of a cluster node's share)
/// an SMB 3 client asking for a batch oplock is given level II and a lease keeps only its read
/// caching, so no client of one node caches writes or handles that another node's client would
/// need broken first. A general cluster share keeps one server's caching (cross-node breaks).
fn scale_out(cx: &Ctx<'_>, asked: Request) -> Request {
    if !scale_out_caching(cx) {
        return asked;
    }
    match asked {
        Request::Oplock(OplockLevel::BATCH) => Request::Oplock(OplockLevel::II),
        Request::Lease(lease) => Request::Lease(LeaseRequest {
            state: lease.state & caching::R,
            ..lease
        }),
        other => other,
    }
}

/// Whether the request's opens get scale-out caching: an SMB 3 connection's tree of a cluster
/// node's scale-out share (one server tests only the `Option` of its cluster).
fn scale_out_caching(cx: &Ctx<'_>) -> bool {
    cx.conn.server.settings.cluster_dialect.is_some()
        && cx.negotiated.dialect >= 0x0300
        && cx.tree.as_ref().is_some_and(|tree| tree.share.scale_out)
}

/// The oplock level a replayed CREATE asking for `level` is answered with (MS-SMB2
/// 3.3.5.9.10): the level asked, as a new open would be granted it, so level II for a batch
/// oplock on a scale-out share (3.3.5.9).
pub(super) fn replay_level(cx: &Ctx<'_>, level: OplockLevel) -> OplockLevel {
    if level == OplockLevel::BATCH && scale_out_caching(cx) {
        OplockLevel::II
    } else {
        level
    }
}

/// The caching a CREATE of a directory asks for.
fn directory_request(cx: &Ctx<'_>, req: &CreateRequest<'_>) -> Request {
    let directory_leasing =
        Capabilities(cx.negotiated.server_capabilities).contains(Capabilities::DIRECTORY_LEASING);
    match file_request(cx, req) {
        Request::Lease(lease) if lease.v2.is_some() && directory_leasing => {
            Request::Lease(LeaseRequest {
                state: lease.state & (caching::R | caching::H),
                ..lease
            })
        }
        _ => Request::None,
    }
}

/// The caching a CREATE of a file asks for.
fn file_request(cx: &Ctx<'_>, req: &CreateRequest<'_>) -> Request {
    match req.requested_oplock_level {
        OplockLevel::LEASE => {
            let dialect = cx.negotiated.dialect;
            let lease = req.contexts.iter().flatten().find_map(|c| match c {
                CreateContext::RequestLease(lease) => Some(lease),
                _ => None,
            });
            match lease {
                Some(lease)
                    if dialect >= 0x0210
                        && lease.lease_key != LeaseKey::default()
                        && (lease.v2.is_none() || dialect >= 0x0300) =>
                {
                    Request::Lease(LeaseRequest {
                        id: LeaseId {
                            client: cx.negotiated.client_guid,
                            key: lease.lease_key,
                        },
                        state: lease.lease_state.0,
                        v2: lease.v2,
                        flags: lease.lease_flags,
                    })
                }
                _ => Request::None,
            }
        }
        level @ (OplockLevel::II | OplockLevel::EXCLUSIVE | OplockLevel::BATCH) => {
            Request::Oplock(level)
        }
        _ => Request::None,
    }
}

/// Registers the open in the open-file table with the caching it is granted. When it conflicts
/// with other opens' caching, the breaks go out and the request waits (going async) until
/// their holders acknowledge, close or time out, then tries again.
pub(super) async fn register(
    cx: &mut Ctx<'_>,
    reply: &mut Reply<'_>,
    key: FileKey,
    path: &VfsPath,
    entry: OpenEntry,
    mut opening: Opening,
    kernel: Option<KernelHold<'_>>,
) -> Result<(Arc<SharedFile>, Granted), NtStatus> {
    let server = cx.conn.server.clone();
    loop {
        // Watch the file before registering, so that no change after the check is missed.
        let watched = server.files.get(key);
        let change = watched.as_deref().map(SharedFile::caching_change);
        tokio::pin!(change);
        if let Some(change) = change.as_mut().as_pin_mut() {
            change.enable();
        }
        let mut breaks = Breaks::default();
        let admitted =
            server
                .files
                .register(key, path, entry.clone(), &opening, kernel, &mut breaks);
        let file = match &admitted {
            Ok(Admission::Granted(file, _) | Admission::Wait(file)) => Some(file.clone()),
            Err(_) => watched.clone(),
        };
        if let Some(file) = &file {
            caching::deliver(&server, file, breaks);
        }
        let waited_on = match admitted? {
            Admission::Granted(file, granted) => return Ok((file, granted)),
            Admission::Wait(file) => file,
        };
        opening.first_attempt = false;
        let same = watched.as_ref().is_some_and(|w| Arc::ptr_eq(w, &waited_on));
        let Some(change) = change.as_mut().as_pin_mut().filter(|_| same) else {
            // The file's entry was replaced meanwhile: look again at once.
            continue;
        };
        wait_async(cx, reply, change).await?;
    }
}
