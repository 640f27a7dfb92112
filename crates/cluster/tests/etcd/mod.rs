//! A one- or three-member etcd (Debian's etcd-server, 3.4) on free loopback ports in a
//! temporary directory, killed when dropped. The tests that need it say so and fail when the
//! binary is absent: `apt-get install etcd-server`.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A test node's membership record: its name, this process's pid, SMB 3.1.1, no public
/// address and no liveness endpoint; tests change what they are about.
pub fn node_info(name: &str) -> smb3d_cluster::NodeInfo {
    smb3d_cluster::NodeInfo {
        name: name.to_owned(),
        addresses: Vec::new(),
        max_dialect: "3.1.1".into(),
        pid: std::process::id(),
        started: 0,
        alive: None,
    }
}

pub const ETCD: &str = "/usr/bin/etcd";

pub struct EtcdCluster {
    pub endpoints: Vec<String>,
    members: Vec<Option<Child>>,
    commands: Vec<Vec<String>>,
    dir: tempfile::TempDir,
}

fn free_ports(count: usize) -> Vec<u16> {
    let held: Vec<TcpListener> = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    held.iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

impl EtcdCluster {
    pub fn start(members: usize) -> Self {
        assert!(
            Path::new(ETCD).exists(),
            "{ETCD} is missing: apt-get install etcd-server"
        );
        let dir = tempfile::tempdir().unwrap();
        let ports = free_ports(2 * members);
        let (client, peer) = ports.split_at(members);
        let endpoints: Vec<String> = client
            .iter()
            .map(|p| format!("http://127.0.0.1:{p}"))
            .collect();
        let initial: Vec<String> = peer
            .iter()
            .enumerate()
            .map(|(i, p)| format!("m{i}=http://127.0.0.1:{p}"))
            .collect();
        let token = format!("smb3d-test-{}-{}", std::process::id(), client[0]);
        let commands: Vec<Vec<String>> = (0..members)
            .map(|i| {
                let peer_url = format!("http://127.0.0.1:{}", peer[i]);
                let data = dir.path().join(format!("m{i}"));
                [
                    "--name",
                    &format!("m{i}"),
                    "--data-dir",
                    &data.to_string_lossy(),
                    "--listen-client-urls",
                    &endpoints[i],
                    "--advertise-client-urls",
                    &endpoints[i],
                    "--listen-peer-urls",
                    &peer_url,
                    "--initial-advertise-peer-urls",
                    &peer_url,
                    "--initial-cluster",
                    &initial.join(","),
                    "--initial-cluster-token",
                    &token,
                    "--initial-cluster-state",
                    "new",
                    // Nodes ping every second (docs/cluster.md "Configuration").
                    "--grpc-keepalive-min-time",
                    "1s",
                ]
                .iter()
                .map(|s| (*s).to_owned())
                .collect()
            })
            .collect();
        let mut cluster = Self {
            endpoints,
            members: (0..members).map(|_| None).collect(),
            commands,
            dir,
        };
        for i in 0..members {
            cluster.start_member(i);
        }
        cluster.wait_healthy();
        cluster
    }

    pub fn start_member(&mut self, i: usize) {
        let log = std::fs::File::create(self.dir.path().join(format!("m{i}.log"))).unwrap();
        self.members[i] = Some(
            Command::new(ETCD)
                .args(&self.commands[i])
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap(),
        );
    }

    pub fn kill_member(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes member `i` (SIGSTOP): its sockets stay open and answer nothing, the worst way
    /// for a member to be lost to its clients.
    pub fn pause_member(&mut self, i: usize) {
        if let Some(child) = &self.members[i] {
            let status = Command::new("kill")
                .args(["-STOP", &child.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
        }
    }

    /// Lets member `i` run again after [`EtcdCluster::pause_member`] (SIGCONT).
    pub fn resume_member(&mut self, i: usize) {
        if let Some(child) = &self.members[i] {
            let status = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status()
                .unwrap();
            assert!(status.success());
        }
    }

    /// Waits (up to 30 s) until every running member answers `/health` as healthy.
    pub fn wait_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for (i, endpoint) in self.endpoints.clone().iter().enumerate() {
            if self.members[i].is_none() {
                continue;
            }
            let address = endpoint.trim_start_matches("http://");
            while !healthy(address) {
                assert!(Instant::now() < deadline, "etcd member m{i} is not healthy");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Whether the member at `address` answers `GET /health` with `"health":"true"`.
fn healthy(address: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(address) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /health HTTP/1.0\r\nHost: {address}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.contains("\"health\":\"true\"")
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill_member(i);
        }
    }
}
