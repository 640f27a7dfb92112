//! File-system calls block; they run here so that a slow disk stalls only the request that
//! waits for it, not the async workers that serve everyone else.

use tokio::runtime::{Handle, RuntimeFlavor};

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
