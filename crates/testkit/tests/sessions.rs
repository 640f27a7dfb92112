//! Who a session acts for (issue 16, items 1, 9 and 14), over the in-memory server: a
//! re-authentication renews the session's user or drops it to anonymous, never makes it
//! another user's nor gives an anonymous session a user; its tree connects then allow what the
//! new identity may have; a logon whose user has no account to act as fails; PreviousSessionId
//! ends only a session of the same user; a disconnected durable open goes back only to its
//! opener; persistent FileIds cannot be guessed from one another.

use std::sync::Arc;

use smb3d_auth::ntlm::crypto::nt_hash;
use smb3d_auth::{Account, CredentialStore};
use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::Settings;
use smb3d_server::share::Share;
use smb3d_smb2::Command;
use smb3d_smb2::create::{
    CreateContext, CreateContexts, CreateDisposition, CreateOptions, CreateRequest, CreateResponse,
    ImpersonationLevel, OplockLevel, ShareAccess,
};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::header::HeaderFlags;
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::session_setup::{SessionFlags, SessionSetupResponse};
use smb3d_testkit::client::{Client, TEST_USER};
use smb3d_testkit::harness::{self, PASSWORD, SHARE, SHARE_UNC, TestServer, USER};
use smb3d_testkit::ntlm::Logon;
use smb3d_testkit::packet::body;
use smb3d_testkit::seeds::{
    create_body, negotiate_body, read_body, set_info_body, tree_connect_body,
};

/// The second user of [`Users`].
const OTHER: Logon<'static> = Logon {
    user: "other",
    ..TEST_USER
};

const ANONYMOUS: Logon<'static> = Logon {
    user: "",
    password: "",
    domain: "",
    anonymous: true,
    mic: false,
    spnego: false,
};

/// The test user and `other`, each with a uid of its own.
struct Users;

impl CredentialStore for Users {
    fn account(&self, user: &str) -> Option<Account> {
        ["tester", "other"]
            .into_iter()
            .find_map(|name| Account::if_named(user, name, *nt_hash(PASSWORD)))
    }

    fn uid(&self, user: &str) -> Option<u32> {
        match user {
            "tester" => Some(4242),
            "other" => Some(4243),
            _ => None,
        }
    }
}

fn server() -> TestServer {
    TestServer::with_credentials(harness::settings(), Arc::new(NullProvider), Arc::new(Users))
        .unwrap()
}

/// Serves the share as `change` makes it, with IPC$, to tree connects from now on.
fn reshare(server: &TestServer, change: impl FnOnce(&mut Share)) {
    let mut share = Share::disk(SHARE, Arc::new(server.vfs.clone()));
    change(&mut share);
    server
        .server
        .replace_shares(vec![Arc::new(Share::ipc()), Arc::new(share)]);
}

/// A 3.1.1 client logged on as `logon` (no tree connect).
fn logged_on<'s>(server: &'s TestServer, logon: &Logon<'_>) -> Client<'s> {
    let mut client = Client::new(server.connect());
    client.negotiate(Dialect::SMB3_1_1);
    assert_eq!(client.login_as(logon).status(), Some(NtStatus::SUCCESS));
    client
}

fn read_file(client: &mut Client<'_>, file: FileId) -> Option<NtStatus> {
    client
        .call(Command::READ, &read_body(0, 4), Some(file))
        .status()
}

/// Opens `dir\file.txt` (readable by everyone) for reading.
fn open_for_reading(client: &mut Client<'_>) -> Result<FileId, NtStatus> {
    let body = create_body(
        "dir\\file.txt",
        AccessMask::FILE_GENERIC_READ,
        CreateDisposition::OPEN,
        CreateOptions::NON_DIRECTORY_FILE,
    );
    let reply = client.call(Command::CREATE, &body, None);
    let response = reply.responses.last().ok_or(NtStatus::UNSUCCESSFUL)?;
    if response.status() != NtStatus::SUCCESS {
        return Err(response.status());
    }
    Ok(CreateResponse::decode(&response.pdu).unwrap().file_id)
}

/// TREE_CONNECT to `path`, unsigned (a null session has no key, and this client signs with
/// no real key), making the tree current on success.
fn tree_connect_unsigned(client: &mut Client<'_>, path: &str) -> Option<NtStatus> {
    let reply = client.call(Command::TREE_CONNECT, &tree_connect_body(path), None);
    let last = reply.responses.last()?;
    if last.status() == NtStatus::SUCCESS {
        client.tree_id = last.header.tree_id;
    }
    Some(last.status())
}

/// FilePositionInformation, which any open may set: what only a read-only tree refuses.
fn set_position(client: &mut Client<'_>, file: FileId) -> Option<NtStatus> {
    let body = set_info_body(14, &0u64.to_le_bytes());
    client.call(Command::SET_INFO, &body, Some(file)).status()
}

const IPC: &str = "\\\\testkit\\IPC$";

#[test]
fn a_session_never_becomes_another_users() {
    let server = server();
    let mut client = logged_on(&server, &TEST_USER);
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    assert_eq!(
        client.reauthenticate(&OTHER, HeaderFlags::SIGNED),
        Some(NtStatus::ACCESS_DENIED)
    );
    // The refusal ends the session, as a failed re-authentication does.
    assert_eq!(
        open_for_reading(&mut client),
        Err(NtStatus::USER_SESSION_DELETED)
    );
    assert_eq!(server.counts().sessions, 0);
}

#[test]
fn an_anonymous_session_never_gains_a_user() {
    let server = server();
    let mut client = logged_on(&server, &ANONYMOUS);
    assert_eq!(
        client.reauthenticate(&TEST_USER, HeaderFlags::empty()),
        Some(NtStatus::ACCESS_DENIED)
    );
    assert_eq!(
        tree_connect_unsigned(&mut client, IPC),
        Some(NtStatus::USER_SESSION_DELETED)
    );
}

#[test]
fn a_session_renews_its_user_or_drops_to_anonymous_and_back() {
    let server = server();
    let mut client = logged_on(&server, &TEST_USER);
    let signed = HeaderFlags::SIGNED;
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    let file = open_for_reading(&mut client).unwrap_or_else(|status| panic!("{status:?}"));
    for logon in [TEST_USER, ANONYMOUS, TEST_USER] {
        assert_eq!(
            client.reauthenticate(&logon, signed),
            Some(NtStatus::SUCCESS)
        );
        assert_eq!(read_file(&mut client, file), Some(NtStatus::SUCCESS));
    }
    // The user's name is matched as user names are, whatever its case.
    let shouted = Logon {
        user: "TESTER",
        ..TEST_USER
    };
    assert_eq!(
        client.reauthenticate(&shouted, signed),
        Some(NtStatus::SUCCESS)
    );
}

#[test]
fn a_share_the_new_identity_may_not_use_opens_nothing_new() {
    // The share admits no anonymous session (guest_ok is off).
    let server = server();
    let mut client = logged_on(&server, &TEST_USER);
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    let file = open_for_reading(&mut client).unwrap_or_else(|status| panic!("{status:?}"));
    assert_eq!(
        client.reauthenticate(&ANONYMOUS, HeaderFlags::SIGNED),
        Some(NtStatus::SUCCESS)
    );
    // What was opened before keeps its access (smbtorture smb2.session.reauth2-4)...
    assert_eq!(read_file(&mut client, file), Some(NtStatus::SUCCESS));
    assert_eq!(set_position(&mut client, file), Some(NtStatus::SUCCESS));
    // ...but nothing more is opened through the tree, though the file's ACL would let
    // anonymous read it.
    assert_eq!(open_for_reading(&mut client), Err(NtStatus::ACCESS_DENIED));
    assert_eq!(
        client.reauthenticate(&TEST_USER, HeaderFlags::SIGNED),
        Some(NtStatus::SUCCESS)
    );
    assert!(open_for_reading(&mut client).is_ok());
}

#[test]
fn a_share_read_only_for_the_new_identity_makes_the_tree_read_only() {
    let server = server();
    reshare(&server, |share| {
        share.guest_ok = true;
        share.read_only = true;
        share.write_list = vec![USER.into()];
    });
    let mut client = logged_on(&server, &TEST_USER);
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    let file = open_for_reading(&mut client).unwrap_or_else(|status| panic!("{status:?}"));
    assert_eq!(set_position(&mut client, file), Some(NtStatus::SUCCESS));
    assert_eq!(
        client.reauthenticate(&ANONYMOUS, HeaderFlags::SIGNED),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(
        set_position(&mut client, file),
        Some(NtStatus::ACCESS_DENIED)
    );
    assert_eq!(read_file(&mut client, file), Some(NtStatus::SUCCESS));
    assert_eq!(
        client.reauthenticate(&TEST_USER, HeaderFlags::SIGNED),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(set_position(&mut client, file), Some(NtStatus::SUCCESS));
}

/// A database whose user has a password but no account to act as (removed between the
/// password check and the lookup of its uid, say).
struct NoAccount;

impl CredentialStore for NoAccount {
    fn account(&self, user: &str) -> Option<Account> {
        Account::if_named(user, USER, *nt_hash(PASSWORD))
    }
}

#[test]
fn a_user_without_an_account_cannot_log_on() {
    let server = TestServer::with_credentials(
        harness::settings(),
        Arc::new(NullProvider),
        Arc::new(NoAccount),
    )
    .unwrap();
    let mut client = Client::new(server.connect());
    client.negotiate(Dialect::SMB3_1_1);
    assert_eq!(
        client.login_as(&TEST_USER).status(),
        Some(NtStatus::LOGON_FAILURE)
    );
    assert_eq!(server.counts().sessions, 0);
}

/// A 3.1.1 logon as `logon` that names `previous` as its PreviousSessionId.
fn logon_replacing<'s>(server: &'s TestServer, logon: &Logon<'_>, previous: u64) -> Client<'s> {
    let mut client = Client::new(server.connect());
    client.negotiate(Dialect::SMB3_1_1);
    client.previous_session_id = previous;
    assert_eq!(client.login_as(logon).status(), Some(NtStatus::SUCCESS));
    client
}

#[test]
fn previous_session_id_ends_only_a_session_of_the_same_user() {
    let server = server();
    // An anonymous logon proves no one: naming another anonymous session leaves it.
    let mut first = logged_on(&server, &ANONYMOUS);
    let _second = logon_replacing(&server, &ANONYMOUS, first.session_id);
    assert_eq!(
        tree_connect_unsigned(&mut first, IPC),
        Some(NtStatus::SUCCESS)
    );
    // A user's logon ends a session of the same user that it names, not another user's.
    let mut mine = logged_on(&server, &TEST_USER);
    let mut theirs = logged_on(&server, &OTHER);
    let _again = logon_replacing(&server, &TEST_USER, theirs.session_id);
    assert_eq!(theirs.tree_connect(IPC), Some(NtStatus::SUCCESS));
    let _last = logon_replacing(&server, &TEST_USER, mine.session_id);
    assert_eq!(mine.tree_connect(IPC), Some(NtStatus::USER_SESSION_DELETED));
}

/// A CREATE of `dir\file.txt` for reading, with a batch oplock and `context` (a durable
/// request or reconnect).
fn durable_create(context: CreateContext<'_>) -> Vec<u8> {
    let mut chain = Vec::new();
    CreateContext::encode_chain(&[context], &mut smb3d_wire::Writer::new(&mut chain));
    let name: Vec<u8> = "dir\\file.txt"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    body(|w| {
        CreateRequest {
            security_flags: 0,
            requested_oplock_level: OplockLevel::BATCH,
            impersonation_level: ImpersonationLevel::IMPERSONATION,
            smb_create_flags: 0,
            desired_access: AccessMask::FILE_GENERIC_READ,
            file_attributes: 0x80,
            share_access: ShareAccess::READ,
            create_disposition: CreateDisposition::OPEN,
            create_options: CreateOptions::NON_DIRECTORY_FILE,
            name: &name,
            contexts: CreateContexts::parse(&chain).unwrap(),
        }
        .encode(w)
    })
}

/// An anonymous 3.0 client of ClientGuid `guid`, connected to the share.
fn anonymous_client(server: &TestServer, guid: u8) -> Client<'_> {
    let mut client = Client::new(server.connect());
    let mut negotiate = negotiate_body(&[Dialect::SMB3_0]);
    // NEGOTIATE's ClientGuid (MS-SMB2 2.2.3) follows StructureSize to Capabilities.
    negotiate[12..28].fill(guid);
    let reply = client.call(Command::NEGOTIATE, &negotiate, None);
    assert_eq!(reply.status(), Some(NtStatus::SUCCESS));
    assert_eq!(
        client.login_as(&ANONYMOUS).status(),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(
        tree_connect_unsigned(&mut client, SHARE_UNC),
        Some(NtStatus::SUCCESS)
    );
    client
}

#[test]
fn an_anonymous_durable_open_goes_back_only_to_its_client() {
    let server = server();
    reshare(&server, |share| share.guest_ok = true);
    let mut opener = anonymous_client(&server, 0x11);
    let reply = opener.call(
        Command::CREATE,
        &durable_create(CreateContext::DurableHandleRequest),
        None,
    );
    let created = reply.responses.last().unwrap();
    assert_eq!(created.status(), NtStatus::SUCCESS);
    let file_id = CreateResponse::decode(&created.pdu).unwrap().file_id;
    opener.conn.close();
    let reconnect = durable_create(CreateContext::DurableHandleReconnect { file_id });
    // Every anonymous session has the same (no) user: only the opener's client may reclaim.
    let mut stranger = anonymous_client(&server, 0x22);
    assert_eq!(
        stranger.call(Command::CREATE, &reconnect, None).status(),
        Some(NtStatus::ACCESS_DENIED)
    );
    let mut back = anonymous_client(&server, 0x11);
    assert_eq!(
        back.call(Command::CREATE, &reconnect, None).status(),
        Some(NtStatus::SUCCESS)
    );
}

#[test]
fn persistent_file_ids_cannot_be_guessed_from_one_another() {
    let server = TestServer::with_credentials(
        harness::settings(),
        smb3d_crypto::default_provider(),
        Arc::new(Users),
    )
    .unwrap();
    // 3.0 without signing: the client here cannot sign with real keys.
    let mut client = Client::new(server.connect());
    client.negotiate(Dialect::SMB3_0);
    assert_eq!(
        client.login_as(&TEST_USER).status(),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(
        tree_connect_unsigned(&mut client, SHARE_UNC),
        Some(NtStatus::SUCCESS)
    );
    let mut ids: Vec<u64> = (0..16)
        .map(|_| {
            open_for_reading(&mut client)
                .unwrap_or_else(|status| panic!("{status:?}"))
                .persistent
        })
        .collect();
    ids.sort_unstable();
    // Random ids: no two within 2^32 of each other (a chance of about 2^-24), where ids
    // counted up would be a few apart.
    for pair in ids.windows(2) {
        assert!(pair[1] - pair[0] > 1 << 32, "{ids:x?}");
    }
}

/// Issue 23 item 2, `map_to_guest = "bad-user"`: an unknown user name logs on as a guest
/// (SMB2_SESSION_FLAG_IS_GUEST, no keys, so nothing it gets is signed, and only shares that
/// admit guests), a known user's wrong password still fails, and the guest session never
/// becomes a user's by re-authenticating.
#[test]
fn unknown_names_become_guests_without_keys_or_a_users_rights() {
    let settings = Settings {
        map_to_guest: true,
        ..harness::settings()
    };
    let server =
        TestServer::with_credentials(settings, Arc::new(NullProvider), Arc::new(Users)).unwrap();
    let stranger = Logon {
        user: "stranger",
        ..TEST_USER
    };
    let mut guest = Client::new(server.connect());
    guest.negotiate(Dialect::SMB3_1_1);
    let reply = guest.login_as(&stranger);
    assert_eq!(reply.status(), Some(NtStatus::SUCCESS));
    let answer = &reply.responses[0];
    let setup = SessionSetupResponse::decode(&answer.pdu).unwrap();
    assert_eq!(setup.session_flags, SessionFlags::IS_GUEST);
    assert!(
        !answer.header.flags.contains(HeaderFlags::SIGNED),
        "a guest has no key to sign with"
    );
    assert_eq!(
        tree_connect_unsigned(&mut guest, SHARE_UNC),
        Some(NtStatus::ACCESS_DENIED),
        "the share does not admit guests"
    );
    reshare(&server, |share| share.guest_ok = true);
    assert_eq!(
        tree_connect_unsigned(&mut guest, SHARE_UNC),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(
        guest.reauthenticate(&TEST_USER, HeaderFlags::empty()),
        Some(NtStatus::ACCESS_DENIED),
        "a guest session never gains a user"
    );

    let mut wrong = Client::new(server.connect());
    wrong.negotiate(Dialect::SMB3_1_1);
    let not_it = Logon {
        password: "not-it",
        ..TEST_USER
    };
    assert_eq!(
        wrong.login_as(&not_it).status(),
        Some(NtStatus::LOGON_FAILURE)
    );
}
