//! Golden vectors: the captures of `captures/` (rpcclient, smbclient -L, Samba's Python client
//! and hand-made probes against a reference Samba 4.17) replayed through a pipe endpoint whose
//! directory holds the same data Samba had. Every answer must match Samba's byte for byte
//! (referent ids and the association group aside), or, where smb3d deliberately differs, the
//! answer `tools/expected.py` derived from Samba's with Samba's own NDR library.

mod common;

/// Replays a capture and checks that every recorded answer was compared.
fn check(capture: &str, answers: usize, differences: usize) {
    assert_eq!(common::replay(capture), (answers, differences));
}

#[test]
fn rpcclient_session() {
    check(include_str!("captures/samba-rpcclient.txt"), 20, 9);
}

#[test]
fn smbclient_list() {
    check(include_str!("captures/samba-smbclient.txt"), 2, 1);
}

#[test]
fn samba_python_client() {
    check(include_str!("captures/samba-pyclient.txt"), 85, 31);
}

#[test]
fn protocol_probes() {
    check(include_str!("captures/samba-probes.txt"), 63, 37);
}
