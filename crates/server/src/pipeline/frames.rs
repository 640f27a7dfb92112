//! A received frame, up to the requests it starts (MS-SMB2 3.3.5.2.1-3.3.5.2.3): SMB1
//! negotiates, decryption of a transform, the compound split, the credit window, NEGOTIATE,
//! CANCEL, the requests CANCEL must find, and where the frame's requests run.

use std::ops::Range;
use std::pin::pin;
use std::sync::Arc;

use smb3d_smb2::Command;
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::header::Header;
use smb3d_smb2::transform::TransformHeader;
use smb3d_vfs::PipedData;

use super::{dispatch, scheduling};
use crate::limits::Limit;
use crate::panic_guard;
use crate::request::commands::{self, Waits};
use crate::state::connection::credits::{CreditWindow, OutOfWindow};
use crate::state::connection::limits::Inflight;
use crate::state::connection::pending::PendingRequest;
use crate::state::connection::response::ResponseFrame;
use crate::state::connection::{ConnState, Connection, Disconnect, Negotiated, Seal};
use crate::tasks;

impl Connection {
    /// Handles one received frame (without its 4-byte prefix). An error means the connection
    /// must be closed.
    pub fn on_frame(self: &Arc<Self>, frame: Vec<u8>) -> Result<(), Disconnect> {
        let inflight = self.watchdog.admit(frame.len());
        match frame.get(..4) {
            Some([0xFF, b'S', b'M', b'B']) => self.on_smb1_negotiate(&frame),
            Some([0xFE, b'S', b'M', b'B']) => self.on_smb2(frame, 0, None, inflight, None),
            Some([0xFD, b'S', b'M', b'B']) => self.on_transform(frame, inflight),
            Some([0xFC, b'S', b'M', b'B']) => {
                Err(Disconnect("compressed message without compression"))
            }
            _ => Err(Disconnect("not an SMB2 message")),
        }
    }

    /// MS-SMB2 3.3.5.3.1: an SMB1 NEGOTIATE offering SMB2 dialects is answered with an SMB2
    /// NEGOTIATE response; anything else SMB1 is refused.
    fn on_smb1_negotiate(self: &Arc<Self>, frame: &[u8]) -> Result<(), Disconnect> {
        let offer = smb3d_smb2::smb1::Smb1Negotiate::decode(frame)
            .map_err(|_| Disconnect("SMB1 traffic"))?;
        {
            let mut st = self.state.lock();
            if self.negotiated.get().is_some() || st.smb1_upgraded {
                return Err(Disconnect("SMB1 negotiate after negotiation"));
            }
            // The SMB1 negotiate takes message id 0.
            st.credits
                .consume(0, 1)
                .map_err(|OutOfWindow| Disconnect("credits"))?;
        }
        let mut out = ResponseFrame::new();
        let upgraded = dispatch::smb1_upgrade(self, &offer, &mut out)?;
        self.state.lock().smb1_upgraded = upgraded;
        self.queue(out.finish());
        Ok(())
    }

    /// MS-SMB2 3.3.5.2.1.1: an encrypted message is decrypted with its session's key; any
    /// failure (unknown session, no cipher, wrong tag, malformed header) ends the connection
    /// before anything is processed.
    fn on_transform(
        self: &Arc<Self>,
        mut frame: Vec<u8>,
        inflight: Inflight,
    ) -> Result<(), Disconnect> {
        let unreadable = Disconnect("undecryptable message");
        let (header, ciphertext) = TransformHeader::decode(&frame).map_err(|_| unreadable)?;
        let session = self.session(header.session_id).ok_or(unreadable)?;
        let (cipher, _) = session.encryption().ok_or(unreadable)?;
        let message = cipher
            .open(&mut frame, &header, ciphertext)
            .map_err(|_| unreadable)?;
        self.server.metrics.encrypted_message();
        if frame.get(message.start..message.start + 4) != Some(&[0xFE, b'S', b'M', b'B']) {
            return Err(unreadable);
        }
        self.on_smb2(
            frame,
            message.start,
            Some((header.session_id, cipher)),
            inflight,
            None,
        )
    }

    /// Handles the SMB2 message at `frame[base..]`; `sealed_by` names the session whose key
    /// decrypted it, `piped` holds the data of a WRITE that the frame ends before.
    pub(crate) fn on_smb2(
        self: &Arc<Self>,
        mut frame: Vec<u8>,
        base: usize,
        sealed_by: Option<Seal>,
        mut inflight: Inflight,
        piped: Option<PipedData>,
    ) -> Result<(), Disconnect> {
        let requests = self.split_compound(&frame, base)?;
        if let Some((session_id, _)) = &sealed_by {
            sealed_for(&requests, *session_id)?;
        }
        self.charge(&requests, &mut inflight)?;
        let Some((first, _)) = requests.first() else {
            return Err(Disconnect("empty message"));
        };
        if first.command == Command::NEGOTIATE {
            return self.on_negotiate(&frame, &requests);
        }
        if self.negotiated.get().is_none() {
            return Err(Disconnect("request before NEGOTIATE"));
        }
        if requests
            .iter()
            .any(|(h, _)| h.command == Command::NEGOTIATE)
        {
            return Err(Disconnect("NEGOTIATE inside a compound"));
        }
        let (waiting, arrival) = self.arrive(&mut frame, &requests, sealed_by.is_some());
        if requests.iter().all(|(h, _)| h.command == Command::CANCEL) {
            self.settle(arrival);
            return Ok(());
        }
        let inline = match piped {
            None => scheduling::runs_inline(&frame, &requests),
            Some(_) => false,
        } || scheduling::long_write_runs_here(&requests, &self.server.write_pace);
        let conn = self.clone();
        let chain = async move {
            let chain = pin!(conn.clone().run_chain(
                frame, requests, sealed_by, waiting, arrival, piped, inflight,
            ));
            if let Err(why) = panic_guard::contain_async(chain).await {
                conn.panicked(&why);
            }
        };
        if inline {
            scheduling::run_here_until_it_waits(chain);
        } else {
            tasks::spawn(chain);
        }
        Ok(())
    }

    /// The requests of the message at `frame[base..]`, each with its place in `frame`
    /// (MS-SMB2 3.3.5.2.7); an unknown command (3.3.5.2.6), a malformed compound or one longer
    /// than the limit ends the connection without a response.
    fn split_compound(
        &self,
        frame: &[u8],
        base: usize,
    ) -> Result<Vec<(Header, Range<usize>)>, Disconnect> {
        let mut requests = Vec::new();
        let message = frame.get(base..).unwrap_or_default();
        let mut offset = base;
        for item in smb3d_smb2::compound::split(message) {
            let (hdr, pdu) = item.map_err(|_| Disconnect("malformed compound"))?;
            if !commands::is_known(hdr.command) {
                return Err(Disconnect("unknown command"));
            }
            if requests.len() == self.server.settings.limits.max_compound {
                self.server
                    .limit_counters
                    .hit(Limit::Compound, &"a compound too long");
                return Err(Disconnect("compound too long"));
            }
            requests.push((hdr, offset..offset + pdu.len()));
            offset += pdu.len();
        }
        Ok(requests)
    }

    /// MS-SMB2 3.3.5.2.3 and 3.3.5.2.5: the requests spend their message ids from the credit
    /// window, and the frame's in-flight bytes reserve the room of their responses.
    fn charge(
        &self,
        requests: &[(Header, Range<usize>)],
        inflight: &mut Inflight,
    ) -> Result<(), Disconnect> {
        let multi_credit = self.negotiated.get().is_some_and(Negotiated::multi_credit);
        let credits_charged =
            charge_credits(&mut self.state.lock().credits, requests, multi_credit)
                .map_err(|OutOfWindow| Disconnect("message id outside the credit window"))?;
        // A request's CreditCharge covers the larger of its payload and its response's, 64 KiB
        // a credit. The responses' room is counted now, so that a client cannot make the
        // server take on requests for more response bytes than its budget holds (security.md
        // L6); handlers refuse a READ, QUERY_INFO or QUERY_DIRECTORY whose response would
        // outgrow its charge.
        inflight.reserve((credits_charged * CREDIT_BYTES).saturating_sub(inflight.len()));
        Ok(())
    }

    /// NEGOTIATE (MS-SMB2 3.3.5.3), alone in its frame and only once, answered here in arrival
    /// order.
    fn on_negotiate(
        self: &Arc<Self>,
        frame: &[u8],
        requests: &[(Header, Range<usize>)],
    ) -> Result<(), Disconnect> {
        let [(hdr, range)] = requests else {
            return Err(Disconnect("NEGOTIATE after negotiation or in a compound"));
        };
        if self.negotiated.get().is_some() {
            return Err(Disconnect("NEGOTIATE after negotiation or in a compound"));
        }
        let mut out = ResponseFrame::new();
        let pdu = frame.get(range.clone()).unwrap_or_default();
        let clock = &*self.server.settings.clock;
        let started = clock.now();
        let negotiated = dispatch::negotiate(self, hdr, pdu, &mut out);
        self.server.metrics.request(
            Command::NEGOTIATE,
            clock.now().saturating_duration_since(started),
            negotiated.is_err(),
        );
        negotiated?;
        self.state.lock().smb1_upgraded = false;
        self.queue(out.finish());
        Ok(())
    }

    /// The frame's arrival, in order: its CANCELs act now, so that they find a request of an
    /// earlier frame even before that request's handler has run (MS-SMB2 3.3.5.16; a CANCEL
    /// gets no response), and its requests that may wait are registered for later CANCELs.
    /// Returns those and the frame's arrival number.
    // Inlined as it was before it was a function of its own (callgrind, request_costs).
    #[inline(always)]
    fn arrive(
        &self,
        frame: &mut [u8],
        requests: &[(Header, Range<usize>)],
        sealed: bool,
    ) -> (Vec<Arc<PendingRequest>>, u64) {
        let mut waiting = Vec::new();
        let mut st = self.state.lock();
        // A related request acts in the session of the one before it (3.3.5.2.7.2).
        let mut chain_session = 0;
        for (hdr, range) in requests {
            let session_id = if hdr.is_related() {
                chain_session
            } else {
                hdr.session_id
            };
            chain_session = session_id;
            if hdr.command == Command::CANCEL {
                // Verified in place: nothing reads a CANCEL after this.
                let pdu = frame.get_mut(range.clone()).unwrap_or_default();
                self.cancel(&mut st, hdr, pdu, sealed);
            } else if Self::may_wait(&st, hdr) {
                let request = Arc::new(PendingRequest::new(hdr.message_id, session_id));
                st.pending.insert(hdr.message_id, request.clone());
                waiting.push(request);
            }
        }
        let watches = requests
            .iter()
            .any(|(h, _)| commands::spec(h.command).watches);
        (
            waiting,
            st.order.arrive(watches, the_open_acted_on(frame, requests)),
        )
    }

    /// The key that must encrypt the responses to an unencrypted frame: that of a session or
    /// tree connect with EncryptData (MS-SMB2 3.3.4.1.4). SESSION_SETUP responses are never
    /// encrypted that way; the client has no keys until it reads the last one.
    pub(super) fn required_seal(&self, first: &Header) -> Option<Seal> {
        if first.command == Command::SESSION_SETUP {
            return None;
        }
        let session = self.session(first.session_id)?;
        let (cipher, session_encrypts) = session.encryption()?;
        let tree_encrypts = session
            .state
            .lock()
            .trees
            .get(&first.tree_id)
            .is_some_and(|t| t.encrypt_data);
        (session_encrypts || tree_encrypts).then_some((first.session_id, cipher))
    }

    /// Whether the request may wait and so must be findable by CANCEL: as its command's
    /// `Waits` says, where on a named pipe a READ or IOCTL may wait for the client's next
    /// write (`handlers::pipe`).
    fn may_wait(st: &ConnState, hdr: &Header) -> bool {
        match commands::spec(hdr.command).waits {
            Waits::Last | Waits::Anywhere => true,
            Waits::Never => false,
            Waits::OnPipe => {
                !hdr.is_related()
                    && st.sessions.get(&hdr.session_id).is_some_and(|session| {
                        session
                            .state
                            .lock()
                            .trees
                            .get(&hdr.tree_id)
                            .is_some_and(|tree| tree.share.is_ipc())
                    })
            }
        }
    }
}

/// MS-SMB2 3.3.5.2.1.1: every request inside a transform belongs to the session whose key
/// sealed it, and NEGOTIATE is never sealed; anything else ends the connection.
fn sealed_for(requests: &[(Header, Range<usize>)], session_id: u64) -> Result<(), Disconnect> {
    let foreign = requests
        .iter()
        .any(|(h, _)| !h.is_related() && h.session_id != session_id);
    if foreign
        || requests
            .iter()
            .any(|(h, _)| h.command == Command::NEGOTIATE)
    {
        return Err(Disconnect("encrypted request of another session"));
    }
    Ok(())
}

/// MS-SMB2 3.3.5.2.3: every request but CANCEL spends its message ids from `window`, its
/// CreditCharge of them where the connection supports multi-credit requests, else one.
/// Returns the credits the frame was charged (a charge of 0 counts as 1), or stops at the
/// first request outside the window.
fn charge_credits(
    window: &mut CreditWindow,
    requests: &[(Header, Range<usize>)],
    multi_credit: bool,
) -> Result<usize, OutOfWindow> {
    let mut charged = 0;
    for (hdr, _) in requests {
        if hdr.command != Command::CANCEL {
            let charge = if multi_credit { hdr.credit_charge } else { 1 };
            window.consume(hdr.message_id, charge)?;
            charged += usize::from(charge.max(1));
        }
    }
    Ok(charged)
}

/// The payload one credit pays for (MS-SMB2 3.3.5.2.5).
const CREDIT_BYTES: usize = 64 * 1024;

/// The one open every request of the frame names itself, if there is one (`ordering`).
fn the_open_acted_on(frame: &[u8], requests: &[(Header, Range<usize>)]) -> Option<FileId> {
    let mut acted_on = None;
    for (hdr, range) in requests {
        let open = commands::file_id_of(hdr, frame.get(range.clone())?)?;
        if acted_on
            .replace(open)
            .is_some_and(|earlier| earlier != open)
        {
            return None;
        }
    }
    acted_on
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(command: Command, message_id: u64, credit_charge: u16) -> (Header, Range<usize>) {
        let hdr = Header {
            command,
            message_id,
            credit_charge,
            ..Header::default()
        };
        (hdr, 0..0)
    }

    /// A window after NEGOTIATE (id 0) that granted ids 1..=8.
    fn window() -> CreditWindow {
        let mut window = CreditWindow::new(100);
        window.consume(0, 1).unwrap();
        window.grant(8);
        window
    }

    #[test]
    fn multi_credit_requests_spend_their_charge() {
        let mut w = window();
        let frame = [request(Command::READ, 1, 4), request(Command::READ, 5, 0)];
        assert_eq!(charge_credits(&mut w, &frame, true), Ok(5));
        assert_eq!(w.available(), 3);
        assert_eq!(
            w.consume(5, 1),
            Err(OutOfWindow),
            "spent by the charge of 0"
        );
    }

    #[test]
    fn without_multi_credit_a_request_spends_one_id() {
        let mut w = window();
        let frame = [request(Command::READ, 1, 4), request(Command::READ, 2, 4)];
        assert_eq!(charge_credits(&mut w, &frame, false), Ok(2));
        assert_eq!(w.available(), 6);
    }

    #[test]
    fn cancel_spends_nothing() {
        let mut w = window();
        // A CANCEL names the MessageId of the request it cancels, already spent.
        let frame = [request(Command::LOCK, 1, 1), request(Command::CANCEL, 1, 1)];
        assert_eq!(charge_credits(&mut w, &frame, true), Ok(1));
        assert_eq!(w.available(), 7);
    }

    #[test]
    fn a_request_outside_the_window_stops_the_frame() {
        let mut w = window();
        let frame = [request(Command::READ, 1, 1), request(Command::READ, 1, 1)];
        assert_eq!(charge_credits(&mut w, &frame, true), Err(OutOfWindow));
        let beyond = [request(Command::WRITE, 7, 4)];
        assert_eq!(charge_credits(&mut w, &beyond, true), Err(OutOfWindow));
    }
}
