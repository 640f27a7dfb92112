//! Changes made on the host file system by other processes than smb3d, for change notify
//! (MS-SMB2 3.3.5.19 completes a watch on any change to the directory, whoever made it) and
//! directory leases (a client's cached listing is stale whoever changed the directory).
//!
//! A share's back end watches for them ([`Vfs::watch_outside`]) only while something needs
//! them: a CHANGE_NOTIFY watch, or a directory open holding a directory lease. Each acquires
//! the share's watch and releases it when done, and the last release stops it. The changes go
//! to the server's [`NotifyHub`](crate::state::notify::NotifyHub) and break directory leases as the
//! handlers' own do.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use smb3d_vfs::{OutsideChange, OutsideWatch, Vfs};

use crate::state::dir_leases;
use crate::state::notify::ShareKey;
use crate::state::server::Server;

/// The running watches of outside changes, by share.
#[derive(Default)]
pub(crate) struct HostChanges {
    running: Mutex<HashMap<ShareKey, Running>>,
}

struct Running {
    users: usize,
    /// `None` when the back end cannot watch (kept, so that it is not asked again per user).
    watch: Option<OutsideWatch>,
}

impl HostChanges {
    /// One more user needs the outside changes of `vfs`'s share.
    pub fn acquire(&self, server: &Arc<Server>, vfs: &Arc<dyn Vfs>) {
        let share = ShareKey::of(vfs);
        let mut running = self.running.lock();
        if let Some(entry) = running.get_mut(&share) {
            entry.users += 1;
            return;
        }
        // Lease breaks start their timers on the runtime, from the back end's own thread.
        let watch = tokio::runtime::Handle::try_current()
            .ok()
            .and_then(|runtime| {
                let server = Arc::downgrade(server);
                vfs.watch_outside(Box::new(move |change| {
                    if let Some(server) = Weak::upgrade(&server) {
                        let _runtime = runtime.enter();
                        deliver(&server, share, &change);
                    }
                }))
            });
        running.insert(share, Running { users: 1, watch });
    }

    /// A user of `share`'s outside changes no longer needs them.
    pub fn release(&self, share: ShareKey) {
        let mut running = self.running.lock();
        let Some(entry) = running.get_mut(&share) else {
            return;
        };
        entry.users -= 1;
        if entry.users == 0 {
            let stopped = running.remove(&share);
            drop(running);
            drop(stopped);
        }
    }

    /// Shares whose outside changes are being watched (for tests and status).
    pub fn watching(&self) -> usize {
        self.running
            .lock()
            .values()
            .filter(|entry| entry.watch.is_some())
            .count()
    }
}

/// What a change made on the host means for the share's watches and directory leases.
fn deliver(server: &Server, share: ShareKey, change: &OutsideChange) {
    server.notify.outside_change(share, change);
    match change {
        OutsideChange::Added { path, .. }
        | OutsideChange::Removed { path, .. }
        | OutsideChange::Written { path }
        | OutsideChange::MetadataChanged { path, .. } => {
            dir_leases::child_changed_here(server, share, path, None);
        }
        OutsideChange::Renamed { from, to, .. } => {
            dir_leases::child_changed_here(server, share, from, None);
            dir_leases::child_changed_here(server, share, to, None);
        }
        OutsideChange::Lost => dir_leases::break_directory_leases(server, share, None, None),
    }
}
