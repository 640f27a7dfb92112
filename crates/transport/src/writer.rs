//! The sending side of a connection. A response is written to the socket by the task that
//! produced it when nothing else is waiting to go out and the socket takes it whole: one
//! `send`, no hand-over to another task. Otherwise it joins a queue that the connection's
//! writer task drains, several frames to a `writev`, in order. While the reader runs a burst
//! of requests that arrived together, the sink is corked: their responses wait in the queue
//! and leave together in one `writev` once the burst is done ([`SocketSink::uncork`]), so a
//! burst of ECHOs or 4 KiB READs costs one pass through the loopback and one wake-up of the
//! client instead of one per response. A READ response with data in a file (`FileTail`) goes
//! out as its header with `MSG_MORE` and its data with `sendfile`: by the task that made it,
//! under the same conditions, when the page cache holds all the data (one `cachestat`; a page
//! evicted between the check and the send is read on the worker), else by the writer task,
//! which hands the worker's other tasks on first (`block_in_place`) since `sendfile` may wait
//! for the disk. A frame counts against its connection's in-flight budget until it is dropped,
//! which is once the socket has taken all of it: the reader stops while a client leaves its
//! responses unread.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use parking_lot::Mutex;
use smb3d_server::connection::{FileTail, FrameSink, OutFrame};
use smb3d_server::{Limit, Server};
use tokio::io::Interest;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::Notify;

/// Frames gathered into one `writev` at most (Linux takes up to 1024 slices).
const MAX_BATCH: usize = 64;

/// Where a connection's frames go: straight to the socket, or to the writer task's queue.
pub(crate) struct SocketSink {
    socket: Arc<OwnedWriteHalf>,
    outbox: Mutex<Outbox>,
    /// Wakes the writer task: frames queued, or the connection closing.
    wake: Notify,
    /// Tells the reader to stop: the core ended the connection.
    closing: Arc<Notify>,
    server: Arc<Server>,
    /// The client, for the log line of a connection ended by the send timeout.
    peer: SocketAddr,
}

#[derive(Default)]
struct Outbox {
    /// Frames waiting for the writer task, the first maybe partly sent already.
    queue: VecDeque<Pending>,
    /// The writer task is sending (it owns the socket's send side until the queue is empty).
    writing: bool,
    /// No more frames go out; the writer task shuts the socket once the queue is drained.
    closed: bool,
    /// The reader is running a burst of requests: responses wait for [`SocketSink::uncork`].
    corked: bool,
    /// A task sends a READ's file data without holding the lock: frames queue behind it, and it
    /// hands them to the writer task when it is done. Never together with `writing`.
    busy: bool,
}

/// How far [`SocketSink::send_tail_step`] got without waiting.
enum Step {
    Done,
    /// The socket takes no more for now.
    WouldBlock,
    /// The file ended before the data the response promised.
    Shrunk,
}

struct Pending {
    frame: OutFrame,
    /// Bytes of `frame.bytes()` already sent.
    sent: usize,
}

impl SocketSink {
    pub(crate) fn new(
        socket: Arc<OwnedWriteHalf>,
        closing: Arc<Notify>,
        server: Arc<Server>,
        peer: SocketAddr,
    ) -> Self {
        Self {
            socket,
            outbox: Mutex::default(),
            wake: Notify::new(),
            closing,
            server,
            peer,
        }
    }

    /// Sends queued frames until the connection closes, then shuts the socket down.
    pub(crate) async fn run_writer(&self) {
        loop {
            let (batch, closed) = {
                let mut outbox = self.outbox.lock();
                if outbox.busy || outbox.queue.is_empty() {
                    outbox.writing = false;
                    (Vec::new(), outbox.closed && !outbox.busy)
                } else {
                    outbox.writing = true;
                    (take_batch(&mut outbox.queue), false)
                }
            };
            if batch.is_empty() {
                if closed {
                    break;
                }
                self.wake.notified().await;
                continue;
            }
            match self.send_batch(batch).await {
                Ok(sent) => self.server.metrics().sent(sent),
                Err(_) => {
                    self.outbox.lock().closed = true;
                    self.closing.notify_one();
                    break;
                }
            }
        }
        let _ = socket2::SockRef::from(self.socket.as_ref().as_ref()).shutdown(Shutdown::Write);
    }

    /// Holds responses back until [`SocketSink::uncork`]; the reader corks before it runs a
    /// frame that has more requests behind it in its buffer. A burst that never lets the
    /// buffer empty still sends a batch whenever one is full, so no response waits for more
    /// than [`MAX_BATCH`] others.
    pub(crate) fn cork(&self) {
        let mut outbox = self.outbox.lock();
        if outbox.corked && outbox.queue.len() >= MAX_BATCH {
            drop(outbox);
            self.uncork();
            outbox = self.outbox.lock();
        }
        outbox.corked = true;
    }

    /// Sends what waited while corked: in one `writev` here, when the socket takes it all,
    /// else what is left goes to the writer task. The reader uncorks before anything that may
    /// make it wait, so a response never waits on the next request.
    pub(crate) fn uncork(&self) {
        let mut outbox = self.outbox.lock();
        if !outbox.corked {
            return;
        }
        outbox.corked = false;
        if outbox.writing || outbox.busy || outbox.closed || outbox.queue.is_empty() {
            return;
        }
        let mut slices = [IoSlice::new(&[]); MAX_BATCH];
        let mut count = 0;
        for (slot, pending) in slices.iter_mut().zip(&outbox.queue) {
            if pending.frame.tail.is_some() {
                break;
            }
            *slot = IoSlice::new(
                pending
                    .frame
                    .bytes()
                    .get(pending.sent..)
                    .unwrap_or_default(),
            );
            count += 1;
        }
        let mut written = match self
            .socket
            .try_write_vectored(slices.get(..count).unwrap_or_default())
        {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            Err(_) => return self.peer_gone(outbox),
        };
        self.server.metrics().sent(written);
        while let Some(front) = outbox.queue.front_mut() {
            let left = front.frame.bytes().len() - front.sent;
            if front.frame.tail.is_some() || written < left {
                front.sent += written;
                break;
            }
            written -= left;
            outbox.queue.pop_front();
        }
        if !outbox.queue.is_empty() {
            outbox.writing = true;
            drop(outbox);
            self.wake.notify_one();
        }
    }

    /// Ends the connection: nothing more is sent, and the socket closes both ways.
    /// A send failed: the peer is gone. The reader sees it too and ends the connection; the
    /// writer and whoever waits for the outbox to close are woken.
    fn peer_gone(&self, mut outbox: parking_lot::MutexGuard<'_, Outbox>) {
        outbox.closed = true;
        drop(outbox);
        self.wake.notify_one();
        self.closing.notify_one();
    }

    pub(crate) fn shut_down(&self) {
        self.outbox.lock().closed = true;
        self.wake.notify_one();
        let _ = socket2::SockRef::from(self.socket.as_ref().as_ref()).shutdown(Shutdown::Both);
    }

    /// Waits until the socket takes more bytes. A client that takes none for `send_timeout`
    /// while responses wait for it has stopped reading: what it left unread holds the
    /// connection's in-flight budget, so the connection ends rather than hold it for ever.
    async fn writable(&self) -> io::Result<()> {
        let limit = self.server.limits().send_timeout;
        if limit.is_zero() {
            return self.socket.writable().await;
        }
        match tokio::time::timeout(limit, self.socket.writable()).await {
            Ok(ready) => ready,
            Err(_) => {
                self.server.limit_reached(
                    Limit::SendTimeout,
                    &format_args!("{} took no response bytes for {limit:?}", self.peer),
                );
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client stopped reading",
                ))
            }
        }
    }

    /// Writes a batch: either frames held in memory, written together, or one frame with a
    /// tail. Returns the bytes sent.
    async fn send_batch(&self, mut batch: Vec<Pending>) -> io::Result<usize> {
        if let [only] = batch.as_slice()
            && only.frame.tail.is_some()
        {
            return self.send_with_tail(&only.frame, only.sent).await;
        }
        let total: usize = batch
            .iter()
            .map(|p| p.frame.bytes().len().saturating_sub(p.sent))
            .sum();
        let mut slices: Vec<IoSlice<'_>> = batch
            .iter_mut()
            .map(|p| IoSlice::new(p.frame.bytes().get(p.sent..).unwrap_or_default()))
            .collect();
        let mut slices = slices.as_mut_slice();
        while !slices.is_empty() {
            self.writable().await?;
            match self.socket.try_write_vectored(slices) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => IoSlice::advance_slices(&mut slices, n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok(total)
    }
}

/// Takes the frames the next `send_batch` sends: consecutive frames without tails, or a
/// frame with one on its own.
fn take_batch(queue: &mut VecDeque<Pending>) -> Vec<Pending> {
    let mut batch = Vec::new();
    while batch.len() < MAX_BATCH {
        let has_tail = match queue.front() {
            Some(next) => next.frame.tail.is_some(),
            None => break,
        };
        if has_tail && !batch.is_empty() {
            break;
        }
        batch.extend(queue.pop_front());
        if has_tail {
            break;
        }
    }
    batch
}

impl FrameSink for SocketSink {
    fn send(&self, frame: OutFrame) {
        let mut outbox = self.outbox.lock();
        if outbox.closed {
            return;
        }
        let mut sent = 0;
        if outbox.corked || outbox.busy {
            outbox.queue.push_back(Pending { frame, sent });
            return;
        }
        if !outbox.writing
            && let Some(tail) = &frame.tail
            && let Some(fd) = tail.fd()
            && tail.is_cached()
        {
            // Sent here, outside the lock: the socket is this task's until it is done.
            outbox.busy = true;
            drop(outbox);
            let step = self.send_tail_step(frame.bytes(), tail, fd, &mut sent, true);
            let mut outbox = self.outbox.lock();
            outbox.busy = false;
            match step {
                Ok(Step::Done) => self.server.metrics().sent(sent),
                Ok(Step::WouldBlock | Step::Shrunk) => {
                    outbox.queue.push_front(Pending { frame, sent })
                }
                Err(_) => return self.peer_gone(outbox),
            }
            // What queued meanwhile, and what is left of this frame, go to the writer task,
            // which also learns of a close it slept through.
            if !outbox.queue.is_empty() {
                outbox.writing = true;
            }
            if outbox.writing || outbox.closed {
                drop(outbox);
                self.wake.notify_one();
            }
            return;
        }
        if !outbox.writing && frame.tail.is_none() {
            let bytes = frame.bytes();
            match self.socket.try_write(bytes) {
                Ok(n) if n == bytes.len() => {
                    drop(outbox);
                    self.server.metrics().sent(n);
                    return;
                }
                Ok(n) => sent = n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return self.peer_gone(outbox),
            }
        }
        outbox.queue.push_back(Pending { frame, sent });
        if !outbox.writing {
            outbox.writing = true;
            drop(outbox);
            self.wake.notify_one();
        }
    }

    fn disconnect(&self) {
        self.outbox.lock().closed = true;
        self.wake.notify_one();
        self.closing.notify_one();
    }
}

impl SocketSink {
    /// Sends what is left of a frame with a file tail after its first `sent` bytes: the header
    /// with MSG_MORE, so that it waits for the data instead of leaving in a segment of its own,
    /// then the data from the file.
    async fn send_with_tail(&self, frame: &OutFrame, mut sent: usize) -> io::Result<usize> {
        let head = frame.bytes();
        let Some(tail) = &frame.tail else {
            return Ok(0);
        };
        let total = head.len() + tail.len();
        let Some(fd) = tail.fd() else {
            let mut data = Vec::with_capacity(tail.len());
            tail.read_into(&mut data)?;
            self.write_all(head.get(sent..).unwrap_or_default()).await?;
            self.write_all(&data).await?;
            return Ok(total - sent);
        };
        let start = sent;
        // Checked once a frame: data the page cache holds goes out on the worker.
        let cached = tail.is_cached();
        loop {
            match self.send_tail_step(head, tail, fd, &mut sent, cached)? {
                Step::Done => return Ok(total - start),
                Step::WouldBlock => self.writable().await?,
                Step::Shrunk => {
                    // The file shrank after the response promised the data: zeros make up the
                    // rest, as for a read that raced with a truncation.
                    self.write_zeros(total - sent).await?;
                    return Ok(total - start);
                }
            }
        }
    }

    /// Sends as much of a frame with a file tail as the socket takes now, from its first
    /// `sent` bytes on (`head`, then the tail's data), counting what went into `sent`.
    /// `sendfile` reads the file in the calling thread: unless the page cache holds the data
    /// (`cached`), it runs off the worker, so that a disk read does not hold up the connections
    /// the worker serves.
    fn send_tail_step(
        &self,
        head: &[u8],
        tail: &FileTail,
        fd: BorrowedFd<'_>,
        sent: &mut usize,
        cached: bool,
    ) -> io::Result<Step> {
        let stream = self.socket.as_ref().as_ref();
        while let Some(rest) = head.get(*sent..).filter(|rest| !rest.is_empty()) {
            match stream.try_io(Interest::WRITABLE, || {
                rustix::net::send(stream, rest, rustix::net::SendFlags::MORE)
                    .map_err(io::Error::from)
            }) {
                Ok(n) => *sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Step::WouldBlock),
                Err(e) => return Err(e),
            }
        }
        let end = tail.offset() + tail.len() as u64;
        loop {
            let mut offset = tail.offset() + (*sent - head.len()) as u64;
            if offset >= end {
                return Ok(Step::Done);
            }
            let left = usize::try_from(end - offset).unwrap_or(usize::MAX);
            let result = stream.try_io(Interest::WRITABLE, || {
                let mut send = || rustix::fs::sendfile(stream, fd, Some(&mut offset), left);
                if cached { send() } else { blocking(send) }.map_err(io::Error::from)
            });
            match result {
                Ok(0) => return Ok(Step::Shrunk),
                Ok(n) => *sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Step::WouldBlock),
                Err(e) => return Err(e),
            }
        }
    }

    async fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            self.writable().await?;
            match self.socket.try_write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = bytes.get(n..).unwrap_or_default(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    async fn write_zeros(&self, mut count: usize) -> io::Result<()> {
        const ZEROS: [u8; 4096] = [0; 4096];
        while count > 0 {
            let n = count.min(ZEROS.len());
            self.write_all(ZEROS.get(..n).unwrap_or_default()).await?;
            count -= n;
        }
        Ok(())
    }
}

/// Runs a call that may block on the disk: on the multi-threaded runtime the worker hands its
/// other tasks to another thread first; elsewhere it runs inline.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}
