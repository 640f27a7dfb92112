//! NTLM message decoders and the acceptor's AUTHENTICATE handling: never panic, and an
//! arbitrary AUTHENTICATE never authenticates a user (only an anonymous logon may succeed).
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use smb3d_auth::ntlm::{
    AuthenticateMessage, AvPairs, ChallengeMessage, NegotiateFlags, NegotiateMessage, Version,
};
use smb3d_auth::{
    Account, Acceptor, AuthError, CredentialStore, Principal, RandomSource, ServerIdentity, Step,
};
use smb3d_wire::FileTime;

struct OneUser;

impl CredentialStore for OneUser {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, "alice", *smb3d_auth::ntlm::crypto::nt_hash("Secret1!"))
    }
}

struct Fixed;

impl RandomSource for Fixed {
    fn fill(&self, buf: &mut [u8]) -> Result<(), AuthError> {
        buf.fill(0x5a);
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = NegotiateMessage::decode(data);
    let _ = ChallengeMessage::decode(data);
    if let Ok(auth) = AuthenticateMessage::decode(data) {
        for pair in AvPairs::new(auth.nt_challenge_response.get(44..).unwrap_or_default()) {
            if pair.is_err() {
                break;
            }
        }
    }
    let identity = ServerIdentity {
        netbios_domain: "WORKGROUP".into(),
        netbios_name: "FUZZ".into(),
        dns_domain: "example.test".into(),
        dns_name: "fuzz.example.test".into(),
    };
    let mut acceptor =
        Acceptor::with_random(Arc::new(identity), Arc::new(OneUser), Arc::new(Fixed));
    let negotiate = NegotiateMessage {
        flags: NegotiateFlags(0x6208_8215),
        domain: &[],
        workstation: &[],
        version: Some(Version::SERVER),
    }
    .encode()
    .unwrap_or_default();
    if acceptor.step(&negotiate, FileTime(0)).is_err() {
        return;
    }
    if let Ok(Step::Done { principal, .. }) = acceptor.step(data, FileTime(0)) {
        assert_eq!(principal, Principal::Anonymous);
    }
});
