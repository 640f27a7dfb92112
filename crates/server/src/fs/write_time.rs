//! LastWriteTime as Windows keeps it while a file is open, which Linux's mtime cannot express
//! on its own (MS-FSA 2.1.5.3 and 2.1.5.14.2; the timing is Windows', as smbtorture's
//! `smb2.timestamps` encodes it):
//!
//! - a handle's first write does not change the time at once; the update shows two seconds
//!   later, or earlier at a flush, a SET_INFO of basic information, or the handle's close;
//! - later writes through a handle whose update has shown leave the time alone until that
//!   handle closes, which then sets it to the close time;
//! - changing the end of file updates the time at once;
//! - a time a client sets sticks: no write changes it until every handle is closed.
//!
//! The kernel moves mtime at every write, so while a file is open the time clients see is kept
//! here, and written to the file system when a handle that changed it closes.
//!
//! The times come from the server's clock ([`Now`]); the delay is measured on its monotonic
//! time, so a wall clock stepped back does not hold an update, and an update never shows a time
//! before one this file's updates showed already (MS-FSA takes "the current system time" and
//! does not ask for more; a step back of hours would otherwise move the file's time back
//! hours at its close).

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use smb3d_wire::FileTime;
use tokio::time::Instant;

use crate::clock::Clock;

/// How long a write's update stays hidden.
const DELAY: Duration = Duration::from_secs(2);
/// [`DELAY`] in FileTime ticks.
const DELAY_TICKS: u64 = 2 * 10_000_000;

/// One reading of the server's clock.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Now {
    /// Wall time: what the times are.
    pub wall: FileTime,
    /// Monotonic time: when a pending update shows.
    pub at: Instant,
}

impl Now {
    pub(crate) fn of(clock: &dyn Clock) -> Self {
        Self {
            wall: clock.filetime(),
            at: clock.now(),
        }
    }
}

/// A write's update, hidden until `at`.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// On the monotonic clock.
    at: Instant,
    /// The time it shows as: the write's wall time and the delay.
    shows: FileTime,
}

/// What one open has written, for [`WriteTime`].
#[derive(Default)]
pub(crate) struct OpenWrites(AtomicU8);

const NOTHING: u8 = 0;
/// Wrote; its update is pending or has shown.
const WROTE: u8 = 1;
/// Wrote again after its update showed: the close updates the time.
const WROTE_AGAIN: u8 = 2;

impl OpenWrites {
    fn get(&self) -> u8 {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self, state: u8) {
        self.0.store(state, Ordering::Relaxed);
    }

    /// Whether this open changed the file's time (its close must store it).
    pub(crate) fn wrote(&self) -> bool {
        self.get() != NOTHING
    }

    /// The open's writes are accounted for.
    pub(crate) fn clear(&self) {
        self.set(NOTHING);
    }
}

/// The last-write time of one open file.
#[derive(Default, Debug)]
pub(crate) struct WriteTime {
    /// What clients see instead of the file system's mtime.
    shown: Option<FileTime>,
    /// A write's update not shown yet.
    due: Option<Pending>,
    /// Set by a client: writes do not change it.
    sticky: bool,
    /// The latest time an update (not a client) showed: later updates show no earlier one.
    latest: Option<FileTime>,
}

impl WriteTime {
    /// The time clients see now, given the file system's.
    pub(crate) fn current(&mut self, disk: FileTime, now: Now) -> FileTime {
        self.settle(now);
        self.shown.unwrap_or(disk)
    }

    /// Shows an update whose time has come.
    fn settle(&mut self, now: Now) {
        if let Some(due) = self.due
            && now.at >= due.at
        {
            self.update(due.shows);
        }
    }

    /// Shows an update made at `wall`, or at the latest update's time if the wall clock has
    /// gone back since.
    fn update(&mut self, wall: FileTime) {
        let time = self.latest.map_or(wall, |latest| latest.max(wall));
        self.latest = Some(time);
        self.shown = Some(time);
        self.due = None;
    }

    /// Before `open` writes: `disk` gives the file system's mtime, asked for only when the time
    /// clients see must be pinned before the kernel moves it.
    pub(crate) fn writing(
        &mut self,
        open: &OpenWrites,
        now: Now,
        disk: impl FnOnce() -> Option<FileTime>,
    ) {
        if self.sticky {
            return;
        }
        self.settle(now);
        let pending = self.due.is_some();
        match open.get() {
            NOTHING => {
                self.pin(now, disk);
                if !pending {
                    self.due = Some(Pending {
                        at: now.at + DELAY,
                        shows: FileTime(now.wall.0.saturating_add(DELAY_TICKS)),
                    });
                }
                open.set(WROTE);
            }
            WROTE if !pending => {
                self.pin(now, disk);
                open.set(WROTE_AGAIN);
            }
            _ => {}
        }
    }

    /// Keeps the time clients see from following the kernel's.
    fn pin(&mut self, now: Now, disk: impl FnOnce() -> Option<FileTime>) {
        self.settle(now);
        if self.shown.is_none() {
            self.shown = disk();
        }
    }

    /// Shows a pending update now (FLUSH, SET_INFO of basic information).
    pub(crate) fn flush(&mut self, now: Now) {
        if self.due.is_some() {
            self.update(now.wall);
        }
    }

    /// The end of file changed: the time is now, unless a client set it.
    pub(crate) fn touch(&mut self, now: Now) {
        if !self.sticky {
            self.update(now.wall);
        }
    }

    /// A client set the time (SET_INFO basic), or suspended its updates (`None`: it stays what
    /// clients see now).
    pub(crate) fn set(&mut self, time: Option<FileTime>, disk: FileTime, now: Now) {
        let current = self.current(disk, now);
        self.shown = Some(time.unwrap_or(current));
        self.due = None;
        self.sticky = true;
    }

    /// A client resumed updates (SET_INFO with -2).
    pub(crate) fn resume(&mut self) {
        self.sticky = false;
    }

    /// `open` closes: what to store as the file's mtime, if anything.
    pub(crate) fn closing(
        &mut self,
        open: &OpenWrites,
        disk: FileTime,
        now: Now,
    ) -> Option<FileTime> {
        if !open.wrote() {
            return None;
        }
        if !self.sticky
            && (open.get() == WROTE_AGAIN || self.due.is_some_and(|due| now.at < due.at))
        {
            self.update(now.wall);
        }
        Some(self.current(disk, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 10_000_000;

    fn t(secs: u64) -> FileTime {
        FileTime(100_000 * S + secs * S)
    }

    /// The clock `secs` seconds in, its wall time [`t`]`(secs)`.
    fn n(secs: u64) -> Now {
        static START: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);
        Now {
            wall: t(secs),
            at: *START + Duration::from_secs(secs),
        }
    }

    #[test]
    fn first_write_shows_two_seconds_later_and_later_writes_at_close() {
        let mut wt = WriteTime::default();
        let open = OpenWrites::default();
        wt.writing(&open, n(1), || Some(t(0)));
        // The kernel moved mtime to the write; clients still see the old time.
        assert_eq!(wt.current(t(1), n(2)), t(0));
        assert_eq!(wt.current(t(1), n(4)), t(3));
        // A second write after the update changes nothing until close.
        wt.writing(&open, n(5), || panic!("already pinned"));
        assert_eq!(wt.current(t(5), n(8)), t(3));
        assert_eq!(wt.closing(&open, t(5), n(10)), Some(t(10)));
    }

    #[test]
    fn one_write_keeps_its_update_at_close() {
        let mut wt = WriteTime::default();
        let open = OpenWrites::default();
        wt.writing(&open, n(1), || Some(t(0)));
        assert_eq!(wt.current(t(1), n(4)), t(3));
        assert_eq!(wt.closing(&open, t(1), n(5)), Some(t(3)));
    }

    #[test]
    fn flush_and_end_of_file_show_the_update_at_once() {
        let mut wt = WriteTime::default();
        let open = OpenWrites::default();
        wt.writing(&open, n(1), || Some(t(0)));
        wt.flush(n(1));
        assert_eq!(wt.current(t(1), n(1)), t(1));
        assert_eq!(wt.closing(&open, t(1), n(2)), Some(t(1)));
        let mut wt = WriteTime::default();
        wt.touch(n(7));
        assert_eq!(wt.current(t(0), n(7)), t(7));
    }

    #[test]
    fn a_set_time_sticks() {
        let mut wt = WriteTime::default();
        let writer = OpenWrites::default();
        wt.writing(&writer, n(1), || Some(t(0)));
        wt.set(Some(t(100)), t(1), n(2));
        wt.writing(&writer, n(3), || Some(t(3)));
        wt.touch(n(4));
        assert_eq!(wt.current(t(4), n(9)), t(100));
        assert_eq!(wt.closing(&writer, t(4), n(9)), Some(t(100)));
        // An open that never wrote stores nothing.
        assert_eq!(wt.closing(&OpenWrites::default(), t(4), n(9)), None);
    }

    #[test]
    fn the_delay_runs_on_the_monotonic_clock_and_updates_never_go_back() {
        let mut wt = WriteTime::default();
        let open = OpenWrites::default();
        wt.writing(&open, n(1), || Some(t(0)));
        // Two monotonic seconds later, the wall clock an hour behind: the update shows.
        let behind = |secs| Now {
            wall: FileTime(t(secs).0 - 3_600 * S),
            ..n(secs)
        };
        assert_eq!(wt.current(t(1), behind(3)), t(3));
        wt.writing(&open, behind(4), || panic!("already pinned"));
        // The close's update would be an hour before the one shown: it keeps that one.
        assert_eq!(wt.closing(&open, t(4), behind(5)), Some(t(3)));
    }
}
