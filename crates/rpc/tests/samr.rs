//! The samr pipe end to end: bind, SamrUnicodeChangePasswordUser2 as impacket sends it, and
//! the hostile variants (wrong proof, missing or malformed parameters, truncated stubs, other
//! opnums, anonymous callers), against a directory that checks with `smb3d-auth` and counts
//! the changes it was asked for.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{SambaDirectory, anonymous, bench, drain};
use smb3d_auth::ntlm::crypto::nt_hash;
use smb3d_auth::samr::PasswordChange;
use smb3d_dtyp::NtStatus;
use smb3d_rpc::pdu::{
    Bind, ContextElement, Fault, Header, PacketType, PfcFlags, Request, SyntaxId,
};
use smb3d_rpc::{
    CallerInfo, Directory, PasswordChangeRequest, PipeEndpoint, ServerInfo, ShareEntry, Sid,
    SidType,
};
use smb3d_wire::Guid;

const RPC_X_BAD_STUB_DATA: u32 = 0x6f7;
const NCA_S_OP_RNG_ERROR: u32 = 0x1c01_0002;
const OPNUM: u16 = 55;

/// One account, bench with password "old"; counts the changes that passed the check.
#[derive(Default)]
struct Users {
    changes: AtomicUsize,
}

impl Directory for Users {
    fn server_info(&self) -> ServerInfo {
        SambaDirectory.server_info()
    }
    fn shares(&self) -> Vec<ShareEntry> {
        Vec::new()
    }
    fn lookup_name(&self, _: &str) -> Option<(Sid, SidType, String)> {
        None
    }
    fn lookup_sid(&self, _: &Sid) -> Option<(String, SidType, String)> {
        None
    }
    fn change_password(&self, request: &PasswordChangeRequest) -> NtStatus {
        if request.user != "bench" {
            return NtStatus::WRONG_PASSWORD;
        }
        let change = PasswordChange {
            new_password_encrypted: request.new_password_encrypted,
            old_nt_hash_encrypted: request.old_nt_hash_encrypted,
        };
        match change.new_nt_hash(&nt_hash("old")) {
            Ok(new) if *new == *nt_hash("new") => {
                self.changes.fetch_add(1, Ordering::SeqCst);
                NtStatus::SUCCESS
            }
            _ => NtStatus::WRONG_PASSWORD,
        }
    }
}

fn vector(name: &str) -> Vec<u8> {
    let text = include_str!("captures/samr_vectors.txt");
    common::unhex(
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap(),
    )
}

fn samr_interface() -> SyntaxId {
    let b = common::unhex("12345778 1234 abcd ef00 0123456789ac");
    SyntaxId {
        uuid: Guid([
            b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9], b[10], b[11], b[12], b[13],
            b[14], b[15],
        ]),
        major: 1,
        minor: 0,
    }
}

fn bound(users: &Arc<Users>, caller: CallerInfo) -> PipeEndpoint {
    let mut pipe = PipeEndpoint::open("\\PIPE\\samr", users.clone(), caller).unwrap();
    let bind = Bind {
        max_xmit_frag: 4280,
        max_recv_frag: 4280,
        assoc_group_id: 0,
        contexts: vec![ContextElement {
            context_id: 0,
            abstract_syntax: samr_interface(),
            transfer_syntaxes: vec![SyntaxId::NDR],
        }],
        auth_verifier: &[],
    };
    pipe.write(&bind.to_pdu(PacketType::BIND, PfcFlags::SINGLE, 1))
        .unwrap();
    let ack = drain(&mut pipe);
    assert_eq!(
        Header::decode(&ack[0]).unwrap().packet_type,
        PacketType::BIND_ACK
    );
    pipe
}

enum Answer {
    Status(u32),
    Fault(u32),
}

fn call(pipe: &mut PipeEndpoint, opnum: u16, stub: &[u8]) -> Answer {
    let request = Request {
        alloc_hint: u32::try_from(stub.len()).unwrap(),
        context_id: 0,
        opnum,
        object: None,
        stub,
        auth_verifier: &[],
    };
    pipe.write(&request.to_pdu(PfcFlags::SINGLE, 2)).unwrap();
    let answer = drain(pipe);
    assert_eq!(answer.len(), 1);
    let header = Header::decode(&answer[0]).unwrap();
    if header.packet_type == PacketType::FAULT {
        return Answer::Fault(Fault::decode(&header, &answer[0]).unwrap().status);
    }
    assert_eq!(header.packet_type, PacketType::RESPONSE);
    let stub = &answer[0][24..];
    assert_eq!(
        stub.len(),
        4,
        "SamrUnicodeChangePasswordUser2 answers a status only"
    );
    Answer::Status(u32::from_le_bytes(stub.try_into().unwrap()))
}

fn status(answer: Answer) -> u32 {
    match answer {
        Answer::Status(s) => s,
        Answer::Fault(f) => panic!("fault {f:#x}"),
    }
}

fn fault(answer: Answer) -> u32 {
    match answer {
        Answer::Fault(f) => f,
        Answer::Status(s) => panic!("status {s:#x}"),
    }
}

/// Offsets in impacket's stub: the server name "\0" takes bytes 0..28, the user name's
/// RPC_UNICODE_STRING starts at 28 ("bench" and padding up to 60), then the referent ids and
/// the encrypted password and hash.
const USER_NAME_LEN_AT: usize = 28;
const NEW_PASSWORD_AT: usize = 64;
const OLD_HASH_AT: usize = NEW_PASSWORD_AT + 516 + 4;

#[test]
fn impacket_change_succeeds_for_anonymous_and_authenticated_callers() {
    let stub = vector("IMPACKET_OPNUM55");
    assert_eq!(
        &stub[NEW_PASSWORD_AT..NEW_PASSWORD_AT + 516],
        vector("NEW_WITH_OLD")
    );
    assert_eq!(&stub[OLD_HASH_AT..OLD_HASH_AT + 16], vector("OLD_WITH_NEW"));
    for caller in [anonymous(), bench()] {
        let users = Arc::new(Users::default());
        let mut pipe = bound(&users, caller);
        assert_eq!(status(call(&mut pipe, OPNUM, &stub)), NtStatus::SUCCESS.0);
        assert_eq!(users.changes.load(Ordering::SeqCst), 1);
    }
}

#[test]
fn wrong_proofs_and_unknown_users_are_a_wrong_password() {
    let users = Arc::new(Users::default());
    let mut pipe = bound(&users, anonymous());
    let good = vector("IMPACKET_OPNUM55");
    let mut wrong_hash = good.clone();
    wrong_hash[OLD_HASH_AT] ^= 1;
    let mut wrong_password = good.clone();
    wrong_password[NEW_PASSWORD_AT + 515] ^= 0x80;
    let mut other_user = good.clone();
    let at = good
        .windows(10)
        .position(|w| w == b"b\0e\0n\0c\0h\0")
        .unwrap();
    other_user[at] = b'x';
    for stub in [wrong_hash, wrong_password, other_user] {
        assert_eq!(
            status(call(&mut pipe, OPNUM, &stub)),
            NtStatus::WRONG_PASSWORD.0
        );
    }
    assert_eq!(users.changes.load(Ordering::SeqCst), 0);
    // The association lives on after refusals.
    assert_eq!(status(call(&mut pipe, OPNUM, &good)), NtStatus::SUCCESS.0);
}

#[test]
fn missing_nt_pair_is_an_invalid_parameter() {
    let users = Arc::new(Users::default());
    let mut pipe = bound(&users, anonymous());
    let good = vector("IMPACKET_OPNUM55");
    // NULL NewPasswordEncryptedWithOldNt: its referent id and the 516 bytes go.
    let mut no_password = good[..NEW_PASSWORD_AT - 4].to_vec();
    no_password.extend_from_slice(&[0; 4]);
    no_password.extend_from_slice(&good[NEW_PASSWORD_AT + 516..]);
    // NULL OldNtOwfPasswordEncryptedWithNewNt.
    let mut no_hash = good[..OLD_HASH_AT - 4].to_vec();
    no_hash.extend_from_slice(&[0; 4]);
    no_hash.extend_from_slice(&good[OLD_HASH_AT + 16..]);
    for stub in [no_password, no_hash] {
        assert_eq!(
            status(call(&mut pipe, OPNUM, &stub)),
            NtStatus::INVALID_PARAMETER.0
        );
    }
    assert_eq!(users.changes.load(Ordering::SeqCst), 0);
}

#[test]
fn malformed_stubs_fault_without_a_change() {
    let users = Arc::new(Users::default());
    let mut pipe = bound(&users, anonymous());
    let good = vector("IMPACKET_OPNUM55");
    let mut odd_length = good.clone();
    odd_length[USER_NAME_LEN_AT] = 9;
    let mut length_over_maximum = good.clone();
    length_over_maximum[USER_NAME_LEN_AT] = 12;
    let mut counts_disagree = good.clone();
    counts_disagree[USER_NAME_LEN_AT + 8] = 6;
    let mut trailing = good.clone();
    trailing.extend_from_slice(&[0; 4]);
    let mut cases = vec![odd_length, length_over_maximum, counts_disagree, trailing];
    for len in [
        0,
        3,
        20,
        40,
        NEW_PASSWORD_AT + 100,
        OLD_HASH_AT + 8,
        good.len() - 1,
    ] {
        cases.push(good[..len].to_vec());
    }
    for stub in cases {
        assert_eq!(fault(call(&mut pipe, OPNUM, &stub)), RPC_X_BAD_STUB_DATA);
    }
    assert_eq!(users.changes.load(Ordering::SeqCst), 0);
}

#[test]
fn other_opnums_are_out_of_range() {
    let users = Arc::new(Users::default());
    let mut pipe = bound(&users, bench());
    let good = vector("IMPACKET_OPNUM55");
    // SamrConnect5, SamrUnicodeChangePasswordUser3 and …User4 are not served: the password
    // change needs none of them.
    for opnum in [0, 54, 63, 64, 73] {
        assert_eq!(fault(call(&mut pipe, opnum, &good)), NCA_S_OP_RNG_ERROR);
    }
    assert_eq!(users.changes.load(Ordering::SeqCst), 0);
}

/// A directory without a user database refuses every change.
#[test]
fn directories_without_users_refuse() {
    assert_eq!(
        SambaDirectory.change_password(&PasswordChangeRequest {
            user: "bench".into(),
            new_password_encrypted: [0; 516],
            old_nt_hash_encrypted: [0; 16],
        }),
        NtStatus::ACCESS_DENIED
    );
}
