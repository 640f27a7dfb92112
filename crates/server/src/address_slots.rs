//! Connections that no user has logged on through yet, and logons under way, counted per
//! client address (security.md L16, `max_connections_per_address`).
//!
//! The limit is there against floods of connections that never log on. A connection counts
//! from accept until a user proves who they are on it (an anonymous logon proves nobody, so
//! such a connection goes on counting); after that each SESSION_SETUP exchange that starts on
//! it (a further session, a re-authentication, a binding) counts while it is under way. A
//! client machine with many sessions, a terminal server or an office behind one NAT address
//! thus keeps as many connections as the total limit allows, while connections and logon
//! attempts that have proven nothing stay bounded per address.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::limits::ClientKey;

/// The places per client address.
pub struct AddressSlots {
    max_per_address: usize,
    held: Mutex<HashMap<ClientKey, usize>>,
}

/// One connection or logon counted against its client's address; dropping it frees its place.
pub struct AddressSlot {
    slots: Arc<AddressSlots>,
    client: ClientKey,
}

impl AddressSlots {
    pub fn new(max_per_address: usize) -> Arc<Self> {
        Arc::new(Self {
            max_per_address,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// Counts one more for `client`; when it has as many as allowed, `Err` with that number.
    pub fn take(self: &Arc<Self>, client: ClientKey) -> Result<AddressSlot, usize> {
        let mut held = self.held.lock();
        let count = held.entry(client).or_insert(0);
        if *count >= self.max_per_address {
            let refused = *count;
            if refused == 0 {
                held.remove(&client);
            }
            return Err(refused);
        }
        *count += 1;
        Ok(AddressSlot {
            slots: self.clone(),
            client,
        })
    }

    /// How many places `client` holds now.
    pub fn held(&self, client: ClientKey) -> usize {
        self.held.lock().get(&client).copied().unwrap_or(0)
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut held = self.slots.held.lock();
        if let Some(count) = held.get_mut(&self.client) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(&self.client);
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

    #[test]
    fn places_per_address_are_limited_and_freed() {
        let slots = AddressSlots::new(2);
        let a = slots.take(key(1)).unwrap();
        let _b = slots.take(key(1)).unwrap();
        assert_eq!(slots.take(key(1)).err(), Some(2));
        assert!(slots.take(key(2)).is_ok());
        drop(a);
        assert_eq!(slots.held(key(1)), 1);
        assert!(slots.take(key(1)).is_ok());
    }

    #[test]
    fn an_address_without_places_leaves_no_entry() {
        let slots = AddressSlots::new(1);
        drop(slots.take(key(1)).unwrap());
        assert!(slots.held.lock().is_empty());
        let zero = AddressSlots::new(0);
        assert_eq!(zero.take(key(1)).err(), Some(0));
        assert!(zero.held.lock().is_empty());
    }

    #[test]
    fn ipv6_addresses_of_one_prefix_share_places() {
        let slots = AddressSlots::new(1);
        let a: std::net::IpAddr = "2001:db8::1".parse().unwrap();
        let b: std::net::IpAddr = "2001:db8::2".parse().unwrap();
        let _held = slots.take(ClientKey::of(a)).unwrap();
        assert!(slots.take(ClientKey::of(b)).is_err());
    }
}
