//! CREATE (MS-SMB2 2.2.13, 2.2.14) and its create contexts.

mod contexts;

pub use crate::file_id::FileId;
pub use contexts::{
    AppInstanceVersion, ChainWriter, CreateContext, CreateContexts, DurableHandleFlags,
    DurableHandleReconnectV2, DurableHandleRequestV2, DurableHandleResponseV2, Lease, LeaseFlags,
    LeaseKey, LeaseState, LeaseV2, MaximalAccessResponse, QueryOnDiskIdResponse, RawContexts,
    RawCreateContext, ResponseContext, names,
};

use smb3d_dtyp::AccessMask;
use smb3d_wire::{DecodeError, DecodeErrorKind, FileTimes, Writer};

use crate::util::{body, len16, len32, to_usize};

smb3d_wire::open_enum! {
    /// Oplock levels (MS-SMB2 2.2.13, 2.2.14, 2.2.23.1).
    pub struct OplockLevel(u8) {
        NONE = 0x00,
        II = 0x01,
        EXCLUSIVE = 0x08,
        BATCH = 0x09,
        LEASE = 0xFF,
    }
}

smb3d_wire::open_enum! {
    /// ImpersonationLevel (MS-SMB2 2.2.13).
    pub struct ImpersonationLevel(u32) {
        ANONYMOUS = 0x0000_0000,
        IDENTIFICATION = 0x0000_0001,
        IMPERSONATION = 0x0000_0002,
        DELEGATE = 0x0000_0003,
    }
}

smb3d_wire::open_flags! {
    /// ShareAccess (MS-SMB2 2.2.13).
    pub struct ShareAccess(u32) {
        READ = 0x0000_0001,
        WRITE = 0x0000_0002,
        DELETE = 0x0000_0004,
    }
}

smb3d_wire::open_enum! {
    /// CreateDisposition (MS-SMB2 2.2.13).
    pub struct CreateDisposition(u32) {
        SUPERSEDE = 0x0000_0000,
        OPEN = 0x0000_0001,
        CREATE = 0x0000_0002,
        OPEN_IF = 0x0000_0003,
        OVERWRITE = 0x0000_0004,
        OVERWRITE_IF = 0x0000_0005,
    }
}

smb3d_wire::open_flags! {
    /// CreateOptions (MS-SMB2 2.2.13).
    pub struct CreateOptions(u32) {
        DIRECTORY_FILE = 0x0000_0001,
        WRITE_THROUGH = 0x0000_0002,
        SEQUENTIAL_ONLY = 0x0000_0004,
        NO_INTERMEDIATE_BUFFERING = 0x0000_0008,
        SYNCHRONOUS_IO_ALERT = 0x0000_0010,
        SYNCHRONOUS_IO_NONALERT = 0x0000_0020,
        NON_DIRECTORY_FILE = 0x0000_0040,
        COMPLETE_IF_OPLOCKED = 0x0000_0100,
        NO_EA_KNOWLEDGE = 0x0000_0200,
        OPEN_REMOTE_INSTANCE = 0x0000_0400,
        RANDOM_ACCESS = 0x0000_0800,
        DELETE_ON_CLOSE = 0x0000_1000,
        OPEN_BY_FILE_ID = 0x0000_2000,
        OPEN_FOR_BACKUP_INTENT = 0x0000_4000,
        NO_COMPRESSION = 0x0000_8000,
        OPEN_REQUIRING_OPLOCK = 0x0001_0000,
        DISALLOW_EXCLUSIVE = 0x0002_0000,
        RESERVE_OPFILTER = 0x0010_0000,
        OPEN_REPARSE_POINT = 0x0020_0000,
        OPEN_NO_RECALL = 0x0040_0000,
        OPEN_FOR_FREE_SPACE_QUERY = 0x0080_0000,
    }
}

smb3d_wire::open_enum! {
    /// CreateAction (MS-SMB2 2.2.14).
    pub struct CreateAction(u32) {
        SUPERSEDED = 0x0000_0000,
        OPENED = 0x0000_0001,
        CREATED = 0x0000_0002,
        OVERWRITTEN = 0x0000_0003,
    }
}

smb3d_wire::open_flags! {
    /// CREATE response Flags (MS-SMB2 2.2.14, 3.x).
    pub struct CreateResponseFlags(u8) {
        REPARSEPOINT = 0x01,
    }
}

/// SMB2 CREATE Request (MS-SMB2 2.2.13).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreateRequest<'a> {
    /// SecurityFlags: reserved, 0.
    pub security_flags: u8,
    pub requested_oplock_level: OplockLevel,
    pub impersonation_level: ImpersonationLevel,
    /// SmbCreateFlags: reserved, 0.
    pub smb_create_flags: u64,
    pub desired_access: AccessMask,
    /// MS-FSCC FILE_ATTRIBUTE_* bits.
    pub file_attributes: u32,
    pub share_access: ShareAccess,
    pub create_disposition: CreateDisposition,
    pub create_options: CreateOptions,
    /// The path relative to the share, raw UTF-16LE (even length; the server validates it).
    pub name: &'a [u8],
    pub contexts: CreateContexts<'a>,
}

/// Where the name starts: after the 56-byte fixed part.
const REQUEST_BUFFER_OFFSET: usize = 64 + 56;

impl<'a> CreateRequest<'a> {
    /// MS-SMB2 2.2.13, with the name checks of 3.3.5.9 (inside the request, even length, not
    /// before the Buffer field).
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 57)?;
        let security_flags = r.u8("SecurityFlags")?;
        let requested_oplock_level = OplockLevel(r.u8("RequestedOplockLevel")?);
        let impersonation_level = ImpersonationLevel(r.u32("ImpersonationLevel")?);
        let smb_create_flags = r.u64("SmbCreateFlags")?;
        r.skip(8, "Reserved")?;
        let desired_access = AccessMask(r.u32("DesiredAccess")?);
        let file_attributes = r.u32("FileAttributes")?;
        let share_access = ShareAccess(r.u32("ShareAccess")?);
        let create_disposition = CreateDisposition(r.u32("CreateDisposition")?);
        let create_options = CreateOptions(r.u32("CreateOptions")?);
        let name_offset = usize::from(r.u16("NameOffset")?);
        let name_len = usize::from(r.u16("NameLength")?);
        let contexts_offset = to_usize(r.u32("CreateContextsOffset")?);
        let contexts_len = to_usize(r.u32("CreateContextsLength")?);
        if !name_len.is_multiple_of(2) {
            return Err(DecodeError::new("Name", DecodeErrorKind::InvalidUtf16));
        }
        if name_len > 0 && name_offset < REQUEST_BUFFER_OFFSET {
            return Err(DecodeError::new("Name", DecodeErrorKind::OutOfBounds));
        }
        let name = r.buffer_at(name_offset, name_len, "Name")?;
        let chain = r.buffer_at(contexts_offset, contexts_len, "CreateContexts")?;
        Ok(Self {
            security_flags,
            requested_oplock_level,
            impersonation_level,
            smb_create_flags,
            desired_access,
            file_attributes,
            share_access,
            create_disposition,
            create_options,
            name,
            contexts: CreateContexts::parse(chain)?,
        })
    }

    /// Writes the body after the header: the name at 0x78, then the contexts' chain as it is
    /// (8-byte aligned); a pad byte if both are empty.
    pub fn encode(&self, w: &mut Writer<'_>) {
        let chain = self.contexts.as_bytes();
        let contexts_offset = if chain.is_empty() {
            0
        } else {
            (REQUEST_BUFFER_OFFSET + self.name.len()).next_multiple_of(8)
        };
        w.u16(57)
            .u8(self.security_flags)
            .u8(self.requested_oplock_level.0)
            .u32(self.impersonation_level.0)
            .u64(self.smb_create_flags)
            .u64(0)
            .u32(self.desired_access.0)
            .u32(self.file_attributes)
            .u32(self.share_access.0)
            .u32(self.create_disposition.0)
            .u32(self.create_options.0)
            .u16(len16(REQUEST_BUFFER_OFFSET))
            .u16(len16(self.name.len()))
            .u32(len32(contexts_offset))
            .u32(len32(chain.len()))
            .bytes(self.name);
        if chain.is_empty() {
            if self.name.is_empty() {
                w.u8(0);
            }
        } else {
            w.align(8).bytes(chain);
        }
    }
}

/// SMB2 CREATE Response (MS-SMB2 2.2.14).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateResponse<'a> {
    pub oplock_level: OplockLevel,
    pub flags: CreateResponseFlags,
    pub create_action: CreateAction,
    pub times: FileTimes,
    pub allocation_size: u64,
    pub end_of_file: u64,
    /// MS-FSCC FILE_ATTRIBUTE_* bits.
    pub file_attributes: u32,
    pub file_id: FileId,
    pub contexts: Vec<ResponseContext<'a>>,
}

impl<'a> CreateResponse<'a> {
    /// Writes the body after the header, the contexts right after the fixed part.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u16(89)
            .u8(self.oplock_level.0)
            .u8(self.flags.0)
            .u32(self.create_action.0)
            .file_times(self.times)
            .u64(self.allocation_size)
            .u64(self.end_of_file)
            .u32(self.file_attributes)
            .u32(0);
        self.file_id.write(w);
        let offset = w.reserve_u32();
        let length = w.reserve_u32();
        let (chain_offset, chain_len) = ResponseContext::encode_chain(&self.contexts, w);
        w.patch_u32(offset, chain_offset);
        w.patch_u32(length, chain_len);
    }

    /// MS-SMB2 2.2.14.
    pub fn decode(pdu: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = body(pdu, 89)?;
        let oplock_level = OplockLevel(r.u8("OplockLevel")?);
        let flags = CreateResponseFlags(r.u8("Flags")?);
        let create_action = CreateAction(r.u32("CreateAction")?);
        let times = r.file_times()?;
        let allocation_size = r.u64("AllocationSize")?;
        let end_of_file = r.u64("EndofFile")?;
        let file_attributes = r.u32("FileAttributes")?;
        r.skip(4, "Reserved2")?;
        let file_id = FileId::read(&mut r)?;
        let contexts_offset = to_usize(r.u32("CreateContextsOffset")?);
        let contexts_len = to_usize(r.u32("CreateContextsLength")?);
        let chain =
            CreateContexts::parse(r.buffer_at(contexts_offset, contexts_len, "CreateContexts")?)?;
        let contexts = chain
            .raw()
            .map(ResponseContext::decode)
            .collect::<Result<_, _>>()?;
        Ok(Self {
            oplock_level,
            flags,
            create_action,
            times,
            allocation_size,
            end_of_file,
            file_attributes,
            file_id,
            contexts,
        })
    }
}

smb3d_wire::impl_codec!(CreateRequest<'a>, CreateResponse<'a>);

#[cfg(test)]
mod tests;
