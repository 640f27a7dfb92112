//! Scripts of whole client sessions, the seed corpus of the `server` fuzz target: every dialect
//! negotiated, NTLM logons that succeed and fail, and a session that works on files the way
//! smbclient does (tree connect, create, write, read, flush, query and set information, list a
//! directory, rename, close, disconnect, log off), plus compounds and encrypted requests. The
//! tests check that each seed reaches the state it is meant to reach, so the fuzzer starts
//! from deep inside the server.

use smb3d_dtyp::AccessMask;
use smb3d_smb2::Command;
use smb3d_smb2::close::{CloseFlags, CloseRequest};
use smb3d_smb2::create::{
    CreateContexts, CreateDisposition, CreateOptions, CreateRequest, ImpersonationLevel,
    OplockLevel, ShareAccess,
};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::flush::FlushRequest;
use smb3d_smb2::ioctl::{CtlCode, IoctlFlags, IoctlRequest, ValidateNegotiateInfoRequest};
use smb3d_smb2::negotiate::{
    Capabilities, Cipher, Dialect, HashAlgorithm, NegotiateContext, NegotiateRequest, SecurityMode,
    SigningAlgorithm,
};
use smb3d_smb2::query_directory::{QueryDirectoryFlags, QueryDirectoryRequest};
use smb3d_smb2::query_info::{InfoType, QueryInfoFlags, QueryInfoRequest};
use smb3d_smb2::read::{Channel, ReadFlags, ReadRequest};
use smb3d_smb2::set_info::SetInfoRequest;
use smb3d_smb2::tree_connect::{TreeConnectFlags, TreeConnectRequest};
use smb3d_smb2::write::{WriteFlags, WriteRequest};
use smb3d_wire::{Guid, Writer};

use crate::harness::SHARE_UNC;
use crate::packet::body;
use crate::script::{LoginFlags, LoginSpec, Op, RequestSpec, SpecFlags};

/// The body of the commands that carry only StructureSize 4 and a reserved field (ECHO,
/// LOGOFF, TREE_DISCONNECT, CANCEL).
const RESERVED_ONLY: [u8; 4] = [4, 0, 0, 0];

fn utf16(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    smb3d_wire::encode_utf16le(s, &mut out);
    out
}

fn request(command: Command, body: Vec<u8>) -> Op {
    Op::Request(RequestSpec::new(command, body))
}

/// The capabilities a Windows client asks for (MS-SMB2 2.2.3), except persistent handles, which
/// the server then grants on continuous-availability shares.
pub const CLIENT_CAPABILITIES: Capabilities = Capabilities::DFS
    .union(Capabilities::LEASING)
    .union(Capabilities::LARGE_MTU)
    .union(Capabilities::MULTI_CHANNEL)
    .union(Capabilities::DIRECTORY_LEASING)
    .union(Capabilities::ENCRYPTION);

/// A NEGOTIATE offering `dialects`; with 3.1.1, the contexts Windows sends (SHA-512 preauth,
/// the four ciphers, AES-GMAC and AES-CMAC signing).
pub fn negotiate(dialects: &[Dialect]) -> Op {
    request(Command::NEGOTIATE, negotiate_body(dialects))
}

/// The body of [`negotiate`].
pub fn negotiate_body(dialects: &[Dialect]) -> Vec<u8> {
    let salt = [0x5a; 32];
    let contexts = if dialects.contains(&Dialect::SMB3_1_1) {
        vec![
            NegotiateContext::PreauthIntegrity {
                hash_algorithms: vec![HashAlgorithm::SHA512],
                salt: &salt,
            },
            NegotiateContext::Encryption {
                ciphers: vec![
                    Cipher::AES128_GCM,
                    Cipher::AES128_CCM,
                    Cipher::AES256_GCM,
                    Cipher::AES256_CCM,
                ],
            },
            NegotiateContext::Signing {
                algorithms: vec![SigningAlgorithm::AES_GMAC, SigningAlgorithm::AES_CMAC],
            },
        ]
    } else {
        Vec::new()
    };
    body(|w| {
        NegotiateRequest {
            security_mode: SecurityMode::SIGNING_ENABLED,
            capabilities: CLIENT_CAPABILITIES,
            client_guid: Guid([0x11; 16]),
            dialects: dialects.to_vec(),
            contexts,
        }
        .encode(w);
    })
}

/// A logon as the test user, bare NTLMSSP with a MIC.
pub fn login() -> Op {
    Op::Login(LoginSpec {
        security_mode: 1,
        ..LoginSpec::default()
    })
}

/// A TREE_CONNECT body for `path` (`\\\\server\\share`).
pub fn tree_connect_body(path: &str) -> Vec<u8> {
    body(|w| {
        TreeConnectRequest {
            flags: TreeConnectFlags::empty(),
            path: path.into(),
            contexts: None,
        }
        .encode(w);
    })
}

/// TREE_CONNECT to `path`, signed: an authenticated 3.1.1 session must sign it (MS-SMB2
/// 3.3.5.7), and the no-security provider accepts any signature.
pub fn tree_connect(path: &str) -> Op {
    Op::Request(
        RequestSpec::new(Command::TREE_CONNECT, tree_connect_body(path)).with(SpecFlags::SIGNED),
    )
}

/// A CREATE body for `name`.
pub fn create_body(
    name: &str,
    access: AccessMask,
    disposition: CreateDisposition,
    options: CreateOptions,
) -> Vec<u8> {
    let name = utf16(name);
    body(|w| {
        CreateRequest {
            security_flags: 0,
            requested_oplock_level: OplockLevel::NONE,
            impersonation_level: ImpersonationLevel::IMPERSONATION,
            smb_create_flags: 0,
            desired_access: access,
            file_attributes: 0x80,
            share_access: ShareAccess::READ
                .union(ShareAccess::WRITE)
                .union(ShareAccess::DELETE),
            create_disposition: disposition,
            create_options: options,
            name: &name,
            contexts: CreateContexts::default(),
        }
        .encode(w);
    })
}

/// A READ body (the interpreter puts the current open's FileId in).
pub fn read_body(offset: u64, length: u32) -> Vec<u8> {
    body(|w| {
        ReadRequest {
            padding: 0x50,
            flags: ReadFlags::empty(),
            length,
            offset,
            file_id: FileId::ANY,
            minimum_count: 0,
            channel: Channel::NONE,
            remaining_bytes: 0,
            channel_info: &[],
        }
        .encode(w);
    })
}

/// A WRITE body.
pub fn write_body(offset: u64, data: &[u8]) -> Vec<u8> {
    body(|w| {
        WriteRequest {
            offset,
            file_id: FileId::ANY,
            channel: Channel::NONE,
            remaining_bytes: 0,
            flags: WriteFlags::empty(),
            data,
            data_range: 0..0,
            channel_info: &[],
        }
        .encode(w);
    })
}

/// A QUERY_INFO body for a file or file-system class.
pub fn query_info_body(info_type: InfoType, class: u8, output: u32) -> Vec<u8> {
    body(|w| {
        QueryInfoRequest {
            info_type,
            file_info_class: class,
            output_buffer_length: output,
            input: &[],
            additional_information: if info_type == InfoType::SECURITY {
                7
            } else {
                0
            },
            flags: QueryInfoFlags::empty(),
            file_id: FileId::ANY,
        }
        .encode(w);
    })
}

/// A SET_INFO body for a file class.
pub fn set_info_body(class: u8, buffer: &[u8]) -> Vec<u8> {
    body(|w| {
        SetInfoRequest {
            info_type: InfoType::FILE,
            file_info_class: class,
            buffer,
            additional_information: 0,
            file_id: FileId::ANY,
        }
        .encode(w);
    })
}

/// A QUERY_DIRECTORY body listing `pattern` in `class`.
pub fn query_directory_body(class: u8, pattern: &str) -> Vec<u8> {
    let pattern = utf16(pattern);
    body(|w| {
        QueryDirectoryRequest {
            file_information_class: class,
            flags: QueryDirectoryFlags::RESTART_SCANS,
            file_index: 0,
            file_id: FileId::ANY,
            file_name: &pattern,
            output_buffer_length: 65536,
        }
        .encode(w);
    })
}

/// A CLOSE body.
pub fn close_body() -> Vec<u8> {
    body(|w| {
        CloseRequest {
            flags: CloseFlags::POSTQUERY_ATTRIB,
            file_id: FileId::ANY,
        }
        .encode(w);
    })
}

fn flush_body() -> Vec<u8> {
    body(|w| {
        FlushRequest {
            file_id: FileId::ANY,
        }
        .encode(w)
    })
}

/// FSCTL_VALIDATE_NEGOTIATE_INFO as a 3.0 client sends it after a NEGOTIATE of `dialects`.
fn validate_negotiate_body(dialects: &[Dialect]) -> Vec<u8> {
    let mut input = Vec::new();
    ValidateNegotiateInfoRequest {
        capabilities: CLIENT_CAPABILITIES,
        guid: Guid([0x11; 16]),
        security_mode: SecurityMode::SIGNING_ENABLED,
        dialects: dialects.to_vec(),
    }
    .encode(&mut Writer::new(&mut input));
    body(|w| {
        IoctlRequest {
            ctl_code: CtlCode::FSCTL_VALIDATE_NEGOTIATE_INFO,
            file_id: FileId::ANY,
            input: &input,
            max_input_response: 0,
            output: &[],
            max_output_response: 24,
            flags: IoctlFlags::IS_FSCTL,
        }
        .encode(w);
    })
}

/// An FSCTL body for the current open (or FileId 0xFFFF.. with [`SpecFlags::RAW_FILE_ID`]).
fn fsctl_body(ctl_code: CtlCode, input: &[u8], max_output: u32) -> Vec<u8> {
    body(|w| {
        IoctlRequest {
            ctl_code,
            file_id: FileId::ANY,
            input,
            max_input_response: 0,
            output: &[],
            max_output_response: max_output,
            flags: IoctlFlags::IS_FSCTL,
        }
        .encode(w);
    })
}

/// A RENAME (FILE_RENAME_INFORMATION_TYPE_2) buffer naming `target`.
pub fn rename_buffer(target: &str) -> Vec<u8> {
    let name = utf16(target);
    let mut out = vec![0u8; 8];
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&u32::try_from(name.len()).unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&name);
    out
}

const READ_ONLY: AccessMask = AccessMask(0x0012_0089);
const ALL_ACCESS: AccessMask = AccessMask(0x001F_01FF);

/// Negotiate, log on and connect to the share with `dialects`.
pub fn connected(dialects: &[Dialect]) -> Vec<Op> {
    vec![negotiate(dialects), login(), tree_connect(SHARE_UNC)]
}

/// A session working on files as smbclient does: ends with everything closed and logged off.
pub fn file_session(dialects: &[Dialect]) -> Vec<Op> {
    let mut ops = connected(dialects);
    ops.extend([
        request(
            Command::CREATE,
            create_body(
                "dir\\new.txt",
                ALL_ACCESS,
                CreateDisposition::OVERWRITE_IF,
                CreateOptions::NON_DIRECTORY_FILE,
            ),
        ),
        request(Command::WRITE, write_body(0, b"hello, fuzzer\n")),
        request(Command::WRITE, write_body(1 << 20, b"far")),
        request(Command::READ, read_body(0, 4096)),
        request(Command::FLUSH, flush_body()),
        request(
            Command::QUERY_INFO,
            query_info_body(InfoType::FILE, 18, 4096),
        ),
        request(
            Command::QUERY_INFO,
            query_info_body(InfoType::FILE, 22, 4096),
        ),
        request(
            Command::QUERY_INFO,
            query_info_body(InfoType::FILESYSTEM, 5, 4096),
        ),
        request(
            Command::QUERY_INFO,
            query_info_body(InfoType::SECURITY, 0, 4096),
        ),
        request(Command::SET_INFO, set_info_body(20, &5u64.to_le_bytes())),
        request(
            Command::SET_INFO,
            set_info_body(10, &rename_buffer("dir\\renamed.txt")),
        ),
        request(Command::CLOSE, close_body()),
        request(
            Command::CREATE,
            create_body(
                "dir",
                READ_ONLY,
                CreateDisposition::OPEN,
                CreateOptions::DIRECTORY_FILE,
            ),
        ),
        request(Command::QUERY_DIRECTORY, query_directory_body(37, "*")),
        request(Command::QUERY_DIRECTORY, query_directory_body(3, "<.TXT")),
        request(Command::CLOSE, close_body()),
        request(Command::TREE_DISCONNECT, RESERVED_ONLY.to_vec()),
        request(Command::LOGOFF, RESERVED_ONLY.to_vec()),
    ]);
    ops
}

/// CREATE, READ and CLOSE as one related compound, then the same after a CLOSE in the chain
/// (the READ must fail with STATUS_FILE_CLOSED).
pub fn compound_session() -> Vec<Op> {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    let create = RequestSpec::new(
        Command::CREATE,
        create_body(
            "dir\\file.txt",
            READ_ONLY,
            CreateDisposition::OPEN,
            CreateOptions::NON_DIRECTORY_FILE,
        ),
    );
    let related = |command, body| RequestSpec::new(command, body).with(SpecFlags::RELATED);
    ops.push(Op::Compound(vec![
        create.clone(),
        related(Command::READ, read_body(0, 100)),
        related(Command::CLOSE, close_body()),
    ]));
    ops.push(Op::Compound(vec![
        create,
        related(Command::CLOSE, close_body()),
        related(Command::READ, read_body(0, 100)),
    ]));
    ops.push(Op::Compound(vec![
        RequestSpec::new(Command::TREE_DISCONNECT, RESERVED_ONLY.to_vec()),
        related(
            Command::CREATE,
            create_body(
                "dir\\file.txt",
                READ_ONLY,
                CreateDisposition::OPEN,
                CreateOptions::empty(),
            ),
        ),
    ]));
    ops.push(Op::Compound(vec![
        RequestSpec::new(Command::ECHO, RESERVED_ONLY.to_vec()),
        RequestSpec::new(Command::LOGOFF, RESERVED_ONLY.to_vec()),
        related(Command::ECHO, RESERVED_ONLY.to_vec()),
    ]));
    ops
}

/// An encrypted 3.1.1 session: every request after the logon in a transform header.
pub fn sealed_session() -> Vec<Op> {
    let mut ops = vec![negotiate(&[Dialect::SMB3_1_1]), login()];
    let sealed = |command, body| Op::Sealed(RequestSpec::new(command, body));
    ops.extend([
        sealed(Command::TREE_CONNECT, tree_connect_body(SHARE_UNC)),
        sealed(
            Command::CREATE,
            create_body(
                "dir\\file.txt",
                READ_ONLY,
                CreateDisposition::OPEN,
                CreateOptions::NON_DIRECTORY_FILE,
            ),
        ),
        sealed(Command::READ, read_body(0, 64)),
        sealed(Command::CLOSE, close_body()),
        sealed(Command::LOGOFF, RESERVED_ONLY.to_vec()),
    ]);
    ops
}

/// Logons of every kind on one connection: wrong password, anonymous, SPNEGO with and without
/// MIC, re-authentication, a binding request.
pub fn logon_variants() -> Vec<Op> {
    let login_with = |flags: LoginFlags| {
        Op::Login(LoginSpec {
            flags,
            setup_flags: 0,
            security_mode: 1,
        })
    };
    vec![
        negotiate(&[Dialect::SMB2_1, Dialect::SMB3_0_2, Dialect::SMB3_1_1]),
        login_with(LoginFlags::WRONG_PASSWORD),
        login_with(LoginFlags::ANONYMOUS),
        login_with(LoginFlags::SPNEGO),
        login_with(LoginFlags::SPNEGO.union(LoginFlags::NO_MIC)),
        login_with(LoginFlags::REAUTH),
        Op::Login(LoginSpec {
            flags: LoginFlags::empty(),
            setup_flags: 1,
            security_mode: 1,
        }),
        tree_connect("\\\\testkit\\IPC$"),
        tree_connect("\\\\testkit\\nosuch"),
        tree_connect(SHARE_UNC),
    ]
}

/// Paths that try to leave the share or break the name rules, opened one after another.
pub fn hostile_names() -> Vec<Op> {
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    for name in [
        "..\\outside",
        "dir\\..\\..\\outside",
        "escape",
        "escape\\x",
        "inside\\file.txt",
        "loop",
        "dir\\file.txt:stream",
        "dir\\file.txt::$DATA",
        "dir\\con",
        "dir\\file.txt.",
        "dir\\file.txt ",
        "\\dir",
        "dir\\a\u{0}b",
    ] {
        ops.push(request(
            Command::CREATE,
            create_body(
                name,
                READ_ONLY,
                CreateDisposition::OPEN,
                CreateOptions::empty(),
            ),
        ));
    }
    ops
}

/// A 3.0.2 session that validates its negotiate, then one whose validation does not match.
pub fn validate_negotiate() -> Vec<Op> {
    let dialects = [Dialect::SMB3_0, Dialect::SMB3_0_2];
    let mut ops = connected(&dialects);
    let ioctl = |dialects: &[Dialect]| {
        Op::Request(
            RequestSpec::new(Command::IOCTL, validate_negotiate_body(dialects))
                .with(SpecFlags::RAW_FILE_ID),
        )
    };
    ops.push(ioctl(&dialects));
    ops.push(ioctl(&[Dialect::SMB2_0_2]));
    ops
}

/// The DCE/RPC bind to srvsvc that `smbclient -L` sends (captured against Samba 4.17).
const SRVSVC_BIND: &str = "05000b03100000004800000001000000b810b810000000000100000000000100\
    c84f324b7016d30112785a47bf6ee18803000000045d888aeb1cc9119fe808002b10486002000000";
/// A bind to wkssvc: the srvsvc one with wkssvc's interface (6bffd098-a112-3610-9833-46c3f87e345a
/// version 1.0).
const WKSSVC_BIND: &str = "05000b03100000004800000001000000b810b810000000000100000000000100\
    98d0ff6b12a11036983346c3f87e345a01000000045d888aeb1cc9119fe808002b10486002000000";
/// Its NetrShareEnum level 1 request, from the same capture.
const SHARE_ENUM: &str = "05000003100000005c000000020000004400000000000f00000002000a000000\
    000000000a0000003100320037002e0030002e0030002e0031000000010000000100000004000200000000000000\
    0000ffffffff0800020000000000";

/// Bytes from hex digits; anything else (spaces, line breaks) is skipped.
pub fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text
        .bytes()
        .filter(u8::is_ascii_hexdigit)
        .map(|d| match d {
            b'0'..=b'9' => d - b'0',
            _ => (d | 0x20) - b'a' + 10,
        })
        .collect();
    digits
        .chunks_exact(2)
        .map(|p| p.iter().fold(0, |acc, d| acc << 4 | d))
        .collect()
}

/// FSCTL_PIPE_WAIT's input (MS-FSCC 2.3.49) for `name`, without a timeout.
fn pipe_wait_input(name: &str) -> Vec<u8> {
    let name = utf16(name);
    let mut input = 0i64.to_le_bytes().to_vec();
    input.extend_from_slice(&u32::try_from(name.len()).unwrap_or(0).to_le_bytes());
    input.extend_from_slice(&[0, 0]);
    input.extend_from_slice(&name);
    input
}

/// Named pipes on IPC$ as `smbclient -L` and rpcclient use them, then their edges: short reads
/// of a message, peeking, pipe waits, a protocol error ending the association, a closed pipe,
/// and a read waiting on an empty pipe until the logoff closes it.
pub fn pipe_session() -> Vec<Op> {
    let pipe_access = AccessMask(0x0002_019f);
    let open = |name: &str| {
        request(
            Command::CREATE,
            create_body(
                name,
                pipe_access,
                CreateDisposition::OPEN,
                CreateOptions::empty(),
            ),
        )
    };
    let raw =
        |command, body| Op::Request(RequestSpec::new(command, body).with(SpecFlags::RAW_FILE_ID));
    let mut bad_version = hex(SHARE_ENUM);
    if let Some(version) = bad_version.first_mut() {
        *version = 4;
    }
    vec![
        negotiate(&[Dialect::SMB3_1_1]),
        login(),
        tree_connect("\\\\testkit\\IPC$"),
        open("srvsvc"),
        request(
            Command::IOCTL,
            fsctl_body(CtlCode::FSCTL_PIPE_TRANSCEIVE, &hex(SRVSVC_BIND), 4280),
        ),
        request(Command::WRITE, write_body(0, &hex(SHARE_ENUM))),
        request(
            Command::IOCTL,
            fsctl_body(CtlCode::FSCTL_PIPE_PEEK, &[], 16),
        ),
        request(Command::READ, read_body(0, 20)),
        request(
            Command::IOCTL,
            fsctl_body(CtlCode::FSCTL_PIPE_PEEK, &[], 4096),
        ),
        request(Command::READ, read_body(0, 4280)),
        request(Command::QUERY_INFO, query_info_body(InfoType::FILE, 5, 24)),
        request(Command::QUERY_INFO, query_info_body(InfoType::FILE, 4, 40)),
        request(Command::FLUSH, flush_body()),
        request(Command::SET_INFO, set_info_body(20, &5u64.to_le_bytes())),
        raw(
            Command::IOCTL,
            fsctl_body(CtlCode::FSCTL_PIPE_WAIT, &pipe_wait_input("srvsvc"), 0),
        ),
        raw(
            Command::IOCTL,
            fsctl_body(CtlCode::FSCTL_PIPE_WAIT, &pipe_wait_input("netlogon"), 0),
        ),
        request(
            Command::IOCTL,
            fsctl_body(CtlCode::FSCTL_SRV_REQUEST_RESUME_KEY, &[], 32),
        ),
        // rpc_vers 4: a fault, then the association is gone.
        request(Command::WRITE, write_body(0, &bad_version)),
        request(Command::READ, read_body(0, 4280)),
        request(Command::READ, read_body(0, 4280)),
        request(Command::WRITE, write_body(0, &hex(SHARE_ENUM))),
        request(Command::CLOSE, close_body()),
        request(Command::READ, read_body(0, 4280)),
        open("netlogon"),
        open("\\PIPE\\wkssvc"),
        // A read on the empty pipe goes async; the client's write completes it.
        request(Command::READ, read_body(0, 4280)),
        request(Command::WRITE, write_body(0, &hex(WKSSVC_BIND))),
        // Cancelled by MessageId.
        request(Command::READ, read_body(0, 4280)),
        Op::Request(
            RequestSpec::new(Command::CANCEL, RESERVED_ONLY.to_vec())
                .with(SpecFlags::REUSE_MESSAGE_ID),
        ),
        request(Command::READ, read_body(0, 4280)),
        request(Command::LOGOFF, RESERVED_ONLY.to_vec()),
    ]
}

/// Little-endian fields of the given widths, for FSCTL inputs.
fn fields(values: &[(u64, usize)]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&(v, n)| v.to_le_bytes().into_iter().take(n))
        .collect()
}

/// A REPARSE_DATA_BUFFER (MS-FSCC 2.1.2.2) with a Microsoft tag.
fn reparse_buffer(tag: u32, data: &[u8]) -> Vec<u8> {
    let mut out = fields(&[
        (u64::from(tag), 4),
        (u64::try_from(data.len()).unwrap_or(0), 2),
        (0, 2),
    ]);
    out.extend_from_slice(data);
    out
}

/// The file-system FSCTLs on a file of the share (MS-FSCC 2.3): sparse flag, zeroing,
/// allocated ranges, an opaque reparse point set, read and deleted, a symlink placeholder
/// turned into a link, resume keys and a copy with a key of no open, trim, object ids,
/// compression and network interfaces.
pub fn fsctl_session() -> Vec<Op> {
    let fsctl = |code, input: &[u8], max_output| {
        request(Command::IOCTL, fsctl_body(code, input, max_output))
    };
    let range = |offset: u64, len: u64| fields(&[(offset, 8), (len, 8)]);
    let name: Vec<u8> = utf16("file.txt");
    let n = u64::try_from(name.len()).unwrap_or(0);
    let mut link = fields(&[(0, 2), (n, 2), (n, 2), (n, 2), (1, 4)]);
    link.extend_from_slice(&name);
    link.extend_from_slice(&name);
    let mut copy = vec![0u8; 24];
    copy.extend(fields(&[(1, 4), (0, 4), (0, 8), (0, 8), (100, 4), (0, 4)]));
    let mut ops = connected(&[Dialect::SMB3_1_1]);
    ops.extend([
        request(
            Command::CREATE,
            create_body(
                "dir\\sparse",
                ALL_ACCESS,
                CreateDisposition::OVERWRITE_IF,
                CreateOptions::NON_DIRECTORY_FILE,
            ),
        ),
        request(Command::WRITE, write_body(0, &[7; 3 * 4096])),
        fsctl(CtlCode::FSCTL_SET_SPARSE, &[], 0),
        fsctl(CtlCode::FSCTL_SET_ZERO_DATA, &range(4096, 8192), 0),
        fsctl(
            CtlCode::FSCTL_QUERY_ALLOCATED_RANGES,
            &range(0, 3 * 4096),
            64,
        ),
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &reparse_buffer(0x8000_0013, b"data"),
            0,
        ),
        fsctl(CtlCode::FSCTL_GET_REPARSE_POINT, &[], 1024),
        fsctl(
            CtlCode::FSCTL_DELETE_REPARSE_POINT,
            &reparse_buffer(0x8000_0013, &[]),
            0,
        ),
        fsctl(CtlCode::FSCTL_SRV_REQUEST_RESUME_KEY, &[], 32),
        fsctl(CtlCode::FSCTL_SRV_COPYCHUNK_WRITE, &copy, 12),
        fsctl(
            CtlCode::FSCTL_FILE_LEVEL_TRIM,
            &fields(&[(0, 4), (1, 4), (0, 8), (4096, 8)]),
            4,
        ),
        fsctl(CtlCode::FSCTL_CREATE_OR_GET_OBJECT_ID, &[], 64),
        fsctl(CtlCode::FSCTL_GET_COMPRESSION, &[], 2),
        fsctl(CtlCode::FSCTL_SET_COMPRESSION, &[2, 0], 0),
        request(Command::CLOSE, close_body()),
        request(
            Command::CREATE,
            create_body(
                "dir\\link",
                ALL_ACCESS,
                CreateDisposition::CREATE,
                CreateOptions::NON_DIRECTORY_FILE,
            ),
        ),
        fsctl(
            CtlCode::FSCTL_SET_REPARSE_POINT,
            &reparse_buffer(0xA000_000C, &link),
            0,
        ),
        fsctl(CtlCode::FSCTL_GET_REPARSE_POINT, &[], 1024),
        request(Command::CLOSE, close_body()),
        Op::Request(
            RequestSpec::new(
                Command::IOCTL,
                fsctl_body(CtlCode::FSCTL_QUERY_NETWORK_INTERFACE_INFO, &[], 65536),
            )
            .with(SpecFlags::RAW_FILE_ID),
        ),
        request(Command::LOGOFF, RESERVED_ONLY.to_vec()),
    ]);
    ops
}

/// Every seed, named.
pub fn all() -> Vec<(&'static str, Vec<Op>)> {
    let mut seeds = vec![
        ("negotiate-202", vec![negotiate(&[Dialect::SMB2_0_2])]),
        ("negotiate-210", vec![negotiate(&[Dialect::SMB2_1])]),
        ("negotiate-300", vec![negotiate(&[Dialect::SMB3_0])]),
        ("negotiate-302", vec![negotiate(&[Dialect::SMB3_0_2])]),
        (
            "negotiate-all",
            vec![negotiate(&[
                Dialect::SMB2_0_2,
                Dialect::SMB2_1,
                Dialect::SMB3_0,
                Dialect::SMB3_0_2,
                Dialect::SMB3_1_1,
            ])],
        ),
        ("session-210", file_session(&[Dialect::SMB2_1])),
        ("session-302", file_session(&[Dialect::SMB3_0_2])),
        ("session-311", file_session(&[Dialect::SMB3_1_1])),
        ("compound", compound_session()),
        ("sealed", sealed_session()),
        ("logons", logon_variants()),
        ("names", hostile_names()),
        ("validate-negotiate", validate_negotiate()),
        ("pipes", pipe_session()),
        ("fsctls", fsctl_session()),
    ];
    let mut reconnecting = file_session(&[Dialect::SMB3_1_1]);
    reconnecting.truncate(5);
    reconnecting.push(Op::Reconnect);
    reconnecting.extend(connected(&[Dialect::SMB2_0_2]));
    seeds.push(("reconnect", reconnecting));
    seeds
}
