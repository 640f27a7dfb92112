//! Replays exchanges recorded with other clients driving the acceptor:
//!
//! * Python pyspnego 0.12 (tests/pyspnego_fixtures.py through examples/accept_stdio.rs wrote
//!   tests/fixtures/pyspnego.txt);
//! * the `sspi` crate 0.23, NTLM and Negotiate (tests/sspi_fixtures wrote
//!   tests/fixtures/sspi.txt).
//!
//! Both clients checked the server's mechListMIC and derived the same session key when the
//! exchanges were recorded; here the acceptor, given the same challenge and time, must answer
//! every recorded client token with the recorded bytes.

use std::sync::Arc;

use smb3d_auth::{
    Acceptor, Account, AuthError, CredentialStore, Principal, RandomSource, ServerIdentity, Step,
};
use smb3d_wire::FileTime;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

struct Fixed([u8; 8]);

impl RandomSource for Fixed {
    fn fill(&self, buf: &mut [u8]) -> Result<(), AuthError> {
        buf.copy_from_slice(&self.0[..buf.len()]);
        Ok(())
    }
}

struct OneUser(String, [u8; 16]);

impl CredentialStore for OneUser {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, &self.0, self.1)
    }
}

/// The identity accept_stdio announces.
fn identity() -> Arc<ServerIdentity> {
    Arc::new(ServerIdentity {
        netbios_domain: "WORKGROUP".into(),
        netbios_name: "SMB3D".into(),
        dns_domain: "example.test".into(),
        dns_name: "smb3d.example.test".into(),
    })
}

/// Formats a step the way accept_stdio prints it.
fn render(step: Result<Step, AuthError>) -> String {
    let to_hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    match step {
        Ok(Step::Continue { token }) => format!("continue {}", to_hex(&token)),
        Ok(Step::Done {
            token,
            principal,
            session_key,
        }) => {
            let who = match principal {
                Principal::User {
                    name,
                    claimed_domain,
                } => format!("{name} {claimed_domain}"),
                Principal::Anonymous => "anonymous -".to_owned(),
                Principal::Guest => "guest -".to_owned(),
            };
            let token = if token.is_empty() {
                "-".to_owned()
            } else {
                to_hex(&token)
            };
            format!("done {token} {who} {}", to_hex(&session_key))
        }
        Err(e) => format!("error {e}"),
    }
}

/// Replays one fixture file; returns how many scenarios it held and how many succeeded.
fn replay(fixtures: &str) -> (usize, usize) {
    let mut scenarios = 0;
    let mut successes = 0;
    let mut current: Option<(Acceptor, FileTime)> = None;
    let mut last_reply = String::new();
    for line in fixtures.lines() {
        let Some((kind, rest)) = line.split_once(' ') else {
            continue;
        };
        match kind {
            "scenario" => scenarios += 1,
            "account" => {
                let mut parts = rest.split(' ');
                let (user, password) = parts.next().unwrap().split_once(':').unwrap();
                let challenge: [u8; 8] = hex(parts.next().unwrap()).try_into().unwrap();
                let time = FileTime(parts.next().unwrap().parse().unwrap());
                let store = OneUser(
                    user.to_owned(),
                    *smb3d_auth::ntlm::crypto::nt_hash(password),
                );
                let acceptor =
                    Acceptor::with_random(identity(), Arc::new(store), Arc::new(Fixed(challenge)));
                current = Some((acceptor, time));
            }
            "client" => {
                let (acceptor, time) = current.as_mut().unwrap();
                last_reply = render(acceptor.step(&hex(rest), *time));
            }
            "server" => assert_eq!(last_reply, rest),
            "client_session_key" => {
                assert!(last_reply.ends_with(rest), "{last_reply}");
                successes += 1;
            }
            _ => {}
        }
    }
    (scenarios, successes)
}

#[test]
fn pyspnego_exchanges_replay_byte_for_byte() {
    assert_eq!(replay(include_str!("fixtures/pyspnego.txt")), (5, 3));
}

#[test]
fn sspi_exchanges_replay_byte_for_byte() {
    assert_eq!(replay(include_str!("fixtures/sspi.txt")), (4, 3));
}
