//! `smb3d cluster demo` (issue 18 item 9): a cluster on one machine for newcomers and tests.
//! One etcd (Debian's `etcd-server`) on 127.0.0.20, then N nodes on 127.0.0.21, .22, ...
//! sharing one directory as "demo" with one user database; a line per node says how to
//! connect, and SIGINT/SIGTERM stops everything and removes what the demo made.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use smb3d_cluster::{DEFAULT_PREFIX, Etcd};
use tokio::signal::unix::{SignalKind, signal};

use crate::AnyError;
use crate::serve::{DEMO_PORT, DEMO_USER, demo_share_dir, demo_user_db, private_state_dir};

/// Where etcd listens; the nodes take the addresses after it.
const ETCD_ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 20);
/// etcd and each node get this long to start answering.
const STARTUP: Duration = Duration::from_secs(30);
/// A stopping node gets this long to end its connections before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

#[derive(Args)]
pub struct DemoArgs {
    /// How many nodes (on 127.0.0.21, 127.0.0.22, ...).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=9))]
    nodes: u8,
    /// The directory the nodes share (default: a new temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The port every node listens on.
    #[arg(long, default_value_t = DEMO_PORT)]
    port: u16,
}

/// The processes the demo started; dropping it stops them (nodes first, then etcd) and
/// removes the demo's own directory, never the administrator's `--dir`.
struct Demo {
    state: PathBuf,
    etcd: Option<Child>,
    nodes: Vec<(String, Child)>,
}

pub fn run(args: DemoArgs) -> Result<(), AnyError> {
    let etcd_binary = find_etcd()?;
    let state = private_state_dir(&std::env::temp_dir()).map_err(|e| {
        format!(
            "a directory for the demo in {}: {e}",
            std::env::temp_dir().display()
        )
    })?;
    let mut demo = Demo {
        state,
        etcd: None,
        nodes: Vec::new(),
    };
    let removed = if args.dir.is_some() {
        ""
    } else {
        " (a new directory, removed when the demo stops)"
    };
    let share = demo_share_dir(args.dir, &demo.state)?;
    let (user_db, password) = demo_user_db(&demo.state)?;
    let endpoint = demo.start_etcd(&etcd_binary)?;
    for i in 1..=args.nodes {
        let name = format!("node{i}");
        let listen = SocketAddr::from((Ipv4Addr::new(127, 0, 0, 20 + i), args.port));
        let config = demo.node_config(&name, listen, &endpoint, &user_db, &share)?;
        let child = demo.start_node(&name, &config, listen)?;
        println!(
            "node {name} pid {}: smbclient //{}/demo -p {} -U {DEMO_USER}%{password}",
            child.id(),
            listen.ip(),
            listen.port()
        );
        demo.nodes.push((name, child));
    }
    println!(
        "sharing {} as \"demo\"{removed}; etcd at {endpoint}; logs in {}; Ctrl-C stops the demo",
        share.display(),
        demo.state.display()
    );
    demo.wait_for_stop()
}

/// etcd from PATH or where Debian puts it.
fn find_etcd() -> Result<PathBuf, AnyError> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("etcd"));
    on_path
        .chain(std::iter::once(PathBuf::from("/usr/bin/etcd")))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "etcd is not installed: the demo needs it (Debian: apt-get install etcd-server)".into()
        })
}

/// A port free now on `address`.
fn free_port(address: Ipv4Addr) -> io::Result<u16> {
    Ok(TcpListener::bind((address, 0))?.local_addr()?.port())
}

impl Demo {
    /// Starts a one-member etcd and returns its client URL once it answers.
    fn start_etcd(&mut self, binary: &Path) -> Result<String, AnyError> {
        let client = format!("http://{ETCD_ADDRESS}:{}", free_port(ETCD_ADDRESS)?);
        let peer = format!("http://{ETCD_ADDRESS}:{}", free_port(ETCD_ADDRESS)?);
        let log = std::fs::File::create(self.state.join("etcd.log"))?;
        let child = Command::new(binary)
            .args(["--name", "demo", "--data-dir"])
            .arg(self.state.join("etcd"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("demo={peer}")])
            .args(["--logger", "zap", "--log-outputs", "stderr"])
            // The nodes ping every second (docs/cluster.md "Configuration"); etcd's default
            // allows a ping every 5 s and closes connections that ping more often.
            .args(["--grpc-keepalive-min-time", "1s"])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", binary.display()))?;
        self.etcd = Some(child);
        let endpoints = [client.clone()];
        let deadline = Instant::now() + STARTUP;
        loop {
            let answered = Etcd::connect(&endpoints, DEFAULT_PREFIX)
                .and_then(|etcd| smb3d_cluster::members(&etcd));
            match answered {
                Ok(_) => return Ok(client),
                Err(e) if Instant::now() > deadline => {
                    return Err(self.failed("etcd", "etcd.log", &e.to_string()));
                }
                Err(_) => {
                    if let Some(status) =
                        self.etcd.as_mut().and_then(|c| c.try_wait().ok().flatten())
                    {
                        return Err(self.failed("etcd", "etcd.log", &status.to_string()));
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }

    /// Writes a node's configuration: the same share path and user database as every other
    /// node (docs/cluster.md), its own address, admin socket and state directory. "demo" is a
    /// general cluster share (`scale_out = false`): an office's documents keep their clients'
    /// write caching and durable handles, which a scale-out share does not grant.
    fn node_config(
        &self,
        name: &str,
        listen: SocketAddr,
        etcd: &str,
        user_db: &Path,
        share: &Path,
    ) -> Result<PathBuf, AnyError> {
        let state_dir = self.state.join(name);
        std::fs::create_dir(&state_dir)?;
        let text = format!(
            "[server]\nlisten = [\"{listen}\"]\nserver_name = \"SMB3D\"\nuser_db = {db:?}\nadmin_socket = {admin:?}\nstate_dir = {state:?}\n\n[cluster]\netcd = [{etcd:?}]\nnode = {name:?}\n\n[share.demo]\npath = {share:?}\nscale_out = false\n",
            db = user_db.display().to_string(),
            admin = state_dir.join("admin.sock").display().to_string(),
            state = state_dir.display().to_string(),
            share = share.display().to_string(),
        );
        let path = self.state.join(format!("{name}.toml"));
        smb3d_config::Config::parse(&path, &text)?;
        std::fs::write(&path, text)?;
        Ok(path)
    }

    /// Starts `smb3d serve` for one node and returns once it accepts connections.
    fn start_node(
        &mut self,
        name: &str,
        config: &Path,
        listen: SocketAddr,
    ) -> Result<Child, AnyError> {
        let log_name = format!("{name}.log");
        let log = std::fs::File::create(self.state.join(&log_name))?;
        let mut child = Command::new(std::env::current_exe()?)
            .arg("serve")
            .arg("--config")
            .arg(config)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        let deadline = Instant::now() + STARTUP;
        while TcpStream::connect_timeout(&listen, Duration::from_millis(200)).is_err() {
            let exited = child.try_wait().ok().flatten();
            if exited.is_some() || Instant::now() > deadline {
                let why = exited.map_or("did not listen in time".to_owned(), |s| s.to_string());
                let _ = child.kill();
                let _ = child.wait();
                return Err(self.failed(name, &log_name, &why));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(child)
    }

    /// The error for a process that did not start, with the end of its log.
    fn failed(&self, what: &str, log: &str, why: &str) -> AnyError {
        let text = std::fs::read_to_string(self.state.join(log)).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(5).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!(
            "{what} did not start ({why}); its log ends:\n{}",
            tail.join("\n")
        )
        .into()
    }

    /// Runs until SIGINT or SIGTERM, saying when a node exits by itself.
    fn wait_for_stop(&mut self) -> Result<(), AnyError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async {
            let mut terminate = signal(SignalKind::terminate())?;
            let mut interrupt = signal(SignalKind::interrupt())?;
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = terminate.recv() => break,
                    _ = interrupt.recv() => break,
                    _ = tick.tick() => self.report_exits(),
                }
            }
            Ok::<(), AnyError>(())
        })?;
        println!("stopping the demo");
        Ok(())
    }

    fn report_exits(&mut self) {
        for (name, child) in &mut self.nodes {
            if let Ok(Some(status)) = child.try_wait() {
                eprintln!("node {name} exited ({status})");
            }
        }
        self.nodes
            .retain_mut(|(_, child)| matches!(child.try_wait(), Ok(None)));
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        for (_, child) in &self.nodes {
            terminate(child);
        }
        for (_, child) in &mut self.nodes {
            stop_within(child, STOP_GRACE);
        }
        if let Some(etcd) = &mut self.etcd {
            terminate(etcd);
            stop_within(etcd, STOP_GRACE);
        }
        if let Err(e) = std::fs::remove_dir_all(&self.state) {
            eprintln!("removing {}: {e}", self.state.display());
        }
    }
}

/// Asks a child to stop as systemd would (SIGTERM: a node leaves the cluster at once).
#[allow(unsafe_code)]
fn terminate(child: &Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with our own child's pid and a signal number has no memory effects.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

/// Waits for a child to exit, killing it after `grace`.
fn stop_within(child: &mut Child, grace: Duration) {
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}
