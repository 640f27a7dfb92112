//! Checked reader and writer for SMB wire formats.
//!
//! Every length and offset a peer sends is resolved here, by one method that names the field in
//! its error, so that no decoder elsewhere does offset arithmetic. Nothing in this crate panics on
//! input, allocates in proportion to an unchecked length, or uses `unsafe`.
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

mod codec;
mod error;
mod macros;
mod reader;
mod types;
mod utf16;
mod writer;

pub use codec::Codec;
pub use error::{DecodeError, DecodeErrorKind, Result};
pub use reader::Reader;
pub use types::{FileTime, FileTimes, Guid};
pub use utf16::{decode_utf16le, encode_utf16le, utf16le_len};
pub use writer::{Slot16, Slot32, Writer};
