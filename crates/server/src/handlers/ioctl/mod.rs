//! IOCTL: MS-SMB2 3.3.5.15, dispatched by FSCTL family: the controls that take no open
//! (validate negotiate, network interfaces, DFS referrals, pipe wait), the named-pipe ones on
//! `IPC$` (`handlers::pipe`), and those on an open file. Every FSCTL this server answers, and
//! why it answers as it does, is listed in `docs/ioctl.md`.

use smb3d_dtyp::NtStatus;
use smb3d_fscc::FsAttributes;
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::ioctl::{
    CtlCode, IoctlFlags, IoctlRequest, IoctlResponse, ValidateNegotiateInfoRequest,
    ValidateNegotiateInfoResponse,
};
use smb3d_smb2::negotiate::{Capabilities, Dialect, SecurityMode};
use smb3d_vfs::Vfs;
use smb3d_wire::Writer;

use crate::handlers::{lookup_open, pipe};
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::request::reply::Reply;

mod clone;
mod copy;
mod network;
pub(crate) mod reparse;
mod resiliency;
mod sparse;
mod volume;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    reply: &mut Reply<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = IoctlRequest::decode(pdu).map_err(malformed)?;
    let max_io = cx.conn.server.settings.max_io_size;
    if req.input.len() > max_io as usize || req.max_output_response > max_io {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if !req.flags.contains(IoctlFlags::IS_FSCTL) {
        return Err(NtStatus::NOT_SUPPORTED);
    }
    let ipc = cx.tree.as_ref().is_some_and(|t| t.share.is_ipc());
    if ipc && req.ctl_code == CtlCode::FSCTL_PIPE_TRANSCEIVE {
        return pipe::transceive(cx, &req, reply).await;
    }
    let w = &mut reply.writer();
    match req.ctl_code {
        CtlCode::FSCTL_VALIDATE_NEGOTIATE_INFO
        | CtlCode::FSCTL_QUERY_NETWORK_INTERFACE_INFO
        | CtlCode::FSCTL_DFS_GET_REFERRALS
        | CtlCode::FSCTL_DFS_GET_REFERRALS_EX
        | CtlCode::FSCTL_PIPE_WAIT => {
            // These name no open (3.3.5.15).
            if !req.file_id.is_any() {
                return Err(NtStatus::INVALID_PARAMETER);
            }
            match req.ctl_code {
                CtlCode::FSCTL_VALIDATE_NEGOTIATE_INFO => validate_negotiate(cx, &req, w),
                CtlCode::FSCTL_QUERY_NETWORK_INTERFACE_INFO => network::query(cx, &req, w),
                CtlCode::FSCTL_PIPE_WAIT if ipc => pipe::wait(&req, w),
                CtlCode::FSCTL_PIPE_WAIT => Err(NtStatus::INVALID_DEVICE_REQUEST),
                // No DFS namespace is served (MS-SMB2 3.3.5.15.2).
                _ => Err(NtStatus::FS_DRIVER_REQUIRED),
            }
        }
        CtlCode::FSCTL_PIPE_PEEK if ipc => pipe::peek(cx, &req, w),
        // Other controls on a pipe reach no file system (as Samba answers).
        _ if ipc => {
            pipe::lookup(cx, req.file_id)?;
            Err(NtStatus::FS_DRIVER_REQUIRED)
        }
        _ => on_file(cx, &req, w),
    }
}

/// The controls on an open file or directory (MS-SMB2 3.3.5.15.5 and on, MS-FSA 2.1.5.10).
fn on_file(
    cx: &mut Ctx<'_>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let open = lookup_open(cx, req.file_id)?;
    if changes_file(req.ctl_code) {
        open.changeable()?;
    }
    match req.ctl_code {
        CtlCode::FSCTL_SRV_REQUEST_RESUME_KEY => copy::resume_key(cx, &open, req, w),
        CtlCode::FSCTL_SRV_COPYCHUNK | CtlCode::FSCTL_SRV_COPYCHUNK_WRITE => {
            copy::copy_chunks(cx, &open, req, w)
        }
        CtlCode::FSCTL_DUPLICATE_EXTENTS_TO_FILE | CtlCode::FSCTL_DUPLICATE_EXTENTS_TO_FILE_EX => {
            clone::duplicate_extents(cx, &open, req, w)
        }
        CtlCode::FSCTL_SET_SPARSE => sparse::set_sparse(&open, req, w),
        CtlCode::FSCTL_SET_ZERO_DATA => sparse::zero_data(&open, &cx.conn.server, req, w),
        CtlCode::FSCTL_QUERY_ALLOCATED_RANGES => sparse::allocated_ranges(&open, req, w),
        CtlCode::FSCTL_GET_REPARSE_POINT => reparse::get(&open, req, w),
        CtlCode::FSCTL_SET_REPARSE_POINT => reparse::set(&open, req, w),
        CtlCode::FSCTL_DELETE_REPARSE_POINT => reparse::delete(&open, req, w),
        CtlCode::FSCTL_LMR_REQUEST_RESILIENCY => resiliency::request(cx, &open, req, w),
        _ => volume::handle(cx, &open, req, w),
    }
}

/// Whether the control changes the file it is sent on (refused in a snapshot).
fn changes_file(code: CtlCode) -> bool {
    matches!(
        code,
        CtlCode::FSCTL_SRV_COPYCHUNK
            | CtlCode::FSCTL_SRV_COPYCHUNK_WRITE
            | CtlCode::FSCTL_DUPLICATE_EXTENTS_TO_FILE
            | CtlCode::FSCTL_DUPLICATE_EXTENTS_TO_FILE_EX
            | CtlCode::FSCTL_SET_SPARSE
            | CtlCode::FSCTL_SET_ZERO_DATA
            | CtlCode::FSCTL_SET_REPARSE_POINT
            | CtlCode::FSCTL_DELETE_REPARSE_POINT
            | CtlCode::FSCTL_SET_COMPRESSION
            | CtlCode::FSCTL_SET_OBJECT_ID
            | CtlCode::FSCTL_SET_OBJECT_ID_EXTENDED
            | CtlCode::FSCTL_DELETE_OBJECT_ID
            | CtlCode::FSCTL_FILE_LEVEL_TRIM
            | CtlCode::FSCTL_SET_INTEGRITY_INFORMATION
            | CtlCode::FSCTL_SET_INTEGRITY_INFORMATION_EX
    )
}

/// The file-system attributes the controls here make true (MS-FSCC 2.5.1): sparse files,
/// reparse points and object ids everywhere, block refcounting where the share's file system
/// clones.
pub(crate) fn fs_attributes(vfs: &dyn Vfs) -> FsAttributes {
    let always = FsAttributes::SUPPORTS_SPARSE_FILES
        | FsAttributes::SUPPORTS_REPARSE_POINTS
        | FsAttributes::SUPPORTS_OBJECT_IDS;
    if vfs.can_clone() {
        always | FsAttributes::SUPPORTS_BLOCK_REFCOUNTING
    } else {
        always
    }
}

/// Writes the IOCTL response for the open `file_id` with the output `encode` appends.
fn respond(
    w: &mut Writer<'_>,
    req: &IoctlRequest<'_>,
    file_id: FileId,
    encode: impl FnOnce(&mut Writer<'_>),
) {
    let pending = IoctlResponse::begin(w, req.ctl_code, file_id);
    encode(w);
    IoctlResponse::finish(w, pending);
}

/// MS-SMB2 3.3.5.15.12: any mismatch with what NEGOTIATE saw means a man in the middle, and
/// ends the connection.
fn validate_negotiate(
    cx: &mut Ctx<'_>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let negotiated = cx.negotiated;
    let settings = &cx.conn.server.settings;
    let valid = negotiated.dialect != Dialect::SMB3_1_1.0
        && req.max_output_response as usize >= ValidateNegotiateInfoResponse::LEN
        && ValidateNegotiateInfoRequest::decode(req.input).is_ok_and(|info| {
            let dialects: Vec<u16> = info.dialects.iter().map(|d| d.0).collect();
            let best = dialects
                .iter()
                .copied()
                .filter(|d| {
                    (settings.min_dialect..=settings.max_dialect).contains(d)
                        && *d != Dialect::SMB2_WILDCARD.0
                })
                .max();
            dialects == negotiated.client_dialects
                && best == Some(negotiated.dialect)
                && info.guid == negotiated.client_guid
                && info.security_mode.0 == negotiated.client_security_mode
                && info.capabilities.0 == negotiated.client_capabilities
        });
    if !valid {
        cx.disconnect = Some("validate negotiate mismatch");
        return Err(NtStatus::ACCESS_DENIED);
    }
    let pending = IoctlResponse::begin(w, req.ctl_code, FileId::ANY);
    ValidateNegotiateInfoResponse {
        capabilities: Capabilities(negotiated.server_capabilities),
        guid: cx.conn.server.guid,
        security_mode: SecurityMode(negotiated.server_security_mode),
        dialect: Dialect(negotiated.dialect),
    }
    .encode(w);
    IoctlResponse::finish(w, pending);
    Ok(NtStatus::SUCCESS)
}
