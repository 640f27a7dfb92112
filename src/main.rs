//! `smb3d`: serve SMB2/SMB3 shares, manage users, check the configuration.

mod credentials;
mod serve;
mod users;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use smb3d_config::DEFAULT_CONFIG_PATH;

#[derive(Parser)]
#[command(
    name = "smb3d",
    version,
    about = "A memory-safe, fast SMB2/SMB3 file server"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server.
    Serve(serve::ServeArgs),
    /// Manage the user database.
    User {
        #[command(subcommand)]
        action: users::UserAction,
        /// Configuration file naming the user database.
        #[arg(long, short, default_value = DEFAULT_CONFIG_PATH)]
        config: PathBuf,
        /// The user database itself, instead of the one the configuration names.
        #[arg(long)]
        db: Option<PathBuf>,
    },
    /// Inspect shares.
    Share {
        #[command(subcommand)]
        action: ShareAction,
        #[arg(long, short, default_value = DEFAULT_CONFIG_PATH)]
        config: PathBuf,
    },
    /// Check the configuration.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
}

#[derive(Subcommand)]
enum ShareAction {
    /// List the configured shares.
    List,
}

#[derive(Subcommand)]
enum ConfigAction {
    /// Parse and check a configuration file, then print the effective settings.
    Check {
        #[arg(default_value = DEFAULT_CONFIG_PATH)]
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::User { action, config, db } => users::run(action, &config, db),
        Command::Share {
            action: ShareAction::List,
            config,
        } => share_list(&config),
        Command::Config {
            action: ConfigAction::Check { file },
        } => config_check(&file),
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
    let config = smb3d_config::Config::load(config)?;
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
        if !share.valid_users.is_empty() {
            options.push(format!("users={}", share.valid_users.join(",")));
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

fn config_check(file: &std::path::Path) -> Result<(), AnyError> {
    let config = smb3d_config::Config::load(file)?;
    let s = &config.server;
    println!("# {} is valid; effective settings:", file.display());
    println!("[server]");
    let listen: Vec<String> = s.listen.iter().map(|a| format!("\"{a}\"")).collect();
    println!("listen = [{}]", listen.join(", "));
    println!("server_name = {:?}", s.server_name);
    println!("workgroup = {:?}", s.workgroup);
    println!("min_dialect = \"{}\"", s.min_dialect.get_ref().as_str());
    println!("max_dialect = \"{}\"", s.max_dialect.get_ref().as_str());
    println!("signing = \"{}\"", signing_name(s.signing));
    println!("encrypt = \"{}\"", encrypt_name(s.encrypt));
    let ciphers: Vec<String> = s
        .ciphers
        .iter()
        .map(|c| format!("\"{}\"", c.as_str()))
        .collect();
    println!("ciphers = [{}]", ciphers.join(", "));
    println!("user_db = {:?}", s.user_db.display().to_string());
    println!("max_io_size = {}", s.max_io_size.get_ref());
    for (name, share) in &config.shares {
        println!();
        println!("[share.{name:?}]");
        println!("path = {:?}", share.path.get_ref().display().to_string());
        println!("comment = {:?}", share.comment);
        println!("read_only = {}", share.read_only);
        println!("valid_users = {:?}", share.valid_users);
        println!("browseable = {}", share.browseable);
        println!("guest_ok = {}", share.guest_ok);
        println!(
            "encrypt = \"{}\"",
            encrypt_name(share.encrypt.unwrap_or(s.encrypt))
        );
        println!("signing = \"{}\"", signing_name(share.signing));
    }
    Ok(())
}

fn signing_name(policy: smb3d_config::SigningPolicy) -> &'static str {
    match policy {
        smb3d_config::SigningPolicy::Auto => "auto",
        smb3d_config::SigningPolicy::Required => "required",
    }
}

fn encrypt_name(policy: smb3d_config::EncryptPolicy) -> &'static str {
    match policy {
        smb3d_config::EncryptPolicy::Off => "off",
        smb3d_config::EncryptPolicy::Auto => "auto",
        smb3d_config::EncryptPolicy::Desired => "desired",
        smb3d_config::EncryptPolicy::Required => "required",
    }
}
