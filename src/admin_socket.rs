//! The admin socket: a unix stream socket (mode 0600, in a directory created 0700) on which
//! root or the account smb3d runs as sends one JSON request per line and reads one JSON answer
//! per line. Requests: `{"command":"status"}`, `{"command":"reload"}`,
//! `{"command":"close-session","id":N}`, `{"command":"close-file","id":N}`,
//! `{"command":"close-share","name":"NAME"}`,
//! `{"command":"debug"}` and `{"command":"debug","level":"..."}`. Answers carry
//! `"ok": true` and the result, or `"ok": false` and `"error"`.

use std::io;
use std::os::unix::fs::{DirBuilderExt as _, FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use smb3d_server::Server;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::reload::{Outcome, SharedHealth};

/// Bytes a client may send on one connection: requests are a few dozen bytes.
const MAX_REQUEST_BYTES: u64 = 64 * 1024;
/// How long a client may take to send a request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A reload asked for over the socket, answered once it is done.
pub type ReloadRequest = oneshot::Sender<Result<Outcome, Vec<String>>>;

/// A listening admin socket; [`AdminSocket::stop`] removes it.
pub struct AdminSocket {
    path: PathBuf,
    task: JoinHandle<()>,
}

/// What requests are served from.
struct Context {
    server: Arc<Server>,
    health: SharedHealth,
    config_path: PathBuf,
    reloads: mpsc::Sender<ReloadRequest>,
    /// The uid the server runs as; it and root may use the socket.
    owner: u32,
}

/// The uid this process runs as (the owner of /proc/self).
pub fn process_uid() -> u32 {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").map_or(0, |m| m.uid())
}

impl AdminSocket {
    /// Listens at `path`. A stale socket left by a server that died is replaced; one that a
    /// running server answers on is not.
    pub fn start(
        path: &Path,
        server: Arc<Server>,
        health: SharedHealth,
        config_path: PathBuf,
        reloads: mpsc::Sender<ReloadRequest>,
    ) -> io::Result<Self> {
        if let Some(dir) = path.parent()
            && !dir.exists()
        {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_socket() => {
                if std::os::unix::net::UnixStream::connect(path).is_ok() {
                    return Err(io::Error::new(
                        io::ErrorKind::AddrInUse,
                        "another smb3d is listening on it",
                    ));
                }
                std::fs::remove_file(path)?;
            }
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "it exists and is not a socket",
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let listener = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        let context = Arc::new(Context {
            server,
            health,
            config_path,
            reloads,
            owner: process_uid(),
        });
        let task = tokio::spawn(accept_loop(listener, context));
        Ok(Self {
            path: path.to_path_buf(),
            task,
        })
    }

    /// Stops listening and removes the socket file.
    pub fn stop(self) {
        self.task.abort();
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::debug!("removing {}: {e}", self.path.display());
        }
    }
}

async fn accept_loop(listener: UnixListener, context: Arc<Context>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let context = context.clone();
                tokio::spawn(async move {
                    if let Err(e) = serve_client(stream, &context).await {
                        tracing::debug!("admin socket client: {e}");
                    }
                });
            }
            Err(e) => {
                tracing::warn!("admin socket: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

async fn serve_client(stream: UnixStream, context: &Context) -> io::Result<()> {
    let uid = stream.peer_cred()?.uid();
    if uid != 0 && uid != context.owner {
        tracing::warn!(
            uid,
            "admin socket: refused a client that is neither root nor the server's account"
        );
        return Ok(());
    }
    let (reader, mut writer) = stream.into_split();
    let mut lines = BufReader::new(reader.take(MAX_REQUEST_BYTES));
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = tokio::time::timeout(REQUEST_TIMEOUT, lines.read_until(b'\n', &mut line))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no request"))??;
        if read == 0 {
            return Ok(());
        }
        let answer = match serde_json::from_slice::<Value>(&line) {
            Ok(request) => answer(&request, context).await,
            Err(e) => failure(format!("not a JSON request: {e}")),
        };
        let mut out = serde_json::to_vec(&answer).map_err(io::Error::other)?;
        out.push(b'\n');
        writer.write_all(&out).await?;
    }
}

fn failure(error: impl Into<String>) -> Value {
    json!({"ok": false, "error": error.into()})
}

/// A session or file id, as a JSON number or a string of digits (smbstatus prints ids as
/// strings).
fn id_of(request: &Value) -> Option<u64> {
    match request.get("id")? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

async fn answer(request: &Value, context: &Context) -> Value {
    let command = request.get("command").and_then(Value::as_str).unwrap_or("");
    match command {
        "status" => {
            let report = crate::status::report(
                &context.server.snapshot(),
                &context.health.lock(),
                &context.config_path,
                SystemTime::now(),
            );
            json!({"ok": true, "status": report})
        }
        "reload" => {
            let (reply, answer) = oneshot::channel();
            if context.reloads.send(reply).await.is_err() {
                return failure("the server is shutting down");
            }
            match answer.await {
                Ok(Ok(outcome)) => json!({"ok": true, "reload": outcome.to_json()}),
                Ok(Err(errors)) => json!({
                    "ok": false,
                    "error": "the configuration was not reloaded; the running one is kept",
                    "errors": errors,
                }),
                Err(_) => failure("the server is shutting down"),
            }
        }
        "close-session" | "close-file" => {
            let Some(id) = id_of(request) else {
                return failure(format!("{command} needs an \"id\""));
            };
            let server = &context.server;
            let (closed, what) = if command == "close-session" {
                (server.close_session(id), "session")
            } else {
                (server.close_file(id), "open file")
            };
            if closed {
                json!({"ok": true})
            } else {
                failure(format!("no {what} has id {id}"))
            }
        }
        "close-share" => {
            let Some(name) = request.get("name").and_then(Value::as_str) else {
                return failure("close-share needs a \"name\"");
            };
            let closed = context.server.close_share(name);
            json!({"ok": true, "closed": closed})
        }
        "debug" => {
            let level = request.get("level").and_then(Value::as_str);
            match crate::logging::set_filter(level) {
                Ok((before, after)) => {
                    if level.is_some() {
                        tracing::info!("log filter changed from {before:?} to {after:?}");
                    }
                    json!({"ok": true, "before": before, "filter": after})
                }
                Err(e) => failure(e),
            }
        }
        other => failure(format!(
            "unknown command {other:?}; expected status, reload, close-session, close-file, \
             close-share or debug"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_numbers_or_digit_strings() {
        assert_eq!(id_of(&json!({"id": 42})), Some(42));
        assert_eq!(id_of(&json!({"id": "2630074081"})), Some(2_630_074_081));
        assert_eq!(id_of(&json!({"id": "x"})), None);
        assert_eq!(id_of(&json!({"id": -1})), None);
        assert_eq!(id_of(&json!({})), None);
    }
}
