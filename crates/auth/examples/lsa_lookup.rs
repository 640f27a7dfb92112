//! Asks a DC for SIDs of names and names of SIDs over the secure channel's lsarpc binding:
//! `lsa_lookup DC-IP DOMAIN COMPUTER MACHINE-PASSWORD NAME-OR-SID...` (an argument starting
//! with `S-` is a SID). A manual check of the client against a real DC.

use std::time::Duration;

use smb3d_auth::netlogon::{DcConfig, NetlogonClient};
use smb3d_auth::ntlm::crypto::nt_hash;
use smb3d_dtyp::Sid;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, dc, domain, computer, machine, items @ ..] = &args[..] else {
        eprintln!("usage: lsa_lookup DC-IP DOMAIN COMPUTER MACHINE-PASSWORD NAME-OR-SID...");
        std::process::exit(2);
    };
    let client = NetlogonClient::new(DcConfig {
        address: dc.parse().expect("an IP address"),
        domain: domain.clone(),
        computer: computer.clone(),
        machine_nt_hash: nt_hash(machine),
        timeout: Duration::from_secs(5),
    });
    let (sids, names): (Vec<&String>, Vec<&String>) =
        items.iter().partition(|i| i.starts_with("S-"));
    let sids: Vec<Sid> = sids.iter().map(|s| s.parse().expect("a SID")).collect();
    let names: Vec<String> = names.into_iter().cloned().collect();
    // Twice: the second call reuses the channel.
    for _ in 0..2 {
        println!("names: {:?}", client.lookup_names(&names));
        println!("sids: {:?}", client.lookup_sids(&sids));
    }
}
