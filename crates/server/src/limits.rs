//! Resource limits: how much one client may make the server hold, and how long it may keep
//! the server waiting (docs/limits.md has the table, with each limit's action and reference).
//! Every value is a `[limits]` key of `smb3d.toml`; the defaults are those of
//! `/work/shared/reference/security.md` section 3.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The limits of a server. A timeout of zero turns that timeout off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame read before the connection has an established session (security.md L1).
    pub max_frame_before_logon: usize,
    /// Largest frame read afterwards (L2); at least MaxWriteSize plus headers.
    pub max_frame: usize,
    /// Bytes one connection may have in flight (requests being processed, the room their
    /// credit charges give their responses, responses not yet sent) before the server stops
    /// reading from it (L6).
    pub max_inflight_bytes: usize,
    /// Requests of one connection waiting asynchronously at once (L7).
    pub max_async_requests: usize,
    /// Requests in one compound frame (L8).
    pub max_compound: usize,
    /// Sessions of one connection, established or being set up (L9).
    pub max_sessions_per_connection: usize,
    /// Of those, sessions whose authentication is still under way (L9).
    pub max_session_setups_in_progress: usize,
    /// Connections one session may be bound to, its first included (multichannel).
    pub max_channels_per_session: usize,
    /// Tree connects of one session (L11).
    pub max_trees_per_session: usize,
    /// Opens of one session, named pipes included (L12).
    pub max_opens_per_session: usize,
    /// Byte-range locks one open may hold (L15).
    pub max_locks_per_open: usize,
    /// Byte-range locks of one file, all its opens together (L15).
    pub max_locks_per_file: usize,
    /// Files and directories open in the whole server, durable opens waiting for their
    /// client included: each holds a descriptor, and the process has a limited number
    /// ([`open_files_within`]).
    pub max_open_files: usize,
    /// Client connections at once (L16).
    pub max_connections: usize,
    /// Client connections from one address (an IPv6 /64 counts as one) that no user has
    /// logged on through yet, and logons under way from it (L16, `address_slots`).
    pub max_connections_per_address: usize,
    /// From accept to the NEGOTIATE request (L17).
    pub negotiate_timeout: Duration,
    /// From accept to the first established session (L18).
    pub logon_timeout: Duration,
    /// Between the legs of a SESSION_SETUP exchange; an exchange left longer is dropped (L19).
    pub session_setup_timeout: Duration,
    /// To receive the rest of a frame once its first byte arrived (L20, slowloris).
    pub frame_timeout: Duration,
    /// Without a request, while the connection has no open and no waiting request (L21).
    pub idle_timeout: Duration,
    /// For the client to take more of the responses waiting for it; one that takes nothing for
    /// this long has stopped reading and its connection ends (issue 16 item 2). Zero: never.
    pub send_timeout: Duration,
    /// Bytes of an EA list set at once, and of all EAs of a file (L28).
    pub max_ea_size: usize,
    /// Bytes of a security descriptor set on a file (L29).
    pub max_security_descriptor_size: usize,
    /// Bytes of entries one QUERY_DIRECTORY response carries (fewer than the client's
    /// OutputBufferLength when that is larger).
    pub max_directory_buffer: usize,
    /// The least time before a failed logon is answered, counted from the arrival of its last
    /// leg, whatever made it fail (L22).
    pub logon_failure_delay: Duration,
    /// Failed logons from one address answered after `logon_failure_delay` only (L22).
    pub logon_throttle_after: u32,
    /// The delay of the next failure from that address, doubling with each further one (L22).
    pub logon_throttle_delay: Duration,
    /// The longest such delay (L22).
    pub logon_throttle_max_delay: Duration,
    /// An address's failures are forgotten after this long without another (L22).
    pub logon_throttle_window: Duration,
}

/// The default of [`Limits::max_frame`]: 8 MiB of payload and 64 KiB for headers.
pub const DEFAULT_MAX_FRAME: usize = 8 * 1024 * 1024 + 64 * 1024;
/// The largest length a Direct-TCP prefix can carry (MS-SMB2 2.1).
pub const MAX_FRAME_LIMIT: usize = 0x00FF_FFFF;
/// The largest value [`Limits::max_ea_size`] may take: what one Linux xattr holds.
pub const MAX_EA_SIZE_LIMIT: usize = 65536;
/// The largest value [`Limits::max_security_descriptor_size`] may take: what one xattr holds
/// with the NTACL wrapper around the descriptor.
pub const MAX_SECURITY_DESCRIPTOR_LIMIT: usize = 64 * 1024 - 512;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_frame_before_logon: 64 * 1024,
            max_frame: DEFAULT_MAX_FRAME,
            max_inflight_bytes: 64 * 1024 * 1024,
            max_async_requests: 512,
            max_compound: 32,
            max_sessions_per_connection: 64,
            max_session_setups_in_progress: 4,
            max_channels_per_session: 32,
            max_trees_per_session: 256,
            max_opens_per_session: 16384,
            max_locks_per_open: 4096,
            max_locks_per_file: 16384,
            max_open_files: open_files_within(SYSTEMD_NOFILE, 1024),
            max_connections: 1024,
            max_connections_per_address: 32,
            negotiate_timeout: Duration::from_secs(10),
            logon_timeout: Duration::from_secs(45),
            session_setup_timeout: Duration::from_secs(10),
            frame_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(15 * 60),
            send_timeout: Duration::from_secs(120),
            max_ea_size: MAX_EA_SIZE_LIMIT,
            max_security_descriptor_size: MAX_SECURITY_DESCRIPTOR_LIMIT,
            max_directory_buffer: 1024 * 1024,
            logon_failure_delay: Duration::from_millis(100),
            logon_throttle_after: 3,
            logon_throttle_delay: Duration::from_millis(500),
            logon_throttle_max_delay: Duration::from_secs(5),
            logon_throttle_window: Duration::from_secs(60),
        }
    }
}

/// The descriptor limit the systemd unit in `contrib/` gives (LimitNOFILE).
pub const SYSTEMD_NOFILE: u64 = 65536;

/// Descriptors kept for what is neither an open nor a connection's: the transport's pipes
/// holding WRITE data (4096 at most), and the service's own (listeners, the admin socket,
/// logs, change watches, persistent-handle records, what a path walk holds for a moment).
const DESCRIPTORS_KEPT: usize = 8192;

/// The default of [`Limits::max_open_files`] for a process that may have `nofile`
/// descriptors (RLIMIT_NOFILE) and `max_connections` connections: the descriptors left after
/// two per connection (its socket, and a pipe being filled with its WRITE data) and
/// [`DESCRIPTORS_KEPT`], but at least half of them.
pub fn open_files_within(nofile: u64, max_connections: usize) -> usize {
    let nofile = usize::try_from(nofile).unwrap_or(usize::MAX);
    let kept = max_connections
        .saturating_mul(2)
        .saturating_add(DESCRIPTORS_KEPT);
    nofile.saturating_sub(kept).max(nofile / 2)
}

/// `Some(d)` unless `d` is zero (a timeout that is off).
pub fn enabled(d: Duration) -> Option<Duration> {
    (!d.is_zero()).then_some(d)
}

/// Who limits per address count as one client: an IPv4 address, or the /64 prefix of an IPv6
/// one (a single host usually holds a whole /64); IPv4-mapped IPv6 addresses count as IPv4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ClientKey(IpAddr);

impl ClientKey {
    /// The key of a peer address.
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self(IpAddr::V4(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self(IpAddr::V4(v4)),
                None => {
                    let prefix = u128::from(v6) & !u128::from(u64::MAX);
                    Self(IpAddr::V6(Ipv6Addr::from(prefix)))
                }
            },
        }
    }
}

impl std::fmt::Display for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            IpAddr::V4(v4) => v4.fmt(f),
            IpAddr::V6(v6) => write!(f, "{v6}/64"),
        }
    }
}

/// Which limit a client ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// A frame longer than allowed (before or after logon).
    FrameSize,
    /// A compound with too many requests.
    Compound,
    /// Too many requests waiting asynchronously.
    AsyncRequests,
    /// Too many sessions on a connection, or too many being set up.
    Sessions,
    /// Too many connections bound to a session (multichannel).
    Channels,
    /// Too many tree connects in a session.
    Trees,
    /// Too many opens in a session.
    Opens,
    /// Too many files and directories open in the whole server.
    OpenFiles,
    /// Too many byte-range locks on an open or a file.
    Locks,
    /// Too many connections in total or from one address.
    Connections,
    /// NEGOTIATE did not come in time.
    NegotiateTimeout,
    /// No session was established in time.
    LogonTimeout,
    /// A SESSION_SETUP exchange stalled between legs.
    SessionSetupTimeout,
    /// A frame arrived too slowly.
    FrameTimeout,
    /// The connection was idle.
    IdleTimeout,
    /// The client took no response bytes for the send timeout.
    SendTimeout,
    /// A failed logon was answered late because its address failed before.
    LogonThrottled,
    /// A connection's task panicked and was closed.
    Panic,
}

impl Limit {
    /// Every limit, in the order of [`LimitCounters::snapshot`].
    pub const ALL: [Limit; 18] = [
        Self::FrameSize,
        Self::Compound,
        Self::AsyncRequests,
        Self::Sessions,
        Self::Channels,
        Self::Trees,
        Self::Opens,
        Self::OpenFiles,
        Self::Locks,
        Self::Connections,
        Self::NegotiateTimeout,
        Self::LogonTimeout,
        Self::SessionSetupTimeout,
        Self::FrameTimeout,
        Self::IdleTimeout,
        Self::SendTimeout,
        Self::LogonThrottled,
        Self::Panic,
    ];

    /// A name for logs and metrics.
    pub const fn name(self) -> &'static str {
        match self {
            Self::FrameSize => "frame_size",
            Self::Compound => "compound",
            Self::AsyncRequests => "async_requests",
            Self::Sessions => "sessions",
            Self::Channels => "channels",
            Self::Trees => "trees",
            Self::Opens => "opens",
            Self::OpenFiles => "open_files",
            Self::Locks => "locks",
            Self::Connections => "connections",
            Self::NegotiateTimeout => "negotiate_timeout",
            Self::LogonTimeout => "logon_timeout",
            Self::SessionSetupTimeout => "session_setup_timeout",
            Self::FrameTimeout => "frame_timeout",
            Self::IdleTimeout => "idle_timeout",
            Self::SendTimeout => "send_timeout",
            Self::LogonThrottled => "logon_throttled",
            Self::Panic => "panic",
        }
    }

    fn index(self) -> usize {
        // Declaration order, which `ALL` follows.
        self as usize
    }
}

/// How often each limit was hit since the server started.
#[derive(Debug, Default)]
pub struct LimitCounters([AtomicU64; 18]);

impl LimitCounters {
    /// Counts one hit of `limit` and logs it: the first hit and then every power of two, so a
    /// flood cannot flood the log.
    pub fn hit(&self, limit: Limit, detail: &dyn std::fmt::Display) {
        let Some(counter) = self.0.get(limit.index()) else {
            return;
        };
        let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            tracing::warn!(limit = limit.name(), hits = n, "limit reached: {detail}");
        } else {
            tracing::debug!(limit = limit.name(), hits = n, "limit reached: {detail}");
        }
    }

    /// The number of hits of `limit`.
    pub fn get(&self, limit: Limit) -> u64 {
        self.0
            .get(limit.index())
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Every limit with its number of hits.
    pub fn snapshot(&self) -> Vec<(Limit, u64)> {
        Limit::ALL.iter().map(|&l| (l, self.get(l))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_keys() {
        let v4: IpAddr = "192.0.2.7".parse().unwrap();
        assert_eq!(ClientKey::of(v4).to_string(), "192.0.2.7");
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(ClientKey::of(mapped), ClientKey::of(v4));
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(ClientKey::of(a), ClientKey::of(b));
        assert_ne!(ClientKey::of(a), ClientKey::of(other));
        assert_eq!(ClientKey::of(a).to_string(), "2001:db8:1:2::/64");
    }

    #[test]
    fn counters_count_each_limit() {
        let counters = LimitCounters::default();
        for _ in 0..3 {
            counters.hit(Limit::Compound, &"test");
        }
        counters.hit(Limit::Panic, &"test");
        assert_eq!(counters.get(Limit::Compound), 3);
        assert_eq!(counters.get(Limit::Panic), 1);
        assert_eq!(counters.get(Limit::Opens), 0);
        let snapshot = counters.snapshot();
        assert_eq!(snapshot.len(), Limit::ALL.len());
        assert!(snapshot.contains(&(Limit::Compound, 3)));
    }

    #[test]
    fn open_files_follow_the_descriptor_limit() {
        assert_eq!(open_files_within(SYSTEMD_NOFILE, 1024), 65536 - 2048 - 8192);
        assert_eq!(Limits::default().max_open_files, 55296);
        // A low limit still leaves half of it to opens.
        assert_eq!(open_files_within(1024, 1024), 512);
        assert_eq!(open_files_within(0, 1024), 0);
        assert_eq!(
            open_files_within(1 << 20, 100),
            (1 << 20) - 200 - DESCRIPTORS_KEPT
        );
    }

    #[test]
    fn zero_turns_a_timeout_off() {
        assert_eq!(enabled(Duration::ZERO), None);
        assert_eq!(
            enabled(Duration::from_secs(1)),
            Some(Duration::from_secs(1))
        );
    }
}
