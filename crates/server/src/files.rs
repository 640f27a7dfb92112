//! Open files by identity, across every session and connection (MS-FSA 2.1.1.3 File, 2.1.1.4
//! Stream): share access, delete-pending and the path a file is known by. Oplock, lease and
//! byte-range lock state will live here too.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::create::ShareAccess;
use smb3d_vfs::VfsPath;

/// A file's identity on the server's file systems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FileKey {
    pub dev: u64,
    pub ino: u64,
}

/// One open of a file, as far as other opens care.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpenEntry {
    pub id: u64,
    pub access: AccessMask,
    pub share: ShareAccess,
}

pub(crate) struct FileState {
    pub opens: Vec<OpenEntry>,
    /// File.PendingDelete: no new opens; deleted when the last open closes.
    pub delete_pending: bool,
    /// Where the file is in its share, kept current across renames.
    pub path: VfsPath,
}

pub(crate) struct SharedFile {
    pub key: FileKey,
    pub state: Mutex<FileState>,
}

impl SharedFile {
    pub fn path(&self) -> VfsPath {
        self.state.lock().path.clone()
    }

    pub fn delete_pending(&self) -> bool {
        self.state.lock().delete_pending
    }
}

/// Rights that take part in share-access checks (MS-FSA 2.1.5.1.2.1).
const READ_RIGHTS: AccessMask =
    AccessMask(AccessMask::FILE_READ_DATA.0 | AccessMask::FILE_EXECUTE.0);
const WRITE_RIGHTS: AccessMask =
    AccessMask(AccessMask::FILE_WRITE_DATA.0 | AccessMask::FILE_APPEND_DATA.0);

/// MS-FSA 2.1.5.1.2.1: whether a new open with `access` and `share` may coexist with `existing`.
fn compatible(existing: &OpenEntry, access: AccessMask, share: ShareAccess) -> bool {
    let conflicts = |held: AccessMask, allowed: ShareAccess| {
        (held.intersects(READ_RIGHTS) && !allowed.contains(ShareAccess::READ))
            || (held.intersects(WRITE_RIGHTS) && !allowed.contains(ShareAccess::WRITE))
            || (held.contains(AccessMask::DELETE) && !allowed.contains(ShareAccess::DELETE))
    };
    !conflicts(existing.access, share) && !conflicts(access, existing.share)
}

/// Whether an open takes part in sharing at all: opens for attributes or the security
/// descriptor only never conflict.
fn shares_data(access: AccessMask) -> bool {
    access.intersects(READ_RIGHTS | WRITE_RIGHTS | AccessMask::DELETE)
}

#[derive(Default)]
pub(crate) struct FileTable {
    files: Mutex<HashMap<FileKey, Arc<SharedFile>>>,
    /// Files with delete pending, so that listings only look them up when there are some.
    pending_deletes: AtomicUsize,
}

impl FileTable {
    /// Registers an open of the file `key` known as `path`, after the checks of MS-FSA
    /// 2.1.5.1.2: a file with delete pending takes no new opens, and share access must be
    /// compatible with every open that has data rights.
    pub fn register(
        &self,
        key: FileKey,
        path: &VfsPath,
        entry: OpenEntry,
    ) -> Result<Arc<SharedFile>, NtStatus> {
        let mut files = self.files.lock();
        let file = files
            .entry(key)
            .or_insert_with(|| {
                Arc::new(SharedFile {
                    key,
                    state: Mutex::new(FileState {
                        opens: Vec::new(),
                        delete_pending: false,
                        path: path.clone(),
                    }),
                })
            })
            .clone();
        let mut state = file.state.lock();
        if state.delete_pending {
            return Err(NtStatus::DELETE_PENDING);
        }
        if shares_data(entry.access)
            && state
                .opens
                .iter()
                .any(|e| shares_data(e.access) && !compatible(e, entry.access, entry.share))
        {
            return Err(NtStatus::SHARING_VIOLATION);
        }
        state.opens.push(entry);
        drop(state);
        Ok(file)
    }

    /// Sets or clears delete-pending (FileDispositionInformation, or a delete-on-close open
    /// being closed).
    pub fn set_delete_pending(&self, file: &SharedFile, pending: bool) {
        let mut state = file.state.lock();
        if state.delete_pending != pending {
            state.delete_pending = pending;
            if pending {
                self.pending_deletes.fetch_add(1, Ordering::Relaxed);
            } else {
                self.pending_deletes.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Removes an open. Returns the path to delete when this was the last open of a file with
    /// delete pending.
    pub fn release(&self, file: &SharedFile, id: u64) -> Option<VfsPath> {
        let mut files = self.files.lock();
        let mut state = file.state.lock();
        state.opens.retain(|e| e.id != id);
        if !state.opens.is_empty() {
            return None;
        }
        files.remove(&file.key);
        if state.delete_pending {
            state.delete_pending = false;
            self.pending_deletes.fetch_sub(1, Ordering::Relaxed);
            return Some(state.path.clone());
        }
        None
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
        OpenEntry { id, access, share }
    }

    fn path(p: &str) -> VfsPath {
        VfsPath::parse(p).unwrap()
    }

    const KEY: FileKey = FileKey { dev: 1, ino: 2 };
    const RW: AccessMask = AccessMask(AccessMask::FILE_READ_DATA.0 | AccessMask::FILE_WRITE_DATA.0);

    #[test]
    fn share_modes_conflict_both_ways() {
        let table = FileTable::default();
        let f = table
            .register(
                KEY,
                &path("a"),
                entry(1, AccessMask::FILE_READ_DATA, ShareAccess::READ),
            )
            .unwrap();
        // A writer is refused: the reader did not share write.
        assert_eq!(
            table
                .register(
                    KEY,
                    &path("a"),
                    entry(2, RW, ShareAccess::READ | ShareAccess::WRITE)
                )
                .err(),
            Some(NtStatus::SHARING_VIOLATION)
        );
        // Another reader sharing read is fine.
        table
            .register(
                KEY,
                &path("a"),
                entry(3, AccessMask::FILE_READ_DATA, ShareAccess::READ),
            )
            .unwrap();
        // A reader that shares nothing is refused: the first reader reads.
        assert_eq!(
            table
                .register(
                    KEY,
                    &path("a"),
                    entry(4, AccessMask::FILE_READ_DATA, ShareAccess::empty())
                )
                .err(),
            Some(NtStatus::SHARING_VIOLATION)
        );
        // Attribute-only opens never conflict.
        table
            .register(
                KEY,
                &path("a"),
                entry(5, AccessMask::FILE_READ_ATTRIBUTES, ShareAccess::empty()),
            )
            .unwrap();
        for id in [1, 3, 5] {
            assert_eq!(table.release(&f, id), None);
        }
        assert_eq!(table.len(), 0);
    }

    #[test]
    fn delete_pending_refuses_opens_and_deletes_at_last_close() {
        let table = FileTable::default();
        let all = ShareAccess::READ | ShareAccess::WRITE | ShareAccess::DELETE;
        let f = table
            .register(KEY, &path("d/x"), entry(1, AccessMask::DELETE, all))
            .unwrap();
        table
            .register(KEY, &path("d/x"), entry(2, AccessMask::FILE_READ_DATA, all))
            .unwrap();
        table.set_delete_pending(&f, true);
        assert!(table.is_delete_pending(KEY));
        assert_eq!(
            table
                .register(KEY, &path("d/x"), entry(3, AccessMask::FILE_READ_DATA, all))
                .err(),
            Some(NtStatus::DELETE_PENDING)
        );
        table.renamed(&path("d"), &path("e"));
        assert_eq!(table.release(&f, 1), None);
        assert_eq!(table.release(&f, 2), Some(path("e/x")));
        assert!(!table.is_delete_pending(KEY));
    }

    #[test]
    fn opens_below_a_directory() {
        let table = FileTable::default();
        table
            .register(
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
