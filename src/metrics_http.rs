//! The metrics endpoint: a minimal HTTP/1.1 responder (one request per connection, then
//! close) serving `GET /metrics` in the Prometheus text format. A web framework would bring
//! far more than these few lines need; requests are bounded in size, time and number.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use smb3d_server::Server;
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
    /// Listens on `addr` and serves `server`'s metrics.
    pub async fn start(addr: SocketAddr, server: Arc<Server>) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let task = tokio::spawn(accept_loop(listener, server));
        Ok(Self { task })
    }

    /// Stops serving.
    pub fn stop(self) {
        self.task.abort();
    }
}

async fn accept_loop(listener: TcpListener, server: Arc<Server>) {
    let slots = Arc::new(Semaphore::new(MAX_CLIENTS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        match listener.accept().await {
            Ok((stream, _)) => {
                let server = server.clone();
                tokio::spawn(async move {
                    if let Err(e) = respond(stream, &server).await {
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

/// The status line and body for a request line.
fn route(request_line: &str, server: &Server) -> (&'static str, String, bool) {
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
        "/metrics" => ("200 OK", server.render_metrics(), head_only),
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

async fn respond(mut stream: TcpStream, server: &Server) -> io::Result<()> {
    let head = tokio::time::timeout(REQUEST_TIMEOUT, read_head(&mut stream))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no request"))??;
    let text = String::from_utf8_lossy(&head);
    let request_line = text.lines().next().unwrap_or("");
    let (status, body, head_only) = route(request_line, server);
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

    fn server() -> Arc<Server> {
        let config = smb3d_config::Config::parse(std::path::Path::new("t.toml"), "").unwrap();
        crate::serve::build_server(&config, no_users()).unwrap()
    }

    #[test]
    fn routes() {
        let server = server();
        let (status, body, head_only) = route("GET /metrics HTTP/1.1", &server);
        assert_eq!(status, "200 OK");
        assert!(body.contains("# TYPE smb3d_requests_total counter"));
        assert!(!head_only);
        assert_eq!(route("GET /metrics?x=1 HTTP/1.0", &server).0, "200 OK");
        assert!(route("HEAD /metrics HTTP/1.1", &server).2);
        assert_eq!(route("GET /other HTTP/1.1", &server).0, "404 Not Found");
        assert_eq!(
            route("POST /metrics HTTP/1.1", &server).0,
            "405 Method Not Allowed"
        );
        assert_eq!(route("GET /metrics", &server).0, "400 Bad Request");
        assert_eq!(route("", &server).0, "400 Bad Request");
        assert_eq!(route("GET /metrics SPDY/3", &server).0, "400 Bad Request");
    }
}
