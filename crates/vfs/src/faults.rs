//! A layer over any [`Vfs`] that makes chosen calls fail or wait, for tests of what the server
//! does when storage misbehaves: a disk that returns I/O errors, fills up, or stalls. Samba's
//! selftest does the same with its `error_inject` and `delay_inject` VFS modules; device-mapper
//! targets (`dm-error`, `dm-flakey`, `dm-delay`) would fail the block device itself, but are not
//! available everywhere smb3d is tested, so this layer is the fallback that works everywhere.
//!
//! A [`FaultPlan`] is a list of [`FaultRule`]s; each call that a rule matches (by operation,
//! path and xattr name) first sleeps for the rule's delay, then fails with its error, as many
//! times as the rule allows. The first rule that matches decides. Paths are the share-relative
//! ones the call names; a handle's calls match the path it was opened by (a later rename does
//! not move it).
//!
//! Reads go through the layer even where the back end could `sendfile` them: a handle of this
//! layer has no [`VfsFile::data_fd`].

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::{
    Credentials, DirEntry, FileStat, FsStat, HostLock, KernelLease, OpenRequest, Opened,
    OutsideSink, OutsideWatch, PipedData, Quota, QuotaKind, Timespec, Vfs, VfsError, VfsFile,
    VfsPath, VfsResult,
};

/// The calls a rule can match; each names one or a few related methods of [`Vfs`] and
/// [`VfsFile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// [`Vfs::open`], creating or not.
    Open,
    /// [`Vfs::stat`], [`VfsFile::stat`], [`VfsFile::stat_child`], [`VfsFile::lookup_child`].
    Stat,
    /// [`Vfs::unlink`].
    Unlink,
    /// [`Vfs::rename`]; the rule's path matches either name.
    Rename,
    /// [`Vfs::link`] and [`Vfs::symlink`].
    Link,
    /// [`Vfs::sync_dir`].
    SyncDir,
    /// [`VfsFile::read_dir`].
    ReadDir,
    /// [`VfsFile::read_at`], [`VfsFile::read_append`], [`VfsFile::allocated_ranges`].
    Read,
    /// [`VfsFile::write_at`], [`VfsFile::write_piped`], and the destination of
    /// [`VfsFile::copy_range`] and [`VfsFile::clone_range`].
    Write,
    /// [`VfsFile::set_len`], [`VfsFile::allocate`], [`VfsFile::preallocate`],
    /// [`VfsFile::punch_hole`].
    Allocate,
    /// [`VfsFile::sync`] (fsync).
    Sync,
    /// [`VfsFile::set_times`], [`VfsFile::set_owner`], [`VfsFile::set_mode`].
    SetAttributes,
    /// [`VfsFile::get_xattr`], [`VfsFile::get_child_xattr`], [`VfsFile::list_xattr`].
    GetXattr,
    /// [`VfsFile::set_xattr`] and [`VfsFile::remove_xattr`].
    SetXattr,
}

impl FaultOp {
    /// Every operation, in the order the names below list them.
    pub const ALL: [FaultOp; 14] = [
        Self::Open,
        Self::Stat,
        Self::Unlink,
        Self::Rename,
        Self::Link,
        Self::SyncDir,
        Self::ReadDir,
        Self::Read,
        Self::Write,
        Self::Allocate,
        Self::Sync,
        Self::SetAttributes,
        Self::GetXattr,
        Self::SetXattr,
    ];

    /// The name configurations use.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Stat => "stat",
            Self::Unlink => "unlink",
            Self::Rename => "rename",
            Self::Link => "link",
            Self::SyncDir => "sync_dir",
            Self::ReadDir => "read_dir",
            Self::Read => "read",
            Self::Write => "write",
            Self::Allocate => "allocate",
            Self::Sync => "sync",
            Self::SetAttributes => "set_attributes",
            Self::GetXattr => "get_xattr",
            Self::SetXattr => "set_xattr",
        }
    }

    /// The operation a configuration names, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }
}

/// One way calls misbehave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultRule {
    /// The operations it applies to; empty means every one.
    pub ops: Vec<FaultOp>,
    /// A share-relative path the call must name, `*` matching any run of characters (`/`
    /// included) and `?` one; `None` matches every path.
    pub path: Option<String>,
    /// For xattr operations, the attribute name, with the same wildcards; `None` matches every
    /// name (and calls that name none).
    pub xattr: Option<String>,
    /// How long a matching call waits before it runs (or fails).
    pub delay: Duration,
    /// The error a matching call fails with; `None` only delays it.
    pub error: Option<VfsError>,
    /// Matching calls that pass untouched before the rule takes effect.
    pub skip: u64,
    /// How many matching calls the rule affects after those; `None` is every one.
    pub times: Option<u64>,
}

impl FaultRule {
    fn matches(&self, op: FaultOp, paths: &[&str], xattr: Option<&str>) -> bool {
        (self.ops.is_empty() || self.ops.contains(&op))
            && self
                .path
                .as_deref()
                .is_none_or(|pattern| paths.iter().any(|p| glob(pattern, p)))
            && self
                .xattr
                .as_deref()
                .is_none_or(|pattern| xattr.is_some_and(|name| glob(pattern, name)))
    }
}

/// A rule and how many calls it has matched.
#[derive(Debug)]
struct ArmedRule {
    rule: FaultRule,
    matched: AtomicU64,
}

/// The rules of one share, shared by the layer and every handle it opened.
#[derive(Debug, Default)]
pub struct FaultPlan {
    rules: Vec<ArmedRule>,
    injected: AtomicU64,
}

impl FaultPlan {
    /// A plan of `rules`, the first matching rule deciding for each call.
    pub fn new(rules: Vec<FaultRule>) -> Self {
        Self {
            rules: rules
                .into_iter()
                .map(|rule| ArmedRule {
                    rule,
                    matched: AtomicU64::new(0),
                })
                .collect(),
            injected: AtomicU64::new(0),
        }
    }

    /// How many calls were delayed or failed so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    /// Whether a rule matches `op` on `paths`, whether or not it is still armed.
    fn any_matches(&self, op: FaultOp, paths: &[&str]) -> bool {
        self.rules
            .iter()
            .any(|armed| armed.rule.matches(op, paths, None))
    }

    /// Delays and fails the call if a rule says so.
    fn check(&self, op: FaultOp, paths: &[&str], xattr: Option<&str>) -> VfsResult<()> {
        let Some(armed) = self
            .rules
            .iter()
            .find(|armed| armed.rule.matches(op, paths, xattr))
        else {
            return Ok(());
        };
        let rule = &armed.rule;
        let seen = armed.matched.fetch_add(1, Ordering::Relaxed);
        let Some(nth) = seen.checked_sub(rule.skip) else {
            return Ok(());
        };
        if rule.times.is_some_and(|times| nth >= times) {
            return Ok(());
        }
        self.injected.fetch_add(1, Ordering::Relaxed);
        if !rule.delay.is_zero() {
            std::thread::sleep(rule.delay);
        }
        rule.error.map_or(Ok(()), Err)
    }
}

/// `pattern` against `text`: `*` is any run of characters, `?` one character, the rest literal.
fn glob(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    // The classic greedy match with one backtrack point, linear in practice and never
    // exponential.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || Some(&c) == text.get(t) => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern
        .get(p..)
        .is_some_and(|rest| rest.iter().all(|&c| c == '*'))
}

/// A [`Vfs`] whose calls misbehave as its [`FaultPlan`] says.
pub struct FaultVfs {
    inner: Arc<dyn Vfs>,
    plan: Arc<FaultPlan>,
}

impl FaultVfs {
    /// `inner` with `plan` applied to its calls and its handles' calls.
    pub fn new(inner: Arc<dyn Vfs>, plan: Arc<FaultPlan>) -> Self {
        Self { inner, plan }
    }

    /// The plan, to read how many faults were injected.
    pub fn plan(&self) -> &Arc<FaultPlan> {
        &self.plan
    }
}

impl Vfs for FaultVfs {
    fn run_as(&self, who: &Credentials, work: &mut dyn FnMut()) {
        self.inner.run_as(who, work);
    }

    fn run_privileged(&self, work: &mut dyn FnMut()) {
        self.inner.run_privileged(work);
    }

    fn runs_as_users(&self) -> bool {
        self.inner.runs_as_users()
    }

    fn open(&self, path: &VfsPath, req: &OpenRequest) -> VfsResult<Opened> {
        self.plan.check(FaultOp::Open, &[path.as_str()], None)?;
        let opened = self.inner.open(path, req)?;
        Ok(Opened {
            file: Box::new(FaultFile {
                inner: opened.file,
                path: path.as_str().to_owned(),
                plan: self.plan.clone(),
            }),
            ..opened
        })
    }

    fn open_link(&self, path: &VfsPath) -> VfsResult<Option<Opened>> {
        self.plan.check(FaultOp::Open, &[path.as_str()], None)?;
        Ok(self.inner.open_link(path)?.map(|opened| Opened {
            file: Box::new(FaultFile {
                inner: opened.file,
                path: path.as_str().to_owned(),
                plan: self.plan.clone(),
            }),
            ..opened
        }))
    }

    fn stat(&self, path: &VfsPath) -> VfsResult<FileStat> {
        self.plan.check(FaultOp::Stat, &[path.as_str()], None)?;
        self.inner.stat(path)
    }

    fn unlink(&self, path: &VfsPath) -> VfsResult<()> {
        self.plan.check(FaultOp::Unlink, &[path.as_str()], None)?;
        self.inner.unlink(path)
    }

    fn rename(&self, from: &VfsPath, to: &VfsPath, replace: bool) -> VfsResult<()> {
        self.plan
            .check(FaultOp::Rename, &[from.as_str(), to.as_str()], None)?;
        self.inner.rename(from, to, replace)
    }

    fn symlink(&self, target: &str, link: &VfsPath) -> VfsResult<()> {
        self.plan.check(FaultOp::Link, &[link.as_str()], None)?;
        self.inner.symlink(target, link)
    }

    fn check_symlink_target(&self, link: &VfsPath, target: &str) -> VfsResult<()> {
        self.inner.check_symlink_target(link, target)
    }

    fn read_link(&self, path: &VfsPath) -> VfsResult<Option<String>> {
        self.plan.check(FaultOp::Stat, &[path.as_str()], None)?;
        self.inner.read_link(path)
    }

    fn link(&self, existing: &VfsPath, new: &VfsPath) -> VfsResult<()> {
        self.plan
            .check(FaultOp::Link, &[existing.as_str(), new.as_str()], None)?;
        self.inner.link(existing, new)
    }

    fn sync_dir(&self, path: &VfsPath) -> VfsResult<()> {
        self.plan.check(FaultOp::SyncDir, &[path.as_str()], None)?;
        self.inner.sync_dir(path)
    }

    fn fs_stat(&self) -> VfsResult<FsStat> {
        self.inner.fs_stat()
    }

    fn can_clone(&self) -> bool {
        self.inner.can_clone()
    }

    fn quota(&self, kind: QuotaKind, id: u32) -> VfsResult<Quota> {
        self.inner.quota(kind, id)
    }

    fn set_quota_limits(&self, kind: QuotaKind, id: u32, soft: u64, hard: u64) -> VfsResult<()> {
        self.inner.set_quota_limits(kind, id, soft, hard)
    }

    fn next_quota(&self, kind: QuotaKind, from: u32) -> VfsResult<Option<(u32, Quota)>> {
        self.inner.next_quota(kind, from)
    }

    fn watch_outside(&self, sink: OutsideSink) -> Option<OutsideWatch> {
        self.inner.watch_outside(sink)
    }
}

/// A handle opened through a [`FaultVfs`].
struct FaultFile {
    inner: Box<dyn VfsFile>,
    /// The path it was opened by, which rules match.
    path: String,
    plan: Arc<FaultPlan>,
}

impl FaultFile {
    fn check(&self, op: FaultOp) -> VfsResult<()> {
        self.plan.check(op, &[&self.path], None)
    }

    fn check_xattr(&self, op: FaultOp, name: &str) -> VfsResult<()> {
        self.plan.check(op, &[&self.path], Some(name))
    }

    /// The path of this directory's entry `name`, for calls on a child.
    fn child(&self, name: &str) -> String {
        if self.path.is_empty() {
            name.to_owned()
        } else {
            format!("{}/{name}", self.path)
        }
    }
}

impl VfsFile for FaultFile {
    fn stat(&self) -> VfsResult<FileStat> {
        self.check(FaultOp::Stat)?;
        self.inner.stat()
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> VfsResult<usize> {
        self.check(FaultOp::Read)?;
        self.inner.read_at(buf, offset)
    }

    fn read_append(&self, buf: &mut Vec<u8>, len: usize, offset: u64) -> VfsResult<usize> {
        self.check(FaultOp::Read)?;
        self.inner.read_append(buf, len, offset)
    }

    /// A read a rule may delay or fail is one that waits: the caller takes the waiting path,
    /// where the rule acts.
    fn try_read_append(
        &self,
        buf: &mut Vec<u8>,
        len: usize,
        offset: u64,
    ) -> Option<VfsResult<usize>> {
        if self.plan.any_matches(FaultOp::Read, &[&self.path]) {
            return None;
        }
        self.inner.try_read_append(buf, len, offset)
    }

    fn set_host_lock(&self, offset: u64, len: u64, level: HostLock) -> VfsResult<bool> {
        self.inner.set_host_lock(offset, len, level)
    }

    fn host_lock_conflicts(&self, offset: u64, len: u64, write: bool) -> VfsResult<bool> {
        self.inner.host_lock_conflicts(offset, len, write)
    }

    fn set_kernel_lease(&self, lease: KernelLease, signal: i32) -> VfsResult<bool> {
        self.inner.set_kernel_lease(lease, signal)
    }

    fn kernel_lease(&self) -> VfsResult<KernelLease> {
        self.inner.kernel_lease()
    }

    fn reads_only(&self) -> bool {
        self.inner.reads_only()
    }

    fn write_at(&self, data: &[u8], offset: u64) -> VfsResult<usize> {
        self.check(FaultOp::Write)?;
        self.inner.write_at(data, offset)
    }

    fn write_piped(&self, data: &mut PipedData, offset: u64) -> VfsResult<usize> {
        self.check(FaultOp::Write)?;
        self.inner.write_piped(data, offset)
    }

    fn set_len(&self, len: u64) -> VfsResult<()> {
        self.check(FaultOp::Allocate)?;
        self.inner.set_len(len)
    }

    fn allocate(&self, offset: u64, len: u64) -> VfsResult<()> {
        self.check(FaultOp::Allocate)?;
        self.inner.allocate(offset, len)
    }

    fn preallocate(&self, offset: u64, len: u64) -> VfsResult<()> {
        self.check(FaultOp::Allocate)?;
        self.inner.preallocate(offset, len)
    }

    fn sync(&self) -> VfsResult<()> {
        self.check(FaultOp::Sync)?;
        self.inner.sync()
    }

    fn set_times(&self, atime: Option<Timespec>, mtime: Option<Timespec>) -> VfsResult<()> {
        self.check(FaultOp::SetAttributes)?;
        self.inner.set_times(atime, mtime)
    }

    fn set_owner(&self, uid: Option<u32>, gid: Option<u32>) -> VfsResult<()> {
        self.check(FaultOp::SetAttributes)?;
        self.inner.set_owner(uid, gid)
    }

    fn set_mode(&self, mode: u32) -> VfsResult<()> {
        self.check(FaultOp::SetAttributes)?;
        self.inner.set_mode(mode)
    }

    fn read_dir(&self) -> VfsResult<Vec<DirEntry>> {
        self.check(FaultOp::ReadDir)?;
        self.inner.read_dir()
    }

    fn stat_child(&self, name: &str) -> VfsResult<FileStat> {
        self.plan.check(FaultOp::Stat, &[&self.child(name)], None)?;
        self.inner.stat_child(name)
    }

    fn lookup_child(&self, name: &str) -> VfsResult<Option<(String, FileStat)>> {
        self.plan.check(FaultOp::Stat, &[&self.child(name)], None)?;
        self.inner.lookup_child(name)
    }

    fn get_xattr(&self, name: &str) -> VfsResult<Option<Vec<u8>>> {
        self.check_xattr(FaultOp::GetXattr, name)?;
        self.inner.get_xattr(name)
    }

    fn get_child_xattr(&self, name: &str, xattr: &str) -> VfsResult<Option<Vec<u8>>> {
        self.plan
            .check(FaultOp::GetXattr, &[&self.child(name)], Some(xattr))?;
        self.inner.get_child_xattr(name, xattr)
    }

    fn list_child_xattr(&self, name: &str) -> VfsResult<Vec<String>> {
        self.plan
            .check(FaultOp::GetXattr, &[&self.child(name)], None)?;
        self.inner.list_child_xattr(name)
    }

    fn set_xattr(&self, name: &str, value: &[u8]) -> VfsResult<()> {
        self.check_xattr(FaultOp::SetXattr, name)?;
        self.inner.set_xattr(name, value)
    }

    fn remove_xattr(&self, name: &str) -> VfsResult<()> {
        self.check_xattr(FaultOp::SetXattr, name)?;
        self.inner.remove_xattr(name)
    }

    fn list_xattr(&self) -> VfsResult<Vec<String>> {
        self.check(FaultOp::GetXattr)?;
        self.inner.list_xattr()
    }

    fn copy_range(
        &self,
        src: &dyn VfsFile,
        src_offset: u64,
        offset: u64,
        len: u64,
    ) -> VfsResult<u64> {
        self.check(FaultOp::Write)?;
        self.inner.copy_range(src, src_offset, offset, len)
    }

    fn clone_range(
        &self,
        src: &dyn VfsFile,
        src_offset: u64,
        offset: u64,
        len: u64,
    ) -> VfsResult<()> {
        self.check(FaultOp::Write)?;
        self.inner.clone_range(src, src_offset, offset, len)
    }

    fn punch_hole(&self, offset: u64, len: u64) -> VfsResult<()> {
        self.check(FaultOp::Allocate)?;
        self.inner.punch_hole(offset, len)
    }

    fn allocated_ranges(&self, offset: u64, len: u64, limit: usize) -> VfsResult<Vec<(u64, u64)>> {
        self.check(FaultOp::Read)?;
        self.inner.allocated_ranges(offset, len, limit)
    }

    /// The inner handle, so that the back end recognises its own handles as the source of a
    /// copy or clone through this layer.
    fn as_any(&self) -> &dyn Any {
        self.inner.as_any()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Access, Disposition, Kind, MemoryVfs, errno};

    fn request() -> OpenRequest {
        OpenRequest {
            access: Access::ReadWrite,
            disposition: Disposition::OpenOrCreate,
            kind: Kind::File,
            create_mode: 0o644,
        }
    }

    fn path(p: &str) -> VfsPath {
        VfsPath::parse(p).unwrap()
    }

    fn layer(rules: Vec<FaultRule>) -> FaultVfs {
        FaultVfs::new(
            Arc::new(MemoryVfs::with_capacity(1 << 20)),
            Arc::new(FaultPlan::new(rules)),
        )
    }

    #[test]
    fn globs_match_runs_and_single_characters() {
        assert!(glob("bad*", "bad"));
        assert!(glob("bad*", "bad/deep/file"));
        assert!(glob("*.txt", "dir/a.txt"));
        assert!(glob("a?c", "abc"));
        assert!(glob("*", ""));
        assert!(!glob("a?c", "ac"));
        assert!(!glob("bad*", "good"));
        assert!(!glob("*.txt", "a.txt.bak"));
        assert!(glob("*a*b*c", "xxaxxbxxcxxc"));
        assert!(!glob("*a*b*c", "xxaxxcxxb"));
    }

    #[test]
    fn a_rule_fails_only_the_calls_it_names() {
        let vfs = layer(vec![FaultRule {
            ops: vec![FaultOp::Write],
            path: Some("bad*".into()),
            error: Some(VfsError::Io(errno::EIO)),
            ..FaultRule::default()
        }]);
        let bad = vfs.open(&path("bad.bin"), &request()).unwrap().file;
        let good = vfs.open(&path("good.bin"), &request()).unwrap().file;
        assert_eq!(bad.write_at(b"x", 0), Err(VfsError::Io(errno::EIO)));
        assert_eq!(bad.read_at(&mut [0; 1], 0), Ok(0), "reads pass");
        assert_eq!(good.write_at(b"x", 0), Ok(1));
        assert_eq!(vfs.plan().injected(), 1);
    }

    #[test]
    fn a_read_a_rule_may_stall_is_never_tried_from_the_cache() {
        let vfs = layer(vec![FaultRule {
            ops: vec![FaultOp::Read],
            path: Some("slow*".into()),
            delay: std::time::Duration::from_secs(60),
            ..FaultRule::default()
        }]);
        let slow = vfs.open(&path("slow.bin"), &request()).unwrap().file;
        let fast = vfs.open(&path("fast.bin"), &request()).unwrap().file;
        let mut buf = Vec::new();
        assert!(
            slow.try_read_append(&mut buf, 1, 0).is_none(),
            "it would wait 60 s"
        );
        assert_eq!(fast.try_read_append(&mut buf, 1, 0), Some(Ok(0)));
        assert_eq!(vfs.plan().injected(), 0, "declining is not a fault");
    }

    #[test]
    fn skip_and_times_bound_a_rule() {
        let vfs = layer(vec![FaultRule {
            ops: vec![FaultOp::Sync],
            error: Some(VfsError::Io(errno::EIO)),
            skip: 1,
            times: Some(2),
            ..FaultRule::default()
        }]);
        let file = vfs.open(&path("f"), &request()).unwrap().file;
        let results: Vec<_> = (0..5).map(|_| file.sync().is_ok()).collect();
        assert_eq!(results, [true, false, false, true, true]);
    }

    #[test]
    fn xattr_rules_match_the_attribute_name() {
        let vfs = layer(vec![FaultRule {
            ops: vec![FaultOp::SetXattr],
            xattr: Some("security.NTACL".into()),
            error: Some(VfsError::NoSpace),
            ..FaultRule::default()
        }]);
        let file = vfs.open(&path("f"), &request()).unwrap().file;
        assert_eq!(
            file.set_xattr("security.NTACL", b"sd"),
            Err(VfsError::NoSpace)
        );
        assert_eq!(file.set_xattr("user.DOSATTRIB", b"a"), Ok(()));
    }

    #[test]
    fn path_calls_match_either_name_of_a_rename() {
        let vfs = layer(vec![FaultRule {
            ops: vec![FaultOp::Rename, FaultOp::Open],
            path: Some("full/*".into()),
            error: Some(VfsError::NoSpace),
            ..FaultRule::default()
        }]);
        vfs.open(&path("a"), &request()).unwrap();
        assert_eq!(
            vfs.rename(&path("a"), &path("full/a"), false),
            Err(VfsError::NoSpace)
        );
        assert!(matches!(
            vfs.open(&path("full/b"), &request()),
            Err(VfsError::NoSpace)
        ));
        vfs.rename(&path("a"), &path("b"), false).unwrap();
    }

    #[test]
    fn a_delay_without_error_lets_the_call_finish() {
        let vfs = layer(vec![FaultRule {
            ops: vec![FaultOp::Read],
            delay: Duration::from_millis(20),
            ..FaultRule::default()
        }]);
        let file = vfs.open(&path("slow"), &request()).unwrap().file;
        file.write_at(b"data", 0).unwrap();
        let started = std::time::Instant::now();
        let mut buf = [0; 4];
        assert_eq!(file.read_at(&mut buf, 0), Ok(4));
        assert_eq!(&buf, b"data");
        assert!(started.elapsed() >= Duration::from_millis(20));
    }

    #[test]
    fn handles_have_no_descriptor_to_bypass_the_layer() {
        let vfs = layer(Vec::new());
        let file = vfs.open(&path("f"), &request()).unwrap().file;
        assert!(file.data_fd().is_none());
    }

    /// With no rule the layer changes nothing a back end promises.
    mod transparent {
        use super::*;

        crate::conformance_tests!(|| Box::new(FaultVfs::new(
            Arc::new(MemoryVfs::new()),
            Arc::default()
        )) as Box<dyn Vfs>);
    }

    #[test]
    fn op_names_round_trip() {
        for op in FaultOp::ALL {
            assert_eq!(FaultOp::from_name(op.name()), Some(op));
        }
        assert_eq!(FaultOp::from_name("fsync"), None);
    }
}
