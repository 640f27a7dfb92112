//! QUERY_INFO: MS-SMB2 3.3.5.20, file classes (3.3.5.20.1 with MS-FSA 2.1.5.12) and file
//! system classes (3.3.5.20.2 with MS-FSA 2.1.5.13), security (3.3.5.20.3) and quotas
//! (3.3.5.20.4, `fs/quota.rs`). Answers are encoded in place and then cut to the client's
//! OutputBufferLength as the classes' rules say.

use std::sync::atomic::Ordering;

use smb3d_dtyp::{AccessMask, NtStatus, SecurityInformation};
use smb3d_fscc::posix::POSIX_INFORMATION_CLASS;
use smb3d_fscc::{
    CompressionFormat, DeviceCharacteristics, DeviceType, EaFlags, FileAccessInformation,
    FileAlignmentInformation, FileAllInformation, FileAttributeTagInformation, FileAttributes,
    FileCompressionInformation, FileEaInformation, FileFsAttributeInformation,
    FileFsControlInformation, FileFsDeviceInformation, FileFsFullSizeInformation,
    FileFsObjectIdInformation, FileFsSectorSizeInformation, FileFsSizeInformation,
    FileFsVolumeInformation, FileIdInformation, FileInformationClass, FileInternalInformation,
    FileMode, FileModeInformation, FileNameInformation, FilePositionInformation, FsAttributes,
    FsControlFlags, FsInformationClass, FullEa, FullEaListEncoder, OutputFit, OutputSize,
    SectorSizeFlags, StreamListEncoder,
};
use smb3d_smb2::aapl::server_caps;
use smb3d_smb2::query_info::{InfoType, QueryInfoRequest, QueryInfoResponse};
use smb3d_vfs::{FileStat, FileType, FsStat};
use smb3d_wire::{FileTime, Guid, Writer};

use crate::clock::Clock;
use crate::fs::eas;
use crate::fs::fileinfo::{self, Meta};
use crate::fs::posix_info;
use crate::fs::quota;
use crate::fs::shortname;
use crate::fs::time_machine;
use crate::fs::{apple, streams};
use crate::handlers::{check_credit_charge, lookup_open, mac_caps};
use crate::identity::IdMap;
use crate::request::ctx::Ctx;
use crate::request::malformed;
use crate::security;
use crate::state::cluster_opens;
use crate::state::open::Open;
use crate::status_map::VfsResultExt;

/// Sector size reported to clients; allocation units are the file system's block size.
const BYTES_PER_SECTOR: u32 = 512;

pub(crate) async fn handle(
    cx: &mut Ctx<'_>,
    pdu: &[u8],
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let req = QueryInfoRequest::decode(pdu).map_err(malformed)?;
    let open = lookup_open(cx, req.file_id)?;
    if req.output_buffer_length > cx.conn.server.settings.max_io_size {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    check_credit_charge(cx, req.output_buffer_length)?;
    let dialect = cx.negotiated.dialect;
    let share_name = cx
        .tree
        .as_ref()
        .map(|t| t.share.name.clone())
        .unwrap_or_default();
    let limit = req.output_buffer_length;
    let pending = QueryInfoResponse::begin(w);
    let status = match req.info_type {
        InfoType::FILE
            if req.file_info_class == POSIX_INFORMATION_CLASS && posix_open(cx, &open) =>
        {
            let ids = &cx.conn.server.ids;
            let clock = &*cx.conn.server.settings.clock;
            open.io(|| posix_info(&open, limit, clock, ids, w))?
        }
        InfoType::FILE => open.io(|| {
            // Another node's pending delete of the file, as this node's watch knows it
            // (issue 18 item 7); a single server tests an `Option`.
            let elsewhere = open.shared.key.snapshot.is_none()
                && cluster_opens::marked_elsewhere(
                    &cx.conn.server,
                    &open.share,
                    open.shared.key.ino,
                );
            file_info(
                &open,
                FileInformationClass(req.file_info_class),
                limit,
                dialect,
                &*cx.conn.server.settings.clock,
                cx.conn.apple.get().is_some(),
                elsewhere,
                w,
            )
        })?,
        InfoType::FILESYSTEM => open.io(|| {
            fs_info(
                &open,
                FsInformationClass(req.file_info_class),
                limit,
                &share_name,
                w,
            )
        })?,
        InfoType::SECURITY => {
            let ids = &cx.conn.server.ids;
            let nfs_aces = mac_caps(cx) & server_caps::NFS_ACE != 0;
            let needed = open.io(|| {
                security_info(
                    &open,
                    ids,
                    SecurityInformation(req.additional_information),
                    nfs_aces,
                    limit,
                    w,
                )
            })?;
            if let Some(needed) = needed {
                // STATUS_BUFFER_TOO_SMALL carries the size the descriptor needs (MS-SMB2
                // 3.3.5.20.3).
                cx.error_data = needed.to_le_bytes().to_vec();
                return Err(NtStatus::BUFFER_TOO_SMALL);
            }
            NtStatus::SUCCESS
        }
        InfoType::QUOTA => {
            let ids = &cx.conn.server.ids;
            open.io(|| {
                quota::query(
                    open.vfs.as_ref(),
                    ids,
                    &open.identity,
                    &open.quota_scan,
                    req.input,
                    limit,
                    w,
                )
            })?;
            NtStatus::SUCCESS
        }
        _ => return Err(NtStatus::INVALID_PARAMETER),
    };
    QueryInfoResponse::finish(w, pending);
    Ok(status)
}

/// MS-SMB2 3.3.5.20.3: the parts of the descriptor the client asked for, if it has the right
/// to read them, with the NFS ACEs of a Mac client that negotiated them. `Some(size)` when
/// the client's buffer is too small.
fn security_info(
    open: &Open,
    ids: &IdMap,
    info: SecurityInformation,
    nfs_aces: bool,
    limit: u32,
    w: &mut Writer<'_>,
) -> Result<Option<u32>, NtStatus> {
    let wants_acl_parts = info.intersects(
        SecurityInformation::OWNER
            | SecurityInformation::GROUP
            | SecurityInformation::DACL
            | SecurityInformation::LABEL,
    );
    if wants_acl_parts && !open.may(AccessMask::READ_CONTROL) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    if info.contains(SecurityInformation::SACL) && !open.may(AccessMask::ACCESS_SYSTEM_SECURITY) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let stat = open.file.stat().status()?;
    let mut sd =
        security::descriptor(open.vfs.as_ref(), open.file.as_ref(), &stat, ids).filtered(info);
    if nfs_aces {
        sd = security::with_nfs_aces(sd, &stat);
    }
    let len = sd.encoded_len();
    if len > limit as usize {
        return Ok(Some(u32::try_from(len).unwrap_or(u32::MAX)));
    }
    sd.encode(w);
    Ok(None)
}

/// Cuts an encoded answer that started at `start` to the client's buffer.
fn fit(
    size: OutputSize,
    start: usize,
    limit: u32,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    match size.fit(w.offset() - start, limit) {
        OutputFit::Fits => Ok(NtStatus::SUCCESS),
        OutputFit::LengthMismatch => Err(NtStatus::INFO_LENGTH_MISMATCH),
        OutputFit::Overflow { len } => {
            w.truncate(start + len);
            Ok(NtStatus::BUFFER_OVERFLOW)
        }
    }
}

/// The open's path as FileNameInformation gives it: from the share root, with a leading
/// backslash, and `:stream` for an open of a named stream.
fn full_name(open: &Open) -> String {
    let path = open.path();
    let mut name = String::with_capacity(path.as_str().len() + 1);
    name.push('\\');
    name.push_str(&path.components().collect::<Vec<_>>().join("\\"));
    if let Some(stream) = &open.stream {
        name.push(':');
        name.push_str(&stream.name());
    }
    name
}

#[allow(clippy::too_many_arguments)]
fn file_info(
    open: &Open,
    class: FileInformationClass,
    limit: u32,
    dialect: u16,
    clock: &dyn Clock,
    mac: bool,
    pending_elsewhere: bool,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let size = class.query_size().ok_or(NtStatus::INVALID_INFO_CLASS)?;
    if required_access(class).is_some_and(|access| !open.may(access)) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let path = open.path();
    let name = path.name().unwrap_or("");
    let meta = open.meta(clock)?;
    let stat = &meta.stat;
    let start = w.offset();
    match class {
        FileInformationClass::FILE_BASIC_INFORMATION => meta.basic().encode(w),
        FileInformationClass::FILE_STANDARD_INFORMATION => meta
            .standard(pending_elsewhere || open.shared.delete_pending())
            .encode(w),
        FileInformationClass::FILE_INTERNAL_INFORMATION => FileInternalInformation {
            index_number: stat.ino,
        }
        .encode(w),
        FileInformationClass::FILE_EA_INFORMATION => FileEaInformation {
            ea_size: eas::size(&eas::read_kept(
                open.share.presentation.xattrs.eas,
                open.file.as_ref(),
            )?),
        }
        .encode(w),
        FileInformationClass::FILE_ACCESS_INFORMATION => FileAccessInformation {
            access_flags: open.granted,
        }
        .encode(w),
        FileInformationClass::FILE_POSITION_INFORMATION => position(open).encode(w),
        FileInformationClass::FILE_MODE_INFORMATION => mode(open).encode(w),
        FileInformationClass::FILE_ALIGNMENT_INFORMATION => FileAlignmentInformation {
            alignment_requirement: 0,
        }
        .encode(w),
        FileInformationClass::FILE_ALL_INFORMATION => {
            all_information(open, &meta, pending_elsewhere)?.encode(w)
        }
        FileInformationClass::FILE_NETWORK_OPEN_INFORMATION => meta.network_open().encode(w),
        FileInformationClass::FILE_ATTRIBUTE_TAG_INFORMATION => FileAttributeTagInformation {
            file_attributes: meta.attributes(),
            reparse_tag: if stat.file_type == smb3d_vfs::FileType::Symlink {
                smb3d_fscc::ReparseTag::SYMLINK.0
            } else if meta.attributes().contains(FileAttributes::REPARSE_POINT) {
                fileinfo::stored_tag(open.file.as_ref())
            } else {
                0
            },
        }
        .encode(w),
        FileInformationClass::FILE_COMPRESSION_INFORMATION => FileCompressionInformation {
            compressed_file_size: meta.end_of_file(),
            compression_format: CompressionFormat::NONE,
            compression_unit_shift: 0,
            chunk_shift: 0,
            cluster_shift: 0,
        }
        .encode(w),
        FileInformationClass::FILE_ID_INFORMATION => id_information(stat).encode(w),
        FileInformationClass::FILE_STREAM_INFORMATION => stream_info(open, stat, mac, w)?,
        FileInformationClass::FILE_ALTERNATE_NAME_INFORMATION => FileNameInformation {
            file_name: alternate_name(name)?,
        }
        .encode(w),
        FileInformationClass::FILE_NORMALIZED_NAME_INFORMATION => {
            if dialect < 0x0311 {
                return Err(NtStatus::NOT_SUPPORTED);
            }
            FileNameInformation {
                file_name: full_name(open).trim_start_matches('\\').to_owned(),
            }
            .encode(w)
        }
        FileInformationClass::FILE_FULL_EA_INFORMATION => return full_ea(open, limit, w),
        _ => return Err(NtStatus::INVALID_INFO_CLASS),
    }
    fit(size, start, limit, w)
}

/// FileAlternateNameInformation (MS-FSCC 2.4.5): an 8.3 name is its own, any other answers
/// its mangled name, also on a share without short names. MS-FSA 2.1.5.11.4 has a link
/// without a short name answer STATUS_OBJECT_NAME_NOT_FOUND, but smbclient's `allinfo` then
/// shows nothing at all and smbtorture's smb2.getinfo expects success; Samba answers the
/// mangled name whatever its `mangled names`, and so does smb3d. The share's root has no name.
fn alternate_name(name: &str) -> Result<String, NtStatus> {
    if name.is_empty() {
        return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
    }
    Ok(shortname::short_name(name).map_or_else(|| name.to_owned(), |s| s.as_str().to_owned()))
}

/// Whether FILE_POSIX_INFORMATION is answered on this open: to a client that negotiated the
/// SMB3 POSIX extensions, on a `posix` share; to others class 100 stays an unknown class.
fn posix_open(cx: &Ctx<'_>, open: &Open) -> bool {
    open.share.posix && cx.conn.negotiated.get().is_some_and(|n| n.posix)
}

/// FILE_POSIX_INFORMATION (SMB3 POSIX extensions), with the read-attributes right the
/// classes of times and attributes need; whole or not at all (INFO_LENGTH_MISMATCH), as a
/// cut SID means nothing.
fn posix_info(
    open: &Open,
    limit: u32,
    clock: &dyn Clock,
    ids: &IdMap,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    if !open.may(AccessMask::FILE_READ_ATTRIBUTES) {
        return Err(NtStatus::ACCESS_DENIED);
    }
    let info = posix_info::file_info(&open.meta(clock)?, ids);
    let start = w.offset();
    info.encode(w);
    let size = OutputSize {
        min: info.encoded_len(),
        variable: false,
    };
    fit(size, start, limit, w)
}

/// The access the open must have been granted to query a class.
fn required_access(class: FileInformationClass) -> Option<AccessMask> {
    match class {
        FileInformationClass::FILE_FULL_EA_INFORMATION => Some(AccessMask::FILE_READ_EA),
        FileInformationClass::FILE_BASIC_INFORMATION
        | FileInformationClass::FILE_ALL_INFORMATION
        | FileInformationClass::FILE_NETWORK_OPEN_INFORMATION
        | FileInformationClass::FILE_ATTRIBUTE_TAG_INFORMATION => {
            Some(AccessMask::FILE_READ_ATTRIBUTES)
        }
        _ => None,
    }
}

fn all_information(
    open: &Open,
    meta: &Meta,
    pending_elsewhere: bool,
) -> Result<FileAllInformation, NtStatus> {
    Ok(FileAllInformation {
        basic: meta.basic(),
        standard: meta.standard(pending_elsewhere || open.shared.delete_pending()),
        internal: FileInternalInformation {
            index_number: meta.stat.ino,
        },
        ea: FileEaInformation {
            ea_size: eas::size(&eas::read_kept(
                open.share.presentation.xattrs.eas,
                open.file.as_ref(),
            )?),
        },
        access: FileAccessInformation {
            access_flags: open.granted,
        },
        position: position(open),
        mode: mode(open),
        alignment: FileAlignmentInformation {
            alignment_requirement: 0,
        },
        name: FileNameInformation {
            file_name: full_name(open),
        },
    })
}

/// The file's 128-bit id: its inode number, on the volume of its device.
fn id_information(stat: &FileStat) -> FileIdInformation {
    let mut file_id = [0u8; 16];
    file_id[..8].copy_from_slice(&stat.ino.to_le_bytes());
    FileIdInformation {
        volume_serial_number: stat.dev,
        file_id,
    }
}

fn position(open: &Open) -> FilePositionInformation {
    FilePositionInformation {
        current_byte_offset: open.position.load(Ordering::Relaxed) as i64,
    }
}

fn mode(open: &Open) -> FileModeInformation {
    FileModeInformation {
        mode: FileMode(open.mode.load(Ordering::Relaxed) as u32),
    }
}

/// FileFullEaInformation: every EA that fits, STATUS_BUFFER_OVERFLOW if some did not (as
/// Samba answers, even for an empty buffer), STATUS_NO_EAS_ON_FILE if there are none (always
/// on a share without EAs, as Samba with `ea support = no` answers).
fn full_ea(open: &Open, limit: u32, w: &mut Writer<'_>) -> Result<NtStatus, NtStatus> {
    let eas = eas::read_kept(open.share.presentation.xattrs.eas, open.file.as_ref())?;
    if eas.is_empty() {
        return Err(NtStatus::NO_EAS_ON_FILE);
    }
    let mut list = FullEaListEncoder::new(w, limit as usize);
    for (name, value) in &eas {
        if !list.push(
            w,
            &FullEa {
                flags: EaFlags::empty(),
                name: name.as_bytes(),
                value,
            },
        ) {
            return Ok(NtStatus::BUFFER_OVERFLOW);
        }
    }
    Ok(NtStatus::SUCCESS)
}

/// FileStreamInformation (MS-FSCC 2.4.44): a file's unnamed data stream (a directory has
/// none), then its named streams, whichever of them the open is on. The list is encoded whole
/// and cut to the client's buffer like any variable-length answer. To a Mac client (`mac`: the
/// connection negotiated AAPL) on an `apple` share empty named streams are not there, as
/// vfs_fruit lists them. A share without named streams lists the unnamed one alone.
fn stream_info(
    open: &Open,
    stat: &FileStat,
    mac: bool,
    w: &mut Writer<'_>,
) -> Result<(), NtStatus> {
    let (file, default) = match &open.stream {
        Some(stream) => (stream.base(), stream.base().stat().status()?),
        None => (open.file.as_ref(), *stat),
    };
    let mut named = if open.share.presentation.xattrs.streams {
        streams::list(file).status()?
    } else {
        Vec::new()
    };
    if open.share.apple.is_some() {
        if mac {
            named.retain(|(_, size)| *size > 0);
        }
        let fork_len = (default.file_type != FileType::Directory)
            .then(|| apple::resource_fork_len(open.vfs.as_ref(), &open.path()));
        named = apple::listed_streams(file, named, fork_len).status()?;
    }
    let mut list = StreamListEncoder::new(w, usize::MAX);
    if default.file_type != FileType::Directory {
        list.push(w, "::$DATA", default.size, default.allocated);
    }
    for (name, size) in named {
        list.push(
            w,
            &format!(":{name}:$DATA"),
            size,
            streams::allocation(size),
        );
    }
    Ok(())
}

fn fs_info(
    open: &Open,
    class: FsInformationClass,
    limit: u32,
    share_name: &str,
    w: &mut Writer<'_>,
) -> Result<NtStatus, NtStatus> {
    let size = class.query_size().ok_or(NtStatus::INVALID_INFO_CLASS)?;
    let fs = match open.share.apple.as_deref() {
        // Samba's vfs_fruit reports a Time Machine share's maximum as its size.
        Some(apple) if apple.time_machine && apple.time_machine_max_size > 0 => {
            time_machine::limited(open.vfs.as_ref(), apple.time_machine_max_size)
        }
        _ => open.vfs.fs_stat(),
    }
    .status()?;
    let start = w.offset();
    let unit = fs.fragment_size.max(u64::from(BYTES_PER_SECTOR));
    let sectors_per_unit = u32::try_from(unit / u64::from(BYTES_PER_SECTOR)).unwrap_or(1);
    let scale = |blocks: u64| blocks.saturating_mul(fs.fragment_size.max(1)) / unit;
    let (total, available) = sizes(open, &fs, unit, scale);
    match class {
        FsInformationClass::FILE_FS_VOLUME_INFORMATION => FileFsVolumeInformation {
            volume_creation_time: FileTime::UNCHANGED,
            volume_serial_number: volume_serial(&fs),
            supports_objects: false,
            volume_label: share_name.chars().take(32).collect(),
        }
        .encode(w),
        FsInformationClass::FILE_FS_SIZE_INFORMATION => FileFsSizeInformation {
            total_allocation_units: total,
            available_allocation_units: available,
            sectors_per_allocation_unit: sectors_per_unit,
            bytes_per_sector: BYTES_PER_SECTOR,
        }
        .encode(w),
        FsInformationClass::FILE_FS_FULL_SIZE_INFORMATION => FileFsFullSizeInformation {
            total_allocation_units: total,
            caller_available_allocation_units: available,
            actual_available_allocation_units: scale(fs.free_blocks).min(available),
            sectors_per_allocation_unit: sectors_per_unit,
            bytes_per_sector: BYTES_PER_SECTOR,
        }
        .encode(w),
        FsInformationClass::FILE_FS_DEVICE_INFORMATION => FileFsDeviceInformation {
            device_type: DeviceType::DISK,
            characteristics: DeviceCharacteristics::DEVICE_IS_MOUNTED,
        }
        .encode(w),
        FsInformationClass::FILE_FS_ATTRIBUTE_INFORMATION => FileFsAttributeInformation {
            // PERSISTENT_ACLS is what makes Windows show a Security tab for the share's
            // files; NAMED_STREAMS what makes Windows copy and macOS keep streams in them.
            file_system_attributes: FsAttributes::CASE_SENSITIVE_SEARCH
                | FsAttributes::CASE_PRESERVED_NAMES
                | FsAttributes::UNICODE_ON_DISK
                | FsAttributes::PERSISTENT_ACLS
                | if open.share.presentation.xattrs.streams {
                    FsAttributes::NAMED_STREAMS
                } else {
                    FsAttributes::empty()
                }
                | crate::handlers::ioctl::fs_attributes(open.vfs.as_ref())
                | if quota::enabled(open.vfs.as_ref()) {
                    FsAttributes::VOLUME_QUOTAS
                } else {
                    FsAttributes::empty()
                },
            maximum_component_name_length: u32::try_from(fs.max_name_len.min(255)).unwrap_or(255),
            // Clients (and applications asking GetVolumeInformation) expect NTFS semantics
            // from a file server; this is the name they test for.
            file_system_name: "NTFS".into(),
        }
        .encode(w),
        FsInformationClass::FILE_FS_SECTOR_SIZE_INFORMATION => FileFsSectorSizeInformation {
            logical_bytes_per_sector: BYTES_PER_SECTOR,
            physical_bytes_per_sector_for_atomicity: BYTES_PER_SECTOR,
            physical_bytes_per_sector_for_performance: BYTES_PER_SECTOR,
            file_system_effective_physical_bytes_per_sector_for_atomicity: BYTES_PER_SECTOR,
            flags: SectorSizeFlags::ALIGNED_DEVICE | SectorSizeFlags::PARTITION_ALIGNED_ON_DEVICE,
            byte_offset_for_sector_alignment: 0,
            byte_offset_for_partition_alignment: 0,
        }
        .encode(w),
        // Linux quotas are tracked and enforced whenever they are on; there are no default
        // limits for new principals.
        FsInformationClass::FILE_FS_CONTROL_INFORMATION => FileFsControlInformation {
            free_space_start_filtering: 0,
            free_space_threshold: 0,
            free_space_stop_filtering: 0,
            default_quota_threshold: u64::MAX,
            default_quota_limit: u64::MAX,
            file_system_control_flags: if quota::enabled(open.vfs.as_ref()) {
                FsControlFlags::QUOTA_TRACK | FsControlFlags::QUOTA_ENFORCE
            } else {
                FsControlFlags::empty()
            },
        }
        .encode(w),
        FsInformationClass::FILE_FS_OBJECT_ID_INFORMATION => {
            let mut object_id = Guid::ZERO;
            object_id.0[..8].copy_from_slice(&fs.fs_id.to_le_bytes());
            object_id.0[8..].copy_from_slice(&fs.fs_type.to_le_bytes());
            FileFsObjectIdInformation {
                object_id,
                extended_info: [0; 48],
            }
            .encode(w)
        }
        _ => return Err(NtStatus::INVALID_INFO_CLASS),
    }
    fit(size, start, limit, w)
}

/// Total and available allocation units for the open's user: the disk's, or what the user's
/// hard quota limits leave where that is less (as Samba's `dfree` with quotas).
fn sizes(open: &Open, fs: &FsStat, unit: u64, scale: impl Fn(u64) -> u64) -> (u64, u64) {
    let disk = (scale(fs.total_blocks), scale(fs.avail_blocks));
    match quota::space_left(open.vfs.as_ref(), &open.identity) {
        Some((limit, left)) => (disk.0.min(limit / unit), disk.1.min(left / unit)),
        None => disk,
    }
}

/// A volume serial number stable for the file system.
fn volume_serial(fs: &FsStat) -> u32 {
    (fs.fs_id ^ (fs.fs_id >> 32)) as u32
}
