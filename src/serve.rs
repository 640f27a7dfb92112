//! `smb3d serve`: from a configuration file (with `SMB3D_*` environment overrides), or
//! `--demo` with an embedded default. Tells systemd when it is ready, reloading and stopping,
//! serves the admin socket, the metrics endpoint and the mDNS advertisement when configured,
//! and stops gracefully on SIGTERM or SIGINT.

use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use smb3d_auth::{CredentialStore, ServerIdentity, UserDb};
use smb3d_config::{
    Bytes, Config, DEFAULT_CONFIG_PATH, Dialect, LimitsConfig, MapToGuest, SigningPolicy,
};
use smb3d_crypto::Cipher;
use smb3d_server::limits::{SYSTEMD_NOFILE, open_files_within};
use smb3d_server::{
    ClusterLocks, ClusterNotify, ClusterOpens, DiskStore, Limits, Server, Settings, StateStore,
    SystemClock,
};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, oneshot};

use crate::AnyError;
use crate::admin_socket::{AdminSocket, ReloadRequest};
use crate::credentials::ReloadingUserDb;
use crate::metrics_http;
use crate::reload::{Reloader, ShareHealth, SharedHealth, build_shares, encryption_policy};
use crate::systemd;
use smb3d_auth::KerberosService;
use smb3d_auth::krb5::Keytab;

/// Port of the demo server unless `--port` says otherwise.
pub(crate) const DEMO_PORT: u16 = 4445;
pub(crate) const DEMO_USER: &str = "demo";

#[derive(Args)]
pub struct ServeArgs {
    /// Configuration file (SMB3D_* environment variables override its settings).
    #[arg(long, short, default_value = DEFAULT_CONFIG_PATH)]
    config: PathBuf,
    /// Serve a share named `demo` on 127.0.0.1 with a new user and a random password, no
    /// configuration file needed.
    #[arg(long)]
    demo: bool,
    /// With --demo: the directory to share (default: a new temporary directory).
    #[arg(long, requires = "demo")]
    dir: Option<PathBuf>,
    /// With --demo: the port (default 4445).
    #[arg(long, requires = "demo")]
    port: Option<u16>,
}

pub fn run(args: ServeArgs) -> Result<(), AnyError> {
    let (config, banner, config_path, demo_state) = if args.demo {
        let (config, banner, state) = demo_config(args.dir, args.port.unwrap_or(DEMO_PORT))?;
        (config, Some(banner), None, Some(RemovedOnDrop(state)))
    } else {
        (
            crate::config_cmd::load(&args.config)?,
            None,
            Some(std::path::absolute(&args.config)?),
            None,
        )
    };
    let audited = config.server.audit || config.shares.iter().any(|(_, s)| s.audit == Some(true));
    crate::logging::init(config.server.log_format, audited);
    crate::allocator::tune();
    crate::allocator::give_back_periodically();
    crate::descriptors::raise();
    let credentials = Arc::new(
        ReloadingUserDb::open(config.server.user_db.clone())
            .map_err(|e| format!("user database: {e} (create it with `smb3d user add NAME`)"))?,
    );
    let (server, health) = build_server(&config, credentials)?;
    crate::reload::log_unavailable(&health);
    crate::reload::log_testing_only(&config);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let health = Arc::new(parking_lot::Mutex::new(health));
    let served = runtime.block_on(serve(
        config,
        config_path,
        server,
        health,
        banner,
        args.demo,
    ));
    // The runtime's tasks end before the demo's directory goes.
    drop(runtime);
    drop(demo_state);
    served
}

/// The demo's own directory (a DIR given with --dir is not in it), removed however `run`
/// ends: one would otherwise pile up in /tmp per demo run.
struct RemovedOnDrop(PathBuf);

impl Drop for RemovedOnDrop {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.0) {
            eprintln!("removing {}: {e}", self.0.display());
        }
    }
}

/// Listens, serves until SIGTERM or SIGINT, rereads the configuration on SIGHUP or
/// `smb3d reload`, then stops gracefully: systemd is told, the mDNS goodbye sent, the admin
/// socket removed and every connection ended as if its client had left.
async fn serve(
    config: Config,
    config_path: Option<PathBuf>,
    server: Arc<Server>,
    health: SharedHealth,
    banner: Option<String>,
    demo: bool,
) -> Result<(), AnyError> {
    let s = &config.server;
    crate::kernel_leases::listen(&server)?;
    let restored = server.restore_persistent_handles();
    server.follow_cluster_breaks();
    if restored > 0 {
        let from = if config.cluster.is_some() {
            "etcd".to_owned()
        } else {
            s.state_dir.display().to_string()
        };
        tracing::info!("{restored} persistent open(s) restored from {from}");
    }
    let mut listeners = Vec::new();
    let mut bound = Vec::new();
    for addr in &s.listen {
        match smb3d_transport::bind(std::slice::from_ref(addr)).await {
            Ok(mut one) => {
                listeners.append(&mut one);
                bound.push(*addr);
            }
            Err(e) if addr.is_ipv6() && !host_has_ipv6() => {
                tracing::warn!("not listening on {addr}: this host has no IPv6 ({e})");
            }
            Err(e) => return Err(e.into()),
        }
    }
    if listeners.is_empty() {
        return Err("no address of server.listen could be listened on".into());
    }
    for addr in &bound {
        tracing::info!("listening on {addr}");
    }
    tracing::info!(
        "at most {} files and directories open at once (limits.max_open_files)",
        server.limits().max_open_files
    );
    let metrics = if s.metrics {
        let endpoint =
            metrics_http::Endpoint::start(s.metrics_listen, server.clone(), health.clone())
                .await
                .map_err(|e| format!("metrics endpoint {}: {e}", s.metrics_listen))?;
        tracing::info!("metrics at http://{}/metrics", s.metrics_listen);
        Some(endpoint)
    } else {
        None
    };
    let (reload_requests, mut reloads) = mpsc::channel::<ReloadRequest>(4);
    let admin = match AdminSocket::start(
        &s.admin_socket,
        server.clone(),
        health.clone(),
        config_path.clone().unwrap_or_else(|| config.source.clone()),
        reload_requests,
    ) {
        Ok(admin) => {
            tracing::info!("admin socket at {}", s.admin_socket.display());
            Some(admin)
        }
        Err(e) => {
            tracing::warn!(
                "admin socket {}: {e}; `smb3d status` and `smb3d reload` cannot reach this server",
                s.admin_socket.display()
            );
            None
        }
    };
    let mdns = if s.mdns && !demo {
        let time_machine: Vec<String> = config
            .shares
            .iter()
            .filter(|(_, share)| share.apple && share.time_machine)
            .map(|(name, _)| name.clone())
            .collect();
        smb3d_mdns::Advertiser::start(
            &s.server_name,
            Some(&s.mdns_model),
            &s.listen,
            &time_machine,
        )
        .map_err(|e| tracing::warn!("mDNS advertisement unavailable: {e}"))
        .ok()
    } else {
        None
    };
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let (stop, stopped) = oneshot::channel::<()>();
    #[cfg(feature = "cluster")]
    let public = public_addresses(&server, &s.listen);
    let mut serving = tokio::spawn(smb3d_transport::serve(
        listeners,
        server.clone(),
        smb3d_transport::TransportConfig::default(),
        async {
            let _ = stopped.await;
        },
    ));
    systemd::notify_ready(&status_line(&config, &health.lock()));
    if let Some(banner) = banner {
        println!("{banner}");
    }
    let mut reloader = Reloader {
        path: config_path,
        config,
        server,
        health,
    };
    let failure = loop {
        tokio::select! {
            _ = terminate.recv() => {
                tracing::info!("SIGTERM: stopping");
                break None;
            }
            _ = interrupt.recv() => {
                tracing::info!("SIGINT: stopping");
                break None;
            }
            _ = hangup.recv() => {
                tracing::info!("SIGHUP: rereading the configuration");
                let _ = reloader.reload();
            }
            Some(reply) = reloads.recv() => {
                tracing::info!("reload asked for on the admin socket");
                let _ = reply.send(reloader.reload());
            }
            () = cluster_lease_lost() => {
                tracing::error!("cluster: etcd says this node's lease is gone; stopping, so that no open the cluster released is served");
                break Some("the node's etcd lease is gone".to_owned());
            }
            result = &mut serving => {
                break Some(match result {
                    Ok(Ok(())) => "the listeners stopped".to_owned(),
                    Ok(Err(e)) => e.to_string(),
                    Err(e) => e.to_string(),
                });
            }
        }
    };
    systemd::notify_stopping();
    if let Some(advertiser) = mdns
        && let Err(e) = advertiser.stop().await
    {
        tracing::warn!("mDNS goodbye: {e}");
    }
    if let Some(admin) = admin {
        admin.stop();
    }
    let _ = stop.send(());
    #[cfg(feature = "cluster")]
    if let Some(public) = public {
        // Its listeners' stop signals drop with it: their connections end.
        public.abort();
    }
    if failure.is_none() {
        match serving.await {
            Ok(Err(e)) => tracing::warn!("while stopping: {e}"),
            Err(e) => tracing::warn!("while stopping: {e}"),
            Ok(Ok(())) => {}
        }
    }
    if let Some(metrics) = metrics {
        metrics.stop();
    }
    #[cfg(feature = "cluster")]
    tokio::task::block_in_place(crate::cluster::leave);
    match failure {
        None => {
            tracing::info!("stopped");
            Ok(())
        }
        Some(why) => Err(format!("serving failed: {why}").into()),
    }
}

/// Serves the public addresses the cluster gives this node, at the port of the first listen
/// address (445 without one).
#[cfg(feature = "cluster")]
fn public_addresses(
    server: &Arc<Server>,
    listen: &[SocketAddr],
) -> Option<tokio::task::JoinHandle<()>> {
    let port = listen.first().map_or(445, SocketAddr::port);
    let (requests, witness) = crate::cluster::serve_public_addresses(server, port)?;
    // The witness service also answers on the node's own addresses.
    let own: Vec<std::net::TcpListener> = listen
        .iter()
        .flat_map(|addr| witness.listeners(addr.ip()))
        .collect();
    let own = crate::public_addresses::AbortOnDrop(tokio::spawn(
        witness.clone().serve(own, std::future::pending()),
    ));
    let server = server.clone();
    Some(tokio::spawn(async move {
        let _own = own;
        crate::public_addresses::serve(server, requests, witness).await;
    }))
}

/// Returns when etcd says this cluster node's lease is gone; never for a single server.
async fn cluster_lease_lost() {
    #[cfg(feature = "cluster")]
    crate::cluster::lease_lost().await;
    #[cfg(not(feature = "cluster"))]
    std::future::pending::<()>().await;
}

/// Whether the host can bind IPv6 sockets at all: the default listens on `[::]:445` too, and a
/// host booted with ipv6.disable=1 should still serve IPv4.
fn host_has_ipv6() -> bool {
    std::net::UdpSocket::bind((std::net::Ipv6Addr::UNSPECIFIED, 0))
        .map_or_else(|e| !lacks_ipv6(&e), |_| true)
}

/// The errors of a host without IPv6.
fn lacks_ipv6(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAFNOSUPPORT | libc::EADDRNOTAVAIL)
    )
}

/// What `systemctl status` shows while serving.
pub fn status_line(config: &Config, health: &ShareHealth) -> String {
    let listen: Vec<String> = config
        .server
        .listen
        .iter()
        .map(ToString::to_string)
        .collect();
    let unavailable: Vec<&str> = health.unavailable().map(|(name, _)| name).collect();
    let broken = if unavailable.is_empty() {
        String::new()
    } else {
        format!(
            " ({} unavailable: {}; see smb3d status)",
            unavailable.len(),
            unavailable.join(", ")
        )
    };
    format!(
        "serving {} share(s){broken} on {}",
        config.shares.len().saturating_sub(unavailable.len()),
        listen.join(", ")
    )
}

/// The server's limits from the `[limits]` section (docs/limits.md); `nofile` is the
/// process's descriptor limit, which `max_open_files` follows unless it is set.
fn limits(l: &LimitsConfig, nofile: u64) -> Limits {
    // Values were range-checked when the configuration was read; sizes beyond the address
    // space cannot pass those checks.
    let size = |b: &Bytes| usize::try_from(b.0).unwrap_or(usize::MAX);
    let count = |n: &u32| usize::try_from(*n).unwrap_or(usize::MAX);
    Limits {
        max_frame_before_logon: size(l.max_frame_before_logon.get_ref()),
        max_frame: size(l.max_frame.get_ref()),
        max_inflight_bytes: size(l.max_inflight_bytes.get_ref()),
        max_async_requests: count(l.max_async_requests.get_ref()),
        max_compound: count(l.max_compound.get_ref()),
        max_sessions_per_connection: count(l.max_sessions_per_connection.get_ref()),
        max_session_setups_in_progress: count(l.max_session_setups_in_progress.get_ref()),
        max_channels_per_session: count(l.max_channels_per_session.get_ref()),
        max_trees_per_session: count(l.max_trees_per_session.get_ref()),
        max_opens_per_session: count(l.max_opens_per_session.get_ref()),
        max_locks_per_open: count(l.max_locks_per_open.get_ref()),
        max_locks_per_file: count(l.max_locks_per_file.get_ref()),
        max_open_files: l.max_open_files.as_ref().map_or_else(
            || open_files_within(nofile, count(l.max_connections.get_ref())),
            |n| count(n.get_ref()),
        ),
        max_connections: count(l.max_connections.get_ref()),
        max_connections_per_address: count(l.max_connections_per_address.get_ref()),
        negotiate_timeout: l.negotiate_timeout.0,
        logon_timeout: l.logon_timeout.0,
        session_setup_timeout: l.session_setup_timeout.0,
        frame_timeout: l.frame_timeout.0,
        send_timeout: l.send_timeout.0,
        idle_timeout: l.idle_timeout.0,
        max_ea_size: size(l.max_ea_size.get_ref()),
        max_security_descriptor_size: size(l.max_security_descriptor_size.get_ref()),
        max_directory_buffer: size(l.max_directory_buffer.get_ref()),
        logon_failure_delay: l.logon_failure_delay.0,
        logon_throttle_after: l.logon_throttle_after,
        logon_throttle_delay: l.logon_throttle_delay.get_ref().0,
        logon_throttle_max_delay: l.logon_throttle_max_delay.0,
        logon_throttle_window: l.logon_throttle_window.0,
    }
}

/// The server for `config`, with `credentials` for logons, serving the shares that can be
/// opened; the health of every configured share.
pub fn build_server(
    config: &Config,
    credentials: Arc<dyn CredentialStore>,
) -> Result<(Arc<Server>, ShareHealth), AnyError> {
    let s = &config.server;
    let NodeState {
        store,
        cluster_opens,
        cluster_locks,
        cluster_dialect,
        cluster_notify,
    } = state_store(config)?;
    let settings = Settings {
        encryption: encryption_policy(s.encrypt),
        ciphers: s
            .ciphers
            .iter()
            .filter_map(|c| Cipher::from_id(c.id()))
            .collect(),
        min_dialect: s.min_dialect.get_ref().revision(),
        max_dialect: s.max_dialect.get_ref().revision(),
        require_signing: s.signing == SigningPolicy::Required,
        multichannel: s.multichannel,
        directory_leases: s.directory_leases,
        max_io_size: *s.max_io_size.get_ref(),
        max_credits: *config.limits.max_credits.get_ref(),
        limits: limits(
            &config.limits,
            crate::descriptors::soft_limit().unwrap_or(SYSTEMD_NOFILE),
        ),
        oplock_break_timeout: Settings::default().oplock_break_timeout,
        state_store: Some(store),
        cluster_opens,
        cluster_locks,
        cluster_dialect,
        cluster_notify,
        clock: Arc::new(SystemClock),
        hosts: crate::reload::host_rules(&s.hosts_allow, &s.hosts_deny),
        map_to_guest: s.map_to_guest == MapToGuest::BadUser,
        guest_account: s.guest_account.clone(),
        kerberos: kerberos_service(config)?.map(Arc::new),
        netlogon: netlogon_client(config)?.map(Arc::new),
        idmap: config.idmap.clone().unwrap_or_default(),
    };
    let host = hostname();
    let identity = ServerIdentity {
        netbios_domain: s.workgroup.to_uppercase(),
        netbios_name: s.server_name.to_uppercase(),
        dns_domain: String::new(),
        dns_name: host.to_lowercase(),
    };
    let (shares, health) = build_shares(config);
    let server = Server::new(
        settings,
        identity,
        credentials,
        smb3d_crypto::default_provider(),
        Vec::new(),
    );
    server.replace_shares(shares);
    server.replace_homes(crate::homes::HomeTemplate::homes(config));
    Ok((server, health))
}

/// The Kerberos acceptor of `[auth]`: its keytab must read and hold a `cifs/` key of the
/// realm, or no Kerberos logon could succeed.
pub fn kerberos_service(config: &Config) -> Result<Option<KerberosService>, String> {
    let Some(auth) = &config.auth else {
        return Ok(None);
    };
    let keytab = Keytab::load(&auth.keytab).map_err(|e| format!("[auth] keytab: {e}"))?;
    if !keytab.has_service(&auth.realm, "cifs") {
        return Err(format!(
            "[auth] keytab {} holds no cifs/<host>@{} key",
            auth.keytab.display(),
            auth.realm
        ));
    }
    Ok(Some(KerberosService::new(auth.realm.clone(), keytab)))
}

/// How long one connect, read or write to the DC may take: a DC that does not answer fails
/// the logon within a few of these, not a hang.
const DC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The Netlogon client of `[auth] dc`: the machine password file must be root's and
/// unreadable by others (it is the machine account's secret), and not empty.
pub fn netlogon_client(
    config: &Config,
) -> Result<Option<smb3d_auth::netlogon::NetlogonClient>, String> {
    let Some(netlogon) = config.auth.as_ref().and_then(|a| a.netlogon.as_ref()) else {
        return Ok(None);
    };
    let path = &netlogon.machine_password_file;
    let what = |e: io::Error| format!("[auth] machine_password_file {}: {e}", path.display());
    let meta = std::fs::metadata(path).map_err(what)?;
    if meta.mode() & 0o077 != 0 || meta.uid() != 0 {
        return Err(format!(
            "[auth] machine_password_file {} must be owned by root with mode 0600",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(what)?;
    let password = text.trim_end_matches(['\n', '\r']);
    if password.is_empty() {
        return Err(format!(
            "[auth] machine_password_file {} is empty",
            path.display()
        ));
    }
    let s = &config.server;
    Ok(Some(smb3d_auth::netlogon::NetlogonClient::new(
        smb3d_auth::netlogon::DcConfig {
            address: netlogon.dc,
            domain: s.workgroup.to_uppercase(),
            computer: s.server_name.to_uppercase(),
            machine_nt_hash: smb3d_auth::ntlm::crypto::nt_hash(password),
            timeout: DC_TIMEOUT,
        },
    )))
}

/// Where a node keeps persistent handles, and a cluster node's view of every node's opens
/// and byte-range locks, of its members' dialects (the dialect fence) and of the directories
/// other nodes watch.
pub struct NodeState {
    pub store: Arc<dyn StateStore>,
    pub cluster_opens: Option<Arc<dyn ClusterOpens>>,
    pub cluster_locks: Option<Arc<dyn ClusterLocks>>,
    pub cluster_dialect: Option<Arc<smb3d_server::ClusterDialect>>,
    pub cluster_notify: Option<Arc<dyn ClusterNotify>>,
}

/// Persistent handles in etcd for a cluster node, else in `state_dir`.
fn state_store(config: &Config) -> Result<NodeState, AnyError> {
    #[cfg(feature = "cluster")]
    if let Some(state) = crate::cluster::join(config)? {
        return Ok(state);
    }
    #[cfg(not(feature = "cluster"))]
    if config.cluster.is_some() {
        return Err(
            "[cluster] is set, but this smb3d was built without the cluster feature".into(),
        );
    }
    Ok(NodeState {
        store: Arc::new(DiskStore::new(config.server.state_dir.clone())),
        cluster_opens: None,
        cluster_locks: None,
        cluster_dialect: None,
        cluster_notify: None,
    })
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// The embedded default: one share, one user with a fresh random password, loopback only.
/// Returns the configuration, the lines to print once the server listens and the demo's own
/// directory, removed when it stops.
fn demo_config(dir: Option<PathBuf>, port: u16) -> Result<(Config, String, PathBuf), AnyError> {
    let state = private_state_dir(&std::env::temp_dir()).map_err(|e| {
        format!(
            "a directory for the demo in {}: {e}",
            std::env::temp_dir().display()
        )
    })?;
    let share_is_temporary = dir.is_none();
    let share_dir = demo_share_dir(dir, &state)?;
    let (db_path, password) = demo_user_db(&state)?;
    let listen = SocketAddr::from(([127, 0, 0, 1], port));
    let text = format!(
        "[server]\nlisten = [\"{listen}\"]\nserver_name = \"SMB3D\"\nuser_db = {db:?}\nadmin_socket = {admin:?}\n\n[share.demo]\npath = {share:?}\n",
        db = db_path.display().to_string(),
        admin = state.join("admin.sock").display().to_string(),
        share = share_dir.display().to_string(),
    );
    let config = Config::parse(&state.join("demo.toml"), &text)?;
    debug_assert_eq!(*config.server.max_dialect.get_ref(), Dialect::Smb311);
    let mut banner = format!(
        "smb3d demo: sharing {} as \"demo\"\nconnect with: smbclient //127.0.0.1/demo -p {port} -U {DEMO_USER}%{password}\nstatus with: smb3d status --socket {}",
        share_dir.display(),
        config.server.admin_socket.display()
    );
    if share_is_temporary {
        banner.push_str(
            "\nthe share goes when the demo stops (Ctrl-C); --dir DIR shares one that stays",
        );
    }
    Ok((config, banner, state))
}

/// The demo's share: the administrator's directory, used as it is, or a new one in `state`.
pub(crate) fn demo_share_dir(dir: Option<PathBuf>, state: &Path) -> io::Result<PathBuf> {
    match dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)?;
            dir.canonicalize()
        }
        None => {
            let dir = state.join("share");
            std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
            Ok(dir)
        }
    }
}

/// A user database in `state` holding the demo user with a fresh random password, mapped to
/// the uid running the demo; returns its path and the password.
pub(crate) fn demo_user_db(state: &Path) -> Result<(PathBuf, String), AnyError> {
    let password = random_password();
    let db_path = state.join("users");
    let mut db = UserDb::new(&db_path);
    db.add_or_update(DEMO_USER, &password, Some(current_uid()))?;
    db.save()?;
    Ok((db_path, password))
}

/// A new directory in `parent`, made as mkdtemp(3) makes one: a random name, mode 0700, and
/// nothing that is already there (a directory, a symlink) taken instead. The demo keeps its
/// user database, share and admin socket in it; at a name known in advance, another local user
/// could have made it first and held all three.
pub(crate) fn private_state_dir(parent: &Path) -> io::Result<PathBuf> {
    // Whoever may rename entries in `parent` could swap the new directory for one of theirs:
    // its owner, and others who may write to it unless it is sticky (as /tmp is).
    let meta = std::fs::metadata(parent)?;
    let owner_is_trusted = meta.uid() == 0 || meta.uid() == current_uid();
    let others_rename = meta.mode() & 0o022 != 0 && meta.mode() & libc::S_ISVTX == 0;
    if !owner_is_trusted || others_rename {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "others may rename what is in it; set TMPDIR to a directory they may not write to",
        ));
    }
    const TRIES: usize = 16;
    for _ in 0..TRIES {
        let mut random = [0u8; 9];
        getrandom::fill(&mut random).map_err(io::Error::other)?;
        let name: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let path = parent.join(format!("smb3d-demo-{name}"));
        // mkdir(2) makes a new entry or fails; it never follows a symlink found at the name.
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => {
                // The umask may have taken bits from the owner too.
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700))?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{TRIES} random names were all taken"),
    ))
}

fn random_password() -> String {
    const ALPHABET: &[u8] = b"abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    bytes
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

fn current_uid() -> u32 {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_missing_ipv6_is_passed_over() {
        for (errno, lacking) in [
            (libc::EAFNOSUPPORT, true),
            (libc::EADDRNOTAVAIL, true),
            (libc::EADDRINUSE, false),
            (libc::EACCES, false),
        ] {
            assert_eq!(
                lacks_ipv6(&io::Error::from_raw_os_error(errno)),
                lacking,
                "{errno}"
            );
        }
    }

    #[test]
    fn private_state_dirs_are_new_and_0700() {
        let parent = tempfile::tempdir().unwrap();
        let first = private_state_dir(parent.path()).unwrap();
        let second = private_state_dir(parent.path()).unwrap();
        assert_ne!(first, second);
        for dir in [first, second] {
            let meta = std::fs::symlink_metadata(&dir).unwrap();
            assert!(meta.is_dir());
            assert_eq!(meta.mode() & 0o7777, 0o700);
        }
    }

    #[test]
    fn a_parent_where_others_may_rename_is_refused() {
        let parent = tempfile::tempdir().unwrap();
        for (mode, refused) in [
            (0o777, true),
            (0o775, true),
            (0o1777, false),
            (0o755, false),
        ] {
            std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(
                private_state_dir(parent.path()).is_err(),
                refused,
                "{mode:o}"
            );
        }
    }
}
