//! Direct TCP (MS-SMB2 2.1) for smb3d: accepts connections and moves frames between sockets and
//! the sans-IO server core. Per connection, one task reads frames (length checked before any
//! allocation) and one task writes the frames the core produces.
#![forbid(unsafe_code)]

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use smb3d_server::Server;
use smb3d_server::connection::{Connection, FrameSink, OutFrame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Transport settings.
#[derive(Debug, Clone)]
pub struct TransportConfig {
    /// Largest frame accepted from a client; a larger length prefix ends the connection before
    /// anything is allocated for it.
    pub max_frame: usize,
    /// Socket send and receive buffer sizes, if set.
    pub socket_buffer: Option<usize>,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            max_frame: 8 * 1024 * 1024 + 1024 * 1024,
            socket_buffer: Some(4 * 1024 * 1024),
        }
    }
}

enum Outgoing {
    Frame(OutFrame),
    Close,
}

struct ChannelSink(mpsc::UnboundedSender<Outgoing>);

impl FrameSink for ChannelSink {
    fn send(&self, frame: OutFrame) {
        // A closed channel means the connection is already going away.
        let _ = self.0.send(Outgoing::Frame(frame));
    }
    fn disconnect(&self) {
        let _ = self.0.send(Outgoing::Close);
    }
}

/// Binds the given addresses.
pub async fn bind(addrs: &[SocketAddr]) -> io::Result<Vec<TcpListener>> {
    let mut listeners = Vec::with_capacity(addrs.len());
    for addr in addrs {
        listeners.push(TcpListener::bind(addr).await?);
    }
    Ok(listeners)
}

/// Serves connections on `listeners` until `shutdown` completes.
pub async fn serve(
    listeners: Vec<TcpListener>,
    server: Arc<Server>,
    config: TransportConfig,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let config = Arc::new(config);
    let mut accepts = tokio::task::JoinSet::new();
    for listener in listeners {
        let server = server.clone();
        let config = config.clone();
        accepts.spawn(async move { accept_loop(listener, server, config).await });
    }
    tokio::select! {
        () = shutdown => Ok(()),
        Some(result) = accepts.join_next() => match result {
            Ok(r) => r,
            Err(e) => Err(io::Error::other(e)),
        },
    }
}

async fn accept_loop(
    listener: TcpListener,
    server: Arc<Server>,
    config: Arc<TransportConfig>,
) -> io::Result<()> {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Running out of descriptors or a connection reset before accept must not stop
            // the server; wait a moment and go on.
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let server = server.clone();
        let config = config.clone();
        tokio::spawn(async move {
            match run_connection(stream, server, &config).await {
                // The peer broke the protocol: worth a sysadmin's attention.
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    tracing::warn!(%peer, "dropped connection: {e}");
                }
                Err(e) => tracing::debug!(%peer, "connection ended: {e}"),
                Ok(()) => {}
            }
        });
    }
}

fn tune_socket(stream: &TcpStream, config: &TransportConfig) -> io::Result<()> {
    stream.set_nodelay(true)?;
    if let Some(size) = config.socket_buffer {
        let sock = socket2::SockRef::from(stream);
        sock.set_send_buffer_size(size)?;
        sock.set_recv_buffer_size(size)?;
    }
    Ok(())
}

async fn run_connection(
    stream: TcpStream,
    server: Arc<Server>,
    config: &TransportConfig,
) -> io::Result<()> {
    tune_socket(&stream, config)?;
    let (mut reader, mut writer) = stream.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let conn = Connection::new(server, Arc::new(ChannelSink(tx)));

    let writer_task = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            match out {
                Outgoing::Frame(frame) => {
                    if writer.write_all(frame.bytes()).await.is_err() {
                        break;
                    }
                }
                Outgoing::Close => break,
            }
        }
        let _ = writer.shutdown().await;
    });

    let result = read_frames(&mut reader, &conn, config.max_frame).await;
    conn.on_disconnect();
    writer_task.abort();
    result
}

async fn read_frames(
    reader: &mut tokio::net::tcp::OwnedReadHalf,
    conn: &Arc<Connection>,
    max_frame: usize,
) -> io::Result<()> {
    let mut prefix = [0u8; 4];
    loop {
        match reader.read_exact(&mut prefix).await {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let len = smb3d_smb2::framing::frame_len(prefix, max_frame)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{e:?}")))?;
        let mut frame = vec![0u8; len];
        reader.read_exact(&mut frame).await?;
        if let Err(why) = conn.on_frame(frame) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, why.0));
        }
    }
}
