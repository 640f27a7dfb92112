//! Shares as the server serves them.

use std::sync::Arc;

use smb3d_auth::names;
use smb3d_dtyp::Sid;
use smb3d_fscc::Expression;
use smb3d_vfs::{
    Access, DirEntry, Disposition, FileType, Kind, OpenRequest, Timespec, Vfs, VfsError, VfsPath,
    VfsResult,
};
use smb3d_wire::FileTime;

use crate::blocking::Wait;
use crate::fs::apple_convert::Conversion;
pub use crate::fs::fileinfo::{MetadataXattrs, Presentation};
use crate::fs::resource_fork;
use crate::hosts::HostRules;
use crate::identity::{Accounts, Identity};
use crate::state::domain_names::{ListNames, Resolved, dc_entry};
use crate::state::server::EncryptionPolicy;
use crate::state::session::SessionUser;

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
    /// Users allowed to connect ([user list](UserList) entries); empty allows every
    /// authenticated user.
    pub valid_users: Vec<String>,
    /// Users for whom the share is read-only even if it is writable (Samba's `read list`).
    pub read_list: Vec<String>,
    /// Users for whom the share is writable even if it is read-only (Samba's `write list`),
    /// winning over `read_list`.
    pub write_list: Vec<String>,
    /// Every session works on the share as this Unix user, with its SIDs (Samba's
    /// `force user`).
    pub force_user: Option<String>,
    /// Every session works on the share with this Unix group as its primary group (Samba's
    /// `force group`).
    pub force_group: Option<String>,
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
    /// Bits every new file gets after the mask (Samba's `force create mode`).
    pub force_create_mode: u32,
    /// Bits every new directory gets after the mask (Samba's `force directory mode`).
    pub force_directory_mode: u32,
    /// New files and directories take their permissions from the parent directory (Samba's
    /// `inherit permissions`).
    pub inherit_permissions: bool,
    /// New files under a directory without a stored NT ACL inherit the ACL synthesized from
    /// its mode (Samba's acl_xattr, [`crate::security::with_inheritable_entries`]).
    pub inherit_acls: bool,
    /// Who owns new files and directories (Samba's `inherit owner`).
    pub inherit_owner: InheritOwner,
    /// Deleting a directory that holds only vetoed entries deletes them (Samba's `delete veto
    /// files`); the vetoed names are in [`Presentation`].
    pub delete_veto_files: bool,
    /// Deleted files go to a recycle bin (Samba's vfs_recycle).
    pub recycle: Option<Arc<crate::fs::recycle::RecycleBin>>,
    /// Oplocks and leases are granted (Samba's `oplocks`).
    pub oplocks: bool,
    /// Files whose names match get no oplock or lease (Samba's `veto oplock files`).
    pub veto_oplock_files: Vec<Expression>,
    /// Byte-range locks are also held in the host's lock table, where local processes and NFS
    /// clients meet them and theirs stop SMB locks and I/O (Samba's `posix locking`).
    pub posix_locking: bool,
    /// While an SMB client caches a file, smb3d holds a Linux file lease on it that local
    /// opens break (Samba's `kernel oplocks`; `state::kernel_leases`).
    pub kernel_oplocks: bool,
    /// Listings leave out what the user cannot read (access-based enumeration, Samba's
    /// `hide unreadable`).
    pub hide_unreadable: bool,
    /// Share listings show the share only to users who may connect to it (Samba's `access
    /// based share enum`).
    pub access_based_share_enum: bool,
    /// Log opens, renames and deletes at the `audit` target.
    pub audit: bool,
    /// Long names that are not 8.3 names have a short one ([`crate::fs::shortname`]).
    pub short_names: bool,
    /// Writes and end-of-file changes allocate the space they add (see [`crate::state::allocation`]).
    pub strict_allocate: bool,
    /// Creates, renames and deletes are durable before the reply (the parent directory is
    /// synced).
    pub sync_metadata: bool,
    /// Share.IsCA (MS-SMB2 3.3.1.6): tree connects say SMB2_SHARE_CAP_CONTINUOUS_AVAILABILITY
    /// and opens may be persistent.
    pub continuous_availability: bool,
    /// On a cluster node, a scale-out share (MS-SMB2 STYPE_CLUSTER_SOFS): announced as
    /// SCALEOUT, and its SMB 3 opens get scale-out caching; otherwise a general cluster share.
    /// Read only where the server has a cluster.
    pub scale_out: bool,
    /// Previous versions are served from `.snapshots/@GMT-...` under the root
    /// ([`crate::fs::snapshots`]).
    pub snapshots: bool,
    /// How files look to clients beyond what is stored.
    pub presentation: Presentation,
    /// Users refused whatever `valid_users` says (Samba's `invalid users`).
    pub invalid_users: Vec<String>,
    /// Users who act as root on the share (Samba's `admin users`): their file work runs with
    /// uid 0, which every access check lets through, and their new files are root's.
    pub admin_users: Vec<String>,
    /// Client addresses that may connect to the share, the server's lists included where the
    /// share sets none ([`HostRules::within`]).
    pub hosts: HostRules,
    /// What Mac clients get (`apple = true`, Samba's vfs_fruit); `None` on other shares.
    pub apple: Option<Arc<Apple>>,
    /// Clients that negotiated the SMB3 POSIX extensions may open with POSIX semantics
    /// (`posix = true`, Samba's `smb3 unix extensions`).
    pub posix: bool,
}

/// A share's offer to Mac clients: what it answers their AAPL server query with, and whether
/// it is a Time Machine destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Apple {
    /// The model string macOS shows for the server.
    pub model: String,
    /// Backups may go here: the volume says F_FULLFSYNC works.
    pub time_machine: bool,
    /// With `time_machine`, the bytes backups may take (0: the file system's size).
    pub time_machine_max_size: u64,
    /// What converting a Mac's `._` files does beyond moving its Finder info and xattrs
    /// (fs::apple_convert).
    pub conversion: Conversion,
    /// File ids are 0 to connections that negotiated AAPL (handlers::zero_file_ids).
    pub zero_file_id: bool,
}

/// How deep [`Share::remove_vetoed`] goes into a vetoed directory: a deeper tree stays, with
/// the directory holding it (the recursion's stack is bounded whatever a local user builds).
const MAX_VETOED_DEPTH: usize = 32;

/// Opening a directory to list it.
const LISTING: OpenRequest = OpenRequest {
    access: Access::Read,
    disposition: Disposition::Open,
    kind: Kind::Directory,
    create_mode: 0,
};

/// Who owns a new file or directory (Samba's `inherit owner`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InheritOwner {
    /// Its creator.
    #[default]
    No,
    /// The parent directory's owner, on disk and as the owner of the descriptor it inherits.
    WindowsAndUnix,
    /// The parent directory's owner on disk; the descriptor's owner stays the creator.
    UnixOnly,
}

/// Case-insensitive wildcard patterns (`*`, `?`) matched against names, as the share options
/// that list names (`veto_oplock_files`) write them.
pub fn name_patterns(patterns: &[String]) -> Vec<Expression> {
    patterns.iter().map(|p| Expression::new(p, true)).collect()
}

impl Share {
    /// The mode a new file or directory gets, as Samba derives it: the permissions the DOS
    /// attributes allow (read and write for all; the read-only attribute is stored apart, not
    /// taken from the mode), cut by the share's mask and then given its forced bits; with
    /// `inherit_permissions`, a directory takes all of its parent's bits and a file its
    /// parent's read and write bits instead. `parent` is the parent's mode, when inheriting.
    pub fn new_mode(&self, directory: bool, parent: Option<u32>) -> u32 {
        match (directory, parent.filter(|_| self.inherit_permissions)) {
            (true, Some(parent)) => parent & 0o7777,
            (false, Some(parent)) => parent & 0o666,
            (true, None) => (0o777 & self.directory_mask) | self.force_directory_mode,
            (false, None) => (0o666 & self.create_mask) | self.force_create_mode,
        }
    }

    /// The modes new directories and files get in a directory of mode `parent` (OR-ed), from
    /// which [`crate::security::with_inheritable_entries`] synthesizes what it passes on.
    pub fn new_modes(&self, parent: u32) -> u32 {
        self.new_mode(true, Some(parent)) | self.new_mode(false, Some(parent))
    }

    /// A disk share with default options.
    pub fn disk(name: impl Into<String>, vfs: Arc<dyn Vfs>) -> Self {
        Self {
            name: name.into(),
            comment: String::new(),
            path: String::new(),
            kind: ShareKind::Disk(vfs),
            read_only: false,
            valid_users: Vec::new(),
            read_list: Vec::new(),
            write_list: Vec::new(),
            force_user: None,
            force_group: None,
            browseable: true,
            guest_ok: false,
            encryption: EncryptionPolicy::Auto,
            require_signing: false,
            create_mask: 0o744,
            directory_mask: 0o755,
            force_create_mode: 0,
            force_directory_mode: 0,
            inherit_permissions: false,
            inherit_acls: false,
            inherit_owner: InheritOwner::No,
            delete_veto_files: false,
            recycle: None,
            oplocks: true,
            veto_oplock_files: Vec::new(),
            posix_locking: true,
            kernel_oplocks: false,
            hide_unreadable: false,
            access_based_share_enum: false,
            audit: false,
            strict_allocate: true,
            sync_metadata: false,
            continuous_availability: false,
            scale_out: true,
            snapshots: false,
            short_names: false,
            presentation: Presentation::default(),
            invalid_users: Vec::new(),
            admin_users: Vec::new(),
            hosts: HostRules::default(),
            apple: None,
            posix: false,
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
            read_list: Vec::new(),
            write_list: Vec::new(),
            force_user: None,
            force_group: None,
            // Listed by share enumeration, as Windows and Samba list it.
            browseable: true,
            guest_ok: true,
            encryption: EncryptionPolicy::Auto,
            require_signing: false,
            create_mask: 0,
            directory_mask: 0,
            force_create_mode: 0,
            force_directory_mode: 0,
            inherit_permissions: false,
            inherit_acls: false,
            inherit_owner: InheritOwner::No,
            delete_veto_files: false,
            recycle: None,
            oplocks: true,
            veto_oplock_files: Vec::new(),
            posix_locking: false,
            kernel_oplocks: false,
            hide_unreadable: false,
            access_based_share_enum: false,
            audit: false,
            strict_allocate: false,
            sync_metadata: false,
            continuous_availability: false,
            scale_out: true,
            snapshots: false,
            short_names: false,
            presentation: Presentation::default(),
            invalid_users: Vec::new(),
            admin_users: Vec::new(),
            hosts: HostRules::default(),
            apple: None,
            posix: false,
        }
    }

    /// How long metadata work may wait: with `sync_metadata` a create, rename or delete waits
    /// for the disk.
    pub(crate) fn metadata_wait(&self) -> Wait {
        if self.sync_metadata {
            Wait::Long
        } else {
            Wait::Brief
        }
    }

    /// With `sync_metadata`, makes a create, rename or delete at `path` durable before the
    /// reply: the directory holding it is synced.
    pub(crate) fn sync_parent(&self, vfs: &dyn Vfs, path: &VfsPath) -> VfsResult<()> {
        if !self.sync_metadata {
            return Ok(());
        }
        let parent = path
            .parent_and_name()
            .map_or_else(VfsPath::root, |(parent, _)| parent);
        vfs.sync_dir(&parent)
    }

    /// Whether an open of `name` may be granted an oplock or a lease.
    pub(crate) fn grants_caching(&self, name: &str) -> bool {
        self.oplocks && !self.veto_oplock_files.iter().any(|p| p.matches(name))
    }

    /// Whether a directory holding `entries` may be deleted: it must be empty, but with
    /// `delete_veto_files` its vetoed entries do not count (they go with it, see
    /// [`Self::remove_vetoed`]).
    pub(crate) fn empty_for_deletion(&self, entries: &[DirEntry]) -> bool {
        entries
            .iter()
            .all(|e| self.delete_veto_files && self.presentation.vetoes(&e.name))
    }

    /// Before the directory `path` is deleted, with `delete_veto_files`, removes the vetoed
    /// entries it holds: a vetoed directory with everything in it, as Samba removes one (what
    /// it holds is invisible to clients anyway). All of it runs as the deleting user, so the
    /// kernel refuses what that user may not remove, and the first refusal stops it, keeping
    /// `path`.
    pub(crate) fn remove_vetoed(
        &self,
        vfs: &dyn Vfs,
        path: &VfsPath,
        recycle_to: Option<&VfsPath>,
    ) -> VfsResult<()> {
        if !self.delete_veto_files || !self.presentation.vetoes_any() {
            return Ok(());
        }
        let dir = vfs.open(path, &LISTING)?.file;
        for entry in dir.read_dir()? {
            if self.presentation.vetoes(&entry.name) {
                self.remove_entry(vfs, &path.join(&entry.name)?, &entry, recycle_to, 0)?;
            }
        }
        Ok(())
    }

    /// Removes `entry`, found at `path`: a directory with everything in it, a symlink itself
    /// (never what it points to, which the recycle bin would look at), anything else as
    /// [`Self::delete`] does.
    fn remove_entry(
        &self,
        vfs: &dyn Vfs,
        path: &VfsPath,
        entry: &DirEntry,
        recycle_to: Option<&VfsPath>,
        depth: usize,
    ) -> VfsResult<()> {
        match entry.file_type {
            FileType::Directory => {}
            FileType::Symlink => return vfs.unlink(path),
            FileType::File | FileType::Other => return self.delete(vfs, path, recycle_to),
        }
        if depth >= MAX_VETOED_DEPTH {
            return Err(VfsError::NotEmpty);
        }
        let dir = vfs.open(path, &LISTING)?.file;
        // Replaced by a symlink since it was listed: what it points to is not emptied.
        if dir.stat()?.ino != entry.ino {
            return Err(VfsError::NotEmpty);
        }
        for inner in dir.read_dir()? {
            self.remove_entry(vfs, &path.join(&inner.name)?, &inner, recycle_to, depth + 1)?;
        }
        drop(dir);
        vfs.unlink(path)
    }

    /// Deletes `path`, or moves it into `recycle_to`, the deleting user's repository of the
    /// share's recycle bin, if the bin takes it (files only, as Samba's).
    pub(crate) fn delete(
        &self,
        vfs: &dyn Vfs,
        path: &VfsPath,
        recycle_to: Option<&VfsPath>,
    ) -> VfsResult<()> {
        match (&self.recycle, recycle_to) {
            (Some(bin), Some(repository)) => {
                let (sec, nsec) = FileTime::now().to_unix();
                bin.dispose(vfs, repository, path, Timespec { sec, nsec })?;
            }
            _ => vfs.unlink(path)?,
        }
        if self.apple.is_some() {
            // The file is gone whatever becomes of its resource fork's `._` file.
            let _ = resource_fork::follow_delete(vfs, path);
        }
        Ok(())
    }

    /// Whether this is the `IPC$` share of named pipes.
    pub fn is_ipc(&self) -> bool {
        matches!(self.kind, ShareKind::Ipc)
    }

    /// Checks that the accounts `force_user` and `force_group` name exist on this system.
    pub fn check_forced_accounts(&self) -> Result<(), String> {
        let accounts = Accounts::read();
        if let Some(user) = &self.force_user
            && accounts.uid_of(user).is_none()
        {
            return Err(format!("force_user {user:?} is not a Unix user"));
        }
        if let Some(group) = &self.force_group
            && accounts.gid_of(group).is_none()
        {
            return Err(format!("force_group {group:?} is not a Unix group"));
        }
        Ok(())
    }

    /// Whether a session of `user` with identity `who` may connect: null sessions where
    /// guests are welcome, named users when `valid_users` names them (or names nobody) and
    /// `invalid_users` does not (it wins, as in Samba). A domain name the DC has not resolved
    /// fails closed: it admits nobody from `valid_users`, and in `invalid_users` it refuses
    /// every domain user (any of them could be a member).
    pub(crate) fn admits(&self, user: &SessionUser, who: &Identity, dc: &ListNames<'_>) -> bool {
        match user {
            SessionUser::Anonymous => self.guest_ok,
            SessionUser::User { name, .. } => {
                UserList(&self.invalid_users).names(name, who, dc) == Listed::No
                    && (self.valid_users.is_empty()
                        || UserList(&self.valid_users).names(name, who, dc).is_yes())
            }
        }
    }

    /// Whether `admin_users` names the user `user` with identity `who` (never a guest or an
    /// anonymous session; an unresolved domain name makes no one an admin).
    pub(crate) fn is_admin(&self, user: &SessionUser, who: &Identity, dc: &ListNames<'_>) -> bool {
        match user {
            SessionUser::User { name, .. } => {
                UserList(&self.admin_users).names(name, who, dc).is_yes()
            }
            SessionUser::Anonymous => false,
        }
    }

    /// Whether the share is read-only for the user `name` with identity `who`: `read_list`
    /// makes it so, `write_list` undoes it, as Samba decides. An unresolved domain name in
    /// `read_list` makes it read-only for every domain user, and in `write_list` undoes
    /// nothing.
    pub(crate) fn read_only_for(
        &self,
        user: &SessionUser,
        who: &Identity,
        dc: &ListNames<'_>,
    ) -> bool {
        let SessionUser::User { name, .. } = user else {
            return self.read_only;
        };
        if UserList(&self.write_list).names(name, who, dc).is_yes() {
            false
        } else {
            self.read_only || UserList(&self.read_list).names(name, who, dc) != Listed::No
        }
    }

    /// The names of the DC's domain (`DOMAIN` its NetBIOS name) in this share's user lists,
    /// lowercased `domain\\name`: what a TREE_CONNECT has the DC resolve.
    pub(crate) fn dc_entries(&self, domain: &str) -> Vec<String> {
        [
            &self.valid_users,
            &self.invalid_users,
            &self.read_list,
            &self.write_list,
            &self.admin_users,
        ]
        .into_iter()
        .flatten()
        .filter_map(|entry| dc_entry(entry, domain))
        .collect()
    }
}

/// Whether a user list names a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listed {
    Yes,
    No,
    /// Only a domain name the DC has not resolved could name it.
    Unsure,
}

impl Listed {
    pub(crate) fn is_yes(self) -> bool {
        self == Listed::Yes
    }
}

/// A list of users as Samba's share options write one: user names (compared as the user
/// database compares them, `smb3d_auth::names`; a domain user is `DOMAIN\account`), `@group`
/// or `+group` for the members of a Unix group, and SIDs (`S-1-5-21-...`, also after `@` or
/// `+`) for the user or group of that SID, as the session's token (a domain user's from its
/// PAC) holds them.
pub(crate) struct UserList<'a>(pub &'a [String]);

impl UserList<'_> {
    /// Whether the list names the user `name` (the database's spelling, fixed at logon), whose
    /// SIDs and Unix groups are those of `who`; names of the DC's domain count as `dc`
    /// resolves them. Unsure when only an unresolved one could name a domain user.
    pub fn names(&self, name: &str, who: &Identity, dc: &ListNames<'_>) -> Listed {
        let has = |sid: &Sid| who.token.user == *sid || who.token.groups.contains(sid);
        let in_token = |entry: &str| {
            let sid = entry.strip_prefix(['@', '+']).unwrap_or(entry);
            sid.starts_with("S-") && sid.parse::<Sid>().is_ok_and(|sid| has(&sid))
        };
        let mut unresolved = false;
        for entry in self.0 {
            if names::same(entry, name) || in_token(entry) {
                return Listed::Yes;
            }
            match dc.resolved(entry) {
                Some(Resolved::Sid(sid)) if has(&sid) => return Listed::Yes,
                Some(Resolved::Unknown) => unresolved = true,
                _ => {}
            }
        }
        let mut groups = self
            .0
            .iter()
            .filter_map(|entry| entry.strip_prefix(['@', '+']))
            .peekable();
        if groups.peek().is_some() {
            let accounts = Accounts::read();
            if groups
                .filter_map(|g| accounts.gid_of(g))
                .any(|gid| who.unix.gid == gid || who.unix.groups.contains(&gid))
            {
                return Listed::Yes;
            }
        }
        if unresolved && dc.may_be_member(who) {
            Listed::Unsure
        } else {
            Listed::No
        }
    }
}

#[cfg(test)]
mod tests {
    use smb3d_dtyp::idmap::{DomainIdmap, IdmapDomain};
    use smb3d_dtyp::{Privileges, Token};
    use smb3d_vfs::{Credentials, MemoryVfs};

    use super::*;
    use crate::identity::IdMap;
    use crate::state::domain_names::DomainNames;
    use std::time::Duration;

    static NO_DOMAINS: DomainIdmap = DomainIdmap {
        domains: Vec::new(),
    };

    fn no_dc() -> ListNames<'static> {
        ListNames::without_dc(&NO_DOMAINS)
    }

    /// A user `name` whose primary group is root's (gid 0, "root" on every Linux).
    fn member_of_root(name: &str) -> (SessionUser, Identity) {
        let ids = IdMap::new("T");
        let who = Identity {
            token: Token {
                user: ids.user_sid(4242),
                groups: Vec::new(),
                privileges: Privileges::empty(),
            },
            unix: Credentials {
                uid: 4242,
                gid: 0,
                groups: Vec::new(),
            },
        };
        let user = SessionUser::User {
            name: name.into(),
            claimed_domain: "WORKGROUP".into(),
        };
        (user, who)
    }

    #[test]
    fn lists_name_users_and_groups() {
        let (alice, who) = member_of_root("alice");
        let list = |entries: &[&str]| entries.iter().map(|e| (*e).to_owned()).collect::<Vec<_>>();
        assert!(
            UserList(&list(&["bob", "ALICE"]))
                .names("alice", &who, &no_dc())
                .is_yes()
        );
        assert!(
            UserList(&list(&["JÖRG"]))
                .names("jörg", &who, &no_dc())
                .is_yes()
        );
        assert!(
            !UserList(&list(&["\u{212A}ate"]))
                .names("kate", &who, &no_dc())
                .is_yes()
        );
        assert!(
            UserList(&list(&["@root"]))
                .names("alice", &who, &no_dc())
                .is_yes()
        );
        assert!(
            UserList(&list(&["+root"]))
                .names("alice", &who, &no_dc())
                .is_yes()
        );
        assert!(
            !UserList(&list(&["bob", "@no-such-group-here"]))
                .names("alice", &who, &no_dc())
                .is_yes()
        );
        assert!(!UserList(&[]).names("alice", &who, &no_dc()).is_yes());

        let mut share = Share::disk("s", Arc::new(MemoryVfs::new()));
        assert!(share.admits(&alice, &who, &no_dc()));
        share.valid_users = list(&["bob"]);
        assert!(!share.admits(&alice, &who, &no_dc()));
        share.valid_users = list(&["@root"]);
        assert!(share.admits(&alice, &who, &no_dc()));
        assert!(!share.admits(&SessionUser::Anonymous, &who, &no_dc()));
    }

    /// `invalid_users` refuses whom it names, by name or group, even when `valid_users` names
    /// them too.
    #[test]
    fn invalid_users_win_over_valid_users() {
        let (alice, who) = member_of_root("alice");
        let (bob, _) = member_of_root("bob");
        let mut share = Share::disk("s", Arc::new(MemoryVfs::new()));
        share.invalid_users = vec!["ALICE".into()];
        assert!(!share.admits(&alice, &who, &no_dc()));
        share.valid_users = vec!["alice".into(), "bob".into()];
        assert!(!share.admits(&alice, &who, &no_dc()), "invalid_users wins");
        share.invalid_users = vec!["@root".into()];
        assert!(
            !share.admits(&bob, &who, &no_dc()),
            "a group of invalid users"
        );
        share.invalid_users = vec!["@no-such-group-here".into()];
        assert!(share.admits(&bob, &who, &no_dc()));
    }

    /// A domain user of a PAC is named as `DOMAIN\account`, by its SID, or by the SID of a
    /// group the PAC gives it, in every list; another domain user is not.
    #[test]
    fn domain_users_by_name_and_sids() {
        let sid = |s: &str| s.parse::<Sid>().unwrap();
        let domain_user = |name: &str, rid: u32, groups: &[&str]| {
            let (user, mut who) = member_of_root(name);
            who.token.user = sid(&format!("S-1-5-21-1-2-3-{rid}"));
            who.token.groups = groups.iter().map(|g| sid(g)).collect();
            who.unix.gid = 100_513;
            (user, who)
        };
        let designers = "S-1-5-21-1-2-3-1200";
        let (dana, dana_who) = domain_user("AD\\dana", 1105, &["S-1-5-21-1-2-3-513", designers]);
        let (erin, erin_who) = domain_user("AD\\erin", 1106, &["S-1-5-21-1-2-3-513"]);
        let mut share = Share::disk("s", Arc::new(MemoryVfs::new()));
        share.valid_users = vec![format!("@{designers}")];
        assert!(share.admits(&dana, &dana_who, &no_dc()));
        assert!(!share.admits(&erin, &erin_who, &no_dc()));
        share.valid_users = vec!["ad\\ERIN".into(), "S-1-5-21-1-2-3-1105".into()];
        assert!(
            share.admits(&dana, &dana_who, &no_dc()) && share.admits(&erin, &erin_who, &no_dc())
        );
        share.valid_users = vec![
            "dana".into(),
            "S-1-5-21-1-2-3-11".into(),
            "@S-1-5-21-1".into(),
        ];
        assert!(!share.admits(&dana, &dana_who, &no_dc()));
        share.valid_users.clear();
        share.invalid_users = vec![format!("+{designers}")];
        assert!(
            !share.admits(&dana, &dana_who, &no_dc()) && share.admits(&erin, &erin_who, &no_dc())
        );
        share.read_list = vec!["S-1-5-21-1-2-3-513".into()];
        share.write_list = vec![format!("@{designers}")];
        assert!(!share.read_only_for(&dana, &dana_who, &no_dc()));
        assert!(share.read_only_for(&erin, &erin_who, &no_dc()));
        share.admin_users = vec![format!("@{designers}")];
        assert!(
            share.is_admin(&dana, &dana_who, &no_dc())
                && !share.is_admin(&erin, &erin_who, &no_dc())
        );
    }

    /// `@AD\\group` and `AD\\user` of the DC's domain match by the SID the DC resolved them
    /// to; unresolved (the DC not asked yet or down), they fail closed for domain users and
    /// leave local users as they were; a name the DC does not know names nobody.
    #[test]
    fn names_of_the_dcs_domain_match_by_resolved_sid_and_fail_closed() {
        let sid = |s: &str| s.parse::<Sid>().unwrap();
        let domains = DomainIdmap {
            domains: vec![IdmapDomain {
                name: "AD".into(),
                sid: sid("S-1-5-21-1-2-3"),
                low: 100_000,
                high: 199_999,
            }],
        };
        let names = DomainNames::default();
        let now = std::time::Instant::now();
        let dc = ListNames::new(&names, Some("AD"), &domains, now);
        let (frank, mut frank_who) = member_of_root("AD\\frank");
        frank_who.token.user = sid("S-1-5-21-1-2-3-1107");
        frank_who.token.groups = vec![sid("S-1-5-21-1-2-3-513"), sid("S-1-5-21-1-2-3-1200")];
        let (gina, mut gina_who) = member_of_root("AD\\gina");
        gina_who.token.user = sid("S-1-5-21-1-2-3-1108");
        let (alice, alice_who) = member_of_root("alice");
        let mut share = Share::disk("s", Arc::new(MemoryVfs::new()));
        share.valid_users = vec!["@ad\\Designers".into(), "alice".into()];
        share.read_list = vec!["+AD\\Designers".into()];
        share.admin_users = vec!["@AD\\Designers".into()];
        assert_eq!(share.dc_entries("ad"), vec!["ad\\designers"; 3]);
        assert!(share.dc_entries("OTHER").is_empty());

        // Unresolved: no domain user is admitted, made admin or given write access; the
        // local user is unaffected.
        assert!(!share.admits(&frank, &frank_who, &dc));
        assert!(!share.is_admin(&frank, &frank_who, &dc));
        assert!(share.read_only_for(&gina, &gina_who, &dc));
        assert!(share.admits(&alice, &alice_who, &dc));
        assert!(!share.read_only_for(&alice, &alice_who, &dc));
        share.invalid_users = vec!["@AD\\Designers".into()];
        share.valid_users.clear();
        assert!(!share.admits(&gina, &gina_who, &dc), "fails closed");
        assert!(
            share.admits(&alice, &alice_who, &dc),
            "local users unaffected"
        );

        // Resolved: members match by SID, others do not.
        names.resolve_list_name("ad\\designers", Some(sid("S-1-5-21-1-2-3-1200")), now);
        assert!(!share.admits(&frank, &frank_who, &dc));
        assert!(share.admits(&gina, &gina_who, &dc));
        share.invalid_users.clear();
        share.valid_users = vec!["@AD\\designers".into()];
        assert!(share.admits(&frank, &frank_who, &dc));
        assert!(!share.admits(&gina, &gina_who, &dc));
        assert!(share.is_admin(&frank, &frank_who, &dc));
        assert!(!share.read_only_for(&gina, &gina_who, &dc));
        // Past the lifetime the resolution is unknown again.
        let later = ListNames::new(&names, Some("AD"), &domains, now + Duration::from_secs(601));
        assert!(!share.admits(&frank, &frank_who, &later));
        // A name the DC does not know names nobody, and refuses nobody.
        names.resolve_list_name("ad\\designers", None, now);
        assert!(!share.admits(&frank, &frank_who, &dc));
        share.valid_users.clear();
        share.invalid_users = vec!["@AD\\designers".into()];
        assert!(share.admits(&frank, &frank_who, &dc));
        // Without a DC the name is matched as written only (the session's own name).
        share.invalid_users = vec!["AD\\frank".into()];
        assert!(!share.admits(&frank, &frank_who, &no_dc()));
        assert!(share.admits(&gina, &gina_who, &no_dc()));
    }

    /// Samba's order: `read list` makes a writable share read-only, `write list` makes any
    /// share writable and wins over `read list`.
    #[test]
    fn read_and_write_lists() {
        let (alice, who) = member_of_root("alice");
        let mut share = Share::disk("s", Arc::new(MemoryVfs::new()));
        assert!(!share.read_only_for(&alice, &who, &no_dc()));
        share.read_list = vec!["@root".into()];
        assert!(share.read_only_for(&alice, &who, &no_dc()));
        share.write_list = vec!["alice".into()];
        assert!(!share.read_only_for(&alice, &who, &no_dc()));
        share.read_only = true;
        share.read_list.clear();
        assert!(!share.read_only_for(&alice, &who, &no_dc()));
        share.write_list.clear();
        assert!(share.read_only_for(&alice, &who, &no_dc()));
        share.write_list = vec!["@root".into()];
        assert!(share.read_only_for(&SessionUser::Anonymous, &who, &no_dc()));
    }

    /// Samba's formula for new modes: mask, then forced bits; or the parent's bits when
    /// inheriting (all of them for a directory, read and write for a file).
    #[test]
    fn new_modes() {
        let mut share = Share::disk("s", Arc::new(MemoryVfs::new()));
        assert_eq!(
            (share.new_mode(false, None), share.new_mode(true, None)),
            (0o644, 0o755)
        );
        share.create_mask = 0o660;
        share.directory_mask = 0o770;
        share.force_directory_mode = 0o2000;
        share.force_create_mode = 0o004;
        assert_eq!(
            (share.new_mode(false, None), share.new_mode(true, None)),
            (0o664, 0o2770)
        );
        // A parent's mode only counts when the share inherits.
        assert_eq!(share.new_mode(true, Some(0o43775)), 0o2770);
        share.inherit_permissions = true;
        assert_eq!(share.new_mode(true, Some(0o43775)), 0o3775);
        assert_eq!(share.new_mode(false, Some(0o42775)), 0o664);
        assert_eq!(share.new_mode(false, Some(0o40750)), 0o640);
        assert_eq!(share.new_mode(false, None), 0o664);
    }

    /// `oplocks = false` grants nothing; `veto_oplock_files` nothing to the names it matches.
    #[test]
    fn caching_granted_per_share_and_name() {
        let mut share = Share::disk("s", Arc::new(MemoryVfs::new()));
        assert!(share.grants_caching("db.MDB"));
        share.veto_oplock_files = vec![Expression::new("*.mdb", true)];
        assert!(!share.grants_caching("db.MDB") && share.grants_caching("doc.txt"));
        share.oplocks = false;
        assert!(!share.grants_caching("doc.txt"));
    }

    /// A directory holding only vetoed entries may be deleted with `delete_veto_files` only;
    /// any other entry keeps it.
    #[test]
    fn vetoed_entries_count_for_deletion_only_without_delete_veto_files() {
        let entry = |name: &str| DirEntry {
            name: name.into(),
            ino: 1,
            file_type: smb3d_vfs::FileType::File,
        };
        let mut share = Share::disk("s", Arc::new(MemoryVfs::new()));
        share.presentation = Presentation::default().with_veto(&[".DS_Store".into()]);
        let only_vetoed = [entry(".DS_Store")];
        let mixed = [entry(".DS_Store"), entry("kept.txt")];
        assert!(share.empty_for_deletion(&[]));
        assert!(!share.empty_for_deletion(&only_vetoed));
        share.delete_veto_files = true;
        assert!(share.empty_for_deletion(&only_vetoed));
        assert!(!share.empty_for_deletion(&mixed));
    }

    /// A vetoed directory goes with everything in it, visible names included; the directory
    /// holding it can then be deleted.
    #[test]
    fn vetoed_directories_are_removed_with_their_contents() {
        let vfs = MemoryVfs::new();
        let path = |p: &str| VfsPath::parse(p).unwrap();
        let make = |p: &str, kind| {
            let req = OpenRequest {
                access: Access::ReadWrite,
                disposition: Disposition::Create,
                kind,
                create_mode: 0o755,
            };
            vfs.open(&path(p), &req).unwrap();
        };
        make("d", Kind::Directory);
        make("d/.DS_Store", Kind::File);
        make("d/cache.tmp", Kind::Directory);
        make("d/cache.tmp/inner.txt", Kind::File);
        make("d/cache.tmp/sub", Kind::Directory);
        make("d/cache.tmp/sub/deep.txt", Kind::File);
        let mut share = Share::disk("s", Arc::new(MemoryVfs::new()));
        share.presentation =
            Presentation::default().with_veto(&[".DS_Store".into(), "*.tmp".into()]);
        share.delete_veto_files = true;
        share.remove_vetoed(&vfs, &path("d"), None).unwrap();
        vfs.unlink(&path("d")).unwrap();
        assert!(vfs.stat(&path("d")).is_err());
    }

    /// A tree deeper than the bound is not removed, and what it could reach stays.
    #[test]
    fn removal_of_vetoed_directories_is_bounded() {
        let vfs = MemoryVfs::new();
        let req = OpenRequest {
            access: Access::ReadWrite,
            disposition: Disposition::Create,
            kind: Kind::Directory,
            create_mode: 0o755,
        };
        let mut deep = String::from("d/x.tmp");
        vfs.open(&VfsPath::parse("d").unwrap(), &req).unwrap();
        vfs.open(&VfsPath::parse(&deep).unwrap(), &req).unwrap();
        for _ in 0..MAX_VETOED_DEPTH + 1 {
            deep.push_str("/n");
            vfs.open(&VfsPath::parse(&deep).unwrap(), &req).unwrap();
        }
        let mut share = Share::disk("s", Arc::new(MemoryVfs::new()));
        share.presentation = Presentation::default().with_veto(&["*.tmp".into()]);
        share.delete_veto_files = true;
        let d = VfsPath::parse("d").unwrap();
        assert!(share.remove_vetoed(&vfs, &d, None).is_err());
        assert!(vfs.stat(&VfsPath::parse(&deep).unwrap()).is_ok());
    }
}
