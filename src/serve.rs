//! `smb3d serve`: from a configuration file, or `--demo` with an embedded default.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use smb3d_auth::{ServerIdentity, UserDb};
use smb3d_config::{Config, DEFAULT_CONFIG_PATH, Dialect, EncryptPolicy, SigningPolicy};
use smb3d_crypto::Cipher;
use smb3d_server::share::Share;
use smb3d_server::{EncryptionPolicy, Server, Settings};
use smb3d_vfs_posix::PosixVfs;

use crate::AnyError;
use crate::credentials::ReloadingUserDb;

/// Port of the demo server unless `--port` says otherwise.
const DEMO_PORT: u16 = 4445;
const DEMO_USER: &str = "demo";

#[derive(Args)]
pub struct ServeArgs {
    /// Configuration file.
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
    init_logging();
    let (config, banner) = if args.demo {
        demo_config(args.dir, args.port.unwrap_or(DEMO_PORT))?
    } else {
        (Config::load(&args.config)?, None)
    };
    let server = build_server(&config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listeners = smb3d_transport::bind(&config.server.listen).await?;
        for addr in &config.server.listen {
            tracing::info!("listening on {addr}");
        }
        if let Some(banner) = banner {
            println!("{banner}");
        }
        smb3d_transport::serve(
            listeners,
            server,
            smb3d_transport::TransportConfig::default(),
            async {
                let _ = tokio::signal::ctrl_c().await;
            },
        )
        .await?;
        tracing::info!("stopped");
        Ok(())
    })
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SMB3D_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

fn build_server(config: &Config) -> Result<Arc<Server>, AnyError> {
    let s = &config.server;
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
        max_io_size: *s.max_io_size.get_ref(),
        ..Settings::default()
    };
    let host = hostname();
    let identity = ServerIdentity {
        netbios_domain: s.workgroup.to_uppercase(),
        netbios_name: s.server_name.to_uppercase(),
        dns_domain: String::new(),
        dns_name: host.to_lowercase(),
    };
    let credentials = Arc::new(
        ReloadingUserDb::open(s.user_db.clone())
            .map_err(|e| format!("user database: {e} (create it with `smb3d user add NAME`)"))?,
    );
    let mut shares = vec![Share::ipc()];
    for (name, share) in &config.shares {
        let path = share.path.get_ref();
        let vfs =
            PosixVfs::new(path).map_err(|e| format!("share {name}: {}: {e}", path.display()))?;
        shares.push(Share {
            name: name.clone(),
            comment: share.comment.clone(),
            path: path.display().to_string(),
            read_only: share.read_only,
            valid_users: share.valid_users.clone(),
            read_list: share.read_list.clone(),
            write_list: share.write_list.clone(),
            force_user: share.force_user.clone(),
            force_group: share.force_group.clone(),
            browseable: share.browseable,
            guest_ok: share.guest_ok,
            encryption: encryption_policy(share.encrypt.unwrap_or(s.encrypt)),
            require_signing: share.signing == SigningPolicy::Required,
            create_mask: share.create_mask,
            directory_mask: share.directory_mask,
            hide_unreadable: share.hide_unreadable,
            access_based_share_enum: share.access_based_share_enum,
            ..Share::disk(name.clone(), Arc::new(vfs))
        });
        if let Some(share) = shares.last() {
            share
                .check_forced_accounts()
                .map_err(|e| format!("share {name}: {e}"))?;
        }
    }
    Ok(Server::new(
        settings,
        identity,
        credentials,
        smb3d_crypto::default_provider(),
        shares,
    ))
}

fn encryption_policy(policy: EncryptPolicy) -> EncryptionPolicy {
    match policy {
        EncryptPolicy::Off => EncryptionPolicy::Off,
        EncryptPolicy::Auto => EncryptionPolicy::Auto,
        EncryptPolicy::Desired => EncryptionPolicy::Desired,
        EncryptPolicy::Required => EncryptionPolicy::Required,
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

/// The embedded default: one share, one user with a fresh random password, loopback only.
/// Returns the configuration and the lines to print once the server listens.
fn demo_config(dir: Option<PathBuf>, port: u16) -> Result<(Config, Option<String>), AnyError> {
    let state = std::env::temp_dir().join(format!("smb3d-demo-{}", std::process::id()));
    std::fs::create_dir_all(&state)?;
    let share_dir = match dir {
        Some(dir) => {
            std::fs::create_dir_all(&dir)?;
            dir.canonicalize()?
        }
        None => {
            let dir = state.join("share");
            std::fs::create_dir_all(&dir)?;
            dir
        }
    };
    let password = random_password();
    let db_path = state.join("users");
    let mut db = UserDb::new(&db_path);
    db.add_or_update(DEMO_USER, &password, Some(current_uid()))?;
    db.save()?;
    let listen = SocketAddr::from(([127, 0, 0, 1], port));
    let text = format!(
        "[server]\nlisten = [\"{listen}\"]\nserver_name = \"SMB3D\"\nuser_db = {db:?}\n\n[share.demo]\npath = {share:?}\n",
        db = db_path.display().to_string(),
        share = share_dir.display().to_string(),
    );
    let config = Config::parse(&state.join("demo.toml"), &text)?;
    debug_assert_eq!(*config.server.max_dialect.get_ref(), Dialect::Smb311);
    let banner = format!(
        "smb3d demo: sharing {} as \"demo\"\nconnect with: smbclient //127.0.0.1/demo -p {port} -U {DEMO_USER}%{password}",
        share_dir.display()
    );
    Ok((config, Some(banner)))
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
