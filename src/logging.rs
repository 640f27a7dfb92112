//! Log output on standard error: readable lines or JSON objects, levels per module from
//! `SMB3D_LOG`, and journald-friendly lines under systemd (no timestamps or colours, the
//! journal adds its own, and a `<N>` syslog priority prefix so `journalctl -p` works). The
//! levels can be changed while the server runs (`smb3d debug`, [`set_filter`]).

use std::io::IsTerminal as _;
use std::os::unix::fs::MetadataExt as _;
use std::sync::OnceLock;

use parking_lot::Mutex;
use smb3d_config::LogFormat;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{Format, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _, Registry, reload};

/// The variable holding the `tracing` filter (`debug`, `smb3d_server=debug,info`, ...).
pub const LOG_VARIABLE: &str = "SMB3D_LOG";

/// The running filter, its directives as given, the ones logging started with, and whether
/// audit events are kept whatever the level.
struct Filter {
    handle: reload::Handle<EnvFilter, Registry>,
    current: Mutex<String>,
    initial: String,
    audit: bool,
}

static FILTER: OnceLock<Filter> = OnceLock::new();

/// `directives` with audit events kept at info when `audit` is on, unless the directives say
/// something about the `audit` target themselves.
fn with_audit(directives: &str, audit: bool) -> String {
    if audit && !directives.contains(smb3d_server::audit::TARGET) {
        format!("{directives},audit=info")
    } else {
        directives.to_owned()
    }
}

/// Starts logging. With `audit`, audit events are shown whatever the level, unless
/// `SMB3D_LOG` says something about the `audit` target itself.
pub fn init(format: LogFormat, audit: bool) {
    let mut directives = std::env::var(LOG_VARIABLE)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "info".into());
    let filter = EnvFilter::try_new(with_audit(&directives, audit)).unwrap_or_else(|e| {
        eprintln!(
            "smb3d: {LOG_VARIABLE}={directives:?} is not a valid filter ({e}); logging at info"
        );
        directives = "info".into();
        EnvFilter::new(with_audit(&directives, audit))
    });
    let (filter, handle) = reload::Layer::new(filter);
    let journal = under_journal();
    let lines = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(!journal && std::io::stderr().is_terminal());
    let lines = match format {
        LogFormat::Json => lines.json().boxed(),
        LogFormat::Human if journal => lines
            .event_format(JournalLine(Format::default().without_time()))
            .boxed(),
        LogFormat::Human => lines.boxed(),
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(lines)
        .init();
    let _ = FILTER.set(Filter {
        handle,
        current: Mutex::new(directives.clone()),
        initial: directives,
        audit,
    });
}

/// The log filter for `level`: Samba's debug levels 0-10 (0 errors, 1 warnings, 2-3 the
/// default info, 4-9 debug, 10 trace), `reset` for the one logging started with, or a
/// `tracing` filter as `SMB3D_LOG` takes it (`debug`, `smb3d_server=trace,info`).
fn directives_for(level: &str, initial: &str) -> Result<String, String> {
    let level = level.trim();
    let directives = match level.parse::<u8>() {
        Ok(0) => "error",
        Ok(1) => "warn",
        Ok(2 | 3) => "info",
        Ok(4..=9) => "debug",
        Ok(10) => "trace",
        Ok(_) => return Err(format!("debug level {level} is above 10")),
        Err(_) if level.eq_ignore_ascii_case("reset") => initial,
        Err(_) => level,
    };
    EnvFilter::try_new(directives)
        .map_err(|e| format!("{directives:?} is not a log filter: {e}"))?;
    Ok(directives.to_owned())
}

/// Changes the log filter of the running server (`smb3d debug LEVEL`, see [`directives_for`]);
/// `None` only reports it. Returns the filter before and after.
pub fn set_filter(level: Option<&str>) -> Result<(String, String), String> {
    let filter = FILTER.get().ok_or("logging has not started")?;
    let mut current = filter.current.lock();
    let before = current.clone();
    if let Some(level) = level {
        let directives = directives_for(level, &filter.initial)?;
        let env_filter = EnvFilter::try_new(with_audit(&directives, filter.audit))
            .map_err(|e| format!("{directives:?} is not a log filter: {e}"))?;
        filter
            .handle
            .reload(env_filter)
            .map_err(|e| format!("the log filter could not be changed: {e}"))?;
        *current = directives;
    }
    Ok((before, current.clone()))
}

/// Whether standard error is the journal's stream: systemd sets `JOURNAL_STREAM` to its
/// device and inode (systemd.exec(5)); a child that inherited the variable with other output
/// does not match.
fn under_journal() -> bool {
    let Some(value) = std::env::var_os("JOURNAL_STREAM") else {
        return false;
    };
    let Ok(stderr) = std::fs::metadata("/proc/self/fd/2") else {
        return false;
    };
    journal_stream_matches(&value.to_string_lossy(), stderr.dev(), stderr.ino())
}

fn journal_stream_matches(value: &str, dev: u64, ino: u64) -> bool {
    value
        .split_once(':')
        .and_then(|(d, i)| Some((d.parse::<u64>().ok()?, i.parse::<u64>().ok()?)))
        == Some((dev, ino))
}

/// The syslog priority journald reads from a `<N>` line prefix (sd-daemon(3)).
fn priority(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        _ => 7,
    }
}

/// A line prefixed with its syslog priority.
struct JournalLine<F>(F);

impl<S, N, F> FormatEvent<S, N> for JournalLine<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        write!(writer, "<{}>", priority(event.metadata().level()))?;
        self.0.format_event(ctx, writer, event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_stream_names_device_and_inode() {
        assert!(journal_stream_matches("8:12345", 8, 12345));
        assert!(!journal_stream_matches("8:12345", 8, 12346));
        assert!(!journal_stream_matches("garbage", 8, 12345));
        assert!(!journal_stream_matches("", 0, 0));
    }

    #[test]
    fn debug_levels_map_to_filters() {
        for (level, directives) in [
            ("0", "error"),
            ("1", "warn"),
            ("2", "info"),
            ("3", "info"),
            ("5", "debug"),
            ("10", "trace"),
            ("debug", "debug"),
            ("smb3d_server=trace,info", "smb3d_server=trace,info"),
            ("reset", "smb3d=debug"),
            (" RESET ", "smb3d=debug"),
        ] {
            assert_eq!(
                directives_for(level, "smb3d=debug").as_deref(),
                Ok(directives),
                "{level}"
            );
        }
        assert!(directives_for("11", "info").is_err());
        assert!(directives_for("smb3d=[", "info").is_err());
        assert_eq!(with_audit("debug", true), "debug,audit=info");
        assert_eq!(with_audit("audit=off", true), "audit=off");
        assert_eq!(with_audit("debug", false), "debug");
    }

    #[test]
    fn priorities_follow_syslog() {
        assert_eq!(priority(&Level::ERROR), 3);
        assert_eq!(priority(&Level::WARN), 4);
        assert_eq!(priority(&Level::INFO), 6);
        assert_eq!(priority(&Level::DEBUG), 7);
    }
}
