//! `smb3d user add|passwd|del|list`.

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use smb3d_auth::UserDb;

use crate::AnyError;

#[derive(Subcommand)]
pub enum UserAction {
    /// Add a user (its uid defaults to the system account of the same name).
    Add {
        name: String,
        #[arg(long)]
        uid: Option<u32>,
        /// Read the password from the first line of standard input instead of prompting.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Change a user's password.
    Passwd {
        name: String,
        #[arg(long)]
        password_stdin: bool,
    },
    /// Remove a user.
    Del { name: String },
    /// List the users.
    List,
}

pub fn run(action: UserAction, config: &Path, db: Option<PathBuf>) -> Result<(), AnyError> {
    let path = match db {
        Some(path) => path,
        None => smb3d_config::Config::load(config)?.server.user_db,
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
        UserAction::List => {
            println!("{:<24} {:>8} FLAGS", "NAME", "UID");
            for user in users.list() {
                println!("{:<24} {:>8} [{}]", user.name, user.uid, user.flags);
            }
        }
    }
    Ok(())
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
