//! The commands that talk to a running server over its admin socket: `status`, `reload`,
//! `close-session`, `close-file` and `debug`.

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};
use smb3d_config::{DEFAULT_CONFIG_PATH, ServerConfig, admin_socket_in};

use crate::AnyError;

/// How long to wait for the server's answer (a reload opens every changed share).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest answer read: a status report of a very busy server.
const MAX_ANSWER_BYTES: u64 = 256 * 1024 * 1024;

/// Which server to talk to.
#[derive(Args)]
pub struct Target {
    /// Configuration file naming the admin socket (SMB3D_ADMIN_SOCKET overrides it).
    #[arg(long, short, default_value = DEFAULT_CONFIG_PATH)]
    config: PathBuf,
    /// The admin socket itself, instead of the one the configuration names.
    #[arg(long)]
    socket: Option<PathBuf>,
}

impl Target {
    /// The socket: --socket, else SMB3D_ADMIN_SOCKET, else the one the configuration names,
    /// else the default. The configuration is not parsed as a whole: a file with an error must
    /// not keep `smb3d reload` from the running server, which then reports that error.
    fn socket(&self) -> Result<PathBuf, AnyError> {
        if let Some(socket) = &self.socket {
            return Ok(socket.clone());
        }
        if let Some(socket) = std::env::var_os("SMB3D_ADMIN_SOCKET") {
            return Ok(PathBuf::from(socket));
        }
        match std::fs::read_to_string(&self.config) {
            Ok(text) => Ok(admin_socket_in(&text)),
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    && self.config == Path::new(DEFAULT_CONFIG_PATH) =>
            {
                Ok(ServerConfig::default().admin_socket)
            }
            Err(e) => Err(format!("{}: {e}", self.config.display()).into()),
        }
    }

    /// Sends one request and returns the answer's fields, or the server's error.
    fn ask(&self, request: &Value) -> Result<Value, AnyError> {
        let path = self.socket()?;
        let stream = UnixStream::connect(&path).map_err(|e| {
            format!(
                "cannot reach the server at {}: {e} (is `smb3d serve` running, and are you root \
                 or the account it runs as?)",
                path.display()
            )
        })?;
        stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
        stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
        let mut line = serde_json::to_vec(request)?;
        line.push(b'\n');
        (&stream).write_all(&line)?;
        let mut answer = Vec::new();
        BufReader::new(std::io::Read::take(&stream, MAX_ANSWER_BYTES))
            .read_until(b'\n', &mut answer)?;
        if answer.is_empty() {
            return Err(format!("{}: the server closed the connection", path.display()).into());
        }
        let answer: Value = serde_json::from_slice(&answer)?;
        if answer.get("ok").and_then(Value::as_bool) == Some(true) {
            return Ok(answer);
        }
        let mut message = answer
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("the server refused the request")
            .to_owned();
        for e in answer
            .get("errors")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            message.push_str("\n  ");
            message.push_str(e);
        }
        Err(message.into())
    }
}

/// smbstatus' filters, as far as the report carries what they select.
#[derive(Args)]
pub struct StatusFilter {
    /// Show sessions ("processes" in smbstatus).
    #[arg(short = 'p', long)]
    processes: bool,
    /// Show tree connects (shares).
    #[arg(short = 'S', long)]
    shares: bool,
    /// Show open files ("locked files" in smbstatus) and byte-range locks.
    #[arg(short = 'L', long)]
    locks: bool,
    /// Show byte-range locks.
    #[arg(short = 'B', long)]
    byterange: bool,
    /// Only what this user's sessions hold (names compared as at logon).
    #[arg(short = 'u', long)]
    user: Option<String>,
}

impl StatusFilter {
    fn sections(&self) -> crate::status::Sections {
        let all = !(self.processes || self.shares || self.locks || self.byterange);
        crate::status::Sections {
            sessions: all || self.processes,
            tcons: all || self.shares,
            open_files: all || self.locks,
            byte_range_locks: all || self.locks || self.byterange,
        }
    }
}

/// `smb3d status [--json] [-p] [-S] [-L] [-B] [-u USER]`.
pub fn status(target: &Target, as_json: bool, filter: &StatusFilter) -> Result<(), AnyError> {
    let answer = target.ask(&json!({"command": "status"}))?;
    let mut report = answer.get("status").cloned().unwrap_or(Value::Null);
    crate::status::filter(&mut report, filter.sections(), filter.user.as_deref());
    if as_json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", crate::status::render(&report));
    }
    Ok(())
}

fn names(outcome: &Value, key: &str) -> Vec<String> {
    outcome
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// `smb3d reload`.
pub fn reload(target: &Target) -> Result<(), AnyError> {
    let answer = target.ask(&json!({"command": "reload"}))?;
    let outcome = answer.get("reload").cloned().unwrap_or(Value::Null);
    let mut changes = Vec::new();
    for (key, label) in [
        ("added", "added"),
        ("removed", "removed"),
        ("changed", "changed"),
    ] {
        let list = names(&outcome, key);
        if !list.is_empty() {
            changes.push(format!("{label} {}", list.join(", ")));
        }
    }
    if changes.is_empty() {
        println!("configuration reloaded; no share changed");
    } else {
        println!("configuration reloaded; shares {}", changes.join("; "));
    }
    for key in names(&outcome, "restart_needed") {
        eprintln!("warning: server setting {key} changed: it takes effect when smb3d is restarted");
    }
    for share in outcome
        .get("unavailable")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let field = |k| share.get(k).and_then(Value::as_str).unwrap_or("");
        eprintln!(
            "warning: share {} is unavailable: {}",
            field("share"),
            field("reason")
        );
    }
    Ok(())
}

/// `smb3d debug [LEVEL]`.
pub fn debug(target: &Target, level: Option<&str>) -> Result<(), AnyError> {
    let mut request = json!({"command": "debug"});
    if let Some(level) = level {
        request["level"] = json!(level);
    }
    let answer = target.ask(&request)?;
    let filter = answer.get("filter").and_then(Value::as_str).unwrap_or("");
    match level {
        Some(_) => println!(
            "log filter changed from {:?} to {filter:?}",
            answer.get("before").and_then(Value::as_str).unwrap_or("")
        ),
        None => println!("log filter {filter:?}"),
    }
    Ok(())
}

/// A session or open id as `smb3d status` shows it.
fn parse_id(id: &str) -> Result<u64, AnyError> {
    id.trim()
        .parse()
        .map_err(|_| format!("{id:?} is not an id as `smb3d status` shows them").into())
}

/// `smb3d close-session ID`.
pub fn close_session(target: &Target, id: &str) -> Result<(), AnyError> {
    let id = parse_id(id)?;
    target.ask(&json!({"command": "close-session", "id": id}))?;
    println!("session {id} closed");
    Ok(())
}

/// `smb3d close-file ID`.
pub fn close_file(target: &Target, id: &str) -> Result<(), AnyError> {
    let id = parse_id(id)?;
    target.ask(&json!({"command": "close-file", "id": id}))?;
    println!("open file {id} closed");
    Ok(())
}

/// `smb3d close-share NAME`.
pub fn close_share(target: &Target, name: &str) -> Result<(), AnyError> {
    let answer = target.ask(&json!({"command": "close-share", "name": name}))?;
    let closed = answer.get("closed").and_then(Value::as_u64).unwrap_or(0);
    println!("share {name}: {closed} tree connect(s) closed");
    Ok(())
}
