//! File-system calls block. Those that may wait on the disk by design (data transfers, flushes,
//! copies, listings, deletions, anything on a share that syncs metadata) run in [`blocking`],
//! so that a slow disk stalls only the request that waits for it, not the async workers that
//! serve everyone else. Metadata calls the kernel answers from its caches (opens, stats,
//! xattrs, closes) run inline: handing the worker's tasks to another thread costs a thread
//! wake-up and two context switches, more than such a call (docs/design.md).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use smb3d_dtyp::NtStatus;
use smb3d_vfs::Vfs;
use tokio::runtime::{Handle, RuntimeFlavor};

use crate::identity::Identity;

/// Runs `f`, a blocking call. On the multi-threaded runtime the worker hands its other tasks
/// to a fresh thread first; elsewhere (tests, fuzzing) it simply runs inline.
pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// Runs `f`, a call found to wait on the disk, on the runtime's blocking threads, and yields
/// until it is done: the task awaiting it (a connection's reader running a brief frame inline)
/// goes on as a task of its own, and the reader takes the connection's next frames. Without a
/// runtime (fuzzing) it runs inline.
pub(crate) async fn elsewhere<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let Ok(handle) = Handle::try_current() else {
        return f();
    };
    match handle.spawn_blocking(f).await {
        Ok(done) => done,
        Err(failed) => match failed.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Cancelled: the runtime is shutting down, and this task with it.
            Err(_) => std::future::pending().await,
        },
    }
}

/// Whether a call is expected to wait on the disk, and so runs in [`blocking`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Answered from the kernel's caches: runs inline.
    Brief,
    /// May wait on the disk: the worker hands its other tasks off first.
    Long,
}

impl Wait {
    /// Data transfers from this size on count as long.
    const LONG_TRANSFER: usize = 64 * 1024;

    /// The wait of moving `len` bytes of file data.
    pub fn transfer(len: usize) -> Self {
        if len >= Self::LONG_TRANSFER {
            Self::Long
        } else {
            Self::Brief
        }
    }

    /// Runs `f` as this wait asks.
    pub fn run<T>(self, f: impl FnOnce() -> T) -> T {
        match self {
            Self::Brief => f(),
            Self::Long => blocking(f),
        }
    }
}

/// Where long WRITEs run. Copying a MiB into the page cache costs less CPU than handing the
/// worker's tasks to another thread first (a thread wake-up and two context switches per
/// WRITE, a fifth of a plain 1 MiB WRITE's server CPU), so they run inline, unless the kernel
/// makes writers wait: writeback throttling (`balance_dirty_pages`), the journal, reclaim, a
/// stalled device. No interface says beforehand whether a buffered write or a `splice` into a
/// file will wait (`pwritev2` with RWF_NOWAIT fails every buffered write on ext4 with
/// EOPNOTSUPP), so the waits are bounded instead: long WRITEs run inline on all workers but
/// one at a time, the others hand off, so one worker is always free of them; and a WRITE that
/// took longer inline than [`Self::STALLED_PER_MIB`] allows sends the long WRITEs of the next
/// [`Self::HAND_OFF_FOR`], server-wide, back to [`blocking`].
pub(crate) struct WritePace {
    since: Instant,
    /// Nanoseconds after `since` until which long WRITEs hand off.
    hand_off_until: AtomicU64,
    /// Long WRITEs running inline now.
    inline: AtomicUsize,
}

impl Default for WritePace {
    fn default() -> Self {
        Self {
            since: Instant::now(),
            hand_off_until: AtomicU64::new(0),
            inline: AtomicUsize::new(0),
        }
    }
}

/// A long WRITE's place among those running inline, given back when dropped.
struct InlinePlace<'a>(&'a AtomicUsize);

impl Drop for InlinePlace<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl WritePace {
    /// A WRITE that takes longer inline, per MiB (and at least this), waited for the kernel:
    /// on this project's two-core VM a 1 MiB `pwrite` into the page cache took 0.2 ms (median
    /// of 200, at most 2.4), an 8 MiB one 2-20 ms.
    const STALLED_PER_MIB: Duration = Duration::from_millis(10);
    /// How long WRITEs hand off after one stalled.
    const HAND_OFF_FOR: Duration = Duration::from_secs(1);

    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.duration_since(self.since).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Whether long WRITEs hand off at `at`.
    fn hands_off(&self, at: Instant) -> bool {
        self.nanos(at) < self.hand_off_until.load(Ordering::Relaxed)
    }

    /// A place to run inline at `at` on a runtime of `workers` workers, if there is one.
    fn inline_place(&self, at: Instant, workers: usize) -> Option<InlinePlace<'_>> {
        if self.hands_off(at) {
            return None;
        }
        let most = workers.saturating_sub(1);
        self.inline
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now < most).then_some(now + 1)
            })
            .ok()
            .map(|_| InlinePlace(&self.inline))
    }

    /// Runs `write`, a WRITE of `len` bytes.
    pub fn run<T>(&self, len: usize, write: impl FnOnce() -> T) -> T {
        if Wait::transfer(len) == Wait::Brief {
            return write();
        }
        let workers = match Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
                handle.metrics().num_workers()
            }
            _ => return write(),
        };
        let started = Instant::now();
        let Some(_place) = self.inline_place(started, workers) else {
            return blocking(write);
        };
        let written = write();
        let ended = Instant::now();
        let mib = u32::try_from(len.div_ceil(1 << 20)).unwrap_or(u32::MAX);
        if ended.duration_since(started) > Self::STALLED_PER_MIB.saturating_mul(mib.max(1)) {
            let until = self.nanos(ended + Self::HAND_OFF_FOR);
            self.hand_off_until.fetch_max(until, Ordering::Relaxed);
            tracing::debug!("a WRITE of {len} bytes waited; WRITEs hand off for a while");
        }
        written
    }
}

/// Runs file-system work on `vfs` as the session's user ([`Vfs::run_as`]): the file system's
/// permission checks, new files' ownership and quotas then apply to that user. A failure to
/// take on the user's credentials is STATUS_ACCESS_DENIED, never work done as someone else.
pub(crate) fn as_user<T>(
    vfs: &dyn Vfs,
    who: &Identity,
    wait: Wait,
    work: impl FnOnce() -> Result<T, NtStatus>,
) -> Result<T, NtStatus> {
    wait.run(|| {
        let mut work = Some(work);
        let mut result = None;
        vfs.run_as(&who.unix, &mut || result = work.take().map(|w| w()));
        result.unwrap_or(Err(NtStatus::ACCESS_DENIED))
    })
}

/// Runs `work` with the service's own credentials ([`Vfs::run_privileged`]), from inside
/// [`as_user`] work, for metadata the server writes on a user's behalf after checking the
/// user's rights. A back end that could not switch leaves the work undone: ACCESS_DENIED.
pub(crate) fn as_service<T>(
    vfs: &dyn Vfs,
    work: impl FnOnce() -> Result<T, NtStatus>,
) -> Result<T, NtStatus> {
    let mut work = Some(work);
    let mut result = None;
    vfs.run_privileged(&mut || result = work.take().map(|w| w()));
    result.unwrap_or(Err(NtStatus::ACCESS_DENIED))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_writes_run_inline_on_all_workers_but_one() {
        let pace = WritePace::default();
        let now = Instant::now();
        assert!(pace.inline_place(now, 1).is_none(), "one worker: never");
        let first = pace.inline_place(now, 3).unwrap();
        let second = pace.inline_place(now, 3).unwrap();
        assert!(pace.inline_place(now, 3).is_none());
        drop(first);
        let third = pace.inline_place(now, 3).unwrap();
        drop((second, third));
        assert_eq!(pace.inline.load(Ordering::Acquire), 0);
    }

    #[test]
    fn a_write_that_waited_sends_the_next_ones_off_the_worker_for_a_while() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let pace = WritePace::default();
        let run =
            |len, wait| runtime.block_on(async { pace.run(len, || std::thread::sleep(wait)) });
        // Brief writes, and long ones that take less than their time, leave writes inline.
        run(1000, Duration::from_millis(15));
        run(1 << 20, Duration::ZERO);
        run(2 << 20, Duration::from_millis(15));
        assert!(!pace.hands_off(Instant::now()));
        run(1 << 20, Duration::from_millis(15));
        let stalled = Instant::now();
        assert!(pace.hands_off(stalled));
        assert!(pace.inline_place(stalled, 2).is_none());
        assert!(pace.hands_off(stalled + WritePace::HAND_OFF_FOR / 2));
        let later = stalled + WritePace::HAND_OFF_FOR + Duration::from_millis(1);
        assert!(!pace.hands_off(later));
        assert!(pace.inline_place(later, 2).is_some());
    }
}
