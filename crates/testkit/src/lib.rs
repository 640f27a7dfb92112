//! Test and fuzzing support for smb3d, with no sockets: an in-memory server that takes frames
//! and returns the frames it answers ([`harness`]), a builder for request PDUs and compounds
//! ([`packet`]), a minimal NTLM client that answers a live CHALLENGE ([`ntlm`]), and the
//! interpreter of the stateful `server` fuzz target ([`script`]), a client for scenario
//! tests that look at every answer ([`client`]), and a clock tests move by hand ([`clock`]).
//!
//! Fuzz input flows through [`script`], so the crate follows the parser crates' rules: no
//! `unsafe`, no panics, no unchecked indexing outside tests.
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

pub mod client;
pub mod clock;
pub mod harness;
pub mod ntlm;
pub mod packet;
pub mod script;
pub mod seeds;
