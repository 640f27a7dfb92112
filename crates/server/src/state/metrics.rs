//! What the server counts for the metrics endpoint (`admin::metrics` renders the page). The hot
//! path only does relaxed atomic adds: no lock and no allocation per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use smb3d_smb2::Command;

/// SMB2 commands are 0x00 (NEGOTIATE) to 0x12 (OPLOCK_BREAK), MS-SMB2 2.2.1.2.
const COMMANDS: usize = 0x13;

/// Upper bounds of the latency buckets, in microseconds: 50 µs to 10 s.
pub(crate) const BUCKETS_US: [u64; 17] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// One command's counts and latency histogram.
#[derive(Default)]
pub(crate) struct CommandStats {
    pub(crate) requests: AtomicU64,
    pub(crate) failures: AtomicU64,
    /// Requests per bucket (not cumulative); the last slot is above every bound.
    pub(crate) buckets: [AtomicU64; BUCKETS_US.len() + 1],
    pub(crate) total_us: AtomicU64,
}

/// Everything the server counts; `admin::metrics` reads the counters to render them.
#[derive(Default)]
pub struct Metrics {
    pub(crate) commands: [CommandStats; COMMANDS],
    pub(crate) connections_accepted: AtomicU64,
    pub(crate) connections_refused_by_host: AtomicU64,
    pub(crate) network_received: AtomicU64,
    pub(crate) network_sent: AtomicU64,
    pub(crate) file_read: AtomicU64,
    pub(crate) file_written: AtomicU64,
    pub(crate) logons: AtomicU64,
    pub(crate) auth_failures: AtomicU64,
    pub(crate) signed_requests: AtomicU64,
    pub(crate) encrypted_messages: AtomicU64,
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Metrics {
    /// A request was answered after `elapsed`; `failed` when with an error status.
    pub(crate) fn request(&self, command: Command, elapsed: Duration, failed: bool) {
        let Some(stats) = self.commands.get(usize::from(command.0)) else {
            return;
        };
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let bucket = BUCKETS_US.partition_point(|&bound| bound < us);
        add(&stats.requests, 1);
        if failed {
            add(&stats.failures, 1);
        }
        if let Some(b) = stats.buckets.get(bucket) {
            add(b, 1);
        }
        add(&stats.total_us, us);
    }

    /// The transport accepted a connection.
    pub fn connection_accepted(&self) {
        add(&self.connections_accepted, 1);
    }

    /// A connection was refused for its client's address (`hosts_allow`, `hosts_deny`); the
    /// count after this one.
    pub(crate) fn connection_refused_by_host(&self) -> u64 {
        self.connections_refused_by_host
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1)
    }

    /// Bytes read from a client's socket.
    pub fn received(&self, bytes: usize) {
        add(&self.network_received, bytes as u64);
    }

    /// Bytes written to a client's socket.
    pub fn sent(&self, bytes: usize) {
        add(&self.network_sent, bytes as u64);
    }

    /// File data returned by READ.
    pub(crate) fn file_read(&self, bytes: usize) {
        add(&self.file_read, bytes as u64);
    }

    /// File data stored by WRITE.
    pub(crate) fn file_written(&self, bytes: usize) {
        add(&self.file_written, bytes as u64);
    }

    /// A session setup succeeded.
    pub(crate) fn logon(&self) {
        add(&self.logons, 1);
    }

    /// A session setup failed (bad password, unknown user, malformed token, ...).
    pub(crate) fn auth_failure(&self) {
        add(&self.auth_failures, 1);
    }

    /// A request with a valid signature arrived.
    pub(crate) fn signed_request(&self) {
        add(&self.signed_requests, 1);
    }

    /// An encrypted message was decrypted.
    pub(crate) fn encrypted_message(&self) {
        add(&self.encrypted_messages, 1);
    }
}

pub(crate) fn load(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_fall_in_their_buckets() {
        let m = Metrics::default();
        m.request(Command::READ, Duration::from_micros(40), false);
        m.request(Command::READ, Duration::from_micros(50), false);
        m.request(Command::READ, Duration::from_micros(51), true);
        m.request(Command::READ, Duration::from_secs(60), false);
        m.request(Command(0x99), Duration::from_micros(1), false);
        let read = &m.commands[usize::from(Command::READ.0)];
        assert_eq!(load(&read.requests), 4);
        assert_eq!(load(&read.failures), 1);
        let buckets: Vec<u64> = read.buckets.iter().map(load).collect();
        assert_eq!(buckets[0], 2, "40 and 50 µs are within 50 µs");
        assert_eq!(buckets[1], 1, "51 µs is within 100 µs");
        assert_eq!(buckets[BUCKETS_US.len()], 1, "60 s is above every bound");
        assert_eq!(load(&read.total_us), 60_000_141);
    }
}
