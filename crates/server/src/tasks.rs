//! The one place the server starts tasks. Everything else calls [`spawn`], so the core names
//! tokio's runtime here only, and another executor (or a test's) would be a change of this
//! file. It is a function rather than an injected spawner object on purpose: the pipeline
//! spawns a task per large request, and a `dyn` spawner would need the future boxed on top of
//! the task's own allocation; tests drive the same tasks on testkit's own tokio runtime, and
//! their time through the injected [`Clock`](crate::Clock).

use std::future::Future;

/// Runs `work` as a task of its own on the current runtime.
pub(crate) fn spawn(work: impl Future<Output = ()> + Send + 'static) {
    tokio::spawn(work);
}
