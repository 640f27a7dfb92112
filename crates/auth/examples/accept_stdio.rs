//! Runs one acceptor exchange over stdin/stdout, so that other clients (Python `pyspnego`,
//! see `tests/pyspnego_fixtures.py`) can drive it.
//!
//! ```text
//! accept_stdio USER:PASSWORD CHALLENGE_HEX FILETIME
//! ```
//!
//! Each input line is a client token in hex. Each output line is `continue HEX`,
//! `done HEX USER DOMAIN SESSION_KEY_HEX` (`-` for an empty token, `anonymous -` for an
//! anonymous user), or `error REASON`.
//! The server names are NetBIOS domain WORKGROUP, NetBIOS name SMB3D, DNS domain
//! example.test and DNS name smb3d.example.test.

use std::io::{self, BufRead, Write};
use std::process::ExitCode;
use std::sync::Arc;

use smb3d_auth::{
    Acceptor, Account, AuthError, CredentialStore, Principal, RandomSource, ServerIdentity, Step,
};
use smb3d_wire::FileTime;

struct OneUser {
    name: String,
    nt_hash: [u8; 16],
}

impl CredentialStore for OneUser {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, &self.name, self.nt_hash)
    }
}

struct Fixed([u8; 8]);

impl RandomSource for Fixed {
    fn fill(&self, buf: &mut [u8]) -> Result<(), AuthError> {
        for (b, v) in buf.iter_mut().zip(self.0.iter().cycle()) {
            *b = *v;
        }
        Ok(())
    }
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [credentials, challenge, time] => credentials.split_once(':').and_then(|(u, p)| {
            let challenge: [u8; 8] = from_hex(challenge)?.try_into().ok()?;
            Some((
                u.to_owned(),
                p.to_owned(),
                challenge,
                time.parse::<u64>().ok()?,
            ))
        }),
        _ => None,
    };
    let Some((name, password, challenge, time)) = parsed else {
        eprintln!("usage: accept_stdio USER:PASSWORD CHALLENGE_HEX FILETIME");
        return ExitCode::from(2);
    };
    let store = OneUser {
        name,
        nt_hash: *smb3d_auth::ntlm::crypto::nt_hash(&password),
    };
    let identity = ServerIdentity {
        netbios_domain: "WORKGROUP".into(),
        netbios_name: "SMB3D".into(),
        dns_domain: "example.test".into(),
        dns_name: "smb3d.example.test".into(),
    };
    let mut acceptor = Acceptor::with_random(
        Arc::new(identity),
        Arc::new(store),
        Arc::new(Fixed(challenge)),
    );
    let mut out = io::stdout().lock();
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Some(token) = from_hex(line.trim()) else {
            let _ = writeln!(out, "error not hex");
            continue;
        };
        let reply = match acceptor.step(&token, FileTime(time)) {
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
                // An empty final token (bare NTLMSSP) prints as "-".
                let token = if token.is_empty() {
                    "-".to_owned()
                } else {
                    to_hex(&token)
                };
                format!("done {token} {who} {}", to_hex(&session_key))
            }
            Err(e) => format!("error {e}"),
        };
        let _ = writeln!(out, "{reply}");
        let _ = out.flush();
    }
    ExitCode::SUCCESS
}
