//! Responses the client must refuse, each an error and never a panic: altered on the way from
//! the in-memory server (a bad signature, a dropped SIGNED flag, a sealed frame that does not
//! decrypt), or made up by a scripted server (a truncated NEGOTIATE response, an unoffered
//! dialect, a MessageId not in flight, the wrong command, an oversized frame); and an interim
//! response, which is not an answer yet but grants credits.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use smb3d_client::ntlm::Logon;
use smb3d_client::{ClientConfig, Connection, Error, OpenSpec, Protection, Tree};
use smb3d_dtyp::NtStatus;
use smb3d_smb2::negotiate::Dialect;
use smb3d_smb2::{Command, Header, HeaderFlags};
use smb3d_testkit::harness::{self, PASSWORD, SHARE_UNC, TestServer, USER};
use smb3d_transport::TransportConfig;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const LOGON: Logon<'static> = Logon {
    user: USER,
    password: PASSWORD,
    domain: "WORKGROUP",
    anonymous: false,
    mic: true,
    spnego: true,
};

/// Changes a frame from the server (without its prefix) on its way to the client.
type Tamper = Arc<dyn Fn(&mut Vec<u8>) + Send + Sync>;

/// The in-memory server behind a proxy that passes every frame from the server through
/// `tamper`.
struct Proxied {
    runtime: tokio::runtime::Runtime,
    addr: SocketAddr,
    _server: TestServer,
}

impl Proxied {
    fn start(tamper: Tamper) -> Self {
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
        let upstream = listeners[0].local_addr().unwrap();
        runtime.spawn(smb3d_transport::serve(
            listeners,
            server.server.clone(),
            TransportConfig::default(),
            std::future::pending(),
        ));
        let proxy = runtime.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = proxy.local_addr().unwrap();
        runtime.spawn(async move {
            while let Ok((client, _)) = proxy.accept().await {
                let server = TcpStream::connect(upstream).await.unwrap();
                let (client_rd, client_wr) = client.into_split();
                let (server_rd, server_wr) = server.into_split();
                tokio::spawn(pump(client_rd, server_wr, None));
                tokio::spawn(pump(server_rd, client_wr, Some(tamper.clone())));
            }
        });
        Self {
            runtime,
            addr,
            _server: server,
        }
    }
}

/// Copies frames from `from` to `to`, through `tamper` if given.
async fn pump(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    tamper: Option<Tamper>,
) {
    loop {
        let mut prefix = [0u8; 4];
        if from.read_exact(&mut prefix).await.is_err() {
            return;
        }
        let mut frame = vec![0u8; u32::from_be_bytes(prefix) as usize];
        if from.read_exact(&mut frame).await.is_err() {
            return;
        }
        if let Some(tamper) = &tamper {
            tamper(&mut frame);
        }
        let mut out = (frame.len() as u32).to_be_bytes().to_vec();
        out.extend_from_slice(&frame);
        if to.write_all(&out).await.is_err() {
            return;
        }
    }
}

fn command_of(frame: &[u8]) -> Option<Command> {
    (frame.get(..4)? == b"\xfeSMB").then(|| Command(u16::from_le_bytes([frame[12], frame[13]])))
}

async fn tree(addr: SocketAddr, protection: Protection) -> Tree {
    let config = ClientConfig {
        dialects: vec![Dialect::SMB3_1_1],
        protection,
        ..ClientConfig::default()
    };
    let conn = Connection::connect(addr, &config).await.unwrap();
    let session = conn.logon(&LOGON, &config).await.unwrap();
    session.tree_connect(SHARE_UNC).await.unwrap()
}

async fn write_then_read(tree: &Tree) -> Result<Vec<u8>, Error> {
    let open = tree
        .create("tampered.bin", &OpenSpec::open_or_create())
        .await
        .unwrap();
    tree.write(open.file_id, 0, b"what the server holds")
        .await
        .unwrap();
    tree.read(open.file_id, 0, 100)
        .await
        .map(|r| r.data().to_vec())
}

#[test]
fn an_altered_signed_response_is_refused() {
    let proxied = Proxied::start(Arc::new(|frame: &mut Vec<u8>| {
        if command_of(frame) == Some(Command::READ) {
            *frame.last_mut().unwrap() ^= 1;
        }
    }));
    proxied.runtime.block_on(async {
        let tree = tree(proxied.addr, Protection::Sign).await;
        assert_eq!(
            write_then_read(&tree).await.unwrap_err(),
            Error::BadSignature(Command::READ)
        );
    });
}

#[test]
fn an_unsigned_response_to_a_signed_request_is_refused() {
    let proxied = Proxied::start(Arc::new(|frame: &mut Vec<u8>| {
        if command_of(frame) == Some(Command::READ) {
            frame[16] &= !(HeaderFlags::SIGNED.0 as u8);
            frame[48..64].fill(0);
        }
    }));
    proxied.runtime.block_on(async {
        let tree = tree(proxied.addr, Protection::Sign).await;
        let error = write_then_read(&tree).await.unwrap_err();
        assert!(
            matches!(&error, Error::Protocol(what) if what.contains("not signed")),
            "{error:?}"
        );
    });
}

#[test]
fn a_sealed_frame_that_does_not_decrypt_ends_the_connection() {
    // The fourth sealed frame is the READ response (CREATE, WRITE... after the tree connect).
    let sealed = Arc::new(AtomicUsize::new(0));
    let count = sealed.clone();
    let proxied = Proxied::start(Arc::new(move |frame: &mut Vec<u8>| {
        if frame.starts_with(b"\xfdSMB") && count.fetch_add(1, Ordering::Relaxed) == 3 {
            *frame.last_mut().unwrap() ^= 1;
        }
    }));
    proxied.runtime.block_on(async {
        let tree = tree(proxied.addr, Protection::Encrypt).await;
        assert_eq!(write_then_read(&tree).await.unwrap_err(), Error::Decrypt);
        assert_eq!(tree.session().connection().failure(), Some(Error::Decrypt));
        assert_eq!(
            tree.session().connection().echo().await.unwrap_err(),
            Error::Decrypt
        );
    });
    assert_eq!(sealed.load(Ordering::Relaxed), 4);
}

/// A scripted server on the other end of an in-process pipe: for each request frame it reads,
/// `answer` returns the frames to send back.
fn scripted<F>(answer: F) -> (tokio::runtime::Runtime, Connection)
where
    F: Fn(&[u8]) -> Vec<Vec<u8>> + Send + 'static,
{
    scripted_with_timeout(answer, Duration::from_secs(5))
}

/// [`scripted`] with a client that waits at most `timeout` for a response or credits.
fn scripted_with_timeout<F>(answer: F, timeout: Duration) -> (tokio::runtime::Runtime, Connection)
where
    F: Fn(&[u8]) -> Vec<Vec<u8>> + Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let conn = runtime.block_on(async {
        let (client, server) = tokio::io::duplex(1 << 20);
        let (mut server_rd, mut server_wr) = tokio::io::split(server);
        tokio::spawn(async move {
            loop {
                let mut prefix = [0u8; 4];
                if server_rd.read_exact(&mut prefix).await.is_err() {
                    return;
                }
                let mut frame = vec![0u8; u32::from_be_bytes(prefix) as usize];
                if server_rd.read_exact(&mut frame).await.is_err() {
                    return;
                }
                for out in answer(&frame) {
                    if server_wr.write_all(&out).await.is_err() {
                        return;
                    }
                }
            }
        });
        let (rd, wr) = tokio::io::split(client);
        Connection::from_parts(rd, wr, 64, timeout)
    });
    (runtime, conn)
}

/// A framed response to `request` with `status`, `credits`, `flags` and `body`.
fn reply(
    request: &[u8],
    status: NtStatus,
    credits: u16,
    flags: HeaderFlags,
    body: &[u8],
) -> Vec<u8> {
    let asked = Header::decode(request).unwrap();
    let header = Header {
        status,
        credits,
        flags: flags | HeaderFlags::SERVER_TO_REDIR,
        async_id: if flags.contains(HeaderFlags::ASYNC_COMMAND) {
            9
        } else {
            0
        },
        ..asked
    };
    let mut message = header.to_bytes().to_vec();
    message.extend_from_slice(body);
    let mut frame = (message.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&message);
    frame
}

const ECHO_BODY: [u8; 4] = [4, 0, 0, 0];
const ERROR_BODY: [u8; 9] = [9, 0, 0, 0, 0, 0, 0, 0, 0];

#[test]
fn an_interim_response_grants_credits_and_the_final_one_answers() {
    let (runtime, conn) = scripted(|request| {
        vec![
            reply(
                request,
                NtStatus::PENDING,
                1,
                HeaderFlags::ASYNC_COMMAND,
                &ERROR_BODY,
            ),
            reply(
                request,
                NtStatus::SUCCESS,
                10,
                HeaderFlags::empty(),
                &ECHO_BODY,
            ),
        ]
    });
    runtime.block_on(async {
        conn.echo().await.unwrap();
        assert_eq!(conn.available_credits(), 11);
        conn.echo().await.unwrap();
    });
}

#[test]
fn a_truncated_negotiate_response_is_an_error() {
    let (runtime, conn) = scripted(|request| {
        vec![reply(
            request,
            NtStatus::SUCCESS,
            1,
            HeaderFlags::empty(),
            &[65, 0, 1, 0],
        )]
    });
    runtime.block_on(async {
        let error = conn.negotiate(&ClientConfig::default()).await.unwrap_err();
        assert!(
            matches!(
                error,
                Error::Malformed {
                    command: Command::NEGOTIATE,
                    ..
                }
            ),
            "{error:?}"
        );
    });
}

#[test]
fn a_dialect_that_was_not_offered_is_an_error() {
    let (runtime, conn) = scripted(|request| {
        // A well-formed 2.1 answer to an offer of 3.1.1 alone.
        let mut body = vec![0u8; 64];
        body[0] = 65;
        body[4..6].copy_from_slice(&0x0210u16.to_le_bytes());
        body[56..58].copy_from_slice(&128u16.to_le_bytes());
        body.push(0);
        vec![reply(
            request,
            NtStatus::SUCCESS,
            1,
            HeaderFlags::empty(),
            &body,
        )]
    });
    runtime.block_on(async {
        let config = ClientConfig {
            dialects: vec![Dialect::SMB3_1_1],
            ..ClientConfig::default()
        };
        let error = conn.negotiate(&config).await.unwrap_err();
        assert!(
            matches!(&error, Error::Protocol(what) if what.contains("not offered")),
            "{error:?}"
        );
    });
}

#[test]
fn a_response_to_no_request_ends_the_connection() {
    let (runtime, conn) = scripted(|request| {
        let mut other = request.to_vec();
        other[24] ^= 0x40;
        vec![reply(
            &other,
            NtStatus::SUCCESS,
            1,
            HeaderFlags::empty(),
            &ECHO_BODY,
        )]
    });
    runtime.block_on(async {
        let error = conn.echo().await.unwrap_err();
        assert!(
            matches!(&error, Error::Protocol(what) if what.contains("not in flight")),
            "{error:?}"
        );
    });
}

#[test]
fn a_response_for_another_command_is_an_error() {
    let (runtime, conn) = scripted(|request| {
        let mut other = request.to_vec();
        other[12] = Command::READ.0 as u8;
        vec![reply(
            &other,
            NtStatus::SUCCESS,
            1,
            HeaderFlags::empty(),
            &ECHO_BODY,
        )]
    });
    runtime.block_on(async {
        let error = conn.echo().await.unwrap_err();
        assert!(
            matches!(&error, Error::Protocol(what) if what.contains("READ response to a ECHO")),
            "{error:?}"
        );
    });
}

#[test]
fn a_frame_prefix_beyond_24_bits_is_refused_before_anything_is_read() {
    let (runtime, conn) = scripted(|_| vec![vec![0x01, 0x00, 0x00, 0x40]]);
    runtime.block_on(async {
        let error = conn.echo().await.unwrap_err();
        assert!(
            matches!(&error, Error::Protocol(what) if what.contains("prefix")),
            "{error:?}"
        );
    });
}

#[test]
fn a_server_that_grants_no_credits_does_not_hold_the_client_forever() {
    let (runtime, conn) = scripted_with_timeout(
        |request| {
            vec![reply(
                request,
                NtStatus::SUCCESS,
                0,
                HeaderFlags::empty(),
                &ECHO_BODY,
            )]
        },
        Duration::from_millis(300),
    );
    runtime.block_on(async {
        conn.echo().await.unwrap();
        assert_eq!(conn.available_credits(), 0);
        let error = tokio::time::timeout(Duration::from_secs(10), conn.echo())
            .await
            .expect("the client gave up by itself")
            .unwrap_err();
        assert!(
            matches!(&error, Error::Closed(what) if what.contains("no credits")),
            "{error:?}"
        );
    });
}
