//! smbcp: copies one file to or from an SMB2/3 share with smb3d's client, for the interop
//! tests that check it against third-party clients and servers: `put LOCAL REMOTE` or
//! `get REMOTE LOCAL`, many READs or WRITEs in flight, signed or encrypted as asked. Prints
//! what the connection negotiated and what the session did as JSON on stdout; any error (a bad
//! signature, a response in the clear to an encrypted request...) fails it.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use clap::Parser;
use serde_json::json;
use smb3d_client::ntlm::Logon;
use smb3d_client::{ClientConfig, Connection, OpenSpec, Protection, Tree};
use smb3d_crypto::{Cipher, SigningAlgorithm};
use smb3d_smb2::FileId;
use smb3d_smb2::negotiate::Dialect;
use tokio::task::JoinSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Direction {
    Put,
    Get,
}

#[derive(Debug, Parser)]
#[command(about = "Copies a file to or from an SMB2/3 share with smb3d's client")]
struct Args {
    #[arg(value_enum)]
    direction: Direction,
    /// put: the local file; get: the file on the share.
    from: String,
    /// put: the file on the share; get: the local file.
    to: String,
    /// HOST:PORT.
    #[arg(long)]
    server: String,
    #[arg(long, default_value = "share")]
    share: String,
    #[arg(long)]
    user: String,
    #[arg(long)]
    password: String,
    #[arg(long, default_value = "WORKGROUP")]
    domain: String,
    /// 2.0.2, 2.1, 3.0, 3.0.2 or 3.1.1.
    #[arg(long, default_value = "3.1.1")]
    dialect: String,
    /// plain, sign or encrypt.
    #[arg(long, default_value = "plain")]
    protection: String,
    /// Signing algorithm offered in 3.1.1: gmac or cmac.
    #[arg(long, default_value = "gmac")]
    signing: String,
    /// Cipher offered in 3.1.1: aes-128-gcm, aes-256-gcm, aes-128-ccm or aes-256-ccm.
    #[arg(long, default_value = "aes-128-gcm")]
    cipher: String,
    /// Bytes per READ or WRITE (at most what the server allows).
    #[arg(long, default_value_t = 1 << 20)]
    chunk: u32,
    /// READs or WRITEs in flight.
    #[arg(long, default_value_t = 16)]
    depth: usize,
}

fn config(args: &Args) -> Result<ClientConfig, String> {
    let dialect = match args.dialect.as_str() {
        "2.0.2" => Dialect::SMB2_0_2,
        "2.1" => Dialect::SMB2_1,
        "3.0" => Dialect::SMB3_0,
        "3.0.2" => Dialect::SMB3_0_2,
        "3.1.1" => Dialect::SMB3_1_1,
        other => return Err(format!("unknown dialect {other}")),
    };
    let protection = match args.protection.as_str() {
        "plain" => Protection::Plain,
        "sign" => Protection::Sign,
        "encrypt" => Protection::Encrypt,
        other => return Err(format!("unknown protection {other}")),
    };
    let signing = match args.signing.as_str() {
        "gmac" => SigningAlgorithm::AesGmac,
        "cmac" => SigningAlgorithm::AesCmac,
        other => return Err(format!("unknown signing algorithm {other}")),
    };
    let cipher = match args.cipher.as_str() {
        "aes-128-gcm" => Cipher::Aes128Gcm,
        "aes-256-gcm" => Cipher::Aes256Gcm,
        "aes-128-ccm" => Cipher::Aes128Ccm,
        "aes-256-ccm" => Cipher::Aes256Ccm,
        other => return Err(format!("unknown cipher {other}")),
    };
    Ok(ClientConfig {
        dialects: vec![dialect],
        protection,
        signing: vec![signing],
        ciphers: vec![cipher],
        ..ClientConfig::default()
    })
}

async fn put(
    tree: &Tree,
    local: &str,
    remote: &str,
    chunk: usize,
    depth: usize,
) -> Result<u64, String> {
    let data: Arc<[u8]> = std::fs::read(local)
        .map_err(|e| format!("{local}: {e}"))?
        .into();
    let open = tree
        .create(
            remote,
            &OpenSpec {
                disposition: smb3d_smb2::create::CreateDisposition::OVERWRITE_IF,
                ..OpenSpec::open_or_create()
            },
        )
        .await
        .map_err(|e| format!("create {remote}: {e}"))?;
    let mut writes = JoinSet::new();
    for (i, _) in data.chunks(chunk).enumerate() {
        if writes.len() >= depth {
            finish(writes.join_next().await)?;
        }
        let (tree, data) = (tree.clone(), data.clone());
        writes.spawn(async move {
            let start = i * chunk;
            let piece = data
                .get(start..(start + chunk).min(data.len()))
                .unwrap_or_default();
            match tree.write(open.file_id, start as u64, piece).await {
                Ok(n) if n as usize == piece.len() => Ok(()),
                Ok(n) => Err(format!("wrote {n} of {} bytes at {start}", piece.len())),
                Err(e) => Err(format!("write at {start}: {e}")),
            }
        });
    }
    while let Some(done) = writes.join_next().await {
        finish(Some(done))?;
    }
    tree.close(open.file_id)
        .await
        .map_err(|e| format!("close: {e}"))?;
    Ok(data.len() as u64)
}

fn finish(done: Option<Result<Result<(), String>, tokio::task::JoinError>>) -> Result<(), String> {
    match done {
        Some(Ok(result)) => result,
        Some(Err(e)) => Err(e.to_string()),
        None => Ok(()),
    }
}

async fn get(
    tree: &Tree,
    remote: &str,
    local: &str,
    chunk: usize,
    depth: usize,
) -> Result<u64, String> {
    let open = tree
        .create(remote, &OpenSpec::read())
        .await
        .map_err(|e| format!("open {remote}: {e}"))?;
    let size = usize::try_from(open.end_of_file).map_err(|e| e.to_string())?;
    let mut out = vec![0u8; size];
    let mut reads = JoinSet::new();
    let file: FileId = open.file_id;
    let mut offset = 0;
    loop {
        while offset < size && reads.len() < depth {
            let tree = tree.clone();
            let at = offset;
            let len = chunk.min(size - at) as u32;
            reads.spawn(async move { (at, tree.read(file, at as u64, len).await) });
            offset += chunk;
        }
        let Some(done) = reads.join_next().await else {
            break;
        };
        let (at, read) = done.map_err(|e| e.to_string())?;
        let read = read.map_err(|e| format!("read at {at}: {e}"))?;
        let data = read.data();
        let end = at + data.len();
        match out.get_mut(at..end) {
            Some(dst) if !data.is_empty() => dst.copy_from_slice(data),
            _ => return Err(format!("a short read at {at}: {} bytes", data.len())),
        }
    }
    tree.close(open.file_id)
        .await
        .map_err(|e| format!("close: {e}"))?;
    std::fs::write(local, &out).map_err(|e| format!("{local}: {e}"))?;
    Ok(size as u64)
}

async fn run(args: Args) -> Result<serde_json::Value, String> {
    let addr: SocketAddr = args
        .server
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let config = config(&args)?;
    let conn = Connection::connect(addr, &config)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let logon = Logon {
        user: &args.user,
        password: &args.password,
        domain: &args.domain,
        anonymous: false,
        mic: true,
        spnego: true,
    };
    let session = conn
        .logon(&logon, &config)
        .await
        .map_err(|e| format!("logon: {e}"))?;
    let tree = session
        .tree_connect(&format!("\\\\{}\\{}", addr.ip(), args.share))
        .await
        .map_err(|e| format!("tree connect: {e}"))?;
    let negotiated = conn.negotiated().ok_or("not negotiated")?;
    let max = match args.direction {
        Direction::Put => negotiated.max_write,
        Direction::Get => negotiated.max_read,
    };
    let chunk = args.chunk.min(max).max(1) as usize;
    let depth = args.depth.max(1);
    let bytes = match args.direction {
        Direction::Put => put(&tree, &args.from, &args.to, chunk, depth).await?,
        Direction::Get => get(&tree, &args.from, &args.to, chunk, depth).await?,
    };
    let _ = session.logoff().await;
    Ok(json!({
        "bytes": bytes,
        "dialect": format!("{:?}", negotiated.dialect),
        "signing": format!("{:?}", negotiated.signing),
        "cipher": negotiated.cipher.map(|c| format!("{c:?}")),
        "signed": session.signs(),
        "encrypted": tree.encrypts(),
        "chunk": chunk,
    }))
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("smbcp: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args)) {
        Ok(report) => {
            println!("{report}");
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("smbcp: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
