//! How a cluster node serves the public addresses it holds (issue 18 item 4,
//! docs/cluster.md): with `[cluster] public_interface` the address is added to that interface
//! with the `ip` command and announced with a gratuitous ARP (`arping -U`, IPv4), as CTDB
//! does; without it the address must be on the host already (tests put loopback addresses on
//! `lo`) and is only listened on. A held address gets a listener of its own, served until the
//! address is taken down, which ends its connections.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::process::Command;
use std::sync::Arc;

use smb3d_cluster::AddressHost;
use smb3d_server::Server;
use tokio::sync::{mpsc, oneshot};

use crate::witness::WitnessService;

/// What the serving loop is asked to do with a public address.
pub enum Listen {
    /// Serve SMB on this listener, and the witness service's ports on these.
    Up(IpAddr, TcpListener, Vec<TcpListener>),
    /// Stop serving the address, then answer.
    Down(IpAddr, std::sync::mpsc::SyncSender<()>),
}

/// A node's [`AddressHost`]: brings addresses up on `interface` (if any), listens on them at
/// `port` (and the witness service's ports), restores the persistent handles of a node that
/// left, and tells the witness service what the cluster looks like.
pub struct NodeAddresses {
    pub interface: Option<String>,
    pub port: u16,
    pub server: Arc<Server>,
    pub listen: mpsc::UnboundedSender<Listen>,
    pub witness: Arc<WitnessService>,
}

impl AddressHost for NodeAddresses {
    fn bring_up(&self, ip: IpAddr) -> io::Result<()> {
        if let Some(interface) = &self.interface {
            add_address(interface, ip)?;
        }
        let listener = TcpListener::bind(SocketAddr::new(ip, self.port))?;
        listener.set_nonblocking(true)?;
        let rpc = self.witness.listeners(ip);
        self.listen
            .send(Listen::Up(ip, listener, rpc))
            .map_err(|_| io::Error::other("the server is stopping"))?;
        if let Some(interface) = &self.interface {
            announce(interface, ip);
        }
        Ok(())
    }

    fn take_down(&self, ip: IpAddr) {
        let (done, stopped) = std::sync::mpsc::sync_channel(1);
        if self.listen.send(Listen::Down(ip, done)).is_ok() {
            let _ = stopped.recv();
        }
        if let Some(interface) = &self.interface {
            remove_address(interface, ip);
        }
    }

    fn node_left(&self, name: &str) {
        let restored = self.server.restore_persistent_handles();
        tracing::info!(
            "cluster: {restored} durable and persistent open(s) of node {name} restored here for their clients"
        );
    }

    fn cluster_read(&self, live: &[String], holders: &BTreeMap<IpAddr, String>) {
        self.witness.cluster_changed(live, holders);
    }
}

/// Aborts a task when dropped: the witness listeners of an address end with its entry.
pub struct AbortOnDrop(pub tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn prefix_len(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

fn run(command: &mut Command) -> io::Result<std::process::Output> {
    command.output().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("{:?}: {e}", command.get_program().to_string_lossy()),
        )
    })
}

/// `ip addr add IP/32 dev IFACE` (an address already there is taken as it is).
fn add_address(interface: &str, ip: IpAddr) -> io::Result<()> {
    let cidr = format!("{ip}/{}", prefix_len(ip));
    let mut add = Command::new("ip");
    add.args(["addr", "add", &cidr, "dev", interface]);
    if ip.is_ipv6() {
        add.arg("nodad");
    }
    let out = run(&mut add)?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && !stderr.contains("File exists") {
        return Err(io::Error::other(format!(
            "ip addr add {cidr} dev {interface}: {}",
            stderr.trim()
        )));
    }
    Ok(())
}

/// One gratuitous ARP for `ip` on `interface`, once it is listened on, so that neighbours and
/// switches send its traffic here at once. `arping` is not waited for (it lingers a second
/// after sending, which a takeover must not wait); a thread reaps it and logs a failure. IPv6
/// gets no unsolicited neighbour advertisement from us: the kernel sends one when the
/// interface has `net.ipv6.conf.IFACE.ndisc_notify = 1`.
fn announce(interface: &str, ip: IpAddr) {
    if !ip.is_ipv4() {
        return;
    }
    let ip = ip.to_string();
    let arping = Command::new("arping")
        .args(["-U", "-c", "1", "-I", interface, &ip])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    match arping {
        Ok(child) => {
            let interface = interface.to_owned();
            std::thread::spawn(move || match child.wait_with_output() {
                Ok(out) if out.status.success() => {}
                Ok(out) => tracing::warn!(
                    "cluster: gratuitous ARP for {ip} on {interface}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
                Err(e) => tracing::warn!("cluster: gratuitous ARP for {ip}: {e}"),
            });
        }
        Err(e) => tracing::warn!(
            "cluster: no gratuitous ARP for {ip} (arping: {e}; install iputils-arping): neighbours learn the move when their ARP entries expire"
        ),
    }
}

fn remove_address(interface: &str, ip: IpAddr) {
    let cidr = format!("{ip}/{}", prefix_len(ip));
    match run(Command::new("ip").args(["addr", "del", &cidr, "dev", interface])) {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if !stderr.contains("Cannot assign") {
                tracing::warn!(
                    "cluster: ip addr del {cidr} dev {interface}: {}",
                    stderr.trim()
                );
            }
        }
        Err(e) => tracing::warn!("cluster: removing {cidr} from {interface}: {e}"),
    }
}

/// Serves the public addresses the cluster gives this node until `requests` ends.
pub async fn serve(
    server: Arc<Server>,
    mut requests: mpsc::UnboundedReceiver<Listen>,
    witness: Arc<WitnessService>,
) {
    type Serving = (
        oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
        AbortOnDrop,
    );
    let mut serving: HashMap<IpAddr, Serving> = HashMap::new();
    while let Some(request) = requests.recv().await {
        match request {
            Listen::Up(ip, listener, rpc) => {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => listener,
                    Err(e) => {
                        tracing::error!("cluster: listening on public address {ip}: {e}");
                        continue;
                    }
                };
                let (stop, stopped) = oneshot::channel::<()>();
                let task = tokio::spawn(smb3d_transport::serve(
                    vec![listener],
                    server.clone(),
                    smb3d_transport::TransportConfig::default(),
                    async {
                        let _ = stopped.await;
                    },
                ));
                let task = tokio::spawn(async move {
                    if let Ok(Err(e)) = task.await {
                        tracing::warn!("cluster: serving public address {ip}: {e}");
                    }
                });
                let rpc = AbortOnDrop(tokio::spawn(
                    witness.clone().serve(rpc, std::future::pending()),
                ));
                tracing::info!("listening on public address {ip}");
                serving.insert(ip, (stop, task, rpc));
            }
            Listen::Down(ip, done) => {
                let Some((stop, task, rpc)) = serving.remove(&ip) else {
                    let _ = done.send(());
                    continue;
                };
                let _ = stop.send(());
                drop(rpc);
                tokio::spawn(async move {
                    let _ = task.await;
                    tracing::info!("stopped listening on public address {ip}");
                    let _ = done.send(());
                });
            }
        }
    }
}
