//! MS-SMB2 protocol data units, sans-IO.
//!
//! One module per command, plus the header, Direct-TCP framing, compound splitting, the SMB1
//! multi-protocol negotiate and the transform (encryption/compression) headers. Nothing here
//! does I/O, keeps state between messages, or interprets semantics: decoders check structure
//! (sizes, offsets, counts against the bytes present) and hand the values to the server, which
//! decides what they mean.
//!
//! # Conventions
//!
//! * **Requests** decode from the whole PDU starting at its SMB2 header:
//!   `XRequest::decode(pdu: &'a [u8]) -> Result<XRequest<'a>, DecodeError>`. Offsets inside the
//!   body are relative to the header start, as on the wire, and may not point into the header.
//!   Requests also have `encode(&self, w)` for test clients and fuzz seeds.
//! * **Responses** encode their body after an already written header:
//!   `XResponse::encode(&self, w)` with `w.offset() == 64` on entry (the writer's base is the
//!   header start). Responses also have `decode(pdu)` for test clients.
//! * **Payloads the server produces** (READ data, QUERY_INFO, QUERY_DIRECTORY, CHANGE_NOTIFY and
//!   IOCTL output) are written straight into the writer, never through an intermediate buffer:
//!   `XResponse::begin(w, ..) -> PendingOutput` writes the fixed part with the right offset
//!   and a placeholder length; the caller appends the payload; `XResponse::finish(w, pending)`
//!   patches the length from what was written. READ also has
//!   [`read::ReadResponse::encode_fixed`] for when the length is known beforehand.
//! * **Borrowing**: names the server validates itself (CREATE, QUERY_DIRECTORY pattern) stay raw
//!   UTF-16LE `&[u8]`; WRITE data is a borrowed slice plus its byte range in the PDU; lists
//!   (create contexts, lock elements) are validated once and then iterated without allocating.
//! * **Faithful decoding**: unknown enum values and flag bits are kept; values the protocol
//!   allows structurally but the server must refuse (a zero dialect count, a lock count of 0)
//!   decode, so that the server answers with the status the specification prescribes. Wrong
//!   StructureSize, offsets outside the message or inside the header, and counts larger than
//!   the bytes present are a [`DecodeError`].
//! * Reserved fields are written as zero and ignored on read.
//! * Encoders trust the caller for lengths: a buffer longer than its length field can express
//!   is written with a saturated length. The server bounds every payload by the negotiated
//!   maxima, far below those limits.
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod aapl;
pub mod cancel;
pub mod change_notify;
pub mod close;
pub mod compound;
pub mod create;
pub mod echo;
pub mod error;
pub mod file_id;
pub mod flush;
pub mod framing;
pub mod fsctl;
pub mod header;
pub mod ioctl;
pub mod lock;
pub mod logoff;
pub mod negotiate;
pub mod oplock_break;
pub mod output;
pub mod posix;
pub mod query_directory;
pub mod query_info;
pub mod read;
pub mod session_setup;
pub mod set_info;
pub mod smb1;
pub mod snapshot;
pub mod transform;
pub mod tree_connect;
pub mod tree_disconnect;

pub mod write;

mod util;

#[cfg(test)]
mod edge_tests;
#[cfg(test)]
mod testutil;

pub use file_id::FileId;
pub use header::{Command, Header, HeaderFlags, SMB2_HEADER_LEN};
pub use output::PendingOutput;
pub use smb3d_wire::{DecodeError, DecodeErrorKind};
