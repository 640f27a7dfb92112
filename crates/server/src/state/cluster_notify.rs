//! Change notify and directory leases across cluster nodes (docs/cluster.md "Change notify
//! and directory leases across nodes"). A node tells the cluster which directories it watches
//! (CHANGE_NOTIFY, MS-SMB2 3.3.5.19) or holds directory leases on (MS-SMB2 3.3.4.7) while it
//! does; a change made through this node's clients goes to the other nodes interested in its
//! directory, which report it to their watches and break their directory leases as for a
//! change by another client of their own (MS-FSA 2.1.4.17, 2.1.4.12). A single server has no
//! `Settings::cluster_notify`: each call here is one test of an `Option`.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use smb3d_fscc::NotifyAction;
use smb3d_smb2::change_notify::CompletionFilter;
use smb3d_smb2::create::LeaseKey;
use smb3d_state::{DirChange, DirEvent};
use smb3d_vfs::VfsPath;

use crate::state::dir_leases;
use crate::state::notify::ShareKey;
use crate::state::server::Server;
use crate::state::share::{Share, ShareKind};

/// One interest declared: share path, directory, whether its tree is watched.
type Interest = (String, String, bool);

/// The interests this node declared, by the volatile FileId of the open holding them (a
/// watch, a directory lease).
#[derive(Default)]
pub(crate) struct Interests {
    by_open: Mutex<HashMap<u64, Vec<Interest>>>,
}

/// The open `id` watches `dir` of `share` (its tree too with `tree`) or holds a lease on it:
/// other nodes' changes there are wanted until it closes.
pub(crate) fn interested(server: &Server, id: u64, share: &Share, dir: &VfsPath, tree: bool) {
    let Some(cluster) = &server.settings.cluster_notify else {
        return;
    };
    cluster.interested(&share.path, dir.as_str(), tree);
    server
        .cluster_interests
        .by_open
        .lock()
        .entry(id)
        .or_default()
        .push((share.path.clone(), dir.as_str().to_owned(), tree));
}

/// The open `id` closed: its interests end.
pub(crate) fn closed(server: &Server, id: u64) {
    let Some(cluster) = &server.settings.cluster_notify else {
        return;
    };
    let Some(held) = server.cluster_interests.by_open.lock().remove(&id) else {
        return;
    };
    for (share, dir, tree) in held {
        cluster.uninterested(&share, &dir, tree);
    }
}

/// The directory `before` of `share` was renamed through this node to `after`: the interests
/// in it and below it move with it, so that other nodes send changes under its new path.
pub(crate) fn renamed(server: &Server, share: &Share, before: &VfsPath, after: &VfsPath) {
    let Some(cluster) = &server.settings.cluster_notify else {
        return;
    };
    let (from, to) = (before.as_str(), after.as_str());
    let moved = |dir: &str| -> Option<String> {
        let rest = dir.strip_prefix(from)?;
        (rest.is_empty() || rest.starts_with('/')).then(|| format!("{to}{rest}"))
    };
    let mut by_open = server.cluster_interests.by_open.lock();
    for (interest_share, dir, tree) in by_open.values_mut().flatten() {
        if *interest_share != share.path {
            continue;
        }
        if let Some(new_dir) = moved(dir) {
            cluster.interested(interest_share, &new_dir, *tree);
            cluster.uninterested(interest_share, dir, *tree);
            *dir = new_dir;
        }
    }
}

/// Whether another node is interested in some directory (one atomic load on a cluster node).
pub(crate) fn others_interested(server: &Server) -> bool {
    server
        .settings
        .cluster_notify
        .as_ref()
        .is_some_and(|cluster| cluster.anyone_else())
}

/// Sends a change made through this node to the other nodes interested in its directory.
pub(crate) fn forward(server: &Server, share: ShareKey, path: &VfsPath, change: DirChange) {
    let Some(cluster) = &server.settings.cluster_notify else {
        return;
    };
    if !cluster.anyone_else() {
        return;
    }
    let Some(share) = server
        .shares()
        .iter()
        .find(|s| matches!(&s.kind, ShareKind::Disk(vfs) if ShareKey::of(vfs) == share))
        .map(|s| s.path.clone())
    else {
        return;
    };
    cluster.changed(DirEvent {
        share,
        path: path.as_str().to_owned(),
        change,
    });
}

/// Starts sending this node's changes to the cluster and handing the other nodes' changes to
/// this node's watches and leases; nothing without a cluster. Call once, on the runtime.
pub(crate) fn follow(server: &Arc<Server>) {
    let Some(cluster) = &server.settings.cluster_notify else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let weak = Arc::downgrade(server);
    server
        .notify
        .forward_to(Box::new(move |share, path, action, filter| {
            if let Some(server) = weak.upgrade() {
                let change = DirChange::Notify {
                    action: action.0,
                    filter: filter.0,
                };
                forward(&server, share, path, change);
            }
        }));
    let weak = Arc::downgrade(server);
    cluster.on_event(Arc::new(move |event: DirEvent| {
        if let Some(server) = weak.upgrade() {
            // Lease breaks start their timers on the server's runtime.
            let _runtime = runtime.enter();
            deliver(&server, &event);
        }
    }));
}

/// Reports another node's change to this node's watches and directory leases; an event of a
/// share or path this node does not serve is dropped.
fn deliver(server: &Server, event: &DirEvent) {
    let Some(share) = server.shares().iter().find_map(|s| match &s.kind {
        ShareKind::Disk(vfs) if s.path == event.share => Some(ShareKey::of(vfs)),
        _ => None,
    }) else {
        tracing::debug!(
            "cluster: a change in {}, which this node does not serve",
            event.share
        );
        return;
    };
    let path = || {
        let parsed = VfsPath::parse(&event.path);
        if parsed.is_err() {
            tracing::warn!(
                "cluster: ignoring a change of the malformed path {:?}",
                event.path
            );
        }
        parsed.ok()
    };
    match event.change {
        DirChange::Notify { action, filter } => {
            if let Some(path) = path() {
                server.notify.report_here(
                    share,
                    &path,
                    NotifyAction(action),
                    CompletionFilter(filter),
                );
            }
        }
        DirChange::Listing { spared } => {
            if let Some(path) = path() {
                dir_leases::child_changed_here(server, share, &path, spared.map(LeaseKey));
            }
        }
        // Changes sent to this node were lost: its watches of the share list again and its
        // directory leases there break, as when the host's watch overflows.
        DirChange::Lost => {
            tracing::info!(
                "cluster: changes in {} made through another node were lost; watches list again",
                event.share
            );
            server.notify.lost(share);
            dir_leases::break_directory_leases(server, share, None, None);
        }
    }
}
