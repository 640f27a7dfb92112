//! CREATE: MS-SMB2 3.3.5.9, in phases: request checks → name → access → open → contexts →
//! response.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use parking_lot::Mutex;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::create::{
    CreateAction, CreateContext, CreateDisposition, CreateOptions, CreateRequest, CreateResponse,
    CreateResponseFlags, ImpersonationLevel, MaximalAccessResponse, OplockLevel,
    QueryOnDiskIdResponse, ResponseContext,
};
use smb3d_smb2::file_id::FileId;
use smb3d_vfs::{Access, Disposition, FileStat, Kind, OpenRequest, VfsPath};
use smb3d_wire::Writer;

use crate::blocking::blocking;
use crate::connection::Ctx;
use crate::eas;
use crate::fileinfo;
use crate::files::{FileKey, OpenEntry};
use crate::names::parse_path;
use crate::open::{DirCursor, Open};
use crate::share::ShareKind;
use crate::status_map::VfsResultExt;

/// The CreateOptions that FileModeInformation reports (MS-FSCC 2.4.26).
const MODE_OPTIONS: u32 =
    0x0000_0002 | 0x0000_0004 | 0x0000_0008 | 0x0000_0010 | 0x0000_0020 | 0x0000_1000;

/// Permission bits for new files and directories (before the process umask).
const FILE_MODE: u32 = 0o644;
const DIRECTORY_MODE: u32 = 0o755;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = CreateRequest::decode(pdu).map_err(|_| NtStatus::INVALID_PARAMETER)?;
    let session = cx.session.clone().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let tree = cx.tree.clone().ok_or(NtStatus::NETWORK_NAME_DELETED)?;
    check_request(&req)?;
    let ShareKind::Disk(vfs) = &tree.share.kind else {
        // Named pipes arrive with the RPC services; until then none exists.
        return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
    };

    // Name.
    let name =
        smb3d_wire::decode_utf16le(req.name, "Name").map_err(|_| NtStatus::OBJECT_NAME_INVALID)?;
    let path = parse_path(&name)?;
    let vfs_path = VfsPath::from_components(path.components.iter())
        .map_err(|_| NtStatus::OBJECT_NAME_INVALID)?;

    // Access (MS-SMB2 3.3.5.9 and MS-FSA 2.1.5.1.1): generic rights mapped, MAXIMUM_ALLOWED
    // replaced by what the tree grants, nothing beyond the tree's maximal access.
    let options = req.create_options;
    let mut disposition = req.create_disposition;
    let mut desired = req.desired_access.map_generic();
    if desired.contains(AccessMask::MAXIMUM_ALLOWED) {
        desired = desired.without(AccessMask::MAXIMUM_ALLOWED) | tree.maximal_access;
    }
    if !tree
        .maximal_access
        .contains(desired.without(AccessMask::ACCESS_SYSTEM_SECURITY))
    {
        return Err(NtStatus::ACCESS_DENIED);
    }
    if tree.share.read_only {
        // Nothing may be created or truncated; OPEN_IF can still open what exists.
        disposition = match disposition {
            CreateDisposition::OPEN | CreateDisposition::OPEN_IF => CreateDisposition::OPEN,
            _ => return Err(NtStatus::ACCESS_DENIED),
        };
    }
    if desired.contains(AccessMask::ACCESS_SYSTEM_SECURITY) {
        return Err(NtStatus::PRIVILEGE_NOT_HELD);
    }
    if options.contains(CreateOptions::DELETE_ON_CLOSE) && !desired.contains(AccessMask::DELETE) {
        return Err(NtStatus::INVALID_PARAMETER);
    }

    let kind = if options.contains(CreateOptions::DIRECTORY_FILE) {
        Kind::Directory
    } else if options.contains(CreateOptions::NON_DIRECTORY_FILE) {
        Kind::File
    } else {
        Kind::Any
    };
    let truncates = matches!(
        disposition,
        CreateDisposition::SUPERSEDE
            | CreateDisposition::OVERWRITE
            | CreateDisposition::OVERWRITE_IF
    );
    let reads = desired.intersects(AccessMask::FILE_READ_DATA | AccessMask::FILE_EXECUTE);
    let writes_data =
        truncates || desired.intersects(AccessMask::FILE_WRITE_DATA | AccessMask::FILE_APPEND_DATA);
    let access = match (reads, writes_data) {
        (true, true) => Access::ReadWrite,
        (false, true) => Access::Write,
        (true, false) => Access::Read,
        (false, false) => Access::MetadataOnly,
    };
    // Truncation waits until share access has been granted (MS-FSA 2.1.5.1.2 checks sharing
    // before overwriting), so an existing file is opened without it first.
    let vfs_disposition = match disposition {
        CreateDisposition::OPEN | CreateDisposition::OVERWRITE => Disposition::Open,
        CreateDisposition::CREATE => Disposition::Create,
        _ => Disposition::OpenOrCreate,
    };
    let create_mode = if kind == Kind::Directory {
        DIRECTORY_MODE
    } else {
        FILE_MODE
    };
    let open_request = OpenRequest {
        access,
        disposition: vfs_disposition,
        kind,
        create_mode,
    };

    let vfs = vfs.clone();
    // EAs given with the create (MS-SMB2 3.3.5.9.2) are checked before anything is created.
    let ea_buffer = req.contexts.iter().flatten().find_map(|c| match c {
        CreateContext::EaBuffer(data) => Some(data),
        _ => None,
    });
    if let Some(data) = ea_buffer {
        eas::check(data)?;
    }
    let (opened, stat) = blocking(|| {
        let opened = vfs.open(&vfs_path, &open_request)?;
        let stat = opened.file.stat()?;
        Ok((opened, stat))
    })
    .status()
    .map_err(|status| {
        if tree.share.read_only
            && status == NtStatus::OBJECT_NAME_NOT_FOUND
            && req.create_disposition != CreateDisposition::OPEN
        {
            NtStatus::ACCESS_DENIED
        } else {
            status
        }
    })?;

    let server = &cx.conn.server;
    let file_id = FileId {
        persistent: server.allocate_file_id(),
        volatile: server.allocate_file_id(),
    };
    let key = FileKey {
        dev: stat.dev,
        ino: stat.ino,
    };
    let entry = OpenEntry {
        id: file_id.volatile,
        access: desired,
        share: req.share_access,
    };
    let shared = server.files.register(key, &vfs_path, entry)?;
    let overwritten = truncates && !opened.created;
    let prepared = blocking(|| -> Result<FileStat, NtStatus> {
        let mut stat = stat;
        if overwritten {
            opened.file.set_len(0).status()?;
            stat = opened.file.stat().status()?;
        }
        if let Some(data) = ea_buffer.filter(|_| opened.created || overwritten) {
            eas::write(opened.file.as_ref(), data)?;
        }
        Ok(stat)
    });
    let stat = match prepared {
        Ok(stat) => stat,
        Err(status) => {
            server.files.release(&shared, file_id.volatile);
            return Err(status);
        }
    };
    let is_directory = fileinfo::is_directory(&stat);
    let action = if opened.created {
        CreateAction::CREATED
    } else if disposition == CreateDisposition::SUPERSEDE {
        CreateAction::SUPERSEDED
    } else if overwritten {
        CreateAction::OVERWRITTEN
    } else {
        CreateAction::OPENED
    };

    let open = Arc::new(Open {
        file_id,
        tree_id: tree.id,
        vfs,
        file: opened.file,
        shared,
        is_directory,
        granted: desired,
        delete_on_close: options.contains(CreateOptions::DELETE_ON_CLOSE),
        position: AtomicU64::new(0),
        mode: AtomicU64::new(u64::from(options.0 & MODE_OPTIONS)),
        dir: Mutex::new(DirCursor::default()),
    });
    session.state.lock().opens.insert(file_id.volatile, open);
    cx.chain.file_id = Some(file_id);

    // Response contexts (MS-SMB2 3.3.5.9.5, 3.3.5.9.9).
    let mut contexts = Vec::new();
    for context in req.contexts.iter().flatten() {
        match context {
            CreateContext::MaximalAccessRequest { .. } => {
                contexts.push(ResponseContext::MaximalAccess(MaximalAccessResponse {
                    query_status: NtStatus::SUCCESS,
                    maximal_access: tree.maximal_access,
                }));
            }
            CreateContext::QueryOnDiskId => {
                contexts.push(ResponseContext::QueryOnDiskId(QueryOnDiskIdResponse {
                    file_id: stat.ino,
                    volume_id: stat.dev,
                }));
            }
            _ => {}
        }
    }

    let name = vfs_path.name().unwrap_or("");
    let t = fileinfo::times(&stat);
    CreateResponse {
        oplock_level: OplockLevel::NONE,
        flags: CreateResponseFlags::empty(),
        create_action: action,
        creation_time: t.creation,
        last_access_time: t.last_access,
        last_write_time: t.last_write,
        change_time: t.change,
        allocation_size: fileinfo::allocation_size(&stat),
        end_of_file: fileinfo::end_of_file(&stat),
        file_attributes: fileinfo::attributes(&stat, name).0,
        file_id,
        contexts,
    }
    .encode(w);
    Ok(NtStatus::SUCCESS)
}

/// Checks of MS-SMB2 3.3.5.9 that need no file system.
fn check_request(req: &CreateRequest<'_>) -> Result<(), NtStatus> {
    if req.impersonation_level.0 > ImpersonationLevel::DELEGATE.0 {
        return Err(NtStatus::BAD_IMPERSONATION_LEVEL);
    }
    let options = req.create_options;
    if options.contains(CreateOptions::DIRECTORY_FILE | CreateOptions::NON_DIRECTORY_FILE) {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if req.create_disposition.0 > CreateDisposition::OVERWRITE_IF.0 {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if options.contains(CreateOptions::DIRECTORY_FILE)
        && !matches!(
            req.create_disposition,
            CreateDisposition::CREATE | CreateDisposition::OPEN | CreateDisposition::OPEN_IF
        )
    {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if req.contexts.iter().any(|c| c.is_err()) {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    Ok(())
}
