//! The `[limits]` section: resource limits, timeouts and logon throttling (docs/limits.md).
//! Sizes are bytes, written as a number or with a unit (`"64KiB"`, `"8MiB"`); durations are
//! seconds, written as a number or with a unit (`"500ms"`, `"10s"`, `"15m"`, `"1h"`); a
//! timeout of 0 is off.

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::model::{Problem, ServerConfig};

/// A duration as the configuration writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Interval(pub Duration);

impl Interval {
    const fn secs(s: u64) -> Self {
        Self(Duration::from_secs(s))
    }

    const fn millis(ms: u64) -> Self {
        Self(Duration::from_millis(ms))
    }

    /// Parses `"250ms"`, `"10s"`, `"15m"`, `"1h"` or a bare number of seconds.
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (number, unit) = s.split_at(split);
        let n: u64 = number.parse().ok()?;
        let millis = match unit.trim() {
            "ms" => Some(n),
            "" | "s" => n.checked_mul(1000),
            "m" | "min" => n.checked_mul(60_000),
            "h" => n.checked_mul(3_600_000),
            _ => None,
        }?;
        Some(Self(Duration::from_millis(millis)))
    }
}

impl fmt::Display for Interval {
    /// The largest unit that writes the value exactly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        match ms {
            0 => write!(f, "0s"),
            _ if ms.is_multiple_of(3_600_000) => write!(f, "{}h", ms / 3_600_000),
            _ if ms.is_multiple_of(60_000) => write!(f, "{}m", ms / 60_000),
            _ if ms.is_multiple_of(1000) => write!(f, "{}s", ms / 1000),
            _ => write!(f, "{ms}ms"),
        }
    }
}

/// A size in bytes as the configuration writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl Bytes {
    /// Parses a number of bytes, optionally with `KiB`, `MiB` or `GiB` (or `K`, `M`, `G`).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (number, unit) = s.split_at(split);
        let n: u64 = number.parse().ok()?;
        let shift = match unit.trim() {
            "" | "B" => 0,
            "K" | "KiB" => 10,
            "M" | "MiB" => 20,
            "G" | "GiB" => 30,
            _ => return None,
        };
        n.checked_mul(1 << shift).map(Self)
    }
}

impl fmt::Display for Bytes {
    /// With the largest binary unit that writes the value exactly.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
            if n != 0 && n.is_multiple_of(1 << shift) {
                return write!(f, "{}{unit}", n >> shift);
            }
        }
        write!(f, "{n}")
    }
}

/// A number or a string, as TOML gives either.
#[derive(Deserialize)]
#[serde(untagged)]
enum NumberOrText {
    Number(u64),
    Text(String),
}

impl<'de> Deserialize<'de> for Interval {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NumberOrText::deserialize(d)? {
            NumberOrText::Number(s) => Ok(Self(Duration::from_secs(s))),
            NumberOrText::Text(t) => Self::parse(&t).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid duration {t:?}; expected e.g. \"500ms\", \"10s\", \"15m\" or \"1h\""
                ))
            }),
        }
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NumberOrText::deserialize(d)? {
            NumberOrText::Number(n) => Ok(Self(n)),
            NumberOrText::Text(t) => Self::parse(&t).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid size {t:?}; expected bytes, e.g. 65536 or \"64KiB\""
                ))
            }),
        }
    }
}

/// The largest frame length a Direct-TCP prefix carries (MS-SMB2 2.1).
pub const MAX_FRAME_LIMIT: u64 = 0x00FF_FFFF;
/// What one xattr holds, the most an EA list may be.
pub const MAX_EA_SIZE_LIMIT: u64 = 65536;
/// The most a security descriptor may be: an xattr with Samba's NTACL wrapper around it.
pub const MAX_SECURITY_DESCRIPTOR_LIMIT: u64 = 64 * 1024 - 512;

/// Resource limits and timeouts (`[limits]`); see docs/limits.md for what each one does.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Largest frame before a session is established.
    pub max_frame_before_logon: Spanned<Bytes>,
    /// Largest frame afterwards.
    pub max_frame: Spanned<Bytes>,
    /// Bytes of a connection in flight (requests, the responses they may make, responses not
    /// yet sent) before its socket is no longer read.
    pub max_inflight_bytes: Spanned<Bytes>,
    /// Credits a connection may hold.
    pub max_credits: Spanned<u32>,
    /// Requests of a connection waiting asynchronously.
    pub max_async_requests: Spanned<u32>,
    /// Requests in one compound frame.
    pub max_compound: Spanned<u32>,
    /// Sessions of a connection, established or not.
    pub max_sessions_per_connection: Spanned<u32>,
    /// Sessions of a connection still authenticating.
    pub max_session_setups_in_progress: Spanned<u32>,
    /// Connections bound to a session (multichannel), its first included.
    pub max_channels_per_session: Spanned<u32>,
    /// Tree connects of a session.
    pub max_trees_per_session: Spanned<u32>,
    /// Opens (files, directories, pipes) of a session.
    pub max_opens_per_session: Spanned<u32>,
    /// Byte-range locks of an open.
    pub max_locks_per_open: Spanned<u32>,
    /// Byte-range locks of a file, all its opens together.
    pub max_locks_per_file: Spanned<u32>,
    /// Files and directories open in the whole server; when unset, what the descriptor limit
    /// leaves (`smb3d_server::limits::open_files_within`).
    pub max_open_files: Option<Spanned<u32>>,
    /// Connections at once.
    pub max_connections: Spanned<u32>,
    /// Connections from one address (IPv6: one /64) that no user has logged on through, and
    /// logons under way from it.
    pub max_connections_per_address: Spanned<u32>,
    /// From accept to NEGOTIATE.
    pub negotiate_timeout: Interval,
    /// From accept to the first established session.
    pub logon_timeout: Interval,
    /// Between the legs of a SESSION_SETUP exchange.
    pub session_setup_timeout: Interval,
    /// To receive a frame once its first byte came.
    pub frame_timeout: Interval,
    /// Without requests while nothing is open or waiting.
    pub idle_timeout: Interval,
    /// For the client to take more of the responses waiting for it.
    pub send_timeout: Interval,
    /// An EA list set at once.
    pub max_ea_size: Spanned<Bytes>,
    /// A security descriptor set on a file.
    pub max_security_descriptor_size: Spanned<Bytes>,
    /// Entries in one QUERY_DIRECTORY response.
    pub max_directory_buffer: Spanned<Bytes>,
    /// The least time before a failed logon is answered.
    pub logon_failure_delay: Interval,
    /// Failures from one address answered after `logon_failure_delay` only.
    pub logon_throttle_after: u32,
    /// The wait of the next failure from that address, doubling with each further one.
    pub logon_throttle_delay: Spanned<Interval>,
    /// The longest such wait.
    pub logon_throttle_max_delay: Interval,
    /// Failures are forgotten after this long without another.
    pub logon_throttle_window: Interval,
}

fn spanned<T>(value: T) -> Spanned<T> {
    Spanned::new(0..0, value)
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_frame_before_logon: spanned(Bytes(64 * 1024)),
            max_frame: spanned(Bytes(8 * 1024 * 1024 + 64 * 1024)),
            max_inflight_bytes: spanned(Bytes(64 * 1024 * 1024)),
            max_credits: spanned(8192),
            max_async_requests: spanned(512),
            max_compound: spanned(32),
            max_sessions_per_connection: spanned(64),
            max_session_setups_in_progress: spanned(4),
            max_channels_per_session: spanned(32),
            max_trees_per_session: spanned(256),
            max_opens_per_session: spanned(16384),
            max_locks_per_open: spanned(4096),
            max_locks_per_file: spanned(16384),
            max_open_files: None,
            max_connections: spanned(1024),
            max_connections_per_address: spanned(32),
            negotiate_timeout: Interval::secs(10),
            logon_timeout: Interval::secs(45),
            session_setup_timeout: Interval::secs(10),
            frame_timeout: Interval::secs(30),
            idle_timeout: Interval::secs(15 * 60),
            send_timeout: Interval::secs(120),
            max_ea_size: spanned(Bytes(MAX_EA_SIZE_LIMIT)),
            max_security_descriptor_size: spanned(Bytes(MAX_SECURITY_DESCRIPTOR_LIMIT)),
            max_directory_buffer: spanned(Bytes(1024 * 1024)),
            logon_failure_delay: Interval::millis(100),
            logon_throttle_after: 3,
            logon_throttle_delay: spanned(Interval::millis(500)),
            logon_throttle_max_delay: Interval::secs(5),
            logon_throttle_window: Interval::secs(60),
        }
    }
}

/// What is wrong with the limits beyond their types (`server` for what they must fit).
pub(crate) fn limits_problems(limits: &LimitsConfig, server: &ServerConfig) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut range = |value: &Spanned<Bytes>, name: &str, min: u64, max: u64| {
        let n = value.get_ref().0;
        if !(min..=max).contains(&n) {
            problems.push(Problem::at(
                value.span(),
                format!(
                    "limits.{name} must be between {} and {}",
                    Bytes(min),
                    Bytes(max)
                ),
            ));
        }
    };
    let io = u64::from(*server.max_io_size.get_ref());
    range(
        &limits.max_frame_before_logon,
        "max_frame_before_logon",
        4096,
        MAX_FRAME_LIMIT,
    );
    range(&limits.max_frame, "max_frame", io + 4096, MAX_FRAME_LIMIT);
    range(
        &limits.max_inflight_bytes,
        "max_inflight_bytes",
        64 * 1024,
        u64::from(u32::MAX),
    );
    range(&limits.max_ea_size, "max_ea_size", 0, MAX_EA_SIZE_LIMIT);
    range(
        &limits.max_security_descriptor_size,
        "max_security_descriptor_size",
        20,
        MAX_SECURITY_DESCRIPTOR_LIMIT,
    );
    range(
        &limits.max_directory_buffer,
        "max_directory_buffer",
        4096,
        MAX_FRAME_LIMIT,
    );
    let counts = [
        (&limits.max_credits, "max_credits", 65535),
        (&limits.max_async_requests, "max_async_requests", u32::MAX),
        (&limits.max_compound, "max_compound", u32::MAX),
        (
            &limits.max_sessions_per_connection,
            "max_sessions_per_connection",
            u32::MAX,
        ),
        (
            &limits.max_session_setups_in_progress,
            "max_session_setups_in_progress",
            *limits.max_sessions_per_connection.get_ref(),
        ),
        (
            &limits.max_channels_per_session,
            "max_channels_per_session",
            u32::MAX,
        ),
        (
            &limits.max_trees_per_session,
            "max_trees_per_session",
            u32::MAX,
        ),
        (
            &limits.max_opens_per_session,
            "max_opens_per_session",
            u32::MAX,
        ),
        (&limits.max_locks_per_open, "max_locks_per_open", u32::MAX),
        (&limits.max_locks_per_file, "max_locks_per_file", u32::MAX),
        (&limits.max_connections, "max_connections", u32::MAX),
        (
            &limits.max_connections_per_address,
            "max_connections_per_address",
            *limits.max_connections.get_ref(),
        ),
    ];
    let open_files = limits
        .max_open_files
        .as_ref()
        .map(|value| (value, "max_open_files", u32::MAX));
    for (value, name, max) in counts.into_iter().chain(open_files) {
        let n = *value.get_ref();
        if n == 0 || n > max {
            problems.push(Problem::at(
                value.span(),
                format!("limits.{name} must be between 1 and {}", max.max(1)),
            ));
        }
    }
    if limits.logon_throttle_delay.get_ref().0 > limits.logon_throttle_max_delay.0 {
        problems.push(Problem::at(
            limits.logon_throttle_delay.span(),
            format!(
                "limits.logon_throttle_delay {} is above logon_throttle_max_delay {}",
                limits.logon_throttle_delay.get_ref(),
                limits.logon_throttle_max_delay
            ),
        ));
    }
    problems
}

/// The `[limits]` section as TOML, every key written.
pub(crate) fn render_limits(out: &mut String, l: &LimitsConfig) {
    use std::fmt::Write as _;
    let q = |s: String| crate::render::toml_string(&s);
    let sizes = [
        ("max_frame_before_logon", &l.max_frame_before_logon),
        ("max_frame", &l.max_frame),
        ("max_inflight_bytes", &l.max_inflight_bytes),
    ];
    let counts = [
        ("max_credits", &l.max_credits),
        ("max_async_requests", &l.max_async_requests),
        ("max_compound", &l.max_compound),
        (
            "max_sessions_per_connection",
            &l.max_sessions_per_connection,
        ),
        (
            "max_session_setups_in_progress",
            &l.max_session_setups_in_progress,
        ),
        ("max_channels_per_session", &l.max_channels_per_session),
        ("max_trees_per_session", &l.max_trees_per_session),
        ("max_opens_per_session", &l.max_opens_per_session),
        ("max_locks_per_open", &l.max_locks_per_open),
        ("max_locks_per_file", &l.max_locks_per_file),
        ("max_connections", &l.max_connections),
        (
            "max_connections_per_address",
            &l.max_connections_per_address,
        ),
    ];
    let timeouts = [
        ("negotiate_timeout", l.negotiate_timeout),
        ("logon_timeout", l.logon_timeout),
        ("session_setup_timeout", l.session_setup_timeout),
        ("frame_timeout", l.frame_timeout),
        ("idle_timeout", l.idle_timeout),
        ("send_timeout", l.send_timeout),
    ];
    let buffers = [
        ("max_ea_size", &l.max_ea_size),
        (
            "max_security_descriptor_size",
            &l.max_security_descriptor_size,
        ),
        ("max_directory_buffer", &l.max_directory_buffer),
    ];
    // Writing to a String cannot fail.
    let _ = writeln!(out, "[limits]");
    for (key, value) in sizes {
        let _ = writeln!(out, "{key} = {}", q(value.get_ref().to_string()));
    }
    for (key, value) in counts {
        let _ = writeln!(out, "{key} = {}", value.get_ref());
    }
    // Unset, it follows the descriptor limit of the process that serves.
    if let Some(value) = &l.max_open_files {
        let _ = writeln!(out, "max_open_files = {}", value.get_ref());
    }
    for (key, value) in timeouts {
        let _ = writeln!(out, "{key} = {}", q(value.to_string()));
    }
    for (key, value) in buffers {
        let _ = writeln!(out, "{key} = {}", q(value.get_ref().to_string()));
    }
    let _ = writeln!(
        out,
        "logon_failure_delay = {}",
        q(l.logon_failure_delay.to_string())
    );
    let _ = writeln!(out, "logon_throttle_after = {}", l.logon_throttle_after);
    let _ = writeln!(
        out,
        "logon_throttle_delay = {}",
        q(l.logon_throttle_delay.get_ref().to_string())
    );
    let _ = writeln!(
        out,
        "logon_throttle_max_delay = {}",
        q(l.logon_throttle_max_delay.to_string())
    );
    let _ = writeln!(
        out,
        "logon_throttle_window = {}",
        q(l.logon_throttle_window.to_string())
    );
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::Config;

    fn parse(text: &str) -> Result<Config, crate::ConfigError> {
        Config::parse(Path::new("t.toml"), text)
    }

    #[test]
    fn durations() {
        assert_eq!(Interval::parse("500ms"), Some(Interval::millis(500)));
        assert_eq!(Interval::parse("10s"), Some(Interval::secs(10)));
        assert_eq!(Interval::parse("10"), Some(Interval::secs(10)));
        assert_eq!(Interval::parse("15m"), Some(Interval::secs(900)));
        assert_eq!(Interval::parse("2h"), Some(Interval::secs(7200)));
        assert_eq!(Interval::parse("0"), Some(Interval::secs(0)));
        for bad in ["", "s", "1.5s", "-1s", "10 days", "99999999999999999999h"] {
            assert_eq!(Interval::parse(bad), None, "{bad}");
        }
        for (d, text) in [
            (Interval::millis(1500), "1500ms"),
            (Interval::secs(10), "10s"),
            (Interval::secs(900), "15m"),
            (Interval::secs(3600), "1h"),
            (Interval::secs(0), "0s"),
        ] {
            assert_eq!(d.to_string(), text);
            assert_eq!(Interval::parse(text), Some(d));
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(Bytes::parse("65536"), Some(Bytes(65536)));
        assert_eq!(Bytes::parse("64KiB"), Some(Bytes(65536)));
        assert_eq!(Bytes::parse("8M"), Some(Bytes(8 << 20)));
        assert_eq!(Bytes::parse("1GiB"), Some(Bytes(1 << 30)));
        assert_eq!(Bytes::parse("1 MiB"), Some(Bytes(1 << 20)));
        for bad in ["", "KiB", "1.5MiB", "1TB", "-1"] {
            assert_eq!(Bytes::parse(bad), None, "{bad}");
        }
        assert_eq!(Bytes(8 * 1024 * 1024 + 64 * 1024).to_string(), "8256KiB");
        assert_eq!(Bytes(65024).to_string(), "65024");
        assert_eq!(Bytes(1 << 20).to_string(), "1MiB");
    }

    #[test]
    fn defaults_are_security_md_section_3() {
        let c = parse("").unwrap();
        let l = &c.limits;
        assert_eq!(l.max_frame_before_logon.get_ref().0, 64 * 1024);
        assert_eq!(*l.max_credits.get_ref(), 8192);
        assert_eq!(*l.max_compound.get_ref(), 32);
        assert_eq!(l.negotiate_timeout, Interval::secs(10));
        assert_eq!(l.logon_timeout, Interval::secs(45));
        assert_eq!(l.idle_timeout, Interval::secs(900));
        assert_eq!(*l.max_connections_per_address.get_ref(), 32);
        assert_eq!(*l.max_locks_per_file.get_ref(), 16384);
        assert_eq!(l.max_open_files, None);
        assert!(!c.to_toml().contains("max_open_files"));
    }

    #[test]
    fn values_with_units_and_numbers() {
        let c = parse(
            "[limits]\nmax_frame_before_logon = \"16KiB\"\nnegotiate_timeout = \"2s\"\n\
             logon_timeout = 5\nidle_timeout = 0\nmax_compound = 8\n\
             logon_failure_delay = \"250ms\"\n",
        )
        .unwrap();
        let l = &c.limits;
        assert_eq!(l.max_frame_before_logon.get_ref().0, 16 * 1024);
        assert_eq!(l.negotiate_timeout, Interval::secs(2));
        assert_eq!(l.logon_timeout, Interval::secs(5));
        assert_eq!(l.idle_timeout, Interval::secs(0));
        assert_eq!(*l.max_compound.get_ref(), 8);
        assert_eq!(l.logon_failure_delay, Interval::millis(250));
    }

    #[test]
    fn bad_limits_report_their_line() {
        for (text, line, needle) in [
            ("[limits]\nmax_compound = 0\n", 2, "max_compound"),
            (
                "[limits]\n\nnegotiate_timeout = \"soon\"\n",
                3,
                "invalid duration",
            ),
            ("[limits]\nmax_frame = \"1MiB\"\n", 2, "max_frame"),
            ("[limits]\nmax_ea_size = \"1MiB\"\n", 2, "max_ea_size"),
            (
                "[limits]\nmax_frame_before_logon = \"huge\"\n",
                2,
                "invalid size",
            ),
            (
                "[limits]\nmax_connections = 10\nmax_connections_per_address = 11\n",
                3,
                "max_connections_per_address",
            ),
            (
                "[limits]\nlogon_throttle_delay = \"10s\"\n",
                2,
                "logon_throttle_max_delay",
            ),
            ("[limits]\nmax_credit = 1\n", 2, "max_credit"),
            ("[limits]\n\nmax_open_files = 0\n", 3, "max_open_files"),
            (
                "[limits]\nmax_locks_per_file = 0\n",
                2,
                "max_locks_per_file",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.message.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn rendering_parses_back_to_the_same_limits() {
        let c = parse(
            "[limits]\nmax_frame_before_logon = \"16KiB\"\nnegotiate_timeout = \"2s\"\n\
             idle_timeout = 0\nlogon_failure_delay = \"250ms\"\nmax_opens_per_session = 100\n\
             max_security_descriptor_size = 4000\nmax_open_files = 5000\n",
        )
        .unwrap();
        let rendered = c.to_toml();
        let again = Config::parse(Path::new("r.toml"), &rendered).unwrap();
        assert_eq!(again.to_toml(), rendered);
        assert_eq!(again.limits, c.limits);
        for line in [
            "[limits]\n",
            "max_frame_before_logon = \"16KiB\"\n",
            "max_frame = \"8256KiB\"\n",
            "negotiate_timeout = \"2s\"\n",
            "idle_timeout = \"0s\"\n",
            "logon_failure_delay = \"250ms\"\n",
            "max_opens_per_session = 100\n",
            "max_locks_per_file = 16384\n",
            "max_open_files = 5000\n",
            "max_security_descriptor_size = \"4000\"\n",
            "logon_throttle_max_delay = \"5s\"\n",
        ] {
            assert!(rendered.contains(line), "{line}{rendered}");
        }
    }

    #[test]
    fn max_frame_must_hold_max_io_size() {
        let e =
            parse("[server]\nmax_io_size = 8388608\n[limits]\nmax_frame = \"8MiB\"\n").unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        assert!(parse("[server]\nmax_io_size = 1048576\n[limits]\nmax_frame = \"2MiB\"\n").is_ok());
    }
}
