//! Client address patterns for `hosts_allow` and `hosts_deny`: an address, or a network as
//! address/prefix length, IPv4 or IPv6.

use std::fmt;
use std::net::IpAddr;

use serde::Deserialize;

/// One address or network a client's address is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPattern {
    network: IpAddr,
    prefix: u8,
}

/// The address itself when it is an IPv4 address mapped into IPv6 (`::ffff:10.0.0.1`, what a
/// dual-stack socket reports), so that IPv4 patterns match it.
fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn bits(ip: IpAddr) -> (u128, u8) {
    match ip {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), 32),
        IpAddr::V6(v6) => (u128::from(v6), 128),
    }
}

/// The top `prefix` of `width` bits.
fn mask(prefix: u8, width: u8) -> u128 {
    let all = if width == 32 {
        u128::from(u32::MAX)
    } else {
        u128::MAX
    };
    match u32::from(width - prefix) {
        128 => 0,
        shift => all & !((1u128 << shift) - 1),
    }
}

impl HostPattern {
    /// `10.1.2.3`, `10.0.0.0/8`, `2001:db8::/32`, `::1` or `[::1]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let address = address
            .strip_prefix('[')
            .and_then(|a| a.strip_suffix(']'))
            .unwrap_or(address);
        let network = address.parse::<IpAddr>().map_err(|_| {
            format!("{text:?} is not an address or network such as 10.0.0.0/8 or fe80::/10")
        })?;
        if unmapped(network) != network {
            return Err(format!(
                "{text:?} is an IPv4 address written as IPv6; write it as {}",
                unmapped(network)
            ));
        }
        let (value, width) = bits(network);
        let prefix = match prefix {
            None => width,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= width)
                .ok_or_else(|| format!("{text:?}: the prefix length must be 0 to {width}"))?,
        };
        if value & !mask(prefix, width) != 0 {
            let masked = value & mask(prefix, width);
            let network = match network {
                IpAddr::V4(_) => {
                    IpAddr::from(u32::try_from(masked).unwrap_or_default().to_be_bytes())
                }
                IpAddr::V6(_) => IpAddr::from(masked.to_be_bytes()),
            };
            return Err(format!(
                "{text:?} has address bits beyond its prefix; the network is {network}/{prefix}"
            ));
        }
        Ok(Self { network, prefix })
    }

    /// Every address of both families (Samba's `ALL`).
    pub fn everything() -> [Self; 2] {
        [
            Self {
                network: IpAddr::from([0, 0, 0, 0]),
                prefix: 0,
            },
            Self {
                network: IpAddr::from([0u16; 8]),
                prefix: 0,
            },
        ]
    }

    /// The network's address (its bits beyond the prefix are zero).
    pub fn network(&self) -> IpAddr {
        self.network
    }

    /// The prefix length: 32 or 128 for a single address.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether the client address `ip` is in the pattern.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let (value, width) = bits(unmapped(ip));
        let (network, network_width) = bits(self.network);
        width == network_width && value & mask(self.prefix, width) == network
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (_, width) = bits(self.network);
        if self.prefix == width {
            write!(f, "{}", self.network)
        } else {
            write!(f, "{}/{}", self.network, self.prefix)
        }
    }
}

impl<'de> Deserialize<'de> for HostPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn addresses_and_networks_match_their_clients() {
        let net = HostPattern::parse("10.0.0.0/8").unwrap();
        assert!(net.contains(ip("10.200.3.4")));
        assert!(
            net.contains(ip("::ffff:10.1.1.1")),
            "a dual-stack socket's IPv4 client"
        );
        assert!(!net.contains(ip("11.0.0.1")));
        assert!(!net.contains(ip("::1")));
        let host = HostPattern::parse("192.168.1.5").unwrap();
        assert!(host.contains(ip("192.168.1.5")) && !host.contains(ip("192.168.1.6")));
        let v6 = HostPattern::parse("2001:db8::/32").unwrap();
        assert!(v6.contains(ip("2001:db8:1::7")) && !v6.contains(ip("2001:db9::1")));
        assert!(HostPattern::parse("[::1]").unwrap().contains(ip("::1")));
        let [all4, all6] = HostPattern::everything();
        assert!(all4.contains(ip("1.2.3.4")) && all6.contains(ip("fe80::1")));
        assert!(!all4.contains(ip("fe80::1")));
        assert_eq!(all4.to_string(), "0.0.0.0/0");
        assert_eq!(host.to_string(), "192.168.1.5");
        assert_eq!(v6.to_string(), "2001:db8::/32");
        assert!(
            HostPattern::parse("::ffff:10.0.0.0/104")
                .unwrap_err()
                .contains("write it as 10.0.0.0")
        );
    }

    #[test]
    fn bad_patterns_say_why() {
        for (text, needle) in [
            ("10.1.2.3/8", "the network is 10.0.0.0/8"),
            ("fe80::1/10", "the network is fe80::/10"),
            ("10.0.0.0/33", "0 to 32"),
            ("10.", "not an address"),
            ("host.example.com", "not an address"),
            ("10.0.0.0/x", "0 to 32"),
        ] {
            let e = HostPattern::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
