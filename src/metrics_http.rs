//! The metrics endpoint: a minimal HTTP/1.1 responder (one request per connection, then
//! close) serving `GET /metrics` in the Prometheus text format. A web framework would bring
//! far more than these few lines need; requests are bounded in size, time and number.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use smb3d_server::Server;

use crate::reload::{ShareHealth, SharedHealth};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

/// The largest request head read; Prometheus sends a few hundred bytes.
const MAX_HEAD: usize = 8 * 1024;
/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Scrapes served at once; more wait.
const MAX_CLIENTS: usize = 16;
/// The content type of the Prometheus text format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A running endpoint; dropping it does not stop it, [`Endpoint::stop`] does.
pub struct Endpoint {
    task: JoinHandle<()>,
}

impl Endpoint {
    /// Listens on `addr` and serves `server`'s metrics and the health of its shares.
    pub async fn start(
        addr: SocketAddr,
        server: Arc<Server>,
        health: SharedHealth,
    ) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let task = tokio::spawn(accept_loop(listener, server, health));
        Ok(Self { task })
    }

    /// Stops serving.
    pub fn stop(self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, server: Arc<Server>, health: SharedHealth) {
    let slots = Arc::new(Semaphore::new(MAX_CLIENTS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        match listener.accept().await {
            Ok((stream, _)) => {
                let server = server.clone();
                let health = health.clone();
                tokio::spawn(async move {
                    if let Err(e) = respond(stream, &server, &health).await {
                        tracing::debug!("metrics client: {e}");
                    }
                    drop(permit);
                });
            }
            Err(e) => {
                tracing::warn!("metrics endpoint: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Reads the request head (up to the blank line).
async fn read_head(stream: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() >= MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(buf.get(..n).unwrap_or_default());
    }
    Ok(head)
}

/// A Prometheus label value: `\`, `"` and newlines escaped as the text format requires.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The server's metrics, then whether each configured share is served.
fn metrics(server: &Server, health: &ShareHealth) -> String {
    let mut text = server.render_metrics();
    text.push_str(
        "# HELP smb3d_share_available Whether a configured share is served (0: it could not be \
         opened; smb3d status says why).\n# TYPE smb3d_share_available gauge\n",
    );
    for (name, why) in &health.shares {
        text.push_str(&format!(
            "smb3d_share_available{{share=\"{}\"}} {}\n",
            label(name),
            u8::from(why.is_none())
        ));
    }
    text
}

/// The status line and body for a request line.
fn route(
    request_line: &str,
    server: &Server,
    health: &SharedHealth,
) -> (&'static str, String, bool) {
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return ("400 Bad Request", "bad request\n".into(), true);
    };
    if !version.starts_with("HTTP/1.") {
        return ("400 Bad Request", "bad request\n".into(), true);
    }
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return ("405 Method Not Allowed", "only GET\n".into(), head_only);
    }
    let path = target.split('?').next().unwrap_or("");
    match path {
        "/metrics" => ("200 OK", metrics(server, &health.lock()), head_only),
        "/" => (
            "200 OK",
            "smb3d: the metrics are at /metrics\n".into(),
            head_only,
        ),
        _ => (
            "404 Not Found",
            "not found; try /metrics\n".into(),
            head_only,
        ),
    }
}

async fn respond(mut stream: TcpStream, server: &Server, health: &SharedHealth) -> io::Result<()> {
    let head = tokio::time::timeout(REQUEST_TIMEOUT, read_head(&mut stream))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no request"))??;
    let text = String::from_utf8_lossy(&head);
    let request_line = text.lines().next().unwrap_or("");
    let (status, body, head_only) = route(request_line, server, health);
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {CONTENT_TYPE}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if !head_only {
        response.push_str(&body);
    }
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_users() -> Arc<smb3d_auth::UserDb> {
        Arc::new(smb3d_auth::UserDb::new("/nonexistent/users"))
    }

    fn server(config: &str) -> (Arc<Server>, SharedHealth) {
        let config = smb3d_config::Config::parse(std::path::Path::new("t.toml"), config).unwrap();
        let (server, health) = crate::serve::build_server(&config, no_users()).unwrap();
        (server, Arc::new(parking_lot::Mutex::new(health)))
    }

    #[test]
    fn routes() {
        let (server, health) = server("");
        let route = |line: &str| route(line, &server, &health);
        let (status, body, head_only) = route("GET /metrics HTTP/1.1");
        assert_eq!(status, "200 OK");
        assert!(body.contains("# TYPE smb3d_requests_total counter"));
        assert!(!head_only);
        assert_eq!(route("GET /metrics?x=1 HTTP/1.0").0, "200 OK");
        assert!(route("HEAD /metrics HTTP/1.1").2);
        assert_eq!(route("GET /other HTTP/1.1").0, "404 Not Found");
        assert_eq!(route("POST /metrics HTTP/1.1").0, "405 Method Not Allowed");
        assert_eq!(route("GET /metrics").0, "400 Bad Request");
        assert_eq!(route("").0, "400 Bad Request");
        assert_eq!(route("GET /metrics SPDY/3").0, "400 Bad Request");
    }

    #[test]
    fn every_configured_share_says_whether_it_is_served() {
        let dir = tempfile::tempdir().unwrap();
        let (server, health) = server(&format!(
            "[share.ok]\npath = {:?}\n[share.gone]\npath = \"/nonexistent/smb3d\"\n",
            dir.path().display().to_string()
        ));
        let body = route("GET /metrics HTTP/1.1", &server, &health).1;
        assert!(
            body.contains("# TYPE smb3d_share_available gauge\n"),
            "{body}"
        );
        assert!(
            body.contains("smb3d_share_available{share=\"ok\"} 1\n"),
            "{body}"
        );
        assert!(
            body.contains("smb3d_share_available{share=\"gone\"} 0\n"),
            "{body}"
        );
        assert_eq!(label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
