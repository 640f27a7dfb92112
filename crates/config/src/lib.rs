//! The smb3d configuration file: TOML, every key known, every error reported with the file, line
//! and reason so that a sysadmin can fix it without guessing.
#![forbid(unsafe_code)]

mod error;
mod model;

pub use error::ConfigError;
pub use model::{
    CipherName, Config, DEFAULT_CONFIG_PATH, DEFAULT_PORT, Dialect, EncryptPolicy, ServerConfig,
    ShareConfig, SigningPolicy,
};
