//! Opens (MS-SMB2 3.3.1.10): a handle on a file or directory and what was granted with it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::SystemTime;

use smb3d_fscc::{FileAttributes, NotifyAction};
use smb3d_smb2::create::FileId;
use std::sync::Arc;

use smb3d_vfs::{Access, DirEntry, OpenRequest, Opened, Timespec, Vfs, VfsError, VfsFile, VfsPath};

use smb3d_dtyp::{AccessMask, NtStatus};

use crate::blocking::{Wait, as_user};
use crate::clock::Clock;
use crate::escape::escape;
use crate::fs::fileinfo::{self, Meta};
use crate::fs::path_status;
use crate::fs::quota::QuotaScan;
use crate::fs::streams::{self, Stream};
use crate::fs::write_time::{Now, OpenWrites};
use crate::identity::Identity;
use crate::state::audit;
use crate::state::cluster_locks;
use crate::state::cluster_opens;
use crate::state::connection::limits::OpenFileSlot;
use crate::state::dir_leases;
use crate::state::durable::ReplayState;
use crate::state::files::{Deleter, Deletion, SharedFile};
use crate::state::locks::HostLocks;
use crate::state::notify::ShareKey;
use crate::state::server::Server;
use crate::state::share::Share;
use crate::status_map::VfsResultExt;

/// The state of a directory enumeration on one open (MS-SMB2 3.3.1.10 Open.EnumerationLocation
/// and Open.EnumerationSearchPattern).
#[derive(Default)]
pub(crate) struct DirCursor {
    /// Names read from the directory at the first query or the last restart, with "." and "..".
    pub entries: Vec<DirEntry>,
    /// Index of the next entry to consider.
    pub next: usize,
    pub pattern: Option<String>,
    /// Whether any entry was returned since the last restart.
    pub returned_any: bool,
}

pub(crate) struct Open {
    pub file_id: FileId,
    /// The tree connect it belongs to; a durable reconnect moves it to a new one.
    pub tree_id: AtomicU32,
    /// The share's file system, for operations by path (delete-on-close, rename).
    pub vfs: Arc<dyn Vfs>,
    /// The share it was opened on, with the options it had then.
    pub share: Arc<Share>,
    /// Who opened it: work on the open runs with this user's credentials.
    pub identity: Arc<Identity>,
    pub file: Box<dyn VfsFile>,
    /// The named stream this open is on (then `file` is its [`StreamFile`](crate::fs::streams::StreamFile)); `None` for a
    /// file's default stream or a directory.
    pub stream: Option<Arc<Stream>>,
    /// The file as all its opens share it (path, share modes, delete-pending).
    pub shared: Arc<SharedFile>,
    pub is_directory: bool,
    /// Open.GrantedAccess.
    pub granted: AccessMask,
    /// FILE_DELETE_ON_CLOSE: closing this open leaves the file delete-pending.
    pub delete_on_close: bool,
    /// FilePositionInformation.CurrentByteOffset, kept for clients that set and read it.
    pub position: AtomicU64,
    /// FileModeInformation.Mode.
    pub mode: AtomicU64,
    /// Where the open's enumeration of quota records stands.
    pub quota_scan: QuotaScan,
    /// The directory enumeration in progress. Held across the listing's file-system calls:
    /// an async mutex, so that a second query on the handle waits without holding a worker.
    pub dir: tokio::sync::Mutex<DirCursor>,
    /// What this open wrote, for the file's last-write time.
    pub writes: OpenWrites,
    /// When the file was opened, for status reports.
    pub opened_at: SystemTime,
    /// Who to name in audit lines, when the share is audited.
    pub audit: Option<Arc<audit::Subject>>,
    /// Where a delete through this open moves the file (the share's recycle bin).
    pub recycle_to: Option<Arc<VfsPath>>,
    /// ChannelSequence and CREATE replay state.
    pub replay: ReplayState,
    /// Whether the open holds its share's watch of changes made on the host (a directory open
    /// granted a directory lease, which such changes break), released when it closes.
    pub watches_host: AtomicBool,
    /// Its place among the server's open files (`max_open_files`), until it is dropped.
    pub _counted: OpenFileSlot,
}

impl Open {
    /// The id of the tree connect the open belongs to.
    pub fn tree_id(&self) -> u32 {
        self.tree_id.load(Ordering::Relaxed)
    }

    pub fn may(&self, access: AccessMask) -> bool {
        self.granted.intersects(access)
    }

    /// Refuses a change through an open in a snapshot (MS-SMB2 3.3.5.9.8), which is
    /// read-only whatever access it was granted: STATUS_MEDIA_WRITE_PROTECTED, the status of
    /// a write on a read-only volume (MS-FSA 2.1.5.3), as Windows and Samba answer.
    pub fn changeable(&self) -> Result<(), NtStatus> {
        match self.shared.key.snapshot {
            Some(_) => Err(NtStatus::MEDIA_WRITE_PROTECTED),
            None => Ok(()),
        }
    }

    /// Runs metadata work on this open as the user who opened it: inline, unless the share
    /// syncs metadata to disk.
    pub fn io<T>(&self, work: impl FnOnce() -> Result<T, NtStatus>) -> Result<T, NtStatus> {
        as_user(
            self.vfs.as_ref(),
            &self.identity,
            self.share.metadata_wait(),
            work,
        )
    }

    /// Runs work on this open that may wait on the disk (copies, listings, deletions) as
    /// the user who opened it, with the worker's other tasks handed off first.
    pub fn io_long<T>(&self, work: impl FnOnce() -> Result<T, NtStatus>) -> Result<T, NtStatus> {
        as_user(self.vfs.as_ref(), &self.identity, Wait::Long, work)
    }

    /// Where the open's byte-range locks are also held: its descriptor, on a share with
    /// `posix_locking` (a named stream has no descriptor of its own to lock).
    pub fn host_locks(&self) -> Option<&dyn HostLocks> {
        let projected = self.share.posix_locking && self.stream.is_none() && !self.is_directory;
        projected.then_some(&self.file as &dyn HostLocks)
    }

    /// MS-FSA 2.1.4.10: whether this open may read (`write` false) or write the range, as the
    /// file's byte-range locks, with `posix_locking` other programs' locks, and on a cluster
    /// node other nodes' locks say.
    pub fn check_locks(
        &self,
        server: &Server,
        offset: u64,
        length: u64,
        write: bool,
    ) -> Result<(), NtStatus> {
        self.shared.locks.check_io(
            self.file_id.volatile,
            offset,
            length,
            write,
            self.host_locks(),
        )?;
        cluster_locks::check_io(server, self, offset, length, write)
    }

    /// The file's current path in the share.
    pub fn path(&self) -> VfsPath {
        self.shared.path()
    }

    /// The file's metadata as stored (and as its share presents it), to change and store back.
    pub fn stored_meta(&self) -> Result<Meta, NtStatus> {
        let path = self.path();
        fileinfo::load(
            self.file.as_ref(),
            path.name().unwrap_or(""),
            &self.share.presentation,
        )
        .status()
    }

    /// Whether the file is marked sparse (FSCTL_SET_SPARSE): it keeps its holes.
    pub fn is_sparse(&self) -> Result<bool, NtStatus> {
        Ok(self
            .stored_meta()?
            .stored
            .contains(FileAttributes::SPARSE_FILE))
    }

    /// The file's metadata as clients see it through this open: the last-write time is the one
    /// kept while the file is open.
    pub fn meta(&self, clock: &dyn Clock) -> Result<Meta, NtStatus> {
        let meta = self.stored_meta()?;
        let disk = fileinfo::filetime(meta.stat.mtime);
        let shown = self
            .shared
            .with_write_time(|wt| wt.current(disk, Now::of(clock)));
        Ok(meta.with_write_time(shown))
    }

    /// Before a write through this open (see
    /// [`WriteTime::writing`](crate::fs::write_time::WriteTime::writing)).
    pub fn writing(&self, clock: &dyn Clock) {
        let now = Now::of(clock);
        self.shared.with_write_time(|wt| {
            wt.writing(&self.writes, now, || {
                self.file.stat().ok().map(|s| fileinfo::filetime(s.mtime))
            })
        });
    }

    /// Stores the last-write time this open leaves behind, if it changed it; done once, before
    /// the close's answer and any delete. Returns whether the open had written.
    pub fn finish_writes(&self, clock: &dyn Clock) -> bool {
        if !self.writes.wrote() {
            return false;
        }
        let Ok(stat) = self.io(|| self.file.stat().status()) else {
            return true;
        };
        let disk = fileinfo::filetime(stat.mtime);
        let store = self
            .shared
            .with_write_time(|wt| wt.closing(&self.writes, disk, Now::of(clock)));
        self.writes.clear();
        if let Some(time) = store.filter(|t| *t != disk) {
            let (sec, nsec) = time.to_unix();
            let _ = self.io(|| {
                self.file
                    .set_times(None, Some(Timespec { sec, nsec }))
                    .status()
            });
        }
        true
    }

    /// This open as the one that makes its file or stream delete-pending.
    pub fn deleter(&self) -> Deleter {
        Deleter {
            identity: self.identity.clone(),
            audit: self.audit.clone(),
            recycle_to: self.recycle_to.clone(),
        }
    }

    /// The open-file table's key of this open's named stream.
    pub fn stream_key(&self) -> Option<Arc<str>> {
        self.stream.as_ref().map(|s| streams::key(&s.name()))
    }
}

/// Opens for the access the request needs; for MAXIMUM_ALLOWED, as widely as the file system
/// lets this user (read and write, else read, else write, else metadata only).
/// STATUS_OPLOCK_BREAK_IN_PROGRESS when another program's kernel lease on the file is being
/// broken (MS-FSA's status for an open that must wait for an oplock break).
pub(crate) fn open_widest(
    vfs: &dyn Vfs,
    path: &VfsPath,
    mut request: OpenRequest,
    desired: AccessMask,
) -> Result<Opened, NtStatus> {
    loop {
        match vfs.open(path, &request) {
            Err(VfsError::PermissionDenied) if desired.contains(AccessMask::MAXIMUM_ALLOWED) => {
                request.access = match request.access {
                    Access::ReadWrite => Access::Read,
                    Access::Read => Access::Write,
                    Access::Write => Access::MetadataOnly,
                    Access::MetadataOnly => return Err(NtStatus::ACCESS_DENIED),
                };
            }
            Err(VfsError::OutsideShare) => return Err(path_status::outside_share(vfs, path)),
            // Told apart from a sharing violation: CREATE waits for the holder and tries again.
            Err(VfsError::LeaseBreaking) => return Err(NtStatus::OPLOCK_BREAK_IN_PROGRESS),
            result => return result.status(),
        }
    }
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
pub(crate) fn close_written(server: &Server, open: &Arc<Open>, wrote: bool) {
    let wrote = open.finish_writes(&*server.settings.clock) || wrote;
    if open.share.kernel_oplocks {
        server.kernel_leases.forget(open.file_id.volatile);
    }
    // Known before the open leaves its lease behind.
    let changed_by = dir_leases::spared_by(server, open);
    // Its locks go (MS-FSA 2.1.5.4), lock requests waiting on this open learn it closed, and
    // so do its change notifications.
    open.shared
        .locks
        .release_owner(open.file_id.volatile, open.host_locks());
    cluster_locks::closed(server, open);
    if let Some(share) = server.notify.closed(open.file_id.volatile) {
        server.host_changes.release(share);
    }
    if open.watches_host.swap(false, Ordering::Relaxed) {
        server.host_changes.release(ShareKey::of(&open.vfs));
    }
    // Its record (if it is persistent, or durable on a cluster) goes after any deletion, as
    // its cluster record does: a round trip to etcd must not delay the deletion.
    let recorded = server
        .durable
        .forget(open.file_id)
        .is_some_and(|d| crate::state::persistent::recorded(server, &d));
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
            cluster_opens::carry_delete_pending(server, open);
            cluster_closed(server, open, recorded);
            return;
        }
        Some(Deletion::File(path, by)) => {
            let recycle_to = by.recycle_to.as_deref();
            let deleted = as_user(vfs, &by.identity, Wait::Long, || {
                if open.is_directory {
                    open.share.remove_vetoed(vfs, &path, recycle_to).status()?;
                }
                open.share.delete(vfs, &path, recycle_to).status()?;
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
                Some(stream) => as_user(vfs, &by.identity, Wait::Long, || {
                    stream.delete_on_close().status()
                }),
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
    // After the deletion: until then other nodes find the file delete-pending, not free.
    cluster_closed(server, open, recorded);
}

/// Removes the records of the closed `open`: its cluster record, and its durable record when
/// it has one (`recorded`).
fn cluster_closed(server: &Server, open: &Open, recorded: bool) {
    if recorded {
        crate::state::persistent::remove(server, open.file_id.persistent);
    }
    cluster_opens::closed(
        server,
        &open.share,
        open.shared.key.ino,
        open.file_id.persistent,
    );
}
