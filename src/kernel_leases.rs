//! The signal with which the kernel asks smb3d to break the Linux file leases it holds for
//! `kernel_oplocks` shares, received through tokio's signal machinery on a task of its own:
//! the handler only records that the signal came, and the task tells the server.

use std::sync::Arc;
use std::time::Duration;

use smb3d_server::Server;
use tokio::signal::unix::{SignalKind, signal};

/// The kernel's time for a lease holder to answer a break, when /proc does not say.
const DEFAULT_LEASE_BREAK_TIME: Duration = Duration::from_secs(45);

/// Starts receiving lease breaks for `server`. SIGIO too: the kernel sends it instead when
/// the queue of real-time signals overflows, and its default action would end the process.
pub fn listen(server: &Arc<Server>) -> std::io::Result<()> {
    // The first real-time signal after those the C library keeps, as Samba uses it.
    let number = libc::SIGRTMIN() + 1;
    let mut lease_break = signal(SignalKind::from_raw(number))?;
    let mut overflow = signal(SignalKind::io())?;
    server.listen_for_kernel_lease_breaks(number, lease_break_time());
    let server = server.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                Some(()) = lease_break.recv() => {}
                Some(()) = overflow.recv() => {}
                else => return,
            }
            server.kernel_lease_signalled();
        }
    });
    Ok(())
}

/// `/proc/sys/fs/lease-break-time`, in seconds.
fn lease_break_time() -> Duration {
    std::fs::read_to_string("/proc/sys/fs/lease-break-time")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .map_or(DEFAULT_LEASE_BREAK_TIME, Duration::from_secs)
}
