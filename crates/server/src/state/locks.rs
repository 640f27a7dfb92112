//! Byte-range locks of one file, across all its opens (MS-FSA 2.1.1.5 ByteRangeLockList,
//! 2.1.5.7 and 2.1.5.8 lock and unlock, 2.1.4.10 the conflict check of READ and WRITE).
//!
//! A lock belongs to an open (its server-unique volatile FileId). Requests that wait for a
//! range wait on [`LockTable::changed`], which fires whenever a lock goes away, and try again.
//!
//! On a share with `posix_locking`, each open's locks are also held in the host's lock table
//! through the open's descriptor ([`HostLocks`]), so that local processes and NFS clients see
//! them and theirs stop SMB locks, reads and writes. This table stays the authority: the
//! host's locks merge and split ranges as POSIX does, so an open's host lock on each byte is
//! projected from all its SMB locks there (the strongest wins) whenever one is taken or goes.

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use smb3d_dtyp::NtStatus;
use smb3d_state::ByteRange;
use smb3d_vfs::{HostLock, VfsFile, VfsResult};
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

/// Where an open's locks are also held for other programs to see: the host's byte-range lock
/// table, through the open's handle.
pub(crate) trait HostLocks {
    /// Sets the open's host lock on the range; false when another holder's lock conflicts.
    fn set(&self, offset: u64, length: u64, level: HostLock) -> VfsResult<bool>;
    /// Whether another holder's host lock stops reading or writing the range.
    fn conflicts(&self, offset: u64, length: u64, write: bool) -> VfsResult<bool>;
}

impl HostLocks for Box<dyn VfsFile> {
    fn set(&self, offset: u64, length: u64, level: HostLock) -> VfsResult<bool> {
        self.set_host_lock(offset, length, level)
    }

    fn conflicts(&self, offset: u64, length: u64, write: bool) -> VfsResult<bool> {
        self.host_lock_conflicts(offset, length, write)
    }
}

/// One granted lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RangeLock {
    /// The open holding it.
    pub owner: u64,
    pub offset: u64,
    /// 0 is a valid length: such a lock conflicts only with locks strictly around its offset.
    pub length: u64,
    pub exclusive: bool,
}

/// MS-FSA 2.1.5.7: a range whose last byte lies beyond 2^64 - 1 cannot be locked.
pub(crate) fn check_range(offset: u64, length: u64) -> Result<(), NtStatus> {
    if length > 0 && offset.checked_add(length - 1).is_none() {
        return Err(NtStatus::INVALID_LOCK_RANGE);
    }
    Ok(())
}

impl RangeLock {
    /// The range and its kind, as the cluster's rules (shared with every node) take it.
    pub fn range(&self) -> ByteRange {
        ByteRange {
            offset: self.offset,
            length: self.length,
            exclusive: self.exclusive,
        }
    }

    /// The last byte of a non-empty lock (`check_range` keeps it from overflowing).
    fn last(&self) -> u64 {
        self.offset.saturating_add(self.length.saturating_sub(1))
    }

    /// MS-FSA 2.1.5.7, [`ByteRange::blocks`].
    fn blocks(&self, request: &RangeLock) -> bool {
        self.range()
            .blocks(&request.range(), self.owner == request.owner)
    }
}

/// The locks on one file. They are scanned in full under the mutex by every lock request and
/// every READ and WRITE while any is held; `max_locks_per_file` bounds that scan (ranges may
/// overlap, stack and span everything, so an order by offset would not shorten it).
#[derive(Default)]
pub(crate) struct LockTable {
    locks: Mutex<Vec<RangeLock>>,
    /// `locks.len()`, read without the mutex so that I/O on unlocked files costs nothing.
    count: AtomicUsize,
    changed: Notify,
}

impl LockTable {
    /// Grants `lock` unless a held lock conflicts (STATUS_LOCK_NOT_GRANTED) or the file holds
    /// `max_locks` already (STATUS_INSUFFICIENT_RESOURCES, security.md L15).
    /// With `host`, the lock is also taken there, and another holder's conflicting host lock
    /// refuses it as an SMB lock would.
    pub fn try_lock(
        &self,
        lock: RangeLock,
        max_locks: usize,
        host: Option<&dyn HostLocks>,
    ) -> Result<(), NtStatus> {
        let mut locks = self.locks.lock();
        if locks.iter().any(|held| held.blocks(&lock)) {
            return Err(NtStatus::LOCK_NOT_GRANTED);
        }
        if locks.len() >= max_locks {
            return Err(NtStatus::INSUFFICIENT_RESOURCES);
        }
        locks.push(lock);
        // Held across the host's calls, so that two requests of one open cannot project
        // their ranges in the wrong order (a network round trip on NFS: only with the option).
        if let Some(host) = host
            && !project(&locks, lock.owner, lock.offset, lock.length, host)
        {
            locks.pop();
            // Back to what the open held, which only lowers levels and cannot conflict.
            project(&locks, lock.owner, lock.offset, lock.length, host);
            return Err(NtStatus::LOCK_NOT_GRANTED);
        }
        self.count.store(locks.len(), Ordering::Relaxed);
        Ok(())
    }

    /// MS-FSA 2.1.5.8: removes a lock `owner` holds on exactly this range, an exclusive one
    /// before shared ones when it stacked several (as Windows does, smbtorture
    /// smb2.lock.unlock); STATUS_RANGE_NOT_LOCKED if there is none.
    /// With `host`, the open's host lock on the range falls to what its other locks there
    /// hold. Says whether the lock removed was exclusive.
    pub fn unlock(
        &self,
        owner: u64,
        offset: u64,
        length: u64,
        host: Option<&dyn HostLocks>,
    ) -> Result<bool, NtStatus> {
        let mut locks = self.locks.lock();
        let same = |l: &RangeLock| l.owner == owner && l.offset == offset && l.length == length;
        let index = locks
            .iter()
            .position(|l| same(l) && l.exclusive)
            .or_else(|| locks.iter().position(same))
            .ok_or(NtStatus::RANGE_NOT_LOCKED)?;
        let removed = locks.remove(index);
        if let Some(host) = host {
            project(&locks, owner, offset, length, host);
        }
        self.count.store(locks.len(), Ordering::Relaxed);
        drop(locks);
        self.changed.notify_waiters();
        Ok(removed.exclusive)
    }

    /// The number of locks held, all owners together.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// The number of locks `owner` holds.
    pub fn held_by(&self, owner: u64) -> usize {
        if self.count.load(Ordering::Relaxed) == 0 {
            return 0;
        }
        self.locks
            .lock()
            .iter()
            .filter(|l| l.owner == owner)
            .count()
    }

    /// Drops every lock of `owner` (its open closed) and wakes the requests that wait; with
    /// `host`, its host locks go too (its descriptor may outlive the close for a moment).
    pub fn release_owner(&self, owner: u64, host: Option<&dyn HostLocks>) {
        let mut locks = self.locks.lock();
        let before = locks.len();
        locks.retain(|l| l.owner != owner);
        if let Some(host) = host
            && locks.len() < before
            && let Err(e) = host.set(0, u64::MAX, HostLock::None)
        {
            tracing::debug!("host locks of a closed open not released: {e}");
        }
        self.count.store(locks.len(), Ordering::Relaxed);
        drop(locks);
        self.changed.notify_waiters();
    }

    /// MS-FSA 2.1.4.10: whether `owner` may read (`write` false) or write `length` bytes at
    /// `offset`. Reads are stopped by other opens' exclusive locks; writes by those and by any
    /// shared lock, the writer's own included. STATUS_FILE_LOCK_CONFLICT otherwise.
    /// With `host`, other holders' host locks stop the I/O as well (one query of the host per
    /// request, only on shares with the option).
    pub fn check_io(
        &self,
        owner: u64,
        offset: u64,
        length: u64,
        write: bool,
        host: Option<&dyn HostLocks>,
    ) -> Result<(), NtStatus> {
        if length == 0 {
            return Ok(());
        }
        let length = length.min(u64::MAX - offset);
        if self.count.load(Ordering::Relaxed) != 0 {
            let locks = self.locks.lock();
            let conflict = locks
                .iter()
                .any(|l| l.range().stops_io(offset, length, write, l.owner == owner));
            if conflict {
                return Err(NtStatus::FILE_LOCK_CONFLICT);
            }
        }
        match host.map(|host| host.conflicts(offset, length, write)) {
            Some(Ok(true)) => Err(NtStatus::FILE_LOCK_CONFLICT),
            Some(Err(e)) => {
                // A file system that keeps no locks (ENOLCK) has none to respect.
                tracing::debug!("host locks not checked: {e}");
                Ok(())
            }
            Some(Ok(false)) | None => Ok(()),
        }
    }

    /// Whether no lock is held.
    pub fn is_empty(&self) -> bool {
        self.count.load(Ordering::Relaxed) == 0
    }

    /// The locks held now, for status reports.
    pub fn held(&self) -> Vec<RangeLock> {
        if self.count.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        self.locks.lock().clone()
    }

    /// A future that resolves at the next change (a lock released); create it before checking
    /// the state it waits on and enable it, so that no change is missed in between.
    pub fn changed(&self) -> Notified<'_> {
        self.changed.notified()
    }
}

/// Sets `owner`'s host locks on `offset..offset + length` to what its locks in `locks` hold
/// there: on each byte the strongest of those covering it, nothing where none does. One call
/// per run of bytes at one level, found by a sweep over the owner's locks that meet the range
/// (bounded by `max_locks_per_open`). False when another holder's host lock conflicts; a host
/// that fails otherwise (a file system without locks) leaves the SMB lock standing alone.
fn project(
    locks: &[RangeLock],
    owner: u64,
    offset: u64,
    length: u64,
    host: &dyn HostLocks,
) -> bool {
    if length == 0 {
        return true;
    }
    let last = offset.saturating_add(length - 1);
    // (where, change of exclusive locks, change of shared locks) over the range.
    let mut events: Vec<(u64, i64, i64)> = Vec::new();
    for l in locks
        .iter()
        .filter(|l| l.owner == owner && l.length > 0 && l.offset <= last && offset <= l.last())
    {
        let (exclusive, shared) = if l.exclusive { (1, 0) } else { (0, 1) };
        events.push((l.offset.max(offset), exclusive, shared));
        if l.last() < last {
            events.push((l.last() + 1, -exclusive, -shared));
        }
    }
    events.sort_unstable_by_key(|e| e.0);
    let (mut exclusive, mut shared) = (0, 0);
    let (mut run_start, mut run_level) = (offset, HostLock::None);
    let set = |from: u64, to_last: u64, level: HostLock| match host.set(
        from,
        to_last - from + 1,
        level,
    ) {
        Ok(granted) => granted,
        Err(e) => {
            tracing::debug!("host lock not set: {e}");
            true
        }
    };
    let mut at = 0;
    while let Some(&(position, ..)) = events.get(at) {
        while let Some(&(_, e, s)) = events.get(at).filter(|e| e.0 == position) {
            exclusive += e;
            shared += s;
            at += 1;
        }
        let level = match (exclusive > 0, shared > 0) {
            (true, _) => HostLock::Exclusive,
            (false, true) => HostLock::Shared,
            (false, false) => HostLock::None,
        };
        if level != run_level {
            if position > run_start && !set(run_start, position - 1, run_level) {
                return false;
            }
            (run_start, run_level) = (position, level);
        }
    }
    set(run_start, last, run_level)
}

#[cfg(test)]
mod tests {
    use smb3d_state::overlap;

    use super::*;

    fn lock(owner: u64, offset: u64, length: u64, exclusive: bool) -> RangeLock {
        RangeLock {
            owner,
            offset,
            length,
            exclusive,
        }
    }

    #[test]
    fn zero_length_points_conflict_only_inside_a_range() {
        // smbtorture smb2.lock.zerobytelength: a point at 10 against other locks.
        for (offset, length, conflicts) in [
            (10, 0, false),
            (9, 1, false),
            (10, 1, false),
            (11, 1, false),
            (9, 2, true),
            (10, 2, false),
            (9, 3, true),
        ] {
            let table = LockTable::default();
            table
                .try_lock(lock(1, 10, 0, true), usize::MAX, None)
                .unwrap();
            assert_eq!(
                table
                    .try_lock(lock(2, offset, length, true), usize::MAX, None)
                    .is_err(),
                conflicts,
                "{offset}/{length} after the point"
            );
            let table = LockTable::default();
            table
                .try_lock(lock(1, offset, length, true), usize::MAX, None)
                .unwrap();
            assert_eq!(
                table
                    .try_lock(lock(2, 10, 0, true), usize::MAX, None)
                    .is_err(),
                conflicts,
                "{offset}/{length} before the point"
            );
        }
    }

    #[test]
    fn shared_stacks_on_own_exclusive_but_not_on_others() {
        let table = LockTable::default();
        table
            .try_lock(lock(1, 0, 10, true), usize::MAX, None)
            .unwrap();
        table
            .try_lock(lock(1, 5, 1, false), usize::MAX, None)
            .unwrap();
        assert_eq!(
            table.try_lock(lock(2, 5, 1, false), usize::MAX, None),
            Err(NtStatus::LOCK_NOT_GRANTED)
        );
        assert_eq!(
            table.try_lock(lock(1, 5, 1, true), usize::MAX, None),
            Err(NtStatus::LOCK_NOT_GRANTED),
            "exclusive conflicts with the owner's own locks"
        );
        table
            .try_lock(lock(1, 20, 1, false), usize::MAX, None)
            .unwrap();
        table
            .try_lock(lock(2, 20, 1, false), usize::MAX, None)
            .unwrap();
    }

    #[test]
    fn unlock_needs_the_exact_range_of_the_owner() {
        let table = LockTable::default();
        table
            .try_lock(lock(1, 0, 10, true), usize::MAX, None)
            .unwrap();
        assert_eq!(
            table.unlock(2, 0, 10, None),
            Err(NtStatus::RANGE_NOT_LOCKED)
        );
        assert_eq!(table.unlock(1, 0, 9, None), Err(NtStatus::RANGE_NOT_LOCKED));
        assert_eq!(table.unlock(1, 0, 10, None), Ok(true));
        assert_eq!(
            table.unlock(1, 0, 10, None),
            Err(NtStatus::RANGE_NOT_LOCKED)
        );
        assert_eq!(table.count.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn unlock_takes_the_exclusive_lock_of_a_stack_first() {
        let table = LockTable::default();
        table
            .try_lock(lock(1, 10, 0, true), usize::MAX, None)
            .unwrap();
        table
            .try_lock(lock(1, 10, 0, false), usize::MAX, None)
            .unwrap();
        assert!(
            table
                .try_lock(lock(2, 5, 10, false), usize::MAX, None)
                .is_err()
        );
        table.unlock(1, 10, 0, None).unwrap();
        table
            .try_lock(lock(2, 5, 10, false), usize::MAX, None)
            .unwrap();
    }

    #[test]
    fn a_full_table_refuses_what_does_not_conflict() {
        let table = LockTable::default();
        table.try_lock(lock(1, 0, 1, true), 2, None).unwrap();
        table.try_lock(lock(2, 1, 1, false), 2, None).unwrap();
        assert_eq!(
            table.try_lock(lock(3, 2, 1, false), 2, None),
            Err(NtStatus::INSUFFICIENT_RESOURCES)
        );
        // A conflict is answered as one, full or not.
        assert_eq!(
            table.try_lock(lock(3, 0, 1, false), 2, None),
            Err(NtStatus::LOCK_NOT_GRANTED)
        );
        table.unlock(2, 1, 1, None).unwrap();
        table.try_lock(lock(3, 2, 1, false), 2, None).unwrap();
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn io_conflicts() {
        let table = LockTable::default();
        table
            .try_lock(lock(1, 0, 100, false), usize::MAX, None)
            .unwrap();
        table
            .try_lock(lock(1, 100, 100, true), usize::MAX, None)
            .unwrap();
        // Shared: everyone reads, nobody writes, the owner included.
        assert_eq!(table.check_io(1, 0, 10, false, None), Ok(()));
        assert_eq!(table.check_io(2, 0, 10, false, None), Ok(()));
        assert_eq!(
            table.check_io(1, 0, 10, true, None),
            Err(NtStatus::FILE_LOCK_CONFLICT)
        );
        // Exclusive: only the owner reads and writes.
        assert_eq!(table.check_io(1, 150, 10, true, None), Ok(()));
        assert_eq!(
            table.check_io(2, 150, 10, false, None),
            Err(NtStatus::FILE_LOCK_CONFLICT)
        );
        assert_eq!(table.check_io(2, 200, 10, true, None), Ok(()));
        assert_eq!(table.check_io(2, 150, 0, true, None), Ok(()));
        table.release_owner(1, None);
        assert_eq!(table.check_io(2, 150, 10, true, None), Ok(()));
    }

    #[test]
    fn ranges_beyond_the_last_byte_are_invalid() {
        assert_eq!(
            check_range(u64::MAX, u64::MAX),
            Err(NtStatus::INVALID_LOCK_RANGE)
        );
        assert_eq!(check_range(u64::MAX, 1), Ok(()));
        assert_eq!(check_range(u64::MAX, 0), Ok(()));
        assert_eq!(check_range(1, u64::MAX), Ok(()));
        assert_eq!(check_range(2, u64::MAX), Err(NtStatus::INVALID_LOCK_RANGE));
        assert_eq!(
            check_range(u64::from(u32::MAX), u64::from(u32::MAX)),
            Ok(())
        );
    }

    /// The host's table as one open's descriptor sees it: its level on each of 64 bytes, and
    /// another process's locks.
    struct FakeHost {
        held: Mutex<[HostLock; 64]>,
        others: Mutex<Vec<(u64, u64, bool)>>,
        calls: AtomicUsize,
    }

    impl FakeHost {
        fn new() -> Self {
            Self {
                held: Mutex::new([HostLock::None; 64]),
                others: Mutex::new(Vec::new()),
                calls: AtomicUsize::new(0),
            }
        }

        fn levels(&self, from: usize, to: usize) -> Vec<HostLock> {
            self.held.lock()[from..to].to_vec()
        }
    }

    impl HostLocks for FakeHost {
        fn set(&self, offset: u64, length: u64, level: HostLock) -> VfsResult<bool> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            if level != HostLock::None
                && self.conflicts(offset, length, level == HostLock::Exclusive)?
            {
                return Ok(false);
            }
            let end = offset.saturating_add(length).min(64);
            for byte in &mut self.held.lock()[offset as usize..end as usize] {
                *byte = level;
            }
            Ok(true)
        }

        fn conflicts(&self, offset: u64, length: u64, write: bool) -> VfsResult<bool> {
            Ok(self
                .others
                .lock()
                .iter()
                .any(|&(o, l, exclusive)| overlap(o, l, offset, length) && (write || exclusive)))
        }
    }

    #[test]
    fn host_locks_follow_the_strongest_smb_lock_on_each_byte() {
        use HostLock::{Exclusive as X, None as N, Shared as S};
        let table = LockTable::default();
        let host = FakeHost::new();
        let host_ref: Option<&dyn HostLocks> = Some(&host);
        table
            .try_lock(lock(1, 0, 10, true), usize::MAX, host_ref)
            .unwrap();
        // A shared lock stacked over part of the open's exclusive one keeps it exclusive.
        table
            .try_lock(lock(1, 5, 10, false), usize::MAX, host_ref)
            .unwrap();
        assert_eq!(
            host.levels(0, 16),
            [[X; 10].as_slice(), &[S; 5], &[N]].concat()
        );
        // Two shared locks stacked on one range: unlocking one keeps the range locked.
        table
            .try_lock(lock(1, 5, 10, false), usize::MAX, host_ref)
            .unwrap();
        table.unlock(1, 0, 10, host_ref).unwrap();
        assert_eq!(
            host.levels(0, 16),
            [[N; 5].as_slice(), &[S; 10], &[N]].concat()
        );
        table.unlock(1, 5, 10, host_ref).unwrap();
        assert_eq!(
            host.levels(0, 16),
            [[N; 5].as_slice(), &[S; 10], &[N]].concat()
        );
        table.unlock(1, 5, 10, host_ref).unwrap();
        assert_eq!(host.levels(0, 16), [N; 16]);
        // Zero-length locks hold nothing in the host (there, length 0 means "to the end").
        let calls = host.calls.load(Ordering::Relaxed);
        table
            .try_lock(lock(1, 3, 0, true), usize::MAX, host_ref)
            .unwrap();
        assert_eq!(host.calls.load(Ordering::Relaxed), calls);
        // Closing drops all of the open's host locks.
        table
            .try_lock(lock(1, 40, 4, true), usize::MAX, host_ref)
            .unwrap();
        table.release_owner(1, host_ref);
        assert_eq!(host.levels(0, 64), [N; 64]);
    }

    #[test]
    fn another_process_locks_stop_smb_locks_and_io() {
        use HostLock::{None as N, Shared as S};
        let table = LockTable::default();
        let host = FakeHost::new();
        let host_ref: Option<&dyn HostLocks> = Some(&host);
        host.others.lock().push((20, 4, true));
        host.others.lock().push((30, 4, false));
        table
            .try_lock(lock(1, 0, 10, false), usize::MAX, host_ref)
            .unwrap();
        // Refused, in the table as in the host, where the open keeps what it held.
        assert_eq!(
            table.try_lock(lock(1, 5, 20, true), usize::MAX, host_ref),
            Err(NtStatus::LOCK_NOT_GRANTED)
        );
        assert_eq!(host.levels(0, 26), [[S; 10].as_slice(), &[N; 16]].concat());
        assert_eq!(table.held_by(1), 1);
        assert_eq!(
            table.try_lock(lock(1, 31, 1, true), usize::MAX, host_ref),
            Err(NtStatus::LOCK_NOT_GRANTED)
        );
        table
            .try_lock(lock(1, 31, 1, false), usize::MAX, host_ref)
            .unwrap();
        assert_eq!(host.levels(31, 32), [S]);
        // Reads meet only write locks, writes every lock; the open's own locks do not count.
        let io = |offset, write| table.check_io(1, offset, 1, write, host_ref);
        assert_eq!(io(21, false), Err(NtStatus::FILE_LOCK_CONFLICT));
        assert_eq!(io(32, false), Ok(()));
        assert_eq!(io(32, true), Err(NtStatus::FILE_LOCK_CONFLICT));
        assert_eq!(io(40, true), Ok(()));
    }
}
