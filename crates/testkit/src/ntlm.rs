//! The NTLM client, which lives in `smb3d_client` so that the async client and these tests
//! share one implementation.

pub use smb3d_client::ntlm::*;
