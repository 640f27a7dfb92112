//! CREATE's durable handle phase: the durable contexts a request carries (MS-SMB2 3.3.5.9.6,
//! 3.3.5.9.7, 3.3.5.9.10, 3.3.5.9.12), making a new open durable, and reconnecting a
//! disconnected one.

use std::sync::Arc;
use std::time::Duration;

use smb3d_dtyp::NtStatus;
use smb3d_smb2::create::{
    CreateAction, CreateContext, CreateRequest, DurableHandleFlags, DurableHandleRequestV2,
    DurableHandleResponseV2, Lease, LeaseKey, OplockLevel, ResponseContext,
};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::header::HeaderFlags;
use smb3d_smb2::negotiate::Capabilities;
use smb3d_vfs::VfsPath;
use smb3d_vfs::casefold::eq_ignore_case;

use crate::escape::escape;
use crate::fs::fileinfo;
use crate::request::ctx::Ctx;
use crate::request::reply::Reply;
use crate::state::caching::{Caching, Granted, H, Route};
use crate::state::durable::{
    self, DEFAULT_V2_TIMEOUT, Durability, Known, MAX_V2_TIMEOUT, Reconnect, V1_TIMEOUT,
};
use crate::state::open::{Open, close_open};
use crate::state::persistent;
use crate::status_map::{VfsResultExt, io_status};

/// How long a reconnect waits for the open it names to lose its old connection.
pub(super) const RECONNECT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The durable handle contexts of a CREATE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ask {
    None,
    /// DHnQ.
    V1,
    /// DH2Q.
    V2(DurableHandleRequestV2),
    /// DHnC or DH2C.
    Reconnect(Reconnect),
}

/// The durable contexts of `req`, with the combinations MS-SMB2 3.3.5.9 refuses: a reconnect
/// and a request of the other version (STATUS_INVALID_PARAMETER), DHnQ with DH2Q
/// (STATUS_INVALID_PARAMETER), and a reconnect with contexts other than a lease (and, for
/// DHnC, a DHnQ, which is ignored): STATUS_OBJECT_NAME_NOT_FOUND.
pub(super) fn ask(cx: &Ctx<'_>, req: &CreateRequest<'_>) -> Result<Ask, NtStatus> {
    let (mut dhnq, mut dhnc, mut dh2q, mut dh2c, mut rqls) = (false, None, None, None, false);
    for context in req.contexts.iter().flatten() {
        match context {
            CreateContext::DurableHandleRequest => dhnq = true,
            CreateContext::DurableHandleReconnect { file_id } => dhnc = Some(file_id),
            CreateContext::DurableHandleRequestV2(v2) => dh2q = Some(v2),
            CreateContext::DurableHandleReconnectV2(v2) => dh2c = Some(v2),
            CreateContext::RequestLease(_) => rqls = cx.negotiated.dialect >= 0x0210,
            _ => {}
        }
    }
    if (dhnc.is_some() && (dh2c.is_some() || dh2q.is_some()))
        || (dh2c.is_some() && (dhnq || dh2q.is_some()))
    {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let others = req.contexts.len() - usize::from(rqls) - super::app_instance::contexts(req);
    if let Some(file_id) = dhnc {
        if others != 1 + usize::from(dhnq) {
            return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
        }
        return Ok(Ask::Reconnect(Reconnect {
            file_id,
            create_guid: None,
            persistent: false,
            by_guid: false,
        }));
    }
    if let Some(v2) = dh2c {
        if others != 1 {
            return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
        }
        return Ok(Ask::Reconnect(Reconnect {
            file_id: v2.file_id,
            create_guid: Some(v2.create_guid),
            persistent: v2.flags.contains(DurableHandleFlags::PERSISTENT),
            by_guid: false,
        }));
    }
    match (dhnq, dh2q) {
        (true, Some(_)) => Err(NtStatus::INVALID_PARAMETER),
        (true, None) => Ok(Ask::V1),
        (false, Some(v2)) => Ok(Ask::V2(v2)),
        (false, None) => Ok(Ask::None),
    }
}

/// MS-SMB2 3.3.5.9.10: a DH2Q whose CreateGuid an open already has is a duplicate
/// (STATUS_DUPLICATE_OBJECTID), unless the request is a replay (SMB2_FLAGS_REPLAY_OPERATION):
/// then it is answered for that open as the first time, reconnecting it if it was disconnected.
/// `None` when the request is no such thing and opens as usual.
pub(super) fn replay(
    cx: &mut Ctx<'_>,
    reply: &mut Reply<'_>,
    req: &CreateRequest<'_>,
    ask: Ask,
    name: &VfsPath,
) -> Option<Result<NtStatus, NtStatus>> {
    let Ask::V2(v2) = ask else {
        return None;
    };
    let replay = cx.hdr.flags.contains(HeaderFlags::REPLAY_OPERATION);
    match cx
        .conn
        .server
        .durable
        .by_create_guid((cx.negotiated.client_guid, v2.create_guid))
    {
        Known::Unknown => None,
        Known::InProgress => Some(Err(NtStatus::FILE_NOT_AVAILABLE)),
        Known::Connected(..) | Known::Disconnected(..) if !replay => {
            Some(Err(NtStatus::DUPLICATE_OBJECTID))
        }
        Known::Connected(file_id, durability) => {
            Some(answer_replay(cx, reply, req, file_id, &durability))
        }
        Known::Disconnected(file_id, durability) => {
            let again = Reconnect {
                file_id,
                create_guid: Some(v2.create_guid),
                persistent: durability.persistent,
                by_guid: false,
            };
            Some(reconnect(
                cx,
                reply,
                req,
                name,
                again,
                durability.create_action,
                Some(&durability),
            ))
        }
    }
}

/// Marks a DH2Q create as under way while it runs (see [`durable::Reservation`]).
pub(super) fn reserve(cx: &Ctx<'_>, ask: Ask) -> Result<Option<durable::Reservation>, NtStatus> {
    match ask {
        Ask::V2(v2) => cx
            .conn
            .server
            .durable
            .reserve((cx.negotiated.client_guid, v2.create_guid))
            .map(Some),
        _ => Ok(None),
    }
}

/// Answers a replayed CREATE of an open this session still has (MS-SMB2 3.3.5.9.10): its
/// FileId and CreateAction as first answered, the oplock level the replay asks for (as a
/// scale-out share grants it), the durable context when that level allows it, and its lease,
/// which the replay must name.
fn answer_replay(
    cx: &mut Ctx<'_>,
    reply: &mut Reply<'_>,
    req: &CreateRequest<'_>,
    file_id: FileId,
    durability: &Durability,
) -> Result<NtStatus, NtStatus> {
    let session = cx.session.clone().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let open = session
        .state
        .lock()
        .opens
        .get(&file_id.volatile)
        .filter(|o| o.file_id == file_id)
        .cloned()
        .ok_or(NtStatus::DUPLICATE_OBJECTID)?;
    let (_, lease) = caching_of(&open);
    let asked = lease_key(cx, req);
    if asked.is_some() && lease.as_ref().map(|l| l.lease_key) != asked {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let level = super::oplock::replay_level(cx, req.requested_oplock_level);
    let mut contexts = Vec::new();
    if durability.durable
        && (durability.persistent || level == OplockLevel::BATCH || level == OplockLevel::LEASE)
    {
        contexts.push(v2_response(durability.timeout, durability.persistent));
    }
    if asked.is_some() {
        contexts.extend(lease.map(ResponseContext::Lease));
    }
    cx.chain.file_id = Some(open.file_id);
    respond(reply, &open, level, durability.create_action, contexts)
}

/// The oplock level and lease of an open as a CREATE response gives them.
fn caching_of(open: &Open) -> (OplockLevel, Option<Lease>) {
    let state = open.shared.state.lock();
    match state
        .opens
        .iter()
        .find(|e| e.id == open.file_id.volatile)
        .map(|e| e.caching.clone())
    {
        Some(Caching::Oplock { level, .. }) => (level, None),
        Some(Caching::Lease(id)) => (
            OplockLevel::LEASE,
            state
                .leases
                .iter()
                .find(|l| l.id == id)
                .map(|l| l.response()),
        ),
        _ => (OplockLevel::NONE, None),
    }
}

/// Writes a CREATE response for an existing open.
fn respond(
    reply: &mut Reply<'_>,
    open: &Open,
    oplock_level: OplockLevel,
    create_action: CreateAction,
    contexts: Vec<ResponseContext<'static>>,
) -> Result<NtStatus, NtStatus> {
    let path = open.path();
    let leaf = path.name().unwrap_or("");
    let meta =
        open.io(|| fileinfo::load(open.file.as_ref(), leaf, &open.share.presentation).status())?;
    super::encode_response(
        reply,
        &meta,
        oplock_level,
        create_action,
        open.file_id,
        contexts,
    );
    Ok(NtStatus::SUCCESS)
}

/// The lease key a request names, if it may carry a lease.
fn lease_key(cx: &Ctx<'_>, req: &CreateRequest<'_>) -> Option<LeaseKey> {
    if cx.negotiated.dialect < 0x0210 {
        return None;
    }
    req.contexts.iter().flatten().find_map(|c| match c {
        CreateContext::RequestLease(lease) => Some(lease.lease_key),
        _ => None,
    })
}

/// The SMB2_CREATE_DURABLE_HANDLE_RESPONSE_V2 of an open (MS-SMB2 2.2.14.2.12).
fn v2_response(timeout: Duration, persistent: bool) -> ResponseContext<'static> {
    ResponseContext::DurableHandleV2(DurableHandleResponseV2 {
        timeout: u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX),
        flags: if persistent {
            DurableHandleFlags::PERSISTENT
        } else {
            DurableHandleFlags::empty()
        },
    })
}

/// Makes a new open durable when it asked and holds handle caching (a batch oplock or a
/// lease with H), as Windows grants it; directories and named streams never are. A v2 request
/// is recorded either way, for replay detection. Returns the response context.
///
/// MS-SMB2 3.3.5.9.10: a DH2Q with SMB2_DHANDLE_FLAG_PERSISTENT on a continuous-availability
/// share, over a connection that was offered SMB2_GLOBAL_CAP_PERSISTENT_HANDLES, makes the
/// open persistent, whatever its caching (smbtorture smb2.durable-v2-open.persistent-open-*),
/// once its record is written ([`persistent::save`]); if that fails, the CREATE fails with
/// the store's error (STATUS_DISK_FULL for a full state_dir): the client asked for a handle
/// that outlives a restart, and one that would not is not what it asked for. The caller
/// withdraws the open.
pub(super) fn grant(
    cx: &Ctx<'_>,
    ask: Ask,
    open: &Open,
    granted: &Granted,
    action: CreateAction,
) -> Result<Option<ResponseContext<'static>>, NtStatus> {
    let timeout = match ask {
        Ask::V1 => V1_TIMEOUT,
        Ask::V2(v2) if v2.timeout == 0 => DEFAULT_V2_TIMEOUT,
        Ask::V2(v2) => MAX_V2_TIMEOUT.min(Duration::from_millis(v2.timeout.into())),
        Ask::None | Ask::Reconnect(_) => return Ok(None),
    };
    let handle_caching = granted.oplock_level == OplockLevel::BATCH
        || granted
            .lease
            .as_ref()
            .is_some_and(|l| l.lease_state.0 & H != 0);
    let Some(tree) = cx.tree.as_ref() else {
        return Ok(None);
    };
    let server = &cx.conn.server;
    let file = !open.is_directory && open.stream.is_none();
    let persistent = file
        && matches!(ask, Ask::V2(v2) if v2.flags.contains(DurableHandleFlags::PERSISTENT))
        && tree.share.continuous_availability
        && Capabilities(cx.negotiated.server_capabilities)
            .contains(Capabilities::PERSISTENT_HANDLES);
    let durable = file && (handle_caching || persistent);
    let create_guid = match ask {
        Ask::V2(v2) => Some(v2.create_guid),
        _ => None,
    };
    if !durable && create_guid.is_none() {
        return Ok(None);
    }
    // The opener is the session's own user, not a user the share forces on everyone.
    let Some((opener, owner)) = cx
        .session
        .as_ref()
        .and_then(|s| Some((s.user()?, s.identity()?.token.user)))
    else {
        return Ok(None);
    };
    let recorded = server.durable.add(
        open,
        Durability {
            durable,
            create_guid,
            timeout,
            client_guid: cx.negotiated.client_guid,
            owner,
            share: tree.share.name.clone(),
            lease: granted.lease.map(|l| l.lease_key),
            create_action: action,
            connection: cx.conn.id,
            persistent,
            opener,
        },
    );
    if !recorded {
        return Ok(None);
    }
    if persistent {
        if let Err(e) = persistent::save(server, open) {
            tracing::error!(
                path = &*escape(open.path().as_str()),
                "persistent handle refused: its record could not be written: {e}"
            );
            return Err(io_status(&e));
        }
        persistent::mark(open);
    } else if durable && server.settings.cluster_opens.is_some() {
        // A cluster node's durable open is recorded so that the node taking over after this
        // one died can keep it for its client; without the record it is durable here only.
        if let Err(e) = persistent::save(server, open) {
            tracing::warn!(
                path = &*escape(open.path().as_str()),
                "durable open not recorded with the cluster: {e}"
            );
        }
    }
    if !durable {
        return Ok(None);
    }
    Ok(Some(match ask {
        Ask::V2(_) => v2_response(timeout, persistent),
        _ => ResponseContext::DurableHandle,
    }))
}

/// MS-SMB2 3.3.5.9.7 and 3.3.5.9.12: reconnects a disconnected durable open to this session
/// and tree connect and answers as for an open of the existing file. An open with a lease is
/// reclaimed only under its own name (STATUS_INVALID_PARAMETER otherwise). A replayed DH2Q
/// (`replayed`: the open's durability) is answered as its first CREATE was, with its durable
/// context where [`answer_replay`] gives one (smbtorture smb2.replay.replay5).
pub(super) fn reconnect(
    cx: &mut Ctx<'_>,
    reply: &mut Reply<'_>,
    req: &CreateRequest<'_>,
    name: &VfsPath,
    reconnect: Reconnect,
    action: CreateAction,
    replayed: Option<&Durability>,
) -> Result<NtStatus, NtStatus> {
    let session = cx.session.clone().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let tree = cx.tree.clone().ok_or(NtStatus::NETWORK_NAME_DELETED)?;
    // Who the session's own logon proved, not a user the share forces on everyone.
    let user = session.user().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let identity = session.identity().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let server = cx.conn.server.clone();
    let lease = lease_key(cx, req);
    // MS-SMB2 3.3.5.9.12: a persistent reconnect on a continuous-availability share may
    // find its open by CreateGuid.
    let reconnect = Reconnect {
        by_guid: reconnect.persistent
            && tree.share.continuous_availability
            && Capabilities(cx.negotiated.server_capabilities)
                .contains(Capabilities::PERSISTENT_HANDLES),
        ..reconnect
    };
    let open = server.durable.reclaim(
        &reconnect,
        cx.negotiated.client_guid,
        &user,
        &identity.token,
        &tree,
        lease,
        |open| eq_ignore_case(open.path().as_str(), name.as_str()),
    )?;
    let route = Route {
        conn: Arc::downgrade(cx.conn),
        session_id: session.id,
        encrypt: tree.encrypt_data,
    };
    durable::reattach(&session, &tree, &open, route);
    server.durable.moved_to(open.file_id, cx.conn.id);
    if !session.state.lock().trees.contains_key(&tree.id) {
        session.state.lock().opens.remove(&open.file_id.volatile);
        close_open(&server, &open);
        return Err(NtStatus::NETWORK_NAME_DELETED);
    }
    cx.chain.file_id = Some(open.file_id);
    let (oplock_level, lease) = caching_of(&open);
    let level = req.requested_oplock_level;
    let mut contexts: Vec<ResponseContext<'static>> = replayed
        .filter(|d| {
            d.durable
                && (d.persistent || level == OplockLevel::BATCH || level == OplockLevel::LEASE)
        })
        .map(|d| v2_response(d.timeout, d.persistent))
        .into_iter()
        .collect();
    contexts.extend(lease.map(ResponseContext::Lease));
    respond(reply, &open, oplock_level, action, contexts)
}
