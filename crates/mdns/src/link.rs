//! Whether a datagram came from the advertiser's own link (RFC 6762 section 11). Only such
//! datagrams are taken in: a query from elsewhere is not answered, so the responder reflects
//! nothing to an off-link address and tells nobody beyond the link which addresses the host
//! has; a response from elsewhere cannot make it give up its names.

use std::net::IpAddr;

use crate::runtime::Interface;

/// An interface's network: an address and its prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Subnet {
    /// Whether `ip` lies in the network (of the same family).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => same_prefix(
                u128::from(u32::from(net)),
                u128::from(u32::from(ip)),
                32,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                same_prefix(u128::from(net), u128::from(ip), 128, self.prefix)
            }
            _ => false,
        }
    }
}

/// Whether the first `prefix` of the `width` low bits of `a` and `b` agree.
fn same_prefix(a: u128, b: u128, width: u8, prefix: u8) -> bool {
    let prefix = prefix.min(width);
    let host_bits = u32::from(width - prefix);
    let mask = u128::MAX.checked_shl(host_bits).unwrap_or(0);
    a & mask == b & mask
}

/// What the kernel told about a datagram's arrival (IP_PKTINFO and IP_RECVTTL, or their IPv6
/// forms), where it could.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arrival {
    /// Its IP TTL or hop limit.
    pub hop_limit: Option<u8>,
    /// The index of the interface it arrived on.
    pub interface: Option<u32>,
}

/// Whether a datagram from `from` that arrived as `arrival` comes from the link of the
/// interface it arrived on: sent with TTL or hop limit 255, which a router would have
/// decremented (how mDNS peers send, RFC 6762 section 11); or from a loopback or link-local
/// address, which no router forwards; or from an address in one of that interface's subnets
/// (a legacy resolver on the link sends with its usual TTL). When the interface is not known,
/// any of `interfaces` is taken as it.
pub fn on_link(from: IpAddr, arrival: Arrival, interfaces: &[Interface]) -> bool {
    if arrival.hop_limit == Some(255) || from.is_loopback() || is_link_local(from) {
        return true;
    }
    interfaces
        .iter()
        .filter(|i| arrival.interface.is_none_or(|index| index == i.index))
        .flat_map(|i| &i.subnets)
        .any(|net| net.contains(from))
}

fn is_link_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_link_local(),
        IpAddr::V6(v6) => v6.is_unicast_link_local(),
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;

    fn lan() -> Vec<Interface> {
        vec![
            Interface {
                name: "eth0".into(),
                index: 2,
                v4: vec![Ipv4Addr::new(192, 168, 1, 10)],
                v6: vec!["2001:db8:1::10".parse().unwrap()],
                subnets: vec![
                    Subnet {
                        addr: "192.168.1.10".parse().unwrap(),
                        prefix: 24,
                    },
                    Subnet {
                        addr: "2001:db8:1::10".parse().unwrap(),
                        prefix: 64,
                    },
                ],
            },
            Interface {
                name: "eth1".into(),
                index: 3,
                v4: vec![Ipv4Addr::new(10, 0, 0, 1)],
                v6: Vec::new(),
                subnets: vec![Subnet {
                    addr: "10.0.0.1".parse().unwrap(),
                    prefix: 8,
                }],
            },
        ]
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn arrived(hop_limit: Option<u8>, interface: Option<u32>) -> Arrival {
        Arrival {
            hop_limit,
            interface,
        }
    }

    #[test]
    fn a_source_in_the_receiving_interfaces_subnet_is_on_link() {
        let lan = lan();
        for (from, interface, expected) in [
            ("192.168.1.77", Some(2), true),
            ("192.168.2.77", Some(2), false),
            ("2001:db8:1::99", Some(2), true),
            ("2001:db8:2::99", Some(2), false),
            // In eth1's subnet, but it came in on eth0: another link.
            ("10.9.9.9", Some(2), false),
            ("10.9.9.9", Some(3), true),
            // An interface not advertised on.
            ("192.168.1.77", Some(9), false),
            // Without the interface, any advertised one's subnets.
            ("10.9.9.9", None, true),
            ("172.16.0.1", None, false),
        ] {
            assert_eq!(
                on_link(ip(from), arrived(Some(64), interface), &lan),
                expected,
                "{from} on {interface:?}"
            );
        }
    }

    #[test]
    fn hop_limit_255_proves_the_link_and_nothing_less_does() {
        let lan = lan();
        let far = ip("203.0.113.5");
        assert!(on_link(far, arrived(Some(255), Some(2)), &lan));
        for hops in [None, Some(254), Some(64), Some(1)] {
            assert!(!on_link(far, arrived(hops, Some(2)), &lan), "{hops:?}");
        }
    }

    #[test]
    fn loopback_and_link_local_sources_are_on_link() {
        let lan = lan();
        for from in ["127.0.0.1", "::1", "169.254.3.4", "fe80::1"] {
            assert!(
                on_link(ip(from), arrived(Some(64), Some(2)), &lan),
                "{from}"
            );
        }
        assert!(!on_link(ip("fec0::1"), arrived(Some(64), Some(2)), &lan));
    }

    #[test]
    fn subnets_of_any_prefix() {
        let net = |addr: &str, prefix| Subnet {
            addr: ip(addr),
            prefix,
        };
        assert!(net("10.1.2.3", 0).contains(ip("192.0.2.1")));
        assert!(net("10.1.2.3", 32).contains(ip("10.1.2.3")));
        assert!(!net("10.1.2.3", 32).contains(ip("10.1.2.4")));
        assert!(net("10.1.2.3", 31).contains(ip("10.1.2.2")));
        assert!(net("2001:db8::1", 128).contains(ip("2001:db8::1")));
        assert!(!net("2001:db8::1", 127).contains(ip("2001:db8::2")));
        assert!(net("2001:db8::1", 200).contains(ip("2001:db8::1")));
        assert!(!net("10.1.2.3", 8).contains(ip("::ffff:10.1.2.3")));
    }
}
