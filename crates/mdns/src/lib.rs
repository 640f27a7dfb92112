//! mDNS/DNS-SD responder for smb3d (RFC 6762, RFC 6763): advertises `_smb._tcp` so that macOS
//! Finder (and Linux file managers) list the server, and `_device-info._tcp` with a `model=`
//! that picks the icon. A sans-IO core ([`dns`], [`Responder`]) and a small tokio runtime
//! ([`Advertiser`]).
// Only `sys` may use unsafe code: socket options and control messages the safe APIs lack.
#![deny(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

pub mod dns;
mod link;
mod responder;
mod runtime;
mod sys;

pub use link::Subnet;
pub use responder::{Destination, MDNS_PORT, Responder, ServiceInfo, Transmit};
pub use runtime::{Advertiser, Interface, host_label, interfaces, published_addresses};
