//! Running file-system calls as another user: the calling thread's credentials are switched
//! for the duration of the work and restored afterwards (Linux keeps credentials per thread at
//! the system-call level, so other threads are unaffected). Only a server running as root can
//! switch; otherwise work runs as the service user.
//!
//! Switching back restores the uid and gid but leaves the supplementary groups: a thread whose
//! effective uid is 0 passes permission checks through its capabilities, which groups do not
//! widen, and the next user's groups are set only if they differ. That saves two of the six
//! credential changes around each piece of work.

use std::cell::RefCell;

use rustix::process::{Gid, Uid};
use rustix::thread::{set_thread_groups, set_thread_res_gid, set_thread_res_uid};
use smb3d_vfs::Credentials;

/// Whether this process may switch credentials (it runs as root).
pub(crate) fn can_switch() -> bool {
    rustix::process::geteuid().is_root()
}

/// Restores root credentials when dropped, so that a panic in the work cannot leave a thread
/// running as the user.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        // The saved set-user-id stayed 0, so these cannot fail for a root process.
        let _ = set_thread_res_uid(None, Uid::ROOT, None);
        let _ = set_thread_res_gid(None, Gid::ROOT, None);
    }
}

thread_local! {
    /// The supplementary groups this thread last set, if it set any successfully.
    static GROUPS: RefCell<Option<Vec<u32>>> = const { RefCell::new(None) };
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

/// Runs `work` as root on a thread that [`run_as`] switched to a user, then switches back. The
/// saved set-user-id stays 0 while switched, which is what allows both changes.
pub(crate) fn run_as_service(work: &mut dyn FnMut()) {
    let user = rustix::process::geteuid();
    if user.is_root() {
        work();
        return;
    }
    if set_thread_res_uid(None, Uid::ROOT, None).is_err() {
        tracing::error!("cannot regain the service's credentials");
        return;
    }
    struct Back(Uid);
    impl Drop for Back {
        fn drop(&mut self) {
            if set_thread_res_uid(None, self.0, None).is_err() {
                // Continuing as root on behalf of a user would be worse than stopping.
                std::process::abort();
            }
        }
    }
    let _back = Back(user);
    work();
}

/// Runs `work` with `who`'s uid, gid and groups as the effective credentials of this thread.
/// If switching fails, `work` does not run and false is returned.
pub(crate) fn run_as(who: &Credentials, work: &mut dyn FnMut()) -> bool {
    let restore = Restore;
    // Groups and gid first, while the thread still has the privilege to change them.
    let switched = set_groups(&who.groups)
        && set_thread_res_gid(None, Gid::from_raw(who.gid), None).is_ok()
        && set_thread_res_uid(None, Uid::from_raw(who.uid), None).is_ok();
    if switched {
        work();
    }
    drop(restore);
    switched
}
