//! The smb3d protocol core. No sockets: the transport hands it frames ([`Connection::on_frame`])
//! and takes frames back through a [`connection::FrameSink`].
//!
//! One folder per layer, each importing only from those below it (docs/design.md, "Layers of
//! the server"; `tests/layers.rs` checks it): the modules at this root, `security`, `fs`,
//! `state`, `request`, `handlers`, `pipeline` and `admin`. This file only declares them and
//! re-exports the public API where it has always been.
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
// A function reads as the steps of the spec section it follows (issue 17): over 120 lines of
// code (clippy.toml) it has grown a step that wants a name.
#![cfg_attr(not(test), deny(clippy::too_many_lines))]

pub mod address_slots;
pub mod admin;
mod blocking;
pub mod clock;
pub mod escape;
mod fs;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod handlers;
pub mod hosts;
mod identity;
pub mod limits;
pub mod panic_guard;
mod pipeline;
mod request;
mod security;
mod state;
mod status_map;
mod tasks;
mod throttle;
mod write_pace;

pub use clock::{Clock, SystemClock};
pub use fs::apple_convert::Conversion as AppleConversion;
pub use fs::resource_fork::SIDECAR_PREFIX;
pub use fs::snapshots::SNAPSHOT_DIR;
pub use fs::{names, recycle};
pub use limits::{ClientKey, Limit, Limits};
pub use pipeline::piped_write;
pub use smb3d_state::{ClusterDialect, ClusterLocks, ClusterNotify, ClusterOpens};
pub use state::connection::{self, Connection, credits};
pub use state::server::{EncryptionPolicy, Server, Settings};
pub use state::store::{DiskStore, MemoryStore, StateStore};
pub use state::{audit, homes, metrics, share, store};
pub use status_map::vfs_status;
