//! The test NTLM client against the server's acceptor: NTLMv2 with and without MIC, bare and in
//! SPNEGO, anonymous, and a wrong password; the keys both sides derive agree.

use std::sync::Arc;

use smb3d_auth::ntlm::crypto::nt_hash;
use smb3d_auth::{
    Acceptor, Account, AuthError, CredentialStore, Principal, RandomSource, ServerIdentity, Step,
};
use smb3d_testkit::ntlm::{Logon, NtlmClient};
use smb3d_wire::FileTime;

struct Alice;

impl CredentialStore for Alice {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, "alice", *nt_hash("Secret1!"))
    }
}

struct Fixed;

impl RandomSource for Fixed {
    fn fill(&self, buf: &mut [u8]) -> Result<(), AuthError> {
        buf.fill(0x5a);
        Ok(())
    }
}

fn acceptor() -> Acceptor {
    let identity = ServerIdentity {
        netbios_domain: "WORKGROUP".into(),
        netbios_name: "SERVER".into(),
        dns_domain: String::new(),
        dns_name: "server".into(),
    };
    Acceptor::with_random(Arc::new(identity), Arc::new(Alice), Arc::new(Fixed))
}

fn logon(spnego: bool, mic: bool) -> Logon<'static> {
    Logon {
        user: "alice",
        password: "Secret1!",
        domain: "WORKGROUP",
        anonymous: false,
        mic,
        spnego,
    }
}

/// Runs both legs; the acceptor's result and the client's session key.
fn exchange(logon: &Logon<'_>) -> (Result<Step, AuthError>, [u8; 16]) {
    let now = FileTime(0x01dc_0000_0000_0000);
    let mut server = acceptor();
    let (client, first) = NtlmClient::start(logon.spnego);
    let Ok(Step::Continue { token }) = server.step(&first, now) else {
        panic!("the first leg continues");
    };
    let finished = client
        .authenticate(&token, logon)
        .expect("the challenge is answered");
    (server.step(&finished.token, now), finished.session_key)
}

#[test]
fn ntlmv2_logons_succeed_with_matching_keys() {
    for (spnego, mic) in [(false, false), (false, true), (true, false), (true, true)] {
        let (result, client_key) = exchange(&logon(spnego, mic));
        match result {
            Ok(Step::Done {
                principal,
                session_key,
                ..
            }) => {
                assert!(matches!(principal, Principal::User { .. }), "{principal:?}");
                assert_eq!(session_key, client_key, "spnego {spnego}, mic {mic}");
            }
            other => panic!("spnego {spnego}, mic {mic}: {other:?}"),
        }
    }
}

#[test]
fn anonymous_logon_is_anonymous() {
    let anonymous = Logon {
        anonymous: true,
        ..logon(true, false)
    };
    let (result, client_key) = exchange(&anonymous);
    let Ok(Step::Done {
        principal,
        session_key,
        ..
    }) = result
    else {
        panic!("{result:?}");
    };
    assert_eq!(principal, Principal::Anonymous);
    assert_eq!(session_key, client_key);
}

#[test]
fn wrong_password_fails() {
    let wrong = Logon {
        password: "wrong",
        ..logon(false, true)
    };
    assert!(matches!(exchange(&wrong).0, Err(AuthError::LogonFailure)));
}
