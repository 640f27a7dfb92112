//! One account name, fixed at logon: the user database finds an account by a name compared as
//! Windows compares account names (each character upper-cased by its simple mapping, the
//! Uppercase(User) of NTOWFv2), and the session then acts as the account under the
//! database's own spelling, which every share list (`valid_users`, `read_list`, `write_list`)
//! compares with the same folding. A spelling that looks like the account's but folds
//! otherwise (K U+212A KELVIN SIGN for 'k', ſ U+017F LATIN SMALL LETTER LONG S for 's') is no
//! account, as on Windows and Samba; one that folds the same (any case of the letters, non-ASCII
//! ones included) is that account, with its rights and no others.

use std::sync::Arc;

use smb3d_auth::UserDb;
use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::share::Share;
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::tree_connect::TreeConnectResponse;
use smb3d_testkit::client::Client;
use smb3d_testkit::harness::{self, SHARE, SHARE_UNC, TestServer};
use smb3d_testkit::ntlm::Logon;

const READ_ONLY: AccessMask =
    AccessMask(AccessMask::FILE_GENERIC_READ.0 | AccessMask::FILE_GENERIC_EXECUTE.0);

/// A server whose database holds `users` (name, password) and whose share is set by `share`.
fn server(users: &[(&str, &str)], share: impl FnOnce(&mut Share)) -> TestServer {
    let mut db = UserDb::new("/nonexistent/smb3d-users");
    for (uid, (name, password)) in (5000..).zip(users) {
        db.add_or_update(name, password, Some(uid)).unwrap();
    }
    let server =
        TestServer::with_credentials(harness::settings(), Arc::new(NullProvider), Arc::new(db))
            .unwrap();
    let mut disk = Share::disk(SHARE, Arc::new(server.vfs.clone()));
    share(&mut disk);
    server
        .server
        .replace_shares(vec![Arc::new(Share::ipc()), Arc::new(disk)]);
    server
}

/// Logs on as `user` and connects to the share: the MaximalAccess the share gives, or the
/// status that refused the logon or the connect. The connection stays in `kept`.
fn connect_as<'s>(
    server: &'s TestServer,
    kept: &mut Vec<Client<'s>>,
    user: &str,
    password: &str,
) -> Result<AccessMask, NtStatus> {
    kept.push(Client::new(server.connect()));
    let client = kept.last_mut().expect("just pushed");
    client.negotiate(Dialect::SMB3_1_1);
    let logon = Logon {
        user,
        password,
        domain: "WORKGROUP",
        anonymous: false,
        mic: true,
        spnego: true,
    };
    let status = client.login_as(&logon).status();
    if status != Some(NtStatus::SUCCESS) {
        return Err(status.unwrap_or(NtStatus::UNSUCCESSFUL));
    }
    let body = smb3d_testkit::seeds::tree_connect_body(SHARE_UNC);
    let pdu = client.pdu(
        smb3d_smb2::Command::TREE_CONNECT,
        &body,
        smb3d_smb2::header::HeaderFlags::SIGNED,
    );
    let reply = client.send(pdu);
    let response = reply.responses.last().ok_or(NtStatus::UNSUCCESSFUL)?;
    if response.status() != NtStatus::SUCCESS {
        return Err(response.status());
    }
    Ok(TreeConnectResponse::decode(&response.pdu)
        .map_err(|_| NtStatus::UNSUCCESSFUL)?
        .maximal_access)
}

/// The names the server's sessions act as, sorted.
fn session_names(server: &TestServer) -> Vec<String> {
    let mut names: Vec<String> = server
        .server
        .snapshot()
        .sessions
        .into_iter()
        .filter_map(|s| s.user.and_then(|u| u.name))
        .collect();
    names.sort();
    names
}

#[test]
fn a_kelvin_sign_is_not_a_k() {
    let server = server(&[("kate", "kate-pw")], |share| {
        share.read_list = vec!["kate".into()];
    });
    let mut kept = Vec::new();
    assert_eq!(
        connect_as(&server, &mut kept, "kate", "kate-pw"),
        Ok(READ_ONLY)
    );
    assert_eq!(
        connect_as(&server, &mut kept, "KATE", "kate-pw"),
        Ok(READ_ONLY)
    );
    // With the password of kate, a lookalike of her name is no account at all.
    assert_eq!(
        connect_as(&server, &mut kept, "\u{212A}ate", "kate-pw"),
        Err(NtStatus::LOGON_FAILURE)
    );
    assert_eq!(session_names(&server), ["kate", "kate"]);
}

#[test]
fn a_long_s_is_not_an_s() {
    let server = server(&[("sam", "sam-pw")], |share| {
        share.read_list = vec!["SAM".into()];
    });
    let mut kept = Vec::new();
    assert_eq!(
        connect_as(&server, &mut kept, "\u{17F}am", "sam-pw"),
        Err(NtStatus::LOGON_FAILURE)
    );
    assert_eq!(
        connect_as(&server, &mut kept, "Sam", "sam-pw"),
        Ok(READ_ONLY)
    );
    assert_eq!(session_names(&server), ["sam"]);
}

#[test]
fn share_lists_fold_non_ascii_names_as_the_database_does() {
    let server = server(&[("Jörg", "jörg-pw"), ("ölaf", "ölaf-pw")], |share| {
        share.read_only = true;
        share.write_list = vec!["JÖRG".into()];
        share.valid_users = vec!["jörg".into(), "ÖLAF".into()];
    });
    let mut kept = Vec::new();
    assert_eq!(
        connect_as(&server, &mut kept, "jörg", "jörg-pw"),
        Ok(AccessMask::FILE_ALL_ACCESS)
    );
    assert_eq!(
        connect_as(&server, &mut kept, "Ölaf", "ölaf-pw"),
        Ok(READ_ONLY)
    );
    assert_eq!(session_names(&server), ["Jörg", "ölaf"]);
}
