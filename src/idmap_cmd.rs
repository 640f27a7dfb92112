//! `smb3d idmap`: what Unix id an Active Directory SID maps to under `[idmap]`, and back
//! (docs/auth.md). The mapping is arithmetic on the configured ranges, so this answers what
//! the running server, and every node configured alike, computes.

use std::path::Path;

use clap::Subcommand;
use smb3d_dtyp::Sid;

use crate::AnyError;

#[derive(Subcommand)]
pub enum IdmapAction {
    /// The Unix id (the uid of a user, the gid of a group) of a domain SID.
    SidToUid {
        /// The SID, S-1-5-21-a-b-c-RID.
        sid: String,
    },
    /// The domain SID of a Unix id in a domain's range.
    UidToSid {
        /// The uid (or gid).
        uid: u32,
    },
}

pub fn run(action: IdmapAction, config: &Path) -> Result<(), AnyError> {
    let config = crate::config_cmd::load(config)?;
    let idmap = config.idmap.unwrap_or_default();
    match action {
        IdmapAction::SidToUid { sid } => {
            let parsed: Sid = sid.parse()?;
            let id = idmap
                .id_of(&parsed)
                .ok_or_else(|| format!("{sid} is in no [idmap] domain's range"))?;
            println!("{id}");
        }
        IdmapAction::UidToSid { uid } => {
            let sid = idmap
                .sid_of(uid)
                .ok_or_else(|| format!("{uid} is in no [idmap] domain's range"))?;
            println!("{sid}");
        }
    }
    Ok(())
}
