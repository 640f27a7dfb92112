//! Connections counted in total and per client address (security.md L16): a connection over
//! either limit is refused at accept.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use smb3d_server::{ClientKey, Limits};

/// The connections open now.
pub(crate) struct Slots {
    max_total: usize,
    max_per_client: usize,
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    total: usize,
    by_client: HashMap<ClientKey, usize>,
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Total(usize),
    PerClient(usize),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Total(n) => write!(f, "{n} connections are open, the most allowed"),
            Self::PerClient(n) => write!(f, "{n} connections from one address, the most allowed"),
        }
    }
}

/// One counted connection; dropping it frees its place.
pub(crate) struct Slot {
    slots: Arc<Slots>,
    client: ClientKey,
}

impl Slots {
    pub fn new(limits: &Limits) -> Self {
        Self {
            max_total: limits.max_connections,
            max_per_client: limits.max_connections_per_address,
            open: Mutex::new(Open::default()),
        }
    }

    /// Counts a new connection from `client`, unless it would pass a limit.
    pub fn take(self: &Arc<Self>, client: ClientKey) -> Result<Slot, Refusal> {
        let mut open = self.open.lock();
        if open.total >= self.max_total {
            return Err(Refusal::Total(open.total));
        }
        let from_client = open.by_client.get(&client).copied().unwrap_or(0);
        if from_client >= self.max_per_client {
            return Err(Refusal::PerClient(from_client));
        }
        open.total += 1;
        open.by_client.insert(client, from_client + 1);
        Ok(Slot {
            slots: self.clone(),
            client,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_client.get_mut(&self.client) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.by_client.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(last: u8) -> ClientKey {
        ClientKey::of([192, 0, 2, last].into())
    }

    fn slots(total: usize, per_client: usize) -> Arc<Slots> {
        Arc::new(Slots::new(&Limits {
            max_connections: total,
            max_connections_per_address: per_client,
            ..Limits::default()
        }))
    }

    #[test]
    fn per_client_limit() {
        let slots = slots(10, 2);
        let a = slots.take(key(1)).unwrap();
        let _b = slots.take(key(1)).unwrap();
        assert_eq!(slots.take(key(1)).err(), Some(Refusal::PerClient(2)));
        assert!(slots.take(key(2)).is_ok());
        drop(a);
        assert!(slots.take(key(1)).is_ok());
    }

    #[test]
    fn total_limit_and_release() {
        let slots = slots(2, 2);
        let a = slots.take(key(1)).unwrap();
        let b = slots.take(key(2)).unwrap();
        assert_eq!(slots.take(key(3)).err(), Some(Refusal::Total(2)));
        drop((a, b));
        assert_eq!(slots.open.lock().total, 0);
        assert!(slots.open.lock().by_client.is_empty());
    }

    #[test]
    fn ipv6_addresses_of_one_prefix_share_a_limit() {
        let slots = slots(10, 1);
        let a: std::net::IpAddr = "2001:db8::1".parse().unwrap();
        let b: std::net::IpAddr = "2001:db8::2".parse().unwrap();
        let _held = slots.take(ClientKey::of(a)).unwrap();
        assert!(slots.take(ClientKey::of(b)).is_err());
    }
}
