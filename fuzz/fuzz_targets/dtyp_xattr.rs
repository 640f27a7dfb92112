#![no_main]
//! Samba's xattr formats and the ACL decoder: the first byte picks `user.DOSATTRIB`,
//! `security.NTACL`, a POSIX ACL xattr or a bare ACL; what is accepted re-encodes stably.

use libfuzzer_sys::fuzz_target;
use smb3d_dtyp::Acl;
use smb3d_dtyp::samba::{DosAttrib, NtAclXattr, PosixAcl, PosixAclState};
use smb3d_wire::Writer;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, blob)) = data.split_first() else {
        return;
    };
    match selector % 4 {
        0 => {
            if let Ok(d) = DosAttrib::decode(blob) {
                assert_eq!(DosAttrib::decode(&d.to_xattr()).expect("v5 decodes"), d);
            }
        }
        1 => {
            if let Ok(x) = NtAclXattr::decode(blob) {
                let once = x.to_bytes();
                assert_eq!(NtAclXattr::decode(&once).expect("blob decodes"), x);
                let _ = x.matches_file(None, None);
            }
        }
        2 => {
            if let Ok(p) = PosixAcl::decode_xattr(blob) {
                assert_eq!(
                    PosixAcl::decode_xattr(&p.to_xattr()).expect("xattr decodes"),
                    p
                );
                let state = PosixAclState {
                    access: Some(&p),
                    default: Some(&p),
                    uid: 0,
                    gid: 0,
                    mode: 0o40755,
                };
                let _ = state.hash();
            }
        }
        _ => {
            if let Ok(acl) = Acl::decode(blob) {
                let mut once = Vec::new();
                acl.encode(&mut Writer::new(&mut once));
                assert_eq!(once.len(), acl.encoded_len());
                assert_eq!(Acl::decode(&once).expect("ACL decodes"), acl);
            }
        }
    }
});
