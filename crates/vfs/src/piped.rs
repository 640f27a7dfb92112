//! Data that waits in pipes instead of memory: the payload of a large plain WRITE, which the
//! transport moves from the socket into pipes without copying it (`splice`), so that a back end
//! with a descriptor can move it on into the file with the one copy into the page cache.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::{VfsError, VfsResult, errno};

/// Bytes waiting in pipes, in order; the pipes' write ends are closed.
#[derive(Default)]
pub struct PipedData {
    pipes: Vec<(File, usize)>,
    len: usize,
    /// What lives as long as the pipes (the places they take in their maker's budget).
    held: Vec<Box<dyn Send + Sync>>,
}

impl std::fmt::Debug for PipedData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PipedData")
            .field("pipes", &self.pipes)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl PipedData {
    /// No data yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the read end of a pipe holding exactly `len` bytes, its write end closed.
    pub fn push(&mut self, read_end: OwnedFd, len: usize) {
        self.pipes.push((File::from(read_end), len));
        self.len += len;
    }

    /// Keeps `token` until the data is dropped: the pipes' place in a budget of their maker.
    pub fn hold(&mut self, token: Box<dyn Send + Sync>) {
        self.held.push(token);
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
        buf.reserve_exact(self.len);
        for (pipe, len) in &mut self.pipes {
            let start = buf.len();
            pipe.take(*len as u64)
                .read_to_end(buf)
                .map_err(|e| VfsError::Io(e.raw_os_error().unwrap_or(errno::EIO)))?;
            if buf.len() - start != *len {
                return Err(VfsError::Io(errno::EIO));
            }
        }
        Ok(())
    }
}
