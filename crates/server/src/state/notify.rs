//! Change notification (MS-SMB2 3.3.5.19, MS-FSA 2.1.5.11 and 2.1.4.17): directory watches
//! of opens, and the changes the handlers report to them.
//!
//! The first CHANGE_NOTIFY on a directory open sets up its watch (filter and WATCH_TREE); from
//! then on, changes that match are kept until a CHANGE_NOTIFY takes them, so none is lost
//! between two requests. Kept changes beyond what the request's buffer holds become
//! STATUS_NOTIFY_ENUM_DIR ("list the directory again"). Closing the open ends its waiting
//! requests with STATUS_NOTIFY_CLEANUP.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use smb3d_fscc::{FileBasicInformation, FileInformationClass, NotifyAction, notify_entry_len};
use smb3d_smb2::change_notify::CompletionFilter;
use smb3d_smb2::query_info::InfoType;
use smb3d_smb2::set_info::SetInfoRequest;
use smb3d_vfs::{OutsideChange, Vfs, VfsPath};
use smb3d_wire::FileTime;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use crate::state::files::SharedFile;
use crate::state::open::Open;

/// Changes a watch keeps before it gives up and answers STATUS_NOTIFY_ENUM_DIR, whatever the
/// client's buffer (bounds the memory an idle watch can take).
const MAX_KEPT_BYTES: usize = 64 * 1024;

/// Which share a change happened in: the identity of the share's file system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ShareKey(usize);

impl ShareKey {
    pub fn of(vfs: &Arc<dyn Vfs>) -> Self {
        Self(Arc::as_ptr(vfs).cast::<u8>() as usize)
    }
}

/// What a watch holds for the next request.
#[derive(Default)]
pub(crate) struct Kept {
    pub changes: Vec<(NotifyAction, String)>,
    /// Encoded size of `changes`.
    bytes: usize,
    /// More changes came than could be kept: the answer is STATUS_NOTIFY_ENUM_DIR.
    pub overflow: bool,
    /// The open closed: waiting requests end with STATUS_NOTIFY_CLEANUP.
    pub closed: bool,
    /// The watched directory is delete-pending: requests end with STATUS_DELETE_PENDING.
    pub delete_pending: bool,
    /// The largest OutputBufferLength of the requests so far.
    limit: usize,
}

impl Kept {
    /// Drops the changes kept: the next answer is STATUS_NOTIFY_ENUM_DIR.
    fn give_up(&mut self) {
        self.overflow = true;
        self.changes.clear();
        self.bytes = 0;
    }
}

/// The requests waiting on a watch by MessageId, served oldest first (MS-FSA 2.1.5.11:
/// changes complete the oldest outstanding request; their tasks may start in any order).
#[derive(Default)]
struct Queue {
    waiting: VecDeque<u64>,
}

/// The watch of one directory open (MS-FSA 2.1.1.6 Open.NotifyChange).
pub(crate) struct Watch {
    share: ShareKey,
    /// The watched directory, for its current path.
    dir: Arc<SharedFile>,
    recursive: bool,
    filter: CompletionFilter,
    kept: Mutex<Kept>,
    queue: Mutex<Queue>,
    wake: Notify,
}

/// A request's place in a watch's queue; leaving it (however the request ends) lets the next
/// request be served.
pub(crate) struct Ticket<'a> {
    watch: &'a Watch,
    number: u64,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        self.watch
            .queue
            .lock()
            .waiting
            .retain(|n| *n != self.number);
        self.watch.wake.notify_waiters();
    }
}

impl Watch {
    /// Puts the request with `message_id` in the queue.
    pub fn enqueue(&self, message_id: u64) -> Ticket<'_> {
        let mut queue = self.queue.lock();
        let at = queue.waiting.partition_point(|n| *n < message_id);
        queue.waiting.insert(at, message_id);
        Ticket {
            watch: self,
            number: message_id,
        }
    }

    /// Takes what the response to the request holding `ticket` reports, allowing `limit` bytes
    /// of entries: the kept changes if it is the oldest request, else nothing yet. The end of
    /// the watch concerns every request.
    pub fn take(&self, ticket: &Ticket<'_>, limit: usize) -> Kept {
        let mut kept = self.kept.lock();
        kept.limit = kept.limit.max(limit);
        if kept.closed || kept.delete_pending {
            return Kept {
                closed: kept.closed,
                delete_pending: kept.delete_pending,
                ..Kept::default()
            };
        }
        if self.queue.lock().waiting.front() != Some(&ticket.number) {
            return Kept::default();
        }
        let mut taken = std::mem::take(&mut *kept);
        kept.limit = taken.limit;
        if taken.bytes > limit {
            taken.overflow = true;
        }
        if taken.overflow {
            taken.changes.clear();
        }
        taken
    }

    /// A future resolving at the next change or close; enable it before calling `take`.
    pub fn woken(&self) -> Notified<'_> {
        self.wake.notified()
    }

    /// The name of `dir\name` as seen from this watch, if the watch covers it.
    fn relative(&self, dir: &VfsPath, name: &str) -> Option<String> {
        let watched = self.dir.path();
        if *dir == watched {
            return Some(name.to_owned());
        }
        if !self.recursive {
            return None;
        }
        let below = if watched.is_root() {
            dir.as_str()
        } else {
            dir.as_str()
                .strip_prefix(watched.as_str())?
                .strip_prefix('/')?
        };
        Some(format!("{}\\{name}", below.replace('/', "\\")))
    }

    fn keep(&self, action: NotifyAction, name: String) {
        let mut kept = self.kept.lock();
        if kept.closed || kept.overflow {
            return;
        }
        let bytes = kept.bytes + notify_entry_len(&name).next_multiple_of(4);
        if bytes > kept.limit.min(MAX_KEPT_BYTES) {
            kept.give_up();
        } else {
            kept.changes.push((action, name));
            kept.bytes = bytes;
        }
        drop(kept);
        self.wake.notify_waiters();
    }
}

/// Where a cluster node sends the changes made through it, for other nodes' watches.
pub(crate) type Forward =
    Box<dyn Fn(ShareKey, &VfsPath, NotifyAction, CompletionFilter) + Send + Sync>;

/// The server's watches, by the volatile FileId of their open.
#[derive(Default)]
pub(crate) struct NotifyHub {
    watches: Mutex<HashMap<u64, Arc<Watch>>>,
    /// `watches.len()`, so that changes cost nothing while nobody watches.
    count: AtomicUsize,
    /// A cluster node's [`Forward`]; unset on a single server.
    forward: OnceLock<Forward>,
}

impl NotifyHub {
    /// The watch of open `id`, set up with `filter` and `recursive` by its first request, and
    /// whether this request set it up.
    pub fn watch(
        &self,
        id: u64,
        share: ShareKey,
        dir: &Arc<SharedFile>,
        filter: CompletionFilter,
        recursive: bool,
    ) -> (Arc<Watch>, bool) {
        let mut watches = self.watches.lock();
        let mut new = false;
        let watch = watches
            .entry(id)
            .or_insert_with(|| {
                new = true;
                Arc::new(Watch {
                    share,
                    dir: dir.clone(),
                    recursive,
                    filter,
                    kept: Mutex::new(Kept::default()),
                    queue: Mutex::new(Queue::default()),
                    wake: Notify::new(),
                })
            })
            .clone();
        self.count.store(watches.len(), Ordering::Relaxed);
        (watch, new)
    }

    /// The open `id` closed: its waiting requests end with STATUS_NOTIFY_CLEANUP. Returns the
    /// share of the watch that ended, if the open had one.
    pub fn closed(&self, id: u64) -> Option<ShareKey> {
        if self.count.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut watches = self.watches.lock();
        let watch = watches.remove(&id);
        self.count.store(watches.len(), Ordering::Relaxed);
        drop(watches);
        let watch = watch?;
        watch.kept.lock().closed = true;
        watch.wake.notify_waiters();
        Some(watch.share)
    }

    /// The directory `dir` became delete-pending while still open: its watches end their
    /// requests with STATUS_DELETE_PENDING (Windows, smbtorture smb2.notify.rmdir*).
    pub fn delete_pending(&self, dir: &Arc<SharedFile>) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let watches: Vec<Arc<Watch>> = self
            .watches
            .lock()
            .values()
            .filter(|w| Arc::ptr_eq(&w.dir, dir))
            .cloned()
            .collect();
        for watch in watches {
            watch.kept.lock().delete_pending = true;
            watch.wake.notify_waiters();
        }
    }

    /// From now on, changes made through this node also go to `forward` (a cluster node).
    pub fn forward_to(&self, forward: Forward) {
        let _ = self.forward.set(forward);
    }

    /// Whether a change must be described even while no watch of this node wants it: another
    /// node may.
    pub fn forwards(&self) -> bool {
        self.forward.get().is_some()
    }

    /// Reports a change made through this server to `path` in the share `share` to the
    /// watches it concerns, here and, on a cluster node, on other nodes.
    pub fn report(
        &self,
        share: ShareKey,
        path: &VfsPath,
        action: NotifyAction,
        filter: CompletionFilter,
    ) {
        if let Some(forward) = self.forward.get() {
            forward(share, path, action, filter);
        }
        self.report_here(share, path, action, filter);
    }

    /// Reports a change to this server's watches only: one seen on the host or received from
    /// another node, which every node learns for itself.
    pub fn report_here(
        &self,
        share: ShareKey,
        path: &VfsPath,
        action: NotifyAction,
        filter: CompletionFilter,
    ) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Some((dir, name)) = path.parent_and_name() else {
            return;
        };
        let watches: Vec<Arc<Watch>> = self
            .watches
            .lock()
            .values()
            .filter(|w| w.share == share && w.filter.intersects(filter))
            .cloned()
            .collect();
        for watch in watches {
            if let Some(relative) = watch.relative(&dir, name) {
                watch.keep(action, relative);
            }
        }
    }

    /// Reports that `path` (a file or, with `directory`, a directory) was added or removed.
    pub fn report_name(
        &self,
        share: ShareKey,
        path: &VfsPath,
        action: NotifyAction,
        directory: bool,
    ) {
        self.report(share, path, action, name_filter(directory));
    }

    /// Reports a rename made through this server (see [`NotifyHub::report`]).
    pub fn report_rename(&self, share: ShareKey, from: &VfsPath, to: &VfsPath, directory: bool) {
        Self::rename(from, to, directory, &|path, action, filter| {
            self.report(share, path, action, filter);
        });
    }

    /// Reports a rename to `report`: old and new names in the same directory, else a removal
    /// and an addition (MS-FSA 2.1.5.14.11).
    fn rename(
        from: &VfsPath,
        to: &VfsPath,
        directory: bool,
        report: &dyn Fn(&VfsPath, NotifyAction, CompletionFilter),
    ) {
        let same_dir =
            from.parent_and_name().map(|(d, _)| d) == to.parent_and_name().map(|(d, _)| d);
        let (old, new) = if same_dir {
            (
                NotifyAction::RENAMED_OLD_NAME,
                NotifyAction::RENAMED_NEW_NAME,
            )
        } else {
            (NotifyAction::REMOVED, NotifyAction::ADDED)
        };
        report(from, old, name_filter(directory));
        report(to, new, name_filter(directory));
        // A renamed file is given the ARCHIVE attribute (MS-FSA 2.1.5.14.11), which watches of
        // attributes see as a modification under the new name.
        if !directory {
            report(to, NotifyAction::MODIFIED, CompletionFilter::ATTRIBUTES);
        }
    }

    /// Reports a change another process made in the share `share` (MS-FSA 2.1.4.17 reports
    /// changes to a directory whoever makes them).
    /// A host change is not sent to other nodes: on a shared file system each node's host
    /// sees its own.
    pub fn outside_change(&self, share: ShareKey, change: &OutsideChange) {
        match change {
            OutsideChange::Added { path, directory } => {
                self.report_here(share, path, NotifyAction::ADDED, name_filter(*directory));
            }
            OutsideChange::Removed { path, directory } => {
                self.report_here(share, path, NotifyAction::REMOVED, name_filter(*directory));
            }
            OutsideChange::Renamed {
                from,
                to,
                directory,
            } => Self::rename(from, to, *directory, &|path, action, filter| {
                self.report_here(share, path, action, filter);
            }),
            OutsideChange::Written { path } => self.report_here(
                share,
                path,
                NotifyAction::MODIFIED,
                CompletionFilter::LAST_WRITE | CompletionFilter::SIZE,
            ),
            // The host's attribute change may be any of these (mode, owner, times, xattrs).
            OutsideChange::MetadataChanged { path, .. } => self.report_here(
                share,
                path,
                NotifyAction::MODIFIED,
                CompletionFilter::ATTRIBUTES
                    | CompletionFilter::LAST_WRITE
                    | CompletionFilter::LAST_ACCESS
                    | CompletionFilter::CREATION
                    | CompletionFilter::SECURITY
                    | CompletionFilter::EA,
            ),
            OutsideChange::Lost => self.lost(share),
        }
    }

    /// Changes in `share` went unseen (by the host's watch, or sent by another node and lost):
    /// every watch of it answers STATUS_NOTIFY_ENUM_DIR.
    pub fn lost(&self, share: ShareKey) {
        let watches: Vec<Arc<Watch>> = self
            .watches
            .lock()
            .values()
            .filter(|w| w.share == share)
            .cloned()
            .collect();
        for watch in watches {
            watch.kept.lock().give_up();
            watch.wake.notify_waiters();
        }
    }

    /// Number of watches (for tests and status).
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }
}

/// Reports what a successful SET_INFO changed (MS-FSA 2.1.5.14): a rename, or a modification
/// of attributes, times, size, EAs or the security descriptor. `before` is the open's path
/// before the request.
pub(crate) fn set_info_done(hub: &NotifyHub, open: &Open, before: &VfsPath, req: &SetInfoRequest) {
    if hub.len() == 0 && !hub.forwards() {
        return;
    }
    let share = ShareKey::of(&open.vfs);
    let path = open.path();
    if path != *before {
        hub.report_rename(share, before, &path, open.is_directory);
        return;
    }
    let filter = match (req.info_type, FileInformationClass(req.file_info_class)) {
        (InfoType::SECURITY, _) => CompletionFilter::SECURITY,
        (InfoType::FILE, FileInformationClass::FILE_BASIC_INFORMATION) => {
            let Ok(info) = FileBasicInformation::decode(req.buffer) else {
                return;
            };
            let set = |t: FileTime| t.0 != 0 && t.0 != u64::MAX;
            let mut filter = CompletionFilter::empty();
            for (changed, bit) in [
                (info.file_attributes.0 != 0, CompletionFilter::ATTRIBUTES),
                (set(info.times.creation), CompletionFilter::CREATION),
                (set(info.times.last_access), CompletionFilter::LAST_ACCESS),
                (set(info.times.last_write), CompletionFilter::LAST_WRITE),
            ] {
                if changed {
                    filter |= bit;
                }
            }
            filter
        }
        (
            InfoType::FILE,
            FileInformationClass::FILE_END_OF_FILE_INFORMATION
            | FileInformationClass::FILE_ALLOCATION_INFORMATION,
        ) => CompletionFilter::SIZE,
        (InfoType::FILE, FileInformationClass::FILE_FULL_EA_INFORMATION) => CompletionFilter::EA,
        _ => return,
    };
    if !filter.is_empty() {
        hub.report(share, &path, NotifyAction::MODIFIED, filter);
    }
}

/// The filter bit a name change of a file or directory matches.
fn name_filter(directory: bool) -> CompletionFilter {
    if directory {
        CompletionFilter::DIR_NAME
    } else {
        CompletionFilter::FILE_NAME
    }
}
