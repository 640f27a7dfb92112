//! Persistent handles (MS-SMB2 3.3.5.9.10 Open.IsPersistent, 3.3.5.9.12): the state of each
//! persistent open on a continuous-availability share is kept in a file of its own under the
//! server's state directory, so that a restarted server knows the open again and its client
//! can reclaim it with its locks.
//!
//! On a cluster node (docs/cluster.md) durable (not persistent) opens of its shares have records
//! too, in the same store (etcd), so that a node that takes over a dead node's opens can keep
//! them for their clients (MS-SMB2 3.3.5.9.7/3.3.5.9.12 reconnect needs nothing else); a single
//! server keeps durable opens in memory only, as before.
//!
//! A record is written to the server's [`StateStore`] (durably: on disk, to a temporary name,
//! synced, then renamed over the old one, and the directory synced) when the open is made,
//! after each LOCK that changed its locks, and removed when the open is closed. READ and WRITE
//! never touch it. Records are a small versioned binary format read with the checked reader of
//! network input: a record that does not decode (truncated, foreign, corrupted: its checksum
//! says so) is logged and removed, never trusted.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};
use std::sync::{Arc, Weak};
use std::time::Duration;

use smb3d_dtyp::{AccessMask, Privileges, Sid, Token};
use smb3d_smb2::create::{CreateAction, LeaseKey, OplockLevel, ShareAccess};
use smb3d_smb2::file_id::FileId;
use smb3d_state::Intent;
use smb3d_vfs::{Access, Credentials, Disposition, Kind, OpenRequest, Vfs, VfsFile, VfsPath};
use smb3d_wire::{DecodeError, Guid, Reader, Writer};

use crate::blocking::{Wait, as_user, blocking};
use crate::escape::escape;
use crate::fs::write_time::OpenWrites;
use crate::identity::Identity;
use crate::state::caching::{self, Caching, LeaseId, LeaseRecord, Route};
use crate::state::cluster_opens;
use crate::state::durable::{Durability, ReplayState};
use crate::state::files::{FileKey, OpenEntry, SharedFile};
use crate::state::locks::{HostLocks, RangeLock};
use crate::state::open::{DirCursor, Open, open_widest};
use crate::state::server::Server;
use crate::state::session::SessionUser;
use crate::state::share::{Share, ShareKind};
use crate::state::store::{StateStore, Table};

/// The first bytes of every record.
const MAGIC: &[u8; 8] = b"smb3dph\0";
/// The format of a persistent open's record; records of other versions are not read.
pub(crate) const VERSION: u16 = 1;
/// The same fields, of a durable (not persistent) open of a cluster share: a version that
/// knows only [`VERSION`] refuses it rather than restoring it as persistent.
pub(crate) const DURABLE_VERSION: u16 = 2;
/// The longest name (share, path, user) a record holds.
const MAX_NAME: usize = 64 * 1024;
/// The most SIDs or Unix groups a record's identity holds.
const MAX_GROUPS: usize = 4096;

/// The caching an open held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    None,
    Oplock(OplockLevel),
    Lease {
        key: LeaseKey,
        state: u32,
        epoch: u16,
        /// 1 or 2: the form of the lease context.
        version: u8,
        parent: Option<LeaseKey>,
    },
}

/// A byte-range lock an open held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HeldLock {
    pub offset: u64,
    pub length: u64,
    pub exclusive: bool,
}

/// What a restarted server needs to know of a persistent open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub file_id: FileId,
    pub create_guid: Guid,
    pub client_guid: Guid,
    /// How long the open waits for its client after a disconnect (or a restart).
    pub timeout: Duration,
    pub create_action: CreateAction,
    pub share: String,
    /// The file's path in the share, '/'-separated.
    pub path: String,
    /// The name of the user who opened it, empty for an anonymous session: only the same
    /// user reclaims the open.
    pub user: String,
    /// Open.DurableOwner: the opener's own SID, which a reclaim needs with the same user (one
    /// written by an earlier version may hold a share's forced user's, which only that user's
    /// own session has).
    pub owner: Sid,
    /// The identity work on the open runs with (the share's forced user, if any).
    pub token: Token,
    pub unix: Credentials,
    /// The file's identity when it was opened: a file replaced since is not this open's.
    pub file: FileKey,
    pub granted: AccessMask,
    pub share_access: ShareAccess,
    /// FileModeInformation.Mode.
    pub mode: u32,
    pub held: Held,
    /// Open.ChannelSequence and Open.LockSequenceArray (MS-SMB2 3.3.5.14), so that a LOCK
    /// replayed after the restart is recognised.
    pub channel_sequence: u16,
    pub lock_sequences: [u8; 64],
    pub locks: Vec<HeldLock>,
    /// Open.IsPersistent; false: a durable open of a cluster share ([`DURABLE_VERSION`]).
    pub persistent: bool,
}

/// FNV-1a over `bytes`: detects a record damaged on disk.
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn write_str(w: &mut Writer<'_>, s: &str) {
    let bytes = s.as_bytes();
    let len = bytes.len().min(MAX_NAME);
    w.u32(u32::try_from(len).unwrap_or(u32::MAX))
        .bytes(bytes.get(..len).unwrap_or(bytes));
}

fn read_str(r: &mut Reader<'_>, field: &'static str) -> Result<String, DecodeError> {
    let len = usize::try_from(r.u32(field)?).unwrap_or(usize::MAX);
    if len > MAX_NAME {
        return Err(DecodeError::invalid(field));
    }
    String::from_utf8(r.bytes(len, field)?.to_vec()).map_err(|_| DecodeError::invalid(field))
}

/// A count of items of `size` bytes each that the rest of the record can hold, at most `max`.
fn read_count(
    r: &mut Reader<'_>,
    size: usize,
    max: usize,
    field: &'static str,
) -> Result<usize, DecodeError> {
    let count = usize::try_from(r.u32(field)?).unwrap_or(usize::MAX);
    if count > max || count.saturating_mul(size) > r.remaining() {
        return Err(DecodeError::invalid(field));
    }
    Ok(count)
}

fn write_key(w: &mut Writer<'_>, key: &LeaseKey) {
    w.bytes(&key.0);
}

fn read_key(r: &mut Reader<'_>, field: &'static str) -> Result<LeaseKey, DecodeError> {
    Ok(LeaseKey(r.array(field)?))
}

impl Record {
    pub fn encode(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(512 + self.locks.len() * 17);
        let mut w = Writer::new(&mut buf);
        w.bytes(MAGIC).u16(if self.persistent {
            VERSION
        } else {
            DURABLE_VERSION
        });
        w.u64(self.file_id.persistent).u64(self.file_id.volatile);
        w.guid(&self.create_guid).guid(&self.client_guid);
        w.u64(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX));
        w.u32(self.create_action.0);
        write_str(&mut w, &self.share);
        write_str(&mut w, &self.path);
        write_str(&mut w, &self.user);
        self.owner.encode(&mut w);
        self.token.user.encode(&mut w);
        let groups = self
            .token
            .groups
            .get(..MAX_GROUPS)
            .unwrap_or(&self.token.groups);
        w.u32(u32::try_from(groups.len()).unwrap_or(0));
        for sid in groups {
            sid.encode(&mut w);
        }
        w.u32(self.token.privileges.0);
        w.u32(self.unix.uid).u32(self.unix.gid);
        let unix_groups = self
            .unix
            .groups
            .get(..MAX_GROUPS)
            .unwrap_or(&self.unix.groups);
        w.u32(u32::try_from(unix_groups.len()).unwrap_or(0));
        for gid in unix_groups {
            w.u32(*gid);
        }
        w.u64(self.file.dev).u64(self.file.ino);
        w.u32(self.granted.0)
            .u32(self.share_access.0)
            .u32(self.mode);
        match &self.held {
            Held::None => {
                w.u8(0);
            }
            Held::Oplock(level) => {
                w.u8(1).u8(level.0);
            }
            Held::Lease {
                key,
                state,
                epoch,
                version,
                parent,
            } => {
                w.u8(2);
                write_key(&mut w, key);
                w.u32(*state).u16(*epoch).u8(*version);
                match parent {
                    Some(parent) => {
                        w.u8(1);
                        write_key(&mut w, parent);
                    }
                    None => {
                        w.u8(0);
                    }
                }
            }
        }
        w.u16(self.channel_sequence).bytes(&self.lock_sequences);
        w.u32(u32::try_from(self.locks.len()).unwrap_or(0));
        for lock in self.locks.iter().take(u32::MAX as usize) {
            w.u64(lock.offset)
                .u64(lock.length)
                .u8(u8::from(lock.exclusive));
        }
        let sum = checksum(&buf);
        buf.extend_from_slice(&sum.to_le_bytes());
        buf
    }

    /// Reads a record; anything but a whole record of this version, with its checksum
    /// right and nothing after it, is an error.
    pub fn decode(bytes: &[u8]) -> Result<Record, DecodeError> {
        let body_len = bytes
            .len()
            .checked_sub(8)
            .ok_or(DecodeError::truncated("Checksum"))?;
        let (body, sum) = bytes.split_at(body_len);
        if sum != checksum(body).to_le_bytes() {
            return Err(DecodeError::invalid("Checksum"));
        }
        Self::decode_body(body)
    }

    /// Reads a record's fields, the checksum already checked.
    pub fn decode_body(body: &[u8]) -> Result<Record, DecodeError> {
        let mut r = Reader::new(body);
        if r.array::<8>("Magic")? != *MAGIC {
            return Err(DecodeError::invalid("Magic"));
        }
        let persistent = match r.u16("Version")? {
            VERSION => true,
            DURABLE_VERSION => false,
            _ => return Err(DecodeError::invalid("Version")),
        };
        let file_id = FileId {
            persistent: r.u64("Persistent")?,
            volatile: r.u64("Volatile")?,
        };
        let create_guid = r.guid("CreateGuid")?;
        let client_guid = r.guid("ClientGuid")?;
        let timeout = Duration::from_millis(r.u64("Timeout")?);
        let create_action = CreateAction(r.u32("CreateAction")?);
        let share = read_str(&mut r, "Share")?;
        let path = read_str(&mut r, "Path")?;
        let user = read_str(&mut r, "User")?;
        let owner = Sid::decode(&mut r)?;
        let token_user = Sid::decode(&mut r)?;
        // A SID takes at least 8 bytes.
        let count = read_count(&mut r, 8, MAX_GROUPS, "Groups")?;
        let mut groups = Vec::with_capacity(count);
        for _ in 0..count {
            groups.push(Sid::decode(&mut r)?);
        }
        let privileges = Privileges(r.u32("Privileges")?);
        let uid = r.u32("Uid")?;
        let gid = r.u32("Gid")?;
        let count = read_count(&mut r, 4, MAX_GROUPS, "UnixGroups")?;
        let mut unix_groups = Vec::with_capacity(count);
        for _ in 0..count {
            unix_groups.push(r.u32("UnixGroup")?);
        }
        let file = FileKey {
            dev: r.u64("Dev")?,
            ino: r.u64("Ino")?,
            snapshot: None,
        };
        let granted = AccessMask(r.u32("Granted")?);
        let share_access = ShareAccess(r.u32("ShareAccess")?);
        let mode = r.u32("Mode")?;
        let held = match r.u8("Held")? {
            0 => Held::None,
            1 => Held::Oplock(OplockLevel(r.u8("OplockLevel")?)),
            2 => {
                let key = read_key(&mut r, "LeaseKey")?;
                let state = r.u32("LeaseState")?;
                let epoch = r.u16("Epoch")?;
                let version = r.u8("LeaseVersion")?;
                let parent = match r.u8("HasParent")? {
                    0 => None,
                    1 => Some(read_key(&mut r, "ParentLeaseKey")?),
                    _ => return Err(DecodeError::invalid("HasParent")),
                };
                Held::Lease {
                    key,
                    state,
                    epoch,
                    version,
                    parent,
                }
            }
            _ => return Err(DecodeError::invalid("Held")),
        };
        let channel_sequence = r.u16("ChannelSequence")?;
        let lock_sequences = r.array::<64>("LockSequences")?;
        let count = read_count(&mut r, 17, usize::MAX, "Locks")?;
        let mut locks = Vec::with_capacity(count);
        for _ in 0..count {
            let offset = r.u64("Offset")?;
            let length = r.u64("Length")?;
            let exclusive = match r.u8("Exclusive")? {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::invalid("Exclusive")),
            };
            locks.push(HeldLock {
                offset,
                length,
                exclusive,
            });
        }
        if !r.is_empty() {
            return Err(DecodeError::invalid("Trailing"));
        }
        Ok(Record {
            file_id,
            create_guid,
            client_guid,
            timeout,
            create_action,
            share,
            path,
            user,
            owner,
            token: Token {
                user: token_user,
                groups,
                privileges,
            },
            unix: Credentials {
                uid,
                gid,
                groups: unix_groups,
            },
            file,
            granted,
            share_access,
            mode,
            held,
            channel_sequence,
            lock_sequences,
            locks,
            persistent,
        })
    }
}

/// The record of `open`, made persistent as `durability` says: its current caching,
/// locks and replay state.
fn record_of(open: &Open, durability: &Durability) -> Record {
    let volatile = open.file_id.volatile;
    let (share_access, held) = {
        let state = open.shared.state.lock();
        let entry = state.opens.iter().find(|e| e.id == volatile);
        let held = match entry.map(|e| &e.caching) {
            Some(Caching::Oplock {
                level, breaking_to, ..
            }) => Held::Oplock(breaking_to.unwrap_or(*level)),
            Some(Caching::Lease(id)) => {
                state
                    .leases
                    .iter()
                    .find(|l| l.id == *id)
                    .map_or(Held::None, |l| Held::Lease {
                        key: l.id.key,
                        // A lease being broken is recorded as it must end.
                        state: l.breaking.map_or(l.state, |b| l.state & b.to_required),
                        epoch: l.epoch,
                        version: l.version,
                        parent: l.parent,
                    })
            }
            _ => Held::None,
        };
        (entry.map_or(ShareAccess::empty(), |e| e.share), held)
    };
    let locks = open
        .shared
        .locks
        .held()
        .into_iter()
        .filter(|l| l.owner == volatile)
        .map(|l| HeldLock {
            offset: l.offset,
            length: l.length,
            exclusive: l.exclusive,
        })
        .collect();
    let (channel_sequence, lock_sequences) = open.replay.snapshot();
    Record {
        file_id: open.file_id,
        create_guid: durability.create_guid.unwrap_or(Guid::ZERO),
        client_guid: durability.client_guid,
        timeout: durability.timeout,
        create_action: durability.create_action,
        share: durability.share.clone(),
        path: open.path().as_str().to_owned(),
        user: match &durability.opener {
            SessionUser::User { name, .. } => name.clone(),
            SessionUser::Anonymous => String::new(),
        },
        owner: durability.owner,
        token: open.identity.token.clone(),
        unix: open.identity.unix.clone(),
        file: open.shared.key,
        granted: open.granted,
        share_access,
        mode: u32::try_from(open.mode.load(std::sync::atomic::Ordering::Relaxed)).unwrap_or(0),
        held,
        channel_sequence,
        lock_sequences,
        locks,
        persistent: durability.persistent,
    }
}

/// Whether an open durable as `durability` says has a record: a persistent one always, a
/// durable one on a cluster node (where another node may have to keep it for its client).
pub(crate) fn recorded(server: &Server, durability: &Durability) -> bool {
    durability.persistent || (durability.durable && server.settings.cluster_opens.is_some())
}

/// Writes the record of `open` if it has one ([`recorded`]: after its CREATE, and after a
/// LOCK or an oplock break that changed what a reclaim gives back). Runs off the async
/// workers: the write waits for the disk or etcd.
pub(crate) fn save(server: &Server, open: &Open) -> io::Result<()> {
    let Some(store) = &server.persistent else {
        return Ok(());
    };
    let cluster = server.settings.cluster_opens.is_some();
    if !server.durable.has_record(open.file_id.volatile, cluster) {
        return Ok(());
    }
    blocking(|| {
        let held = store.lock(Table::PersistentOpens, open.file_id.persistent);
        // Decided under the record's guard, so that a record never lands after the open's
        // close removed it, nor an older state after a newer one.
        match server
            .durable
            .durability(open.file_id.volatile)
            .filter(|d| recorded(server, d))
        {
            Some(durability) => store.put(&held, &record_of(open, &durability).encode()),
            None => Ok(()),
        }
    })
}

/// The file `file` was renamed (through any of its opens): the records of its persistent
/// opens (and a cluster node's durable ones), connected or not, take the new path. (Its
/// directories cannot be renamed while it is open, MS-FSA 2.1.5.14.11.)
pub(crate) fn renamed(server: &Server, file: &SharedFile) {
    let cluster = server.settings.cluster_opens.is_some();
    let ids: Vec<u64> = file
        .state
        .lock()
        .opens
        .iter()
        .filter(|e| e.persistent || (cluster && server.durable.has_record(e.id, true)))
        .map(|e| e.id)
        .collect();
    if ids.is_empty() {
        return;
    }
    let mut opens: Vec<Arc<Open>> = ids
        .iter()
        .filter_map(|id| server.durable.disconnected_open(*id))
        .collect();
    opens.extend(server.sessions.lock().values().flat_map(|session| {
        let state = session.state.lock();
        ids.iter()
            .filter_map(|id| state.opens.get(id).cloned())
            .collect::<Vec<_>>()
    }));
    for open in opens {
        if let Err(e) = save(server, &open) {
            // The rename is done; the record names the old path until its next write.
            tracing::error!(
                path = &*escape(open.path().as_str()),
                "the new name of a persistent open could not be recorded: {e}"
            );
        }
    }
}

/// Removes the record of the open `persistent_id` (persistent, or a cluster node's durable
/// one), which was closed.
pub(crate) fn remove(server: &Server, persistent_id: u64) {
    let Some(store) = &server.persistent else {
        return;
    };
    if let Err(e) = blocking(|| drop_record(store.as_ref(), persistent_id)) {
        tracing::error!(
            ?store,
            "the record of closed persistent open {persistent_id:#x} could not be removed: {e}"
        );
    }
}

fn drop_record(store: &dyn StateStore, persistent_id: u64) -> io::Result<()> {
    store.remove(&store.lock(Table::PersistentOpens, persistent_id))
}

/// Marks `open` persistent among its file's opens, so that while disconnected it keeps
/// conflicting opens out ([`crate::state::caching::persistent_conflict`]).
pub(crate) fn mark(open: &Open) {
    let mut state = open.shared.state.lock();
    if let Some(entry) = state
        .opens
        .iter_mut()
        .find(|e| e.id == open.file_id.volatile)
    {
        entry.persistent = true;
    }
}

/// Reads back every record and makes each a disconnected persistent open (see
/// [`restore_one`]); a record that cannot be restored is logged and removed.
pub(crate) fn restore(server: &Arc<Server>) -> usize {
    let Some(store) = &server.persistent else {
        return 0;
    };
    let records = load(store.as_ref());
    // Volatile ids of new opens must not meet those of restored ones.
    for record in &records {
        server.file_ids_above(record.file_id.volatile);
    }
    let mut restored = 0;
    for record in records {
        let id = record.file_id.persistent;
        match restore_one(server, &record) {
            Ok(()) => {
                restored += 1;
                tracing::info!(
                    share = &*escape(&record.share),
                    path = &*escape(&record.path),
                    user = &*escape(&record.user),
                    timeout = ?record.timeout,
                    persistent = record.persistent,
                    "durable open restored; waiting for its client"
                );
            }
            Err(why) => {
                tracing::warn!(
                    share = &*escape(&record.share),
                    path = &*escape(&record.path),
                    "persistent open {id:#x} dropped: {why}"
                );
                if let Err(e) = drop_record(store.as_ref(), id) {
                    tracing::error!(?store, "record {id:#x}: {e}");
                }
            }
        }
    }
    // Restoring ran users' work on this thread; what the caller does next (binding sockets)
    // needs the service's credentials.
    smb3d_credentials::settle();
    restored
}

/// Every record in the store that decodes, in id order; one that does not (a write cut short,
/// damage, another version), or that names another open than its id, is logged and removed.
fn load(store: &dyn StateStore) -> Vec<Record> {
    let stored = match store.load(Table::PersistentOpens) {
        Ok(stored) => stored,
        Err(e) => {
            tracing::error!(?store, "persistent handles not restored: {e}");
            return Vec::new();
        }
    };
    let mut records = Vec::new();
    for (id, bytes) in stored {
        match Record::decode(&bytes) {
            Ok(record) if record.file_id.persistent == id => records.push(record),
            Ok(_) => drop_bad(store, id, "it names another open"),
            Err(e) => drop_bad(store, id, &e.to_string()),
        }
    }
    records
}

fn drop_bad(store: &dyn StateStore, id: u64, why: &str) {
    tracing::warn!(?store, "persistent handle record {id:#x} dropped: {why}");
    if let Err(e) = drop_record(store, id) {
        tracing::error!(?store, "record {id:#x}: {e}");
    }
}

/// Makes `record` a disconnected persistent (or durable) open again: the file is reopened as
/// its user with the access it was granted and must still be the file that was opened; it
/// joins the file's opens with its share access, its oplock or lease and its byte-range
/// locks, and its client has the open's timeout from now to reclaim it (MS-SMB2 3.3.5.9.12,
/// 3.3.5.9.7). A durable record is a cluster node's, restored by the node that takes over
/// its dead node's opens: the timeout counts from then, which is the node's death plus the
/// time its lease took to run out.
fn restore_one(server: &Arc<Server>, record: &Record) -> Result<(), String> {
    let share = server
        .share(&record.share)
        .ok_or("its share is no longer served")?;
    if record.persistent && !share.continuous_availability {
        return Err("its share is no longer continuously available".into());
    }
    if !record.persistent && server.settings.cluster_opens.is_none() {
        return Err("a durable open's record is a cluster node's, and this is none".into());
    }
    let ShareKind::Disk(vfs) = &share.kind else {
        return Err("its share holds no files".into());
    };
    let counted = server
        .open_files
        .take()
        .ok_or("max_open_files opens are restored already")?;
    let path = VfsPath::parse(&record.path).map_err(|e| format!("path: {e}"))?;
    let identity = Arc::new(Identity {
        token: record.token.clone(),
        unix: record.unix.clone(),
    });
    let (file, key) = reopen(vfs.as_ref(), &path, &identity, record)?;
    let volatile = record.file_id.volatile;
    let (caching, lease) = caching_of(record);
    let lease_key = lease.as_ref().map(|l| l.id.key);
    let entry = OpenEntry {
        id: volatile,
        access: record.granted,
        share: record.share_access,
        stream: None,
        persistent_id: record.file_id.persistent,
        caching,
        route: dead_route(),
        disconnected: true,
        persistent: record.persistent,
        // Not kept in the record: a restored open is reclaimed by its own client.
        app_instance: None,
    };
    let shared = server.files.restore(key, &path, entry, lease);
    let host = share.posix_locking.then_some(&file as &dyn HostLocks);
    if !relock(&shared, volatile, &record.locks, host) {
        // Another restored open (or a local process) holds a conflicting lock.
        shared.locks.release_owner(volatile, host);
        server.files.release(&shared, volatile);
        return Err("its locks conflict with another restored open".into());
    }
    let restored = entry_of(&shared, volatile);
    if let Err(why) = record_with_cluster(server, &share, &shared, restored.as_ref(), record) {
        shared.locks.release_owner(volatile, host);
        server.files.release(&shared, volatile);
        return Err(why);
    }
    let open = Arc::new(Open {
        file_id: record.file_id,
        tree_id: AtomicU32::new(0),
        vfs: vfs.clone(),
        share: share.clone(),
        identity,
        file,
        stream: None,
        shared,
        is_directory: false,
        granted: record.granted,
        delete_on_close: false,
        position: AtomicU64::new(0),
        quota_scan: Default::default(),
        mode: AtomicU64::new(u64::from(record.mode)),
        dir: tokio::sync::Mutex::new(DirCursor::default()),
        writes: OpenWrites::default(),
        opened_at: server.settings.clock.wall(),
        audit: None,
        recycle_to: None,
        replay: ReplayState::restored(record.channel_sequence, record.lock_sequences),
        watches_host: AtomicBool::new(false),
        _counted: counted,
    });
    let durability = durability_of(record, share.name.clone(), lease_key);
    server.durable.restore(server, open, durability);
    Ok(())
}

/// The file table's entry of the open `volatile` of `shared`, just restored.
fn entry_of(shared: &SharedFile, volatile: u64) -> Option<OpenEntry> {
    shared
        .state
        .lock()
        .opens
        .iter()
        .find(|e| e.id == volatile)
        .cloned()
}

/// On a cluster node, records a restored open and its locks with the cluster again
/// (docs/cluster.md "Reclaim on another node"): its node's records went with that node's
/// lease (or this node's, before a restart), and without them other nodes' clients would open
/// and lock the file as if the open were not reserved for its client. An open or lock another
/// node's client took in the moment between is kept, and the restored open given up.
fn record_with_cluster(
    server: &Server,
    share: &Share,
    shared: &SharedFile,
    entry: Option<&OpenEntry>,
    record: &Record,
) -> Result<(), String> {
    let (Some(cluster), Some(entry)) = (&server.settings.cluster_opens, entry) else {
        return Ok(());
    };
    let key = cluster_opens::file_key(share, shared.key.ino);
    let id = record.file_id.persistent;
    let bits = caching::open_bits(&shared.state.lock(), entry.id);
    let recorded = cluster_opens::record(entry, false, bits);
    cluster
        .open(&key, id, &recorded, Intent::default())
        .map_err(|e| format!("the cluster refused it: {e:?}"))?;
    let Some(locks) = &server.settings.cluster_locks else {
        return Ok(());
    };
    for lock in &record.locks {
        let range = RangeLock {
            owner: entry.id,
            offset: lock.offset,
            length: lock.length,
            exclusive: lock.exclusive,
        }
        .range();
        if let Err(e) = locks.lock(&key, id, range) {
            let _ = locks.release(&key, id);
            let _ = cluster.close(&key, id);
            return Err(format!("the cluster refused one of its locks: {e:?}"));
        }
    }
    Ok(())
}

/// Opens the file of `record` again, as widely as its user may, up to what it was granted;
/// it must still be the file that was opened.
fn reopen(
    vfs: &dyn Vfs,
    path: &VfsPath,
    identity: &Identity,
    record: &Record,
) -> Result<(Box<dyn VfsFile>, FileKey), String> {
    let reads = record
        .granted
        .intersects(AccessMask::FILE_READ_DATA | AccessMask::FILE_EXECUTE);
    let writes = record
        .granted
        .intersects(AccessMask::FILE_WRITE_DATA | AccessMask::FILE_APPEND_DATA);
    let request = OpenRequest {
        access: match (reads, writes) {
            (true, true) => Access::ReadWrite,
            (false, true) => Access::Write,
            (true, false) => Access::Read,
            (false, false) => Access::MetadataOnly,
        },
        disposition: Disposition::Open,
        kind: Kind::File,
        create_mode: 0,
    };
    let opened = as_user(vfs, identity, Wait::Long, || {
        open_widest(vfs, path, request, AccessMask::MAXIMUM_ALLOWED)
    })
    .map_err(|status| format!("the file cannot be opened: {status:?}"))?;
    let stat = opened
        .file
        .stat()
        .map_err(|e| format!("the file cannot be read: {e}"))?;
    if stat.ino != record.file.ino {
        return Err("the file was replaced".into());
    }
    let key = FileKey {
        dev: stat.dev,
        ino: stat.ino,
        snapshot: None,
    };
    Ok((opened.file, key))
}

/// Where breaks to a disconnected open go: nowhere, until its client reclaims it.
fn dead_route() -> Route {
    Route {
        conn: Weak::new(),
        session_id: 0,
        encrypt: false,
    }
}

/// The oplock or lease `record` held, as the file's tables keep it.
fn caching_of(record: &Record) -> (Caching, Option<LeaseRecord>) {
    match record.held {
        Held::None => (Caching::None, None),
        Held::Oplock(level) => (
            Caching::Oplock {
                level,
                breaking_to: None,
                generation: 0,
            },
            None,
        ),
        Held::Lease {
            key,
            state,
            epoch,
            version,
            parent,
        } => {
            let id = LeaseId {
                client: record.client_guid,
                key,
            };
            (
                Caching::Lease(id),
                Some(LeaseRecord {
                    id,
                    stream: None,
                    version,
                    parent,
                    state,
                    epoch,
                    breaking: None,
                    generation: 0,
                    route: dead_route(),
                    opens: 1,
                }),
            )
        }
    }
}

/// Takes the byte-range locks the open `owner` held again; false when one conflicts.
fn relock(
    shared: &SharedFile,
    owner: u64,
    locks: &[HeldLock],
    host: Option<&dyn HostLocks>,
) -> bool {
    locks.iter().all(|lock| {
        // Locks granted before the restart stand, whatever the limits are now.
        shared
            .locks
            .try_lock(
                RangeLock {
                    owner,
                    offset: lock.offset,
                    length: lock.length,
                    exclusive: lock.exclusive,
                },
                usize::MAX,
                host,
            )
            .is_ok()
    })
}

/// The durable state of a restored open: disconnected (no connection), persistent as its
/// record says.
fn durability_of(record: &Record, share: String, lease: Option<LeaseKey>) -> Durability {
    Durability {
        durable: true,
        create_guid: Some(record.create_guid).filter(|g| *g != Guid::ZERO),
        timeout: record.timeout,
        client_guid: record.client_guid,
        owner: record.owner,
        share,
        lease,
        create_action: record.create_action,
        connection: 0,
        persistent: record.persistent,
        opener: if record.user.is_empty() {
            SessionUser::Anonymous
        } else {
            SessionUser::User {
                name: record.user.clone(),
                claimed_domain: String::new(),
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::store::{DiskStore, MemoryStore};

    fn record() -> Record {
        let sid = |rid| Sid::new(5, &[21, 1, 2, 3, rid]).unwrap();
        let mut lock_sequences = [u8::MAX; 64];
        lock_sequences[3] = 7;
        Record {
            file_id: FileId {
                persistent: 0x1234,
                volatile: 0x5678,
            },
            create_guid: Guid([7; 16]),
            client_guid: Guid([9; 16]),
            timeout: Duration::from_secs(60),
            create_action: CreateAction::CREATED,
            share: "ca".into(),
            path: "dir/Fïle.txt".into(),
            user: "tester".into(),
            owner: sid(3000),
            token: Token {
                user: sid(3000),
                groups: vec![sid(1201), Sid::EVERYONE],
                privileges: Privileges::empty(),
            },
            unix: Credentials {
                uid: 1000,
                gid: 100,
                groups: vec![27, 44],
            },
            file: FileKey {
                dev: 64,
                ino: 99,
                snapshot: None,
            },
            granted: AccessMask::FILE_READ_DATA | AccessMask::FILE_WRITE_DATA,
            share_access: ShareAccess::READ | ShareAccess::WRITE,
            mode: 0x20,
            held: Held::Lease {
                key: LeaseKey([3; 16]),
                state: 0x7,
                epoch: 2,
                version: 2,
                parent: Some(LeaseKey([4; 16])),
            },
            channel_sequence: 1,
            lock_sequences,
            locks: vec![
                HeldLock {
                    offset: 0,
                    length: 10,
                    exclusive: true,
                },
                HeldLock {
                    offset: u64::MAX,
                    length: 0,
                    exclusive: false,
                },
            ],
            persistent: true,
        }
    }

    #[test]
    fn records_round_trip() {
        let mut r = record();
        assert_eq!(Record::decode(&r.encode()).unwrap(), r);
        r.held = Held::Oplock(OplockLevel::BATCH);
        r.locks.clear();
        assert_eq!(Record::decode(&r.encode()).unwrap(), r);
        r.held = Held::None;
        assert_eq!(Record::decode(&r.encode()).unwrap(), r);
    }

    /// A durable (not persistent) open's record is the persistent one's with version 2: the
    /// same bytes but for the version word and the checksum.
    #[test]
    fn durable_records_are_version_2() {
        let persistent = record();
        let durable = Record {
            persistent: false,
            ..record()
        };
        let (p, d) = (persistent.encode(), durable.encode());
        assert_eq!(&d[..10], b"smb3dph\0\x02\0");
        assert_eq!(&p[..10], b"smb3dph\0\x01\0");
        assert_eq!(d[10..d.len() - 8], p[10..p.len() - 8]);
        assert_eq!(Record::decode(&d).unwrap(), durable);
    }

    #[test]
    fn truncated_damaged_and_foreign_records_are_refused() {
        let bytes = record().encode();
        for len in 0..bytes.len() {
            assert!(Record::decode(&bytes[..len]).is_err(), "{len} bytes");
        }
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x40;
            assert!(Record::decode(&damaged).is_err(), "byte {i}");
        }
        let mut longer = bytes[..bytes.len() - 8].to_vec();
        longer.push(0);
        longer.extend_from_slice(&checksum(&longer).to_le_bytes());
        assert!(Record::decode(&longer).is_err(), "trailing byte");
        for version in [0, 3, 0x0101] {
            let mut other_version = bytes[..bytes.len() - 8].to_vec();
            other_version[8..10].copy_from_slice(&u16::to_le_bytes(version));
            other_version.extend_from_slice(&checksum(&other_version).to_le_bytes());
            assert!(Record::decode(&other_version).is_err(), "version {version}");
        }
    }

    /// Garbage with a valid checksum reaches the field decoders: they never panic and never
    /// allocate beyond what the input can hold.
    #[test]
    fn garbage_with_a_valid_checksum_never_panics() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let good = record().encode();
        let body = &good[..good.len() - 8];
        for round in 0..2000 {
            let mut bytes = body.to_vec();
            // Keep the magic and version so that the fields are read.
            let flips = 1 + next() % 8;
            for _ in 0..flips {
                let at = 10 + usize::try_from(next()).unwrap() % (bytes.len() - 10);
                bytes[at] = u8::try_from(next() & 0xff).unwrap();
            }
            if round % 3 == 0 {
                bytes.truncate(10 + usize::try_from(next()).unwrap() % (bytes.len() - 10));
            }
            bytes.extend_from_slice(&checksum(&bytes).to_le_bytes());
            let _ = Record::decode(&bytes);
        }
        // A huge lock count is refused before anything is allocated for it.
        let mut huge = body.to_vec();
        let count_at = huge.len() - 2 * 17 - 4;
        huge[count_at..count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        huge.extend_from_slice(&checksum(&huge).to_le_bytes());
        assert!(Record::decode(&huge).is_err());
    }

    fn put(store: &dyn StateStore, id: u64, bytes: &[u8]) {
        store
            .put(&store.lock(Table::PersistentOpens, id), bytes)
            .unwrap();
    }

    /// The latest record of each open is read back; records that do not decode, or that
    /// name another open than their id, are dropped from the store.
    #[test]
    fn loading_keeps_the_latest_records_and_drops_bad_ones() {
        let store = MemoryStore::default();
        assert!(load(&store).is_empty());
        let mut r = record();
        put(&store, 0x1234, &r.encode());
        r.locks.pop();
        put(&store, 0x1234, &r.encode());
        let mut other = record();
        other.file_id.persistent = 0x99;
        put(&store, 0x99, &other.encode());
        put(&store, 0xaa, b"garbage");
        let mut cut = record().encode();
        cut.truncate(cut.len() / 2);
        put(&store, 0xcc, &cut);
        put(&store, 0xdd, &other.encode());
        assert_eq!(load(&store), vec![other.clone(), r.clone()]);
        let ids: Vec<u64> = store
            .load(Table::PersistentOpens)
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, [0x99, 0x1234]);
    }

    /// A record written by the disk store is the file earlier versions wrote and read.
    #[test]
    fn the_disk_store_keeps_the_record_format() {
        let dir = std::env::temp_dir().join(format!("smb3d-ph-format-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = DiskStore::new(dir.clone());
        let r = record();
        put(&store, r.file_id.persistent, &r.encode());
        let bytes = std::fs::read(dir.join("0000000000001234.open")).unwrap();
        assert_eq!(bytes, r.encode());
        assert_eq!(&bytes[..10], b"smb3dph\0\x01\0");
        assert_eq!(load(&store), vec![r]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
