#![no_main]
//! The samr request decoder (SamrUnicodeChangePasswordUser2's in-parameters) and the password
//! check behind it: any stub either fails to decode or gives a request whose proof is checked
//! against a stored hash without panicking.

use libfuzzer_sys::fuzz_target;
use smb3d_auth::ntlm::crypto::nt_hash;
use smb3d_auth::samr::PasswordChange;
use smb3d_rpc::samr::decode_change_password_user2;

fuzz_target!(|data: &[u8]| {
    let Ok(Some(request)) = decode_change_password_user2(data) else {
        return;
    };
    let change = PasswordChange {
        new_password_encrypted: request.new_password_encrypted,
        old_nt_hash_encrypted: request.old_nt_hash_encrypted,
    };
    let _ = change.new_nt_hash(&nt_hash("old"));
});
