//! The Kerberos acceptor on hostile input: keytab files, GSS-framed AP-REQs, and SPNEGO
//! NegTokenInits carrying them, decoded and checked against the key of a real keytab (the
//! captured exchange of crates/auth/tests/kerberos.rs). Never panics, never allocates out of
//! proportion, and only an input carrying the captured authenticator (its encrypted end,
//! whose HMAC the acceptor checks) can authenticate: any other that completes is a forgery.
//! The framing around it (SPNEGO fields, AP options) is not integrity-protected by Kerberos.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use smb3d_auth::krb5::{KerberosService, Keytab};
use smb3d_auth::{Acceptor, Account, CredentialStore, OsRandom, ServerIdentity, Step};
use smb3d_wire::FileTime;

const KEYTAB: &[u8] = include_bytes!("../../crates/auth/tests/fixtures/krb5/cifs_filesrv.keytab");
/// The capture's time: the captured ticket is valid then.
const CAPTURED: i64 = 1_795_788_502;

struct Alice;

impl CredentialStore for Alice {
    fn account(&self, _user: &str) -> Option<Account> {
        None
    }
    fn uid(&self, user: &str) -> Option<u32> {
        (user == "alice").then_some(1000)
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = Keytab::parse(data);
    let keytab = Keytab::parse(KEYTAB).expect("the fixture keytab");
    let service = Arc::new(KerberosService::new("SMB3D.TEST".into(), keytab));
    let captured = include_str!("../../crates/auth/tests/fixtures/krb5/smbclient_ap_req.hex");
    let captured: Vec<u8> = (0..captured.trim().len() / 2)
        .filter_map(|i| u8::from_str_radix(captured.get(2 * i..2 * i + 2)?, 16).ok())
        .collect();
    let authenticator_end = &captured[captured.len() - 48..];
    let carries_capture = data.windows(48).any(|w| w == authenticator_end);
    let now = FileTime(((CAPTURED + 11_644_473_600) * 10_000_000) as u64);
    let _ = service.accept(data, CAPTURED, &OsRandom);
    let identity = ServerIdentity {
        netbios_domain: "SMB3D".into(),
        netbios_name: "FUZZ".into(),
        dns_domain: String::new(),
        dns_name: "fuzz".into(),
    };
    let mut acceptor =
        Acceptor::new(Arc::new(identity), Arc::new(Alice)).with_kerberos(Some(service));
    let done = matches!(acceptor.step(data, now), Ok(Step::Done { .. }));
    assert!(
        !done || carries_capture,
        "an input without the captured authenticator authenticated"
    );
});
