//! Changes that other processes than the server make below a share: someone editing the files
//! on the host. Change notify and directory leases must see them as they see the server's own.

use crate::VfsPath;

/// One change seen below a share; paths are relative to the share root, spelled as on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutsideChange {
    Added {
        path: VfsPath,
        directory: bool,
    },
    Removed {
        path: VfsPath,
        directory: bool,
    },
    /// Renamed within the share (a move into or out of it is an `Added` or `Removed`).
    Renamed {
        from: VfsPath,
        to: VfsPath,
        directory: bool,
    },
    /// Data written: the size or last write time may have changed.
    Written {
        path: VfsPath,
    },
    /// Attributes, times, owner, permissions or extended attributes changed.
    MetadataChanged {
        path: VfsPath,
        directory: bool,
    },
    /// Changes were lost (the back end could not keep up): anything may have changed.
    Lost,
}

/// Where a watching back end delivers changes, from a thread of its own.
pub type OutsideSink = Box<dyn FnMut(OutsideChange) + Send>;

/// A watch of outside changes in progress; dropping it stops the watching.
pub struct OutsideWatch {
    _running: Box<dyn Send + Sync>,
}

impl OutsideWatch {
    /// Wraps what keeps the watching alive until dropped.
    pub fn new(running: Box<dyn Send + Sync>) -> Self {
        Self { _running: running }
    }
}
