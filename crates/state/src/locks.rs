//! The cluster-wide view of byte-range locks (issue 18, docs/cluster.md "Byte-range locks"):
//! what one node must tell the others of each granted lock so that locks, and the READ and
//! WRITE they stop, hold across nodes. A single server has no such view and pays nothing for
//! it; a cluster node is given a [`ClusterLocks`] back end (`smb3d-cluster`'s etcd one) that
//! the server asks after its own table granted a lock.
//!
//! The conflict rules (MS-FSA 2.1.5.7 for locks, 2.1.4.10 for I/O, with Windows' answer for
//! zero-length ranges) are here, below both the server and the back ends, so that a back end
//! decides with exactly the rules the server applies to its own opens' locks.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;

/// A locked range and its kind, without its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteRange {
    pub offset: u64,
    /// 0 is a valid length: such a lock conflicts only with locks strictly around its offset.
    pub length: u64,
    pub exclusive: bool,
}

/// Whether two ranges overlap. A zero-length range is a point that overlaps a non-empty range
/// only when the range starts strictly before it and covers it (Windows' answer, tested by
/// smbtorture smb2.lock.zerobytelength); two points never overlap. A range whose last byte
/// would lie beyond 2^64 - 1 is taken to end there.
pub fn overlap(a_offset: u64, a_length: u64, b_offset: u64, b_length: u64) -> bool {
    let last = |offset: u64, length: u64| offset.saturating_add(length - 1);
    match (a_length, b_length) {
        (0, 0) => false,
        (0, _) => b_offset < a_offset && a_offset <= last(b_offset, b_length),
        (_, 0) => a_offset < b_offset && b_offset <= last(a_offset, a_length),
        _ => a_offset <= last(b_offset, b_length) && b_offset <= last(a_offset, a_length),
    }
}

impl ByteRange {
    pub fn overlaps(&self, offset: u64, length: u64) -> bool {
        overlap(self.offset, self.length, offset, length)
    }

    /// MS-FSA 2.1.5.7: whether this held lock refuses `request`. An exclusive request
    /// conflicts with every overlapping lock, its own open's included; a shared one only with
    /// other opens' exclusive locks (`same_owner`: both are of one open).
    pub fn blocks(&self, request: &Self, same_owner: bool) -> bool {
        self.overlaps(request.offset, request.length)
            && (request.exclusive || (self.exclusive && !same_owner))
    }

    /// MS-FSA 2.1.4.10: whether this held lock stops reading (`write` false) or writing
    /// `length` bytes at `offset`: reads are stopped by other opens' exclusive locks, writes
    /// by those and by any shared lock, the writer's own included.
    pub fn stops_io(&self, offset: u64, length: u64, write: bool, same_owner: bool) -> bool {
        self.overlaps(offset, length) && if self.exclusive { !same_owner } else { write }
    }
}

/// What became of a lock the cluster was asked to record.
#[derive(Debug)]
pub enum LockError {
    /// Another node's lock conflicts; the lock was not kept (STATUS_LOCK_NOT_GRANTED).
    Conflict,
    /// The cluster could not be asked (etcd unreachable, this node's lease lost): no new lock
    /// may be granted (STATUS_INSUFFICIENT_RESOURCES, docs/cluster.md failure table).
    Unavailable(io::Error),
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Conflict => write!(f, "another node's lock conflicts"),
            Self::Unavailable(e) => write!(f, "cluster unavailable: {e}"),
        }
    }
}

/// A future that resolves once another node released a lock of a file.
pub type Released = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// The cluster-wide table of byte-range locks. `file` is the file's identity on every node
/// (docs/cluster.md "Key layout"), `open` the persistent FileId of the open holding a lock.
/// [`lock`](Self::lock), [`unlock`](Self::unlock) and [`release`](Self::release) may wait
/// on the network: the server calls them from a thread that may block. The other calls
/// answer from what this node knows, at once.
pub trait ClusterLocks: Send + Sync + fmt::Debug {
    /// Records a lock this node's own table granted, refused when another node's lock that
    /// was there first conflicts ([`ByteRange::blocks`]); a refused lock leaves no record.
    fn lock(&self, file: &str, open: u64, range: ByteRange) -> Result<(), LockError>;

    /// Removes one record of `range` held by `open` (of a stack of equal ones, an exclusive
    /// one first, as the server's own table does).
    fn unlock(&self, file: &str, open: u64, range: ByteRange) -> io::Result<()>;

    /// Removes every lock of `open`, which closed; an open this node recorded no lock for
    /// costs nothing (most opens never lock).
    fn release(&self, file: &str, open: u64) -> io::Result<()>;

    /// Whether this node recorded any lock of `open` (at once, no round trip): a close of an
    /// open that holds none need not call [`Self::release`], nor name its file.
    fn holds_any(&self, open: u64) -> bool;

    /// Whether any other node holds a lock of any file, as far as this node knows: when not,
    /// READ and WRITE need not even name their file.
    fn any_held(&self) -> bool;

    /// Whether another node's lock stops reading (`write` false) or writing the range
    /// ([`ByteRange::stops_io`]), as far as this node knows (no network round trip).
    fn stops_io(&self, file: &str, offset: u64, length: u64, write: bool) -> bool;

    /// Resolves at the first release of another node's lock of `file` (an unlock, a close,
    /// the node's death) after this call: a blocking lock calls it before it tries again, so
    /// that no release is missed in between.
    fn released(&self, file: &str) -> Released;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(offset: u64, length: u64, exclusive: bool) -> ByteRange {
        ByteRange {
            offset,
            length,
            exclusive,
        }
    }

    #[test]
    fn shared_locks_coexist_and_exclusive_ones_do_not() {
        let shared = range(0, 10, false);
        assert!(!shared.blocks(&range(5, 10, false), false));
        assert!(shared.blocks(&range(5, 10, true), false));
        assert!(shared.blocks(&range(5, 10, true), true), "own locks too");
        assert!(range(0, 10, true).blocks(&range(9, 1, false), false));
        assert!(!range(0, 10, true).blocks(&range(9, 1, false), true));
        assert!(!range(0, 10, true).blocks(&range(10, 1, true), false));
    }

    #[test]
    fn io_is_stopped_as_ms_fsa_says() {
        let exclusive = range(100, 10, true);
        assert!(exclusive.stops_io(105, 1, false, false));
        assert!(!exclusive.stops_io(105, 1, true, true));
        let shared = range(0, 10, false);
        assert!(!shared.stops_io(0, 10, false, false));
        assert!(shared.stops_io(0, 10, true, true));
        assert!(!range(10, 0, true).stops_io(10, 1, false, false));
        assert!(!range(10, 1, true).stops_io(u64::MAX - 1, 2, false, false));
    }
}
