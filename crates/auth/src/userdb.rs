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

use crate::ntlm::crypto;
use crate::samr::{PasswordChange, PasswordChangeError};
use crate::{Account, CredentialStore, names};

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

/// The order Samba writes account flags in (`[DU         ]`), so that a flag set or cleared
/// here leaves the line as `pdbedit` would write it.
const FLAG_ORDER: &str = "NDHTUMWSLXI";

impl Entry {
    /// Accounts flagged N (no password) have a stored hash that means nothing: no logon
    /// can prove it. Disabled (D) ones are checked, then refused as disabled.
    fn has_password(&self) -> bool {
        !self.flags.contains('N')
    }

    fn disabled(&self) -> bool {
        self.flags.contains('D')
    }

    fn info(&self) -> UserInfo {
        UserInfo {
            name: self.name.clone(),
            uid: self.uid,
            flags: self.flags.clone(),
            last_change: self.last_change,
        }
    }

    /// Sets or clears one account flag, keeping Samba's order of the others.
    fn set_flag(&mut self, flag: char, on: bool) {
        let mut flags: Vec<char> = self.flags.chars().filter(|c| *c != flag).collect();
        if on {
            flags.push(flag);
        }
        // Letters Samba does not know keep their place after the known ones.
        flags.sort_by_key(|c| FLAG_ORDER.find(*c).unwrap_or(FLAG_ORDER.len()));
        self.flags = flags.into_iter().collect();
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
    /// Keyed by the name as account names compare (`names::fold`); each entry keeps its own
    /// spelling, the one sessions act as.
    users: BTreeMap<String, Entry>,
}

fn fold(name: &str) -> String {
    names::fold(name)
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

    /// Adds or replaces the account of one smbpasswd line (as `pdbedit -L -w` prints it),
    /// keeping its NT hash, uid, flags and last change time; returns the account's name.
    /// Machine and trust accounts (flags W, S, I) are refused: they are not users.
    pub fn import_line(&mut self, line: &str) -> Result<String, &'static str> {
        let entry = parse_line(line.trim_end_matches(['\r', '\n']))?;
        if entry.flags.contains(['W', 'S', 'I']) {
            return Err("a machine or trust account, not a user");
        }
        let name = entry.name.clone();
        self.users.insert(fold(&name), entry);
        Ok(name)
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
        self.users.values().map(Entry::info).collect()
    }

    /// The user `name`, without its hash.
    pub fn user(&self, name: &str) -> Option<UserInfo> {
        self.users.get(&fold(name)).map(Entry::info)
    }

    /// Disables `name` (flag D: its logons are refused) or enables it again; returns whether
    /// that changed anything.
    pub fn set_disabled(&mut self, name: &str, disabled: bool) -> Result<bool, UserDbError> {
        let entry = self
            .users
            .get_mut(&fold(name))
            .ok_or_else(|| UserDbError::NoSuchUser(name.to_owned()))?;
        let changed = entry.disabled() != disabled;
        entry.set_flag('D', disabled);
        Ok(changed)
    }

    /// Changes `name`'s password if `change` proves the old one (MS-SAMR 3.1.5.10.3): the new
    /// NT hash and the change time are set in memory; the caller saves. Returns the account's
    /// own spelling. A disabled account is refused whatever it sends, as is one without a
    /// password (flag N: nothing to prove).
    pub fn apply_password_change(
        &mut self,
        name: &str,
        change: &PasswordChange,
    ) -> Result<String, PasswordChangeError> {
        let entry = self
            .users
            .get_mut(&fold(name))
            .filter(|e| e.has_password())
            .ok_or(PasswordChangeError::UnknownUser)?;
        if entry.disabled() {
            return Err(PasswordChangeError::Disabled);
        }
        entry.nt_hash = change.new_nt_hash(&entry.nt_hash)?;
        entry.last_change = unix_now();
        Ok(entry.name.clone())
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
    fn account(&self, user: &str) -> Option<Account> {
        self.users
            .get(&fold(user))
            .filter(|e| e.has_password())
            .map(|e| Account {
                name: e.name.clone(),
                nt_hash: e.nt_hash.clone(),
                disabled: e.disabled(),
            })
    }

    fn uid(&self, user: &str) -> Option<u32> {
        self.users.get(&fold(user)).map(|e| e.uid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `pdbedit -s smb.conf -L -w` from the reference Samba 4.17, user bench, password "pass".
    const PDBEDIT_LINE: &str = "bench:1001:XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX:36AA83BDCAB3C9FDAF321CA42A31C3FC:[U          ]:LCT-6B0246E4:";

    /// The NT hash of the account `user` names.
    fn hash(db: &UserDb, user: &str) -> Option<[u8; 16]> {
        db.account(user).map(|a| *a.nt_hash)
    }

    /// A fresh directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "smb3d-auth-{tag}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn write_with_mode(path: &Path, text: &str, mode: u32) {
        fs::write(path, text).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn pdbedit_output_imports_and_saves_unchanged() {
        let dir = TempDir::new("pdbedit");
        let path = dir.0.join("smbpasswd");
        write_with_mode(&path, &format!("{PDBEDIT_LINE}\n"), 0o600);
        let db = UserDb::load(&path).unwrap();
        assert_eq!(
            db.list(),
            vec![UserInfo {
                name: "bench".into(),
                uid: 1001,
                flags: "U".into(),
                last_change: 0x6B02_46E4,
            }]
        );
        assert_eq!(hash(&db, "BENCH"), Some(*crypto::nt_hash("pass")));
        assert_eq!(hash(&db, "nobody"), None);
        db.save().unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{PDBEDIT_LINE}\n")
        );
        let mode = fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn refuses_a_file_others_can_read() {
        let dir = TempDir::new("mode");
        let path = dir.0.join("smbpasswd");
        for mode in [0o644, 0o640, 0o604, 0o660] {
            write_with_mode(&path, PDBEDIT_LINE, mode);
            assert!(matches!(
                UserDb::load(&path),
                Err(UserDbError::Permissions { .. })
            ));
        }
        write_with_mode(&path, PDBEDIT_LINE, 0o400);
        assert!(UserDb::load(&path).is_ok());
    }

    #[test]
    fn bad_lines_are_reported_with_their_number() {
        let dir = TempDir::new("parse");
        let path = dir.0.join("smbpasswd");
        let cases = [
            (
                "bench:x:XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX:36AA83BDCAB3C9FDAF321CA42A31C3FC:[U          ]:LCT-6B0246E4:",
                "uid is not a number",
            ),
            (
                "bench:1001:XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX:36AA83BDCAB3C9FDAF321CA42A31C3F:[U          ]:LCT-6B0246E4:",
                "NT hash is not 32 hex digits",
            ),
            (
                "bench:1001:XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX:36AA83BDCAB3C9FDAF321CA42A31C3FG:[U          ]:LCT-6B0246E4:",
                "NT hash is not 32 hex digits",
            ),
            (
                "bench:1001:XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX:36AA83BDCAB3C9FDAF321CA42A31C3FC:U:LCT-6B0246E4:",
                "account flags are not in brackets",
            ),
            (
                "bench:1001:XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX:36AA83BDCAB3C9FDAF321CA42A31C3FC:[U          ]:6B0246E4:",
                "last change time is not LCT- and hex digits",
            ),
            (
                "bench:1001:XXXX:36AA83BDCAB3C9FDAF321CA42A31C3FC:[U          ]:LCT-6B0246E4:",
                "LM hash field is not 32 hex digits or X",
            ),
            ("bench:1001", "missing LM hash field"),
            (
                ":1001:XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX:36AA83BDCAB3C9FDAF321CA42A31C3FC:[U          ]:LCT-6B0246E4:",
                "empty",
            ),
            (PDBEDIT_LINE, "user listed twice"),
        ];
        for (bad, reason) in cases {
            let text = format!(
                "# users\n\n{PDBEDIT_LINE}\n{}\n",
                bad.replace("bench", "BENCH")
            );
            write_with_mode(&path, &text, 0o600);
            match UserDb::load(&path) {
                Err(UserDbError::Parse {
                    line, reason: r, ..
                }) => {
                    assert_eq!((line, r), (4, reason), "{bad}");
                }
                other => panic!("{bad}: {:?}", other.map(|_| ())),
            }
        }
    }

    #[test]
    fn add_update_remove_and_disabled_accounts() {
        let dir = TempDir::new("edit");
        let path = dir.0.join("users");
        let mut db = UserDb::new(&path);
        db.add_or_update("Alice", "one", Some(1000)).unwrap();
        db.add_or_update("bob", "two", Some(1001)).unwrap();
        db.add_or_update("ALICE", "three", None).unwrap();
        assert_eq!(hash(&db, "alice"), Some(*crypto::nt_hash("three")));
        let names: Vec<_> = db.list().into_iter().map(|u| (u.name, u.uid)).collect();
        assert_eq!(
            names,
            [("Alice".to_owned(), 1000), ("bob".to_owned(), 1001)]
        );
        db.save().unwrap();

        let reloaded = UserDb::load(&path).unwrap();
        assert_eq!(reloaded.list(), db.list());
        assert_eq!(hash(&reloaded, "BOB"), Some(*crypto::nt_hash("two")));

        db.remove("BOB").unwrap();
        assert!(matches!(db.remove("bob"), Err(UserDbError::NoSuchUser(_))));
        assert_eq!(hash(&db, "bob"), None);
        assert!(matches!(
            db.add_or_update("no-such-system-account-smb3d", "x", None),
            Err(UserDbError::NoUid(_))
        ));

        let disabled = PDBEDIT_LINE.replace("[U          ]", "[DU         ]");
        write_with_mode(&path, &disabled, 0o600);
        let db = UserDb::load(&path).unwrap();
        assert_eq!(db.list()[0].flags, "DU");
        let account = db.account("bench").unwrap();
        assert!(account.disabled);
        assert_eq!(*account.nt_hash, *crypto::nt_hash("pass"));
        let no_password = PDBEDIT_LINE.replace("[U          ]", "[NU         ]");
        write_with_mode(&path, &no_password, 0o600);
        assert_eq!(hash(&UserDb::load(&path).unwrap(), "bench"), None);
    }

    /// `smb3d user disable` and `enable` set and clear D where pdbedit would write it, and
    /// save the line as `smbpasswd -d` does.
    #[test]
    fn disabling_and_enabling_keeps_samba_flag_order() {
        let dir = TempDir::new("disable");
        let path = dir.0.join("users");
        write_with_mode(&path, &format!("{PDBEDIT_LINE}\n"), 0o600);
        let mut db = UserDb::load(&path).unwrap();
        assert!(!db.account("bench").unwrap().disabled);
        assert!(db.set_disabled("BENCH", true).unwrap());
        assert!(!db.set_disabled("bench", true).unwrap());
        db.save().unwrap();
        // What `smbpasswd -d bench` left in Samba 4.17's passdb (`pdbedit -L -w`).
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!(
                "{}\n",
                PDBEDIT_LINE.replace("[U          ]", "[DU         ]")
            )
        );
        let mut db = UserDb::load(&path).unwrap();
        assert!(db.account("bench").unwrap().disabled);
        assert_eq!(db.user("Bench").unwrap().flags, "DU");
        assert!(db.set_disabled("bench", false).unwrap());
        assert_eq!(db.user("bench").unwrap().flags, "U");
        assert!(!db.account("bench").unwrap().disabled);
        assert!(matches!(
            db.set_disabled("nobody", true),
            Err(UserDbError::NoSuchUser(_))
        ));
        assert_eq!(db.user("nobody"), None);

        let mut odd = UserDb::new(&path);
        odd.import_line(&PDBEDIT_LINE.replace("[U          ]", "[XU         ]"))
            .unwrap();
        odd.set_disabled("bench", true).unwrap();
        assert_eq!(odd.user("bench").unwrap().flags, "DUX");
    }

    #[test]
    fn imported_lines_keep_their_hash_and_replace_by_name() {
        let dir = TempDir::new("import");
        let path = dir.0.join("users");
        let mut db = UserDb::new(&path);
        db.add_or_update("Bench", "old", Some(7)).unwrap();
        db.add_or_update("carol", "c", Some(8)).unwrap();
        assert_eq!(
            db.import_line(&format!("{PDBEDIT_LINE}\n")),
            Ok("bench".into())
        );
        assert_eq!(hash(&db, "bench"), Some(*crypto::nt_hash("pass")));
        assert_eq!(hash(&db, "carol"), Some(*crypto::nt_hash("c")));
        let bench = db.list().into_iter().find(|u| u.name == "bench").unwrap();
        assert_eq!((bench.uid, bench.last_change), (1001, 0x6B02_46E4));
        db.save().unwrap();
        assert!(
            fs::read_to_string(&path)
                .unwrap()
                .contains(&format!("{PDBEDIT_LINE}\n"))
        );

        assert_eq!(
            db.import_line("bench:1001:X:36AA83BDCAB3C9FDAF321CA42A31C3FC:[U ]:LCT-0:"),
            Err("LM hash field is not 32 hex digits or X")
        );
        let machine = PDBEDIT_LINE
            .replace("bench", "host$")
            .replace("[U          ]", "[W          ]");
        assert_eq!(
            db.import_line(&machine),
            Err("a machine or trust account, not a user")
        );
        assert_eq!(db.list().len(), 2);
    }

    /// A name finds the account that folds the same (`names`), which answers with its own
    /// spelling; two accounts that fold the same cannot both be listed.
    #[test]
    fn accounts_answer_with_their_own_spelling() {
        let dir = TempDir::new("spelling");
        let path = dir.0.join("users");
        let mut db = UserDb::new(&path);
        db.add_or_update("Kate", "k", Some(1)).unwrap();
        db.add_or_update("sam", "s", Some(2)).unwrap();
        let name = |user: &str| db.account(user).map(|a| a.name);
        assert_eq!(name("KATE").as_deref(), Some("Kate"));
        assert_eq!(name("\u{212A}ate"), None);
        assert_eq!(name("\u{17F}AM"), None);
        assert_eq!(name("SAM").as_deref(), Some("sam"));
        assert_eq!(db.uid("Sam"), Some(2));

        db.add_or_update("KATE", "other", None).unwrap();
        assert_eq!(db.list().len(), 2, "an update of Kate, not a new account");
        let twice = PDBEDIT_LINE.replace("bench", "SAM");
        let text = format!("{}\n{twice}\n", PDBEDIT_LINE.replace("bench", "sam"));
        write_with_mode(&path, &text, 0o600);
        assert!(matches!(
            UserDb::load(&path),
            Err(UserDbError::Parse {
                line: 2,
                reason: "user listed twice",
                ..
            })
        ));
    }

    /// A password change over SAMR: the right old password sets the new hash, anything else
    /// changes nothing.
    #[test]
    fn password_change_needs_the_old_password() {
        let change =
            |old: &str, new: &str| PasswordChange::encrypt(&crypto::nt_hash(old), new).unwrap();
        let dir = TempDir::new("change");
        let path = dir.0.join("users");
        let mut db = UserDb::new(&path);
        db.add_or_update("Kate", "old", Some(1)).unwrap();
        db.add_or_update("off", "old", Some(2)).unwrap();
        db.set_disabled("off", true).unwrap();
        db.import_line(&PDBEDIT_LINE.replace("[U          ]", "[NU         ]"))
            .unwrap();
        let before = db.render();

        let refused = [
            (
                "kate",
                change("wrong", "new"),
                PasswordChangeError::WrongPassword,
            ),
            (
                "nobody",
                change("old", "new"),
                PasswordChangeError::UnknownUser,
            ),
            ("off", change("old", "new"), PasswordChangeError::Disabled),
            (
                "bench",
                change("pass", "new"),
                PasswordChangeError::UnknownUser,
            ),
        ];
        for (user, change, error) in refused {
            assert_eq!(
                db.apply_password_change(user, &change),
                Err(error),
                "{user}"
            );
        }
        assert_eq!(*db.render(), *before, "a refused change changes nothing");

        assert_eq!(
            db.apply_password_change("KATE", &change("old", "new"))
                .as_deref(),
            Ok("Kate")
        );
        assert_eq!(hash(&db, "kate"), Some(*crypto::nt_hash("new")));
        assert_eq!(
            db.apply_password_change("kate", &change("old", "again")),
            Err(PasswordChangeError::WrongPassword),
            "the old password is no proof any more"
        );
    }

    #[test]
    fn names_are_validated() {
        let long = "a".repeat(65);
        for bad in ["", "a:b", "a\nb", "tab\there", long.as_str()] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
        for good in ["bench", "Jörg Müller", "host$", &"a".repeat(64)] {
            assert!(validate_name(good).is_ok(), "{good:?}");
        }
        let mut db = UserDb::new("/nonexistent/users");
        assert!(matches!(
            db.add_or_update("a:b", "x", Some(1)),
            Err(UserDbError::InvalidName(_))
        ));
    }
}
