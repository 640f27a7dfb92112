//! An ncacn_ip_tcp association of `smb3d_rpc::tcp` with the NTLMSSP package of this crate,
//! driven through its three legs by the test NTLM client, then a sealed call each way.

mod common;

use std::sync::Arc;

use common::{ClientOptions, NOW, authenticate, identity, negotiate, store};
use smb3d_auth::Acceptor;
use smb3d_auth::ntlm::NegotiateFlags;
use smb3d_auth::ntlm::rpc::{NtlmPacketSecurity, authenticators};
use smb3d_rpc::pdu::{Bind, ContextElement, Header, PacketType, PfcFlags, Request, SyntaxId};
use smb3d_rpc::tcp::{Association, AuthTrailer, Outcome, PacketSecurity};
use smb3d_rpc::witness::WITNESS;
use smb3d_wire::FileTime;

/// The flags rpcclient 4.17 sends in its bind (captured: 0x62088235).
const RPCCLIENT_FLAGS: NegotiateFlags = NegotiateFlags(0x6208_8235);

fn now() -> FileTime {
    NOW
}

fn with_verifier(mut pdu: Vec<u8>, level: u8, token: &[u8]) -> Vec<u8> {
    let pad = (4 - pdu.len() % 4) % 4;
    pdu.resize(pdu.len() + pad, 0);
    pdu.extend_from_slice(&[10, level, pad as u8, 0, 1, 0, 0, 0]);
    pdu.extend_from_slice(token);
    let frag = (pdu.len() as u16).to_le_bytes();
    let auth = (token.len() as u16).to_le_bytes();
    pdu[8..12].copy_from_slice(&[frag[0], frag[1], auth[0], auth[1]]);
    pdu
}

fn association() -> Association {
    Association::new(
        vec![WITNESS],
        4135,
        1,
        authenticators(Arc::new(|| Acceptor::new(identity(), store())), now),
    )
}

/// Binds and authenticates as `o`; the association and the client's packet security.
fn logon(o: &ClientOptions) -> (Association, Option<NtlmPacketSecurity>, Outcome) {
    let mut a = association();
    let neg = negotiate(RPCCLIENT_FLAGS);
    let bind = Bind {
        max_xmit_frag: 4280,
        max_recv_frag: 4280,
        assoc_group_id: 0,
        contexts: vec![ContextElement {
            context_id: 0,
            abstract_syntax: WITNESS,
            transfer_syntaxes: vec![SyntaxId::NDR],
        }],
        auth_verifier: &[],
    }
    .to_pdu(
        PacketType::BIND,
        PfcFlags::SINGLE | PfcFlags::PENDING_CANCEL,
        1,
    );
    let Outcome::Send(ack) = a.handle(&with_verifier(bind, 6, &neg)) else {
        panic!("no bind_ack");
    };
    let h = Header::decode(&ack).unwrap();
    assert_eq!(h.packet_type, PacketType::BIND_ACK);
    let (_, verifier) = smb3d_rpc::pdu::split_auth(&h, &ack).unwrap();
    let (trailer, challenge) = AuthTrailer::decode(verifier).unwrap();
    assert_eq!(
        (trailer.auth_type, trailer.auth_level, trailer.context_id),
        (10, 6, 1)
    );
    let client = authenticate(&neg, challenge, o);
    let auth3 = vec![
        5, 0, 16, 3, 0x10, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
    ];
    let outcome = a.handle(&with_verifier(auth3, 6, &client.message));
    let security = NtlmPacketSecurity::client(&client.exported_session_key, client.flags);
    (a, Some(security), outcome)
}

#[test]
fn rpcclient_flags_bind_authenticate_and_seal() {
    let (mut a, security, outcome) = logon(&ClientOptions {
        flags: RPCCLIENT_FLAGS,
        ..ClientOptions::default()
    });
    assert_eq!(outcome, Outcome::Nothing);
    let mut client = security.unwrap();
    // A sealed request, as a client builds it: stub padded to 16, trailer, signature.
    let stub = b"witness request!xyz".to_vec();
    let mut pdu = Request {
        alloc_hint: stub.len() as u32,
        context_id: 0,
        opnum: 0,
        object: None,
        stub: &stub,
        auth_verifier: &[],
    }
    .to_pdu(PfcFlags::SINGLE, 3);
    let pad = (16 - stub.len() % 16) % 16;
    pdu.resize(pdu.len() + pad, 0);
    let body = pdu.len();
    pdu.extend_from_slice(&[10, 6, pad as u8, 0, 1, 0, 0, 0]);
    let frag = ((pdu.len() + 16) as u16).to_le_bytes();
    pdu[8..12].copy_from_slice(&[frag[0], frag[1], 16, 0]);
    let sig = client.wrap(&mut pdu, 24..body);
    assert_ne!(&pdu[24..24 + stub.len()], &stub[..], "sealed");
    pdu.extend_from_slice(&sig);
    let Outcome::Call(call) = a.handle(&pdu) else {
        panic!("the sealed request was not taken");
    };
    assert_eq!(call.stub, stub);
    assert_eq!(call.user.as_deref(), Some("alice"));
    // The sealed response opens with the client's keys.
    let mut resp = a.response(&call, b"the answer");
    let h = Header::decode(&resp).unwrap();
    let sig_at = resp.len() - 16;
    let sig = resp[sig_at..].to_vec();
    let trailer_at = sig_at - 8;
    let pad = usize::from(resp[trailer_at + 2]);
    assert_eq!(h.auth_length, 16);
    assert!(client.unwrap(&mut resp[..sig_at], 24..trailer_at, &sig));
    assert_eq!(&resp[24..trailer_at - pad], b"the answer");
}

#[test]
fn a_wrong_password_or_anonymous_ends_the_association() {
    for o in [
        ClientOptions {
            password: "wrong",
            flags: RPCCLIENT_FLAGS,
            ..ClientOptions::default()
        },
        ClientOptions {
            user: "nobody",
            flags: RPCCLIENT_FLAGS,
            ..ClientOptions::default()
        },
        // No key exchange: refused even with the right password.
        ClientOptions {
            flags: NegotiateFlags(RPCCLIENT_FLAGS.0 & !NegotiateFlags::KEY_EXCH.0),
            ..ClientOptions::default()
        },
    ] {
        let (_, _, outcome) = logon(&o);
        assert_eq!(outcome, Outcome::Close(Vec::new()));
    }
}
