//! Large plain WRITEs whose data never enters user space: the transport moves it from the
//! socket into a pipe (`splice`, which passes the socket's pages on without copying them) and
//! the WRITE handler moves it from the pipe into the file, where the kernel copies it into the
//! page cache. A WRITE read into memory is copied twice, out of the socket and into the page
//! cache, which made a plain write cost as much server CPU per byte as Samba's.
//!
//! Only a frame holding one unsigned WRITE whose data runs from the end of its fixed part to
//! the end of the frame qualifies: a signature or an encrypted frame must be checked over the
//! data in memory, and a compound needs every request's bytes. Anything the connection finds
//! unfit for it after all (a WRITE on a named pipe) has its data read into memory and goes
//! the usual way.

use std::sync::Arc;

use smb3d_smb2::Command;
use smb3d_smb2::header::{Header, HeaderFlags, SMB2_HEADER_LEN};
use smb3d_smb2::write::WriteRequest;
use smb3d_vfs::PipedData;

use crate::state::connection::{Connection, Disconnect};

/// WRITE frames from this length on may leave their data in a pipe; for shorter ones the
/// copy costs less than the pipe's system calls.
pub const MIN_FRAME_LEN: usize = 128 * 1024;

/// The bytes of a WRITE frame before its data: the SMB2 header and the request's fixed part.
pub const HEAD_LEN: usize = SMB2_HEADER_LEN + 48;

/// Whether a frame of `frame_len` bytes beginning with `head` is a lone, unsigned WRITE whose
/// `frame_len - HEAD_LEN` bytes of data follow its fixed part to the end of the frame, so that
/// the data may wait in a pipe for [`Connection::on_piped_write`].
pub fn may_pipe(head: &[u8], frame_len: usize) -> bool {
    let Some(head) = head.get(..HEAD_LEN) else {
        return false;
    };
    let Ok(hdr) = Header::decode(head) else {
        return false;
    };
    hdr.command == Command::WRITE
        && hdr.next_command == 0
        && !hdr.flags.contains(HeaderFlags::SIGNED)
        && frame_len >= MIN_FRAME_LEN
        && WriteRequest::decode_without_data(head, frame_len - HEAD_LEN)
            .is_ok_and(|req| req.channel_info.is_empty())
}

impl Connection {
    /// Handles a WRITE frame whose first [`HEAD_LEN`] bytes are `head` (without the Direct-TCP
    /// prefix) and whose data waits in `data`, as [`may_pipe`] allowed. An error means the
    /// connection must be closed, as for [`Connection::on_frame`].
    pub fn on_piped_write(
        self: &Arc<Self>,
        mut head: Vec<u8>,
        mut data: PipedData,
    ) -> Result<(), Disconnect> {
        if may_pipe(&head, head.len() + data.len()) && self.writes_to_a_disk(&head) {
            let inflight = self.watchdog.admit(head.len() + data.len());
            return self.on_smb2(head, 0, None, inflight, Some(data));
        }
        data.read_into(&mut head)
            .map_err(|_| Disconnect("a WRITE's data was lost"))?;
        self.on_frame(head)
    }

    /// Whether the WRITE in `head` names a tree connect of a disk share, whose handler takes
    /// its data from a pipe; named pipes take theirs from memory.
    fn writes_to_a_disk(&self, head: &[u8]) -> bool {
        let Ok(hdr) = Header::decode(head) else {
            return false;
        };
        self.session(hdr.session_id).is_some_and(|session| {
            session
                .state
                .lock()
                .trees
                .get(&hdr.tree_id)
                .is_some_and(|tree| !tree.share.is_ipc())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_smb2::file_id::FileId;
    use smb3d_smb2::read::Channel;
    use smb3d_smb2::write::WriteFlags;
    use smb3d_wire::Writer;

    /// A WRITE frame's head announcing `len` bytes of data, with `flags` in its header.
    fn head(flags: HeaderFlags, len: usize, next_command: u32) -> Vec<u8> {
        let mut frame = Vec::new();
        let mut w = Writer::new(&mut frame);
        Header {
            command: Command::WRITE,
            flags,
            next_command,
            ..Header::default()
        }
        .encode(&mut w);
        let data = vec![0u8; len];
        WriteRequest {
            offset: 0,
            file_id: FileId::default(),
            channel: Channel(0),
            remaining_bytes: 0,
            flags: WriteFlags(0),
            data: &data,
            data_range: 0..0,
            channel_info: &[],
        }
        .encode(&mut w);
        frame.truncate(HEAD_LEN);
        frame
    }

    #[test]
    fn lone_unsigned_large_writes_qualify() {
        let len = MIN_FRAME_LEN;
        let data_len = len - HEAD_LEN;
        assert!(may_pipe(&head(HeaderFlags(0), data_len, 0), len));
        // Too short a frame, a signed one, a compound, a length that disagrees.
        assert!(!may_pipe(&head(HeaderFlags(0), 100, 0), HEAD_LEN + 100));
        assert!(!may_pipe(&head(HeaderFlags::SIGNED, data_len, 0), len));
        assert!(!may_pipe(&head(HeaderFlags(0), data_len, 0x80), len));
        assert!(!may_pipe(&head(HeaderFlags(0), data_len, 0), len + 1));
        assert!(!may_pipe(
            &head(HeaderFlags(0), data_len, 0)[..HEAD_LEN - 1],
            len
        ));
    }
}
