//! The metrics endpoint's page, in the Prometheus text format (version 0.0.4): the server's
//! counters (`state::metrics`), and gauges (sessions, tree connects, opens) counted from the
//! tables when scraped.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use smb3d_smb2::Command;

use super::status::{Degree, Protection, dialect_name};
use crate::state::metrics::{BUCKETS_US, load};
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

impl Server {
    /// The metrics page: every counter, and gauges read from the tables now.
    pub fn render_metrics(&self) -> String {
        let m = &self.metrics;
        let mut out = String::with_capacity(32 * 1024);
        family(
            &mut out,
            "smb3d_connections",
            "gauge",
            "Client connections open now.",
        );
        sample(
            &mut out,
            "smb3d_connections",
            self.connections.lock().len() as u64,
        );
        family(
            &mut out,
            "smb3d_connections_accepted_total",
            "counter",
            "Client connections accepted.",
        );
        sample(
            &mut out,
            "smb3d_connections_accepted_total",
            load(&m.connections_accepted),
        );

        let snapshot = self.snapshot();
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
            &mut out,
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
            family(&mut out, name, "gauge", help);
            sample(&mut out, name, value as u64);
        }

        for (name, help, counter) in [
            (
                "smb3d_logons_total",
                "Successful session setups.",
                &m.logons,
            ),
            (
                "smb3d_auth_failures_total",
                "Failed session setups (wrong password, unknown user, bad token).",
                &m.auth_failures,
            ),
            (
                "smb3d_signed_requests_total",
                "Requests that arrived with a valid signature.",
                &m.signed_requests,
            ),
            (
                "smb3d_encrypted_messages_total",
                "Messages that arrived encrypted and were decrypted.",
                &m.encrypted_messages,
            ),
            (
                "smb3d_read_bytes_total",
                "File data returned by READ.",
                &m.file_read,
            ),
            (
                "smb3d_written_bytes_total",
                "File data stored by WRITE.",
                &m.file_written,
            ),
            (
                "smb3d_network_received_bytes_total",
                "Bytes received from clients.",
                &m.network_received,
            ),
            (
                "smb3d_network_sent_bytes_total",
                "Bytes sent to clients.",
                &m.network_sent,
            ),
        ] {
            family(&mut out, name, "counter", help);
            sample(&mut out, name, load(counter));
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
        family(
            &mut out,
            "smb3d_requests_total",
            "counter",
            "Requests answered, by command.",
        );
        for (i, stats) in m.commands.iter().enumerate() {
            let _ = writeln!(
                out,
                "smb3d_requests_total{{command=\"{}\"}} {}",
                command_name(i),
                load(&stats.requests)
            );
        }
        family(
            &mut out,
            "smb3d_request_failures_total",
            "counter",
            "Requests answered with an error status, by command.",
        );
        for (i, stats) in m.commands.iter().enumerate() {
            let _ = writeln!(
                out,
                "smb3d_request_failures_total{{command=\"{}\"}} {}",
                command_name(i),
                load(&stats.failures)
            );
        }
        family(
            &mut out,
            "smb3d_request_duration_seconds",
            "histogram",
            "Time from a request's arrival to its response, by command.",
        );
        for (i, stats) in m.commands.iter().enumerate() {
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
        out
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
