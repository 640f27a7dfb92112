//! Asks a DC to check an NTLMv2 logon made up here from a user's password, over a Netlogon
//! secure channel: `netlogon_logon DC-IP DOMAIN COMPUTER MACHINE-PASSWORD USER PASSWORD`.
//! A manual check of the client against a real DC.

use std::time::Duration;

use smb3d_auth::netlogon::{DcConfig, NetlogonClient, NetworkLogon};
use smb3d_auth::ntlm::crypto::{nt_hash, nt_proof_str, ntowf_v2};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, dc, domain, computer, machine, user, password] = &args[..] else {
        eprintln!("usage: netlogon_logon DC-IP DOMAIN COMPUTER MACHINE-PASSWORD USER PASSWORD");
        std::process::exit(2);
    };
    let client = NetlogonClient::new(DcConfig {
        address: dc.parse().expect("an IP address"),
        domain: domain.clone(),
        computer: computer.clone(),
        machine_nt_hash: nt_hash(machine),
        timeout: Duration::from_secs(5),
    });
    let challenge = [1, 2, 3, 4, 5, 6, 7, 8];
    // NTLMv2_CLIENT_CHALLENGE: version 1/1, zeros, a timestamp, a client challenge, no AV pairs.
    let mut blob = vec![1, 1, 0, 0, 0, 0, 0, 0];
    blob.extend_from_slice(&134_000_000_000_000_000u64.to_le_bytes());
    blob.extend_from_slice(&[9; 8]);
    blob.extend_from_slice(&[0; 4]);
    blob.extend_from_slice(&[0; 4]);
    let key = ntowf_v2(&nt_hash(password), user, domain);
    let mut nt_response = nt_proof_str(&key, &challenge, &blob).to_vec();
    nt_response.extend_from_slice(&blob);
    for _ in 0..2 {
        let answer = client.logon(&NetworkLogon {
            domain,
            user,
            workstation: "WS1",
            challenge,
            nt_response: &nt_response,
            lm_response: &[],
        });
        println!("{answer:?}");
    }
}
