//! Session ids (MS-SMB2 3.3.5.5.1): unique, never 0, and within 32 bits as Samba's are, so that
//! a client keeping only the low half (smbtorture smb2.session-id stores the id it restores in
//! a uint32_t) names its session again; a request naming an id that is no session fails with
//! STATUS_USER_SESSION_DELETED and leaves the session as it was (3.3.5.2.9).

use std::collections::HashSet;
use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_crypto::{
    Cipher, CryptoError, CryptoProvider, MessageCipher, MessageSigner, SigningAlgorithm,
};
use smb3d_dtyp::NtStatus;
use smb3d_smb2::Command;
use smb3d_smb2::create::CreateDisposition;
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::query_info::InfoType;
use smb3d_testkit::client::{Client, TEST_USER};
use smb3d_testkit::harness::{self, SHARE_UNC, TestServer};
use smb3d_testkit::seeds::{close_body, query_info_body};

/// FileAllInformation (MS-FSCC 2.4.2).
const FILE_ALL_INFORMATION: u8 = 18;

/// The no-security provider with real randomness: the server draws where its ids start, as
/// it does in service.
struct RandomIds;

impl CryptoProvider for RandomIds {
    fn signer(&self, alg: SigningAlgorithm, key: &[u8; 16]) -> Box<dyn MessageSigner> {
        NullProvider.signer(alg, key)
    }

    fn cipher(&self, cipher: Cipher, key: &[u8]) -> Result<Box<dyn MessageCipher>, CryptoError> {
        NullProvider.cipher(cipher, key)
    }

    fn fill_random(&self, buf: &mut [u8]) {
        smb3d_crypto::default_provider().fill_random(buf);
    }
}

fn server() -> TestServer {
    TestServer::new(harness::settings(), Arc::new(RandomIds)).unwrap()
}

#[test]
fn session_ids_fit_in_32_bits_and_differ() {
    let server = server();
    let mut seen = HashSet::new();
    for _ in 0..16 {
        let mut client = Client::new(server.connect());
        client.negotiate(Dialect::SMB3_1_1);
        assert_eq!(
            client.login_as(&TEST_USER).status(),
            Some(NtStatus::SUCCESS)
        );
        let id = client.session_id;
        assert!(id != 0 && id <= u64::from(u32::MAX), "{id:#x}");
        assert!(seen.insert(id), "{id:#x} given twice");
    }
}

#[test]
fn a_wrong_session_id_fails_and_the_session_carries_on() {
    let server = server();
    let mut client = Client::new(server.connect());
    client.negotiate(Dialect::SMB3_1_1);
    client.login_as(&TEST_USER);
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    let file = client
        .create("sessid.tst", CreateDisposition::OVERWRITE_IF)
        .unwrap();

    // What smb2.session-id does: a QUERY_INFO under the id plus 1234, then the id as a
    // uint32_t holds it.
    let kept = u64::from(client.session_id as u32);
    client.session_id += 1234;
    let query = query_info_body(InfoType::FILE, FILE_ALL_INFORMATION, 4096);
    let wrong = client.call(Command::QUERY_INFO, &query, Some(file));
    assert_eq!(wrong.status(), Some(NtStatus::USER_SESSION_DELETED));
    client.session_id = kept;
    let close = client.call(Command::CLOSE, &close_body(), Some(file));
    assert_eq!(close.status(), Some(NtStatus::SUCCESS));
}
