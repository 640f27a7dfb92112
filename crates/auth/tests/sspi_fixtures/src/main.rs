//! Drives the smb3d-auth acceptor with the `sspi` crate's NTLM and SPNEGO (Negotiate)
//! clients and prints the exchanges in the format of tests/fixtures/pyspnego.txt.

use std::sync::Arc;

use smb3d_auth::{
    Account, Acceptor, AuthError, CredentialStore, Principal, RandomSource, ServerIdentity, Step,
};
use smb3d_wire::FileTime;
use sspi::builders::{AcquireCredentialsHandle, WithoutCredentialUse};
use sspi::credssp::SspiContext;
use sspi::ntlm::NtlmConfig;
use sspi::{
    AcquireCredentialsHandleResult, AuthIdentity, BufferType, ClientRequestFlags, CredentialUse,
    Credentials, DataRepresentation, InitializeSecurityContextResult, Negotiate, NegotiateConfig,
    Ntlm, Secret, SecurityBuffer, SecurityStatus, Sspi, SspiImpl, Username,
};

const CHALLENGE: [u8; 8] = [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef];
const TIME: u64 = 134_000_000_000_000_000;
const CLIENT_NAME: &str = "CLIENT";

struct Fixed;
impl RandomSource for Fixed {
    fn fill(&self, buf: &mut [u8]) -> Result<(), AuthError> {
        buf.copy_from_slice(&CHALLENGE[..buf.len()]);
        Ok(())
    }
}

struct OneUser;
impl CredentialStore for OneUser {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, "alice", *smb3d_auth::ntlm::crypto::nt_hash("Secret1!"))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn render(step: &Result<Step, AuthError>) -> String {
    match step {
        Ok(Step::Continue { token }) => format!("continue {}", hex(token)),
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
                hex(token)
            };
            format!("done {token} {who} {}", hex(session_key))
        }
        Err(e) => format!("error {e}"),
    }
}

fn run(name: &str, negotiate: bool, username: &str, password: &str, expect_success: bool) {
    let identity = ServerIdentity {
        netbios_domain: "WORKGROUP".into(),
        netbios_name: "SMB3D".into(),
        dns_domain: "example.test".into(),
        dns_name: "smb3d.example.test".into(),
    };
    let mut acceptor =
        Acceptor::with_random(Arc::new(identity), Arc::new(OneUser), Arc::new(Fixed));
    let ntlm_config = NtlmConfig {
        client_computer_name: Some(CLIENT_NAME.to_owned()),
    };
    let credentials = Credentials::AuthIdentity(AuthIdentity {
        username: Username::parse(username).unwrap(),
        password: Secret::from(password.to_owned()),
    });
    let mut client = if negotiate {
        SspiContext::Negotiate(
            Negotiate::new_client(NegotiateConfig::new(
                Box::new(ntlm_config),
                Some(String::from("ntlm,!kerberos")),
                CLIENT_NAME.into(),
            ))
            .unwrap(),
        )
    } else {
        SspiContext::Ntlm(Ntlm::with_config(ntlm_config))
    };
    let AcquireCredentialsHandleResult {
        credentials_handle: mut handle,
        ..
    } = AcquireCredentialsHandle::<'_, _, _, WithoutCredentialUse>::new()
        .with_auth_data(&credentials)
        .with_credential_use(CredentialUse::Outbound)
        .execute(&mut client)
        .unwrap();
    println!("scenario {name}");
    println!("account alice:Secret1! {} {TIME}", hex(&CHALLENGE));
    let mut input = [SecurityBuffer::new(Vec::new(), BufferType::Token)];
    let mut output = [SecurityBuffer::new(Vec::new(), BufferType::Token)];
    for _ in 0..4 {
        let mut builder = client
            .initialize_security_context()
            .with_credentials_handle(&mut handle)
            .with_context_requirements(
                ClientRequestFlags::MUTUAL_AUTH
                    | ClientRequestFlags::USE_SESSION_KEY
                    | ClientRequestFlags::INTEGRITY
                    | ClientRequestFlags::CONFIDENTIALITY,
            )
            .with_target_data_representation(DataRepresentation::Native)
            .with_target_name("cifs/smb3d.example.test")
            .with_input(&mut input)
            .with_output(&mut output);
        let InitializeSecurityContextResult { status, .. } = client
            .initialize_security_context_impl(&mut builder)
            .unwrap()
            .resolve_to_result()
            .unwrap();
        if status == SecurityStatus::CompleteNeeded || status == SecurityStatus::CompleteAndContinue
        {
            client.complete_auth_token(&mut output).unwrap();
        }
        if status == SecurityStatus::Ok && output[0].buffer.is_empty() {
            break;
        }
        let token = std::mem::take(&mut output[0].buffer);
        let step = acceptor.step(&token, FileTime(TIME));
        println!("client {}", hex(&token));
        println!("server {}", render(&step));
        match step {
            Ok(Step::Continue { token }) => input[0].buffer = token,
            Ok(Step::Done {
                token, session_key, ..
            }) => {
                assert!(expect_success, "{name}");
                if !token.is_empty() {
                    input[0].buffer = token;
                    let mut builder = client
                        .initialize_security_context()
                        .with_credentials_handle(&mut handle)
                        .with_context_requirements(
                            ClientRequestFlags::MUTUAL_AUTH
                                | ClientRequestFlags::USE_SESSION_KEY
                                | ClientRequestFlags::INTEGRITY
                                | ClientRequestFlags::CONFIDENTIALITY,
                        )
                        .with_target_data_representation(DataRepresentation::Native)
                        .with_target_name("cifs/smb3d.example.test")
                        .with_input(&mut input)
                        .with_output(&mut output);
                    let result = client
                        .initialize_security_context_impl(&mut builder)
                        .unwrap()
                        .resolve_to_result()
                        .unwrap();
                    assert_eq!(result.status, SecurityStatus::Ok, "{name}");
                }
                let key = client.query_context_session_key().unwrap();
                assert_eq!(key.session_key.as_ref(), &session_key[..], "{name}");
                println!("client_session_key {}", hex(&session_key));
                println!();
                return;
            }
            Err(_) => {
                assert!(!expect_success, "{name}");
                println!();
                return;
            }
        }
    }
    panic!("{name}: no result after four steps");
}

fn main() {
    println!("# Recorded by tests/sspi_fixtures with the sspi crate 0.23 as the client");
    println!();
    run("sspi-ntlm", false, "alice", "Secret1!", true);
    run(
        "sspi-ntlm-domain",
        false,
        "WORKGROUP\\alice",
        "Secret1!",
        true,
    );
    run("sspi-negotiate", true, "alice", "Secret1!", true);
    run(
        "sspi-negotiate-wrong-password",
        true,
        "alice",
        "secret",
        false,
    );
}
