//! File-system calls block. Those that may wait on the disk by design (data transfers, flushes,
//! copies, listings, deletions, anything on a share that syncs metadata) run in [`blocking`],
//! so that a slow disk stalls only the request that waits for it, not the async workers that
//! serve everyone else. Metadata calls the kernel answers from its caches (opens, stats,
//! xattrs, closes) run inline: handing the worker's tasks to another thread costs a thread
//! wake-up and two context switches, more than such a call (docs/design.md).

use smb3d_dtyp::NtStatus;
use smb3d_vfs::Vfs;
use tokio::runtime::{Handle, RuntimeFlavor};

use crate::identity::Identity;

/// Runs `f`, a blocking call. On the multi-threaded runtime the worker hands its other tasks
/// to a fresh thread first; elsewhere (tests, fuzzing) it simply runs inline.
pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// Runs `f`, a call found to wait on the disk, on the runtime's blocking threads, and yields
/// until it is done: the task awaiting it (a connection's reader running a brief frame inline)
/// goes on as a task of its own, and the reader takes the connection's next frames. Without a
/// runtime (fuzzing) it runs inline.
pub(crate) async fn elsewhere<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let Ok(handle) = Handle::try_current() else {
        return f();
    };
    match handle.spawn_blocking(f).await {
        Ok(done) => done,
        Err(failed) => match failed.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Cancelled: the runtime is shutting down, and this task with it.
            Err(_) => std::future::pending().await,
        },
    }
}

/// Whether a call is expected to wait on the disk, and so runs in [`blocking`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Answered from the kernel's caches: runs inline.
    Brief,
    /// May wait on the disk: the worker hands its other tasks off first.
    Long,
}

impl Wait {
    /// Data transfers from this size on count as long.
    const LONG_TRANSFER: usize = 64 * 1024;

    /// The wait of moving `len` bytes of file data.
    pub fn transfer(len: usize) -> Self {
        if len >= Self::LONG_TRANSFER {
            Self::Long
        } else {
            Self::Brief
        }
    }

    /// Runs `f` as this wait asks.
    pub fn run<T>(self, f: impl FnOnce() -> T) -> T {
        match self {
            Self::Brief => f(),
            Self::Long => blocking(f),
        }
    }
}

/// Runs file-system work on `vfs` as the session's user ([`Vfs::run_as`]): the file system's
/// permission checks, new files' ownership and quotas then apply to that user. A failure to
/// take on the user's credentials is STATUS_ACCESS_DENIED, never work done as someone else.
pub(crate) fn as_user<T>(
    vfs: &dyn Vfs,
    who: &Identity,
    wait: Wait,
    work: impl FnOnce() -> Result<T, NtStatus>,
) -> Result<T, NtStatus> {
    wait.run(|| {
        let mut work = Some(work);
        let mut result = None;
        vfs.run_as(&who.unix, &mut || result = work.take().map(|w| w()));
        result.unwrap_or(Err(NtStatus::ACCESS_DENIED))
    })
}

/// Runs `work` with the service's own credentials ([`Vfs::run_privileged`]), from inside
/// [`as_user`] work, for metadata the server writes on a user's behalf after checking the
/// user's rights. A back end that could not switch leaves the work undone: ACCESS_DENIED.
pub(crate) fn as_service<T>(
    vfs: &dyn Vfs,
    work: impl FnOnce() -> Result<T, NtStatus>,
) -> Result<T, NtStatus> {
    let mut work = Some(work);
    let mut result = None;
    vfs.run_privileged(&mut || result = work.take().map(|w| w()));
    result.unwrap_or(Err(NtStatus::ACCESS_DENIED))
}
