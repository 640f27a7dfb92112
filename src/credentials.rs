//! The running server's view of the user database: reread when the file changes, so that
//! `smb3d user add` takes effect without a restart.

use std::path::PathBuf;
use std::time::SystemTime;

use parking_lot::Mutex;
use smb3d_auth::{Account, CredentialStore, UserDb};

pub struct ReloadingUserDb {
    path: PathBuf,
    cached: Mutex<(Option<SystemTime>, Option<UserDb>)>,
}

impl ReloadingUserDb {
    /// Loads the database once now, so that a broken file is reported at startup.
    pub fn open(path: PathBuf) -> Result<Self, smb3d_auth::UserDbError> {
        let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        let db = UserDb::load(&path)?;
        Ok(Self {
            path,
            cached: Mutex::new((modified, Some(db))),
        })
    }
}

impl CredentialStore for ReloadingUserDb {
    fn account(&self, user: &str) -> Option<Account> {
        // The database is the service's to read, whatever user's work this thread did last.
        smb3d_credentials::as_service(|| self.current(|db| db.account(user)))
    }

    /// Read fresh as well: a Kerberos logon finds its user by uid alone, without asking for
    /// the account first.
    fn uid(&self, user: &str) -> Option<u32> {
        smb3d_credentials::as_service(|| self.current(|db| db.uid(user)))
    }
}

impl ReloadingUserDb {
    /// `read` of the database as the file is now.
    fn current<T>(&self, read: impl FnOnce(&UserDb) -> Option<T>) -> Option<T> {
        let mut cached = self.cached.lock();
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        if modified != cached.0 {
            // A file that cannot be read now (mid-edit, wrong mode) denies every logon until it
            // is fixed, rather than serving stale credentials.
            let db = UserDb::load(&self.path)
                .map_err(|e| tracing::error!("user database: {e}"))
                .ok();
            *cached = (modified, db);
        }
        read(cached.1.as_ref()?)
    }
}
