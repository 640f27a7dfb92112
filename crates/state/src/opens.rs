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
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

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
/// SYNCHRONIZE | FILE_READ_ATTRIBUTES | FILE_WRITE_ATTRIBUTES: an open with no more is a
/// "stat open", which breaks no oplock (MS-FSA 2.1.5.1.2.1).
const STAT_RIGHTS: u32 = 0x0010_0000 | 0x0000_0080 | 0x0000_0100;
/// READ_CONTROL: a stat open for leases may also read the security descriptor.
const READ_CONTROL: u32 = 0x0002_0000;

/// Read caching (MS-SMB2 2.2.13.2.8 LeaseState; a level II oplock).
pub const CACHE_READ: u32 = 0x1;
/// Handle caching (the "batch" part of a batch oplock).
pub const CACHE_HANDLE: u32 = 0x2;
/// Write caching (an exclusive oplock).
pub const CACHE_WRITE: u32 = 0x4;

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
    /// The caching the open holds, as lease bits ([`CACHE_READ`], [`CACHE_HANDLE`],
    /// [`CACHE_WRITE`]): an oplock as the bits its level stands for (level II R, exclusive
    /// RW, batch RWH).
    pub caching: u32,
    /// The lease the caching is (the client's ClientGuid, then its LeaseKey); `None`: an
    /// oplock, or no caching. Opens of one lease share its caching and never break it.
    pub lease: Option<[u8; 32]>,
    /// The application instance the open was made for (MS-SMB2 3.3.5.9.13), when it named
    /// one: a new open of the same instance by another client closes it on any node.
    pub app_instance: Option<AppInstanceRecord>,
}

/// An open's application instance as other nodes see it (MS-SMB2 3.3.1.10 Open.AppInstanceId
/// and Open.ApplicationInstanceVersionHigh/Low).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppInstanceRecord {
    /// AppInstanceId.
    pub id: [u8; 16],
    /// The ClientGuid of the client that made the open.
    pub client: [u8; 16],
    /// AppInstanceVersionHigh and Low, when the open carried them (SMB 3.1.1).
    pub version: Option<(u64, u64)>,
    /// The account that made the open (the user database's name); `None` for an anonymous
    /// logon, which proves no one and so is taken over by no one.
    pub user: Option<String>,
}

impl AppInstanceRecord {
    /// Whether a new open `asking` of another client takes over an open with this record
    /// (MS-SMB2 3.3.5.9.13: same AppInstanceId, another ClientGuid), which smb3d allows only
    /// to the same account: an AppInstanceId is no proof of who sends it.
    pub fn taken_over_by(&self, asking: &AppInstanceRecord) -> bool {
        self.id == asking.id
            && self.client != asking.client
            && self.user.is_some()
            && self.user == asking.user
    }

    /// MS-SMB2 3.3.5.9.13: whether this open, taken over by `asking`, refuses it with
    /// STATUS_FILE_FORCED_CLOSED instead: both carry a version and this one's is newer or
    /// equal.
    pub fn refuses(&self, asking: &AppInstanceRecord) -> bool {
        matches!((self.version, asking.version), (Some(mine), Some(new)) if mine >= new)
    }
}

/// Another node's open that a new open of its application instance takes over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakeOver {
    /// The node that holds it, which closes it.
    pub node: String,
    /// Its persistent FileId.
    pub id: u64,
    /// Its application instance, as recorded.
    pub app_instance: AppInstanceRecord,
}

/// What a new open does, besides what its record says, that decides the breaks it causes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Intent {
    /// It truncates the file (SUPERSEDE, OVERWRITE, OVERWRITE_IF).
    pub overwrite: bool,
    /// It deletes the file when closed.
    pub delete_on_close: bool,
    /// Its share access conflicts with the holder's: only handle caching is broken, so that
    /// the holder's client may close its cached handle (MS-FSA 2.1.5.1.2).
    pub sharing_violation: bool,
}

/// A break another node's open must undergo before (or as) a new open goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakNeeded {
    /// The holder's persistent FileId.
    pub id: u64,
    /// The node that granted it, which sends the break to its client.
    pub node: String,
    /// The caching it holds.
    pub held: u32,
    /// The most it may keep.
    pub to: u32,
    /// The new open waits for the holder's acknowledgment (MS-FSA 2.1.4.12: write caching,
    /// and handle caching where it stands in the way); a break of read caching alone goes
    /// without one.
    pub wait: bool,
}

/// What an admitted open learnt of other nodes' opens of its file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Admitted {
    /// The breaks to ask for.
    pub breaks: Vec<BreakNeeded>,
    /// The caching the new open may keep beside other nodes' opens once those breaks are
    /// done ([`OpenRecord::caching_beside`]).
    pub keep: u32,
}

/// A break a node is asked to carry out on one of its opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakOrder {
    /// The file's identity on every node (docs/cluster.md "Key layout").
    pub file: String,
    /// The open's persistent FileId.
    pub id: u64,
    /// The most caching the open may keep.
    pub to: u32,
    /// Not a break: the open is to be closed for a new open of its application instance
    /// (MS-SMB2 3.3.5.9.13), which this names; the holder checks it against the open.
    pub close_for: Option<AppInstanceRecord>,
}

/// Receives the breaks other nodes ask of this node's opens.
pub type BreakSink = Arc<dyn Fn(BreakOrder) + Send + Sync>;

/// A future that resolves once a break asked of another node is done: the holder's record
/// shows its caching lowered, or the open is gone.
pub type Settled = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

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
    /// A sharing violation with other nodes' opens that cache handles: the record was not
    /// kept; once these breaks are done the open may try once more (MS-FSA 2.1.5.1.2).
    BreakFirst(Vec<BreakNeeded>),
    /// The cluster could not be asked (etcd unreachable, this node's lease lost): no new
    /// open may be granted (STATUS_INSUFFICIENT_RESOURCES, docs/cluster.md failure table).
    Unavailable(io::Error),
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(why) => write!(f, "refused: {why:?}"),
            Self::BreakFirst(breaks) => write!(f, "{} handle caching breaks first", breaks.len()),
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

    /// Whether other nodes need no record of this open at all (docs/cluster.md "Stat opens
    /// go unrecorded"): no other open, wherever it is, is ever refused, broken or granted
    /// less because of it. That holds for an open whose access is within SYNCHRONIZE,
    /// FILE_READ_ATTRIBUTES and FILE_WRITE_ATTRIBUTES (MS-FSA 2.1.5.1.2.2 skips opens
    /// without data or DELETE access on both sides; 2.1.4.12 lets such an open break no
    /// oplock or lease; [`Self::caching_beside`] leaves others write caching beside it), of
    /// the default stream or sharing delete (a named stream's open that does not share
    /// delete refuses the file's DELETE opens, whatever its access), caching nothing, with
    /// no lease (a lease key's later open could raise the state it shares), no application
    /// instance, no delete-pending mark, and no overwrite or delete-on-close. READ_CONTROL
    /// is left out: such an open breaks another open's oplock.
    pub fn unseen(&self, intent: Intent) -> bool {
        self.access & !STAT_RIGHTS == 0
            && (self.stream.is_none() || self.share & SHARE_DELETE != 0)
            && self.caching == 0
            && self.lease.is_none()
            && self.app_instance.is_none()
            && !self.delete_pending
            && !intent.overwrite
            && !intent.delete_on_close
    }

    /// Whether a delete-pending mark of another open, on `marked` (`None`: the file), keeps
    /// this new open out (MS-FSA 2.1.5.1.2: a pending delete of the file refuses every new
    /// open of it, of a stream only new opens of that stream).
    pub fn refused_by_mark(&self, marked: Option<&str>) -> bool {
        marked.is_none() || marked == self.stream.as_deref()
    }

    fn same_lease(&self, other: &Self) -> bool {
        self.lease.is_some() && self.lease == other.lease
    }

    /// MS-FSA 2.1.4.12 for a new open (this record) and `held`, another node's open of the
    /// same file: the most caching `held` may keep, and whether the new open waits for its
    /// acknowledgment; `None` when nothing breaks. As on one server: write caching always
    /// conflicts with another open, handle caching only with a sharing violation (or a
    /// delete-on-close), read caching with an overwrite; opens for attributes only break
    /// nothing, and an open of the holder's own lease never breaks it.
    pub fn break_of(&self, held: &Self, intent: Intent) -> Option<(u32, bool)> {
        if held.caching == 0 || held.stream != self.stream || self.same_lease(held) {
            return None;
        }
        let access = if intent.overwrite {
            self.access | WRITE_RIGHTS
        } else {
            self.access
        };
        let stat = |rights: u32| access & rights != 0 && access & !rights == 0;
        if stat(STAT_RIGHTS) || (held.lease.is_some() && stat(STAT_RIGHTS | READ_CONTROL)) {
            return None;
        }
        let delay = if intent.sharing_violation {
            CACHE_HANDLE
        } else if intent.delete_on_close {
            CACHE_WRITE | CACHE_HANDLE
        } else {
            CACHE_WRITE
        };
        let mut to = held.caching & !delay;
        if intent.overwrite && !intent.sharing_violation {
            to = 0;
        }
        if held.lease.is_none() {
            // An oplock comes down to level II or none.
            to &= CACHE_READ;
        }
        (held.caching & !to != 0).then_some((to, held.caching & delay != 0))
    }

    /// MS-SMB2 3.3.5.9 and MS-FSA 2.1.5.18: the most caching this new open may keep beside
    /// `others`, other nodes' opens of the file as they are once their breaks are done, as
    /// one server grants it: write caching only for the only open, no oplock beside handle
    /// caching, no handle caching for a lease beside an oplock. An open for attributes only
    /// keeps what it was granted.
    pub fn caching_beside(&self, others: &[Self]) -> u32 {
        let all = CACHE_READ | CACHE_HANDLE | CACHE_WRITE;
        if self.access & STAT_RIGHTS != 0 && self.access & !STAT_RIGHTS == 0 {
            return all;
        }
        let (mut handle, mut oplock, mut write) = (false, false, false);
        for other in others
            .iter()
            .filter(|o| o.stream == self.stream && !self.same_lease(o))
        {
            handle |= other.caching & CACHE_HANDLE != 0;
            oplock |= other.lease.is_none() && other.caching != 0;
            write |= other.caching != 0
                || other.access & !STAT_RIGHTS != 0
                || other.access & STAT_RIGHTS == 0;
        }
        let mut keep = all;
        if write {
            keep &= !CACHE_WRITE;
        }
        match self.lease {
            None if handle => 0,
            Some(_) if oplock => keep & !CACHE_HANDLE,
            _ => keep,
        }
    }
}

/// The cluster-wide table of opens. Every call may wait on the network: the server calls it
/// from a thread that may block. `file` is the file's identity on every node
/// (docs/cluster.md "Key layout"), `id` the open's persistent FileId.
pub trait ClusterOpens: Send + Sync + fmt::Debug {
    /// Records a new open, refused when an open other nodes recorded before it conflicts
    /// ([`OpenRecord::admitted_beside`]); a refused open leaves no record.
    /// What it returns names the breaks other nodes' opens need for it
    /// ([`OpenRecord::break_of`]) and the caching it may keep.
    fn open(
        &self,
        file: &str,
        id: u64,
        record: &OpenRecord,
        intent: Intent,
    ) -> Result<Admitted, OpenError>;

    /// Answers at once, without waiting on the network, an open that needs no record
    /// ([`OpenRecord::unseen`]) when the node can decide it from memory; `None` when it must
    /// be asked through [`Self::open`] (which answers such an open the same way). Lets the
    /// server skip handing its worker's tasks off for a call that does not block.
    fn open_at_once(
        &self,
        file: &str,
        id: u64,
        record: &OpenRecord,
        intent: Intent,
    ) -> Option<Result<Admitted, OpenError>>;

    /// Forgets open `id`, which closed, when it had no record, at once; `false` when it has
    /// one, which [`Self::close`] removes.
    fn closed_at_once(&self, id: u64) -> bool;

    /// Changes the record of open `id` (its delete-pending mark, its caching).
    fn update(&self, file: &str, id: u64, record: &OpenRecord) -> io::Result<()>;

    /// Removes the record of open `id`, which closed.
    fn close(&self, file: &str, id: u64) -> io::Result<()>;

    /// Asks the node holding `need` for its break; resolves once the holder's record shows
    /// caching within `need.to`, or the open is gone (its close, its node's death). The
    /// caller bounds the wait (the break timeout); dropping the future withdraws the request.
    fn request_break(&self, file: &str, need: &BreakNeeded) -> Settled;

    /// Where the breaks other nodes ask of this node's opens go from now on.
    fn on_break(&self, sink: BreakSink);

    /// Lowers the caching in the record of open `id` once a break asked of it is done.
    fn lowered(&self, file: &str, id: u64, caching: u32) -> io::Result<()>;

    /// The opens other nodes recorded of `file` on `stream` that a new open of the
    /// application instance `asking` takes over ([`AppInstanceRecord::taken_over_by`]).
    fn app_instance_opens(
        &self,
        file: &str,
        stream: Option<&str>,
        asking: &AppInstanceRecord,
    ) -> io::Result<Vec<TakeOver>>;

    /// Asks the node holding `open` to close it for `asking`; resolves once its record is
    /// gone (closed, or its node dead) or the request failed. The caller bounds the wait;
    /// dropping the future withdraws the request.
    fn request_close(&self, file: &str, open: &TakeOver, asking: &AppInstanceRecord) -> Settled;

    /// Whether any other node's record marks a file or stream delete-pending, as this node's
    /// watch knows them: one atomic load, so that a listing asks [`Self::marked_elsewhere`]
    /// only while there is such a mark.
    fn any_marked_elsewhere(&self) -> bool;

    /// Whether another node's record marks `file` itself delete-pending, as this node's
    /// watch knows them (in memory, no round trip): a listing leaves it out, as it leaves
    /// out this node's own (item 7 of issue 18). `false` when the node does not follow them.
    fn marked_elsewhere(&self, file: &str) -> bool;
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
            caching: 0,
            lease: None,
            app_instance: None,
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

    #[test]
    fn only_opens_nobody_else_meets_go_unrecorded() {
        let stat = record(0x80, ALL);
        let plain = Intent::default();
        assert!(stat.unseen(plain));
        assert!(record(0x0010_0000 | 0x80 | 0x100, 0).unseen(plain));
        // Every right that shares data, or breaks an oplock, must be seen.
        for access in [
            READ,
            WRITE,
            0x4,
            0x20,
            DELETE,
            READ_CONTROL,
            0x8,
            0x0004_0000,
        ] {
            assert!(!record(0x80 | access, ALL).unseen(plain), "{access:#x}");
        }
        assert!(!stat.unseen(Intent {
            overwrite: true,
            ..plain
        }));
        assert!(!stat.unseen(Intent {
            delete_on_close: true,
            ..plain
        }));
        let cached = OpenRecord {
            caching: CACHE_READ,
            ..stat.clone()
        };
        assert!(!cached.unseen(plain));
        let leased = OpenRecord {
            lease: Some([1; 32]),
            ..stat.clone()
        };
        assert!(
            !leased.unseen(plain),
            "a lease of state none may be raised later"
        );
        let instance = OpenRecord {
            app_instance: Some(AppInstanceRecord {
                id: [1; 16],
                client: [2; 16],
                version: None,
                user: None,
            }),
            ..stat.clone()
        };
        assert!(!instance.unseen(plain));
        // A named stream's stat open that does not share delete refuses the file's DELETE
        // opens: it must be seen; one that shares delete need not.
        let stream = |share| OpenRecord {
            stream: Some("s".into()),
            ..record(0x80, share)
        };
        assert!(!stream(SHARE_READ).unseen(plain));
        assert_eq!(
            record(DELETE, ALL).admitted_beside(&stream(SHARE_READ)),
            Err(Refusal::SharingViolation)
        );
        assert!(stream(SHARE_DELETE).unseen(plain));
        // Whatever an unseen open is, no other open is refused, broken or limited by it.
        for other in [
            record(READ | WRITE | DELETE, 0),
            holding(R | W | H, Some(3)),
        ] {
            for new in [stat.clone(), stream(SHARE_DELETE)] {
                assert_eq!(other.admitted_beside(&new), Ok(()));
                assert_eq!(other.break_of(&new, plain), None);
                assert_eq!(
                    other.caching_beside(std::slice::from_ref(&new)),
                    other.caching_beside(&[])
                );
            }
        }
    }

    #[test]
    fn a_delete_pending_mark_refuses_the_file_s_opens_or_its_stream_s() {
        let stat = record(0x80, ALL);
        assert!(stat.refused_by_mark(None));
        assert!(!stat.refused_by_mark(Some("s")));
        let on_stream = OpenRecord {
            stream: Some("s".into()),
            ..stat
        };
        assert!(on_stream.refused_by_mark(Some("s")));
        assert!(on_stream.refused_by_mark(None));
        assert!(!on_stream.refused_by_mark(Some("t")));
    }

    const R: u32 = CACHE_READ;
    const H: u32 = CACHE_HANDLE;
    const W: u32 = CACHE_WRITE;

    fn holding(caching: u32, lease: Option<u8>) -> OpenRecord {
        OpenRecord {
            caching,
            lease: lease.map(|k| [k; 32]),
            app_instance: None,
            ..record(READ | WRITE, ALL)
        }
    }

    #[test]
    fn a_batch_oplock_elsewhere_breaks_to_level_two_and_is_waited_for() {
        let batch = holding(R | W | H, None);
        let new = record(READ, ALL);
        assert_eq!(new.break_of(&batch, Intent::default()), Some((R, true)));
        // Level II needs no break for a plain open, and goes without an ack on an overwrite.
        let level2 = holding(R, None);
        assert_eq!(new.break_of(&level2, Intent::default()), None);
        let overwrite = Intent {
            overwrite: true,
            ..Intent::default()
        };
        assert_eq!(new.break_of(&level2, overwrite), Some((0, false)));
        // An exclusive oplock keeps no handle caching to break to: level II.
        assert_eq!(
            new.break_of(&holding(R | W, None), Intent::default()),
            Some((R, true))
        );
        // Opens for attributes only break nothing.
        assert_eq!(record(0x80, ALL).break_of(&batch, Intent::default()), None);
    }

    #[test]
    fn leases_elsewhere_break_as_on_one_server() {
        let rwh = holding(R | W | H, Some(1));
        let new = record(READ, ALL);
        assert_eq!(new.break_of(&rwh, Intent::default()), Some((R | H, true)));
        assert_eq!(
            new.break_of(&holding(R | H, Some(1)), Intent::default()),
            None
        );
        let violation = Intent {
            sharing_violation: true,
            ..Intent::default()
        };
        assert_eq!(
            new.break_of(&holding(R | H, Some(1)), violation),
            Some((R, true))
        );
        let doc = Intent {
            delete_on_close: true,
            ..Intent::default()
        };
        assert_eq!(new.break_of(&rwh, doc), Some((R, true)));
        // R alone breaks to none on an overwrite without waiting.
        let overwrite = Intent {
            overwrite: true,
            ..Intent::default()
        };
        assert_eq!(
            new.break_of(&holding(R, Some(1)), overwrite),
            Some((0, false))
        );
        // READ_CONTROL only is a stat open for leases, not for oplocks.
        let control = record(READ_CONTROL, ALL);
        assert_eq!(control.break_of(&rwh, Intent::default()), None);
        assert_eq!(
            control.break_of(&holding(R | W | H, None), Intent::default()),
            Some((R, true))
        );
    }

    #[test]
    fn one_lease_on_two_nodes_is_not_broken_by_itself() {
        let rwh = holding(R | W | H, Some(7));
        let mut same = holding(0, Some(7));
        same.access = READ;
        assert_eq!(same.break_of(&rwh, Intent::default()), None);
        assert_eq!(same.caching_beside(std::slice::from_ref(&rwh)), R | W | H);
        let other_stream = OpenRecord {
            stream: Some("s".into()),
            ..rwh.clone()
        };
        assert_eq!(
            record(READ, ALL).break_of(&other_stream, Intent::default()),
            None
        );
    }

    #[test]
    fn caching_beside_other_nodes_opens() {
        let all = R | W | H;
        // The only open keeps everything.
        assert_eq!(holding(0, Some(1)).caching_beside(&[]), all);
        // Beside a plain open (no caching): no write caching.
        assert_eq!(
            holding(0, Some(1)).caching_beside(&[record(READ, ALL)]),
            R | H
        );
        // Beside an open for attributes only: write caching stays.
        assert_eq!(holding(0, None).caching_beside(&[record(0x80, ALL)]), all);
        // An oplock beside handle caching: none; a lease beside an oplock: no H.
        assert_eq!(
            holding(0, None).caching_beside(&[holding(R | H, Some(2))]),
            0
        );
        assert_eq!(holding(0, Some(1)).caching_beside(&[holding(R, None)]), R);
    }

    fn instance(client: u8, version: Option<(u64, u64)>, user: Option<&str>) -> AppInstanceRecord {
        AppInstanceRecord {
            id: [7; 16],
            client: [client; 16],
            version,
            user: user.map(str::to_owned),
        }
    }

    #[test]
    fn app_instance_taken_over_by_another_client_of_the_same_account() {
        let held = instance(1, None, Some("alice"));
        assert!(held.taken_over_by(&instance(2, None, Some("alice"))));
        // The same client closes its own opens itself.
        assert!(!held.taken_over_by(&instance(1, None, Some("alice"))));
        // Another account, or an anonymous logon, takes over nothing.
        assert!(!held.taken_over_by(&instance(2, None, Some("bob"))));
        assert!(!held.taken_over_by(&instance(2, None, None)));
        assert!(!instance(1, None, None).taken_over_by(&instance(2, None, None)));
        let other_id = AppInstanceRecord {
            id: [8; 16],
            ..instance(2, None, Some("alice"))
        };
        assert!(!held.taken_over_by(&other_id));
    }

    #[test]
    fn app_instance_newer_or_equal_version_refuses() {
        let new = instance(2, Some((2, 5)), Some("a"));
        for (held, refused) in [
            (Some((2, 5)), true),
            (Some((2, 6)), true),
            (Some((3, 0)), true),
            (Some((2, 4)), false),
            (Some((1, u64::MAX)), false),
            (None, false),
        ] {
            assert_eq!(
                instance(1, held, Some("a")).refuses(&new),
                refused,
                "{held:?}"
            );
        }
        assert!(!instance(1, Some((9, 9)), Some("a")).refuses(&instance(2, None, Some("a"))));
    }
}
