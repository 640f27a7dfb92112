//! SPNEGO decoders and the acceptor's first step: never panic, and a first token never
//! completes an authentication.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use smb3d_auth::spnego::{NegTokenInit2, NegTokenResp, NegotiationToken};
use smb3d_auth::{Account, Acceptor, CredentialStore, ServerIdentity, Step};
use smb3d_wire::FileTime;

struct NoUsers;

impl CredentialStore for NoUsers {
    fn account(&self, _user: &str) -> Option<Account> {
        None
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(NegotiationToken::Resp(resp)) = NegotiationToken::decode(data) {
        assert_eq!(NegTokenResp::decode(&resp.encode()).ok(), Some(resp));
    }
    if let Ok(init2) = NegTokenInit2::decode(data) {
        assert_eq!(NegTokenInit2::decode(&init2.encode()).ok(), Some(init2));
    }
    let identity = ServerIdentity {
        netbios_domain: "WORKGROUP".into(),
        netbios_name: "FUZZ".into(),
        dns_domain: "example.test".into(),
        dns_name: "fuzz.example.test".into(),
    };
    let mut acceptor = Acceptor::new(Arc::new(identity), Arc::new(NoUsers));
    assert!(!matches!(
        acceptor.step(data, FileTime(0)),
        Ok(Step::Done { .. })
    ));
});
