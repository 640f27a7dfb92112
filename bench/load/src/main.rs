//! smbload: runs a named workload against an SMB2/3 server with N connections and D requests
//! in flight on each for T seconds, and reports operations and bytes per second, latency
//! percentiles, and the CPU the server (a PID and the processes under it, from /proc) and the
//! tool itself spent per operation and per GiB. `--json` prints the report for bench/run.

mod hist;
mod nbench;
mod procfs;
mod workload;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::json;
use smb3d_client::ntlm::Logon;
use smb3d_client::{ClientConfig, Connection, Protection, Tree};
use smb3d_crypto::{Cipher, SigningAlgorithm};
use smb3d_smb2::negotiate::Dialect;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::hist::Histogram;
use crate::workload::{Done, Kind, Params, Worker};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ProtectionArg {
    Plain,
    /// Signed: AES-GMAC in 3.1.1.
    Sign,
    /// Encrypted: AES-128-GCM in 3.1.1.
    Encrypt,
}

#[derive(Debug, Parser)]
#[command(about = "A load generator for SMB2/3 servers (smb3d's bench/load)")]
struct Args {
    /// The server, HOST:PORT.
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
    #[arg(long, value_enum)]
    workload: Kind,
    /// Connections, each logged on with its own session.
    #[arg(long, default_value_t = 1)]
    connections: usize,
    /// Operations in flight on each connection (NBENCH: 1, a client replays in order).
    #[arg(long, default_value_t = 1)]
    depth: usize,
    /// Seconds measured.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Seconds run before the measurement starts.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    #[arg(long, value_enum, default_value = "plain")]
    protection: ProtectionArg,
    /// 2.0.2, 2.1, 3.0, 3.0.2 or 3.1.1.
    #[arg(long, default_value = "3.1.1")]
    dialect: String,
    /// The server's process, whose CPU time (with its children's) is measured.
    #[arg(long)]
    server_pid: Option<u32>,
    /// Worker threads of the tool.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Where on the share the workload's files live.
    #[arg(long, default_value = "smbload")]
    dir: String,
    /// Size of the file the read workloads read and the write workloads write within.
    #[arg(long, default_value_t = 64 << 20)]
    file_size: u64,
    /// Entries of the querydir directory.
    #[arg(long, default_value_t = 20_000)]
    entries: usize,
    /// Files the mix workload opens.
    #[arg(long, default_value_t = 100)]
    mix_files: usize,
    /// dbench's load file.
    #[arg(long, default_value = "/usr/share/dbench/client.txt")]
    loadfile: PathBuf,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    json: bool,
}

const WARMUP: u8 = 0;
const MEASURE: u8 = 1;
const STOP: u8 = 2;
/// Connections logging on at once.
const CONNECT_PARALLEL: usize = 16;
const GIB: f64 = (1u64 << 30) as f64;

/// What one worker counted while the clock ran.
struct Stats {
    latency: Histogram,
    ops: u64,
    requests: u64,
    bytes: u64,
    entries: u64,
    errors: u64,
    first_error: Option<String>,
    mismatches: u64,
    first_mismatch: Option<String>,
}

impl Stats {
    fn new() -> Self {
        Self {
            latency: Histogram::default(),
            ops: 0,
            requests: 0,
            bytes: 0,
            entries: 0,
            errors: 0,
            first_error: None,
            mismatches: 0,
            first_mismatch: None,
        }
    }

    fn add(&mut self, done: Done, nanos: u64) {
        self.latency.record(nanos);
        self.ops += 1;
        self.requests += u64::from(done.requests);
        self.bytes += done.bytes;
        self.entries += done.entries;
        if let Some(m) = done.mismatch {
            self.mismatches += 1;
            self.first_mismatch.get_or_insert(m);
        }
    }

    fn merge(&mut self, other: Stats) {
        self.latency.merge(&other.latency);
        self.ops += other.ops;
        self.requests += other.requests;
        self.bytes += other.bytes;
        self.entries += other.entries;
        self.errors += other.errors;
        self.mismatches += other.mismatches;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        if self.first_mismatch.is_none() {
            self.first_mismatch = other.first_mismatch;
        }
    }
}

async fn run_worker(mut worker: Worker, phase: Arc<AtomicU8>) -> Stats {
    let mut stats = Stats::new();
    loop {
        let before = phase.load(Ordering::Relaxed);
        if before == STOP {
            break;
        }
        let started = Instant::now();
        let result = worker.op().await;
        let elapsed = started.elapsed().as_nanos() as u64;
        let counted = before == MEASURE && phase.load(Ordering::Relaxed) == MEASURE;
        match result {
            Ok(done) if counted => stats.add(done, elapsed),
            Ok(_) => {}
            Err(e) => {
                stats.errors += 1;
                stats.first_error.get_or_insert_with(|| e.to_string());
                if worker.broken() {
                    break;
                }
            }
        }
    }
    stats
}

fn dialect(text: &str) -> Result<Dialect, String> {
    Ok(match text {
        "2.0.2" => Dialect::SMB2_0_2,
        "2.1" => Dialect::SMB2_1,
        "3.0" => Dialect::SMB3_0,
        "3.0.2" => Dialect::SMB3_0_2,
        "3.1.1" => Dialect::SMB3_1_1,
        other => return Err(format!("unknown dialect {other}")),
    })
}

fn client_config(args: &Args) -> Result<ClientConfig, String> {
    Ok(ClientConfig {
        dialects: vec![dialect(&args.dialect)?],
        protection: match args.protection {
            ProtectionArg::Plain => Protection::Plain,
            ProtectionArg::Sign => Protection::Sign,
            ProtectionArg::Encrypt => Protection::Encrypt,
        },
        signing: vec![SigningAlgorithm::AesGmac, SigningAlgorithm::AesCmac],
        ciphers: vec![Cipher::Aes128Gcm, Cipher::Aes128Ccm],
        target_credits: u16::try_from(args.depth.saturating_mul(4).clamp(64, 8192)).unwrap_or(8192),
        ..ClientConfig::default()
    })
}

async fn connect(addr: SocketAddr, args: &Args, config: &ClientConfig) -> Result<Tree, String> {
    let logon = Logon {
        user: &args.user,
        password: &args.password,
        domain: &args.domain,
        anonymous: false,
        mic: true,
        spnego: config.spnego,
    };
    let conn = Connection::connect(addr, config)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let session = conn
        .logon(&logon, config)
        .await
        .map_err(|e| format!("logon: {e}"))?;
    let unc = format!("\\\\{}\\{}", addr.ip(), args.share);
    session
        .tree_connect(&unc)
        .await
        .map_err(|e| format!("tree connect {unc}: {e}"))
}

/// Connects `n` trees, [`CONNECT_PARALLEL`] logons at a time.
async fn connect_all(
    addr: SocketAddr,
    args: &Arc<Args>,
    config: &Arc<ClientConfig>,
    n: usize,
) -> Result<Vec<Tree>, String> {
    let gate = Arc::new(Semaphore::new(CONNECT_PARALLEL));
    let mut tasks = JoinSet::new();
    for i in 0..n {
        let (gate, args, config) = (gate.clone(), args.clone(), config.clone());
        tasks.spawn(async move {
            let _turn = gate.acquire().await.map_err(|e| e.to_string())?;
            connect(addr, &args, &config).await.map(|t| (i, t))
        });
    }
    let mut trees = Vec::with_capacity(n);
    while let Some(joined) = tasks.join_next().await {
        trees.push(joined.map_err(|e| e.to_string())??);
    }
    trees.sort_by_key(|(i, _)| *i);
    Ok(trees.into_iter().map(|(_, t)| t).collect())
}

async fn run(args: Arc<Args>) -> Result<serde_json::Value, String> {
    let addr = args
        .server
        .to_socket_addrs()
        .map_err(|e| format!("{}: {e}", args.server))?
        .next()
        .ok_or_else(|| format!("{}: no address", args.server))?;
    let config = Arc::new(client_config(&args)?);
    let depth = if args.workload == Kind::Nbench {
        1
    } else {
        args.depth.max(1)
    };
    let params = Params {
        dir: args.dir.clone(),
        file_size: args.file_size,
        entries: args.entries,
        mix_files: args.mix_files,
        loadfile: args.loadfile.clone(),
    };
    let prepared = {
        let tree = connect(addr, &args, &config).await?;
        Arc::new(workload::prepare(args.workload, &tree, &params).await?)
    };
    let memory = |pid: Option<u32>| pid.map(procfs::tree_memory_kib);
    // Let the setup connection's end reach the server before its memory is taken.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let memory_before = memory(args.server_pid);
    let trees = connect_all(addr, &args, &config, args.connections.max(1)).await?;
    let memory_connected = memory(args.server_pid);
    let negotiated = trees
        .first()
        .and_then(|t| t.session().connection().negotiated());
    let phase = Arc::new(AtomicU8::new(WARMUP));
    let mut workers = JoinSet::new();
    for (c, tree) in trees.iter().enumerate() {
        let state = workload::open_for(&prepared, tree, c)
            .await
            .map_err(|e| format!("connection {c}: {e}"))?;
        for d in 0..depth {
            let worker = Worker::new(
                prepared.clone(),
                tree.clone(),
                state,
                c,
                (c * 1000 + d) as u64,
            );
            workers.spawn(run_worker(worker, phase.clone()));
        }
    }
    tokio::time::sleep(Duration::from_secs_f64(args.warmup)).await;
    let server_cpu_start = args.server_pid.and_then(procfs::tree_cpu_seconds);
    let own_cpu_start = procfs::own_cpu_seconds();
    phase.store(MEASURE, Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
    phase.store(STOP, Ordering::Relaxed);
    let seconds = started.elapsed().as_secs_f64();
    let server_cpu_end = args.server_pid.and_then(procfs::tree_cpu_seconds);
    let own_cpu = procfs::own_cpu_seconds() - own_cpu_start;
    let mut stats = Stats::new();
    while let Some(joined) = workers.join_next().await {
        stats.merge(joined.map_err(|e| e.to_string())?);
    }
    let memory_after = memory(args.server_pid);
    drop(trees);
    Ok(report(
        &args,
        depth,
        seconds,
        &stats,
        Measured {
            negotiated: negotiated.map(|n| (n.dialect, n.signing, n.cipher)),
            server_cpu: server_cpu_start.zip(server_cpu_end).map(|(a, b)| b - a),
            own_cpu,
            memory: [memory_before, memory_connected, memory_after],
        },
    ))
}

/// Measurements around the run.
struct Measured {
    negotiated: Option<(Dialect, SigningAlgorithm, Option<Cipher>)>,
    server_cpu: Option<f64>,
    own_cpu: f64,
    /// (RSS, PSS) KiB before connecting, once connected, after the run.
    memory: [Option<(u64, u64)>; 3],
}

fn report(
    args: &Args,
    depth: usize,
    seconds: f64,
    stats: &Stats,
    m: Measured,
) -> serde_json::Value {
    let ops = stats.ops as f64;
    let per_op = |cpu: f64| (stats.ops > 0).then(|| cpu / ops * 1e6);
    let gib = stats.bytes as f64 / GIB;
    let per_gib = |cpu: f64| (gib > 0.0).then(|| cpu / gib);
    let ops_per_s = ops / seconds;
    let us = |ns: u64| ns as f64 / 1000.0;
    let connections = args.connections.max(1) as f64;
    let growth = |later: Option<(u64, u64)>| {
        m.memory[0].zip(later).map(|(before, after)| {
            json!({
                "rss_kib": (after.0 as f64 - before.0 as f64) / connections,
                "pss_kib": (after.1 as f64 - before.1 as f64) / connections,
            })
        })
    };
    json!({
        "workload": args.workload.name(),
        "server": args.server,
        "connections": args.connections.max(1),
        "depth": depth,
        "protection": format!("{:?}", args.protection).to_lowercase(),
        "dialect": m.negotiated.map(|n| format!("{:?}", n.0)),
        "signing": m.negotiated.map(|n| format!("{:?}", n.1)),
        "cipher": m.negotiated.and_then(|n| n.2).map(|c| format!("{c:?}")),
        "seconds": seconds,
        "ops": stats.ops,
        "requests": stats.requests,
        "bytes": stats.bytes,
        "ops_per_s": ops_per_s,
        "requests_per_s": stats.requests as f64 / seconds,
        "gib_per_s": gib / seconds,
        "entries_per_s": stats.entries as f64 / seconds,
        "latency_us": {
            "p50": us(stats.latency.quantile(0.50)),
            "p90": us(stats.latency.quantile(0.90)),
            "p99": us(stats.latency.quantile(0.99)),
            "max": us(stats.latency.max()),
            "mean": stats.latency.mean() / 1000.0,
            "samples": stats.latency.count(),
        },
        "errors": stats.errors,
        "first_error": stats.first_error,
        "status_mismatches": stats.mismatches,
        "first_mismatch": stats.first_mismatch,
        "server_cpu_s": m.server_cpu,
        "server_cpu_us_per_op": m.server_cpu.and_then(per_op),
        "server_cpu_s_per_gib": m.server_cpu.and_then(per_gib),
        "client_cpu_s": m.own_cpu,
        "client_cpu_us_per_op": per_op(m.own_cpu),
        "client_cpu_s_per_gib": per_gib(m.own_cpu),
        // The share of one core the tool needs for every 10,000 operations per second.
        "client_cores_per_10k_ops": (stats.ops > 0).then(|| m.own_cpu / seconds / (ops_per_s / 1e4)),
        "server_memory_kib": {
            "before": m.memory[0].map(|(r, p)| json!({"rss": r, "pss": p})),
            "connected": m.memory[1].map(|(r, p)| json!({"rss": r, "pss": p})),
            "after": m.memory[2].map(|(r, p)| json!({"rss": r, "pss": p})),
        },
        "growth_per_connection": {
            "connected": growth(m.memory[1]),
            "after": growth(m.memory[2]),
        },
    })
}

fn summary(r: &serde_json::Value) -> String {
    let f = |key: &str| r.get(key).and_then(serde_json::Value::as_f64);
    let lat = |key: &str| r["latency_us"].get(key).and_then(serde_json::Value::as_f64);
    let mut text = format!(
        "{} x{} depth {} {}: {:.0} ops/s ({:.0} requests/s, {:.3} GiB/s), latency p50 {:.0} us p99 {:.0} us",
        r["workload"].as_str().unwrap_or("?"),
        r["connections"],
        r["depth"],
        r["protection"].as_str().unwrap_or("?"),
        f("ops_per_s").unwrap_or(0.0),
        f("requests_per_s").unwrap_or(0.0),
        f("gib_per_s").unwrap_or(0.0),
        lat("p50").unwrap_or(0.0),
        lat("p99").unwrap_or(0.0),
    );
    if let Some(cpu) = f("server_cpu_us_per_op") {
        text += &format!(", server CPU {cpu:.1} us/op");
    }
    if let Some(cpu) = f("server_cpu_s_per_gib") {
        text += &format!(" {cpu:.2} s/GiB");
    }
    if let Some(cores) = f("client_cores_per_10k_ops") {
        text += &format!(", tool {cores:.2} cores per 10k ops/s");
    }
    for key in ["errors", "status_mismatches"] {
        if r[key].as_u64().unwrap_or(0) > 0 {
            text += &format!(", {key} {}", r[key]);
        }
    }
    text
}

fn main() -> std::process::ExitCode {
    let args = Arc::new(Args::parse());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("smbload: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(args.clone())) {
        Ok(report) => {
            eprintln!("{}", summary(&report));
            if let Some(error) = report["first_error"].as_str() {
                eprintln!("first error: {error}");
            }
            if let Some(mismatch) = report["first_mismatch"].as_str() {
                eprintln!("first status mismatch: {mismatch}");
            }
            if args.json {
                println!("{report}");
            }
            if report["errors"].as_u64().unwrap_or(0) > 0 || report["ops"].as_u64() == Some(0) {
                std::process::ExitCode::FAILURE
            } else {
                std::process::ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("smbload: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
