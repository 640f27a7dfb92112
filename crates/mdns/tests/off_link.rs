//! The advertiser answers only queriers on its link (RFC 6762 section 11), on a real network
//! stack: three network namespaces the test makes itself, the advertiser's, a router's and a
//! far one's, joined by veth pairs (10.77.1.0/24 and fd77:1::/64, 10.77.2.0/24 and
//! fd77:2::/64). A legacy unicast query from the router (on the link) is answered; the same
//! query from the far namespace, routed one hop, is not, even sent with TTL or hop limit 255
//! (it arrives with 254). Needs root (for `ip netns`); otherwise the test says why and passes.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use smb3d_mdns::Advertiser;
use smb3d_mdns::dns::{CLASS_IN, Message, Name, Question, RData, TYPE_SRV};

/// Which part of the test a process plays: unset for the test itself.
const ROLE: &str = "SMB3D_MDNS_OFF_LINK_ROLE";
const ADVERTISER: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 1);
const ADVERTISER_V6: Ipv6Addr = Ipv6Addr::new(0xfd77, 1, 0, 0, 0, 0, 0, 1);

#[test]
fn queries_from_off_link_are_not_answered() {
    match std::env::var(ROLE).as_deref() {
        Ok("advertise") => return advertise(),
        Ok("query") => return query(),
        _ => {}
    }
    let Some(net) = Namespaces::make() else {
        return;
    };
    let mut advertiser = net.spawn("adv", "advertise", &[]);
    let mut outcomes = Vec::new();
    for family in ["4", "6"] {
        let ask = |which, ttl, wait| {
            net.run(
                which,
                "query",
                &[("FAMILY", family), ("TTL", ttl), ("WAIT", wait)],
            )
        };
        outcomes.push((family, "on the link", ask("rtr", "64", "8"), "answered"));
        outcomes.push((family, "one hop away", ask("far", "64", "3"), "silent"));
        outcomes.push((
            family,
            "one hop away, TTL 255",
            ask("far", "255", "3"),
            "silent",
        ));
    }
    let _ = advertiser.kill();
    let _ = advertiser.wait();
    let wrong: Vec<String> = outcomes
        .iter()
        .filter(|(_, _, got, expected)| got != expected)
        .map(|(family, querier, got, _)| format!("IPv{family}, a querier {querier}: {got}"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The namespaces of one run, deleted when dropped.
struct Namespaces {
    prefix: String,
}

impl Namespaces {
    /// Makes them, or says why it cannot and returns None.
    fn make() -> Option<Self> {
        let prefix = format!("smb3d-mdns-{}", std::process::id());
        let net = Self { prefix };
        let (adv, rtr, far) = (net.name("adv"), net.name("rtr"), net.name("far"));
        if let Err(why) = sh(&format!("ip netns add {adv}")) {
            eprintln!("skipped: cannot create a network namespace here: {why}");
            return None;
        }
        for step in [
            format!("ip netns add {rtr}"),
            format!("ip netns add {far}"),
            format!("ip -n {adv} link add a0 type veth peer name r0 netns {rtr}"),
            format!("ip -n {rtr} link add r1 type veth peer name f0 netns {far}"),
            format!("ip -n {adv} addr add {ADVERTISER}/24 dev a0"),
            format!("ip -n {rtr} addr add 10.77.1.2/24 dev r0"),
            format!("ip -n {rtr} addr add 10.77.2.1/24 dev r1"),
            format!("ip -n {far} addr add 10.77.2.2/24 dev f0"),
            format!("ip -n {adv} addr add {ADVERTISER_V6}/64 dev a0 nodad"),
            format!("ip -n {rtr} addr add fd77:1::2/64 dev r0 nodad"),
            format!("ip -n {rtr} addr add fd77:2::1/64 dev r1 nodad"),
            format!("ip -n {far} addr add fd77:2::2/64 dev f0 nodad"),
            format!("ip -n {adv} link set a0 up"),
            format!("ip -n {rtr} link set r0 up"),
            format!("ip -n {rtr} link set r1 up"),
            format!("ip -n {far} link set f0 up"),
            format!("ip -n {adv} route add default via 10.77.1.2"),
            format!("ip -n {far} route add default via 10.77.2.1"),
            format!("ip -n {adv} -6 route add default via fd77:1::2"),
            format!("ip -n {far} -6 route add default via fd77:2::1"),
            format!("ip netns exec {rtr} sysctl -qw net.ipv4.ip_forward=1"),
            format!("ip netns exec {rtr} sysctl -qw net.ipv6.conf.all.forwarding=1"),
        ] {
            if let Err(why) = sh(&step) {
                panic!("{step}: {why}");
            }
        }
        Some(net)
    }

    fn name(&self, which: &str) -> String {
        format!("{}-{which}", self.prefix)
    }

    fn command(&self, which: &str, role: &str, env: &[(&str, &str)]) -> Command {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &self.name(which)])
            .arg(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "queries_from_off_link_are_not_answered",
                "--nocapture",
            ])
            .env(ROLE, role)
            .envs(env.iter().copied());
        command
    }

    fn spawn(&self, which: &str, role: &str, env: &[(&str, &str)]) -> Child {
        self.command(which, role, env)
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    }

    /// Runs a part in `which` and returns the last line it printed.
    fn run(&self, which: &str, role: &str, env: &[(&str, &str)]) -> String {
        let out = self.command(which, role, env).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .rfind(|l| *l == "answered" || *l == "silent")
            .unwrap_or_default()
            .to_owned()
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for which in ["adv", "rtr", "far"] {
            let _ = sh(&format!("ip netns del {}", self.name(which)));
        }
    }
}

fn sh(cmd: &str) -> Result<(), String> {
    let out = Command::new("sh")
        .args(["-c", cmd])
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// The advertiser's namespace: advertise for a while.
fn advertise() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let listen: [SocketAddr; 1] = ["0.0.0.0:4445".parse().unwrap()];
        let advertiser = Advertiser::start("OFFLINK", None, &listen, &[]).unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        advertiser.stop().await.unwrap();
    });
}

/// A querier's namespace: asks the advertiser for its SRV record with a legacy unicast query
/// over IPv`FAMILY`, sent with TTL or hop limit `TTL`, again and again for `WAIT` seconds;
/// prints whether it was answered.
fn query() {
    let ttl: u32 = std::env::var("TTL").unwrap().parse().unwrap();
    let wait: u64 = std::env::var("WAIT").unwrap().parse().unwrap();
    let (advertiser, socket) = if std::env::var("FAMILY").unwrap() == "6" {
        let socket = socket2::Socket::new(
            socket2::Domain::IPV6,
            socket2::Type::DGRAM,
            Some(socket2::Protocol::UDP),
        )
        .unwrap();
        socket.set_unicast_hops_v6(ttl).unwrap();
        socket
            .bind(&SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)).into())
            .unwrap();
        (IpAddr::V6(ADVERTISER_V6), UdpSocket::from(socket))
    } else {
        let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).unwrap();
        socket.set_ttl(ttl).unwrap();
        (IpAddr::V4(ADVERTISER), socket)
    };
    socket
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let query = Message {
        id: 91,
        questions: vec![Question {
            name: Name::from_labels(["OFFLINK", "_smb", "_tcp", "local"]),
            qtype: TYPE_SRV,
            class: CLASS_IN,
            unicast_response: false,
        }],
        ..Message::default()
    };
    let deadline = Instant::now() + Duration::from_secs(wait);
    let mut buf = [0u8; 9000];
    while Instant::now() < deadline {
        socket.send_to(&query.encode(), (advertiser, 5353)).unwrap();
        while let Ok((n, _)) = socket.recv_from(&mut buf) {
            let Ok(m) = Message::decode(&buf[..n]) else {
                continue;
            };
            if m.id == 91
                && m.answers
                    .iter()
                    .any(|r| matches!(r.data, RData::Srv { port: 4445, .. }))
            {
                println!("answered");
                return;
            }
        }
    }
    println!("silent");
}
