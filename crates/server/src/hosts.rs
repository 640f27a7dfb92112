//! Which client addresses may connect (Samba's `hosts allow` and `hosts deny`), decided on the
//! TCP peer's address only: nothing a client says takes part.

use std::net::IpAddr;

/// An address or a network (address and prefix length), IPv4 or IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Network {
    bits: u128,
    prefix: u8,
    v4: bool,
}

/// An IPv4 address mapped into IPv6 (`::ffff:10.0.0.1`, what a dual-stack socket reports) is
/// that IPv4 address.
fn unmapped(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn bits(ip: IpAddr) -> (u128, bool) {
    match unmapped(ip) {
        IpAddr::V4(v4) => (u128::from(u32::from(v4)), true),
        IpAddr::V6(v6) => (u128::from(v6), false),
    }
}

impl Network {
    /// The network of `address`'s first `prefix` bits (capped at the address's width).
    pub fn new(address: IpAddr, prefix: u8) -> Self {
        let (bits, v4) = bits(address);
        let width = if v4 { 32 } else { 128 };
        let prefix = prefix.min(width);
        let mut network = Self { bits, prefix, v4 };
        network.bits &= network.mask();
        network
    }

    fn mask(&self) -> u128 {
        let width = if self.v4 { 32 } else { 128 };
        let host_bits = u32::from(width - self.prefix);
        let all = if self.v4 {
            u128::from(u32::MAX)
        } else {
            u128::MAX
        };
        all.checked_shl(host_bits).map_or(0, |m| m & all)
    }

    /// Whether `ip` is in the network.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let (value, v4) = bits(ip);
        v4 == self.v4 && value & self.mask() == self.bits
    }
}

/// An allow list and a deny list, decided as smb.conf(5) describes Samba's: with neither, every
/// address may connect; with only an allow list, the addresses it names (and the loopback
/// address); with only a deny list, every address it does not name; with both, an address in
/// the allow list may connect, then one in the deny list may not, then any other may. The
/// loopback address may always connect unless the deny list names it and the allow list does
/// not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostRules {
    pub allow: Vec<Network>,
    pub deny: Vec<Network>,
}

impl HostRules {
    /// Whether a client at `ip` may connect.
    pub fn admits(&self, ip: IpAddr) -> bool {
        let ip = unmapped(ip);
        let allowed = || self.allow.iter().any(|n| n.contains(ip));
        let denied = || self.deny.iter().any(|n| n.contains(ip));
        if is_loopback_host(ip) {
            return allowed() || !denied();
        }
        match (self.allow.is_empty(), self.deny.is_empty()) {
            (true, true) => true,
            (true, false) => !denied(),
            (false, true) => allowed(),
            (false, false) => allowed() || !denied(),
        }
    }

    /// Whether no rule is set (every address may connect).
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// The rules a share applies: each of its own lists, or the server's where it sets none
    /// (in smb.conf a share inherits every `[global]` setting it does not make itself).
    pub fn within(&self, server: &HostRules) -> HostRules {
        let pick = |own: &Vec<Network>, global: &Vec<Network>| {
            if own.is_empty() {
                global.clone()
            } else {
                own.clone()
            }
        };
        HostRules {
            allow: pick(&self.allow, &server.allow),
            deny: pick(&self.deny, &server.deny),
        }
    }
}

/// Samba's exception is for `127.0.0.1` and `::1` themselves, not all of 127.0.0.0/8.
fn is_loopback_host(ip: IpAddr) -> bool {
    ip == IpAddr::from([127, 0, 0, 1]) || ip == IpAddr::from(std::net::Ipv6Addr::LOCALHOST)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn net(s: &str) -> Network {
        let (a, p) = s.split_once('/').unwrap_or((s, "128"));
        Network::new(ip(a), p.parse().unwrap())
    }

    fn rules(allow: &[&str], deny: &[&str]) -> HostRules {
        HostRules {
            allow: allow.iter().map(|s| net(s)).collect(),
            deny: deny.iter().map(|s| net(s)).collect(),
        }
    }

    #[test]
    fn networks_match_both_families_and_mapped_peers() {
        let lan = net("10.0.0.0/8");
        assert!(lan.contains(ip("10.200.3.4")));
        assert!(
            lan.contains(ip("::ffff:10.1.1.1")),
            "a dual-stack socket's IPv4 client"
        );
        assert!(!lan.contains(ip("11.0.0.1")) && !lan.contains(ip("::1")));
        let v6 = net("2001:db8::/32");
        assert!(v6.contains(ip("2001:db8:1::7")) && !v6.contains(ip("2001:db9::1")));
        assert!(
            !v6.contains(ip("32.1.13.184")),
            "IPv4 never matches an IPv6 network"
        );
        assert!(net("0.0.0.0/0").contains(ip("203.0.113.9")));
        assert!(!net("0.0.0.0/0").contains(ip("2001:db8::1")));
        assert!(net("::/0").contains(ip("2001:db8::1")));
        assert!(net("192.168.1.5/32").contains(ip("192.168.1.5")));
        assert!(!net("192.168.1.5/32").contains(ip("192.168.1.6")));
    }

    /// smb.conf(5)'s precedence, case by case.
    #[test]
    fn samba_precedence() {
        let peer = ip("192.168.1.9");
        assert!(rules(&[], &[]).admits(peer), "no lists: everyone");
        assert!(rules(&["192.168.1.0/24"], &[]).admits(peer));
        assert!(
            !rules(&["10.0.0.0/8"], &[]).admits(peer),
            "an allow list alone excludes the rest"
        );
        assert!(!rules(&[], &["192.168.1.0/24"]).admits(peer));
        assert!(
            rules(&[], &["10.0.0.0/8"]).admits(peer),
            "a deny list alone admits the rest"
        );
        assert!(
            rules(&["192.168.1.9/32"], &["0.0.0.0/0"]).admits(peer),
            "allow wins when both match"
        );
        assert!(!rules(&["10.0.0.0/8"], &["0.0.0.0/0"]).admits(peer));
        assert!(
            rules(&["10.0.0.0/8"], &["172.16.0.0/12"]).admits(peer),
            "in neither list, with both set: admitted"
        );
        assert!(!rules(&[], &["192.168.1.9/32"]).admits(ip("::ffff:192.168.1.9")));
        assert!(!rules(&["2001:db8::/32"], &[]).admits(ip("2001:db9::1")));
        assert!(rules(&["2001:db8::/32"], &["::/0"]).admits(ip("2001:db8::5")));
    }

    #[test]
    fn loopback_is_admitted_unless_denied_by_name() {
        let only_lan = rules(&["10.0.0.0/8"], &[]);
        assert!(only_lan.admits(ip("127.0.0.1")) && only_lan.admits(ip("::1")));
        assert!(only_lan.admits(ip("::ffff:127.0.0.1")));
        assert!(!only_lan.admits(ip("127.0.0.2")), "only 127.0.0.1 itself");
        assert!(!rules(&[], &["127.0.0.1/32"]).admits(ip("127.0.0.1")));
        assert!(!rules(&["10.0.0.0/8"], &["0.0.0.0/0"]).admits(ip("127.0.0.1")));
        assert!(rules(&["127.0.0.1/32"], &["0.0.0.0/0"]).admits(ip("127.0.0.1")));
    }

    #[test]
    fn a_share_inherits_the_lists_it_does_not_set() {
        let server = rules(&["127.0.0.0/8"], &["127.0.0.66/32"]);
        let share = rules(&[], &["127.0.0.77/32"]).within(&server);
        assert_eq!(share, rules(&["127.0.0.0/8"], &["127.0.0.77/32"]));
        assert!(
            share.admits(ip("127.0.0.77")),
            "the inherited allow list wins, as in Samba"
        );
        let strict = rules(&["127.0.0.1/32"], &["127.0.0.77/32"]).within(&server);
        assert!(!strict.admits(ip("127.0.0.77")) && strict.admits(ip("127.0.0.1")));
        assert_eq!(rules(&[], &[]).within(&server), server);
    }
}
