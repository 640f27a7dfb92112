//! TREE_CONNECT: MS-SMB2 3.3.5.7.

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::error::{ErrorContext, ErrorId};
use smb3d_smb2::header::HeaderFlags;
use smb3d_smb2::tree_connect::{
    ShareFlags, ShareType, TreeCapabilities, TreeConnectFlags, TreeConnectRequest,
    TreeConnectResponse,
};
use smb3d_state::ClusterDialect;
use smb3d_vfs::VfsPath;
use smb3d_wire::Writer;

use std::sync::Arc;

use crate::identity::{Accounts, IdMap, Identity};
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::state::audit;
use crate::state::connection::Connection;
use crate::state::connection::limits::admit_tree;
use crate::state::domain_names::ListNames;
use crate::state::server::EncryptionPolicy;
use crate::state::session::{Session, SessionUser, Tree, TreeAccess};
use crate::state::share::{Share, ShareKind};

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = TreeConnectRequest::decode(pdu).map_err(malformed)?;
    let session = cx.session.clone().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let user = session.user().ok_or(NtStatus::USER_SESSION_DELETED)?;
    // 3.1.1 clients prove the negotiation untampered only through signed messages, so an
    // authenticated session's TREE_CONNECT must be signed or encrypted.
    let signed = cx.hdr.flags.contains(HeaderFlags::SIGNED);
    if cx.negotiated.dialect == 0x0311 && user != SessionUser::Anonymous && !signed && !cx.encrypted
    {
        cx.disconnect = Some("unsigned 3.1.1 TREE_CONNECT");
        return Err(NtStatus::ACCESS_DENIED);
    }
    admit_tree(cx.conn, &session)?;
    let share_name = share_name(&req.path).ok_or(NtStatus::BAD_NETWORK_NAME)?;
    let identity = session.identity().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let share = match cx.conn.server.share_for(share_name, &user, &identity) {
        Ok(share) => share,
        Err(none) => {
            if let Some(reason) = none.refused {
                audit::tree_refused(share_name, &user, cx.conn, reason);
            }
            return Err(none.status);
        }
    };
    // A cluster node's disk shares are its cluster shares (MS-SMB2 3.3.5.7).
    let cluster = (cx.conn.server.settings.cluster_dialect.as_deref())
        .filter(|_| matches!(share.kind, ShareKind::Disk(_)));
    if let Some(fence) = cluster {
        cluster_fence(cx, fence, req.flags)?;
    }

    // Samba answers a host its rules refuse on this share with ACCESS_DENIED, as a share
    // the user may not connect to (MS-SMB2 3.3.5.7 leaves the check to the server).
    if let Some(peer) = cx.conn.peer
        && !share.hosts.admits(peer.ip())
    {
        audit::tree_refused(
            &share.name,
            &user,
            cx.conn,
            "client address refused by hosts_allow/hosts_deny",
        );
        return Err(NtStatus::ACCESS_DENIED);
    }
    cx.conn.server.resolve_list_names(&share);
    let server = &cx.conn.server;
    let access = tree_access(&server.ids, &server.list_names(), &share, &user, &identity)
        .inspect_err(|_| {
            audit::tree_refused(
                &share.name,
                &user,
                cx.conn,
                "user refused by the share's user lists",
            );
        })?;
    let maximal_access = access.maximal_access;
    let share_type = match share.kind {
        ShareKind::Disk(_) => ShareType::DISK,
        ShareKind::Ipc => ShareType::PIPE,
    };
    // Share.EncryptData (3.3.5.7): a share that requires encryption refuses a client that
    // cannot encrypt; one that asks for it tells clients that can.
    let policy = share.encryption;
    let can_encrypt = session.encryption().is_some();
    if policy == EncryptionPolicy::Required && !can_encrypt {
        audit::tree_refused(&share.name, &user, cx.conn, "the share requires encryption");
        return Err(NtStatus::ACCESS_DENIED);
    }
    let encrypt_data = can_encrypt && policy.asks();
    let mut share_flags = ShareFlags::MANUAL_CACHING;
    if encrypt_data {
        share_flags |= ShareFlags::ENCRYPT_DATA;
    }
    if share.hide_unreadable {
        share_flags |= ShareFlags::ACCESS_BASED_DIRECTORY_ENUM;
    }
    let audit = audit::subject(&share, &user, cx.conn);
    let connected_at = cx.conn.server.settings.clock.wall();
    let tree =
        session
            .state
            .lock()
            .add_tree(share.clone(), access, encrypt_data, audit, connected_at);
    cx.response_tree_id = Some(tree.id);
    TreeConnectResponse {
        share_type,
        share_flags,
        capabilities: capabilities(&share, cx.negotiated.dialect, cluster.is_some()),
        maximal_access,
    }
    .encode(w);
    Ok(NtStatus::SUCCESS)
}

/// MaxClusterDialect (MS-SMB2 3.3.5.7): a connection above the cluster's dialect connects to
/// a cluster share only as a reconnect; a 3.1.1 client's refusal carries the dialect to
/// connect at in an error context (3.2.5.5).
fn cluster_fence(
    cx: &mut Ctx<'_>,
    fence: &ClusterDialect,
    flags: TreeConnectFlags,
) -> Result<(), NtStatus> {
    let dialect = cx.negotiated.dialect;
    let reconnect = flags.contains(TreeConnectFlags::CLUSTER_RECONNECT);
    let Err(max) = fence.admit(dialect, reconnect) else {
        return Ok(());
    };
    if dialect == 0x0311 {
        let context = ErrorContext {
            error_id: ErrorId::DEFAULT,
            data: &max.to_le_bytes(),
        };
        context.encode(&mut Writer::new(&mut cx.error_data));
        cx.error_contexts = 1;
    }
    Err(NtStatus::SMB_BAD_CLUSTER_DIALECT)
}

/// The share's Capabilities (MS-SMB2 2.2.10), all of them SMB 3 ones: Share.IsCA, for a
/// cluster node's shares CLUSTER (Share.Type STYPE_CLUSTER_FS, every node serves them at
/// once), and SCALEOUT for its scale-out shares (STYPE_CLUSTER_SOFS).
fn capabilities(share: &Share, dialect: u16, cluster: bool) -> TreeCapabilities {
    let mut capabilities = TreeCapabilities::empty();
    if dialect < 0x0300 {
        return capabilities;
    }
    if share.continuous_availability {
        capabilities |= TreeCapabilities::CONTINUOUS_AVAILABILITY;
    }
    if cluster {
        capabilities |= TreeCapabilities::CLUSTER;
        if share.scale_out {
            capabilities |= TreeCapabilities::SCALEOUT;
        }
    }
    capabilities
}

/// What `share` lets a session of `user` with identity `who` do, as a TREE_CONNECT decides it:
/// refused where the share does not admit the user; read-only where it is so for the user.
fn tree_access(
    ids: &IdMap,
    dc: &ListNames<'_>,
    share: &Share,
    user: &SessionUser,
    who: &Identity,
) -> Result<TreeAccess, NtStatus> {
    if !share.admits(user, who, dc) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let read_only = share.read_only_for(user, who, dc);
    let maximal_access = if read_only {
        AccessMask::FILE_GENERIC_READ | AccessMask::FILE_GENERIC_EXECUTE
    } else {
        AccessMask::FILE_ALL_ACCESS
    };
    Ok(TreeAccess {
        maximal_access,
        read_only,
        identity: forced_identity(ids, share, who, share.is_admin(user, who, dc))?.map(Arc::new),
        recycle_to: recycle_to(share, user),
    })
}

/// The recycle bin repository of `user` on `share`; none where the user's name cannot name
/// one (their deletes are then real, see [`crate::fs::recycle::RecycleBin::repository_for`]).
fn recycle_to(share: &Share, user: &SessionUser) -> Option<Arc<VfsPath>> {
    let name = match user {
        SessionUser::User { name, .. } => name.as_str(),
        SessionUser::Anonymous => "",
    };
    share.recycle.as_ref()?.repository_for(name).map(Arc::new)
}

/// The session's tree connects as a re-authentication as `user` with identity `who` leaves
/// them (MS-SMB2 3.3.5.5.2): each allows what a TREE_CONNECT of that identity would get, and
/// opens nothing new where the share would refuse it. To replace the session's trees
/// (`SessionState::renew_tree`) together with its identity.
pub(crate) fn renew_trees(
    conn: &Connection,
    session: &Session,
    user: &SessionUser,
    who: &Identity,
) -> Vec<Arc<Tree>> {
    let trees: Vec<Arc<Tree>> = session.state.lock().trees.values().cloned().collect();
    trees
        .iter()
        .map(|tree| {
            let dc = conn.server.list_names();
            let access = tree_access(&conn.server.ids, &dc, &tree.share, user, who).ok();
            Arc::new(tree.renewed(access, audit::subject(&tree.share, user, conn)))
        })
        .collect()
}

/// The identity sessions have on a share that forces a user or group, or for an `admin` of
/// the share root's (as Samba's `admin users` work as the super-user); a forced account that
/// does not exist (any more) refuses the connect.
fn forced_identity(
    ids: &IdMap,
    share: &Share,
    session: &Identity,
    admin: bool,
) -> Result<Option<Identity>, NtStatus> {
    if admin {
        // Root on disk, still the user to ACLs: a descriptor it inherits names the user as
        // owner, as Samba's admin users keep their token.
        return Ok(Some(Identity {
            token: session.token.clone(),
            unix: ids.identity(0).unix,
        }));
    }
    if share.force_user.is_none() && share.force_group.is_none() {
        return Ok(None);
    }
    let accounts = Accounts::read();
    let unknown = |kind: &str, name: &str| {
        tracing::error!(share = %share.name, "force {kind} {name:?} is not a Unix {kind}");
        NtStatus::NO_SUCH_USER
    };
    let user = match &share.force_user {
        Some(name) => Some(accounts.uid_of(name).ok_or_else(|| unknown("user", name))?),
        None => None,
    };
    let group = match &share.force_group {
        Some(name) => Some(
            accounts
                .gid_of(name)
                .ok_or_else(|| unknown("group", name))?,
        ),
        None => None,
    };
    Ok(Some(ids.forced(session, user, group)))
}

/// The share part of `\\server\share` (MS-SMB2 2.2.9: the path names the server too).
fn share_name(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("\\\\")?;
    let (_server, share) = rest.split_once('\\')?;
    (!share.is_empty() && !share.contains('\\')).then_some(share)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use smb3d_vfs::MemoryVfs;

    use super::{ListNames, SessionUser, Share, share_name, tree_access};
    use crate::identity::IdMap;

    /// `admin_users` work as root on their share (uid and gid 0, so every access check passes
    /// and their files are root's) with their own token; others, and guests, keep their own
    /// identity.
    #[test]
    fn admin_users_act_as_root() {
        let ids = IdMap::new("T");
        let who = ids.identity(4242);
        let boss = SessionUser::User {
            name: "boss".into(),
            claimed_domain: "OFFICE".into(),
        };
        let worker = SessionUser::User {
            name: "worker".into(),
            claimed_domain: "OFFICE".into(),
        };
        let mut share = Share::disk("office", Arc::new(MemoryVfs::new()));
        share.admin_users = vec!["BOSS".into()];
        let dc = ListNames::without_dc(ids.domains());
        let access = tree_access(&ids, &dc, &share, &boss, &who).unwrap();
        let root = access.identity.expect("an admin's identity is forced");
        assert_eq!((root.unix.uid, root.unix.gid), (0, 0));
        assert_eq!(root.token, who.token, "the token stays the user's");
        assert!(
            tree_access(&ids, &dc, &share, &worker, &who)
                .unwrap()
                .identity
                .is_none()
        );
        share.guest_ok = true;
        let guest =
            tree_access(&ids, &dc, &share, &SessionUser::Anonymous, &ids.anonymous()).unwrap();
        assert!(guest.identity.is_none(), "a guest is never an admin");
    }

    #[test]
    fn share_names() {
        assert_eq!(share_name("\\\\127.0.0.1\\demo"), Some("demo"));
        assert_eq!(share_name("\\\\srv\\IPC$"), Some("IPC$"));
        assert_eq!(share_name("\\\\srv"), None);
        assert_eq!(share_name("\\\\srv\\"), None);
        assert_eq!(share_name("\\\\srv\\a\\b"), None);
        assert_eq!(share_name("srv\\a"), None);
    }
}
