//! Replays a real exchange: `smbclient //127.0.0.1/share -U bench%pass -m SMB3_11 -c ls`
//! against the reference Samba 4.17 (`/work/shared/tools/ref-samba`), captured on loopback
//! with tshark; the hex below is each SMB2 message's security buffer
//! (`tshark -T fields -e smb2.security_blob`).
//!
//! Given Samba's server challenge and timestamp, the acceptor must answer byte for byte as
//! Samba did: the CHALLENGE (same flags, names and layout) and the final NegTokenResp, whose
//! mechListMIC is keyed by the exported session key, so matching it proves the same key.

use std::sync::Arc;

use smb3d_auth::{
    Acceptor, Account, AuthError, CredentialStore, Principal, RandomSource, ServerIdentity, Step,
    server_initial_token,
};
use smb3d_wire::FileTime;

/// NEGOTIATE response security buffer: Samba's NegTokenInit2.
const SAMBA_NEG_TOKEN_INIT2: &str = "604806062b0601050502a03e303ca00e300c060a2b06010401823702020aa32a3028a0261b246e6f745f646566696e65645f696e5f5246433431373840706c656173655f69676e6f7265";
/// First SESSION_SETUP request: NegTokenInit with the NTLM NEGOTIATE.
const CLIENT_NEGOTIATE: &str = "604806062b0601050502a03e303ca00e300c060a2b06010401823702020aa22a04284e544c4d53535000010000001582086200000000280000000000000028000000060100000000000f";
/// First SESSION_SETUP response (STATUS_MORE_PROCESSING_REQUIRED): NegTokenResp with the
/// CHALLENGE.
const SAMBA_CHALLENGE: &str = "a18181307fa0030a0101a10c060a2b06010401823702020aa26a04684e544c4d5353500002000000040004003800000015828a6216549468813f433600000000000000002c002c003c000000060100000000000f56004d000200040056004d000100040056004d00040000000300040076006d0007000800608eb3c4217add0100000000";
/// Second SESSION_SETUP request: NegTokenResp with the AUTHENTICATE and the mechListMIC.
const CLIENT_AUTHENTICATE: &str = "a182018830820184a282016c048201684e544c4d53535000030000001800180058000000c800c8007000000012001200380100000a000a004a0100000400040054010000100010005801000015820862060100000000000f278b8ad98d7150699e049f78dce370720000000000000000000000000000000000000000000000007239e0b3550b90d0913daf1032f94b190101000000000000608eb3c4217add01f312fb7b6b1d7772000000000200040056004d000100040056004d00040000000300040076006d0007000800608eb3c4217add0106000400020000000800300030000000000000000000000000000000609db1b975a2115290427e7a1785957f64a2a6f0177f21c06b540b1bf2d03afa0a0010000000000000000000000000000000000009001c0063006900660073002f003100320037002e0030002e0030002e0031000000000057004f0052004b00470052004f0055005000620065006e006300680056004d00d048173902fc163afc84779195686daaa3120410010000007100c17684b83e4300000000";
/// Second SESSION_SETUP response (STATUS_SUCCESS): accept-completed and Samba's mechListMIC.
const SAMBA_ACCEPT: &str = "a11b3019a0030a0100a312041001000000b2357372a0c775dc00000000";

/// Samba's server challenge and MsvAvTimestamp in that CHALLENGE.
const SERVER_CHALLENGE: [u8; 8] = [0x16, 0x54, 0x94, 0x68, 0x81, 0x3f, 0x43, 0x36];
const CHALLENGE_TIME: FileTime = FileTime(0x01dd_7a21_c4b3_8e60);

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

struct FixedChallenge([u8; 8]);

impl RandomSource for FixedChallenge {
    fn fill(&self, buf: &mut [u8]) -> Result<(), AuthError> {
        buf.copy_from_slice(&self.0[..buf.len()]);
        Ok(())
    }
}

/// One user, `bench` with password `pass`.
struct Bench;

impl CredentialStore for Bench {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, "bench", *smb3d_auth::ntlm::crypto::nt_hash("pass"))
    }
}

/// The names the reference Samba announced (a standalone server whose host is "vm").
fn samba_identity() -> Arc<ServerIdentity> {
    Arc::new(ServerIdentity {
        netbios_domain: "VM".into(),
        netbios_name: "VM".into(),
        dns_domain: String::new(),
        dns_name: "vm".into(),
    })
}

fn acceptor(store: Arc<dyn CredentialStore>) -> Acceptor {
    Acceptor::with_random(
        samba_identity(),
        store,
        Arc::new(FixedChallenge(SERVER_CHALLENGE)),
    )
}

#[test]
fn initial_token_matches_samba() {
    assert_eq!(server_initial_token(), hex(SAMBA_NEG_TOKEN_INIT2));
}

#[test]
fn samba_exchange_replays_byte_for_byte() {
    let mut acc = acceptor(Arc::new(Bench));
    let Step::Continue { token } = acc.step(&hex(CLIENT_NEGOTIATE), CHALLENGE_TIME).unwrap() else {
        panic!("expected a challenge");
    };
    assert_eq!(token, hex(SAMBA_CHALLENGE));
    let Step::Done {
        token,
        principal,
        session_key,
    } = acc.step(&hex(CLIENT_AUTHENTICATE), CHALLENGE_TIME).unwrap()
    else {
        panic!("expected success");
    };
    assert_eq!(token, hex(SAMBA_ACCEPT));
    assert_eq!(
        principal,
        Principal::User {
            name: "bench".into(),
            claimed_domain: "WORKGROUP".into()
        }
    );
    assert_ne!(session_key, [0; 16]);
    assert_eq!(
        acc.step(&hex(CLIENT_AUTHENTICATE), CHALLENGE_TIME)
            .unwrap_err(),
        AuthError::InvalidToken("exchange already finished")
    );
}

/// Runs the captured exchange with `authenticate` as the second token.
fn finish(store: Arc<dyn CredentialStore>, authenticate: &[u8]) -> Result<Step, AuthError> {
    let mut acc = acceptor(store);
    acc.step(&hex(CLIENT_NEGOTIATE), CHALLENGE_TIME)?;
    acc.step(authenticate, CHALLENGE_TIME)
}

/// Offset of the NTLM AUTHENTICATE inside the captured NegTokenResp.
fn ntlm_offset(token: &[u8]) -> usize {
    token.windows(8).position(|w| w == b"NTLMSSP\0").unwrap()
}

struct WrongPassword;

impl CredentialStore for WrongPassword {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, user, *smb3d_auth::ntlm::crypto::nt_hash("Pass"))
    }
}

struct Nobody;

impl CredentialStore for Nobody {
    fn account(&self, _user: &str) -> Option<Account> {
        None
    }
}

#[test]
fn wrong_password_and_unknown_user_fail_alike() {
    let auth = hex(CLIENT_AUTHENTICATE);
    let wrong = finish(Arc::new(WrongPassword), &auth).unwrap_err();
    let unknown = finish(Arc::new(Nobody), &auth).unwrap_err();
    assert_eq!(wrong, AuthError::LogonFailure);
    assert_eq!(unknown, AuthError::LogonFailure);
}

#[test]
fn tampered_ntlm_mic_is_a_logon_failure() {
    let mut auth = hex(CLIENT_AUTHENTICATE);
    let mic = ntlm_offset(&auth) + 72;
    auth[mic] ^= 1;
    assert_eq!(
        finish(Arc::new(Bench), &auth).unwrap_err(),
        AuthError::LogonFailure
    );
}

#[test]
fn tampered_mech_list_mic_is_a_logon_failure() {
    let mut auth = hex(CLIENT_AUTHENTICATE);
    let last = auth.len() - 8;
    auth[last] ^= 1;
    assert_eq!(
        finish(Arc::new(Bench), &auth).unwrap_err(),
        AuthError::LogonFailure
    );
}

#[test]
fn tampered_response_or_names_are_a_logon_failure() {
    let base = hex(CLIENT_AUTHENTICATE);
    let ntlm = ntlm_offset(&base);
    // The NTProofStr, the client challenge inside the blob, and the user name (bench->Bench
    // still matches the store, but the MIC covers the message).
    for at in [ntlm + 0x70, ntlm + 0x70 + 32, ntlm + 0x14a] {
        let mut auth = base.clone();
        auth[at] ^= 0x20;
        assert_eq!(
            finish(Arc::new(Bench), &auth).unwrap_err(),
            AuthError::LogonFailure,
            "byte {at:#x}"
        );
    }
}

#[test]
fn missing_mech_list_mic_is_refused_when_ntlm_sent_a_mic() {
    let auth = hex(CLIENT_AUTHENTICATE);
    let ntlm = ntlm_offset(&auth);
    let ntlm_msg = &auth[ntlm..auth.len() - 0x14];
    let token = smb3d_auth::spnego::NegTokenResp {
        response_token: Some(ntlm_msg),
        ..Default::default()
    }
    .encode();
    assert_eq!(
        finish(Arc::new(Bench), &token).unwrap_err(),
        AuthError::LogonFailure
    );
}

#[test]
fn authenticate_offsets_out_of_range_are_invalid() {
    let base = hex(CLIENT_AUTHENTICATE);
    let ntlm = ntlm_offset(&base);
    // NtChallengeResponseFields.BufferOffset (at 24 in the message) past the end, and the
    // length of the user name wrapping past the end.
    for (at, value) in [(ntlm + 24, 0xf0u8), (ntlm + 41, 0x7f)] {
        let mut auth = base.clone();
        auth[at] = value;
        assert!(
            matches!(
                finish(Arc::new(Bench), &auth).unwrap_err(),
                AuthError::InvalidToken(_)
            ),
            "byte {at:#x}"
        );
    }
}

/// `smbclient -N -L //127.0.0.1 -m SMB3_11` against the same Samba: first a logon as the local
/// user "root" with empty LM and NT responses (Samba: STATUS_LOGON_FAILURE), then an
/// anonymous one (Samba: success, accept-completed without a mechListMIC).
mod anonymous {
    use super::*;

    const NEGOTIATE: &str = "604806062b0601050502a03e303ca00e300c060a2b06010401823702020aa22a04284e544c4d53535000010000001582086200000000280000000000000028000000060100000000000f";
    const CHALLENGE_1: &str = "a18181307fa0030a0101a10c060a2b06010401823702020aa26a04684e544c4d5353500002000000040004003800000015828a6206d9ba0ce979116800000000000000002c002c003c000000060100000000000f56004d000200040056004d000100040056004d00040000000300040076006d0007000800661adcda237add0100000000";
    const EMPTY_RESPONSES: &str = "a181a33081a0a281890481864e544c4d5353500003000000000000005800000000000000580000001200120058000000080008006a0000000400040072000000100010007600000015820062060100000000000f26abd34c64ae31ea10dee8eb7cd36e9757004f0052004b00470052004f005500500072006f006f00740056004d0074e80f61d60b674d487d978c8fcbbb67a312041001000000348c9166e2e37b143ecb2501";
    const CHALLENGE_2: &str = "a18181307fa0030a0101a10c060a2b06010401823702020aa26a04684e544c4d5353500002000000040004003800000015828a62ec7784782ebba31800000000000000002c002c003c000000060100000000000f56004d000200040056004d000100040056004d00040000000300040076006d0007000800764bdcda237add0100000000";
    const ANONYMOUS: &str = "a16e306ca26a04684e544c4d5353500003000000000000005800000000000000580000000000000058000000000000005800000000000000580000001000100058000000158a0062060100000000000f42151a08ebc34fed5bace77fa148b515aaf78eb39b2304f92f89e878810e71e6";
    const SAMBA_ACCEPT: &str = "a1073005a0030a0100";

    fn exchange(challenge: [u8; 8], time: u64, expected_challenge: &str) -> Acceptor {
        let mut acc = Acceptor::with_random(
            samba_identity(),
            Arc::new(Bench),
            Arc::new(FixedChallenge(challenge)),
        );
        let Step::Continue { token } = acc.step(&hex(NEGOTIATE), FileTime(time)).unwrap() else {
            panic!("expected a challenge");
        };
        assert_eq!(token, hex(expected_challenge));
        acc
    }

    #[test]
    fn named_user_without_responses_fails_like_samba() {
        let mut acc = exchange(
            [0x06, 0xd9, 0xba, 0x0c, 0xe9, 0x79, 0x11, 0x68],
            0x01dd_7a23_dadc_1a66,
            CHALLENGE_1,
        );
        assert_eq!(
            acc.step(&hex(EMPTY_RESPONSES), FileTime(0)).unwrap_err(),
            AuthError::LogonFailure
        );
    }

    #[test]
    fn anonymous_succeeds_like_samba() {
        let mut acc = exchange(
            [0xec, 0x77, 0x84, 0x78, 0x2e, 0xbb, 0xa3, 0x18],
            0x01dd_7a23_dadc_4b76,
            CHALLENGE_2,
        );
        let Step::Done {
            token, principal, ..
        } = acc.step(&hex(ANONYMOUS), FileTime(0)).unwrap()
        else {
            panic!("expected success");
        };
        assert_eq!(principal, Principal::Anonymous);
        assert_eq!(token, hex(SAMBA_ACCEPT));
    }
}
