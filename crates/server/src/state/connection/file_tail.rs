//! READ data that leaves straight from the file: a plain (unsigned, unencrypted) READ response
//! carries its header in the frame buffer and names the file range that follows it, which
//! the transport hands to the kernel (`sendfile`) instead of copying it through user space.

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use crate::state::open::Open;

/// File data that follows a frame's bytes on the wire.
pub struct FileTail {
    /// Keeps the descriptor open until the data has gone out, even if the client closes the
    /// handle meanwhile.
    open: Arc<Open>,
    offset: u64,
    len: usize,
}

impl FileTail {
    pub(crate) fn new(open: Arc<Open>, offset: u64, len: usize) -> Self {
        Self { open, offset, len }
    }

    /// The descriptor to send from, if the file has one.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.open.file.data_fd()
    }

    /// Whether all the data is in the page cache, so that sending it waits for no device.
    pub fn is_cached(&self) -> bool {
        self.open.file.data_cached(self.offset, self.len)
    }

    /// Where the data starts in the file.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// How many bytes the response promised. If the file shrank since, the sender makes up
    /// the difference with zeros, as a read that raced with a truncation may return.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends the data to `buf` by reading it, zero-filled past the end of the file, for
    /// senders that cannot send from a descriptor and for frames that must be signed or
    /// encrypted after all.
    pub fn read_into(&self, buf: &mut Vec<u8>) -> io::Result<()> {
        let start = buf.len();
        let read = self
            .open
            .file
            .read_append(buf, self.len, self.offset)
            .map_err(|e| io::Error::other(e.to_string()))?;
        buf.resize(start + self.len.max(read), 0);
        Ok(())
    }
}
