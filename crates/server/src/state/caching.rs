//! Oplocks and leases: the caching state of a file's opens and leases, and the rules that break
//! it (MS-FSA 2.1.4.12 and 2.1.5.17/2.1.5.18, MS-SMB2 3.3.1.4 Lease, 3.3.4.6 and 3.3.4.7 break
//! notifications, 3.3.5.22 acknowledgments). Where the specifications leave room, smb3d answers
//! as Windows does in smbtorture's `smb2.oplock` and `smb2.lease` suites.
//!
//! Both kinds of caching are kept as lease bits: a level II oplock is R, an exclusive one RW, a
//! batch one RWH. The state lives in the file's [`FileState`] next to its share modes, so one
//! lock covers the checks an open makes; the functions here change it and return the
//! notifications to send ([`Breaks`]), which [`deliver`] sends once the lock is released.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::create::{Lease, LeaseFlags, LeaseKey, LeaseState, LeaseV2, OplockLevel};
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::oplock_break::{LeaseBreakFlags, LeaseBreakNotification, OplockBreak};
use smb3d_vfs::KernelLease;
use smb3d_wire::Guid;

use crate::state::connection::Connection;
use crate::state::files::{self, FileKey, FileState, OpenEntry, SharedFile};
use crate::state::notify::ShareKey;
use crate::state::open::Open;
use crate::state::server::Server;
use crate::tasks;

/// Read caching (level II).
pub(crate) const R: u32 = LeaseState::READ_CACHING.0;
/// Handle caching (the "batch" part of a batch oplock).
pub(crate) const H: u32 = LeaseState::HANDLE_CACHING.0;
/// Write caching (exclusive).
pub(crate) const W: u32 = LeaseState::WRITE_CACHING.0;

/// Where break notifications for an open or lease go: the connection and session it was
/// opened through.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub conn: Weak<Connection>,
    pub session_id: u64,
    /// The open's tree connect encrypts (TreeConnect.EncryptData), so breaks are encrypted.
    pub encrypt: bool,
}

/// A lease's identity: the client's ClientGuid and its LeaseKey (MS-SMB2 3.3.1.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct LeaseId {
    pub client: Guid,
    pub key: LeaseKey,
}

/// The caching an open holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Caching {
    None,
    /// An oplock (II, exclusive or batch); `breaking_to` is set while a break to that level
    /// waits for the client's acknowledgment, `generation` names that break for its timer.
    Oplock {
        level: OplockLevel,
        breaking_to: Option<OplockLevel>,
        generation: u64,
    },
    /// The open belongs to this lease (a [`LeaseRecord`] of the same file).
    Lease(LeaseId),
}

/// A break of a lease waiting for its acknowledgment (Lease.Breaking, BreakToLeaseState).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Breaking {
    /// The most the lease may keep once acknowledged.
    pub to_requested: u32,
    /// What it must come down to in the end; later conflicts may lower it further.
    pub to_required: u32,
}

/// A lease on a file (MS-SMB2 3.3.1.4), shared by the opens of one client that name its key.
#[derive(Debug, Clone)]
pub(crate) struct LeaseRecord {
    pub id: LeaseId,
    /// The named stream the lease is on; `None` for the default stream.
    pub stream: Option<Arc<str>>,
    /// 1 or 2: the form of the context that made it, which its responses and breaks keep.
    pub version: u8,
    pub parent: Option<LeaseKey>,
    pub state: u32,
    pub epoch: u16,
    pub breaking: Option<Breaking>,
    /// Names the current break for its timer.
    pub generation: u64,
    pub route: Route,
    /// Opens holding the lease.
    pub opens: usize,
}

impl LeaseRecord {
    fn notification(&self, from: u32, to: u32, ack: bool) -> LeaseBreakNotification {
        LeaseBreakNotification {
            new_epoch: if self.version >= 2 { self.epoch } else { 0 },
            flags: if ack {
                LeaseBreakFlags::ACK_REQUIRED
            } else {
                LeaseBreakFlags::empty()
            },
            lease_key: self.id.key,
            current_lease_state: LeaseState(from),
            new_lease_state: LeaseState(to),
            break_reason: 0,
            access_mask_hint: 0,
            share_mask_hint: 0,
        }
    }

    /// The lease context of a CREATE response (MS-SMB2 2.2.14.2.10, 2.2.14.2.11).
    pub fn response(&self) -> Lease {
        let mut flags = LeaseFlags::empty();
        if self.breaking.is_some() {
            flags |= LeaseFlags::BREAK_IN_PROGRESS;
        }
        if self.version >= 2 && self.parent.is_some() {
            flags |= LeaseFlags::PARENT_LEASE_KEY_SET;
        }
        Lease {
            lease_key: self.id.key,
            lease_state: LeaseState(self.state),
            lease_flags: flags,
            lease_duration: 0,
            v2: (self.version >= 2).then(|| LeaseV2 {
                parent_lease_key: self.parent.unwrap_or_default(),
                epoch: self.epoch,
            }),
        }
    }
}

/// What a CREATE asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Request {
    None,
    Oplock(OplockLevel),
    Lease(LeaseRequest),
}

/// A lease request (SMB2_CREATE_REQUEST_LEASE or _V2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LeaseRequest {
    pub id: LeaseId,
    pub state: u32,
    /// Present for the version 2 context.
    pub v2: Option<LeaseV2>,
    pub flags: LeaseFlags,
}

impl Request {
    fn lease_id(&self) -> Option<LeaseId> {
        match self {
            Self::Lease(l) => Some(l.id),
            _ => None,
        }
    }
}

/// What a new open asks of the caching rules, besides its [`OpenEntry`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opening {
    pub request: Request,
    /// The open truncates the file (SUPERSEDE, OVERWRITE, OVERWRITE_IF).
    pub overwrite: bool,
    /// False when the open tries again after waiting for breaks.
    pub first_attempt: bool,
    /// The file existed before this open.
    pub existed: bool,
    /// The open deletes the file when closed: handle caching of others conflicts with it.
    pub delete_on_close: bool,
    /// The open is of a directory in this share: a lease it gets is a directory lease, which
    /// changes to the directory's children break ([`crate::state::dir_leases`]).
    pub directory: Option<ShareKey>,
}

/// What an open was granted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Granted {
    pub caching: Caching,
    /// The CREATE response's OplockLevel (LEASE when a lease context answers).
    pub oplock_level: OplockLevel,
    pub lease: Option<Lease>,
    /// The Linux file lease taken on the open's descriptor for it (`kernel_oplocks`).
    pub kernel: KernelLease,
}

/// On a `kernel_oplocks` share: takes the Linux file lease that caching with the given bits
/// needs on the new open's descriptor, and says which bits the lease it got allows
/// ([`crate::state::kernel_leases::KernelLeases::hold`]).
pub(crate) type KernelHold<'a> = &'a (dyn Fn(u32) -> (u32, KernelLease) + Sync);

/// A break notification to send.
#[derive(Debug, Clone)]
pub(crate) enum Note {
    Oplock {
        route: Route,
        file_id: FileId,
        level: OplockLevel,
    },
    Lease {
        route: Route,
        message: LeaseBreakNotification,
    },
}

/// A break that waits for an acknowledgment, and so for the break timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Awaited {
    Oplock { open: u64, generation: u64 },
    Lease { id: LeaseId, generation: u64 },
}

/// Notifications and timers to start once the file's state is unlocked.
#[derive(Debug, Default)]
pub(crate) struct Breaks {
    pub notes: Vec<Note>,
    pub awaited: Vec<Awaited>,
    /// Disconnected durable opens whose caching must go, which only closing them achieves.
    pub purge: Vec<u64>,
    /// A disconnected persistent open's caching would have to go: what needs it fails with
    /// STATUS_FILE_NOT_AVAILABLE instead (persistent opens are never purged).
    pub unavailable: bool,
}

/// The lease bits an oplock level stands for.
fn oplock_bits(level: OplockLevel) -> u32 {
    match level {
        OplockLevel::II => R,
        OplockLevel::EXCLUSIVE => R | W,
        OplockLevel::BATCH => R | W | H,
        _ => 0,
    }
}

/// The oplock level lease bits allow; RH is only level II (oplocks have no handle caching
/// without write caching).
fn oplock_for(bits: u32) -> OplockLevel {
    if bits == R | W | H {
        OplockLevel::BATCH
    } else if bits == R | W {
        OplockLevel::EXCLUSIVE
    } else if bits & R != 0 {
        OplockLevel::II
    } else {
        OplockLevel::NONE
    }
}

/// An open for attributes only never breaks an oplock (MS-FSA 2.1.5.1.2.1: only opens with
/// other rights take part).
fn is_oplock_stat_open(access: AccessMask) -> bool {
    let stat = AccessMask::SYNCHRONIZE.0
        | AccessMask::FILE_READ_ATTRIBUTES.0
        | AccessMask::FILE_WRITE_ATTRIBUTES.0;
    access.0 & stat != 0 && access.0 & !stat == 0
}

/// The access that decides whether an open is a stat open for oplocks: an overwrite writes
/// data, whatever access it asked for.
fn oplock_access(new: &OpenEntry, opening: &Opening) -> AccessMask {
    if opening.overwrite {
        new.access | AccessMask::FILE_WRITE_DATA
    } else {
        new.access
    }
}

/// Leases are not broken by an open that only reads attributes or the security descriptor.
fn is_lease_stat_open(access: AccessMask) -> bool {
    let stat = AccessMask::SYNCHRONIZE.0
        | AccessMask::FILE_READ_ATTRIBUTES.0
        | AccessMask::FILE_WRITE_ATTRIBUTES.0
        | AccessMask::READ_CONTROL.0;
    access.0 & stat != 0 && access.0 & !stat == 0
}

impl OpenEntry {
    /// The lease bits this open caches with, its lease's if it has one.
    fn bits(&self, leases: &[LeaseRecord]) -> u32 {
        match &self.caching {
            Caching::None => 0,
            Caching::Oplock { level, .. } => oplock_bits(*level),
            Caching::Lease(id) => leases.iter().find(|l| l.id == *id).map_or(0, |l| l.state),
        }
    }
}

impl FileState {
    fn next_generation(&mut self) -> u64 {
        self.break_generation += 1;
        self.break_generation
    }

    /// Whether any open of the file caches reads without caching writes (level II oplocks
    /// and leases without W), which writes and locks must break.
    pub fn has_shared_read_caching(&self) -> bool {
        self.leases
            .iter()
            .any(|l| l.state & R != 0 && l.state & W == 0)
            || self.opens.iter().any(|e| {
                matches!(
                    e.caching,
                    Caching::Oplock {
                        level: OplockLevel::II,
                        ..
                    }
                )
            })
    }
}

/// Breaks a lease towards `break_to` (Samba's break message handling, MS-SMB2 3.3.4.7): a
/// lease already breaking only lowers its target; a lease holding only R loses it at once
/// (no acknowledgment); otherwise it waits for the client's acknowledgment.
fn break_lease(lease: &mut LeaseRecord, break_to: u32, generation: u64, out: &mut Breaks) {
    let mut break_to = break_to & lease.state;
    if let Some(breaking) = &mut lease.breaking {
        breaking.to_required &= break_to;
        return;
    }
    if lease.state == break_to {
        return;
    }
    let from = lease.state;
    lease.epoch = lease.epoch.wrapping_add(1);
    let ack = from != R;
    if ack {
        lease.breaking = Some(Breaking {
            to_requested: break_to,
            to_required: break_to,
        });
        lease.generation = generation;
        out.awaited.push(Awaited::Lease {
            id: lease.id,
            generation,
        });
    } else {
        break_to = 0;
        lease.state = 0;
    }
    out.notes.push(Note::Lease {
        route: lease.route.clone(),
        message: lease.notification(from, break_to, ack),
    });
}

/// When every open holding lease `id` is a disconnected durable open, nobody can answer its
/// break: they are to be closed (MS-SMB2 3.3.4.7), unless one is persistent (then the
/// break cannot happen: [`Breaks::unavailable`]). True if so.
fn purge_unreachable(opens: &[OpenEntry], id: LeaseId, out: &mut Breaks) -> bool {
    let holders = || {
        opens
            .iter()
            .filter(move |e| e.caching == Caching::Lease(id))
    };
    let unreachable = holders().next().is_some() && holders().all(|e| e.disconnected);
    if unreachable {
        if holders().any(|e| e.persistent) {
            out.unavailable = true;
        } else {
            out.purge.extend(holders().map(|e| e.id));
        }
    }
    unreachable
}

/// Closes a disconnected durable open whose oplock is in the way, or, for a persistent
/// one, makes the operation that needs it fail ([`Breaks::unavailable`]).
fn purge_open(entry: &OpenEntry, out: &mut Breaks) {
    if entry.persistent {
        out.unavailable = true;
    } else {
        out.purge.push(entry.id);
    }
}

/// Whether a disconnected persistent open keeps the new open `new` out
/// (STATUS_FILE_NOT_AVAILABLE), as Windows answers in smbtorture's smb2.durable-v2-open
/// persistent-reconnect-contended tests: its client must find the file as it left it, so any
/// open that is not for attributes only waits for the reconnect unless the persistent open
/// caches handles (and writes, on a file with byte-range locks); then the usual breaks decide
/// ([`breaks_for_open`]).
pub(crate) fn persistent_conflict(
    state: &FileState,
    new: &OpenEntry,
    opening: &Opening,
    has_byte_range_locks: bool,
) -> bool {
    if is_oplock_stat_open(oplock_access(new, opening)) {
        return false;
    }
    let needed = if has_byte_range_locks { H | W } else { H };
    state
        .opens
        .iter()
        .filter(|e| e.persistent && e.disconnected && e.stream == new.stream)
        .any(|e| e.bits(&state.leases) & needed != needed)
}

/// Breaks an open's oplock to level II or none: a level II oplock goes without an
/// acknowledgment, a stronger one waits for it.
fn break_oplock(entry: &mut OpenEntry, to: OplockLevel, generation: u64, out: &mut Breaks) {
    let Caching::Oplock {
        level, breaking_to, ..
    } = &entry.caching
    else {
        return;
    };
    if breaking_to.is_some() || *level == to {
        return;
    }
    out.notes.push(Note::Oplock {
        route: entry.route.clone(),
        file_id: FileId {
            persistent: entry.persistent_id,
            volatile: entry.id,
        },
        level: to,
    });
    if *level == OplockLevel::II {
        entry.caching = Caching::None;
    } else {
        entry.caching = Caching::Oplock {
            level: *level,
            breaking_to: Some(to),
            generation,
        };
        out.awaited.push(Awaited::Oplock {
            open: entry.id,
            generation,
        });
    }
}

/// MS-FSA 2.1.4.12 for a new open: breaks the caching that conflicts with it and says whether
/// the open must wait for those breaks. Write caching always conflicts with another open;
/// handle caching only when the open is a sharing violation (closing a cached handle may
/// resolve it); read caching with an overwrite. A lease already breaking holds the open up
/// until it is acknowledged.
pub(crate) fn breaks_for_open(
    state: &mut FileState,
    new: &OpenEntry,
    opening: &Opening,
    sharing_violation: bool,
    out: &mut Breaks,
) -> bool {
    if is_oplock_stat_open(oplock_access(new, opening)) {
        return false;
    }
    let delay_mask = if sharing_violation {
        H
    } else if opening.delete_on_close {
        W | H
    } else {
        W
    };
    let overwrite = opening.overwrite && !sharing_violation;
    let conflict = |held: u32| {
        let mut break_to = held & !delay_mask;
        if overwrite {
            break_to &= !(H | R | W);
        }
        break_to
    };
    let mut delay = false;
    let generation = state.next_generation();
    for entry in state.opens.iter_mut().filter(|e| e.stream == new.stream) {
        let Caching::Oplock { level, .. } = &entry.caching else {
            continue;
        };
        let held = oplock_bits(*level);
        let break_to = conflict(held);
        if held & !break_to == 0 {
            continue;
        }
        if held & delay_mask != 0 {
            delay = true;
        }
        if entry.disconnected {
            // Nobody can answer the break: the durable open goes (MS-SMB2 3.3.4.6).
            purge_open(entry, out);
            delay = true;
            continue;
        }
        let to = if break_to & R != 0 {
            OplockLevel::II
        } else {
            OplockLevel::NONE
        };
        break_oplock(entry, to, generation, out);
    }
    if is_lease_stat_open(new.access) {
        return delay;
    }
    let own = opening.request.lease_id();
    for lease in state
        .leases
        .iter_mut()
        .filter(|l| l.stream == new.stream && Some(l.id) != own)
    {
        if lease.state & !conflict(lease.state) != 0
            && purge_unreachable(&state.opens, lease.id, out)
        {
            delay = true;
            continue;
        }
        let held = lease.state;
        let break_to = conflict(held);
        if held & !break_to == 0 {
            delay |= lease.breaking.is_some();
            continue;
        }
        if held & delay_mask != 0 || (lease.breaking.is_some() && !opening.first_attempt) {
            delay = true;
        }
        break_lease(lease, break_to, generation, out);
    }
    delay
}

/// MS-SMB2 3.3.5.9 and MS-FSA 2.1.5.18: the caching a new open gets, given the opens it joins
/// (as Windows grants it: write caching only for the only open, no handle caching for a lease
/// next to an oplock, no oplock next to handle caching, no read or handle caching on a file
/// with byte-range locks). Records the lease ([`record_lease`]); the caller records the open
/// with the returned caching.
pub(crate) fn grant(
    state: &mut FileState,
    new: &OpenEntry,
    opening: &Opening,
    has_byte_range_locks: bool,
    kernel: Option<KernelHold<'_>>,
) -> Granted {
    let hold = |bits: u32| match kernel {
        Some(hold) if bits != 0 => hold(bits),
        _ => (bits, KernelLease::None),
    };
    let lease_request = match opening.request {
        Request::Lease(l) => Some(l),
        _ => None,
    };
    let requested = match opening.request {
        Request::None => 0,
        Request::Oplock(level) => oplock_bits(level),
        Request::Lease(l) => l.state & (R | W | H),
    };
    let mut granted = requested;
    if lease_request.is_some() && granted & R == 0 {
        // A lease without R (W, WH, H) is not granted.
        granted = 0;
    }
    if !opening.overwrite && has_byte_range_locks {
        granted &= !(R | H);
    }
    let stat_open = is_oplock_stat_open(oplock_access(new, opening));
    if lease_request.is_none() && stat_open && opening.existed {
        // Stat opens of existing files get no oplock (they may get a lease).
        granted = 0;
    }
    let own = opening.request.lease_id();
    let (mut got_oplock, mut got_handle, mut disallow_write) = (false, false, false);
    if !stat_open {
        for entry in state.opens.iter().filter(|e| e.stream == new.stream) {
            let own_lease = matches!(&entry.caching, Caching::Lease(id) if Some(*id) == own);
            if own_lease {
                continue;
            }
            let bits = entry.bits(&state.leases);
            got_handle |= bits & H != 0;
            got_oplock |= matches!(entry.caching, Caching::Oplock { .. });
            disallow_write |= entry.caching != Caching::None || !is_oplock_stat_open(entry.access);
        }
    }
    if disallow_write {
        granted &= !W;
    }
    let Some(request) = lease_request else {
        if got_handle {
            granted = 0;
        }
        let (granted, kernel) = hold(granted);
        let level = oplock_for(granted);
        return Granted {
            caching: if level == OplockLevel::NONE {
                Caching::None
            } else {
                Caching::Oplock {
                    level,
                    breaking_to: None,
                    generation: 0,
                }
            },
            oplock_level: level,
            lease: None,
            kernel,
        };
    };
    if got_oplock {
        granted &= !H;
    }
    let (granted, kernel) = hold(granted);
    let response = record_lease(&mut state.leases, new, &request, granted);
    Granted {
        caching: Caching::Lease(request.id),
        oplock_level: OplockLevel::LEASE,
        lease: Some(response),
        kernel,
    }
}

/// Records `new`'s lease of `request` with the caching `granted`: a lease the client already
/// holds on the file is upgraded when the request is a strict superset the others allow.
fn record_lease(
    leases: &mut Vec<LeaseRecord>,
    new: &OpenEntry,
    request: &LeaseRequest,
    granted: u32,
) -> Lease {
    match leases.iter_mut().find(|l| l.id == request.id) {
        Some(existing) => {
            let upgrade = existing.state & request.state == existing.state
                && granted != existing.state
                && granted == request.state
                && existing.breaking.is_none();
            if upgrade {
                existing.state = granted;
                existing.epoch = existing.epoch.wrapping_add(1);
            }
            existing.opens += 1;
            existing.route = new.route.clone();
            existing.response()
        }
        None => {
            let epoch = request.v2.map_or(0, |v2| v2.epoch);
            let record = LeaseRecord {
                id: request.id,
                stream: new.stream.clone(),
                version: if request.v2.is_some() { 2 } else { 1 },
                parent: request
                    .v2
                    .filter(|_| request.flags.contains(LeaseFlags::PARENT_LEASE_KEY_SET))
                    .map(|v2| v2.parent_lease_key),
                state: granted,
                epoch: if granted != 0 {
                    epoch.wrapping_add(1)
                } else {
                    epoch
                },
                breaking: None,
                generation: 0,
                route: new.route.clone(),
                opens: 1,
            };
            let response = record.response();
            files::push_one(leases, record);
            response
        }
    }
}

/// MS-FSA 2.1.4.12 for WRITE, byte-range locks and size changes through `writer`: other
/// holders lose read caching (level II oplocks and R leases break to none; the writer's own
/// lease keeps its state). Nothing happens when the writer caches writes itself.
pub(crate) fn breaks_for_write(state: &mut FileState, writer: u64, out: &mut Breaks) {
    let Some(me) = state.opens.iter().find(|e| e.id == writer) else {
        return;
    };
    if me.bits(&state.leases) & W != 0 {
        return;
    }
    let stream = me.stream.clone();
    let own = match &me.caching {
        Caching::Lease(id) => Some(*id),
        _ => None,
    };
    let generation = state.next_generation();
    for lease in state
        .leases
        .iter_mut()
        .filter(|l| l.stream == stream && l.state & R != 0 && Some(l.id) != own)
    {
        break_lease(lease, 0, generation, out);
    }
    for entry in state.opens.iter_mut().filter(|e| e.stream == stream) {
        if matches!(
            entry.caching,
            Caching::Oplock {
                level: OplockLevel::II,
                ..
            }
        ) {
            break_oplock(entry, OplockLevel::NONE, generation, out);
        }
    }
}

/// MS-FSA 2.1.4.12 for a rename (and a delete) through `renamer`: other opens lose handle
/// caching (leases keep the rest, batch oplocks go to level II). Returns whether the
/// operation must wait: some such break is still unacknowledged.
pub(crate) fn breaks_for_rename(state: &mut FileState, renamer: u64, out: &mut Breaks) -> bool {
    let own = state
        .opens
        .iter()
        .find(|e| e.id == renamer)
        .and_then(|e| match e.caching {
            Caching::Lease(id) => Some(id),
            _ => None,
        });
    let generation = state.next_generation();
    let mut delay = false;
    for lease in state
        .leases
        .iter_mut()
        .filter(|l| l.state & H != 0 && Some(l.id) != own)
    {
        delay = true;
        if !purge_unreachable(&state.opens, lease.id, out) {
            let to = lease.state & !H;
            break_lease(lease, to, generation, out);
        }
    }
    for entry in state.opens.iter_mut().filter(|e| e.id != renamer) {
        if let Caching::Oplock { level, .. } = entry.caching
            && oplock_bits(level) & H != 0
        {
            delay = true;
            if entry.disconnected {
                purge_open(entry, out);
            } else {
                break_oplock(entry, OplockLevel::II, generation, out);
            }
        }
    }
    delay
}

/// A child of the directory whose state this is was added, removed, renamed or changed
/// (MS-FSA 2.1.4.12 with PARENT_OBJECT, MS-SMB2 3.3.4.7): its leases break to none, except
/// those whose key is `spared`, the ParentLeaseKey of the changing open: MS-FSA 2.1.4.12.2
/// compares the parent oplock key with the lease's key alone, whichever client holds it. The
/// change does not wait for the acknowledgments.
pub(crate) fn breaks_for_child_change(
    state: &mut FileState,
    spared: Option<LeaseKey>,
    out: &mut Breaks,
) {
    let generation = state.next_generation();
    for lease in state
        .leases
        .iter_mut()
        .filter(|l| l.stream.is_none() && l.state != 0 && Some(l.id.key) != spared)
    {
        break_lease(lease, 0, generation, out);
    }
}

/// MS-SMB2 3.3.5.22.1: the acknowledgment of an oplock break through open `open`. Returns the
/// level the open keeps.
pub(crate) fn acknowledge_oplock(
    state: &mut FileState,
    open: u64,
    level: OplockLevel,
) -> Result<OplockLevel, NtStatus> {
    let entry = state
        .opens
        .iter_mut()
        .find(|e| e.id == open)
        .ok_or(NtStatus::FILE_CLOSED)?;
    let Caching::Oplock {
        breaking_to: Some(to),
        ..
    } = entry.caching
    else {
        return Err(NtStatus::INVALID_OPLOCK_PROTOCOL);
    };
    if level != OplockLevel::NONE && level != OplockLevel::II {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    if to == OplockLevel::NONE || level == OplockLevel::NONE {
        entry.caching = Caching::None;
        return Ok(OplockLevel::NONE);
    }
    entry.caching = Caching::Oplock {
        level: OplockLevel::II,
        breaking_to: None,
        generation: 0,
    };
    Ok(OplockLevel::II)
}

/// MS-SMB2 3.3.5.22.2: the acknowledgment of a lease break. The acknowledged state may not
/// exceed what the break offered; if it keeps more than the break must reach, the next step
/// of the break follows at once (as Windows breaks RWH to none through RH).
pub(crate) fn acknowledge_lease(
    state: &mut FileState,
    id: LeaseId,
    acked: u32,
    out: &mut Breaks,
) -> Result<(), NtStatus> {
    let generation = state.next_generation();
    let lease = state
        .leases
        .iter_mut()
        .find(|l| l.id == id)
        .ok_or(NtStatus::OBJECT_NAME_NOT_FOUND)?;
    let breaking = lease.breaking.ok_or(NtStatus::UNSUCCESSFUL)?;
    if acked & !breaking.to_requested != 0 {
        return Err(NtStatus::REQUEST_NOT_ACCEPTED);
    }
    lease.state = acked;
    lease.breaking = None;
    if acked & !breaking.to_required == 0 {
        return Ok(());
    }
    let mut next = breaking.to_required;
    let ack = acked & (W | H) != 0;
    if ack {
        next |= R;
        lease.breaking = Some(Breaking {
            to_requested: next,
            to_required: breaking.to_required,
        });
        lease.generation = generation;
        out.awaited.push(Awaited::Lease { id, generation });
    } else {
        lease.state = 0;
    }
    out.notes.push(Note::Lease {
        route: lease.route.clone(),
        message: lease.notification(acked, next, ack),
    });
    Ok(())
}

/// A local process's open met the Linux file lease behind open `open`'s caching (on a
/// `kernel_oplocks` share): its oplock or lease breaks to `keep` at most (R and H where its
/// descriptor may keep a read lease, else nothing), as for an SMB open that conflicts with it.
/// A disconnected durable open cannot answer: it is closed. Nothing happens while a break
/// already runs; a later call lowers what is left.
pub(crate) fn breaks_for_local_open(state: &mut FileState, open: u64, keep: u32, out: &mut Breaks) {
    let generation = state.next_generation();
    let Some(entry) = state.opens.iter_mut().find(|e| e.id == open) else {
        return;
    };
    if entry.bits(&state.leases) & !keep == 0 {
        return;
    }
    match entry.caching {
        Caching::None => {}
        Caching::Oplock { .. } if entry.disconnected => purge_open(entry, out),
        Caching::Oplock { .. } => {
            let to = if keep & R != 0 {
                OplockLevel::II
            } else {
                OplockLevel::NONE
            };
            break_oplock(entry, to, generation, out);
        }
        Caching::Lease(id) => {
            if purge_unreachable(&state.opens, id, out) {
                return;
            }
            if let Some(lease) = state.leases.iter_mut().find(|l| l.id == id) {
                break_lease(lease, keep, generation, out);
            }
        }
    }
}

/// Lowers the caching just granted to the new open `open` to `keep` (lease bits), before its
/// CREATE answers: other nodes' opens allow no more (MS-SMB2 3.3.5.9 as one server grants
/// beside them, docs/cluster.md). A lease other opens of this node share already is left as
/// it is: those opens' own cluster records were judged with it.
pub(crate) fn cap_new_open(state: &mut FileState, open: u64, keep: u32, granted: &mut Granted) {
    let Some(entry) = state.opens.iter_mut().find(|e| e.id == open) else {
        return;
    };
    match entry.caching {
        Caching::None => {}
        Caching::Oplock { level, .. } => {
            let level = oplock_for(oplock_bits(level) & keep);
            entry.caching = if level == OplockLevel::NONE {
                Caching::None
            } else {
                Caching::Oplock {
                    level,
                    breaking_to: None,
                    generation: 0,
                }
            };
            granted.caching = entry.caching.clone();
            granted.oplock_level = level;
        }
        Caching::Lease(id) => {
            let Some(lease) = state.leases.iter_mut().find(|l| l.id == id) else {
                return;
            };
            if lease.opens != 1 || lease.breaking.is_some() {
                return;
            }
            lease.state &= keep;
            if lease.state & R == 0 {
                lease.state = 0;
            }
            granted.lease = Some(lease.response());
        }
    }
}

/// The lease bits a granted open caches with.
pub(crate) fn granted_bits(granted: &Granted) -> u32 {
    match (&granted.caching, &granted.lease) {
        (Caching::Oplock { level, .. }, _) => oplock_bits(*level),
        (Caching::Lease(_), Some(lease)) => lease.lease_state.0 & (R | W | H),
        _ => 0,
    }
}

/// The lease bits open `open` caches with (its lease's state, while breaking too).
pub(crate) fn open_bits(state: &FileState, open: u64) -> u32 {
    state
        .opens
        .iter()
        .find(|e| e.id == open)
        .map_or(0, |e| e.bits(&state.leases))
}

/// The break timeout passed without an acknowledgment (MS-SMB2 3.3.2.1, 3.3.2.5): the oplock
/// or lease is gone. False if the break was acknowledged (or superseded) meanwhile.
pub(crate) fn timed_out(state: &mut FileState, awaited: Awaited) -> bool {
    match awaited {
        Awaited::Oplock { open, generation } => {
            let Some(entry) = state.opens.iter_mut().find(|e| e.id == open) else {
                return false;
            };
            let breaking = matches!(
                entry.caching,
                Caching::Oplock { breaking_to: Some(_), generation: g, .. } if g == generation
            );
            if breaking {
                entry.caching = Caching::None;
            }
            breaking
        }
        Awaited::Lease { id, generation } => {
            let Some(lease) = state.leases.iter_mut().find(|l| l.id == id) else {
                return false;
            };
            if lease.breaking.is_none() || lease.generation != generation {
                return false;
            }
            lease.state = 0;
            lease.breaking = None;
            true
        }
    }
}

/// An open left the file: its lease loses a holder, and goes with its last one. Returns the
/// lease that went, for the lease table.
pub(crate) fn released(state: &mut FileState, entry: &OpenEntry) -> Option<LeaseId> {
    let Caching::Lease(id) = entry.caching else {
        return None;
    };
    let position = state.leases.iter().position(|l| l.id == id)?;
    let lease = state.leases.get_mut(position)?;
    lease.opens = lease.opens.saturating_sub(1);
    if lease.opens > 0 {
        return None;
    }
    state.leases.swap_remove(position);
    Some(id)
}

/// Leases by identity, server-wide (MS-SMB2 3.3.1.5 LeaseTableList): which file each is on,
/// so that an acknowledgment finds its file and a key cannot be used on two files.
#[derive(Default)]
pub(crate) struct LeaseTable {
    leases: Mutex<HashMap<LeaseId, LeasedFile>>,
    /// The directory leases among them, with the share each directory was opened in.
    directories: Mutex<HashMap<LeaseId, (ShareKey, Weak<SharedFile>)>>,
    /// `directories.len()`, so that changes to directories cost one atomic load while nobody
    /// holds a directory lease.
    directory_count: AtomicUsize,
}

/// The file (and stream) a lease is on.
struct LeasedFile {
    key: FileKey,
    stream: Option<Arc<str>>,
    file: Weak<SharedFile>,
}

impl LeaseTable {
    /// Whether `id` is a lease on a file (or stream) other than this one (MS-SMB2 3.3.5.9.8:
    /// STATUS_INVALID_PARAMETER).
    pub fn bound_elsewhere(&self, id: LeaseId, key: FileKey, stream: Option<&Arc<str>>) -> bool {
        self.leases.lock().get(&id).is_some_and(|l| {
            (l.key != key || l.stream.as_ref() != stream) && l.file.strong_count() > 0
        })
    }

    /// Records that lease `id` is on `file` (a directory of the share `directory`, for a
    /// directory lease).
    pub fn bind(
        &self,
        id: LeaseId,
        file: &Arc<SharedFile>,
        stream: Option<&Arc<str>>,
        directory: Option<ShareKey>,
    ) {
        let leased = LeasedFile {
            key: file.key,
            stream: stream.cloned(),
            file: Arc::downgrade(file),
        };
        self.leases.lock().insert(id, leased);
        if directory.is_none() && !self.has_directory_leases() {
            return;
        }
        let mut directories = self.directories.lock();
        match directory {
            Some(share) => {
                directories.insert(id, (share, Arc::downgrade(file)));
            }
            None => {
                directories.remove(&id);
            }
        }
        self.directory_count
            .store(directories.len(), Ordering::Relaxed);
    }

    pub fn unbind(&self, id: LeaseId) {
        self.leases.lock().remove(&id);
        if self.has_directory_leases() {
            let mut directories = self.directories.lock();
            directories.remove(&id);
            self.directory_count
                .store(directories.len(), Ordering::Relaxed);
        }
    }

    /// Whether any directory lease exists.
    pub fn has_directory_leases(&self) -> bool {
        self.directory_count.load(Ordering::Relaxed) != 0
    }

    /// The directories of the share `share` that have leases, each once.
    pub fn leased_directories(&self, share: ShareKey) -> Vec<Arc<SharedFile>> {
        let mut found: Vec<Arc<SharedFile>> = Vec::new();
        for (leased_in, file) in self.directories.lock().values() {
            if *leased_in != share {
                continue;
            }
            if let Some(file) = file.upgrade()
                && !found.iter().any(|f| Arc::ptr_eq(f, &file))
            {
                found.push(file);
            }
        }
        found
    }

    /// The file (and stream) a lease is on, if any open holds it.
    pub fn lookup(&self, id: LeaseId) -> Option<(Arc<SharedFile>, Option<Arc<str>>)> {
        let leases = self.leases.lock();
        let leased = leases.get(&id)?;
        Some((leased.file.upgrade()?, leased.stream.clone()))
    }

    /// The file a lease is on.
    pub fn file(&self, id: LeaseId) -> Option<Arc<SharedFile>> {
        self.leases.lock().get(&id).and_then(|l| l.file.upgrade())
    }
}

/// Sends the notifications of `breaks` and starts a timer for each break that waits for an
/// acknowledgment; when one expires unacknowledged, the caching is dropped and the opens
/// waiting on the file try again. Disconnected durable opens whose caching stands in the way
/// are closed (MS-SMB2 3.3.4.6, 3.3.4.7).
pub(crate) fn deliver(server: &Server, file: &Arc<SharedFile>, breaks: Breaks) {
    for note in breaks.notes {
        send(server, note);
    }
    for holder in breaks.purge {
        server.durable.expire(server, holder, None);
    }
    let timeout = server.settings.oplock_break_timeout;
    for awaited in breaks.awaited {
        let file = Arc::downgrade(file);
        let expired = server.settings.clock.sleep(timeout);
        tasks::spawn(async move {
            expired.await;
            let Some(file) = file.upgrade() else {
                return;
            };
            let expired = timed_out(&mut file.state.lock(), awaited);
            if expired {
                tracing::info!(?awaited, "oplock or lease break timed out");
                file.caching_changed();
            }
        });
    }
}

/// Breaks other opens' read caching before `open` writes, locks a range or changes the size
/// (MS-FSA 2.1.4.12); nobody waits for these breaks.
pub(crate) fn before_write(server: &Server, open: &Open) {
    if let Some(breaks) = open.shared.breaks_for_write(open.file_id.volatile) {
        deliver(server, &open.shared, breaks);
    }
}

/// Sends one break notification through its route's connection, or another channel of the
/// route's session when that connection is gone or no longer has the session (MS-SMB2
/// 3.3.4.6, 3.3.4.7). An oplock break
/// names the open's session in its header; a lease break names none.
fn send(server: &Server, note: Note) {
    let channel = |route: &Route| {
        let conn = route.conn.upgrade();
        if conn
            .as_ref()
            .is_some_and(|c| c.session(route.session_id).is_some())
        {
            return conn;
        }
        server
            .session(route.session_id)
            .and_then(|s| s.any_channel())
            .or(conn)
    };
    match note {
        Note::Oplock {
            route,
            file_id,
            level,
        } => {
            if let Some(conn) = channel(&route) {
                let message = OplockBreak {
                    oplock_level: level,
                    file_id,
                };
                conn.send_break(route.session_id, &route, |w| message.encode(w));
            }
        }
        Note::Lease { route, message } => {
            if let Some(conn) = channel(&route) {
                conn.send_break(0, &route, |w| message.encode(w));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::write_time::WriteTime;
    use smb3d_smb2::create::ShareAccess;
    use smb3d_vfs::VfsPath;

    const ALL: AccessMask = AccessMask::FILE_ALL_ACCESS;
    const STAT: AccessMask = AccessMask::FILE_READ_ATTRIBUTES;

    fn state() -> FileState {
        FileState {
            opens: Vec::new(),
            delete_pending: None,
            stream_deletes: Vec::new(),
            write_time: WriteTime::default(),
            path: VfsPath::parse("f").unwrap(),
            leases: Vec::new(),
            break_generation: 0,
        }
    }

    fn entry(id: u64, access: AccessMask) -> OpenEntry {
        OpenEntry {
            id,
            access,
            share: ShareAccess::READ | ShareAccess::WRITE | ShareAccess::DELETE,
            stream: None,
            persistent_id: id,
            caching: Caching::None,
            route: Route {
                conn: Weak::new(),
                session_id: 7,
                encrypt: false,
            },
            disconnected: false,
            persistent: false,
            app_instance: None,
        }
    }

    fn opening(request: Request) -> Opening {
        Opening {
            request,
            overwrite: false,
            first_attempt: true,
            existed: true,
            delete_on_close: false,
            directory: None,
        }
    }

    fn lease(key: u8, state: u32) -> Request {
        Request::Lease(LeaseRequest {
            id: LeaseId {
                client: Guid([1; 16]),
                key: LeaseKey([key; 16]),
            },
            state,
            v2: None,
            flags: LeaseFlags::empty(),
        })
    }

    /// Opens `id` as the caching rules would: breaks, then (if nothing to wait for) grant.
    fn open(
        st: &mut FileState,
        id: u64,
        access: AccessMask,
        o: Opening,
    ) -> (Option<Granted>, Breaks) {
        let mut new = entry(id, access);
        let mut breaks = Breaks::default();
        if breaks_for_open(st, &new, &o, false, &mut breaks) {
            return (None, breaks);
        }
        let granted = grant(st, &new, &o, false, None);
        new.caching = granted.caching.clone();
        st.opens.push(new);
        (Some(granted), breaks)
    }

    fn oplock_notes(breaks: &Breaks) -> Vec<(u64, OplockLevel)> {
        breaks
            .notes
            .iter()
            .filter_map(|n| match n {
                Note::Oplock { file_id, level, .. } => Some((file_id.volatile, *level)),
                Note::Lease { .. } => None,
            })
            .collect()
    }

    fn lease_notes(breaks: &Breaks) -> Vec<(u8, u32, u32, bool)> {
        breaks
            .notes
            .iter()
            .filter_map(|n| match n {
                Note::Lease { message, .. } => Some((
                    message.lease_key.0[0],
                    message.current_lease_state.0,
                    message.new_lease_state.0,
                    message.flags.contains(LeaseBreakFlags::ACK_REQUIRED),
                )),
                Note::Oplock { .. } => None,
            })
            .collect()
    }

    #[test]
    fn a_new_open_s_caching_is_capped_to_what_other_nodes_leave_it() {
        let mut st = state();
        let (granted, _) = open(
            &mut st,
            1,
            ALL,
            opening(Request::Oplock(OplockLevel::BATCH)),
        );
        let mut granted = granted.unwrap();
        assert_eq!(granted_bits(&granted), R | W | H);
        cap_new_open(&mut st, 1, R | H, &mut granted);
        assert_eq!(granted.oplock_level, OplockLevel::II);
        assert_eq!(open_bits(&st, 1), R);
        assert_eq!(granted_bits(&granted), R);
        let (granted, _) = open(&mut st, 2, STAT, opening(lease(4, R | W | H)));
        let mut granted = granted.unwrap();
        cap_new_open(&mut st, 2, R | H, &mut granted);
        assert_eq!(granted.lease.as_ref().unwrap().lease_state.0, R | H);
        assert_eq!(open_bits(&st, 2), R | H);
        // Nothing left of an oplock: none at all.
        cap_new_open(&mut st, 1, 0, &mut granted);
        assert_eq!(open_bits(&st, 1), 0);
    }

    #[test]
    fn a_batch_oplock_breaks_to_level_two_and_the_opener_waits_for_the_ack() {
        let mut st = state();
        let (granted, _) = open(
            &mut st,
            1,
            ALL,
            opening(Request::Oplock(OplockLevel::BATCH)),
        );
        assert_eq!(granted.unwrap().oplock_level, OplockLevel::BATCH);
        let (granted, breaks) = open(
            &mut st,
            2,
            ALL,
            opening(Request::Oplock(OplockLevel::BATCH)),
        );
        assert!(granted.is_none(), "must wait");
        assert_eq!(oplock_notes(&breaks), [(1, OplockLevel::II)]);
        assert_eq!(breaks.awaited.len(), 1);
        // A second attempt before the ack still waits and sends nothing new.
        let again = Opening {
            first_attempt: false,
            ..opening(Request::Oplock(OplockLevel::BATCH))
        };
        let (granted, breaks) = open(&mut st, 2, ALL, again);
        assert!(granted.is_none() && breaks.notes.is_empty());
        assert_eq!(
            acknowledge_oplock(&mut st, 1, OplockLevel::II),
            Ok(OplockLevel::II)
        );
        let (granted, breaks) = open(&mut st, 2, ALL, again);
        assert!(breaks.notes.is_empty());
        assert_eq!(granted.unwrap().oplock_level, OplockLevel::II);
        // Acknowledging again is a protocol error.
        assert_eq!(
            acknowledge_oplock(&mut st, 1, OplockLevel::II),
            Err(NtStatus::INVALID_OPLOCK_PROTOCOL)
        );
    }

    #[test]
    fn stat_opens_neither_break_nor_get_oplocks_on_existing_files() {
        let mut st = state();
        open(
            &mut st,
            1,
            ALL,
            opening(Request::Oplock(OplockLevel::EXCLUSIVE)),
        );
        let (granted, breaks) = open(
            &mut st,
            2,
            STAT,
            opening(Request::Oplock(OplockLevel::BATCH)),
        );
        assert!(breaks.notes.is_empty());
        assert_eq!(granted.unwrap().oplock_level, OplockLevel::NONE);
        // Unless they overwrite: then they write.
        let overwrite = Opening {
            overwrite: true,
            ..opening(Request::Oplock(OplockLevel::II))
        };
        let (granted, breaks) = open(&mut st, 3, STAT, overwrite);
        assert!(granted.is_none());
        assert_eq!(oplock_notes(&breaks), [(1, OplockLevel::NONE)]);
    }

    #[test]
    fn writes_break_level_two_oplocks_and_read_leases_to_none_without_acks() {
        let mut st = state();
        open(&mut st, 1, ALL, opening(Request::Oplock(OplockLevel::II)));
        open(&mut st, 2, ALL, opening(lease(2, R)));
        open(&mut st, 3, ALL, opening(Request::Oplock(OplockLevel::II)));
        assert!(st.has_shared_read_caching());
        let mut breaks = Breaks::default();
        breaks_for_write(&mut st, 3, &mut breaks);
        assert!(breaks.awaited.is_empty());
        let mut oplocks = oplock_notes(&breaks);
        oplocks.sort_by_key(|(id, _)| *id);
        assert_eq!(oplocks, [(1, OplockLevel::NONE), (3, OplockLevel::NONE)]);
        assert_eq!(lease_notes(&breaks), [(2, R, 0, false)]);
        assert!(!st.has_shared_read_caching());
    }

    #[test]
    fn a_second_lease_breaks_write_caching_and_both_share_read_and_handle() {
        let mut st = state();
        let (granted, _) = open(&mut st, 1, ALL, opening(lease(1, R | W | H)));
        assert_eq!(granted.unwrap().lease.unwrap().lease_state.0, R | W | H);
        let (granted, breaks) = open(&mut st, 2, ALL, opening(lease(2, R | W | H)));
        assert!(granted.is_none());
        assert_eq!(lease_notes(&breaks), [(1, R | W | H, R | H, true)]);
        let id1 = LeaseId {
            client: Guid([1; 16]),
            key: LeaseKey([1; 16]),
        };
        let mut more = Breaks::default();
        // Nothing more than offered may be kept.
        assert_eq!(
            acknowledge_lease(&mut st, id1, R | W, &mut more),
            Err(NtStatus::REQUEST_NOT_ACCEPTED)
        );
        assert_eq!(acknowledge_lease(&mut st, id1, R | H, &mut more), Ok(()));
        assert!(more.notes.is_empty());
        assert_eq!(
            acknowledge_lease(&mut st, id1, R | H, &mut more),
            Err(NtStatus::UNSUCCESSFUL)
        );
        let (granted, _) = open(&mut st, 2, ALL, opening(lease(2, R | W | H)));
        let granted = granted.unwrap();
        assert_eq!(granted.oplock_level, OplockLevel::LEASE);
        assert_eq!(granted.lease.unwrap().lease_state.0, R | H);
    }

    #[test]
    fn an_overwrite_breaks_a_lease_to_none_in_steps() {
        let mut st = state();
        open(&mut st, 1, ALL, opening(lease(1, R | W | H)));
        let overwrite = Opening {
            overwrite: true,
            ..opening(Request::None)
        };
        let (granted, breaks) = open(&mut st, 2, ALL, overwrite);
        assert!(granted.is_none());
        assert_eq!(lease_notes(&breaks), [(1, R | W | H, 0, true)]);
        let id1 = st.leases[0].id;
        // Keeping R|H is not allowed when none was offered.
        let mut more = Breaks::default();
        assert_eq!(
            acknowledge_lease(&mut st, id1, R | H, &mut more),
            Err(NtStatus::REQUEST_NOT_ACCEPTED)
        );
        assert_eq!(acknowledge_lease(&mut st, id1, 0, &mut more), Ok(()));
        let (granted, _) = open(&mut st, 2, ALL, overwrite);
        assert!(granted.is_some());
    }

    #[test]
    fn kernel_oplocks_grant_no_more_than_the_kernel_lease_taken() {
        let mut st = state();
        // The kernel refused the write lease, and the descriptor writes: nothing.
        let refused = |_bits: u32| (0, KernelLease::None);
        let o = opening(Request::Oplock(OplockLevel::BATCH));
        let granted = grant(&mut st, &entry(1, ALL), &o, false, Some(&refused));
        assert_eq!(granted.oplock_level, OplockLevel::NONE);
        assert_eq!(granted.caching, Caching::None);
        assert_eq!(granted.kernel, KernelLease::None);
        // Only a read lease: an RWH lease request keeps R and H.
        let read = |bits: u32| (bits & (R | H), KernelLease::Read);
        let granted = grant(
            &mut st,
            &entry(2, ALL),
            &opening(lease(1, R | W | H)),
            false,
            Some(&read),
        );
        assert_eq!(granted.lease.unwrap().lease_state.0, R | H);
        assert_eq!(granted.kernel, KernelLease::Read);
    }

    #[test]
    fn a_local_open_breaks_the_caching_behind_a_kernel_lease() {
        let mut st = state();
        let (granted, _) = open(
            &mut st,
            1,
            ALL,
            opening(Request::Oplock(OplockLevel::BATCH)),
        );
        assert_eq!(granted.unwrap().oplock_level, OplockLevel::BATCH);
        let mut breaks = Breaks::default();
        breaks_for_local_open(&mut st, 1, 0, &mut breaks);
        assert_eq!(oplock_notes(&breaks), [(1, OplockLevel::NONE)]);
        assert_eq!(breaks.awaited.len(), 1);
        // While it waits for the acknowledgment, the open still caches; a second call adds
        // no break.
        assert_eq!(open_bits(&st, 1), R | W | H);
        let mut again = Breaks::default();
        breaks_for_local_open(&mut st, 1, 0, &mut again);
        assert!(again.notes.is_empty());
        assert!(acknowledge_oplock(&mut st, 1, OplockLevel::NONE).is_ok());
        assert_eq!(open_bits(&st, 1), 0);

        let (_, _) = open(
            &mut st,
            2,
            AccessMask::FILE_READ_DATA,
            opening(lease(3, R | H)),
        );
        let mut breaks = Breaks::default();
        breaks_for_local_open(&mut st, 2, R | H, &mut breaks);
        assert!(
            breaks.notes.is_empty(),
            "a read lease may stay for a local reader"
        );
        breaks_for_local_open(&mut st, 2, 0, &mut breaks);
        assert_eq!(lease_notes(&breaks), [(3, R | H, 0, true)]);
    }

    #[test]
    fn the_same_lease_is_shared_and_upgraded_not_broken() {
        let mut st = state();
        let (granted, _) = open(&mut st, 1, ALL, opening(lease(1, R)));
        assert_eq!(granted.unwrap().lease.unwrap().lease_state.0, R);
        let (granted, breaks) = open(&mut st, 2, ALL, opening(lease(1, R | W | H)));
        assert!(breaks.notes.is_empty());
        assert_eq!(granted.unwrap().lease.unwrap().lease_state.0, R | W | H);
        assert_eq!(st.leases.len(), 1);
        assert_eq!(st.leases[0].opens, 2);
        let first = st.opens.remove(0);
        assert_eq!(released(&mut st, &first), None);
        let second = st.opens.remove(0);
        assert_eq!(released(&mut st, &second), Some(st_lease_id(1)));
        assert!(st.leases.is_empty());
    }

    fn st_lease_id(key: u8) -> LeaseId {
        LeaseId {
            client: Guid([1; 16]),
            key: LeaseKey([key; 16]),
        }
    }

    #[test]
    fn leases_without_read_caching_are_not_granted() {
        for requested in [W, W | H, H] {
            let mut st = state();
            let (granted, _) = open(&mut st, 1, ALL, opening(lease(1, requested)));
            assert_eq!(granted.unwrap().lease.unwrap().lease_state.0, 0);
        }
    }

    #[test]
    fn timeouts_take_unacknowledged_caching_away() {
        let mut st = state();
        open(
            &mut st,
            1,
            ALL,
            opening(Request::Oplock(OplockLevel::BATCH)),
        );
        let (_, breaks) = open(&mut st, 3, ALL, opening(Request::None));
        assert_eq!(breaks.awaited.len(), 1);
        let awaited = breaks.awaited[0];
        assert!(timed_out(&mut st, awaited));
        assert_eq!(st.opens[0].caching, Caching::None);
        // A timer for a break that was acknowledged meanwhile does nothing.
        assert!(!timed_out(&mut st, awaited));
    }

    #[test]
    fn renames_break_other_handle_caching_and_wait() {
        let mut st = state();
        open(&mut st, 1, ALL, opening(lease(1, R | H)));
        open(&mut st, 2, ALL, opening(lease(2, R | H)));
        let mut breaks = Breaks::default();
        assert!(breaks_for_rename(&mut st, 1, &mut breaks));
        assert_eq!(lease_notes(&breaks), [(2, R | H, R, true)]);
        let mut more = Breaks::default();
        acknowledge_lease(&mut st, st_lease_id(2), R, &mut more).unwrap();
        let mut breaks = Breaks::default();
        assert!(!breaks_for_rename(&mut st, 1, &mut breaks));
        assert!(breaks.notes.is_empty());
    }

    #[test]
    fn a_child_change_breaks_directory_leases_to_none_but_spares_the_changers_parent() {
        let mut st = state();
        open(&mut st, 1, ALL, opening(lease(1, R | H)));
        open(&mut st, 2, ALL, opening(lease(2, R)));
        let mut breaks = Breaks::default();
        breaks_for_child_change(&mut st, Some(LeaseKey([1; 16])), &mut breaks);
        assert_eq!(lease_notes(&breaks), [(2, R, 0, false)]);
        assert!(breaks.awaited.is_empty());
        let mut breaks = Breaks::default();
        breaks_for_child_change(&mut st, None, &mut breaks);
        assert_eq!(lease_notes(&breaks), [(1, R | H, 0, true)]);
        assert_eq!(breaks.awaited.len(), 1);
        // While that break waits, further changes send nothing more.
        let mut breaks = Breaks::default();
        breaks_for_child_change(&mut st, None, &mut breaks);
        assert!(breaks.notes.is_empty());
    }

    /// Marks open `id` as a disconnected persistent open.
    fn disconnect_persistent(st: &mut FileState, id: u64) {
        let entry = st.opens.iter_mut().find(|e| e.id == id).unwrap();
        entry.disconnected = true;
        entry.persistent = true;
    }

    #[test]
    fn a_disconnected_persistent_open_without_handle_caching_keeps_others_out() {
        for held in [Request::None, lease(1, R), lease(1, R | W)] {
            let mut st = state();
            open(&mut st, 1, ALL, opening(held));
            disconnect_persistent(&mut st, 1);
            let reader = entry(2, AccessMask::FILE_READ_DATA);
            assert!(persistent_conflict(
                &st,
                &reader,
                &opening(Request::None),
                false
            ));
            // Opens for attributes only pass.
            assert!(!persistent_conflict(
                &st,
                &entry(3, STAT),
                &opening(Request::None),
                false
            ));
        }
    }

    #[test]
    fn a_disconnected_persistent_open_with_handle_caching_is_never_purged() {
        let mut st = state();
        open(&mut st, 1, ALL, opening(lease(1, R | H)));
        disconnect_persistent(&mut st, 1);
        let reader = entry(2, AccessMask::FILE_READ_DATA);
        assert!(!persistent_conflict(
            &st,
            &reader,
            &opening(Request::None),
            false
        ));
        // With byte-range locks it must cache writes too.
        assert!(persistent_conflict(
            &st,
            &reader,
            &opening(Request::None),
            true
        ));
        // An overwrite would break its lease: it fails instead of closing the open.
        let mut breaks = Breaks::default();
        let overwrite = Opening {
            overwrite: true,
            ..opening(Request::None)
        };
        breaks_for_open(&mut st, &reader, &overwrite, false, &mut breaks);
        assert!(breaks.unavailable && breaks.purge.is_empty());
        // A durable open that is not persistent is purged as before.
        st.opens[0].persistent = false;
        let mut breaks = Breaks::default();
        breaks_for_open(&mut st, &reader, &overwrite, false, &mut breaks);
        assert!(!breaks.unavailable);
        assert_eq!(breaks.purge, [1]);
    }
}
