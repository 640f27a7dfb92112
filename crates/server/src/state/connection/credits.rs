//! The per-connection CommandSequenceWindow (MS-SMB2 3.3.1.1) and the credit grant policy
//! (MS-SMB2 3.3.1.2).

use std::collections::VecDeque;

/// Message ids the client may use next. Ids are granted in increasing order; each is usable
/// once. A client that skips an id leaves it open, which pins the low end of the window; the
/// window's span is bounded so such holes cannot grow memory.
#[derive(Debug)]
pub struct CreditWindow {
    /// The lowest id not yet used (the front of `open`).
    low: u64,
    /// For ids `low..low + open.len()`: still usable.
    open: VecDeque<bool>,
    /// Number of `true` entries in `open`.
    available: u32,
    /// Most credits a client may hold at once.
    max_credits: u32,
}

/// A request's MessageId range was not granted, or was already used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutOfWindow;

impl CreditWindow {
    /// A fresh connection: only message id 0 (for NEGOTIATE) is available.
    pub fn new(max_credits: u32) -> Self {
        Self {
            low: 0,
            open: VecDeque::from([true]),
            available: 1,
            max_credits: max_credits.max(1),
        }
    }

    /// Credits the client holds now.
    pub fn available(&self) -> u32 {
        self.available
    }

    /// Uses the ids `message_id .. message_id + charge` (MS-SMB2 3.3.5.2.3). A charge of 0 counts
    /// as 1.
    pub fn consume(&mut self, message_id: u64, charge: u16) -> Result<(), OutOfWindow> {
        let charge = u64::from(charge.max(1));
        let start = message_id.checked_sub(self.low).ok_or(OutOfWindow)?;
        let end = start.checked_add(charge).ok_or(OutOfWindow)?;
        if end > self.open.len() as u64 {
            return Err(OutOfWindow);
        }
        // Both bounds fit in usize: they are at most `open.len()`.
        let (start, end) = (start as usize, end as usize);
        if !self.open.range(start..end).all(|&usable| usable) {
            return Err(OutOfWindow);
        }
        for usable in self.open.range_mut(start..end) {
            *usable = false;
        }
        self.available -= (end - start) as u32;
        while self.open.front() == Some(&false) {
            self.open.pop_front();
            self.low += 1;
        }
        Ok(())
    }

    /// Grants credits in a response: what the client asked for (at least one), as far as the
    /// connection's limit allows, and never so few that the client is left with none.
    pub fn grant(&mut self, requested: u16) -> u16 {
        let room = self.max_credits.saturating_sub(self.available);
        // The span from the oldest open id to the newest may not exceed twice the limit, so a
        // client that leaves holes cannot make the window grow without bound.
        let span_room = (2 * self.max_credits as usize).saturating_sub(self.open.len()) as u32;
        let mut grant = u32::from(requested.max(1)).min(room).min(span_room);
        if grant == 0 && self.available == 0 {
            grant = 1;
        }
        for _ in 0..grant {
            self.open.push_back(true);
        }
        self.available += grant;
        grant as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiate_then_sequential_use() {
        let mut w = CreditWindow::new(8192);
        assert_eq!(w.consume(0, 0), Ok(()));
        assert_eq!(w.available(), 0);
        assert_eq!(w.grant(10), 10);
        for id in 1..=10 {
            assert_eq!(w.consume(id, 1), Ok(()));
        }
        assert_eq!(w.consume(11, 1), Err(OutOfWindow));
    }

    #[test]
    fn reuse_and_out_of_window_rejected() {
        let mut w = CreditWindow::new(100);
        w.consume(0, 1).unwrap();
        w.grant(5);
        w.consume(3, 1).unwrap();
        assert_eq!(w.consume(3, 1), Err(OutOfWindow), "reused id");
        assert_eq!(w.consume(0, 1), Err(OutOfWindow), "below window");
        assert_eq!(w.consume(6, 1), Err(OutOfWindow), "above window");
        assert_eq!(w.consume(u64::MAX, 1), Err(OutOfWindow));
        w.consume(1, 2).unwrap();
        w.consume(4, 2).unwrap();
        assert_eq!(w.available(), 0);
    }

    #[test]
    fn multi_credit_charge_needs_every_id() {
        let mut w = CreditWindow::new(100);
        w.consume(0, 1).unwrap();
        w.grant(4);
        assert_eq!(w.consume(3, 4), Err(OutOfWindow));
        assert_eq!(w.consume(1, 4), Ok(()));
    }

    #[test]
    fn grant_is_capped_and_never_zero_for_an_empty_client() {
        let mut w = CreditWindow::new(8);
        w.consume(0, 1).unwrap();
        assert_eq!(w.grant(100), 8);
        assert_eq!(w.grant(100), 0);
        assert_eq!(w.grant(0), 0);
        for id in 1..=8 {
            w.consume(id, 1).unwrap();
        }
        assert_eq!(w.grant(0), 1);
    }

    #[test]
    fn holes_cannot_grow_the_window() {
        let mut w = CreditWindow::new(4);
        w.consume(0, 1).unwrap();
        for _ in 0..1000 {
            w.grant(4);
            // Use every id but the oldest, leaving a hole at the bottom.
            let ids: Vec<u64> = (w.low + 1..w.low + w.open.len() as u64).collect();
            for id in ids {
                let _ = w.consume(id, 1);
            }
        }
        assert!(w.open.len() <= 8);
    }
}
