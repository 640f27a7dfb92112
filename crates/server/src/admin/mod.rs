//! What an administrator sees and may do while the server runs: a snapshot of the tables and
//! closing a session or an open (`status`: `smb3d status`, `close-session`, `close-file`), and
//! the metrics endpoint's page (`metrics`). Beside the pipeline at the top of the server: it
//! reads and changes the state as requests do, and no module of the crate imports it.

mod metrics;
mod status;

pub use status::{
    ConnectionInfo, Degree, LockInfo, OpenInfo, Protection, SessionInfo, Snapshot, TreeInfo,
    UserInfo, cipher_name, dialect_name, signing_name,
};
