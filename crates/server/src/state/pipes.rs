//! Named pipes on `IPC$` (MS-SMB2 3.3.5.9 for pipes, MS-FSCC 2.3.x FSCTL_PIPE_*): each open
//! is a DCE/RPC endpoint of `smb3d-rpc`, fed by WRITE and FSCTL_PIPE_TRANSCEIVE and read by
//! READ, and the server's live data reaches the RPC services through [`ServerDirectory`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use smb3d_auth::samr::{PasswordChange, PasswordChangeError};
use smb3d_dtyp::{NtStatus, Sid};
use smb3d_rpc::{
    Directory, PasswordChangeRequest, PipeEndpoint, ServerInfo, ShareEntry,
    ShareKind as RpcShareKind, SidType,
};
use smb3d_smb2::file_id::FileId;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::identity::{Accounts, Identity, UnixId};
use crate::limits::ClientKey;
use crate::state::audit;
use crate::state::domain_names::DomainAccount;
use crate::state::homes::{HOMES, Homes};
use crate::state::server::Server;
use crate::state::session::SessionUser;
use crate::state::share::{Share, ShareKind};

/// An open of a named pipe (MS-SMB2 3.3.1.10 Open, for a pipe).
pub(crate) struct PipeOpen {
    pub file_id: FileId,
    pub endpoint: Mutex<PipeEndpoint>,
    /// Woken when data is queued for reading or the open is closed, for READs waiting on an
    /// empty pipe.
    readable: Notify,
    closed: Mutex<bool>,
    /// Answers wait until then: a refused password change is answered as late as a failed
    /// logon (`throttle`).
    hold: AnswerHold,
}

/// When the pipe's next answer may go out, shared between the open and its directory.
#[derive(Clone, Default)]
pub(crate) struct AnswerHold(Arc<Mutex<Option<Instant>>>);

impl AnswerHold {
    /// The instant answers wait for, if it is still to come.
    pub fn until(&self, now: Instant) -> Option<Instant> {
        let mut hold = self.0.lock();
        match *hold {
            Some(at) if at > now => Some(at),
            _ => {
                *hold = None;
                None
            }
        }
    }

    fn hold(&self, until: Instant) {
        let mut hold = self.0.lock();
        *hold = Some(hold.map_or(until, |at| at.max(until)));
    }
}

impl PipeOpen {
    pub fn new(file_id: FileId, endpoint: PipeEndpoint, hold: AnswerHold) -> Self {
        Self {
            file_id,
            endpoint: Mutex::new(endpoint),
            readable: Notify::new(),
            closed: Mutex::new(false),
            hold,
        }
    }

    /// When the next answer may be read, if later than `now`.
    pub fn held_until(&self, now: Instant) -> Option<Instant> {
        self.hold.until(now)
    }

    /// Wakes readers waiting for data that may now be there.
    pub fn wake_readers(&self) {
        self.readable.notify_waiters();
    }

    /// Marks the open closed and wakes its waiting readers, which then fail.
    pub fn close(&self) {
        *self.closed.lock() = true;
        self.readable.notify_waiters();
    }

    pub fn is_closed(&self) -> bool {
        *self.closed.lock()
    }

    /// Waits until data may be readable or the open is closed. `check` runs after the waiter
    /// is registered, so a wake-up between the check and the wait is not lost.
    pub async fn wait_readable(&self, check: impl Fn(&PipeEndpoint) -> bool) {
        let notified = self.readable.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.is_closed() || check(&self.endpoint.lock()) {
            return;
        }
        notified.await;
    }
}

/// The pipe opens of one tree connect on `IPC$`, by volatile file id.
#[derive(Default)]
pub(crate) struct PipeTable {
    opens: Mutex<HashMap<u64, Arc<PipeOpen>>>,
}

impl PipeTable {
    pub fn insert(&self, open: Arc<PipeOpen>) {
        self.opens.lock().insert(open.file_id.volatile, open);
    }

    /// The open `file_id` names, if both halves match.
    pub fn get(&self, file_id: FileId) -> Option<Arc<PipeOpen>> {
        self.opens
            .lock()
            .get(&file_id.volatile)
            .filter(|o| o.file_id.persistent == file_id.persistent)
            .cloned()
    }

    pub fn remove(&self, file_id: FileId) -> Option<Arc<PipeOpen>> {
        let mut opens = self.opens.lock();
        let open = opens.get(&file_id.volatile)?;
        if open.file_id.persistent != file_id.persistent {
            return None;
        }
        opens.remove(&file_id.volatile)
    }

    /// Closes every open (tree disconnect, logoff).
    pub fn close_all(&self) {
        for (_, open) in self.opens.lock().drain() {
            open.close();
        }
    }

    pub fn len(&self) -> usize {
        self.opens.lock().len()
    }
}

/// Names Windows resolves on every machine: (SID, name, type, domain).
fn well_known() -> [(Sid, &'static str, SidType, &'static str); 7] {
    [
        (Sid::EVERYONE, "Everyone", SidType::WellKnownGroup, ""),
        (
            Sid::AUTHENTICATED_USERS,
            "Authenticated Users",
            SidType::WellKnownGroup,
            "NT AUTHORITY",
        ),
        (
            Sid::ANONYMOUS,
            "ANONYMOUS LOGON",
            SidType::WellKnownGroup,
            "NT AUTHORITY",
        ),
        (
            Sid::NETWORK,
            "NETWORK",
            SidType::WellKnownGroup,
            "NT AUTHORITY",
        ),
        (
            Sid::LOCAL_SYSTEM,
            "SYSTEM",
            SidType::WellKnownGroup,
            "NT AUTHORITY",
        ),
        (
            Sid::BUILTIN_ADMINISTRATORS,
            "Administrators",
            SidType::Alias,
            "BUILTIN",
        ),
        (Sid::BUILTIN_USERS, "Users", SidType::Alias, "BUILTIN"),
    ]
}

/// Samba's names for the domains of S-1-22 Unix-id SIDs.
const UNIX_USERS_DOMAIN: &str = "Unix User";
const UNIX_GROUPS_DOMAIN: &str = "Unix Group";

/// The server as the RPC services see it: its names, its shares, and its accounts (the user
/// database, then the Unix users and groups, as SIDs of the machine domain).
pub(crate) struct ServerDirectory {
    /// Weak: the pipe endpoints holding this live inside the server's own tables.
    server: Weak<Server>,
    /// Who asks, for shares listed only to those who may connect to them.
    viewer: Option<(SessionUser, Arc<Identity>)>,
    /// Where the caller connects from, for the audit and the throttle of failed proofs.
    client: Option<SocketAddr>,
    hold: AnswerHold,
}

/// The type srvsvc reports for a disk share (MS-SRVS 2.2.2.4): on a cluster node a cluster
/// share, STYPE_CLUSTER_SOFS when it is a scale-out share and STYPE_CLUSTER_FS otherwise, as
/// its TREE_CONNECT announces SCALEOUT and CLUSTER (MS-SMB2 3.3.5.7); a plain disk share on a
/// single server.
fn disk_kind(cluster: bool, scale_out: bool) -> RpcShareKind {
    match (cluster, scale_out) {
        (false, _) => RpcShareKind::Disk,
        (true, false) => RpcShareKind::ClusterDisk,
        (true, true) => RpcShareKind::ScaleOutDisk,
    }
}

impl ServerDirectory {
    pub fn new(server: &Arc<Server>) -> Self {
        Self {
            server: Arc::downgrade(server),
            viewer: None,
            client: None,
            hold: AnswerHold::default(),
        }
    }

    /// The directory of a pipe opened from `client`, whose answers `hold` delays.
    pub fn for_pipe(self, client: Option<SocketAddr>, hold: AnswerHold) -> Self {
        Self {
            client,
            hold,
            ..self
        }
    }

    /// The directory as the session of `user` with identity `who` sees it.
    pub fn seen_by(self, user: SessionUser, who: Arc<Identity>) -> Self {
        Self {
            viewer: Some((user, who)),
            ..self
        }
    }

    /// What share listings show of the homes: `homes` itself where its template is browseable,
    /// and the viewer's own home to the viewer alone (as Samba adds it at logon), without
    /// making it.
    fn home_entries(&self, homes: &Homes, cluster: bool) -> Vec<ShareEntry> {
        let entry = |name: String| ShareEntry {
            name,
            comment: homes.comment.clone(),
            kind: disk_kind(cluster, homes.scale_out),
            path: String::new(),
            browseable: true,
        };
        let mut entries = Vec::new();
        if homes.browseable {
            entries.push(entry(HOMES.to_owned()));
        }
        if let Some((user, who)) = &self.viewer
            && let Some(name) = Homes::listed_name(user, who)
        {
            entries.push(entry(name));
        }
        entries
    }
}

/// A domain name's SID_NAME_USE (MS-LSAT 2.2.13).
fn sid_type(kind: DomainAccount) -> SidType {
    match kind {
        DomainAccount::User => SidType::User,
        DomainAccount::Group => SidType::Group,
        DomainAccount::Alias => SidType::Alias,
        DomainAccount::Domain => SidType::Domain,
    }
}

/// The server comment of SERVER_INFO_101 and friends.
const SERVER_COMMENT: &str = "smb3d";

impl Directory for ServerDirectory {
    fn server_info(&self) -> ServerInfo {
        let (netbios_name, domain) = self.server.upgrade().map_or_else(Default::default, |s| {
            (
                s.identity.netbios_name.clone(),
                s.identity.netbios_domain.clone(),
            )
        });
        ServerInfo {
            netbios_name,
            domain,
            comment: SERVER_COMMENT.into(),
            // What Samba reports; clients take 6.1 as "NT-based, current enough".
            version: (6, 1),
            // PLATFORM_ID_NT (MS-SRVS 2.2.4.40).
            platform_id: 500,
            // SV_TYPE_WORKSTATION | SV_TYPE_SERVER | SV_TYPE_NT | SV_TYPE_SERVER_NT.
            server_type: 0x0000_9003,
        }
    }

    fn shares(&self) -> Vec<ShareEntry> {
        let Some(server) = self.server.upgrade() else {
            return Vec::new();
        };
        // A cluster node's disk shares are its cluster shares, as TREE_CONNECT announces them.
        let cluster = server.settings.cluster_dialect.is_some();
        // Access-based share enumeration: such a share is listed only to those it admits.
        let listed = |share: &Share| {
            !share.access_based_share_enum
                || self
                    .viewer
                    .as_ref()
                    .is_none_or(|(user, who)| share.admits(user, who, &server.list_names()))
        };
        let mut entries: Vec<ShareEntry> = server
            .shares()
            .iter()
            .filter(|share| listed(share))
            .map(|share| ShareEntry {
                name: share.name.clone(),
                comment: share.comment.clone(),
                kind: match share.kind {
                    ShareKind::Disk(_) => disk_kind(cluster, share.scale_out),
                    ShareKind::Ipc => RpcShareKind::Ipc,
                },
                path: windows_path(&share.path),
                browseable: share.browseable,
            })
            .collect();
        if let Some(homes) = server.homes() {
            entries.extend(self.home_entries(&homes, cluster));
        }
        entries
    }

    fn lookup_name(&self, name: &str) -> Option<(Sid, SidType, String)> {
        let server = self.server.upgrade()?;
        let machine = &server.identity.netbios_name;
        if name.eq_ignore_ascii_case(machine) {
            return Some((server.ids.domain(), SidType::Domain, machine.clone()));
        }
        if let Some((sid, _, kind, domain)) = well_known()
            .into_iter()
            .find(|(_, n, _, _)| n.eq_ignore_ascii_case(name))
        {
            return Some((sid, kind, domain.into()));
        }
        let accounts = Accounts::read();
        // A user of the database acts as its uid; one without a uid cannot log on, and is no
        // one's name here either.
        let uid = match server.credentials.account(name) {
            Some(account) => server.credentials.uid(&account.name),
            None => accounts.uid_of(name),
        };
        if let Some(uid) = uid {
            return Some((server.ids.user_sid(uid), SidType::User, machine.clone()));
        }
        if let Some(gid) = accounts.gid_of(name) {
            return Some((server.ids.group_sid(gid), SidType::Group, machine.clone()));
        }
        let (sid, kind, domain) = server.domain_names.sid_of(server.ids.domains(), name)?;
        Some((sid, sid_type(kind), domain))
    }

    fn lookup_sid(&self, sid: &Sid) -> Option<(String, SidType, String)> {
        let server = self.server.upgrade()?;
        let machine = &server.identity.netbios_name;
        if *sid == server.ids.domain() {
            return Some((machine.clone(), SidType::Domain, machine.clone()));
        }
        if let Some((name, kind, domain)) = server.domain_names.name_of(server.ids.domains(), sid) {
            return Some((name, sid_type(kind), domain));
        }
        if let Some((_, name, kind, domain)) = well_known().into_iter().find(|(s, ..)| s == sid) {
            return Some((name.into(), kind, domain.into()));
        }
        let accounts = Accounts::read();
        let unix_domain = sid.as_unix_user().is_some() || sid.as_unix_group().is_some();
        match server.ids.unix_id(sid)? {
            UnixId::User(uid) => {
                let name = accounts.user_name(uid)?.to_owned();
                let domain = if unix_domain {
                    UNIX_USERS_DOMAIN.into()
                } else {
                    machine.clone()
                };
                Some((name, SidType::User, domain))
            }
            UnixId::Group(gid) => {
                let name = accounts.group_name(gid)?.to_owned();
                let domain = if unix_domain {
                    UNIX_GROUPS_DOMAIN.into()
                } else {
                    machine.clone()
                };
                Some((name, SidType::Group, domain))
            }
            // A domain account's name is the DC's: /etc/passwd does not hold it.
            UnixId::Account(_) => None,
        }
    }

    fn change_password(&self, request: &PasswordChangeRequest) -> NtStatus {
        self.change_password_now(request)
    }

    /// SIDs of `[idmap]` domains that no logon named are asked of the DC, in one call
    /// (bounded by the DC client's timeouts; answers kept in `domain_names`).
    fn prepare_sids(&self, sids: &[Sid]) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        if let Some(dc) = server.settings.netlogon.as_deref() {
            let ask = || {
                (server.domain_names).ask_sids(
                    dc,
                    server.ids.domains(),
                    sids,
                    std::time::Instant::now(),
                );
            };
            crate::blocking::blocking(ask);
        }
    }

    /// Names of the DC's domain (`DOMAIN\\account`, `account@DOMAIN`) that no logon taught
    /// are asked of the DC, as [`Directory::prepare_sids`]; a bare name is a local account's.
    fn prepare_names(&self, names: &[String]) {
        let Some(server) = self.server.upgrade() else {
            return;
        };
        let Some(dc) = server.settings.netlogon.as_deref() else {
            return;
        };
        let of_dc: Vec<String> = names
            .iter()
            .filter_map(|name| {
                let (domain, account) = name
                    .split_once('\\')
                    .or_else(|| name.rsplit_once('@').map(|(a, d)| (d, a)))?;
                (domain.eq_ignore_ascii_case(dc.domain()) && !account.is_empty())
                    .then(|| format!("{}\\{account}", dc.domain()))
            })
            .collect();
        if !of_dc.is_empty() {
            let ask = || {
                (server.domain_names).ask_names(
                    dc,
                    server.ids.domains(),
                    &of_dc,
                    std::time::Instant::now(),
                );
            };
            crate::blocking::blocking(ask);
        }
    }
}

impl ServerDirectory {
    /// MS-SAMR 3.1.5.10.3: the user database checks the proof and stores the change. Every
    /// refusal reads as STATUS_WRONG_PASSWORD, is logged with its real reason, counts as a
    /// failed logon of the client's address and is answered as late as one (`throttle`), so
    /// the pipe is no faster way to guess a password than SESSION_SETUP.
    fn change_password_now(&self, request: &PasswordChangeRequest) -> NtStatus {
        let Some(server) = self.server.upgrade() else {
            return NtStatus::UNSUCCESSFUL;
        };
        let change = PasswordChange {
            new_password_encrypted: request.new_password_encrypted,
            old_nt_hash_encrypted: request.old_nt_hash_encrypted,
        };
        let arrived = server.settings.clock.now();
        let result = server.credentials.change_password(&request.user, &change);
        let caller = self.viewer.as_ref().map(|(user, _)| user);
        audit::password_change(&request.user, caller, self.client, result.as_ref().err());
        match result {
            Ok(_) => NtStatus::SUCCESS,
            Err(PasswordChangeError::Store) => NtStatus::UNSUCCESSFUL,
            Err(_) => {
                let client = self.client.map(|a| ClientKey::of(a.ip()));
                let wait = server
                    .logon_throttle
                    .failed(client, arrived, server.limits());
                self.hold.hold(arrived + wait.delay);
                NtStatus::WRONG_PASSWORD
            }
        }
    }
}

/// A local path as Windows clients show share paths: `/srv/data` as `C:\srv\data`, as Samba
/// reports it.
fn windows_path(path: &str) -> String {
    if path.is_empty() {
        return String::new();
    }
    format!("C:{}", path.replace('/', "\\"))
}

#[cfg(test)]
mod tests {
    use smb3d_auth::{Account, CredentialStore, ServerIdentity};

    use super::*;
    use crate::identity::IdMap;
    use crate::state::server::Settings;
    use crate::state::share::Share;

    /// A database with `alice` (uid 4242) and `bob` (no uid: no account to act as).
    struct Users;

    impl CredentialStore for Users {
        fn account(&self, user: &str) -> Option<Account> {
            ["alice", "bob"]
                .iter()
                .find_map(|name| Account::if_named(user, name, [0; 16]))
        }

        fn uid(&self, user: &str) -> Option<u32> {
            (user == "alice").then_some(4242)
        }

        /// alice's password hash is all zeros; the change is checked, not kept.
        fn change_password(
            &self,
            user: &str,
            change: &PasswordChange,
        ) -> Result<String, PasswordChangeError> {
            let account = self.account(user).ok_or(PasswordChangeError::UnknownUser)?;
            change.new_nt_hash(&account.nt_hash)?;
            Ok(account.name)
        }
    }

    fn server() -> Arc<Server> {
        let identity = ServerIdentity {
            netbios_domain: "WORKGROUP".into(),
            netbios_name: "FILES".into(),
            dns_domain: String::new(),
            dns_name: "files".into(),
        };
        let vfs = Arc::new(smb3d_vfs::MemoryVfs::new());
        let mut hidden = Share::disk("hidden", vfs.clone());
        hidden.browseable = false;
        let mut data = Share::disk("data", vfs);
        data.comment = "Team data".into();
        data.path = "/srv/data".into();
        Server::new(
            Settings::default(),
            identity,
            Arc::new(Users),
            smb3d_crypto::default_provider(),
            vec![Share::ipc(), data, hidden],
        )
    }

    #[test]
    fn the_directory_reports_the_servers_shares() {
        let server = server();
        let dir = ServerDirectory::new(&server);
        let info = dir.server_info();
        assert_eq!(info.netbios_name, "FILES");
        assert_eq!(info.domain, "WORKGROUP");
        let shares = dir.shares();
        let names: Vec<_> = shares.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["IPC$", "data", "hidden"]);
        assert_eq!(shares[0].kind, RpcShareKind::Ipc);
        assert!(shares[0].browseable, "IPC$ is listed, as on Windows");
        assert_eq!(shares[1].path, "C:\\srv\\data");
        assert_eq!(shares[1].comment, "Team data");
        assert!(!shares[2].browseable);
    }

    /// A refused password change counts as a failed logon of the client's address and its
    /// answer is held as long as one's; a change that goes through is neither.
    #[test]
    fn refused_password_changes_are_held_and_counted_like_failed_logons() {
        let server = server();
        let hold = AnswerHold::default();
        let client: SocketAddr = "192.0.2.7:50000".parse().unwrap();
        let dir = ServerDirectory::new(&server).for_pipe(Some(client), hold.clone());
        let request = |user: &str, old: [u8; 16]| {
            let change = PasswordChange::encrypt(&old, "new").unwrap();
            PasswordChangeRequest {
                user: user.into(),
                new_password_encrypted: change.new_password_encrypted,
                old_nt_hash_encrypted: change.old_nt_hash_encrypted,
            }
        };
        let now = server.settings.clock.now();
        assert_eq!(
            dir.change_password(&request("ALICE", [0; 16])),
            NtStatus::SUCCESS
        );
        assert_eq!(hold.until(now), None);
        assert_eq!(server.logon_throttle.len(), 0);
        for refused in [request("alice", [1; 16]), request("nobody", [0; 16])] {
            assert_eq!(dir.change_password(&refused), NtStatus::WRONG_PASSWORD);
        }
        let until = hold.until(now).expect("the refusal's answer is held");
        assert!(until >= now + server.limits().logon_failure_delay);
        assert_eq!(server.logon_throttle.len(), 1, "one address's failures");
    }

    /// Access-based share enumeration: a share that admits only alice is listed to her (and
    /// to callers the server itself asks for), not to bob.
    #[test]
    fn shares_listed_only_to_those_admitted() {
        let server = server();
        let mut private = Share::disk("private", Arc::new(smb3d_vfs::MemoryVfs::new()));
        private.valid_users = vec!["alice".into()];
        private.access_based_share_enum = true;
        let server = Server::new(
            Settings::default(),
            (*server.identity).clone(),
            Arc::new(Users),
            smb3d_crypto::default_provider(),
            vec![Share::ipc(), private],
        );
        let names = |dir: ServerDirectory| -> Vec<String> {
            dir.shares().into_iter().map(|s| s.name).collect()
        };
        let user = |name: &str| SessionUser::User {
            name: name.into(),
            claimed_domain: "WORKGROUP".into(),
        };
        let seen_by = |name: &str| {
            ServerDirectory::new(&server).seen_by(user(name), Arc::new(server.ids.identity(4242)))
        };
        assert_eq!(names(seen_by("alice")), ["IPC$", "private"]);
        assert_eq!(names(seen_by("bob")), ["IPC$"]);
        assert_eq!(names(ServerDirectory::new(&server)), ["IPC$", "private"]);
    }

    #[test]
    fn names_and_sids_resolve_both_ways() {
        let server = server();
        let dir = ServerDirectory::new(&server);
        let domain = server.ids.domain();
        assert_eq!(
            dir.lookup_name("files"),
            Some((domain, SidType::Domain, "FILES".into()))
        );
        assert_eq!(
            dir.lookup_sid(&domain),
            Some(("FILES".into(), SidType::Domain, "FILES".into()))
        );
        let alice = server.ids.user_sid(4242);
        assert_eq!(
            dir.lookup_name("ALICE"),
            Some((alice, SidType::User, "FILES".into()))
        );
        // bob has no account to act as: not the server's own (root's) SID, nor the system's
        // user bob; only a group the system calls bob, if there is one, has that name.
        let bob = Accounts::read()
            .gid_of("bob")
            .map(|gid| (server.ids.group_sid(gid), SidType::Group, "FILES".into()));
        assert_eq!(dir.lookup_name("bob"), bob);
        // Unix accounts not in the database resolve too; root exists everywhere.
        let root = server.ids.user_sid(0);
        assert_eq!(
            dir.lookup_name("root"),
            Some((root, SidType::User, "FILES".into()))
        );
        assert_eq!(
            dir.lookup_sid(&root),
            Some(("root".into(), SidType::User, "FILES".into()))
        );
        assert_eq!(
            dir.lookup_sid(&server.ids.group_sid(0)),
            Some(("root".into(), SidType::Group, "FILES".into()))
        );
        assert_eq!(
            dir.lookup_sid(&Sid::unix_user(0)),
            Some(("root".into(), SidType::User, UNIX_USERS_DOMAIN.into()))
        );
        assert_eq!(
            dir.lookup_name("everyone"),
            Some((Sid::EVERYONE, SidType::WellKnownGroup, String::new()))
        );
        assert_eq!(
            dir.lookup_sid(&Sid::BUILTIN_ADMINISTRATORS),
            Some(("Administrators".into(), SidType::Alias, "BUILTIN".into()))
        );
        assert_eq!(dir.lookup_name("no-such-account-anywhere"), None);
        assert_eq!(dir.lookup_sid(&IdMap::new("OTHER").user_sid(0)), None);
    }

    #[test]
    fn a_dropped_server_answers_nothing() {
        let dir = ServerDirectory::new(&server());
        assert!(dir.shares().is_empty());
        assert_eq!(dir.lookup_name("root"), None);
    }

    #[test]
    fn share_paths_in_windows_form() {
        assert_eq!(windows_path("/srv/data"), "C:\\srv\\data");
        assert_eq!(windows_path("/"), "C:\\");
        assert_eq!(windows_path(""), "");
    }

    #[test]
    fn well_known_names_are_distinct() {
        let names = well_known();
        for (i, a) in names.iter().enumerate() {
            for b in names.iter().skip(i + 1) {
                assert_ne!(a.0, b.0);
                assert!(!a.1.eq_ignore_ascii_case(b.1));
            }
        }
    }
}
