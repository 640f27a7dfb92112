#![no_main]
//! The decoder of directory changes other cluster nodes send (`smb3d_state::DirEvent`,
//! docs/cluster.md "Change notify and directory leases across nodes"): no panic, texts within
//! their bound, and an accepted event re-encodes to bytes that decode to the same event.

use libfuzzer_sys::fuzz_target;
use smb3d_state::{DirChange, DirEvent, MAX_EVENT_TEXT};

fuzz_target!(|data: &[u8]| {
    let Ok(event) = DirEvent::decode(data) else {
        return;
    };
    assert!(event.share.len() <= MAX_EVENT_TEXT && event.path.len() <= MAX_EVENT_TEXT);
    assert_eq!(event.path.is_empty(), event.change == DirChange::Lost);
    let again = event.encode().expect("a decoded event encodes");
    assert_eq!(DirEvent::decode(&again), Ok(event));
});
