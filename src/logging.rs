//! Log output on standard error: readable lines or JSON objects, levels per module from
//! `SMB3D_LOG`, and journald-friendly lines under systemd (no timestamps or colours, the
//! journal adds its own, and a `<N>` syslog priority prefix so `journalctl -p` works).

use std::io::IsTerminal as _;
use std::os::unix::fs::MetadataExt as _;

use smb3d_config::LogFormat;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{Format, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The variable holding the `tracing` filter (`debug`, `smb3d_server=debug,info`, ...).
pub const LOG_VARIABLE: &str = "SMB3D_LOG";

/// Starts logging. With `audit`, audit events are shown whatever the level, unless
/// `SMB3D_LOG` says something about the `audit` target itself.
pub fn init(format: LogFormat, audit: bool) {
    let mut directives = std::env::var(LOG_VARIABLE)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "info".into());
    if audit && !directives.contains(smb3d_server::audit::TARGET) {
        directives.push_str(",audit=info");
    }
    let filter = EnvFilter::try_new(&directives).unwrap_or_else(|e| {
        eprintln!(
            "smb3d: {LOG_VARIABLE}={directives:?} is not a valid filter ({e}); logging at info"
        );
        EnvFilter::new("info")
    });
    let journal = under_journal();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(!journal && std::io::stderr().is_terminal());
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Human if journal => builder
            .event_format(JournalLine(Format::default().without_time()))
            .init(),
        LogFormat::Human => builder.init(),
    }
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
    fn priorities_follow_syslog() {
        assert_eq!(priority(&Level::ERROR), 3);
        assert_eq!(priority(&Level::WARN), 4);
        assert_eq!(priority(&Level::INFO), 6);
        assert_eq!(priority(&Level::DEBUG), 7);
    }
}
