//! SET_INFO: MS-SMB2 3.3.5.21 with MS-FSA 2.1.5.14 for the file classes clients use to change
//! times and sizes, delete and rename; quotas as 3.3.5.21.4 (`fs/quota.rs`).

use std::sync::atomic::Ordering;

use smb3d_dtyp::{AccessMask, NtStatus, SecurityDescriptor, SecurityInformation};
use smb3d_fscc::{
    DispositionFlags, FileAllocationInformation, FileAttributes, FileBasicInformation,
    FileDispositionInformation, FileDispositionInformationEx, FileEndOfFileInformation,
    FileInformationClass, FileLinkInformation, FileMode, FileModeInformation,
    FilePositionInformation, FileRenameInformation, FileRenameInformationEx, RenameFlags,
};
use smb3d_smb2::aapl::server_caps;
use smb3d_smb2::create::ShareAccess;
use smb3d_smb2::query_info::InfoType;
use smb3d_smb2::set_info::{SetInfoRequest, SetInfoResponse};
use smb3d_vfs::{Access, Disposition, FileType, Kind, OpenRequest, Timespec, VfsError, VfsPath};
use smb3d_wire::{DecodeError, DecodeErrorKind, FileTime};

use crate::clock::Clock;
use crate::fs::eas;
use crate::fs::fileinfo::{self, SETTABLE_ATTRIBUTES};
use crate::fs::names::parse_path;
use crate::fs::path_status;
use crate::fs::resource_fork;
use crate::fs::streams;
use crate::fs::write_time::Now;
use crate::handlers::{check_credit_charge, lookup_open, mac_caps};
use crate::identity::IdMap;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::request::reply::{Reply, wait_async};
use crate::security;
use crate::state::allocation;
use crate::state::audit;
use crate::state::caching;
use crate::state::cluster_opens;
use crate::state::files::{FileKey, FileTable};
use crate::state::open::Open;
use crate::state::server::Server;
use crate::status_map::VfsResultExt;

/// FileModeInformation bits a client may set (MS-FSCC 2.4.26).
const SETTABLE_MODE: u32 = 0x0000_0002 | 0x0000_0004 | 0x0000_0008 | 0x0000_0010 | 0x0000_0020;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    reply: &mut Reply<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = SetInfoRequest::decode(pdu).map_err(malformed)?;
    let open = lookup_open(cx, req.file_id)?;
    let buffer_len = u32::try_from(req.buffer.len()).map_err(|_| NtStatus::INVALID_PARAMETER)?;
    if buffer_len > cx.conn.server.settings.max_io_size {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    check_credit_charge(cx, buffer_len)?;
    let limits = cx.conn.server.limits();
    if cx.tree.as_ref().is_some_and(|t| t.read_only) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    open.changeable()?;
    let before = open.path();
    if req.info_type == InfoType::FILE
        && matches!(
            FileInformationClass(req.file_info_class),
            FileInformationClass::FILE_END_OF_FILE_INFORMATION
                | FileInformationClass::FILE_ALLOCATION_INFORMATION
        )
    {
        caching::before_write(&cx.conn.server, &open);
    }
    let renames = req.info_type == InfoType::FILE
        && matches!(
            FileInformationClass(req.file_info_class),
            FileInformationClass::FILE_RENAME_INFORMATION
                | FileInformationClass::FILE_RENAME_INFORMATION_EX
        );
    if renames {
        wait_for_handle_breaks(cx, reply, &open).await?;
    }
    match req.info_type {
        InfoType::FILE => open.io(|| {
            set_file_info(
                &cx.conn.server,
                &cx.conn.server.ids,
                &open,
                FileInformationClass(req.file_info_class),
                req.buffer,
                limits.max_ea_size,
                &*cx.conn.server.settings.clock,
            )
        })?,
        // Changing volume information needs privileges no SMB user has here.
        InfoType::FILESYSTEM => return Err(NtStatus::ACCESS_DENIED),
        InfoType::SECURITY => {
            let info = SecurityInformation(req.additional_information);
            let ids = &cx.conn.server.ids;
            let max = limits.max_security_descriptor_size;
            let nfs_aces = mac_caps(cx) & server_caps::NFS_ACE != 0;
            open.io(|| set_security(&open, ids, info, req.buffer, max, nfs_aces))?
        }
        InfoType::QUOTA => {
            let ids = &cx.conn.server.ids;
            open.io(|| crate::fs::quota::set(open.vfs.as_ref(), ids, &open.identity, req.buffer))?
        }
        _ => return Err(NtStatus::INVALID_PARAMETER),
    }
    if renames {
        crate::state::persistent::renamed(&cx.conn.server, &open.shared);
        if open.is_directory {
            let after = open.path();
            crate::state::cluster_notify::renamed(&cx.conn.server, &open.share, &before, &after);
        }
    }
    crate::state::notify::set_info_done(&cx.conn.server.notify, &open, &before, &req);
    crate::state::dir_leases::set_info_done(&cx.conn.server, &open, &before, &req);
    SetInfoResponse.encode(&mut reply.writer());
    Ok(NtStatus::SUCCESS)
}

/// Before a rename (MS-FSA 2.1.5.14.11): breaks other opens' handle caching and waits
/// (asynchronously, as the CREATE of an open does) until no such break is unacknowledged.
async fn wait_for_handle_breaks(
    cx: &mut Ctx<'_>,
    reply: &mut Reply<'_>,
    open: &Open,
) -> Result<(), NtStatus> {
    loop {
        let change = open.shared.caching_change();
        tokio::pin!(change);
        change.as_mut().enable();
        let (delay, breaks) = open.shared.start_breaks(|state, out| {
            caching::breaks_for_rename(state, open.file_id.volatile, out)
        });
        let unavailable = breaks.unavailable;
        caching::deliver(&cx.conn.server, &open.shared, breaks);
        if unavailable {
            return Err(NtStatus::FILE_NOT_AVAILABLE);
        }
        if !delay {
            return Ok(());
        }
        wait_async(cx, reply, change).await?;
    }
}

/// A buffer too short for its class is STATUS_INFO_LENGTH_MISMATCH; any other malformation
/// STATUS_INVALID_PARAMETER.
fn buffer_error(e: DecodeError) -> NtStatus {
    if e.kind == DecodeErrorKind::Truncated {
        NtStatus::INFO_LENGTH_MISMATCH
    } else {
        NtStatus::INVALID_PARAMETER
    }
}

/// MS-FSA 2.1.5.14.11: a buffer shorter than the fixed part of the rename information is
/// STATUS_INFO_LENGTH_MISMATCH; a FileNameLength running past the buffer is
/// STATUS_INVALID_PARAMETER.
fn rename_error(buf: &[u8]) -> NtStatus {
    if buf.len() < FileRenameInformation::FIXED_SIZE {
        NtStatus::INFO_LENGTH_MISMATCH
    } else {
        NtStatus::INVALID_PARAMETER
    }
}

fn require(open: &Open, access: AccessMask) -> Result<(), NtStatus> {
    if open.may(access) {
        Ok(())
    } else {
        Err(NtStatus::ACCESS_DENIED)
    }
}

fn set_file_info(
    server: &Server,
    ids: &IdMap,
    open: &Open,
    class: FileInformationClass,
    buf: &[u8],
    max_ea_size: usize,
    clock: &dyn Clock,
) -> Result<(), NtStatus> {
    let files = &server.files;
    match class {
        FileInformationClass::FILE_BASIC_INFORMATION => {
            let info = FileBasicInformation::decode(buf).map_err(buffer_error)?;
            require(open, AccessMask::FILE_WRITE_ATTRIBUTES)?;
            set_basic(open, &info, clock)
        }
        FileInformationClass::FILE_END_OF_FILE_INFORMATION => {
            let info = FileEndOfFileInformation::decode(buf).map_err(buffer_error)?;
            require(open, AccessMask::FILE_WRITE_DATA)?;
            let len = u64::try_from(info.end_of_file).map_err(|_| NtStatus::INVALID_PARAMETER)?;
            if open.is_directory {
                return Err(NtStatus::INVALID_PARAMETER);
            }
            allocation::set_end_of_file(open, len).status()?;
            open.shared.with_write_time(|wt| wt.touch(Now::of(clock)));
            Ok(())
        }
        FileInformationClass::FILE_ALLOCATION_INFORMATION => {
            let info = FileAllocationInformation::decode(buf).map_err(buffer_error)?;
            require(open, AccessMask::FILE_WRITE_DATA)?;
            let allocation =
                u64::try_from(info.allocation_size).map_err(|_| NtStatus::INVALID_PARAMETER)?;
            allocation::set_allocation(open, allocation).status()
        }
        FileInformationClass::FILE_DISPOSITION_INFORMATION => {
            let info = FileDispositionInformation::decode(buf).map_err(buffer_error)?;
            set_delete_pending(server, open, info.delete_pending)
        }
        FileInformationClass::FILE_DISPOSITION_INFORMATION_EX => {
            let info = FileDispositionInformationEx::decode(buf).map_err(buffer_error)?;
            set_delete_pending(server, open, info.flags.contains(DispositionFlags::DELETE))
        }
        FileInformationClass::FILE_RENAME_INFORMATION => {
            let info = FileRenameInformation::decode(buf).map_err(|_| rename_error(buf))?;
            rename(
                files,
                ids,
                open,
                info.root_directory,
                &info.file_name,
                info.replace_if_exists,
            )
        }
        FileInformationClass::FILE_RENAME_INFORMATION_EX => {
            let info = FileRenameInformationEx::decode(buf).map_err(|_| rename_error(buf))?;
            rename(
                files,
                ids,
                open,
                info.root_directory,
                &info.file_name,
                info.flags.contains(RenameFlags::REPLACE_IF_EXISTS),
            )
        }
        FileInformationClass::FILE_LINK_INFORMATION => {
            let info = FileLinkInformation::decode(buf).map_err(buffer_error)?;
            link(
                files,
                ids,
                open,
                info.root_directory,
                &info.file_name,
                info.replace_if_exists,
            )
        }
        FileInformationClass::FILE_FULL_EA_INFORMATION => {
            // A share without EAs (`ea_support` off) answers as a file system without them
            // and as Samba with `ea support = no`, before the access check as Samba does.
            if !open.share.presentation.xattrs.eas {
                return Err(NtStatus::EAS_NOT_SUPPORTED);
            }
            require(open, AccessMask::FILE_WRITE_EA)?;
            eas::check(buf, max_ea_size)?;
            eas::write(open.file.as_ref(), buf)
        }
        FileInformationClass::FILE_POSITION_INFORMATION => {
            let info = FilePositionInformation::decode(buf).map_err(buffer_error)?;
            let position =
                u64::try_from(info.current_byte_offset).map_err(|_| NtStatus::INVALID_PARAMETER)?;
            open.position.store(position, Ordering::Relaxed);
            Ok(())
        }
        FileInformationClass::FILE_MODE_INFORMATION => {
            let FileModeInformation {
                mode: FileMode(mode),
            } = FileModeInformation::decode(buf).map_err(buffer_error)?;
            if mode & !SETTABLE_MODE != 0 {
                return Err(NtStatus::INVALID_PARAMETER);
            }
            open.mode.store(u64::from(mode), Ordering::Relaxed);
            Ok(())
        }
        _ => Err(NtStatus::INVALID_INFO_CLASS),
    }
}

/// FileBasicInformation (MS-FSA 2.1.5.14.2). Times: 0 leaves a time alone, -1 and -2 stop and
/// resume automatic updates of the write time; a set write time sticks while the file is open
/// (`WriteTime`); the create time is kept in DOSATTRIB, access and write times in the inode;
/// the change time cannot be set on Linux and follows the write time. Any call shows a pending
/// write-time update. Attributes: 0 leaves them alone; DIRECTORY must match the object and a
/// directory cannot be TEMPORARY.
fn set_basic(open: &Open, info: &FileBasicInformation, clock: &dyn Clock) -> Result<(), NtStatus> {
    let settable = |t: FileTime| -> Option<FileTime> {
        (t != FileTime::UNCHANGED
            && t != FileTime::SUSPEND_UPDATES
            && t != FileTime::RESUME_UPDATES)
            .then_some(t)
    };
    let timespec = |t: FileTime| {
        let (sec, nsec) = t.to_unix();
        Timespec { sec, nsec }
    };
    let attributes = info.file_attributes;
    if !attributes.is_empty() {
        if attributes.contains(FileAttributes::DIRECTORY) && !open.is_directory {
            return Err(NtStatus::INVALID_PARAMETER);
        }
        if attributes.contains(FileAttributes::TEMPORARY) && open.is_directory {
            return Err(NtStatus::INVALID_PARAMETER);
        }
    }
    let creation = settable(info.times.creation);
    if creation.is_some() || !attributes.is_empty() {
        let mut meta = open.stored_meta()?;
        if let Some(creation) = creation {
            meta.creation = creation;
        }
        if !attributes.is_empty() {
            // SPARSE is kept: only FSCTL_SET_SPARSE changes it.
            meta.stored =
                (attributes & SETTABLE_ATTRIBUTES) | (meta.stored & FileAttributes::SPARSE_FILE);
        }
        fileinfo::store(open.vfs.as_ref(), open.file.as_ref(), &meta)?;
    }
    let atime = settable(info.times.last_access).map(timespec);
    let mtime = settable(info.times.last_write).map(timespec);
    if atime.is_some() || mtime.is_some() {
        open.file.set_times(atime, mtime).status()?;
    }
    let now = Now::of(clock);
    let disk = fileinfo::filetime(open.file.stat().status()?.mtime);
    open.shared.with_write_time(|wt| {
        wt.flush(now);
        match info.times.last_write {
            FileTime::UNCHANGED => {}
            FileTime::SUSPEND_UPDATES => wt.set(None, disk, now),
            FileTime::RESUME_UPDATES => wt.resume(),
            time => wt.set(Some(time), disk, now),
        }
    });
    Ok(())
}

/// FileDispositionInformation (MS-FSA 2.1.5.14.3): the file becomes delete-pending at once,
/// to be deleted as this open's user; a read-only file cannot be deleted and a directory must
/// be empty.
/// On a cluster node the other nodes learn of the mark first (docs/cluster.md).
fn set_delete_pending(server: &Server, open: &Open, delete: bool) -> Result<(), NtStatus> {
    require(open, AccessMask::DELETE)?;
    if delete && open.stored_meta()?.readonly() {
        return Err(NtStatus::CANNOT_DELETE);
    }
    if delete && open.is_directory {
        let entries = open.file.read_dir().status()?;
        if !open.share.empty_for_deletion(&entries) {
            return Err(NtStatus::DIRECTORY_NOT_EMPTY);
        }
    }
    cluster_opens::delete_pending(server, open, delete)?;
    server.files.set_delete_pending(
        &open.shared,
        open.stream_key().as_ref(),
        delete.then(|| open.deleter()),
    );
    Ok(())
}

/// MS-SMB2 3.3.5.21.1 and MS-FSA 2.1.5.14.11.
fn rename(
    files: &FileTable,
    ids: &IdMap,
    open: &Open,
    root_directory: u64,
    target: &str,
    replace: bool,
) -> Result<(), NtStatus> {
    require(open, AccessMask::DELETE)?;
    if root_directory != 0 {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if let Some(stream) = target.strip_prefix(':') {
        return rename_stream(files, open, stream, replace);
    }
    // The target is relative to the share root; clients may start it with a backslash.
    let target = parse_path(target.strip_prefix('\\').unwrap_or(target))?;
    if target.is_root() || target.stream.is_some() || target.default_stream {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    // A vetoed name cannot be made by renaming either, as Samba answers.
    let components = target.components.iter().map(String::as_str);
    if let Some(status) = open.share.presentation.vetoed_path(components) {
        return Err(status);
    }
    // A file moves with its streams; one of them being open keeps it where it is.
    if open.stream.is_some() || files.has_open_streams(&open.shared) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let to = VfsPath::from_components(target.components.iter())
        .map_err(|_| NtStatus::OBJECT_NAME_INVALID)?;
    let from = open.path();
    if from.is_root() {
        return Err(NtStatus::ACCESS_DENIED);
    }
    if from == to {
        return Ok(());
    }
    // Windows renames by adding an entry to the source directory, as an open for writing that
    // shares reading and writing would; an open of that directory which does not allow it
    // (one holding DELETE, or sharing no writes) makes the rename a sharing violation.
    if let Some((parent, _)) = from.parent_and_name()
        && let Ok(dir) = open.vfs.stat(&parent)
        && !files.would_share(
            FileKey {
                dev: dir.dev,
                ino: dir.ino,
                snapshot: open.shared.key.snapshot,
            },
            AccessMask::FILE_WRITE_DATA,
            ShareAccess::READ | ShareAccess::WRITE,
        )
    {
        return Err(NtStatus::SHARING_VIOLATION);
    }
    // A directory with open files below it cannot move (MS-FSA 2.1.5.14.11), nor can an open
    // file be replaced.
    if open.is_directory && files.any_open_below(&from) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    if replace
        && let Ok(target) = open.vfs.stat(&to)
        && files
            .get(FileKey {
                dev: target.dev,
                ino: target.ino,
                snapshot: open.shared.key.snapshot,
            })
            .is_some_and(|f| f.key != open.shared.key)
    {
        return Err(NtStatus::ACCESS_DENIED);
    }
    security::may_place(
        open.vfs.as_ref(),
        &to,
        open.is_directory,
        replace,
        &open.identity,
        ids,
    )?;
    match open.vfs.rename(&from, &to, replace) {
        Ok(()) => {}
        // Replacing a directory is refused as Windows does.
        Err(VfsError::IsADirectory | VfsError::NotEmpty) if replace => {
            return Err(NtStatus::ACCESS_DENIED);
        }
        Err(VfsError::OutsideShare) => {
            return Err(path_status::outside_share(open.vfs.as_ref(), &to));
        }
        Err(e) => return Err(crate::status_map::vfs_status(&e)),
    }
    if open.share.apple.is_some() && !open.is_directory {
        // The file has moved whatever becomes of its resource fork's `._` file.
        let _ = resource_fork::follow_rename(open.vfs.as_ref(), &from, &to);
    }
    files.renamed(&from, &to);
    if let Some(who) = &open.audit {
        audit::renamed(who, &from, &to);
    }
    open.share.sync_parent(open.vfs.as_ref(), &to).status()?;
    if from.parent_and_name().map(|(p, _)| p) != to.parent_and_name().map(|(p, _)| p) {
        open.share.sync_parent(open.vfs.as_ref(), &from).status()?;
    }
    Ok(())
}

/// MS-SMB2 3.3.5.21.1 and MS-FSA 2.1.5.15.6: adds `target` as another name of the open's file.
fn link(
    files: &FileTable,
    ids: &IdMap,
    open: &Open,
    root_directory: u64,
    target: &str,
    replace: bool,
) -> Result<(), NtStatus> {
    if root_directory != 0 || open.stream.is_some() {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if open.is_directory {
        return Err(NtStatus::FILE_IS_A_DIRECTORY);
    }
    if open.shared.delete_pending() {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let target = parse_path(target.strip_prefix('\\').unwrap_or(target))?;
    if target.is_root() || target.stream.is_some() || target.default_stream {
        return Err(NtStatus::OBJECT_NAME_INVALID);
    }
    // A vetoed name is neither made nor replaced by a link (a `._` file on an apple share
    // holds a resource fork), as by a rename.
    let components = target.components.iter().map(String::as_str);
    if let Some(status) = open.share.presentation.vetoed_path(components) {
        return Err(status);
    }
    let to = VfsPath::from_components(target.components.iter())
        .map_err(|_| NtStatus::OBJECT_NAME_INVALID)?;
    let from = open.path();
    if let Ok(existing) = open.vfs.stat(&to) {
        if !replace {
            return Err(NtStatus::OBJECT_NAME_COLLISION);
        }
        if existing.dev == open.shared.key.dev && existing.ino == open.shared.key.ino {
            // Already a name of this file.
            return Ok(());
        }
        // Only a closed, writable file gives way to the new link.
        let in_use = files
            .get(FileKey {
                dev: existing.dev,
                ino: existing.ino,
                snapshot: open.shared.key.snapshot,
            })
            .is_some();
        if existing.file_type == FileType::Directory || in_use {
            return Err(NtStatus::ACCESS_DENIED);
        }
    }
    security::may_place(open.vfs.as_ref(), &to, false, replace, &open.identity, ids)?;
    if replace {
        match open.vfs.unlink(&to) {
            Ok(()) | Err(VfsError::NotFound) => {}
            Err(e) => return Err(crate::status_map::vfs_status(&e)),
        }
    }
    match open.vfs.link(&from, &to) {
        Ok(()) => {}
        Err(VfsError::AlreadyExists) => return Err(NtStatus::OBJECT_NAME_COLLISION),
        Err(e) => return Err(crate::status_map::vfs_status(&e)),
    }
    open.share.sync_parent(open.vfs.as_ref(), &to).status()
}

/// MS-FSA 2.1.5.14.11.1: renames the open's named stream to `target` (what followed the
/// leading ':'), or makes it the file's (empty) default stream.
fn rename_stream(
    files: &FileTable,
    open: &Open,
    target: &str,
    replace: bool,
) -> Result<(), NtStatus> {
    let (name, kind) = target.split_once(':').unwrap_or((target, "$DATA"));
    if target.ends_with(':') || (name.is_empty() && kind.is_empty()) || kind.contains(':') {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if name.contains('\0') || name.len() > crate::fs::names::MAX_STREAM_NAME_BYTES {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if !kind.eq_ignore_ascii_case("$DATA") {
        return Err(NtStatus::OBJECT_TYPE_MISMATCH);
    }
    // Renaming the default stream itself is not offered (NTFS allows it into an empty
    // named stream; no client relies on it).
    let Some(stream) = &open.stream else {
        return Err(NtStatus::INVALID_PARAMETER);
    };
    let base = stream.base();
    if name.is_empty() {
        if !replace {
            return Err(NtStatus::OBJECT_NAME_COLLISION);
        }
        if files.has_default_stream_opens(&open.shared) {
            return Err(NtStatus::SHARING_VIOLATION);
        }
        if base.stat().status()?.size != 0 {
            return Err(NtStatus::INVALID_PARAMETER);
        }
        let request = OpenRequest {
            access: Access::Write,
            disposition: Disposition::Open,
            kind: Kind::File,
            create_mode: 0,
        };
        let data = open.vfs.open(&open.path(), &request).status()?;
        return stream.rename_to_default(data.file.as_ref()).status();
    }
    let same = smb3d_vfs::casefold::eq_ignore_case(name, &stream.name());
    if !same && let Some(existing) = streams::find(base, name).status()? {
        if !replace {
            return Err(NtStatus::OBJECT_NAME_COLLISION);
        }
        if files.stream_is_open(&open.shared, &streams::key(&existing)) {
            return Err(NtStatus::SHARING_VIOLATION);
        }
        let size = base
            .get_xattr(&streams::xattr_name(&existing))
            .status()?
            .map_or(0, |v| v.len().saturating_sub(1));
        if size != 0 {
            return Err(NtStatus::INVALID_PARAMETER);
        }
    }
    stream.rename(name).status()?;
    files.renamed_stream(&open.shared, open.file_id.volatile, streams::key(name));
    Ok(())
}

/// MS-SMB2 3.3.5.21.3 with MS-FSA 2.1.5.16: owner and group need WRITE_OWNER, the DACL
/// WRITE_DAC, the SACL a privilege no SMB user holds here. The parts given replace those of the
/// file's descriptor (`security::change`). A Mac client that negotiated NFS ACEs changes the
/// mode with the DACL's mode entry, applied after the DACL as Samba's vfs_fruit applies it.
fn set_security(
    open: &Open,
    ids: &IdMap,
    info: SecurityInformation,
    buf: &[u8],
    max_size: usize,
    nfs_aces: bool,
) -> Result<(), NtStatus> {
    if info.contains(SecurityInformation::SACL) {
        return Err(NtStatus::PRIVILEGE_NOT_HELD);
    }
    if info.intersects(SecurityInformation::OWNER | SecurityInformation::GROUP) {
        require(open, AccessMask::WRITE_OWNER)?;
    }
    if info.contains(SecurityInformation::DACL) {
        require(open, AccessMask::WRITE_DAC)?;
    }
    if buf.len() > max_size.min(security::MAX_DESCRIPTOR_LEN) {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let mut update =
        SecurityDescriptor::decode(buf).map_err(|_| NtStatus::INVALID_SECURITY_DESCR)?;
    let mode = if nfs_aces && info.contains(SecurityInformation::DACL) {
        security::take_nfs_aces(&mut update)
    } else {
        None
    };
    let vfs = open.vfs.as_ref();
    let file = open.file.as_ref();
    let stat = file.stat().status()?;
    let current = security::descriptor(vfs, file, &stat, ids);
    security::change(vfs, file, &open.identity, ids, info, &update, &current)?;
    if let Some(mode) = mode {
        let now = file.stat().status()?.mode;
        if now & 0o777 != mode {
            file.set_mode((now & 0o7000) | mode).status()?;
        }
    }
    Ok(())
}
