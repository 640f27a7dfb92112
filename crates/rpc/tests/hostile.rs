//! Hostile and unusual input: truncated and lying PDUs, huge counts, aliased pointers,
//! interleaved fragments, calls before bind or on unbound contexts, reassembly limits, and the
//! message-mode read and backlog behaviour the server relies on.

mod common;

use std::sync::Arc;

use common::{SambaDirectory, anonymous, bench, drain, open};
use smb3d_rpc::pdu::{
    Bind, ContextElement, Fault, Header, PacketType, PfcFlags, Request, SyntaxId, nak_reason,
};
use smb3d_rpc::{
    CallerInfo, Directory, MAX_FRAGMENT_LEN, PipeEndpoint, PipeError, ServerInfo, ShareEntry,
    ShareKind, Sid, SidType,
};
use smb3d_wire::Guid;

const NCA_S_OP_RNG_ERROR: u32 = 0x1c01_0002;
const NCA_S_UNKNOWN_IF: u32 = 0x1c01_0003;
const NCA_S_PROTO_ERROR: u32 = 0x1c01_000b;
const NCA_S_FAULT_INVALID_TAG: u32 = 0x1c00_0006;
const NCA_S_FAULT_CONTEXT_MISMATCH: u32 = 0x1c00_001a;
const RPC_X_BAD_STUB_DATA: u32 = 0x6f7;
const ACCESS_DENIED: u32 = 5;

fn guid(text: &str) -> Guid {
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    let b = common::unhex(&hex);
    Guid([
        b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9], b[10], b[11], b[12], b[13],
        b[14], b[15],
    ])
}

fn interface(pipe: &str) -> SyntaxId {
    match pipe {
        "srvsvc" => SyntaxId {
            uuid: guid("4b324fc8-1670-01d3-1278-5a47bf6ee188"),
            major: 3,
            minor: 0,
        },
        "wkssvc" => SyntaxId {
            uuid: guid("6bffd098-a112-3610-9833-46c3f87e345a"),
            major: 1,
            minor: 0,
        },
        _ => SyntaxId {
            uuid: guid("12345778-1234-abcd-ef00-0123456789ab"),
            major: 0,
            minor: 0,
        },
    }
}

fn bind_pdu(pipe: &str, frag: u16) -> Vec<u8> {
    Bind {
        max_xmit_frag: frag,
        max_recv_frag: frag,
        assoc_group_id: 0,
        contexts: vec![ContextElement {
            context_id: 0,
            abstract_syntax: interface(pipe),
            transfer_syntaxes: vec![SyntaxId::NDR],
        }],
        auth_verifier: &[],
    }
    .to_pdu(PacketType::BIND, PfcFlags::SINGLE, 1)
}

fn request_pdu(call_id: u32, context_id: u16, opnum: u16, stub: &[u8], flags: PfcFlags) -> Vec<u8> {
    Request {
        alloc_hint: u32::try_from(stub.len()).unwrap(),
        context_id,
        opnum,
        object: None,
        stub,
        auth_verifier: &[],
    }
    .to_pdu(flags, call_id)
}

/// A pipe bound to its interface with the given fragment size.
fn bound(pipe: &str, caller: CallerInfo, frag: u16) -> PipeEndpoint {
    let mut p = open(pipe, caller);
    p.write(&bind_pdu(pipe, frag)).unwrap();
    let ack = drain(&mut p);
    assert_eq!(ack.len(), 1);
    assert_eq!(header(&ack[0]).packet_type, PacketType::BIND_ACK);
    p
}

fn header(pdu: &[u8]) -> Header {
    Header::decode(pdu).unwrap()
}

fn fault_status(pdu: &[u8]) -> u32 {
    let h = header(pdu);
    assert_eq!(
        h.packet_type,
        PacketType::FAULT,
        "not a fault: {}",
        common::hex(pdu)
    );
    Fault::decode(&h, pdu).unwrap().status
}

/// The stub of a (possibly fragmented) response.
fn response_stub(pdus: &[Vec<u8>]) -> Vec<u8> {
    let mut stub = Vec::new();
    for (i, pdu) in pdus.iter().enumerate() {
        let h = header(pdu);
        assert_eq!(h.packet_type, PacketType::RESPONSE, "{}", common::hex(pdu));
        assert_eq!(h.flags.contains(PfcFlags::FIRST_FRAG), i == 0);
        assert_eq!(h.flags.contains(PfcFlags::LAST_FRAG), i == pdus.len() - 1);
        stub.extend_from_slice(&pdu[24..]);
    }
    stub
}

fn last_u32(stub: &[u8]) -> u32 {
    u32::from_le_bytes(stub[stub.len() - 4..].try_into().unwrap())
}

/// A conformant varying string, padded to 4 bytes.
fn ndr_string(s: &str) -> Vec<u8> {
    let units: Vec<u16> = s.encode_utf16().chain([0]).collect();
    let n = u32::try_from(units.len()).unwrap();
    let mut b = Vec::new();
    for v in [n, 0, n] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for u in units {
        b.extend_from_slice(&u.to_le_bytes());
    }
    while b.len() % 4 != 0 {
        b.push(0);
    }
    b
}

fn server_get_info(level: u32) -> Vec<u8> {
    let mut stub = 0x0002_0000u32.to_le_bytes().to_vec();
    stub.extend(ndr_string("\\\\srv"));
    stub.extend_from_slice(&level.to_le_bytes());
    stub
}

fn share_enum(level: u32, preferred: u32, resume: Option<u32>) -> Vec<u8> {
    let mut stub = 0u32.to_le_bytes().to_vec();
    for v in [level, level, 0x0002_0000, 0, 0, preferred] {
        stub.extend_from_slice(&v.to_le_bytes());
    }
    match resume {
        Some(h) => {
            stub.extend_from_slice(&0x0002_0004u32.to_le_bytes());
            stub.extend_from_slice(&h.to_le_bytes());
        }
        None => stub.extend_from_slice(&0u32.to_le_bytes()),
    }
    stub
}

/// Sends a call on context 0, in as many fragments as the stub needs, and reads the answer.
fn call(pipe: &mut PipeEndpoint, call_id: u32, opnum: u16, stub: &[u8]) -> Vec<Vec<u8>> {
    let room = usize::from(MAX_FRAGMENT_LEN) - 24;
    let count = stub.len().div_ceil(room).max(1);
    for i in 0..count {
        let chunk = &stub[(i * room).min(stub.len())..((i + 1) * room).min(stub.len())];
        let mut flags = PfcFlags::empty();
        if i == 0 {
            flags |= PfcFlags::FIRST_FRAG;
        }
        if i == count - 1 {
            flags |= PfcFlags::LAST_FRAG;
        }
        pipe.write(&request_pdu(call_id, 0, opnum, chunk, flags))
            .unwrap();
    }
    drain(pipe)
}

#[test]
fn endpoints_can_move_between_threads() {
    fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<PipeEndpoint>();
    send_and_sync::<PipeError>();
}

#[test]
fn unknown_pipes_do_not_open() {
    assert!(PipeEndpoint::open("netlogon", Arc::new(SambaDirectory), bench()).is_none());
    assert!(PipeEndpoint::open("", Arc::new(SambaDirectory), bench()).is_none());
}

#[test]
fn pdus_split_anywhere_give_the_same_answers() {
    let mut whole = bind_pdu("srvsvc", 4280);
    whole.extend(request_pdu(
        2,
        0,
        21,
        &server_get_info(101),
        PfcFlags::SINGLE,
    ));
    whole.extend(request_pdu(
        3,
        0,
        15,
        &share_enum(1, u32::MAX, None),
        PfcFlags::SINGLE,
    ));
    let mut reference = open("srvsvc", bench());
    reference.write(&whole).unwrap();
    let expected = drain(&mut reference);
    assert_eq!(expected.len(), 3);
    for cut in 0..whole.len() {
        let mut p = open("srvsvc", bench());
        p.write(&whole[..cut]).unwrap();
        p.write(&whole[cut..]).unwrap();
        let mut got = drain(&mut p);
        // Association group ids are per pipe.
        got[0][20..24].copy_from_slice(&expected[0][20..24]);
        assert_eq!(got, expected, "cut at {cut}");
    }
    let mut p = open("srvsvc", bench());
    for b in &whole {
        p.write(std::slice::from_ref(b)).unwrap();
    }
    assert_eq!(drain(&mut p).len(), 3);
}

#[test]
fn requests_before_bind_end_the_association() {
    for pdu in [
        request_pdu(1, 0, 21, &server_get_info(101), PfcFlags::SINGLE),
        Bind {
            max_xmit_frag: 4280,
            max_recv_frag: 4280,
            assoc_group_id: 0,
            contexts: vec![],
            auth_verifier: &[],
        }
        .to_pdu(PacketType::ALTER_CONTEXT, PfcFlags::SINGLE, 1),
    ] {
        let mut p = open("srvsvc", bench());
        p.write(&pdu).unwrap();
        let out = drain(&mut p);
        assert_eq!(out.len(), 1);
        assert_eq!(header(&out[0]).packet_type, PacketType::BIND_NAK);
        assert_eq!(
            u16::from_le_bytes([out[0][16], out[0][17]]),
            nak_reason::PROTOCOL_VERSION_NOT_SUPPORTED
        );
        assert!(p.is_disconnected());
        assert_eq!(
            p.write(&bind_pdu("srvsvc", 4280)),
            Err(PipeError::Disconnected)
        );
        assert!(p.read(100).is_empty());
    }
}

#[test]
fn frag_length_lies() {
    // Shorter than a header: nothing can be delimited.
    let mut p = bound("srvsvc", bench(), 4280);
    let mut pdu = request_pdu(2, 0, 21, &server_get_info(101), PfcFlags::SINGLE);
    pdu[8..10].copy_from_slice(&8u16.to_le_bytes());
    p.write(&pdu).unwrap();
    assert_eq!(fault_status(&drain(&mut p)[0]), NCA_S_PROTO_ERROR);
    assert!(p.is_disconnected());

    // Longer than a pipe fragment may be: refused before the bytes arrive.
    let mut p = bound("srvsvc", bench(), 4280);
    let mut pdu = request_pdu(2, 0, 21, &server_get_info(101), PfcFlags::SINGLE);
    pdu[8..10].copy_from_slice(&(MAX_FRAGMENT_LEN + 1).to_le_bytes());
    p.write(&pdu[..16]).unwrap();
    assert_eq!(fault_status(&drain(&mut p)[0]), NCA_S_PROTO_ERROR);

    // Longer than what was sent: the endpoint waits for the rest, then answers.
    let mut p = bound("srvsvc", bench(), 4280);
    let stub = server_get_info(101);
    let mut pdu = request_pdu(2, 0, 21, &stub, PfcFlags::SINGLE);
    let short = pdu.len() - 4;
    p.write(&pdu[..short]).unwrap();
    assert_eq!(p.queued(), 0);
    p.write(&pdu[short..]).unwrap();
    assert_eq!(last_u32(&response_stub(&drain(&mut p))), 0);

    // Shorter than the body claims: the bind's contexts run past the end.
    let mut p = open("srvsvc", bench());
    let mut bind = bind_pdu("srvsvc", 4280);
    bind.truncate(60);
    bind[8..10].copy_from_slice(&60u16.to_le_bytes());
    p.write(&bind).unwrap();
    assert_eq!(header(&drain(&mut p)[0]).packet_type, PacketType::BIND_NAK);

    // An auth_length beyond the PDU.
    let mut p = bound("srvsvc", bench(), 4280);
    pdu[10..12].copy_from_slice(&0x1000u16.to_le_bytes());
    p.write(&pdu).unwrap();
    assert_eq!(fault_status(&drain(&mut p)[0]), NCA_S_PROTO_ERROR);
}

#[test]
fn verifiers_are_refused() {
    // A request carrying a verifier on an unauthenticated association.
    let mut p = bound("srvsvc", bench(), 4280);
    let mut pdu = request_pdu(2, 0, 21, &server_get_info(101), PfcFlags::SINGLE);
    pdu.extend_from_slice(&[10, 2, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    let len = u16::try_from(pdu.len()).unwrap();
    pdu[8..10].copy_from_slice(&len.to_le_bytes());
    pdu[10..12].copy_from_slice(&8u16.to_le_bytes());
    p.write(&pdu).unwrap();
    assert_eq!(fault_status(&drain(&mut p)[0]), ACCESS_DENIED);
    assert!(p.is_disconnected());
}

#[test]
fn big_endian_peers_are_refused() {
    let mut p = open("srvsvc", bench());
    let mut bind = bind_pdu("srvsvc", 4280);
    bind[4] = 0;
    let len = u16::try_from(bind.len()).unwrap();
    bind[8..10].copy_from_slice(&len.to_be_bytes());
    p.write(&bind).unwrap();
    assert_eq!(header(&drain(&mut p)[0]).packet_type, PacketType::BIND_NAK);
    assert!(p.is_disconnected());
}

#[test]
fn unbound_contexts_and_opnums_fault_without_ending_the_association() {
    let mut p = bound("srvsvc", bench(), 4280);
    p.write(&request_pdu(
        2,
        7,
        21,
        &server_get_info(101),
        PfcFlags::SINGLE,
    ))
    .unwrap();
    let fault = &drain(&mut p)[0];
    assert_eq!(fault_status(fault), NCA_S_UNKNOWN_IF);
    assert!(header(fault).flags.contains(PfcFlags::DID_NOT_EXECUTE));
    assert_eq!(
        fault_status(&call(&mut p, 3, 99, &[])[0]),
        NCA_S_OP_RNG_ERROR
    );
    assert_eq!(
        fault_status(&call(&mut p, 4, 21, &[1, 2])[0]),
        RPC_X_BAD_STUB_DATA
    );
    assert_eq!(
        last_u32(&response_stub(&call(&mut p, 5, 21, &server_get_info(100)))),
        0
    );
    assert!(!p.is_disconnected());
}

#[test]
fn interleaved_fragments_of_different_calls() {
    let stub = server_get_info(101);
    let mut p = bound("srvsvc", bench(), 4280);
    p.write(&request_pdu(2, 0, 21, &stub[..8], PfcFlags::FIRST_FRAG))
        .unwrap();
    assert_eq!(p.queued(), 0);
    p.write(&request_pdu(3, 0, 21, &stub, PfcFlags::SINGLE))
        .unwrap();
    let out = drain(&mut p);
    assert_eq!(out.len(), 1);
    assert_eq!(
        header(&out[0]).call_id,
        2,
        "the call in progress is the one that fails"
    );
    assert_eq!(fault_status(&out[0]), NCA_S_PROTO_ERROR);
    assert!(p.is_disconnected());

    // A fragment of the same call with another opnum, or a second first fragment.
    for second in [
        request_pdu(2, 0, 16, &stub[8..], PfcFlags::LAST_FRAG),
        request_pdu(2, 0, 21, &stub[8..], PfcFlags::FIRST_FRAG),
    ] {
        let mut p = bound("srvsvc", bench(), 4280);
        p.write(&request_pdu(2, 0, 21, &stub[..8], PfcFlags::FIRST_FRAG))
            .unwrap();
        p.write(&second).unwrap();
        assert_eq!(fault_status(&drain(&mut p)[0]), NCA_S_PROTO_ERROR);
    }

    // Fragments of one call, with orphaned and cancel PDUs in between, make one call.
    let mut p = bound("srvsvc", bench(), 4280);
    p.write(&request_pdu(2, 0, 21, &stub[..8], PfcFlags::FIRST_FRAG))
        .unwrap();
    for ptype in [PacketType::ORPHANED, PacketType::CO_CANCEL] {
        p.write(&Header::new(ptype, PfcFlags::SINGLE, 2, 16).to_bytes())
            .unwrap();
    }
    p.write(&request_pdu(2, 0, 21, &stub[8..], PfcFlags::LAST_FRAG))
        .unwrap();
    assert_eq!(last_u32(&response_stub(&drain(&mut p))), 0);
}

#[test]
fn reassembly_is_bounded() {
    // An alloc_hint over 4 MiB is refused at the first fragment.
    let mut p = bound("srvsvc", bench(), 4280);
    let mut first = request_pdu(2, 0, 21, &[0; 8], PfcFlags::FIRST_FRAG);
    first[16..20].copy_from_slice(&(4 * 1024 * 1024 + 1u32).to_le_bytes());
    p.write(&first).unwrap();
    assert_eq!(fault_status(&drain(&mut p)[0]), ACCESS_DENIED);
    assert!(p.is_disconnected());

    // Exactly 4 MiB of stub is served (the call ignores what follows its parameters)...
    let mut stub = server_get_info(100);
    stub.resize(4 * 1024 * 1024, 0);
    let mut p = bound("srvsvc", bench(), 4280);
    let chunks: Vec<&[u8]> = stub.chunks(4256).collect();
    let mut wire = Vec::new();
    for (i, chunk) in chunks.iter().enumerate() {
        let mut flags = PfcFlags::empty();
        if i == 0 {
            flags |= PfcFlags::FIRST_FRAG;
        }
        if i == chunks.len() - 1 {
            flags |= PfcFlags::LAST_FRAG;
        }
        wire.extend(request_pdu(2, 0, 21, chunk, flags));
    }
    p.write(&wire).unwrap();
    assert_eq!(last_u32(&response_stub(&drain(&mut p))), 0);

    // ... one byte more is not.
    let mut p = bound("srvsvc", bench(), 4280);
    let cut = wire.len() - (24 + chunks[chunks.len() - 1].len());
    p.write(&wire[..cut]).unwrap();
    let last = chunks[chunks.len() - 1];
    let mut longer = last.to_vec();
    longer.push(0);
    p.write(&request_pdu(2, 0, 21, &longer, PfcFlags::LAST_FRAG))
        .unwrap();
    assert_eq!(fault_status(&drain(&mut p)[0]), ACCESS_DENIED);

    // A flood of empty fragments ends after 4,096.
    let mut p = bound("srvsvc", bench(), 4280);
    p.write(&request_pdu(2, 0, 21, &[], PfcFlags::FIRST_FRAG))
        .unwrap();
    let empty = request_pdu(2, 0, 21, &[], PfcFlags::empty());
    for _ in 1..4096 {
        p.write(&empty).unwrap();
    }
    assert_eq!(p.queued(), 0);
    p.write(&empty).unwrap();
    assert_eq!(fault_status(&drain(&mut p)[0]), NCA_S_PROTO_ERROR);
}

#[test]
fn pending_cancel_on_a_first_fragment() {
    let mut p = bound("srvsvc", bench(), 4280);
    p.write(&request_pdu(
        2,
        0,
        21,
        &server_get_info(101),
        PfcFlags::SINGLE | PfcFlags::PENDING_CANCEL,
    ))
    .unwrap();
    assert_eq!(fault_status(&drain(&mut p)[0]), 0x6bd);
    assert!(p.is_disconnected());
}

#[test]
fn object_uuids_are_accepted() {
    let mut p = bound("srvsvc", bench(), 4280);
    let stub = server_get_info(100);
    let pdu = Request {
        alloc_hint: 0,
        context_id: 0,
        opnum: 21,
        object: Some(Guid([9; 16])),
        stub: &stub,
        auth_verifier: &[],
    }
    .to_pdu(PfcFlags::SINGLE, 2);
    p.write(&pdu).unwrap();
    assert_eq!(last_u32(&response_stub(&drain(&mut p))), 0);
}

/// A directory with many long-named shares, for answers that need several fragments.
struct ManyShares(usize);

impl Directory for ManyShares {
    fn server_info(&self) -> ServerInfo {
        SambaDirectory.server_info()
    }
    fn shares(&self) -> Vec<ShareEntry> {
        (0..self.0)
            .map(|i| ShareEntry {
                name: format!("share-{i:04}-{}", "x".repeat(i % 40)),
                comment: format!("comment {i}"),
                kind: ShareKind::Disk,
                path: format!("C:\\srv\\share-{i}"),
                browseable: i % 7 != 3,
            })
            .collect()
    }
    fn lookup_name(&self, _: &str) -> Option<(Sid, SidType, String)> {
        None
    }
    fn lookup_sid(&self, _: &Sid) -> Option<(String, SidType, String)> {
        None
    }
}

fn many_shares_pipe(count: usize, frag: u16) -> PipeEndpoint {
    let mut p = PipeEndpoint::open("srvsvc", Arc::new(ManyShares(count)), bench()).unwrap();
    p.write(&bind_pdu("srvsvc", frag)).unwrap();
    drain(&mut p);
    p
}

#[test]
fn responses_are_fragmented_to_the_negotiated_size() {
    let mut small = many_shares_pipe(300, 2048);
    let fragments = call(&mut small, 2, 15, &share_enum(2, u32::MAX, None));
    assert!(fragments.len() > 10);
    let mut left = None;
    for f in &fragments {
        let h = header(f);
        assert!(f.len() <= 2048);
        assert_eq!(usize::from(h.frag_length), f.len());
        let hint = u32::from_le_bytes(f[16..20].try_into().unwrap());
        if let Some(l) = left {
            assert_eq!(hint, l);
        }
        left = Some(hint - u32::try_from(f.len() - 24).unwrap());
    }
    assert_eq!(left, Some(0));
    let mut large = many_shares_pipe(300, 4280);
    let whole = call(&mut large, 2, 15, &share_enum(2, u32::MAX, None));
    assert!(whole.iter().all(|f| f.len() <= 4280));
    assert!(whole.len() < fragments.len());
    assert_eq!(response_stub(&fragments), response_stub(&whole));
}

#[test]
fn reads_follow_message_boundaries() {
    let mut p = many_shares_pipe(300, 2048);
    p.write(&request_pdu(
        2,
        0,
        15,
        &share_enum(2, u32::MAX, None),
        PfcFlags::SINGLE,
    ))
    .unwrap();
    let messages = p.queued_messages();
    let total = p.queued();
    let first_len = p.pending();
    assert_eq!(first_len, 2048);
    let head = p.peek().to_vec();
    assert_eq!(head.len(), first_len);
    // A read shorter than the message leaves the rest for the next read (the server answers
    // STATUS_BUFFER_OVERFLOW while pending() is not zero).
    let a = p.read(100);
    assert_eq!(a.len(), 100);
    assert_eq!(p.pending(), first_len - 100);
    // Peeking shows the unread rest and consumes nothing.
    assert_eq!(p.peek(), &head[100..]);
    assert_eq!(p.pending(), first_len - 100);
    let b = p.read(10_000);
    assert_eq!(
        b.len(),
        first_len - 100,
        "a read never crosses into the next message"
    );
    assert_eq!(p.queued_messages(), messages - 1);
    assert_eq!(p.queued(), total - first_len);
    assert_eq!(p.read(0), Vec::<u8>::new());
    assert_eq!(p.pending(), 2048);
    assert_eq!(p.peek().len(), 2048);
}

#[test]
fn share_enumeration_pages_with_resume_handles() {
    let dir = ManyShares(50);
    let listed: Vec<String> = dir
        .shares()
        .into_iter()
        .filter(|s| s.browseable)
        .map(|s| s.name)
        .collect();
    let mut p = many_shares_pipe(50, 4280);
    let mut resume = 0u32;
    let mut seen = 0usize;
    let mut calls = 0;
    loop {
        calls += 1;
        let stub = response_stub(&call(&mut p, calls, 15, &share_enum(0, 200, Some(resume))));
        let count = usize::try_from(u32::from_le_bytes(stub[12..16].try_into().unwrap())).unwrap();
        assert!(count >= 1);
        let status = last_u32(&stub);
        let handle = u32::from_le_bytes(stub[stub.len() - 8..stub.len() - 4].try_into().unwrap());
        let total = u32::from_le_bytes(stub[stub.len() - 16..stub.len() - 12].try_into().unwrap());
        assert_eq!(usize::try_from(total).unwrap(), listed.len() - seen);
        seen += count;
        if status == 0 {
            assert_eq!(handle, 0);
            break;
        }
        assert_eq!(status, 234, "ERROR_MORE_DATA");
        assert_eq!(usize::try_from(handle).unwrap(), seen);
        resume = handle;
        assert!(calls < 100);
    }
    assert_eq!(seen, listed.len());
    assert!(calls > 2);
    // Unlisted shares never come back from enumeration but are found by name.
    let all = call(&mut p, 200, 15, &share_enum(0, u32::MAX, None));
    let names = String::from_utf16_lossy(
        &response_stub(&all)
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect::<Vec<_>>(),
    );
    assert!(names.contains("share-0002"));
    assert!(!names.contains("share-0003"));
    let mut stub = 0u32.to_le_bytes().to_vec();
    stub.extend(ndr_string("SHARE-0003-XXX"));
    stub.extend_from_slice(&1u32.to_le_bytes());
    let found = response_stub(&call(&mut p, 201, 16, &stub));
    assert_eq!(last_u32(&found), 0);
}

#[test]
fn share_levels_and_errors() {
    let mut p = bound("srvsvc", bench(), 4280);
    // SHARE_ENUM_UNION has no arm for 1005: the request cannot be unmarshalled.
    assert_eq!(
        fault_status(&call(&mut p, 2, 15, &share_enum(1005, u32::MAX, None))[0]),
        NCA_S_FAULT_INVALID_TAG
    );
    // 503 is in the union but not served.
    let stub = response_stub(&call(&mut p, 3, 15, &share_enum(503, u32::MAX, None)));
    assert_eq!(last_u32(&stub), 124);
    // The level and the switch must agree.
    let mut bad = share_enum(1, u32::MAX, None);
    bad[8..12].copy_from_slice(&2u32.to_le_bytes());
    assert_eq!(
        fault_status(&call(&mut p, 4, 15, &bad)[0]),
        RPC_X_BAD_STUB_DATA
    );
    // Input arrays are not accepted.
    let mut with_array = share_enum(1, u32::MAX, None);
    with_array[20..24].copy_from_slice(&0x0002_0008u32.to_le_bytes());
    assert_eq!(
        fault_status(&call(&mut p, 5, 15, &with_array)[0]),
        RPC_X_BAD_STUB_DATA
    );
}

#[test]
fn sticky_enumeration_has_the_configured_shares_only() {
    let mut p = bound("srvsvc", bench(), 4280);
    // Level 0: level, switch, container pointer, count, array pointer, count, one name
    // pointer per entry, then the names.
    let stub = response_stub(&call(&mut p, 2, 36, &share_enum(0, u32::MAX, None)));
    assert_eq!(last_u32(&stub), 0);
    assert_eq!(u32::from_le_bytes(stub[12..16].try_into().unwrap()), 1);
    let text = String::from_utf16_lossy(
        &stub
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect::<Vec<_>>(),
    );
    assert!(text.contains("share") && !text.contains("IPC$") && !text.contains("hidden"));
    // MS-SRVS 3.1.4.9 leaves out SHARE_INFO_501_CONTAINER.
    let stub = response_stub(&call(&mut p, 3, 36, &share_enum(501, u32::MAX, None)));
    assert_eq!(last_u32(&stub), 124);
    let stub = response_stub(&call(&mut p, 4, 15, &share_enum(501, u32::MAX, None)));
    assert_eq!(last_u32(&stub), 0);
}

#[test]
fn anonymous_callers_get_less() {
    let mut p = bound("srvsvc", anonymous(), 4280);
    let stub = response_stub(&call(&mut p, 2, 15, &share_enum(1, u32::MAX, None)));
    assert_eq!(last_u32(&stub), 0);
    for level in [2, 502] {
        let stub = response_stub(&call(&mut p, 3, 15, &share_enum(level, u32::MAX, None)));
        assert_eq!(last_u32(&stub), ACCESS_DENIED);
    }
    let stub = response_stub(&call(&mut p, 4, 21, &server_get_info(102)));
    assert_eq!(last_u32(&stub), ACCESS_DENIED);

    let mut w = bound("wkssvc", anonymous(), 4280);
    let mut wk = 0u32.to_le_bytes().to_vec();
    wk.extend_from_slice(&100u32.to_le_bytes());
    assert_eq!(last_u32(&response_stub(&call(&mut w, 2, 0, &wk))), 0);
    wk[4..8].copy_from_slice(&101u32.to_le_bytes());
    assert_eq!(
        last_u32(&response_stub(&call(&mut w, 3, 0, &wk))),
        ACCESS_DENIED
    );

    let mut l = bound("lsarpc", anonymous(), 4280);
    let stub = response_stub(&call(&mut l, 2, 44, &open_policy2(0x0200_0000)));
    assert_eq!(last_u32(&stub), 0xc000_0022);
    assert_eq!(&stub[..20], &[0; 20]);
}

fn open_policy2(access: u32) -> Vec<u8> {
    let mut stub = 0x0002_0000u32.to_le_bytes().to_vec();
    stub.extend(ndr_string("\\\\srv"));
    for v in [24u32, 0, 0, 0, 0, 0x0002_0004, 12] {
        stub.extend_from_slice(&v.to_le_bytes());
    }
    stub.extend_from_slice(&[2, 0, 1, 0]);
    stub.extend_from_slice(&access.to_le_bytes());
    stub
}

fn policy_handle(l: &mut PipeEndpoint, call_id: u32, access: u32) -> [u8; 20] {
    let stub = response_stub(&call(l, call_id, 44, &open_policy2(access)));
    assert_eq!(last_u32(&stub), 0);
    stub[..20].try_into().unwrap()
}

/// A LookupSids2 stub for `sids` SID pointers, all with `referent` as id, followed by
/// `bodies` copies of the Everyone SID.
fn lookup_sids2(handle: &[u8; 20], entries: u32, pointers: u32, bodies: usize) -> Vec<u8> {
    let mut stub = handle.to_vec();
    for v in [entries, 0x0002_0000, pointers] {
        stub.extend_from_slice(&v.to_le_bytes());
    }
    for _ in 0..pointers {
        stub.extend_from_slice(&0x0002_0004u32.to_le_bytes());
    }
    for _ in 0..bodies {
        stub.extend_from_slice(&1u32.to_le_bytes());
        stub.extend_from_slice(&[1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]);
    }
    for v in [0u32, 0] {
        stub.extend_from_slice(&v.to_le_bytes());
    }
    stub.extend_from_slice(&[1, 0, 0, 0]);
    for v in [0u32, 0, 2] {
        stub.extend_from_slice(&v.to_le_bytes());
    }
    stub
}

#[test]
fn lookup_counts_and_pointers_are_checked() {
    let mut l = bound("lsarpc", bench(), 4280);
    let h = policy_handle(&mut l, 2, 0x800);
    // Three SIDs, each pointer with the same referent id and one body each: fine.
    let stub = response_stub(&call(&mut l, 3, 57, &lookup_sids2(&h, 3, 3, 3)));
    assert_eq!(last_u32(&stub), 0);
    // Aliased pointers with a single body: the stub ends too soon.
    assert_eq!(
        fault_status(&call(&mut l, 4, 57, &lookup_sids2(&h, 3, 3, 1))[0]),
        RPC_X_BAD_STUB_DATA
    );
    // More entries than the [range] allows, a conformance that disagrees, a count the bytes
    // cannot hold.
    for (entries, pointers) in [(20_481, 20_481), (u32::MAX, 0), (3, 2)] {
        assert_eq!(
            fault_status(&call(&mut l, 5, 57, &lookup_sids2(&h, entries, pointers, 0))[0]),
            RPC_X_BAD_STUB_DATA,
            "{entries} {pointers}"
        );
    }
    let mut huge = lookup_sids2(&h, 20_480, 0, 0);
    huge[28..32].copy_from_slice(&20_480u32.to_le_bytes());
    assert_eq!(
        fault_status(&call(&mut l, 6, 57, &huge)[0]),
        RPC_X_BAD_STUB_DATA
    );
    // A NULL SID is an invalid parameter, not a fault.
    let mut null = lookup_sids2(&h, 1, 1, 0);
    null[32..36].copy_from_slice(&0u32.to_le_bytes());
    let stub = response_stub(&call(&mut l, 7, 57, &null));
    assert_eq!(last_u32(&stub), 0xc000_000d);
    // Names: 1,001 is over the [range]; 1,000 headers that are not there.
    for count in [1001u32, 1000] {
        let mut names = h.to_vec();
        names.extend_from_slice(&count.to_le_bytes());
        names.extend_from_slice(&count.to_le_bytes());
        names.extend_from_slice(&[0; 16]);
        assert_eq!(
            fault_status(&call(&mut l, 8, 14, &names)[0]),
            RPC_X_BAD_STUB_DATA
        );
    }
    assert!(!l.is_disconnected());
}

#[test]
fn policy_handles_are_per_pipe_and_checked() {
    let mut a = bound("lsarpc", bench(), 4280);
    let mut b = bound("lsarpc", bench(), 4280);
    let h = policy_handle(&mut a, 2, 0x800);
    // A handle from another pipe, a made-up one, and a closed one are context mismatches.
    assert_eq!(
        fault_status(&call(&mut b, 2, 57, &lookup_sids2(&h, 1, 1, 1))[0]),
        NCA_S_FAULT_CONTEXT_MISMATCH
    );
    assert_eq!(
        fault_status(&call(&mut a, 3, 0, &[0x55; 20])[0]),
        NCA_S_FAULT_CONTEXT_MISMATCH
    );
    let closed = response_stub(&call(&mut a, 4, 0, &h));
    assert_eq!(closed, [0u8; 24]);
    assert_eq!(
        fault_status(&call(&mut a, 5, 0, &h)[0]),
        NCA_S_FAULT_CONTEXT_MISMATCH
    );
    // Rights are enforced per handle: looking up needs POLICY_LOOKUP_NAMES, domain
    // information POLICY_VIEW_LOCAL_INFORMATION.
    let view = policy_handle(&mut a, 6, 0x1);
    let stub = response_stub(&call(&mut a, 7, 57, &lookup_sids2(&view, 1, 1, 1)));
    assert_eq!(last_u32(&stub), 0xc000_0022);
    let lookup = policy_handle(&mut a, 6, 0x800);
    for class in [3u16, 5, 6, 12] {
        let mut query = lookup.to_vec();
        query.extend_from_slice(&class.to_le_bytes());
        let stub = response_stub(&call(&mut a, 7, 46, &query));
        assert_eq!(stub, [0, 0, 0, 0, 0x22, 0, 0, 0xc0], "class {class}");
        let mut query = view.to_vec();
        query.extend_from_slice(&class.to_le_bytes());
        assert_eq!(last_u32(&response_stub(&call(&mut a, 7, 46, &query))), 0);
    }
    // Rights beyond what users get are refused; so is running out of handles.
    let stub = response_stub(&call(&mut a, 8, 44, &open_policy2(0x20)));
    assert_eq!(last_u32(&stub), 0xc000_0022);
    let mut opened = 2;
    loop {
        let stub = response_stub(&call(&mut a, 9, 44, &open_policy2(0x800)));
        if last_u32(&stub) != 0 {
            assert_eq!(last_u32(&stub), 0xc000_009a);
            break;
        }
        opened += 1;
        assert!(opened <= 64);
    }
    assert_eq!(opened, 64);
}

#[test]
fn lookup_sids3_and_names4_are_refused_on_pipes() {
    let mut l = bound("lsarpc", bench(), 4280);
    for opnum in [76, 77] {
        assert_eq!(fault_status(&call(&mut l, 2, opnum, &[])[0]), ACCESS_DENIED);
    }
    assert!(!l.is_disconnected());
}

#[test]
fn unread_answers_hold_back_further_requests() {
    let mut p = many_shares_pipe(2000, 4280);
    let request = request_pdu(2, 0, 15, &share_enum(2, u32::MAX, None), PfcFlags::SINGLE);
    let mut batch = Vec::new();
    for _ in 0..60 {
        batch.extend_from_slice(&request);
    }
    p.write(&batch).unwrap();
    let after_first = p.queued();
    assert!(after_first >= 8 * 1024 * 1024);
    assert_eq!(p.write(&request), Err(PipeError::Busy));
    // Reading lets the held-back requests run; every answer arrives in order.
    let mut answers = 0;
    let mut stub = Vec::new();
    while p.queued_messages() > 0 {
        let m = p.read(usize::MAX);
        stub.extend_from_slice(&m[24..]);
        if header(&m).flags.contains(PfcFlags::LAST_FRAG) {
            answers += 1;
            assert_eq!(last_u32(&stub), 0);
            stub.clear();
        }
    }
    assert_eq!(answers, 60);
    assert!(p.write(&request).is_ok());
}

#[test]
fn bind_negotiation_edges() {
    // A second bind is refused and ends the association.
    let mut p = bound("srvsvc", bench(), 4280);
    p.write(&bind_pdu("srvsvc", 4280)).unwrap();
    assert_eq!(header(&drain(&mut p)[0]).packet_type, PacketType::BIND_NAK);
    assert!(p.is_disconnected());

    // Too many presentation contexts: the ones beyond 64 are rejected.
    let contexts: Vec<ContextElement> = (0..90)
        .map(|id| ContextElement {
            context_id: id,
            abstract_syntax: interface("srvsvc"),
            transfer_syntaxes: vec![SyntaxId::NDR],
        })
        .collect();
    let bind = Bind {
        max_xmit_frag: 4280,
        max_recv_frag: 4280,
        assoc_group_id: 0,
        contexts,
        auth_verifier: &[],
    };
    let mut p = open("srvsvc", bench());
    p.write(&bind.to_pdu(PacketType::BIND, PfcFlags::SINGLE, 1))
        .unwrap();
    let ack_pdu = &drain(&mut p)[0];
    let ack = smb3d_rpc::pdu::BindAck::decode(&header(ack_pdu), ack_pdu).unwrap();
    assert_eq!(ack.results.iter().filter(|r| r.result == 0).count(), 64);
    assert_eq!(ack.results[64].reason, 3);
    assert_eq!(ack.secondary_address, "\\PIPE\\srvsvc");
    // Contexts beyond the limit stay unknown.
    p.write(&request_pdu(
        2,
        80,
        21,
        &server_get_info(100),
        PfcFlags::SINGLE,
    ))
    .unwrap();
    assert_eq!(fault_status(&drain(&mut p)[0]), NCA_S_UNKNOWN_IF);
    p.write(&request_pdu(
        3,
        63,
        21,
        &server_get_info(100),
        PfcFlags::SINGLE,
    ))
    .unwrap();
    assert_eq!(last_u32(&response_stub(&drain(&mut p))), 0);
}

#[test]
fn lsass_is_the_lsarpc_endpoint() {
    let mut p = open("\\PIPE\\LSASS", bench());
    p.write(&bind_pdu("lsarpc", 4280)).unwrap();
    let ack_pdu = &drain(&mut p)[0];
    let ack = smb3d_rpc::pdu::BindAck::decode(&header(ack_pdu), ack_pdu).unwrap();
    assert_eq!(ack.secondary_address, "\\PIPE\\lsass");
    assert_eq!(ack.results[0].result, 0);
}

#[test]
fn callers_see_live_directory_data() {
    use std::sync::Mutex;
    struct Changing(Mutex<usize>);
    impl Directory for Changing {
        fn server_info(&self) -> ServerInfo {
            SambaDirectory.server_info()
        }
        fn shares(&self) -> Vec<ShareEntry> {
            let mut n = self.0.lock().unwrap();
            *n += 1;
            ManyShares(*n).shares()
        }
        fn lookup_name(&self, _: &str) -> Option<(Sid, SidType, String)> {
            None
        }
        fn lookup_sid(&self, _: &Sid) -> Option<(String, SidType, String)> {
            None
        }
    }
    let mut p = PipeEndpoint::open("srvsvc", Arc::new(Changing(Mutex::new(0))), bench()).unwrap();
    p.write(&bind_pdu("srvsvc", 4280)).unwrap();
    drain(&mut p);
    let count = |stub: &[u8]| u32::from_le_bytes(stub[12..16].try_into().unwrap());
    let first = response_stub(&call(&mut p, 2, 15, &share_enum(0, u32::MAX, None)));
    let second = response_stub(&call(&mut p, 3, 15, &share_enum(0, u32::MAX, None)));
    assert_eq!((count(&first), count(&second)), (1, 2));
}
