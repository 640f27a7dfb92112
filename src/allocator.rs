//! The C allocator's policy for the large buffers of READ and WRITE, and its number of arenas.
//!
//! glibc gives a freed block back to the kernel once the free space at the top of its heap
//! exceeds the trim threshold (128 KiB by default), and serves blocks above the mmap threshold
//! with a fresh mapping: either way the next 1-8 MiB READ or WRITE buffer is faulted in and
//! zeroed page by page again, which cost about a tenth of the server's CPU in a signed 1 GiB
//! read. Keeping up to 64 MiB free per heap, and serving every block up to the largest I/O
//! (8 MiB) from the heaps, lets them be reused instead.
//!
//! glibc also gives each new thread an arena of its own, up to 8 per core: the runtime's
//! workers and blocking threads (20 to 25 under the soak's load) took 16 on 2 cores, each
//! keeping what it freed, and RSS grew ~86 KiB a minute for an hour while the memory in use
//! did not (docs/reliability.md, item 6). Two arenas held RSS 7-8 MiB lower at the same load
//! and throughput.
//!
//! With the trim threshold that high, glibc never gave a freed page back: under the soak's
//! steady load the heaps' resident pages grew 2.6 MiB from minute 1 to 12 while what was live
//! stayed at 2.5 to 2.8 MiB (heaptrack), each new peak of the heaps' extent kept for good. Once
//! a minute the free pages go back (`malloc_trim`): the buffers of a burst of large I/O are
//! still reused within it. What it cannot give back is what glibc counts as in use: live data,
//! the threads' tcaches (up to about 240 KiB each), and pages shared with a live chunk.

/// Free space a heap keeps rather than trimming.
const TRIM_THRESHOLD: i32 = 64 << 20;
/// Blocks from this size up get a mapping of their own (glibc's largest allowed value).
const MMAP_THRESHOLD: i32 = 32 << 20;
/// Arenas the server's threads share unless the administrator chose otherwise.
const ARENA_MAX: i32 = 2;
/// How often the heaps' free pages go back to the system.
const GIVE_BACK_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Must run before the runtime starts its threads: a thread keeps the arena it first took.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn tune() {
    let mut options = vec![
        (libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD),
        (libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD),
    ];
    if !arena_max_is_chosen(
        std::env::var_os("MALLOC_ARENA_MAX").is_some(),
        std::env::var("GLIBC_TUNABLES").ok().as_deref(),
    ) {
        options.push((libc::M_ARENA_MAX, ARENA_MAX));
    }
    for (option, value) in options {
        // SAFETY: mallopt takes two integers and changes only the allocator's parameters,
        // under the allocator's own lock.
        if unsafe { libc::mallopt(option, value) } != 1 {
            tracing::warn!("mallopt({option}, {value}) was refused");
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune() {}

/// Starts a thread that gives the heaps' free pages back to the system every
/// [`GIVE_BACK_EVERY`], for as long as the process runs.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn give_back_periodically() {
    let started = std::thread::Builder::new()
        .name("smb3d-trim".into())
        .spawn(|| {
            loop {
                std::thread::sleep(GIVE_BACK_EVERY);
                // SAFETY: malloc_trim takes a size and works under each arena's own lock.
                unsafe { libc::malloc_trim(0) };
            }
        });
    if let Err(e) = started {
        tracing::warn!("the thread that gives free memory back did not start: {e}");
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn give_back_periodically() {}

/// An administrator's MALLOC_ARENA_MAX, or glibc.malloc.arena_max in GLIBC_TUNABLES
/// ("name=value:name=value"), is kept: glibc applied it before main.
fn arena_max_is_chosen(malloc_arena_max: bool, tunables: Option<&str>) -> bool {
    malloc_arena_max
        || tunables.is_some_and(|list| {
            list.split(':')
                .any(|tunable| tunable.split('=').next() == Some("glibc.malloc.arena_max"))
        })
}

#[cfg(test)]
mod tests {
    use super::arena_max_is_chosen;

    #[test]
    fn an_administrator_s_arena_max_is_kept() {
        assert!(!arena_max_is_chosen(false, None));
        assert!(arena_max_is_chosen(true, None));
        assert!(arena_max_is_chosen(
            false,
            Some("glibc.malloc.tcache_count=0:glibc.malloc.arena_max=4")
        ));
        assert!(!arena_max_is_chosen(
            false,
            Some("glibc.malloc.arena_test=4")
        ));
    }
}
