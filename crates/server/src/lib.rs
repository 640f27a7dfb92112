//! The smb3d protocol core. No sockets: the transport hands it frames ([`Connection::on_frame`])
//! and takes frames back through a [`connection::FrameSink`].
#![forbid(unsafe_code)]

pub mod admin;
mod allocation;
pub mod audit;
mod blocking;
pub mod connection;
pub mod credits;
mod eas;
mod encryption;
mod fileinfo;
mod files;
mod handlers;
mod identity;
mod locks;
pub mod metrics;
pub mod names;
mod open;
mod pending;
mod pipes;
mod response;
mod security;
mod server;
mod session;
pub mod share;
mod shortname;
mod status_map;
mod streams;
mod write_time;

pub use connection::Connection;
pub use server::{EncryptionPolicy, Server, Settings};
pub use status_map::vfs_status;
