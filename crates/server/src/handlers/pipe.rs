//! Commands on named pipes of `IPC$`: CREATE of a pipe (MS-SMB2 3.3.5.9), CLOSE (3.3.5.10),
//! FLUSH (3.3.5.11), READ (3.3.5.12), WRITE (3.3.5.13), the pipe FSCTLs (3.3.5.15.x with
//! MS-FSCC 2.3.x: TRANSCEIVE, PEEK, WAIT) and QUERY_INFO (3.3.5.20). The RPC work itself is
//! `smb3d-rpc`'s; here bytes move between it and the SMB2 messages.

use std::sync::Arc;

use smb3d_dtyp::{NtStatus, Sid};
use smb3d_fscc::{FilePipePeekReply, FilePipeWaitRequest, FileStandardInformation};
use smb3d_rpc::{CallerInfo, PipeEndpoint, PipeError, pipe_exists};
use smb3d_smb2::close::{CloseRequest, CloseResponse};
use smb3d_smb2::create::{
    CreateAction, CreateRequest, CreateResponse, CreateResponseFlags, ImpersonationLevel,
    OplockLevel,
};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::flush::{FlushRequest, FlushResponse};
use smb3d_smb2::ioctl::{IoctlRequest, IoctlResponse};
use smb3d_smb2::query_info::{InfoType, QueryInfoRequest, QueryInfoResponse};
use smb3d_smb2::read::{ReadRequest, ReadResponse};
use smb3d_smb2::write::{WriteRequest, WriteResponse};
use smb3d_wire::{FileTimes, Writer};

use crate::handlers::check_credit_charge;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::request::reply::{Reply, go_async};
use crate::state::pipes::{AnswerHold, PipeOpen, ServerDirectory};
use crate::state::session::{SessionUser, Tree};

/// FILE_ATTRIBUTE_NORMAL: what pipes report.
const ATTRIBUTE_NORMAL: u32 = 0x80;
/// FileStandardInformation of a pipe, as Samba and Windows report it: 4 KiB allocated, no
/// data, one link, delete pending (a pipe goes away with its last handle).
const PIPE_STANDARD_INFO: FileStandardInformation = FileStandardInformation {
    allocation_size: 4096,
    end_of_file: 0,
    number_of_links: 1,
    delete_pending: true,
    directory: false,
};
/// FileStandardInformation's class number (MS-FSCC 2.4.41).
const FILE_STANDARD_INFORMATION: u8 = 5;

fn tree(cx: &Ctx<'_>) -> Result<Arc<Tree>, NtStatus> {
    cx.tree.clone().ok_or(NtStatus::NETWORK_NAME_DELETED)
}

/// The pipe open a request names; FileId 0xFFFF.. of a related compound stands for the one
/// the previous request used.
pub(crate) fn lookup(cx: &Ctx<'_>, file_id: FileId) -> Result<Arc<PipeOpen>, NtStatus> {
    let file_id = if file_id.is_any() && cx.hdr.is_related() {
        cx.chain.file_id.ok_or(NtStatus::FILE_CLOSED)?
    } else {
        file_id
    };
    let open = tree(cx)?.pipes.get(file_id);
    open.filter(|o| !o.is_closed()).ok_or(NtStatus::FILE_CLOSED)
}

/// MS-SMB2 3.3.5.9 on a pipe share: the name must be a pipe this server serves; the open is a
/// new RPC association for the session's user.
pub(crate) fn create(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = CreateRequest::decode(pdu).map_err(malformed)?;
    if req.impersonation_level.0 > ImpersonationLevel::DELEGATE.0 {
        return Err(NtStatus::BAD_IMPERSONATION_LEVEL);
    }
    if req.contexts.iter().any(|c| c.is_err()) {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let name =
        smb3d_wire::decode_utf16le(req.name, "Name").map_err(|_| NtStatus::OBJECT_NAME_INVALID)?;
    if !pipe_exists(&name) {
        return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
    }
    let tree = tree(cx)?;
    let session = cx.session.clone().ok_or(NtStatus::USER_SESSION_DELETED)?;
    crate::state::connection::limits::admit_open(cx.conn, &session)?;
    let identity = cx.identity()?;
    let user = session.user().ok_or(NtStatus::USER_SESSION_DELETED)?;
    let server = &cx.conn.server;
    let caller = match user.clone() {
        // Every account of the user database is the server's own (a standalone server).
        SessionUser::User { name, .. } => CallerInfo {
            user: name,
            domain: server.identity.netbios_name.clone(),
            sid: identity.token.user,
        },
        SessionUser::Anonymous => CallerInfo {
            user: String::new(),
            domain: String::new(),
            sid: Sid::ANONYMOUS,
        },
    };
    let hold = AnswerHold::default();
    let directory = Arc::new(
        ServerDirectory::new(server)
            .seen_by(user, identity)
            .for_pipe(cx.conn.peer, hold.clone()),
    );
    let endpoint =
        PipeEndpoint::open(&name, directory, caller).ok_or(NtStatus::OBJECT_NAME_NOT_FOUND)?;
    let file_id = server.new_file_id();
    tree.pipes
        .insert(Arc::new(PipeOpen::new(file_id, endpoint, hold)));
    cx.chain.file_id = Some(file_id);
    CreateResponse {
        oplock_level: OplockLevel::NONE,
        flags: CreateResponseFlags::empty(),
        create_action: CreateAction::OPENED,
        times: FileTimes::default(),
        allocation_size: 0,
        end_of_file: 0,
        file_attributes: ATTRIBUTE_NORMAL,
        file_id,
        contexts: Vec::new(),
    }
    .encode(w);
    Ok(NtStatus::SUCCESS)
}

/// MS-SMB2 3.3.5.10: the association ends with its open; readers still waiting fail.
pub(crate) fn close(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = CloseRequest::decode(pdu).map_err(malformed)?;
    let open = lookup(cx, req.file_id)?;
    if let Some(open) = tree(cx)?.pipes.remove(open.file_id) {
        open.close();
    }
    if cx.chain.file_id == Some(open.file_id) {
        cx.chain.file_id = None;
    }
    // A pipe has no attributes to report with POSTQUERY_ATTRIB; they are returned as zero.
    CloseResponse { attributes: None }.encode(w);
    Ok(NtStatus::SUCCESS)
}

/// MS-SMB2 3.3.5.11: everything written was consumed at once; nothing waits to be flushed.
pub(crate) fn flush(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = FlushRequest::decode(pdu).map_err(malformed)?;
    lookup(cx, req.file_id)?;
    FlushResponse.encode(w);
    Ok(NtStatus::SUCCESS)
}

/// MS-SMB2 3.3.5.12 on a pipe: at most one message, or the part of it that fits with
/// STATUS_BUFFER_OVERFLOW (the rest comes with the next read). An empty pipe makes the read
/// wait, asynchronously, for the client's next write, as on Windows.
pub(crate) async fn read(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    reply: &mut Reply<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = ReadRequest::decode(pdu).map_err(malformed)?;
    if req.length > cx.conn.server.settings.max_io_size {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    check_credit_charge(cx, req.length)?;
    let open = lookup(cx, req.file_id)?;
    let max = req.length as usize;
    let (data, more) = read_message(cx, reply, &open, max).await?;
    if data.is_empty() && max > 0 {
        return Err(NtStatus::END_OF_FILE);
    }
    let w = &mut reply.writer();
    let pending = ReadResponse::begin(w);
    w.bytes(&data);
    ReadResponse::finish(w, pending, 0);
    Ok(if more {
        NtStatus::BUFFER_OVERFLOW
    } else {
        NtStatus::SUCCESS
    })
}

/// Reads up to `max` bytes of the next message. Returns the bytes and whether the message goes
/// on.
fn try_read(open: &PipeOpen, max: usize) -> Result<Option<(Vec<u8>, bool)>, NtStatus> {
    let mut endpoint = open.endpoint.lock();
    if endpoint.queued_messages() > 0 {
        let data = endpoint.read(max);
        return Ok(Some((data, endpoint.pending() > 0 && max > 0)));
    }
    if endpoint.is_disconnected() {
        return Err(NtStatus::PIPE_DISCONNECTED);
    }
    drop(endpoint);
    if open.is_closed() {
        return Err(NtStatus::FILE_CLOSED);
    }
    Ok((max == 0).then(|| (Vec::new(), false)))
}

/// [`try_read`], waiting for a message if none is queued: the request goes async (MS-SMB2
/// 3.3.4.2) and ends when the pipe is written, closed or the request cancelled. A request the
/// connection did not register (inside a related compound) waits without an interim response.
async fn read_message(
    cx: &mut Ctx<'_>,
    reply: &mut Reply<'_>,
    open: &PipeOpen,
    max: usize,
) -> Result<(Vec<u8>, bool), NtStatus> {
    let clock = &cx.conn.server.settings.clock;
    if let Some(until) = open.held_until(clock.now()) {
        clock.sleep_until(until).await;
    }
    if let Some(read) = try_read(open, max)? {
        return Ok(read);
    }
    let pending = match cx.pending {
        Some(_) => Some(go_async(cx, reply)?),
        None => None,
    };
    loop {
        let readable = open.wait_readable(|e| e.queued_messages() > 0 || e.is_disconnected());
        match &pending {
            Some(pending) => tokio::select! {
                () = readable => {}
                status = pending.cancelled() => return Err(status),
            },
            None => readable.await,
        }
        if let Some(until) = open.held_until(clock.now()) {
            clock.sleep_until(until).await;
        }
        if let Some(read) = try_read(open, max)? {
            return Ok(read);
        }
    }
}

/// Hands what the client wrote to the RPC endpoint.
fn write_to(open: &PipeOpen, data: &[u8]) -> Result<(), NtStatus> {
    let result = open.endpoint.lock().write(data);
    open.wake_readers();
    result.map_err(|e| match e {
        PipeError::Disconnected => NtStatus::PIPE_DISCONNECTED,
        // Nothing was taken; the client must read the answers it left first.
        PipeError::Busy => NtStatus::PIPE_BUSY,
    })
}

/// MS-SMB2 3.3.5.13 on a pipe: the bytes go to the RPC endpoint, which answers every complete
/// PDU at once.
pub(crate) fn write(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = WriteRequest::decode(pdu).map_err(malformed)?;
    let len = u32::try_from(req.data.len()).map_err(|_| NtStatus::INVALID_PARAMETER)?;
    if len > cx.conn.server.settings.max_io_size {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    check_credit_charge(cx, len)?;
    let open = lookup(cx, req.file_id)?;
    write_to(&open, req.data)?;
    WriteResponse {
        count: len,
        remaining: 0,
    }
    .encode(w);
    Ok(NtStatus::SUCCESS)
}

/// FSCTL_PIPE_TRANSCEIVE (MS-SMB2 3.3.5.15.3): the input is written, then one message is
/// read as READ does, up to MaxOutputResponse.
pub(crate) async fn transceive(
    cx: &mut Ctx<'_>,
    req: &IoctlRequest<'_>,
    reply: &mut Reply<'_>,
) -> Result<NtStatus, NtStatus> {
    let open = lookup(cx, req.file_id)?;
    write_to(&open, req.input)?;
    let (data, more) = read_message(cx, reply, &open, req.max_output_response as usize).await?;
    let w = &mut reply.writer();
    let pending = IoctlResponse::begin(w, req.ctl_code, open.file_id);
    w.bytes(&data);
    IoctlResponse::finish(w, pending);
    Ok(if more {
        NtStatus::BUFFER_OVERFLOW
    } else {
        NtStatus::SUCCESS
    })
}

/// FSCTL_PIPE_PEEK (MS-SMB2 3.3.5.15.4, MS-FSCC 2.3.45, 2.3.46): the pipe's state and what waits to be read,
/// with as much of the next message as fits, without consuming it.
pub(crate) fn peek(
    cx: &mut Ctx<'_>,
    req: &IoctlRequest<'_>,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let open = lookup(cx, req.file_id)?;
    let max = req.max_output_response as usize;
    if max < FilePipePeekReply::HEADER_LEN {
        return Err(NtStatus::BUFFER_TOO_SMALL);
    }
    let endpoint = open.endpoint.lock();
    if endpoint.is_disconnected() && endpoint.queued() == 0 {
        return Err(NtStatus::PIPE_DISCONNECTED);
    }
    let message = endpoint.peek();
    let room = max - FilePipePeekReply::HEADER_LEN;
    let shown = message.get(..room.min(message.len())).unwrap_or_default();
    let pending = IoctlResponse::begin(w, req.ctl_code, open.file_id);
    FilePipePeekReply {
        named_pipe_state: FilePipePeekReply::CONNECTED,
        read_data_available: u32::try_from(endpoint.queued()).unwrap_or(u32::MAX),
        number_of_messages: u32::try_from(endpoint.queued_messages()).unwrap_or(u32::MAX),
        message_length: u32::try_from(message.len()).unwrap_or(u32::MAX),
        data: shown,
    }
    .encode(w);
    IoctlResponse::finish(w, pending);
    Ok(if shown.len() < message.len() {
        NtStatus::BUFFER_OVERFLOW
    } else {
        NtStatus::SUCCESS
    })
}

/// FSCTL_PIPE_WAIT (MS-SMB2 3.3.5.15.9, MS-FSCC 2.3.47): every pipe this server serves takes
/// any number of opens, so an existing pipe is available at once.
pub(crate) fn wait(req: &IoctlRequest<'_>, w: &mut Writer<'_>) -> Result<NtStatus, NtStatus> {
    let wait = FilePipeWaitRequest::decode(req.input).map_err(malformed)?;
    if !pipe_exists(&wait.name) {
        return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
    }
    let pending = IoctlResponse::begin(w, req.ctl_code, FileId::ANY);
    IoctlResponse::finish(w, pending);
    Ok(NtStatus::SUCCESS)
}

/// MS-SMB2 3.3.5.20 on a pipe: FileStandardInformation, which Windows clients ask for after
/// opening a pipe; other classes are not served, as on Samba.
pub(crate) fn query_info(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = QueryInfoRequest::decode(pdu).map_err(malformed)?;
    lookup(cx, req.file_id)?;
    if req.info_type != InfoType::FILE || req.file_info_class != FILE_STANDARD_INFORMATION {
        return Err(NtStatus::NOT_SUPPORTED);
    }
    if (req.output_buffer_length as usize) < FileStandardInformation::SIZE {
        return Err(NtStatus::INFO_LENGTH_MISMATCH);
    }
    let pending = QueryInfoResponse::begin(w);
    PIPE_STANDARD_INFO.encode(w);
    QueryInfoResponse::finish(w, pending);
    Ok(NtStatus::SUCCESS)
}
