#![no_main]
//! A whole server in memory (MemoryVfs share, no-security crypto provider) driven by a script
//! of frames, requests, compounds, encrypted requests, NTLM logons and reconnects (the
//! language of `smb3d_testkit::script`): no panic, every response frame well formed, and once
//! every connection has closed the server holds no session, tree connect, open or open file.

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use smb3d_crypto::fuzzing::NullProvider;
use smb3d_testkit::{harness, script};

fuzz_target!(|data: &[u8]| {
    let ops = script::decode(data);
    if let Err(violation) = script::run(&ops, harness::settings(), Arc::new(NullProvider)) {
        panic!("{violation}");
    }
});
