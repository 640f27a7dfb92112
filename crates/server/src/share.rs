//! Shares as the server serves them.

use std::sync::Arc;

use smb3d_vfs::Vfs;

use crate::server::EncryptionPolicy;

/// What a share holds.
pub enum ShareKind {
    /// Files, through a VFS back end.
    Disk(Arc<dyn Vfs>),
    /// The IPC$ share of named pipes.
    Ipc,
}

/// One share.
pub struct Share {
    pub name: String,
    pub comment: String,
    /// The local directory, as share listings show it (empty for none).
    pub path: String,
    pub kind: ShareKind,
    pub read_only: bool,
    /// Users allowed to connect, lower-cased; empty allows every authenticated user.
    pub valid_users: Vec<String>,
    pub browseable: bool,
    /// Anonymous and guest sessions may connect.
    pub guest_ok: bool,
    /// Share.EncryptData and whether unencrypted access is refused (the server's policy unless
    /// the share sets its own).
    pub encryption: EncryptionPolicy,
    /// Requests on this share must be signed or encrypted.
    pub require_signing: bool,
    /// Permission bits new files may get (masking 0o666), as Samba's `create mask`.
    pub create_mask: u32,
    /// Permission bits new directories may get (masking 0o777), as Samba's `directory mask`.
    pub directory_mask: u32,
    /// Listings leave out what the user cannot read (access-based enumeration, Samba's
    /// `hide unreadable`).
    pub hide_unreadable: bool,
}

impl Share {
    /// A disk share with default options.
    pub fn disk(name: impl Into<String>, vfs: Arc<dyn Vfs>) -> Self {
        Self {
            name: name.into(),
            comment: String::new(),
            path: String::new(),
            kind: ShareKind::Disk(vfs),
            read_only: false,
            valid_users: Vec::new(),
            browseable: true,
            guest_ok: false,
            encryption: EncryptionPolicy::Auto,
            require_signing: false,
            create_mask: 0o744,
            directory_mask: 0o755,
            hide_unreadable: false,
        }
    }

    /// The IPC$ share every server has.
    pub fn ipc() -> Self {
        Self {
            name: "IPC$".into(),
            comment: "IPC Service".into(),
            path: String::new(),
            kind: ShareKind::Ipc,
            read_only: true,
            valid_users: Vec::new(),
            // Listed by share enumeration, as Windows and Samba list it.
            browseable: true,
            guest_ok: true,
            encryption: EncryptionPolicy::Auto,
            require_signing: false,
            create_mask: 0,
            directory_mask: 0,
            hide_unreadable: false,
        }
    }

    /// Whether this is the `IPC$` share of named pipes.
    pub fn is_ipc(&self) -> bool {
        matches!(self.kind, ShareKind::Ipc)
    }

    /// Whether `user` (already authenticated) may connect.
    pub fn admits(&self, user: &str) -> bool {
        self.valid_users.is_empty()
            || self
                .valid_users
                .iter()
                .any(|u| u.eq_ignore_ascii_case(user))
    }
}
