//! The C allocator's policy for the large buffers of READ and WRITE.
//!
//! glibc gives a freed block back to the kernel once the free space at the top of its heap
//! exceeds the trim threshold (128 KiB by default), and serves blocks above the mmap threshold
//! with a fresh mapping: either way the next 1-8 MiB READ or WRITE buffer is faulted in and
//! zeroed page by page again, which cost about a tenth of the server's CPU in a signed 1 GiB
//! read. Keeping up to 64 MiB free per heap, and serving every block up to the largest I/O
//! (8 MiB) from the heaps, lets them be reused instead.

/// Free space a heap keeps rather than trimming.
const TRIM_THRESHOLD: i32 = 64 << 20;
/// Blocks from this size up get a mapping of their own (glibc's largest allowed value).
const MMAP_THRESHOLD: i32 = 32 << 20;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn tune() {
    for (option, value) in [
        (libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD),
        (libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD),
    ] {
        // SAFETY: mallopt takes two integers and changes only the allocator's parameters,
        // under the allocator's own lock.
        if unsafe { libc::mallopt(option, value) } != 1 {
            tracing::warn!("mallopt({option}, {value}) was refused: large buffers are not reused");
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune() {}
