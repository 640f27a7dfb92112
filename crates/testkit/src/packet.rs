//! Building request PDUs and compounds, and reading the responses back (MS-SMB2 2.2.1,
//! 3.2.4.1.4). Bodies are written with the `smb3d_smb2` encoders or given as raw bytes, so a
//! test can send well-formed and malformed requests alike.

use smb3d_dtyp::NtStatus;
use smb3d_smb2::Command;
use smb3d_smb2::compound;
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::header::{Header, HeaderFlags, SMB2_HEADER_LEN};
use smb3d_smb2::transform::TRANSFORM_HEADER_LEN;
use smb3d_wire::Writer;

/// A request body written by an `smb3d_smb2` encoder, whose offsets count from the header
/// start (the encoders' convention).
pub fn body(encode: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
    let mut buf = vec![0u8; SMB2_HEADER_LEN];
    encode(&mut Writer::with_base(&mut buf, 0));
    buf.split_off(SMB2_HEADER_LEN)
}

/// A request header with the fields a test usually sets; the rest are zero.
pub fn request_header(command: Command, message_id: u64, session_id: u64, tree_id: u32) -> Header {
    Header {
        credit_charge: 1,
        command,
        credits: 64,
        message_id,
        session_id,
        tree_id,
        ..Header::default()
    }
}

/// One PDU: the header (its NextCommand as given) and the body.
pub fn pdu(header: &Header, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SMB2_HEADER_LEN + body.len());
    out.extend_from_slice(&header.to_bytes());
    out.extend_from_slice(body);
    out
}

/// PDUs chained into one compound message: each but the last padded to 8 bytes with its
/// NextCommand pointing past the padding.
pub fn chain(pdus: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    let last = pdus.len().saturating_sub(1);
    for (i, p) in pdus.iter().enumerate() {
        let start = out.len();
        out.extend_from_slice(p);
        if i < last {
            compound::pad_and_link(&mut out, start);
        }
    }
    out
}

/// Where the FileId lies in the body of a request of `command`, for the commands that name an
/// open (MS-SMB2 2.2.14-2.2.39).
pub fn file_id_offset(command: Command) -> Option<usize> {
    Some(match command {
        Command::CLOSE
        | Command::FLUSH
        | Command::LOCK
        | Command::IOCTL
        | Command::QUERY_DIRECTORY
        | Command::CHANGE_NOTIFY
        | Command::OPLOCK_BREAK => 8,
        Command::READ | Command::WRITE | Command::SET_INFO => 16,
        Command::QUERY_INFO => 24,
        _ => return None,
    })
}

/// Writes `file_id` over the FileId of a request body of `command`; false if the command has
/// none or the body is too short.
pub fn patch_file_id(command: Command, body: &mut [u8], file_id: FileId) -> bool {
    let Some(at) = file_id_offset(command) else {
        return false;
    };
    let Some(field) = body.get_mut(at..at + 16) else {
        return false;
    };
    let (persistent, volatile) = field.split_at_mut(8);
    persistent.copy_from_slice(&file_id.persistent.to_le_bytes());
    volatile.copy_from_slice(&file_id.volatile.to_le_bytes());
    true
}

/// One response read back from a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The decoded header.
    pub header: Header,
    /// The PDU from its header to the next (padding included).
    pub pdu: Vec<u8>,
    /// Whether it came inside a transform header (read as the no-security provider leaves it:
    /// in the clear after the 52-byte header).
    pub sealed: bool,
}

impl Response {
    /// The response status.
    pub fn status(&self) -> NtStatus {
        self.header.status
    }

    /// The body after the 64-byte header.
    pub fn body(&self) -> &[u8] {
        self.pdu.get(SMB2_HEADER_LEN..).unwrap_or_default()
    }
}

/// Why a frame from the server could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreadable;

/// The responses in a frame the server sent. Frames sealed with a real cipher cannot be read
/// and are an error; so is anything that is not a well-formed chain of SMB2 responses.
pub fn responses(frame: &[u8]) -> Result<Vec<Response>, Unreadable> {
    let (message, sealed) = match frame.get(..4) {
        Some([0xFD, b'S', b'M', b'B']) => {
            (frame.get(TRANSFORM_HEADER_LEN..).ok_or(Unreadable)?, true)
        }
        _ => (frame, false),
    };
    let mut out = Vec::new();
    for item in compound::split(message) {
        let (header, pdu) = item.map_err(|_| Unreadable)?;
        if !header.flags.contains(HeaderFlags::SERVER_TO_REDIR) {
            return Err(Unreadable);
        }
        out.push(Response {
            header,
            pdu: pdu.to_vec(),
            sealed,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_pads_and_links() {
        let a = pdu(&request_header(Command::ECHO, 1, 2, 3), &[4, 0, 0, 0]);
        let b = pdu(&request_header(Command::ECHO, 2, 2, 3), &[4, 0, 0, 0]);
        let chained = chain(&[a.clone(), b.clone()]);
        // 68 bytes padded to 72, NextCommand 72; the last PDU is not padded.
        assert_eq!(chained.len(), 72 + 68);
        assert_eq!(&chained[20..24], &72u32.to_le_bytes());
        assert_eq!(&chained[68..72], &[0, 0, 0, 0]);
        assert_eq!(&chained[72..], &b[..]);
        assert_eq!(&chained[24..68], &a[24..]);
    }

    #[test]
    fn file_id_is_patched_where_the_command_keeps_it() {
        let mut body = vec![0u8; 48];
        let id = FileId {
            persistent: 0x0102_0304_0506_0708,
            volatile: 0x1112_1314_1516_1718,
        };
        assert!(patch_file_id(Command::READ, &mut body, id));
        assert_eq!(&body[16..24], &id.persistent.to_le_bytes());
        assert_eq!(&body[24..32], &id.volatile.to_le_bytes());
        assert!(!patch_file_id(Command::ECHO, &mut body, id));
        assert!(!patch_file_id(Command::QUERY_INFO, &mut [0u8; 30], id));
    }

    #[test]
    fn responses_read_back_a_compound() {
        let mut h = request_header(Command::ECHO, 7, 9, 1);
        h.flags = HeaderFlags::SERVER_TO_REDIR;
        let frame = chain(&[pdu(&h, &[4, 0, 0, 0]), pdu(&h, &[4, 0, 0, 0])]);
        let rs = responses(&frame).unwrap();
        assert_eq!(rs.len(), 2);
        assert_eq!(rs[0].header.message_id, 7);
        assert_eq!(rs[1].body(), &[4, 0, 0, 0]);
        assert!(responses(&pdu(&request_header(Command::ECHO, 1, 0, 0), &[])).is_err());
    }
}
