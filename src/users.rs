//! `smb3d user add|passwd|del|list|show|disable|enable|import`.

use std::io::{BufRead, IsTerminal, Read};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use smb3d_auth::{UserDb, UserDbError};

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
    /// Show one user: uid, account flags, whether it may log on, last password change.
    Show {
        /// The user to show.
        name: String,
    },
    /// Disable a user: its logons are refused until it is enabled again.
    ///
    /// A logon with the right password is answered STATUS_ACCOUNT_DISABLED, as Samba answers
    /// it; the password and the sessions already logged on are kept (`smb3d close-session`
    /// ends those).
    Disable {
        /// The user to disable.
        name: String,
    },
    /// Enable a disabled user again.
    Enable {
        /// The user to enable.
        name: String,
    },
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
            users
                .add_or_update(&name, &password, uid)
                .map_err(|e| match e {
                    UserDbError::NoUid(_) => format!(
                        "{e}; give the uid its files are accessed as with --uid (for example \
                         `smb3d user add {name} --uid 1000`), or create the system account first"
                    )
                    .into(),
                    e => AnyError::from(e),
                })?;
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
        UserAction::Show { name } => {
            let user = users
                .user(&name)
                .ok_or_else(|| format!("no user named {name} in {}", path.display()))?;
            print!("{}", show(&user));
        }
        UserAction::Disable { name } => {
            let changed = users.set_disabled(&name, true)?;
            users.save()?;
            println!(
                "{}",
                if changed {
                    format!("disabled {name}; its logons are refused")
                } else {
                    format!("{name} was already disabled")
                }
            );
        }
        UserAction::Enable { name } => {
            let changed = users.set_disabled(&name, false)?;
            users.save()?;
            println!(
                "{}",
                if changed {
                    format!("enabled {name}")
                } else {
                    format!("{name} was not disabled")
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

/// What smbpasswd(5) account flags mean, for the flags `smb3d user show` explains.
const FLAG_MEANINGS: &[(char, &str)] = &[
    ('U', "normal user"),
    ('D', "disabled"),
    ('N', "no password (cannot log on here)"),
    ('X', "password never expires"),
    ('L', "locked out"),
    ('H', "home directory required"),
    ('T', "temporary duplicate"),
    ('M', "MNS logon account"),
];

/// `smb3d user show`'s lines, as `pdbedit -v` names the fields.
fn show(user: &smb3d_auth::userdb::UserInfo) -> String {
    let meanings: Vec<&str> = user
        .flags
        .chars()
        .filter_map(|c| FLAG_MEANINGS.iter().find(|(f, _)| *f == c).map(|(_, m)| *m))
        .collect();
    let may_log_on = !user.flags.contains(['D', 'N']);
    format!(
        "Unix username:        {}\nUnix uid:             {}\nAccount Flags:        [{}] ({})\n\
         Logons allowed:       {}\nPassword last set:    {}\n",
        user.name,
        user.uid,
        user.flags,
        meanings.join(", "),
        if may_log_on { "yes" } else { "no" },
        crate::status::date_time(
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(u64::from(user.last_change))
        ),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_explains_the_flags() {
        let user = smb3d_auth::userdb::UserInfo {
            name: "bench".into(),
            uid: 1001,
            flags: "DU".into(),
            last_change: 0x6B02_46E4,
        };
        let text = show(&user);
        assert!(text.contains("Unix uid:             1001\n"), "{text}");
        assert!(text.contains("[DU] (disabled, normal user)"), "{text}");
        assert!(text.contains("Logons allowed:       no\n"), "{text}");
        assert!(text.contains("Password last set:    2026-11-22 "), "{text}");
        let enabled = smb3d_auth::userdb::UserInfo {
            flags: "U".into(),
            ..user
        };
        assert!(show(&enabled).contains("Logons allowed:       yes\n"));
    }
}
