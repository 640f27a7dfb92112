//! A clock that stands still until a test moves it: timers of a server built with it fire
//! when [`ManualClock::advance`] passes their deadline, without real waiting.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime};

use smb3d_server::clock::{Clock, Sleep};
use tokio::sync::watch;
use tokio::time::Instant;

/// Starts at the real time of its creation and moves only by [`ManualClock::advance`]; its
/// wall time alone can be stepped, as an administrator or NTP steps a machine's clock.
#[derive(Debug)]
pub struct ManualClock {
    start: Instant,
    wall_start: SystemTime,
    /// How far the clock has been moved; sleepers watch it.
    ahead: watch::Sender<Duration>,
    /// How far the wall time alone was stepped, in nanoseconds (negative: back).
    wall_step: AtomicI64,
}

impl ManualClock {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            start: Instant::now(),
            wall_start: SystemTime::now(),
            ahead: watch::Sender::new(Duration::ZERO),
            wall_step: AtomicI64::new(0),
        })
    }

    /// Moves the clock `by` forward; timers whose deadline it passes are woken.
    pub fn advance(&self, by: Duration) {
        self.ahead.send_modify(|ahead| *ahead += by);
    }

    /// Steps the wall time `by` forward, the monotonic time untouched.
    pub fn step_wall_forward(&self, by: Duration) {
        self.wall_step.fetch_add(nanos(by), Ordering::Relaxed);
    }

    /// Steps the wall time `by` back, the monotonic time untouched.
    pub fn step_wall_back(&self, by: Duration) {
        self.wall_step.fetch_sub(nanos(by), Ordering::Relaxed);
    }
}

/// `by` in nanoseconds, at most `i64::MAX` (292 years).
fn nanos(by: Duration) -> i64 {
    i64::try_from(by.as_nanos()).unwrap_or(i64::MAX)
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + *self.ahead.borrow()
    }

    fn wall(&self) -> SystemTime {
        let moved = self.wall_start + *self.ahead.borrow();
        let step = self.wall_step.load(Ordering::Relaxed);
        let by = Duration::from_nanos(step.unsigned_abs());
        if step < 0 { moved - by } else { moved + by }
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        let start = self.start;
        let mut ahead = self.ahead.subscribe();
        Box::pin(async move {
            while start + *ahead.borrow_and_update() < deadline {
                if ahead.changed().await.is_err() {
                    // The clock is gone: it never reaches the deadline.
                    std::future::pending::<()>().await;
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    #[test]
    fn sleepers_wake_when_the_clock_passes_their_deadline_only() {
        let clock = ManualClock::new();
        let before = clock.filetime();
        let mut sleep = pin!(clock.sleep(Duration::from_secs(60)));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        clock.advance(Duration::from_secs(59));
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
        clock.advance(Duration::from_secs(1));
        assert_eq!(sleep.as_mut().poll(&mut cx), Poll::Ready(()));
        assert_eq!(clock.filetime().0 - before.0, 60 * 10_000_000);
    }

    #[test]
    fn stepping_the_wall_time_leaves_the_monotonic_time_and_sleepers_alone() {
        let clock = ManualClock::new();
        let (now, wall) = (clock.now(), clock.wall());
        let mut sleep = pin!(clock.sleep(Duration::from_secs(60)));
        let mut cx = Context::from_waker(Waker::noop());
        clock.step_wall_forward(Duration::from_secs(3 * 3600));
        assert_eq!(clock.wall(), wall + Duration::from_secs(3 * 3600));
        clock.step_wall_back(Duration::from_secs(6 * 3600));
        assert_eq!(clock.wall(), wall - Duration::from_secs(3 * 3600));
        assert_eq!(clock.now(), now);
        assert!(sleep.as_mut().poll(&mut cx).is_pending());
    }
}
