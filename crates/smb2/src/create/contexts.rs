//! Create contexts (MS-SMB2 2.2.13.2, 2.2.14.2): a checked chain parser and builder, and typed
//! bodies for the contexts the server acts on.

use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_wire::{DecodeError, DecodeErrorKind, FileTime, Guid, Reader, Slot32, Writer};

use crate::file_id::FileId;
use crate::util::{len16, len32, to_usize};

/// Context names (MS-SMB2 2.2.13.2, 2.2.14.2).
pub mod names {
    /// SMB2_CREATE_EA_BUFFER.
    pub const EA_BUFFER: &[u8; 4] = b"ExtA";
    /// SMB2_CREATE_SD_BUFFER.
    pub const SD_BUFFER: &[u8; 4] = b"SecD";
    /// SMB2_CREATE_DURABLE_HANDLE_REQUEST / _RESPONSE.
    pub const DURABLE_HANDLE_REQUEST: &[u8; 4] = b"DHnQ";
    /// SMB2_CREATE_DURABLE_HANDLE_RECONNECT.
    pub const DURABLE_HANDLE_RECONNECT: &[u8; 4] = b"DHnC";
    /// SMB2_CREATE_ALLOCATION_SIZE.
    pub const ALLOCATION_SIZE: &[u8; 4] = b"AlSi";
    /// SMB2_CREATE_QUERY_MAXIMAL_ACCESS_REQUEST / _RESPONSE.
    pub const QUERY_MAXIMAL_ACCESS: &[u8; 4] = b"MxAc";
    /// SMB2_CREATE_TIMEWARP_TOKEN.
    pub const TIMEWARP_TOKEN: &[u8; 4] = b"TWrp";
    /// SMB2_CREATE_QUERY_ON_DISK_ID.
    pub const QUERY_ON_DISK_ID: &[u8; 4] = b"QFid";
    /// SMB2_CREATE_REQUEST_LEASE / _V2 and their responses.
    pub const REQUEST_LEASE: &[u8; 4] = b"RqLs";
    /// SMB2_CREATE_DURABLE_HANDLE_REQUEST_V2 / _RESPONSE_V2.
    pub const DURABLE_HANDLE_REQUEST_V2: &[u8; 4] = b"DH2Q";
    /// SMB2_CREATE_DURABLE_HANDLE_RECONNECT_V2.
    pub const DURABLE_HANDLE_RECONNECT_V2: &[u8; 4] = b"DH2C";
    /// SMB2_CREATE_APP_INSTANCE_ID: the GUID 6aa6bc45-a7ef-4af7-9008-fa462e144d74 as it is on
    /// the wire.
    pub const APP_INSTANCE_ID: &[u8; 16] = &[
        0x45, 0xbc, 0xa6, 0x6a, 0xef, 0xa7, 0xf7, 0x4a, 0x90, 0x08, 0xfa, 0x46, 0x2e, 0x14, 0x4d,
        0x74,
    ];
    /// SMB2_CREATE_APP_INSTANCE_VERSION: the GUID b7d082b9-563b-4f07-a07b-524a8116a010 as it
    /// is on the wire.
    pub const APP_INSTANCE_VERSION: &[u8; 16] = &[
        0xb9, 0x82, 0xd0, 0xb7, 0x3b, 0x56, 0x07, 0x4f, 0xa0, 0x7b, 0x52, 0x4a, 0x81, 0x16, 0xa0,
        0x10,
    ];
}

/// Size of a context's fixed header (Next, NameOffset, NameLength, Reserved, DataOffset,
/// DataLength).
const CONTEXT_HEADER_LEN: usize = 16;

/// One create context as it is on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawCreateContext<'a> {
    pub name: &'a [u8],
    pub data: &'a [u8],
}

/// A checked chain of create contexts (MS-SMB2 2.2.13.2). Every entry was validated when the
/// chain was parsed, so iterating allocates nothing and cannot fail structurally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CreateContexts<'a> {
    chain: &'a [u8],
    count: usize,
}

/// Parses the entry at the start of `entry`; returns it and the offset of the next, if any.
fn parse_entry(entry: &[u8]) -> Result<(RawCreateContext<'_>, Option<usize>), DecodeError> {
    let mut r = Reader::new(entry);
    let next = to_usize(r.u32("CreateContext.Next")?);
    let name_offset = usize::from(r.u16("CreateContext.NameOffset")?);
    let name_len = usize::from(r.u16("CreateContext.NameLength")?);
    r.skip(2, "CreateContext.Reserved")?;
    let data_offset = usize::from(r.u16("CreateContext.DataOffset")?);
    let data_len = to_usize(r.u32("CreateContext.DataLength")?);
    let end = if next == 0 {
        entry.len()
    } else {
        if !next.is_multiple_of(8) {
            return Err(DecodeError::new(
                "CreateContext.Next",
                DecodeErrorKind::Misaligned,
            ));
        }
        if next < CONTEXT_HEADER_LEN || next > entry.len() {
            return Err(DecodeError::new(
                "CreateContext.Next",
                DecodeErrorKind::OutOfBounds,
            ));
        }
        next
    };
    // Offsets count from the start of the entry and must stay inside it (up to Next).
    let bounded = Reader::after_header(
        entry.get(..end).unwrap_or_default(),
        CONTEXT_HEADER_LEN,
        "CreateContext",
    )?;
    let name = bounded.buffer_at(name_offset, name_len, "CreateContext.Name")?;
    if data_len > 0 && data_offset < name_offset.saturating_add(name_len) {
        return Err(DecodeError::new(
            "CreateContext.Data",
            DecodeErrorKind::OutOfBounds,
        ));
    }
    let data = bounded.buffer_at(data_offset, data_len, "CreateContext.Data")?;
    Ok((RawCreateContext { name, data }, (next != 0).then_some(next)))
}

impl<'a> CreateContexts<'a> {
    /// Validates a chain (the CreateContextsOffset/Length buffer): every Next 8-byte aligned
    /// and inside the chain, every name and data inside its entry.
    pub fn parse(chain: &'a [u8]) -> Result<Self, DecodeError> {
        let mut count = 0;
        let mut rest = chain;
        while !rest.is_empty() {
            let (_, next) = parse_entry(rest)?;
            count += 1;
            match next {
                Some(next) => rest = rest.get(next..).unwrap_or_default(),
                None => break,
            }
            if rest.is_empty() {
                return Err(DecodeError::truncated("CreateContext"));
            }
        }
        Ok(Self { chain, count })
    }

    /// The number of contexts.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The chain's bytes as received.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.chain
    }

    /// The contexts as they are on the wire.
    pub fn raw(&self) -> RawContexts<'a> {
        RawContexts {
            rest: self.chain,
            left: self.count,
        }
    }

    /// The contexts with their bodies decoded as request contexts; a body of the wrong size
    /// for its name is an error item.
    pub fn iter(&self) -> impl Iterator<Item = Result<CreateContext<'a>, DecodeError>> + 'a {
        self.raw().map(CreateContext::decode)
    }

    /// The first context with this name.
    pub fn find(&self, name: &[u8]) -> Option<RawCreateContext<'a>> {
        self.raw().find(|c| c.name == name)
    }
}

/// Iterator over a checked chain, see [`CreateContexts::raw`].
#[derive(Debug, Clone)]
pub struct RawContexts<'a> {
    rest: &'a [u8],
    left: usize,
}

impl<'a> Iterator for RawContexts<'a> {
    type Item = RawCreateContext<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        self.left = self.left.checked_sub(1)?;
        let (context, next) = parse_entry(self.rest).ok()?;
        self.rest = match next {
            Some(next) => self.rest.get(next..).unwrap_or_default(),
            None => &[],
        };
        Some(context)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// Writes a chain of contexts, each 8-byte aligned relative to the writer's base (the
/// header), linking each to the next.
pub struct ChainWriter {
    previous: Option<(Slot32, usize)>,
    first: Option<usize>,
}

impl ChainWriter {
    /// An empty chain.
    pub fn new() -> Self {
        Self {
            previous: None,
            first: None,
        }
    }

    /// Appends a context whose data `write_data` writes.
    pub fn push(
        &mut self,
        w: &mut Writer<'_>,
        name: &[u8],
        write_data: impl FnOnce(&mut Writer<'_>),
    ) {
        w.align(8);
        let start = w.offset();
        if let Some((next, previous_start)) = self.previous.take() {
            w.patch_u32(next, len32(start - previous_start));
        }
        self.first.get_or_insert(start);
        let next = w.reserve_u32();
        let data_offset = (CONTEXT_HEADER_LEN + name.len()).next_multiple_of(8);
        w.u16(len16(CONTEXT_HEADER_LEN))
            .u16(len16(name.len()))
            .u16(0)
            .u16(len16(data_offset));
        let data_len = w.reserve_u32();
        w.bytes(name).align(8);
        let data_start = w.offset();
        write_data(w);
        let written = len32(w.offset() - data_start);
        w.patch_u32(data_len, written);
        self.previous = Some((next, start));
    }

    /// The chain's offset (from the header) and length, both 0 if it is empty.
    pub fn finish(self, w: &Writer<'_>) -> (u32, u32) {
        match self.first {
            Some(first) => (len32(first), len32(w.offset() - first)),
            None => (0, 0),
        }
    }
}

impl Default for ChainWriter {
    fn default() -> Self {
        Self::new()
    }
}

/// A 16-byte lease key chosen by the client (MS-SMB2 2.2.13.2.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct LeaseKey(pub [u8; 16]);

smb3d_wire::open_flags! {
    /// LeaseState (MS-SMB2 2.2.13.2.8).
    pub struct LeaseState(u32) {
        READ_CACHING = 0x0000_0001,
        HANDLE_CACHING = 0x0000_0002,
        WRITE_CACHING = 0x0000_0004,
    }
}

smb3d_wire::open_flags! {
    /// LeaseFlags (MS-SMB2 2.2.13.2.10, 2.2.14.2.10).
    pub struct LeaseFlags(u32) {
        BREAK_IN_PROGRESS = 0x0000_0002,
        PARENT_LEASE_KEY_SET = 0x0000_0004,
    }
}

smb3d_wire::open_flags! {
    /// Flags of the durable handle v2 contexts (MS-SMB2 2.2.13.2.11).
    pub struct DurableHandleFlags(u32) {
        PERSISTENT = 0x0000_0002,
    }
}

/// The version 2 part of a lease (MS-SMB2 2.2.13.2.10, 2.2.14.2.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LeaseV2 {
    pub parent_lease_key: LeaseKey,
    pub epoch: u16,
}

/// SMB2_CREATE_REQUEST_LEASE (32 bytes) or _V2 (52 bytes), and the response contexts of the
/// same layout (MS-SMB2 2.2.13.2.8, 2.2.13.2.10, 2.2.14.2.10, 2.2.14.2.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lease {
    pub lease_key: LeaseKey,
    pub lease_state: LeaseState,
    pub lease_flags: LeaseFlags,
    /// Reserved: 0.
    pub lease_duration: u64,
    /// Present in the version 2 form.
    pub v2: Option<LeaseV2>,
}

impl Lease {
    /// Decodes the 32- or 52-byte body; other sizes are an error.
    pub fn decode(data: &[u8]) -> Result<Self, DecodeError> {
        let v2 = match data.len() {
            32 => false,
            52 => true,
            _ => return Err(DecodeError::invalid("RqLs size")),
        };
        let mut r = Reader::new(data);
        let lease_key = LeaseKey(r.array("LeaseKey")?);
        let lease_state = LeaseState(r.u32("LeaseState")?);
        let lease_flags = LeaseFlags(r.u32("LeaseFlags")?);
        let lease_duration = r.u64("LeaseDuration")?;
        let v2 = if v2 {
            let parent_lease_key = LeaseKey(r.array("ParentLeaseKey")?);
            let epoch = r.u16("Epoch")?;
            Some(LeaseV2 {
                parent_lease_key,
                epoch,
            })
        } else {
            None
        };
        Ok(Self {
            lease_key,
            lease_state,
            lease_flags,
            lease_duration,
            v2,
        })
    }

    /// Writes the body.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.bytes(&self.lease_key.0)
            .u32(self.lease_state.0)
            .u32(self.lease_flags.0)
            .u64(self.lease_duration);
        if let Some(v2) = &self.v2 {
            w.bytes(&v2.parent_lease_key.0).u16(v2.epoch).u16(0);
        }
    }
}

smb3d_wire::impl_codec!(Lease);

/// SMB2_CREATE_DURABLE_HANDLE_REQUEST_V2 (MS-SMB2 2.2.13.2.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DurableHandleRequestV2 {
    /// Milliseconds the open survives a disconnect; 0 lets the server choose.
    pub timeout: u32,
    pub flags: DurableHandleFlags,
    pub create_guid: Guid,
}

/// SMB2_CREATE_DURABLE_HANDLE_RECONNECT_V2 (MS-SMB2 2.2.13.2.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DurableHandleReconnectV2 {
    pub file_id: FileId,
    pub create_guid: Guid,
    pub flags: DurableHandleFlags,
}

/// SMB2_CREATE_DURABLE_HANDLE_RESPONSE_V2 (MS-SMB2 2.2.14.2.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DurableHandleResponseV2 {
    pub timeout: u32,
    pub flags: DurableHandleFlags,
}

/// SMB2_CREATE_APP_INSTANCE_VERSION (MS-SMB2 2.2.13.2.15): compared as the pair (high, low).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct AppInstanceVersion {
    pub high: u64,
    pub low: u64,
}

/// StructureSize of SMB2_CREATE_APP_INSTANCE_ID (MS-SMB2 2.2.13.2.13).
const APP_INSTANCE_ID_SIZE: u16 = 20;
/// StructureSize of SMB2_CREATE_APP_INSTANCE_VERSION (MS-SMB2 2.2.13.2.15).
const APP_INSTANCE_VERSION_SIZE: u16 = 24;

/// Reads a StructureSize that must be `want`: the body is already exactly that long, so
/// another value is a malformed context (MS-SMB2 3.3.5.9.13 lets the server check it).
fn structure_size(r: &mut Reader<'_>, want: u16, field: &'static str) -> Result<(), DecodeError> {
    let got = r.u16(field)?;
    if got != want {
        return Err(DecodeError::new(
            field,
            DecodeErrorKind::BadSize {
                expected: u32::from(want),
                got: u32::from(got),
            },
        ));
    }
    Ok(())
}

/// SMB2_CREATE_QUERY_MAXIMAL_ACCESS_RESPONSE (MS-SMB2 2.2.14.2.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MaximalAccessResponse {
    pub query_status: NtStatus,
    pub maximal_access: AccessMask,
}

/// SMB2_CREATE_QUERY_ON_DISK_ID response (MS-SMB2 2.2.14.2.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueryOnDiskIdResponse {
    /// DiskFileId: the file's identity on its volume (the inode number on Linux).
    pub file_id: u64,
    /// VolumeId.
    pub volume_id: u64,
}

/// A request create context, typed where the server acts on it (MS-SMB2 2.2.13.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreateContext<'a> {
    /// ExtA: FILE_FULL_EA_INFORMATION entries, left to the server to parse.
    EaBuffer(&'a [u8]),
    /// SecD: a self-relative security descriptor, left to the server to parse.
    SecurityDescriptor(&'a [u8]),
    /// DHnQ.
    DurableHandleRequest,
    /// DHnC.
    DurableHandleReconnect { file_id: FileId },
    /// AlSi.
    AllocationSize(u64),
    /// MxAc, with the optional timestamp.
    MaximalAccessRequest { timestamp: Option<FileTime> },
    /// TWrp: open the snapshot taken at this time.
    TimewarpToken(FileTime),
    /// QFid.
    QueryOnDiskId,
    /// RqLs, version 1 or 2.
    RequestLease(Lease),
    /// DH2Q.
    DurableHandleRequestV2(DurableHandleRequestV2),
    /// DH2C.
    DurableHandleReconnectV2(DurableHandleReconnectV2),
    /// SMB2_CREATE_APP_INSTANCE_ID (MS-SMB2 2.2.13.2.13): the application instance the open
    /// belongs to.
    AppInstanceId(Guid),
    /// SMB2_CREATE_APP_INSTANCE_VERSION (MS-SMB2 2.2.13.2.15).
    AppInstanceVersion(AppInstanceVersion),
    /// Anything else (SVHDX, POSIX, unknown names), kept raw.
    Other(RawCreateContext<'a>),
}

fn exact<'a>(data: &'a [u8], len: usize, field: &'static str) -> Result<Reader<'a>, DecodeError> {
    if data.len() != len {
        return Err(DecodeError::new(
            field,
            DecodeErrorKind::BadSize {
                expected: len32(len),
                got: len32(data.len()),
            },
        ));
    }
    Ok(Reader::new(data))
}

impl<'a> CreateContext<'a> {
    /// Types a raw request context by its name; known names with a body of the wrong size are
    /// an error.
    pub fn decode(raw: RawCreateContext<'a>) -> Result<Self, DecodeError> {
        let data = raw.data;
        Ok(match raw.name {
            n if n == names::EA_BUFFER => Self::EaBuffer(data),
            n if n == names::SD_BUFFER => Self::SecurityDescriptor(data),
            n if n == names::DURABLE_HANDLE_REQUEST => {
                exact(data, 16, "DHnQ")?;
                Self::DurableHandleRequest
            }
            n if n == names::DURABLE_HANDLE_RECONNECT => Self::DurableHandleReconnect {
                file_id: FileId::read(&mut exact(data, 16, "DHnC")?)?,
            },
            n if n == names::ALLOCATION_SIZE => {
                Self::AllocationSize(exact(data, 8, "AlSi")?.u64("AllocationSize")?)
            }
            n if n == names::QUERY_MAXIMAL_ACCESS => Self::MaximalAccessRequest {
                timestamp: if data.is_empty() {
                    None
                } else {
                    Some(exact(data, 8, "MxAc")?.filetime("Timestamp")?)
                },
            },
            n if n == names::TIMEWARP_TOKEN => {
                Self::TimewarpToken(exact(data, 8, "TWrp")?.filetime("Timestamp")?)
            }
            n if n == names::QUERY_ON_DISK_ID => Self::QueryOnDiskId,
            n if n == names::REQUEST_LEASE => Self::RequestLease(Lease::decode(data)?),
            n if n == names::DURABLE_HANDLE_REQUEST_V2 => {
                let mut r = exact(data, 32, "DH2Q")?;
                let timeout = r.u32("Timeout")?;
                let flags = DurableHandleFlags(r.u32("Flags")?);
                r.skip(8, "Reserved")?;
                Self::DurableHandleRequestV2(DurableHandleRequestV2 {
                    timeout,
                    flags,
                    create_guid: r.guid("CreateGuid")?,
                })
            }
            n if n == names::DURABLE_HANDLE_RECONNECT_V2 => {
                let mut r = exact(data, 36, "DH2C")?;
                let file_id = FileId::read(&mut r)?;
                let create_guid = r.guid("CreateGuid")?;
                Self::DurableHandleReconnectV2(DurableHandleReconnectV2 {
                    file_id,
                    create_guid,
                    flags: DurableHandleFlags(r.u32("Flags")?),
                })
            }
            n if n == names::APP_INSTANCE_ID => {
                let mut r = exact(data, 20, "AppInstanceId")?;
                structure_size(&mut r, APP_INSTANCE_ID_SIZE, "AppInstanceId.StructureSize")?;
                r.skip(2, "AppInstanceId.Reserved")?;
                Self::AppInstanceId(r.guid("AppInstanceId")?)
            }
            n if n == names::APP_INSTANCE_VERSION => {
                let mut r = exact(data, 24, "AppInstanceVersion")?;
                structure_size(
                    &mut r,
                    APP_INSTANCE_VERSION_SIZE,
                    "AppInstanceVersion.StructureSize",
                )?;
                r.skip(6, "AppInstanceVersion.Reserved")?;
                let high = r.u64("AppInstanceVersionHigh")?;
                Self::AppInstanceVersion(AppInstanceVersion {
                    high,
                    low: r.u64("AppInstanceVersionLow")?,
                })
            }
            _ => Self::Other(raw),
        })
    }

    /// The context's name.
    pub fn name(&self) -> &'a [u8] {
        match self {
            Self::EaBuffer(_) => names::EA_BUFFER,
            Self::SecurityDescriptor(_) => names::SD_BUFFER,
            Self::DurableHandleRequest => names::DURABLE_HANDLE_REQUEST,
            Self::DurableHandleReconnect { .. } => names::DURABLE_HANDLE_RECONNECT,
            Self::AllocationSize(_) => names::ALLOCATION_SIZE,
            Self::MaximalAccessRequest { .. } => names::QUERY_MAXIMAL_ACCESS,
            Self::TimewarpToken(_) => names::TIMEWARP_TOKEN,
            Self::QueryOnDiskId => names::QUERY_ON_DISK_ID,
            Self::RequestLease(_) => names::REQUEST_LEASE,
            Self::DurableHandleRequestV2(_) => names::DURABLE_HANDLE_REQUEST_V2,
            Self::DurableHandleReconnectV2(_) => names::DURABLE_HANDLE_RECONNECT_V2,
            Self::AppInstanceId(_) => names::APP_INSTANCE_ID,
            Self::AppInstanceVersion(_) => names::APP_INSTANCE_VERSION,
            Self::Other(raw) => raw.name,
        }
    }

    /// Writes the context's data (not its header).
    pub fn encode_data(&self, w: &mut Writer<'_>) {
        match self {
            Self::EaBuffer(data) | Self::SecurityDescriptor(data) => {
                w.bytes(data);
            }
            Self::DurableHandleRequest => {
                w.zeros(16);
            }
            Self::DurableHandleReconnect { file_id } => file_id.write(w),
            Self::AllocationSize(size) => {
                w.u64(*size);
            }
            Self::MaximalAccessRequest { timestamp } => {
                if let Some(t) = timestamp {
                    w.filetime(*t);
                }
            }
            Self::TimewarpToken(t) => {
                w.filetime(*t);
            }
            Self::QueryOnDiskId => {}
            Self::RequestLease(lease) => lease.encode(w),
            Self::DurableHandleRequestV2(d) => {
                w.u32(d.timeout)
                    .u32(d.flags.0)
                    .zeros(8)
                    .guid(&d.create_guid);
            }
            Self::DurableHandleReconnectV2(d) => {
                d.file_id.write(w);
                w.guid(&d.create_guid).u32(d.flags.0);
            }
            Self::AppInstanceId(id) => {
                w.u16(APP_INSTANCE_ID_SIZE).u16(0).guid(id);
            }
            Self::AppInstanceVersion(v) => {
                w.u16(APP_INSTANCE_VERSION_SIZE)
                    .zeros(6)
                    .u64(v.high)
                    .u64(v.low);
            }
            Self::Other(raw) => {
                w.bytes(raw.data);
            }
        }
    }

    /// Writes a chain of request contexts; returns its offset and length (0, 0 if empty).
    pub fn encode_chain(contexts: &[CreateContext<'_>], w: &mut Writer<'_>) -> (u32, u32) {
        let mut chain = ChainWriter::new();
        for c in contexts {
            chain.push(w, c.name(), |w| c.encode_data(w));
        }
        chain.finish(w)
    }
}

/// A response create context (MS-SMB2 2.2.14.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseContext<'a> {
    /// DHnQ: the open is durable.
    DurableHandle,
    /// MxAc.
    MaximalAccess(MaximalAccessResponse),
    /// QFid.
    QueryOnDiskId(QueryOnDiskIdResponse),
    /// RqLs, version 1 or 2 (matching the request).
    Lease(Lease),
    /// DH2Q.
    DurableHandleV2(DurableHandleResponseV2),
    /// AAPL: the answer to a Mac client's server query ([`crate::aapl`]).
    Aapl(crate::aapl::ServerQueryResponse),
    /// Anything else, kept raw.
    Other(RawCreateContext<'a>),
}

impl<'a> ResponseContext<'a> {
    /// Types a raw response context by its name.
    pub fn decode(raw: RawCreateContext<'a>) -> Result<Self, DecodeError> {
        let data = raw.data;
        Ok(match raw.name {
            n if n == names::DURABLE_HANDLE_REQUEST => {
                exact(data, 8, "DHnQ")?;
                Self::DurableHandle
            }
            n if n == names::QUERY_MAXIMAL_ACCESS => {
                let mut r = exact(data, 8, "MxAc")?;
                Self::MaximalAccess(MaximalAccessResponse {
                    query_status: NtStatus(r.u32("QueryStatus")?),
                    maximal_access: AccessMask(r.u32("MaximalAccess")?),
                })
            }
            n if n == names::QUERY_ON_DISK_ID => {
                let mut r = exact(data, 32, "QFid")?;
                Self::QueryOnDiskId(QueryOnDiskIdResponse {
                    file_id: r.u64("DiskFileId")?,
                    volume_id: r.u64("VolumeId")?,
                })
            }
            n if n == names::REQUEST_LEASE => Self::Lease(Lease::decode(data)?),
            n if n == names::DURABLE_HANDLE_REQUEST_V2 => {
                let mut r = exact(data, 8, "DH2Q")?;
                Self::DurableHandleV2(DurableHandleResponseV2 {
                    timeout: r.u32("Timeout")?,
                    flags: DurableHandleFlags(r.u32("Flags")?),
                })
            }
            n if n == crate::aapl::NAME => {
                Self::Aapl(crate::aapl::ServerQueryResponse::decode(data)?)
            }
            _ => Self::Other(raw),
        })
    }

    /// The context's name.
    pub fn name(&self) -> &'a [u8] {
        match self {
            Self::DurableHandle => names::DURABLE_HANDLE_REQUEST,
            Self::MaximalAccess(_) => names::QUERY_MAXIMAL_ACCESS,
            Self::QueryOnDiskId(_) => names::QUERY_ON_DISK_ID,
            Self::Lease(_) => names::REQUEST_LEASE,
            Self::DurableHandleV2(_) => names::DURABLE_HANDLE_REQUEST_V2,
            Self::Aapl(_) => crate::aapl::NAME,
            Self::Other(raw) => raw.name,
        }
    }

    /// Writes the context's data (not its header).
    pub fn encode_data(&self, w: &mut Writer<'_>) {
        match self {
            Self::DurableHandle => {
                w.zeros(8);
            }
            Self::MaximalAccess(m) => {
                w.u32(m.query_status.0).u32(m.maximal_access.0);
            }
            Self::QueryOnDiskId(q) => {
                w.u64(q.file_id).u64(q.volume_id).zeros(16);
            }
            Self::Lease(lease) => lease.encode(w),
            Self::DurableHandleV2(d) => {
                w.u32(d.timeout).u32(d.flags.0);
            }
            Self::Aapl(answer) => answer.encode(w),
            Self::Other(raw) => {
                w.bytes(raw.data);
            }
        }
    }

    /// Writes a chain of response contexts; returns its offset and length (0, 0 if empty).
    pub fn encode_chain(contexts: &[ResponseContext<'_>], w: &mut Writer<'_>) -> (u32, u32) {
        let mut chain = ChainWriter::new();
        for c in contexts {
            chain.push(w, c.name(), |w| c.encode_data(w));
        }
        chain.finish(w)
    }
}
