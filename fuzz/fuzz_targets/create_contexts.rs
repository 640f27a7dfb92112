#![no_main]
//! CreateContexts::parse over an arbitrary chain, then the typed and raw views.

use libfuzzer_sys::fuzz_target;
use smb3d_smb2::create::CreateContexts;

fuzz_target!(|data: &[u8]| {
    if let Ok(contexts) = CreateContexts::parse(data) {
        smb3d_fuzz::check_create_contexts(contexts);
    }
});
