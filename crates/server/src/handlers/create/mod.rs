//! CREATE: MS-SMB2 3.3.5.9. `handle` runs its phases in order, each a function over a value of
//! its own: the request's intent (`request`, [`Plan`]) → the name resolved and access checked
//! against the new or the existing file (`access`, MS-FSA 2.1.5.1.1, 2.1.5.1.2: [`Resolved`])
//! → share access and the oplock or lease (`oplock`: [`Registered`]) → the file prepared:
//! overwrite, new-file metadata, EAs, allocation, stream ([`Prepared`]) → the open built and
//! recorded ([`Built`]) → the response with its contexts (`contexts`, `durable`).

mod access;
mod app_instance;
mod apple;
mod cluster;
mod contexts;
mod durable;
mod oplock;
mod posix;
mod request;
mod stream;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::time::Duration;

use smb3d_dtyp::{AccessMask, NtStatus, SecurityDescriptor};
use smb3d_fscc::{FileAttributes, NotifyAction};
use smb3d_smb2::aapl::ServerQueryResponse;
use smb3d_smb2::create::{
    CreateAction, CreateContext, CreateDisposition, CreateOptions, CreateRequest, CreateResponse,
    CreateResponseFlags, LeaseKey, OplockLevel, RawCreateContext, ResponseContext,
};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::snapshot::GmtToken;
use smb3d_state::Intent as ClusterIntent;
use smb3d_vfs::casefold::eq_ignore_case;
use smb3d_vfs::{Disposition, Kind, OpenRequest, Opened, Vfs, VfsFile, VfsPath};
use smb3d_wire::FileTime;

use crate::blocking::as_user;
use crate::fs::apple as apple_fs;
use crate::fs::apple_convert;
use crate::fs::eas;
use crate::fs::fileinfo::{self, Meta, SETTABLE_ATTRIBUTES};
use crate::fs::names::{SmbPath, parse_path};
use crate::fs::path_status;
use crate::fs::posix_info;
use crate::fs::quota;
use crate::fs::resource_fork::ResourceFork;
use crate::fs::shortname;
use crate::fs::snapshots;
use crate::fs::streams::{self, Stream, StreamFile};
use crate::identity::Identity;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::request::reply::{Reply, go_async};
use crate::security;
use crate::state::allocation;
use crate::state::app_instance::{AppInstance, take_over};
use crate::state::audit;
use crate::state::caching::{self, Caching, Granted, Opening, Route};
use crate::state::cluster_notify;
use crate::state::cluster_opens;
use crate::state::connection::limits::{OpenFileSlot, admit_open, admit_open_file};
use crate::state::dir_leases;
use crate::state::durable::{Reconnect, ReplayState};
use crate::state::files::{FileKey, OpenEntry, SharedFile};
use crate::state::kernel_leases;
use crate::state::notify::ShareKey;
use crate::state::open::{DirCursor, Open, close_open, open_widest};
use crate::state::server::Server;
use crate::state::session::{Session, Tree};
use crate::state::share::{Share, ShareKind};
use crate::status_map::VfsResultExt;

use access::{AccessCheck, check_existing, security_context};
use request::Intent;

/// The CreateOptions that FileModeInformation reports (MS-FSCC 2.4.26).
/// How long a CREATE waits for another program to let go of its kernel lease on the file: a
/// little more than the kernel's default `lease-break-time` (45 s), after which the kernel
/// breaks the lease itself.
const LOCAL_LEASE_WAIT: Duration = Duration::from_secs(50);

const MODE_OPTIONS: u32 =
    0x0000_0002 | 0x0000_0004 | 0x0000_0008 | 0x0000_0010 | 0x0000_0020 | 0x0000_1000;

/// The phases are `#[inline(always)]`: as functions of their own, moving their values from one
/// to the next cost 1.2% more instructions per open (callgrind); inlined, 0.1%.
pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    reply: &mut Reply<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = CreateRequest::decode(pdu).map_err(malformed)?;
    let session = cx.session.clone().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let tree = cx.tree.clone().ok_or(NtStatus::NETWORK_NAME_DELETED)?;
    let durable_ask = durable::ask(cx, &req)?;
    if let durable::Ask::Reconnect(reconnect) = durable_ask {
        return reconnect_durable(cx, reply, &req, &session, reconnect).await;
    }
    // What is checked before any file-system call: the request, the open limits, the name.
    request::check(&req)?;
    let asked = Asked {
        aapl: apple::answer(&req, &tree.share)?,
        posix: posix::ask(cx.conn, &req, &tree.share)?,
    };
    admit_open(cx.conn, &session)?;
    let vfs = disk(&tree)?;
    let counted = admit_open_file(cx.conn)?;
    let target = Target::parse(cx, &req, &tree, vfs.as_ref())?;
    // An open in a snapshot (MS-SMB2 3.3.5.9.8) works in the snapshot's tree, read-only and
    // never durable: a reconnect would look for it in the share.
    let (vfs, durable_ask) = match target.snapshot {
        Some(token) => (snapshots::open(vfs.as_ref(), token)?, durable::Ask::None),
        None => (vfs, durable_ask),
    };
    if let Some(answer) = durable::replay(cx, reply, &req, durable_ask, &target.vfs_path) {
        return answer;
    }
    let _under_way = durable::reserve(cx, durable_ask)?;
    let mut plan = Plan::of(cx, &req, &tree, &target)?;
    plan.posix = asked.posix;
    oplock::check_lease_key(cx, &req, &target.vfs_path, target.path.stream.as_deref())?;
    let app_instance = app_instance::ask(cx, &req, &session);
    let creation = Creation {
        req: &req,
        server: &cx.conn.server,
        identity: cx.identity()?,
        session,
        tree,
        vfs,
        target,
        plan,
        durable: durable_ask,
        app_instance,
        counted,
        mac_client: cx.conn.apple.get().is_some(),
    };
    // MS-FSA 2.1.5.1: open or create and check access, then share access and caching; only
    // then is an existing file overwritten or a new one given its metadata.
    let resolved = creation.resolve_after_local_leases(cx, reply).await?;
    let registered = creation.register(cx, reply, &resolved).await?;
    let outcome = resolved.outcome;
    let prepared = creation.prepare(&registered, resolved)?;
    let built = creation.build(cx, registered, outcome, prepared)?;
    respond(cx, reply, &req, durable_ask, outcome, built, asked)
}

/// What the request's extension contexts asked for, answered in the response.
struct Asked {
    /// Apple's AAPL server query, on `apple` shares.
    aapl: Option<ServerQueryResponse>,
    /// A POSIX open, on `posix` shares to clients that negotiated the extensions.
    posix: Option<posix::PosixOpen>,
}

/// A durable reconnect (MS-SMB2 3.3.5.9.7): the name is only checked against the open it
/// names.
async fn reconnect_durable(
    cx: &mut Ctx<'_>,
    reply: &mut Reply<'_>,
    req: &CreateRequest<'_>,
    session: &Session,
    reconnect: Reconnect,
) -> Result<NtStatus, NtStatus> {
    admit_open(cx.conn, session)?;
    let name =
        smb3d_wire::decode_utf16le(req.name, "Name").map_err(|_| NtStatus::OBJECT_NAME_INVALID)?;
    let path = parse_path(&name)?;
    let vfs_path = VfsPath::from_components(path.components.iter())
        .map_err(|_| NtStatus::OBJECT_NAME_NOT_FOUND)?;
    // A client that lost its connection may reconnect before that connection's end
    // has been seen here: its open is given a moment to become disconnected.
    cx.conn
        .server
        .durable
        .wait_for_disconnect(
            cx.conn.server.settings.clock.as_ref(),
            reconnect.file_id.persistent,
            cx.conn.id,
            durable::RECONNECT_GRACE,
        )
        .await;
    durable::reconnect(
        cx,
        reply,
        req,
        &vfs_path,
        reconnect,
        CreateAction::OPENED,
        None,
    )
}

/// The file system of the tree's share. The dispatcher gives CREATEs on IPC$ to the named
/// pipes, so the share here always has one; the status is what a missing pipe would get.
fn disk(tree: &Tree) -> Result<Arc<dyn Vfs>, NtStatus> {
    match &tree.share.kind {
        ShareKind::Disk(vfs) => Ok(vfs.clone()),
        ShareKind::Ipc => Err(NtStatus::OBJECT_NAME_NOT_FOUND),
    }
}

/// The name a CREATE opens: as the client wrote it (with its stream) and as the VFS takes it,
/// and the snapshot it is opened in.
struct Target {
    path: SmbPath,
    vfs_path: VfsPath,
    snapshot: Option<GmtToken>,
}

impl Target {
    /// A name the VFS cannot represent is answered as the existing path it stops at says.
    #[inline(always)]
    fn parse(
        cx: &Ctx<'_>,
        req: &CreateRequest<'_>,
        tree: &Tree,
        vfs: &dyn Vfs,
    ) -> Result<Self, NtStatus> {
        let name = smb3d_wire::decode_utf16le(req.name, "Name")
            .map_err(|_| NtStatus::OBJECT_NAME_INVALID)?;
        // The quota index names the volume: on a share with quotas it opens the share's root,
        // and the quota requests on that open answer for the file system.
        let mut path = if quota::is_quota_file(&name) && quota::enabled(vfs) {
            parse_path("")?
        } else {
            parse_path(&name)?
        };
        let components = path.components.iter().map(String::as_str);
        if let Some(status) = tree.share.presentation.vetoed_path(components) {
            return Err(status);
        }
        let snapshot = snapshot_of(req, &tree.share, &mut path.components)?;
        // Components that are short names (of the share's tree, not of a snapshot's) become
        // the names they stand for.
        if tree.share.short_names
            && snapshot.is_none()
            && path.components.iter().any(|c| shortname::looks_mangled(c))
        {
            let identity = cx.identity()?;
            as_user(vfs, &identity, tree.share.metadata_wait(), || {
                shortname::resolve(vfs, &mut path.components);
                Ok(())
            })?;
        }
        match VfsPath::from_components(path.components.iter()) {
            Ok(vfs_path) => Ok(Self {
                path,
                vfs_path,
                snapshot,
            }),
            Err(_) => {
                let identity = cx.identity()?;
                Err(as_user(vfs, &identity, tree.share.metadata_wait(), || {
                    Ok(path_status::unrepresentable(vfs, &path.components))
                })?)
            }
        }
    }

    /// The last component, which the share's presentation (hidden dot files) looks at.
    fn leaf(&self) -> &str {
        self.vfs_path.name().unwrap_or("")
    }
}

/// The snapshot a CREATE opens in (MS-SMB2 3.3.5.9.8): its TWrp context's, else on a share
/// with snapshots the first @GMT token among the path's components (taken out of them). A
/// TWrp context on a share without snapshots, or with a time no token can name, names none
/// that exists.
fn snapshot_of(
    req: &CreateRequest<'_>,
    share: &Share,
    components: &mut Vec<String>,
) -> Result<Option<GmtToken>, NtStatus> {
    let timewarp = req.contexts.iter().flatten().find_map(|c| match c {
        CreateContext::TimewarpToken(time) => Some(time),
        _ => None,
    });
    if let Some(time) = timewarp {
        if !share.snapshots {
            return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
        }
        return GmtToken::from_filetime(time)
            .map(Some)
            .ok_or(NtStatus::OBJECT_NAME_NOT_FOUND);
    }
    Ok(share
        .snapshots
        .then(|| snapshots::take_token(components))
        .flatten())
}

/// What the open asks for: its intent, the open the back end is asked for, and the create
/// contexts that act on the file, all checked before anything is created.
struct Plan<'r> {
    intent: Intent,
    /// Truncation waits until the existing file has been checked and share access granted
    /// (MS-FSA 2.1.5.1.2), so an existing file is opened without it first.
    open_request: OpenRequest,
    /// SMB2_CREATE_EA_BUFFER (MS-SMB2 3.3.5.9.2).
    ea_buffer: Option<&'r [u8]>,
    /// The descriptor of SMB2_CREATE_SD_BUFFER (MS-SMB2 2.2.13.2.3).
    sd_buffer: Option<SecurityDescriptor>,
    /// SMB2_CREATE_ALLOCATION_SIZE (MS-SMB2 2.2.13.2.6): space for a new or overwritten file.
    allocation: Option<u64>,
    wants_maximal_access: bool,
    /// SMB2_CREATE_POSIX: the mode a new file gets.
    posix: Option<posix::PosixOpen>,
}

impl<'r> Plan<'r> {
    #[inline(always)]
    fn of(
        cx: &Ctx<'_>,
        req: &CreateRequest<'r>,
        tree: &Tree,
        target: &Target,
    ) -> Result<Self, NtStatus> {
        let path = &target.path;
        let mut intent = request::intent(req, tree)?;
        if target.snapshot.is_some() {
            request::in_snapshot(&mut intent)?;
        }
        let ea_buffer = req.contexts.iter().flatten().find_map(|c| match c {
            CreateContext::EaBuffer(data) => Some(data),
            _ => None,
        });
        if let Some(data) = ea_buffer {
            // A share without EAs refuses them before anything is opened, as Samba does.
            if !tree.share.presentation.xattrs.eas {
                return Err(NtStatus::EAS_NOT_SUPPORTED);
            }
            eas::check(data, cx.conn.server.limits().max_ea_size)?;
        }
        let sd_buffer = security_context(req)?;
        let allocation = req.contexts.iter().flatten().find_map(|c| match c {
            CreateContext::AllocationSize(size) => Some(size),
            _ => None,
        });
        let wants_maximal_access = req
            .contexts
            .iter()
            .flatten()
            .any(|c| matches!(c, CreateContext::MaximalAccessRequest { .. }));
        let mut open_request = OpenRequest {
            access: intent.vfs_access,
            disposition: match intent.disposition {
                CreateDisposition::OPEN | CreateDisposition::OVERWRITE => Disposition::Open,
                CreateDisposition::CREATE => Disposition::Create,
                _ => Disposition::OpenOrCreate,
            },
            kind: intent.kind,
            // Exact (the VFS undoes the process umask) unless the parent's default POSIX ACL
            // decides; `inherit_permissions` replaces it once the parent is known.
            create_mode: tree.share.new_mode(intent.kind == Kind::Directory, None),
        };
        stream::adapt(
            path,
            &mut intent,
            &mut open_request,
            tree.share.presentation.xattrs.streams,
        )?;
        Ok(Self {
            intent,
            open_request,
            ea_buffer,
            sd_buffer,
            allocation,
            wants_maximal_access,
            posix: None,
        })
    }
}

/// A new open on a disk share once its request has been checked: what the phases after the
/// intent read.
struct Creation<'r> {
    req: &'r CreateRequest<'r>,
    server: &'r Arc<Server>,
    session: Arc<Session>,
    tree: Arc<Tree>,
    vfs: Arc<dyn Vfs>,
    identity: Arc<Identity>,
    target: Target,
    plan: Plan<'r>,
    durable: durable::Ask,
    /// The application instance named (MS-SMB2 3.3.5.9.13).
    app_instance: Option<AppInstance>,
    counted: OpenFileSlot,
    /// The connection negotiated AAPL: a Mac client, to whom an empty named stream is none.
    mac_client: bool,
}

/// The file opened (or created) and the access it grants.
struct Resolved {
    file: Box<dyn VfsFile>,
    meta: Meta,
    /// The stored name of the named stream opened.
    stream: Option<String>,
    /// The file's resource fork, when the stream is an `apple` share's AFP_Resource.
    fork: Option<ResourceFork>,
    outcome: Outcome,
}

/// What the open did to the file and what it may do.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    created: bool,
    stream_created: bool,
    /// The existing file (not a stream) is truncated.
    overwritten: bool,
    action: CreateAction,
    granted: AccessMask,
    /// The file's maximal access, when the request asked for it.
    maximal: Option<AccessMask>,
}

/// The open in the file's table of opens, with the caching it was granted.
struct Registered {
    file_id: FileId,
    shared: Arc<SharedFile>,
    caching: Granted,
    /// The lease on the parent directory this open's change does not break.
    changed_by: Option<LeaseKey>,
}

/// Whether an open granted `granted` may write data.
fn writes(granted: AccessMask) -> bool {
    granted.intersects(AccessMask::FILE_WRITE_DATA | AccessMask::FILE_APPEND_DATA)
}

/// The file as the open will use it: the stream's own, for a named stream.
struct Prepared {
    file: Box<dyn VfsFile>,
    stream: Option<Arc<Stream>>,
    meta: Meta,
}

/// The open, recorded in its session.
struct Built {
    open: Arc<Open>,
    meta: Meta,
    caching: Granted,
}

impl Creation<'_> {
    /// Opens or creates the file with the user's credentials and checks access: to a new file
    /// as [`AccessCheck::admit_new`] says, to an existing one as MS-FSA 2.1.5.1.2 does; then
    /// the named stream.
    #[inline(always)]
    fn resolve(&self) -> Result<Resolved, NtStatus> {
        as_user(
            self.vfs.as_ref(),
            &self.identity,
            self.tree.share.metadata_wait(),
            || self.open_and_check(),
        )
        .map_err(|status| {
            if self.tree.read_only
                && status == NtStatus::OBJECT_NAME_NOT_FOUND
                && self.req.create_disposition != CreateDisposition::OPEN
            {
                NtStatus::ACCESS_DENIED
            } else {
                status
            }
        })
    }

    /// [`Creation::resolve`], waiting while another program's kernel lease on the file (a
    /// local process's Linux file lease, the NFS server's delegation) is being broken: the
    /// open that met it told the kernel to break it, and the holder has the kernel's
    /// `lease-break-time` (45 s by default) to let go before the kernel takes it. The request
    /// goes async and tries again after 20 ms, doubling up to 1 s, cancellable, for at most
    /// [`LOCAL_LEASE_WAIT`]; then it is the sharing violation it was before (smbtorture
    /// smb2.kernel-oplocks.kernel_oplocks8).
    async fn resolve_after_local_leases(
        &self,
        cx: &mut Ctx<'_>,
        reply: &mut Reply<'_>,
    ) -> Result<Resolved, NtStatus> {
        let clock = &self.server.settings.clock;
        let deadline = clock.now() + LOCAL_LEASE_WAIT;
        let mut retry = Duration::from_millis(20);
        loop {
            match self.resolve() {
                Err(NtStatus::OPLOCK_BREAK_IN_PROGRESS) if clock.now() < deadline => {
                    let pending = go_async(cx, reply)?;
                    tokio::select! {
                        () = clock.sleep(retry) => {}
                        status = pending.cancelled() => return Err(status),
                    }
                    retry = (retry * 2).min(Duration::from_secs(1));
                }
                Err(NtStatus::OPLOCK_BREAK_IN_PROGRESS) => return Err(NtStatus::SHARING_VIOLATION),
                result => return result,
            }
        }
    }

    /// The open as planned; on an `inherit_permissions` share, with the mode taken from the
    /// parent directory when the open may create (the one stat it costs is that share's).
    fn open_request(&self) -> OpenRequest {
        let mut request = self.plan.open_request;
        let share = &self.tree.share;
        if let Some(open) = self.plan.posix {
            let directory = request.kind == Kind::Directory;
            request.create_mode = posix::create_mode(share, self.vfs.as_ref(), directory, open);
        } else if share.inherit_permissions && request.disposition != Disposition::Open {
            let parent = self
                .target
                .vfs_path
                .parent_and_name()
                .map(|(parent, _)| parent);
            if let Some(stat) = parent.and_then(|parent| self.vfs.stat(&parent).ok()) {
                request.create_mode =
                    share.new_mode(request.kind == Kind::Directory, Some(stat.mode));
            }
        }
        request
    }

    /// The resource fork an `apple` share's AFP_Resource of a file opens; `None` for other
    /// streams.
    fn resource_fork(
        &self,
        meta: &Meta,
        granted: AccessMask,
    ) -> Result<Option<ResourceFork>, NtStatus> {
        let is_fork = self.tree.share.apple.is_some()
            && !meta.is_directory()
            && self
                .target
                .path
                .stream
                .as_deref()
                .is_some_and(|name| eq_ignore_case(name, apple_fs::RESOURCE_STREAM));
        if !is_fork {
            return Ok(None);
        }
        let vfs = self.vfs.as_ref();
        let path = &self.target.vfs_path;
        let fork = ResourceFork::open(vfs, path, writes(granted)).status()?;
        Ok(Some(fork))
    }

    /// Before an `apple` share's AFP_AfpInfo or AFP_Resource of a file is opened, converts the
    /// `._` file a Mac left for it (fs::apple_convert), as vfs_fruit does at that point, as
    /// the user and only when `maximal` (their rights on the file) lets them write its data
    /// and extended attributes. A conversion that fails leaves the open as it would be without.
    fn convert_mac_sidecar(
        &self,
        base: &dyn VfsFile,
        meta: &Meta,
        maximal: impl FnOnce() -> AccessMask,
    ) {
        let Some(apple) = &self.tree.share.apple else {
            return;
        };
        let apple_stream = self.target.path.stream.as_deref().is_some_and(|name| {
            eq_ignore_case(name, apple_fs::AFPINFO_STREAM)
                || eq_ignore_case(name, apple_fs::RESOURCE_STREAM)
        });
        if !apple_stream || meta.is_directory() {
            return;
        }
        let may_write =
            || maximal().contains(AccessMask::FILE_WRITE_DATA | AccessMask::FILE_WRITE_EA);
        let converted = apple_convert::convert(
            self.vfs.as_ref(),
            &self.target.vfs_path,
            Some(base),
            apple.conversion,
            may_write,
        );
        if let Err(e) = converted {
            tracing::debug!(path = %self.target.vfs_path, error = %e, "._ file not converted");
        }
    }

    /// Creates the fork's `._` file when the open may write the fork: here, as the user, so
    /// that the user owns it as the file.
    fn ready_to_write(&self, fork: &ResourceFork, granted: AccessMask) -> Result<(), NtStatus> {
        if !writes(granted) {
            return Ok(());
        }
        let mode = self.open_request().create_mode;
        fork.ensure_sidecar(self.vfs.as_ref(), &self.target.vfs_path, mode)
            .status()
    }

    #[inline(always)]
    fn open_and_check(&self) -> Result<Resolved, NtStatus> {
        let vfs = self.vfs.as_ref();
        let path = &self.target.vfs_path;
        let intent = &self.plan.intent;
        let opened = match self.link_itself()? {
            Some(opened) => opened,
            None => open_widest(vfs, path, self.open_request(), intent.desired)?,
        };
        let meta = fileinfo::load_with(
            opened.file.as_ref(),
            opened.stat,
            self.target.leaf(),
            &self.tree.share.presentation,
        )
        .status()?;
        let check = AccessCheck {
            vfs,
            path,
            who: &self.identity,
            ids: &self.server.ids,
            parent: security::Parent::of(vfs, path, &self.server.ids),
            share: &self.tree.share,
        };
        let (granted, sd) = if opened.created {
            check.admit_new(
                opened.file.as_ref(),
                &meta,
                intent,
                self.plan.sd_buffer.as_ref(),
            )?
        } else {
            check_existing(
                &meta,
                intent,
                self.req.file_attributes,
                self.target.path.stream.is_some(),
            )?;
            check.admit_existing(opened.file.as_ref(), &meta, intent)?
        };
        let maximal = self
            .plan
            .wants_maximal_access
            .then(|| security::maximal(&sd, &self.identity, &check.parent));
        if !opened.created {
            self.convert_mac_sidecar(opened.file.as_ref(), &meta, || {
                security::maximal(&sd, &self.identity, &check.parent)
            });
        }
        let (stream, stream_created, fork) = match &self.target.path.stream {
            None => (None, false, None),
            Some(name) => match self.resource_fork(&meta, granted).and_then(|fork| {
                let (stored, created) = stream::resolve(
                    opened.file.as_ref(),
                    name,
                    intent.disposition,
                    self.tree.share.apple.is_some(),
                    self.mac_client,
                    fork.as_ref(),
                )?;
                if let Some(fork) = &fork {
                    self.ready_to_write(fork, granted)?;
                }
                Ok((stored, created, fork))
            }) {
                Ok((stored, created, fork)) => (Some(stored), created, fork),
                Err(status) => {
                    if opened.created {
                        let _ = vfs.unlink(path);
                    }
                    return Err(status);
                }
            },
        };
        let overwritten = intent.truncates && !opened.created && stream.is_none();
        let action = if opened.created || stream_created {
            CreateAction::CREATED
        } else if intent.disposition == CreateDisposition::SUPERSEDE {
            CreateAction::SUPERSEDED
        } else if overwritten {
            CreateAction::OVERWRITTEN
        } else {
            CreateAction::OPENED
        };
        Ok(Resolved {
            file: opened.file,
            meta,
            stream,
            fork,
            outcome: Outcome {
                created: opened.created,
                stream_created,
                overwritten,
                action,
                granted: granted & self.tree.maximal_access,
                maximal: maximal.map(|m| m & self.tree.maximal_access),
            },
        })
    }

    /// With FILE_OPEN_REPARSE_POINT a symlink opens as the reparse point it stands for
    /// (MS-SMB2 3.3.5.9, MS-FSA 2.1.5.1), never followed: one that dangles or leads out of
    /// the share opens too, for its metadata, its reparse data and its deletion, and nothing
    /// it points to is read, written or truncated through the open (the handle has no data).
    /// A link cannot be overwritten in place, so those dispositions are refused. Anything
    /// else, or a name that does not resolve, is opened as usual.
    fn link_itself(&self) -> Result<Option<Opened>, NtStatus> {
        if !self
            .req
            .create_options
            .contains(CreateOptions::OPEN_REPARSE_POINT)
            || self.target.path.stream.is_some()
        {
            return Ok(None);
        }
        let Ok(Some(opened)) = self.vfs.open_link(&self.target.vfs_path) else {
            return Ok(None);
        };
        let intent = &self.plan.intent;
        match intent.disposition {
            CreateDisposition::OPEN | CreateDisposition::OPEN_IF => {}
            CreateDisposition::CREATE => return Err(NtStatus::OBJECT_NAME_COLLISION),
            _ => return Err(NtStatus::ACCESS_DENIED),
        }
        if intent.kind == Kind::Directory {
            return Err(NtStatus::NOT_A_DIRECTORY);
        }
        Ok(Some(opened))
    }

    /// MS-SMB2 3.3.5.9.13: the earlier opens of the application instance `asking` names, of
    /// this file by other clients, go before this open meets the file's opens: first all are
    /// found, on this node and (on a cluster) on others, and one of a newer or equal version
    /// refuses the CREATE with nothing closed; then this node's are closed, and other nodes
    /// close theirs while the CREATE waits for their records to go.
    async fn take_over(
        &self,
        cx: &mut Ctx<'_>,
        reply: &mut Reply<'_>,
        asking: &AppInstance,
        key: FileKey,
        stream: Option<&Arc<str>>,
    ) -> Result<(), NtStatus> {
        let elsewhere = match &self.server.settings.cluster_opens {
            Some(opens) => Some(cluster::AppInstanceOpens::find(
                opens,
                &self.tree.share,
                key.ino,
                stream.map(|s| &**s),
                asking.record(),
            )?),
            None => None,
        };
        if let Some(file) = self.server.files.get(key) {
            let user = self.session.user().ok_or(NtStatus::USER_SESSION_DELETED)?;
            take_over(
                self.server,
                Some(&self.tree.share.name),
                &user,
                &file,
                asking,
                stream,
            )?;
        }
        match elsewhere {
            Some(elsewhere) => elsewhere.close(cx, reply).await,
            None => Ok(()),
        }
    }

    /// Registers the open with the file's other opens: share access, and the oplock or lease
    /// it is granted once the breaks it causes are answered (`oplock::register`).
    async fn register(
        &self,
        cx: &mut Ctx<'_>,
        reply: &mut Reply<'_>,
        resolved: &Resolved,
    ) -> Result<Registered, NtStatus> {
        let meta = &resolved.meta;
        let outcome = resolved.outcome;
        let file_id = self.server.new_file_id();
        let key = FileKey {
            dev: meta.stat.dev,
            ino: meta.stat.ino,
            snapshot: self.target.snapshot,
        };
        let entry = OpenEntry {
            id: file_id.volatile,
            access: outcome.granted,
            share: self.req.share_access,
            stream: resolved.stream.as_deref().map(streams::key),
            persistent_id: file_id.persistent,
            caching: Caching::None,
            route: Route {
                conn: Arc::downgrade(cx.conn),
                session_id: self.session.id,
                encrypt: self.tree.encrypt_data,
            },
            disconnected: false,
            persistent: false,
            app_instance: self.app_instance.clone().map(Box::new),
        };
        if let Some(asking) = &self.app_instance {
            self.take_over(cx, reply, asking, key, entry.stream.as_ref())
                .await?;
        }
        let opening = Opening {
            // A share without oplocks grants none, nor leases: a request is answered as none.
            request: if self.tree.share.grants_caching(self.target.leaf()) {
                oplock::request(cx, self.req, meta.is_directory())
            } else {
                crate::state::caching::Request::None
            },
            overwrite: self.plan.intent.truncates && resolved.stream.is_none(),
            first_attempt: true,
            existed: !outcome.created && !outcome.stream_created,
            delete_on_close: self.deletes_on_close(),
            directory: meta.is_directory().then(|| ShareKey::of(&self.vfs)),
        };
        let changed_by = dir_leases::requested_parent(&opening.request);
        let path = &self.target.vfs_path;
        let leases = &self.server.kernel_leases;
        let file = resolved.file.as_ref();
        let stream = resolved.stream.is_some();
        let hold = |bits| {
            if stream {
                leases.hold_stream(bits)
            } else {
                leases.hold(file, bits)
            }
        };
        let kernel = self
            .tree
            .share
            .kernel_oplocks
            .then_some(&hold as caching::KernelHold<'_>);
        let cluster_entry = self
            .server
            .settings
            .cluster_opens
            .as_ref()
            .map(|c| (c, entry.clone()));
        let intent = ClusterIntent {
            overwrite: opening.overwrite,
            delete_on_close: opening.delete_on_close,
            sharing_violation: false,
        };
        let (shared, mut caching) =
            oplock::register(cx, reply, key, path, entry, opening, kernel).await?;
        // A cluster node asks the cluster once its own table admitted the open. A file this
        // CREATE made stays when refused: the earlier open elsewhere is of this very file.
        if let Some((cluster, entry)) = &cluster_entry {
            let admission = cluster::Admission {
                cluster,
                share: &self.tree.share,
                shared: &shared,
                entry,
                intent,
            };
            if let Err(status) = admission.admit(cx, reply, &mut caching).await {
                self.server.files.release(&shared, file_id.volatile);
                return Err(status);
            }
        }
        if self.tree.share.apple.is_some()
            && !stream
            && !meta.is_directory()
            && let Err(status) = apple::check_netatalk_modes(
                &self.tree.share,
                &shared.locks,
                file,
                outcome.granted,
                self.req.share_access,
            )
        {
            self.server.files.release(&shared, file_id.volatile);
            return Err(status);
        }
        Ok(Registered {
            file_id,
            shared,
            caching,
            changed_by,
        })
    }

    /// Prepares the file once the open is granted ([`Self::prepare_file`]); if that fails, the
    /// open leaves the file's table again, and a file it made is removed: a file without the
    /// attributes, EAs or allocation asked for must not look as if the CREATE had made it
    /// (issue 22 item 1).
    #[inline(always)]
    fn prepare(&self, registered: &Registered, resolved: Resolved) -> Result<Prepared, NtStatus> {
        let outcome = resolved.outcome;
        let touches_files = outcome.created || outcome.overwritten || resolved.stream.is_some();
        let prepare = || {
            self.prepare_file(resolved).inspect_err(|_| {
                if outcome.created {
                    let _ = self.vfs.unlink(&self.target.vfs_path);
                }
            })
        };
        // An existing file opened as it is needs no file-system call here, so no change of
        // credentials either.
        let prepared = if touches_files {
            as_user(
                self.vfs.as_ref(),
                &self.identity,
                self.tree.share.metadata_wait(),
                prepare,
            )
        } else {
            prepare()
        };
        prepared.inspect_err(|_| {
            self.server
                .files
                .release(&registered.shared, registered.file_id.volatile);
            cluster_opens::closed(
                self.server,
                &self.tree.share,
                registered.shared.key.ino,
                registered.file_id.persistent,
            );
        })
    }

    /// The overwrite or the new file's metadata and EAs ([`prepare_metadata`]), the new name
    /// made durable in its directory, the allocation asked for, and the named stream's open.
    #[inline(always)]
    fn prepare_file(&self, resolved: Resolved) -> Result<Prepared, NtStatus> {
        let Resolved {
            file,
            meta,
            stream,
            fork,
            outcome,
        } = resolved;
        let vfs = self.vfs.as_ref();
        let meta = prepare_metadata(
            vfs,
            file.as_ref(),
            meta,
            outcome,
            self.req.file_attributes,
            self.plan.ea_buffer,
            self.tree.share.presentation.xattrs.streams,
        )?;
        if outcome.created {
            self.tree
                .share
                .sync_parent(vfs, &self.target.vfs_path)
                .status()?;
        }
        let meta = match self.plan.allocation {
            Some(size) if (outcome.created || outcome.overwritten) && stream.is_none() => {
                allocation::reserve(&self.tree.share, file.as_ref(), meta, size)?
            }
            _ => meta,
        };
        let Some(name) = stream else {
            return Ok(Prepared {
                file,
                stream: None,
                meta,
            });
        };
        // From here on the open is the stream's: its size, the file's other metadata.
        let stream = match self.tree.share.apple {
            Some(_) if name == apple_fs::AFPINFO_STREAM => Stream::afp_info(file),
            Some(_) if let Some(fork) = fork => Stream::resource_fork(file, name, fork),
            _ => Stream::new(file, name),
        };
        let file: Box<dyn VfsFile> = Box::new(StreamFile(stream.clone()));
        let leaf = self.target.leaf();
        let meta = fileinfo::load(file.as_ref(), leaf, &self.tree.share.presentation).status()?;
        Ok(Prepared {
            file,
            stream: Some(stream),
            meta,
        })
    }

    /// Builds the open after telling watchers and directory leases of a new or overwritten
    /// file, and records it in its session, unless its tree connect went away meanwhile.
    #[inline(always)]
    fn build(
        self,
        cx: &mut Ctx<'_>,
        registered: Registered,
        outcome: Outcome,
        prepared: Prepared,
    ) -> Result<Built, NtStatus> {
        let server = self.server;
        let path = &self.target.vfs_path;
        let Prepared { file, stream, meta } = prepared;
        if outcome.created {
            let share = ShareKey::of(&self.vfs);
            server
                .notify
                .report_name(share, path, NotifyAction::ADDED, meta.is_directory());
        }
        if outcome.created || outcome.overwritten {
            let share = ShareKey::of(&self.vfs);
            dir_leases::child_changed(server, share, path, registered.changed_by);
        }
        let watches_host = meta.is_directory() && registered.caching.lease.is_some();
        if watches_host {
            server.host_changes.acquire(server, &self.vfs);
            // Changes through other nodes break the lease too (MS-SMB2 3.3.4.7).
            cluster_notify::interested(
                server,
                registered.file_id.volatile,
                &self.tree.share,
                path,
                false,
            );
        }
        let file_id = registered.file_id;
        let delete_on_close = self.deletes_on_close();
        let open = Arc::new(Open {
            file_id,
            tree_id: AtomicU32::new(self.tree.id),
            vfs: self.vfs,
            identity: self.identity,
            file,
            stream,
            shared: registered.shared,
            is_directory: meta.is_directory(),
            granted: outcome.granted,
            delete_on_close,
            position: AtomicU64::new(0),
            quota_scan: Default::default(),
            mode: AtomicU64::new(u64::from(self.req.create_options.0 & MODE_OPTIONS)),
            dir: tokio::sync::Mutex::new(DirCursor::default()),
            writes: Default::default(),
            opened_at: cx.conn.server.settings.clock.wall(),
            audit: self.tree.audit.clone(),
            recycle_to: self.tree.recycle_to.clone(),
            share: self.tree.share.clone(),
            replay: ReplayState::new(
                u16::try_from(cx.hdr.status.0 & 0xFFFF).unwrap_or_default(),
                matches!(self.durable, durable::Ask::V2(_)),
            ),
            watches_host: AtomicBool::new(watches_host),
            _counted: self.counted,
        });
        if let Some(who) = &open.audit {
            audit::opened(
                who,
                path,
                outcome.action,
                outcome.granted,
                open.is_directory,
            );
        }
        {
            // The open may have waited for breaks while its tree connect went away.
            let mut st = self.session.state.lock();
            if !st.trees.contains_key(&self.tree.id) {
                drop(st);
                close_open(server, &open);
                return Err(NtStatus::NETWORK_NAME_DELETED);
            }
            st.opens.insert(file_id.volatile, open.clone());
        }
        if self.tree.share.kernel_oplocks {
            kernel_leases::track(server, &open, registered.caching.kernel);
        }
        cx.chain.file_id = Some(file_id);
        Ok(Built {
            open,
            meta,
            caching: registered.caching,
        })
    }

    fn deletes_on_close(&self) -> bool {
        self.req
            .create_options
            .contains(CreateOptions::DELETE_ON_CLOSE)
    }
}

/// The response with the contexts the request asked for, the durability granted and the
/// lease.
#[inline(always)]
fn respond(
    cx: &Ctx<'_>,
    reply: &mut Reply<'_>,
    req: &CreateRequest<'_>,
    durable_ask: durable::Ask,
    outcome: Outcome,
    built: Built,
    asked: Asked,
) -> Result<NtStatus, NtStatus> {
    let Built {
        open,
        meta,
        caching,
    } = built;
    let posix_answer = asked
        .posix
        .map(|_| posix_info::cc_bytes(&meta.stat, &cx.conn.server.ids));
    let mut contexts = contexts::responses(
        req,
        outcome.maximal,
        &meta,
        crate::handlers::zero_file_ids(cx),
    );
    if let Some(data) = &posix_answer {
        contexts.push(ResponseContext::Other(RawCreateContext {
            name: &smb3d_smb2::posix::TAG,
            data,
        }));
    }
    if let Some(answer) = asked.aapl {
        // The first answer settles what the connection gets, as on a Mac server.
        let _ = cx.conn.apple.set(answer.server_caps);
        contexts.push(ResponseContext::Aapl(answer));
    }
    match durable::grant(cx, durable_ask, &open, &caching, outcome.action) {
        Ok(durability) => contexts.extend(durability),
        Err(status) => {
            withdraw(cx, &open, outcome.action);
            return Err(status);
        }
    }
    if let Some(lease) = caching.lease {
        contexts.push(ResponseContext::Lease(lease));
    }
    encode_response(
        reply,
        &meta,
        caching.oplock_level,
        outcome.action,
        open.file_id,
        contexts,
    );
    Ok(NtStatus::SUCCESS)
}

/// Undoes an open built for a CREATE that then failed: it leaves its session and closes,
/// deleting the file if the CREATE made it (MS-FSA 2.1.5.4's delete-pending close).
fn withdraw(cx: &Ctx<'_>, open: &Arc<Open>, action: CreateAction) {
    let server = &cx.conn.server;
    if let Some(session) = &cx.session {
        session.state.lock().opens.remove(&open.file_id.volatile);
    }
    if action == CreateAction::CREATED {
        server.files.set_delete_pending(
            &open.shared,
            open.stream_key().as_ref(),
            Some(open.deleter()),
        );
    }
    close_open(server, open);
}

/// Writes the CREATE response (MS-SMB2 2.2.14) for an open of the file `meta` describes.
fn encode_response(
    reply: &mut Reply<'_>,
    meta: &Meta,
    oplock_level: OplockLevel,
    create_action: CreateAction,
    file_id: FileId,
    contexts: Vec<ResponseContext<'_>>,
) {
    CreateResponse {
        oplock_level,
        flags: CreateResponseFlags::empty(),
        create_action,
        times: meta.times(),
        allocation_size: meta.allocation_size(),
        end_of_file: meta.end_of_file(),
        file_attributes: meta.attributes().0,
        file_id,
        contexts,
    }
    .encode(&mut reply.writer());
}

/// What happens to the file once the open is granted: an overwritten file is truncated, loses
/// its named streams and takes the requested attributes with ARCHIVE; a new file gets its
/// attributes (ARCHIVE for files, as NTFS sets it) and create time; either gets the EAs of the
/// request. On a share without named streams (`streams`) there are none to remove.
fn prepare_metadata(
    vfs: &dyn Vfs,
    file: &dyn VfsFile,
    mut meta: Meta,
    outcome: Outcome,
    requested: u32,
    ea_buffer: Option<&[u8]>,
    streams: bool,
) -> Result<Meta, NtStatus> {
    let Outcome {
        created,
        overwritten,
        ..
    } = outcome;
    if !(created || overwritten) {
        return Ok(meta);
    }
    if overwritten {
        // The named streams go with the old contents (MS-FSA 2.1.5.1.2.1).
        file.set_len(0).status()?;
        if streams {
            streams::remove_all(file).status()?;
        }
        meta.stat = file.stat().status()?;
    }
    let mut attributes = FileAttributes(requested) & SETTABLE_ATTRIBUTES;
    if !meta.is_directory() {
        attributes |= FileAttributes::ARCHIVE;
    }
    meta.stored = attributes;
    if created {
        meta.creation = meta
            .stat
            .btime
            .map_or_else(FileTime::now, fileinfo::filetime);
    }
    fileinfo::store(vfs, file, &meta)?;
    let meta = meta.into_stored();
    if let Some(data) = ea_buffer {
        eas::write(file, data)?;
    }
    Ok(meta)
}
