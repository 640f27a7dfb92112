//! Scenario tests of the file-system controls over the in-memory server (a `MemoryVfs` share):
//! the statuses of sparse files, zeroing, allocated ranges, reparse points and symlinks,
//! server-side copy keys, and the controls answered as NTFS answers them. smbtorture's
//! `smb2.ioctl` and `interop/test_fsctl.py` check the same against real clients and disks.

use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_fscc::{EaFlags, FileInformationClass, FullEa, FullEaListEncoder};
use smb3d_server::Settings;
use smb3d_smb2::Command;
use smb3d_smb2::create::{
    CreateContext, CreateContexts, CreateDisposition, CreateOptions, CreateRequest,
    ImpersonationLevel, OplockLevel, ShareAccess,
};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::ioctl::{CtlCode, IoctlFlags, IoctlRequest};
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::query_info::InfoType;
use smb3d_testkit::packet::body;
use smb3d_testkit::script::{self, Op, RequestSpec, SpecFlags, Summary};
use smb3d_testkit::seeds::{connected, create_body, query_info_body, set_info_body, write_body};
use smb3d_wire::Writer;

const ALL_ACCESS: AccessMask = AccessMask(0x001F_01FF);
/// IO_REPARSE_TAG_DEDUP: a Microsoft tag with no name inside, kept as an opaque buffer.
const DEDUP: u32 = 0x8000_0013;
const SYMLINK: u32 = 0xA000_000C;

fn request(command: Command, body: Vec<u8>) -> Op {
    Op::Request(RequestSpec::new(command, body))
}

fn ioctl_body(ctl_code: CtlCode, input: &[u8], max_output: u32, flags: IoctlFlags) -> Vec<u8> {
    body(|w| {
        IoctlRequest {
            ctl_code,
            file_id: FileId::ANY,
            input,
            max_input_response: 0,
            output: &[],
            max_output_response: max_output,
            flags,
        }
        .encode(w);
    })
}

/// An FSCTL on the current open.
fn fsctl(ctl_code: CtlCode, input: &[u8], max_output: u32) -> Op {
    request(
        Command::IOCTL,
        ioctl_body(ctl_code, input, max_output, IoctlFlags::IS_FSCTL),
    )
}

/// An FSCTL that names no open (FileId all ones).
fn fsctl_without_open(ctl_code: CtlCode, max_output: u32) -> Op {
    Op::Request(
        RequestSpec::new(
            Command::IOCTL,
            ioctl_body(ctl_code, &[], max_output, IoctlFlags::IS_FSCTL),
        )
        .with(SpecFlags::RAW_FILE_ID),
    )
}

fn create(name: &str, disposition: CreateDisposition) -> Op {
    request(
        Command::CREATE,
        create_body(
            name,
            ALL_ACCESS,
            disposition,
            CreateOptions::NON_DIRECTORY_FILE,
        ),
    )
}

fn select(file: u8) -> Op {
    Op::Select {
        session: 0,
        tree: 0,
        file,
    }
}

fn run(ops: Vec<Op>) -> Summary {
    script::run(&ops, Settings::default(), Arc::new(NullProvider)).unwrap_or_else(|v| panic!("{v}"))
}

/// The statuses of the IOCTL responses, in order.
fn ioctls(summary: &Summary) -> Vec<NtStatus> {
    summary
        .responses
        .iter()
        .filter(|(c, _)| *c == Command::IOCTL)
        .map(|&(_, s)| s)
        .collect()
}

fn le(parts: &[u64], widths: &[usize]) -> Vec<u8> {
    parts
        .iter()
        .zip(widths)
        .flat_map(|(v, &n)| v.to_le_bytes().into_iter().take(n))
        .collect()
}

/// REPARSE_DATA_BUFFER (MS-FSCC 2.1.2.2) of a tag whose data is opaque.
fn reparse(tag: u32, data: &[u8]) -> Vec<u8> {
    let mut out = le(&[u64::from(tag), data.len() as u64, 0], &[4, 2, 2]);
    out.extend_from_slice(data);
    out
}

/// REPARSE_GUID_DATA_BUFFER (MS-FSCC 2.1.2.3): what a tag without the Microsoft bit carries.
fn reparse_with_guid(tag: u32, data: &[u8]) -> Vec<u8> {
    let mut out = le(&[u64::from(tag), data.len() as u64, 0], &[4, 2, 2]);
    out.extend_from_slice(&[0x42; 16]);
    out.extend_from_slice(data);
    out
}

/// A relative symbolic link's reparse buffer (MS-FSCC 2.1.2.4) to `target`.
fn symlink(target: &str) -> Vec<u8> {
    let name: Vec<u8> = target.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let n = name.len() as u64;
    // SubstituteName then PrintName, both the target; SYMLINK_FLAG_RELATIVE.
    let mut data = le(&[0, n, n, n, 1], &[2, 2, 2, 2, 4]);
    data.extend_from_slice(&name);
    data.extend_from_slice(&name);
    reparse(SYMLINK, &data)
}

#[test]
fn sparse_files_zeroing_and_allocated_ranges() {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    ops.extend([
        create("dir\\sparse", CreateDisposition::OVERWRITE_IF),
        select(0),
        request(Command::WRITE, write_body(0, &[7; 3 * 4096])),
        // No buffer sets the flag.
        fsctl(CtlCode::FSCTL_SET_SPARSE, &[], 0),
        // FILE_ZERO_DATA_INFORMATION: the middle block becomes a hole.
        fsctl(CtlCode::FSCTL_SET_ZERO_DATA, &le(&[4096, 8192], &[8, 8]), 0),
        // BeyondFinalZero before FileOffset.
        fsctl(CtlCode::FSCTL_SET_ZERO_DATA, &le(&[8192, 4096], &[8, 8]), 0),
        // Two ranges of 16 bytes: room for both, then for one only.
        fsctl(
            CtlCode::FSCTL_QUERY_ALLOCATED_RANGES,
            &le(&[0, 3 * 4096], &[8, 8]),
            32,
        ),
        fsctl(
            CtlCode::FSCTL_QUERY_ALLOCATED_RANGES,
            &le(&[0, 3 * 4096], &[8, 8]),
            16,
        ),
        // Only the hole is asked about: no range, whatever the room.
        fsctl(
            CtlCode::FSCTL_QUERY_ALLOCATED_RANGES,
            &le(&[4096, 4096], &[8, 8]),
            0,
        ),
    ]);
    assert_eq!(
        ioctls(&run(ops)),
        [
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::INVALID_PARAMETER,
            NtStatus::SUCCESS,
            NtStatus::BUFFER_TOO_SMALL,
            NtStatus::SUCCESS,
        ]
    );
}

#[test]
fn opaque_reparse_points_are_kept_by_tag() {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    ops.extend([
        create("dir\\file.txt", CreateDisposition::OPEN),
        select(0),
        fsctl(CtlCode::FSCTL_GET_REPARSE_POINT, &[], 1024),
        // Tags 0 and 1 are reserved.
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &reparse_with_guid(1, b"x"),
            0,
        ),
        // The length field must say what follows.
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &reparse(DEDUP, b"data")[..9],
            0,
        ),
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &reparse(DEDUP, b"data"),
            0,
        ),
        fsctl(CtlCode::FSCTL_GET_REPARSE_POINT, &[], 1024),
        // Too small for the 12-byte buffer.
        fsctl(CtlCode::FSCTL_GET_REPARSE_POINT, &[], 8),
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &reparse(DEDUP + 1, b"data"),
            0,
        ),
        // A delete names the tag and carries no data.
        fsctl(
            CtlCode::FSCTL_DELETE_REPARSE_POINT,
            &reparse(DEDUP, b"x"),
            0,
        ),
        fsctl(CtlCode::FSCTL_DELETE_REPARSE_POINT, &reparse(DEDUP, b""), 0),
        fsctl(CtlCode::FSCTL_GET_REPARSE_POINT, &[], 1024),
    ]);
    assert_eq!(
        ioctls(&run(ops)),
        [
            NtStatus::NOT_A_REPARSE_POINT,
            NtStatus::IO_REPARSE_TAG_INVALID,
            NtStatus::IO_REPARSE_DATA_INVALID,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::BUFFER_TOO_SMALL,
            NtStatus::IO_REPARSE_TAG_MISMATCH,
            NtStatus::IO_REPARSE_DATA_INVALID,
            NtStatus::SUCCESS,
            NtStatus::NOT_A_REPARSE_POINT,
        ]
    );
}

#[test]
fn symlinks_stay_inside_the_share() {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    ops.extend([
        create("dir\\link", CreateDisposition::CREATE),
        select(0),
        // From dir\, one level up is the share root and two are outside it.
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &symlink("..\\..\\etc\\passwd"),
            0,
        ),
        fsctl(CtlCode::FSCTL_SET_REPARSE_POINT, &symlink("\\etc"), 0),
        fsctl(CtlCode::FSCTL_SET_REPARSE_POINT, &symlink("file.txt"), 0),
        fsctl(CtlCode::FSCTL_GET_REPARSE_POINT, &[], 1024),
        // The link now leads to dir\file.txt.
        create("dir\\link", CreateDisposition::OPEN),
        // A file with data is no link placeholder.
        create("dir\\full", CreateDisposition::CREATE),
        select(2),
        request(Command::WRITE, write_body(0, b"data")),
        fsctl(CtlCode::FSCTL_SET_REPARSE_POINT, &symlink("file.txt"), 0),
    ]);
    let summary = run(ops);
    assert_eq!(
        ioctls(&summary),
        [
            NtStatus::ACCESS_DENIED,
            NtStatus::ACCESS_DENIED,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::ACCESS_DENIED,
        ]
    );
    let creates: Vec<NtStatus> = summary
        .responses
        .iter()
        .filter(|(c, _)| *c == Command::CREATE)
        .map(|&(_, s)| s)
        .collect();
    assert_eq!(creates, [NtStatus::SUCCESS; 3]);
}

/// A target is resolved through the links already in the share, not lexically (issue 16 item
/// 10): `dir\e\s` leads to the share root, so `s\..` is the share's parent however many
/// components the spelling shows, while a target that only passes through the root stays in.
#[test]
fn symlink_targets_are_resolved_through_the_links_there() {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    ops.extend([
        request(
            Command::CREATE,
            create_body(
                "dir\\e",
                ALL_ACCESS,
                CreateDisposition::CREATE,
                CreateOptions::DIRECTORY_FILE,
            ),
        ),
        create("dir\\e\\s", CreateDisposition::CREATE),
        select(1),
        fsctl(CtlCode::FSCTL_SET_REPARSE_POINT, &symlink("..\\.."), 0),
        create("dir\\e\\t", CreateDisposition::CREATE),
        select(2),
        fsctl(CtlCode::FSCTL_SET_REPARSE_POINT, &symlink("s\\..\\x"), 0),
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &symlink("s\\..\\..\\dir\\file.txt"),
            0,
        ),
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &symlink("s\\dir\\e\\s\\.."),
            0,
        ),
        // Climbing out of what does not exist proves nothing.
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &symlink("missing\\..\\..\\x"),
            0,
        ),
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &symlink("s\\dir\\file.txt"),
            0,
        ),
        // The link leads to dir\file.txt.
        create("dir\\e\\t", CreateDisposition::OPEN),
    ]);
    let summary = run(ops);
    assert_eq!(
        ioctls(&summary),
        [
            NtStatus::SUCCESS,
            NtStatus::ACCESS_DENIED,
            NtStatus::ACCESS_DENIED,
            NtStatus::ACCESS_DENIED,
            NtStatus::ACCESS_DENIED,
            NtStatus::SUCCESS,
        ]
    );
    assert!(!summary.saw(Command::CREATE, NtStatus::OBJECT_NAME_NOT_FOUND));
}

/// A FILE_FULL_EA_INFORMATION list of one EA.
fn ea_list(name: &[u8], value: &[u8]) -> Vec<u8> {
    body(|w| {
        let mut list = FullEaListEncoder::new(w, usize::MAX);
        assert!(list.push(
            w,
            &FullEa {
                flags: EaFlags::empty(),
                name,
                value,
            },
        ));
    })
}

/// A CREATE of a new file carrying the EA buffer create context `eas`.
fn create_with_eas(name: &str, eas: &[u8]) -> Op {
    let mut chain = Vec::new();
    CreateContext::encode_chain(
        &[CreateContext::EaBuffer(eas)],
        &mut Writer::new(&mut chain),
    );
    let name: Vec<u8> = name.encode_utf16().flat_map(u16::to_le_bytes).collect();
    request(
        Command::CREATE,
        body(|w| {
            CreateRequest {
                security_flags: 0,
                requested_oplock_level: OplockLevel::NONE,
                impersonation_level: ImpersonationLevel::IMPERSONATION,
                smb_create_flags: 0,
                desired_access: ALL_ACCESS,
                file_attributes: 0,
                share_access: ShareAccess::READ | ShareAccess::WRITE | ShareAccess::DELETE,
                create_disposition: CreateDisposition::CREATE,
                create_options: CreateOptions::NON_DIRECTORY_FILE,
                name: &name,
                contexts: CreateContexts::parse(&chain).unwrap(),
            }
            .encode(w);
        }),
    )
}

/// The reparse data the server keeps in `user.SmbReparse` cannot be written or read as an EA
/// by any path that reaches EAs (SET_INFO, the EA buffer of a CREATE, QUERY_INFO), in any
/// spelling: written, it would forge a reparse point (an absolute symlink) without the checks
/// of FSCTL_SET_REPARSE_POINT.
#[test]
fn reparse_data_is_no_ea() {
    let absolute_link = {
        let name: Vec<u8> = "\\??\\C:\\Windows"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        let n = name.len() as u64;
        let mut data = le(&[0, n, n, n, 0], &[2, 2, 2, 2, 4]);
        data.extend_from_slice(&name);
        data.extend_from_slice(&name);
        reparse(SYMLINK, &data)
    };
    let full_ea = FileInformationClass::FILE_FULL_EA_INFORMATION.0;
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    ops.extend([
        create("dir\\file.txt", CreateDisposition::OPEN),
        select(0),
        request(
            Command::SET_INFO,
            set_info_body(full_ea, &ea_list(b"SmbReparse", &absolute_link)),
        ),
        request(
            Command::SET_INFO,
            set_info_body(full_ea, &ea_list(b"SMBREPARSE", &absolute_link)),
        ),
        fsctl(CtlCode::FSCTL_GET_REPARSE_POINT, &[], 1024),
        create_with_eas("dir\\forged", &ea_list(b"SmbReparse", &absolute_link)),
        create("dir\\forged", CreateDisposition::OPEN),
        // Reparse data set the proper way is not listed as an EA either.
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &reparse(DEDUP, b"data"),
            0,
        ),
        request(
            Command::QUERY_INFO,
            query_info_body(InfoType::FILE, full_ea, 4096),
        ),
    ]);
    let summary = run(ops);
    let statuses = |command| -> Vec<NtStatus> {
        summary
            .responses
            .iter()
            .filter(|(c, _)| *c == command)
            .map(|&(_, s)| s)
            .collect()
    };
    assert_eq!(statuses(Command::SET_INFO), [NtStatus::ACCESS_DENIED; 2]);
    assert_eq!(
        statuses(Command::IOCTL),
        [NtStatus::NOT_A_REPARSE_POINT, NtStatus::SUCCESS]
    );
    assert_eq!(
        statuses(Command::CREATE),
        [
            NtStatus::SUCCESS,
            NtStatus::ACCESS_DENIED,
            NtStatus::OBJECT_NAME_NOT_FOUND
        ]
    );
    assert_eq!(statuses(Command::QUERY_INFO), [NtStatus::NO_EAS_ON_FILE]);
}

#[test]
fn server_side_copy_needs_a_key_of_this_session() {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    // SRV_COPYCHUNK_COPY with a key no open has, and one chunk.
    let mut copy = vec![0u8; 24];
    copy.extend(le(&[1, 0, 0, 0, 100, 0], &[4, 4, 8, 8, 4, 4]));
    ops.extend([
        create("dir\\file.txt", CreateDisposition::OPEN),
        select(0),
        // SRV_REQUEST_RESUME_KEY needs room for its 32 bytes.
        fsctl(CtlCode::FSCTL_SRV_REQUEST_RESUME_KEY, &[], 16),
        fsctl(CtlCode::FSCTL_SRV_REQUEST_RESUME_KEY, &[], 32),
        fsctl(CtlCode::FSCTL_SRV_COPYCHUNK_WRITE, &copy, 12),
        // Shorter than its header.
        fsctl(CtlCode::FSCTL_SRV_COPYCHUNK_WRITE, &copy[..20], 12),
    ]);
    assert_eq!(
        ioctls(&run(ops)),
        [
            NtStatus::INVALID_PARAMETER,
            NtStatus::SUCCESS,
            NtStatus::OBJECT_NAME_NOT_FOUND,
            NtStatus::INVALID_PARAMETER,
        ]
    );
}

#[test]
fn controls_answered_as_ntfs_answers_them() {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    ops.extend([
        create("dir\\file.txt", CreateDisposition::OPEN),
        select(0),
        // An IOCTL that is no FSCTL.
        request(
            Command::IOCTL,
            ioctl_body(CtlCode::FSCTL_GET_COMPRESSION, &[], 2, IoctlFlags::empty()),
        ),
        fsctl(CtlCode::FSCTL_GET_COMPRESSION, &[], 2),
        // COMPRESSION_FORMAT_NONE is what the file is; LZNT1 is not offered.
        fsctl(CtlCode::FSCTL_SET_COMPRESSION, &[0, 0], 0),
        fsctl(CtlCode::FSCTL_SET_COMPRESSION, &[2, 0], 0),
        fsctl(CtlCode::FSCTL_CREATE_OR_GET_OBJECT_ID, &[], 64),
        fsctl(CtlCode::FSCTL_SET_OBJECT_ID, &[0; 64], 0),
        fsctl(CtlCode::FSCTL_GET_INTEGRITY_INFORMATION, &[], 16),
        fsctl(CtlCode::FSCTL_SRV_ENUMERATE_SNAPSHOTS, &[], 16),
        fsctl(CtlCode::FSCTL_SRV_READ_HASH, &[], 64),
        fsctl_without_open(CtlCode::FSCTL_QUERY_NETWORK_INTERFACE_INFO, 65536),
        // Trim two ranges (FILE_LEVEL_TRIM: Key, NumRanges, then the ranges).
        fsctl(
            CtlCode::FSCTL_FILE_LEVEL_TRIM,
            &le(&[0, 2, 0, 4, 100, 4], &[4, 4, 8, 8, 8, 8]),
            4,
        ),
    ]);
    assert_eq!(
        ioctls(&run(ops)),
        [
            NtStatus::NOT_SUPPORTED,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::NOT_SUPPORTED,
            NtStatus::SUCCESS,
            NtStatus::PRIVILEGE_NOT_HELD,
            NtStatus::INVALID_DEVICE_REQUEST,
            NtStatus::NOT_SUPPORTED,
            NtStatus::NOT_SUPPORTED,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
        ]
    );
}

#[test]
fn network_interfaces_are_for_smb3() {
    let mut ops = connected(&[Dialect::SMB2_1]);
    ops.push(fsctl_without_open(
        CtlCode::FSCTL_QUERY_NETWORK_INTERFACE_INFO,
        65536,
    ));
    assert_eq!(ioctls(&run(ops)), [NtStatus::NOT_SUPPORTED]);
}
