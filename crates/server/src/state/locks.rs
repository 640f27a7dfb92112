//! Byte-range locks of one file, across all its opens (MS-FSA 2.1.1.5 ByteRangeLockList,
//! 2.1.5.7 and 2.1.5.8 lock and unlock, 2.1.4.10 the conflict check of READ and WRITE).
//!
//! A lock belongs to an open (its server-unique volatile FileId). Requests that wait for a
//! range wait on [`LockTable::changed`], which fires whenever a lock goes away, and try again.

use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use smb3d_dtyp::NtStatus;
use tokio::sync::Notify;
use tokio::sync::futures::Notified;

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

/// Whether two ranges overlap. A zero-length range is a point that overlaps a non-empty range
/// only when the range starts strictly before it and covers it (Windows' answer, tested by
/// smbtorture smb2.lock.zerobytelength); two points never overlap.
fn overlap(a_offset: u64, a_length: u64, b_offset: u64, b_length: u64) -> bool {
    // Ranges passed `check_range`, so `offset + length - 1` does not overflow.
    let last = |offset: u64, length: u64| offset.saturating_add(length - 1);
    match (a_length, b_length) {
        (0, 0) => false,
        (0, _) => b_offset < a_offset && a_offset <= last(b_offset, b_length),
        (_, 0) => a_offset < b_offset && b_offset <= last(a_offset, a_length),
        _ => a_offset <= last(b_offset, b_length) && b_offset <= last(a_offset, a_length),
    }
}

impl RangeLock {
    fn overlaps(&self, offset: u64, length: u64) -> bool {
        overlap(self.offset, self.length, offset, length)
    }

    /// MS-FSA 2.1.5.7: an exclusive request conflicts with every overlapping lock, its own
    /// included; a shared one only with other opens' exclusive locks.
    fn blocks(&self, request: &RangeLock) -> bool {
        self.overlaps(request.offset, request.length)
            && (request.exclusive || (self.exclusive && self.owner != request.owner))
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
    pub fn try_lock(&self, lock: RangeLock, max_locks: usize) -> Result<(), NtStatus> {
        let mut locks = self.locks.lock();
        if locks.iter().any(|held| held.blocks(&lock)) {
            return Err(NtStatus::LOCK_NOT_GRANTED);
        }
        if locks.len() >= max_locks {
            return Err(NtStatus::INSUFFICIENT_RESOURCES);
        }
        locks.push(lock);
        self.count.store(locks.len(), Ordering::Relaxed);
        Ok(())
    }

    /// MS-FSA 2.1.5.8: removes a lock `owner` holds on exactly this range, an exclusive one
    /// before shared ones when it stacked several (as Windows does, smbtorture
    /// smb2.lock.unlock); STATUS_RANGE_NOT_LOCKED if there is none.
    pub fn unlock(&self, owner: u64, offset: u64, length: u64) -> Result<(), NtStatus> {
        let mut locks = self.locks.lock();
        let same = |l: &RangeLock| l.owner == owner && l.offset == offset && l.length == length;
        let index = locks
            .iter()
            .position(|l| same(l) && l.exclusive)
            .or_else(|| locks.iter().position(same))
            .ok_or(NtStatus::RANGE_NOT_LOCKED)?;
        locks.remove(index);
        self.count.store(locks.len(), Ordering::Relaxed);
        drop(locks);
        self.changed.notify_waiters();
        Ok(())
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

    /// Drops every lock of `owner` (its open closed) and wakes the requests that wait.
    pub fn release_owner(&self, owner: u64) {
        let mut locks = self.locks.lock();
        locks.retain(|l| l.owner != owner);
        self.count.store(locks.len(), Ordering::Relaxed);
        drop(locks);
        self.changed.notify_waiters();
    }

    /// MS-FSA 2.1.4.10: whether `owner` may read (`write` false) or write `length` bytes at
    /// `offset`. Reads are stopped by other opens' exclusive locks; writes by those and by any
    /// shared lock, the writer's own included. STATUS_FILE_LOCK_CONFLICT otherwise.
    pub fn check_io(
        &self,
        owner: u64,
        offset: u64,
        length: u64,
        write: bool,
    ) -> Result<(), NtStatus> {
        if self.count.load(Ordering::Relaxed) == 0 || length == 0 {
            return Ok(());
        }
        let length = length.min(u64::MAX - offset);
        let locks = self.locks.lock();
        let conflict = locks.iter().any(|l| {
            l.overlaps(offset, length) && if l.exclusive { l.owner != owner } else { write }
        });
        if conflict {
            Err(NtStatus::FILE_LOCK_CONFLICT)
        } else {
            Ok(())
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

#[cfg(test)]
mod tests {
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
            table.try_lock(lock(1, 10, 0, true), usize::MAX).unwrap();
            assert_eq!(
                table
                    .try_lock(lock(2, offset, length, true), usize::MAX)
                    .is_err(),
                conflicts,
                "{offset}/{length} after the point"
            );
            let table = LockTable::default();
            table
                .try_lock(lock(1, offset, length, true), usize::MAX)
                .unwrap();
            assert_eq!(
                table.try_lock(lock(2, 10, 0, true), usize::MAX).is_err(),
                conflicts,
                "{offset}/{length} before the point"
            );
        }
    }

    #[test]
    fn shared_stacks_on_own_exclusive_but_not_on_others() {
        let table = LockTable::default();
        table.try_lock(lock(1, 0, 10, true), usize::MAX).unwrap();
        table.try_lock(lock(1, 5, 1, false), usize::MAX).unwrap();
        assert_eq!(
            table.try_lock(lock(2, 5, 1, false), usize::MAX),
            Err(NtStatus::LOCK_NOT_GRANTED)
        );
        assert_eq!(
            table.try_lock(lock(1, 5, 1, true), usize::MAX),
            Err(NtStatus::LOCK_NOT_GRANTED),
            "exclusive conflicts with the owner's own locks"
        );
        table.try_lock(lock(1, 20, 1, false), usize::MAX).unwrap();
        table.try_lock(lock(2, 20, 1, false), usize::MAX).unwrap();
    }

    #[test]
    fn unlock_needs_the_exact_range_of_the_owner() {
        let table = LockTable::default();
        table.try_lock(lock(1, 0, 10, true), usize::MAX).unwrap();
        assert_eq!(table.unlock(2, 0, 10), Err(NtStatus::RANGE_NOT_LOCKED));
        assert_eq!(table.unlock(1, 0, 9), Err(NtStatus::RANGE_NOT_LOCKED));
        assert_eq!(table.unlock(1, 0, 10), Ok(()));
        assert_eq!(table.unlock(1, 0, 10), Err(NtStatus::RANGE_NOT_LOCKED));
        assert_eq!(table.count.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn unlock_takes_the_exclusive_lock_of_a_stack_first() {
        let table = LockTable::default();
        table.try_lock(lock(1, 10, 0, true), usize::MAX).unwrap();
        table.try_lock(lock(1, 10, 0, false), usize::MAX).unwrap();
        assert!(table.try_lock(lock(2, 5, 10, false), usize::MAX).is_err());
        table.unlock(1, 10, 0).unwrap();
        table.try_lock(lock(2, 5, 10, false), usize::MAX).unwrap();
    }

    #[test]
    fn a_full_table_refuses_what_does_not_conflict() {
        let table = LockTable::default();
        table.try_lock(lock(1, 0, 1, true), 2).unwrap();
        table.try_lock(lock(2, 1, 1, false), 2).unwrap();
        assert_eq!(
            table.try_lock(lock(3, 2, 1, false), 2),
            Err(NtStatus::INSUFFICIENT_RESOURCES)
        );
        // A conflict is answered as one, full or not.
        assert_eq!(
            table.try_lock(lock(3, 0, 1, false), 2),
            Err(NtStatus::LOCK_NOT_GRANTED)
        );
        table.unlock(2, 1, 1).unwrap();
        table.try_lock(lock(3, 2, 1, false), 2).unwrap();
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn io_conflicts() {
        let table = LockTable::default();
        table.try_lock(lock(1, 0, 100, false), usize::MAX).unwrap();
        table.try_lock(lock(1, 100, 100, true), usize::MAX).unwrap();
        // Shared: everyone reads, nobody writes, the owner included.
        assert_eq!(table.check_io(1, 0, 10, false), Ok(()));
        assert_eq!(table.check_io(2, 0, 10, false), Ok(()));
        assert_eq!(
            table.check_io(1, 0, 10, true),
            Err(NtStatus::FILE_LOCK_CONFLICT)
        );
        // Exclusive: only the owner reads and writes.
        assert_eq!(table.check_io(1, 150, 10, true), Ok(()));
        assert_eq!(
            table.check_io(2, 150, 10, false),
            Err(NtStatus::FILE_LOCK_CONFLICT)
        );
        assert_eq!(table.check_io(2, 200, 10, true), Ok(()));
        assert_eq!(table.check_io(2, 150, 0, true), Ok(()));
        table.release_owner(1);
        assert_eq!(table.check_io(2, 150, 10, true), Ok(()));
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
}
