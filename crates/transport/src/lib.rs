//! Direct TCP (MS-SMB2 2.1) for smb3d: accepts connections and moves frames between sockets and
//! the sans-IO server core. Per connection, one task reads frames (length checked before any
//! allocation, `reader`); responses are written by the task that made them when the socket is
//! free, else by the connection's writer task (`writer`). On shutdown the listeners
//! close, every connection ends as if its client had left (opens closed, delete-on-close
//! done), and `serve` returns once they have, or after a grace period.
//!
//! The transport enforces the server's limits that need a socket or a clock (docs/limits.md):
//! connections in total and per client address, the frame length before and after logon,
//! the bytes in flight, responses not yet sent included (it stops reading), the time a frame
//! may take to arrive, and the connection's own timeouts, which it asks the core for.
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

mod piped;
mod reader;
mod slots;
mod writer;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::time::Duration;

use smb3d_server::address_slots::AddressSlot;
use smb3d_server::connection::Connection;
use smb3d_server::limits::Limit;
use smb3d_server::panic_guard;
use smb3d_server::{ClientKey, Server};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, mpsc, watch};

use crate::piped::PipeBudget;
use crate::slots::{Refusal, Slot, Slots};
use crate::writer::SocketSink;

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
    let pipes = PipeBudget::new(piped::MAX_PIPES);
    let (stop, stopped) = watch::channel(false);
    // Every connection task holds a clone; recv() returns None once all are gone.
    let (alive, mut all_gone) = mpsc::channel::<()>(1);
    let mut accepts = tokio::task::JoinSet::new();
    for listener in listeners {
        let tasks = ConnectionTasks {
            server: server.clone(),
            config: config.clone(),
            slots: slots.clone(),
            pipes: pipes.clone(),
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
    /// Connections counted in total.
    slots: Arc<Slots>,
    /// Pipes holding WRITE data, counted server-wide.
    pipes: Arc<PipeBudget>,
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
        // A refused address's socket closes before anything is read from it, as Samba's does
        // (smb.conf(5) `hosts allow` applies to the connection as a whole).
        if !tasks.server.admits_peer(peer.ip()) {
            drop(stream);
            continue;
        }
        // Over a limit the socket closes at once, so a flood cannot hold descriptors.
        let client = ClientKey::of(peer.ip());
        let slots = tasks.slots.take().and_then(|slot| {
            let place = tasks
                .server
                .address_slots()
                .take(client)
                .map_err(Refusal::PerClient)?;
            Ok((slot, place))
        });
        let (slot, place) = match slots {
            Ok(slots) => slots,
            Err(refusal) => {
                tasks
                    .server
                    .limit_reached(Limit::Connections, &format_args!("{refusal} ({client})"));
                drop(stream);
                continue;
            }
        };
        tasks.server.metrics().connection_accepted();
        tokio::spawn(connection_task(tasks.clone(), stream, peer, slot, place));
    }
}

/// One connection's task, from accept to close. Its state is what every idle connection
/// holds, so the futures it awaits are pinned where they live rather than passed by value
/// (see `reader::uncorked`).
async fn connection_task(
    tasks: ConnectionTasks,
    stream: TcpStream,
    peer: SocketAddr,
    slot: Slot,
    place: AddressSlot,
) {
    let ConnectionTasks {
        server,
        config,
        pipes,
        mut stopped,
        alive,
        ..
    } = tasks;
    let stopping = pin!(async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    });
    let work = pin!(run_connection(
        stream, peer, server, &config, slot, place, &pipes, stopping
    ));
    let result = panic_guard::contain_async(work)
        .await
        .unwrap_or_else(|why| Err(io::Error::other(format!("panic: {why}"))));
    drop(alive);
    match result {
        // The peer broke the protocol: worth a sysadmin's attention.
        Err(e) if e.kind() == io::ErrorKind::InvalidData => {
            tracing::warn!(%peer, "dropped connection: {e}");
        }
        Err(e) => tracing::debug!(%peer, "connection ended: {e}"),
        Ok(()) => {}
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

#[allow(clippy::too_many_arguments)]
async fn run_connection(
    stream: TcpStream,
    peer: SocketAddr,
    server: Arc<Server>,
    config: &TransportConfig,
    _slot: Slot,
    place: AddressSlot,
    pipes: &Arc<PipeBudget>,
    stopping: Pin<&mut impl Future<Output = ()>>,
) -> io::Result<()> {
    tune_socket(&stream, config)?;
    let (mut reader, writer) = stream.into_split();
    let closing = Arc::new(Notify::new());
    let sink = Arc::new(SocketSink::new(
        Arc::new(writer),
        closing.clone(),
        server.clone(),
        peer,
    ));
    let conn = Connection::accepted(server.clone(), sink.clone(), peer, place);
    // Ends the connection's state however this task ends: the peer leaving, a protocol
    // error, or shutdown dropping the task.
    let _ended = Ended(conn.clone());
    let writer_sink = sink.clone();
    let _writer = AbortOnDrop(tokio::spawn(async move { writer_sink.run_writer().await }));
    // Responses still being produced may hold the send side; the peer learns now that the
    // connection is over.
    let _shut = ShutDown(sink.clone());

    tokio::select! {
        result = reader::read_frames(&mut reader, &conn, &server, pipes, &sink) => result,
        () = closing.notified() => Ok(()),
        () = stopping => {
            // The server stops: nothing more is read, but the requests already taken finish
            // and their responses are sent (`serve` bounds the wait). A connection with nothing
            // in flight takes a frame of any size, so this returns once nothing is in flight.
            tokio::select! {
                () = conn.wait_for_room(usize::MAX) => {}
                () = closing.notified() => {}
            }
            Ok(())
        }
    }
}

/// Closes the connection's socket both ways when dropped.
struct ShutDown(Arc<SocketSink>);

impl Drop for ShutDown {
    fn drop(&mut self) {
        self.0.shut_down();
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

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_auth::{Account, CredentialStore, ServerIdentity};
    use smb3d_crypto::fuzzing::NullProvider;
    use smb3d_server::Settings;

    struct NoUsers;

    impl CredentialStore for NoUsers {
        fn account(&self, _user: &str) -> Option<Account> {
            None
        }

        fn uid(&self, _user: &str) -> Option<u32> {
            None
        }
    }

    /// A connection's task is what an idle connection holds besides its tables. With the
    /// futures it awaits taken by value it was 5,560 bytes in a debug build and its task 5.75
    /// KiB in the release build (heaptrack): the reader's largest wait was stored four times,
    /// and the whole task twice. Pinned where they live: 1,640 and 1.79 KiB.
    #[tokio::test]
    async fn a_connection_task_keeps_one_copy_of_its_state() {
        let identity = ServerIdentity {
            netbios_domain: "WORKGROUP".into(),
            netbios_name: "SIZES".into(),
            dns_domain: String::new(),
            dns_name: "sizes".into(),
        };
        let server = Server::new(
            Settings::default(),
            identity,
            Arc::new(NoUsers),
            Arc::new(NullProvider),
            Vec::new(),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (stream, peer) = listener.accept().await.unwrap();
        let slots = Arc::new(Slots::new(server.limits()));
        let slot = slots.take().unwrap();
        let place = server
            .address_slots()
            .take(ClientKey::of(peer.ip()))
            .unwrap();
        let (_stop, stopped) = watch::channel(false);
        let (alive, _all_gone) = mpsc::channel(1);
        let tasks = ConnectionTasks {
            server: server.clone(),
            config: Arc::new(TransportConfig::default()),
            slots,
            pipes: PipeBudget::new(piped::MAX_PIPES),
            stopped,
            alive,
        };
        let task = connection_task(tasks, stream, peer, slot, place);
        let size = std::mem::size_of_val(&task);
        assert!(size <= 2048, "a connection task of {size} bytes");
    }
}
