//! The server's clock, injected through [`Settings::clock`](crate::Settings) as the file
//! systems and the state store are: timers and deadlines read its monotonic time and wait with
//! its [`sleep_until`](Clock::sleep_until), protocol times (FILETIMEs, when an open or a
//! connection began) read its wall time. A test clock (testkit's `ManualClock`) then makes a
//! durable handle expire, or a failed logon's delay pass, by a jump instead of real waiting.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use smb3d_wire::FileTime;
use tokio::time::Instant;

/// A wait on a [`Clock`].
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Monotonic time for timers, wall time for the protocol.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Monotonic time: deadlines and timers.
    fn now(&self) -> Instant;
    /// Wall time: what the protocol reports.
    fn wall(&self) -> SystemTime;
    /// Completes once [`now`](Clock::now) reaches `deadline`.
    fn sleep_until(&self, deadline: Instant) -> Sleep;

    /// Completes once `duration` has passed on this clock.
    fn sleep(&self, duration: Duration) -> Sleep {
        self.sleep_until(self.now() + duration)
    }

    /// Wall time as a FILETIME (MS-DTYP 2.3.3).
    fn filetime(&self) -> FileTime {
        let since = self.wall().duration_since(UNIX_EPOCH).unwrap_or_default();
        FileTime::from_unix(
            i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
            since.subsec_nanos(),
        )
    }
}

/// The system's clocks and tokio's timers.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        Box::pin(tokio::time::sleep_until(deadline))
    }
}

/// Runs `work` until `deadline` on `clock`; `None` when the deadline came first.
pub async fn timeout_at<T>(
    clock: &dyn Clock,
    deadline: Instant,
    work: impl Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        done = work => Some(done),
        () = clock.sleep_until(deadline) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_clock_s_filetime_is_its_wall_time() {
        let clock = SystemClock;
        let before = FileTime::now();
        let read = clock.filetime();
        assert!(read >= before && read <= FileTime::now());
    }
}
