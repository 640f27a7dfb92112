//! Calls that move between etcd members by themselves (docs/cluster.md "The etcd client").
//! etcd-client balances one channel over every endpoint, and a lost member stalls or fails
//! the calls it is given (a frozen one answers nothing until the request timeout, a killed one
//! fails them with "connection refused"): so each member has a client of its own, calls go to
//! the current one, and a member that fails a call, or does not answer it in
//! [`ATTEMPT_TIMEOUT`], hands the call and the following ones to the next member.
//!
//! Unary calls say "require a leader" (etcd's `hasleader`): a member that has lost quorum
//! answers them at once with "no leader" rather than after its own timeout, which is what
//! lets a node refuse new opens promptly. Watches do not: a watch on a member without a
//! leader waits, and goes on from where it was when quorum returns, missing nothing.

use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use etcd_client::{Client, ConnectOptions};
use tokio::time::Instant;

use crate::{REQUEST_TIMEOUT, io_error};

/// How long one member may take over one call before the next member is asked: a healthy
/// member answers in milliseconds, and the last member asked has what is left of
/// [`REQUEST_TIMEOUT`].
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_millis(1500);

/// How long calls wait, after every member failed them, for etcd to elect a leader (its
/// election timeout is 1 s): a lost leader is not a lost quorum. Past it, while no member
/// answers, a call fails after one round.
const ELECTION_WAIT: Duration = Duration::from_secs(3);

/// The pause between two rounds over the members.
const ROUND_PAUSE: Duration = Duration::from_millis(200);

/// One client per etcd member, and the member calls go to now.
pub(crate) struct Members {
    /// Unary calls (and lease keepalives), requiring a leader.
    calls: Vec<Client>,
    /// Watches, which wait for a leader.
    watches: Vec<Client>,
    current: AtomicUsize,
    /// Since when no member has answered a call; `None` while one does.
    unanswered: parking_lot::Mutex<Option<Instant>>,
}

/// Whether `e` says the member (not the request) failed: asking another member may help.
pub(crate) fn member_failed(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::GRpcStatus(status) => matches!(
            status.code(),
            tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
        ),
        etcd_client::Error::TransportError(_) | etcd_client::Error::IoError(_) => true,
        _ => false,
    }
}

fn timed_out() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        "etcd did not answer in time (quorum lost?)",
    )
}

impl Members {
    /// Clients of each endpoint; nothing is contacted yet.
    pub(crate) async fn connect(endpoints: &[String], options: ConnectOptions) -> io::Result<Self> {
        let mut calls = Vec::with_capacity(endpoints.len());
        let mut watches = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let one = std::slice::from_ref(endpoint);
            let leader = options.clone().with_require_leader(true);
            calls.push(Client::connect(one, Some(leader)).await.map_err(io_error)?);
            watches.push(
                Client::connect(one, Some(options.clone()))
                    .await
                    .map_err(io_error)?,
            );
        }
        if calls.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no etcd endpoint",
            ));
        }
        Ok(Self {
            calls,
            watches,
            current: AtomicUsize::new(0),
            unanswered: parking_lot::Mutex::new(None),
        })
    }

    fn index(&self) -> usize {
        self.current.load(Ordering::Acquire) % self.calls.len()
    }

    /// The current member's index and its client for unary calls and keepalives.
    pub(crate) fn caller(&self) -> (usize, Client) {
        let index = self.index();
        (
            index,
            self.calls
                .get(index)
                .cloned()
                .unwrap_or_else(|| unreachable!()),
        )
    }

    /// The current member's index and its client for watches.
    pub(crate) fn watcher(&self) -> (usize, Client) {
        let index = self.index();
        (
            index,
            self.watches
                .get(index)
                .cloned()
                .unwrap_or_else(|| unreachable!()),
        )
    }

    /// Member `index` failed a call: the next one takes the following calls (unless another
    /// caller moved on already).
    pub(crate) fn skip(&self, index: usize) {
        let next = (index + 1) % self.calls.len();
        if self
            .current
            .compare_exchange(index, next, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            tracing::debug!("etcd: member {index} failed a call; asking member {next}");
        }
    }

    /// Runs `call` at the current member, then at each next one while members fail it, all
    /// within [`REQUEST_TIMEOUT`]; a member that did not answer is not asked again by this
    /// call, and once every member failed it the call waits for a leader (up to
    /// [`ELECTION_WAIT`] after no member answered any call). A call retried after a member did
    /// not answer may have been applied there: every call this crate makes is a put or delete
    /// of its own keys, or a compare-and-swap that then reports the record as changed.
    pub(crate) async fn call<T, F>(&self, call: impl Fn(Client) -> F) -> io::Result<T>
    where
        F: Future<Output = Result<T, etcd_client::Error>>,
    {
        let count = self.calls.len();
        let deadline = Instant::now() + REQUEST_TIMEOUT;
        let mut silent = vec![false; count];
        let mut failure = timed_out();
        let mut attempts = 0_usize;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let (mut index, _) = self.caller();
            for _ in 0..count {
                if !silent.get(index).copied().unwrap_or(false) {
                    break;
                }
                self.skip(index);
                index = self.index();
            }
            let client = self
                .calls
                .get(index)
                .cloned()
                .unwrap_or_else(|| unreachable!());
            let limit = if count == 1 {
                left
            } else {
                ATTEMPT_TIMEOUT.min(left)
            };
            match tokio::time::timeout(limit, call(client)).await {
                Ok(Ok(answer)) => {
                    *self.unanswered.lock() = None;
                    return Ok(answer);
                }
                Ok(Err(e)) if !member_failed(&e) => return Err(io_error(e)),
                Ok(Err(e)) => failure = io_error(e),
                Err(_) => {
                    failure = timed_out();
                    if let Some(s) = silent.get_mut(index) {
                        *s = true;
                    }
                }
            }
            self.skip(index);
            attempts += 1;
            if attempts.is_multiple_of(count) {
                let since = *self.unanswered.lock().get_or_insert_with(Instant::now);
                if since.elapsed() >= ELECTION_WAIT {
                    break;
                }
                tokio::time::sleep(ROUND_PAUSE.min(left)).await;
            }
        }
        Err(failure)
    }
}
