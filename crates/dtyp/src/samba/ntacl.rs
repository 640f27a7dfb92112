//! `security.NTACL`: the NT security descriptor Samba's `vfs_acl_xattr` stores
//! (`xattr_NTACL`), with the hashes that tie it to the file's POSIX permissions.

use smb3d_wire::{DecodeError, FileTime, Reader, Writer};

use super::{align_reader, nul_terminated, sha256_field};
use crate::SecurityDescriptor;

/// The xattr `vfs_acl_xattr` keeps the NT ACL in.
pub const XATTR_NTACL_NAME: &str = "security.NTACL";

/// XATTR_SD_HASH_TYPE_SHA256: the only hash type Samba accepts in versions 3 and 4.
pub const HASH_TYPE_SHA256: u16 = 1;

/// The description Samba's POSIX ACL back end gives its ACL blob.
pub const POSIX_ACL_DESCRIPTION: &str = "posix_acl";

/// The first two NDR unique-pointer referent ids Samba writes (0x00020000, then +4).
const FIRST_REFERENT: u32 = 0x0002_0000;
const SECOND_REFERENT: u32 = 0x0002_0004;

/// The version-specific part of `xattr_NTACL`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum NtAclHashes {
    /// Version 1: the descriptor alone (Samba's NTVFS server, `samba-tool ntacl`).
    V1,
    /// Version 2: a 16-byte hash that was never filled in.
    V2 { hash: [u8; 16] },
    /// Version 3: the hash of the descriptor Samba maps from the POSIX permissions.
    V3 { hash_type: u16, hash: [u8; 64] },
    /// Version 4 (what Samba 4.17 writes): the version 3 hash, the description of the system
    /// ACL blob, a time (the write time in 4.17, 0 in later releases) and the hash of the
    /// system ACL blob.
    V4 {
        hash_type: u16,
        hash: [u8; 64],
        description: String,
        time: FileTime,
        sys_acl_hash: [u8; 64],
    },
}

/// A decoded `security.NTACL` blob.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct NtAclXattr {
    /// The stored NT security descriptor.
    pub sd: SecurityDescriptor,
    /// The version and its hashes.
    pub hashes: NtAclHashes,
}

impl NtAclXattr {
    /// The version-4 blob Samba 4.17's `vfs_acl_xattr` writes over the default POSIX back end:
    /// SHA-256 hashes, description "posix_acl". `sys_acl_hash` comes from
    /// [`PosixAclState::hash`](super::PosixAclState::hash) taken after the file's owner, mode
    /// and POSIX ACLs have their final values; `nt_hash` is [`nt_acl_hash`] of the descriptor
    /// Samba would map from them, or zeros when it cannot be computed (Samba then relies on
    /// `sys_acl_hash` alone).
    pub fn posix_v4(
        sd: SecurityDescriptor,
        nt_hash: [u8; 64],
        sys_acl_hash: [u8; 64],
        time: FileTime,
    ) -> NtAclXattr {
        NtAclXattr {
            sd,
            hashes: NtAclHashes::V4 {
                hash_type: HASH_TYPE_SHA256,
                hash: nt_hash,
                description: POSIX_ACL_DESCRIPTION.to_owned(),
                time,
                sys_acl_hash,
            },
        }
    }

    /// Decodes any version, 1 to 4. The descriptor's offsets count from the start of the blob
    /// (NDR relative pointers), not from the descriptor.
    pub fn decode(blob: &[u8]) -> Result<NtAclXattr, DecodeError> {
        let mut r = Reader::new(blob);
        let version = r.u16("NtAcl.Version")?;
        if r.u16("NtAcl.Level")? != version {
            return Err(DecodeError::invalid("NtAcl.Level"));
        }
        if !(1..=4).contains(&version) {
            return Err(DecodeError::invalid("NtAcl.Version"));
        }
        non_null(&mut r, "NtAcl.Info")?;
        let hashes = if version == 1 {
            NtAclHashes::V1
        } else {
            align_reader(&mut r, 4, "NtAcl.Hash")?;
            non_null(&mut r, "NtAcl.Sd")?;
            match version {
                2 => NtAclHashes::V2 {
                    hash: r.array("NtAcl.Hash")?,
                },
                3 => NtAclHashes::V3 {
                    hash_type: r.u16("NtAcl.HashType")?,
                    hash: r.array("NtAcl.Hash")?,
                },
                _ => {
                    let hash_type = r.u16("NtAcl.HashType")?;
                    let hash = r.array("NtAcl.Hash")?;
                    let description = nul_terminated(&mut r, "NtAcl.Description")?;
                    let description = core::str::from_utf8(description)
                        .map_err(|_| DecodeError::invalid("NtAcl.Description"))?
                        .to_owned();
                    align_reader(&mut r, 4, "NtAcl.Time")?;
                    let time = r.filetime("NtAcl.Time")?;
                    let sys_acl_hash = r.array("NtAcl.SysAclHash")?;
                    NtAclHashes::V4 {
                        hash_type,
                        hash,
                        description,
                        time,
                        sys_acl_hash,
                    }
                }
            }
        };
        align_reader(&mut r, 4, "NtAcl.Sd")?;
        let sd = SecurityDescriptor::decode_in(blob, r.pos())?;
        Ok(NtAclXattr { sd, hashes })
    }

    /// The blob, laid out as Samba's NDR marshalling lays it out.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.sd.encoded_len() + 256);
        encode_blob(&self.sd, &self.hashes, &mut out);
        out
    }

    /// Whether Samba would use this blob rather than the ACL it maps from the file's POSIX
    /// permissions (`validate_nt_acl_blob` in `vfs_acl_common.c`): versions 1 and 2 always;
    /// versions 3 and 4 only with SHA-256 hashes and when the file's current system ACL hash
    /// (version 4) or NT hash matches the stored one. Pass the hashes computed from the file
    /// as it is now, `None` for one that cannot be computed.
    pub fn matches_file(
        &self,
        sys_acl_hash: Option<&[u8; 64]>,
        nt_hash: Option<&[u8; 64]>,
    ) -> bool {
        let (hash_type, stored_hash, stored_sys) = match &self.hashes {
            NtAclHashes::V1 | NtAclHashes::V2 { .. } => return true,
            NtAclHashes::V3 { hash_type, hash } => (*hash_type, hash, None),
            NtAclHashes::V4 {
                hash_type,
                hash,
                sys_acl_hash,
                ..
            } => (*hash_type, hash, Some(sys_acl_hash)),
        };
        hash_type == HASH_TYPE_SHA256
            && (stored_sys.is_some_and(|s| sys_acl_hash == Some(s)) || nt_hash == Some(stored_hash))
    }
}

/// Reads an NDR unique pointer that must not be NULL (Samba dereferences it unchecked).
fn non_null(r: &mut Reader<'_>, field: &'static str) -> Result<(), DecodeError> {
    if r.u32(field)? == 0 {
        return Err(DecodeError::invalid(field));
    }
    Ok(())
}

fn encode_blob(sd: &SecurityDescriptor, hashes: &NtAclHashes, out: &mut Vec<u8>) {
    let mut w = Writer::new(out);
    let version: u16 = match hashes {
        NtAclHashes::V1 => 1,
        NtAclHashes::V2 { .. } => 2,
        NtAclHashes::V3 { .. } => 3,
        NtAclHashes::V4 { .. } => 4,
    };
    w.u16(version).u16(version).u32(FIRST_REFERENT);
    match hashes {
        NtAclHashes::V1 => {}
        NtAclHashes::V2 { hash } => {
            w.u32(SECOND_REFERENT).bytes(hash);
        }
        NtAclHashes::V3 { hash_type, hash } => {
            w.u32(SECOND_REFERENT).u16(*hash_type).bytes(hash);
        }
        NtAclHashes::V4 {
            hash_type,
            hash,
            description,
            time,
            sys_acl_hash,
        } => {
            w.u32(SECOND_REFERENT)
                .u16(*hash_type)
                .bytes(hash)
                .bytes(description.as_bytes())
                .u8(0)
                .align(4)
                .filetime(*time)
                .bytes(sys_acl_hash);
        }
    }
    w.align(4);
    sd.encode_offsets_from(&mut w, true);
}

/// The version-3 hash of a descriptor: SHA-256 of a version-3 blob holding `fs_sd` and an
/// all-zero hash (`hash_sd_sha256` in Samba's `vfs_acl_common.c`). Samba computes it over the
/// descriptor its POSIX back end maps from the file (with SE_DACL_PROTECTED set, owner, group
/// and DACL), so it only matches when given that same descriptor.
pub fn nt_acl_hash(fs_sd: &SecurityDescriptor) -> [u8; 64] {
    let mut blob = Vec::with_capacity(fs_sd.encoded_len() + 80);
    encode_blob(
        fs_sd,
        &NtAclHashes::V3 {
            hash_type: HASH_TYPE_SHA256,
            hash: [0; 64],
        },
        &mut blob,
    );
    sha256_field(&blob)
}
