//! Failed-logon throttling (security.md L22). Every failed logon is answered no sooner than
//! [`Limits::logon_failure_delay`] after its last leg arrived, so the answer's timing says
//! nothing about why it failed (unknown user, wrong password, bad MIC); once an address has
//! failed [`Limits::logon_throttle_after`] times within [`Limits::logon_throttle_window`],
//! each further failure waits [`Limits::logon_throttle_delay`], doubling up to
//! [`Limits::logon_throttle_max_delay`]. Successful logons do not reset the count, so a valid
//! account does not help guessing another's password.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::limits::{ClientKey, Limits};

/// Addresses remembered at most; beyond, the stalest record goes.
const MAX_RECORDS: usize = 16384;

struct Record {
    failures: u32,
    last: Instant,
}

/// Recent failures by client address.
#[derive(Default)]
pub(crate) struct LogonThrottle {
    records: Mutex<HashMap<ClientKey, Record>>,
}

/// How long a failed logon's answer waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FailureDelay {
    /// From the arrival of the failed leg.
    pub delay: Duration,
    /// Whether the address's earlier failures lengthened it.
    pub throttled: bool,
}

impl LogonThrottle {
    /// Records a failed logon from `client` (None: an address the transport did not give) at
    /// `now` and returns how long its answer waits.
    pub fn failed(&self, client: Option<ClientKey>, now: Instant, limits: &Limits) -> FailureDelay {
        let floor = FailureDelay {
            delay: limits.logon_failure_delay,
            throttled: false,
        };
        let Some(client) = client else {
            return floor;
        };
        let window = limits.logon_throttle_window;
        let mut records = self.records.lock();
        if records.len() >= MAX_RECORDS && !records.contains_key(&client) {
            records.retain(|_, r| now.saturating_duration_since(r.last) <= window);
            if records.len() >= MAX_RECORDS
                && let Some(stalest) = records.iter().min_by_key(|(_, r)| r.last).map(|(k, _)| *k)
            {
                records.remove(&stalest);
            }
        }
        let record = records.entry(client).or_insert(Record {
            failures: 0,
            last: now,
        });
        if now.saturating_duration_since(record.last) > window {
            record.failures = 0;
        }
        record.failures = record.failures.saturating_add(1);
        record.last = now;
        let excess = record.failures.saturating_sub(limits.logon_throttle_after);
        if excess == 0 {
            return floor;
        }
        let doublings = (excess - 1).min(31);
        let throttle = limits
            .logon_throttle_delay
            .saturating_mul(1 << doublings)
            .min(limits.logon_throttle_max_delay);
        FailureDelay {
            delay: throttle.max(floor.delay),
            throttled: throttle > floor.delay,
        }
    }

    /// Addresses with recent failures.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.records.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(last: u8) -> Option<ClientKey> {
        Some(ClientKey::of([192, 0, 2, last].into()))
    }

    fn delays(
        throttle: &LogonThrottle,
        client: Option<ClientKey>,
        n: usize,
        now: Instant,
    ) -> Vec<u64> {
        let limits = Limits::default();
        (0..n)
            .map(|_| throttle.failed(client, now, &limits).delay.as_millis() as u64)
            .collect()
    }

    #[test]
    fn delay_grows_after_the_free_failures_and_is_capped() {
        let throttle = LogonThrottle::default();
        let now = Instant::now();
        assert_eq!(
            delays(&throttle, key(1), 9, now),
            [100, 100, 100, 500, 1000, 2000, 4000, 5000, 5000]
        );
        // Another address is not affected.
        assert_eq!(delays(&throttle, key(2), 1, now), [100]);
        let limits = Limits::default();
        assert!(throttle.failed(key(1), now, &limits).throttled);
        assert!(!throttle.failed(key(3), now, &limits).throttled);
    }

    #[test]
    fn failures_are_forgotten_after_the_window() {
        let throttle = LogonThrottle::default();
        let now = Instant::now();
        delays(&throttle, key(1), 5, now);
        let later = now + Limits::default().logon_throttle_window + Duration::from_secs(1);
        assert_eq!(delays(&throttle, key(1), 4, later), [100, 100, 100, 500]);
    }

    #[test]
    fn unknown_address_gets_the_floor_only() {
        let throttle = LogonThrottle::default();
        assert_eq!(delays(&throttle, None, 10, Instant::now()), [100; 10]);
        assert_eq!(throttle.len(), 0);
    }

    #[test]
    fn zero_delays_turn_throttling_off() {
        let limits = Limits {
            logon_failure_delay: Duration::ZERO,
            logon_throttle_delay: Duration::ZERO,
            ..Limits::default()
        };
        let throttle = LogonThrottle::default();
        for _ in 0..10 {
            let d = throttle.failed(key(1), Instant::now(), &limits);
            assert_eq!(d.delay, Duration::ZERO);
            assert!(!d.throttled);
        }
    }

    #[test]
    fn records_are_bounded() {
        let throttle = LogonThrottle::default();
        let limits = Limits::default();
        let now = Instant::now();
        for i in 0..(MAX_RECORDS as u32 + 100) {
            let ip = std::net::Ipv4Addr::from(0x0a00_0000 + i);
            throttle.failed(Some(ClientKey::of(ip.into())), now, &limits);
        }
        assert_eq!(throttle.len(), MAX_RECORDS);
    }
}
