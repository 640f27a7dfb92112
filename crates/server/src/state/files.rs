//! Open files by identity, across every session and connection (MS-FSA 2.1.1.3 File, 2.1.1.4
//! Stream): share access, delete-pending, byte-range locks, oplocks and leases (`caching`),
//! and the path a file is known by.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::create::ShareAccess;
use smb3d_smb2::snapshot::GmtToken;
use smb3d_state::Sharing;
use smb3d_vfs::{VfsFile, VfsPath};
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use crate::fs::write_time::WriteTime;
use crate::identity::Identity;
use crate::state::app_instance::AppInstance;
use crate::state::audit;

use crate::state::caching::{
    self, Breaks, Caching, Granted, LeaseRecord, LeaseTable, Opening, Route,
};
use crate::state::locks::LockTable;

/// A file's identity on the server's file systems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FileKey {
    pub dev: u64,
    pub ino: u64,
    /// The snapshot the file was opened in: a snapshot's file is another file than the
    /// share's, even where it is the same inode (a hard link, a bind mount).
    pub snapshot: Option<GmtToken>,
}

/// One open of a file, as far as other opens care.
#[derive(Debug, Clone)]
pub(crate) struct OpenEntry {
    pub id: u64,
    pub access: AccessMask,
    pub share: ShareAccess,
    /// The named stream opened ([`streams::key`](crate::fs::streams::key)); `None` for the file's
    /// default stream. Share access is per stream (MS-FSA 2.1.1.4 Stream.ShareAccess).
    pub stream: Option<Arc<str>>,
    /// The persistent half of the open's FileId, for oplock break notifications.
    pub persistent_id: u64,
    /// The oplock or lease the open holds.
    pub caching: Caching,
    /// Where its oplock breaks go.
    pub route: Route,
    /// A durable open whose connection went: no break can reach it.
    pub disconnected: bool,
    /// A persistent open: while disconnected it keeps other opens out rather than being
    /// closed for them (see [`caching::persistent_conflict`]).
    pub persistent: bool,
    /// The application instance it was opened for (MS-SMB2 3.3.5.9.13). Boxed: few opens
    /// have one, and inline it made every entry 64 bytes larger (184 instead of 120).
    pub app_instance: Option<Box<AppInstance>>,
}

/// Appends to a file's list of opens or leases. The first gets room for itself only: most
/// files are open once at a time, and a `Vec`'s first growth makes room for four, three
/// unused entries (360 bytes of `OpenEntry`) per open file (docs/benchmarks.md, `open-memory`).
pub(crate) fn push_one<T>(list: &mut Vec<T>, item: T) {
    if list.capacity() == 0 {
        list.reserve_exact(1);
    }
    list.push(item);
}

/// Who made a file or stream delete-pending. The deletion at the last close is done as them,
/// as Samba does: whoever happens to close last lends it none of their rights, and the mark
/// of one who may delete holds whoever closes last.
#[derive(Clone)]
pub(crate) struct Deleter {
    pub identity: Arc<Identity>,
    /// Whom the audit trail names for the deletion, when their share is audited.
    pub audit: Option<Arc<audit::Subject>>,
    /// The recycle bin repository the file goes to instead of being unlinked.
    pub recycle_to: Option<Arc<VfsPath>>,
}

pub(crate) struct FileState {
    pub opens: Vec<OpenEntry>,
    /// File.PendingDelete, with who set it: no new opens of the file or its streams; deleted
    /// when the last open closes.
    pub delete_pending: Option<Deleter>,
    /// Named streams to delete when their last open closes, with who asked.
    pub stream_deletes: Vec<(Arc<str>, Deleter)>,
    /// LastWriteTime as clients see it while the file is open.
    pub write_time: WriteTime,
    /// Where the file is in its share, kept current across renames.
    pub path: VfsPath,
    /// The leases on the file and its streams.
    pub leases: Vec<LeaseRecord>,
    /// The last break generation given out (names breaks for their timers).
    pub break_generation: u64,
}

/// What the last close of something delete-pending leaves to do, and as whom.
pub(crate) enum Deletion {
    /// Remove the file at this path.
    File(VfsPath, Deleter),
    /// Remove the closing open's named stream.
    Stream(Deleter),
}

pub(crate) struct SharedFile {
    pub key: FileKey,
    pub state: Mutex<FileState>,
    /// Byte-range locks held through any open of the file.
    pub locks: LockTable,
    /// A size the file has at least, as far as the server changed it (see
    /// [`crate::state::allocation`]).
    pub size_floor: AtomicU64,
    /// Whether any open caches reads without writes (level II oplocks, leases without W),
    /// read without the mutex so that WRITE on other files costs nothing.
    read_cached: AtomicBool,
    /// Fires when caching changes (an acknowledgment, a timeout, a close): opens waiting for
    /// breaks try again.
    changed: Notify,
    /// Long writes of data take turns: the kernel serializes buffered writes to one inode
    /// anyway (its i_rwsem), and a worker that writes alongside another spins on that lock
    /// (a fifth of the server's CPU in a plain 512 MiB upload) where a waiting task costs none.
    pub data_writes: tokio::sync::Mutex<()>,
    /// The status of the first failed sync of the file's data, which every later sync of it
    /// answers (see [`SharedFile::sync`]). Held across the sync on purpose: two syncs of one
    /// descriptor share the kernel's error cursor, so without turns the second could report
    /// success while the first is still learning the data was lost.
    sync_failure: Mutex<Option<NtStatus>>,
}

impl SharedFile {
    fn new(key: FileKey, path: &VfsPath) -> Self {
        Self {
            key,
            state: Mutex::new(FileState {
                opens: Vec::new(),
                delete_pending: None,
                stream_deletes: Vec::new(),
                write_time: WriteTime::default(),
                path: path.clone(),
                leases: Vec::new(),
                break_generation: 0,
            }),
            locks: LockTable::default(),
            size_floor: AtomicU64::new(0),
            read_cached: AtomicBool::new(false),
            changed: Notify::new(),
            data_writes: tokio::sync::Mutex::new(()),
            sync_failure: Mutex::new(None),
        }
    }

    /// Syncs `file`, an open of this file, to stable storage. Once a sync failed, every later
    /// one fails the same way while the file is open: Linux reports a write-back error to
    /// fsync once and marks the lost pages clean, so a later fsync that succeeds would claim
    /// that data the failed one lost is on disk (PostgreSQL's "fsyncgate").
    pub fn sync(&self, file: &dyn VfsFile) -> Result<(), NtStatus> {
        let mut failure = self.sync_failure.lock();
        if let Some(status) = *failure {
            return Err(status);
        }
        file.sync().map_err(|e| {
            let status = crate::status_map::vfs_status(&e);
            *failure = Some(status);
            status
        })
    }

    /// Changes the file's caching state under its lock; returns what `work` returns and the
    /// notifications to [`deliver`](caching::deliver), and wakes the opens waiting on it.
    pub fn with_caching<T>(
        &self,
        work: impl FnOnce(&mut FileState, &mut Breaks) -> T,
    ) -> (T, Breaks) {
        let result = self.start_breaks(work);
        self.caching_changed();
        result
    }

    /// Like [`with_caching`](Self::with_caching) for work that only starts breaks which must be
    /// acknowledged: that frees nothing a waiting open could use, so nobody is woken (a waiter
    /// starting breaks would otherwise wake itself, and two would wake each other, forever).
    pub fn start_breaks<T>(
        &self,
        work: impl FnOnce(&mut FileState, &mut Breaks) -> T,
    ) -> (T, Breaks) {
        let mut breaks = Breaks::default();
        let mut state = self.state.lock();
        let result = work(&mut state, &mut breaks);
        self.read_cached
            .store(state.has_shared_read_caching(), Ordering::Relaxed);
        drop(state);
        (result, breaks)
    }

    /// Breaks the read caching of other opens before `writer` changes the file (WRITE, LOCK,
    /// size changes; MS-FSA 2.1.4.12). Costs one atomic load when nobody caches reads.
    pub fn breaks_for_write(&self, writer: u64) -> Option<Breaks> {
        if !self.read_cached.load(Ordering::Relaxed) {
            return None;
        }
        let ((), breaks) = self.with_caching(|state, breaks| {
            caching::breaks_for_write(state, writer, breaks);
        });
        Some(breaks)
    }

    /// Wakes the opens waiting for this file's caching to change.
    pub fn caching_changed(&self) {
        self.changed.notify_waiters();
    }

    /// A future that resolves at the next caching change; create and enable it before the
    /// check it waits on, so that no change is missed in between.
    pub fn caching_change(&self) -> Notified<'_> {
        self.changed.notified()
    }

    pub fn path(&self) -> VfsPath {
        self.state.lock().path.clone()
    }

    pub fn delete_pending(&self) -> bool {
        self.state.lock().delete_pending.is_some()
    }

    /// Works on the file's last-write time (see [`WriteTime`]).
    pub fn with_write_time<T>(&self, work: impl FnOnce(&mut WriteTime) -> T) -> T {
        work(&mut self.state.lock().write_time)
    }
}

/// What `entry` holds and shares, for the share-access rule both this table and a cluster
/// back end apply ([`Sharing`]).
fn sharing(entry: &OpenEntry) -> Sharing {
    Sharing {
        access: entry.access.0,
        share: entry.share.0,
    }
}

/// Whether `entry` may join `state`'s opens: share access is checked against opens of the
/// same stream; deleting the file also needs every open stream to share delete (the file goes
/// with its streams), while the file's opens do not restrict its streams.
fn admissible(state: &FileState, entry: &OpenEntry) -> Result<(), NtStatus> {
    if state.delete_pending.is_some()
        || entry
            .stream
            .as_ref()
            .is_some_and(|s| state.stream_deletes.iter().any(|(d, _)| d == s))
    {
        return Err(NtStatus::DELETE_PENDING);
    }
    let new = sharing(entry);
    let conflict = state
        .opens
        .iter()
        .any(|e| new.conflicts_with(sharing(e), e.stream == entry.stream, entry.stream.is_none()));
    if conflict {
        Err(NtStatus::SHARING_VIOLATION)
    } else {
        Ok(())
    }
}

#[derive(Default)]
pub(crate) struct FileTable {
    files: Mutex<HashMap<FileKey, Arc<SharedFile>>>,
    /// Files with delete pending, so that listings only look them up when there are some.
    pending_deletes: AtomicUsize,
    /// Every lease, by identity.
    pub leases: LeaseTable,
}

/// The outcome of [`FileTable::register`].
pub(crate) enum Admission {
    /// The open is registered with this caching.
    Granted(Arc<SharedFile>, Granted),
    /// Breaks were sent that the open must wait for; it is not registered.
    Wait(Arc<SharedFile>),
}

impl FileTable {
    /// Registers an open of the file `key` known as `path`, after the checks of MS-FSA
    /// 2.1.5.1.2: a file with delete pending takes no new opens, and share access must be
    /// compatible with every open that has data rights. Oplocks and leases that conflict are
    /// broken into `breaks` (MS-FSA 2.1.4.12); if the open must wait for them it is not
    /// registered ([`Admission::Wait`]). A sharing violation that breaking handle caching
    /// might resolve waits too, and fails only when it remains.
    pub fn register(
        &self,
        key: FileKey,
        path: &VfsPath,
        mut entry: OpenEntry,
        opening: &Opening,
        kernel: Option<caching::KernelHold<'_>>,
        breaks: &mut Breaks,
    ) -> Result<Admission, NtStatus> {
        let mut files = self.files.lock();
        if let caching::Request::Lease(lease) = &opening.request
            && self
                .leases
                .bound_elsewhere(lease.id, key, entry.stream.as_ref())
        {
            return Err(NtStatus::INVALID_PARAMETER);
        }
        let file = files
            .entry(key)
            .or_insert_with(|| Arc::new(SharedFile::new(key, path)))
            .clone();
        let mut state = file.state.lock();
        let admitted =
            if caching::persistent_conflict(&state, &entry, opening, !file.locks.is_empty()) {
                Err(NtStatus::FILE_NOT_AVAILABLE)
            } else {
                admissible(&state, &entry)
            };
        let result = match admitted {
            Err(NtStatus::SHARING_VIOLATION) | Ok(()) => {
                let violation = admitted.is_err();
                let delay =
                    caching::breaks_for_open(&mut state, &entry, opening, violation, breaks);
                if breaks.unavailable {
                    Err(NtStatus::FILE_NOT_AVAILABLE)
                } else if delay {
                    Ok(Admission::Wait(file.clone()))
                } else if violation {
                    Err(NtStatus::SHARING_VIOLATION)
                } else {
                    let locked = !file.locks.is_empty();
                    let granted = caching::grant(&mut state, &entry, opening, locked, kernel);
                    if let caching::Request::Lease(lease) = &opening.request
                        && granted.caching == Caching::Lease(lease.id)
                    {
                        self.leases
                            .bind(lease.id, &file, entry.stream.as_ref(), opening.directory);
                    }
                    entry.caching = granted.caching.clone();
                    push_one(&mut state.opens, entry);
                    Ok(Admission::Granted(file.clone(), granted))
                }
            }
            Err(status) => Err(status),
        };
        file.read_cached
            .store(state.has_shared_read_caching(), Ordering::Relaxed);
        if state.opens.is_empty() {
            files.remove(&key);
        }
        result
    }

    /// Registers a persistent open read back after a restart, with the caching it had
    /// (`lease`: its lease, recorded with the file unless another restored open of the same
    /// client shares it), without the checks of a new open: it passed them before.
    pub fn restore(
        &self,
        key: FileKey,
        path: &VfsPath,
        entry: OpenEntry,
        lease: Option<LeaseRecord>,
    ) -> Arc<SharedFile> {
        let mut files = self.files.lock();
        let file = files
            .entry(key)
            .or_insert_with(|| Arc::new(SharedFile::new(key, path)))
            .clone();
        let mut state = file.state.lock();
        if let Some(lease) = lease {
            match state.leases.iter_mut().find(|l| l.id == lease.id) {
                Some(shared) => shared.opens += 1,
                None => {
                    self.leases.bind(lease.id, &file, None, None);
                    push_one(&mut state.leases, lease);
                }
            }
        }
        push_one(&mut state.opens, entry);
        file.read_cached
            .store(state.has_shared_read_caching(), Ordering::Relaxed);
        drop(state);
        file
    }

    /// Sets delete-pending of the file or, with `stream`, of that named stream only, on behalf
    /// of `by` (FileDispositionInformation, or a delete-on-close open being closed), or clears
    /// it (`None`). A second mark replaces the first's deleter, as in Samba.
    pub fn set_delete_pending(
        &self,
        file: &SharedFile,
        stream: Option<&Arc<str>>,
        by: Option<Deleter>,
    ) {
        let mut state = file.state.lock();
        if let Some(stream) = stream {
            let listed = state.stream_deletes.iter().position(|(s, _)| s == stream);
            match (listed, by) {
                (None, Some(by)) => state.stream_deletes.push((stream.clone(), by)),
                (Some(i), Some(by)) => {
                    if let Some((_, deleter)) = state.stream_deletes.get_mut(i) {
                        *deleter = by;
                    }
                }
                (Some(i), None) => {
                    state.stream_deletes.swap_remove(i);
                }
                (None, None) => {}
            }
            return;
        }
        let was_pending = state.delete_pending.is_some();
        state.delete_pending = by;
        match (was_pending, state.delete_pending.is_some()) {
            (false, true) => {
                self.pending_deletes.fetch_add(1, Ordering::Relaxed);
            }
            (true, false) => {
                self.pending_deletes.fetch_sub(1, Ordering::Relaxed);
            }
            _ => {}
        }
    }

    /// Removes an open. Says what to delete when this was the last open of a delete-pending
    /// named stream or file.
    pub fn release(&self, file: &SharedFile, id: u64) -> Option<Deletion> {
        let mut files = self.files.lock();
        let mut state = file.state.lock();
        let position = state.opens.iter().position(|e| e.id == id)?;
        let closed = state.opens.swap_remove(position);
        if let Some(lease) = caching::released(&mut state, &closed) {
            self.leases.unbind(lease);
        }
        file.read_cached
            .store(state.has_shared_read_caching(), Ordering::Relaxed);
        file.caching_changed();
        if let Some(stream) = &closed.stream
            && !state
                .opens
                .iter()
                .any(|e| e.stream.as_ref() == Some(stream))
            && let Some(i) = state.stream_deletes.iter().position(|(s, _)| s == stream)
        {
            let (_, by) = state.stream_deletes.swap_remove(i);
            if state.delete_pending.is_none() {
                if state.opens.is_empty() {
                    files.remove(&file.key);
                }
                return Some(Deletion::Stream(by));
            }
        }
        if !state.opens.is_empty() {
            return None;
        }
        files.remove(&file.key);
        let by = state.delete_pending.take()?;
        self.pending_deletes.fetch_sub(1, Ordering::Relaxed);
        Some(Deletion::File(state.path.clone(), by))
    }

    /// Open `id` of `file` as other opens see it.
    pub fn entry(&self, file: &SharedFile, id: u64) -> Option<OpenEntry> {
        file.state.lock().opens.iter().find(|e| e.id == id).cloned()
    }

    /// An open of `file`'s default stream, if any.
    pub fn default_stream_entry(&self, file: &SharedFile) -> Option<OpenEntry> {
        file.state
            .lock()
            .opens
            .iter()
            .find(|e| e.stream.is_none())
            .cloned()
    }

    /// Whether an open of `key` with `access` and `share` would be compatible with the file's
    /// current opens (a rename checks its source directory so, MS-FSA 2.1.5.14.11).
    pub fn would_share(&self, key: FileKey, access: AccessMask, share: ShareAccess) -> bool {
        let Some(file) = self.get(key) else {
            return true;
        };
        let new = Sharing {
            access: access.0,
            share: share.0,
        };
        let state = file.state.lock();
        state
            .opens
            .iter()
            .filter(|e| e.stream.is_none())
            .all(|e| !new.excludes(sharing(e)))
    }

    /// Whether any open of `file` is on one of its named streams.
    pub fn has_open_streams(&self, file: &SharedFile) -> bool {
        file.state.lock().opens.iter().any(|e| e.stream.is_some())
    }

    /// Whether any open of `file` is on its default stream.
    pub fn has_default_stream_opens(&self, file: &SharedFile) -> bool {
        file.state.lock().opens.iter().any(|e| e.stream.is_none())
    }

    /// Whether the named stream `stream` of `file` is open.
    pub fn stream_is_open(&self, file: &SharedFile, stream: &Arc<str>) -> bool {
        file.state
            .lock()
            .opens
            .iter()
            .any(|e| e.stream.as_ref() == Some(stream))
    }

    /// Moves open `id` to the named stream `to` after a stream rename.
    pub fn renamed_stream(&self, file: &SharedFile, id: u64, to: Arc<str>) {
        if let Some(entry) = file.state.lock().opens.iter_mut().find(|e| e.id == id) {
            entry.stream = Some(to);
        }
    }

    /// Whether `key` has delete pending; cheap when no file has.
    pub fn is_delete_pending(&self, key: FileKey) -> bool {
        if self.pending_deletes.load(Ordering::Relaxed) == 0 {
            return false;
        }
        self.files
            .lock()
            .get(&key)
            .is_some_and(|f| f.delete_pending())
    }

    /// The open file of inode `ino` (outside snapshots) holding the open whose persistent
    /// FileId is `persistent`, with the open's volatile id: how a break another node asks of
    /// an open finds it (rare: one scan of the open files).
    pub fn by_persistent(&self, ino: u64, persistent: u64) -> Option<(Arc<SharedFile>, u64)> {
        let files: Vec<Arc<SharedFile>> = self
            .files
            .lock()
            .values()
            .filter(|f| f.key.ino == ino && f.key.snapshot.is_none())
            .cloned()
            .collect();
        files.into_iter().find_map(|file| {
            let id = file
                .state
                .lock()
                .opens
                .iter()
                .find(|e| e.persistent_id == persistent)
                .map(|e| e.id)?;
            Some((file, id))
        })
    }

    /// The open file `key`, if any open exists.
    pub fn get(&self, key: FileKey) -> Option<Arc<SharedFile>> {
        self.files.lock().get(&key).cloned()
    }

    /// Whether any file below `dir` is open (a directory with open descendants cannot be
    /// renamed, MS-FSA 2.1.5.14.11).
    pub fn any_open_below(&self, dir: &VfsPath) -> bool {
        let prefix = format!("{}/", dir.as_str());
        self.files
            .lock()
            .values()
            .any(|f| dir.is_root() || f.state.lock().path.as_str().starts_with(&prefix))
    }

    /// Updates the paths of open files after `from` was renamed to `to` (the file itself and,
    /// for a directory, everything below it).
    pub fn renamed(&self, from: &VfsPath, to: &VfsPath) {
        let prefix = format!("{}/", from.as_str());
        for file in self.files.lock().values() {
            let mut state = file.state.lock();
            if state.path == *from {
                state.path = to.clone();
            } else if let Some(rest) = state.path.as_str().strip_prefix(&prefix)
                && let Ok(moved) = VfsPath::parse(&format!("{}/{rest}", to.as_str()))
            {
                state.path = moved;
            }
        }
    }

    /// Number of open files (for tests and status).
    pub fn len(&self) -> usize {
        self.files.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, access: AccessMask, share: ShareAccess) -> OpenEntry {
        OpenEntry {
            id,
            access,
            share,
            stream: None,
            persistent_id: id,
            caching: Caching::None,
            route: Route {
                conn: std::sync::Weak::new(),
                session_id: 1,
                encrypt: false,
            },
            disconnected: false,
            persistent: false,
            app_instance: None,
        }
    }

    impl FileTable {
        /// Registers an open that asks for no caching.
        fn open(
            &self,
            key: FileKey,
            path: &VfsPath,
            entry: OpenEntry,
        ) -> Result<Arc<SharedFile>, NtStatus> {
            let opening = Opening {
                request: caching::Request::None,
                overwrite: false,
                first_attempt: true,
                existed: true,
                delete_on_close: false,
                directory: None,
            };
            match self.register(key, path, entry, &opening, None, &mut Breaks::default())? {
                Admission::Granted(file, _) => Ok(file),
                Admission::Wait(_) => panic!("nothing to wait for"),
            }
        }
    }

    fn stream_entry(id: u64, access: AccessMask, share: ShareAccess, name: &str) -> OpenEntry {
        OpenEntry {
            stream: Some(crate::fs::streams::key(name)),
            ..entry(id, access, share)
        }
    }

    fn path(p: &str) -> VfsPath {
        VfsPath::parse(p).unwrap()
    }

    /// A deleter acting as `uid`.
    fn by(uid: u32) -> Option<Deleter> {
        let ids = crate::identity::IdMap::new("T");
        Some(Deleter {
            identity: Arc::new(Identity {
                token: smb3d_dtyp::Token {
                    user: ids.user_sid(uid),
                    groups: Vec::new(),
                    privileges: smb3d_dtyp::Privileges::empty(),
                },
                unix: smb3d_vfs::Credentials {
                    uid,
                    gid: uid,
                    groups: Vec::new(),
                },
            }),
            audit: None,
            recycle_to: None,
        })
    }

    /// The uid a deletion runs as, and what it deletes.
    fn deletion(deletion: Option<Deletion>) -> Option<(u32, Option<VfsPath>)> {
        deletion.map(|d| match d {
            Deletion::File(path, by) => (by.identity.unix.uid, Some(path)),
            Deletion::Stream(by) => (by.identity.unix.uid, None),
        })
    }

    const KEY: FileKey = FileKey {
        dev: 1,
        ino: 2,
        snapshot: None,
    };
    const RW: AccessMask = AccessMask(AccessMask::FILE_READ_DATA.0 | AccessMask::FILE_WRITE_DATA.0);

    /// The table's list of a file's opens is a good part of what an open costs: the first
    /// open's list held room for four 184-byte entries, 736 of the 1,770 bytes per open file
    /// that `open-memory` measured (heaptrack).
    #[test]
    fn a_file_open_once_holds_room_for_one_open() {
        let table = FileTable::default();
        let all = ShareAccess::READ | ShareAccess::WRITE | ShareAccess::DELETE;
        let f = table
            .open(
                KEY,
                &path("once"),
                entry(1, AccessMask::FILE_READ_DATA, all),
            )
            .unwrap();
        assert_eq!(f.state.lock().opens.capacity(), 1);
        table
            .open(
                KEY,
                &path("once"),
                entry(2, AccessMask::FILE_READ_DATA, all),
            )
            .unwrap();
        assert_eq!(f.state.lock().opens.len(), 2);
        // A rare field inline in every entry (the application instance was 64 bytes) costs
        // each open file; boxed, the entry is 120 bytes.
        assert!(std::mem::size_of::<OpenEntry>() <= 128);
    }

    #[test]
    fn share_modes_conflict_both_ways() {
        let table = FileTable::default();
        let f = table
            .open(
                KEY,
                &path("a"),
                entry(1, AccessMask::FILE_READ_DATA, ShareAccess::READ),
            )
            .unwrap();
        // A writer is refused: the reader did not share write.
        assert_eq!(
            table
                .open(
                    KEY,
                    &path("a"),
                    entry(2, RW, ShareAccess::READ | ShareAccess::WRITE)
                )
                .err(),
            Some(NtStatus::SHARING_VIOLATION)
        );
        // Another reader sharing read is fine.
        table
            .open(
                KEY,
                &path("a"),
                entry(3, AccessMask::FILE_READ_DATA, ShareAccess::READ),
            )
            .unwrap();
        // A reader that shares nothing is refused: the first reader reads.
        assert_eq!(
            table
                .open(
                    KEY,
                    &path("a"),
                    entry(4, AccessMask::FILE_READ_DATA, ShareAccess::empty())
                )
                .err(),
            Some(NtStatus::SHARING_VIOLATION)
        );
        // Attribute-only opens never conflict.
        table
            .open(
                KEY,
                &path("a"),
                entry(5, AccessMask::FILE_READ_ATTRIBUTES, ShareAccess::empty()),
            )
            .unwrap();
        for id in [1, 3, 5] {
            assert!(table.release(&f, id).is_none());
        }
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn delete_pending_refuses_opens_and_deletes_at_last_close() {
        let table = FileTable::default();
        let all = ShareAccess::READ | ShareAccess::WRITE | ShareAccess::DELETE;
        let f = table
            .open(KEY, &path("d/x"), entry(1, AccessMask::DELETE, all))
            .unwrap();
        table
            .open(KEY, &path("d/x"), entry(2, AccessMask::FILE_READ_DATA, all))
            .unwrap();
        table.set_delete_pending(&f, None, by(1000));
        assert!(table.is_delete_pending(KEY));
        assert_eq!(
            table
                .open(KEY, &path("d/x"), entry(3, AccessMask::FILE_READ_DATA, all))
                .err(),
            Some(NtStatus::DELETE_PENDING)
        );
        table.renamed(&path("d"), &path("e"));
        assert_eq!(deletion(table.release(&f, 1)), None);
        // Open 2, whoever it belongs to, closes last: the deletion is the marker's.
        assert_eq!(
            deletion(table.release(&f, 2)),
            Some((1000, Some(path("e/x"))))
        );
        assert!(!table.is_delete_pending(KEY));
    }

    /// A second mark replaces the first's deleter; clearing the mark leaves nothing to delete.
    #[test]
    fn the_last_mark_says_who_deletes() {
        let table = FileTable::default();
        let all = ShareAccess::READ | ShareAccess::WRITE | ShareAccess::DELETE;
        let f = table
            .open(KEY, &path("x"), entry(1, AccessMask::DELETE, all))
            .unwrap();
        table
            .open(KEY, &path("x"), entry(2, AccessMask::DELETE, all))
            .unwrap();
        table.set_delete_pending(&f, None, by(1000));
        table.set_delete_pending(&f, None, by(2000));
        assert_eq!(deletion(table.release(&f, 1)), None);
        assert_eq!(
            deletion(table.release(&f, 2)),
            Some((2000, Some(path("x"))))
        );
        let f = table
            .open(KEY, &path("x"), entry(3, AccessMask::DELETE, all))
            .unwrap();
        table.set_delete_pending(&f, None, by(1000));
        table.set_delete_pending(&f, None, None);
        assert_eq!(deletion(table.release(&f, 3)), None);
        assert_eq!(table.pending_deletes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn streams_share_separately_but_deleting_the_file_needs_them_all() {
        let table = FileTable::default();
        let write = AccessMask::FILE_WRITE_DATA;
        let none = ShareAccess::empty();
        let f = table
            .open(KEY, &path("f"), stream_entry(1, write, none, "One"))
            .unwrap();
        // Another stream and the file itself do not conflict with it...
        table
            .open(KEY, &path("f"), stream_entry(2, write, none, "Two"))
            .unwrap();
        table.open(KEY, &path("f"), entry(3, write, none)).unwrap();
        // ...the same stream, in another spelling, does.
        assert_eq!(
            table
                .open(KEY, &path("f"), stream_entry(4, write, none, "ONE"))
                .err(),
            Some(NtStatus::SHARING_VIOLATION)
        );
        // Deleting the file needs every stream to share delete.
        let all = ShareAccess::READ | ShareAccess::WRITE | ShareAccess::DELETE;
        assert_eq!(
            table
                .open(KEY, &path("f"), entry(5, AccessMask::DELETE, all))
                .err(),
            Some(NtStatus::SHARING_VIOLATION)
        );
        // A delete-pending stream is removed at its last close and takes no new opens.
        table.set_delete_pending(&f, Some(&crate::fs::streams::key("two")), by(3000));
        assert_eq!(
            table
                .open(KEY, &path("f"), stream_entry(6, write, all, "Two"))
                .err(),
            Some(NtStatus::DELETE_PENDING)
        );
        assert_eq!(deletion(table.release(&f, 2)), Some((3000, None)));
        assert_eq!(deletion(table.release(&f, 1)), None);
        assert_eq!(deletion(table.release(&f, 3)), None);
        assert_eq!(table.len(), 0);
    }

    /// The "fsyncgate" rule: a sync that failed once fails every later time, though the
    /// file system's next fsync succeeds (the layer fails only the first).
    #[test]
    fn a_failed_sync_is_never_followed_by_success() {
        use smb3d_vfs::{
            Access, Disposition, FaultOp, FaultPlan, FaultRule, FaultVfs, Kind, MemoryVfs,
            OpenRequest, Vfs, VfsError, errno,
        };
        let vfs = FaultVfs::new(
            Arc::new(MemoryVfs::new()),
            Arc::new(FaultPlan::new(vec![FaultRule {
                ops: vec![FaultOp::Sync],
                error: Some(VfsError::Io(errno::EIO)),
                times: Some(1),
                ..FaultRule::default()
            }])),
        );
        let request = OpenRequest {
            access: Access::ReadWrite,
            disposition: Disposition::OpenOrCreate,
            kind: Kind::File,
            create_mode: 0o644,
        };
        let file = vfs.open(&path("f"), &request).unwrap().file;
        let shared = SharedFile::new(KEY, &path("f"));
        let results: Vec<_> = (0..3).map(|_| shared.sync(&*file)).collect();
        assert_eq!(results, vec![Err(NtStatus::UNEXPECTED_IO_ERROR); 3]);
        assert!(
            file.sync().is_ok(),
            "the file system itself forgot the failure"
        );
    }

    #[test]
    fn opens_below_a_directory() {
        let table = FileTable::default();
        table
            .open(
                KEY,
                &path("dir/sub/f"),
                entry(1, AccessMask::FILE_READ_DATA, ShareAccess::READ),
            )
            .unwrap();
        assert!(table.any_open_below(&path("dir")));
        assert!(table.any_open_below(&path("dir/sub")));
        assert!(!table.any_open_below(&path("di")));
        assert!(!table.any_open_below(&path("dir/sub/f")));
    }
}
