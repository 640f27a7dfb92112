//! A clock that stands still until a test moves it: timers of a server built with it fire
//! when [`ManualClock::advance`] passes their deadline, without real waiting.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use smb3d_server::clock::{Clock, Sleep};
use tokio::sync::watch;
use tokio::time::Instant;

/// Starts at the real time of its creation and moves only by [`ManualClock::advance`].
#[derive(Debug)]
pub struct ManualClock {
    start: Instant,
    wall_start: SystemTime,
    /// How far the clock has been moved; sleepers watch it.
    ahead: watch::Sender<Duration>,
}

impl ManualClock {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            start: Instant::now(),
            wall_start: SystemTime::now(),
            ahead: watch::Sender::new(Duration::ZERO),
        })
    }

    /// Moves the clock `by` forward; timers whose deadline it passes are woken.
    pub fn advance(&self, by: Duration) {
        self.ahead.send_modify(|ahead| *ahead += by);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + *self.ahead.borrow()
    }

    fn wall(&self) -> SystemTime {
        self.wall_start + *self.ahead.borrow()
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
}
