//! Server-wide state: settings, shares, the session table and id allocators. One `Server`
//! value is passed explicitly to every connection; there is no global state.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use smb3d_auth::netlogon::NetlogonClient;
use smb3d_auth::{CredentialStore, ServerIdentity};
use smb3d_crypto::{Cipher, CryptoProvider};
use smb3d_smb2::file_id::FileId;
use smb3d_wire::Guid;

use crate::address_slots::AddressSlots;
use crate::clock::{Clock, SystemClock};
use crate::hosts::HostRules;
use crate::identity::{IdMap, Identity};
use crate::limits::{Limit, LimitCounters, Limits};
use crate::state::connection::Connection;
use crate::state::connection::limits::OpenFiles;
use crate::state::domain_names::{DomainNames, ListNames};
use crate::state::durable::DurableTable;
use crate::state::files::FileTable;
use crate::state::homes::{Homes, NoShare};
use crate::state::host_changes::HostChanges;
use crate::state::kernel_leases::KernelLeases;
use crate::state::metrics::Metrics;
use crate::state::notify::NotifyHub;
use crate::state::session::{Session, SessionUser};
use crate::state::share::Share;
use crate::state::store::StateStore;
use crate::throttle::LogonThrottle;

/// How a server or share uses SMB3 encryption (MS-SMB2 3.3.1.5 EncryptData and
/// RejectUnencryptedAccess, 3.3.1.6 Share.EncryptData).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EncryptionPolicy {
    /// No cipher is negotiated.
    Off,
    /// A cipher is negotiated; the client decides whether to encrypt.
    #[default]
    Auto,
    /// Clients that can encrypt are told to.
    Desired,
    /// Everything must be encrypted; clients that cannot are refused.
    Required,
}

impl EncryptionPolicy {
    /// Whether sessions or trees under this policy set EncryptData.
    pub fn asks(self) -> bool {
        matches!(self, Self::Desired | Self::Required)
    }
}

/// Protocol settings taken from the configuration.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Lowest and highest dialect revision offered (e.g. 0x0202, 0x0311).
    pub min_dialect: u16,
    pub max_dialect: u16,
    /// RequireMessageSigning (MS-SMB2 3.3.1.5).
    pub require_signing: bool,
    /// IsMultiChannelCapable (MS-SMB2 3.3.1.5): SMB 3 clients may bind more connections to a
    /// session.
    pub multichannel: bool,
    /// SMB2_GLOBAL_CAP_DIRECTORY_LEASING (MS-SMB2 3.3.5.4): 3.x clients get leases on
    /// directories.
    pub directory_leases: bool,
    /// MaxReadSize, MaxWriteSize and MaxTransactSize.
    pub max_io_size: u32,
    /// Credits one connection may hold.
    pub max_credits: u32,
    pub encryption: EncryptionPolicy,
    /// Ciphers offered to 3.1.1 clients, in preference order.
    pub ciphers: Vec<Cipher>,
    /// Resource limits and timeouts (docs/limits.md).
    pub limits: Limits,
    /// How long an oplock or lease break waits for its acknowledgment before the server
    /// takes the caching away itself (MS-SMB2 3.3.2.1 and 3.3.2.5; Windows uses 35 s).
    pub oplock_break_timeout: std::time::Duration,
    /// Where persistent handles are kept across restarts (a
    /// [`DiskStore`](crate::DiskStore) on the state directory); `None` offers none.
    pub state_store: Option<Arc<dyn StateStore>>,
    /// The cluster-wide view of opens of a cluster node (share modes and delete-pending
    /// across nodes, docs/cluster.md); `None`, a single server, costs nothing.
    pub cluster_opens: Option<Arc<dyn smb3d_state::ClusterOpens>>,
    /// The cluster-wide table of byte-range locks of a cluster node (docs/cluster.md); `None`,
    /// a single server, costs one test of it per LOCK, READ and WRITE.
    pub cluster_locks: Option<Arc<dyn smb3d_state::ClusterLocks>>,
    /// A cluster node's MaxClusterDialect, kept current by its membership watch: its disk
    /// shares are cluster shares (MS-SMB2 3.3.5.7); `None`, a single server, has none.
    pub cluster_dialect: Option<Arc<smb3d_state::ClusterDialect>>,
    /// A cluster node's side of change notify and directory leases across nodes
    /// (docs/cluster.md); `None`, a single server, costs one test of it per change.
    pub cluster_notify: Option<Arc<dyn smb3d_state::ClusterNotify>>,
    /// The clock timers and protocol times read ([`SystemClock`](crate::SystemClock)).
    pub clock: Arc<dyn Clock>,
    /// Client addresses that may connect at all (`hosts_allow`, `hosts_deny`).
    pub hosts: HostRules,
    /// A logon with a user name the user database does not know becomes a guest logon
    /// (Samba's `map to guest = bad user`).
    pub map_to_guest: bool,
    /// The Unix account guest and anonymous sessions act as; None, the built-in nobody.
    pub guest_account: Option<String>,
    /// Kerberos logons (`[auth]`): the realm and the keytab's keys; None takes NTLM only.
    pub kerberos: Option<Arc<smb3d_auth::KerberosService>>,
    /// NTLM logons of domain users checked by the DC (`[auth] dc`); None refuses them.
    pub netlogon: Option<Arc<smb3d_auth::netlogon::NetlogonClient>>,
    /// The Unix ids of Active Directory domains' accounts (`[idmap]`).
    pub idmap: smb3d_dtyp::idmap::DomainIdmap,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            min_dialect: 0x0202,
            max_dialect: 0x0311,
            require_signing: false,
            multichannel: true,
            directory_leases: true,
            max_io_size: 8 * 1024 * 1024,
            max_credits: 8192,
            encryption: EncryptionPolicy::Auto,
            ciphers: vec![
                Cipher::Aes128Gcm,
                Cipher::Aes256Gcm,
                Cipher::Aes128Ccm,
                Cipher::Aes256Ccm,
            ],
            limits: Limits::default(),
            oplock_break_timeout: std::time::Duration::from_secs(35),
            state_store: None,
            cluster_opens: None,
            cluster_locks: None,
            cluster_dialect: None,
            cluster_notify: None,
            clock: Arc::new(SystemClock),
            hosts: HostRules::default(),
            map_to_guest: false,
            guest_account: None,
            kerberos: None,
            netlogon: None,
            idmap: smb3d_dtyp::idmap::DomainIdmap::default(),
        }
    }
}

/// Everything a running server shares between its connections.
pub struct Server {
    pub(crate) settings: Settings,
    pub(crate) identity: Arc<ServerIdentity>,
    pub(crate) credentials: Arc<dyn CredentialStore>,
    pub(crate) crypto: Arc<dyn CryptoProvider>,
    /// Replaced as a whole when the configuration is reloaded; tree connects keep the share
    /// they connected to.
    shares: RwLock<Arc<[Arc<Share>]>>,
    /// The home share template, when one is configured; replaced as a whole on reload.
    homes: RwLock<Option<Arc<Homes>>>,
    pub(crate) guid: Guid,
    pub(crate) sessions: Mutex<HashMap<u64, Arc<Session>>>,
    /// Live connections by id, for status reports and admin actions.
    pub(crate) connections: Mutex<HashMap<u64, Weak<Connection>>>,
    pub(crate) metrics: Metrics,
    /// Whether long WRITEs run inline on the workers or hand off.
    pub(crate) write_pace: crate::write_pace::WritePace,
    /// Open files by identity, across all sessions (share modes, delete-pending).
    pub(crate) files: FileTable,
    /// Directory watches of CHANGE_NOTIFY.
    pub(crate) notify: NotifyHub,
    /// Changes other processes make to the shares, watched while a CHANGE_NOTIFY needs them.
    pub(crate) host_changes: HostChanges,
    /// The directories this node told the cluster it watches or leases, by open.
    pub(crate) cluster_interests: crate::state::cluster_notify::Interests,
    /// Durable opens, connected or waiting for a reconnect.
    pub(crate) durable: Arc<DurableTable>,
    /// The Linux file leases held for `kernel_oplocks` shares.
    pub(crate) kernel_leases: KernelLeases,
    /// The records of persistent opens, when the server keeps them.
    pub(crate) persistent: Option<Arc<dyn StateStore>>,
    /// Users and groups as SIDs.
    pub(crate) ids: IdMap,
    /// Names of domain accounts that logged on, for lsarpc.
    pub(crate) domain_names: DomainNames,
    /// How often each limit was hit.
    pub(crate) limit_counters: LimitCounters,
    /// Failed logons by client address.
    pub(crate) logon_throttle: LogonThrottle,
    /// Connections no user has logged on through, and logons under way, by client address.
    address_slots: Arc<AddressSlots>,
    /// Files and directories open, counted against `max_open_files`.
    pub(crate) open_files: Arc<OpenFiles>,
    next_session_id: AtomicU32,
    next_file_id: AtomicU64,
    /// Randomness for persistent FileIds, drawn from the crypto provider a batch at a time.
    file_id_randomness: Mutex<RandomBatch>,
    next_connection_id: AtomicU64,
}

/// Random 64-bit values, refilled from the crypto provider when all are used: one call to it
/// for many opens.
struct RandomBatch {
    values: [u64; RANDOM_BATCH],
    used: usize,
}

const RANDOM_BATCH: usize = 32;

impl RandomBatch {
    fn empty() -> Self {
        Self {
            values: [0; RANDOM_BATCH],
            used: RANDOM_BATCH,
        }
    }

    fn next(&mut self, crypto: &dyn CryptoProvider) -> u64 {
        if self.used == self.values.len() {
            let mut bytes = [0u8; RANDOM_BATCH * 8];
            crypto.fill_random(&mut bytes);
            for (value, chunk) in self.values.iter_mut().zip(bytes.chunks_exact(8)) {
                *value = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
            }
            self.used = 0;
        }
        let value = self.values.get(self.used).copied().unwrap_or_default();
        self.used += 1;
        value
    }
}

impl Server {
    /// An NTLM acceptor for a logon outside SMB (the witness service's RPC binds): the same
    /// user database and domain logons as a session setup, and never a guest.
    pub fn logon_acceptor(&self) -> smb3d_auth::Acceptor {
        smb3d_auth::Acceptor::new(self.identity.clone(), self.credentials.clone())
            .with_netlogon(self.settings.netlogon.clone())
    }

    /// The names the server announces (its NetBIOS and DNS names).
    pub fn server_identity(&self) -> &ServerIdentity {
        &self.identity
    }

    pub fn new(
        settings: Settings,
        identity: ServerIdentity,
        credentials: Arc<dyn CredentialStore>,
        crypto: Arc<dyn CryptoProvider>,
        shares: Vec<Share>,
    ) -> Arc<Self> {
        let mut guid = Guid::ZERO;
        crypto.fill_random(&mut guid.0);
        // Session ids start at a random point so that ids from before a restart are not
        // accepted by accident.
        let mut seed = [0u8; 4];
        crypto.fill_random(&mut seed);
        let ids = IdMap::new(&identity.netbios_name).with_domains(settings.idmap.clone());
        let persistent = settings.state_store.clone();
        let address_slots = AddressSlots::new(settings.limits.max_connections_per_address);
        let open_files = OpenFiles::new(settings.limits.max_open_files);
        Arc::new(Self {
            settings,
            identity: Arc::new(identity),
            credentials,
            crypto,
            shares: RwLock::new(shares.into_iter().map(Arc::new).collect()),
            homes: RwLock::new(None),
            guid,
            sessions: Mutex::new(HashMap::new()),
            connections: Mutex::new(HashMap::new()),
            metrics: Metrics::default(),
            write_pace: crate::write_pace::WritePace::default(),
            files: FileTable::default(),
            notify: NotifyHub::default(),
            host_changes: HostChanges::default(),
            cluster_interests: Default::default(),
            durable: Arc::default(),
            kernel_leases: KernelLeases::default(),
            persistent,
            ids,
            domain_names: DomainNames::default(),
            limit_counters: LimitCounters::default(),
            logon_throttle: LogonThrottle::default(),
            address_slots,
            open_files,
            next_session_id: AtomicU32::new(u32::from_le_bytes(seed)),
            next_file_id: AtomicU64::new(1),
            file_id_randomness: Mutex::new(RandomBatch::empty()),
            next_connection_id: AtomicU64::new(1),
        })
    }

    /// The embedder now receives `signal`, with which the kernel asks for a Linux file lease
    /// to be broken, and calls [`kernel_lease_signalled`](Self::kernel_lease_signalled) for
    /// each: shares with `kernel_oplocks` may now grant caching, backed by such leases.
    /// `break_time` is the kernel's `lease-break-time`.
    pub fn listen_for_kernel_lease_breaks(&self, signal: i32, break_time: std::time::Duration) {
        self.kernel_leases.listen(signal, break_time);
    }

    /// The kernel sent the signal named to
    /// [`listen_for_kernel_lease_breaks`](Self::listen_for_kernel_lease_breaks): the SMB
    /// caching behind the leases being broken is broken, and the leases lowered once it is.
    pub fn kernel_lease_signalled(self: &Arc<Self>) {
        crate::state::kernel_leases::signalled(self);
    }

    /// The limits this server applies.
    pub fn limits(&self) -> &Limits {
        &self.settings.limits
    }

    /// Counts a hit of `limit` (one the transport enforces) and logs it.
    pub fn limit_reached(&self, limit: Limit, detail: &dyn std::fmt::Display) {
        self.limit_counters.hit(limit, detail);
    }

    /// Whether a client at `peer` (the TCP peer, never an address the client states) may
    /// connect at all; a refusal is counted and logged (the first and then every power of two,
    /// so a flood cannot flood the log).
    pub fn admits_peer(&self, peer: std::net::IpAddr) -> bool {
        if self.settings.hosts.admits(peer) {
            return true;
        }
        let n = self.metrics.connection_refused_by_host();
        if n.is_power_of_two() {
            tracing::info!(client = %peer, refused = n, "connection refused by hosts_allow/hosts_deny");
        } else {
            tracing::debug!(client = %peer, refused = n, "connection refused by hosts_allow/hosts_deny");
        }
        false
    }

    /// The places of `max_connections_per_address`: the transport takes one for each
    /// connection it accepts and hands it to [`Connection::accepted`].
    pub fn address_slots(&self) -> &Arc<AddressSlots> {
        &self.address_slots
    }

    /// How often each limit was hit since the server started.
    pub fn limit_hits(&self) -> Vec<(Limit, u64)> {
        self.limit_counters.snapshot()
    }

    /// A share by name, case-insensitively.
    pub(crate) fn share(&self, name: &str) -> Option<Arc<Share>> {
        self.shares
            .read()
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name))
            .cloned()
    }

    /// How share user lists see names of the DC's domain now (docs/auth.md, "Share user
    /// lists").
    pub(crate) fn list_names(&self) -> ListNames<'_> {
        let dc = self
            .settings
            .netlogon
            .as_deref()
            .map(NetlogonClient::domain);
        ListNames::new(&self.domain_names, dc, self.ids.domains(), Instant::now())
    }

    /// Has the DC resolve the names of its domain in `share`'s user lists that have no live
    /// resolution, in one call, before a TREE_CONNECT checks the lists. Blocks for at most the
    /// DC client's bounds, only when something is to be asked (and not while the DC rests
    /// after a failure).
    pub(crate) fn resolve_list_names(&self, share: &Share) {
        let Some(dc) = self.settings.netlogon.as_deref() else {
            return;
        };
        let entries = share.dc_entries(dc.domain());
        let now = Instant::now();
        if !entries.is_empty() && self.domain_names.lists_need_asking(&entries, now) {
            crate::blocking::blocking(|| self.domain_names.ask_list_names(dc, &entries, now));
        }
    }

    /// The share a tree connect to `name` by a session of `user` acting as `who` reaches: a
    /// configured share of that name, else the user's home ([`Homes::resolve`]).
    pub(crate) fn share_for(
        &self,
        name: &str,
        user: &SessionUser,
        who: &Identity,
    ) -> Result<Arc<Share>, NoShare> {
        if let Some(share) = self.share(name) {
            return Ok(share);
        }
        let homes = self.homes().ok_or(NoShare::NOT_FOUND)?;
        homes.resolve(name, user, who)
    }

    /// The home share template, when one is configured.
    pub fn homes(&self) -> Option<Arc<Homes>> {
        self.homes.read().clone()
    }

    /// Makes home shares from `homes` from now on (at start and on reload); tree connects to
    /// homes made before keep them.
    pub fn replace_homes(&self, homes: Option<Homes>) {
        *self.homes.write() = homes.map(Arc::new);
    }

    /// Whether NEGOTIATE offers persistent handles: the server keeps them and serves a
    /// continuous-availability share.
    pub(crate) fn offers_persistent_handles(&self) -> bool {
        self.persistent.is_some() && self.shares.read().iter().any(|s| s.continuous_availability)
    }

    /// The shares new tree connects see.
    pub fn shares(&self) -> Arc<[Arc<Share>]> {
        self.shares.read().clone()
    }

    /// Serves `shares` to new tree connects from now on (a configuration reload); existing
    /// tree connects keep the share they connected to, as Samba's do.
    pub fn replace_shares(&self, shares: Vec<Arc<Share>>) {
        *self.shares.write() = shares.into();
    }

    /// The server's counters.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    pub(crate) fn allocate_connection_id(&self) -> u64 {
        self.next_connection_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The connections that are still up.
    pub(crate) fn live_connections(&self) -> Vec<Arc<Connection>> {
        self.connections
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// A SessionId for a new session (MS-SMB2 3.3.5.5.1): unique and never 0. Ids stay within
    /// 32 bits, as Samba's do (its SessionId is its 32-bit global session id): clients tested
    /// only against Samba may keep just the low half (smbtorture smb2.session-id does).
    pub(crate) fn allocate_session_id(&self) -> u64 {
        let sessions = self.sessions.lock();
        next_free_id(&self.next_session_id, |id| sessions.contains_key(&id))
    }

    /// Reads back the persistent opens kept in the state directory, disconnected, for their
    /// clients to reclaim; returns how many. Call once, before serving, on the runtime.
    pub fn restore_persistent_handles(self: &Arc<Self>) -> usize {
        crate::state::persistent::restore(self)
    }

    /// On a cluster node, starts carrying out the oplock and lease breaks other nodes ask of
    /// this node's opens (docs/cluster.md); nothing on a single server. Call once, on the
    /// runtime.
    pub fn follow_cluster_breaks(self: &Arc<Self>) {
        crate::state::cluster_opens::follow_breaks(self);
        crate::state::cluster_notify::follow(self);
    }

    /// New opens get volatile ids above `volatile` (one a restored open has).
    pub(crate) fn file_ids_above(&self, volatile: u64) {
        self.next_file_id
            .fetch_max(volatile.saturating_add(1), Ordering::Relaxed);
    }

    /// The FileId of a new open (MS-SMB2 2.2.14.1): the volatile half counts up and is unique
    /// on the server; the persistent half is random, so that no one reclaims a durable open by
    /// guessing its id from their own (3.3.5.9.7). The volatile half is mixed in so that a
    /// provider without randomness (the fuzzing one) still gives distinct ids.
    pub(crate) fn new_file_id(&self) -> FileId {
        let volatile = self.next_file_id.fetch_add(1, Ordering::Relaxed);
        let random = self.file_id_randomness.lock().next(self.crypto.as_ref());
        FileId {
            persistent: random ^ volatile,
            volatile,
        }
    }

    /// Removes session `id` from whichever connection has it.
    pub(crate) fn forget_session(&self, id: u64) {
        let connections: Vec<Arc<Connection>> = self
            .connections
            .lock()
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for conn in connections {
            conn.remove_session(id);
        }
    }

    pub(crate) fn session(&self, id: u64) -> Option<Arc<Session>> {
        self.sessions.lock().get(&id).cloned()
    }

    /// Number of sessions, trees, opens (named pipes included) and open files, for tests and
    /// status reports.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let sessions = self.sessions.lock();
        let (mut trees, mut opens) = (0, 0);
        for s in sessions.values() {
            let st = s.state.lock();
            trees += st.trees.len();
            opens += st.opens.len() + st.trees.values().map(|t| t.pipes.len()).sum::<usize>();
        }
        (sessions.len(), trees, opens, self.files.len())
    }
}

/// The next value of `counter` that is neither 0 nor `taken`; the counter wraps.
fn next_free_id(counter: &AtomicU32, taken: impl Fn(u64) -> bool) -> u64 {
    loop {
        let id = u64::from(counter.fetch_add(1, Ordering::Relaxed));
        if id != 0 && !taken(id) {
            return id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_wrap_past_zero_and_skip_those_in_use() {
        let counter = AtomicU32::new(u32::MAX - 1);
        let in_use = [u64::from(u32::MAX), 1];
        let taken = |id| in_use.contains(&id);
        assert_eq!(next_free_id(&counter, taken), u64::from(u32::MAX - 1));
        assert_eq!(next_free_id(&counter, taken), 2);
        assert_eq!(next_free_id(&counter, taken), 3);
    }
}
