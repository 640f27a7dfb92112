//! The NTLM server against the MS-NLMP 4.2.4 example and hand-built variants.

mod common;

use std::sync::Arc;

use common::*;
use smb3d_auth::ntlm::{AuthenticateMessage, ChallengeState, NegotiateFlags};
use smb3d_auth::{Acceptor, AuthError, Principal, Step};

/// MS-NLMP 4.2.4.3: the CHALLENGE_MESSAGE of the NTLMv2 example.
const SPEC_CHALLENGE: &str = "4e544c4d53535000020000000c000c003800000033828ae20123456789abcdef00000000000000002400240044000000060070170000000f53006500720076006500720002000c0044006f006d00610069006e0001000c0053006500720076006500720000000000";
/// MS-NLMP 4.2.4.3: the AUTHENTICATE_MESSAGE of the NTLMv2 example (no MIC; key exchange).
const SPEC_AUTHENTICATE: &str = "4e544c4d5353500003000000180018006c00000054005400840000000c000c00480000000800080054000000100010005c00000010001000d8000000358288e20501280a0000000f44006f006d00610069006e00550073006500720043004f004d005000550054004500520086c35097ac9cec102554764a57cccc19aaaaaaaaaaaaaaaa68cd0ab851e51c96aabc927bebef6a1c01010000000000000000000000000000aaaaaaaaaaaaaaaa0000000002000c0044006f006d00610069006e0001000c005300650072007600650072000000000000000000c5dad2544fc9799094ce1ce90bc9d03e";

fn spec_state() -> ChallengeState {
    // The example has no NEGOTIATE; it only matters for a MIC, which the example lacks.
    ChallengeState::from_messages(negotiate(NegotiateFlags(0xe208_8235)), hex(SPEC_CHALLENGE))
        .unwrap()
}

fn spec_store() -> Arc<dyn smb3d_auth::CredentialStore> {
    Arc::new(Users(vec![("User", "Password")]))
}

#[test]
fn spec_4_2_4_authenticate_is_accepted_with_the_example_key() {
    let outcome = spec_state()
        .authenticate(&hex(SPEC_AUTHENTICATE), &spec_store())
        .unwrap();
    assert_eq!(
        outcome.principal,
        Principal::User {
            name: "User".into(),
            claimed_domain: "Domain".into()
        }
    );
    assert_eq!(*outcome.exported_session_key, [0x55; 16]);
    assert!(!outcome.mic_present);
}

fn with_responses(lm: &[u8], nt: &[u8], user: &[u8]) -> Vec<u8> {
    let spec = hex(SPEC_AUTHENTICATE);
    let parsed = AuthenticateMessage::decode(&spec).unwrap();
    AuthenticateMessage {
        lm_challenge_response: lm,
        nt_challenge_response: nt,
        user,
        ..parsed
    }
    .encode()
    .unwrap()
}

#[test]
fn ntlm_v1_and_lm_only_are_logon_failures() {
    let spec = hex(SPEC_AUTHENTICATE);
    let parsed = AuthenticateMessage::decode(&spec).unwrap();
    let user = parsed.user.to_vec();
    // MS-NLMP 4.2.2.2.1: an NTLMv1 response for the same user.
    let v1 = hex("67c43011f30298a2ad35ece64f16331c44bdbed927841f94");
    for msg in [
        with_responses(&[0; 24], &v1, &user),
        with_responses(&v1, &[], &user),
        with_responses(&[], &[], &user),
    ] {
        assert_eq!(
            spec_state().authenticate(&msg, &spec_store()).unwrap_err(),
            AuthError::LogonFailure
        );
    }
}

#[test]
fn anonymous_is_reported_as_such() {
    for lm in [&[][..], &[0][..]] {
        let msg = with_responses(lm, &[], &[]);
        let outcome = spec_state().authenticate(&msg, &spec_store()).unwrap();
        assert_eq!(outcome.principal, Principal::Anonymous);
    }
    // A user name with no response is not anonymous.
    let msg = with_responses(&[0], &[], &utf16("User"));
    assert_eq!(
        spec_state().authenticate(&msg, &spec_store()).unwrap_err(),
        AuthError::LogonFailure
    );
}

#[test]
fn every_truncation_of_the_authenticate_is_refused() {
    let spec = hex(SPEC_AUTHENTICATE);
    for len in 0..spec.len() {
        assert!(
            spec_state()
                .authenticate(&spec[..len], &spec_store())
                .is_err(),
            "length {len}"
        );
    }
}

fn raw_exchange(o: &ClientOptions) -> (Result<Step, AuthError>, [u8; 16]) {
    let mut acc = Acceptor::with_random(identity(), store(), Arc::new(FixedChallenge([9; 8])));
    let neg = negotiate(o.flags);
    let Step::Continue { token: challenge } = acc.step(&neg, NOW).unwrap() else {
        panic!("expected a challenge");
    };
    let auth = authenticate(&neg, &challenge, o);
    (acc.step(&auth.message, NOW), auth.exported_session_key)
}

#[test]
fn raw_ntlmssp_with_and_without_mic() {
    for send_mic in [true, false] {
        let (result, key) = raw_exchange(&ClientOptions {
            send_mic,
            ..Default::default()
        });
        let Step::Done {
            token,
            principal,
            session_key,
        } = result.unwrap()
        else {
            panic!("expected success");
        };
        assert!(token.is_empty());
        assert_eq!(session_key, key);
        assert_eq!(
            principal,
            Principal::User {
                name: "alice".into(),
                claimed_domain: "WORKGROUP".into()
            }
        );
    }
}

#[test]
fn user_case_and_empty_domain_hash_are_accepted() {
    for (user, hash_domain) in [("ALICE", "WORKGROUP"), ("alice", ""), ("Alice", "")] {
        let (result, _) = raw_exchange(&ClientOptions {
            user,
            hash_domain,
            ..Default::default()
        });
        assert!(
            matches!(result, Ok(Step::Done { .. })),
            "{user} {hash_domain:?}"
        );
    }
    // Any other domain in the hash is wrong.
    let (result, _) = raw_exchange(&ClientOptions {
        hash_domain: "OTHER",
        ..Default::default()
    });
    assert_eq!(result.unwrap_err(), AuthError::LogonFailure);
}

#[test]
fn wrong_password_unknown_user_and_no_ess_fail_alike() {
    for o in [
        ClientOptions {
            password: "secret1!",
            ..Default::default()
        },
        ClientOptions {
            user: "mallory",
            ..Default::default()
        },
        ClientOptions {
            flags: CLIENT_FLAGS.without(NegotiateFlags::EXTENDED_SESSIONSECURITY),
            ..Default::default()
        },
    ] {
        assert_eq!(raw_exchange(&o).0.unwrap_err(), AuthError::LogonFailure);
    }
}

#[test]
fn key_exchange_off_uses_the_session_base_key() {
    let (result, key) = raw_exchange(&ClientOptions {
        flags: CLIENT_FLAGS.without(NegotiateFlags::KEY_EXCH),
        ..Default::default()
    });
    let Step::Done { session_key, .. } = result.unwrap() else {
        panic!("expected success");
    };
    assert_eq!(session_key, key);
    assert_ne!(session_key, [0x42; 16]);
}

#[test]
fn challenge_flags_follow_the_intersection_rules() {
    let mut acc = Acceptor::with_random(identity(), store(), Arc::new(FixedChallenge([9; 8])));
    let Step::Continue { token } = acc
        .step(&negotiate(NegotiateFlags(0xe208_82b7)), NOW)
        .unwrap()
    else {
        panic!("expected a challenge");
    };
    let chal = smb3d_auth::ntlm::ChallengeMessage::decode(&token).unwrap();
    // 0xe20882b7 asks for 56, KEY_EXCH, 128, VERSION, ESS, ALWAYS_SIGN, NTLM, LM_KEY, SEAL, SIGN,
    // REQUEST_TARGET, OEM and UNICODE: the answer drops LM_KEY and OEM and adds TARGET_INFO
    // and TARGET_TYPE_SERVER.
    assert_eq!(chal.flags, NegotiateFlags(0xe28a_8235));
    assert_eq!(chal.server_challenge, [9; 8]);
    assert_eq!(chal.target_name, utf16("FILESRV"));
    let mut acc = Acceptor::new(identity(), store());
    assert_eq!(
        acc.step(&negotiate(NegotiateFlags(0x0000_0206)), NOW)
            .unwrap_err(),
        AuthError::Unsupported("NTLM without Unicode")
    );
}
