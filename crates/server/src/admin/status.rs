//! What an administrator sees and may do while the server runs: a read-only snapshot of the
//! connection, session, tree connect and open tables (`smb3d status`), and closing a session or
//! an open (`smb3d close-session`, `smb3d close-file`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use smb3d_crypto::{Cipher, SigningAlgorithm};
use smb3d_dtyp::AccessMask;
use smb3d_smb2::create::{LeaseState, OplockLevel, ShareAccess};

use crate::escape::escape;
use crate::state::caching::Caching;
use crate::state::files::SharedFile;
use crate::state::open::{Open, close_open};
use crate::state::server::Server;
use crate::state::session::{Established, Session, SessionUser, tear_down};
use crate::state::share::Share;

/// How much of a session's or tree connect's traffic a protection covers (smbstatus'
/// "degree").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Degree {
    /// Not used.
    None,
    /// Available and used by some messages, not required.
    Partial,
    /// Required for every message.
    Full,
}

impl Degree {
    /// smbstatus' name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Partial => "partial",
            Self::Full => "full",
        }
    }
}

/// Signing or encryption of a session or tree connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protection {
    /// The algorithm (Samba's names: "AES-128-GMAC", "AES-256-GCM", ...), when keys exist.
    pub algorithm: Option<&'static str>,
    pub degree: Degree,
}

impl Protection {
    const NONE: Self = Self {
        algorithm: None,
        degree: Degree::None,
    };
}

/// The transport connection a session arrived on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// Server-unique id of the connection.
    pub id: u64,
    /// The client's address, when the transport knows it.
    pub client: Option<SocketAddr>,
    /// The negotiated dialect revision (0x0202 ... 0x0311); None before NEGOTIATE.
    pub dialect: Option<u16>,
    pub connected_at: SystemTime,
}

/// Who an established session is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The account's name as the user database spells it; None for an anonymous (null)
    /// session.
    pub name: Option<String>,
    /// The account's domain: this server's NetBIOS name, which every account of the user
    /// database belongs to; empty for an anonymous session.
    pub domain: String,
    /// The domain the client sent at logon, which proves nothing.
    pub claimed_domain: String,
    /// The Unix ids file-system work runs with.
    pub uid: u32,
    pub gid: u32,
}

/// One session (MS-SMB2 3.3.1.8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// SessionId, also the id `close-session` takes.
    pub id: u64,
    pub connection: ConnectionInfo,
    /// None while authentication is still in progress.
    pub user: Option<UserInfo>,
    pub signing: Protection,
    pub encryption: Protection,
}

/// One tree connect (MS-SMB2 3.3.1.9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeInfo {
    pub session_id: u64,
    /// TreeId, unique within its session.
    pub id: u32,
    pub share: String,
    pub client: Option<SocketAddr>,
    pub connected_at: SystemTime,
    pub signing: Protection,
    pub encryption: Protection,
}

/// One open (MS-SMB2 3.3.1.10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenInfo {
    /// FileId.Volatile, server-unique; the id `close-file` takes.
    pub id: u64,
    pub session_id: u64,
    pub tree_id: u32,
    pub share: String,
    /// The shared directory on this server, for disk shares with a known path.
    pub share_path: Option<PathBuf>,
    /// The file's path within the share, '/'-separated; empty for the share's root.
    pub path: String,
    pub uid: u32,
    /// Open.GrantedAccess.
    pub access: AccessMask,
    /// The ShareAccess the open was made with.
    pub share_access: ShareAccess,
    pub is_directory: bool,
    /// The file will be deleted when its last open closes.
    pub delete_pending: bool,
    /// The file's identity (st_dev, st_ino).
    pub device: u64,
    pub inode: u64,
    pub opened_at: SystemTime,
    /// The oplock the open holds (Open.OplockLevel): NONE, II, EXCLUSIVE, BATCH, or LEASE
    /// when it belongs to a lease.
    pub oplock: OplockLevel,
    /// The lease the open belongs to: its key and state (Lease.LeaseState, MS-SMB2 3.3.1.4).
    pub lease: Option<([u8; 16], LeaseState)>,
}

/// One byte-range lock (MS-FSA 2.1.1.5), held through an open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    /// The open holding it ([`OpenInfo::id`]).
    pub open_id: u64,
    pub session_id: u64,
    pub share: String,
    pub share_path: Option<PathBuf>,
    pub path: String,
    pub device: u64,
    pub inode: u64,
    pub offset: u64,
    pub length: u64,
    /// An exclusive (write) lock rather than a shared (read) one.
    pub exclusive: bool,
}

/// The server's tables at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub sessions: Vec<SessionInfo>,
    pub trees: Vec<TreeInfo>,
    pub opens: Vec<OpenInfo>,
    pub locks: Vec<LockInfo>,
}

/// Samba's name for a signing algorithm.
pub fn signing_name(algorithm: SigningAlgorithm) -> &'static str {
    match algorithm {
        SigningAlgorithm::HmacSha256 => "HMAC-SHA256",
        SigningAlgorithm::AesCmac => "AES-128-CMAC",
        SigningAlgorithm::AesGmac => "AES-128-GMAC",
    }
}

/// Samba's name for a cipher.
pub fn cipher_name(cipher: Cipher) -> &'static str {
    match cipher {
        Cipher::Aes128Ccm => "AES-128-CCM",
        Cipher::Aes128Gcm => "AES-128-GCM",
        Cipher::Aes256Ccm => "AES-256-CCM",
        Cipher::Aes256Gcm => "AES-256-GCM",
    }
}

/// Samba's name for a dialect revision ("SMB3_11").
pub fn dialect_name(revision: u16) -> String {
    match revision {
        0x0202 => "SMB2_02".into(),
        0x0210 => "SMB2_10".into(),
        0x0300 => "SMB3_00".into(),
        0x0302 => "SMB3_02".into(),
        0x0311 => "SMB3_11".into(),
        other => format!("0x{other:04x}"),
    }
}

/// Signing and encryption of a session: keys exist once it is established; the degree says
/// whether they are required or merely used.
fn session_protection(
    session: &Session,
    signing_algorithm: Option<SigningAlgorithm>,
) -> (Protection, Protection) {
    let st = session.state.lock();
    let Some(e) = st.established.as_ref() else {
        return (Protection::NONE, Protection::NONE);
    };
    let degree = |required: bool, seen: bool| {
        if required {
            Degree::Full
        } else if seen {
            Degree::Partial
        } else {
            Degree::None
        }
    };
    let signing = match (&e.signer, signing_algorithm) {
        (Some(_), Some(algorithm)) => Protection {
            algorithm: Some(signing_name(algorithm)),
            degree: degree(e.signing_required, session.seen.signed()),
        },
        _ => Protection::NONE,
    };
    let encryption = match &e.cipher {
        Some(cipher) => Protection {
            algorithm: Some(cipher_name(cipher.cipher())),
            degree: degree(e.encrypt_data, session.seen.encrypted()),
        },
        None => Protection::NONE,
    };
    (signing, encryption)
}

/// An open as `snapshot` shows it, read from its file's table of opens.
fn open_info((session_id, share, open): FoundOpen) -> OpenInfo {
    let (path, share_access, delete_pending, (oplock, lease)) = {
        let state = open.shared.state.lock();
        let entry = state.opens.iter().find(|e| e.id == open.file_id.volatile);
        let caching = match entry.map(|e| &e.caching) {
            Some(Caching::Oplock { level, .. }) => (*level, None),
            Some(Caching::Lease(id)) => (
                OplockLevel::LEASE,
                state
                    .leases
                    .iter()
                    .find(|l| l.id == *id)
                    .map(|l| (id.key.0, LeaseState(l.state))),
            ),
            Some(Caching::None) | None => (OplockLevel::NONE, None),
        };
        (
            state.path.as_str().to_owned(),
            entry.map_or(ShareAccess::empty(), |e| e.share),
            state.delete_pending.is_some(),
            caching,
        )
    };
    OpenInfo {
        id: open.file_id.volatile,
        session_id,
        tree_id: open.tree_id(),
        share: share.as_ref().map_or_else(String::new, |s| s.name.clone()),
        share_path: share
            .filter(|s| !s.path.is_empty())
            .map(|s| PathBuf::from(&s.path)),
        path,
        uid: open.identity.unix.uid,
        access: open.granted,
        share_access,
        is_directory: open.is_directory,
        delete_pending,
        device: open.shared.key.dev,
        inode: open.shared.key.ino,
        opened_at: open.opened_at,
        oplock,
        lease,
    }
}

/// The byte-range locks the `opens` hold: they belong to opens, and each file's table is read
/// once.
fn locks_of(opens: &[OpenInfo], shared_files: &[Arc<SharedFile>]) -> Vec<LockInfo> {
    let mut locks = Vec::new();
    let mut files_seen = Vec::new();
    for open in opens {
        let key = (open.device, open.inode);
        if files_seen.contains(&key) {
            continue;
        }
        files_seen.push(key);
        let Some(file) = shared_files.iter().find(|f| (f.key.dev, f.key.ino) == key) else {
            continue;
        };
        for lock in file.locks.held() {
            let Some(holder) = opens.iter().find(|o| o.id == lock.owner) else {
                continue;
            };
            locks.push(LockInfo {
                open_id: lock.owner,
                session_id: holder.session_id,
                share: holder.share.clone(),
                share_path: holder.share_path.clone(),
                path: holder.path.clone(),
                device: key.0,
                inode: key.1,
                offset: lock.offset,
                length: lock.length,
                exclusive: lock.exclusive,
            });
        }
    }
    locks
}

/// A tree connect's protection: its session's, full where the share requires it.
fn tree_protection(session: Protection, required: bool) -> Protection {
    if required && session.algorithm.is_some() {
        Protection {
            degree: Degree::Full,
            ..session
        }
    } else {
        session
    }
}

/// An open found in a session's table, with the share of its tree connect.
type FoundOpen = (u64, Option<Arc<Share>>, Arc<Open>);

impl Server {
    /// The sessions, tree connects and opens of every connection, as they are now.
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot::default();
        let mut opens = Vec::new();
        for conn in self.live_connections() {
            let negotiated = conn.negotiated.get();
            let connection = ConnectionInfo {
                id: conn.id,
                client: conn.peer,
                dialect: negotiated.map(|n| n.dialect),
                connected_at: conn.connected_at,
            };
            let signing_algorithm = negotiated.map(|n| n.signing_algorithm);
            for session in conn.sessions() {
                let (signing, encryption) = session_protection(&session, signing_algorithm);
                let st = session.state.lock();
                let user = st.established.as_ref().map(|e| self.user_info(e));
                for tree in st.trees.values() {
                    snapshot.trees.push(TreeInfo {
                        session_id: session.id,
                        id: tree.id,
                        share: tree.share.name.clone(),
                        client: connection.client,
                        connected_at: tree.connected_at,
                        signing: tree_protection(signing, tree.share.require_signing),
                        encryption: tree_protection(encryption, tree.encrypt_data),
                    });
                }
                opens.extend(st.opens.values().map(|o| {
                    let share = st.trees.get(&o.tree_id()).map(|t| t.share.clone());
                    (session.id, share, o.clone())
                }));
                drop(st);
                snapshot.sessions.push(SessionInfo {
                    id: session.id,
                    connection: connection.clone(),
                    user,
                    signing,
                    encryption,
                });
            }
        }
        // File state is read with no session lock held: handlers take them the other way round.
        let mut shared_files: Vec<Arc<SharedFile>> = Vec::new();
        for found in opens {
            let open = &found.2;
            if !shared_files.iter().any(|f| Arc::ptr_eq(f, &open.shared)) {
                shared_files.push(open.shared.clone());
            }
            snapshot.opens.push(open_info(found));
        }
        snapshot.locks = locks_of(&snapshot.opens, &shared_files);
        snapshot.sessions.sort_by_key(|s| s.id);
        snapshot.trees.sort_by_key(|t| (t.session_id, t.id));
        snapshot.opens.sort_by_key(|o| o.id);
        snapshot
            .locks
            .sort_by_key(|l| (l.device, l.inode, l.offset, l.open_id));
        snapshot
    }

    /// Who a session's logon established, as `snapshot` shows it.
    fn user_info(&self, established: &Established) -> UserInfo {
        let (name, domain, claimed_domain) = match &established.user {
            SessionUser::User {
                name,
                claimed_domain,
            } => (
                Some(name.clone()),
                self.identity.netbios_name.clone(),
                claimed_domain.clone(),
            ),
            SessionUser::Anonymous => (None, String::new(), String::new()),
        };
        UserInfo {
            name,
            domain,
            claimed_domain,
            uid: established.identity.unix.uid,
            gid: established.identity.unix.gid,
        }
    }

    /// Logs a session off as if it had sent LOGOFF: its opens are closed and its tree connects
    /// end. A connection left without sessions is closed, so that the client reconnects and
    /// authenticates again. False when no session has that id.
    pub fn close_session(&self, id: u64) -> bool {
        for conn in self.live_connections() {
            if conn.session(id).is_none() {
                continue;
            }
            if let Some(session) = conn.remove_session(id) {
                tear_down(self, &session);
                if conn.sessions().is_empty() {
                    conn.end();
                }
                tracing::info!(session = id, "session closed by the administrator");
                return true;
            }
        }
        false
    }

    /// Disconnects every tree connect of the share `name` (case-insensitively) as
    /// TREE_DISCONNECT would, as Samba's `smbcontrol smbd close-share` does: its opens are
    /// closed and the clients' next request on such a tree gets STATUS_NETWORK_NAME_DELETED
    /// (MS-SMB2 3.3.5.2.11). Returns how many tree connects were closed.
    pub fn close_share(&self, name: &str) -> usize {
        let sessions: Vec<Arc<Session>> = self.sessions.lock().values().cloned().collect();
        let mut closed = 0;
        for session in sessions {
            let (trees, opens) = {
                let mut st = session.state.lock();
                let ids: Vec<u32> = st
                    .trees
                    .iter()
                    .filter(|(_, tree)| tree.share.name.eq_ignore_ascii_case(name))
                    .map(|(id, _)| *id)
                    .collect();
                let mut trees = Vec::with_capacity(ids.len());
                let mut opens = Vec::new();
                for id in ids {
                    trees.extend(st.trees.remove(&id));
                    opens.extend(st.take_opens(Some(id)));
                }
                (trees, opens)
            };
            for tree in &trees {
                tree.pipes.close_all();
            }
            for open in opens {
                close_open(self, &open);
            }
            closed += trees.len();
        }
        if closed > 0 {
            tracing::info!(
                share = &*escape(name),
                trees = closed,
                "share closed by the administrator"
            );
        }
        closed
    }

    /// Closes one open as CLOSE would (running delete-on-close); the client's handle is then
    /// invalid. False when no open has that id.
    pub fn close_file(&self, id: u64) -> bool {
        let sessions: Vec<Arc<Session>> = self.sessions.lock().values().cloned().collect();
        for session in sessions {
            let open = session.state.lock().opens.remove(&id);
            if let Some(open) = open {
                close_open(self, &open);
                tracing::info!(
                    file = id,
                    path = &*escape(open.path().as_str()),
                    "open closed by the administrator"
                );
                return true;
            }
        }
        false
    }
}
