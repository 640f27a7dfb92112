//! Previous versions of a share: its snapshots are directories named by @GMT tokens in
//! [`SNAPSHOT_DIR`] under its root (copies, bind mounts or btrfs snapshots of the share as it
//! was), listed for FSCTL_SRV_ENUMERATE_SNAPSHOTS (MS-SMB2 3.3.5.15.1) and opened as shares of
//! their own for a CREATE with a TWrp context or an @GMT path component (MS-SMB2 3.3.5.9.8), so
//! that nothing opened through one reaches outside it.

use std::sync::Arc;

use smb3d_dtyp::NtStatus;
use smb3d_smb2::snapshot::GmtToken;
use smb3d_vfs::{Access, Disposition, FileType, Kind, OpenRequest, Vfs, VfsPath};

use crate::status_map::VfsResultExt;

/// The directory of a share's snapshots, below its root.
pub const SNAPSHOT_DIR: &str = ".snapshots";

/// The share's snapshots, newest first: the directories in [`SNAPSHOT_DIR`] whose names are
/// @GMT tokens (anything else there is not a snapshot). None when the directory is missing.
pub(crate) fn list(vfs: &dyn Vfs) -> Result<Vec<GmtToken>, NtStatus> {
    let dir =
        VfsPath::from_components([SNAPSHOT_DIR]).map_err(|_| NtStatus::OBJECT_NAME_NOT_FOUND)?;
    let request = OpenRequest {
        access: Access::Read,
        disposition: Disposition::Open,
        kind: Kind::Directory,
        create_mode: 0,
    };
    let opened = match vfs.open(&dir, &request) {
        Ok(opened) => opened,
        Err(smb3d_vfs::VfsError::NotFound) => return Ok(Vec::new()),
        Err(e) => return Err(crate::status_map::vfs_status(&e)),
    };
    let entries = opened.file.read_dir().status()?;
    let mut tokens: Vec<GmtToken> = entries
        .iter()
        .filter(|e| e.file_type == FileType::Directory)
        .filter_map(|e| GmtToken::parse(&e.name))
        .collect();
    tokens.sort_unstable_by(|a, b| b.cmp(a));
    tokens.dedup();
    Ok(tokens)
}

/// The snapshot `token` names, as a share of its own; a snapshot the share does not have is
/// STATUS_OBJECT_NAME_NOT_FOUND (MS-SMB2 3.3.5.9.8).
pub(crate) fn open(vfs: &dyn Vfs, token: GmtToken) -> Result<Arc<dyn Vfs>, NtStatus> {
    let name = token.to_string();
    let dir = VfsPath::from_components([SNAPSHOT_DIR, name.as_str()])
        .map_err(|_| NtStatus::OBJECT_NAME_NOT_FOUND)?;
    vfs.subtree(&dir)
        .map_err(|_| NtStatus::OBJECT_NAME_NOT_FOUND)
}

/// Takes the first @GMT token out of a path's components (`dir\@GMT-...\file` is `dir\file`
/// as of that snapshot, as Windows and Samba read it).
pub(crate) fn take_token(components: &mut Vec<String>) -> Option<GmtToken> {
    let (at, token) = components
        .iter()
        .enumerate()
        .find_map(|(at, c)| GmtToken::parse(c).map(|t| (at, t)))?;
    components.remove(at);
    Some(token)
}
