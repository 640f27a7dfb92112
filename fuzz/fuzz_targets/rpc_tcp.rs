#![no_main]
//! An ncacn_ip_tcp association (the witness service's and endpoint mapper's listener) fed a
//! stream of PDUs as the listener delimits them: binds with NTLMSSP verifiers through the real
//! acceptor, auth3, sealed and plain requests with hostile sec_trailers, fragments. The first
//! PDU's sec_trailer is also decoded on its own. Nothing may panic; every call is answered
//! (signed and sealed when the association has security).

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use smb3d_auth::ntlm::crypto::nt_hash;
use smb3d_auth::ntlm::rpc::authenticators;
use smb3d_auth::{Acceptor, Account, CredentialStore, ServerIdentity};
use smb3d_rpc::epmapper::EPMAPPER;
use smb3d_rpc::tcp::{Association, AuthTrailer, Outcome, pdu_length};
use smb3d_rpc::witness::WITNESS;
use smb3d_wire::FileTime;

struct OneUser;

impl CredentialStore for OneUser {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, "alice", *nt_hash("Secret1!"))
    }
}

fn now() -> FileTime {
    FileTime(0x01dc_0000_0000_0000)
}

fuzz_target!(|data: &[u8]| {
    let _ = AuthTrailer::decode(data);
    let identity = Arc::new(ServerIdentity {
        netbios_domain: "WORKGROUP".into(),
        netbios_name: "FS".into(),
        dns_domain: String::new(),
        dns_name: "fs".into(),
    });
    let store: Arc<dyn CredentialStore> = Arc::new(OneUser);
    let mut association = Association::new(
        vec![EPMAPPER, WITNESS],
        4135,
        7,
        authenticators(
            Arc::new(move || Acceptor::new(identity.clone(), store.clone())),
            now,
        ),
    );
    let mut rest = data;
    while rest.len() >= 16 {
        let Some(len) = pdu_length(&rest[..16]) else {
            return;
        };
        if len > usize::from(association.max_fragment()) || len > rest.len() {
            return;
        }
        let (pdu, tail) = rest.split_at(len);
        rest = tail;
        match association.handle(pdu) {
            Outcome::Close(_) => return,
            Outcome::Call(call) => {
                let answer = call.stub.clone();
                let _ = association.response(&call, &answer);
                let _ = association.fault(&call, 5);
            }
            Outcome::Nothing | Outcome::Send(_) => {}
        }
    }
});
