//! The cluster-wide view of a file's opens (issue 18, docs/cluster.md "One write per open, one
//! per close"): what one node must tell the others of each open so that share modes and
//! delete-pending hold across nodes. A single server has no such view (the server's own
//! in-process table is all there is) and pays nothing for it; a cluster node is given a
//! [`ClusterOpens`] back end (`smb3d-cluster`'s etcd one) that the server asks after its own
//! table admitted an open.
//!
//! The share-access rule is here, below both the server and the back ends, so that a back
//! end decides conflicts with exactly the rule of MS-FSA 2.1.5.1.2.1 the server applies to
//! its own opens.

use std::fmt;
use std::io;

/// FILE_READ_DATA | FILE_EXECUTE: rights that take part in share access as reading.
const READ_RIGHTS: u32 = 0x0000_0001 | 0x0000_0020;
/// FILE_WRITE_DATA | FILE_APPEND_DATA.
const WRITE_RIGHTS: u32 = 0x0000_0002 | 0x0000_0004;
/// DELETE.
const DELETE: u32 = 0x0001_0000;
/// FILE_SHARE_READ, FILE_SHARE_WRITE, FILE_SHARE_DELETE (MS-SMB2 2.2.13 ShareAccess).
const SHARE_READ: u32 = 0x1;
const SHARE_WRITE: u32 = 0x2;
const SHARE_DELETE: u32 = 0x4;

/// One open as other nodes see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRecord {
    /// The access granted (MS-DTYP ACCESS_MASK).
    pub access: u32,
    /// The share access asked for (MS-SMB2 2.2.13 ShareAccess).
    pub share: u32,
    /// The named stream opened, as the server keys it (case folded); `None`: the file's
    /// default stream.
    pub stream: Option<String>,
    /// Delete-pending was set through this open (on its stream, or the file when `stream` is
    /// `None`): no new open of it anywhere (MS-FSA 2.1.5.1.2).
    pub delete_pending: bool,
}

/// Why an open was refused because of another node's opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// STATUS_SHARING_VIOLATION.
    SharingViolation,
    /// STATUS_DELETE_PENDING.
    DeletePending,
}

/// What became of an open the cluster was asked to record.
#[derive(Debug)]
pub enum OpenError {
    /// An open elsewhere conflicts; the record was not kept.
    Refused(Refusal),
    /// The cluster could not be asked (etcd unreachable, this node's lease lost): no new
    /// open may be granted (STATUS_INSUFFICIENT_RESOURCES, docs/cluster.md failure table).
    Unavailable(io::Error),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(why) => write!(f, "refused: {why:?}"),
            Self::Unavailable(e) => write!(f, "cluster unavailable: {e}"),
        }
    }
}

/// MS-FSA 2.1.5.1.2.1: whether an open with `access` conflicts with `allowed` sharing.
fn excluded(access: u32, allowed: u32) -> bool {
    (access & READ_RIGHTS != 0 && allowed & SHARE_READ == 0)
        || (access & WRITE_RIGHTS != 0 && allowed & SHARE_WRITE == 0)
        || (access & DELETE != 0 && allowed & SHARE_DELETE == 0)
}

/// What an open holds (MS-DTYP ACCESS_MASK) and lets later opens hold (MS-SMB2 2.2.13
/// ShareAccess): the two halves of the share-access check, which the server's own table and
/// every cluster back end decide with these methods alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sharing {
    pub access: u32,
    pub share: u32,
}

impl Sharing {
    /// Whether it takes part in sharing at all: opens for attributes or the security
    /// descriptor only never conflict.
    pub fn shares_data(self) -> bool {
        self.access & (READ_RIGHTS | WRITE_RIGHTS | DELETE) != 0
    }

    /// Whether this new open and `first`, an open of the same stream made before it, exclude
    /// each other (MS-FSA 2.1.5.1.2.1, both ways).
    pub fn excludes(self, first: Self) -> bool {
        first.shares_data()
            && (excluded(first.access, self.share) || excluded(self.access, first.share))
    }

    /// Whether this new open conflicts with `first`, an open of the same file made before it:
    /// of the same stream (`same_stream`), share access both ways; of another stream, only a
    /// new open of the file itself (`new_on_file`) for DELETE needs `first` to share delete
    /// (the file goes with its streams), while the file's opens do not restrict its streams.
    pub fn conflicts_with(self, first: Self, same_stream: bool, new_on_file: bool) -> bool {
        if !self.shares_data() {
            return false;
        }
        if same_stream {
            self.excludes(first)
        } else {
            new_on_file && self.access & DELETE != 0 && first.share & SHARE_DELETE == 0
        }
    }
}

impl OpenRecord {
    fn sharing(&self) -> Sharing {
        Sharing {
            access: self.access,
            share: self.share,
        }
    }

    /// Whether this new open may coexist with `other`, an open that was there first: a
    /// delete-pending file (or the same delete-pending stream) takes no new open, and share
    /// access is [`Sharing::conflicts_with`]'s rule.
    pub fn admitted_beside(&self, other: &Self) -> Result<(), Refusal> {
        if other.delete_pending && (other.stream.is_none() || other.stream == self.stream) {
            return Err(Refusal::DeletePending);
        }
        let conflict = self.sharing().conflicts_with(
            other.sharing(),
            other.stream == self.stream,
            self.stream.is_none(),
        );
        if conflict {
            Err(Refusal::SharingViolation)
        } else {
            Ok(())
        }
    }
}

/// The cluster-wide table of opens. Every call may wait on the network: the server calls it
/// from a thread that may block. `file` is the file's identity on every node
/// (docs/cluster.md "Key layout"), `id` the open's persistent FileId.
pub trait ClusterOpens: Send + Sync + fmt::Debug {
    /// Records a new open, refused when an open other nodes recorded before it conflicts
    /// ([`OpenRecord::admitted_beside`]); a refused open leaves no record.
    fn open(&self, file: &str, id: u64, record: &OpenRecord) -> Result<(), OpenError>;

    /// Changes the record of open `id` (its delete-pending mark).
    fn update(&self, file: &str, id: u64, record: &OpenRecord) -> io::Result<()>;

    /// Removes the record of open `id`, which closed.
    fn close(&self, file: &str, id: u64) -> io::Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(access: u32, share: u32) -> OpenRecord {
        OpenRecord {
            access,
            share,
            stream: None,
            delete_pending: false,
        }
    }

    const READ: u32 = 0x1;
    const WRITE: u32 = 0x2;
    const ALL: u32 = SHARE_READ | SHARE_WRITE | SHARE_DELETE;

    #[test]
    fn share_access_both_ways() {
        let reader = record(READ, SHARE_READ);
        assert_eq!(
            record(READ | WRITE, ALL).admitted_beside(&reader),
            Err(Refusal::SharingViolation)
        );
        assert_eq!(record(READ, SHARE_READ).admitted_beside(&reader), Ok(()));
        assert_eq!(
            record(READ, 0).admitted_beside(&reader),
            Err(Refusal::SharingViolation)
        );
        // FILE_READ_ATTRIBUTES only: never a conflict.
        assert_eq!(record(0x80, 0).admitted_beside(&reader), Ok(()));
    }

    #[test]
    fn delete_pending_and_streams() {
        let mut pending = record(DELETE, ALL);
        pending.delete_pending = true;
        assert_eq!(
            record(0x80, ALL).admitted_beside(&pending),
            Err(Refusal::DeletePending)
        );
        let stream = OpenRecord {
            stream: Some("one".into()),
            ..record(WRITE, 0)
        };
        assert_eq!(record(WRITE, 0).admitted_beside(&stream), Ok(()));
        assert_eq!(
            record(DELETE, ALL).admitted_beside(&stream),
            Err(Refusal::SharingViolation)
        );
        let mut stream_pending = stream.clone();
        stream_pending.delete_pending = true;
        stream_pending.share = ALL;
        assert_eq!(record(READ, ALL).admitted_beside(&stream_pending), Ok(()));
    }
}
