//! The order of a connection's frames (MS-SMB2 3.3.5.2 leaves it to the server; MS-FSA
//! 2.1.5.11 for change notify). Frames run concurrently, each from its arrival until it
//! settles: its requests end, or the one that waits goes async. A request that ends an open
//! (TREE_DISCONNECT, LOGOFF) or a CHANGE_NOTIFY waits until every earlier frame has settled, a
//! CLOSE until every earlier frame that may act on its open has; any other request until the
//! earlier CHANGE_NOTIFYs have.

use std::collections::VecDeque;

use smb3d_smb2::file_id::FileId;

use super::{ConnState, Connection};

/// Frames a connection keeps room for once the unsettled ones are gone: a burst's room beyond
/// it is given back, so a connection that once had hundreds of frames in flight does not hold
/// their room while idle, and one that keeps up to 16 in flight does not reallocate per burst.
const KEPT_ROOM: usize = 16;

/// Which frames of a connection still run synchronously, by arrival number.
///
/// Both lists are in arrival order (numbers only grow), so a frame is found by binary search.
/// They are `VecDeque`s rather than ordered maps: a map keeps its emptied root node (376 bytes
/// here) on every idle connection, a deque four entries' room (128 bytes) unless it had more in
/// flight.
#[derive(Default)]
pub(crate) struct FrameOrder {
    /// Frames by arrival number whose requests are still running synchronously, each with the
    /// one open all its requests name (`None`: several, or one they do not name themselves).
    unsettled: VecDeque<(u64, Option<FileId>)>,
    /// The unsettled frames that carry a CHANGE_NOTIFY (see [`Connection::wait_for_notifies`]).
    unsettled_notifies: VecDeque<u64>,
    /// The arrival number of the next frame.
    next_frame: u64,
}

impl FrameOrder {
    /// A frame arrives, carrying a CHANGE_NOTIFY if `notify`, acting only on `open` if that is
    /// known: its arrival number, unsettled until [`FrameOrder::settle`].
    pub fn arrive(&mut self, notify: bool, open: Option<FileId>) -> u64 {
        let arrival = self.next_frame;
        self.next_frame += 1;
        self.unsettled.push_back((arrival, open));
        if notify {
            self.unsettled_notifies.push_back(arrival);
        }
        arrival
    }

    /// The frame `arrival` settles; true if it had not yet.
    pub fn settle(&mut self, arrival: u64) -> bool {
        if let Ok(at) = self.unsettled_notifies.binary_search(&arrival) {
            self.unsettled_notifies.remove(at);
            give_back_room(&mut self.unsettled_notifies);
        }
        match self.unsettled.binary_search_by_key(&arrival, |&(a, _)| a) {
            Ok(at) => {
                self.unsettled.remove(at);
                give_back_room(&mut self.unsettled);
                true
            }
            Err(_) => false,
        }
    }

    /// Every frame that arrived before `arrival` has settled.
    pub fn earlier_settled(&self, arrival: u64) -> bool {
        self.unsettled.front().is_none_or(|&(a, _)| a >= arrival)
    }

    /// Every frame that arrived before `arrival` and may act on `open` has settled.
    pub fn earlier_on_settled(&self, arrival: u64, open: FileId) -> bool {
        self.unsettled
            .iter()
            .take_while(|&&(a, _)| a < arrival)
            .all(|(_, acts_on)| acts_on.is_some_and(|other| other != open))
    }

    /// Every frame with a CHANGE_NOTIFY that arrived before `arrival` has settled.
    pub fn earlier_notifies_settled(&self, arrival: u64) -> bool {
        self.unsettled_notifies
            .front()
            .is_none_or(|&a| a >= arrival)
    }

    /// The room the lists hold, in entries (for tests of what an idle connection keeps).
    #[cfg(test)]
    fn room(&self) -> usize {
        self.unsettled.capacity() + self.unsettled_notifies.capacity()
    }
}

/// Once `list` is empty, gives back room beyond [`KEPT_ROOM`] (a burst's).
fn give_back_room<T>(list: &mut VecDeque<T>) {
    if list.is_empty() && list.capacity() > KEPT_ROOM {
        list.shrink_to(KEPT_ROOM);
    }
}

impl Connection {
    /// The frame `arrival` no longer runs synchronously (it ended, or its request went async).
    pub(crate) fn settle(&self, arrival: u64) {
        let mut st = self.state.lock();
        if st.order.settle(arrival) {
            drop(st);
            self.settled.notify_waiters();
        }
    }

    /// Waits until every frame that arrived before `arrival` has settled. Frames run
    /// concurrently; requests that end an open (CLOSE, TREE_DISCONNECT, LOGOFF) wait so that
    /// they never overtake an earlier request on the same open, which would then fail with
    /// STATUS_FILE_CLOSED instead of being served (or, for CHANGE_NOTIFY, ended with
    /// STATUS_NOTIFY_CLEANUP); CHANGE_NOTIFY waits so that changes go to the oldest request
    /// (MS-FSA 2.1.5.11).
    pub(crate) async fn wait_for_earlier(&self, arrival: u64) {
        self.wait_until(|st| st.order.earlier_settled(arrival))
            .await;
    }

    /// Waits until every frame that arrived before `arrival` and may act on `open` has settled
    /// (with `open` unknown, every frame): a CLOSE never overtakes a request on its open, nor
    /// waits for requests on other opens, which may be stalled on the disk (issue 22 item 4).
    pub(crate) async fn wait_for_earlier_on(&self, arrival: u64, open: Option<FileId>) {
        match open {
            Some(open) => {
                self.wait_until(|st| st.order.earlier_on_settled(arrival, open))
                    .await;
            }
            None => self.wait_for_earlier(arrival).await,
        }
    }

    /// Waits until every CHANGE_NOTIFY that arrived before `arrival` has settled (registered
    /// its watch and gone async, or ended): a change made by a later request of the same
    /// connection must reach it, as it would had the requests run one after the other.
    pub(crate) async fn wait_for_notifies(&self, arrival: u64) {
        self.wait_until(|st| st.order.earlier_notifies_settled(arrival))
            .await;
    }

    async fn wait_until(&self, done: impl Fn(&ConnState) -> bool) {
        loop {
            let settled = self.settled.notified();
            tokio::pin!(settled);
            settled.as_mut().enable();
            if done(&self.state.lock()) {
                return;
            }
            settled.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An idle connection keeps little room for its frames, whatever it had in flight once
    /// (the ordered map it replaced kept a 376-byte node on every idle connection).
    #[test]
    fn a_burst_leaves_little_room_behind() {
        let mut order = FrameOrder::default();
        let burst: Vec<u64> = (0..300).map(|i| order.arrive(i % 7 == 0, None)).collect();
        assert!(order.room() >= 300);
        for arrival in burst.iter().rev() {
            assert!(order.settle(*arrival));
        }
        assert!(order.room() <= 2 * KEPT_ROOM, "room for {}", order.room());
        let next = order.arrive(false, None);
        assert!(order.earlier_settled(next));
        assert!(!order.settle(burst[0]), "settled already");
    }

    #[test]
    fn frames_wait_for_earlier_frames_only() {
        let mut order = FrameOrder::default();
        let (first, second, third) = (
            order.arrive(false, None),
            order.arrive(false, None),
            order.arrive(false, None),
        );
        assert_eq!((first, second, third), (0, 1, 2));
        assert!(order.earlier_settled(first));
        assert!(!order.earlier_settled(third));
        assert!(order.settle(second));
        assert!(!order.earlier_settled(third), "the first frame still runs");
        assert!(order.settle(first));
        assert!(order.earlier_settled(third));
        // A later frame never holds an earlier one.
        assert!(order.earlier_settled(second));
    }

    fn open(volatile: u64) -> Option<FileId> {
        Some(FileId {
            persistent: volatile,
            volatile,
        })
    }

    #[test]
    fn a_close_waits_only_for_frames_that_may_act_on_its_open() {
        let mut order = FrameOrder::default();
        let stalled_read = order.arrive(false, open(1));
        let write = order.arrive(false, open(2));
        let close = order.arrive(false, open(2));
        let id = open(2).unwrap();
        assert!(!order.earlier_on_settled(close, id), "the write on it runs");
        assert!(order.settle(write));
        assert!(
            order.earlier_on_settled(close, id),
            "held by another file's read"
        );
        assert!(!order.earlier_settled(close));
        assert!(order.settle(close));
        // A frame that names no single open may act on any.
        let unknown = order.arrive(false, None);
        let later_close = order.arrive(false, open(2));
        assert!(!order.earlier_on_settled(later_close, id));
        assert!(order.settle(unknown));
        assert!(order.earlier_on_settled(later_close, id));
        assert!(!order.earlier_on_settled(later_close, open(1).unwrap()));
        assert!(order.settle(stalled_read));
    }

    #[test]
    fn a_frame_settles_once() {
        let mut order = FrameOrder::default();
        let frame = order.arrive(true, None);
        assert!(order.settle(frame));
        assert!(!order.settle(frame), "ended after going async");
        assert!(!order.settle(7), "never arrived");
    }

    #[test]
    fn only_change_notifies_hold_the_other_requests() {
        let mut order = FrameOrder::default();
        let read = order.arrive(false, None);
        let notify = order.arrive(true, None);
        let close = order.arrive(false, None);
        assert!(!order.earlier_settled(close));
        assert!(!order.earlier_notifies_settled(close));
        // The CHANGE_NOTIFY went async: later requests may go on, a CLOSE still waits for the
        // READ before it.
        assert!(order.settle(notify));
        assert!(order.earlier_notifies_settled(close));
        assert!(!order.earlier_settled(close));
        assert!(order.settle(read));
        assert!(order.earlier_settled(close));
    }
}
