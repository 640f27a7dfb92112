//! The client against testkit's in-memory server (a `MemoryVfs` share, the real cryptography),
//! served over loopback TCP by the transport: every dialect, signing algorithm and cipher logs
//! on and moves data both ways; many requests in flight on one connection, compounds, several
//! connections, directory listing, QUERY_INFO and ECHO.

use std::net::SocketAddr;
use std::sync::Arc;

use smb3d_client::ntlm::Logon;
use smb3d_client::{ClientConfig, Connection, Open, OpenSpec, Protection, Tree};
use smb3d_crypto::{Cipher, SigningAlgorithm};
use smb3d_dtyp::NtStatus;
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::query_info::InfoType;
use smb3d_testkit::harness::{self, PASSWORD, SHARE_UNC, TestServer, USER};
use smb3d_transport::TransportConfig;

const LOGON: Logon<'static> = Logon {
    user: USER,
    password: PASSWORD,
    domain: "WORKGROUP",
    anonymous: false,
    mic: true,
    spnego: true,
};

/// A test server listening on loopback, and the runtime that serves it and runs the client.
struct Served {
    runtime: tokio::runtime::Runtime,
    addr: SocketAddr,
    _server: TestServer,
}

impl Served {
    fn start() -> Self {
        let server =
            TestServer::new(harness::settings(), smb3d_crypto::default_provider()).unwrap();
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
            _server: server,
        }
    }

    fn run<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }
}

async fn tree(addr: SocketAddr, config: &ClientConfig) -> Tree {
    let conn = Connection::connect(addr, config).await.unwrap();
    let session = conn.logon(&LOGON, config).await.unwrap();
    session.tree_connect(SHARE_UNC).await.unwrap()
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Writes `len` bytes to `name` in `chunk`-sized WRITEs, reads them back, compares.
async fn round_trip(tree: &Tree, name: &str, len: usize, chunk: usize) {
    let data = pattern(len, name.len() as u8);
    let open = tree
        .create(name, &OpenSpec::open_or_create())
        .await
        .unwrap();
    for (i, piece) in data.chunks(chunk).enumerate() {
        let n = tree
            .write(open.file_id, (i * chunk) as u64, piece)
            .await
            .unwrap();
        assert_eq!(n as usize, piece.len());
    }
    let mut back = Vec::new();
    while back.len() < len {
        let read = tree
            .read(open.file_id, back.len() as u64, chunk as u32)
            .await
            .unwrap();
        assert!(!read.data().is_empty(), "short file");
        back.extend_from_slice(read.data());
    }
    assert!(back == data, "{name}: the data read back differs");
    tree.close(open.file_id).await.unwrap();
}

fn config(dialects: &[Dialect], protection: Protection) -> ClientConfig {
    ClientConfig {
        dialects: dialects.to_vec(),
        protection,
        ..ClientConfig::default()
    }
}

#[test]
fn every_dialect_logs_on_and_moves_data() {
    let served = Served::start();
    for dialect in [
        Dialect::SMB2_0_2,
        Dialect::SMB2_1,
        Dialect::SMB3_0,
        Dialect::SMB3_0_2,
        Dialect::SMB3_1_1,
    ] {
        served.run(async {
            let tree = tree(served.addr, &config(&[dialect], Protection::Plain)).await;
            let negotiated = tree.session().connection().negotiated().unwrap();
            assert_eq!(negotiated.dialect, dialect);
            assert_eq!(negotiated.large_mtu, dialect != Dialect::SMB2_0_2);
            round_trip(&tree, &format!("plain-{:x}.bin", dialect.0), 200_000, 65536).await;
        });
    }
}

#[test]
fn every_signing_algorithm_signs_and_verifies() {
    let served = Served::start();
    let cases = [
        (
            Dialect::SMB2_1,
            vec![SigningAlgorithm::AesGmac],
            SigningAlgorithm::HmacSha256,
        ),
        (
            Dialect::SMB3_0_2,
            vec![SigningAlgorithm::AesGmac],
            SigningAlgorithm::AesCmac,
        ),
        (
            Dialect::SMB3_1_1,
            vec![SigningAlgorithm::AesCmac],
            SigningAlgorithm::AesCmac,
        ),
        (
            Dialect::SMB3_1_1,
            vec![SigningAlgorithm::AesGmac],
            SigningAlgorithm::AesGmac,
        ),
    ];
    for (dialect, offered, expected) in cases {
        served.run(async {
            let mut config = config(&[dialect], Protection::Sign);
            config.signing = offered;
            let tree = tree(served.addr, &config).await;
            assert!(tree.session().signs());
            assert_eq!(
                tree.session().connection().negotiated().unwrap().signing,
                expected
            );
            round_trip(&tree, &format!("signed-{expected:?}.bin"), 300_000, 131072).await;
        });
    }
}

#[test]
fn every_cipher_encrypts_and_decrypts() {
    let served = Served::start();
    let cases = [
        (Dialect::SMB3_0, Cipher::Aes128Ccm),
        (Dialect::SMB3_1_1, Cipher::Aes128Gcm),
        (Dialect::SMB3_1_1, Cipher::Aes256Gcm),
        (Dialect::SMB3_1_1, Cipher::Aes128Ccm),
        (Dialect::SMB3_1_1, Cipher::Aes256Ccm),
    ];
    for (dialect, cipher) in cases {
        served.run(async {
            let mut config = config(&[dialect], Protection::Encrypt);
            config.ciphers = vec![cipher];
            let tree = tree(served.addr, &config).await;
            assert!(tree.encrypts());
            assert_eq!(
                tree.session().connection().negotiated().unwrap().cipher,
                Some(cipher)
            );
            round_trip(&tree, &format!("sealed-{cipher:?}.bin"), 300_000, 131072).await;
        });
    }
}

#[test]
fn many_requests_are_in_flight_at_once() {
    let served = Served::start();
    served.run(async {
        let tree = tree(served.addr, &ClientConfig::default()).await;
        let data = pattern(64 * 4096, 7);
        let open = tree
            .create("flight.bin", &OpenSpec::open_or_create())
            .await
            .unwrap();
        tree.write(open.file_id, 0, &data).await.unwrap();
        // 64 READs issued before any answer is awaited: they need 64 credits at once.
        let reads = (0..64u64).map(|i| {
            let tree = tree.clone();
            tokio::spawn(async move { (i, tree.read(open.file_id, i * 4096, 4096).await) })
        });
        let mut handles = Vec::new();
        for read in reads {
            handles.push(read);
        }
        for handle in handles {
            let (i, read) = handle.await.unwrap();
            let i = i as usize;
            assert_eq!(read.unwrap().data(), &data[i * 4096..(i + 1) * 4096]);
        }
        let conn = tree.session().connection();
        assert!(
            conn.available_credits() >= 64,
            "the client holds {} credits",
            conn.available_credits()
        );
        tree.close(open.file_id).await.unwrap();
    });
}

#[test]
fn related_compounds_create_write_read_and_close() {
    let served = Served::start();
    served.run(async {
        for protection in [Protection::Plain, Protection::Sign, Protection::Encrypt] {
            let tree = tree(served.addr, &config(&[Dialect::SMB3_1_1], protection)).await;
            let name = format!("compound-{protection:?}.txt");
            let data = pattern(5000, 3);
            let any = smb3d_smb2::FileId::ANY;
            let mut write = tree.compound();
            write
                .create(&name, &OpenSpec::open_or_create())
                .related()
                .write(any, 0, &data)
                .close(any);
            let responses = write.send().await.unwrap();
            assert_eq!(responses.len(), 3);
            assert!(responses.iter().all(|r| r.status() == NtStatus::SUCCESS));
            let mut read = tree.compound();
            read.create(&name, &OpenSpec::read())
                .related()
                .read(any, 0, 8192)
                .query_info(any, InfoType::FILE, 5, 1024)
                .close(any);
            let responses = read.send().await.unwrap();
            let open = Open::from_response(&responses[0]).unwrap();
            assert_eq!(open.end_of_file, 5000);
            let read = smb3d_client::ReadData::from_response(responses[1].clone()).unwrap();
            assert_eq!(read.data(), &data[..]);
            // FileStandardInformation: AllocationSize, then EndOfFile.
            let info = smb3d_client::query_info_output(&responses[2]).unwrap();
            assert_eq!(u64::from_le_bytes(info[8..16].try_into().unwrap()), 5000);
            assert_eq!(responses[3].status(), NtStatus::SUCCESS);
        }
    });
}

#[test]
fn a_read_of_nothing_returns_no_data() {
    let served = Served::start();
    served.run(async {
        let tree = tree(served.addr, &ClientConfig::default()).await;
        let open = tree
            .create("empty-read.bin", &OpenSpec::open_or_create())
            .await
            .unwrap();
        tree.write(open.file_id, 0, b"some bytes").await.unwrap();
        // A successful READ with DataLength 0, whose data the decoder returns as an empty slice
        // that is not inside the response.
        let read = tree.read(open.file_id, 0, 0).await.unwrap();
        assert!(read.data().is_empty());
        tree.close(open.file_id).await.unwrap();
    });
}

#[test]
fn several_connections_work_side_by_side() {
    let served = Served::start();
    served.run(async {
        let config = Arc::new(config(&[Dialect::SMB3_1_1], Protection::Sign));
        let tasks: Vec<_> = (0..6)
            .map(|i| {
                let config = config.clone();
                let addr = served.addr;
                tokio::spawn(async move {
                    let tree = tree(addr, &config).await;
                    tree.session().connection().echo().await.unwrap();
                    round_trip(&tree, &format!("conn-{i}.bin"), 100_000, 16384).await;
                    tree.session().id()
                })
            })
            .collect();
        let mut sessions = Vec::new();
        for task in tasks {
            sessions.push(task.await.unwrap());
        }
        sessions.sort_unstable();
        sessions.dedup();
        assert_eq!(sessions.len(), 6);
    });
}

#[test]
fn directories_list_and_errors_carry_their_status() {
    let served = Served::start();
    served.run(async {
        let tree = tree(served.addr, &ClientConfig::default()).await;
        let dir = tree.create("listed", &OpenSpec::directory()).await.unwrap();
        for i in 0..150 {
            let open = tree
                .create(&format!("listed\\file-{i:03}"), &OpenSpec::open_or_create())
                .await
                .unwrap();
            tree.close(open.file_id).await.unwrap();
        }
        // A small buffer makes the listing take several QUERY_DIRECTORY requests.
        let mut names = tree.list(dir.file_id, "*", 1024).await.unwrap();
        names.sort();
        assert_eq!(names.len(), 152);
        assert_eq!(names[0], ".");
        assert_eq!(names[2], "file-000");
        assert_eq!(names[151], "file-149");
        tree.close(dir.file_id).await.unwrap();
        let missing = tree
            .create("no-such-file", &OpenSpec::read())
            .await
            .unwrap_err();
        assert_eq!(missing.status(), Some(NtStatus::OBJECT_NAME_NOT_FOUND));
        let wrong = Connection::connect(served.addr, &ClientConfig::default())
            .await
            .unwrap();
        let bad_password = Logon {
            password: "wrong",
            ..LOGON
        };
        assert!(
            wrong
                .logon(&bad_password, &ClientConfig::default())
                .await
                .is_err()
        );
    });
}
