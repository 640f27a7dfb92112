//! `smb3d`: serve SMB2/SMB3 shares, manage users, check and import the configuration.

mod admin_socket;
mod allocator;
#[cfg(feature = "cluster")]
mod cluster;
#[cfg(feature = "cluster")]
mod cluster_demo;
mod config_cmd;
mod credentials;
mod ctl;
mod descriptors;
mod homes;
mod idmap_cmd;
mod kernel_leases;
mod logging;
mod manual;
mod metrics_http;
#[cfg(feature = "cluster")]
mod public_addresses;
mod reload;
mod serve;
mod status;
pub mod systemd;
mod users;
#[cfg(feature = "cluster")]
mod witness;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand};
use smb3d_config::DEFAULT_CONFIG_PATH;

#[derive(Parser)]
#[command(
    name = "smb3d",
    version,
    about = "A memory-safe, fast SMB2/SMB3 file server",
    long_about = "A memory-safe, fast SMB2/SMB3 file server for Linux: it serves the shares of \
                  its configuration to Windows, macOS and Linux clients (SMB 2.0.2 to 3.1.1, \
                  NTLMv2, signing and encryption), with its own user database in Samba's \
                  smbpasswd format, and converts a Samba smb.conf.",
    after_long_help = "Files: /etc/smb3d/smb3d.toml (the configuration; smb3d config check \
                       explains it), /var/lib/smb3d/users (the user database), \
                       /run/smb3d/admin.sock (the admin socket of status, reload and debug). \
                       SMB3D_LOG sets the log filter, SMB3D_* variables override settings. \
                       More in /usr/share/doc/smb3d (operations.md) and the README."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server.
    Serve(serve::ServeArgs),
    /// Manage the user database (smbpasswd format, NT hashes only).
    User {
        #[command(subcommand)]
        action: users::UserAction,
        /// Configuration file naming the user database (SMB3D_USER_DB overrides it).
        #[arg(long, short, global = true, default_value = DEFAULT_CONFIG_PATH)]
        config: PathBuf,
        /// The user database itself, instead of the one the configuration names.
        #[arg(long, global = true)]
        db: Option<PathBuf>,
    },
    /// Map Active Directory SIDs to Unix ids and back with the configuration's `[idmap]`
    /// ranges (the answer every server configured alike gives).
    Idmap {
        #[command(subcommand)]
        action: idmap_cmd::IdmapAction,
        /// Configuration file with the [idmap] section.
        #[arg(long, short, global = true, default_value = DEFAULT_CONFIG_PATH)]
        config: PathBuf,
    },
    /// Inspect shares.
    Share {
        #[command(subcommand)]
        action: ShareAction,
        /// Configuration file (SMB3D_SHARE_<NAME> variables add to it).
        #[arg(long, short, global = true, default_value = DEFAULT_CONFIG_PATH)]
        config: PathBuf,
    },
    /// Check the configuration or convert a Samba smb.conf.
    Config {
        #[command(subcommand)]
        action: config_cmd::ConfigAction,
    },
    /// Show the running server's sessions, tree connects, open files and byte-range locks.
    ///
    /// Like smbstatus: -p, -S, -L and -B pick those sections, -u one user's.
    Status {
        /// Print the report as JSON, with smbstatus --json's keys where they map.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        filter: ctl::StatusFilter,
        #[command(flatten)]
        target: ctl::Target,
    },
    /// Show or change the running server's log level (as smbcontrol smbd debug).
    ///
    /// LEVEL is a Samba debug level (0 errors, 1 warnings, 2-3 info, 4-9 debug, 10 trace), a
    /// filter as SMB3D_LOG takes it (smb3d_server=debug,info), or `reset` for the level the
    /// server started with. It lasts until the server stops.
    Debug {
        /// The new level; without it the current one is shown.
        level: Option<String>,
        #[command(flatten)]
        target: ctl::Target,
    },
    /// Make the running server reread its configuration (as SIGHUP does), and show what
    /// changed or why the configuration was refused.
    Reload {
        #[command(flatten)]
        target: ctl::Target,
    },
    /// Log a session off (its opens are closed); `smb3d status` shows the ids.
    CloseSession {
        /// The session id.
        id: String,
        #[command(flatten)]
        target: ctl::Target,
    },
    /// Close one open file handle; `smb3d status` shows the ids.
    CloseFile {
        /// The open's id (share_file_id in the JSON report).
        id: String,
        #[command(flatten)]
        target: ctl::Target,
    },
    /// Disconnect every tree connect of a share (as `smbcontrol smbd close-share`); clients
    /// that use it again connect again.
    CloseShare {
        /// The share's name (a home share's is its user's).
        name: String,
        #[command(flatten)]
        target: ctl::Target,
    },
    /// Show the cluster this node's configuration names, or start a demo cluster
    /// (docs/cluster.md).
    #[cfg(feature = "cluster")]
    Cluster {
        #[command(subcommand)]
        action: cluster::ClusterAction,
        /// Configuration file with the [cluster] section.
        #[arg(long, short, global = true, default_value = DEFAULT_CONFIG_PATH)]
        config: PathBuf,
    },
    /// Write the manual pages of smb3d and of each subcommand (smb3d.8, smb3d-serve.8, ...).
    Manpages {
        /// The directory to write them into, for example /usr/local/share/man/man8.
        dir: PathBuf,
    },
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand)]
enum ShareAction {
    /// List the configured shares.
    List,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::User { action, config, db } => users::run(action, &config, db),
        Command::Idmap { action, config } => idmap_cmd::run(action, &config),
        Command::Share {
            action: ShareAction::List,
            config,
        } => share_list(&config),
        Command::Config { action } => config_cmd::run(action),
        Command::Status {
            json,
            filter,
            target,
        } => ctl::status(&target, json, &filter),
        Command::Debug { level, target } => ctl::debug(&target, level.as_deref()),
        Command::Reload { target } => ctl::reload(&target),
        Command::CloseSession { id, target } => ctl::close_session(&target, &id),
        Command::CloseFile { id, target } => ctl::close_file(&target, &id),
        Command::CloseShare { name, target } => ctl::close_share(&target, &name),
        #[cfg(feature = "cluster")]
        Command::Cluster { action, config } => cluster::run(action, &config),
        Command::Manpages { dir } => manual::manpages(Cli::command(), &dir).map(|pages| {
            println!(
                "wrote {} manual page(s) into {}",
                pages.len(),
                dir.display()
            );
        }),
        Command::Completions { shell } => {
            manual::completions(&mut Cli::command(), shell);
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("smb3d: {e}");
            ExitCode::FAILURE
        }
    }
}

type AnyError = Box<dyn std::error::Error>;

fn share_list(config: &std::path::Path) -> Result<(), AnyError> {
    let config = config_cmd::load(config)?;
    println!("{:<20} {:<40} OPTIONS", "NAME", "PATH");
    for (name, share) in &config.shares {
        let mut options = Vec::new();
        if share.read_only {
            options.push("read-only".to_owned());
        }
        if !share.browseable {
            options.push("hidden".to_owned());
        }
        if share.guest_ok {
            options.push("guest".to_owned());
        }
        for (label, list) in [
            ("users", &share.valid_users),
            ("read_list", &share.read_list),
            ("write_list", &share.write_list),
        ] {
            if !list.is_empty() {
                options.push(format!("{label}={}", list.join(",")));
            }
        }
        for (label, account) in [
            ("force_user", &share.force_user),
            ("force_group", &share.force_group),
        ] {
            if let Some(account) = account {
                options.push(format!("{label}={account}"));
            }
        }
        println!(
            "{:<20} {:<40} {}",
            name,
            share.path.get_ref().display(),
            options.join(" ")
        );
    }
    Ok(())
}
