//! The metrics endpoint's page, in the Prometheus text format (version 0.0.4): the server's
//! counters (`state::metrics`), and gauges (sessions, tree connects, opens) counted from the
//! tables when scraped.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::AtomicU64;

use smb3d_smb2::Command;

use super::status::{Degree, Protection, Snapshot, dialect_name};
use crate::state::metrics::{BUCKETS_US, CommandStats, Metrics, load};
use crate::state::server::Server;

/// Writes `# HELP` and `# TYPE` for a metric family.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, value: u64) {
    let _ = writeln!(out, "{name} {value}");
}

/// Microseconds as the seconds Prometheus expects.
fn seconds(us: u64) -> String {
    format!("{}.{:06}", us / 1_000_000, us % 1_000_000)
}

/// A label value: `\`, `"` and newlines escaped as the text format requires.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn command_name(index: usize) -> String {
    u16::try_from(index)
        .ok()
        .and_then(|i| Command(i).name())
        .map_or_else(|| format!("0x{index:02x}"), str::to_owned)
}

/// A family of one sample.
fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: u64) {
    family(out, name, kind, help);
    sample(out, name, value);
}

/// A metric's name, its help, and where its value is kept.
type Counter<T> = (&'static str, &'static str, fn(&T) -> &AtomicU64);

/// The counters of the server, in the order of the page.
const COUNTERS: &[Counter<Metrics>] = &[
    ("smb3d_logons_total", "Successful session setups.", |m| {
        &m.logons
    }),
    (
        "smb3d_auth_failures_total",
        "Failed session setups (wrong password, unknown user, bad token).",
        |m| &m.auth_failures,
    ),
    (
        "smb3d_signed_requests_total",
        "Requests that arrived with a valid signature.",
        |m| &m.signed_requests,
    ),
    (
        "smb3d_encrypted_messages_total",
        "Messages that arrived encrypted and were decrypted.",
        |m| &m.encrypted_messages,
    ),
    (
        "smb3d_read_bytes_total",
        "File data returned by READ.",
        |m| &m.file_read,
    ),
    (
        "smb3d_written_bytes_total",
        "File data stored by WRITE.",
        |m| &m.file_written,
    ),
    (
        "smb3d_network_received_bytes_total",
        "Bytes received from clients.",
        |m| &m.network_received,
    ),
    (
        "smb3d_network_sent_bytes_total",
        "Bytes sent to clients.",
        |m| &m.network_sent,
    ),
];

/// The counters kept per command, by command.
const COMMAND_COUNTERS: &[Counter<CommandStats>] = &[
    (
        "smb3d_requests_total",
        "Requests answered, by command.",
        |c| &c.requests,
    ),
    (
        "smb3d_request_failures_total",
        "Requests answered with an error status, by command.",
        |c| &c.failures,
    ),
];

impl Server {
    /// The metrics page: every counter, and gauges read from the tables now.
    pub fn render_metrics(&self) -> String {
        let m = &self.metrics;
        let mut out = String::with_capacity(32 * 1024);
        let connections = self.connections.lock().len() as u64;
        metric(
            &mut out,
            "smb3d_connections",
            "gauge",
            "Client connections open now.",
            connections,
        );
        metric(
            &mut out,
            "smb3d_connections_accepted_total",
            "counter",
            "Client connections accepted.",
            load(&m.connections_accepted),
        );
        metric(
            &mut out,
            "smb3d_connections_refused_by_host_total",
            "counter",
            "Client connections refused by hosts_allow and hosts_deny.",
            load(&m.connections_refused_by_host),
        );
        let snapshot = self.snapshot();
        render_sessions(&mut out, &snapshot);
        for (name, help, value) in [
            (
                "smb3d_tree_connects",
                "Tree connects open now.",
                snapshot.trees.len(),
            ),
            (
                "smb3d_opens",
                "Open file handles now.",
                snapshot.opens.len(),
            ),
            (
                "smb3d_open_files",
                "Distinct files with at least one open handle.",
                self.files.len(),
            ),
            (
                "smb3d_notify_watches",
                "Directory opens watched by CHANGE_NOTIFY.",
                self.notify.len(),
            ),
            (
                "smb3d_host_change_watches",
                "Shares whose changes made on the host file system are being watched.",
                self.host_changes.watching(),
            ),
        ] {
            metric(&mut out, name, "gauge", help, value as u64);
        }
        for (name, help, counter) in COUNTERS {
            metric(&mut out, name, "counter", help, load(counter(m)));
        }
        family(
            &mut out,
            "smb3d_limit_hits_total",
            "counter",
            "Times a client ran into a limit or timeout (docs/limits.md), by limit.",
        );
        for (limit, hits) in self.limit_hits() {
            let _ = writeln!(
                out,
                "smb3d_limit_hits_total{{limit=\"{}\"}} {hits}",
                limit.name()
            );
        }
        for (name, help, counter) in COMMAND_COUNTERS {
            family(&mut out, name, "counter", help);
            for (i, stats) in m.commands.iter().enumerate() {
                let value = load(counter(stats));
                let _ = writeln!(out, "{name}{{command=\"{}\"}} {value}", command_name(i));
            }
        }
        render_durations(&mut out, &m.commands);
        out
    }
}

/// Authenticated sessions by dialect and the algorithms in use.
fn render_sessions(out: &mut String, snapshot: &Snapshot) {
    let mut sessions: BTreeMap<(String, String, String), u64> = BTreeMap::new();
    for s in snapshot.sessions.iter().filter(|s| s.user.is_some()) {
        let used = |p: &Protection| match (p.degree, p.algorithm) {
            (Degree::None, _) | (_, None) => "none",
            (_, Some(name)) => name,
        };
        let key = (
            s.connection.dialect.map_or_else(String::new, dialect_name),
            used(&s.signing).to_owned(),
            used(&s.encryption).to_owned(),
        );
        *sessions.entry(key).or_default() += 1;
    }
    family(
        out,
        "smb3d_sessions",
        "gauge",
        "Authenticated sessions by dialect and the signing and encryption algorithms in use.",
    );
    for ((dialect, signing, encryption), n) in &sessions {
        let _ = writeln!(
            out,
            "smb3d_sessions{{dialect=\"{}\",signing=\"{}\",encryption=\"{}\"}} {n}",
            label(dialect),
            label(signing),
            label(encryption)
        );
    }
}

/// The histogram of request durations, by command.
fn render_durations(out: &mut String, commands: &[CommandStats]) {
    family(
        out,
        "smb3d_request_duration_seconds",
        "histogram",
        "Time from a request's arrival to its response, by command.",
    );
    for (i, stats) in commands.iter().enumerate() {
        let command = command_name(i);
        let mut cumulative = 0;
        for (bound, bucket) in BUCKETS_US.iter().zip(&stats.buckets) {
            cumulative += load(bucket);
            let _ = writeln!(
                out,
                "smb3d_request_duration_seconds_bucket{{command=\"{command}\",le=\"{}\"}} {cumulative}",
                seconds(*bound)
            );
        }
        // The +Inf bucket is the count, so that it agrees with _count even while other
        // threads add.
        let count = stats.buckets.iter().map(load).sum::<u64>();
        let _ = writeln!(
            out,
            "smb3d_request_duration_seconds_bucket{{command=\"{command}\",le=\"+Inf\"}} {count}\n\
             smb3d_request_duration_seconds_sum{{command=\"{command}\"}} {}\n\
             smb3d_request_duration_seconds_count{{command=\"{command}\"}} {count}",
            seconds(load(&stats.total_us))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_format_pieces() {
        assert_eq!(seconds(50), "0.000050");
        assert_eq!(seconds(2_500_000), "2.500000");
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(command_name(8), "READ");
        assert_eq!(command_name(0x12), "OPLOCK_BREAK");
    }
}
