//! The user database: a file in Samba's smbpasswd format (smbpasswd(5)), one user a line:
//!
//! ```text
//! name:uid:LMHASH:NTHASH:[U          ]:LCT-XXXXXXXX:
//! ```
//!
//! so that `pdbedit -L -w` output imports unchanged. LM hashes are never stored: the LM field is
//! written as 32 `X` and ignored on reading.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use zeroize::Zeroizing;

use crate::CredentialStore;
use crate::ntlm::crypto;

/// The longest user name accepted, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Permission bits that must be clear on the database file: nothing for group or others.
const FORBIDDEN_MODE_BITS: u32 = 0o077;
/// The LM hash field as written: LM is never stored.
const NO_LM_HASH: &str = "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX";
/// Width of the account flags between the brackets (smbpasswd(5)).
const FLAGS_WIDTH: usize = 11;

/// Why the user database could not be read, changed or written.
#[derive(Debug, thiserror::Error)]
pub enum UserDbError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: readable by group or others (mode {mode:o}); it must be 0600 or stricter")]
    Permissions { path: PathBuf, mode: u32 },
    #[error("{path}:{line}: {reason}")]
    Parse {
        path: PathBuf,
        line: usize,
        reason: &'static str,
    },
    #[error("invalid user name: {0}")]
    InvalidName(&'static str),
    #[error("no uid given and no system account named {0}")]
    NoUid(String),
    #[error("no user named {0}")]
    NoSuchUser(String),
}

/// One account.
#[derive(Clone, PartialEq, Eq)]
struct Entry {
    name: String,
    uid: u32,
    nt_hash: Zeroizing<[u8; 16]>,
    /// The account flags as written between the brackets, without padding ("U", "DU", …).
    flags: String,
    /// Last change time, seconds since 1970 (the LCT- field).
    last_change: u32,
}

impl Entry {
    /// Accounts flagged D (disabled) may not log on; neither may the no-password (N) ones,
    /// whose stored hash means nothing.
    fn may_log_on(&self) -> bool {
        !self.flags.contains('D') && !self.flags.contains('N')
    }
}

/// A listed user, without its secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: u32,
    /// Account flags as in smbpasswd(5): U user, D disabled, X password never expires, …
    pub flags: String,
    /// Seconds since 1970 of the last password change.
    pub last_change: u32,
}

/// The smbpasswd-format user database, kept in memory and written back atomically.
pub struct UserDb {
    path: PathBuf,
    /// Keyed by the lower-cased name, since names match case-insensitively.
    users: BTreeMap<String, Entry>,
}

/// The key names are matched by.
fn fold(name: &str) -> String {
    name.to_lowercase()
}

/// Checks a user name: 1 to 64 characters, no `:` (the field separator), no control characters.
pub fn validate_name(name: &str) -> Result<(), UserDbError> {
    if name.is_empty() {
        return Err(UserDbError::InvalidName("empty"));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(UserDbError::InvalidName("longer than 64 characters"));
    }
    if name.contains(':') {
        return Err(UserDbError::InvalidName("contains ':'"));
    }
    if name.chars().any(char::is_control) {
        return Err(UserDbError::InvalidName("contains a control character"));
    }
    Ok(())
}

fn parse_hex16(s: &str) -> Option<[u8; 16]> {
    if s.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (byte, pair) in out.iter_mut().zip(s.as_bytes().chunks_exact(2)) {
        let text = core::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(text, 16).ok()?;
    }
    Some(out)
}

/// Parses one smbpasswd line.
fn parse_line(line: &str) -> Result<Entry, &'static str> {
    let mut fields = line.split(':');
    let mut next = |what: &'static str| fields.next().ok_or(what);
    let name = next("missing user name")?;
    let uid = next("missing uid")?;
    let lm = next("missing LM hash field")?;
    let nt = next("missing NT hash field")?;
    let flags = next("missing account flags")?;
    let lct = next("missing last change time")?;
    validate_name(name).map_err(|e| match e {
        UserDbError::InvalidName(reason) => reason,
        _ => "invalid user name",
    })?;
    let uid = uid.parse::<u32>().map_err(|_| "uid is not a number")?;
    if lm.len() != 32 || !lm.bytes().all(|b| b == b'X' || b.is_ascii_hexdigit()) {
        return Err("LM hash field is not 32 hex digits or X");
    }
    let nt_hash = parse_hex16(nt).ok_or("NT hash is not 32 hex digits")?;
    let flags = flags
        .strip_prefix('[')
        .and_then(|f| f.strip_suffix(']'))
        .ok_or("account flags are not in brackets")?;
    if !flags.bytes().all(|b| b.is_ascii_uppercase() || b == b' ') {
        return Err("account flags hold something other than letters");
    }
    let last_change = lct
        .strip_prefix("LCT-")
        .and_then(|hex| u32::from_str_radix(hex, 16).ok())
        .ok_or("last change time is not LCT- and hex digits")?;
    Ok(Entry {
        name: name.to_owned(),
        uid,
        nt_hash: Zeroizing::new(nt_hash),
        flags: flags.trim_end().to_owned(),
        last_change,
    })
}

/// Looks a user's uid up in the system's passwd file.
fn system_uid(name: &str) -> Option<u32> {
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let mut f = line.split(':');
        (f.next()? == name).then_some(())?;
        f.nth(1)?.parse().ok()
    })
}

fn unix_now() -> u32 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    u32::try_from(secs).unwrap_or(u32::MAX)
}

impl UserDb {
    /// An empty database that [`UserDb::save`] will write to `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            users: BTreeMap::new(),
        }
    }

    /// Reads the database at `path`. Refuses a file that group or others may read or write,
    /// and names the line of the first bad entry. Empty lines and `#` comments are skipped.
    pub fn load(path: impl Into<PathBuf>) -> Result<Self, UserDbError> {
        let path = path.into();
        let io_err = |source| UserDbError::Io {
            path: path.clone(),
            source,
        };
        let mut file = File::open(&path).map_err(io_err)?;
        // Checked on the open file, so the file read is the file checked.
        let mode = file.metadata().map_err(io_err)?.permissions().mode();
        if mode & FORBIDDEN_MODE_BITS != 0 {
            return Err(UserDbError::Permissions {
                path,
                mode: mode & 0o7777,
            });
        }
        let mut text = Zeroizing::new(String::new());
        file.read_to_string(&mut text).map_err(io_err)?;
        let mut users = BTreeMap::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let parse_error = |reason| UserDbError::Parse {
                path: path.clone(),
                line: index + 1,
                reason,
            };
            let entry = parse_line(line).map_err(parse_error)?;
            if users.insert(fold(&entry.name), entry).is_some() {
                return Err(parse_error("user listed twice"));
            }
        }
        Ok(Self { path, users })
    }

    /// Sets `name`'s password (stored as its NT hash, MD4 of the UTF-16LE password), adding the
    /// user if new. `uid` None keeps an existing user's uid, and for a new user takes the uid of
    /// the system account of that name.
    pub fn add_or_update(
        &mut self,
        name: &str,
        password: &str,
        uid: Option<u32>,
    ) -> Result<(), UserDbError> {
        validate_name(name)?;
        let nt_hash = crypto::nt_hash(password);
        let last_change = unix_now();
        match self.users.get_mut(&fold(name)) {
            Some(entry) => {
                entry.nt_hash = nt_hash;
                entry.last_change = last_change;
                if let Some(uid) = uid {
                    entry.uid = uid;
                }
            }
            None => {
                let uid = match uid {
                    Some(uid) => uid,
                    None => system_uid(name).ok_or_else(|| UserDbError::NoUid(name.to_owned()))?,
                };
                self.users.insert(
                    fold(name),
                    Entry {
                        name: name.to_owned(),
                        uid,
                        nt_hash,
                        flags: "U".to_owned(),
                        last_change,
                    },
                );
            }
        }
        Ok(())
    }

    /// Removes `name`.
    pub fn remove(&mut self, name: &str) -> Result<(), UserDbError> {
        self.users
            .remove(&fold(name))
            .map(|_| ())
            .ok_or_else(|| UserDbError::NoSuchUser(name.to_owned()))
    }

    /// The users, ordered by name, without their hashes.
    pub fn list(&self) -> Vec<UserInfo> {
        self.users
            .values()
            .map(|e| UserInfo {
                name: e.name.clone(),
                uid: e.uid,
                flags: e.flags.clone(),
                last_change: e.last_change,
            })
            .collect()
    }

    /// The database in smbpasswd format.
    fn render(&self) -> Zeroizing<String> {
        let mut out = Zeroizing::new(String::new());
        for e in self.users.values() {
            let mut nt = String::with_capacity(32);
            for b in e.nt_hash.iter() {
                let _ = write!(nt, "{b:02X}");
            }
            let _ = writeln!(
                out,
                "{}:{}:{}:{}:[{:<width$}]:LCT-{:08X}:",
                e.name,
                e.uid,
                NO_LM_HASH,
                nt,
                e.flags,
                e.last_change,
                width = FLAGS_WIDTH
            );
        }
        out
    }

    /// Writes the database back atomically: a new file with mode 0600 in the same directory,
    /// flushed to disk, then renamed over the old one (and the directory flushed).
    pub fn save(&self) -> Result<(), UserDbError> {
        let io_err = |source| UserDbError::Io {
            path: self.path.clone(),
            source,
        };
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let file_name = self
            .path
            .file_name()
            .ok_or_else(|| io_err(io::Error::from(io::ErrorKind::InvalidInput)))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(file_name);
        tmp_name.push(format!(".tmp{}", std::process::id()));
        let tmp_path = dir.join(tmp_name);
        let write = || -> io::Result<()> {
            let mut file = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp_path)?;
            file.write_all(self.render().as_bytes())?;
            file.sync_all()?;
            fs::rename(&tmp_path, &self.path)?;
            File::open(dir)?.sync_all()
        };
        write().map_err(|e| {
            let _ = fs::remove_file(&tmp_path);
            io_err(e)
        })
    }
}

impl CredentialStore for UserDb {
    fn nt_hash(&self, user: &str) -> Option<[u8; 16]> {
        self.users
            .get(&fold(user))
            .filter(|e| e.may_log_on())
            .map(|e| *e.nt_hash)
    }
}
