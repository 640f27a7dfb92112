//! Sessions (MS-SMB2 3.3.1.8), their tree connects (3.3.1.9) and their opens.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::SystemTime;

use parking_lot::Mutex;
use smb3d_auth::{Acceptor, Principal};
use smb3d_crypto::{Cipher, MessageSigner, PreauthHash, SigningAlgorithm};
use smb3d_dtyp::AccessMask;
use smb3d_vfs::VfsPath;

use crate::address_slots::AddressSlot;
use crate::identity::Identity;
use crate::state::audit;
use crate::state::connection::Connection;
use crate::state::encryption::SessionCipher;
use crate::state::open::{Open, close_open};
use crate::state::pipes::PipeTable;
use crate::state::server::Server;
use crate::state::share::Share;

/// Who a session belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionUser {
    User {
        /// The account's name as the user database spells it, fixed at logon: what every
        /// later check, log line and audit record uses.
        name: String,
        /// The domain the client sent, which proves nothing (`smb3d_auth::Principal`).
        claimed_domain: String,
    },
    /// A null session (MS-SMB2 SMB2_SESSION_FLAG_IS_NULL): no user, no keys.
    Anonymous,
}

impl From<Principal> for SessionUser {
    fn from(principal: Principal) -> Self {
        match principal {
            Principal::User {
                name,
                claimed_domain,
            } => SessionUser::User {
                name,
                claimed_domain,
            },
            // A guest acts as an anonymous session does: no keys, the guest account, only
            // shares that admit guests.
            Principal::Anonymous | Principal::Guest => SessionUser::Anonymous,
        }
    }
}

impl SessionUser {
    /// Whether `self` and `other` are the same proven account: named users of the same name (the
    /// user database's spelling, fixed at logon). An anonymous logon proves no one, so
    /// it is the same account as no one, another anonymous logon included. The one comparison
    /// of who a session is (re-authentication, binding, PreviousSessionId, durable reclaim).
    pub fn same_account(&self, other: &SessionUser) -> bool {
        match (self, other) {
            (SessionUser::User { name, .. }, SessionUser::User { name: other, .. }) => {
                name == other
            }
            _ => false,
        }
    }
}

/// An authentication exchange still under way (Session.State InProgress).
pub(crate) struct AuthExchange {
    pub acceptor: Acceptor,
    /// Session.PreauthIntegrityHashValue for 3.1.1.
    pub preauth: Option<PreauthHash>,
    /// When the last leg arrived; a stalled exchange is dropped (`connection::limits`).
    pub last_leg: tokio::time::Instant,
    /// Its place among its address's logons under way, if it takes one
    /// ([`Connection::admit_logon`]); freed however the exchange ends.
    pub _address_slot: Option<AddressSlot>,
}

/// The established part of a session.
pub(crate) struct Established {
    /// Who the first authentication proved: re-authentications renew this user or drop to
    /// anonymous, and never make the session another user's.
    pub owner: SessionUser,
    /// Who the session acts for now.
    pub user: SessionUser,
    /// The token ACLs are checked against and the Unix credentials file work runs with.
    pub identity: Arc<Identity>,
    /// Signs and verifies with Session.SigningKey (the requests that bind a channel and the
    /// responses to them until the channel has its own key); None for null sessions.
    pub signer: Option<Arc<dyn MessageSigner>>,
    /// Session.SigningRequired.
    pub signing_required: bool,
    /// The session's ciphers, when the connection negotiated one.
    pub cipher: Option<Arc<SessionCipher>>,
    /// Session.EncryptData: every request must come, and every response goes, encrypted.
    pub encrypt_data: bool,
}

/// One connection the session is bound to (MS-SMB2 3.3.1.8 Session.ChannelList).
pub(crate) struct Channel {
    pub conn: Weak<Connection>,
    /// Signs and verifies with Channel.SigningKey; None for null sessions.
    pub signer: Option<Arc<dyn MessageSigner>>,
}

pub(crate) struct SessionState {
    /// Present while a (re-)authentication runs.
    pub exchange: Option<AuthExchange>,
    /// Present once the first authentication succeeded.
    pub established: Option<Established>,
    /// The connections the session works on, by `Connection::id`: the one it was set up on,
    /// and those bound to it since (multichannel).
    pub channels: HashMap<u64, Channel>,
    pub trees: HashMap<u32, Arc<Tree>>,
    next_tree_id: u32,
    /// Opens by their volatile file id.
    pub opens: HashMap<u64, Arc<Open>>,
}

/// Whether a session's client has signed or encrypted anything, for status reports (signing
/// or encryption that is used but not required).
#[derive(Default)]
pub(crate) struct SeenTraffic {
    signed: AtomicBool,
    encrypted: AtomicBool,
}

impl SeenTraffic {
    /// Notes a validly signed request; only the first one writes.
    pub fn note_signed(&self) {
        if !self.signed.load(Ordering::Relaxed) {
            self.signed.store(true, Ordering::Relaxed);
        }
    }

    /// Notes a request that arrived encrypted; only the first one writes.
    pub fn note_encrypted(&self) {
        if !self.encrypted.load(Ordering::Relaxed) {
            self.encrypted.store(true, Ordering::Relaxed);
        }
    }

    pub fn signed(&self) -> bool {
        self.signed.load(Ordering::Relaxed)
    }

    pub fn encrypted(&self) -> bool {
        self.encrypted.load(Ordering::Relaxed)
    }
}

/// What Session.Connection negotiated, which a connection binding to the session must match
/// (MS-SMB2 3.3.5.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Origin {
    pub dialect: u16,
    pub signing_algorithm: SigningAlgorithm,
    pub cipher: Option<Cipher>,
}

pub(crate) struct Session {
    pub id: u64,
    pub origin: Origin,
    pub state: Mutex<SessionState>,
    pub seen: SeenTraffic,
    /// Held while the session's opens are closed or kept after its connection went
    /// (`durable::disconnect_session`), so that a second teardown (a reconnect naming it as
    /// PreviousSessionId) returns only once the first is done.
    pub teardown: Mutex<()>,
    /// Session.ExpirationTime (MS-SMB2 3.3.1.8): when the Kerberos ticket of its last
    /// authentication ends, in seconds since 1970; 0 for a logon that does not expire (NTLM).
    /// An atomic, so that checking it (3.3.5.2.9) takes no lock per request.
    pub expires: std::sync::atomic::AtomicI64,
}

impl Session {
    /// Whether the session's ticket has ended by `clock` (read only for a session that can
    /// expire).
    pub fn expired(&self, clock: &dyn crate::clock::Clock) -> bool {
        let expires = self.expires.load(std::sync::atomic::Ordering::Relaxed);
        expires != 0 && (clock.filetime().0 / 10_000_000) as i64 - 11_644_473_600 >= expires
    }

    pub fn new(id: u64, origin: Origin) -> Self {
        Self {
            id,
            origin,
            seen: SeenTraffic::default(),
            teardown: Mutex::new(()),
            expires: std::sync::atomic::AtomicI64::new(0),
            state: Mutex::new(SessionState {
                exchange: None,
                established: None,
                channels: HashMap::new(),
                trees: HashMap::new(),
                next_tree_id: 1,
                opens: HashMap::new(),
            }),
        }
    }

    /// The signer of the channel on connection `conn` and whether signing is required, if
    /// the session is established.
    pub fn signing(&self, conn: u64) -> Option<(Option<Arc<dyn MessageSigner>>, bool)> {
        let st = self.state.lock();
        let signer = st.channels.get(&conn).and_then(|c| c.signer.clone());
        st.established
            .as_ref()
            .map(|e| (signer, e.signing_required))
    }

    /// Signs with Session.SigningKey, once established (for binding a channel).
    pub fn session_signer(&self) -> Option<Arc<dyn MessageSigner>> {
        let st = self.state.lock();
        st.established.as_ref().and_then(|e| e.signer.clone())
    }

    /// A live connection of the session, to send a break through when the open's own
    /// connection is gone (MS-SMB2 3.3.4.6, 3.3.4.7).
    pub fn any_channel(&self) -> Option<Arc<Connection>> {
        let st = self.state.lock();
        st.channels.values().find_map(|c| c.conn.upgrade())
    }

    /// Unbinds connection `conn`; true if the session still works on another one.
    pub fn unbind(&self, conn: u64) -> bool {
        let mut st = self.state.lock();
        st.channels.remove(&conn);
        st.channels.values().any(|c| c.conn.strong_count() > 0)
    }

    /// The session's ciphers and Session.EncryptData, if established with a cipher.
    pub fn encryption(&self) -> Option<(Arc<SessionCipher>, bool)> {
        let st = self.state.lock();
        st.established
            .as_ref()
            .and_then(|e| e.cipher.clone().map(|c| (c, e.encrypt_data)))
    }

    pub fn identity(&self) -> Option<Arc<Identity>> {
        self.state
            .lock()
            .established
            .as_ref()
            .map(|e| e.identity.clone())
    }

    pub fn user(&self) -> Option<SessionUser> {
        self.state
            .lock()
            .established
            .as_ref()
            .map(|e| e.user.clone())
    }

    /// Who the session's first authentication proved, once established.
    pub fn owner(&self) -> Option<SessionUser> {
        self.state
            .lock()
            .established
            .as_ref()
            .map(|e| e.owner.clone())
    }
}

impl SessionState {
    pub fn add_tree(
        &mut self,
        share: Arc<Share>,
        access: TreeAccess,
        encrypt_data: bool,
        audit: Option<Arc<audit::Subject>>,
        connected_at: SystemTime,
    ) -> Arc<Tree> {
        let id = self.next_tree_id;
        self.next_tree_id = self.next_tree_id.wrapping_add(1).max(1);
        let tree = Arc::new(Tree {
            id,
            share,
            admitted: true,
            maximal_access: access.maximal_access,
            read_only: access.read_only,
            identity: access.identity,
            encrypt_data,
            pipes: Arc::default(),
            connected_at,
            audit,
            recycle_to: access.recycle_to,
        });
        self.trees.insert(id, tree.clone());
        tree
    }

    /// Puts `tree` in place of the tree connect of its id, if the session still has it.
    pub fn renew_tree(&mut self, tree: Arc<Tree>) {
        if let Some(slot) = self.trees.get_mut(&tree.id) {
            *slot = tree;
        }
    }

    /// Removes the opens of one tree (or all with `None`) and returns them to be closed.
    pub fn take_opens(&mut self, tree_id: Option<u32>) -> Vec<Arc<Open>> {
        let ids: Vec<u64> = self
            .opens
            .iter()
            .filter(|(_, o)| tree_id.is_none_or(|t| o.tree_id() == t))
            .map(|(id, _)| *id)
            .collect();
        ids.iter().filter_map(|id| self.opens.remove(id)).collect()
    }

    /// Ends the session's authentication under way and its tree connects (with their named
    /// pipes), and returns all its opens for the caller to close or keep.
    pub fn take_everything(&mut self) -> Vec<Arc<Open>> {
        self.exchange = None;
        for (_, tree) in self.trees.drain() {
            tree.pipes.close_all();
        }
        self.take_opens(None)
    }
}

/// What a tree connect lets its session do, decided at TREE_CONNECT.
pub(crate) struct TreeAccess {
    pub maximal_access: AccessMask,
    pub read_only: bool,
    pub identity: Option<Arc<Identity>>,
    /// This user's recycle bin repository, where the share has a bin.
    pub recycle_to: Option<Arc<VfsPath>>,
}

/// A tree connect (MS-SMB2 3.3.1.9).
pub(crate) struct Tree {
    pub id: u32,
    pub share: Arc<Share>,
    /// The share admits who the session is now. A re-authentication as someone it does not
    /// admit leaves the tree for the opens made through it, but nothing new is opened.
    pub admitted: bool,
    /// TreeConnect.MaximalAccess: the most any open through this tree may be granted.
    pub maximal_access: AccessMask,
    /// Nothing may be changed through this tree (the share's setting for this user).
    pub read_only: bool,
    /// Who the session acts as on this share when the share forces a user or group.
    pub identity: Option<Arc<Identity>>,
    /// TreeConnect.EncryptData.
    pub encrypt_data: bool,
    /// The named pipes opened through this tree connect (`IPC$` only), kept when a
    /// re-authentication renews the tree.
    pub pipes: Arc<PipeTable>,
    /// When the tree was connected, for status reports.
    pub connected_at: SystemTime,
    /// Who to name in audit lines, when the share is audited.
    pub audit: Option<Arc<audit::Subject>>,
    /// Where this user's deleted files go (see [`TreeAccess::recycle_to`]).
    pub recycle_to: Option<Arc<VfsPath>>,
}

impl Tree {
    /// The same tree connect for who the session is after a re-authentication (MS-SMB2
    /// 3.3.5.5.2): what `access` allows, or, where the share does not admit the new identity
    /// (`None`), nothing new and no forced identity. The opens made through it keep what they
    /// were granted, and the requests on them are answered as before.
    pub fn renewed(&self, access: Option<TreeAccess>, audit: Option<Arc<audit::Subject>>) -> Tree {
        let (admitted, access) = match access {
            Some(access) => (true, access),
            None => (
                false,
                TreeAccess {
                    maximal_access: AccessMask::empty(),
                    read_only: self.read_only,
                    identity: None,
                    recycle_to: self.recycle_to.clone(),
                },
            ),
        };
        Tree {
            id: self.id,
            share: self.share.clone(),
            admitted,
            maximal_access: access.maximal_access,
            read_only: access.read_only,
            identity: access.identity,
            recycle_to: access.recycle_to,
            encrypt_data: self.encrypt_data,
            pipes: self.pipes.clone(),
            connected_at: self.connected_at,
            audit,
        }
    }
}

/// Ends a session on every channel and closes everything it holds: its opens (running
/// delete-on-close) and tree connects.
pub(crate) fn tear_down(server: &Server, session: &Session) {
    server.forget_session(session.id);
    let opens = session.state.lock().take_everything();
    for open in opens {
        close_open(server, &open);
    }
    server.sessions.lock().remove(&session.id);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_account_is_the_same_named_user() {
        let user = |name: &str, domain: &str| SessionUser::User {
            name: name.into(),
            claimed_domain: domain.into(),
        };
        // Names are the database's spelling, fixed at logon; the claimed domain proves nothing.
        assert!(user("alice", "WORKGROUP").same_account(&user("alice", "OTHER")));
        assert!(!user("alice", "").same_account(&user("alicia", "")));
        // An anonymous logon proves no one: the same account as no one, itself included.
        let anonymous = SessionUser::Anonymous;
        assert!(!anonymous.same_account(&SessionUser::Anonymous));
        assert!(!anonymous.same_account(&user("alice", "")));
        assert!(!user("alice", "").same_account(&anonymous));
    }
}
