//! MS-DTYP data types shared by the protocol crates.
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

mod access;
mod status;

pub use access::AccessMask;
pub use status::NtStatus;
