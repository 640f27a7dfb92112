//! Change notify of a cluster node told that changes sent to it were lost (docs/cluster.md
//! "Change notify and directory leases across nodes"): another node whose outbox overflowed,
//! or whose etcd refused its changes, sends a lost event for the share, and this node's
//! watches of that share complete with STATUS_NOTIFY_ENUM_DIR (MS-SMB2 3.3.4.4, MS-FSA
//! 2.1.5.11) so their clients list again; a watch of another share is left waiting. A watched
//! directory renamed through this node moves its interest to the new path, so that other
//! nodes send changes made under that path.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_server::Settings;
use smb3d_smb2::Command;
use smb3d_smb2::change_notify::{ChangeNotifyFlags, ChangeNotifyRequest, CompletionFilter};
use smb3d_smb2::close::{CloseFlags, CloseRequest};
use smb3d_smb2::create::{CreateDisposition, CreateOptions, CreateResponse};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::negotiate::Dialect;
use smb3d_state::{ClusterNotify, DirEvent, DirEventSink};
use smb3d_testkit::client::{Client, Reply, TEST_USER};
use smb3d_testkit::harness::{self, SHARE_UNC, TestServer};
use smb3d_testkit::packet::{self, body};
use smb3d_testkit::seeds::{create_body, rename_buffer, set_info_body};

/// The cluster as a node sees it, without etcd: the test hands events to the node's sink.
#[derive(Default)]
struct Cluster {
    sink: Mutex<Option<DirEventSink>>,
    /// The interests declared (`true`) and ended (`false`): share path, directory, tree.
    interests: Mutex<Vec<(bool, String, String, bool)>>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cluster")
    }
}

impl Cluster {
    fn deliver(&self, event: DirEvent) {
        let sink = self
            .sink
            .lock()
            .clone()
            .expect("the node follows the cluster");
        sink(event);
    }
}

impl ClusterNotify for Cluster {
    fn interested(&self, share: &str, dir: &str, tree: bool) {
        self.interests
            .lock()
            .push((true, share.into(), dir.into(), tree));
    }
    fn uninterested(&self, share: &str, dir: &str, tree: bool) {
        self.interests
            .lock()
            .push((false, share.into(), dir.into(), tree));
    }
    fn anyone_else(&self) -> bool {
        false
    }
    fn changed(&self, _: DirEvent) {}
    fn on_event(&self, sink: DirEventSink) {
        *self.sink.lock() = Some(sink);
    }
}

/// Opens the share's root and waits on it for name changes: the interim response's reply.
fn waiting_notify(client: &mut Client<'_>) -> Reply {
    let dir = open_dir(client, "", CreateDisposition::OPEN);
    watch(client, dir)
}

/// Opens (or makes) the directory `name`, with DELETE access to rename it.
fn open_dir(client: &mut Client<'_>, name: &str, disposition: CreateDisposition) -> FileId {
    let open = create_body(
        name,
        AccessMask(0x0013_0089),
        disposition,
        CreateOptions::DIRECTORY_FILE,
    );
    let reply = client.call(Command::CREATE, &open, None);
    let created = reply.responses.last().expect("a CREATE response");
    assert_eq!(created.status(), NtStatus::SUCCESS);
    CreateResponse::decode(&created.pdu).unwrap().file_id
}

/// A CHANGE_NOTIFY of the tree below `dir`: the interim response's reply.
fn watch(client: &mut Client<'_>, dir: FileId) -> Reply {
    let mut notify = body(|w| {
        ChangeNotifyRequest {
            flags: ChangeNotifyFlags::WATCH_TREE,
            output_buffer_length: 4096,
            file_id: FileId::default(),
            completion_filter: CompletionFilter::FILE_NAME,
        }
        .encode(w);
    });
    packet::patch_file_id(Command::CHANGE_NOTIFY, &mut notify, dir);
    client.call(Command::CHANGE_NOTIFY, &notify, None)
}

fn node() -> (Arc<Cluster>, TestServer) {
    let cluster = Arc::new(Cluster::default());
    let settings = Settings {
        cluster_notify: Some(cluster.clone()),
        ..harness::settings()
    };
    let server = TestServer::new(settings, Arc::new(NullProvider)).unwrap();
    server.follow_cluster();
    (cluster, server)
}

fn notify_statuses(reply: &Reply) -> Vec<NtStatus> {
    reply
        .responses
        .iter()
        .filter(|r| r.header.command == Command::CHANGE_NOTIFY)
        .map(|r| r.status())
        .collect()
}

#[test]
fn changes_lost_by_another_node_make_the_share_s_watches_list_again() {
    let (cluster, server) = node();
    let mut client = Client::new(server.connect());
    client.negotiate(Dialect::SMB3_1_1);
    client.login_as(&TEST_USER);
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    let interim = waiting_notify(&mut client);
    assert_eq!(notify_statuses(&interim), vec![NtStatus::PENDING]);
    // Lost changes of a share this node does not serve leave the watch waiting.
    cluster.deliver(DirEvent::lost("/elsewhere"));
    let nothing = client.wait(Duration::from_millis(50));
    assert!(notify_statuses(&nothing).is_empty());
    // The test server's disk share has the empty path.
    cluster.deliver(DirEvent::lost(""));
    let done = client.wait(Duration::from_millis(200));
    assert_eq!(notify_statuses(&done), vec![NtStatus::NOTIFY_ENUM_DIR]);
}

#[test]
fn a_watched_directory_renamed_moves_its_interest_to_the_new_path() {
    let (cluster, server) = node();
    let mut client = Client::new(server.connect());
    client.negotiate(Dialect::SMB3_1_1);
    client.login_as(&TEST_USER);
    assert_eq!(client.tree_connect(SHARE_UNC), Some(NtStatus::SUCCESS));
    let dir = open_dir(&mut client, "watched", CreateDisposition::CREATE);
    assert_eq!(
        notify_statuses(&watch(&mut client, dir)),
        vec![NtStatus::PENDING]
    );
    let interest = |declared: bool, dir: &str| (declared, String::new(), dir.to_owned(), true);
    assert_eq!(*cluster.interests.lock(), vec![interest(true, "watched")]);
    let rename = set_info_body(10, &rename_buffer("moved"));
    let renamed = client.call(Command::SET_INFO, &rename, Some(dir));
    let status = renamed
        .responses
        .iter()
        .find(|r| r.header.command == Command::SET_INFO)
        .map(|r| r.status());
    assert_eq!(status, Some(NtStatus::SUCCESS));
    // The new key is declared before the old one ends: other nodes always see one of them.
    assert_eq!(
        *cluster.interests.lock(),
        vec![
            interest(true, "watched"),
            interest(true, "moved"),
            interest(false, "watched"),
        ]
    );
    let close = body(|w| {
        CloseRequest {
            flags: CloseFlags::empty(),
            file_id: dir,
        }
        .encode(w);
    });
    client.call(Command::CLOSE, &close, None);
    assert_eq!(
        cluster.interests.lock().last(),
        Some(&interest(false, "moved")),
        "the interest ends under the name it has"
    );
}
