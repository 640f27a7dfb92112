//! The status report: the server's snapshot as JSON with `smbstatus --json`'s keys where they
//! map (built by the running server), and its rendering as smbstatus-like tables (by
//! `smb3d status`). Names and paths are escaped as they enter the report (`escape`), so both
//! renderings show what clients chose without letting it drive a terminal.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};
use smb3d_dtyp::AccessMask;
use smb3d_server::admin::{self, Degree, Protection, Snapshot};
use smb3d_server::escape::escape;
use smb3d_smb2::create::{LeaseState, OplockLevel, ShareAccess};

use crate::reload::ShareHealth;

/// Samba's "vnn" of a server that is not part of a cluster.
const NONCLUSTER_VNN: &str = "4294967295";

/// The report for `snapshot`, taken from the server running with the configuration `config`,
/// whose shares are as `health` says.
pub fn report(snapshot: &Snapshot, health: &ShareHealth, config: &Path, now: SystemTime) -> Value {
    let pid = std::process::id().to_string();
    let server_id = |connection: u64| {
        json!({
            "pid": pid,
            "task_id": "0",
            "vnn": NONCLUSTER_VNN,
            "unique_id": connection.to_string(),
        })
    };
    let groups = GroupNames::read();

    let mut sessions = Map::new();
    for s in &snapshot.sessions {
        let (uid, gid, username, groupname, domain, claimed_domain) = match &s.user {
            Some(u) => (
                json!(u.uid),
                json!(u.gid),
                u.name
                    .as_deref()
                    .map_or_else(|| "(anonymous)".into(), |n| escape(n).into_owned()),
                escape(&groups.name(u.gid)).into_owned(),
                escape(&u.domain).into_owned(),
                escape(&u.claimed_domain).into_owned(),
            ),
            None => (
                json!(-1),
                json!(-1),
                "(auth in progress)".into(),
                "(auth in progress)".into(),
                String::new(),
                String::new(),
            ),
        };
        let (machine, hostname) = client_names(s.connection.client);
        sessions.insert(
            s.id.to_string(),
            json!({
                "session_id": s.id.to_string(),
                "server_id": server_id(s.connection.id),
                "uid": uid,
                "gid": gid,
                "username": username,
                "groupname": groupname,
                "domain": domain,
                "claimed_domain": claimed_domain,
                "remote_machine": machine,
                "hostname": hostname,
                "session_dialect": s.connection.dialect.map_or_else(String::new, admin::dialect_name),
                "encryption": protection(s.encryption),
                "signing": protection(s.signing),
                "connection_id": s.connection.id.to_string(),
                "connected_at": timestamp(s.connection.connected_at),
            }),
        );
    }

    let mut tcons = Map::new();
    for t in &snapshot.trees {
        let connection = snapshot
            .sessions
            .iter()
            .find(|s| s.id == t.session_id)
            .map_or(0, |s| s.connection.id);
        tcons.insert(
            format!("{}/{}", t.session_id, t.id),
            json!({
                "service": escape(&t.share),
                "server_id": server_id(connection),
                "tcon_id": t.id.to_string(),
                "session_id": t.session_id.to_string(),
                "machine": client_names(t.client).0,
                "connected_at": timestamp(t.connected_at),
                "encryption": protection(t.encryption),
                "signing": protection(t.signing),
            }),
        );
    }

    let mut files: BTreeMap<String, (Value, Map<String, Value>, u64)> = BTreeMap::new();
    for o in &snapshot.opens {
        let connection = snapshot
            .sessions
            .iter()
            .find(|s| s.id == o.session_id)
            .map_or(0, |s| s.connection.id);
        let (service_path, key) = file_key(&o.share, o.share_path.as_deref(), &o.path);
        let entry = files.entry(key).or_insert_with(|| {
            (
                json!({
                    "service_path": service_path,
                    "service": escape(&o.share),
                    "filename": escape(shown_path(&o.path)),
                    "fileid": {"devid": o.device, "inode": o.inode, "extid": 0},
                }),
                Map::new(),
                0,
            )
        });
        if o.delete_pending {
            entry.2 = 1;
        }
        entry.1.insert(
            o.id.to_string(),
            json!({
                "server_id": server_id(connection),
                "uid": o.uid,
                "share_file_id": o.id.to_string(),
                "session_id": o.session_id.to_string(),
                "tcon_id": o.tree_id.to_string(),
                "sharemode": share_mode(o.share_access),
                "access_mask": access_mask(o.access),
                "caching": caching(o.oplock, o.lease),
                "oplock": oplock(o.oplock, o.lease),
                "lease": o.lease.map_or_else(|| json!({}), |(key, state)| lease(key, state)),
                "opened_at": timestamp(o.opened_at),
                "directory": o.is_directory,
            }),
        );
    }
    let open_files: Map<String, Value> = files
        .into_iter()
        .map(|(key, (mut file, opens, pending))| {
            if let Some(f) = file.as_object_mut() {
                f.insert("num_pending_deletes".into(), json!(pending));
                f.insert("opens".into(), Value::Object(opens));
            }
            (key, file)
        })
        .collect();

    let mut byte_range_locks = Map::new();
    for l in &snapshot.locks {
        let connection = snapshot
            .sessions
            .iter()
            .find(|s| s.id == l.session_id)
            .map_or(0, |s| s.connection.id);
        let (share_path, key) = file_key(&l.share, l.share_path.as_deref(), &l.path);
        let file = byte_range_locks.entry(key).or_insert_with(|| {
            json!({
                "fileid": {"devid": l.device, "inode": l.inode, "extid": 0},
                "file_name": escape(shown_path(&l.path)),
                "share_path": share_path,
                "server_id": server_id(connection),
                "locks": [],
            })
        });
        if let Some(locks) = file.get_mut("locks").and_then(Value::as_array_mut) {
            locks.push(json!({
                "server_id": server_id(connection),
                "share_file_id": l.open_id.to_string(),
                "type": if l.exclusive { "W" } else { "R" },
                "flavour": "Windows",
                "start": l.offset,
                "size": l.length,
            }));
        }
    }

    // smbstatus has no such key: Samba lists a share whose path is missing and refuses its
    // tree connects; smb3d leaves it out and says why here.
    let unavailable_shares: Map<String, Value> = health
        .unavailable()
        .map(|(name, why)| (escape(name).into_owned(), json!({"reason": escape(why)})))
        .collect();

    json!({
        "timestamp": timestamp_compact(now),
        "version": format!("smb3d {}", env!("CARGO_PKG_VERSION")),
        "smb_conf": config.display().to_string(),
        "sessions": sessions,
        "tcons": tcons,
        "open_files": open_files,
        "byte_range_locks": byte_range_locks,
        "unavailable_shares": unavailable_shares,
    })
}

/// The share directory and the key smbstatus uses for a file: its full path; both escaped.
fn file_key(share: &str, share_path: Option<&Path>, path: &str) -> (String, String) {
    let (root, full) = match share_path {
        Some(root) => {
            let root = root.display().to_string();
            let full = if path.is_empty() {
                root.clone()
            } else {
                format!("{}/{path}", root.trim_end_matches('/'))
            };
            (root, full)
        }
        None => (String::new(), format!("{share}:{path}")),
    };
    (escape(&root).into_owned(), escape(&full).into_owned())
}

/// A path within its share as shown: the share's root is ".".
fn shown_path(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

/// "remote_machine" and "hostname" as smbstatus writes them ("ipv4:127.0.0.1:35200").
fn client_names(client: Option<SocketAddr>) -> (String, String) {
    match client {
        Some(SocketAddr::V4(a)) => (a.ip().to_string(), format!("ipv4:{}:{}", a.ip(), a.port())),
        Some(SocketAddr::V6(a)) => (a.ip().to_string(), format!("ipv6:{}:{}", a.ip(), a.port())),
        None => (String::new(), String::new()),
    }
}

fn protection(p: Protection) -> Value {
    let cipher = match (p.degree, p.algorithm) {
        (Degree::None, _) | (_, None) => "-",
        (_, Some(name)) => name,
    };
    json!({"cipher": cipher, "degree": p.degree.as_str()})
}

fn share_mode(share: ShareAccess) -> Value {
    let read = share.contains(ShareAccess::READ);
    let write = share.contains(ShareAccess::WRITE);
    let delete = share.contains(ShareAccess::DELETE);
    let text: String = [(read, 'R'), (write, 'W'), (delete, 'D')]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, c)| *c)
        .collect();
    json!({
        "hex": format!("{:#010x}", share.0),
        "READ": read,
        "WRITE": write,
        "DELETE": delete,
        "text": text,
    })
}

/// The caching an open's oplock or lease gives its client, as smbstatus spells it (Samba 4.17,
/// compared side by side): what a lease's state says; for an oplock, RW for BATCH and EXCLUSIVE
/// (smbstatus counts no handle caching for a BATCH oplock) and R for LEVEL_II.
fn caching(level: OplockLevel, lease: Option<([u8; 16], LeaseState)>) -> Value {
    let state = match (level, lease) {
        (_, Some((_, state))) => state,
        (OplockLevel::BATCH | OplockLevel::EXCLUSIVE, None) => {
            LeaseState::READ_CACHING.union(LeaseState::WRITE_CACHING)
        }
        (OplockLevel::II, None) => LeaseState::READ_CACHING,
        _ => LeaseState::empty(),
    };
    let mut m = Map::new();
    for (name, bit, _) in CACHING_BITS {
        m.insert(name.into(), json!(state.contains(bit)));
    }
    m.insert("hex".into(), json!(format!("{:#010x}", state.0)));
    m.insert("text".into(), json!(caching_text(state)));
    Value::Object(m)
}

/// The caching bits (SMB2_LEASE_*) as smbstatus names and abbreviates them.
const CACHING_BITS: [(&str, LeaseState, char); 3] = [
    ("READ", LeaseState::READ_CACHING, 'R'),
    ("WRITE", LeaseState::WRITE_CACHING, 'W'),
    ("HANDLE", LeaseState::HANDLE_CACHING, 'H'),
];

/// `RWH`-style text of a caching state.
fn caching_text(state: LeaseState) -> String {
    CACHING_BITS
        .iter()
        .filter(|(_, bit, _)| state.contains(*bit))
        .map(|(_, _, c)| *c)
        .collect()
}

/// The oplock as smbstatus shows it (`{}` for none): a BATCH oplock is EXCLUSIVE and BATCH, a
/// lease's text carries its state, `LEASE(RWH)`.
fn oplock(level: OplockLevel, lease: Option<([u8; 16], LeaseState)>) -> Value {
    let text = match level {
        OplockLevel::EXCLUSIVE => "EXCLUSIVE".to_owned(),
        OplockLevel::BATCH => "BATCH".to_owned(),
        OplockLevel::II => "LEVEL_II".to_owned(),
        OplockLevel::LEASE => {
            let state = lease.map_or_else(LeaseState::empty, |(_, state)| state);
            format!("LEASE({})", caching_text(state))
        }
        _ => return json!({}),
    };
    json!({
        "EXCLUSIVE": level == OplockLevel::EXCLUSIVE || level == OplockLevel::BATCH,
        "BATCH": level == OplockLevel::BATCH,
        "LEVEL_II": level == OplockLevel::II,
        "LEASE": level == OplockLevel::LEASE,
        "text": text,
    })
}

/// A lease: its key (as a GUID) and state, in smbstatus' order.
fn lease(key: [u8; 16], state: LeaseState) -> Value {
    let mut m = Map::new();
    m.insert("lease_key".into(), json!(guid_text(key)));
    m.insert("hex".into(), json!(format!("{:#010x}", state.0)));
    for (name, bit, _) in CACHING_BITS {
        m.insert(name.into(), json!(state.contains(bit)));
    }
    m.insert("text".into(), json!(caching_text(state)));
    Value::Object(m)
}

/// 16 bytes as a GUID is written (MS-DTYP 2.3.4.3): the first three fields little-endian.
fn guid_text(b: [u8; 16]) -> String {
    let field = |range: std::ops::Range<usize>, little_endian: bool| {
        let mut part = b.get(range).unwrap_or_default().to_vec();
        if little_endian {
            part.reverse();
        }
        part.iter().map(|x| format!("{x:02x}")).collect::<String>()
    };
    format!(
        "{}-{}-{}-{}-{}",
        field(0..4, true),
        field(4..6, true),
        field(6..8, true),
        field(8..10, false),
        field(10..16, false)
    )
}

/// The access rights smbstatus spells out.
const ACCESS_BITS: [(&str, u32); 14] = [
    ("READ_DATA", 0x0000_0001),
    ("WRITE_DATA", 0x0000_0002),
    ("APPEND_DATA", 0x0000_0004),
    ("READ_EA", 0x0000_0008),
    ("WRITE_EA", 0x0000_0010),
    ("EXECUTE", 0x0000_0020),
    ("READ_ATTRIBUTES", 0x0000_0080),
    ("WRITE_ATTRIBUTES", 0x0000_0100),
    ("DELETE_CHILD", 0x0000_0040),
    ("DELETE", 0x0001_0000),
    ("READ_CONTROL", 0x0002_0000),
    ("WRITE_DAC", 0x0004_0000),
    ("SYNCHRONIZE", 0x0010_0000),
    ("ACCESS_SYSTEM_SECURITY", 0x0100_0000),
];

fn access_mask(access: AccessMask) -> Value {
    let mut m = Map::new();
    m.insert("hex".into(), json!(format!("{:#010x}", access.0)));
    for (name, bit) in ACCESS_BITS {
        m.insert(name.into(), json!(access.0 & bit != 0));
    }
    m.insert("text".into(), json!(read_write_text(access)));
    Value::Object(m)
}

fn read_write_text(access: AccessMask) -> &'static str {
    let reads = access.intersects(AccessMask::FILE_READ_DATA | AccessMask::FILE_EXECUTE);
    let writes = access.intersects(AccessMask::FILE_WRITE_DATA | AccessMask::FILE_APPEND_DATA);
    match (reads, writes) {
        (true, true) => "RW",
        (true, false) => "R",
        (false, true) => "W",
        (false, false) => "",
    }
}

/// Group names by gid, from /etc/group.
struct GroupNames(BTreeMap<u32, String>);

impl GroupNames {
    fn read() -> Self {
        let text = std::fs::read_to_string("/etc/group").unwrap_or_default();
        Self(
            text.lines()
                .filter_map(|line| {
                    let mut fields = line.split(':');
                    let name = fields.next()?;
                    let gid = fields.nth(1)?.parse().ok()?;
                    Some((gid, name.to_owned()))
                })
                .collect(),
        )
    }

    fn name(&self, gid: u32) -> String {
        self.0.get(&gid).cloned().unwrap_or_else(|| gid.to_string())
    }
}

/// Days since 1970-01-01 as a proleptic Gregorian (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// UTC date and time with microseconds, without the zone.
fn utc(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_micros()
    )
}

/// A time for people: `2026-11-22 03:46:03 UTC`.
pub fn date_time(t: SystemTime) -> String {
    let utc = utc(t);
    let seconds = utc.split('.').next().unwrap_or(&utc);
    format!("{} UTC", seconds.replace('T', " "))
}

/// RFC 3339 as smbstatus writes per-object times: `2026-11-22T03:46:03.217845+00:00`.
pub fn timestamp(t: SystemTime) -> String {
    format!("{}+00:00", utc(t))
}

/// smbstatus' report timestamp: `2026-11-22T03:46:06.235784+0000`.
fn timestamp_compact(t: SystemTime) -> String {
    format!("{}+0000", utc(t))
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// smbstatus' way of showing signing or encryption: the algorithm when required,
/// `partial(...)` when used, `-` when not.
fn shown(v: &Value) -> String {
    let cipher = text(v, "cipher");
    match text(v, "degree") {
        "full" => cipher.to_owned(),
        "partial" => format!("partial({cipher})"),
        _ => "-".to_owned(),
    }
}

fn deny_mode(sharemode: &Value) -> &'static str {
    let on = |k: &str| sharemode.get(k).and_then(Value::as_bool).unwrap_or(false);
    match (on("READ"), on("WRITE")) {
        (true, true) => "DENY_NONE",
        (true, false) => "DENY_WRITE",
        (false, true) => "DENY_READ",
        (false, false) => "DENY_ALL",
    }
}

/// Which tables a report keeps (smbstatus' -p, -S, -L, -B).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sections {
    pub sessions: bool,
    pub tcons: bool,
    pub open_files: bool,
    pub byte_range_locks: bool,
}

/// Keeps the tables `sections` asks for and, with `user`, only what that user's sessions hold:
/// its sessions, their tree connects and opens, and the byte-range locks of those opens.
pub fn filter(report: &mut Value, sections: Sections, user: Option<&str>) {
    let Some(report) = report.as_object_mut() else {
        return;
    };
    if let Some(user) = user {
        let mut kept_sessions = Vec::new();
        if let Some(Value::Object(sessions)) = report.get_mut("sessions") {
            sessions.retain(|_, s| smb3d_auth::names::same(text(s, "username"), user));
            kept_sessions = sessions
                .values()
                .map(|s| text(s, "session_id").to_owned())
                .collect();
        }
        let in_kept = |v: &Value| kept_sessions.iter().any(|id| id == text(v, "session_id"));
        if let Some(Value::Object(tcons)) = report.get_mut("tcons") {
            tcons.retain(|_, t| in_kept(t));
        }
        let mut kept_opens = Vec::new();
        if let Some(Value::Object(files)) = report.get_mut("open_files") {
            for file in files.values_mut() {
                if let Some(Value::Object(opens)) = file.get_mut("opens") {
                    opens.retain(|_, o| in_kept(o));
                    kept_opens.extend(opens.keys().cloned());
                }
            }
            files.retain(|_, f| {
                f.get("opens")
                    .and_then(Value::as_object)
                    .is_some_and(|o| !o.is_empty())
            });
        }
        if let Some(Value::Object(files)) = report.get_mut("byte_range_locks") {
            for file in files.values_mut() {
                if let Some(Value::Array(locks)) = file.get_mut("locks") {
                    locks.retain(|l| kept_opens.iter().any(|id| id == text(l, "share_file_id")));
                }
            }
            files.retain(|_, f| {
                f.get("locks")
                    .and_then(Value::as_array)
                    .is_some_and(|l| !l.is_empty())
            });
        }
    }
    for (key, wanted) in [
        ("sessions", sections.sessions),
        ("tcons", sections.tcons),
        ("open_files", sections.open_files),
        ("byte_range_locks", sections.byte_range_locks),
    ] {
        if !wanted {
            report.remove(key);
        }
    }
}

/// The report as smbstatus-like tables: those it has.
pub fn render(report: &Value) -> String {
    let mut out = String::new();
    let empty = Map::new();
    let section = |key: &str| report.get(key).and_then(Value::as_object).unwrap_or(&empty);
    let _ = writeln!(
        out,
        "{} (configuration {})\n",
        text(report, "version"),
        text(report, "smb_conf")
    );
    let unavailable = section("unavailable_shares");
    if !unavailable.is_empty() {
        let _ = writeln!(
            out,
            "Unavailable shares (not served until a reload finds them):"
        );
        for (name, why) in unavailable {
            let _ = writeln!(out, "  {name}: {}", text(why, "reason"));
        }
        let _ = writeln!(out);
    }
    if report.get("sessions").is_some() {
        let _ = writeln!(
            out,
            "{:<16} {:<16} {:<12} {:<40} {:<17} {:<22} {:<14}",
            "Session", "Username", "Group", "Machine", "Protocol Version", "Encryption", "Signing"
        );
        let _ = writeln!(out, "{}", "-".repeat(141));
        for s in section("sessions").values() {
            let _ = writeln!(
                out,
                "{:<16} {:<16} {:<12} {:<40} {:<17} {:<22} {:<14}",
                text(s, "session_id"),
                text(s, "username"),
                text(s, "groupname"),
                format!("{} ({})", text(s, "remote_machine"), text(s, "hostname")),
                text(s, "session_dialect"),
                s.get("encryption").map(shown).unwrap_or_default(),
                s.get("signing").map(shown).unwrap_or_default(),
            );
        }
    }
    if report.get("tcons").is_some() {
        let _ = writeln!(
            out,
            "\n{:<16} {:<20} {:<16} {:<33} {:<22} {:<14}",
            "Service", "Session/Tree", "Machine", "Connected at", "Encryption", "Signing"
        );
        let _ = writeln!(out, "{}", "-".repeat(125));
        for (key, t) in section("tcons") {
            let _ = writeln!(
                out,
                "{:<16} {:<20} {:<16} {:<33} {:<22} {:<14}",
                text(t, "service"),
                key,
                text(t, "machine"),
                text(t, "connected_at"),
                t.get("encryption").map(shown).unwrap_or_default(),
                t.get("signing").map(shown).unwrap_or_default(),
            );
        }
    }
    if report.get("open_files").is_some() {
        let _ = writeln!(out, "\nLocked files:");
        let _ = writeln!(
            out,
            "{:<10} {:<10} {:<11} {:<11} {:<6} {:<8} {:<24} {:<32} Time",
            "File ID", "User(ID)", "DenyMode", "Access", "R/W", "Oplock", "SharePath", "Name"
        );
        let _ = writeln!(out, "{}", "-".repeat(140));
        for file in section("open_files").values() {
            let opens = file.get("opens").and_then(Value::as_object);
            for (id, o) in opens.into_iter().flatten() {
                let access = o.get("access_mask").unwrap_or(&Value::Null);
                let rw = match text(access, "text") {
                    "RW" => "RDWR",
                    "R" => "RDONLY",
                    "W" => "WRONLY",
                    _ => "-",
                };
                let oplock = o
                    .get("oplock")
                    .map(|v| text(v, "text"))
                    .filter(|t| !t.is_empty())
                    .unwrap_or("NONE");
                let _ = writeln!(
                    out,
                    "{:<10} {:<10} {:<11} {:<11} {:<6} {:<8} {:<24} {:<32} {}",
                    id,
                    o.get("uid").map(ToString::to_string).unwrap_or_default(),
                    deny_mode(o.get("sharemode").unwrap_or(&Value::Null)),
                    text(access, "hex"),
                    rw,
                    oplock,
                    text(file, "service_path"),
                    text(file, "filename"),
                    text(o, "opened_at"),
                );
            }
        }
    }
    if report.get("byte_range_locks").is_some() {
        let _ = writeln!(out, "\nByte range locks:");
        let _ = writeln!(
            out,
            "{:<10} {:<24} {:<4} {:<20} {:<20} {:<24} Name",
            "File ID", "dev:inode", "R/W", "start", "size", "SharePath"
        );
        let _ = writeln!(out, "{}", "-".repeat(140));
        for file in section("byte_range_locks").values() {
            let id = file.get("fileid").unwrap_or(&Value::Null);
            let number = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
            let locks = file.get("locks").and_then(Value::as_array);
            for l in locks.into_iter().flatten() {
                let _ = writeln!(
                    out,
                    "{:<10} {:<24} {:<4} {:<20} {:<20} {:<24} {}",
                    text(l, "share_file_id"),
                    format!("{}:{}", number(id, "devid"), number(id, "inode")),
                    text(l, "type"),
                    number(l, "start"),
                    number(l, "size"),
                    text(file, "share_path"),
                    text(file, "file_name"),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use smb3d_server::admin::{
        ConnectionInfo, LockInfo, OpenInfo, SessionInfo, TreeInfo, UserInfo,
    };

    use super::*;

    /// Issue 23 item 7: a BATCH oplock and an RWH lease as Samba 4.17's smbstatus --json showed
    /// the same opens side by side.
    #[test]
    fn oplocks_and_leases_are_spelled_as_smbstatus_spells_them() {
        assert_eq!(
            oplock(OplockLevel::BATCH, None),
            json!({"EXCLUSIVE": true, "BATCH": true, "LEVEL_II": false, "LEASE": false, "text": "BATCH"})
        );
        assert_eq!(
            caching(OplockLevel::BATCH, None),
            json!({"READ": true, "WRITE": true, "HANDLE": false, "hex": "0x00000005", "text": "RW"})
        );
        assert_eq!(caching(OplockLevel::II, None)["text"], "R");
        let rwh = LeaseState(7);
        let key = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16];
        assert_eq!(
            oplock(OplockLevel::LEASE, Some((key, rwh))),
            json!({"EXCLUSIVE": false, "BATCH": false, "LEVEL_II": false, "LEASE": true, "text": "LEASE(RWH)"})
        );
        assert_eq!(
            lease(key, rwh).to_string(),
            json!({"lease_key": "04030201-0605-0807-090a-0b0c0d0e0f10", "hex": "0x00000007",
                   "READ": true, "WRITE": true, "HANDLE": true, "text": "RWH"})
            .to_string()
        );
        assert_eq!(caching(OplockLevel::LEASE, Some((key, rwh)))["text"], "RWH");
        assert_eq!(oplock(OplockLevel::NONE, None), json!({}));
    }

    #[test]
    fn timestamps_are_utc_with_microseconds() {
        let t = UNIX_EPOCH + Duration::from_micros(1_795_319_163_217_845);
        assert_eq!(timestamp(t), "2026-11-22T03:46:03.217845+00:00");
        assert_eq!(timestamp_compact(t), "2026-11-22T03:46:03.217845+0000");
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000000+00:00");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(timestamp(leap), "2000-02-29T00:00:00.000000+00:00");
    }

    fn sample() -> Snapshot {
        let at = UNIX_EPOCH + Duration::from_secs(1_795_319_163);
        let connection = ConnectionInfo {
            id: 7,
            client: Some("127.0.0.1:35200".parse().unwrap()),
            dialect: Some(0x0311),
            connected_at: at,
        };
        Snapshot {
            sessions: vec![
                SessionInfo {
                    id: 2_630_074_081,
                    connection: connection.clone(),
                    user: Some(UserInfo {
                        name: Some("bench".into()),
                        domain: "SMB3D".into(),
                        claimed_domain: "WORKGROUP".into(),
                        uid: 1001,
                        gid: 1001,
                    }),
                    signing: Protection {
                        algorithm: Some("AES-128-GMAC"),
                        degree: Degree::Full,
                    },
                    encryption: Protection {
                        algorithm: Some("AES-128-GCM"),
                        degree: Degree::Partial,
                    },
                },
                SessionInfo {
                    id: 5,
                    connection: ConnectionInfo {
                        id: 8,
                        client: Some("[::1]:4000".parse().unwrap()),
                        ..connection
                    },
                    user: None,
                    signing: Protection {
                        algorithm: None,
                        degree: Degree::None,
                    },
                    encryption: Protection {
                        algorithm: Some("AES-128-GCM"),
                        degree: Degree::None,
                    },
                },
            ],
            trees: vec![TreeInfo {
                session_id: 2_630_074_081,
                id: 1,
                share: "share".into(),
                client: Some("127.0.0.1:35200".parse().unwrap()),
                connected_at: at,
                signing: Protection {
                    algorithm: Some("AES-128-GMAC"),
                    degree: Degree::Full,
                },
                encryption: Protection {
                    algorithm: Some("AES-128-GCM"),
                    degree: Degree::Full,
                },
            }],
            opens: vec![OpenInfo {
                id: 12,
                session_id: 2_630_074_081,
                tree_id: 1,
                share: "share".into(),
                share_path: Some("/srv/share".into()),
                path: "dir/a.txt".into(),
                uid: 1001,
                access: AccessMask(0x0012_019f),
                share_access: ShareAccess::READ | ShareAccess::WRITE,
                is_directory: false,
                delete_pending: false,
                device: 65024,
                inode: 10_051_890,
                opened_at: at,
                oplock: OplockLevel::NONE,
                lease: None,
            }],
            locks: vec![LockInfo {
                open_id: 12,
                session_id: 2_630_074_081,
                share: "share".into(),
                share_path: Some("/srv/share".into()),
                path: "dir/a.txt".into(),
                device: 65024,
                inode: 10_051_890,
                offset: 2,
                length: 5,
                exclusive: true,
            }],
        }
    }

    /// The keys and values smbstatus --json (and -B for byte-range locks) of Samba 4.17.12
    /// printed for the same state: an SMB 3.1.1 session of `bench` that encrypts without being
    /// required to, its tree connect, an open of a.txt for read and write sharing read and
    /// write, and an exclusive lock of 5 bytes at 2; captured against the reference Samba with
    /// smbprotocol holding the open.
    #[test]
    fn report_uses_smbstatus_keys() {
        let r = report(
            &sample(),
            &ShareHealth::default(),
            Path::new("/etc/smb3d/smb3d.toml"),
            UNIX_EPOCH + Duration::from_secs(1_795_319_166),
        );
        assert_eq!(r["timestamp"], "2026-11-22T03:46:06.000000+0000");
        let s = &r["sessions"]["2630074081"];
        assert_eq!(s["session_id"], "2630074081");
        assert_eq!(s["uid"], 1001);
        assert_eq!(s["username"], "bench");
        assert_eq!(s["remote_machine"], "127.0.0.1");
        assert_eq!(s["hostname"], "ipv4:127.0.0.1:35200");
        assert_eq!(s["session_dialect"], "SMB3_11");
        assert_eq!(
            s["encryption"],
            json!({"cipher": "AES-128-GCM", "degree": "partial"})
        );
        assert_eq!(
            s["signing"],
            json!({"cipher": "AES-128-GMAC", "degree": "full"})
        );
        assert_eq!(s["server_id"]["vnn"], "4294967295");
        let pending = &r["sessions"]["5"];
        assert_eq!(pending["uid"], -1);
        assert_eq!(pending["username"], "(auth in progress)");
        assert_eq!(pending["hostname"], "ipv6:::1:4000");
        assert_eq!(
            pending["encryption"],
            json!({"cipher": "-", "degree": "none"})
        );

        let t = &r["tcons"]["2630074081/1"];
        assert_eq!(t["service"], "share");
        assert_eq!(t["tcon_id"], "1");
        assert_eq!(t["session_id"], "2630074081");
        assert_eq!(t["machine"], "127.0.0.1");
        assert_eq!(t["connected_at"], "2026-11-22T03:46:03.000000+00:00");
        assert_eq!(
            t["encryption"],
            json!({"cipher": "AES-128-GCM", "degree": "full"})
        );

        let f = &r["open_files"]["/srv/share/dir/a.txt"];
        assert_eq!(f["service_path"], "/srv/share");
        assert_eq!(f["filename"], "dir/a.txt");
        assert_eq!(
            f["fileid"],
            json!({"devid": 65024, "inode": 10_051_890, "extid": 0})
        );
        assert_eq!(f["num_pending_deletes"], 0);
        let o = &f["opens"]["12"];
        assert_eq!(o["share_file_id"], "12");
        assert_eq!(
            o["sharemode"],
            json!({"hex": "0x00000003", "READ": true, "WRITE": true, "DELETE": false, "text": "RW"})
        );
        assert_eq!(
            o["access_mask"],
            json!({
                "hex": "0x0012019f", "READ_DATA": true, "WRITE_DATA": true, "APPEND_DATA": true,
                "READ_EA": true, "WRITE_EA": true, "EXECUTE": false, "READ_ATTRIBUTES": true,
                "WRITE_ATTRIBUTES": true, "DELETE_CHILD": false, "DELETE": false,
                "READ_CONTROL": true, "WRITE_DAC": false, "SYNCHRONIZE": true,
                "ACCESS_SYSTEM_SECURITY": false, "text": "RW"
            })
        );
        assert_eq!(o["oplock"], json!({}));
        assert_eq!(o["lease"], json!({}));
        let locked = &r["byte_range_locks"]["/srv/share/dir/a.txt"];
        assert_eq!(locked["file_name"], "dir/a.txt");
        assert_eq!(locked["share_path"], "/srv/share");
        assert_eq!(
            locked["fileid"],
            json!({"devid": 65024, "inode": 10_051_890, "extid": 0})
        );
        let l = &locked["locks"][0];
        assert_eq!(
            (&l["type"], &l["flavour"], &l["start"], &l["size"]),
            (&json!("W"), &json!("Windows"), &json!(2), &json!(5))
        );
        assert_eq!(l["share_file_id"], "12");
    }

    /// What clients chose (a claimed domain, file and stream names) reaches the report and the
    /// tables escaped: nothing in them can end a line, drive a terminal or reorder the text.
    #[test]
    fn client_strings_are_escaped() {
        let mut snapshot = sample();
        if let Some(user) = snapshot.sessions[0].user.as_mut() {
            user.claimed_domain = "EV\u{1b}[31mIL\nforged".into();
        }
        snapshot.opens[0].path = "dir/evil\u{202e}txt.exe:\u{9b}2J".into();
        snapshot.locks[0].path = snapshot.opens[0].path.clone();
        let r = report(
            &snapshot,
            &ShareHealth::default(),
            Path::new("/etc/smb3d/smb3d.toml"),
            UNIX_EPOCH,
        );
        let s = &r["sessions"]["2630074081"];
        assert_eq!(s["username"], "bench");
        assert_eq!(s["domain"], "SMB3D");
        assert_eq!(s["claimed_domain"], "EV\\u{1b}[31mIL\\nforged");
        let shown = "dir/evil\\u{202e}txt.exe:\\u{9b}2J";
        let key = format!("/srv/share/{shown}");
        assert_eq!(r["open_files"][&key]["filename"], shown);
        assert_eq!(r["byte_range_locks"][&key]["file_name"], shown);
        let text = render(&r);
        assert!(text.contains(shown), "{text}");
        let unshowable =
            |c: char| c != '\n' && (c.is_control() || ('\u{2000}'..='\u{206F}').contains(&c));
        assert!(!r.to_string().contains(unshowable), "{r}");
        assert!(!text.contains(unshowable), "{text}");
    }

    const ALL: Sections = Sections {
        sessions: true,
        tcons: true,
        open_files: true,
        byte_range_locks: true,
    };

    fn sample_report() -> Value {
        report(
            &sample(),
            &ShareHealth::default(),
            Path::new("/etc/smb3d/smb3d.toml"),
            UNIX_EPOCH,
        )
    }

    /// smbstatus -u USER: that user's sessions and what they hold, nothing of others.
    #[test]
    fn a_user_filter_keeps_what_the_users_sessions_hold() {
        let mut r = sample_report();
        filter(&mut r, ALL, Some("BENCH"));
        let sessions: Vec<&String> = r["sessions"].as_object().unwrap().keys().collect();
        assert_eq!(sessions, ["2630074081"]);
        assert_eq!(r["tcons"].as_object().unwrap().len(), 1);
        assert!(r["open_files"]["/srv/share/dir/a.txt"]["opens"]["12"].is_object());
        assert_eq!(
            r["byte_range_locks"]["/srv/share/dir/a.txt"]["locks"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        let mut r = sample_report();
        filter(&mut r, ALL, Some("alice"));
        for key in ["sessions", "tcons", "open_files", "byte_range_locks"] {
            assert_eq!(r[key], json!({}), "{key}");
        }
    }

    /// smbstatus -p, -S, -L and -B: the report and its tables keep only those sections.
    #[test]
    fn section_filters_keep_only_their_tables() {
        let none = Sections {
            sessions: false,
            tcons: false,
            open_files: false,
            byte_range_locks: false,
        };
        for (sections, kept, heading) in [
            (
                Sections {
                    sessions: true,
                    ..none
                },
                "sessions",
                "Session ",
            ),
            (
                Sections {
                    tcons: true,
                    ..none
                },
                "tcons",
                "Service ",
            ),
            (
                Sections {
                    open_files: true,
                    ..none
                },
                "open_files",
                "Locked files:",
            ),
            (
                Sections {
                    byte_range_locks: true,
                    ..none
                },
                "byte_range_locks",
                "Byte range locks:",
            ),
        ] {
            let mut r = sample_report();
            filter(&mut r, sections, None);
            let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
            assert!(keys.contains(&&kept.to_owned()), "{keys:?}");
            assert_eq!(keys.len(), 5, "metadata and {kept}: {keys:?}");
            let text = render(&r);
            assert!(text.contains(heading), "{text}");
            let headings = ["Session ", "Service ", "Locked files:", "Byte range locks:"];
            assert_eq!(
                headings.iter().filter(|h| text.contains(**h)).count(),
                1,
                "{text}"
            );
        }
    }

    #[test]
    fn unavailable_shares_are_reported_with_why() {
        let health = ShareHealth {
            shares: vec![
                ("ok".into(), None),
                (
                    "gone".into(),
                    Some("share gone: /srv/gone: No such file".into()),
                ),
            ],
        };
        let r = report(
            &sample(),
            &health,
            Path::new("/etc/smb3d/smb3d.toml"),
            UNIX_EPOCH,
        );
        assert_eq!(
            r["unavailable_shares"],
            json!({"gone": {"reason": "share gone: /srv/gone: No such file"}})
        );
        let text = render(&r);
        assert!(
            text.contains("Unavailable shares (not served until a reload finds them):\n  gone: share gone: /srv/gone: No such file\n"),
            "{text}"
        );
        let healthy = render(&report(
            &sample(),
            &ShareHealth::default(),
            Path::new("/etc/smb3d/smb3d.toml"),
            UNIX_EPOCH,
        ));
        assert!(!healthy.contains("Unavailable"), "{healthy}");
    }

    #[test]
    fn tables_show_what_smbstatus_shows() {
        let r = report(
            &sample(),
            &ShareHealth::default(),
            Path::new("/etc/smb3d/smb3d.toml"),
            UNIX_EPOCH,
        );
        let text = render(&r);
        let session = text.lines().find(|l| l.starts_with("2630074081")).unwrap();
        assert!(
            session.contains("127.0.0.1 (ipv4:127.0.0.1:35200)"),
            "{text}"
        );
        assert!(session.contains("partial(AES-128-GCM)"), "{text}");
        assert!(session.contains("AES-128-GMAC"), "{text}");
        let open = text.lines().find(|l| l.starts_with("12 ")).unwrap();
        for field in [
            "1001",
            "DENY_NONE",
            "0x0012019f",
            "RDWR",
            "NONE",
            "/srv/share",
            "dir/a.txt",
        ] {
            assert!(open.contains(field), "{field} in {open}");
        }
        assert!(text.contains("2630074081/1"), "{text}");
        let lock = text
            .lines()
            .skip_while(|l| !l.starts_with("Byte range locks"))
            .find(|l| l.starts_with("12 "))
            .unwrap();
        for field in ["65024:10051890", " W ", "/srv/share", "dir/a.txt"] {
            assert!(lock.contains(field), "{field} in {lock}");
        }
    }
}
