//! Case-insensitive lookups: one `statx` for a name that exists as spelled; otherwise the
//! cached names of a large directory, or one listing. All of it runs on directory
//! descriptors opened beneath the share root, so only directories of the share are ever
//! listed.

use std::sync::Arc;

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, RawDir, StatxFlags};
use rustix::io::{self, Errno};
use smb3d_credentials::Creds;
use smb3d_vfs::CaseSensitivity;
use smb3d_vfs::casefold::{EntryChooser, Found};

use crate::listing_cache::{ListingCache, ListingCacheLimits};
use crate::sys;

/// The `getdents64` buffer: several hundred entries per call, so that listing a directory of
/// 20,000 entries takes a few dozen calls.
const LISTING_BUFFER: usize = 32 * 1024;

/// How a share matches names: its case rule and the cache of large directories' names.
#[derive(Clone)]
pub(crate) struct NameRules {
    pub(crate) case: CaseSensitivity,
    cache: Option<Arc<ListingCache>>,
}

impl NameRules {
    pub(crate) fn new(case: CaseSensitivity, cache: Option<ListingCacheLimits>) -> Self {
        Self {
            case,
            cache: cache.map(|limits| Arc::new(ListingCache::new(limits))),
        }
    }

    /// The same rules with the cache limits `cache` (none: no cache).
    pub(crate) fn with_cache(self, cache: Option<ListingCacheLimits>) -> Self {
        Self::new(self.case, cache)
    }

    /// The entry of `dir` that `name` designates, for path resolution: the exact spelling
    /// costs one `statx`. A directory that cannot be searched or listed holds nothing to
    /// match; the operation on the path then reports why.
    pub(crate) fn find(&self, creds: Creds<'_>, dir: impl AsFd, name: &str) -> Found {
        match has_entry(creds, &dir, name) {
            Ok(true) => Found::Exact,
            Ok(false) => self
                .find_other_spelling(creds, dir.as_fd(), name)
                .unwrap_or(Found::Missing),
            Err(_) => Found::Missing,
        }
    }

    /// The entry `name` designates in `dir`, which had no entry spelled `name` (`Exact` if
    /// one appeared since): from the cached names if `dir` is a cached large directory, else
    /// from one listing.
    pub(crate) fn find_other_spelling(
        &self,
        creds: Creds<'_>,
        dir: BorrowedFd<'_>,
        name: &str,
    ) -> io::Result<Found> {
        // A descriptor of its own: `dir` may be `O_PATH`, and its position is not ours to
        // move. Opening it checks that the caller may list it, which the cache relies on.
        let listing = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = sys::openat(creds, dir, ".", listing, Mode::empty())?;
        if let Some(cache) = &self.cache
            && let Some(found) = cache.lookup(fd.as_fd(), name)
        {
            return Ok(found);
        }
        let (found, entries) = scan(&fd, name)?;
        if let (Some(cache), Some(entries)) = (&self.cache, entries) {
            cache.consider(creds, fd.as_fd(), entries);
        }
        Ok(found)
    }
}

/// Whether `dir` has an entry spelled `name`, not following it.
fn has_entry(creds: Creds<'_>, dir: impl AsFd, name: &str) -> io::Result<bool> {
    match sys::statx(
        creds,
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::empty(),
    ) {
        Ok(_) => Ok(true),
        Err(Errno::NOENT) => Ok(false),
        Err(error) => Err(error),
    }
}

/// Lists the directory open as `fd` for the entry `name` designates (see [`EntryChooser`]),
/// with the number of entries if the whole directory was read. Names that are not UTF-8
/// cannot match and are skipped.
fn scan(fd: &OwnedFd, name: &str) -> io::Result<(Found, Option<usize>)> {
    let mut buf = Vec::with_capacity(LISTING_BUFFER);
    let mut entries = RawDir::new(fd.as_fd(), buf.spare_capacity_mut());
    let mut chooser = EntryChooser::new(name);
    let mut count: usize = 0;
    while let Some(entry) = entries.next() {
        let entry = match entry {
            Ok(entry) => entry,
            // A directory removed while open lists as empty.
            Err(Errno::NOENT) => break,
            Err(error) => return Err(error),
        };
        count += 1;
        let Ok(candidate) = entry.file_name().to_str() else {
            continue;
        };
        if chooser.offer(candidate) {
            return Ok((chooser.choice(), None));
        }
    }
    // Less `.` and `..`.
    Ok((chooser.choice(), Some(count.saturating_sub(2))))
}
