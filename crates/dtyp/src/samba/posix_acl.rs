//! POSIX ACLs as Samba hashes them for `security.NTACL` version 4: the NDR `smb_acl_wrapper`
//! of `librpc/idl/smb_acl.idl`, built from the Linux `system.posix_acl_*` xattrs and `stat`.

use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Writer};

use super::sha256_field;

/// One entry's kind and qualifier.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PosixAclTag {
    /// The owning user (`user::`).
    UserObj,
    /// A named user (`user:uid:`).
    User(u32),
    /// The owning group (`group::`).
    GroupObj,
    /// A named group (`group:gid:`).
    Group(u32),
    /// The mask (`mask::`).
    Mask,
    /// Everyone else (`other::`).
    Other,
}

/// One POSIX ACL entry; `perm` holds read (4), write (2) and execute (1).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct PosixAce {
    /// Whom the entry is for.
    pub tag: PosixAclTag,
    /// Read (4), write (2), execute (1).
    pub perm: u8,
}

/// A POSIX ACL in the order the kernel keeps it (by tag, then by id).
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct PosixAcl {
    /// The entries in kernel order.
    pub entries: Vec<PosixAce>,
}

/// The version in the Linux xattr header (`POSIX_ACL_XATTR_VERSION`).
const XATTR_VERSION: u32 = 2;
/// `ACL_UNDEFINED_ID`: the id field of entries without a qualifier.
const UNDEFINED_ID: u32 = u32::MAX;

impl PosixAclTag {
    /// The Linux xattr tag (`ACL_USER_OBJ` ...) and id.
    const fn linux(self) -> (u16, u32) {
        match self {
            Self::UserObj => (0x01, UNDEFINED_ID),
            Self::User(uid) => (0x02, uid),
            Self::GroupObj => (0x04, UNDEFINED_ID),
            Self::Group(gid) => (0x08, gid),
            Self::Mask => (0x10, UNDEFINED_ID),
            Self::Other => (0x20, UNDEFINED_ID),
        }
    }

    /// Samba's `smb_acl_tag_t` and, for named entries, the id.
    const fn samba(self) -> (u16, Option<u32>) {
        match self {
            Self::User(uid) => (1, Some(uid)),
            Self::UserObj => (2, None),
            Self::Group(gid) => (3, Some(gid)),
            Self::GroupObj => (4, None),
            Self::Other => (5, None),
            Self::Mask => (6, None),
        }
    }
}

impl PosixAcl {
    /// The three-entry ACL Linux reports for a file with no ACL xattr (what `acl_get_fd`
    /// returns): owner, group and other from the permission bits of `mode`.
    pub fn from_mode(mode: u32) -> PosixAcl {
        let bits = |shift: u32| ((mode >> shift) & 7) as u8;
        PosixAcl {
            entries: vec![
                PosixAce {
                    tag: PosixAclTag::UserObj,
                    perm: bits(6),
                },
                PosixAce {
                    tag: PosixAclTag::GroupObj,
                    perm: bits(3),
                },
                PosixAce {
                    tag: PosixAclTag::Other,
                    perm: bits(0),
                },
            ],
        }
    }

    /// Decodes a `system.posix_acl_access` or `system.posix_acl_default` value: a version-2
    /// header and 8-byte entries (tag, permissions, id). Only the read, write and execute bits
    /// are kept, as Samba keeps them.
    pub fn decode_xattr(bytes: &[u8]) -> Result<PosixAcl, DecodeError> {
        let mut r = Reader::new(bytes);
        if r.u32("PosixAcl.Version")? != XATTR_VERSION {
            return Err(DecodeError::invalid("PosixAcl.Version"));
        }
        if !r.remaining().is_multiple_of(8) {
            return Err(DecodeError::new(
                "PosixAcl.Entry",
                DecodeErrorKind::Truncated,
            ));
        }
        let mut entries = Vec::with_capacity(r.remaining() / 8);
        while !r.is_empty() {
            let tag = r.u16("PosixAcl.Tag")?;
            let perm = (r.u16("PosixAcl.Perm")? & 7) as u8;
            let id = r.u32("PosixAcl.Id")?;
            let tag = match tag {
                0x01 => PosixAclTag::UserObj,
                0x02 => PosixAclTag::User(id),
                0x04 => PosixAclTag::GroupObj,
                0x08 => PosixAclTag::Group(id),
                0x10 => PosixAclTag::Mask,
                0x20 => PosixAclTag::Other,
                _ => return Err(DecodeError::invalid("PosixAcl.Tag")),
            };
            entries.push(PosixAce { tag, perm });
        }
        Ok(PosixAcl { entries })
    }

    /// The Linux xattr value.
    pub fn to_xattr(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + 8 * self.entries.len());
        let mut w = Writer::new(&mut out);
        w.u32(XATTR_VERSION);
        for e in &self.entries {
            let (tag, id) = e.tag.linux();
            w.u16(tag).u16(u16::from(e.perm & 7)).u32(id);
        }
        out
    }

    /// `smb_acl_t` in NDR: conformant count, count, next (0), then each `smb_acl_entry`.
    fn encode_ndr(&self, w: &mut Writer<'_>) {
        let count = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        w.align(4).u32(count).align(8).u32(count).u32(0);
        for e in &self.entries {
            let (tag, id) = e.tag.samba();
            // The union's level repeats the tag; uid_t and gid_t are 8-byte hypers.
            w.align(8).u16(tag).u16(tag);
            if let Some(id) = id {
                w.align(8).u64(u64::from(id));
            }
            w.align(4).u32(u32::from(e.perm & 7));
        }
    }
}

/// What Samba's `posix_sys_acl_blob_get_fd` hashes: the access ACL, the default ACL of a
/// directory, and the owner, group and full `st_mode` (file type bits included).
#[derive(Clone, Copy, Debug)]
pub struct PosixAclState<'a> {
    /// The access ACL: the decoded `system.posix_acl_access` xattr, or
    /// [`PosixAcl::from_mode`] when there is none.
    pub access: Option<&'a PosixAcl>,
    /// For a directory, the decoded `system.posix_acl_default` xattr, or an empty ACL when
    /// there is none; `None` for files.
    pub default: Option<&'a PosixAcl>,
    /// `st_uid`.
    pub uid: u32,
    /// `st_gid`.
    pub gid: u32,
    /// `st_mode`, file type bits included.
    pub mode: u32,
}

impl PosixAclState<'_> {
    /// The NDR `smb_acl_wrapper` blob.
    pub fn ndr_blob(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + 24 * 8);
        let mut w = Writer::new(&mut out);
        let mut referent = 0x0002_0000u32;
        let mut pointer = |present: bool| {
            if present {
                let id = referent;
                referent += 4;
                id
            } else {
                0
            }
        };
        let access = pointer(self.access.is_some());
        let default = pointer(self.default.is_some());
        w.u32(access)
            .u32(default)
            .u64(u64::from(self.uid))
            .u64(u64::from(self.gid))
            .u32(self.mode);
        for acl in [self.access, self.default].into_iter().flatten() {
            acl.encode_ndr(&mut w);
        }
        out
    }

    /// The `sys_acl_hash` of a version-4 `security.NTACL`: SHA-256 of [`Self::ndr_blob`].
    pub fn hash(&self) -> [u8; 64] {
        sha256_field(&self.ndr_blob())
    }
}
