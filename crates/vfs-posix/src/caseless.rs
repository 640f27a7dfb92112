//! Case-insensitive lookups: one `statx` for a name that exists as spelled, otherwise one
//! listing of the directory. Both run on a directory descriptor that was opened beneath the
//! share root, so a scan can only ever read a directory of the share.

use rustix::fd::AsFd;
use rustix::fs::{AtFlags, Mode, OFlags, RawDir, StatxFlags, openat, statx};
use rustix::io::{self, Errno};
use smb3d_vfs::casefold::{EntryChooser, Found};

/// The `getdents64` buffer: several hundred entries per call, so that listing a directory of
/// 20,000 entries takes a few dozen calls.
const LISTING_BUFFER: usize = 32 * 1024;

/// Whether `dir` has an entry spelled `name`, not following it.
fn has_entry(dir: impl AsFd, name: &str) -> io::Result<bool> {
    match statx(dir, name, AtFlags::SYMLINK_NOFOLLOW, StatxFlags::empty()) {
        Ok(_) => Ok(true),
        Err(Errno::NOENT) => Ok(false),
        Err(error) => Err(error),
    }
}

/// Lists `dir` once for the entry `name` designates (see [`EntryChooser`]). Names that are
/// not UTF-8 cannot match and are skipped.
pub(crate) fn scan(dir: impl AsFd, name: &str) -> io::Result<Found> {
    // A descriptor of its own: `dir` may be `O_PATH`, and its position is not ours to move.
    let listing = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = openat(dir, ".", listing, Mode::empty())?;
    let mut buf = Vec::with_capacity(LISTING_BUFFER);
    let mut entries = RawDir::new(fd, buf.spare_capacity_mut());
    let mut chooser = EntryChooser::new(name);
    while let Some(entry) = entries.next() {
        let entry = match entry {
            Ok(entry) => entry,
            // A directory removed while open lists as empty.
            Err(Errno::NOENT) => break,
            Err(error) => return Err(error),
        };
        let Ok(candidate) = entry.file_name().to_str() else {
            continue;
        };
        if chooser.offer(candidate) {
            break;
        }
    }
    Ok(chooser.choice())
}

/// The entry of `dir` that `name` designates, for path resolution: the exact spelling costs
/// one `statx`. A directory that cannot be searched or listed holds nothing to match; the
/// operation on the path then reports why.
pub(crate) fn find(dir: impl AsFd, name: &str) -> Found {
    match has_entry(&dir, name) {
        Ok(true) => Found::Exact,
        Ok(false) => scan(dir, name).unwrap_or(Found::Missing),
        Err(_) => Found::Missing,
    }
}
