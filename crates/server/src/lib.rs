//! The smb3d protocol core. No sockets: the transport hands it frames ([`Connection::on_frame`])
//! and takes frames back through a [`connection::FrameSink`].
#![forbid(unsafe_code)]
// Network-reachable code must not panic (issue 8); tests may.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod address_slots;
pub mod admin;
mod allocation;
pub mod audit;
mod blocking;
mod caching;
mod conn_limits;
pub mod connection;
pub mod credits;
mod dir_leases;
mod durable;
mod encryption;
pub mod escape;
mod file_tail;
mod files;
mod fs;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod handlers;
mod host_changes;
mod identity;
pub mod limits;
mod locks;
pub mod metrics;
mod notify;
mod open;
pub mod panic_guard;
mod pending;
mod persistent;
pub mod piped_write;
mod pipes;
mod response;
mod scheduling;
mod security;
mod server;
mod session;
pub mod share;
mod status_map;
mod throttle;

pub use connection::Connection;
pub use fs::names;
pub use limits::{ClientKey, Limit, Limits};
pub use server::{EncryptionPolicy, Server, Settings};
pub use status_map::vfs_status;
