//! The SMB3 POSIX extensions through the client against testkit's server (a `MemoryVfs` share
//! with `posix = true`, served over loopback TCP): negotiated only when asked for and when a
//! share allows them; a POSIX create applies its mode and answers the POSIX context; QUERY_INFO
//! of class 100 returns FILE_POSIX_INFORMATION; hostile modes change nothing; a client that did
//! not negotiate them, or a share without them, behaves as before.

use std::net::SocketAddr;
use std::sync::Arc;

use smb3d_client::ntlm::Logon;
use smb3d_client::{ClientConfig, Connection, Error, OpenSpec, Tree};
use smb3d_dtyp::NtStatus;
use smb3d_fscc::posix::{
    FilePosixInformation, PosixCcInfo, PosixFileType, PosixMode, posix_dir_list,
};
use smb3d_server::share::Share;
use smb3d_smb2::query_directory::QueryDirectoryFlags;
use smb3d_smb2::query_info::InfoType;
use smb3d_testkit::harness::{self, PASSWORD, SHARE, TestServer, USER};
use smb3d_transport::TransportConfig;
use smb3d_vfs::{Vfs, VfsPath};

const LOGON: Logon<'static> = Logon {
    user: USER,
    password: PASSWORD,
    domain: "WORKGROUP",
    anonymous: false,
    mic: true,
    spnego: true,
};

/// FILE_POSIX_INFORMATION's class.
const POSIX_CLASS: u8 = 100;

struct Served {
    runtime: tokio::runtime::Runtime,
    addr: SocketAddr,
    server: TestServer,
}

impl Served {
    /// The test share with `posix` as given, and a share `plain` without the extensions.
    fn start(posix: bool) -> Self {
        let server =
            TestServer::new(harness::settings(), smb3d_crypto::default_provider()).unwrap();
        server.server.replace_shares(vec![
            Arc::new(Share::ipc()),
            Arc::new(Share {
                posix,
                ..Share::disk(SHARE, Arc::new(server.vfs.clone()))
            }),
            Arc::new(Share::disk("plain", Arc::new(server.vfs.clone()))),
        ]);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listeners = runtime
            .block_on(smb3d_transport::bind(&["127.0.0.1:0".parse().unwrap()]))
            .unwrap();
        let addr = listeners[0].local_addr().unwrap();
        runtime.spawn(smb3d_transport::serve(
            listeners,
            server.server.clone(),
            TransportConfig::default(),
            std::future::pending(),
        ));
        Self {
            runtime,
            addr,
            server,
        }
    }

    fn run<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    fn mode_of(&self, name: &str) -> Option<u32> {
        let stat = self.server.vfs.stat(&VfsPath::parse(name).unwrap()).ok()?;
        Some(stat.mode & 0o7777)
    }
}

async fn tree(addr: SocketAddr, posix: bool, share: &str) -> Tree {
    let config = ClientConfig {
        posix,
        ..ClientConfig::default()
    };
    let conn = Connection::connect(addr, &config).await.unwrap();
    let session = conn.logon(&LOGON, &config).await.unwrap();
    session
        .tree_connect(&format!("\\\\testkit\\{share}"))
        .await
        .unwrap()
}

fn negotiated_posix(tree: &Tree) -> bool {
    tree.session().connection().negotiated().unwrap().posix
}

fn status(result: Result<impl std::fmt::Debug, Error>) -> NtStatus {
    match result {
        Err(Error::Status { status, .. }) => status,
        other => panic!("expected an NTSTATUS, got {other:?}"),
    }
}

#[test]
fn negotiated_only_when_asked_and_a_share_allows_it() {
    let served = Served::start(true);
    served.run(async {
        assert!(negotiated_posix(&tree(served.addr, true, SHARE).await));
        assert!(!negotiated_posix(&tree(served.addr, false, SHARE).await));
    });
    let without = Served::start(false);
    without.run(async {
        assert!(!negotiated_posix(&tree(without.addr, true, SHARE).await));
    });
}

#[test]
fn a_posix_create_gets_its_mode_and_the_answer_describes_the_file() {
    let served = Served::start(true);
    served.run(async {
        let tree = tree(served.addr, true, SHARE).await;
        let (open, answer) = tree
            .create_posix("m640.txt", &OpenSpec::open_or_create(), 0o640)
            .await
            .unwrap();
        let cc = PosixCcInfo::decode(&answer.expect("no POSIX context in the response")).unwrap();
        assert_eq!(
            cc.mode,
            PosixMode {
                permissions: 0o640,
                file_type: PosixFileType::File
            }
        );
        assert_eq!((cc.number_of_links, cc.reparse_tag), (1, 0));
        assert_eq!(served.mode_of("m640.txt"), Some(0o640));
        tree.write(open.file_id, 0, b"hello").await.unwrap();
        let out = tree
            .query_info(open.file_id, InfoType::FILE, POSIX_CLASS, 4096)
            .await
            .unwrap();
        let info = FilePosixInformation::decode(&out).unwrap();
        assert_eq!(out.len(), info.encoded_len());
        assert_eq!(info.end_of_file, 5);
        assert_eq!(info.cc, cc);
        let stat = served
            .server
            .vfs
            .stat(&VfsPath::parse("m640.txt").unwrap())
            .unwrap();
        assert_eq!(info.inode, stat.ino);
        // Too small a buffer for the whole answer: nothing, not a cut SID.
        let short = tree
            .query_info(open.file_id, InfoType::FILE, POSIX_CLASS, 90)
            .await;
        assert_eq!(status(short), NtStatus::INFO_LENGTH_MISMATCH);
        tree.close(open.file_id).await.unwrap();

        let (dir, answer) = tree
            .create_posix("d750", &OpenSpec::directory(), 0o750)
            .await
            .unwrap();
        let cc = PosixCcInfo::decode(&answer.unwrap()).unwrap();
        assert_eq!(cc.mode.file_type, PosixFileType::Directory);
        assert_eq!(served.mode_of("d750"), Some(0o750));
        tree.close(dir.file_id).await.unwrap();

        // The share root listed with SMB2_FIND_POSIX_INFORMATION.
        let root = tree.create("", &OpenSpec::read()).await.unwrap();
        let listing = tree
            .query_directory(
                root.file_id,
                POSIX_CLASS,
                QueryDirectoryFlags::RESTART_SCANS,
                "*",
                65536,
            )
            .await
            .unwrap()
            .unwrap();
        let entries: Vec<_> = posix_dir_list(&listing).collect::<Result<_, _>>().unwrap();
        let mode_listed = |name: &str| {
            entries
                .iter()
                .find(|(_, n)| n == name)
                .map(|(info, _)| info.cc.mode)
        };
        assert_eq!(
            mode_listed("m640.txt").map(|m| (m.permissions, m.file_type)),
            Some((0o640, PosixFileType::File))
        );
        assert_eq!(
            mode_listed("d750").map(|m| (m.permissions, m.file_type)),
            Some((0o750, PosixFileType::Directory))
        );
        assert!(mode_listed(".").is_some() && mode_listed("..").is_some());
        tree.close(root.file_id).await.unwrap();
    });
}

#[test]
fn hostile_modes_are_refused_and_nothing_is_made() {
    let served = Served::start(true);
    served.run(async {
        let tree = tree(served.addr, true, SHARE).await;
        for (name, mode) in [("type.txt", 0o100_644), ("high.txt", 0x1_0000 | 0o644)] {
            let result = tree
                .create_posix(name, &OpenSpec::open_or_create(), mode)
                .await;
            assert_eq!(status(result), NtStatus::INVALID_PARAMETER, "{mode:o}");
            assert_eq!(served.mode_of(name), None, "{name} was made");
        }
        // The share's mask still applies: set-user-id and others' write do not get through
        // the default create mask (0o744).
        let (open, _) = tree
            .create_posix("suid.txt", &OpenSpec::open_or_create(), 0o4777)
            .await
            .unwrap();
        tree.close(open.file_id).await.unwrap();
        assert_eq!(served.mode_of("suid.txt"), Some(0o744));
    });
}

#[test]
fn clients_and_shares_without_the_extensions_behave_as_before() {
    let served = Served::start(true);
    served.run(async {
        // A client that did not negotiate them: the context is unknown, ignored.
        let plain_client = tree(served.addr, false, SHARE).await;
        let (open, answer) = plain_client
            .create_posix("old.txt", &OpenSpec::open_or_create(), 0o600)
            .await
            .unwrap();
        assert_eq!(answer, None);
        assert_eq!(served.mode_of("old.txt"), Some(0o644));
        let class_100 = plain_client
            .query_info(open.file_id, InfoType::FILE, POSIX_CLASS, 4096)
            .await;
        assert_eq!(status(class_100), NtStatus::INVALID_INFO_CLASS);
        plain_client.close(open.file_id).await.unwrap();
        let root = plain_client.create("", &OpenSpec::read()).await.unwrap();
        let listing = plain_client
            .query_directory(
                root.file_id,
                POSIX_CLASS,
                QueryDirectoryFlags::RESTART_SCANS,
                "*",
                65536,
            )
            .await;
        assert_eq!(status(listing), NtStatus::INVALID_INFO_CLASS);
        plain_client.close(root.file_id).await.unwrap();
        // A POSIX client on a share without them.
        let other_share = tree(served.addr, true, "plain").await;
        let (open, answer) = other_share
            .create_posix("other.txt", &OpenSpec::open_or_create(), 0o600)
            .await
            .unwrap();
        assert_eq!(answer, None);
        assert_eq!(served.mode_of("other.txt"), Some(0o644));
        other_share.close(open.file_id).await.unwrap();
    });
}
