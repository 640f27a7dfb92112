//! `smb3d config check` and `smb3d config import-smb-conf`, and the loading of the effective
//! configuration (file plus `SMB3D_*` environment overrides) that every command uses.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Subcommand;
use smb3d_config::{Config, ConfigError, DEFAULT_CONFIG_PATH, is_override_variable};

use crate::AnyError;

#[derive(Subcommand)]
pub enum ConfigAction {
    /// Check a configuration like testparm: print every error with its line, or the effective
    /// settings (file, defaults and SMB3D_* environment overrides) as TOML. Shares are checked
    /// as `serve` opens them: one that cannot be opened, and users or groups the shares name
    /// that do not exist, are warnings (serve starts without such a share).
    Check {
        /// The configuration file.
        #[arg(default_value = DEFAULT_CONFIG_PATH, conflicts_with = "config")]
        file: PathBuf,
        /// The configuration file, as every other command takes it.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Ignore SMB3D_* environment variables: check the file alone.
        #[arg(long)]
        no_env: bool,
        /// Print only errors and warnings, not the effective settings (for systemd's
        /// ExecStartPre, which would put the whole configuration in the journal).
        #[arg(long, short)]
        quiet: bool,
    },
    /// Convert a Samba smb.conf (with its includes) into an smb3d configuration. Every
    /// parameter that does not map is reported on standard error with its file, line and
    /// section.
    ImportSmbConf {
        /// The smb.conf to convert, for example /etc/samba/smb.conf.
        file: PathBuf,
        /// Write the configuration here instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Replace OUTPUT if it exists.
        #[arg(long, requires = "output")]
        force: bool,
    },
}

pub fn run(action: ConfigAction) -> Result<(), AnyError> {
    match action {
        ConfigAction::Check {
            file,
            config,
            no_env,
            quiet,
        } => check(config.as_deref().unwrap_or(&file), no_env, quiet),
        ConfigAction::ImportSmbConf {
            file,
            output,
            force,
        } => import(&file, output.as_deref(), force),
    }
}

/// The `SMB3D_*` variables of this process that override settings, sorted.
fn override_variables() -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> = std::env::vars()
        .filter(|(name, _)| is_override_variable(name))
        .collect();
    vars.sort();
    vars
}

/// The configuration a command works with: the file, then the `SMB3D_*` overrides. A missing
/// file at the default path counts as empty when overrides are set, so that a container can
/// be configured by environment alone.
pub fn load_effective(path: &Path) -> Result<Config, Vec<ConfigError>> {
    let vars = override_variables();
    let base = if !path.exists() && path == Path::new(DEFAULT_CONFIG_PATH) && !vars.is_empty() {
        Config::parse(path, "").map_err(|e| vec![e])?
    } else {
        Config::load_all_errors(path)?
    };
    base.with_env(vars.into_iter()).map_err(|e| vec![e])
}

/// [`load_effective`] with its errors joined into one message, for commands that stop at them.
pub fn load(path: &Path) -> Result<Config, AnyError> {
    load_effective(path).map_err(|errors| {
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        lines.join("\n").into()
    })
}

fn check(file: &Path, no_env: bool, quiet: bool) -> Result<(), AnyError> {
    let result = if no_env {
        Config::load_all_errors(file)
    } else {
        load_effective(file)
    };
    let config = match result {
        Ok(config) => config,
        Err(errors) => {
            for e in &errors {
                eprintln!("{e}");
            }
            return Err(
                format!("{} is not valid: {} error(s)", file.display(), errors.len()).into(),
            );
        }
    };
    let warnings = share_warnings(&config);
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    for note in domain_name_notes(&config) {
        eprintln!("note: {note}");
    }
    // `serve` refuses to start without the keys `[auth]` names: so does the check.
    crate::serve::kerberos_service(&config)
        .map_err(|e| format!("{} is not valid: {e}", file.display()))?;
    if quiet {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "# {} is valid; effective settings:", file.display())?;
    if !warnings.is_empty() {
        writeln!(out, "# {} warning(s) on standard error", warnings.len())?;
    }
    if !no_env {
        for (name, value) in override_variables() {
            writeln!(out, "# from the environment: {name}={value}")?;
        }
    }
    write!(out, "{}", config.to_toml())?;
    Ok(())
}

/// What `serve` would find wrong with a valid configuration: testing-only settings, shares it
/// cannot open (it serves the others without them), and users and groups the shares' lists
/// name that the user database or the system does not have.
pub fn share_warnings(config: &Config) -> Vec<String> {
    let mut warnings: Vec<String> = config.testing_only();
    warnings.extend(config.cluster_only());
    for (name, share) in &config.shares {
        // The home template's path is made per user at their first connect.
        if smb3d_config::is_homes(name) {
            continue;
        }
        if let Err(why) =
            crate::reload::build_share(name, share, &config.server, config.cluster.is_some())
        {
            warnings.push(format!("{why}: smb3d serve leaves this share out"));
        }
    }
    let users = smb3d_auth::UserDb::load(&config.server.user_db);
    if let Err(e) = &users {
        warnings.push(format!(
            "user database: {e}; the users that shares name are not checked"
        ));
    }
    // Guest and anonymous logons fail while the account they act as is missing.
    if let Some(account) = &config.server.guest_account {
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        if !passwd.lines().any(|l| l.split(':').next() == Some(account)) {
            warnings.push(format!(
                "server.guest_account {account:?} is not a Unix user (/etc/passwd): guest and \
                 anonymous logons fail until it exists"
            ));
        }
    }
    let groups = std::fs::read_to_string("/etc/group").unwrap_or_default();
    let group_exists = |group: &str| {
        groups
            .lines()
            .filter_map(|l| l.split(':').next())
            .any(|g| g == group || smb3d_auth::names::same(g, group))
    };
    for (name, share) in &config.shares {
        for (option, list) in [
            ("valid_users", &share.valid_users),
            ("read_list", &share.read_list),
            ("write_list", &share.write_list),
            ("invalid_users", &share.invalid_users),
            ("admin_users", &share.admin_users),
        ] {
            for entry in list {
                if smb3d_config::is_homes(name) && (entry == "%S" || entry == "%U") {
                    continue;
                }
                // Domain accounts (DOMAIN\name) and SIDs are the DC's, not local ones.
                let bare = entry.strip_prefix(['@', '+']).unwrap_or(entry);
                if bare.contains('\\') || bare.starts_with("S-1-") {
                    continue;
                }
                let problem = match entry.strip_prefix(['@', '+']) {
                    Some(group) if !group_exists(group) => {
                        format!("{group} is not a Unix group (/etc/group)")
                    }
                    Some(_) => continue,
                    None => match &users {
                        Ok(db) if db.user(entry).is_none() => format!(
                            "{entry} is not in the user database {}",
                            config.server.user_db.display()
                        ),
                        _ => continue,
                    },
                };
                warnings.push(format!(
                    "share {name}: {option} names {entry:?}, but {problem}"
                ));
            }
        }
    }
    warnings
}

/// How the shares' lists treat names of a domain (`DOMAIN\\name`, `@DOMAIN\\group`): those of
/// the DC's domain are resolved through the DC and fail closed while it cannot answer; others
/// match only a session of that very name (docs/auth.md, "Share user lists").
pub fn domain_name_notes(config: &Config) -> Vec<String> {
    let dc = config.auth.as_ref().and_then(|a| a.netlogon.as_ref());
    let mut notes = Vec::new();
    for (name, share) in &config.shares {
        for (option, list, unresolved) in [
            (
                "valid_users",
                &share.valid_users,
                "admits no domain user by it",
            ),
            (
                "read_list",
                &share.read_list,
                "makes the share read-only for every domain user",
            ),
            (
                "write_list",
                &share.write_list,
                "gives no domain user write access by it",
            ),
            (
                "invalid_users",
                &share.invalid_users,
                "refuses every domain user",
            ),
            (
                "admin_users",
                &share.admin_users,
                "makes no domain user an admin by it",
            ),
        ] {
            for entry in list {
                let bare = entry.strip_prefix(['@', '+']).unwrap_or(entry);
                let Some((domain, _)) = bare.split_once('\\') else {
                    continue;
                };
                let note = if dc.is_some() && domain.eq_ignore_ascii_case(&config.server.workgroup)
                {
                    format!(
                        "resolved to its SID through the DC at {} (LsarLookupNames4) when a \
                         client connects, kept 10 minutes; while the DC cannot resolve it the \
                         entry {unresolved} (local users are unaffected)",
                        dc.map(|n| n.dc.to_string()).unwrap_or_default()
                    )
                } else if bare.len() < entry.len() {
                    format!("no DC of {domain} is configured ([auth] dc): it matches nobody")
                } else {
                    format!(
                        "no DC of {domain} is configured ([auth] dc): it matches only a session \
                         of that very name"
                    )
                };
                notes.push(format!("share {name}: {option} names {entry:?}: {note}"));
            }
        }
    }
    notes
}

fn import(file: &Path, output: Option<&Path>, force: bool) -> Result<(), AnyError> {
    let imported = smb3d_config::smbconf::import(file)?;
    for warning in &imported.warnings {
        eprintln!("warning: {warning}");
    }
    let text = imported.to_toml();
    match output {
        None => print!("{text}"),
        Some(path) => {
            let mut options = std::fs::OpenOptions::new();
            options.write(true);
            if force {
                options.create(true).truncate(true);
            } else {
                options.create_new(true);
            }
            let mut f = options.open(path).map_err(|e| {
                format!(
                    "{}: {e}{}",
                    path.display(),
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        " (use --force to replace it)"
                    } else {
                        ""
                    }
                )
            })?;
            f.write_all(text.as_bytes())?;
            eprintln!(
                "wrote {} ({} share(s), {} warning(s)); check it with `smb3d config check {}`",
                path.display(),
                imported.config.shares.len(),
                imported.warnings.len(),
                path.display()
            );
        }
    }
    Ok(())
}
