//! Where a frame's requests run: on the task that read the frame, or on a task of their own.
//!
//! Spawning a task per frame costs an allocation the size of the request pipeline's future
//! (copied in twice), a push onto the scheduler and often the wake-up of an idle worker thread
//! that finds nothing to do: more than an ECHO or an open from the kernel's caches costs. Such
//! frames run on the reader's task instead, which then sends the response itself; one that has
//! to wait after all (an oplock break, a byte-range lock) goes on as a task of its own from its
//! first wait. Frames that move bulk data, flush or list run on their own task as before, so a
//! client's other requests on the connection keep going in parallel with them; a lone long
//! WRITE runs on the reader's task where the WRITE pace lets it run inline
//! ([`long_write_runs_here`]).

use std::future::Future;
use std::ops::Range;
use std::task::{Context, Waker};

use smb3d_smb2::Command;
use smb3d_smb2::header::Header;
use smb3d_smb2::read::ReadRequest;

use crate::blocking::Wait;
use crate::request::commands::{self, Runs};
use crate::tasks;
use crate::write_pace::WritePace;

/// Frames from this size on carry bulk data (a WRITE) and get a task of their own.
const INLINE_FRAME_MAX: usize = 64 * 1024;

/// Whether the requests of `frame` (at `requests`) are brief enough to run on the reader's
/// task: no bulk transfer, and none whose command `Runs::OwnTask` (flushes, listings, FSCTLs).
pub(crate) fn runs_inline(frame: &[u8], requests: &[(Header, Range<usize>)]) -> bool {
    frame.len() < INLINE_FRAME_MAX
        && requests
            .iter()
            .all(|(hdr, range)| match commands::spec(hdr.command).runs {
                Runs::Inline => true,
                Runs::OwnTask => false,
                // Only the Length is read: the handler decodes the request.
                Runs::ByReadLength => frame
                    .get(range.clone())
                    .and_then(ReadRequest::length_of)
                    .is_none_or(|length| Wait::transfer(length as usize) == Wait::Brief),
            })
}

/// Whether a frame of one long WRITE runs on the reader's task: while the WRITE pace has room
/// for one more inline WRITE (`write_pace`), so that the data is received, checked and copied
/// into the page cache on one thread in one go, as a minimal server would, instead of by a task
/// of its own on whichever worker takes it, after the reader has received further frames into
/// the cache between. The connection's next frames wait for it meanwhile, as they wait for a
/// brief request.
pub(crate) fn long_write_runs_here(requests: &[(Header, Range<usize>)], pace: &WritePace) -> bool {
    matches!(requests, [(hdr, _)] if hdr.command == Command::WRITE) && pace.has_room()
}

/// Runs `work` here until it first waits, then as a task of its own.
///
/// The first poll's waker does nothing: the spawned task polls again at once, and a future
/// checks its condition on every poll, so an event between the two polls is not lost.
pub(crate) fn run_here_until_it_waits(work: impl Future<Output = ()> + Send + 'static) {
    let mut work = Box::pin(work);
    if work
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_pending()
    {
        tasks::spawn(work);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use smb3d_smb2::Command;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use tokio::sync::Notify;

    fn header(command: Command) -> Header {
        Header {
            command,
            ..Header::default()
        }
    }

    fn read_request(length: u32) -> Vec<u8> {
        let mut pdu = vec![0u8; 64];
        pdu[..4].copy_from_slice(b"\xfeSMB");
        pdu.extend_from_slice(&49u16.to_le_bytes());
        pdu.extend_from_slice(&[0x50, 0]);
        pdu.extend_from_slice(&length.to_le_bytes());
        pdu.extend_from_slice(&[0u8; 41]);
        pdu
    }

    #[test]
    fn small_metadata_frames_run_inline() {
        let frame = vec![0u8; 200];
        let requests = [
            (header(Command::CREATE), 0..100),
            (header(Command::CLOSE), 100..200),
        ];
        assert!(runs_inline(&frame, &requests));
        let flush = [(header(Command::FLUSH), 0..200)];
        assert!(!runs_inline(&frame, &flush));
        let large = vec![0u8; INLINE_FRAME_MAX];
        assert!(!runs_inline(
            &large,
            &[(header(Command::WRITE), 0..large.len())]
        ));
    }

    #[test]
    fn a_lone_long_write_runs_on_the_reader_where_the_pace_has_room() {
        let pace = WritePace::default();
        let write = [(header(Command::WRITE), 0..100)];
        // Outside a multi-threaded runtime nothing runs inline.
        assert!(!long_write_runs_here(&write, &pace));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        runtime.block_on(async {
            assert!(long_write_runs_here(&write, &pace));
            let compound = [write[0].clone(), (header(Command::WRITE), 100..200)];
            assert!(!long_write_runs_here(&compound, &pace));
            assert!(!long_write_runs_here(
                &[(header(Command::READ), 0..100)],
                &pace
            ));
        });
    }

    #[test]
    fn reads_inline_only_when_short() {
        for (length, inline) in [(4096, true), (64 * 1024, false), (8 << 20, false)] {
            let frame = read_request(length);
            let requests = [(header(Command::READ), 0..frame.len())];
            assert_eq!(runs_inline(&frame, &requests), inline, "{length}");
        }
        // A READ too short to hold its Length fails in its handler, which is brief.
        let frame = vec![0u8; 70];
        assert!(runs_inline(&frame, &[(header(Command::READ), 0..70)]));
    }

    #[tokio::test]
    async fn work_that_does_not_wait_finishes_at_once() {
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        run_here_until_it_waits(async move { flag.store(true, Ordering::SeqCst) });
        assert!(done.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn work_that_waits_goes_on_as_a_task() {
        let go = Arc::new(Notify::new());
        let done = Arc::new(Notify::new());
        let (waiting, finished) = (go.clone(), done.clone());
        run_here_until_it_waits(async move {
            waiting.notified().await;
            finished.notify_one();
        });
        // Notified before the spawned task first polls: the permit is kept.
        go.notify_one();
        tokio::time::timeout(std::time::Duration::from_secs(5), done.notified())
            .await
            .unwrap();
    }
}
