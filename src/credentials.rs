//! The running server's view of the user database: reread when the file changes, so that
//! `smb3d user add` takes effect without a restart.

use std::path::PathBuf;
use std::time::SystemTime;

use parking_lot::Mutex;
use smb3d_auth::samr::{PasswordChange, PasswordChangeError};
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

    fn change_password(
        &self,
        user: &str,
        change: &PasswordChange,
    ) -> Result<String, PasswordChangeError> {
        smb3d_credentials::as_service(|| self.change_on_disk(user, change))
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

    /// Applies a change to the file as it is now (an edit by `smb3d user` since the last read
    /// is kept), writes it back atomically and serves the result at once. The lock keeps two
    /// changes from the network from losing one another.
    fn change_on_disk(
        &self,
        user: &str,
        change: &PasswordChange,
    ) -> Result<String, PasswordChangeError> {
        let mut cached = self.cached.lock();
        let mut db = UserDb::load(&self.path).map_err(|e| {
            tracing::error!("user database: {e}");
            PasswordChangeError::Store
        })?;
        let name = db.apply_password_change(user, change)?;
        db.save().map_err(|e| {
            tracing::error!("user database: {e}");
            PasswordChangeError::Store
        })?;
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        *cached = (modified, Some(db));
        Ok(name)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use smb3d_auth::ntlm::crypto::nt_hash;

    use super::*;

    /// A change over the network is on disk when it returns and serves the next logon; a
    /// refused one leaves the file as it was, and an edit made since the last read is kept.
    #[test]
    fn password_changes_persist_and_serve_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users");
        let mut db = UserDb::new(&path);
        db.add_or_update("kate", "old", Some(1000)).unwrap();
        db.save().unwrap();
        let store = ReloadingUserDb::open(path.clone()).unwrap();
        let hash = |user: &str| *store.account(user).unwrap().nt_hash;

        let wrong = PasswordChange::encrypt(&nt_hash("guess"), "new").unwrap();
        let before = std::fs::read(&path).unwrap();
        assert_eq!(
            store.change_password("kate", &wrong),
            Err(PasswordChangeError::WrongPassword)
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert_eq!(hash("kate"), *nt_hash("old"));

        // `smb3d user add` ran since the store last read the file.
        let mut db = UserDb::load(&path).unwrap();
        db.add_or_update("sam", "s", Some(1001)).unwrap();
        db.save().unwrap();

        let right = PasswordChange::encrypt(&nt_hash("old"), "new").unwrap();
        assert_eq!(store.change_password("KATE", &right).as_deref(), Ok("kate"));
        assert_eq!(hash("kate"), *nt_hash("new"));
        let on_disk = UserDb::load(&path).unwrap();
        assert_eq!(*on_disk.account("kate").unwrap().nt_hash, *nt_hash("new"));
        assert_eq!(*on_disk.account("sam").unwrap().nt_hash, *nt_hash("s"));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(
            store.change_password("kate", &right),
            Err(PasswordChangeError::WrongPassword),
            "the old password proves nothing any more"
        );
    }
}
