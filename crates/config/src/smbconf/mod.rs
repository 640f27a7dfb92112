//! Converting a Samba `smb.conf` into smb3d's configuration (`smb3d config import-smb-conf`).

pub(crate) mod import;
mod parse;

pub use import::{Imported, import};
pub use parse::{Param, Section, SmbConf, Warning, normalize_key, parse_bool};
