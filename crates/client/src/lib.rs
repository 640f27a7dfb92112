//! A small async SMB2/SMB3 client on smb3d's own crates (the PDU codecs of `smb3d_smb2`, the
//! signing, encryption and key derivation of `smb3d_crypto`, NTLM from `smb3d_auth`), for tests,
//! fuzz seeds and the load generator of `bench/load`.
//!
//! A [`Connection`] is one TCP connection split into a writer task and a reader task: callers
//! build requests (alone or compounded), take credits for them, sign or encrypt them on their own
//! task and hand the frame to the writer; the reader checks each response (framing, signature or
//! decryption, MessageId) and wakes the caller waiting for it, so that any number of requests, up
//! to the credits the server grants, are in flight at once. [`Session`] and [`Tree`] carry the
//! ids and keys of a logon and a tree connect and offer the operations.
//!
//! Every response goes through the `smb3d_smb2` decoders; a malformed, unsigned, badly signed or
//! unexpected response is an [`Error`], never a panic.
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

mod conn;
mod error;
pub mod ntlm;
mod session;
mod tree;

pub use conn::{Connection, Negotiated, Response};
pub use error::{Error, Result};
pub use session::{ClientConfig, Protection, Session};
pub use tree::{
    Compound, DirEntryNames, FILE_NAMES_INFORMATION, Open, OpenSpec, ReadData, Tree,
    query_info_output,
};
