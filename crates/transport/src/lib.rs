//! Direct TCP (MS-SMB2 2.1) for smb3d: accepts connections and moves frames between sockets and
//! the sans-IO server core. Per connection, one task reads frames (length checked before any
//! allocation) and one task writes the frames the core produces. On shutdown the listeners
//! close, every connection ends as if its client had left (opens closed, delete-on-close
//! done), and `serve` returns once they have, or after a grace period.
//!
//! The transport enforces the server's limits that need a socket or a clock (docs/limits.md):
//! connections in total and per client address, the frame length before and after logon,
//! the request bytes in flight (it stops reading), the time a frame may take to arrive, and
//! the connection's own timeouts, which it asks the core for.
#![forbid(unsafe_code)]
// Network-reachable code must not panic (issue 8); tests may.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

mod slots;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use smb3d_server::connection::{Connection, FrameSink, OutFrame};
use smb3d_server::limits::{Limit, enabled};
use smb3d_server::panic_guard;
use smb3d_server::{ClientKey, Server};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::Instant;

use crate::slots::{Slot, Slots};

/// Transport settings.
#[derive(Debug, Clone)]
pub struct TransportConfig {
    /// Socket send and receive buffer sizes, if set.
    pub socket_buffer: Option<usize>,
    /// How long a shutdown waits for connections to wind down.
    pub shutdown_grace: Duration,
}

impl Default for TransportConfig {
    fn default() -> Self {
        Self {
            socket_buffer: Some(4 * 1024 * 1024),
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

enum Outgoing {
    Frame(OutFrame),
    Close,
}

struct ChannelSink {
    frames: mpsc::UnboundedSender<Outgoing>,
    /// Tells the reader to stop: the core ended the connection.
    closing: Arc<Notify>,
}

impl FrameSink for ChannelSink {
    fn send(&self, frame: OutFrame) {
        // A closed channel means the connection is already going away.
        let _ = self.frames.send(Outgoing::Frame(frame));
    }
    fn disconnect(&self) {
        let _ = self.frames.send(Outgoing::Close);
        self.closing.notify_one();
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
    let slots = Arc::new(Slots::new(server.limits()));
    let (stop, stopped) = watch::channel(false);
    // Every connection task holds a clone; recv() returns None once all are gone.
    let (alive, mut all_gone) = mpsc::channel::<()>(1);
    let mut accepts = tokio::task::JoinSet::new();
    for listener in listeners {
        let tasks = ConnectionTasks {
            server: server.clone(),
            config: config.clone(),
            slots: slots.clone(),
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
    /// Connections counted in total and per client address.
    slots: Arc<Slots>,
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
        // Over a limit the socket closes at once, so a flood cannot hold descriptors.
        let client = ClientKey::of(peer.ip());
        let slot = match tasks.slots.take(client) {
            Ok(slot) => slot,
            Err(refusal) => {
                tasks
                    .server
                    .limit_reached(Limit::Connections, &format_args!("{refusal} ({client})"));
                drop(stream);
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
                ..
            } = tasks;
            let work = run_connection(stream, peer, server, &config, slot);
            let result = tokio::select! {
                result = panic_guard::contain_async(work) => result.unwrap_or_else(|why| {
                    Err(io::Error::other(format!("panic: {why}")))
                }),
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
    _slot: Slot,
) -> io::Result<()> {
    tune_socket(&stream, config)?;
    let (mut reader, mut writer) = stream.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let closing = Arc::new(Notify::new());
    let sink = ChannelSink {
        frames: tx,
        closing: closing.clone(),
    };
    let conn = Connection::accepted(server.clone(), Arc::new(sink), peer);
    // Ends the connection's state however this task ends: the peer leaving, a protocol
    // error, or shutdown dropping the task.
    let _ended = Ended(conn.clone());

    let writer_server = server.clone();
    let writer_task = tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            match out {
                Outgoing::Frame(frame) => match send_frame(&mut writer, &frame).await {
                    Ok(sent) => writer_server.metrics().sent(sent),
                    Err(_) => break,
                },
                Outgoing::Close => break,
            }
        }
        let _ = writer.shutdown().await;
    });
    let _writer = AbortOnDrop(writer_task);

    tokio::select! {
        result = read_frames(&mut reader, &conn, &server) => result,
        () = closing.notified() => Ok(()),
    }
}

/// Runs [`Connection::on_disconnect`] when dropped.
struct Ended(Arc<Connection>);

impl Drop for Ended {
    fn drop(&mut self) {
        if let Err(why) = panic_guard::contain(|| self.0.on_disconnect()) {
            tracing::error!("panic while ending a connection: {why}");
        }
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Reads frames and hands them to the core until the peer leaves, breaks the protocol or
/// runs into a limit.
async fn read_frames<R: AsyncRead + Unpin>(
    reader: &mut R,
    conn: &Arc<Connection>,
    server: &Server,
) -> io::Result<()> {
    let frame_timeout = enabled(server.limits().frame_timeout);
    let mut prefix = [0u8; 4];
    loop {
        let started = next_frame_start(reader, conn, &mut prefix).await?;
        if started == 0 {
            return Ok(());
        }
        let rest = prefix.get_mut(started..).unwrap_or_default();
        within(frame_timeout, server, conn, reader.read_exact(rest)).await?;
        let max = conn.max_frame();
        let len = smb3d_smb2::framing::frame_len(prefix, max).map_err(|e| {
            server.limit_reached(Limit::FrameSize, &format_args!("{e:?}"));
            io::Error::new(io::ErrorKind::InvalidData, format!("{e:?}"))
        })?;
        conn.wait_for_room(len).await;
        let mut frame = vec![0u8; len];
        within(frame_timeout, server, conn, reader.read_exact(&mut frame)).await?;
        server.metrics().received(prefix.len() + len);
        match panic_guard::contain(|| conn.on_frame(frame)) {
            Ok(Ok(())) => {}
            Ok(Err(why)) => return Err(io::Error::new(io::ErrorKind::InvalidData, why.0)),
            Err(why) => {
                conn.panicked(&why);
                return Err(io::Error::other(format!("panic: {why}")));
            }
        }
    }
}

/// Waits for the first bytes of the next frame (0 at the end of the stream) while the
/// connection's timers run; a timeout that closes the connection is an error.
async fn next_frame_start<R: AsyncRead + Unpin>(
    reader: &mut R,
    conn: &Connection,
    prefix: &mut [u8; 4],
) -> io::Result<usize> {
    loop {
        let timer = conn.next_timer();
        tokio::select! {
            // `read` is cancel-safe: no byte is lost when a timer fires first.
            read = reader.read(prefix) => return read,
            () = sleep_until(timer) => {
                conn.check_timers(Instant::now())
                    .map_err(|why| io::Error::new(io::ErrorKind::TimedOut, why.0))?;
            }
            () = conn.timers_changed() => {}
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Runs `read` within `timeout` (security.md L20: a frame that arrives too slowly closes the
/// connection).
async fn within<T>(
    timeout: Option<std::time::Duration>,
    server: &Server,
    conn: &Connection,
    read: impl Future<Output = io::Result<T>>,
) -> io::Result<T> {
    let Some(timeout) = timeout else {
        return read.await;
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(result) => result,
        Err(_) => {
            let who = conn
                .client()
                .map_or_else(|| "a client".to_owned(), |c| c.to_string());
            server.limit_reached(
                Limit::FrameTimeout,
                &format_args!("a frame from {who} stalled"),
            );
            Err(io::Error::new(io::ErrorKind::TimedOut, "frame too slow"))
        }
    }
}

/// Writes one frame; returns the bytes sent.
async fn send_frame(writer: &mut OwnedWriteHalf, frame: &OutFrame) -> io::Result<usize> {
    let head = frame.bytes();
    let Some(tail) = &frame.tail else {
        writer.write_all(head).await?;
        return Ok(head.len());
    };
    let Some(fd) = tail.fd() else {
        let mut data = Vec::with_capacity(tail.len());
        tail.read_into(&mut data)?;
        writer.write_all(head).await?;
        writer.write_all(&data).await?;
        return Ok(head.len() + data.len());
    };
    let stream = writer.as_ref();
    // MSG_MORE: the header waits for the data instead of leaving in a segment of its own.
    let mut written = 0;
    while written < head.len() {
        let rest = head.get(written..).unwrap_or_default();
        stream.writable().await?;
        match stream.try_io(Interest::WRITABLE, || {
            rustix::net::send(stream, rest, rustix::net::SendFlags::MORE).map_err(io::Error::from)
        }) {
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    let mut offset = tail.offset();
    let end = offset + tail.len() as u64;
    while offset < end {
        stream.writable().await?;
        let left = usize::try_from(end - offset).unwrap_or(usize::MAX);
        // sendfile reads the file in the calling thread: a disk read must not hold up the
        // connections this worker serves.
        let sent = stream.try_io(Interest::WRITABLE, || {
            blocking(|| rustix::fs::sendfile(stream, fd, Some(&mut offset), left))
                .map_err(io::Error::from)
        });
        match sent {
            Ok(0) => {
                // The file shrank after the response promised the data: zeros make up the
                // rest, as for a read that raced with a truncation.
                let missing = usize::try_from(end - offset).unwrap_or(usize::MAX);
                write_zeros(writer, missing).await?;
                break;
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(head.len() + tail.len())
}

async fn write_zeros(writer: &mut OwnedWriteHalf, mut count: usize) -> io::Result<()> {
    const ZEROS: [u8; 4096] = [0; 4096];
    while count > 0 {
        let n = count.min(ZEROS.len());
        writer.write_all(ZEROS.get(..n).unwrap_or_default()).await?;
        count -= n;
    }
    Ok(())
}

/// Runs a call that may block on the disk: on the multi-threaded runtime the worker hands its
/// other tasks to another thread first; elsewhere it runs inline.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}
