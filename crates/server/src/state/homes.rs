//! Home shares, Samba's `[homes]`: a tree connect to a share named as the session's user (or to
//! `homes` itself, as Samba maps it) gets that user's home, a share made from the configured
//! template for them at their first connect and kept for later ones. A home is only ever its
//! owner's: naming another user's home is refused, as Samba's `valid users = %S` refuses it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use smb3d_auth::names;
use smb3d_dtyp::NtStatus;

use crate::blocking::blocking;
use crate::identity::{Accounts, Identity};
use crate::state::session::SessionUser;
use crate::state::share::Share;

/// The name of the template share, and of the share that means "my home".
pub const HOMES: &str = "homes";

/// Whom a home share is made for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeOwner {
    /// The user name as the user database spells it; the home share is named so.
    pub user: String,
    /// The Unix account the session acts as.
    pub unix_user: String,
    /// That account's primary group.
    pub group: String,
    pub uid: u32,
    pub gid: u32,
    /// The account's home directory in passwd.
    pub home: PathBuf,
}

/// Why a tree connect gets no share: the status it answers, and for a refused home (another
/// user's, or one that cannot be made) the reason the login audit logs, as for any refused
/// tree connect. A name that is no share and no account is not a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoShare {
    pub status: NtStatus,
    pub refused: Option<&'static str>,
}

impl NoShare {
    pub(crate) const NOT_FOUND: NoShare = NoShare {
        status: NtStatus::BAD_NETWORK_NAME,
        refused: None,
    };
}

/// Builds a user's home share from the template: its path, the directory when configured to
/// make it, the VFS. The binary provides it; it may block.
pub trait HomeBuilder: Send + Sync {
    fn build(&self, owner: &HomeOwner) -> Result<Share, String>;
}

/// The configured home template and the home shares made from it so far.
pub struct Homes {
    builder: Box<dyn HomeBuilder>,
    /// Whether share listings show `homes` itself (the template's `browseable`); a user's own
    /// home is listed to them either way, as Samba lists it.
    pub browseable: bool,
    pub comment: String,
    /// Whether the homes are scale-out shares on a cluster node (the template's `scale_out`).
    pub scale_out: bool,
    /// Keyed by uid; a reload replaces the whole `Homes`, so changed templates apply.
    made: Mutex<HashMap<u32, Arc<Share>>>,
}

impl Homes {
    pub fn new(builder: Box<dyn HomeBuilder>, comment: String, browseable: bool) -> Self {
        Self {
            builder,
            browseable,
            comment,
            scale_out: true,
            made: Mutex::new(HashMap::new()),
        }
    }

    /// These homes with the template's `scale_out` (by default they are scale-out shares, as
    /// a share's `scale_out` is).
    #[must_use]
    pub fn with_scale_out(mut self, scale_out: bool) -> Self {
        self.scale_out = scale_out;
        self
    }

    /// The home share `name` means for a session of `user` acting as `who`: the user's own
    /// home for their own name or `homes`; ACCESS_DENIED for another account's name (as Samba's
    /// `valid users = %S` answers); BAD_NETWORK_NAME for a name that is no account.
    pub(crate) fn resolve(
        &self,
        name: &str,
        user: &SessionUser,
        who: &Identity,
    ) -> Result<Arc<Share>, NoShare> {
        let SessionUser::User { name: user, .. } = user else {
            return Err(NoShare::NOT_FOUND);
        };
        let accounts = Accounts::read();
        if !name.eq_ignore_ascii_case(HOMES) && !names::same(name, user) {
            return Err(match accounts.uid_of(name) {
                Some(_) => NoShare {
                    status: NtStatus::ACCESS_DENIED,
                    refused: Some("another user's home"),
                },
                None => NoShare::NOT_FOUND,
            });
        }
        let owner = owner(&accounts, user, who).ok_or(NoShare::NOT_FOUND)?;
        drop(accounts);
        self.share_of(&owner).map_err(|status| NoShare {
            status,
            refused: Some("the home cannot be made"),
        })
    }

    /// The home share of `owner`, made on first use.
    fn share_of(&self, owner: &HomeOwner) -> Result<Arc<Share>, NtStatus> {
        if let Some(share) = self.made.lock().get(&owner.uid) {
            return Ok(share.clone());
        }
        let built = blocking(|| self.builder.build(owner)).map_err(|why| {
            tracing::error!(user = %owner.user, "home share of {}: {why}", owner.user);
            NtStatus::BAD_NETWORK_NAME
        })?;
        let share = Arc::new(built);
        // Two first connects at once both build; the first stored wins, so every tree connect
        // of the user shares one share (and its open files).
        Ok(self.made.lock().entry(owner.uid).or_insert(share).clone())
    }

    /// The name the session's home is listed under, when it has one.
    pub(crate) fn listed_name(user: &SessionUser, who: &Identity) -> Option<String> {
        let SessionUser::User { name, .. } = user else {
            return None;
        };
        owner(&Accounts::read(), name, who).map(|owner| owner.user)
    }
}

/// The owner of `user`'s home, acting as `who`: none for root or an account passwd does not
/// list, whose home would be made with no owner or as root.
fn owner(accounts: &Accounts, user: &str, who: &Identity) -> Option<HomeOwner> {
    let uid = who.unix.uid;
    if uid == 0 {
        return None;
    }
    let unix_user = accounts.user_name(uid)?.to_owned();
    let home = accounts.home_of(uid)?;
    let group = accounts
        .group_name(who.unix.gid)
        .map_or_else(|| who.unix.gid.to_string(), str::to_owned);
    Some(HomeOwner {
        user: user.to_owned(),
        unix_user,
        group,
        uid,
        gid: who.unix.gid,
        home: PathBuf::from(home),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use smb3d_auth::{Account, CredentialStore, ServerIdentity};
    use smb3d_rpc::Directory;
    use smb3d_vfs::MemoryVfs;

    use super::*;
    use crate::identity::IdMap;
    use crate::state::pipes::ServerDirectory;
    use crate::state::server::{Server, Settings};

    /// Counts the homes it builds; each is a memory share named as its owner.
    struct Counting(Arc<AtomicUsize>);

    impl HomeBuilder for Counting {
        fn build(&self, owner: &HomeOwner) -> Result<Share, String> {
            self.0.fetch_add(1, Ordering::Relaxed);
            let mut share = Share::disk(owner.user.clone(), Arc::new(MemoryVfs::new()));
            share.path = format!("/srv/homes/{}", owner.unix_user);
            Ok(share)
        }
    }

    /// `daemon` (uid 1) and `bin` (uid 2) are in every Debian passwd; root is uid 0.
    fn session(name: &str) -> SessionUser {
        SessionUser::User {
            name: name.into(),
            claimed_domain: "WORKGROUP".into(),
        }
    }

    struct NoUsers;

    impl CredentialStore for NoUsers {
        fn account(&self, _: &str) -> Option<Account> {
            None
        }

        fn uid(&self, _: &str) -> Option<u32> {
            None
        }
    }

    fn server_with_homes(browseable: bool) -> (Arc<Server>, Arc<AtomicUsize>) {
        let identity = ServerIdentity {
            netbios_domain: "WORKGROUP".into(),
            netbios_name: "FILES".into(),
            dns_domain: String::new(),
            dns_name: "files".into(),
        };
        let server = Server::new(
            Settings::default(),
            identity,
            Arc::new(NoUsers),
            smb3d_crypto::default_provider(),
            vec![Share::ipc()],
        );
        let built = Arc::new(AtomicUsize::new(0));
        let homes = Homes::new(Box::new(Counting(built.clone())), "Home".into(), browseable);
        server.replace_homes(Some(homes));
        (server, built)
    }

    #[test]
    fn a_home_is_its_owners_alone_and_made_once() {
        let (server, built) = server_with_homes(false);
        let ids = IdMap::new("FILES");
        let daemon = ids.identity(1);
        let own = server
            .share_for("daemon", &session("daemon"), &daemon)
            .unwrap();
        assert_eq!(own.name, "daemon");
        assert_eq!(own.path, "/srv/homes/daemon");
        let again = server
            .share_for("HOMES", &session("daemon"), &daemon)
            .unwrap();
        assert!(Arc::ptr_eq(&own, &again), "homes means one's own home");
        assert_eq!(built.load(Ordering::Relaxed), 1);

        let status = |name: &str, user: &SessionUser, who: &Identity| {
            server.share_for(name, user, who).err().map(|e| e.status)
        };
        assert_eq!(
            status("bin", &session("daemon"), &daemon),
            Some(NtStatus::ACCESS_DENIED)
        );
        assert_eq!(
            status("no-such-account", &session("daemon"), &daemon),
            Some(NtStatus::BAD_NETWORK_NAME)
        );
        for hostile in ["../bin", "daemon/..", "daemon\0", ".."] {
            assert!(
                status(hostile, &session("daemon"), &daemon).is_some(),
                "{hostile:?}"
            );
        }
        let root = ids.identity(0);
        assert_eq!(
            status("root", &session("root"), &root),
            Some(NtStatus::BAD_NETWORK_NAME)
        );
        let unknown_uid = ids.identity(4_000_000);
        assert_eq!(
            status("ghost", &session("ghost"), &unknown_uid),
            Some(NtStatus::BAD_NETWORK_NAME)
        );
        let anonymous = ids.anonymous();
        assert_eq!(
            status("homes", &SessionUser::Anonymous, &anonymous),
            Some(NtStatus::BAD_NETWORK_NAME)
        );
        assert_eq!(built.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_home_is_listed_to_its_owner_only() {
        let names = |server: &Arc<Server>, viewer: Option<(&str, u32)>| -> Vec<String> {
            let dir = ServerDirectory::new(server);
            let dir = match viewer {
                Some((name, uid)) => dir.seen_by(session(name), Arc::new(server.ids.identity(uid))),
                None => dir,
            };
            dir.shares().into_iter().map(|s| s.name).collect()
        };
        let (server, built) = server_with_homes(false);
        assert_eq!(names(&server, Some(("daemon", 1))), ["IPC$", "daemon"]);
        assert_eq!(names(&server, Some(("bin", 2))), ["IPC$", "bin"]);
        assert_eq!(names(&server, Some(("root", 0))), ["IPC$"]);
        assert_eq!(names(&server, None), ["IPC$"]);
        assert_eq!(built.load(Ordering::Relaxed), 0, "listing makes no home");
        let (server, _) = server_with_homes(true);
        assert_eq!(
            names(&server, Some(("daemon", 1))),
            ["IPC$", "homes", "daemon"]
        );
    }
}
