//! Where long WRITEs run. Copying a MiB into the page cache costs less CPU than handing the
//! worker's tasks to another thread first (`block_in_place`: a thread wake-up, two context
//! switches and futex traffic per WRITE), so they run inline, on the task that read them
//! where there is room (`pipeline::scheduling`), unless the kernel makes writers wait:
//! writeback throttling (`balance_dirty_pages`), the journal, reclaim, a stalled device. No
//! interface says beforehand whether a buffered write or a `splice` into a file will wait
//! (`pwritev2` with RWF_NOWAIT fails every buffered write on ext4 with EOPNOTSUPP), so the
//! waits are bounded instead:
//!
//! - long WRITEs run inline on all workers but one at a time, the others hand off, so one
//!   worker is always free of them;
//! - a WRITE that took longer inline than [`WritePace::STALLED_PER_MIB`] allows sends the long
//!   WRITEs of the next [`WritePace::HAND_OFF_FOR`], server-wide, back to [`blocking`];
//! - a lookout thread nudges the runtime while an inline WRITE has run for a [`TICK`]: tokio
//!   lets a worker that found tasks while it polled the sockets run them without waking
//!   another, so the other worker may sleep on its condition variable with nobody polling the
//!   sockets. A WRITE stalled inline then held every other connection's requests until it
//!   returned (another connection's ECHO waited 1.7 s behind a 2 s stall). The nudge, a task
//!   spawned from outside the runtime, wakes a sleeping worker, which takes the stalled
//!   worker's queued tasks and then polls the sockets.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::runtime::{Handle, RuntimeFlavor};

use crate::blocking::{Wait, blocking};

/// How long an inline WRITE runs before the lookout nudges the runtime, and how often it looks
/// while inline WRITEs run (a wake-up of a sleeping thread: about 200 a second, a few
/// microseconds each, while WRITEs run inline; one a second otherwise).
const TICK: Duration = Duration::from_millis(5);
/// How often an idle lookout checks whether its server is gone.
const IDLE_TICK: Duration = Duration::from_secs(1);

/// What the WRITEs and the lookout share.
#[derive(Default)]
struct Counters {
    /// Long WRITEs running inline now.
    inline: AtomicUsize,
    /// Inline WRITEs started so far: the lookout's sign that they move on.
    started: AtomicU64,
}

/// The thread that watches inline WRITEs, and whether it sleeps until woken.
struct Lookout {
    thread: std::thread::Thread,
    asleep: Arc<AtomicBool>,
}

/// Where a server's long WRITEs run.
pub(crate) struct WritePace {
    since: Instant,
    /// Nanoseconds after `since` until which long WRITEs hand off.
    hand_off_until: AtomicU64,
    counters: Arc<Counters>,
    /// Started with the first inline WRITE, on that WRITE's runtime; None if it could not be.
    lookout: OnceLock<Option<Lookout>>,
}

impl Default for WritePace {
    fn default() -> Self {
        Self {
            since: Instant::now(),
            hand_off_until: AtomicU64::new(0),
            counters: Arc::default(),
            lookout: OnceLock::new(),
        }
    }
}

/// A long WRITE's place among those running inline, given back when dropped.
struct InlinePlace<'a>(&'a AtomicUsize);

impl Drop for InlinePlace<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The multi-threaded runtime this runs on and its number of workers; None elsewhere (tests,
/// fuzzing), where everything runs inline anyway.
fn multi_thread() -> Option<(Handle, usize)> {
    let handle = Handle::try_current().ok()?;
    if handle.runtime_flavor() != RuntimeFlavor::MultiThread {
        return None;
    }
    let workers = handle.metrics().num_workers();
    Some((handle, workers))
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

    /// Whether a long WRITE would find a place to run inline now: the reader then runs a
    /// frame holding one on its own task (`pipeline::scheduling`). A hint; [`Self::run`]
    /// takes the place.
    pub fn has_room(&self) -> bool {
        multi_thread().is_some_and(|(_, workers)| {
            !self.hands_off(Instant::now())
                && self.counters.inline.load(Ordering::Relaxed) < workers.saturating_sub(1)
        })
    }

    /// A place to run inline at `at` on a runtime of `workers` workers, if there is one.
    fn inline_place(&self, at: Instant, workers: usize) -> Option<InlinePlace<'_>> {
        if self.hands_off(at) {
            return None;
        }
        let most = workers.saturating_sub(1);
        self.counters
            .inline
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                (now < most).then_some(now + 1)
            })
            .ok()
            .map(|_| InlinePlace(&self.counters.inline))
    }

    /// Tells the lookout that an inline WRITE starts, starting it first if need be; false if
    /// there is no lookout, and the WRITE must hand off.
    fn watched(&self, handle: &Handle) -> bool {
        let Some(lookout) = self
            .lookout
            .get_or_init(|| Lookout::start(self.counters.clone(), handle.clone()))
        else {
            return false;
        };
        self.counters.started.fetch_add(1, Ordering::SeqCst);
        if lookout.asleep.load(Ordering::SeqCst) {
            lookout.thread.unpark();
        }
        true
    }

    /// Runs `write`, a WRITE of `len` bytes.
    pub fn run<T>(&self, len: usize, write: impl FnOnce() -> T) -> T {
        if Wait::transfer(len) == Wait::Brief {
            return write();
        }
        let Some((handle, workers)) = multi_thread() else {
            return write();
        };
        let started = Instant::now();
        let Some(_place) = self
            .inline_place(started, workers)
            .filter(|_| self.watched(&handle))
        else {
            return blocking(write);
        };
        let before = SchedStat::now();
        let written = write();
        let ended = Instant::now();
        let mib = u32::try_from(len.div_ceil(1 << 20)).unwrap_or(u32::MAX);
        let limit = Self::STALLED_PER_MIB.saturating_mul(mib.max(1));
        let took = ended.duration_since(started);
        if took > limit && SchedStat::waited(before, took) > limit {
            let until = self.nanos(ended + Self::HAND_OFF_FOR);
            self.hand_off_until.fetch_max(until, Ordering::Relaxed);
            tracing::debug!("a WRITE of {len} bytes waited; WRITEs hand off for a while");
        }
        written
    }
}

/// The calling thread's scheduler times from `/proc/thread-self/schedstat`: on a machine with
/// more runnable threads than cores a WRITE is often preempted for longer than a stall's
/// limit (4 times in 10 s of 1 MiB WRITEs at load 7, each sending the next second's WRITEs off),
/// and time spent runnable on the run queue is not a wait for the kernel's write path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SchedStat {
    /// Nanoseconds on a CPU.
    ran: u64,
    /// Nanoseconds runnable, waiting for a CPU.
    queued: u64,
}

impl SchedStat {
    /// Read afresh each time (open, read, close: a few microseconds a long WRITE): a
    /// descriptor kept per thread would outlive every connection, and an administrator
    /// counting the server's descriptors would see one more per worker thread.
    fn now() -> Option<Self> {
        use std::io::Read;
        let mut buf = [0u8; 96];
        let len = std::fs::File::open("/proc/thread-self/schedstat")
            .and_then(|mut file| file.read(&mut buf))
            .ok()?;
        Self::parse(buf.get(..len)?)
    }

    /// "RAN QUEUED TIMESLICES\n".
    fn parse(text: &[u8]) -> Option<Self> {
        let mut fields = std::str::from_utf8(text).ok()?.split_ascii_whitespace();
        let ran = fields.next()?.parse().ok()?;
        let queued = fields.next()?.parse().ok()?;
        Some(Self { ran, queued })
    }

    /// How much of `took`, which began at `before`, the thread spent neither running nor
    /// runnable: waiting. All of it when the times cannot be read.
    fn waited(before: Option<Self>, took: Duration) -> Duration {
        let (Some(before), Some(after)) = (before, Self::now()) else {
            return took;
        };
        let busy =
            after.ran.saturating_sub(before.ran) + after.queued.saturating_sub(before.queued);
        took.saturating_sub(Duration::from_nanos(busy))
    }
}

impl Lookout {
    fn start(counters: Arc<Counters>, handle: Handle) -> Option<Self> {
        let asleep = Arc::new(AtomicBool::new(false));
        let flag = asleep.clone();
        let spawned = std::thread::Builder::new()
            .name("smb3d-lookout".into())
            .spawn(move || keep_watch(&counters, &handle, &flag));
        match spawned {
            Ok(joined) => Some(Self {
                thread: joined.thread().clone(),
                asleep,
            }),
            Err(e) => {
                tracing::warn!("long WRITEs hand off: their lookout thread did not start: {e}");
                None
            }
        }
    }
}

/// The lookout's loop: while inline WRITEs run, every [`TICK`] it checks whether one has run
/// since the last look with none started since, and if so nudges the runtime. It ends once
/// the server (the counters' other owner) is gone.
fn keep_watch(counters: &Arc<Counters>, handle: &Handle, asleep: &AtomicBool) {
    loop {
        if counters.inline.load(Ordering::SeqCst) == 0 {
            asleep.store(true, Ordering::SeqCst);
            // A WRITE that started after the flag was set wakes the thread; one before it is
            // seen here.
            if counters.inline.load(Ordering::SeqCst) == 0 {
                std::thread::park_timeout(IDLE_TICK);
            }
            asleep.store(false, Ordering::SeqCst);
            if Arc::strong_count(counters) == 1 {
                return;
            }
            continue;
        }
        let seen = counters.started.load(Ordering::SeqCst);
        std::thread::sleep(TICK);
        if counters.inline.load(Ordering::SeqCst) > 0
            && counters.started.load(Ordering::SeqCst) == seen
        {
            // From outside the runtime a spawn goes to the shared queue and wakes a sleeping
            // worker, if any; the task itself does nothing.
            drop(handle.spawn(async {}));
        }
    }
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
        assert_eq!(pace.counters.inline.load(Ordering::Acquire), 0);
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

    #[test]
    fn time_on_the_run_queue_is_not_a_wait() {
        let stat = SchedStat::parse(b"279775212 263014300 101\n").unwrap();
        assert_eq!(
            stat,
            SchedStat {
                ran: 279_775_212,
                queued: 263_014_300
            }
        );
        assert_eq!(SchedStat::parse(b"12"), None);
        assert_eq!(SchedStat::parse(b"x 1 2"), None);
        // Without the times, all of it counts as a wait.
        let took = Duration::from_millis(30);
        assert_eq!(SchedStat::waited(None, took), took);
        // Running (here: spinning) is no wait; sleeping is.
        let before = SchedStat::now();
        assert!(before.is_some(), "Linux has /proc/thread-self/schedstat");
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(30) {
            std::hint::spin_loop();
        }
        assert!(SchedStat::waited(before, started.elapsed()) < Duration::from_millis(15));
        let before = SchedStat::now();
        let started = Instant::now();
        std::thread::sleep(Duration::from_millis(30));
        assert!(SchedStat::waited(before, started.elapsed()) >= Duration::from_millis(25));
    }

    /// The soak counts the server's descriptors after its clients leave: a schedstat file kept
    /// open per thread was one more per worker (CI's soak failed on it).
    #[test]
    fn reading_the_times_keeps_no_descriptor() {
        // The link reads "PID/task/TID"; an open file's reads "/proc/PID/task/TID/...".
        let this_thread = std::fs::read_link("/proc/thread-self").unwrap();
        let schedstat = std::path::Path::new("/proc")
            .join(this_thread)
            .join("schedstat");
        assert!(SchedStat::now().is_some());
        let open: Vec<_> = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .collect();
        assert!(!open.contains(&schedstat), "{open:?}");
    }

    #[test]
    fn the_lookout_ends_with_its_server() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let pace = WritePace::default();
        runtime.block_on(async { pace.run(1 << 20, || ()) });
        let counters = Arc::downgrade(&pace.counters);
        drop(pace);
        let deadline = Instant::now() + 3 * IDLE_TICK;
        while counters.strong_count() > 0 {
            assert!(Instant::now() < deadline, "the lookout outlived its server");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
