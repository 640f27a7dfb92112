//! Per-thread Unix credentials. A server running as root does each user's file-system work
//! with that user's uid, gid and groups, so that the kernel's permission checks, ownership of
//! new files and quotas apply to the user. Linux keeps credentials per thread at the
//! system-call level, so one thread switching leaves the others alone.
//!
//! Switching is lazy. Each change of credentials costs a system call that copies the thread's
//! credentials and frees the old ones through RCU: switching to the user and back around every
//! request cost four of them per open and close (a third of smb3d's CPU time in a loop of
//! opens and closes by one user). So a thread keeps the last user's credentials after the
//! work ([`run_as`]), and the next work for the same user (the same client's next request,
//! typically) switches nothing.
//!
//! The rule that makes this safe: code outside a user's work must not depend on which
//! credentials its thread holds. Calls that do (opening or looking up paths, reading or
//! writing xattrs, changing owners, modes or times, reading the server's own files) run in
//! [`settled`], which takes the service's credentials back outside a user's work and lends the
//! work a [`Creds`], the proof that the thread's credentials are settled; calls that need the
//! service's privilege run in [`privileged`] and take its [`ServiceCreds`]. smb3d-vfs-posix
//! makes every such system call through a function that takes the proof, so a method that
//! forgets to settle does not compile. Calls on an open descriptor that the kernel does not
//! check again (read, write, stat, truncate, sync, close) need none: that is the data path and
//! the close that lazy switching saves. The server's own files, read and written with std's
//! calls, which take no proof, are reached through [`as_service`] (or after [`settle`]): there
//! the rule is still kept by hand. A call that forgets can only run as a user, never with more
//! rights than the service's, so the failure is a refusal, not an escalation.
//!
//! The saved set-user-id stays 0 while a user's credentials are held, which is what lets the
//! thread take root's back. Threads inherit their creator's credentials: a thread's first use
//! asks the kernel what it holds.
#![forbid(unsafe_code)]
// Every request's file-system work runs through here: it must not panic (issue 8); tests may.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;

use rustix::process::{Gid, Uid};
use rustix::thread::{set_thread_groups, set_thread_res_gid, set_thread_res_uid};

/// What this thread's credentials are, as far as this module knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    /// Not asked yet (a new thread has its creator's credentials).
    Unknown,
    /// The service's: effective uid and gid 0.
    Service,
    /// A user's, set by [`run_as`]; the groups are in [`GROUPS`].
    User { uid: u32, gid: u32 },
    /// Someone else's, set before this module saw the thread: taken back before any use.
    Other,
    /// The process does not run as root and never switches.
    Fixed,
}

/// The credentials the work running on this thread needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    /// No user's work: credential-sensitive calls need the service's credentials.
    Outside,
    /// A user's work ([`run_as`]): the user's credentials.
    User,
    /// Service work inside a user's ([`as_service`]).
    Service,
}

thread_local! {
    static HELD: Cell<Held> = const { Cell::new(Held::Unknown) };
    static WORK: Cell<Work> = const { Cell::new(Work::Outside) };
    /// The supplementary groups this thread last set, if it set any successfully.
    static GROUPS: RefCell<Option<Vec<u32>>> = const { RefCell::new(None) };
}

/// Whether this process may switch credentials: its real uid is root. (The effective uid is
/// no guide: a thread holding a user's credentials would answer for that user.)
pub fn can_switch() -> bool {
    rustix::process::getuid().is_root()
}

fn held() -> Held {
    let held = HELD.get();
    if held != Held::Unknown {
        return held;
    }
    let held = if !can_switch() {
        Held::Fixed
    } else if rustix::process::geteuid().is_root() && rustix::process::getegid().is_root() {
        Held::Service
    } else {
        Held::Other
    };
    HELD.set(held);
    held
}

/// Takes the service's uid and gid back (the supplementary groups stay: a thread whose
/// effective uid is 0 passes permission checks through its capabilities, which groups do not
/// widen, and keeping them saves a call when the same user comes back).
fn regain_service() -> bool {
    let regained = set_thread_res_uid(None, Uid::ROOT, None).is_ok()
        && set_thread_res_gid(None, Gid::ROOT, None).is_ok();
    if regained {
        HELD.set(Held::Service);
    } else {
        tracing::error!("cannot regain the service's credentials");
        HELD.set(Held::Unknown);
    }
    regained
}

/// Makes this thread's credentials those the next credential-sensitive call needs: the user's
/// inside [`run_as`] work (held already), the service's outside it. For calls that take no
/// [`Creds`] (std's); the others run in [`settled`].
pub fn settle() {
    if WORK.get() == Work::Outside && matches!(held(), Held::User { .. } | Held::Other) {
        regain_service();
    }
}

/// Proof that this thread's credentials are those its work needs: the user's inside a user's
/// work ([`run_as`]), the service's in [`as_service`] or outside any user's work. Functions
/// whose outcome depends on credentials take one. It has no size, so passing it costs nothing.
///
/// Only [`settled`] makes one (and [`privileged`], through [`ServiceCreds`]), and only for the
/// run of its closure: the proof cannot leave the closure, nor go to another thread, whose
/// credentials are its own. It stays good in work nested in the closure, since [`as_service`]
/// switches when its work starts and back when it ends. [`run_as`] alone keeps what it
/// switched to (that is the laziness), so it is never called with a proof in hand: its callers
/// run it around file-system calls, not inside them (this the compiler does not check).
///
/// The rest it checks. A proof cannot be made from nothing: its fields are private,
///
/// ```compile_fail,E0451
/// use std::marker::PhantomData;
///
/// let forged = smb3d_credentials::Creds { scope: PhantomData, thread: PhantomData };
/// ```
///
/// and it has no `Default`,
///
/// ```compile_fail,E0599
/// let forged = smb3d_credentials::Creds::default();
/// ```
///
/// One lent by [`settled`] cannot be kept for later, when another user's work may have left
/// its credentials on the thread,
///
/// ```compile_fail,E0521
/// let mut kept = None;
/// smb3d_credentials::settled(|creds| kept = Some(creds));
/// ```
///
/// nor given to another thread:
///
/// ```compile_fail,E0277
/// smb3d_credentials::settled(|creds| {
///     std::thread::scope(|threads| {
///         threads.spawn(move || drop(creds));
///     });
/// });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Creds<'a> {
    /// Bounds the proof to the closure [`settled`] lends it to.
    scope: PhantomData<&'a ()>,
    /// Not `Send` or `Sync`: credentials are per thread.
    thread: PhantomData<*const ()>,
}

// Passing the proofs must cost nothing.
const _: () = assert!(size_of::<Creds<'static>>() == 0 && size_of::<ServiceCreds<'static>>() == 0);

/// Proof that this thread holds the service's credentials, for calls that need its privilege
/// (capabilities) also when a user's work makes them. Only [`privileged`] makes one, on the
/// terms of [`Creds`]. Settling is not enough: inside a user's work it keeps the user's
/// credentials, which is how the fanotify watch once started without its capabilities.
///
/// ```compile_fail,E0308
/// fn watch(_: smb3d_credentials::ServiceCreds<'_>) {}
///
/// smb3d_credentials::settled(|creds| watch(creds));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ServiceCreds<'a> {
    creds: Creds<'a>,
}

impl<'a> ServiceCreds<'a> {
    /// The proof that the credentials are settled, which the service's are.
    pub fn creds(self) -> Creds<'a> {
        self.creds
    }
}

/// Settles this thread's credentials ([`settle`]) and runs `work` with the proof. Inside a
/// user's work that is one thread-local read.
///
/// ```
/// use std::os::unix::fs::MetadataExt;
///
/// // A credential-sensitive call, as smb3d-vfs-posix wraps them: it takes the proof.
/// fn owner(_: smb3d_credentials::Creds<'_>, path: &str) -> std::io::Result<u32> {
///     Ok(std::fs::symlink_metadata(path)?.uid())
/// }
///
/// let root = smb3d_credentials::settled(|creds| owner(creds, "/"));
/// assert!(root.is_ok());
/// ```
pub fn settled<T>(work: impl FnOnce(Creds<'_>) -> T) -> T {
    settle();
    work(Creds {
        scope: PhantomData,
        thread: PhantomData,
    })
}

/// Sets this thread's supplementary groups, unless they are these already.
fn set_groups(groups: &[u32]) -> bool {
    GROUPS.with_borrow_mut(|current| {
        if current.as_deref() == Some(groups) {
            return true;
        }
        let gids: Vec<Gid> = groups.iter().map(|&g| Gid::from_raw(g)).collect();
        let set = set_thread_groups(&gids).is_ok();
        *current = set.then(|| groups.to_vec());
        set
    })
}

/// Puts `work` back to the kind of work it interrupted when dropped, also on a panic.
struct Scope(Work);

impl Scope {
    fn enter(work: Work) -> Self {
        Self(WORK.replace(work))
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        WORK.set(self.0);
    }
}

/// Runs `work` with `uid`, `gid` and `groups` as this thread's effective credentials, and
/// leaves them held afterwards (see the module's documentation). If switching fails, `work`
/// does not run, the thread has the service's credentials again and false is returned. User
/// work does not nest: work inside it for another user leaves that user's credentials behind.
pub fn run_as(uid: u32, gid: u32, groups: &[u32], work: &mut dyn FnMut()) -> bool {
    let wanted = Held::User { uid, gid };
    let same = held() == wanted && GROUPS.with_borrow(|g| g.as_deref() == Some(groups));
    if !same {
        // Groups and gid can change only with root's privilege, so take it back first.
        if held() != Held::Service && !regain_service() {
            return false;
        }
        let switched = set_groups(groups)
            && set_thread_res_gid(None, Gid::from_raw(gid), None).is_ok()
            && set_thread_res_uid(None, Uid::from_raw(uid), None).is_ok();
        if !switched {
            regain_service();
            return false;
        }
        HELD.set(wanted);
    }
    let _scope = Scope::enter(Work::User);
    work();
    true
}

/// Runs `work` with the service's credentials: inside a user's work only the effective uid
/// becomes root, and the user's returns afterwards (the process aborts if it cannot:
/// continuing as root on a user's behalf would be worse than stopping); outside, the
/// service's credentials are taken back. In a process that does not switch, `work` just runs.
pub fn as_service<T>(work: impl FnOnce() -> T) -> T {
    match WORK.get() {
        Work::Outside => {
            settle();
            return work();
        }
        Work::Service => return work(),
        Work::User => {}
    }
    let Held::User { uid, gid } = held() else {
        let _scope = Scope::enter(Work::Service);
        return work();
    };
    if set_thread_res_uid(None, Uid::ROOT, None).is_err() {
        tracing::error!("cannot regain the service's credentials");
        std::process::abort();
    }
    // Root's uid with the user's gid and groups: no user's work may take this for the user's.
    HELD.set(Held::Other);
    struct Back {
        uid: u32,
        gid: u32,
    }
    impl Drop for Back {
        fn drop(&mut self) {
            // Unless work inside switched again (and recorded what it holds).
            if HELD.get() == Held::Other {
                if set_thread_res_uid(None, Uid::from_raw(self.uid), None).is_err() {
                    std::process::abort();
                }
                HELD.set(Held::User {
                    uid: self.uid,
                    gid: self.gid,
                });
            }
        }
    }
    let _back = Back { uid, gid };
    let _scope = Scope::enter(Work::Service);
    work()
}

/// Runs `work` with the service's credentials, as [`as_service`] does, and the proof of them.
pub fn privileged<T>(work: impl FnOnce(ServiceCreds<'_>) -> T) -> T {
    as_service(|| {
        work(ServiceCreds {
            creds: Creds {
                scope: PhantomData,
                thread: PhantomData,
            },
        })
    })
}
