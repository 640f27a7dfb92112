//! Authentication for smb3d: the SPNEGO (RFC 4178, MS-SPNG) and NTLMv2 (MS-NLMP) acceptor that
//! SESSION_SETUP drives, and the smbpasswd-format user database it checks against.
//!
//! Every token a client sends is hostile input: the decoders here check each length and offset
//! against the bytes present, allocate nothing in proportion to a peer-supplied count, and never
//! panic.
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

mod acceptor;
mod der;
pub mod krb5;
pub mod names;
pub mod netlogon;
pub mod ntlm;
pub mod samr;
pub mod spnego;
pub mod userdb;

pub use acceptor::{
    Acceptor, Account, AuthError, Claim, CredentialStore, OsRandom, Principal, RandomSource,
    ServerIdentity, Step,
};
pub use krb5::KerberosService;
pub use spnego::{server_initial_token, server_initial_token_for};
pub use userdb::{UserDb, UserDbError};
