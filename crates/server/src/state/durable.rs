//! Durable handles (MS-SMB2 3.3.5.9.6, 3.3.5.9.7, 3.3.5.9.10, 3.3.5.9.12; 3.3.7.1 on a lost
//! connection): opens that outlive their connection for a while, with their share modes,
//! oplock or lease and byte-range locks, and that the same user reclaims on a new connection.
//!
//! The table knows every durable open, connected or not, by its volatile FileId (and v2 opens
//! by CreateGuid, for replay detection). While an open is connected its `Arc<Open>` lives in its
//! session as any other; when the connection (or the session, through PreviousSessionId) goes,
//! the table keeps the `Arc<Open>` until a reconnect takes it back, its timeout expires, or an
//! open that needs its caching broken finds it unreachable (MS-SMB2 3.3.4.6, 3.3.4.7: the
//! server closes it).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU16, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use smb3d_dtyp::{NtStatus, Sid, Token};
use smb3d_smb2::create::{CreateAction, LeaseKey};
use smb3d_smb2::file_id::FileId;
use smb3d_wire::Guid;

use crate::clock::{self, Clock};
use crate::state::caching::{Caching, Route};
use crate::state::open::{Open, close_open};
use crate::state::server::Server;
use crate::state::session::{Session, SessionUser, Tree};
use crate::tasks;

/// MS-SMB2 3.3.5.9.10: the longest a v2 durable open may wait (Windows caps it at 300 s).
pub(crate) const MAX_V2_TIMEOUT: Duration = Duration::from_secs(300);
/// The timeout of a v2 open that asked for none (Windows 2012 and later: 60 s).
pub(crate) const DEFAULT_V2_TIMEOUT: Duration = Duration::from_secs(60);
/// The timeout of a v1 durable open (Windows and Samba: 16 minutes).
pub(crate) const V1_TIMEOUT: Duration = Duration::from_secs(16 * 60);
/// MS-SMB2 3.3.5.15.9 MaxResiliencyTimeout: the longest a resilient open is kept, as for v2
/// durable opens.
pub(crate) const MAX_RESILIENCY_TIMEOUT: Duration = MAX_V2_TIMEOUT;
/// Open.ResiliencyTimeout when the client asks for none (Windows: 2 minutes).
pub(crate) const DEFAULT_RESILIENCY_TIMEOUT: Duration = Duration::from_secs(120);

/// How an open was made durable; v2 opens that asked but could not be made durable are kept
/// too, for replay detection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Durability {
    /// The open survives a disconnect (false: it is only known by its CreateGuid).
    pub durable: bool,
    /// The CreateGuid of a v2 open; `None` for v1.
    pub create_guid: Option<Guid>,
    pub timeout: Duration,
    /// The ClientGuid of the connection that opened it (v2 reconnects must come from it).
    pub client_guid: Guid,
    /// Open.DurableOwner: the SID of the user who opened it, its own rather than a share's
    /// forced user's (which every user of the share has).
    pub owner: Sid,
    pub share: String,
    /// The lease the open holds, which a reconnect must name.
    pub lease: Option<LeaseKey>,
    pub create_action: CreateAction,
    /// The connection the open was made or last reclaimed on (`Connection::id`).
    pub connection: u64,
    /// Open.IsPersistent: its state is kept in the server's state directory, and it
    /// outlives a restart of the server.
    pub persistent: bool,
    /// Who opened it, as the session's logon proved it: only the same user reclaims it.
    pub opener: SessionUser,
}

/// A v2 open's ClientGuid and CreateGuid: the open a replay names is that of the same client
/// (MS-SMB2 3.3.5.9.10 looks it up by both).
pub(crate) type CreateKey = (Guid, Guid);

impl Durability {
    pub fn create_key(&self) -> Option<CreateKey> {
        self.create_guid.map(|guid| (self.client_guid, guid))
    }

    /// MS-SMB2 3.3.5.9.7 and 3.3.5.9.12: whether a session of `user` with the token `token`,
    /// on a connection of `client_guid`, may reclaim the open: the user who opened it, with the
    /// SID it opened it with. An anonymous logon proves no one, so an anonymous open goes back
    /// only to the client that made it.
    pub fn reclaimable_by(&self, user: &SessionUser, token: &Token, client_guid: Guid) -> bool {
        match &self.opener {
            SessionUser::Anonymous => {
                *user == SessionUser::Anonymous && client_guid == self.client_guid
            }
            opener => opener.same_account(user) && token.has_sid(&self.owner),
        }
    }
}

struct Entry {
    durability: Durability,
    persistent_id: u64,
    volatile_id: u64,
    /// The open while it is disconnected, and the disconnect it belongs to (for its timer).
    disconnected: Option<(Arc<Open>, u64)>,
}

/// Durable opens by persistent FileId (Open.DurableFileId), with indexes by volatile FileId
/// and CreateGuid.
#[derive(Default)]
struct Inner {
    opens: HashMap<u64, Entry>,
    by_volatile: HashMap<u64, u64>,
    by_create_guid: HashMap<CreateKey, u64>,
    /// DH2Q creates still under way (waiting for breaks, say).
    in_progress: HashSet<CreateKey>,
    disconnects: u64,
}

impl Inner {
    fn remove(&mut self, persistent: u64) -> Option<Entry> {
        let entry = self.opens.remove(&persistent)?;
        self.by_volatile.remove(&entry.volatile_id);
        if let Some(key) = entry.durability.create_key() {
            self.by_create_guid.remove(&key);
        }
        Some(entry)
    }

    fn by_volatile_mut(&mut self, volatile: u64) -> Option<&mut Entry> {
        let persistent = *self.by_volatile.get(&volatile)?;
        self.opens.get_mut(&persistent)
    }
}

/// Every durable open of the server.
#[derive(Default)]
pub(crate) struct DurableTable {
    inner: Mutex<Inner>,
    /// Fires when an open is kept after its connection went.
    kept: tokio::sync::Notify,
}

/// What a reconnect names (SMB2_CREATE_DURABLE_HANDLE_RECONNECT or _V2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reconnect {
    pub file_id: FileId,
    /// Present for DH2C.
    pub create_guid: Option<Guid>,
    /// A DH2C with SMB2_DHANDLE_FLAG_PERSISTENT.
    pub persistent: bool,
    /// An open not found by FileId may be found by CreateGuid (MS-SMB2 3.3.5.9.12: a
    /// persistent DH2C on a continuous-availability share).
    pub by_guid: bool,
}

/// A v2 open whose CreateGuid is known (MS-SMB2 3.3.5.9.10 replay detection).
pub(crate) enum Known {
    /// No open has this CreateGuid.
    Unknown,
    /// A connected open has it.
    Connected(FileId, Durability),
    /// A disconnected open has it.
    Disconnected(FileId, Durability),
    /// A create with it is still under way.
    InProgress,
}

/// A DH2Q create under way ([`DurableTable::reserve`]).
pub(crate) struct Reservation {
    table: Arc<DurableTable>,
    key: CreateKey,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.table.inner.lock().in_progress.remove(&self.key);
    }
}

impl DurableTable {
    /// Records a new durable open; false, and nothing recorded, if another durable open has
    /// its persistent id (random ids meet once in 2^64).
    pub fn add(&self, open: &Open, durability: Durability) -> bool {
        let mut inner = self.inner.lock();
        let persistent = open.file_id.persistent;
        if inner.opens.contains_key(&persistent) {
            return false;
        }
        if let Some(key) = durability.create_key() {
            inner.by_create_guid.insert(key, persistent);
        }
        inner.by_volatile.insert(open.file_id.volatile, persistent);
        inner.opens.insert(
            persistent,
            Entry {
                durability,
                persistent_id: persistent,
                volatile_id: open.file_id.volatile,
                disconnected: None,
            },
        );
        true
    }

    /// Replays of the CREATE of `file_id` are new opens from now on.
    pub fn forget_create_guid(&self, file_id: FileId) {
        let mut inner = self.inner.lock();
        if let Some(key) = inner
            .opens
            .get(&file_id.persistent)
            .and_then(|e| e.durability.create_key())
        {
            inner.by_create_guid.remove(&key);
        }
    }

    /// Open.IsDurable or Open.IsResilient: the open `volatile` outlives its connection.
    pub fn survives_disconnect(&self, volatile: u64) -> bool {
        let mut inner = self.inner.lock();
        inner
            .by_volatile_mut(volatile)
            .is_some_and(|e| e.durability.durable)
    }

    /// MS-SMB2 3.3.5.15.9: the open becomes resilient (kept for `durability.timeout` after a
    /// disconnect and reclaimed as a durable open is); the CreateGuid it was recorded under,
    /// its create action, whether it is persistent and who opened it stay. False if it
    /// cannot be recorded ([`DurableTable::add`]).
    pub fn make_resilient(&self, open: &Open, mut durability: Durability) -> bool {
        let mut inner = self.inner.lock();
        if let Some(entry) = inner.by_volatile_mut(open.file_id.volatile) {
            durability.create_guid = entry.durability.create_guid;
            durability.create_action = entry.durability.create_action;
            durability.persistent = entry.durability.persistent;
            durability.owner = entry.durability.owner;
            durability.opener = entry.durability.opener.clone();
            entry.durability = durability;
            return true;
        }
        drop(inner);
        self.add(open, durability)
    }

    /// Whether the durable open `persistent` is still attached to a connection other than
    /// `connection`: a client that reconnects at once may get here before the end of its old
    /// connection does.
    pub fn connected_elsewhere(&self, persistent: u64, connection: u64) -> bool {
        self.inner.lock().opens.get(&persistent).is_some_and(|e| {
            e.durability.durable
                && e.disconnected.is_none()
                && e.durability.connection != connection
        })
    }

    /// Waits until the durable open `persistent` is no longer attached to a connection other
    /// than `connection`, or `grace` has passed.
    pub async fn wait_for_disconnect(
        &self,
        clock: &dyn Clock,
        persistent: u64,
        connection: u64,
        grace: Duration,
    ) {
        let deadline = clock.now() + grace;
        loop {
            let kept = self.kept.notified();
            tokio::pin!(kept);
            kept.as_mut().enable();
            if !self.connected_elsewhere(persistent, connection) {
                return;
            }
            if clock::timeout_at(clock, deadline, kept).await.is_none() {
                return;
            }
        }
    }

    /// The open `file_id` is reclaimed on `connection`.
    pub fn moved_to(&self, file_id: FileId, connection: u64) {
        if let Some(entry) = self.inner.lock().opens.get_mut(&file_id.persistent) {
            entry.durability.connection = connection;
        }
    }

    /// The open `file_id` is closed: it is durable no more. How it was durable, if it was
    /// (its record is to be removed if it has one: [`crate::state::persistent::recorded`]).
    pub fn forget(&self, file_id: FileId) -> Option<Durability> {
        self.inner
            .lock()
            .remove(file_id.persistent)
            .map(|e| e.durability)
    }

    /// How the open `volatile` is durable, if it is.
    pub fn durability(&self, volatile: u64) -> Option<Durability> {
        self.inner
            .lock()
            .by_volatile_mut(volatile)
            .map(|e| e.durability.clone())
    }

    /// The open `volatile` while it is disconnected.
    pub fn disconnected_open(&self, volatile: u64) -> Option<Arc<Open>> {
        self.inner
            .lock()
            .by_volatile_mut(volatile)
            .and_then(|e| e.disconnected.as_ref().map(|(open, _)| open.clone()))
    }

    /// Whether the open `volatile` has a record in the server's store: it is persistent, or
    /// durable on a cluster node (`cluster`; [`crate::state::persistent::recorded`]).
    pub fn has_record(&self, volatile: u64, cluster: bool) -> bool {
        self.inner
            .lock()
            .by_volatile_mut(volatile)
            .is_some_and(|e| e.durability.persistent || (cluster && e.durability.durable))
    }

    /// Adds a persistent open restored after a restart (or a durable one a cluster node took
    /// over from a dead one), disconnected: its client has `durability.timeout` from now to
    /// reclaim it.
    pub fn restore(&self, server: &Arc<Server>, open: Arc<Open>, durability: Durability) {
        let volatile = open.file_id.volatile;
        let timeout = durability.timeout;
        let disconnect = {
            let mut inner = self.inner.lock();
            inner.disconnects += 1;
            let disconnect = inner.disconnects;
            let persistent = open.file_id.persistent;
            if let Some(key) = durability.create_key() {
                inner.by_create_guid.insert(key, persistent);
            }
            inner.by_volatile.insert(volatile, persistent);
            inner.opens.insert(
                persistent,
                Entry {
                    durability,
                    persistent_id: persistent,
                    volatile_id: volatile,
                    disconnected: Some((open, disconnect)),
                },
            );
            disconnect
        };
        expire_after(server, volatile, disconnect, timeout);
    }

    /// Marks a DH2Q create with `key` as under way until the returned guard drops; a
    /// replay meanwhile is STATUS_FILE_NOT_AVAILABLE (MS-SMB2 3.3.5.9.10).
    pub fn reserve(self: &Arc<Self>, key: CreateKey) -> Result<Reservation, NtStatus> {
        if !self.inner.lock().in_progress.insert(key) {
            return Err(NtStatus::FILE_NOT_AVAILABLE);
        }
        Ok(Reservation {
            table: self.clone(),
            key,
        })
    }

    /// The state of the open with this ClientGuid and CreateGuid, if any.
    pub fn by_create_guid(&self, key: CreateKey) -> Known {
        let inner = self.inner.lock();
        if inner.in_progress.contains(&key) {
            return Known::InProgress;
        }
        let Some(entry) = inner
            .by_create_guid
            .get(&key)
            .and_then(|p| inner.opens.get(p))
        else {
            return Known::Unknown;
        };
        let file_id = FileId {
            persistent: entry.persistent_id,
            volatile: entry.volatile_id,
        };
        match &entry.disconnected {
            None => Known::Connected(file_id, entry.durability.clone()),
            Some(_) => Known::Disconnected(file_id, entry.durability.clone()),
        }
    }

    /// Keeps `open` for a reconnect after its connection or session went, if it is durable;
    /// gives it back otherwise, to be closed, with whether its record is to be removed after
    /// the close. Its timeout starts now.
    fn keep(&self, server: &Arc<Server>, open: Arc<Open>) -> Option<(Arc<Open>, bool)> {
        // An open that deletes its file when closed is closed now, deleting it (smbtorture
        // smb2.durable-open.delete_on_close1); its record goes after the deletion, so that a
        // cluster's etcd round trip does not delay it.
        if open.delete_on_close || open.shared.delete_pending() {
            let recorded = self
                .forget(open.file_id)
                .is_some_and(|d| crate::state::persistent::recorded(server, &d));
            return Some((open, recorded));
        }
        let (timeout, disconnect) = {
            let mut inner = self.inner.lock();
            inner.disconnects += 1;
            let disconnect = inner.disconnects;
            let Some(entry) = inner
                .by_volatile_mut(open.file_id.volatile)
                .filter(|e| e.durability.durable)
            else {
                return Some((open, false));
            };
            entry.disconnected = Some((open.clone(), disconnect));
            (entry.durability.timeout, disconnect)
        };
        self.kept.notify_waiters();
        // Breaks cannot reach it now; opens waiting for one look again.
        open.shared.with_caching(|state, _| {
            if let Some(entry) = state
                .opens
                .iter_mut()
                .find(|e| e.id == open.file_id.volatile)
            {
                entry.disconnected = true;
            }
        });
        tracing::debug!(
            file_id = open.file_id.volatile,
            ?timeout,
            "durable open kept after disconnect"
        );
        expire_after(server, open.file_id.volatile, disconnect, timeout);
        None
    }

    /// Closes the disconnected open `volatile` (its timeout passed, or a break cannot reach
    /// it); `disconnect` limits this to one disconnect, so that a timer started before a
    /// reconnect does nothing. True if it was closed.
    pub fn expire(&self, server: &Server, volatile: u64, disconnect: Option<u64>) -> bool {
        let open = {
            let mut inner = self.inner.lock();
            let Some(&persistent) = inner.by_volatile.get(&volatile) else {
                return false;
            };
            let matches = inner.opens.get(&persistent).is_some_and(|e| {
                e.disconnected
                    .as_ref()
                    .is_some_and(|(_, d)| disconnect.is_none_or(|want| *d == want))
            });
            if !matches {
                return false;
            }
            inner.remove(persistent).and_then(|entry| {
                let recorded = crate::state::persistent::recorded(server, &entry.durability);
                entry.disconnected.map(|(open, _)| (open, recorded))
            })
        };
        if let Some((open, recorded)) = open {
            tracing::debug!(file_id = volatile, "disconnected durable open closed");
            close_open(server, &open);
            // Out of the table already, so `close_open` did not see its record.
            if recorded {
                crate::state::persistent::remove(server, open.file_id.persistent);
            }
        }
        true
    }

    /// MS-SMB2 3.3.5.9.7 and 3.3.5.9.12: takes back a disconnected durable open, after the
    /// checks: the open exists and is disconnected, a v2 reconnect names its CreateGuid and
    /// comes from its client, a persistent open is reclaimed only as one, the session of
    /// `user` with `token` is its opener's (`Durability::reclaimable_by`), `tree` is on its
    /// share, and a lease is named exactly when the open holds one, by its key, under the
    /// open's name (`same_name`; STATUS_INVALID_PARAMETER otherwise).
    #[allow(clippy::too_many_arguments)]
    pub fn reclaim(
        &self,
        reconnect: &Reconnect,
        client_guid: Guid,
        user: &SessionUser,
        token: &Token,
        tree: &Tree,
        lease: Option<LeaseKey>,
        same_name: impl FnOnce(&Open) -> bool,
    ) -> Result<Arc<Open>, NtStatus> {
        let mut inner = self.inner.lock();
        let mut persistent_id = reconnect.file_id.persistent;
        if !inner.opens.contains_key(&persistent_id)
            && reconnect.by_guid
            && let Some(found) = reconnect
                .create_guid
                .and_then(|guid| inner.by_create_guid.get(&(client_guid, guid)))
        {
            persistent_id = *found;
        }
        let entry = inner
            .opens
            .get_mut(&persistent_id)
            .ok_or(NtStatus::OBJECT_NAME_NOT_FOUND)?;
        let d = &entry.durability;
        // A v1 reconnect may reclaim a v2 open; a v2 one must name the CreateGuid (zero for
        // a v1 open). A lease belongs to its client: only that client reclaims it.
        let guid_matches = reconnect
            .create_guid
            .is_none_or(|asked| asked == d.create_guid.unwrap_or(Guid::ZERO));
        let client_matches = lease.is_none() || client_guid == d.client_guid;
        let persistence_matches = !d.persistent || reconnect.persistent;
        if entry.disconnected.is_none()
            || !d.durable
            || !guid_matches
            || !client_matches
            || !persistence_matches
            || !tree.share.name.eq_ignore_ascii_case(&d.share)
        {
            return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
        }
        if !d.reclaimable_by(user, token, client_guid) {
            return Err(NtStatus::ACCESS_DENIED);
        }
        if lease != d.lease {
            return Err(NtStatus::OBJECT_NAME_NOT_FOUND);
        }
        let has_lease = d.lease.is_some();
        let (open, disconnect) = entry
            .disconnected
            .take()
            .ok_or(NtStatus::OBJECT_NAME_NOT_FOUND)?;
        if has_lease && !same_name(&open) {
            entry.disconnected = Some((open, disconnect));
            return Err(NtStatus::INVALID_PARAMETER);
        }
        Ok(open)
    }
}

/// Starts the timer that closes the disconnected open `volatile` unless it is reclaimed
/// first (`disconnect` names the disconnect the timer belongs to).
fn expire_after(server: &Arc<Server>, volatile: u64, disconnect: u64, timeout: Duration) {
    let expired = server.settings.clock.sleep(timeout);
    let server = Arc::downgrade(server);
    tasks::spawn(async move {
        expired.await;
        if let Some(server) = server.upgrade() {
            server.durable.expire(&server, volatile, Some(disconnect));
        }
    });
}

/// What an open keeps for replayed requests (MS-SMB2 3.3.1.10 Open.ChannelSequence and
/// Open.LockSequenceArray, and whether its CREATE may still be replayed).
#[derive(Debug)]
pub(crate) struct ReplayState {
    channel_sequence: AtomicU16,
    /// A replay of its DH2Q CREATE answers with this open until another request uses it.
    replayable: AtomicBool,
    /// Open.LockSequenceArray, indexes 1 to 64: the sequence number (0-15) of the last LOCK
    /// that succeeded with that index, or [`NO_LOCK_SEQUENCE`].
    lock_sequences: [AtomicU8; 64],
}

/// A LockSequenceArray entry that is not Valid.
const NO_LOCK_SEQUENCE: u8 = u8::MAX;

impl ReplayState {
    pub fn new(channel_sequence: u16, replayable: bool) -> Self {
        Self {
            channel_sequence: AtomicU16::new(channel_sequence),
            replayable: AtomicBool::new(replayable),
            lock_sequences: [const { AtomicU8::new(NO_LOCK_SEQUENCE) }; 64],
        }
    }

    /// The state a persistent open had, read back after a restart; its CREATE is no longer
    /// replayable.
    pub fn restored(channel_sequence: u16, lock_sequences: [u8; 64]) -> Self {
        Self {
            channel_sequence: AtomicU16::new(channel_sequence),
            replayable: AtomicBool::new(false),
            lock_sequences: lock_sequences.map(AtomicU8::new),
        }
    }

    /// Open.ChannelSequence and Open.LockSequenceArray, for a persistent open's record.
    pub fn snapshot(&self) -> (u16, [u8; 64]) {
        (
            self.channel_sequence.load(Ordering::Relaxed),
            std::array::from_fn(|i| {
                self.lock_sequences
                    .get(i)
                    .map_or(NO_LOCK_SEQUENCE, |s| s.load(Ordering::Relaxed))
            }),
        )
    }

    fn lock_sequence_entry(&self, index: u32) -> Option<&AtomicU8> {
        let slot = usize::try_from(index.checked_sub(1)?).ok()?;
        self.lock_sequences.get(slot)
    }

    /// MS-SMB2 3.3.5.14: whether a LOCK with this LockSequenceIndex and number repeats the
    /// last one that succeeded with the index (then it is answered with success and not done
    /// again). A different number makes the entry invalid until the request succeeds.
    pub fn lock_replayed(&self, index: u32, number: u8) -> bool {
        let Some(entry) = self.lock_sequence_entry(index) else {
            return false;
        };
        if entry.load(Ordering::Relaxed) == number {
            return true;
        }
        entry.store(NO_LOCK_SEQUENCE, Ordering::Relaxed);
        false
    }

    /// MS-SMB2 3.3.5.14.1, 3.3.5.14.2: a LOCK succeeded; its index remembers its number.
    pub fn lock_succeeded(&self, index: u32, number: u8) {
        if let Some(entry) = self.lock_sequence_entry(index) {
            entry.store(number, Ordering::Relaxed);
        }
    }

    /// MS-SMB2 3.3.5.2.10: a newer ChannelSequence becomes the open's; an older one is
    /// STATUS_FILE_NOT_AVAILABLE for a request that changes the open, as a request overtaken
    /// by a failover. (The counts of outstanding requests per sequence are not kept: a replay
    /// with the current sequence is accepted even while older requests are outstanding.)
    pub fn check_channel_sequence(&self, sequence: u16) -> Result<(), NtStatus> {
        let current = self.channel_sequence.load(Ordering::Relaxed);
        match sequence.wrapping_sub(current) {
            0 => Ok(()),
            newer if newer <= 0x7FFF => {
                self.channel_sequence.store(sequence, Ordering::Relaxed);
                Ok(())
            }
            _ => Err(NtStatus::FILE_NOT_AVAILABLE),
        }
    }

    /// The open is used by a request other than its CREATE: a later replay of that CREATE is
    /// a new open (smbtorture smb2.replay.replay6). True the first time.
    pub fn used(&self) -> bool {
        self.replayable.load(Ordering::Relaxed) && self.replayable.swap(false, Ordering::Relaxed)
    }
}

/// Makes a reclaimed open the session's again: it moves to `tree`, and its breaks go to
/// `route` from now on.
pub(crate) fn reattach(session: &Session, tree: &Tree, open: &Arc<Open>, route: Route) {
    open.tree_id.store(tree.id, Ordering::Relaxed);
    {
        let mut state = open.shared.state.lock();
        let lease = state
            .opens
            .iter_mut()
            .find(|e| e.id == open.file_id.volatile)
            .map(|entry| {
                entry.route = route.clone();
                entry.disconnected = false;
                entry.caching.clone()
            });
        if let Some(Caching::Lease(id)) = lease
            && let Some(record) = state.leases.iter_mut().find(|l| l.id == id)
        {
            record.route = route;
        }
    }
    session
        .state
        .lock()
        .opens
        .insert(open.file_id.volatile, open.clone());
}

/// The connection of a session went (MS-SMB2 3.3.7.1), or a new session replaced it
/// (PreviousSessionId, 3.3.5.5.3): durable opens are kept for a reconnect, the rest closed,
/// and the session's tree connects end.
pub(crate) fn disconnect_session(server: &Arc<Server>, session: &Session) {
    // A reconnect's PreviousSessionId may name a session whose connection is being torn down
    // on another thread: its answer must wait until the opens are closed (a delete-on-close
    // file deleted; smbtorture smb2.durable-open.delete_on_close1) or kept.
    let _teardown = session.teardown.lock();
    let opens = session.state.lock().take_everything();
    for open in opens {
        if let Some((open, recorded)) = server.durable.keep(server, open) {
            close_open(server, &open);
            if recorded {
                crate::state::persistent::remove(server, open.file_id.persistent);
            }
        }
    }
    server.sessions.lock().remove(&session.id);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_sequences_move_forward_within_half_the_range() {
        // smbtorture smb2.replay.channel-sequence, in its order.
        let state = ReplayState::new(0, false);
        let steps: [(u16, bool); 15] = [
            (0, true),
            (0x8000, false),
            (0x8001, false),
            (0xffff, false),
            (0x7fff, true),
            (0x7ffe, false),
            (0, false),
            (0x8000, true),
            (0xffff, true),
            (0, true),
            (1, true),
            (0, false),
            (1, true),
            (0xffff, false),
            (2, true),
        ];
        for (sequence, accepted) in steps {
            assert_eq!(
                state.check_channel_sequence(sequence).is_ok(),
                accepted,
                "sequence {sequence:#x}"
            );
        }
    }

    #[test]
    fn lock_sequences_repeat_only_what_succeeded() {
        let state = ReplayState::new(0, false);
        // Index 0 and indexes beyond 64 are never replays.
        for index in [0, 65, u32::MAX] {
            state.lock_succeeded(index, 1);
            assert!(!state.lock_replayed(index, 1));
        }
        for index in [1, 64] {
            assert!(!state.lock_replayed(index, 1));
            state.lock_succeeded(index, 1);
            assert!(state.lock_replayed(index, 1));
            // Another number is a new request, and the entry stays invalid while it fails.
            assert!(!state.lock_replayed(index, 2));
            assert!(!state.lock_replayed(index, 1));
            assert!(!state.lock_replayed(index, 2));
            state.lock_succeeded(index, 2);
            assert!(state.lock_replayed(index, 2));
        }
    }

    #[test]
    fn a_durable_open_goes_back_to_its_opener_only() {
        let sid = |rid| Sid::new(5, &[21, 1, 2, 3, rid]).unwrap();
        let user = |name: &str| SessionUser::User {
            name: name.into(),
            claimed_domain: "WORKGROUP".into(),
        };
        let token = |user| Token {
            user,
            groups: vec![Sid::EVERYONE],
            privileges: smb3d_dtyp::Privileges::empty(),
        };
        let (here, there) = (Guid([1; 16]), Guid([2; 16]));
        let opened_by = |opener, owner| Durability {
            durable: true,
            create_guid: None,
            timeout: V1_TIMEOUT,
            client_guid: here,
            owner,
            share: "share".into(),
            lease: None,
            create_action: CreateAction::OPENED,
            connection: 1,
            persistent: false,
            opener,
        };
        let alices = opened_by(user("alice"), sid(3000));
        assert!(alices.reclaimable_by(&user("alice"), &token(sid(3000)), there));
        // Another user with the opener's SID in its token (a share's forced user), alice
        // with another SID (her uid changed since), anonymous: none of them.
        let mut forced = token(sid(4000));
        forced.groups.push(sid(3000));
        assert!(!alices.reclaimable_by(&user("bob"), &forced, here));
        assert!(!alices.reclaimable_by(&user("alice"), &token(sid(3002)), here));
        assert!(!alices.reclaimable_by(&SessionUser::Anonymous, &token(sid(3000)), here));
        // An anonymous open: only an anonymous session of its client.
        let anonymous = opened_by(SessionUser::Anonymous, Sid::ANONYMOUS);
        let nobody = token(Sid::ANONYMOUS);
        assert!(anonymous.reclaimable_by(&SessionUser::Anonymous, &nobody, here));
        assert!(!anonymous.reclaimable_by(&SessionUser::Anonymous, &nobody, there));
        assert!(!anonymous.reclaimable_by(&user("alice"), &nobody, here));
    }

    #[test]
    fn only_the_first_use_ends_replayability() {
        let state = ReplayState::new(0, true);
        assert!(state.used());
        assert!(!state.used());
        assert!(!ReplayState::new(0, false).used());
    }
}
