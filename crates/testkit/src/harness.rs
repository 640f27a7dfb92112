//! An smb3d server in memory: [`TestServer`] holds a `Server` with one `MemoryVfs` share and
//! one user, [`TestConnection`] feeds it frames through `Connection::on_frame` and collects
//! the frames it sends back. Everything runs on one current-thread tokio runtime, drained after
//! every frame, so a frame's responses are all there when [`TestConnection::send`] returns.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use smb3d_auth::{Account, CredentialStore, ServerIdentity};
use smb3d_crypto::CryptoProvider;
use smb3d_server::connection::{Connection, FrameSink, OutFrame};
use smb3d_server::share::Share;
use smb3d_server::{ClientKey, Server, Settings};
use smb3d_vfs::{Access, Disposition, Kind, MemoryVfs, OpenRequest, Vfs, VfsPath};
use tokio::runtime::Runtime;

/// The one user the test server knows.
pub const USER: &str = "tester";
/// Its password.
pub const PASSWORD: &str = "Secret1!";
/// The disk share's name.
pub const SHARE: &str = "share";
/// The share path a TREE_CONNECT names (`\\server\share`).
pub const SHARE_UNC: &str = "\\\\testkit\\share";
/// The bytes of `dir\file.txt`, a file every test server starts with.
pub const FILE_CONTENT: &[u8] = b"testkit file content\n";

/// How much file data the in-memory share may hold: small, so that a fuzz input cannot use
/// more than a few MiB however much it writes.
const SHARE_CAPACITY: u64 = 4 * 1024 * 1024;

/// Polls of the runtime after a frame before giving up on tasks that never finish (a server
/// waiting on a timer): a bound, not a time limit.
const MAX_SETTLE_POLLS: usize = 10_000;

/// The default settings without the waits that cost only wall-clock time (the delay before a
/// failed logon is answered), for in-memory runs that should never wait on a timer: the fuzz
/// target, the seeds and their mutations.
pub fn settings() -> Settings {
    let mut settings = Settings::default();
    settings.limits.logon_failure_delay = Duration::ZERO;
    settings.limits.logon_throttle_delay = Duration::ZERO;
    settings
}

/// Objects a server holds (`Server::counts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Sessions, valid or in progress.
    pub sessions: usize,
    /// Tree connects over all sessions.
    pub trees: usize,
    /// Opens over all sessions.
    pub opens: usize,
    /// Files with at least one open, server-wide.
    pub files: usize,
}

impl Counts {
    /// Whether the server holds nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The uid of the process running the tests, which test users act as: their file work runs
/// as it would without impersonation.
pub fn process_uid() -> u32 {
    std::fs::metadata("/proc/self").map_or(0, |m| std::os::unix::fs::MetadataExt::uid(&m))
}

/// A credential store holding [`USER`] with [`PASSWORD`].
struct OneUser;

impl CredentialStore for OneUser {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, USER, *smb3d_auth::ntlm::crypto::nt_hash(PASSWORD))
    }

    fn uid(&self, user: &str) -> Option<u32> {
        user.eq_ignore_ascii_case(USER).then(process_uid)
    }
}

/// A server in memory with the share [`SHARE`] and the user [`USER`].
///
/// The share starts with `dir\file.txt` ([`FILE_CONTENT`]) and symlinks: `inside` → `dir`,
/// `escape` → `../outside` (leaves the share), `loop` → `loop`.
pub struct TestServer {
    /// The server under test.
    pub server: Arc<Server>,
    /// The share's file system, to inspect what requests did.
    pub vfs: MemoryVfs,
    runtime: Runtime,
}

impl TestServer {
    /// A server with `settings`, using `crypto` for signing and encryption.
    pub fn new(settings: Settings, crypto: Arc<dyn CryptoProvider>) -> std::io::Result<Self> {
        Self::with_share(settings, crypto, |vfs| Arc::new(vfs))
    }

    /// A server whose share is `share(vfs)`: the populated in-memory file system, or a layer
    /// over it (one that injects failures, for instance).
    pub fn with_share(
        settings: Settings,
        crypto: Arc<dyn CryptoProvider>,
        share: impl FnOnce(MemoryVfs) -> Arc<dyn Vfs>,
    ) -> std::io::Result<Self> {
        Self::build(settings, crypto, share, Arc::new(OneUser))
    }

    /// A server whose users come from `credentials` instead of [`USER`] alone.
    pub fn with_credentials(
        settings: Settings,
        crypto: Arc<dyn CryptoProvider>,
        credentials: Arc<dyn CredentialStore>,
    ) -> std::io::Result<Self> {
        Self::build(settings, crypto, |vfs| Arc::new(vfs), credentials)
    }

    fn build(
        settings: Settings,
        crypto: Arc<dyn CryptoProvider>,
        share: impl FnOnce(MemoryVfs) -> Arc<dyn Vfs>,
        credentials: Arc<dyn CredentialStore>,
    ) -> std::io::Result<Self> {
        let vfs = MemoryVfs::with_capacity(SHARE_CAPACITY);
        populate(&vfs).map_err(|e| std::io::Error::other(format!("populating the share: {e}")))?;
        let identity = ServerIdentity {
            netbios_domain: "WORKGROUP".into(),
            netbios_name: "TESTKIT".into(),
            dns_domain: String::new(),
            dns_name: "testkit".into(),
        };
        let shares = vec![Share::ipc(), Share::disk(SHARE, share(vfs.clone()))];
        let server = Server::new(settings, identity, credentials, crypto, shares);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()?;
        Ok(Self {
            server,
            vfs,
            runtime,
        })
    }

    /// Reads back the persistent opens in the server's state store, as `smb3d serve` does
    /// before it listens (the timers of restored opens start on this server's runtime).
    pub fn restore_persistent_handles(&self) -> usize {
        self.runtime
            .block_on(async { self.server.restore_persistent_handles() })
    }

    /// Starts following the cluster (`Settings::cluster_opens`, `cluster_notify`) on this
    /// server's runtime, as a cluster node does before it listens.
    pub fn follow_cluster(&self) {
        self.runtime
            .block_on(async { self.server.follow_cluster_breaks() });
    }

    /// A new client connection from an unknown address.
    pub fn connect(&self) -> TestConnection<'_> {
        let sink = Arc::new(Collector::default());
        self.attach(Connection::new(self.server.clone(), sink.clone()), sink)
    }

    /// A new client connection from `peer` (limits per address apply to it); `None` when
    /// the server refuses it, as the transport would at accept (`max_connections_per_address`).
    pub fn connect_from(&self, peer: SocketAddr) -> Option<TestConnection<'_>> {
        let place = self
            .server
            .address_slots()
            .take(ClientKey::of(peer.ip()))
            .ok()?;
        let sink = Arc::new(Collector::default());
        Some(self.attach(
            Connection::accepted(self.server.clone(), sink.clone(), peer, place),
            sink,
        ))
    }

    fn attach(&self, conn: Arc<Connection>, sink: Arc<Collector>) -> TestConnection<'_> {
        TestConnection {
            owner: self,
            conn,
            sink,
            closed: false,
        }
    }

    /// What the server holds.
    pub fn counts(&self) -> Counts {
        let (sessions, trees, opens, files) = self.server.counts();
        Counts {
            sessions,
            trees,
            opens,
            files,
        }
    }
}

fn populate(vfs: &MemoryVfs) -> smb3d_vfs::VfsResult<()> {
    let dir = VfsPath::parse("dir")?;
    let create = |kind| OpenRequest {
        access: Access::ReadWrite,
        disposition: Disposition::Create,
        kind,
        create_mode: 0o755,
    };
    vfs.open(&dir, &create(Kind::Directory))?;
    let file = vfs.open(&dir.join("file.txt")?, &create(Kind::File))?;
    file.file.write_at(FILE_CONTENT, 0)?;
    vfs.symlink("dir", &VfsPath::parse("inside")?)?;
    vfs.symlink("../outside", &VfsPath::parse("escape")?)?;
    vfs.symlink("loop", &VfsPath::parse("loop")?)?;
    Ok(())
}

/// A frame sink that keeps what the server sends.
#[derive(Default)]
struct Collector {
    frames: Mutex<Vec<OutFrame>>,
    disconnected: AtomicBool,
}

impl FrameSink for Collector {
    fn send(&self, frame: OutFrame) {
        self.frames.lock().push(frame);
    }

    fn disconnect(&self) {
        self.disconnected.store(true, Ordering::Relaxed);
    }
}

/// What the server did with one frame.
#[derive(Debug, Default)]
pub struct Exchange {
    /// The frames it sent, each without its 4-byte Direct-TCP prefix.
    pub frames: Vec<Vec<u8>>,
    /// Frames whose Direct-TCP prefix did not give their length (an encoder bug).
    pub bad_prefixes: usize,
    /// Whether it ended the connection.
    pub disconnected: bool,
}

/// One client connection to a [`TestServer`]. Dropping it disconnects.
pub struct TestConnection<'s> {
    owner: &'s TestServer,
    conn: Arc<Connection>,
    sink: Arc<Collector>,
    closed: bool,
}

impl TestConnection<'_> {
    /// Hands `frame` (an SMB message without the Direct-TCP prefix) to the server, as the
    /// transport would, and returns what the server answered once all work it started is done.
    /// A connection the server ended takes no more frames.
    pub fn send(&mut self, frame: Vec<u8>) -> Exchange {
        if self.closed {
            return Exchange {
                disconnected: true,
                ..Exchange::default()
            };
        }
        let conn = self.conn.clone();
        let refused = self.owner.runtime.block_on(async move {
            let result = conn.on_frame(frame);
            settle().await;
            result.is_err()
        });
        self.collect(refused)
    }

    /// Hands `frames` to the server one after the other without waiting in between, as when
    /// they arrive in one read, and returns what it answered, in the order it sent it.
    pub fn send_together(&mut self, frames: Vec<Vec<u8>>) -> Exchange {
        if self.closed {
            return Exchange {
                disconnected: true,
                ..Exchange::default()
            };
        }
        let conn = self.conn.clone();
        let refused = self.owner.runtime.block_on(async move {
            let refused = frames
                .into_iter()
                .any(|frame| conn.on_frame(frame).is_err());
            settle().await;
            refused
        });
        self.collect(refused)
    }

    /// Lets `time` pass (real time: tasks waiting on timers run), then returns what the server
    /// sent meanwhile.
    pub fn wait(&mut self, time: Duration) -> Exchange {
        self.owner.runtime.block_on(async {
            tokio::time::sleep(time).await;
            settle().await;
        });
        self.collect(false)
    }

    /// Applies the connection's timeouts as they stand `later` from now (the transport does
    /// this when [`TestConnection::next_timer`] passes); a timeout that closes the connection
    /// shows as `disconnected`.
    pub fn check_timers(&mut self, later: Duration) -> Exchange {
        if self.closed {
            return Exchange {
                disconnected: true,
                ..Exchange::default()
            };
        }
        let conn = self.conn.clone();
        let expired = self.owner.runtime.block_on(async move {
            let result = conn.check_timers(conn.now() + later);
            settle().await;
            result.is_err()
        });
        self.collect(expired)
    }

    /// How long from now until the connection's next timeout, if it has one.
    pub fn next_timer(&self) -> Option<Duration> {
        self.conn
            .next_timer()
            .map(|at| at.saturating_duration_since(self.conn.now()))
    }

    /// The largest frame the server reads on this connection now.
    pub fn max_frame(&self) -> usize {
        self.conn.max_frame()
    }

    /// The frames the server sent since the last call; `refused` when the connection ended.
    fn collect(&mut self, refused: bool) -> Exchange {
        let mut exchange = Exchange::default();
        for out in self.sink.frames.lock().drain(..) {
            // A READ response's data may still be in its file (sent with sendfile by the
            // real transport).
            let bytes = out.into_vec().unwrap_or_default();
            let (prefix, message) = bytes.split_at_checked(4).unwrap_or((&[], &bytes));
            let declared = prefix
                .try_into()
                .ok()
                .and_then(|p| smb3d_smb2::framing::frame_len(p, usize::MAX).ok());
            if declared != Some(message.len()) {
                exchange.bad_prefixes += 1;
            }
            exchange.frames.push(message.to_vec());
        }
        exchange.disconnected = refused || self.sink.disconnected.load(Ordering::Relaxed);
        if exchange.disconnected {
            self.close();
        }
        exchange
    }

    /// Whether the connection has ended.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Ends the connection as the transport does when the socket closes.
    pub fn close(&mut self) {
        if !self.closed {
            self.closed = true;
            let conn = self.conn.clone();
            self.owner.runtime.block_on(async move {
                conn.on_disconnect();
                settle().await;
            });
        }
    }
}

impl Drop for TestConnection<'_> {
    fn drop(&mut self) {
        self.close();
    }
}

/// Lets every task the server spawned run to completion (or until the poll bound).
async fn settle() {
    let handle = tokio::runtime::Handle::current();
    for _ in 0..MAX_SETTLE_POLLS {
        if handle.metrics().num_alive_tasks() == 0 {
            return;
        }
        tokio::task::yield_now().await;
    }
}
