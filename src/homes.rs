//! The `[share.homes]` template made into each user's home share at their first connect: the
//! path for that user, the directory made when `create_home` asks for it, then the share as any
//! other is built.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt, fchown};
use std::path::Path;

use smb3d_config::{Config, HomeOwner, ServerConfig, ShareConfig, home_path, is_homes};
use smb3d_server::homes::{HomeBuilder, HomeOwner as Owner, Homes};
use smb3d_server::share::Share;

use crate::reload::build_share;

/// The home template of a configuration.
pub struct HomeTemplate {
    share: ShareConfig,
    server: ServerConfig,
    /// Whether the homes are served by a cluster node.
    cluster: bool,
}

impl HomeTemplate {
    /// The homes `config` serves, when it has a `[share.homes]`.
    pub fn homes(config: &Config) -> Option<Homes> {
        let (_, share) = config.shares.iter().find(|(name, _)| is_homes(name))?;
        let template = Self {
            share: share.clone(),
            server: config.server.clone(),
            cluster: config.cluster.is_some(),
        };
        let comment = share.comment.clone();
        Some(
            Homes::new(Box::new(template), comment, share.browseable)
                .with_scale_out(share.is_scale_out()),
        )
    }
}

impl HomeBuilder for HomeTemplate {
    fn build(&self, owner: &Owner) -> Result<Share, String> {
        let names = HomeOwner {
            user: &owner.user,
            unix_user: &owner.unix_user,
            group: &owner.group,
            home: &owner.home,
        };
        let path = home_path(self.share.path.get_ref(), &names)?;
        if self.share.create_home {
            make_home(&path, self.share.create_home_mode, owner.uid, owner.gid)
                .map_err(|e| format!("cannot make home {}: {e}", path.display()))?;
        }
        let mut share = self.share.clone();
        *share.path.get_mut() = path;
        // `%S` and `%U` in the user lists are the owner, as in Samba's `valid users = %S`.
        for list in [
            &mut share.valid_users,
            &mut share.read_list,
            &mut share.write_list,
        ] {
            for entry in list.iter_mut() {
                if entry == "%S" || entry == "%U" {
                    entry.clone_from(&owner.user);
                }
            }
        }
        build_share(&owner.user, &share, &self.server, self.cluster)
    }
}

/// Makes the home directory `path` for `uid`:`gid` with `mode` (as pam_mkhomedir does) unless
/// something is there already. Only the last component is made; `mkdir` never follows a
/// symlink there, and the new directory is opened without following one before it is given
/// to its owner.
fn make_home(path: &Path, mode: u32, uid: u32, gid: u32) -> std::io::Result<()> {
    match DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e),
    }
    let dir = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)?;
    fchown(&dir, Some(uid), Some(gid))?;
    // After the owner, so that a setgid bit in `mode` is not cleared by the chown.
    dir.set_permissions(Permissions::from_mode(mode))?;
    tracing::info!(
        uid,
        "made home directory {} with mode {mode:#o}",
        path.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn a_home_is_made_once_and_never_through_a_symlink() {
        let root = std::env::temp_dir().join(format!("smb3d-homes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        // The test's own ids: a chown to them needs no privilege.
        let own = std::fs::metadata("/proc/self").unwrap();
        let uid = (own.uid(), own.gid());
        let home = root.join("alice");
        make_home(&home, 0o750, uid.0, uid.1).unwrap();
        let meta = std::fs::symlink_metadata(&home).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.mode() & 0o7777, 0o750);
        assert_eq!((meta.uid(), meta.gid()), uid);
        // Made already: left as it is.
        std::fs::set_permissions(&home, Permissions::from_mode(0o711)).unwrap();
        make_home(&home, 0o750, uid.0, uid.1).unwrap();
        assert_eq!(std::fs::metadata(&home).unwrap().mode() & 0o7777, 0o711);
        // A symlink where the home would be: nothing is made or changed behind it.
        let target = root.join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::set_permissions(&target, Permissions::from_mode(0o755)).unwrap();
        let link = root.join("mallory");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        make_home(&link, 0o700, uid.0, uid.1).unwrap();
        assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o7777, 0o755);
        // A missing parent is not made.
        assert!(make_home(&root.join("no/such"), 0o700, uid.0, uid.1).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
