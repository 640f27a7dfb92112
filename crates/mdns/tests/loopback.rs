//! The advertiser on a real network stack: in a new network namespace whose loopback interface
//! carries multicast (so nothing leaves the machine), it is queried by a plain mDNS socket and,
//! when installed, by python-zeroconf as a third-party peer. Needs root (for `unshare -n`);
//! otherwise the test says why and passes.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

use smb3d_mdns::Advertiser;
use smb3d_mdns::dns::{CLASS_IN, Message, Name, Question, RData, TYPE_SRV};

const INNER: &str = "SMB3D_MDNS_IN_NETNS";

#[test]
fn advertiser_in_a_loopback_namespace() {
    if std::env::var_os(INNER).is_some() {
        return inner();
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("unshare")
        .args(["-n", "--"])
        .arg(exe)
        .args([
            "--exact",
            "advertiser_in_a_loopback_namespace",
            "--nocapture",
        ])
        .env(INNER, "1")
        .output();
    match out {
        Ok(out) if out.status.success() => {
            print!("{}", String::from_utf8_lossy(&out.stdout));
        }
        Ok(out) if String::from_utf8_lossy(&out.stderr).contains("unshare failed") => {
            eprintln!(
                "skipped: cannot create a network namespace here: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(out) => panic!(
            "inner run failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => eprintln!("skipped: unshare not available: {e}"),
    }
}

fn sh(cmd: &str) {
    let status = Command::new("sh").args(["-c", cmd]).status().unwrap();
    assert!(status.success(), "{cmd}");
}

fn inner() {
    sh("ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listen: [SocketAddr; 1] = ["0.0.0.0:4445".parse().unwrap()];
        let advertiser = Advertiser::start("NETNSTEST", Some("Xserve"), &listen, &[]).unwrap();
        // Probing and the first announcement take about a second.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let answer = tokio::task::spawn_blocking(query_srv).await.unwrap();
        assert_eq!(answer, 4445);
        let peer = tokio::task::spawn_blocking(zeroconf_peer).await.unwrap();
        if let Some(text) = peer {
            assert!(
                text.contains("NETNSTEST._smb._tcp.local. port=4445"),
                "{text}"
            );
            assert!(text.contains("addresses=['127.0.0.1']"), "{text}");
            assert!(text.contains("model=Xserve"), "{text}");
            println!("python-zeroconf resolved: {text}");
        }
        advertiser.stop().await.unwrap();
    });
}

/// Asks for the SRV record with a legacy unicast query (from a port other than 5353), the way
/// `dig -p 5353 @224.0.0.251` would, and returns the port it names.
fn query_srv() -> u16 {
    let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let query = Message {
        id: 77,
        questions: vec![Question {
            name: Name::from_labels(["NETNSTEST", "_smb", "_tcp", "local"]),
            qtype: TYPE_SRV,
            class: CLASS_IN,
            unicast_response: false,
        }],
        ..Message::default()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = [0u8; 9000];
    while Instant::now() < deadline {
        socket
            .send_to(&query.encode(), (Ipv4Addr::new(224, 0, 0, 251), 5353))
            .unwrap();
        while let Ok((n, _)) = socket.recv_from(&mut buf) {
            let Ok(m) = Message::decode(&buf[..n]) else {
                continue;
            };
            if m.id != 77 || !m.is_response() {
                continue;
            }
            assert_eq!(m.questions, query.questions);
            for r in &m.answers {
                if let RData::Srv { port, .. } = r.data {
                    assert!(r.ttl <= 10, "legacy answers carry short TTLs");
                    return port;
                }
            }
        }
    }
    panic!("no answer to the legacy unicast query");
}

/// Browses with python-zeroconf, if installed: the third-party view of the advertisement.
fn zeroconf_peer() -> Option<String> {
    let script = r#"
import sys, time
try:
    from zeroconf import Zeroconf, ServiceBrowser, IPVersion
except ImportError:
    sys.exit(3)
zc = Zeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
found = []
class L:
    def add_service(self, z, t, n): found.append((t, n))
    def update_service(self, z, t, n): pass
    def remove_service(self, z, t, n): pass
ServiceBrowser(zc, ["_smb._tcp.local.", "_device-info._tcp.local."], L())
deadline = time.time() + 8
out = []
while time.time() < deadline and len(out) < 2:
    for t, n in list(found):
        info = zc.get_service_info(t, n, timeout=2000)
        if info is not None:
            found.remove((t, n))
            props = b",".join(k + b"=" + (v or b"") for k, v in info.properties.items()).decode()
            out.append("%s port=%d addresses=%s txt=%s" % (n, info.port, info.parsed_addresses(), props))
    time.sleep(0.1)
zc.close()
print("\n".join(out))
"#;
    let out = Command::new("python3").args(["-c", script]).output().ok()?;
    if out.status.code() == Some(3) {
        eprintln!("python-zeroconf not installed: third-party check skipped");
        return None;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}
