//! `smb3d user add|passwd|del|list|import`.

use std::io::{BufRead, IsTerminal, Read};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use smb3d_auth::UserDb;

use crate::AnyError;

#[derive(Subcommand)]
pub enum UserAction {
    /// Add a user (its uid defaults to the system account of the same name).
    Add {
        /// The user name clients log on with (matched without regard to case).
        name: String,
        /// The Unix uid files are accessed as (default: the system account of the same name).
        #[arg(long)]
        uid: Option<u32>,
        /// Read the password from the first line of standard input instead of prompting.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Change a user's password.
    Passwd {
        /// The user whose password changes.
        name: String,
        /// Read the password from the first line of standard input instead of prompting.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Remove a user.
    Del {
        /// The user to remove.
        name: String,
    },
    /// List the users.
    List,
    /// Add or replace users from smbpasswd lines, as `pdbedit -L -w` prints them, keeping
    /// their NT hashes, uids and flags: `pdbedit -L -w | smb3d user import`. Nothing is
    /// changed if any line is bad; machine and trust accounts are skipped.
    Import {
        /// The file to read; `-` (the default) reads standard input.
        #[arg(default_value = "-")]
        file: PathBuf,
    },
}

pub fn run(action: UserAction, config: &Path, db: Option<PathBuf>) -> Result<(), AnyError> {
    let path = match db {
        Some(path) => path,
        None => crate::config_cmd::load(config)?.server.user_db,
    };
    let exists = path.exists();
    let mut users = if exists {
        UserDb::load(&path)?
    } else {
        UserDb::new(&path)
    };
    match action {
        UserAction::Add {
            name,
            uid,
            password_stdin,
        } => {
            if users
                .list()
                .iter()
                .any(|u| u.name.eq_ignore_ascii_case(&name))
            {
                return Err(format!("user {name} exists; use `smb3d user passwd`").into());
            }
            let password = read_password(password_stdin)?;
            users.add_or_update(&name, &password, uid)?;
            create_parent(&path)?;
            users.save()?;
            println!("added {name}");
        }
        UserAction::Passwd {
            name,
            password_stdin,
        } => {
            if !users
                .list()
                .iter()
                .any(|u| u.name.eq_ignore_ascii_case(&name))
            {
                return Err(format!("no user named {name}").into());
            }
            let password = read_password(password_stdin)?;
            users.add_or_update(&name, &password, None)?;
            users.save()?;
            println!("changed the password of {name}");
        }
        UserAction::Del { name } => {
            users.remove(&name)?;
            users.save()?;
            println!("removed {name}");
        }
        UserAction::Import { file } => {
            let text = read_import(&file)?;
            let source = if file == Path::new("-") {
                "standard input".to_owned()
            } else {
                file.display().to_string()
            };
            let (imported, skipped) = import_lines(&mut users, &text, &source)?;
            create_parent(&path)?;
            users.save()?;
            println!(
                "imported {imported} user(s) into {}{}",
                path.display(),
                if skipped > 0 {
                    format!(", skipped {skipped} machine or trust account(s)")
                } else {
                    String::new()
                }
            );
        }
        UserAction::List => {
            println!("{:<24} {:>8} FLAGS", "NAME", "UID");
            for user in users.list() {
                println!("{:<24} {:>8} [{}]", user.name, user.uid, user.flags);
            }
        }
    }
    Ok(())
}

fn read_import(file: &Path) -> Result<String, AnyError> {
    let mut text = String::new();
    if file == Path::new("-") {
        std::io::stdin().lock().read_to_string(&mut text)?;
    } else {
        text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(text)
}

/// Imports every account line of `text` into `users`, or nothing if a line is bad; returns
/// how many were imported and how many machine or trust accounts were skipped.
fn import_lines(users: &mut UserDb, text: &str, source: &str) -> Result<(usize, usize), AnyError> {
    let mut errors = Vec::new();
    let (mut imported, mut skipped) = (0, 0);
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let flags = line.split(':').nth(4).unwrap_or_default();
        if flags.contains(['W', 'S', 'I']) {
            let name = line.split(':').next().unwrap_or_default();
            eprintln!(
                "{source}:{}: skipping {name}: a machine or trust account",
                index + 1
            );
            skipped += 1;
            continue;
        }
        match users.import_line(line) {
            Ok(_) => imported += 1,
            Err(reason) => errors.push(format!("{source}:{}: {reason}", index + 1)),
        }
    }
    if !errors.is_empty() {
        return Err(format!("nothing imported:\n{}", errors.join("\n")).into());
    }
    if imported == 0 {
        return Err(format!("{source}: no user lines (expected `pdbedit -L -w` output)").into());
    }
    Ok((imported, skipped))
}

fn create_parent(path: &Path) -> std::io::Result<()> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir),
        _ => Ok(()),
    }
}

fn read_password(from_stdin: bool) -> Result<String, AnyError> {
    if from_stdin || !std::io::stdin().is_terminal() {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        let password = line.trim_end_matches(['\r', '\n']).to_owned();
        if password.is_empty() {
            return Err("empty password".into());
        }
        return Ok(password);
    }
    let first = rpassword::prompt_password("New SMB password: ")?;
    let second = rpassword::prompt_password("Retype new SMB password: ")?;
    if first != second {
        return Err("passwords do not match".into());
    }
    if first.is_empty() {
        return Err("empty password".into());
    }
    Ok(first)
}
