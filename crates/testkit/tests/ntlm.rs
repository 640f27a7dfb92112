//! The test NTLM client against the server's acceptor: NTLMv2 with and without MIC, bare and in
//! SPNEGO, anonymous, a wrong password and a disabled account; the keys both sides derive
//! agree.

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

/// Alice, whose account is disabled.
struct DisabledAlice;

impl CredentialStore for DisabledAlice {
    fn account(&self, user: &str) -> Option<Account> {
        Alice.account(user).map(|a| Account {
            disabled: true,
            ..a
        })
    }
}

struct Fixed;

impl RandomSource for Fixed {
    fn fill(&self, buf: &mut [u8]) -> Result<(), AuthError> {
        buf.fill(0x5a);
        Ok(())
    }
}

fn acceptor(store: Arc<dyn CredentialStore>) -> Acceptor {
    let identity = ServerIdentity {
        netbios_domain: "WORKGROUP".into(),
        netbios_name: "SERVER".into(),
        dns_domain: String::new(),
        dns_name: "server".into(),
    };
    Acceptor::with_random(Arc::new(identity), store, Arc::new(Fixed))
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
    exchange_with(Arc::new(Alice), logon)
}

fn exchange_with(
    store: Arc<dyn CredentialStore>,
    logon: &Logon<'_>,
) -> (Result<Step, AuthError>, [u8; 16]) {
    let now = FileTime(0x01dc_0000_0000_0000);
    let mut server = acceptor(store);
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

/// As Samba and Windows answer: STATUS_ACCOUNT_DISABLED only to a logon that proves the
/// password, STATUS_LOGON_FAILURE to one that does not.
#[test]
fn a_disabled_account_is_refused_once_its_password_is_proven() {
    for (spnego, mic) in [(false, false), (true, true)] {
        let (result, _) = exchange_with(Arc::new(DisabledAlice), &logon(spnego, mic));
        assert!(
            matches!(result, Err(AuthError::AccountDisabled)),
            "spnego {spnego}, mic {mic}: {result:?}"
        );
    }
    let wrong = Logon {
        password: "wrong",
        ..logon(true, true)
    };
    let (result, _) = exchange_with(Arc::new(DisabledAlice), &wrong);
    assert!(matches!(result, Err(AuthError::LogonFailure)), "{result:?}");
    assert_eq!(
        AuthError::AccountDisabled.status(),
        smb3d_dtyp::NtStatus::ACCOUNT_DISABLED
    );
}
