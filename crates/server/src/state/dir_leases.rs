//! Directory leases (SMB 3.x): a client caching a directory's listing under an R or RH lease
//! loses it when a child of the directory is added, removed, renamed in or out, or changes its
//! metadata (MS-SMB2 3.3.4.7; MS-FSA 2.1.4.12 and the parent-oplock breaks of 2.1.5.1,
//! 2.1.5.4 and 2.1.5.14). The lease itself is an ordinary lease on the directory's open-file
//! state ([`crate::state::caching`]), granted by CREATE and broken like a file's lease by conflicting
//! opens of the directory; here are the breaks for changes to its children.
//!
//! A change made through an open whose lease named the directory's lease key as its parent
//! (SMB2_LEASE_FLAG_PARENT_LEASE_KEY_SET) spares that lease: its client made the change and
//! knows of it. As MS-FSA 2.1.4.12.2 compares oplock keys, only the key counts, not the
//! ClientGuid (Windows spares it for another client naming it too, as the smbtorture of later
//! Samba releases expects in `smb2.dirlease.seteof`, `setdos` and the time tests).

use smb3d_fscc::FileInformationClass;
use smb3d_smb2::create::{LeaseFlags, LeaseKey};
use smb3d_smb2::query_info::InfoType;
use smb3d_smb2::set_info::SetInfoRequest;
use smb3d_state::DirChange;
use smb3d_vfs::VfsPath;
use smb3d_vfs::casefold::eq_ignore_case;

use crate::state::caching::{self, Caching, Request};
use crate::state::cluster_notify;
use crate::state::notify::ShareKey;
use crate::state::open::Open;
use crate::state::server::Server;

/// Breaks the leases on the directory `dir` of the share `share` ([`ShareKey::of`] its file
/// system), because one of its children changed; `None` for every leased directory of the
/// share, when changes went unseen. `by` is the changing open's ParentLeaseKey (see
/// [`spared_by`]); `None` for a change from outside SMB, which breaks every lease. Costs one
/// atomic load while no directory lease exists anywhere.
pub(crate) fn break_directory_leases(
    server: &Server,
    share: ShareKey,
    dir: Option<&VfsPath>,
    by: Option<LeaseKey>,
) {
    if !server.files.leases.has_directory_leases() {
        return;
    }
    for file in server.files.leases.leased_directories(share) {
        if dir.is_some_and(|dir| !eq_ignore_case(file.path().as_str(), dir.as_str())) {
            continue;
        }
        let ((), breaks) = file.start_breaks(|state, out| {
            caching::breaks_for_child_change(state, by, out);
        });
        caching::deliver(server, &file, breaks);
    }
}

/// `path` (a file or directory of the share `share`) was added, removed or changed through
/// this server: its parent directory's leases break, here and, on a cluster node, on the other
/// nodes that hold leases there.
pub(crate) fn child_changed(
    server: &Server,
    share: ShareKey,
    path: &VfsPath,
    by: Option<LeaseKey>,
) {
    cluster_notify::forward(
        server,
        share,
        path,
        DirChange::Listing {
            spared: by.map(|key| key.0),
        },
    );
    child_changed_here(server, share, path, by);
}

/// [`child_changed`] for this server's leases only: a change seen on the host or received
/// from another node, which every node learns for itself.
pub(crate) fn child_changed_here(
    server: &Server,
    share: ShareKey,
    path: &VfsPath,
    by: Option<LeaseKey>,
) {
    if !server.files.leases.has_directory_leases() {
        return;
    }
    if let Some((dir, _)) = path.parent_and_name() {
        break_directory_leases(server, share, Some(&dir), by);
    }
}

/// What a successful SET_INFO through `open` changed in directory listings (`before` is the
/// open's path before the request): a rename changes the directory it left and the one it
/// entered; attributes, times, sizes and EAs change the entry in its directory.
pub(crate) fn set_info_done(server: &Server, open: &Open, before: &VfsPath, req: &SetInfoRequest) {
    if !wanted(server) {
        return;
    }
    let path = open.path();
    let by = spared_by(server, open);
    if path != *before {
        child_changed(server, ShareKey::of(&open.vfs), before, by);
        let same_dir =
            before.parent_and_name().map(|(d, _)| d) == path.parent_and_name().map(|(d, _)| d);
        if !same_dir {
            child_changed(server, ShareKey::of(&open.vfs), &path, by);
        }
        return;
    }
    let listed = req.info_type == InfoType::FILE
        && matches!(
            FileInformationClass(req.file_info_class),
            FileInformationClass::FILE_BASIC_INFORMATION
                | FileInformationClass::FILE_END_OF_FILE_INFORMATION
                | FileInformationClass::FILE_ALLOCATION_INFORMATION
                | FileInformationClass::FILE_FULL_EA_INFORMATION
        );
    if listed {
        child_changed(server, ShareKey::of(&open.vfs), &path, by);
    }
}

/// The lease key a change through `open` spares: the ParentLeaseKey its lease was requested
/// with, if any. Looked up only while directory leases exist.
pub(crate) fn spared_by(server: &Server, open: &Open) -> Option<LeaseKey> {
    if !wanted(server) {
        return None;
    }
    let state = open.shared.state.lock();
    let entry = state.opens.iter().find(|e| e.id == open.file_id.volatile)?;
    let Caching::Lease(id) = entry.caching else {
        return None;
    };
    state.leases.iter().find(|l| l.id == id)?.parent
}

/// Whether a change to a listing must be described: a directory lease here, or another
/// node's interest (one atomic load each).
fn wanted(server: &Server) -> bool {
    server.files.leases.has_directory_leases() || cluster_notify::others_interested(server)
}

/// The lease key a CREATE's own changes spare: the ParentLeaseKey of its version 2 lease
/// context, when SMB2_LEASE_FLAG_PARENT_LEASE_KEY_SET says it is there (MS-SMB2 2.2.13.2.10).
pub(crate) fn requested_parent(request: &Request) -> Option<LeaseKey> {
    let Request::Lease(lease) = request else {
        return None;
    };
    let v2 = lease.v2?;
    lease
        .flags
        .contains(LeaseFlags::PARENT_LEASE_KEY_SET)
        .then_some(v2.parent_lease_key)
}
