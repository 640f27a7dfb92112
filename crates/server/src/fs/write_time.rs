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

use std::sync::atomic::{AtomicU8, Ordering};

use smb3d_wire::FileTime;

/// How long a write's update stays hidden (FileTime ticks).
const DELAY: u64 = 2 * 10_000_000;

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
    /// When a pending update shows (it shows as this time).
    due: Option<FileTime>,
    /// Set by a client: writes do not change it.
    sticky: bool,
}

impl WriteTime {
    /// The time clients see now, given the file system's.
    pub(crate) fn current(&mut self, disk: FileTime, now: FileTime) -> FileTime {
        self.settle(now);
        self.shown.unwrap_or(disk)
    }

    /// Shows an update whose time has come.
    fn settle(&mut self, now: FileTime) {
        if let Some(due) = self.due
            && now >= due
        {
            self.shown = Some(due);
            self.due = None;
        }
    }

    /// Before `open` writes: `disk` gives the file system's mtime, asked for only when the time
    /// clients see must be pinned before the kernel moves it.
    pub(crate) fn writing(
        &mut self,
        open: &OpenWrites,
        now: FileTime,
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
                    self.due = Some(FileTime(now.0.saturating_add(DELAY)));
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
    fn pin(&mut self, now: FileTime, disk: impl FnOnce() -> Option<FileTime>) {
        self.settle(now);
        if self.shown.is_none() {
            self.shown = disk();
        }
    }

    /// Shows a pending update now (FLUSH, SET_INFO of basic information).
    pub(crate) fn flush(&mut self, now: FileTime) {
        if self.due.take().is_some() {
            self.shown = Some(now);
        }
    }

    /// The end of file changed: the time is now, unless a client set it.
    pub(crate) fn touch(&mut self, now: FileTime) {
        if !self.sticky {
            self.shown = Some(now);
            self.due = None;
        }
    }

    /// A client set the time (SET_INFO basic), or suspended its updates (`None`: it stays what
    /// clients see now).
    pub(crate) fn set(&mut self, time: Option<FileTime>, disk: FileTime, now: FileTime) {
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
        now: FileTime,
    ) -> Option<FileTime> {
        if !open.wrote() {
            return None;
        }
        if !self.sticky && (open.get() == WROTE_AGAIN || self.due.is_some_and(|due| now < due)) {
            self.shown = Some(now);
            self.due = None;
        }
        Some(self.current(disk, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 10_000_000;

    fn t(secs: u64) -> FileTime {
        FileTime(1_000 * S + secs * S)
    }

    #[test]
    fn first_write_shows_two_seconds_later_and_later_writes_at_close() {
        let mut wt = WriteTime::default();
        let open = OpenWrites::default();
        wt.writing(&open, t(1), || Some(t(0)));
        // The kernel moved mtime to the write; clients still see the old time.
        assert_eq!(wt.current(t(1), t(2)), t(0));
        assert_eq!(wt.current(t(1), t(4)), t(3));
        // A second write after the update changes nothing until close.
        wt.writing(&open, t(5), || panic!("already pinned"));
        assert_eq!(wt.current(t(5), t(8)), t(3));
        assert_eq!(wt.closing(&open, t(5), t(10)), Some(t(10)));
    }

    #[test]
    fn one_write_keeps_its_update_at_close() {
        let mut wt = WriteTime::default();
        let open = OpenWrites::default();
        wt.writing(&open, t(1), || Some(t(0)));
        assert_eq!(wt.current(t(1), t(4)), t(3));
        assert_eq!(wt.closing(&open, t(1), t(5)), Some(t(3)));
    }

    #[test]
    fn flush_and_end_of_file_show_the_update_at_once() {
        let mut wt = WriteTime::default();
        let open = OpenWrites::default();
        wt.writing(&open, t(1), || Some(t(0)));
        wt.flush(t(1));
        assert_eq!(wt.current(t(1), t(1)), t(1));
        assert_eq!(wt.closing(&open, t(1), t(2)), Some(t(1)));
        let mut wt = WriteTime::default();
        wt.touch(t(7));
        assert_eq!(wt.current(t(0), t(7)), t(7));
    }

    #[test]
    fn a_set_time_sticks() {
        let mut wt = WriteTime::default();
        let writer = OpenWrites::default();
        wt.writing(&writer, t(1), || Some(t(0)));
        wt.set(Some(t(100)), t(1), t(2));
        wt.writing(&writer, t(3), || Some(t(3)));
        wt.touch(t(4));
        assert_eq!(wt.current(t(4), t(9)), t(100));
        assert_eq!(wt.closing(&writer, t(4), t(9)), Some(t(100)));
        // An open that never wrote stores nothing.
        assert_eq!(wt.closing(&OpenWrites::default(), t(4), t(9)), None);
    }
}
