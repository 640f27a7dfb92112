//! The smb3d protocol core. No sockets: the transport hands it frames and takes frames back.
#![forbid(unsafe_code)]

pub mod credits;
pub mod names;
