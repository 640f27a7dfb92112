//! The process's descriptor limit (RLIMIT_NOFILE), which the default of `max_open_files`
//! follows: raised to its hard limit at start, so that a server started from a shell is not
//! held to the shell's 1024 (the systemd unit in `contrib/` sets both to 65,536).

/// Raises the soft limit to the hard limit, if it is below.
#[allow(unsafe_code)]
pub fn raise() {
    let Some(limit) = current() else {
        return;
    };
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads one rlimit from the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            tracing::warn!(
                "the descriptor limit stays at {}: {}",
                limit.rlim_cur,
                std::io::Error::last_os_error()
            );
        }
    }
}

/// The soft limit in force (what `open` is held to), if it can be read.
pub fn soft_limit() -> Option<u64> {
    current().map(|limit| limit.rlim_cur)
}

#[allow(unsafe_code)]
fn current() -> Option<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0).then_some(limit)
}
