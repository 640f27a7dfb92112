//! Running file-system calls as another user: the calling thread's credentials are switched
//! for the duration of the work and restored afterwards (Linux keeps credentials per thread at
//! the system-call level, so other threads are unaffected). Only a server running as root can
//! switch; otherwise work runs as the service user.

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
        let _ = set_thread_groups(&[]);
    }
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
    let groups: Vec<Gid> = who.groups.iter().map(|&g| Gid::from_raw(g)).collect();
    let restore = Restore;
    // Groups and gid first, while the thread still has the privilege to change them.
    let switched = set_thread_groups(&groups).is_ok()
        && set_thread_res_gid(None, Gid::from_raw(who.gid), None).is_ok()
        && set_thread_res_uid(None, Uid::from_raw(who.uid), None).is_ok();
    if switched {
        work();
    }
    drop(restore);
    switched
}
