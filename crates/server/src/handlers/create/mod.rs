//! CREATE: MS-SMB2 3.3.5.9, in phases: request checks and access (`request`) → open → the
//! checks against the existing file (MS-FSA 2.1.5.1.2) → share access → overwrite and new-file
//! metadata → response contexts (`contexts`) → response.

mod contexts;
mod durable;
mod oplock;
mod request;
mod stream;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::time::SystemTime;

use parking_lot::Mutex;
use smb3d_dtyp::{AccessMask, NtStatus, SecurityDescriptor, SecurityInformation};
use smb3d_fscc::{FileAttributes, NotifyAction};
use smb3d_smb2::create::{
    CreateAction, CreateContext, CreateDisposition, CreateOptions, CreateRequest, CreateResponse,
    CreateResponseFlags, OplockLevel, ResponseContext,
};
use smb3d_smb2::file_id::FileId;
use smb3d_vfs::{Disposition, Kind, OpenRequest, Vfs, VfsFile, VfsPath};
use smb3d_wire::FileTime;

use crate::blocking::as_user;
use crate::fs::eas;
use crate::fs::fileinfo::{self, Meta, SETTABLE_ATTRIBUTES};
use crate::fs::names::parse_path;
use crate::fs::path_status;
use crate::fs::streams::{self, Stream, StreamFile};
use crate::identity::{IdMap, Identity};
use crate::request::ctx::Ctx;
use crate::request::reply::Reply;
use crate::security;
use crate::state::allocation;
use crate::state::audit;
use crate::state::caching::{Caching, Opening, Route};
use crate::state::connection::limits::{admit_open, admit_open_file};
use crate::state::dir_leases;
use crate::state::durable::ReplayState;
use crate::state::files::{FileKey, OpenEntry};
use crate::state::notify::ShareKey;
use crate::state::open::{DirCursor, Open, close_open, open_widest};
use crate::state::share::ShareKind;
use crate::status_map::VfsResultExt;

use request::Intent;

/// The CreateOptions that FileModeInformation reports (MS-FSCC 2.4.26).
const MODE_OPTIONS: u32 =
    0x0000_0002 | 0x0000_0004 | 0x0000_0008 | 0x0000_0010 | 0x0000_0020 | 0x0000_1000;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    reply: &mut Reply<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = CreateRequest::decode(pdu).map_err(|_| NtStatus::INVALID_PARAMETER)?;
    let session = cx.session.clone().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let tree = cx.tree.clone().ok_or(NtStatus::NETWORK_NAME_DELETED)?;
    let durable_ask = durable::ask(cx, &req)?;
    if let durable::Ask::Reconnect(reconnect) = durable_ask {
        // A reconnect names the file only to be checked against the open (3.3.5.9.7).
        admit_open(cx.conn, &session)?;
        let name = smb3d_wire::decode_utf16le(req.name, "Name")
            .map_err(|_| NtStatus::OBJECT_NAME_INVALID)?;
        let path = parse_path(&name)?;
        let vfs_path = VfsPath::from_components(path.components.iter())
            .map_err(|_| NtStatus::OBJECT_NAME_NOT_FOUND)?;
        // A client that lost its connection may reconnect before that connection's end
        // has been seen here: its open is given a moment to become disconnected.
        cx.conn
            .server
            .durable
            .wait_for_disconnect(
                reconnect.file_id.persistent,
                cx.conn.id,
                durable::RECONNECT_GRACE,
            )
            .await;
        return durable::reconnect(
            cx,
            reply,
            &req,
            &vfs_path,
            reconnect,
            CreateAction::OPENED,
            None,
        );
    }
    request::check(&req)?;
    admit_open(cx.conn, &session)?;
    let ShareKind::Disk(vfs) = &tree.share.kind else {
        // Named pipes arrive with the RPC services; until then none exists.
        return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
    };
    let counted = admit_open_file(cx.conn)?;

    let name =
        smb3d_wire::decode_utf16le(req.name, "Name").map_err(|_| NtStatus::OBJECT_NAME_INVALID)?;
    let path = parse_path(&name)?;
    let vfs_path = match VfsPath::from_components(path.components.iter()) {
        Ok(vfs_path) => vfs_path,
        Err(_) => {
            let identity = cx.identity()?;
            return Err(as_user(
                vfs.as_ref(),
                &identity,
                tree.share.metadata_wait(),
                || Ok(path_status::unrepresentable(vfs.as_ref(), &path.components)),
            )?);
        }
    };
    if let Some(answer) = durable::replay(cx, reply, &req, durable_ask, &vfs_path) {
        return answer;
    }
    let _under_way = durable::reserve(cx, durable_ask)?;
    let mut intent = request::intent(&req, &tree)?;

    // EAs given with the create (MS-SMB2 3.3.5.9.2) are checked before anything is created.
    let ea_buffer = req.contexts.iter().flatten().find_map(|c| match c {
        CreateContext::EaBuffer(data) => Some(data),
        _ => None,
    });
    if let Some(data) = ea_buffer {
        eas::check(data, cx.conn.server.limits().max_ea_size)?;
    }
    let sd_buffer = security_context(&req)?;
    // SMB2_CREATE_ALLOCATION_SIZE (MS-SMB2 2.2.13.2.6): space for a new or overwritten file.
    let allocation_request = req.contexts.iter().flatten().find_map(|c| match c {
        CreateContext::AllocationSize(size) => Some(size),
        _ => None,
    });
    let wants_maximal_access = req
        .contexts
        .iter()
        .flatten()
        .any(|c| matches!(c, CreateContext::MaximalAccessRequest { .. }));

    // Truncation waits until the existing file has been checked and share access granted
    // (MS-FSA 2.1.5.1.2), so an existing file is opened without it first.
    let mut open_request = OpenRequest {
        access: intent.vfs_access,
        disposition: match intent.disposition {
            CreateDisposition::OPEN | CreateDisposition::OVERWRITE => Disposition::Open,
            CreateDisposition::CREATE => Disposition::Create,
            _ => Disposition::OpenOrCreate,
        },
        kind: intent.kind,
        // Masked further by the process umask, or replaced by the parent's default POSIX ACL.
        create_mode: if intent.kind == Kind::Directory {
            0o777 & tree.share.directory_mask
        } else {
            0o666 & tree.share.create_mask
        },
    };
    stream::adapt(&path, &mut intent, &mut open_request)?;
    oplock::check_lease_key(cx, &req, &vfs_path, path.stream.as_deref())?;
    let identity = cx.identity()?;
    let conn = cx.conn;
    let server = &conn.server;
    let vfs = vfs.clone();
    let leaf = vfs_path.name().unwrap_or("");
    let (opened, meta, granted, maximal, named_stream) =
        as_user(vfs.as_ref(), &identity, tree.share.metadata_wait(), || {
            let opened = open_widest(vfs.as_ref(), &vfs_path, open_request, intent.desired)?;
            let meta = fileinfo::load_with(
                opened.file.as_ref(),
                opened.stat,
                leaf,
                &tree.share.presentation,
            )
            .status()?;
            let parent = security::Parent::of(vfs.as_ref(), &vfs_path, &server.ids);
            let (granted, sd) = if opened.created {
                admit_new(
                    vfs.as_ref(),
                    &vfs_path,
                    opened.file.as_ref(),
                    &meta,
                    &identity,
                    &intent,
                    &server.ids,
                    &parent,
                    sd_buffer.as_ref(),
                )?
            } else {
                check_existing(&meta, &intent, req.file_attributes, path.stream.is_some())?;
                let sd = security::descriptor(
                    vfs.as_ref(),
                    opened.file.as_ref(),
                    &meta.stat,
                    &server.ids,
                );
                // Overwriting needs the right to write whatever the open asks for.
                let required = if intent.truncates {
                    AccessMask::FILE_WRITE_DATA
                } else {
                    AccessMask::empty()
                };
                let granted = security::grant(&sd, &identity, intent.desired, required, &parent)?;
                (granted, sd)
            };
            let maximal = wants_maximal_access.then(|| security::maximal(&sd, &identity, &parent));
            let named_stream = match &path.stream {
                None => None,
                Some(name) => match stream::resolve(opened.file.as_ref(), name, intent.disposition)
                {
                    Ok(resolved) => Some(resolved),
                    Err(status) => {
                        if opened.created {
                            let _ = vfs.unlink(&vfs_path);
                        }
                        return Err(status);
                    }
                },
            };
            Ok((
                opened,
                meta,
                granted & tree.maximal_access,
                maximal.map(|m| m & tree.maximal_access),
                named_stream,
            ))
        })
        .map_err(|status| {
            if tree.read_only
                && status == NtStatus::OBJECT_NAME_NOT_FOUND
                && req.create_disposition != CreateDisposition::OPEN
            {
                NtStatus::ACCESS_DENIED
            } else {
                status
            }
        })?;
    let (stream_name, stream_created) = match named_stream {
        Some((name, created)) => (Some(name), created),
        None => (None, false),
    };
    let overwritten = intent.truncates && !opened.created && stream_name.is_none();

    let file_id = server.new_file_id();
    let key = FileKey {
        dev: meta.stat.dev,
        ino: meta.stat.ino,
    };
    let entry = OpenEntry {
        id: file_id.volatile,
        access: granted,
        share: req.share_access,
        stream: stream_name.as_deref().map(streams::key),
        persistent_id: file_id.persistent,
        caching: Caching::None,
        route: Route {
            conn: Arc::downgrade(conn),
            session_id: session.id,
            encrypt: tree.encrypt_data,
        },
        disconnected: false,
        persistent: false,
    };
    let opening = Opening {
        request: oplock::request(cx, &req, meta.is_directory()),
        overwrite: intent.truncates && stream_name.is_none(),
        first_attempt: true,
        existed: !opened.created && !stream_created,
        delete_on_close: req.create_options.contains(CreateOptions::DELETE_ON_CLOSE),
        directory: meta.is_directory().then(|| ShareKey::of(&vfs)),
    };
    let changed_by = dir_leases::requested_parent(&opening.request);
    let (shared, caching) = oplock::register(cx, reply, key, &vfs_path, entry, opening).await?;
    let file = opened.file;
    let touches_files = opened.created || overwritten || stream_name.is_some();
    let prepare_open = || {
        let meta = prepare(
            vfs.as_ref(),
            file.as_ref(),
            meta,
            opened.created,
            overwritten,
            req.file_attributes,
            ea_buffer,
        )?;
        if opened.created {
            tree.share.sync_parent(vfs.as_ref(), &vfs_path).status()?;
        }
        let meta = match allocation_request {
            Some(size) if (opened.created || overwritten) && stream_name.is_none() => {
                allocation::reserve(&tree.share, file.as_ref(), meta, size)?
            }
            _ => meta,
        };
        let Some(name) = stream_name else {
            return Ok((file, None, meta));
        };
        // From here on the open is the stream's: its size, the file's other metadata.
        let stream = Stream::new(file, name);
        let file: Box<dyn VfsFile> = Box::new(StreamFile(stream.clone()));
        let meta = fileinfo::load(file.as_ref(), leaf, &tree.share.presentation).status()?;
        Ok((file, Some(stream), meta))
    };
    // An existing file opened as it is needs no file-system call here, so no change of
    // credentials either.
    let prepared = if touches_files {
        as_user(
            vfs.as_ref(),
            &identity,
            tree.share.metadata_wait(),
            prepare_open,
        )
    } else {
        prepare_open()
    };
    let (file, stream, meta) = match prepared {
        Ok(prepared) => prepared,
        Err(status) => {
            server.files.release(&shared, file_id.volatile);
            return Err(status);
        }
    };
    let action = if opened.created || stream_created {
        CreateAction::CREATED
    } else if intent.disposition == CreateDisposition::SUPERSEDE {
        CreateAction::SUPERSEDED
    } else if overwritten {
        CreateAction::OVERWRITTEN
    } else {
        CreateAction::OPENED
    };

    if opened.created {
        server.notify.report_name(
            ShareKey::of(&vfs),
            &vfs_path,
            NotifyAction::ADDED,
            meta.is_directory(),
        );
    }
    if opened.created || overwritten {
        dir_leases::child_changed(server, ShareKey::of(&vfs), &vfs_path, changed_by);
    }
    let watches_host = meta.is_directory() && caching.lease.is_some();
    if watches_host {
        server.host_changes.acquire(server, &vfs);
    }
    let open = Arc::new(Open {
        file_id,
        tree_id: AtomicU32::new(tree.id),
        vfs,
        identity,
        file,
        stream,
        shared,
        is_directory: meta.is_directory(),
        granted,
        delete_on_close: req.create_options.contains(CreateOptions::DELETE_ON_CLOSE),
        position: AtomicU64::new(0),
        mode: AtomicU64::new(u64::from(req.create_options.0 & MODE_OPTIONS)),
        dir: Mutex::new(DirCursor::default()),
        writes: Default::default(),
        opened_at: SystemTime::now(),
        audit: tree.audit.clone(),
        share: tree.share.clone(),
        replay: ReplayState::new(
            u16::try_from(cx.hdr.status.0 & 0xFFFF).unwrap_or_default(),
            matches!(durable_ask, durable::Ask::V2(_)),
        ),
        watches_host: AtomicBool::new(watches_host),
        _counted: counted,
    });
    if let Some(who) = &open.audit {
        audit::opened(who, &vfs_path, action, granted, open.is_directory);
    }
    {
        // The open may have waited for breaks while its tree connect went away.
        let mut st = session.state.lock();
        if !st.trees.contains_key(&tree.id) {
            drop(st);
            close_open(server, &open);
            return Err(NtStatus::NETWORK_NAME_DELETED);
        }
        st.opens.insert(file_id.volatile, open.clone());
    }
    cx.chain.file_id = Some(file_id);

    let mut contexts = contexts::responses(&req, maximal, &meta);
    contexts.extend(durable::grant(cx, durable_ask, &open, &caching, action));
    if let Some(lease) = caching.lease {
        contexts.push(ResponseContext::Lease(lease));
    }
    encode_response(
        reply,
        &meta,
        caching.oplock_level,
        action,
        file_id,
        contexts,
    );
    Ok(NtStatus::SUCCESS)
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

/// The descriptor of the SD_BUFFER create context (MS-SMB2 2.2.13.2.3), checked before
/// anything is created.
fn security_context(req: &CreateRequest<'_>) -> Result<Option<SecurityDescriptor>, NtStatus> {
    let Some(data) = req.contexts.iter().flatten().find_map(|c| match c {
        CreateContext::SecurityDescriptor(data) => Some(data),
        _ => None,
    }) else {
        return Ok(None);
    };
    if data.len() > security::MAX_DESCRIPTOR_LEN {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let sd = SecurityDescriptor::decode(data).map_err(|_| NtStatus::INVALID_SECURITY_DESCR)?;
    if security::parts_of(&sd).contains(SecurityInformation::SACL) {
        return Err(NtStatus::PRIVILEGE_NOT_HELD);
    }
    Ok(Some(sd))
}

/// A file or directory this open just created: the parent must allow adding it (else it is
/// removed again and the open refused, MS-FSA 2.1.5.1.1); it takes the descriptor of the
/// create context over what it inherits from the parent (MS-DTYP 2.5.3.4.1), and either
/// reaches its POSIX permissions. The creator gets what it asked for. Returns the granted
/// access and the new descriptor.
#[allow(clippy::too_many_arguments)]
fn admit_new(
    vfs: &dyn Vfs,
    path: &VfsPath,
    file: &dyn VfsFile,
    meta: &Meta,
    who: &Identity,
    intent: &Intent,
    ids: &IdMap,
    parent: &security::Parent<'_>,
    sd_buffer: Option<&SecurityDescriptor>,
) -> Result<(AccessMask, SecurityDescriptor), NtStatus> {
    let add = if meta.is_directory() {
        AccessMask::FILE_ADD_SUBDIRECTORY
    } else {
        AccessMask::FILE_ADD_FILE
    };
    let parent_sd = parent.descriptor();
    if parent_sd.is_some_and(|sd| !security::allows(sd, who, add)) {
        let _ = vfs.unlink(path);
        return Err(NtStatus::ACCESS_DENIED);
    }
    let inherited = parent_sd.and_then(|sd| security::inherited(sd, meta.is_directory(), who));
    let initial = || security::initial_descriptor(vfs, file, &meta.stat, ids, who);
    let applied = match (sd_buffer, &inherited) {
        (Some(update), _) => {
            let current = inherited.clone().unwrap_or_else(initial);
            let info = security::parts_of(update);
            security::change(vfs, file, who, ids, info, update, &current)
        }
        (None, Some(sd)) => security::apply(vfs, file, ids, sd),
        // Where the file system cannot make the creator the owner, the descriptor does.
        (None, None) if !vfs.runs_as_users() => security::store(vfs, file, &initial()),
        (None, None) => Ok(()),
    };
    match applied {
        // A file system without security xattrs keeps no ACL; the POSIX mode governs.
        Ok(()) | Err(NtStatus::NOT_SUPPORTED) => {}
        Err(status) => {
            let _ = vfs.unlink(path);
            return Err(status);
        }
    }
    let requested = intent.desired.without(AccessMask::MAXIMUM_ALLOWED);
    let granted = if intent.desired.contains(AccessMask::MAXIMUM_ALLOWED) {
        requested | AccessMask::FILE_ALL_ACCESS
    } else {
        requested
    };
    let stat = file.stat().status()?;
    Ok((granted, security::descriptor(vfs, file, &stat, ids)))
}

/// MS-FSA 2.1.5.1.2.1 against an existing file: a read-only file is not written or deleted
/// (nor are its streams), and an overwrite of the file must keep the HIDDEN and SYSTEM
/// attributes it has.
fn check_existing(
    meta: &Meta,
    intent: &Intent,
    requested: u32,
    named_stream: bool,
) -> Result<(), NtStatus> {
    if meta.readonly() && !meta.is_directory() {
        if intent.delete_on_close {
            return Err(NtStatus::CANNOT_DELETE);
        }
        if intent.writes_data || intent.truncates {
            return Err(NtStatus::ACCESS_DENIED);
        }
    }
    if intent.truncates && !named_stream {
        let requested = FileAttributes(requested);
        for kept in [FileAttributes::HIDDEN, FileAttributes::SYSTEM] {
            if meta.stored.contains(kept) && !requested.contains(kept) {
                return Err(NtStatus::ACCESS_DENIED);
            }
        }
    }
    Ok(())
}

/// What happens to the file once the open is granted: an overwritten file is truncated, loses
/// its named streams and takes the requested attributes with ARCHIVE; a new file gets its attributes (ARCHIVE for
/// files, as NTFS sets it) and create time; either gets the EAs of the request.
fn prepare(
    vfs: &dyn Vfs,
    file: &dyn VfsFile,
    mut meta: Meta,
    created: bool,
    overwritten: bool,
    requested: u32,
    ea_buffer: Option<&[u8]>,
) -> Result<Meta, NtStatus> {
    if !(created || overwritten) {
        return Ok(meta);
    }
    if overwritten {
        // The named streams go with the old contents (MS-FSA 2.1.5.1.2.1).
        file.set_len(0).status()?;
        streams::remove_all(file).status()?;
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
    if let Some(data) = ea_buffer {
        eas::write(file, data)?;
    }
    Ok(meta)
}
