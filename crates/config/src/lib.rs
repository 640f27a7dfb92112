//! The smb3d configuration file: TOML, every key known, every error reported with the file, line
//! and reason so that a sysadmin can fix it without guessing. Also environment-variable overrides
//! for containers and the conversion of a Samba `smb.conf`.
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

mod auth;
mod cluster;
mod env;
mod error;
mod faults;
mod homes;
mod hosts;
mod idmap;
mod limits;
mod model;
mod render;
pub mod smbconf;

pub use auth::{AuthConfig, NetlogonConfig};
pub use cluster::{
    ClusterConfig, DEFAULT_NODE_TTL, DEFAULT_WITNESS_PORT, MAX_NODE_TTL, MIN_NODE_TTL, host_name,
};
pub use env::{ENV_PREFIX, ENV_SHARE_PREFIX, is_override_variable};
pub use error::ConfigError;
pub use faults::{FaultErrno, FaultOpName, FaultRuleConfig, MAX_FAULT_DELAY_MS};
pub use homes::{DEFAULT_HOME_MODE, HOMES, HomeOwner, home_path, is_homes};
pub use hosts::HostPattern;
pub use idmap::{IdmapConfig, IdmapDomain};
pub use limits::{Bytes, Interval, LimitsConfig};
pub use model::{
    CipherName, Config, DEFAULT_ADMIN_SOCKET, DEFAULT_CONFIG_PATH, DEFAULT_CREATE_MASK,
    DEFAULT_DIRECTORY_MASK, DEFAULT_MDNS_MODEL, DEFAULT_METRICS_PORT, DEFAULT_PORT,
    DEFAULT_STATE_DIR, Dialect, EncryptPolicy, InheritOwner, LogFormat, MAX_ALLOCATION_ROUNDUP,
    MAX_IO_SIZE, MAX_SOCKET_PATH, MIN_IO_SIZE, MapToGuest, ServerConfig, ShareConfig,
    SigningPolicy, SnapshotSource, admin_socket_in, parse_listen_address,
};
