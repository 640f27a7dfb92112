//! Panic containment at the connection boundary: a panic in the work of one connection (a bug;
//! network-reachable code is written not to panic) ends that connection only, and is logged,
//! instead of leaving it half-processed or taking the server down.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;

/// The message of a caught panic.
pub fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// Runs `work`, catching a panic: `Err` carries its message.
///
/// The state `work` touches is the connection's, which the caller then closes, so no broken
/// invariant outlives the panic (hence the `AssertUnwindSafe`).
pub fn contain<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|p| panic_message(p.as_ref()).to_owned())
}

/// Polls `future` to completion, catching a panic in any poll: `Err` carries its message.
///
/// The caller pins the future where it lives: one taken by value would be stored twice in
/// this function's state, as the argument and as the pinned local (rustc keeps both), which
/// doubled the size of every connection task and request it wraps.
pub async fn contain_async<F: Future + ?Sized>(
    mut future: Pin<&mut F>,
) -> Result<F::Output, String> {
    std::future::poll_fn(
        |cx| match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(std::task::Poll::Ready(out)) => std::task::Poll::Ready(Ok(out)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(p) => std::task::Poll::Ready(Err(panic_message(p.as_ref()).to_owned())),
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::pin;

    #[test]
    fn sync_panics_are_caught_with_their_message() {
        assert_eq!(contain(|| 7), Ok(7));
        assert_eq!(
            contain(|| -> u8 { panic!("boom {}", 1) }),
            Err("boom 1".to_owned())
        );
        assert_eq!(
            contain(|| -> u8 { std::panic::panic_any(5u8) }),
            Err("(no message)".to_owned())
        );
    }

    #[tokio::test]
    async fn async_panics_are_caught_after_a_wait() {
        assert_eq!(contain_async(pin!(async { 3 })).await, Ok(3));
        let result = contain_async(pin!(async {
            tokio::task::yield_now().await;
            panic!("late");
        }))
        .await;
        assert_eq!(result, Err::<(), _>("late".to_owned()));
    }

    #[tokio::test]
    async fn the_guard_adds_no_copy_of_the_future() {
        let mut work = pin!(async {
            let held = [7u8; 4096];
            tokio::task::yield_now().await;
            held[4095]
        });
        let guarded = contain_async(work.as_mut());
        assert!(std::mem::size_of_val(&guarded) <= 64);
        assert_eq!(guarded.await, Ok(7));
    }
}
