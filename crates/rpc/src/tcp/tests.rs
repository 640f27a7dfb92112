use super::*;
use crate::epmapper::EPMAPPER;
use crate::pdu::{ContextElement, result};
use crate::witness::WITNESS;

/// A stand-in security package: "sealing" XORs with 0x5a, the signature is a keyed sum of
/// the signed bytes and the sequence number, so that any change shows.
struct Toy {
    seq_in: u32,
    seq_out: u32,
}

fn toy_signature(pdu: &[u8], seq: u32, dir: u8) -> [u8; SIGNATURE_LEN] {
    let mut sig = [dir; SIGNATURE_LEN];
    for (i, b) in pdu.iter().enumerate() {
        sig[i % SIGNATURE_LEN] = sig[i % SIGNATURE_LEN].wrapping_mul(31).wrapping_add(*b);
    }
    sig[..4].copy_from_slice(&seq.to_le_bytes());
    sig
}

impl PacketSecurity for Toy {
    fn unwrap(&mut self, pdu: &mut [u8], sealed: Range<usize>, signature: &[u8]) -> bool {
        for b in &mut pdu[sealed] {
            *b ^= 0x5a;
        }
        let ok = toy_signature(pdu, self.seq_in, 1) == signature;
        self.seq_in += 1;
        ok
    }
    fn wrap(&mut self, pdu: &mut [u8], sealed: Range<usize>) -> [u8; SIGNATURE_LEN] {
        let sig = toy_signature(pdu, self.seq_out, 2);
        for b in &mut pdu[sealed] {
            *b ^= 0x5a;
        }
        self.seq_out += 1;
        sig
    }
}

struct ToyAuth;

impl Authenticator for ToyAuth {
    fn challenge(&mut self, token: &[u8]) -> Option<Vec<u8>> {
        (token == b"NEGOTIATE").then(|| b"CHALLENGE".to_vec())
    }
    fn authenticate(&mut self, token: &[u8]) -> Option<(String, Box<dyn PacketSecurity>)> {
        (token == b"alice:right").then(|| {
            (
                "alice".to_owned(),
                Box::new(Toy {
                    seq_in: 0,
                    seq_out: 0,
                }) as Box<dyn PacketSecurity>,
            )
        })
    }
}

fn association() -> Association {
    Association::new(
        vec![EPMAPPER, WITNESS],
        4135,
        0x1234,
        Box::new(|| Box::new(ToyAuth)),
    )
}

fn bind_pdu(interface: SyntaxId, auth: Option<(u8, &[u8])>) -> Vec<u8> {
    let bind = Bind {
        max_xmit_frag: 5840,
        max_recv_frag: 5840,
        assoc_group_id: 0,
        contexts: vec![ContextElement {
            context_id: 0,
            abstract_syntax: interface,
            transfer_syntaxes: vec![SyntaxId::NDR],
        }],
        auth_verifier: &[],
    };
    let mut pdu = bind.to_pdu(PacketType::BIND, PfcFlags::SINGLE, 1);
    if let Some((level, token)) = auth {
        let trailer = AuthTrailer {
            auth_type: AUTH_TYPE_NTLMSSP,
            auth_level: level,
            pad_length: 0,
            context_id: 7,
        };
        append_verifier(&mut pdu, &trailer, token);
    }
    pdu
}

fn auth3_pdu(token: &[u8]) -> Vec<u8> {
    let mut pdu = vec![
        5, 0, 16, 3, 0x10, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
    ];
    let trailer = AuthTrailer {
        auth_type: AUTH_TYPE_NTLMSSP,
        auth_level: AUTH_LEVEL_PRIVACY,
        pad_length: 0,
        context_id: 7,
    };
    append_verifier(&mut pdu, &trailer, token);
    pdu
}

/// A request as a client at `level` sends it with the toy package (sequence `seq`).
fn sealed_request(
    stub: &[u8],
    opnum: u16,
    call_id: u32,
    level: u8,
    seq: u32,
    flags: PfcFlags,
) -> Vec<u8> {
    let hint = u32::try_from(stub.len()).unwrap();
    sealed_request_hinted(stub, opnum, call_id, level, seq, flags, hint)
}

fn sealed_request_hinted(
    stub: &[u8],
    opnum: u16,
    call_id: u32,
    level: u8,
    seq: u32,
    flags: PfcFlags,
    alloc_hint: u32,
) -> Vec<u8> {
    let mut pdu = Request {
        alloc_hint,
        context_id: 0,
        opnum,
        object: None,
        stub,
        auth_verifier: &[],
    }
    .to_pdu(flags, call_id);
    let pad = (16 - stub.len() % 16) % 16;
    pdu.resize(pdu.len() + pad, 0);
    let body = pdu.len();
    AuthTrailer {
        auth_type: AUTH_TYPE_NTLMSSP,
        auth_level: level,
        pad_length: u8::try_from(pad).unwrap(),
        context_id: 7,
    }
    .encode(&mut pdu);
    set_lengths(&mut pdu, SIGNATURE_LEN);
    let sig = toy_signature(&pdu, seq, 1);
    if level == AUTH_LEVEL_PRIVACY {
        for b in &mut pdu[24..body] {
            *b ^= 0x5a;
        }
    }
    pdu.extend_from_slice(&sig);
    pdu
}

fn established() -> Association {
    let mut a = association();
    let Outcome::Send(ack) = a.handle(&bind_pdu(WITNESS, Some((AUTH_LEVEL_PRIVACY, b"NEGOTIATE"))))
    else {
        panic!("no bind_ack");
    };
    let h = Header::decode(&ack).unwrap();
    assert_eq!(h.packet_type, PacketType::BIND_ACK);
    assert_eq!(usize::from(h.frag_length), ack.len());
    assert_eq!(h.auth_length, 9);
    assert!(ack.ends_with(b"CHALLENGE"));
    let (_, verifier) = pdu::split_auth(&h, &ack).unwrap();
    let (trailer, token) = AuthTrailer::decode(verifier).unwrap();
    assert_eq!(
        (trailer.auth_level, trailer.context_id, token),
        (6, 7, &b"CHALLENGE"[..])
    );
    assert!(!a.authenticated(), "challenged is not proven");
    assert_eq!(a.handle(&auth3_pdu(b"alice:right")), Outcome::Nothing);
    assert!(a.authenticated());
    a
}

#[test]
fn unauthenticated_bind_and_call() {
    let mut a = association();
    let Outcome::Send(ack) = a.handle(&bind_pdu(EPMAPPER, None)) else {
        panic!()
    };
    let h = Header::decode(&ack).unwrap();
    let ack = BindAck::decode(&h, &ack).unwrap();
    assert_eq!(ack.secondary_address, "4135");
    assert_eq!(ack.results[0].result, result::ACCEPTANCE);
    let req = Request {
        alloc_hint: 4,
        context_id: 0,
        opnum: 3,
        object: None,
        stub: &[1, 2, 3, 4],
        auth_verifier: &[],
    }
    .to_pdu(PfcFlags::SINGLE, 2);
    let Outcome::Call(call) = a.handle(&req) else {
        panic!()
    };
    assert_eq!(
        (call.interface, call.opnum, call.user.as_deref()),
        (EPMAPPER, 3, None)
    );
    assert_eq!(call.stub, [1, 2, 3, 4]);
    assert_eq!(call.auth_level, AUTH_LEVEL_NONE);
    assert!(
        !a.authenticated(),
        "a call without authentication proves nobody"
    );
    let resp = a.response(&call, &[9; 8]);
    let h = Header::decode(&resp).unwrap();
    assert_eq!(h.auth_length, 0);
    assert_eq!(Response::decode(&h, &resp).unwrap().stub, &[9; 8]);
}

#[test]
fn other_interfaces_and_weak_levels_are_refused() {
    let mut a = association();
    let other = SyntaxId {
        major: 9,
        ..WITNESS
    };
    let Outcome::Send(ack) = a.handle(&bind_pdu(other, None)) else {
        panic!()
    };
    let ack = BindAck::decode(&Header::decode(&ack).unwrap(), &ack).unwrap();
    assert_eq!(ack.results[0].result, result::PROVIDER_REJECTION);
    for level in [AUTH_LEVEL_NONE, AUTH_LEVEL_CONNECT, 4] {
        let Outcome::Close(nak) =
            association().handle(&bind_pdu(WITNESS, Some((level, b"NEGOTIATE"))))
        else {
            panic!()
        };
        assert_eq!(nak[2], PacketType::BIND_NAK.0);
        assert_eq!(
            u16::from_le_bytes([nak[16], nak[17]]),
            nak_reason::AUTHENTICATION_TYPE_NOT_RECOGNIZED
        );
    }
    // A token the package refuses.
    assert!(matches!(
        association().handle(&bind_pdu(WITNESS, Some((AUTH_LEVEL_PRIVACY, b"junk")))),
        Outcome::Close(_)
    ));
}

#[test]
fn sealed_call_and_response() {
    let mut a = established();
    let stub = b"register me please".to_vec();
    let Outcome::Call(call) = a.handle(&sealed_request(
        &stub,
        1,
        3,
        AUTH_LEVEL_PRIVACY,
        0,
        PfcFlags::SINGLE,
    )) else {
        panic!()
    };
    assert_eq!(call.stub, stub);
    assert_eq!(call.user.as_deref(), Some("alice"));
    assert_eq!(call.auth_level, AUTH_LEVEL_PRIVACY);
    let resp = a.response(&call, b"answer");
    let h = Header::decode(&resp).unwrap();
    assert_eq!(usize::from(h.frag_length), resp.len());
    assert_eq!(h.auth_length, 16);
    let (body, verifier) = pdu::split_auth(&h, &resp).unwrap();
    let (trailer, sig) = AuthTrailer::decode(verifier).unwrap();
    assert_eq!(trailer.pad_length, 10);
    let mut signed = resp[..body.len() + 8].to_vec();
    for b in &mut signed[24..body.len()] {
        *b ^= 0x5a;
    }
    assert_eq!(&signed[24..30], b"answer");
    assert_eq!(toy_signature(&signed, 0, 2), sig);
    // The next request carries sequence number 1.
    assert!(matches!(
        a.handle(&sealed_request(
            &stub,
            1,
            4,
            AUTH_LEVEL_PRIVACY,
            1,
            PfcFlags::SINGLE
        )),
        Outcome::Call(_)
    ));
}

#[test]
fn bad_verifiers_end_the_association() {
    let stub = b"0123456789".to_vec();
    // A flipped bit in the sealed stub, a replayed sequence number, another level, no
    // verifier at all.
    let mut flipped = sealed_request(&stub, 1, 3, AUTH_LEVEL_PRIVACY, 0, PfcFlags::SINGLE);
    flipped[26] ^= 1;
    let replay = sealed_request(&stub, 1, 3, AUTH_LEVEL_PRIVACY, 5, PfcFlags::SINGLE);
    let weaker = sealed_request(&stub, 1, 3, AUTH_LEVEL_INTEGRITY, 0, PfcFlags::SINGLE);
    let plain = Request {
        alloc_hint: 10,
        context_id: 0,
        opnum: 1,
        object: None,
        stub: &stub,
        auth_verifier: &[],
    }
    .to_pdu(PfcFlags::SINGLE, 3);
    for pdu in [flipped, replay, weaker, plain] {
        let Outcome::Close(fault) = established().handle(&pdu) else {
            panic!()
        };
        let f = Fault::decode(&Header::decode(&fault).unwrap(), &fault).unwrap();
        assert_eq!(f.status, fault_status::ACCESS_DENIED);
    }
    // A wrong password: auth3 fails and the connection ends without an answer.
    let mut a = association();
    a.handle(&bind_pdu(WITNESS, Some((AUTH_LEVEL_PRIVACY, b"NEGOTIATE"))));
    assert_eq!(
        a.handle(&auth3_pdu(b"alice:wrong")),
        Outcome::Close(Vec::new())
    );
    // A verifier on an association without security.
    let mut a = association();
    a.handle(&bind_pdu(WITNESS, None));
    assert!(matches!(
        a.handle(&sealed_request(
            &stub,
            1,
            3,
            AUTH_LEVEL_PRIVACY,
            0,
            PfcFlags::SINGLE
        )),
        Outcome::Close(_)
    ));
}

#[test]
fn fragments_reassemble_within_bounds() {
    let mut a = established();
    let first = sealed_request(
        b"part one",
        1,
        3,
        AUTH_LEVEL_PRIVACY,
        0,
        PfcFlags::FIRST_FRAG,
    );
    let last = sealed_request(
        b" and two",
        1,
        3,
        AUTH_LEVEL_PRIVACY,
        1,
        PfcFlags::LAST_FRAG,
    );
    assert_eq!(a.handle(&first), Outcome::Nothing);
    let Outcome::Call(call) = a.handle(&last) else {
        panic!()
    };
    assert_eq!(call.stub, b"part one and two");
    // A claimed size over the bound is refused before anything is kept.
    let big = sealed_request_hinted(
        b"x",
        1,
        5,
        AUTH_LEVEL_PRIVACY,
        0,
        PfcFlags::FIRST_FRAG,
        1 << 20,
    );
    let Outcome::Close(fault) = established().handle(&big) else {
        panic!()
    };
    let f = Fault::decode(&Header::decode(&fault).unwrap(), &fault).unwrap();
    assert_eq!(f.status, fault_status::ACCESS_DENIED);
    // More fragments than allowed.
    let mut a = established();
    let mut seq = 0;
    let mut outcome = Outcome::Nothing;
    let mut flags = PfcFlags::FIRST_FRAG;
    while outcome == Outcome::Nothing && seq < 100 {
        outcome = a.handle(&sealed_request(
            b"abcd",
            1,
            9,
            AUTH_LEVEL_PRIVACY,
            seq,
            flags,
        ));
        flags = PfcFlags::empty();
        seq += 1;
    }
    assert_eq!(seq, MAX_REQUEST_FRAGMENTS + 1);
    assert!(matches!(outcome, Outcome::Close(_)));
}

#[test]
fn large_responses_are_fragmented_and_each_fragment_protected() {
    let mut a = established();
    let Outcome::Call(call) = a.handle(&sealed_request(
        b"list",
        0,
        3,
        AUTH_LEVEL_PRIVACY,
        0,
        PfcFlags::SINGLE,
    )) else {
        panic!()
    };
    let stub: Vec<u8> = (0..12_000u32).map(|i| i as u8).collect();
    let out = a.response(&call, &stub);
    let mut rest = &out[..];
    let mut got = Vec::new();
    let mut seq = 0;
    while !rest.is_empty() {
        let h = Header::decode(rest).unwrap();
        let (frag, tail) = rest.split_at(usize::from(h.frag_length));
        assert!(frag.len() <= usize::from(MAX_FRAGMENT_LEN));
        assert_eq!(h.flags.contains(PfcFlags::FIRST_FRAG), seq == 0);
        let (body, verifier) = pdu::split_auth(&h, frag).unwrap();
        let (trailer, sig) = AuthTrailer::decode(verifier).unwrap();
        let mut signed = frag[..body.len() + 8].to_vec();
        for b in &mut signed[24..body.len()] {
            *b ^= 0x5a;
        }
        assert_eq!(toy_signature(&signed, seq, 2), sig);
        got.extend_from_slice(&signed[24..body.len() - usize::from(trailer.pad_length)]);
        seq += 1;
        rest = tail;
        if rest.is_empty() {
            assert!(h.flags.contains(PfcFlags::LAST_FRAG));
        }
    }
    assert!(seq >= 3);
    assert_eq!(got, stub);
}

#[test]
fn protocol_errors() {
    // A request before any bind, a second bind, auth3 without a challenge, garbage.
    let req = Request {
        alloc_hint: 0,
        context_id: 0,
        opnum: 0,
        object: None,
        stub: &[],
        auth_verifier: &[],
    }
    .to_pdu(PfcFlags::SINGLE, 1);
    let Outcome::Close(nak) = association().handle(&req) else {
        panic!()
    };
    assert_eq!(nak[2], PacketType::BIND_NAK.0);
    let mut a = established();
    assert!(matches!(
        a.handle(&bind_pdu(WITNESS, None)),
        Outcome::Close(_)
    ));
    let mut a = association();
    a.handle(&bind_pdu(WITNESS, None));
    assert!(matches!(
        a.handle(&auth3_pdu(b"alice:right")),
        Outcome::Close(_)
    ));
    assert!(matches!(
        association().handle(&[0xff; 40]),
        Outcome::Close(_)
    ));
    assert_eq!(
        pdu_length(&[5, 0, 0, 3, 0x10, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0]),
        Some(32)
    );
    assert_eq!(
        pdu_length(&[4, 0, 0, 3, 0x10, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0]),
        None
    );
    assert_eq!(
        pdu_length(&[5, 0, 0, 3, 0x10, 0, 0, 0, 0x08, 0, 0, 0, 0, 0, 0, 0]),
        None
    );
}

#[test]
fn every_truncation_and_byte_flip_of_the_exchange_is_handled() {
    let pdus = [
        bind_pdu(WITNESS, Some((AUTH_LEVEL_PRIVACY, b"NEGOTIATE"))),
        auth3_pdu(b"alice:right"),
        sealed_request(b"stub bytes", 1, 3, AUTH_LEVEL_PRIVACY, 0, PfcFlags::SINGLE),
    ];
    for (i, target) in pdus.iter().enumerate() {
        for cut in 1..=target.len() {
            for flip in 0..target.len() {
                let mut a = association();
                for earlier in &pdus[..i] {
                    a.handle(earlier);
                }
                let mut pdu = target[..cut].to_vec();
                if let Some(b) = pdu.get_mut(flip) {
                    *b ^= 0xa5;
                }
                let _ = a.handle(&pdu);
            }
        }
    }
}

#[test]
fn rpcclient_s_bind_verifier_decodes() {
    // The auth_info of rpcclient 4.17's witness bind ('ncacn_ip_tcp:ADDRESS[seal]', captured
    // with -d 10): NTLMSSP at privacy, context id 1, its NEGOTIATE_MESSAGE (flags 0x62088235).
    let auth_info = [
        0x0a, 0x06, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x4e, 0x54, 0x4c, 0x4d, 0x53, 0x53, 0x50,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x35, 0x82, 0x08, 0x62, 0x00, 0x00, 0x00, 0x00, 0x28, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x28, 0x00, 0x00, 0x00, 0x06, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x0f,
    ];
    let (trailer, token) = AuthTrailer::decode(&auth_info).unwrap();
    assert_eq!(
        trailer,
        AuthTrailer {
            auth_type: AUTH_TYPE_NTLMSSP,
            auth_level: AUTH_LEVEL_PRIVACY,
            pad_length: 0,
            context_id: 1,
        }
    );
    assert_eq!(token.len(), 40);
    assert!(token.starts_with(b"NTLMSSP\0"));
    let mut again = Vec::new();
    trailer.encode(&mut again);
    assert_eq!(again, auth_info[..8]);
    for len in 0..8 {
        assert!(AuthTrailer::decode(&auth_info[..len]).is_err());
    }
}
