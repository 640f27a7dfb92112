//! `kernel_oplocks` (Samba's `kernel oplocks`): while an SMB client caches a file of such a
//! share, the open's descriptor holds a Linux file lease (a write lease for write caching, a
//! read lease for read caching on a descriptor opened read-only), so that a local process or
//! NFS client opening or truncating the file waits while the kernel signals smb3d. The
//! embedder receives that real-time signal (in the binary, tokio's signal stream on a task of
//! its own: nothing runs in the signal handler but tokio's) and calls [`signalled`], which
//! finds the leases being broken (F_GETLEASE names the level they must come down to), breaks
//! the SMB oplock or lease behind each, and lowers the kernel lease once the client has
//! acknowledged (having flushed its cached writes) or the break timed out, before the kernel's
//! `lease-break-time` runs out. Where the kernel refuses a lease, the client is granted no more
//! caching than the lease smb3d holds. Shares without the option take none of these steps.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use smb3d_vfs::{KernelLease, VfsFile};

use crate::state::caching::{self, H, R, W};
use crate::state::open::Open;
use crate::state::server::Server;
use crate::tasks;

/// The leases smb3d holds, by open, and the signal they are broken with.
#[derive(Debug, Default)]
pub(crate) struct KernelLeases {
    /// The signal the kernel sends when a lease must be broken; 0 until the embedder listens
    /// for it ([`Server::listen_for_kernel_lease_breaks`]), and until then no lease is taken
    /// (a signal nobody handles would end the process), so such shares grant no caching.
    signal: AtomicI32,
    /// How long a break may take before smb3d lowers the lease itself: a little less than the
    /// kernel's `lease-break-time`, after which it takes the lease away anyway.
    break_time: Mutex<Duration>,
    held: Mutex<HashMap<u64, Held>>,
}

#[derive(Debug)]
struct Held {
    open: Weak<Open>,
    lease: KernelLease,
    /// A break is being settled ([`settle`]); later signals leave the open alone.
    breaking: bool,
}

impl KernelLeases {
    /// Starts taking leases, broken with `signal`, which the embedder now receives; the kernel
    /// lets a holder `break_time` (`/proc/sys/fs/lease-break-time`) to answer.
    pub fn listen(&self, signal: i32, break_time: Duration) {
        *self.break_time.lock() = break_time;
        self.signal.store(signal, Ordering::Release);
    }

    /// Takes the lease that caching with `bits` needs on `file`: a write lease for W; for R
    /// without W, or when the write lease is refused, a read lease where the descriptor reads
    /// only. Returns the bits the lease taken allows (none if refused) and the lease.
    pub fn hold(&self, file: &dyn VfsFile, bits: u32) -> (u32, KernelLease) {
        let signal = self.signal.load(Ordering::Acquire);
        if signal == 0 || bits & R == 0 {
            return (0, KernelLease::None);
        }
        if bits & W != 0 && file.set_kernel_lease(KernelLease::Write, signal) == Ok(true) {
            return (bits, KernelLease::Write);
        }
        if file.reads_only() && file.set_kernel_lease(KernelLease::Read, signal) == Ok(true) {
            return (bits & (R | H), KernelLease::Read);
        }
        (0, KernelLease::None)
    }

    /// [`hold`](Self::hold) for an open of a named stream, whose data (an xattr) no local open
    /// of the file reaches, so that no lease is needed or taken: write caching is granted as
    /// SMB's rules allow, read caching without it (beside another open) not, as for a file's
    /// open beside a writer.
    pub fn hold_stream(&self, bits: u32) -> (u32, KernelLease) {
        let backed = self.signal.load(Ordering::Acquire) != 0 && bits & W != 0;
        (if backed { bits } else { 0 }, KernelLease::None)
    }

    /// Forgets the lease of an open that is closing (its descriptor's lease goes with it).
    pub fn forget(&self, open: u64) {
        self.held.lock().remove(&open);
    }
}

/// Records the lease a new open took (`lease` from [`KernelLeases::hold`]). A break the kernel
/// signalled before it was recorded is settled now.
pub(crate) fn track(server: &Arc<Server>, open: &Arc<Open>, lease: KernelLease) {
    if lease == KernelLease::None {
        return;
    }
    server.kernel_leases.held.lock().insert(
        open.file_id.volatile,
        Held {
            open: Arc::downgrade(open),
            lease,
            breaking: false,
        },
    );
    check(server, open.file_id.volatile, open, lease);
}

/// The kernel signalled that leases are being broken: each one held at a lower level than
/// smb3d took is settled. The signal's siginfo would name the descriptor, but signals of the
/// same kind coalesce, so every lease is asked (one F_GETLEASE each, only on breaks).
pub(crate) fn signalled(server: &Arc<Server>) {
    let held: Vec<(u64, Weak<Open>, KernelLease)> = server
        .kernel_leases
        .held
        .lock()
        .iter()
        .filter(|(_, h)| !h.breaking)
        .map(|(id, h)| (*id, h.open.clone(), h.lease))
        .collect();
    for (id, open, lease) in held {
        if let Some(open) = open.upgrade() {
            check(server, id, &open, lease);
        }
    }
}

/// Starts settling the open's lease if the kernel is breaking it.
fn check(server: &Arc<Server>, id: u64, open: &Arc<Open>, lease: KernelLease) {
    let Ok(target) = open.file.kernel_lease() else {
        return;
    };
    if target >= lease {
        return;
    }
    match server.kernel_leases.held.lock().get_mut(&id) {
        Some(held) if !held.breaking => held.breaking = true,
        _ => return,
    }
    tracing::debug!(open = id, ?target, "a local open breaks a kernel lease");
    tasks::spawn(settle(server.clone(), Arc::downgrade(open), id, target));
}

/// Breaks the SMB caching behind a kernel lease the kernel is breaking to `target`, waits for
/// the client to acknowledge (or the break to time out, or the kernel's time to run short),
/// then lowers the lease so that the local open goes on.
async fn settle(server: Arc<Server>, open: Weak<Open>, id: u64, target: KernelLease) {
    let Some(shared) = open.upgrade().map(|o| o.shared.clone()) else {
        server.kernel_leases.forget(id);
        return;
    };
    let reads_only = open.upgrade().is_some_and(|o| o.file.reads_only());
    let keep = if target == KernelLease::Read && reads_only {
        R | H
    } else {
        0
    };
    let clock = server.settings.clock.clone();
    let break_time = *server.kernel_leases.break_time.lock();
    let deadline = clock.now()
        + break_time
            .saturating_sub(Duration::from_secs(1))
            .min(server.settings.oplock_break_timeout);
    let mut awaited = Vec::new();
    loop {
        let change = shared.caching_change();
        tokio::pin!(change);
        change.as_mut().enable();
        let ((), breaks) = shared.start_breaks(|state, out| {
            caching::breaks_for_local_open(state, id, keep, out);
        });
        awaited.extend(breaks.awaited.iter().copied());
        caching::deliver(&server, &shared, breaks);
        if caching::open_bits(&shared.state.lock(), id) & !keep == 0 {
            break;
        }
        tokio::select! {
            () = change => {}
            () = clock.sleep_until(deadline) => {
                // The client did not answer in time: its caching goes now, before the kernel
                // lets the local open go on anyway.
                let ((), _) = shared.with_caching(|state, _| {
                    for waited in awaited.drain(..) {
                        caching::timed_out(state, waited);
                    }
                });
                tracing::info!(open = id, "a kernel lease break went unanswered");
                break;
            }
        }
    }
    lower(&server, &open, id, keep);
}

/// Lowers the open's lease to what its remaining caching (`keep`) needs; if the kernel
/// refuses the read lease, the caching goes too.
fn lower(server: &Arc<Server>, open: &Weak<Open>, id: u64, keep: u32) {
    let Some(open) = open.upgrade() else {
        server.kernel_leases.forget(id);
        return;
    };
    let signal = server.kernel_leases.signal.load(Ordering::Acquire);
    let kept = keep & R != 0
        && open.file.set_kernel_lease(KernelLease::Read, signal) == Ok(true)
        && caching::open_bits(&open.shared.state.lock(), id) != 0;
    if kept {
        if let Some(held) = server.kernel_leases.held.lock().get_mut(&id) {
            held.lease = KernelLease::Read;
            held.breaking = false;
        }
        return;
    }
    let _ = open.file.set_kernel_lease(KernelLease::None, signal);
    server.kernel_leases.forget(id);
    // Read caching without a read lease would not see local writers: it goes at once (a
    // level II oplock or an R lease needs no acknowledgment).
    let ((), breaks) = open.shared.with_caching(|state, out| {
        caching::breaks_for_local_open(state, id, 0, out);
    });
    caching::deliver(server, &open.shared, breaks);
}
