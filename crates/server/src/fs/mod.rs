//! What Windows keeps for each file, kept on a POSIX file system through the VFS as Samba keeps
//! it: DOS attributes, times, sizes and reparse tags (`fileinfo`), named streams, extended
//! attributes, LastWriteTime while a file is open, quotas, 8.3 names, the space of Time Machine
//! backups, what the SMB3 POSIX extensions report, and client names checked before any file system sees them, with the statuses of
//! paths the VFS cannot take. Knows no session or open: it sits on `security` (the xattrs that
//! hold descriptors) and under `state`.

pub(crate) mod apple;
pub(crate) mod apple_convert;
pub(crate) mod apple_double;
pub(crate) mod eas;
pub(crate) mod fileinfo;
pub mod names;
pub(crate) mod path_status;
pub(crate) mod posix_info;
pub(crate) mod quota;
pub mod recycle;
pub(crate) mod resource_fork;
pub(crate) mod shortname;
pub(crate) mod snapshots;
pub(crate) mod streams;
pub(crate) mod time_machine;
pub(crate) mod write_time;
