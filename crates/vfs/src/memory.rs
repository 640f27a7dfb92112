//! An in-memory [`Vfs`] with the POSIX back end's semantics, for tests and fuzzing.
//!
//! One mutex guards the whole tree: simple, and fast enough for what it is for. File data is
//! sparse (4 KiB chunks allocated on write), so a peer's huge offset costs nothing, and a
//! capacity bounds what writes can allocate.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::backend::{
    caseless_rename_target, check_symlink_target, checked_range_end, copy_by_reading,
    open_caseless, retry_caseless, validate_symlink_target, validate_xattr_name,
    validate_xattr_value,
};
use crate::casefold::{EntryChooser, Found, resolve_path};
use crate::{
    Access, CaseSensitivity, DirEntry, FileStat, FileType, FsStat, Kind, MAX_NAME_LEN, OpenRequest,
    Opened, Quota, QuotaKind, S_IFDIR, S_IFLNK, S_IFREG, Timespec, Vfs, VfsError, VfsFile, VfsPath,
    VfsResult, errno, validate_name,
};

const CHUNK: usize = 4096;
const CHUNK_U64: u64 = CHUNK as u64;
/// Linux `MAXSYMLINKS`: more links than this in one resolution is `ELOOP`.
const MAX_SYMLINKS: usize = 40;
const DEFAULT_CAPACITY: u64 = 1 << 30;
const ROOT_INO: u64 = 2;
/// What a directory reports as its size and allocation, like ext4's one block.
const DIRECTORY_SIZE: u64 = 4096;
/// The device number every `MemoryVfs` reports.
const MEMORY_DEV: u64 = 0x004d_454d;

/// An in-memory file system with the same semantics as the POSIX back end: symlinks stored as
/// such and resolved within the share, xattrs, times, sparse sizes. Cloning shares the tree.
///
/// Objects start out owned by uid and gid 0; ownership and permission bits are recorded but
/// not enforced.
/// Names ignore case unless [`with_case_sensitivity`](Self::with_case_sensitivity) says
/// otherwise; clones with different settings see one tree.
#[derive(Clone)]
pub struct MemoryVfs {
    shared: Arc<Mutex<State>>,
    case: CaseSensitivity,
}

struct State {
    nodes: HashMap<u64, Node>,
    next_ino: u64,
    space: Space,
    /// Quota records, when quotas are on ([`MemoryVfs::with_quotas`]).
    quotas: Option<BTreeMap<(QuotaKind, u32), Quota>>,
}

struct Space {
    used: u64,
    capacity: u64,
}

struct Node {
    body: Body,
    mode: u32,
    uid: u32,
    gid: u32,
    atime: Timespec,
    mtime: Timespec,
    ctime: Timespec,
    btime: Timespec,
    xattrs: BTreeMap<String, Vec<u8>>,
    /// How many directory entries name this node (hard links); it is freed once none does and
    /// no handle is open.
    links: u64,
    opens: u64,
}

enum Body {
    File(FileData),
    Directory(BTreeMap<String, u64>),
    Symlink(String),
}

#[derive(Default)]
struct FileData {
    size: u64,
    chunks: BTreeMap<u64, Box<[u8; CHUNK]>>,
}

/// Why a resolution failed, before it is classified against the path: the errno values the
/// kernel would give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Miss {
    NoEntry,
    NotDirectory,
    Escape,
    Loop,
}

impl MemoryVfs {
    /// An empty file system with a 1 GiB capacity.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// An empty file system whose file data may use at most `capacity` bytes (`NoSpace`
    /// beyond).
    pub fn with_capacity(capacity: u64) -> Self {
        let now = Timespec::now();
        let root = Node::new(Body::Directory(BTreeMap::new()), S_IFDIR | 0o755, now);
        let state = State {
            nodes: HashMap::from([(ROOT_INO, root)]),
            next_ino: ROOT_INO + 1,
            space: Space { used: 0, capacity },
            quotas: None,
        };
        Self {
            shared: Arc::new(Mutex::new(state)),
            case: CaseSensitivity::default(),
        }
    }

    /// This file system with quotas on and no records yet. The records are kept, not charged:
    /// usage is what [`set_quota_usage`](Self::set_quota_usage) says, and nothing is refused
    /// for it (tests drive the protocol over it; the kernel enforces real quotas).
    pub fn with_quotas(self) -> Self {
        self.lock().quotas = Some(BTreeMap::new());
        self
    }

    /// Sets the usage of `id`'s quota record, creating it; nothing when quotas are off.
    pub fn set_quota_usage(&self, kind: QuotaKind, id: u32, used: u64) {
        if let Some(quotas) = self.lock().quotas.as_mut() {
            quotas.entry((kind, id)).or_default().used = used;
        }
    }

    /// This file system with names matched under `case`.
    #[must_use]
    pub fn with_case_sensitivity(mut self, case: CaseSensitivity) -> Self {
        self.case = case;
        self
    }

    /// How names are matched.
    pub fn case_sensitivity(&self) -> CaseSensitivity {
        self.case
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.shared)
    }

    fn open_existing(
        &self,
        path: &VfsPath,
        req: &OpenRequest,
        truncate: bool,
    ) -> VfsResult<MemoryFile> {
        let mut state = self.lock();
        let ino = state.lookup(path)?;
        let now = Timespec::now();
        let State { nodes, space, .. } = &mut *state;
        let node = nodes.get_mut(&ino).ok_or(INCONSISTENT)?;
        let is_directory = matches!(node.body, Body::Directory(_));
        match (req.kind, is_directory) {
            (Kind::File, true) => return Err(VfsError::IsADirectory),
            (Kind::Directory, false) => return Err(VfsError::NotADirectory),
            _ => {}
        }
        if truncate {
            let Body::File(data) = &mut node.body else {
                return Err(VfsError::IsADirectory);
            };
            data.set_len(0, space);
            node.mtime = now;
            node.ctime = now;
        }
        node.opens += 1;
        Ok(self.handle(ino, req.access, is_directory))
    }

    fn create_new(&self, path: &VfsPath, req: &OpenRequest) -> VfsResult<MemoryFile> {
        let is_directory = req.kind == Kind::Directory;
        let (body, mode) = if is_directory {
            (Body::Directory(BTreeMap::new()), S_IFDIR)
        } else {
            (Body::File(FileData::default()), S_IFREG)
        };
        let mut state = self.lock();
        let ino = state.insert(path, body, mode | (req.create_mode & 0o7777))?;
        state.nodes.get_mut(&ino).ok_or(INCONSISTENT)?.opens += 1;
        Ok(self.handle(ino, req.access, is_directory))
    }

    fn handle(&self, ino: u64, access: Access, is_directory: bool) -> MemoryFile {
        MemoryFile {
            shared: Arc::clone(&self.shared),
            ino,
            access,
            is_directory,
            case: self.case,
        }
    }
}

impl Default for MemoryVfs {
    fn default() -> Self {
        Self::new()
    }
}

fn lock(shared: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic elsewhere cannot leave the tree half-updated in a way that matters to tests.
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A node that the tree refers to but does not hold: a bug, reported rather than panicking.
const INCONSISTENT: VfsError = VfsError::Io(errno::EIO);

impl Vfs for MemoryVfs {
    fn open(&self, path: &VfsPath, req: &OpenRequest) -> VfsResult<Opened> {
        req.validate()?;
        let (file, created) = open_caseless(
            self.case,
            path,
            req.disposition,
            |path, truncate| self.open_existing(path, req, truncate),
            |path| self.create_new(path, req),
            |path| self.lock().real_path(path),
        )?;
        Ok(Opened {
            file: Box::new(file),
            created,
            stat: None,
        })
    }

    fn open_link(&self, path: &VfsPath) -> VfsResult<Option<Opened>> {
        let mut state = self.lock();
        let ino = retry_caseless(
            self.case,
            path,
            &mut *state,
            |state, path| {
                let (parent, name) = path.parent_and_name().ok_or(VfsError::Busy)?;
                let dir = state.parent_directory(&parent)?;
                let child = *state.entries(dir)?.get(name).ok_or(VfsError::NotFound)?;
                Ok(matches!(state.node(child)?.body, Body::Symlink(_)).then_some(child))
            },
            |state, path| state.real_path(path),
        )?;
        let Some(ino) = ino else {
            return Ok(None);
        };
        state.nodes.get_mut(&ino).ok_or(INCONSISTENT)?.opens += 1;
        Ok(Some(Opened {
            file: Box::new(self.handle(ino, Access::MetadataOnly, false)),
            created: false,
            stat: None,
        }))
    }

    fn stat(&self, path: &VfsPath) -> VfsResult<FileStat> {
        let mut state = self.lock();
        retry_caseless(
            self.case,
            path,
            &mut *state,
            |state, path| state.stat(state.lookup(path)?),
            |state, path| state.real_path(path),
        )
    }

    fn unlink(&self, path: &VfsPath) -> VfsResult<()> {
        let mut state = self.lock();
        retry_caseless(
            self.case,
            path,
            &mut *state,
            State::unlink,
            |state, path| state.real_path(path),
        )
    }

    fn rename(&self, from: &VfsPath, to: &VfsPath, replace: bool) -> VfsResult<()> {
        let mut state = self.lock();
        if self.case == CaseSensitivity::Sensitive {
            return state.rename(from, to, replace);
        }
        let from = state.real_path(from).unwrap_or_else(|| from.clone());
        let to_real = state.real_path(to);
        let to = caseless_rename_target(&from, to, to_real, |a, b| {
            matches!(
                (state.parent_directory(a), state.parent_directory(b)),
                (Ok(a), Ok(b)) if a == b
            )
        })?;
        state.rename(&from, &to, replace)
    }

    fn symlink(&self, target: &str, link: &VfsPath) -> VfsResult<()> {
        validate_symlink_target(target)?;
        let mut state = self.lock();
        let real = match self.case {
            CaseSensitivity::Sensitive => None,
            CaseSensitivity::Insensitive => state.real_path(link),
        };
        let link = real.as_ref().unwrap_or(link);
        state.insert(link, Body::Symlink(target.to_owned()), S_IFLNK | 0o777)?;
        Ok(())
    }

    fn check_symlink_target(&self, link: &VfsPath, target: &str) -> VfsResult<()> {
        let state = self.lock();
        let real = match self.case {
            CaseSensitivity::Sensitive => None,
            CaseSensitivity::Insensitive => state.real_path(link),
        };
        let (dir, _) = real
            .as_ref()
            .unwrap_or(link)
            .parent_and_name()
            .ok_or(VfsError::Busy)?;
        check_symlink_target(target, |relative| {
            let pending = relative.split('/').rev().chain(dir.components().rev());
            match state.walk_pending(pending.collect(), true) {
                Ok(_) => Ok(()),
                Err(Miss::NoEntry) => Err(VfsError::NotFound),
                Err(Miss::NotDirectory) => Err(VfsError::NotADirectory),
                Err(Miss::Escape | Miss::Loop) => Err(VfsError::OutsideShare),
            }
        })
    }

    fn read_link(&self, path: &VfsPath) -> VfsResult<Option<String>> {
        let mut state = self.lock();
        retry_caseless(
            self.case,
            path,
            &mut *state,
            |state, path| {
                let (parent, name) = path.parent_and_name().ok_or(VfsError::Busy)?;
                let dir = state.parent_directory(&parent)?;
                let child = *state.entries(dir)?.get(name).ok_or(VfsError::NotFound)?;
                Ok(match &state.node(child)?.body {
                    Body::Symlink(target) => Some(target.clone()),
                    _ => None,
                })
            },
            |state, path| state.real_path(path),
        )
    }

    /// Cloning is a copy here: nothing observable tells the two apart.
    fn can_clone(&self) -> bool {
        true
    }

    fn link(&self, existing: &VfsPath, new: &VfsPath) -> VfsResult<()> {
        let mut state = self.lock();
        let (existing, new) = match self.case {
            CaseSensitivity::Sensitive => (existing.clone(), new.clone()),
            CaseSensitivity::Insensitive => (
                state
                    .real_path(existing)
                    .unwrap_or_else(|| existing.clone()),
                state.real_path(new).unwrap_or_else(|| new.clone()),
            ),
        };
        state.link(&existing, &new)
    }

    fn sync_dir(&self, path: &VfsPath) -> VfsResult<()> {
        // Memory has no crash to survive; only the directory must exist.
        match self.stat(path)?.file_type {
            FileType::Directory => Ok(()),
            _ => Err(VfsError::NotADirectory),
        }
    }

    fn quota(&self, kind: QuotaKind, id: u32) -> VfsResult<Quota> {
        let state = self.lock();
        let quotas = state.quotas.as_ref().ok_or(VfsError::Unsupported)?;
        Ok(quotas.get(&(kind, id)).copied().unwrap_or_default())
    }

    fn set_quota_limits(&self, kind: QuotaKind, id: u32, soft: u64, hard: u64) -> VfsResult<()> {
        let mut state = self.lock();
        let quotas = state.quotas.as_mut().ok_or(VfsError::Unsupported)?;
        let record = quotas.entry((kind, id)).or_default();
        record.soft_limit = soft;
        record.hard_limit = hard;
        Ok(())
    }

    fn next_quota(&self, kind: QuotaKind, from: u32) -> VfsResult<Option<(u32, Quota)>> {
        let state = self.lock();
        let quotas = state.quotas.as_ref().ok_or(VfsError::Unsupported)?;
        Ok(quotas
            .range((kind, from)..=(kind, u32::MAX))
            .next()
            .map(|(&(_, id), &quota)| (id, quota)))
    }

    fn fs_stat(&self) -> VfsResult<FsStat> {
        let state = self.lock();
        let free = state.space.capacity.saturating_sub(state.space.used) / CHUNK_U64;
        Ok(FsStat {
            block_size: CHUNK_U64,
            fragment_size: CHUNK_U64,
            total_blocks: state.space.capacity / CHUNK_U64,
            free_blocks: free,
            avail_blocks: free,
            max_name_len: MAX_NAME_LEN as u64,
            fs_id: MEMORY_DEV,
            fs_type: 0,
        })
    }
}

/// The entry of `entries` that `name` designates, ignoring case.
fn choose_entry(entries: &BTreeMap<String, u64>, name: &str) -> Found {
    if entries.contains_key(name) {
        return Found::Exact;
    }
    let mut chooser = EntryChooser::new(name);
    for candidate in entries.keys() {
        chooser.offer(candidate);
    }
    chooser.choice()
}

/// Classifies a failure to resolve a parent directory.
fn parent_miss(miss: Miss) -> VfsError {
    match miss {
        Miss::NoEntry | Miss::NotDirectory => VfsError::ParentNotFound,
        Miss::Escape | Miss::Loop => VfsError::OutsideShare,
    }
}

impl Node {
    fn new(body: Body, mode: u32, now: Timespec) -> Self {
        Self {
            body,
            mode,
            uid: 0,
            gid: 0,
            atime: now,
            mtime: now,
            ctime: now,
            btime: now,
            xattrs: BTreeMap::new(),
            links: 1,
            opens: 0,
        }
    }

    fn file_type(&self) -> FileType {
        match self.body {
            Body::File(_) => FileType::File,
            Body::Directory(_) => FileType::Directory,
            Body::Symlink(_) => FileType::Symlink,
        }
    }
}

impl State {
    fn node(&self, ino: u64) -> VfsResult<&Node> {
        self.nodes.get(&ino).ok_or(INCONSISTENT)
    }

    fn node_mut(&mut self, ino: u64) -> VfsResult<&mut Node> {
        self.nodes.get_mut(&ino).ok_or(INCONSISTENT)
    }

    fn entries(&self, dir: u64) -> VfsResult<&BTreeMap<String, u64>> {
        match &self.node(dir)?.body {
            Body::Directory(entries) => Ok(entries),
            _ => Err(VfsError::NotADirectory),
        }
    }

    /// The entries of a directory that resolution returned as a parent.
    fn directory_entries(&self, dir: u64) -> VfsResult<&BTreeMap<String, u64>> {
        self.entries(dir).map_err(|_| VfsError::ParentNotFound)
    }

    fn entries_mut(&mut self, dir: u64) -> VfsResult<&mut BTreeMap<String, u64>> {
        match &mut self.node_mut(dir)?.body {
            Body::Directory(entries) => Ok(entries),
            _ => Err(VfsError::NotADirectory),
        }
    }

    /// Resolves `path` as `openat2(RESOLVE_BENEATH)` does, returning the chain of objects from
    /// the root to the result. Symlinks in the last component are followed if `follow_last`.
    fn walk<'a>(&'a self, path: &'a VfsPath, follow_last: bool) -> Result<Vec<u64>, Miss> {
        self.walk_pending(path.components().rev().collect(), follow_last)
    }

    /// [`walk`](Self::walk) of the components `pending`, last first.
    fn walk_pending<'a>(
        &'a self,
        mut pending: Vec<&'a str>,
        follow_last: bool,
    ) -> Result<Vec<u64>, Miss> {
        let mut chain = vec![ROOT_INO];
        let mut links = 0;
        while let Some(name) = pending.pop() {
            let top = chain.last().copied().unwrap_or(ROOT_INO);
            let Some(Node {
                body: Body::Directory(entries),
                ..
            }) = self.nodes.get(&top)
            else {
                return Err(Miss::NotDirectory);
            };
            match name {
                "" | "." => continue,
                ".." => {
                    if chain.len() <= 1 {
                        return Err(Miss::Escape);
                    }
                    chain.pop();
                    continue;
                }
                _ => {}
            }
            let child = *entries.get(name).ok_or(Miss::NoEntry)?;
            let follow = follow_last || !pending.is_empty();
            if let Some(Node {
                body: Body::Symlink(target),
                ..
            }) = self.nodes.get(&child)
                && follow
            {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(Miss::Loop);
                }
                if target.starts_with('/') {
                    return Err(Miss::Escape);
                }
                pending.extend(target.split('/').rev());
                continue;
            }
            chain.push(child);
        }
        Ok(chain)
    }

    /// Resolves `path`, following symlinks, and classifies a failure as the POSIX back end
    /// does: by whether the parent resolves to a directory.
    fn lookup(&self, path: &VfsPath) -> VfsResult<u64> {
        let miss = match self.walk(path, true) {
            Ok(chain) => return chain.last().copied().ok_or(INCONSISTENT),
            Err(miss) => miss,
        };
        if matches!(miss, Miss::Escape | Miss::Loop) {
            return Err(VfsError::OutsideShare);
        }
        let Some((parent, _)) = path.parent_and_name() else {
            return Err(INCONSISTENT);
        };
        self.parent_directory(&parent)?;
        Err(match miss {
            Miss::NoEntry => VfsError::NotFound,
            _ => VfsError::NotADirectory,
        })
    }

    /// Resolves the directory that holds the last component of a path.
    fn parent_directory(&self, parent: &VfsPath) -> VfsResult<u64> {
        self.parent_chain(parent)?
            .last()
            .copied()
            .ok_or(INCONSISTENT)
    }

    /// Resolves a parent directory, returning the chain of directories from the root to it.
    fn parent_chain(&self, parent: &VfsPath) -> VfsResult<Vec<u64>> {
        let chain = self.walk(parent, true).map_err(parent_miss)?;
        self.directory_entries(chain.last().copied().ok_or(INCONSISTENT)?)?;
        Ok(chain)
    }

    /// The real spelling of `path` when names ignore case (see
    /// [`resolve_path`](crate::casefold::resolve_path)).
    fn real_path(&self, path: &VfsPath) -> Option<VfsPath> {
        resolve_path(
            path,
            |dir| self.parent_directory(dir).ok(),
            |&dir, name| match self.entries(dir) {
                Ok(entries) => choose_entry(entries, name),
                Err(_) => Found::Missing,
            },
        )
    }

    fn unlink(&mut self, path: &VfsPath) -> VfsResult<()> {
        let Some((parent, name)) = path.parent_and_name() else {
            return Err(VfsError::Busy);
        };
        let dir = self.parent_directory(&parent)?;
        let child = *self.entries(dir)?.get(name).ok_or(VfsError::NotFound)?;
        if let Body::Directory(entries) = &self.node(child)?.body
            && !entries.is_empty()
        {
            return Err(VfsError::NotEmpty);
        }
        self.entries_mut(dir)?.remove(name);
        self.touch_directory(dir)?;
        self.unlink_node(child)
    }

    fn rename(&mut self, from: &VfsPath, to: &VfsPath, replace: bool) -> VfsResult<()> {
        let (Some((from_parent, from_name)), Some((to_parent, to_name))) =
            (from.parent_and_name(), to.parent_and_name())
        else {
            return Err(VfsError::Busy);
        };
        let from_chain = self.parent_chain(&from_parent)?;
        let to_chain = self.parent_chain(&to_parent)?;
        let (&from_dir, &to_dir) = (
            from_chain.last().ok_or(INCONSISTENT)?,
            to_chain.last().ok_or(INCONSISTENT)?,
        );
        let source = *self
            .directory_entries(from_dir)?
            .get(from_name)
            .ok_or(VfsError::NotFound)?;
        let target = self.directory_entries(to_dir)?.get(to_name).copied();
        if target.is_some() && !replace {
            return Err(VfsError::AlreadyExists);
        }
        // The kernel's checks for moving a directory under itself, in its order.
        if to_chain.contains(&source) {
            return Err(VfsError::Io(errno::EINVAL));
        }
        if target.is_some_and(|target| from_chain.contains(&target)) {
            return Err(VfsError::NotEmpty);
        }
        if target == Some(source) {
            return Ok(());
        }
        let source_is_directory = matches!(self.node(source)?.body, Body::Directory(_));
        if let Some(target) = target {
            match (&self.node(target)?.body, source_is_directory) {
                (Body::Directory(_), false) => return Err(VfsError::IsADirectory),
                (Body::Directory(entries), true) if !entries.is_empty() => {
                    return Err(VfsError::NotEmpty);
                }
                (Body::File(_) | Body::Symlink(_), true) => return Err(VfsError::NotADirectory),
                _ => {}
            }
        }
        self.entries_mut(from_dir)?.remove(from_name);
        self.entries_mut(to_dir)?.insert(to_name.to_owned(), source);
        self.touch_directory(from_dir)?;
        self.touch_directory(to_dir)?;
        self.node_mut(source)?.ctime = Timespec::now();
        match target {
            Some(target) => self.unlink_node(target),
            None => Ok(()),
        }
    }

    /// Adds the directory entry `new` for the file or symlink at `existing`.
    fn link(&mut self, existing: &VfsPath, new: &VfsPath) -> VfsResult<()> {
        let (Some((from_parent, from_name)), Some((to_parent, to_name))) =
            (existing.parent_and_name(), new.parent_and_name())
        else {
            return Err(VfsError::Busy);
        };
        let from_dir = self.parent_directory(&from_parent)?;
        let source = *self
            .entries(from_dir)?
            .get(from_name)
            .ok_or(VfsError::NotFound)?;
        if matches!(self.node(source)?.body, Body::Directory(_)) {
            // Linux refuses hard links to directories with EPERM.
            return Err(VfsError::PermissionDenied);
        }
        let to_dir = self.parent_directory(&to_parent)?;
        if self.entries(to_dir)?.contains_key(to_name) {
            return Err(VfsError::AlreadyExists);
        }
        self.entries_mut(to_dir)?.insert(to_name.to_owned(), source);
        self.touch_directory(to_dir)?;
        let node = self.node_mut(source)?;
        node.links += 1;
        node.ctime = Timespec::now();
        Ok(())
    }

    /// Creates a node at `path`, which must not exist (not even as a dangling symlink).
    fn insert(&mut self, path: &VfsPath, body: Body, mode: u32) -> VfsResult<u64> {
        let Some((parent, name)) = path.parent_and_name() else {
            return Err(VfsError::AlreadyExists);
        };
        let dir = self.parent_directory(&parent)?;
        if self.entries(dir)?.contains_key(name) {
            return Err(VfsError::AlreadyExists);
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.nodes
            .insert(ino, Node::new(body, mode, Timespec::now()));
        self.entries_mut(dir)?.insert(name.to_owned(), ino);
        self.touch_directory(dir)?;
        Ok(ino)
    }

    fn touch_directory(&mut self, dir: u64) -> VfsResult<()> {
        let now = Timespec::now();
        let node = self.node_mut(dir)?;
        node.mtime = now;
        node.ctime = now;
        Ok(())
    }

    /// Drops the directory entry's reference to a node, freeing it unless a handle is open.
    fn unlink_node(&mut self, ino: u64) -> VfsResult<()> {
        let node = self.node_mut(ino)?;
        node.links = node.links.saturating_sub(1);
        node.ctime = Timespec::now();
        if node.opens == 0 && node.links == 0 {
            self.free(ino);
        }
        Ok(())
    }

    fn free(&mut self, ino: u64) {
        if let Some(Node {
            body: Body::File(data),
            ..
        }) = self.nodes.remove(&ino)
        {
            self.space.release(data.allocated());
        }
    }

    fn stat(&self, ino: u64) -> VfsResult<FileStat> {
        let node = self.node(ino)?;
        let (size, allocated, nlink) = match &node.body {
            Body::File(data) => (data.size, data.allocated(), node.links),
            Body::Directory(entries) => {
                let subdirectories = entries
                    .values()
                    .filter(|child| {
                        matches!(
                            self.nodes.get(child),
                            Some(Node {
                                body: Body::Directory(_),
                                ..
                            })
                        )
                    })
                    .count() as u64;
                let nlink = if node.links > 0 {
                    2 + subdirectories
                } else {
                    0
                };
                (DIRECTORY_SIZE, DIRECTORY_SIZE, nlink)
            }
            Body::Symlink(target) => (target.len() as u64, 0, node.links),
        };
        Ok(FileStat {
            file_type: node.file_type(),
            size,
            allocated,
            ino,
            dev: MEMORY_DEV,
            nlink,
            mode: node.mode,
            uid: node.uid,
            gid: node.gid,
            atime: node.atime,
            mtime: node.mtime,
            ctime: node.ctime,
            btime: Some(node.btime),
        })
    }
}

impl Space {
    fn reserve(&mut self, bytes: u64) -> VfsResult<()> {
        match self.used.checked_add(bytes) {
            Some(used) if used <= self.capacity => {
                self.used = used;
                Ok(())
            }
            _ => Err(VfsError::NoSpace),
        }
    }

    fn release(&mut self, bytes: u64) {
        self.used = self.used.saturating_sub(bytes);
    }
}

/// Copies as much of `src` as fits into `dst`; returns the count.
fn copy_prefix(dst: &mut [u8], src: &[u8]) -> usize {
    let len = dst.len().min(src.len());
    if let (Some(dst), Some(src)) = (dst.get_mut(..len), src.get(..len)) {
        dst.copy_from_slice(src);
    }
    len
}

impl FileData {
    fn allocated(&self) -> u64 {
        self.chunks.len() as u64 * CHUNK_U64
    }

    /// Chunks in `first..=last` that are not allocated yet.
    fn missing_chunks(&self, first: u64, last: u64) -> u64 {
        (last - first + 1) - self.chunks.range(first..=last).count() as u64
    }

    fn read(&self, buf: &mut [u8], offset: u64) -> usize {
        let available = self.size.saturating_sub(offset);
        let len =
            usize::try_from(available).map_or(buf.len(), |available| available.min(buf.len()));
        let Some(out) = buf.get_mut(..len) else {
            return 0;
        };
        if len == 0 {
            return 0;
        }
        out.fill(0);
        let end = offset + len as u64;
        for (&index, chunk) in self
            .chunks
            .range(offset / CHUNK_U64..=(end - 1) / CHUNK_U64)
        {
            let chunk_start = index * CHUNK_U64;
            let from = offset.max(chunk_start);
            let to = end.min(chunk_start + CHUNK_U64);
            let src = chunk
                .get((from - chunk_start) as usize..(to - chunk_start) as usize)
                .unwrap_or_default();
            copy_prefix(
                out.get_mut((from - offset) as usize..).unwrap_or_default(),
                src,
            );
        }
        len
    }

    fn write(&mut self, data: &[u8], offset: u64, space: &mut Space) -> VfsResult<()> {
        let end = checked_range_end(offset, data.len() as u64)?;
        if data.is_empty() {
            return Ok(());
        }
        let new_chunks = self.missing_chunks(offset / CHUNK_U64, (end - 1) / CHUNK_U64);
        space.reserve(new_chunks * CHUNK_U64)?;
        let (mut position, mut rest) = (offset, data);
        while !rest.is_empty() {
            let chunk = self
                .chunks
                .entry(position / CHUNK_U64)
                .or_insert_with(|| Box::new([0; CHUNK]));
            let within = (position % CHUNK_U64) as usize;
            let copied = copy_prefix(chunk.get_mut(within..).unwrap_or_default(), rest);
            rest = rest.get(copied..).unwrap_or_default();
            position += copied as u64;
        }
        self.size = self.size.max(end);
        Ok(())
    }

    fn set_len(&mut self, len: u64, space: &mut Space) {
        if len < self.size {
            let kept_chunks = len.div_ceil(CHUNK_U64);
            let dropped = self.chunks.split_off(&kept_chunks);
            space.release(dropped.len() as u64 * CHUNK_U64);
            // Bytes past the end must read as zeros if the file grows again.
            let within = (len % CHUNK_U64) as usize;
            if within != 0
                && let Some(chunk) = self.chunks.get_mut(&(len / CHUNK_U64))
                && let Some(tail) = chunk.get_mut(within..)
            {
                tail.fill(0);
            }
        }
        self.size = len;
    }

    /// Frees the chunks inside `offset..end` and zeroes the parts of chunks at its edges.
    fn punch_hole(&mut self, offset: u64, end: u64, space: &mut Space) {
        let end = end.min(self.size);
        if offset >= end {
            return;
        }
        let (first, last) = (offset / CHUNK_U64, (end - 1) / CHUNK_U64);
        let inside: Vec<u64> = self.chunks.range(first..=last).map(|(&i, _)| i).collect();
        for index in inside {
            let start = index * CHUNK_U64;
            let from = offset.max(start) - start;
            let to = end.min(start + CHUNK_U64) - start;
            if from == 0 && to == CHUNK_U64 {
                self.chunks.remove(&index);
                space.release(CHUNK_U64);
            } else if let Some(bytes) = self
                .chunks
                .get_mut(&index)
                .and_then(|chunk| chunk.get_mut(from as usize..to as usize))
            {
                bytes.fill(0);
            }
        }
    }

    /// The allocated parts of `offset..end` (cut to the size), merged where chunks touch; at
    /// most `limit`.
    fn allocated_ranges(&self, offset: u64, end: u64, limit: usize) -> Vec<(u64, u64)> {
        let end = end.min(self.size);
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        if offset >= end {
            return ranges;
        }
        for (&index, _) in self
            .chunks
            .range(offset / CHUNK_U64..=(end - 1) / CHUNK_U64)
        {
            let from = (index * CHUNK_U64).max(offset);
            let to = ((index + 1) * CHUNK_U64).min(end);
            let full = ranges.len() == limit;
            match ranges.last_mut() {
                Some((start, len)) if *start + *len == from => *len = to - *start,
                _ if full => break,
                _ => ranges.push((from, to - from)),
            }
        }
        ranges
    }

    /// `fallocate`: mode 0 extends the size over the range, `keep_size` leaves it.
    fn allocate(
        &mut self,
        offset: u64,
        len: u64,
        keep_size: bool,
        space: &mut Space,
    ) -> VfsResult<()> {
        if len == 0 {
            return Err(VfsError::Io(errno::EINVAL));
        }
        let end = checked_range_end(offset, len)?;
        let (first, last) = (offset / CHUNK_U64, (end - 1) / CHUNK_U64);
        space.reserve(self.missing_chunks(first, last) * CHUNK_U64)?;
        for index in first..=last {
            self.chunks
                .entry(index)
                .or_insert_with(|| Box::new([0; CHUNK]));
        }
        if !keep_size {
            self.size = self.size.max(end);
        }
        Ok(())
    }
}

/// A handle on a [`MemoryVfs`] object; it stays usable after the object is unlinked.
pub struct MemoryFile {
    shared: Arc<Mutex<State>>,
    ino: u64,
    access: Access,
    is_directory: bool,
    case: CaseSensitivity,
}

impl MemoryFile {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.shared)
    }

    /// Runs `change` on the file's data if this handle may write it, then stamps the times.
    fn change_data<T>(
        &self,
        change: impl FnOnce(&mut FileData, &mut Space) -> VfsResult<T>,
    ) -> VfsResult<T> {
        if self.is_directory {
            return Err(VfsError::IsADirectory);
        }
        if !self.access.can_write() {
            return Err(VfsError::PermissionDenied);
        }
        let mut state = self.lock();
        let State { nodes, space, .. } = &mut *state;
        let node = nodes.get_mut(&self.ino).ok_or(INCONSISTENT)?;
        let Body::File(data) = &mut node.body else {
            return Err(VfsError::IsADirectory);
        };
        let result = change(data, space)?;
        let now = Timespec::now();
        node.mtime = now;
        node.ctime = now;
        Ok(result)
    }

    fn change_xattrs<T>(
        &self,
        change: impl FnOnce(&mut BTreeMap<String, Vec<u8>>) -> VfsResult<T>,
    ) -> VfsResult<T> {
        let mut state = self.lock();
        let node = state.node_mut(self.ino)?;
        let result = change(&mut node.xattrs)?;
        node.ctime = Timespec::now();
        Ok(result)
    }

    fn directory<T>(
        &self,
        read: impl FnOnce(&State, &BTreeMap<String, u64>) -> VfsResult<T>,
    ) -> VfsResult<T> {
        if !self.is_directory {
            return Err(VfsError::NotADirectory);
        }
        let state = self.lock();
        read(&state, state.entries(self.ino)?)
    }
}

impl VfsFile for MemoryFile {
    fn stat(&self) -> VfsResult<FileStat> {
        self.lock().stat(self.ino)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        if self.is_directory {
            return Err(VfsError::IsADirectory);
        }
        if !self.access.can_read() {
            return Err(VfsError::PermissionDenied);
        }
        let state = self.lock();
        match &state.node(self.ino)?.body {
            Body::File(data) => Ok(data.read(buf, offset)),
            _ => Err(VfsError::IsADirectory),
        }
    }

    /// Memory never waits on a device.
    fn try_read_append(
        &self,
        buf: &mut Vec<u8>,
        len: usize,
        offset: u64,
    ) -> Option<VfsResult<usize>> {
        Some(self.read_append(buf, len, offset))
    }

    fn write_at(&self, data: &[u8], offset: u64) -> VfsResult<usize> {
        self.change_data(|file, space| file.write(data, offset, space))?;
        Ok(data.len())
    }

    fn set_len(&self, len: u64) -> VfsResult<()> {
        checked_range_end(len, 0)?;
        self.change_data(|file, space| {
            file.set_len(len, space);
            Ok(())
        })
    }

    fn allocate(&self, offset: u64, len: u64) -> VfsResult<()> {
        self.change_data(|file, space| file.allocate(offset, len, false, space))
    }

    fn preallocate(&self, offset: u64, len: u64) -> VfsResult<()> {
        self.change_data(|file, space| file.allocate(offset, len, true, space))
    }

    fn sync(&self) -> VfsResult<()> {
        if self.access == Access::MetadataOnly {
            return Err(VfsError::PermissionDenied);
        }
        Ok(())
    }

    fn set_times(&self, atime: Option<Timespec>, mtime: Option<Timespec>) -> VfsResult<()> {
        if atime.is_none() && mtime.is_none() {
            return Ok(());
        }
        let mut state = self.lock();
        let node = state.node_mut(self.ino)?;
        node.atime = atime.unwrap_or(node.atime);
        node.mtime = mtime.unwrap_or(node.mtime);
        node.ctime = Timespec::now();
        Ok(())
    }

    fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) -> VfsResult<()> {
        let mut state = self.lock();
        let node = state.node_mut(self.ino)?;
        node.uid = uid.unwrap_or(node.uid);
        node.gid = gid.unwrap_or(node.gid);
        node.ctime = Timespec::now();
        Ok(())
    }

    fn set_mode(&self, mode: u32) -> VfsResult<()> {
        let mut state = self.lock();
        let node = state.node_mut(self.ino)?;
        node.mode = (node.mode & !0o7777) | (mode & 0o7777);
        node.ctime = Timespec::now();
        Ok(())
    }

    fn read_dir(&self) -> VfsResult<Vec<DirEntry>> {
        self.directory(|state, entries| {
            entries
                .iter()
                .map(|(name, &ino)| {
                    Ok(DirEntry {
                        name: name.clone(),
                        ino,
                        file_type: state.node(ino)?.file_type(),
                    })
                })
                .collect()
        })
    }

    fn stat_child(&self, name: &str) -> VfsResult<FileStat> {
        validate_name(name)?;
        self.directory(|state, entries| state.stat(*entries.get(name).ok_or(VfsError::NotFound)?))
    }

    fn lookup_child(&self, name: &str) -> VfsResult<Option<(String, FileStat)>> {
        validate_name(name)?;
        self.directory(|state, entries| {
            let real = match (entries.get_key_value(name), self.case) {
                (Some((real, _)), _) => real.clone(),
                (None, CaseSensitivity::Sensitive) => return Ok(None),
                (None, CaseSensitivity::Insensitive) => match choose_entry(entries, name) {
                    Found::Variant(real) => real,
                    Found::Exact | Found::Missing => return Ok(None),
                },
            };
            let ino = *entries.get(&real).ok_or(INCONSISTENT)?;
            Ok(Some((real, state.stat(ino)?)))
        })
    }

    fn get_xattr(&self, name: &str) -> VfsResult<Option<Vec<u8>>> {
        validate_xattr_name(name)?;
        Ok(self.lock().node(self.ino)?.xattrs.get(name).cloned())
    }

    fn get_child_xattr(&self, name: &str, xattr: &str) -> VfsResult<Option<Vec<u8>>> {
        validate_name(name)?;
        validate_xattr_name(xattr)?;
        self.directory(|state, entries| {
            let ino = *entries.get(name).ok_or(VfsError::NotFound)?;
            Ok(state.node(ino)?.xattrs.get(xattr).cloned())
        })
    }

    fn list_child_xattr(&self, name: &str) -> VfsResult<Vec<String>> {
        validate_name(name)?;
        self.directory(|state, entries| {
            let ino = *entries.get(name).ok_or(VfsError::NotFound)?;
            Ok(state.node(ino)?.xattrs.keys().cloned().collect())
        })
    }

    fn set_xattr(&self, name: &str, value: &[u8]) -> VfsResult<()> {
        validate_xattr_name(name)?;
        validate_xattr_value(value)?;
        self.change_xattrs(|xattrs| {
            xattrs.insert(name.to_owned(), value.to_vec());
            Ok(())
        })
    }

    fn remove_xattr(&self, name: &str) -> VfsResult<()> {
        validate_xattr_name(name)?;
        self.change_xattrs(|xattrs| xattrs.remove(name).map(drop).ok_or(VfsError::NotFound))
    }

    fn list_xattr(&self) -> VfsResult<Vec<String>> {
        Ok(self.lock().node(self.ino)?.xattrs.keys().cloned().collect())
    }

    fn copy_range(
        &self,
        src: &dyn VfsFile,
        src_offset: u64,
        offset: u64,
        len: u64,
    ) -> VfsResult<u64> {
        copy_by_reading(self, src, src_offset, offset, len)
    }

    fn clone_range(
        &self,
        src: &dyn VfsFile,
        src_offset: u64,
        offset: u64,
        len: u64,
    ) -> VfsResult<()> {
        let Some(source) = src.as_any().downcast_ref::<MemoryFile>() else {
            return Err(VfsError::CrossDevice);
        };
        if !Arc::ptr_eq(&self.shared, &source.shared) {
            return Err(VfsError::CrossDevice);
        }
        if self.is_directory || source.is_directory {
            return Err(VfsError::IsADirectory);
        }
        if !source.access.can_read() || !self.access.can_write() {
            return Err(VfsError::PermissionDenied);
        }
        if len == 0 {
            return Ok(());
        }
        checked_range_end(offset, len)?;
        let source_end = checked_range_end(src_offset, len)?;
        let source_size = source.stat()?.size;
        let aligned = |n: u64| n.is_multiple_of(CHUNK_U64);
        let reaches_end = source_end == source_size;
        if source_end > source_size
            || !aligned(src_offset)
            || !aligned(offset)
            || !(aligned(len) || reaches_end)
            || (self.ino == source.ino
                && offset < source_end
                && src_offset < offset.saturating_add(len))
        {
            return Err(VfsError::Io(errno::EINVAL));
        }
        copy_by_reading(self, src, src_offset, offset, len).map(drop)
    }

    fn punch_hole(&self, offset: u64, len: u64) -> VfsResult<()> {
        let end = offset.saturating_add(len);
        self.change_data(|file, space| {
            file.punch_hole(offset, end, space);
            Ok(())
        })
    }

    fn allocated_ranges(&self, offset: u64, len: u64, limit: usize) -> VfsResult<Vec<(u64, u64)>> {
        if self.is_directory {
            return Err(VfsError::IsADirectory);
        }
        let state = self.lock();
        match &state.node(self.ino)?.body {
            Body::File(data) => {
                Ok(data.allocated_ranges(offset, offset.saturating_add(len), limit))
            }
            _ => Err(VfsError::IsADirectory),
        }
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Drop for MemoryFile {
    fn drop(&mut self) {
        let mut state = self.lock();
        if let Some(node) = state.nodes.get_mut(&self.ino) {
            node.opens = node.opens.saturating_sub(1);
            if node.opens == 0 && node.links == 0 {
                state.free(self.ino);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::MAX_FILE_SIZE;

    crate::conformance_tests!(|| Box::new(MemoryVfs::new()) as Box<dyn Vfs>);

    mod case_sensitive {
        use super::*;

        crate::conformance_tests!(|| {
            Box::new(MemoryVfs::new().with_case_sensitivity(CaseSensitivity::Sensitive))
                as Box<dyn Vfs>
        });
    }

    mod case_views {
        use super::*;

        crate::case_conformance_tests!(|| {
            let tree = MemoryVfs::new();
            let exact = tree
                .clone()
                .with_case_sensitivity(CaseSensitivity::Sensitive);
            (
                Box::new(exact) as Box<dyn Vfs>,
                Box::new(tree) as Box<dyn Vfs>,
            )
        });
    }

    #[test]
    fn case_sensitivity_defaults_to_insensitive() {
        let vfs = MemoryVfs::new();
        assert_eq!(vfs.case_sensitivity(), CaseSensitivity::Insensitive);
        let exact = vfs.with_case_sensitivity(CaseSensitivity::Sensitive);
        assert_eq!(exact.case_sensitivity(), CaseSensitivity::Sensitive);
    }

    fn file(vfs: &MemoryVfs, name: &str) -> Box<dyn VfsFile> {
        let request = OpenRequest {
            access: Access::ReadWrite,
            disposition: crate::Disposition::OpenOrCreate,
            kind: Kind::File,
            create_mode: 0o644,
        };
        vfs.open(&VfsPath::parse(name).unwrap(), &request)
            .unwrap()
            .file
    }

    #[test]
    fn sparse_writes_cost_only_what_they_touch() {
        let vfs = MemoryVfs::with_capacity(4 * CHUNK_U64);
        let f = file(&vfs, "sparse");
        f.write_at(b"end", 1 << 40).unwrap();
        let stat = f.stat().unwrap();
        assert_eq!(stat.size, (1 << 40) + 3);
        assert_eq!(stat.allocated, CHUNK_U64);
        let mut buf = [0xff; 8];
        assert_eq!(f.read_at(&mut buf, (1 << 40) - 5).unwrap(), 8);
        assert_eq!(&buf, b"\0\0\0\0\0end");
    }

    #[test]
    fn capacity_bounds_allocation() {
        let vfs = MemoryVfs::with_capacity(2 * CHUNK_U64);
        let f = file(&vfs, "full");
        f.write_at(&[1; CHUNK], 0).unwrap();
        assert_eq!(
            f.write_at(&[1; CHUNK + 1], CHUNK_U64),
            Err(VfsError::NoSpace)
        );
        assert_eq!(f.allocate(0, 3 * CHUNK_U64), Err(VfsError::NoSpace));
        assert_eq!(f.stat().unwrap().size, CHUNK_U64);
        assert_eq!(vfs.fs_stat().unwrap().free_blocks, 1);
        f.set_len(0).unwrap();
        assert_eq!(vfs.fs_stat().unwrap().free_blocks, 2);
    }

    #[test]
    fn shrinking_zeroes_the_tail() {
        let vfs = MemoryVfs::new();
        let f = file(&vfs, "tail");
        f.write_at(&[7; 100], 0).unwrap();
        f.set_len(10).unwrap();
        f.set_len(100).unwrap();
        let mut buf = [0xff; 100];
        assert_eq!(f.read_at(&mut buf, 0).unwrap(), 100);
        assert_eq!(&buf[..10], &[7; 10]);
        assert_eq!(&buf[10..], &[0; 90]);
    }

    #[test]
    fn offsets_past_the_largest_file_are_refused() {
        let vfs = MemoryVfs::new();
        let f = file(&vfs, "huge");
        assert_eq!(f.write_at(b"x", MAX_FILE_SIZE), Err(VfsError::NoSpace));
        assert_eq!(f.write_at(b"x", u64::MAX), Err(VfsError::NoSpace));
        assert_eq!(f.set_len(MAX_FILE_SIZE + 1), Err(VfsError::NoSpace));
        assert_eq!(f.allocate(u64::MAX, 1), Err(VfsError::NoSpace));
        let mut buf = [0; 4];
        assert_eq!(f.read_at(&mut buf, u64::MAX).unwrap(), 0);
    }

    #[test]
    fn unlinked_files_are_freed_on_last_close() {
        let vfs = MemoryVfs::with_capacity(CHUNK_U64);
        let f = file(&vfs, "doomed");
        f.write_at(&[1; CHUNK], 0).unwrap();
        vfs.unlink(&VfsPath::parse("doomed").unwrap()).unwrap();
        assert_eq!(vfs.fs_stat().unwrap().free_blocks, 0);
        let mut buf = [0; 4];
        assert_eq!(f.read_at(&mut buf, 0).unwrap(), 4);
        assert_eq!(f.stat().unwrap().nlink, 0);
        drop(f);
        assert_eq!(vfs.fs_stat().unwrap().free_blocks, 1);
    }

    #[test]
    fn quota_records_are_kept_per_kind_and_enumerated_in_order() {
        assert_eq!(
            MemoryVfs::new().quota(QuotaKind::User, 0),
            Err(VfsError::Unsupported)
        );
        let vfs = MemoryVfs::new().with_quotas();
        assert_eq!(vfs.quota(QuotaKind::User, 7).unwrap(), Quota::default());
        vfs.set_quota_usage(QuotaKind::User, 7, 4096);
        vfs.set_quota_limits(QuotaKind::User, 7, 1 << 20, 2 << 20)
            .unwrap();
        vfs.set_quota_limits(QuotaKind::User, 3, 0, 10).unwrap();
        vfs.set_quota_limits(QuotaKind::Group, 5, 0, 10).unwrap();
        let record = vfs.quota(QuotaKind::User, 7).unwrap();
        assert_eq!(
            (record.used, record.soft_limit, record.hard_limit),
            (4096, 1 << 20, 2 << 20)
        );
        assert_eq!(vfs.next_quota(QuotaKind::User, 0).unwrap().unwrap().0, 3);
        assert_eq!(vfs.next_quota(QuotaKind::User, 4).unwrap().unwrap().0, 7);
        assert_eq!(vfs.next_quota(QuotaKind::User, 8).unwrap(), None);
        assert_eq!(vfs.next_quota(QuotaKind::Group, 0).unwrap().unwrap().0, 5);
    }
}
