//! Direct TCP (MS-SMB2 2.1) for smb3d: accepts connections and moves frames between sockets and
//! the sans-IO server core. Per connection, one task reads frames (length checked before any
//! allocation) and one task writes the frames the core produces. On shutdown the listeners
//! close, every connection ends as if its client had left (opens closed, delete-on-close
//! done), and `serve` returns once they have, or after a grace period.
#![forbid(unsafe_code)]

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use smb3d_server::Server;
use smb3d_server::connection::{Connection, FrameSink, OutFrame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

/// Transport settings.
#[derive(Debug, Clone)]
pub struct TransportConfig {
    /// Largest frame accepted from a client; a larger length prefix ends the connection before
    /// anything is allocated for it.
    pub max_frame: usize,
    /// Socket send and receive buffer sizes, if set.
    pub socket_buffer: Option<usize>,
    /// How long a shutdown waits for connections to wind down.
    pub shutdown_grace: Duration,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            max_frame: 8 * 1024 * 1024 + 1024 * 1024,
            socket_buffer: Some(4 * 1024 * 1024),
            shutdown_grace: Duration::from_secs(5),
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

/// Pending connections a listener queues before accepting them.
const BACKLOG: i32 = 1024;

/// Binds the given addresses. IPv6 listeners take IPv6 only (IPV6_V6ONLY), so that
/// `0.0.0.0:445` and `[::]:445` can both be listed.
pub async fn bind(addrs: &[SocketAddr]) -> io::Result<Vec<TcpListener>> {
    let mut listeners = Vec::with_capacity(addrs.len());
    for addr in addrs {
        let listener =
            listen(*addr).map_err(|e| io::Error::new(e.kind(), format!("{addr}: {e}")))?;
        listeners.push(listener);
    }
    Ok(listeners)
}

fn listen(addr: SocketAddr) -> io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    // A restarted server binds again at once despite connections in TIME_WAIT.
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    TcpListener::from_std(socket.into())
}

/// Serves connections on `listeners` until `shutdown` completes, then ends every connection
/// and waits (at most [`TransportConfig::shutdown_grace`]) for them to finish.
pub async fn serve(
    listeners: Vec<TcpListener>,
    server: Arc<Server>,
    config: TransportConfig,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let config = Arc::new(config);
    let (stop, stopped) = watch::channel(false);
    // Every connection task holds a clone; recv() returns None once all are gone.
    let (alive, mut all_gone) = mpsc::channel::<()>(1);
    let mut accepts = tokio::task::JoinSet::new();
    for listener in listeners {
        let tasks = ConnectionTasks {
            server: server.clone(),
            config: config.clone(),
            stopped: stopped.clone(),
            alive: alive.clone(),
        };
        accepts.spawn(async move { accept_loop(listener, tasks).await });
    }
    drop(alive);
    let result = tokio::select! {
        () = shutdown => Ok(()),
        Some(result) = accepts.join_next() => match result {
            Ok(r) => r,
            Err(e) => Err(io::Error::other(e)),
        },
    };
    accepts.abort_all();
    while accepts.join_next().await.is_some() {}
    let _ = stop.send(true);
    if tokio::time::timeout(config.shutdown_grace, all_gone.recv())
        .await
        .is_err()
    {
        tracing::warn!("connections still busy after the shutdown grace period");
    }
    result
}

/// What each connection task needs.
#[derive(Clone)]
struct ConnectionTasks {
    server: Arc<Server>,
    config: Arc<TransportConfig>,
    stopped: watch::Receiver<bool>,
    alive: mpsc::Sender<()>,
}

async fn accept_loop(listener: TcpListener, tasks: ConnectionTasks) -> io::Result<()> {
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
        let tasks = tasks.clone();
        tasks.server.metrics().connection_accepted();
        tokio::spawn(async move {
            let ConnectionTasks {
                server,
                config,
                mut stopped,
                alive,
            } = tasks;
            let result = tokio::select! {
                result = run_connection(stream, peer, server, &config) => result,
                _ = stopped.wait_for(|stop| *stop) => Ok(()),
            };
            drop(alive);
            match result {
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
    peer: SocketAddr,
    server: Arc<Server>,
    config: &TransportConfig,
) -> io::Result<()> {
    tune_socket(&stream, config)?;
    let (mut reader, mut writer) = stream.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let conn = Connection::accepted(server.clone(), Arc::new(ChannelSink(tx)), peer);
    // Ends the connection's state however this task ends: the peer leaving, a protocol
    // error, or shutdown dropping the task.
    let _ended = Ended(conn.clone());

    let writer_server = server.clone();
    let writer_task = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            match out {
                Outgoing::Frame(frame) => {
                    let bytes = frame.bytes();
                    if writer.write_all(bytes).await.is_err() {
                        break;
                    }
                    writer_server.metrics().sent(bytes.len());
                }
                Outgoing::Close => break,
            }
        }
        let _ = writer.shutdown().await;
    });
    let _writer = AbortOnDrop(writer_task);

    read_frames(&mut reader, &conn, &server, config.max_frame).await
}

/// Runs [`Connection::on_disconnect`] when dropped.
struct Ended(Arc<Connection>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.on_disconnect();
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn read_frames(
    reader: &mut tokio::net::tcp::OwnedReadHalf,
    conn: &Arc<Connection>,
    server: &Server,
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
        server.metrics().received(prefix.len() + len);
        if let Err(why) = conn.on_frame(frame) {
            return Err(io::Error::new(io::ErrorKind::InvalidData, why.0));
        }
    }
}
