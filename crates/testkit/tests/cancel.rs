//! CANCEL (MS-SMB2 3.3.5.16) ends only a request of the session it names: two sessions share
//! one connection (a multi-user client), and one's CANCEL, by MessageId or by AsyncId, leaves
//! the other's waiting CHANGE_NOTIFY alone. A CANCEL counts as its session's request like any
//! other: on a session that signs, an unsigned one is ignored (3.3.5.2.4, 3.2.4.24).

use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::Settings;
use smb3d_smb2::Command;
use smb3d_smb2::change_notify::{ChangeNotifyFlags, ChangeNotifyRequest, CompletionFilter};
use smb3d_smb2::create::{CreateDisposition, CreateOptions, CreateResponse};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::header::HeaderFlags;
use smb3d_smb2::negotiate::Dialect;
use smb3d_testkit::client::{Client, Reply, TEST_USER};
use smb3d_testkit::harness::{self, SHARE_UNC, TestServer};
use smb3d_testkit::packet::{self, body};
use smb3d_testkit::seeds::create_body;

/// A session on the shared connection: its SessionId and TreeId.
#[derive(Clone, Copy)]
struct Ids {
    session: u64,
    tree: u32,
}

/// Logs on once more on `client`'s connection and connects to the share.
fn new_session(client: &mut Client<'_>) -> Ids {
    assert_eq!(
        client.login_as(&TEST_USER).status(),
        Some(NtStatus::SUCCESS)
    );
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    Ids {
        session: client.session_id,
        tree: client.tree_id,
    }
}

/// Sends a signed request of `ids`' session (the no-security provider takes any signature).
fn call(client: &mut Client<'_>, ids: Ids, command: Command, body: &[u8]) -> (u64, Reply) {
    client.session_id = ids.session;
    client.tree_id = ids.tree;
    let message_id = client.next_message_id;
    let pdu = client.pdu(command, body, HeaderFlags::SIGNED);
    (message_id, client.send(pdu))
}

/// Opens the share's root directory in `ids`' session and waits on it for changes: returns
/// the CHANGE_NOTIFY's MessageId and AsyncId.
fn waiting_notify(client: &mut Client<'_>, ids: Ids) -> (u64, u64) {
    let open = create_body(
        "",
        AccessMask(0x0012_0089),
        CreateDisposition::OPEN,
        CreateOptions::DIRECTORY_FILE,
    );
    let (_, reply) = call(client, ids, Command::CREATE, &open);
    let created = reply.responses.last().expect("a CREATE response");
    assert_eq!(created.status(), NtStatus::SUCCESS);
    let dir = CreateResponse::decode(&created.pdu).unwrap().file_id;
    let notify = body(|w| {
        ChangeNotifyRequest {
            flags: ChangeNotifyFlags::empty(),
            output_buffer_length: 4096,
            file_id: FileId::default(),
            completion_filter: CompletionFilter::FILE_NAME,
        }
        .encode(w)
    });
    let mut notify = notify;
    packet::patch_file_id(Command::CHANGE_NOTIFY, &mut notify, dir);
    let (message_id, reply) = call(client, ids, Command::CHANGE_NOTIFY, &notify);
    let interim = reply.responses.last().expect("an interim response");
    assert_eq!(interim.status(), NtStatus::PENDING);
    (message_id, interim.header.async_id)
}

/// A CANCEL in `session`'s name of the request with `message_id`, or of `async_id` when it is
/// not 0; `flags` adds SIGNED or not.
fn cancel(
    client: &mut Client<'_>,
    session: u64,
    message_id: u64,
    async_id: u64,
    flags: HeaderFlags,
) -> Reply {
    let mut header = packet::request_header(Command::CANCEL, message_id, session, 0);
    header.flags = flags;
    if async_id != 0 {
        header.flags |= HeaderFlags::ASYNC_COMMAND;
        header.async_id = async_id;
    }
    client.send(packet::pdu(&header, &[4, 0, 0, 0]))
}

fn cancelled(reply: &Reply) -> bool {
    reply
        .responses
        .iter()
        .any(|r| r.header.command == Command::CHANGE_NOTIFY && r.status() == NtStatus::CANCELLED)
}

fn two_sessions(settings: Settings, body: impl FnOnce(&mut Client<'_>, Ids, Ids)) {
    let server = TestServer::new(settings, Arc::new(NullProvider)).unwrap();
    let mut client = Client::new(server.connect());
    client.negotiate(Dialect::SMB3_1_1);
    let first = new_session(&mut client);
    let second = new_session(&mut client);
    body(&mut client, first, second);
}

#[test]
fn another_sessions_cancel_leaves_the_request_waiting() {
    two_sessions(harness::settings(), |client, first, second| {
        let (message_id, async_id) = waiting_notify(client, first);
        for (by_message, by_async) in [(message_id, 0), (message_id, async_id)] {
            let reply = cancel(
                client,
                second.session,
                by_message,
                by_async,
                HeaderFlags::SIGNED,
            );
            assert!(!cancelled(&reply), "{:?}", reply.responses);
        }
        // A session that is not on the connection cancels nothing either.
        let reply = cancel(client, 0, message_id, async_id, HeaderFlags::empty());
        assert!(!cancelled(&reply), "{:?}", reply.responses);
        // Its own session's CANCEL ends it.
        let reply = cancel(
            client,
            first.session,
            message_id,
            async_id,
            HeaderFlags::SIGNED,
        );
        assert!(cancelled(&reply), "{:?}", reply.responses);
    });
}

#[test]
fn an_unsigned_cancel_of_a_signing_session_is_ignored() {
    let mut settings = harness::settings();
    settings.require_signing = true;
    two_sessions(settings, |client, first, _| {
        let (message_id, _) = waiting_notify(client, first);
        let reply = cancel(client, first.session, message_id, 0, HeaderFlags::empty());
        assert!(!cancelled(&reply), "{:?}", reply.responses);
        let reply = cancel(client, first.session, message_id, 0, HeaderFlags::SIGNED);
        assert!(cancelled(&reply), "{:?}", reply.responses);
    });
}

/// A client that cancels a waiting request and goes on reads the STATUS_CANCELLED before the
/// answer to its next request, which arrived with the CANCEL (smbtorture smb2.session.expire2s
/// asks the first CHANGE_NOTIFY to have ended once the second one's answer is in): the
/// cancelled request answers from its own task, which an inline ECHO overtook.
#[test]
fn a_cancelled_requests_answer_comes_before_the_next_requests() {
    two_sessions(harness::settings(), |client, first, _| {
        let (message_id, async_id) = waiting_notify(client, first);
        let mut header =
            packet::request_header(Command::CANCEL, message_id, first.session, first.tree);
        header.flags = HeaderFlags::SIGNED | HeaderFlags::ASYNC_COMMAND;
        header.async_id = async_id;
        let cancel = packet::pdu(&header, &[4, 0, 0, 0]);
        client.session_id = first.session;
        let echo = client.pdu(Command::ECHO, &[4, 0, 0, 0], HeaderFlags::SIGNED);
        let reply = client.send_together(vec![cancel, echo]);
        let order: Vec<(Command, NtStatus)> = reply
            .responses
            .iter()
            .map(|r| (r.header.command, r.status()))
            .collect();
        assert_eq!(
            order,
            [
                (Command::CHANGE_NOTIFY, NtStatus::CANCELLED),
                (Command::ECHO, NtStatus::SUCCESS)
            ]
        );
    });
}

/// A client that CANCELs one waiting request again and again holds its later requests behind
/// one answer only: the cancelled request answers once, and the connection goes on answering
/// (a frame held for each CANCEL and never released would stall it for good).
#[test]
fn repeated_cancels_of_one_request_hold_nothing_after_its_answer() {
    two_sessions(harness::settings(), |client, first, _| {
        let (message_id, async_id) = waiting_notify(client, first);
        let mut header =
            packet::request_header(Command::CANCEL, message_id, first.session, first.tree);
        header.flags = HeaderFlags::SIGNED | HeaderFlags::ASYNC_COMMAND;
        header.async_id = async_id;
        let cancel = packet::pdu(&header, &[4, 0, 0, 0]);
        client.session_id = first.session;
        let echo = client.pdu(Command::ECHO, &[4, 0, 0, 0], HeaderFlags::SIGNED);
        let reply = client.send_together(vec![cancel.clone(), cancel.clone(), cancel, echo]);
        let cancelled = reply
            .responses
            .iter()
            .filter(|r| r.status() == NtStatus::CANCELLED)
            .count();
        assert_eq!(cancelled, 1, "{:?}", reply.responses);
        assert_eq!(
            reply.responses.last().map(|r| r.header.command),
            Some(Command::ECHO)
        );
        let echo = client.pdu(Command::ECHO, &[4, 0, 0, 0], HeaderFlags::SIGNED);
        assert_eq!(client.send(echo).status(), Some(NtStatus::SUCCESS));
    });
}
