//! Data that waits in pipes instead of memory: the payload of a large plain WRITE, which the
//! transport moves from the socket into pipes without copying it (`splice`), so that a back end
//! with a descriptor can move it on into the file with the one copy into the page cache.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd};

use crate::{VfsError, VfsResult, errno};

/// The read end of a pipe holding a payload's bytes. Its maker decides what dropping it does:
/// the transport takes back a pipe that was drained and closes one that was not.
pub trait PipeReadEnd: AsFd + Send + Sync {}

impl<T: AsFd + Send + Sync> PipeReadEnd for T {}

/// Bytes waiting in pipes, in order. Each pipe holds exactly its promised bytes and no more
/// will come; its read end does not block, so a pipe that holds less fails the read instead of
/// waiting.
#[derive(Default)]
pub struct PipedData {
    pipes: Vec<(Box<dyn PipeReadEnd>, usize)>,
    len: usize,
}

impl std::fmt::Debug for PipedData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipedData")
            .field("pipes", &self.pipes.len())
            .field("len", &self.len)
            .finish()
    }
}

impl PipedData {
    /// No data yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the read end of a pipe holding exactly `len` bytes.
    pub fn push(&mut self, read_end: impl PipeReadEnd + 'static, len: usize) {
        self.pipes.push((Box::new(read_end), len));
        self.len += len;
    }

    /// How many bytes the pipes hold.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the pipes hold nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The pipes in order, each with the bytes it holds.
    pub fn pipes(&self) -> impl Iterator<Item = (BorrowedFd<'_>, usize)> {
        self.pipes.iter().map(|(pipe, len)| (pipe.as_fd(), *len))
    }

    /// Appends the data to `buf`, copying it out of the pipes (for back ends without a
    /// descriptor to splice into). A pipe that holds less than promised is an I/O error.
    pub fn read_into(&mut self, buf: &mut Vec<u8>) -> VfsResult<()> {
        let io_error = |e: std::io::Error| VfsError::Io(e.raw_os_error().unwrap_or(errno::EIO));
        buf.reserve_exact(self.len);
        for (pipe, len) in &self.pipes {
            let start = buf.len();
            File::from(pipe.as_fd().try_clone_to_owned().map_err(io_error)?)
                .take(*len as u64)
                .read_to_end(buf)
                .map_err(io_error)?;
            if buf.len() - start != *len {
                return Err(VfsError::Io(errno::EIO));
            }
        }
        Ok(())
    }
}
