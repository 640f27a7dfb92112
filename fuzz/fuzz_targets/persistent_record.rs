#![no_main]
//! The persistent-handle record decoder (`smb3d_server::persistent`, files in the state
//! directory that a restarted server reads): no panic, no allocation beyond the input's
//! worth, and accepted records re-encode stably.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    smb3d_server::fuzzing::persistent_record(data);
});
