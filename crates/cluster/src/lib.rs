//! The cluster's state in etcd (issue 18, docs/cluster.md): [`EtcdStore`], the server's
//! `StateStore` on etcd, and [`Membership`], a node's etcd lease. Everything lives under one
//! key prefix per cluster.
//!
//! The server calls a state store from blocking threads; etcd's client is async. [`Etcd`]
//! owns a small runtime of its own and hands each call to it, so callers need no runtime and
//! the server's workers never run gRPC.
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

mod addresses;
mod alive;
mod failover;
mod fence;
mod locks;
mod marks;
mod membership;
mod notify;
mod opens;
mod pending;
mod retained;
mod store;

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

pub use addresses::{AddressHost, PublicAddresses, holders};
pub use alive::{Liveness, MAX_HELD, bind_alive};
pub use etcd_client::Client;
use etcd_client::{
    Event, EventType, GetOptions, PutOptions, Txn, TxnOp, TxnOpResponse, WatchOptions,
};
pub use failover::ATTEMPT_TIMEOUT;
pub use fence::{DialectWatch, ParseDialect, follow_dialects};
pub use locks::EtcdLocks;
pub use marks::DeletePendingMarks;
pub use membership::{Membership, NodeInfo, members};
pub use notify::EtcdNotify;
pub use opens::EtcdOpens;
pub use store::{ETCD_MAX_RECORD, EtcdStore};

/// The key prefix of a cluster unless another is given.
pub const DEFAULT_PREFIX: &str = "/smb3d/";
/// How long one call to etcd may take before it fails (a lost quorum answers nothing).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection to etcd and the runtime its calls run on.
pub struct Etcd {
    runtime: Option<tokio::runtime::Runtime>,
    members: Arc<failover::Members>,
    pending: Arc<pending::Pending>,
    prefix: String,
}

impl std::fmt::Debug for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Etcd")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

/// An etcd error as an I/O error, for the `StateStore` callers.
pub(crate) fn io_error(e: etcd_client::Error) -> io::Error {
    io::Error::other(format!("etcd: {e}"))
}

impl Etcd {
    /// Connects to the etcd members at `endpoints` (`http://host:port`); every key is under
    /// `prefix`. Nothing is asked yet: each call finds a member that answers.
    pub fn connect(endpoints: &[String], prefix: &str) -> io::Result<Self> {
        if let Some(tls) = endpoints.iter().find(|e| e.starts_with("https://")) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("etcd endpoint {tls}: TLS to etcd is not built in yet; use http://"),
            ));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("etcd")
            .enable_all()
            .build()?;
        let options = etcd_client::ConnectOptions::new()
            .with_connect_timeout(REQUEST_TIMEOUT)
            .with_timeout(REQUEST_TIMEOUT)
            // A frozen member's watches and keepalives end within 3 s.
            .with_keep_alive(Duration::from_secs(1), Duration::from_secs(2));
        let members = Arc::new(runtime.block_on(failover::Members::connect(endpoints, options))?);
        let pending = Arc::new(pending::Pending::default());
        runtime.spawn(pending.clone().retry(members.clone()));
        Ok(Self {
            runtime: Some(runtime),
            members,
            pending,
            prefix: prefix.to_owned(),
        })
    }

    /// The prefix every key of this cluster is under.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn runtime(&self) -> &tokio::runtime::Runtime {
        // Taken only by Drop.
        self.runtime
            .as_ref()
            .unwrap_or_else(|| unreachable!("the runtime lives as long as Etcd"))
    }

    /// Runs `call` with a client on the etcd runtime and waits for it, from any thread that
    /// may block (never an async worker). A member that fails it or does not answer hands it
    /// to the next (see `failover`): `call` may run more than once.
    pub fn run<T, F>(&self, call: impl Fn(Client) -> F + Send + 'static) -> io::Result<T>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, etcd_client::Error>> + Send + 'static,
    {
        let (done, result) = std::sync::mpsc::sync_channel(1);
        let members = self.members.clone();
        self.runtime().spawn(async move {
            let _ = done.send(members.call(call).await);
        });
        result
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the etcd runtime stopped")))
    }

    /// Deletes this node's `key` (every key under it when `prefix`); when etcd cannot take
    /// it now, it is kept and retried until etcd can (see `pending`), and the caller goes on.
    pub(crate) fn delete_surely(&self, key: String, prefix: bool) {
        let options = prefix.then(|| etcd_client::DeleteOptions::new().with_prefix());
        let deleted = {
            let (key, options) = (key.clone(), options);
            self.run(move |mut client| {
                let (key, options) = (key.clone(), options.clone());
                async move { client.delete(key, options).await }
            })
        };
        if let Err(e) = deleted {
            self.pending.keep((key, prefix), &e);
        }
    }

    /// One transaction that puts `key` under `lease` and reads every key under `prefix` at
    /// the same revision (the new key among them): how an open or a lock is recorded and
    /// judged against the records that were there before it, with no window between.
    pub(crate) fn put_and_read(
        &self,
        key: String,
        value: Vec<u8>,
        lease: i64,
        prefix: String,
    ) -> io::Result<Vec<(String, Vec<u8>)>> {
        let txn = Txn::new().and_then([
            TxnOp::put(key, value, Some(PutOptions::new().with_lease(lease))),
            TxnOp::get(prefix, Some(GetOptions::new().with_prefix())),
        ]);
        let answer = self.txn(txn)?;
        Ok(answer
            .op_responses()
            .into_iter()
            .filter_map(|r| match r {
                TxnOpResponse::Get(get) => Some(get),
                _ => None,
            })
            .flat_map(|get| {
                get.kvs()
                    .iter()
                    .map(|kv| {
                        (
                            String::from_utf8_lossy(kv.key()).into_owned(),
                            kv.value().to_vec(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect())
    }

    /// Starts `task` on the etcd runtime.
    pub(crate) fn spawn(
        &self,
        task: impl Future<Output = ()> + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        self.runtime().spawn(task)
    }

    /// Every key under `prefix` (see [`Etcd::run`]).
    pub(crate) fn get_prefix(&self, prefix: String) -> io::Result<etcd_client::GetResponse> {
        self.run(move |mut client| {
            let prefix = prefix.clone();
            async move {
                client
                    .get(prefix, Some(GetOptions::new().with_prefix()))
                    .await
            }
        })
    }

    /// One transaction (see [`Etcd::run`]).
    pub(crate) fn txn(&self, txn: Txn) -> io::Result<etcd_client::TxnResponse> {
        self.run(move |mut client| {
            let txn = txn.clone();
            async move { client.txn(txn).await }
        })
    }

    /// A client of the member calls go to now.
    pub(crate) fn client(&self) -> Client {
        self.members.caller().1
    }

    /// The members' clients and which one calls go to.
    pub(crate) fn members(&self) -> &failover::Members {
        &self.members
    }

    /// Follows the keys under `prefix` from the revision after `*revision`: each answer's
    /// changes go to `apply` as one batch (see [`change`]), with `*revision` first raised to
    /// the highest among them. Returns when etcd cancels the watch, or with its error.
    pub(crate) async fn watch_from(
        &self,
        prefix: String,
        revision: &mut i64,
        mut apply: impl FnMut(&[Event]),
    ) -> Result<(), etcd_client::Error> {
        let options = WatchOptions::new()
            .with_prefix()
            .with_start_revision(*revision + 1);
        let (member, mut client) = self.members.watcher();
        let watched = async {
            let mut stream = client.watch(prefix, Some(options)).await?;
            while let Some(answer) = stream.message().await? {
                if answer.canceled() {
                    return Ok(());
                }
                let events = answer.events();
                *revision = events
                    .iter()
                    .filter_map(Event::kv)
                    .map(|kv| kv.mod_revision())
                    .fold(*revision, i64::max);
                apply(events);
            }
            Ok(())
        };
        let watched = watched.await;
        if watched.as_ref().is_err_and(failover::member_failed) {
            // The member is lost: the next watch goes to another.
            self.members.skip(member);
        }
        watched
    }
}

/// One key's change as a watch reports it: the key, its value (`None`: deleted) and the
/// revision of the change.
pub(crate) type Change<'a> = (&'a [u8], Option<&'a [u8]>, i64);

/// What a watch event says of one key.
pub(crate) fn change(event: &Event) -> Option<Change<'_>> {
    let kv = event.kv()?;
    let value = match event.event_type() {
        EventType::Put => Some(kv.value()),
        EventType::Delete => None,
    };
    Some((kv.key(), value, kv.mod_revision()))
}

impl Drop for Etcd {
    /// Dropping a runtime waits for its tasks, which an async context refuses: let them go.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
