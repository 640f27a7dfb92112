//! SPNEGO negotiation paths (RFC 4178, MS-SPNG) around the NTLM acceptor.

mod common;

use std::sync::Arc;

use common::*;
use smb3d_auth::spnego::{
    self, NegState, NegTokenInit, NegTokenResp, OID_KRB5, OID_MS_KRB5, OID_NEGOEX, OID_NTLMSSP,
};
use smb3d_auth::{Acceptor, AuthError, Principal, Step};

fn acceptor() -> Acceptor {
    Acceptor::with_random(identity(), store(), Arc::new(FixedChallenge([3; 8])))
}

fn continue_token(step: Result<Step, AuthError>) -> Vec<u8> {
    match step.unwrap() {
        Step::Continue { token } => token,
        other => panic!("expected Continue, got {other:?}"),
    }
}

/// Runs a Windows-style exchange: mechTypes [MS-KRB5, KRB5, NEGOEX, NTLMSSP] with a Kerberos
/// optimistic token, so the server must counter-propose NTLM and demand a mechListMIC.
fn windows_style(send_mech_list_mic: bool, tamper: bool) -> Result<Step, AuthError> {
    let mechs = [OID_MS_KRB5, OID_KRB5, OID_NEGOEX, OID_NTLMSSP];
    let init = NegTokenInit {
        mech_types: mechs.to_vec(),
        mech_token: Some(b"\x60\x03\x06\x01\x00"),
        ..Default::default()
    }
    .encode();
    let mut acc = acceptor();
    let reply = continue_token(acc.step(&init, NOW));
    let reply = NegTokenResp::decode(&reply).unwrap();
    assert_eq!(reply.neg_state, Some(NegState::REQUEST_MIC));
    assert_eq!(reply.supported_mech, Some(OID_NTLMSSP));
    assert_eq!(reply.response_token, None);

    let neg = negotiate(CLIENT_FLAGS);
    let second = NegTokenResp {
        response_token: Some(&neg),
        ..Default::default()
    }
    .encode();
    let reply = continue_token(acc.step(&second, NOW));
    let reply = NegTokenResp::decode(&reply).unwrap();
    assert_eq!(reply.neg_state, Some(NegState::ACCEPT_INCOMPLETE));
    let challenge = reply.response_token.unwrap();

    let auth = authenticate(&neg, challenge, &ClientOptions::default());
    let mech_types_der = spnego::encode_mech_types(&mechs);
    let mut mic = auth.mech_list_mic(&mech_types_der);
    if tamper {
        mic[5] ^= 1;
    }
    let third = NegTokenResp {
        response_token: Some(&auth.message),
        mech_list_mic: send_mech_list_mic.then_some(&mic[..]),
        ..Default::default()
    }
    .encode();
    let result = acc.step(&third, NOW);
    if let Ok(Step::Done { token, .. }) = &result {
        let done = NegTokenResp::decode(token).unwrap();
        assert_eq!(done.neg_state, Some(NegState::ACCEPT_COMPLETED));
        assert_eq!(
            done.mech_list_mic,
            Some(&auth.server_mech_list_mic(&mech_types_der)[..])
        );
    }
    result
}

#[test]
fn counter_proposal_with_mech_list_mic_succeeds() {
    let Step::Done { principal, .. } = windows_style(true, false).unwrap() else {
        panic!("expected success");
    };
    assert_eq!(
        principal,
        Principal::User {
            name: "alice".into(),
            claimed_domain: "WORKGROUP".into()
        }
    );
}

#[test]
fn counter_proposal_without_or_with_bad_mech_list_mic_fails() {
    assert_eq!(
        windows_style(false, false).unwrap_err(),
        AuthError::LogonFailure
    );
    assert_eq!(
        windows_style(true, true).unwrap_err(),
        AuthError::LogonFailure
    );
}

/// NTLM first, an old client that sends neither an NTLM MIC nor a mechListMIC: accepted,
/// and the server sends no mechListMIC either.
#[test]
fn ntlm_first_without_any_mic_is_accepted_without_server_mic() {
    let neg = negotiate(CLIENT_FLAGS);
    let init = NegTokenInit {
        mech_types: vec![OID_NTLMSSP],
        mech_token: Some(&neg),
        ..Default::default()
    }
    .encode();
    let mut acc = acceptor();
    let reply = continue_token(acc.step(&init, NOW));
    let challenge = NegTokenResp::decode(&reply)
        .unwrap()
        .response_token
        .unwrap()
        .to_vec();
    let auth = authenticate(
        &neg,
        &challenge,
        &ClientOptions {
            send_mic: false,
            ..Default::default()
        },
    );
    let last = NegTokenResp {
        response_token: Some(&auth.message),
        ..Default::default()
    }
    .encode();
    let Step::Done { token, .. } = acc.step(&last, NOW).unwrap() else {
        panic!("expected success");
    };
    let done = NegTokenResp::decode(&token).unwrap();
    assert_eq!(done.neg_state, Some(NegState::ACCEPT_COMPLETED));
    assert_eq!(done.mech_list_mic, None);
}

/// NTLM first but no optimistic token: the server names NTLM and waits for its NEGOTIATE.
#[test]
fn ntlm_first_without_token_asks_for_it() {
    let init = NegTokenInit {
        mech_types: vec![OID_NTLMSSP, OID_KRB5],
        ..Default::default()
    }
    .encode();
    let mut acc = acceptor();
    let token = continue_token(acc.step(&init, NOW));
    let reply = NegTokenResp::decode(&token).unwrap();
    assert_eq!(reply.neg_state, Some(NegState::ACCEPT_INCOMPLETE));
    assert_eq!(reply.supported_mech, Some(OID_NTLMSSP));
}

#[test]
fn no_common_mechanism_or_wrong_token_order() {
    let init = NegTokenInit {
        mech_types: vec![OID_KRB5],
        mech_token: Some(b"x"),
        ..Default::default()
    }
    .encode();
    assert_eq!(
        acceptor().step(&init, NOW).unwrap_err(),
        AuthError::Unsupported("no mechanism in common")
    );
    let resp = NegTokenResp {
        response_token: Some(b"x"),
        ..Default::default()
    }
    .encode();
    assert!(matches!(
        acceptor().step(&resp, NOW).unwrap_err(),
        AuthError::InvalidToken(_)
    ));
    assert!(matches!(
        acceptor().step(&[], NOW).unwrap_err(),
        AuthError::InvalidToken(_)
    ));
}

#[test]
fn an_error_ends_the_exchange() {
    let mut acc = acceptor();
    assert!(acc.step(b"\x60\x00", NOW).is_err());
    let neg = negotiate(CLIENT_FLAGS);
    assert_eq!(
        acc.step(&neg, NOW).unwrap_err(),
        AuthError::InvalidToken("exchange already finished")
    );
}

#[test]
fn acceptor_can_move_between_tasks() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Acceptor>();
    assert_send_sync::<smb3d_auth::UserDb>();
}
