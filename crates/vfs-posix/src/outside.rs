//! Changes made below the share by other processes, seen through fanotify.
//!
//! One fanotify group per watch, with a mark on the whole file system holding the share
//! (`FAN_MARK_FILESYSTEM`: marks per directory would be needed on every subdirectory of a
//! recursive watch, and on each new one as it appears). Each event names the directory by its
//! file handle and the entry by its name (`FAN_REPORT_DFID_NAME`), and carries the pid of the
//! process that caused it, so the server's own changes, which it reports itself and in order,
//! are dropped exactly. A directory handle becomes a path by opening it (`open_by_handle_at`)
//! and reading the descriptor's link in /proc; directories outside the share are ignored, and
//! both answers are cached until a directory is renamed or removed.
//!
//! On a cluster node (a share built with [`crate::PosixVfs::with_other_nodes_ignored`])
//! changes made by other smb3d processes of this host are dropped too: they are other nodes of
//! the cluster sharing this file system (tests, the demo), whose changes arrive through the
//! cluster, once. On a shared network file system the host does not see other nodes' changes
//! at all. Such a process runs this program's binary under this process's real user (a local
//! user starting a copy of the binary does not hide their changes); see [`Nodes`] for why a
//! reused pid is not misjudged as one.
//!
//! The mark needs CAP_SYS_ADMIN and `open_by_handle_at` CAP_DAC_READ_SEARCH: a server without
//! them sees no outside changes.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Once;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::{Mode, OFlags, fstat};
use rustix::io::{Errno, read};
use rustix::pipe::{PipeFlags, pipe_with};
use rustix::process::{Pid, PidfdFlags, getuid, pidfd_open};
use smb3d_credentials::ServiceCreds;
use smb3d_vfs::{OutsideChange, OutsideSink, OutsideWatch, VfsPath};

use crate::sys;

/// The events that change what a listing of a directory shows.
const MASK: u64 = libc::FAN_CREATE
    | libc::FAN_DELETE
    | libc::FAN_RENAME
    | libc::FAN_MODIFY
    | libc::FAN_ATTRIB
    | libc::FAN_ONDIR;
/// Directory handles whose place is remembered; beyond, the cache starts again.
const CACHE_LIMIT: usize = 4096;
/// Bytes read from the group at a time (events are at most a few hundred bytes each).
const READ_BUFFER: usize = 64 * 1024;
/// `struct fanotify_event_metadata`: event_len u32, vers u8, reserved u8, metadata_len u16,
/// mask u64, fd i32, pid i32.
const METADATA_LEN: usize = 24;
/// `struct fanotify_event_info_header` (info_type u8, pad u8, len u16) and the fsid after it.
const INFO_HEADER_LEN: usize = 4 + 8;
/// `struct file_handle` before its bytes: handle_bytes u32, handle_type i32.
const HANDLE_HEADER_LEN: usize = 8;

/// Starts watching the file system of the share whose root is `root`, or says why not once.
/// With `ignore_other_nodes` (a cluster node), changes made by other smb3d processes of this
/// host are dropped as well as this process's own.
pub(crate) fn watch(
    service: ServiceCreds<'_>,
    root: BorrowedFd<'_>,
    ignore_other_nodes: bool,
    sink: OutsideSink,
) -> Option<OutsideWatch> {
    match start(service, root, ignore_other_nodes, sink) {
        Ok(watch) => Some(watch),
        Err(error) => {
            static ONCE: Once = Once::new();
            ONCE.call_once(|| {
                tracing::info!(
                    "changes made on the host file system will not be seen (fanotify: {error})"
                );
            });
            None
        }
    }
}

fn start(
    service: ServiceCreds<'_>,
    root: BorrowedFd<'_>,
    ignore_other_nodes: bool,
    sink: OutsideSink,
) -> io::Result<OutsideWatch> {
    let group = fanotify_init(service)?;
    fanotify_mark(service, &group, root)?;
    let (stop, keep) = pipe_with(PipeFlags::CLOEXEC)?;
    let reader = Reader {
        root: fd_path(root)?,
        mount: sys::openat(
            service.creds(),
            root,
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?,
        group,
        stop,
        own_pid: i32::try_from(std::process::id()).unwrap_or(-1),
        nodes: ignore_other_nodes
            .then(|| std::fs::read_link("/proc/self/exe").ok())
            .flatten()
            .map(Nodes::new),
        places: HashMap::new(),
        sink,
    };
    std::thread::Builder::new()
        .name("smb3d-fanotify".into())
        // Proofs stay with their thread: the reader makes its own.
        .spawn(move || smb3d_credentials::privileged(|service| reader.run(service)))?;
    // Dropping the watch closes the pipe's write end, which ends the reader.
    Ok(OutsideWatch::new(Box::new(keep)))
}

#[allow(unsafe_code)]
fn fanotify_init(_: ServiceCreds<'_>) -> io::Result<OwnedFd> {
    let flags =
        libc::FAN_CLASS_NOTIF | libc::FAN_CLOEXEC | libc::FAN_NONBLOCK | libc::FAN_REPORT_DFID_NAME;
    let event_flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_LARGEFILE;
    // SAFETY: flags in, a new descriptor or -1 out; no memory is shared.
    let fd = unsafe { libc::fanotify_init(flags, event_flags.cast_unsigned()) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[allow(unsafe_code)]
fn fanotify_mark(_: ServiceCreds<'_>, group: &OwnedFd, root: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: both descriptors are open for the call and the path is a NUL-terminated literal
    // the kernel only reads during it.
    let result = unsafe {
        libc::fanotify_mark(
            group.as_raw_fd(),
            libc::FAN_MARK_ADD | libc::FAN_MARK_FILESYSTEM,
            MASK,
            root.as_raw_fd(),
            c".".as_ptr(),
        )
    };
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Opens (`O_PATH`) what a file handle reported by fanotify designates.
#[allow(unsafe_code)]
fn open_by_handle(
    _: ServiceCreds<'_>,
    mount: BorrowedFd<'_>,
    handle_type: i32,
    handle: &[u8],
) -> io::Result<OwnedFd> {
    let handle_bytes = u32::try_from(handle.len()).map_err(|_| Errno::INVAL)?;
    // `struct file_handle` in 32-bit words: its two fields, then the handle's bytes.
    let mut words = Vec::with_capacity(2 + handle.len().div_ceil(4));
    words.push(handle_bytes);
    words.push(handle_type.cast_unsigned());
    for chunk in handle.chunks(4) {
        let mut word = [0; 4];
        word.iter_mut()
            .zip(chunk)
            .for_each(|(to, from)| *to = *from);
        words.push(u32::from_ne_bytes(word));
    }
    // SAFETY: `words` is a `struct file_handle` (aligned for its u32/i32 fields) whose
    // handle_bytes counts the bytes that follow; the kernel reads it only during the call and
    // returns a new descriptor or -1.
    let fd = unsafe {
        libc::open_by_handle_at(
            mount.as_raw_fd(),
            words.as_mut_ptr().cast(),
            libc::O_PATH | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The absolute path `fd` designates now.
fn fd_path(fd: BorrowedFd<'_>) -> io::Result<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

struct Reader {
    /// The share root's absolute path.
    root: PathBuf,
    /// A descriptor on the share's file system, for `open_by_handle_at`.
    mount: OwnedFd,
    group: OwnedFd,
    /// Read end of the pipe whose write end the watch holds.
    stop: OwnedFd,
    own_pid: i32,
    /// Other smb3d processes of this host, whose changes are dropped: on a cluster node only.
    nodes: Option<Nodes>,
    /// Directory handle (type and bytes) -> its path in the share, `None` outside it.
    places: HashMap<Vec<u8>, Option<VfsPath>>,
    sink: OutsideSink,
}

impl Reader {
    fn run(mut self, service: ServiceCreds<'_>) {
        let mut buffer = vec![0; READ_BUFFER];
        loop {
            let mut fds = [
                PollFd::new(&self.group, PollFlags::IN),
                PollFd::new(&self.stop, PollFlags::IN),
            ];
            match poll(&mut fds, None) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(error) => {
                    tracing::warn!("fanotify: poll: {error}");
                    return;
                }
            }
            if fds.get(1).is_some_and(|fd| !fd.revents().is_empty()) {
                return;
            }
            loop {
                match read(&self.group, &mut buffer) {
                    Ok(0) | Err(Errno::AGAIN) => break,
                    Ok(n) => self.events(service, buffer.get(..n).unwrap_or_default()),
                    Err(Errno::INTR) => {}
                    Err(error) => {
                        tracing::warn!("fanotify: read: {error}");
                        return;
                    }
                }
            }
        }
    }

    fn events(&mut self, service: ServiceCreds<'_>, mut bytes: &[u8]) {
        while let Some(event) = Event::next(&mut bytes) {
            self.event(service, &event);
        }
    }

    fn event(&mut self, service: ServiceCreds<'_>, event: &Event<'_>) {
        if event.mask & libc::FAN_Q_OVERFLOW != 0 {
            self.places.clear();
            (self.sink)(OutsideChange::Lost);
            return;
        }
        let directory = event.mask & libc::FAN_ONDIR != 0;
        let own =
            event.pid == self.own_pid || self.nodes.as_mut().is_some_and(|n| n.is_node(event.pid));
        if !own {
            let (mut entry, mut old, mut new) = (None, None, None);
            for record in Record::all(event.records) {
                let path = self.path_of(service, &record);
                match record.kind {
                    libc::FAN_EVENT_INFO_TYPE_DFID_NAME => entry = path,
                    libc::FAN_EVENT_INFO_TYPE_OLD_DFID_NAME => old = path,
                    libc::FAN_EVENT_INFO_TYPE_NEW_DFID_NAME => new = path,
                    _ => {}
                }
            }
            self.report(event.mask, directory, entry, old, new);
        }
        // Whoever moved or removed a directory, the paths remembered below it are stale.
        if directory && event.mask & (libc::FAN_RENAME | libc::FAN_DELETE) != 0 {
            self.places.clear();
        }
    }

    fn report(
        &mut self,
        mask: u64,
        directory: bool,
        entry: Option<VfsPath>,
        old: Option<VfsPath>,
        new: Option<VfsPath>,
    ) {
        if mask & libc::FAN_RENAME != 0 {
            let change = match (old, new) {
                (Some(from), Some(to)) => OutsideChange::Renamed {
                    from,
                    to,
                    directory,
                },
                (Some(path), None) => OutsideChange::Removed { path, directory },
                (None, Some(path)) => OutsideChange::Added { path, directory },
                (None, None) => return,
            };
            (self.sink)(change);
        }
        let Some(path) = entry else {
            return;
        };
        // Events merged while queued keep their order of kinds: created, written, changed,
        // removed.
        if mask & libc::FAN_CREATE != 0 {
            (self.sink)(OutsideChange::Added {
                path: path.clone(),
                directory,
            });
        }
        if mask & libc::FAN_MODIFY != 0 {
            (self.sink)(OutsideChange::Written { path: path.clone() });
        }
        if mask & libc::FAN_ATTRIB != 0 {
            (self.sink)(OutsideChange::MetadataChanged {
                path: path.clone(),
                directory,
            });
        }
        if mask & libc::FAN_DELETE != 0 {
            (self.sink)(OutsideChange::Removed { path, directory });
        }
    }

    /// The path in the share of the entry a record names, if it is in the share. The name
    /// `.` stands for the directory itself.
    fn path_of(&mut self, service: ServiceCreds<'_>, record: &Record<'_>) -> Option<VfsPath> {
        let dir = self.place(service, record.handle_type, record.handle)?;
        let name = std::str::from_utf8(record.name).ok()?;
        if name == "." {
            return (!dir.is_root()).then_some(dir);
        }
        dir.join(name).ok()
    }

    fn place(
        &mut self,
        service: ServiceCreds<'_>,
        handle_type: i32,
        handle: &[u8],
    ) -> Option<VfsPath> {
        let mut key = Vec::with_capacity(4 + handle.len());
        key.extend_from_slice(&handle_type.to_ne_bytes());
        key.extend_from_slice(handle);
        if let Some(place) = self.places.get(&key) {
            return place.clone();
        }
        let place = self.locate(service, handle_type, handle);
        if self.places.len() >= CACHE_LIMIT {
            self.places.clear();
        }
        self.places.insert(key, place.clone());
        place
    }

    fn locate(
        &self,
        service: ServiceCreds<'_>,
        handle_type: i32,
        handle: &[u8],
    ) -> Option<VfsPath> {
        let fd = open_by_handle(service, self.mount.as_fd(), handle_type, handle).ok()?;
        if fstat(&fd).ok()?.st_nlink == 0 {
            return None;
        }
        let path = fd_path(fd.as_fd()).ok()?;
        VfsPath::parse(path.strip_prefix(&self.root).ok()?.to_str()?).ok()
    }
}

/// Which pids are other smb3d processes of this host (other cluster nodes), asked of /proc once
/// per process.
///
/// A pid the kernel gives again to a new process is never taken for the node that had it: a
/// node is remembered with a pidfd, which tells when that process has ended, and is then
/// forgotten and asked again. A pid that was not a node is remembered as such (up to
/// CACHE_LIMIT pids, then all are forgotten) and may, once reused by a new node, be taken for
/// a process that is not one: that node's changes are then reported twice (from the host and
/// through the cluster), never lost. The pid of an event is that of its process when the
/// change was made; a process that ends and whose pid is reused before the event is read is
/// judged as the new process.
struct Nodes {
    /// This program, to know other smb3d processes by.
    own_exe: PathBuf,
    /// This process's real user; a node runs as it.
    own_uid: u32,
    /// Pid -> a pidfd of the node that has it, or `None` for a pid that is not a node.
    known: HashMap<i32, Option<OwnedFd>>,
}

impl Nodes {
    fn new(own_exe: PathBuf) -> Self {
        Self {
            own_exe,
            own_uid: getuid().as_raw(),
            known: HashMap::new(),
        }
    }

    /// Whether `pid` is another process of this program running as this process's user.
    fn is_node(&mut self, pid: i32) -> bool {
        match self.known.get(&pid) {
            Some(None) => return false,
            Some(Some(pidfd)) if !ended(pidfd) => return true,
            Some(Some(_)) => {
                self.known.remove(&pid);
            }
            None => {}
        }
        if self.known.len() >= CACHE_LIMIT {
            self.known.clear();
        }
        let node = self.ask(pid);
        let is_node = node.is_some();
        self.known.insert(pid, node);
        is_node
    }

    /// A pidfd of `pid` if it is a node. The pidfd is taken first, and the answer kept only if
    /// its process has not ended meanwhile: then /proc's answers were about that process.
    fn ask(&self, pid: i32) -> Option<OwnedFd> {
        // 0 (a process this pid namespace cannot see) and below name no process.
        let pid_of = (pid > 0).then(|| Pid::from_raw(pid)).flatten()?;
        let pidfd = pidfd_open(pid_of, PidfdFlags::empty()).ok()?;
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        (exe == self.own_exe && real_uid(&status) == Some(self.own_uid) && !ended(&pidfd))
            .then_some(pidfd)
    }
}

/// Whether the process of `pidfd` has ended (a pidfd polls readable from then on).
fn ended(pidfd: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // A pidfd whose state cannot be read is taken as ended: asked again, not trusted.
    poll(&mut fds, Some(&now)).map_or(true, |_| {
        fds.first().is_none_or(|fd| !fd.revents().is_empty())
    })
}

/// The real uid on the `Uid:` line of a /proc/PID/status text.
fn real_uid(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_whitespace().next()?.parse().ok()
}

/// One event from the group, its info records not yet parsed.
struct Event<'a> {
    mask: u64,
    pid: i32,
    records: &'a [u8],
}

impl<'a> Event<'a> {
    /// The event at the start of `bytes`, which then move past it; `None` at the end or at
    /// anything malformed (the rest of the read is dropped).
    fn next(bytes: &mut &'a [u8]) -> Option<Self> {
        let event_len = usize::try_from(u32::from_ne_bytes(array(bytes, 0)?)).ok()?;
        let version = *bytes.get(4)?;
        let metadata_len = usize::from(u16::from_ne_bytes(array(bytes, 6)?));
        if version != libc::FANOTIFY_METADATA_VERSION
            || metadata_len < METADATA_LEN
            || event_len < metadata_len
        {
            return None;
        }
        let event = Event {
            mask: u64::from_ne_bytes(array(bytes, 8)?),
            pid: i32::from_ne_bytes(array(bytes, 20)?),
            records: bytes.get(metadata_len..event_len)?,
        };
        *bytes = bytes.get(event_len..)?;
        Some(event)
    }
}

/// An info record naming a directory by file handle, and an entry in it.
struct Record<'a> {
    kind: u8,
    handle_type: i32,
    handle: &'a [u8],
    name: &'a [u8],
}

impl<'a> Record<'a> {
    /// The records of an event; parsing stops at anything malformed.
    fn all(mut bytes: &'a [u8]) -> impl Iterator<Item = Record<'a>> {
        std::iter::from_fn(move || {
            let len = usize::from(u16::from_ne_bytes(array(bytes, 2)?));
            let record = bytes.get(..len)?;
            bytes = bytes.get(len..)?;
            Self::parse(record)
        })
    }

    fn parse(record: &'a [u8]) -> Option<Self> {
        let kind = *record.first()?;
        let handle_at = INFO_HEADER_LEN + HANDLE_HEADER_LEN;
        let handle_len =
            usize::try_from(u32::from_ne_bytes(array(record, INFO_HEADER_LEN)?)).ok()?;
        let handle_type = i32::from_ne_bytes(array(record, INFO_HEADER_LEN + 4)?);
        let handle = record.get(handle_at..handle_at.checked_add(handle_len)?)?;
        let rest = record.get(handle_at + handle_len..)?;
        let name = rest.split(|b| *b == 0).next().unwrap_or_default();
        Some(Record {
            kind,
            handle_type,
            handle,
            name,
        })
    }
}

/// The `N` bytes at `at`, if there are.
fn array<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child running `sleep`, and the binary it runs (standing for this program).
    fn sleeper() -> (std::process::Child, PathBuf) {
        let child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let exe = std::fs::read_link(format!("/proc/{}/exe", child.id())).unwrap();
        (child, exe)
    }

    #[test]
    fn a_node_that_ended_is_forgotten_not_judged_by_its_old_pid() {
        let (mut child, exe) = sleeper();
        let pid = i32::try_from(child.id()).unwrap();
        let mut nodes = Nodes::new(exe);
        assert!(nodes.is_node(pid));
        assert!(nodes.is_node(pid), "remembered while it runs");
        child.kill().unwrap();
        child.wait().unwrap();
        // Its pid may now go to any process: before pidfds, the cached answer said "a node"
        // and that process's changes were dropped.
        assert!(!nodes.is_node(pid));
    }

    #[test]
    fn other_programs_and_users_are_not_nodes() {
        let (mut child, _) = sleeper();
        let pid = i32::try_from(child.id()).unwrap();
        let mut nodes = Nodes::new(PathBuf::from("/nonexistent/smb3d"));
        assert!(!nodes.is_node(pid));
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        let mut other_user = Nodes::new(exe);
        other_user.own_uid = other_user.own_uid.wrapping_add(1);
        assert!(!other_user.is_node(pid));
        assert!(!Nodes::new(PathBuf::from("/")).is_node(-1));
        assert!(!Nodes::new(PathBuf::from("/")).is_node(0));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn the_real_uid_is_read_from_the_status_line() {
        assert_eq!(
            real_uid("Name:\tx\nUid:\t1000\t0\t0\t0\nGid:\t5\n"),
            Some(1000)
        );
        assert_eq!(real_uid("Name:\tx\n"), None);
        assert_eq!(real_uid("Uid:\tx\n"), None);
    }

    /// An event as the kernel lays it out (`fanotify.h`): metadata, then one DFID_NAME record.
    fn event(mask: u64, pid: i32, handle: &[u8], name: &str) -> Vec<u8> {
        let mut record = vec![libc::FAN_EVENT_INFO_TYPE_DFID_NAME, 0, 0, 0];
        record.extend_from_slice(&[7; 8]);
        record.extend_from_slice(&u32::try_from(handle.len()).unwrap().to_ne_bytes());
        record.extend_from_slice(&1i32.to_ne_bytes());
        record.extend_from_slice(handle);
        record.extend_from_slice(name.as_bytes());
        record.push(0);
        record.resize(record.len().next_multiple_of(4), 0);
        let record_len = u16::try_from(record.len()).unwrap();
        record.splice(2..4, record_len.to_ne_bytes());
        let mut bytes = Vec::new();
        let total = u32::try_from(METADATA_LEN + record.len()).unwrap();
        bytes.extend_from_slice(&total.to_ne_bytes());
        bytes.extend_from_slice(&[libc::FANOTIFY_METADATA_VERSION, 0]);
        bytes.extend_from_slice(&u16::try_from(METADATA_LEN).unwrap().to_ne_bytes());
        bytes.extend_from_slice(&mask.to_ne_bytes());
        bytes.extend_from_slice(&libc::FAN_NOFD.to_ne_bytes());
        bytes.extend_from_slice(&pid.to_ne_bytes());
        bytes.extend_from_slice(&record);
        bytes
    }

    #[test]
    fn events_and_records_parse_as_laid_out() {
        let mut bytes = event(libc::FAN_CREATE, 42, &[1, 2, 3, 4, 5], "a.txt");
        bytes.extend(event(libc::FAN_DELETE | libc::FAN_ONDIR, 7, &[9; 8], "d"));
        let mut rest = bytes.as_slice();
        let first = Event::next(&mut rest).unwrap();
        assert_eq!((first.mask, first.pid), (libc::FAN_CREATE, 42));
        let records: Vec<Record<'_>> = Record::all(first.records).collect();
        assert_eq!(records.len(), 1);
        let record = records.first().unwrap();
        assert_eq!(record.kind, libc::FAN_EVENT_INFO_TYPE_DFID_NAME);
        assert_eq!(record.handle_type, 1);
        assert_eq!(record.handle, &[1, 2, 3, 4, 5]);
        assert_eq!(record.name, b"a.txt");
        let second = Event::next(&mut rest).unwrap();
        assert_eq!(second.mask, libc::FAN_DELETE | libc::FAN_ONDIR);
        assert_eq!(Record::all(second.records).next().unwrap().name, b"d");
        assert!(Event::next(&mut rest).is_none());
    }

    #[test]
    fn cut_or_bent_events_end_parsing_without_panicking() {
        let whole = event(libc::FAN_RENAME, 1, &[1; 12], "name");
        for len in 0..whole.len() {
            let mut cut = whole.get(..len).unwrap();
            if let Some(event) = Event::next(&mut cut) {
                Record::all(event.records).for_each(drop);
            }
        }
        for at in 0..whole.len() {
            for value in [0, 1, 0x7f, 0xff] {
                let mut bent = whole.clone();
                *bent.get_mut(at).unwrap() = value;
                let mut rest = bent.as_slice();
                while let Some(event) = Event::next(&mut rest) {
                    Record::all(event.records).for_each(drop);
                }
            }
        }
    }
}
