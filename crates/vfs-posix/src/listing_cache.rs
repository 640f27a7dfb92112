//! The names of large directories, held in memory so that a case-insensitive lookup of a name
//! that is missing as spelled costs a hash lookup instead of a listing of thousands of
//! entries (see `docs/vfs.md` for the measurements).
//!
//! A cached listing stays exact without listing the directory again:
//!
//! - An inotify watch, placed before the directory is read, reports every entry created,
//!   removed or renamed by any process; the events are applied before each lookup.
//! - As a second guard, the directory's ctime must be the one the cached names account for,
//!   so that a change that came with no event drops the listing (on the local file systems
//!   the cache is limited to, none should). A timestamp alone would not do: every creation
//!   changes it, and on kernels with coarse timestamps two changes within a tick share one.
//! - A queue overflow drops every listing; removing a directory drops its own.
//! - Only those who could list a directory get answers from its cached names: the caller
//!   opens it for reading first, as a listing would.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, Mode, OFlags, RawDir, StatxFlags, fstatfs, inotify, makedev};
use rustix::io::{self, Errno};
use smb3d_credentials::Creds;
use smb3d_vfs::casefold::{EntryChooser, FoldedName, Found};

use crate::sys;

/// Limits of the cache of large directories' names that case-insensitive lookups use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ListingCacheLimits {
    /// Directories with fewer entries are listed at each lookup instead: that is cheap
    /// enough, and spends no inotify watch.
    pub min_entries: usize,
    /// The most directories cached at once; each holds an inotify watch.
    pub max_directories: usize,
    /// The most names cached in all directories together (about 200 bytes each).
    pub max_names: usize,
}

impl Default for ListingCacheLimits {
    /// Directories of 1,024 entries or more, 64 of them, 262,144 names (about 50 MiB).
    fn default() -> Self {
        Self {
            min_entries: 1024,
            max_directories: 64,
            max_names: 262_144,
        }
    }
}

/// The changes to a directory that make a cached listing stale.
const WATCHED: inotify::WatchFlags = inotify::WatchFlags::CREATE
    .union(inotify::WatchFlags::DELETE)
    .union(inotify::WatchFlags::MOVED_FROM)
    .union(inotify::WatchFlags::MOVED_TO)
    .union(inotify::WatchFlags::ONLYDIR);

/// `statfs` magic numbers of local file systems, whose changes inotify always reports:
/// ext2/3/4, XFS, Btrfs, tmpfs, F2FS, ZFS, bcachefs. On network and cluster file systems
/// other machines change directories unseen, and on FUSE the server does.
const LOCAL_FILE_SYSTEMS: [u32; 7] = [
    0xef53,
    0x5846_5342,
    0x9123_683e,
    0x0102_1994,
    0xf2f5_2010,
    0x2fc1_2fc1,
    0xca45_1a4e,
];

/// Room for a few hundred events per `read`.
const EVENT_BUFFER: usize = 16 * 1024;
/// The `getdents64` buffer of a listing.
const LISTING_BUFFER: usize = 32 * 1024;

/// A directory's identity: device and inode.
type DirId = (u64, u64);

/// A ctime, as `statx` reports it.
type Ctime = (i64, u32);

/// The cache of one share.
pub(crate) struct ListingCache {
    limits: ListingCacheLimits,
    state: Mutex<State>,
}

struct State {
    /// Created on first use, so that a share that never sees a large directory holds none.
    inotify: Option<OwnedFd>,
    watches: HashMap<DirId, i32>,
    listings: HashMap<i32, Listing>,
    /// Names cached in all listings.
    names: usize,
    /// Counts lookups, to find the least recently used listing.
    clock: u64,
    events: Vec<u8>,
}

/// The names of one directory.
struct Listing {
    dir: DirId,
    /// Names by their case folding; most foldings have a single spelling.
    by_folding: HashMap<Box<str>, Vec<Box<str>>>,
    count: usize,
    /// While the first listing is read: the changes reported meanwhile, applied after it.
    pending: Option<Vec<Change>>,
    /// The directory's ctime that the names account for, unless `changed`.
    ctime: Ctime,
    /// Events changed the names since `ctime` was taken.
    changed: bool,
    last_used: u64,
}

enum Change {
    Added(Box<str>),
    Removed(Box<str>),
}

#[expect(
    clippy::disallowed_methods,
    reason = "an empty path with AT_EMPTY_PATH looks nothing up: no permission is checked"
)]
fn identity(dir: BorrowedFd<'_>) -> io::Result<(DirId, Ctime)> {
    let wanted = StatxFlags::INO | StatxFlags::CTIME;
    let stat = rustix::fs::statx(dir, "", AtFlags::EMPTY_PATH, wanted)?;
    let dev = makedev(stat.stx_dev_major, stat.stx_dev_minor);
    let ctime = (stat.stx_ctime.tv_sec, stat.stx_ctime.tv_nsec);
    Ok(((dev, stat.stx_ino), ctime))
}

fn is_local(dir: BorrowedFd<'_>) -> bool {
    // The magic is a u32 that the kernel sign-extends into a long for some types.
    fstatfs(dir).is_ok_and(|fs| LOCAL_FILE_SYSTEMS.contains(&(fs.f_type as u32)))
}

/// Every UTF-8 name in `dir`, without `.` and `..`.
fn read_names(creds: Creds<'_>, dir: BorrowedFd<'_>) -> io::Result<Vec<Box<str>>> {
    let listing = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = sys::openat(creds, dir, ".", listing, Mode::empty())?;
    let mut buf = Vec::with_capacity(LISTING_BUFFER);
    let mut entries = RawDir::new(fd, buf.spare_capacity_mut());
    let mut names = Vec::new();
    while let Some(entry) = entries.next() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(Errno::NOENT) => break,
            Err(error) => return Err(error),
        };
        match entry.file_name().to_str() {
            Ok("." | "..") | Err(_) => {}
            Ok(name) => names.push(name.into()),
        }
    }
    Ok(names)
}

impl ListingCache {
    pub(crate) fn new(limits: ListingCacheLimits) -> Self {
        Self {
            limits,
            state: Mutex::new(State {
                inotify: None,
                watches: HashMap::new(),
                listings: HashMap::new(),
                names: 0,
                clock: 0,
                events: Vec::with_capacity(EVENT_BUFFER),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is consistent between statements; a panic cannot leave it half-changed
        // in a way that gives wrong answers, only a listing to drop later.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the cached names of `dir` say `name` designates; `None` when `dir` is not cached
    /// or its cache cannot be trusted. The caller has opened `dir` for reading, so it may
    /// list it.
    pub(crate) fn lookup(&self, dir: BorrowedFd<'_>, name: &str) -> Option<Found> {
        let mut state = self.lock();
        state.drain();
        if state.listings.is_empty() {
            return None;
        }
        let (id, ctime) = identity(dir).ok()?;
        let wd = *state.watches.get(&id)?;
        state.clock += 1;
        let clock = state.clock;
        let listing = state.listings.get_mut(&wd)?;
        if listing.pending.is_some() {
            return None;
        }
        if listing.changed {
            listing.ctime = ctime;
            listing.changed = false;
        } else if listing.ctime != ctime {
            state.forget(wd);
            return None;
        }
        listing.last_used = clock;
        Some(listing.find(name))
    }

    /// Told that a listing of `dir` counted `entries`: caches its names if it is large, on a
    /// local file system. Failing to (no inotify, no watch left, no `/proc`) only means that
    /// lookups keep listing it.
    pub(crate) fn consider(&self, creds: Creds<'_>, dir: BorrowedFd<'_>, entries: usize) {
        if entries >= self.limits.min_entries && entries <= self.limits.max_names && is_local(dir) {
            // Nothing to report: the lookup that got here has its answer already.
            let _ = self.fill(creds, dir);
        }
    }

    fn fill(&self, creds: Creds<'_>, dir: BorrowedFd<'_>) -> io::Result<()> {
        let (id, _) = identity(dir)?;
        let wd = {
            let mut state = self.lock();
            if state.watches.contains_key(&id) {
                return Ok(());
            }
            // The watch names the directory already open, through its descriptor's link.
            let path = format!("/proc/self/fd/{}", dir.as_raw_fd());
            let wd = sys::inotify_add_watch(creds, state.inotify()?, path, WATCHED)?;
            state.drain();
            state.listings.insert(wd, Listing::filling(id));
            state.watches.insert(id, wd);
            wd
        };
        // Read once the watch is in place, so that every change from now on is reported:
        // applying those reports to whatever this listing saw gives the current names.
        let names = read_names(creds, dir);
        let mut state = self.lock();
        state.drain();
        let ctime = identity(dir).map(|(_, ctime)| ctime);
        let filling = state
            .listings
            .get(&wd)
            .is_some_and(|listing| listing.dir == id && listing.pending.is_some());
        match (names, ctime) {
            (Ok(names), Ok(ctime)) if filling => {
                let added = state.install(wd, names, ctime);
                state.names += added;
                state.clock += 1;
                let clock = state.clock;
                if let Some(listing) = state.listings.get_mut(&wd) {
                    listing.last_used = clock;
                }
                state.evict(&self.limits);
                Ok(())
            }
            (names, ctime) => {
                if filling {
                    state.forget(wd);
                }
                names.and(ctime).map(drop)
            }
        }
    }
}

impl State {
    fn inotify(&mut self) -> io::Result<BorrowedFd<'_>> {
        if self.inotify.is_none() {
            let flags = inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK;
            self.inotify = Some(inotify::init(flags)?);
        }
        self.inotify.as_ref().map(AsFd::as_fd).ok_or(Errno::BADF)
    }

    /// Applies every event reported so far.
    fn drain(&mut self) {
        let Self {
            inotify: Some(inotify),
            listings,
            names,
            events,
            ..
        } = self
        else {
            return;
        };
        let mut reader = inotify::Reader::new(inotify.as_fd(), events.spare_capacity_mut());
        let mut lost = Vec::new();
        let mut overflow = false;
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(Errno::AGAIN) => break,
                // Events may have been lost: trust no listing.
                Err(_) => {
                    overflow = true;
                    break;
                }
            };
            let flags = event.events();
            if flags.contains(inotify::ReadFlags::QUEUE_OVERFLOW) {
                overflow = true;
                break;
            }
            if flags.contains(inotify::ReadFlags::IGNORED) {
                lost.push(event.wd());
                continue;
            }
            let Some(listing) = listings.get_mut(&event.wd()) else {
                continue;
            };
            let Some(name) = event.file_name().and_then(|name| name.to_str().ok()) else {
                continue;
            };
            let change = if flags
                .intersects(inotify::ReadFlags::CREATE | inotify::ReadFlags::MOVED_TO)
            {
                Change::Added(name.into())
            } else if flags.intersects(inotify::ReadFlags::DELETE | inotify::ReadFlags::MOVED_FROM)
            {
                Change::Removed(name.into())
            } else {
                continue;
            };
            listing.changed = true;
            match &mut listing.pending {
                Some(pending) => pending.push(change),
                None => {
                    let before = listing.count;
                    listing.apply(change);
                    *names = names.saturating_sub(before) + listing.count;
                }
            }
        }
        if overflow {
            self.forget_all();
            return;
        }
        for wd in lost {
            // The kernel dropped the watch (directory removed, file system unmounted).
            if let Some(listing) = self.listings.remove(&wd) {
                self.watches.remove(&listing.dir);
                self.names = self.names.saturating_sub(listing.count);
            }
        }
    }

    /// Puts the names read for listing `wd` in place, then the changes reported meanwhile;
    /// returns how many names it holds.
    fn install(&mut self, wd: i32, names: Vec<Box<str>>, ctime: Ctime) -> usize {
        let Some(listing) = self.listings.get_mut(&wd) else {
            return 0;
        };
        let pending = listing.pending.take().unwrap_or_default();
        for name in names {
            listing.apply(Change::Added(name));
        }
        for change in pending {
            listing.apply(change);
        }
        listing.ctime = ctime;
        listing.changed = false;
        listing.count
    }

    /// Drops listing `wd` and its watch.
    fn forget(&mut self, wd: i32) {
        if let Some(listing) = self.listings.remove(&wd) {
            self.watches.remove(&listing.dir);
            self.names = self.names.saturating_sub(listing.count);
        }
        if let Some(inotify) = &self.inotify {
            // Gone already if the kernel dropped it; nothing else can fail here.
            let _ = inotify::remove_watch(inotify, wd);
        }
    }

    fn forget_all(&mut self) {
        let watched: Vec<i32> = self.listings.keys().copied().collect();
        for wd in watched {
            self.forget(wd);
        }
    }

    /// Drops the least recently used listings until the limits hold.
    fn evict(&mut self, limits: &ListingCacheLimits) {
        while self.listings.len() > limits.max_directories || self.names > limits.max_names {
            let oldest = self
                .listings
                .iter()
                .min_by_key(|(_, listing)| listing.last_used)
                .map(|(&wd, _)| wd);
            match oldest {
                Some(wd) => self.forget(wd),
                None => break,
            }
        }
    }
}

impl Listing {
    fn filling(dir: DirId) -> Self {
        Self {
            dir,
            by_folding: HashMap::new(),
            count: 0,
            pending: Some(Vec::new()),
            ctime: (0, 0),
            changed: false,
            last_used: 0,
        }
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::Added(name) => {
                let spellings = self
                    .by_folding
                    .entry(FoldedName::new(&name).as_str().into())
                    .or_default();
                if !spellings.contains(&name) {
                    spellings.push(name);
                    self.count += 1;
                }
            }
            Change::Removed(name) => {
                let folded = FoldedName::new(&name);
                if let Some(spellings) = self.by_folding.get_mut(folded.as_str()) {
                    let before = spellings.len();
                    spellings.retain(|spelling| *spelling != name);
                    self.count -= before - spellings.len();
                    if spellings.is_empty() {
                        self.by_folding.remove(folded.as_str());
                    }
                }
            }
        }
    }

    /// The entry `name` designates, chosen as a listing would choose it.
    fn find(&self, name: &str) -> Found {
        let mut chooser = EntryChooser::new(name);
        let folded = FoldedName::new(name);
        for spelling in self.by_folding.get(folded.as_str()).into_iter().flatten() {
            if chooser.offer(spelling) {
                break;
            }
        }
        chooser.choice()
    }
}
