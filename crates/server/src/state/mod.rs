//! The server's state, as MS-SMB2 3.3.1 and MS-FSA 2.1.1 describe it: the server and its
//! shares, connections with their sessions, credit windows and waiting requests, sessions with
//! their tree connects and opens, open files with their share modes, oplocks and leases,
//! byte-range locks, change notifications, and durable and persistent opens; and the changes
//! to it that several commands make (closing an open, ending a session). It sits on `fs`,
//! `security` and the crate root, and knows no request or handler: the layers above
//! (`request`, `handlers`, `pipeline`, `admin`) work on it.

pub(crate) mod allocation;
pub(crate) mod app_instance;
pub mod audit;
pub(crate) mod caching;
pub(crate) mod cluster_locks;
pub(crate) mod cluster_notify;
pub(crate) mod cluster_opens;
pub mod connection;
pub(crate) mod dir_leases;
pub(crate) mod domain_names;
pub(crate) mod durable;
pub(crate) mod encryption;
pub(crate) mod files;
pub mod homes;
pub(crate) mod host_changes;
pub(crate) mod kernel_leases;
pub(crate) mod locks;
pub mod metrics;
pub(crate) mod notify;
pub(crate) mod open;
pub(crate) mod persistent;
pub(crate) mod pipes;
pub(crate) mod server;
pub(crate) mod session;
pub mod share;
pub mod store;
