//! Samba's on-disk formats for Windows metadata, so that a share moves between Samba and
//! smb3d without loss. They are NDR-encoded (Samba's `librpc/idl/xattr.idl` and
//! `smb_acl.idl`); `docs/samba-xattrs.md` describes the layouts and how Samba validates them.

mod dosattrib;
mod ntacl;
mod posix_acl;

pub use dosattrib::{DosAttrib, XATTR_DOSATTRIB_NAME};
pub use ntacl::{NtAclHashes, NtAclXattr, XATTR_NTACL_NAME, nt_acl_hash};
pub use posix_acl::{PosixAce, PosixAcl, PosixAclState, PosixAclTag};

use smb3d_wire::{DecodeError, Reader};

/// Skips NDR padding up to a multiple of `n` from the start of the blob.
fn align_reader(r: &mut Reader<'_>, n: usize, field: &'static str) -> Result<(), DecodeError> {
    let pad = (n - r.pos() % n) % n;
    r.skip(pad, field)
}

/// Reads a NUL-terminated byte string (NDR `[flag(STR_NULLTERM)] string` with no length
/// prefix), returning it without the NUL.
fn nul_terminated<'a>(r: &mut Reader<'a>, field: &'static str) -> Result<&'a [u8], DecodeError> {
    let rest = r.rest();
    let len = rest
        .iter()
        .position(|b| *b == 0)
        .ok_or(DecodeError::truncated(field))?;
    let s = r.bytes(len, field)?;
    r.skip(1, field)?;
    Ok(s)
}

/// SHA-256 in the 64-byte hash field Samba uses (the digest, then zeros).
fn sha256_field(data: &[u8]) -> [u8; 64] {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(data);
    let mut out = [0u8; 64];
    if let Some(head) = out.get_mut(..digest.len()) {
        head.copy_from_slice(&digest);
    }
    out
}
