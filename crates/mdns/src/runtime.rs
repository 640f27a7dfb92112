//! The tokio side: mDNS sockets on every multicast interface, feeding a [`Responder`].

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};
use std::time::Instant;

use socket2::{Domain, Protocol, SockRef, Socket, Type};
use tokio::io::Interest;
use tokio::net::UdpSocket;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::link::{Subnet, on_link};
use crate::responder::{Destination, MDNS_PORT, Responder, ServiceInfo, Transmit};
use crate::sys;

const GROUP_V4: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 251);
const GROUP_V6: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0xfb);
/// mDNS messages may be up to 9000 bytes (RFC 6762 section 17).
const MAX_PACKET: usize = 9000;

/// An interface mDNS runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub index: u32,
    /// Its IPv4 addresses (the first one picks the interface for IPv4 multicast).
    pub v4: Vec<Ipv4Addr>,
    pub v6: Vec<Ipv6Addr>,
    /// The networks of its addresses: the link, for [`on_link`].
    pub subnets: Vec<Subnet>,
}

/// The interfaces to advertise on: every non-loopback interface with an address, or the
/// loopback ones when there is nothing else (a host or network namespace without a network).
pub fn interfaces() -> io::Result<Vec<Interface>> {
    let all = if_addrs::get_if_addrs()?;
    let wanted_loopback = all.iter().all(if_addrs::Interface::is_loopback);
    let mut out: Vec<Interface> = Vec::new();
    for iface in all {
        if iface.is_loopback() != wanted_loopback {
            continue;
        }
        let Some(index) = iface.index else { continue };
        let entry = match out.iter_mut().find(|i| i.index == index) {
            Some(entry) => entry,
            None => {
                out.push(Interface {
                    name: iface.name.clone(),
                    index,
                    v4: Vec::new(),
                    v6: Vec::new(),
                    subnets: Vec::new(),
                });
                match out.last_mut() {
                    Some(entry) => entry,
                    None => continue,
                }
            }
        };
        let prefix = match &iface.addr {
            if_addrs::IfAddr::V4(a) => a.prefixlen,
            if_addrs::IfAddr::V6(a) => a.prefixlen,
        };
        entry.subnets.push(Subnet {
            addr: iface.ip(),
            prefix,
        });
        match iface.ip() {
            IpAddr::V4(a) => entry.v4.push(a),
            IpAddr::V6(a) => entry.v6.push(a),
        }
    }
    Ok(out)
}

/// The addresses to publish for a server listening on `listen`: the interfaces' addresses for
/// wildcard listeners, the address itself otherwise.
pub fn published_addresses(listen: &[SocketAddr], interfaces: &[Interface]) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::new();
    for addr in listen {
        let ips: Vec<IpAddr> = match addr.ip() {
            IpAddr::V4(a) if a.is_unspecified() => interfaces
                .iter()
                .flat_map(|i| i.v4.iter().copied().map(IpAddr::V4))
                .collect(),
            // A [::] listener also takes IPv4 on Linux unless IPV6_V6ONLY is set.
            IpAddr::V6(a) if a.is_unspecified() => interfaces
                .iter()
                .flat_map(|i| {
                    i.v4.iter()
                        .copied()
                        .map(IpAddr::V4)
                        .chain(i.v6.iter().copied().map(IpAddr::V6))
                })
                .collect(),
            ip => vec![ip],
        };
        for ip in ips {
            if !out.contains(&ip) {
                out.push(ip);
            }
        }
    }
    out
}

/// The machine's host name as one DNS label (its first component).
pub fn host_label() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let label: String = raw
        .trim()
        .split('.')
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    if label.is_empty() {
        "smb3d".into()
    } else {
        label.to_ascii_lowercase()
    }
}

/// A running advertiser; [`Advertiser::stop`] sends the goodbye.
pub struct Advertiser {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<io::Result<()>>,
}

impl Advertiser {
    /// Advertises `server_name` (the SMB service on the first port of `listen`), with a
    /// model `_device-info._tcp`, and with Time Machine shares `_adisk._tcp`, on every
    /// interface that [`interfaces`] picks.
    pub fn start(
        server_name: &str,
        model: Option<&str>,
        listen: &[SocketAddr],
        time_machine: &[String],
    ) -> io::Result<Self> {
        let interfaces = interfaces()?;
        let info = ServiceInfo {
            instance: server_name.to_owned(),
            host: host_label(),
            port: listen.first().map_or(445, SocketAddr::port),
            model: model.map(str::to_owned),
            addresses: published_addresses(listen, &interfaces),
            time_machine: time_machine.to_vec(),
        };
        Self::start_with(info, interfaces)
    }

    /// Advertises `info` on the given interfaces.
    pub fn start_with(info: ServiceInfo, interfaces: Vec<Interface>) -> io::Result<Self> {
        if interfaces.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no network interface to advertise on",
            ));
        }
        let sockets = Sockets::open(interfaces)?;
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            ^ u64::from(std::process::id());
        let responder = Responder::new(info, Instant::now(), seed);
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(run(sockets, responder, stopped));
        Ok(Self {
            stop: Some(stop),
            task,
        })
    }

    /// Sends the goodbye and ends the advertiser.
    pub async fn stop(mut self) -> io::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        (&mut self.task).await.map_err(io::Error::other)?
    }
}

struct Sockets {
    v4: Option<UdpSocket>,
    v6: Option<UdpSocket>,
    interfaces: Vec<Interface>,
}

impl Sockets {
    fn open(interfaces: Vec<Interface>) -> io::Result<Self> {
        let v4 = open_v4(&interfaces)
            .map_err(|e| tracing::warn!("mDNS over IPv4 unavailable: {e}"))
            .ok();
        let v6 = open_v6(&interfaces)
            .map_err(|e| tracing::debug!("mDNS over IPv6 unavailable: {e}"))
            .ok();
        if v4.is_none() && v6.is_none() {
            return Err(io::Error::other("no mDNS socket could be opened"));
        }
        Ok(Self { v4, v6, interfaces })
    }

    async fn send(&self, transmit: &Transmit) {
        let payload = &transmit.payload;
        match transmit.destination {
            Destination::Unicast(to) => {
                let socket = if to.is_ipv4() { &self.v4 } else { &self.v6 };
                if let Some(socket) = socket
                    && let Err(e) = socket.send_to(payload, to).await
                {
                    tracing::debug!("mDNS reply to {to}: {e}");
                }
            }
            Destination::Multicast => {
                for iface in &self.interfaces {
                    if let (Some(socket), Some(addr)) = (&self.v4, iface.v4.first()) {
                        let sent = SockRef::from(socket)
                            .set_multicast_if_v4(addr)
                            .map(|()| socket.send_to(payload, (GROUP_V4, MDNS_PORT)));
                        if let Err(e) = match sent {
                            Ok(send) => send.await.map(drop),
                            Err(e) => Err(e),
                        } {
                            tracing::debug!("mDNS multicast on {}: {e}", iface.name);
                        }
                    }
                    if let Some(socket) = &self.v6
                        && !iface.v6.is_empty()
                    {
                        let to = SocketAddrV6::new(GROUP_V6, MDNS_PORT, 0, iface.index);
                        let sent = SockRef::from(socket)
                            .set_multicast_if_v6(iface.index)
                            .map(|()| socket.send_to(payload, to));
                        if let Err(e) = match sent {
                            Ok(send) => send.await.map(drop),
                            Err(e) => Err(e),
                        } {
                            tracing::debug!("mDNS multicast on {} (IPv6): {e}", iface.name);
                        }
                    }
                }
            }
        }
    }
}

fn open_v4(interfaces: &[Interface]) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
    // Shared with other responders on the host (avahi, mDNSResponder).
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, MDNS_PORT)).into())?;
    let mut joined = false;
    for iface in interfaces {
        if let Some(addr) = iface.v4.first() {
            match socket.join_multicast_v4(&GROUP_V4, addr) {
                Ok(()) => joined = true,
                Err(e) => tracing::debug!("mDNS: joining on {}: {e}", iface.name),
            }
        }
    }
    if !joined {
        return Err(io::Error::other("no interface joined 224.0.0.251"));
    }
    socket.set_multicast_ttl_v4(255)?;
    // Unicast answers leave with TTL 255 too, as RFC 6762 section 11 asks.
    socket.set_ttl_v4(255)?;
    socket.set_multicast_loop_v4(true)?;
    sys::want_arrival_v4(&socket)?;
    socket.set_nonblocking(true)?;
    UdpSocket::from_std(socket.into())
}

fn open_v6(interfaces: &[Interface]) -> io::Result<UdpSocket> {
    let socket = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_only_v6(true)?;
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(true)?;
    socket.bind(&SocketAddr::from((Ipv6Addr::UNSPECIFIED, MDNS_PORT)).into())?;
    let mut joined = false;
    for iface in interfaces.iter().filter(|i| !i.v6.is_empty()) {
        match socket.join_multicast_v6(&GROUP_V6, iface.index) {
            Ok(()) => joined = true,
            Err(e) => tracing::debug!("mDNS: joining ff02::fb on {}: {e}", iface.name),
        }
    }
    if !joined {
        return Err(io::Error::other("no interface joined ff02::fb"));
    }
    socket.set_multicast_hops_v6(255)?;
    socket.set_unicast_hops_v6(255)?;
    socket.set_multicast_loop_v6(true)?;
    sys::want_arrival_v6(&socket)?;
    socket.set_nonblocking(true)?;
    UdpSocket::from_std(socket.into())
}

/// The next datagram that comes from the link of the interface it arrived on; others are
/// dropped (`link`).
async fn recv(
    socket: &Option<UdpSocket>,
    interfaces: &[Interface],
    buf: &mut [u8],
) -> io::Result<(usize, SocketAddr)> {
    let Some(socket) = socket else {
        return std::future::pending().await;
    };
    loop {
        socket.readable().await?;
        let (len, from, arrival) =
            match socket.try_io(Interest::READABLE, || sys::recv_with_arrival(socket, buf)) {
                Ok(received) => received,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            };
        if on_link(from.ip(), arrival, interfaces) {
            return Ok((len, from));
        }
        tracing::debug!(%from, ?arrival, "mDNS: ignored a datagram from off the link");
    }
}

async fn run(
    sockets: Sockets,
    mut responder: Responder,
    mut stopped: oneshot::Receiver<()>,
) -> io::Result<()> {
    let mut buf4 = vec![0u8; MAX_PACKET];
    let mut buf6 = vec![0u8; MAX_PACKET];
    let mut last_name = responder.info().clone();
    loop {
        while let Some(transmit) = responder.poll_transmit(Instant::now()) {
            sockets.send(&transmit).await;
        }
        if *responder.info() != last_name {
            tracing::warn!(
                "mDNS name conflict: now advertising as {:?} on host {}.local",
                responder.info().instance,
                responder.info().host
            );
            last_name = responder.info().clone();
        }
        let wake = responder.poll_timeout();
        let sleep = async {
            match wake {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = &mut stopped => break,
            () = sleep => {}
            got = recv(&sockets.v4, &sockets.interfaces, &mut buf4) => if let Ok((n, from)) = got {
                responder.handle(buf4.get(..n).unwrap_or_default(), from, Instant::now());
            },
            got = recv(&sockets.v6, &sockets.interfaces, &mut buf6) => if let Ok((n, from)) = got {
                responder.handle(buf6.get(..n).unwrap_or_default(), from, Instant::now());
            },
        }
    }
    if let Some(goodbye) = responder.goodbye() {
        sockets.send(&goodbye).await;
    }
    Ok(())
}
