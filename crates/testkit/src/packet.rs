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
