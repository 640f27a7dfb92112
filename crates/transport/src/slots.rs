//! Connections counted in total (security.md L16): a connection over the limit is refused at
//! accept. The limit per client address, which only connections no user has logged on
//! through count against, is the server's (`smb3d_server::address_slots`).

use std::fmt;
use std::sync::Arc;

use parking_lot::Mutex;
use smb3d_server::Limits;

/// The connections open now.
pub(crate) struct Slots {
    max_total: usize,
    open: Mutex<usize>,
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
            Self::PerClient(n) => write!(
                f,
                "{n} connections and logons without a proven user from one address, the most allowed"
            ),
        }
    }
}

/// One counted connection; dropping it frees its place.
pub(crate) struct Slot {
    slots: Arc<Slots>,
}

impl Slots {
    pub fn new(limits: &Limits) -> Self {
        Self {
            max_total: limits.max_connections,
            open: Mutex::new(0),
        }
    }

    /// Counts a new connection, unless it would pass the limit.
    pub fn take(self: &Arc<Self>) -> Result<Slot, Refusal> {
        let mut open = self.open.lock();
        if *open >= self.max_total {
            return Err(Refusal::Total(*open));
        }
        *open += 1;
        Ok(Slot {
            slots: self.clone(),
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock();
        *open = open.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_limit_and_release() {
        let slots = Arc::new(Slots::new(&Limits {
            max_connections: 2,
            ..Limits::default()
        }));
        let a = slots.take().unwrap();
        let b = slots.take().unwrap();
        assert_eq!(slots.take().err(), Some(Refusal::Total(2)));
        drop((a, b));
        assert_eq!(*slots.open.lock(), 0);
        assert!(slots.take().is_ok());
    }
}
