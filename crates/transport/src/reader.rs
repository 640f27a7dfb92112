//! The receiving side of a connection: Direct-TCP frames out of the socket into the core.
//!
//! Small frames arrive several to a `recv`: the reader receives into a buffer and cuts frames
//! out of it, so that a short request costs one system call, not one for its length prefix
//! and one for the rest. A frame larger than what is buffered is received straight into its
//! own allocation, without zeroing it first, so a WRITE's data is copied once, by the kernel;
//! the data of a large plain WRITE is not copied at all, but passed to a pipe (`piped`).
//! The buffer exists only while bytes wait in it: an idle connection waits for readiness
//! holding none, and its buffer becomes the thread's spare for the next connection.
//! A frame with more bytes behind it in the buffer runs corked (`SocketSink::cork`): the
//! responses of a burst leave together once the buffer is empty, or before the reader waits
//! for anything.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::{Buf, BufMut, BytesMut};
use smb3d_server::connection::{Connection, Disconnect};
use smb3d_server::limits::{Limit, enabled};
use smb3d_server::{Server, panic_guard, piped_write};
use tokio::io::AsyncReadExt;
use tokio::net::tcp::OwnedReadHalf;
use tokio::time::{Instant, Sleep};

use crate::piped::{self, PipeBudget, PipePool, Received};
use crate::writer::SocketSink;

/// What one `recv` asks for when frames are cut from the buffer: room for a burst of small
/// requests (an ECHO is 72 bytes, a compound CREATE a few hundred) or the start of a large one.
const RECEIVE_CHUNK: usize = 16 * 1024;
/// The Direct-TCP length prefix (MS-SMB2 2.1).
const PREFIX_LEN: usize = 4;

/// Reads frames and hands them to the core until the peer leaves, breaks the protocol or
/// runs into a limit.
pub(crate) async fn read_frames(
    reader: &mut OwnedReadHalf,
    conn: &Arc<Connection>,
    server: &Server,
    pipes: &Arc<PipeBudget>,
    sink: &SocketSink,
) -> io::Result<()> {
    let kept_pipes = Arc::new(PipePool::default());
    let frame_timeout = enabled(server.limits().frame_timeout);
    let mut buffer = BytesMut::new();
    let mut timer = Timer::default();
    loop {
        // The start of the next frame: while nothing is buffered the connection is idle and
        // its timers run; once a frame has begun it must arrive within the frame timeout.
        if buffer.is_empty() {
            sink.uncork();
            if wait_for_data(reader, conn, &mut buffer, &mut timer).await? == 0 {
                return Ok(());
            }
        }
        let prefix = loop {
            if let Some(prefix) = buffer.get(..PREFIX_LEN).and_then(|p| p.try_into().ok()) {
                break prefix;
            }
            buffer.reserve(RECEIVE_CHUNK);
            let receive = pin!(receive_some(
                frame_timeout,
                server,
                conn,
                reader,
                &mut buffer
            ));
            uncorked(sink, receive).await?;
        };
        let len = smb3d_smb2::framing::frame_len(prefix, conn.max_frame()).map_err(|e| {
            server.limit_reached(Limit::FrameSize, &format_args!("{e:?}"));
            io::Error::new(io::ErrorKind::InvalidData, format!("{e:?}"))
        })?;
        uncorked(sink, pin!(conn.wait_for_room(len))).await;
        buffer.advance(PREFIX_LEN);
        let mut frame = Vec::new();
        if len >= piped_write::MIN_FRAME_LEN && buffer.len() < len {
            while buffer.len() < piped_write::HEAD_LEN {
                buffer.reserve(piped_write::HEAD_LEN);
                let missing = len - buffer.len();
                let receive = pin!(receive_at_most(reader, &mut buffer, missing));
                let timed = pin!(within(frame_timeout, server, conn, receive));
                uncorked(sink, timed).await?;
            }
            if piped_write::may_pipe(&buffer, len) {
                let head = buffer.split_to(piped_write::HEAD_LEN).to_vec();
                let data_len = len - head.len();
                let receive = pin!(piped::receive(
                    reader,
                    &mut buffer,
                    data_len,
                    &kept_pipes,
                    pipes
                ));
                let timed = pin!(within(frame_timeout, server, conn, receive));
                let received = uncorked(sink, timed).await?;
                match received {
                    Received::Piped(data) => {
                        server.metrics().received(PREFIX_LEN + len);
                        deliver(conn, || conn.on_piped_write(head, data))?;
                        continue;
                    }
                    Received::InMemory(data) => {
                        frame.reserve_exact(len);
                        frame.extend_from_slice(&head);
                        frame.extend_from_slice(&data);
                    }
                }
            }
        }
        let frame = if frame.is_empty() && buffer.len() >= len {
            let frame = buffer.get(..len).unwrap_or_default().to_vec();
            buffer.advance(len);
            frame
        } else {
            // A frame not all in the buffer: what the buffer holds (unless a piped WRITE fell
            // back to memory and started it), then the rest from the socket.
            if frame.is_empty() {
                frame.reserve_exact(len);
                frame.extend_from_slice(&buffer);
                buffer.clear();
            }
            {
                let receive = pin!(receive_rest(reader, &mut frame, len));
                let timed = pin!(within(frame_timeout, server, conn, receive));
                uncorked(sink, timed).await?;
            }
            frame
        };
        server.metrics().received(PREFIX_LEN + len);
        if !buffer.is_empty() {
            sink.cork();
        }
        deliver(conn, || conn.on_frame(frame))?;
        if buffer.is_empty() {
            // What the burst used goes to the next connection this thread receives for.
            recycle(std::mem::take(&mut buffer));
        }
    }
}

/// Awaits `work`, first sending the responses held back by a cork if it cannot finish at once:
/// a response must not wait for the reader to wait.
///
/// `work` (as `within`'s `read`) comes pinned by the caller, so that it is stored once, in the
/// reader's state: an async fn keeps an argument it pins apart from the pinned copy, so taken
/// by value the reader's largest wait (a piped WRITE's receive) was held four times over, by
/// every idle connection (docs/benchmarks.md, "Memory per idle connection and per open file").
async fn uncorked<T>(sink: &SocketSink, mut work: Pin<&mut impl Future<Output = T>>) -> T {
    if let Poll::Ready(done) = std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await
    {
        return done;
    }
    sink.uncork();
    work.await
}

/// Hands a frame to the core; an error ends the connection.
fn deliver(conn: &Connection, on_frame: impl FnOnce() -> Result<(), Disconnect>) -> io::Result<()> {
    match panic_guard::contain(on_frame) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(why)) => Err(io::Error::new(io::ErrorKind::InvalidData, why.0)),
        Err(why) => {
            conn.panicked(&why);
            Err(io::Error::other(format!("panic: {why}")))
        }
    }
}

/// Receives some bytes of a frame that has begun, at most `missing`, so that nothing of the
/// next frame is taken; the end of the stream now is an error.
async fn receive_at_most(
    reader: &mut OwnedReadHalf,
    buffer: &mut BytesMut,
    missing: usize,
) -> io::Result<()> {
    match reader.read_buf(&mut (&mut *buffer).limit(missing)).await? {
        0 => Err(io::ErrorKind::UnexpectedEof.into()),
        _ => Ok(()),
    }
}

thread_local! {
    /// An emptied receive buffer, for the next connection this thread receives for: one per
    /// thread instead of an allocation and a free per burst of requests.
    static SPARE: Cell<Option<BytesMut>> = const { Cell::new(None) };
}

/// Keeps an emptied receive buffer of the usual size as this thread's spare.
fn recycle(mut buffer: BytesMut) {
    buffer.clear();
    // Takes back the room before the consumed bytes, without allocating: nothing else
    // shares the buffer once its frames are cut out.
    buffer.reserve(RECEIVE_CHUNK);
    if (RECEIVE_CHUNK..=4 * RECEIVE_CHUNK).contains(&buffer.capacity()) {
        SPARE.set(Some(buffer));
    }
}

/// Waits for the first bytes of the next frame and receives what has come (0 at the end of
/// the stream) while the connection's timers run; a timeout that closes the connection is an
/// error. The buffer is allocated only once there is something to receive.
async fn wait_for_data(
    reader: &mut OwnedReadHalf,
    conn: &Connection,
    buffer: &mut BytesMut,
    timer: &mut Timer,
) -> io::Result<usize> {
    loop {
        timer.arm(conn.next_timer());
        tokio::select! {
            ready = reader.readable() => {
                ready?;
                if buffer.capacity() == 0 {
                    *buffer = SPARE.take().unwrap_or_default();
                }
                buffer.reserve(RECEIVE_CHUNK);
                // Through `AsyncRead`, which takes a short read as the socket drained: the
                // next wait goes to epoll instead of trying a recv that would fail.
                let mut read = pin!(reader.read_buf(buffer));
                if let Poll::Ready(received) =
                    std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await
                {
                    return received;
                }
            }
            () = timer.fired() => {
                conn.check_timers(conn.now())
                    .map_err(|why| io::Error::new(io::ErrorKind::TimedOut, why.0))?;
            }
            () = conn.timers_changed() => {}
        }
    }
}

/// Receives more of a frame that has begun; the end of the stream now is an error.
async fn receive_some(
    timeout: Option<Duration>,
    server: &Server,
    conn: &Connection,
    reader: &mut OwnedReadHalf,
    buffer: &mut BytesMut,
) -> io::Result<()> {
    match within(timeout, server, conn, pin!(reader.read_buf(buffer))).await? {
        0 => Err(io::ErrorKind::UnexpectedEof.into()),
        _ => Ok(()),
    }
}

/// Receives the rest of a frame into `frame` until it holds `len` bytes, never beyond.
async fn receive_rest(
    reader: &mut OwnedReadHalf,
    frame: &mut Vec<u8>,
    len: usize,
) -> io::Result<()> {
    while frame.len() < len {
        let missing = len - frame.len();
        if reader.read_buf(&mut (&mut *frame).limit(missing)).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
    }
    Ok(())
}

/// The connection's next deadline, armed lazily: the idle deadline moves later with every
/// frame, and re-registering a timer per frame costs more than waking early now and then. A
/// timer that fires early finds nothing due in `check_timers` and is armed again.
#[derive(Default)]
struct Timer {
    sleep: Option<Pin<Box<Sleep>>>,
    armed: bool,
}

impl Timer {
    /// Makes the timer fire at `next` at the latest.
    fn arm(&mut self, next: Option<Instant>) {
        let Some(next) = next else {
            return;
        };
        match &mut self.sleep {
            Some(sleep) if self.armed && sleep.deadline() <= next => {}
            Some(sleep) => sleep.as_mut().reset(next),
            None => self.sleep = Some(Box::pin(tokio::time::sleep_until(next))),
        }
        self.armed = true;
    }

    /// Resolves when the armed deadline passes, and disarms; never if unarmed.
    async fn fired(&mut self) {
        match &mut self.sleep {
            Some(sleep) if self.armed => {
                sleep.as_mut().await;
                self.armed = false;
            }
            _ => std::future::pending().await,
        }
    }
}

/// Runs `read` within `timeout` (security.md L20: a frame that arrives too slowly closes the
/// connection).
async fn within<T>(
    timeout: Option<Duration>,
    server: &Server,
    conn: &Connection,
    read: Pin<&mut impl Future<Output = io::Result<T>>>,
) -> io::Result<T> {
    let Some(timeout) = timeout else {
        return read.await;
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(result) => result,
        Err(_) => {
            let who = conn
                .client()
                .map_or_else(|| "a client".to_owned(), |c| c.to_string());
            server.limit_reached(
                Limit::FrameTimeout,
                &format_args!("a frame from {who} stalled"),
            );
            Err(io::Error::new(io::ErrorKind::TimedOut, "frame too slow"))
        }
    }
}
