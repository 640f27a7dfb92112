//! The file operations of a tree connect, alone or compounded (MS-SMB2 3.2.4.1.4).

use std::ops::Range;

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::close::{CloseFlags, CloseRequest, CloseResponse};
use smb3d_smb2::create::{
    CreateAction, CreateContext, CreateContexts, CreateDisposition, CreateOptions, CreateRequest,
    CreateResponse, ImpersonationLevel, OplockLevel, RawCreateContext, ResponseContext,
    ShareAccess,
};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::flush::FlushRequest;
use smb3d_smb2::lock::{LockElement, LockElements, LockFlags, LockRequest};
use smb3d_smb2::query_directory::{
    QueryDirectoryFlags, QueryDirectoryRequest, QueryDirectoryResponse,
};
use smb3d_smb2::query_info::{InfoType, QueryInfoFlags, QueryInfoRequest, QueryInfoResponse};
use smb3d_smb2::read::{Channel, ReadFlags, ReadRequest, ReadResponse};
use smb3d_smb2::set_info::SetInfoRequest;
use smb3d_smb2::tree_connect::TreeConnectResponse;
use smb3d_smb2::write::{WriteFlags, WriteRequest, WriteResponse};
use smb3d_smb2::{Command, HeaderFlags};
use smb3d_wire::Writer;

use crate::conn::{Message, Response};
use crate::error::{Error, Result};
use crate::session::{Session, header, malformed};

/// How to open a file: the CREATE request's access, disposition, options and attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenSpec {
    pub access: AccessMask,
    pub disposition: CreateDisposition,
    pub options: CreateOptions,
    pub attributes: u32,
    pub share: ShareAccess,
}

/// FILE_READ_DATA | FILE_READ_EA | FILE_READ_ATTRIBUTES | READ_CONTROL | SYNCHRONIZE.
const GENERIC_READ_RIGHTS: u32 = 0x0012_0089;
/// Read rights plus FILE_WRITE_DATA | FILE_APPEND_DATA | FILE_WRITE_EA | FILE_WRITE_ATTRIBUTES.
const READ_WRITE_RIGHTS: u32 = 0x0012_019F;
/// DELETE.
const DELETE: u32 = 0x0001_0000;
/// FILE_ATTRIBUTE_NORMAL.
const ATTRIBUTE_NORMAL: u32 = 0x80;

impl OpenSpec {
    const fn new(access: u32, disposition: CreateDisposition, options: CreateOptions) -> Self {
        Self {
            access: AccessMask(access),
            disposition,
            options,
            attributes: ATTRIBUTE_NORMAL,
            share: ShareAccess(ShareAccess::READ.0 | ShareAccess::WRITE.0 | ShareAccess::DELETE.0),
        }
    }

    /// An existing file or directory, for reading.
    pub const fn read() -> Self {
        Self::new(
            GENERIC_READ_RIGHTS,
            CreateDisposition::OPEN,
            CreateOptions::empty(),
        )
    }

    /// An existing file, for reading and writing.
    pub const fn read_write() -> Self {
        Self::new(
            READ_WRITE_RIGHTS,
            CreateDisposition::OPEN,
            CreateOptions::NON_DIRECTORY_FILE,
        )
    }

    /// A file for reading and writing, created if missing.
    pub const fn open_or_create() -> Self {
        Self::new(
            READ_WRITE_RIGHTS,
            CreateDisposition::OPEN_IF,
            CreateOptions::NON_DIRECTORY_FILE,
        )
    }

    /// A directory, created if missing, for listing.
    pub const fn directory() -> Self {
        let mut spec = Self::new(
            GENERIC_READ_RIGHTS,
            CreateDisposition::OPEN_IF,
            CreateOptions::DIRECTORY_FILE,
        );
        spec.attributes = 0x10;
        spec
    }

    /// An existing file or directory, deleted when closed.
    pub const fn delete_on_close() -> Self {
        Self::new(
            DELETE | GENERIC_READ_RIGHTS,
            CreateDisposition::OPEN,
            CreateOptions::DELETE_ON_CLOSE,
        )
    }
}

/// What a CREATE returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Open {
    pub file_id: FileId,
    pub create_action: CreateAction,
    pub end_of_file: u64,
    pub attributes: u32,
}

impl Open {
    /// The open a CREATE response describes.
    pub fn from_response(response: &Response) -> Result<Self> {
        let body = CreateResponse::decode(response.pdu()).map_err(malformed(Command::CREATE))?;
        Ok(Self {
            file_id: body.file_id,
            create_action: body.create_action,
            end_of_file: body.end_of_file,
            attributes: body.file_attributes,
        })
    }
}

/// Data a READ returned, kept in the response's buffer (no copy).
#[derive(Debug, Clone)]
pub struct ReadData {
    response: Response,
    data: Range<usize>,
}

impl ReadData {
    /// The data of a READ response.
    pub fn from_response(response: Response) -> Result<Self> {
        let pdu = response.pdu();
        let body = ReadResponse::decode(pdu).map_err(malformed(Command::READ))?;
        // The decoder hands out a slice of the PDU (an empty one from nowhere in particular);
        // where it starts is kept instead of a copy.
        let data = if body.data.is_empty() {
            0..0
        } else {
            let start = (body.data.as_ptr() as usize)
                .checked_sub(pdu.as_ptr() as usize)
                .filter(|start| start + body.data.len() <= pdu.len())
                .ok_or_else(|| Error::protocol("READ data outside its response"))?;
            start..start + body.data.len()
        };
        Ok(Self { response, data })
    }

    /// The bytes read.
    pub fn data(&self) -> &[u8] {
        self.response
            .pdu()
            .get(self.data.clone())
            .unwrap_or_default()
    }
}

/// A tree connect. Cloning shares it.
#[derive(Clone)]
pub struct Tree {
    session: Session,
    id: u32,
    encrypt: bool,
    maximal_access: AccessMask,
}

impl Tree {
    pub(crate) fn new(session: Session, id: u32, encrypt: bool, body: TreeConnectResponse) -> Self {
        Self {
            session,
            id,
            encrypt,
            maximal_access: body.maximal_access,
        }
    }

    /// The TreeId.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The session the tree is on.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The share's MaximalAccess for this user.
    pub fn maximal_access(&self) -> AccessMask {
        self.maximal_access
    }

    /// Whether the share requires encryption (SMB2_SHAREFLAG_ENCRYPT_DATA).
    pub fn encrypts(&self) -> bool {
        self.encrypt || self.session.encrypts()
    }

    /// A compound of requests on this tree, sent together.
    pub fn compound(&self) -> Compound<'_> {
        Compound {
            tree: self,
            message: self.session.message(self.encrypt),
            related: false,
        }
    }

    async fn one(&self, build: impl FnOnce(&mut Compound<'_>)) -> Result<Response> {
        let mut compound = self.compound();
        build(&mut compound);
        self.session.connection().send_one(compound.message).await
    }

    /// CREATE `name` (relative to the share root, `\`-separated; empty for the root).
    pub async fn create(&self, name: &str, spec: &OpenSpec) -> Result<Open> {
        let response = self
            .one(|c| {
                c.create(name, spec);
            })
            .await?
            .ok()?;
        Open::from_response(&response)
    }

    /// CREATE `name` with the SMB3 POSIX extensions' context asking for `mode` (a connection
    /// that negotiated them, with [`crate::ClientConfig::posix`]); returns the open and the data
    /// of the POSIX context in the response, if the server answered one.
    pub async fn create_posix(
        &self,
        name: &str,
        spec: &OpenSpec,
        mode: u32,
    ) -> Result<(Open, Option<Vec<u8>>)> {
        let response = self
            .one(|c| {
                c.create_with_posix(name, spec, Some(mode));
            })
            .await?
            .ok()?;
        let open = Open::from_response(&response)?;
        let body = CreateResponse::decode(response.pdu()).map_err(malformed(Command::CREATE))?;
        let posix = body.contexts.iter().find_map(|c| match c {
            ResponseContext::Other(raw) if raw.name == smb3d_smb2::posix::TAG => {
                Some(raw.data.to_vec())
            }
            _ => None,
        });
        Ok((open, posix))
    }

    /// CLOSE.
    pub async fn close(&self, file_id: FileId) -> Result<()> {
        let response = self
            .one(|c| {
                c.close(file_id);
            })
            .await?
            .ok()?;
        CloseResponse::decode(response.pdu()).map_err(malformed(Command::CLOSE))?;
        Ok(())
    }

    /// READ `length` bytes at `offset`; at end of file, empty data.
    pub async fn read(&self, file_id: FileId, offset: u64, length: u32) -> Result<ReadData> {
        let response = self
            .one(|c| {
                c.read(file_id, offset, length);
            })
            .await?;
        if response.status() == NtStatus::END_OF_FILE {
            return Ok(ReadData {
                response,
                data: 0..0,
            });
        }
        ReadData::from_response(response.ok()?)
    }

    /// WRITE `data` at `offset`; returns the count written.
    pub async fn write(&self, file_id: FileId, offset: u64, data: &[u8]) -> Result<u32> {
        let response = self
            .one(|c| {
                c.write(file_id, offset, data);
            })
            .await?
            .ok()?;
        let body = WriteResponse::decode(response.pdu()).map_err(malformed(Command::WRITE))?;
        Ok(body.count)
    }

    /// QUERY_INFO of `class` in `info_type`; returns the output buffer.
    pub async fn query_info(
        &self,
        file_id: FileId,
        info_type: InfoType,
        class: u8,
        output_len: u32,
    ) -> Result<Vec<u8>> {
        let response = self
            .one(|c| {
                c.query_info(file_id, info_type, class, output_len);
            })
            .await?
            .ok()?;
        query_info_output(&response)
    }

    /// SET_INFO of `class` in `info_type` with `buffer`.
    pub async fn set_info(
        &self,
        file_id: FileId,
        info_type: InfoType,
        class: u8,
        buffer: &[u8],
    ) -> Result<()> {
        self.one(|c| {
            c.set_info(file_id, info_type, class, buffer);
        })
        .await?
        .ok()
        .map(drop)
    }

    /// One QUERY_DIRECTORY of `class` for `pattern`; `None` once there are no more entries.
    pub async fn query_directory(
        &self,
        file_id: FileId,
        class: u8,
        flags: QueryDirectoryFlags,
        pattern: &str,
        output_len: u32,
    ) -> Result<Option<Vec<u8>>> {
        let response = self
            .one(|c| {
                c.query_directory(file_id, class, flags, pattern, output_len);
            })
            .await?;
        if response.status() == NtStatus::NO_MORE_FILES {
            return Ok(None);
        }
        let response = response.ok()?;
        let body = QueryDirectoryResponse::decode(response.pdu())
            .map_err(malformed(Command::QUERY_DIRECTORY))?;
        Ok(Some(body.output.to_vec()))
    }

    /// The names of the entries of the open directory `file_id` matching `pattern`, read in
    /// buffers of `output_len` (FileNamesInformation), `.` and `..` included.
    pub async fn list(
        &self,
        file_id: FileId,
        pattern: &str,
        output_len: u32,
    ) -> Result<Vec<String>> {
        let mut names = Vec::new();
        let mut flags = QueryDirectoryFlags::RESTART_SCANS;
        while let Some(buffer) = self
            .query_directory(file_id, FILE_NAMES_INFORMATION, flags, pattern, output_len)
            .await?
        {
            for name in DirEntryNames::new(&buffer) {
                names.push(name?);
            }
            flags = QueryDirectoryFlags::empty();
        }
        Ok(names)
    }

    /// FLUSH.
    pub async fn flush(&self, file_id: FileId) -> Result<()> {
        self.one(|c| {
            c.flush(file_id);
        })
        .await?
        .ok()
        .map(drop)
    }

    /// LOCK with one element.
    pub async fn lock(
        &self,
        file_id: FileId,
        offset: u64,
        length: u64,
        flags: LockFlags,
    ) -> Result<()> {
        self.one(|c| {
            c.lock(file_id, offset, length, flags);
        })
        .await?
        .ok()
        .map(drop)
    }

    /// TREE_DISCONNECT.
    pub async fn disconnect(&self) -> Result<()> {
        self.one(|c| {
            c.push(Command::TREE_DISCONNECT, 1, |w| {
                w.u16(4).u16(0);
            });
        })
        .await?
        .ok()
        .map(drop)
    }
}

/// FileNamesInformation (MS-FSCC 2.4.33).
pub const FILE_NAMES_INFORMATION: u8 = 12;

/// The output of a QUERY_INFO response.
pub fn query_info_output(response: &Response) -> Result<Vec<u8>> {
    let body = QueryInfoResponse::decode(response.pdu()).map_err(malformed(Command::QUERY_INFO))?;
    Ok(body.output.to_vec())
}

/// Requests built into one message: each later one related to the one before when made with
/// [`Compound::related`] (its FileId then [`FileId::ANY`], the previous CREATE's open).
pub struct Compound<'t> {
    tree: &'t Tree,
    message: Message,
    related: bool,
}

impl Compound<'_> {
    /// Makes the requests pushed from now on related to the previous one (MS-SMB2 3.2.4.1.4).
    pub fn related(&mut self) -> &mut Self {
        self.related = true;
        self
    }

    fn push(&mut self, command: Command, charge: u16, encode: impl FnOnce(&mut Writer<'_>)) {
        let mut head = header(command, self.tree.id);
        if self.related {
            head.flags.insert(HeaderFlags::RELATED_OPERATIONS);
        }
        self.message.push(head, charge, encode);
    }

    fn charge(&self, payload: usize) -> u16 {
        self.tree.session.connection().charge(payload)
    }

    /// Adds a CREATE.
    pub fn create(&mut self, name: &str, spec: &OpenSpec) -> &mut Self {
        self.create_with_posix(name, spec, None)
    }

    /// Adds a CREATE, with the SMB3 POSIX extensions' context asking for `posix_mode` if given.
    pub fn create_with_posix(
        &mut self,
        name: &str,
        spec: &OpenSpec,
        posix_mode: Option<u32>,
    ) -> &mut Self {
        let mut chain = Vec::new();
        if let Some(mode) = posix_mode {
            let data = mode.to_le_bytes();
            CreateContext::encode_chain(
                &[CreateContext::Other(RawCreateContext {
                    name: &smb3d_smb2::posix::TAG,
                    data: &data,
                })],
                &mut Writer::new(&mut chain),
            );
        }
        let contexts = CreateContexts::parse(&chain).unwrap_or_default();
        let mut utf16 = Vec::with_capacity(name.len() * 2);
        smb3d_wire::encode_utf16le(name, &mut utf16);
        let request = CreateRequest {
            security_flags: 0,
            requested_oplock_level: OplockLevel::NONE,
            impersonation_level: ImpersonationLevel::IMPERSONATION,
            smb_create_flags: 0,
            desired_access: spec.access,
            file_attributes: spec.attributes,
            share_access: spec.share,
            create_disposition: spec.disposition,
            create_options: spec.options,
            name: &utf16,
            contexts,
        };
        self.push(Command::CREATE, 1, |w| request.encode(w));
        self
    }

    /// Adds a CLOSE.
    pub fn close(&mut self, file_id: FileId) -> &mut Self {
        let request = CloseRequest {
            flags: CloseFlags::empty(),
            file_id,
        };
        self.push(Command::CLOSE, 1, |w| request.encode(w));
        self
    }

    /// Adds a READ.
    pub fn read(&mut self, file_id: FileId, offset: u64, length: u32) -> &mut Self {
        let request = ReadRequest {
            padding: 0x50,
            flags: ReadFlags::empty(),
            length,
            offset,
            file_id,
            minimum_count: 0,
            channel: Channel::NONE,
            remaining_bytes: 0,
            channel_info: &[],
        };
        let charge = self.charge(length as usize);
        self.push(Command::READ, charge, |w| request.encode(w));
        self
    }

    /// Adds a WRITE of `data` (copied once, into the message).
    pub fn write(&mut self, file_id: FileId, offset: u64, data: &[u8]) -> &mut Self {
        let request = WriteRequest {
            offset,
            file_id,
            channel: Channel::NONE,
            remaining_bytes: 0,
            flags: WriteFlags::empty(),
            data,
            data_range: 0..0,
            channel_info: &[],
        };
        let charge = self.charge(data.len());
        self.message.reserve(data.len() + 128);
        self.push(Command::WRITE, charge, |w| request.encode(w));
        self
    }

    /// Adds a QUERY_INFO.
    pub fn query_info(
        &mut self,
        file_id: FileId,
        info_type: InfoType,
        class: u8,
        output_len: u32,
    ) -> &mut Self {
        let request = QueryInfoRequest {
            info_type,
            file_info_class: class,
            output_buffer_length: output_len,
            input: &[],
            additional_information: 0,
            flags: QueryInfoFlags::empty(),
            file_id,
        };
        let charge = self.charge(output_len as usize);
        self.push(Command::QUERY_INFO, charge, |w| request.encode(w));
        self
    }

    /// Adds a SET_INFO.
    pub fn set_info(
        &mut self,
        file_id: FileId,
        info_type: InfoType,
        class: u8,
        buffer: &[u8],
    ) -> &mut Self {
        let request = SetInfoRequest {
            info_type,
            file_info_class: class,
            buffer,
            additional_information: 0,
            file_id,
        };
        let charge = self.charge(buffer.len());
        self.push(Command::SET_INFO, charge, |w| request.encode(w));
        self
    }

    /// Adds a QUERY_DIRECTORY.
    pub fn query_directory(
        &mut self,
        file_id: FileId,
        class: u8,
        flags: QueryDirectoryFlags,
        pattern: &str,
        output_len: u32,
    ) -> &mut Self {
        let mut utf16 = Vec::with_capacity(pattern.len() * 2);
        smb3d_wire::encode_utf16le(pattern, &mut utf16);
        let request = QueryDirectoryRequest {
            file_information_class: class,
            flags,
            file_index: 0,
            file_id,
            file_name: &utf16,
            output_buffer_length: output_len,
        };
        let charge = self.charge(output_len as usize);
        self.push(Command::QUERY_DIRECTORY, charge, |w| request.encode(w));
        self
    }

    /// Adds a FLUSH.
    pub fn flush(&mut self, file_id: FileId) -> &mut Self {
        let request = FlushRequest { file_id };
        self.push(Command::FLUSH, 1, |w| request.encode(w));
        self
    }

    /// Adds a LOCK with one element.
    pub fn lock(
        &mut self,
        file_id: FileId,
        offset: u64,
        length: u64,
        flags: LockFlags,
    ) -> &mut Self {
        let mut raw = Vec::with_capacity(24);
        LockElement {
            offset,
            length,
            flags,
        }
        .write(&mut Writer::new(&mut raw));
        if let Some(locks) = LockElements::new(&raw) {
            let request = LockRequest {
                lock_sequence: 0,
                file_id,
                locks,
            };
            self.push(Command::LOCK, 1, |w| request.encode(w));
        }
        self
    }

    /// Sends the requests; returns their responses in order, whatever their status.
    pub async fn send(self) -> Result<Vec<Response>> {
        self.tree.session.connection().send(self.message).await
    }
}

/// The names in a FileNamesInformation buffer (MS-FSCC 2.4.33), each entry's offsets and
/// lengths checked against the buffer.
pub struct DirEntryNames<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> DirEntryNames<'a> {
    /// The entries of `buffer`.
    pub fn new(buffer: &'a [u8]) -> Self {
        Self {
            rest: (!buffer.is_empty()).then_some(buffer),
        }
    }
}

impl Iterator for DirEntryNames<'_> {
    type Item = Result<String>;

    fn next(&mut self) -> Option<Self::Item> {
        let entry = self.rest.take()?;
        let field = |at: usize| {
            entry
                .get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .map(u32::from_le_bytes)
        };
        let bad = || {
            Some(Err(Error::protocol(
                "a malformed FileNamesInformation entry",
            )))
        };
        let (Some(next), Some(len)) = (field(0), field(8)) else {
            return bad();
        };
        let Some(name) = entry.get(12..12 + len as usize) else {
            return bad();
        };
        let name = match smb3d_wire::decode_utf16le(name, "FileName") {
            Ok(name) => name,
            Err(_) => return bad(),
        };
        if next != 0 {
            let next = next as usize;
            if next < 12 || next > entry.len() {
                return bad();
            }
            self.rest = entry.get(next..);
        }
        Some(Ok(name))
    }
}
