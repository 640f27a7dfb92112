//! Receiving a large plain WRITE's data into pipes (`smb3d_server::piped_write`): `splice`
//! hands the socket's pages to a pipe without copying them, and the WRITE handler moves them
//! on into the file.
//!
//! A pipe holds at most [`PIPE_SIZE`] (an unprivileged process may not make one larger than
//! `/proc/sys/fs/pipe-max-size`, 1 MiB by default), so a payload takes several. A pipe's
//! capacity counts pages, one per piece of a received packet, so a pipe may fill before its
//! bytes do; the next pipe then takes over. When no pipe may be had (a user's pipes are held to
//! `/proc/sys/fs/pipe-user-pages-soft`, the server's to [`MAX_PIPES`]), or a peer's tiny packets
//! would take too many, the payload is received into memory as any other frame.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::BytesMut;
use parking_lot::Mutex;
use rustix::pipe::{PipeFlags, SpliceFlags};
use smb3d_vfs::PipedData;
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedReadHalf;

/// The most one pipe is asked to hold.
const PIPE_SIZE: usize = 1024 * 1024;
/// Pipes holding WRITE data at once, server-wide: each takes a descriptor until its WRITE is
/// done, and the descriptors must not run out for opens.
pub(crate) const MAX_PIPES: usize = 4096;

/// Places for pipes, counted server-wide.
pub(crate) struct PipeBudget {
    left: AtomicUsize,
}

impl PipeBudget {
    pub(crate) fn new(pipes: usize) -> Arc<Self> {
        Arc::new(Self {
            left: AtomicUsize::new(pipes),
        })
    }

    fn take(self: &Arc<Self>) -> Option<PipePlace> {
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(1)
            })
            .ok()
            .map(|_| PipePlace(self.clone()))
    }
}

/// One pipe's place in the budget, given back when dropped.
struct PipePlace(Arc<PipeBudget>);

impl Drop for PipePlace {
    fn drop(&mut self) {
        self.0.left.fetch_add(1, Ordering::AcqRel);
    }
}
/// Pipes a payload may take beyond one per [`PIPE_SIZE`] bytes, for pipes that filled early.
const SPARE_PIPES: usize = 8;
/// Emptied pipes a connection keeps for its next WRITEs (each keeps its place in the budget):
/// enough for the payloads of a client's usual WRITEs in flight, of 1 MiB or a few.
const PIPES_KEPT: usize = 16;

/// A pipe, both ends open, and its place in the budget.
struct Pipe {
    _place: PipePlace,
    read_end: OwnedFd,
    write_end: OwnedFd,
    capacity: usize,
}

impl Pipe {
    fn new(budget: &Arc<PipeBudget>, wanted: usize) -> Option<Self> {
        let place = budget.take()?;
        let (read_end, write_end) =
            rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK).ok()?;
        let capacity = rustix::pipe::fcntl_setpipe_size(&write_end, wanted.min(PIPE_SIZE)).ok()?;
        Some(Self {
            _place: place,
            read_end,
            write_end,
            capacity,
        })
    }

    /// Whether nothing is left in the pipe. A pipe whose bytes were not all taken out (a
    /// WRITE that failed part-way) must never carry them into another WRITE's data.
    fn is_drained(&self) -> bool {
        rustix::io::ioctl_fionread(&self.read_end).is_ok_and(|left| left == 0)
    }
}

/// A connection's emptied pipes: making a pipe, sizing it and closing it cost three system
/// calls and the pipe's allocation per WRITE.
#[derive(Default)]
pub(crate) struct PipePool {
    kept: Mutex<Vec<Arc<Pipe>>>,
}

impl PipePool {
    /// A kept pipe or, if none, a new one of the capacity `wanted` asks.
    fn take(&self, budget: &Arc<PipeBudget>, wanted: usize) -> Option<Arc<Pipe>> {
        let kept = self.kept.lock().pop();
        kept.or_else(|| Pipe::new(budget, wanted).map(Arc::new))
    }

    /// Keeps `pipe` if it is empty and there is room; closes it otherwise.
    fn give_back(&self, pipe: Arc<Pipe>) {
        if pipe.is_drained() {
            let mut kept = self.kept.lock();
            if kept.len() < PIPES_KEPT {
                kept.push(pipe);
            }
        }
    }
}

/// A pipe lent to a WRITE's data: given back to its connection's pool when the data is done
/// with, if it was drained. Only the lender and the pool hold the pipe.
struct Lent {
    pipe: Arc<Pipe>,
    pool: Arc<PipePool>,
}

impl AsFd for Lent {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.pipe.read_end.as_fd()
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        self.pool.give_back(self.pipe.clone());
    }
}

/// What one `splice` did.
enum Spliced {
    Moved(usize),
    PipeFull,
}

/// Where a payload ended up.
pub(crate) enum Received {
    /// All of it waits in pipes.
    Piped(PipedData),
    /// The pipe route failed part-way: these first bytes of it are in memory, the rest still
    /// in the socket.
    InMemory(Vec<u8>),
}

/// The pipe being filled.
struct Filling {
    pipe: Arc<Pipe>,
    pool: Arc<PipePool>,
    /// What the pipe is taken to hold: less than its capacity once it filled by its pages.
    capacity: usize,
    held: usize,
}

impl Filling {
    fn new(pool: &Arc<PipePool>, budget: &Arc<PipeBudget>, wanted: usize) -> Option<Self> {
        let pipe = pool.take(budget, wanted)?;
        Some(Self {
            capacity: pipe.capacity,
            pipe,
            pool: pool.clone(),
            held: 0,
        })
    }

    fn room(&self) -> usize {
        self.capacity - self.held
    }

    /// Moves up to `max` bytes from the socket into the pipe. Would-block means the socket
    /// is drained (the caller's readiness is cleared); a pipe that cannot take more while
    /// bytes wait in the socket is full by its pages, which is no reason to wait.
    fn splice_from(&self, socket: &TcpStream, max: usize) -> io::Result<Spliced> {
        let spliced = rustix::pipe::splice(
            socket,
            None,
            &self.pipe.write_end,
            None,
            max.min(self.room()),
            SpliceFlags::MOVE | SpliceFlags::NONBLOCK,
        );
        match spliced {
            Ok(n) => Ok(Spliced::Moved(n)),
            Err(rustix::io::Errno::AGAIN)
                if rustix::io::ioctl_fionread(socket).is_ok_and(|waiting| waiting > 0) =>
            {
                Ok(Spliced::PipeFull)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Lends the pipe to `data`; the pool gets it back once `data` is done with it.
    fn close_into(self, data: &mut PipedData) {
        let lent = Lent {
            pipe: self.pipe,
            pool: self.pool,
        };
        data.push(lent, self.held);
    }
}

/// Receives `len` bytes of payload, the first of which are in `buffer` already (all of it is
/// taken), into pipes if it can.
pub(crate) async fn receive(
    reader: &mut OwnedReadHalf,
    buffer: &mut BytesMut,
    len: usize,
    pool: &Arc<PipePool>,
    budget: &Arc<PipeBudget>,
) -> io::Result<Received> {
    let mut data = PipedData::new();
    let mut pipes_left = len.div_ceil(PIPE_SIZE) + SPARE_PIPES;
    let mut filling: Option<Filling> = None;
    let mut moved = 0;
    let socket = reader.as_ref();
    while moved < len {
        let pipe = match filling.take() {
            Some(pipe) if pipe.room() > 0 => pipe,
            full => {
                if let Some(full) = full {
                    full.close_into(&mut data);
                }
                let next = (pipes_left > 0)
                    .then(|| Filling::new(pool, budget, len - moved))
                    .flatten();
                match next {
                    Some(pipe) => {
                        pipes_left -= 1;
                        pipe
                    }
                    None => return spill(data, buffer),
                }
            }
        };
        let pipe = filling.insert(pipe);
        if !buffer.is_empty() {
            let take = buffer.len().min(pipe.room());
            match rustix::io::write(&pipe.pipe.write_end, buffer.get(..take).unwrap_or_default()) {
                Ok(n) => {
                    let _ = buffer.split_to(n);
                    pipe.held += n;
                    moved += n;
                }
                Err(rustix::io::Errno::INTR) => {}
                // Full by its pages: the next pipe takes over.
                Err(_) => pipe.capacity = pipe.held,
            }
            continue;
        }
        socket.readable().await?;
        match socket.try_io(Interest::READABLE, || pipe.splice_from(socket, len - moved)) {
            Ok(Spliced::Moved(0)) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(Spliced::Moved(n)) => {
                pipe.held += n;
                moved += n;
            }
            Ok(Spliced::PipeFull) => pipe.capacity = pipe.held,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    if let Some(pipe) = filling {
        pipe.close_into(&mut data);
    }
    Ok(Received::Piped(data))
}

/// Gives up on pipes: what they hold comes back in memory, followed by what is left of
/// `buffer`.
fn spill(mut data: PipedData, buffer: &mut BytesMut) -> io::Result<Received> {
    let mut bytes = Vec::new();
    data.read_into(&mut bytes)
        .map_err(|e| io::Error::other(e.to_string()))?;
    bytes.extend_from_slice(buffer);
    buffer.clear();
    Ok(Received::InMemory(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_beyond_the_budget_are_refused_until_one_is_done() {
        let budget = PipeBudget::new(2);
        let pool = Arc::new(PipePool::default());
        let first = Filling::new(&pool, &budget, 1000).unwrap();
        let second = Filling::new(&pool, &budget, 1000).unwrap();
        assert!(Filling::new(&pool, &budget, 1000).is_none());
        let mut data = PipedData::new();
        first.close_into(&mut data);
        assert!(
            Filling::new(&pool, &budget, 1000).is_none(),
            "held with its data"
        );
        drop(data);
        // The drained pipe went back to the pool with its place.
        let third = Filling::new(&pool, &budget, 1000).unwrap();
        drop((second, third));
        assert_eq!(budget.left.load(Ordering::Acquire), 2);
    }

    /// `bytes` written into a pipe of `pool`, lent to a payload.
    fn lent(pool: &Arc<PipePool>, budget: &Arc<PipeBudget>, bytes: &[u8]) -> PipedData {
        let mut filling = Filling::new(pool, budget, 64 * 1024).unwrap();
        assert_eq!(
            rustix::io::write(&filling.pipe.write_end, bytes),
            Ok(bytes.len())
        );
        filling.held = bytes.len();
        let mut data = PipedData::new();
        filling.close_into(&mut data);
        data
    }

    #[test]
    fn only_drained_pipes_are_kept_for_the_next_payload() {
        let budget = PipeBudget::new(8);
        let pool = Arc::new(PipePool::default());
        // Drained: kept, and the next payload gets the same pipe, empty.
        let mut data = lent(&pool, &budget, b"first");
        let mut read = Vec::new();
        data.read_into(&mut read).unwrap();
        drop(data);
        assert_eq!(pool.kept.lock().len(), 1);
        let mut data = lent(&pool, &budget, b"second");
        assert_eq!(pool.kept.lock().len(), 0, "taken from the pool");
        let mut read = Vec::new();
        data.read_into(&mut read).unwrap();
        assert_eq!(read, b"second");
        drop(data);
        // Half drained (a WRITE that failed part-way) or not drained at all: closed, its
        // place given back.
        for taken in [3, 0] {
            let data = lent(&pool, &budget, b"failed");
            let (fd, _) = data.pipes().next().unwrap();
            let mut part = vec![0; taken];
            assert_eq!(rustix::io::read(fd, &mut part), Ok(taken));
            drop(data);
            assert_eq!(pool.kept.lock().len(), 0, "{taken}");
            assert_eq!(budget.left.load(Ordering::Acquire), 8, "{taken}");
        }
    }

    #[test]
    fn a_connection_keeps_a_bounded_number_of_pipes() {
        let budget = PipeBudget::new(2 * PIPES_KEPT);
        let pool = Arc::new(PipePool::default());
        let payloads: Vec<_> = (0..PIPES_KEPT + 3)
            .map(|_| lent(&pool, &budget, b""))
            .collect();
        drop(payloads);
        assert_eq!(pool.kept.lock().len(), PIPES_KEPT);
        assert_eq!(budget.left.load(Ordering::Acquire), PIPES_KEPT);
        drop(pool);
        assert_eq!(budget.left.load(Ordering::Acquire), 2 * PIPES_KEPT);
    }
}
