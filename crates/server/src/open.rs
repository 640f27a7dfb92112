//! Opens (MS-SMB2 3.3.1.10): a handle on a file or directory and what was granted with it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use smb3d_dtyp::AccessMask;
use smb3d_smb2::create::FileId;
use std::sync::Arc;

use smb3d_vfs::{DirEntry, Vfs, VfsFile, VfsPath};

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
    pub tree_id: u32,
    /// The share's file system, for operations by path (delete-on-close, rename).
    pub vfs: Arc<dyn Vfs>,
    pub file: Box<dyn VfsFile>,
    /// The open's path in the share, kept current across renames.
    pub path: Mutex<VfsPath>,
    pub is_directory: bool,
    /// Open.GrantedAccess.
    pub granted: AccessMask,
    pub delete_on_close: AtomicBool,
    /// FilePositionInformation.CurrentByteOffset, kept for clients that set and read it.
    pub position: AtomicU64,
    /// FileModeInformation.Mode.
    pub mode: AtomicU64,
    pub dir: Mutex<DirCursor>,
}

impl Open {
    pub fn may(&self, access: AccessMask) -> bool {
        self.granted.intersects(access)
    }

    pub fn path(&self) -> VfsPath {
        self.path.lock().clone()
    }

    pub fn set_delete_on_close(&self, on: bool) {
        self.delete_on_close.store(on, Ordering::Relaxed);
    }

    pub fn delete_on_close(&self) -> bool {
        self.delete_on_close.load(Ordering::Relaxed)
    }
}
