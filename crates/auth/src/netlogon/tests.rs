//! Values recorded from an exchange with Samba 4.17's AD DC (interop/addc.py, machine account
//! FILESRV$ with the password below, user alice of SMB3DAD).

use super::calls::{LogonAnswer, sam_logon_ex_answer};
use super::seal::{MessageAltered, Sealer};
use super::*;
use crate::ntlm::crypto::nt_hash;
use smb3d_crypto::netlogon::{netlogon_credential, netlogon_session_key};

const MACHINE_PASSWORD: &str = "Machine-Pass-123";
const CLIENT_CHALLENGE: &str = "4211a4b04459b7d9";
const SERVER_CHALLENGE: &str = "efd8e78cd58f3b72";
const SESSION_KEY: &str = "31a68ec30aaf470a7c3bac85f72b26da";
/// NetrServerAuthenticate3's ServerCredential: the DC's proof it holds the same password.
const SERVER_CREDENTIAL: &str = "bc10e4431504e918";
/// The sealed stub (with its padding) of the DC's NetrLogonSamLogonEx answer, the channel's
/// second PDU, and its sec_trailer and NL_AUTH_SHA2_SIGNATURE.
const SEALED_ANSWER: &str = "2797dc59769aeb9acd5eab933dc9ef1eae843cffedb923bd5771b43431f98a52f519d55e1add5a59d434de43988b5bb1094d22bd9c2f098c63590810b1eb86640e1d8b0a4ec6b19ac3cc15ad3238fff014ad93468ecc7b2cfc5ff5f7a8e56e95fe9b034d82fafad801b6967fbe7206d4c3914f64e331bc40068491ee526b72f44e135bdd137d37e7341032797cc85704be6c38c602eb685a7601486a367b9bc813e207b8e071b884f1f08f90b49b7367e9b75506d33113b3d61adc1268b417a4a13049693e7fc7144cc2f3b2a53d216bed66bb93512dd1418d4b5ab2d63cc5947686662a72c6107eee6b0beb1f727dd854fd5237ea3a3fd24565764f7baf8f9040c824761ea47a7c4c82dd1539f97acd1b3585fb8ab0af30d59b03789ecb355b51ba0d323a972059f07801fd2af6fdcff77a5cf3d8df67f7ba9191c50ab19d57aeafe2401e8eef57f098771c8cc6e6ff7357554b9f98f07f3db559d4faad524eb2c6eb3fe8b8f62d51e1e88fa50a94bb43ba061db02bc1ddc9566d2ded6a237b894421894a12b43255f01c97768ba5fb7e0223cfbf0a5cbe3ad22504bcd27b17";
const ANSWER_VERIFIER: &str = "44060c000100000013001a00ffff000083e6df2bc324d404f570069b6cda81aa70755e8e90bd0c35000000000000000000000000000000000000000000000000";
/// The NTLMv2 SessionBaseKey of alice's logon (examples/netlogon_logon.rs's response), which
/// the DC returns encrypted as UserSessionKey.
const SESSION_BASE_KEY: &str = "37dcfa36f53ba25955a816dbc695152e";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn array<const N: usize>(s: &str) -> [u8; N] {
    unhex(s).try_into().unwrap()
}

#[test]
fn session_key_and_credentials_match_the_dc() {
    let key = netlogon_session_key(
        &nt_hash(MACHINE_PASSWORD),
        &array(CLIENT_CHALLENGE),
        &array(SERVER_CHALLENGE),
    );
    assert_eq!(*key, array::<16>(SESSION_KEY));
    assert_eq!(
        netlogon_credential(&array(SERVER_CHALLENGE), &key),
        array::<8>(SERVER_CREDENTIAL)
    );
    let wrong = netlogon_session_key(
        &nt_hash("another password"),
        &array(CLIENT_CHALLENGE),
        &array(SERVER_CHALLENGE),
    );
    assert_ne!(
        netlogon_credential(&array(SERVER_CHALLENGE), &wrong),
        array::<8>(SERVER_CREDENTIAL)
    );
}

fn opened() -> Vec<u8> {
    let mut payload = unhex(SEALED_ANSWER);
    let verifier = unhex(ANSWER_VERIFIER);
    let pad = usize::from(verifier[2]);
    Sealer::client(Zeroizing::new(array(SESSION_KEY)))
        .at_sequence(1)
        .unseal(&mut payload, &verifier[8..])
        .unwrap();
    payload.truncate(payload.len() - pad);
    payload
}

#[test]
fn the_dc_answer_unseals_and_decodes_to_alice() {
    let answer = sam_logon_ex_answer(&opened()).unwrap();
    let answer = decrypt_user_session_key(&array(SESSION_KEY), answer);
    let LogonAnswer::Valid(pac, key) = answer else {
        panic!("refused: {answer:?}");
    };
    assert_eq!(
        (pac.account.as_str(), pac.domain.as_str()),
        ("alice", "SMB3DAD")
    );
    let domain = "S-1-5-21-4046125752-917642242-2600917458";
    assert_eq!(pac.user_sid.to_string(), format!("{domain}-1103"));
    let groups: Vec<String> = pac.group_sids.iter().map(ToString::to_string).collect();
    assert_eq!(groups, [format!("{domain}-513"), format!("{domain}-1104")]);
    assert_eq!(key, array::<16>(SESSION_BASE_KEY));
}

#[test]
fn a_changed_answer_is_refused() {
    let verifier = unhex(ANSWER_VERIFIER);
    let sealed = unhex(SEALED_ANSWER);
    for at in [0, 17, sealed.len() / 2, sealed.len() - 1] {
        let mut copy = sealed.clone();
        copy[at] ^= 0x20;
        let result = Sealer::client(Zeroizing::new(array(SESSION_KEY)))
            .at_sequence(1)
            .unseal(&mut copy, &verifier[8..]);
        assert_eq!(result, Err(MessageAltered), "byte {at}");
    }
    // The right answer under the wrong sequence number (a replay) or key.
    let mut copy = sealed.clone();
    let replayed = Sealer::client(Zeroizing::new(array(SESSION_KEY)))
        .at_sequence(3)
        .unseal(&mut copy, &verifier[8..]);
    assert_eq!(replayed, Err(MessageAltered));
    let mut copy = sealed;
    let wrong_key = Sealer::client(Zeroizing::new([0; 16]))
        .at_sequence(1)
        .unseal(&mut copy, &verifier[8..]);
    assert_eq!(wrong_key, Err(MessageAltered));
}

#[test]
fn every_truncation_and_byte_change_of_the_answer_is_handled() {
    let stub = opened();
    for cut in 0..stub.len() {
        // Never a panic; a cut answer is an error or (when the cut leaves a non-zero
        // "status") a refusal, never alice's identity.
        if let Ok(LogonAnswer::Valid(..)) = sam_logon_ex_answer(&stub[..cut]) {
            panic!("a cut at {cut} still decoded");
        }
    }
    for at in 0..stub.len() {
        for value in [0x00, 0xff, 0x7f] {
            let mut copy = stub.clone();
            copy[at] = value;
            let _ = sam_logon_ex_answer(&copy);
        }
    }
}
