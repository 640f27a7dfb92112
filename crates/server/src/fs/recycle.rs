//! The recycle bin (what Samba's vfs_recycle offers): a deleted file is moved into a repository
//! inside the share instead of being unlinked. Every step is a VFS operation confined to the
//! share, done as the deleting user, so the repository and its directories are theirs and a
//! symlink cannot lead the move out of the share.

use smb3d_fscc::Expression;
use smb3d_vfs::{
    Access, Disposition, FileType, Kind, OpenRequest, Timespec, Vfs, VfsError, VfsPath, VfsResult,
};

/// Names a file gets when its name is taken in the repository, as Samba names them.
const MAX_VERSIONS: u32 = 10_000;

/// A share's recycle bin settings (Samba's `recycle:*` options).
pub struct RecycleBin {
    /// The repository, relative to the share root; `%U` and `%u` stand for the deleting
    /// user's name.
    pub repository: String,
    /// The deleted file keeps the directories it was in, under the repository.
    pub keep_tree: bool,
    /// A name taken in the repository makes "Copy #N of NAME" rather than replacing it.
    pub versions: bool,
    /// The moved file's access time is set to the deletion's.
    pub touch: bool,
    /// Files whose names match are deleted for real.
    pub exclude: Vec<Expression>,
    /// Files in a directory whose name matches are deleted for real.
    pub exclude_dir: Vec<Expression>,
    /// Files whose names match replace their older copy even with `versions`.
    pub no_versions: Vec<Expression>,
    /// Files larger than this are deleted for real (0: no limit).
    pub max_size: u64,
    /// Mode of the directories the bin makes.
    pub directory_mode: u32,
}

/// What became of a file [`RecycleBin::dispose`] was given.
#[derive(Debug, PartialEq, Eq)]
pub enum Disposal {
    /// Moved to this path in the repository.
    Recycled(VfsPath),
    /// Deleted for real.
    Deleted,
}

impl RecycleBin {
    /// Settings with Samba's defaults: `.recycle`, no tree, no versions, mode 0700.
    pub fn new(repository: impl Into<String>) -> Self {
        Self {
            repository: repository.into(),
            keep_tree: false,
            versions: false,
            touch: false,
            exclude: Vec::new(),
            exclude_dir: Vec::new(),
            no_versions: Vec::new(),
            max_size: 0,
            directory_mode: 0o700,
        }
    }

    /// The repository of `user`. `None` where the user's name cannot be one path component
    /// (a `/`, `..` or empty name must not steer where files go).
    pub fn repository_for(&self, user: &str) -> Option<VfsPath> {
        let mut path = VfsPath::root();
        for part in self.repository.split('/').filter(|p| !p.is_empty()) {
            let name = part.replace("%U", user).replace("%u", user);
            path = path.join(&name).ok()?;
        }
        (!path.is_root()).then_some(path)
    }

    /// The part of the repository that is the same for every user: files under it are
    /// deleted for real, whoever's repository they are in.
    fn fixed_root(&self) -> Option<VfsPath> {
        let fixed = self
            .repository
            .split('/')
            .filter(|p| !p.is_empty())
            .take_while(|p| !p.contains('%'));
        VfsPath::from_components(fixed)
            .ok()
            .filter(|p| !p.is_root())
    }

    /// Moves the file at `path` into `repository`, or deletes it for real where the bin does
    /// not take it (excluded, too large, already in a repository) or the move fails,
    /// as Samba purges a file it cannot move.
    pub fn dispose(
        &self,
        vfs: &dyn Vfs,
        repository: &VfsPath,
        path: &VfsPath,
        now: Timespec,
    ) -> VfsResult<Disposal> {
        if self.takes(vfs, repository, path)? {
            match self.move_in(vfs, repository, path, now) {
                Ok(to) => return Ok(Disposal::Recycled(to)),
                Err(e) => tracing::debug!("recycle: cannot move {}, deleting: {e}", path.as_str()),
            }
        }
        vfs.unlink(path)?;
        Ok(Disposal::Deleted)
    }

    /// Whether the bin keeps `path` rather than deleting it.
    fn takes(&self, vfs: &dyn Vfs, repository: &VfsPath, path: &VfsPath) -> VfsResult<bool> {
        let Some((parent, name)) = path.parent_and_name() else {
            return Ok(false);
        };
        let under = |root: &VfsPath| {
            let mut own = root.components();
            let mut theirs = path.components();
            own.all(|c| theirs.next() == Some(c))
        };
        if under(repository) || self.fixed_root().is_some_and(|root| under(&root)) {
            return Ok(false);
        }
        if self.exclude.iter().any(|p| p.matches(name))
            || parent
                .components()
                .any(|dir| self.exclude_dir.iter().any(|p| p.matches(dir)))
        {
            return Ok(false);
        }
        let stat = vfs.stat(path)?;
        Ok(stat.file_type == FileType::File && (self.max_size == 0 || stat.size <= self.max_size))
    }

    fn move_in(
        &self,
        vfs: &dyn Vfs,
        repository: &VfsPath,
        path: &VfsPath,
        now: Timespec,
    ) -> VfsResult<VfsPath> {
        let (parent, name) = path.parent_and_name().ok_or(VfsError::NotFound)?;
        let mut dir = VfsPath::root();
        let tree = self.keep_tree.then(|| parent.components()).into_iter();
        for component in repository.components().chain(tree.flatten()) {
            dir = dir.join(component)?;
            self.make_dir(vfs, &dir)?;
        }
        let mut to = dir.join(name)?;
        let replace = !self.versions || self.no_versions.iter().any(|p| p.matches(name));
        if !replace {
            let mut copy = 1;
            while exists(vfs, &to)? {
                if copy > MAX_VERSIONS {
                    return Err(VfsError::AlreadyExists);
                }
                to = dir.join(&format!("Copy #{copy} of {name}"))?;
                copy += 1;
            }
        }
        vfs.rename(path, &to, replace)?;
        if self.touch {
            let metadata = OpenRequest {
                access: Access::MetadataOnly,
                disposition: Disposition::Open,
                kind: Kind::File,
                create_mode: 0,
            };
            // The file is in the bin already: a failed touch loses nothing.
            let _ = vfs
                .open(&to, &metadata)
                .and_then(|o| o.file.set_times(Some(now), None));
        }
        Ok(to)
    }

    /// Makes the repository directory `dir` if it is missing. One that is a symlink or not a
    /// directory fails the move, so that no file follows a link.
    fn make_dir(&self, vfs: &dyn Vfs, dir: &VfsPath) -> VfsResult<()> {
        match vfs.stat(dir) {
            Ok(stat) if stat.file_type == FileType::Directory => return Ok(()),
            Ok(_) => return Err(VfsError::NotADirectory),
            Err(VfsError::NotFound) => {}
            Err(e) => return Err(e),
        }
        let create = OpenRequest {
            access: Access::MetadataOnly,
            disposition: Disposition::Create,
            kind: Kind::Directory,
            create_mode: self.directory_mode,
        };
        match vfs.open(dir, &create) {
            // The mode exactly, not cut by the umask; a setgid bit the directory inherited
            // stays, as with Samba, so the bin keeps the share's group.
            Ok(made) => {
                let setgid = made.file.stat()?.mode & 0o2000;
                made.file.set_mode(self.directory_mode | setgid)
            }
            // Another deletion made it meanwhile.
            Err(VfsError::AlreadyExists) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn exists(vfs: &dyn Vfs, path: &VfsPath) -> VfsResult<bool> {
    match vfs.stat(path) {
        Ok(_) => Ok(true),
        Err(VfsError::NotFound) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_vfs::MemoryVfs;

    const NOW: Timespec = Timespec { sec: 1, nsec: 0 };

    fn path(text: &str) -> VfsPath {
        VfsPath::parse(text).unwrap()
    }

    fn write(vfs: &MemoryVfs, at: &str, data: &[u8]) {
        let mut dir = VfsPath::root();
        let p = path(at);
        let (parent, _) = p.parent_and_name().unwrap();
        for c in parent.components() {
            dir = dir.join(c).unwrap();
            let _ = vfs.open(
                &dir,
                &OpenRequest {
                    access: Access::MetadataOnly,
                    disposition: Disposition::OpenOrCreate,
                    kind: Kind::Directory,
                    create_mode: 0o755,
                },
            );
        }
        let request = OpenRequest {
            access: Access::ReadWrite,
            disposition: Disposition::OverwriteOrCreate,
            kind: Kind::File,
            create_mode: 0o644,
        };
        let file = vfs.open(&p, &request).unwrap().file;
        file.write_at(data, 0).unwrap();
    }

    fn office() -> RecycleBin {
        RecycleBin {
            keep_tree: true,
            versions: true,
            exclude: vec![Expression::new("*.bak", true)],
            ..RecycleBin::new(".recycle/%U")
        }
    }

    fn dispose(bin: &RecycleBin, vfs: &MemoryVfs, user: &str, at: &str) -> Disposal {
        let repository = bin.repository_for(user).unwrap();
        bin.dispose(vfs, &repository, &path(at), NOW).unwrap()
    }

    #[test]
    fn keeps_the_tree_and_versions_as_samba_names_them() {
        let vfs = MemoryVfs::new();
        let bin = office();
        write(&vfs, "a/b/x.txt", b"one");
        let first = dispose(&bin, &vfs, "worker", "a/b/x.txt");
        assert_eq!(first, Disposal::Recycled(path(".recycle/worker/a/b/x.txt")));
        write(&vfs, "a/b/x.txt", b"two");
        let second = dispose(&bin, &vfs, "worker", "a/b/x.txt");
        let copy = path(".recycle/worker/a/b/Copy #1 of x.txt");
        assert_eq!(second, Disposal::Recycled(copy.clone()));
        assert_eq!(vfs.stat(&copy).unwrap().size, 3);
        assert!(matches!(
            vfs.stat(&path("a/b/x.txt")),
            Err(VfsError::NotFound)
        ));
        // An empty file is kept too, as Samba keeps it.
        write(&vfs, "empty", b"");
        let empty = dispose(&bin, &vfs, "worker", "empty");
        assert_eq!(empty, Disposal::Recycled(path(".recycle/worker/empty")));
        let made = vfs.stat(&path(".recycle/worker/a")).unwrap();
        assert_eq!(made.mode & 0o7777, 0o700);
    }

    #[test]
    fn without_versions_or_tree_the_newest_replaces() {
        let vfs = MemoryVfs::new();
        let bin = RecycleBin::new(".recycle");
        write(&vfs, "d/x", b"one");
        assert_eq!(
            dispose(&bin, &vfs, "u", "d/x"),
            Disposal::Recycled(path(".recycle/x"))
        );
        write(&vfs, "d/x", b"three");
        dispose(&bin, &vfs, "u", "d/x");
        assert_eq!(vfs.stat(&path(".recycle/x")).unwrap().size, 5);
    }

    #[test]
    fn deletes_for_real_what_the_bin_does_not_take() {
        let vfs = MemoryVfs::new();
        let bin = RecycleBin {
            max_size: 4,
            exclude_dir: vec![Expression::new("tmp", true)],
            ..office()
        };
        for (at, data) in [
            ("x.bak", &b"data"[..]),
            ("X.BAK", b"data"),
            ("big", b"12345"),
            ("tmp/x", b"data"),
            // The repository, the user's own or another's, empties for real (as Samba).
            (".recycle/worker/old", b"data"),
            (".recycle/other/old", b"data"),
        ] {
            write(&vfs, at, data);
            assert_eq!(dispose(&bin, &vfs, "worker", at), Disposal::Deleted, "{at}");
            assert!(
                matches!(vfs.stat(&path(at)), Err(VfsError::NotFound)),
                "{at}"
            );
        }
    }

    #[test]
    fn a_user_name_cannot_climb_out() {
        let bin = office();
        for user in ["..", ".", "a/b", "", "a\0b"] {
            assert_eq!(bin.repository_for(user), None, "{user:?}");
        }
        assert_eq!(bin.repository_for("w"), Some(path(".recycle/w")));
    }

    #[test]
    fn a_repository_that_is_not_a_directory_is_not_followed() {
        let vfs = MemoryVfs::new();
        let bin = RecycleBin::new(".recycle");
        vfs.symlink("/etc", &path(".recycle")).unwrap();
        write(&vfs, "x", b"data");
        assert_eq!(dispose(&bin, &vfs, "u", "x"), Disposal::Deleted);
        assert!(matches!(vfs.stat(&path("x")), Err(VfsError::NotFound)));
    }
}
