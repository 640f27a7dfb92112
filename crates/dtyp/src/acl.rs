//! Access control entries and lists (MS-DTYP 2.4.4, 2.4.5).

use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Writer};

use crate::{AccessMask, Sid};

smb3d_wire::open_enum! {
    /// ACE_HEADER.AceType (MS-DTYP 2.4.4.1).
    pub struct AceType(u8) {
        ACCESS_ALLOWED = 0x00,
        ACCESS_DENIED = 0x01,
        SYSTEM_AUDIT = 0x02,
        SYSTEM_ALARM = 0x03,
        ACCESS_ALLOWED_COMPOUND = 0x04,
        ACCESS_ALLOWED_OBJECT = 0x05,
        ACCESS_DENIED_OBJECT = 0x06,
        SYSTEM_AUDIT_OBJECT = 0x07,
        SYSTEM_ALARM_OBJECT = 0x08,
        ACCESS_ALLOWED_CALLBACK = 0x09,
        ACCESS_DENIED_CALLBACK = 0x0A,
        ACCESS_ALLOWED_CALLBACK_OBJECT = 0x0B,
        ACCESS_DENIED_CALLBACK_OBJECT = 0x0C,
        SYSTEM_AUDIT_CALLBACK = 0x0D,
        SYSTEM_ALARM_CALLBACK = 0x0E,
        SYSTEM_AUDIT_CALLBACK_OBJECT = 0x0F,
        SYSTEM_ALARM_CALLBACK_OBJECT = 0x10,
        SYSTEM_MANDATORY_LABEL = 0x11,
        SYSTEM_RESOURCE_ATTRIBUTE = 0x12,
        SYSTEM_SCOPED_POLICY_ID = 0x13,
    }
}

impl AceType {
    /// Types whose body is exactly an access mask and a SID.
    const fn is_basic(self) -> bool {
        matches!(self.0, 0x00..=0x03 | 0x11 | 0x13)
    }
}

smb3d_wire::open_flags! {
    /// ACE_HEADER.AceFlags (MS-DTYP 2.4.4.1).
    pub struct AceFlags(u8) {
        OBJECT_INHERIT = 0x01,
        CONTAINER_INHERIT = 0x02,
        NO_PROPAGATE_INHERIT = 0x04,
        INHERIT_ONLY = 0x08,
        INHERITED = 0x10,
        SUCCESSFUL_ACCESS = 0x40,
        FAILED_ACCESS = 0x80,
    }
}

/// The part of an ACE after its header.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum AceBody {
    /// ACCESS_ALLOWED, ACCESS_DENIED, SYSTEM_AUDIT, SYSTEM_ALARM, SYSTEM_MANDATORY_LABEL and
    /// SYSTEM_SCOPED_POLICY_ID (MS-DTYP 2.4.4.2-2.4.4.5, 2.4.4.13, 2.4.4.16): a mask and a SID.
    Basic { mask: AccessMask, sid: Sid },
    /// Every other type (object, callback, compound, resource attribute, unknown), kept as sent:
    /// the mask and what follows, a multiple of 4 bytes.
    Raw(Vec<u8>),
}

/// An access control entry (MS-DTYP 2.4.4).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Ace {
    /// ACE_HEADER.AceType.
    pub ace_type: AceType,
    /// ACE_HEADER.AceFlags.
    pub flags: AceFlags,
    /// Everything after the header.
    pub body: AceBody,
}

/// ACE_HEADER size.
const ACE_HEADER_LEN: usize = 4;
/// The smallest ACE: a header and the access mask every ACE type has.
const MIN_ACE_LEN: usize = ACE_HEADER_LEN + 4;

impl Ace {
    /// An ACE of a basic type (allowed, denied, audit...).
    pub const fn new(ace_type: AceType, flags: AceFlags, mask: AccessMask, sid: Sid) -> Ace {
        Ace {
            ace_type,
            flags,
            body: AceBody::Basic { mask, sid },
        }
    }

    /// An ACCESS_ALLOWED ACE.
    pub const fn allow(sid: Sid, mask: AccessMask, flags: AceFlags) -> Ace {
        Ace::new(AceType::ACCESS_ALLOWED, flags, mask, sid)
    }

    /// An ACCESS_DENIED ACE.
    pub const fn deny(sid: Sid, mask: AccessMask, flags: AceFlags) -> Ace {
        Ace::new(AceType::ACCESS_DENIED, flags, mask, sid)
    }

    /// The mask and SID of a basic ACE.
    pub const fn mask_and_sid(&self) -> Option<(AccessMask, &Sid)> {
        match &self.body {
            AceBody::Basic { mask, sid } => Some((*mask, sid)),
            AceBody::Raw(_) => None,
        }
    }

    /// AceSize: header plus body.
    pub fn encoded_len(&self) -> usize {
        ACE_HEADER_LEN
            + match &self.body {
                AceBody::Basic { sid, .. } => 4 + sid.encoded_len(),
                AceBody::Raw(bytes) => bytes.len(),
            }
    }

    /// Reads one ACE. AceSize must cover the header and a mask and be a multiple of 4. Bytes a
    /// basic ACE carries after its SID are dropped, as Windows and Samba do.
    pub fn decode(r: &mut Reader<'_>) -> Result<Ace, DecodeError> {
        let ace_type = AceType(r.u8("Ace.AceType")?);
        let flags = AceFlags(r.u8("Ace.AceFlags")?);
        let size = usize::from(r.u16("Ace.AceSize")?);
        if size < MIN_ACE_LEN {
            return Err(DecodeError::new(
                "Ace.AceSize",
                DecodeErrorKind::BadSize {
                    expected: MIN_ACE_LEN as u32,
                    got: size as u32,
                },
            ));
        }
        if !size.is_multiple_of(4) {
            return Err(DecodeError::new("Ace.AceSize", DecodeErrorKind::Misaligned));
        }
        let body = r.bytes(size - ACE_HEADER_LEN, "Ace.Body")?;
        let body = if ace_type.is_basic() {
            let mut b = Reader::nested(body);
            let mask = AccessMask(b.u32("Ace.Mask")?);
            let sid = Sid::decode(&mut b)?;
            AceBody::Basic { mask, sid }
        } else {
            AceBody::Raw(body.to_vec())
        };
        Ok(Ace {
            ace_type,
            flags,
            body,
        })
    }

    /// Writes the ACE.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u8(self.ace_type.0)
            .u8(self.flags.0)
            .u16(u16::try_from(self.encoded_len()).unwrap_or(u16::MAX));
        match &self.body {
            AceBody::Basic { mask, sid } => {
                w.u32(mask.0);
                sid.encode(w);
            }
            AceBody::Raw(bytes) => {
                w.bytes(bytes);
            }
        }
    }
}

smb3d_wire::open_enum! {
    /// ACL.AclRevision (MS-DTYP 2.4.5). Windows accepts 2 to 4; smbcacls writes 3.
    pub struct AclRevision(u8) {
        NT4 = 2,
        V3 = 3,
        DS = 4,
    }
}

/// An access control list (MS-DTYP 2.4.5).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Acl {
    /// AclRevision.
    pub revision: AclRevision,
    /// The ACEs in order.
    pub aces: Vec<Ace>,
}

/// The ACL header size.
pub(crate) const ACL_HEADER_LEN: usize = 8;

impl Acl {
    /// An ACL of revision 2, which Windows and Samba use for file ACLs without object ACEs.
    pub const fn new(aces: Vec<Ace>) -> Acl {
        Acl {
            revision: AclRevision::NT4,
            aces,
        }
    }

    /// AclSize: the header and every ACE. ACLs larger than 64 KiB cannot be encoded.
    pub fn encoded_len(&self) -> usize {
        ACL_HEADER_LEN + self.aces.iter().map(Ace::encoded_len).sum::<usize>()
    }

    /// Reads an ACL from the start of `buf` (which may extend past it). The ACEs must lie
    /// within AclSize; bytes between the last ACE and AclSize are ignored.
    pub fn decode(buf: &[u8]) -> Result<Acl, DecodeError> {
        let mut r = Reader::new(buf);
        let revision = AclRevision(r.u8("Acl.AclRevision")?);
        if !(2..=4).contains(&revision.0) {
            return Err(DecodeError::invalid("Acl.AclRevision"));
        }
        r.skip(1, "Acl.Sbz1")?;
        let size = usize::from(r.u16("Acl.AclSize")?);
        let count = usize::from(r.u16("Acl.AceCount")?);
        r.skip(2, "Acl.Sbz2")?;
        if size < ACL_HEADER_LEN {
            return Err(DecodeError::new(
                "Acl.AclSize",
                DecodeErrorKind::BadSize {
                    expected: ACL_HEADER_LEN as u32,
                    got: size as u32,
                },
            ));
        }
        let body = r.buffer_at(ACL_HEADER_LEN, size - ACL_HEADER_LEN, "Acl.AclSize")?;
        let mut aces_reader = Reader::nested(body);
        // Each ACE takes at least 8 bytes, which bounds the allocation by the bytes present.
        if count > body.len() / 8 {
            return Err(DecodeError::new("Acl.AceCount", DecodeErrorKind::TooLong));
        }
        let mut aces = Vec::with_capacity(count);
        for _ in 0..count {
            aces.push(Ace::decode(&mut aces_reader)?);
        }
        Ok(Acl { revision, aces })
    }

    /// This ACL with the generic rights of its basic ACEs replaced by the file rights they
    /// stand for (MS-DTYP 2.4.3), except in INHERIT_ONLY ACEs, which do not apply to the
    /// object and keep them for the children's own mapping.
    pub fn with_generic_rights_mapped(&self) -> Acl {
        let aces = self
            .aces
            .iter()
            .map(|ace| match &ace.body {
                AceBody::Basic { mask, sid } if !ace.flags.contains(AceFlags::INHERIT_ONLY) => {
                    Ace::new(ace.ace_type, ace.flags, mask.map_generic(), *sid)
                }
                _ => ace.clone(),
            })
            .collect();
        Acl {
            revision: self.revision,
            aces,
        }
    }

    /// Writes the ACL with an exact AclSize.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u8(self.revision.0)
            .u8(0)
            .u16(u16::try_from(self.encoded_len()).unwrap_or(u16::MAX))
            .u16(u16::try_from(self.aces.len()).unwrap_or(u16::MAX))
            .u16(0);
        for ace in &self.aces {
            ace.encode(w);
        }
    }
}

smb3d_wire::impl_codec!(Acl);

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn encode(acl: &Acl) -> Vec<u8> {
        let mut buf = Vec::new();
        acl.encode(&mut Writer::new(&mut buf));
        buf
    }

    /// The DACL smbcacls 4.17 sent in a SET_INFO (captured on loopback against Samba 4.17):
    /// revision 3; Everyone denied 0x4, Unix group 1001 read, the user full control.
    const SMBCACLS_DACL: &str = "0300580003000000\
        010014000400000001010000000000010000000000001800a9001200010200000000001602000000e9030000\
        00002400ff011f0001050000000000051500000055187e621a13668c7e9b2241e8030000";

    #[test]
    fn captured_dacl_round_trip() {
        let bytes = hex(SMBCACLS_DACL);
        let acl = Acl::decode(&bytes).unwrap();
        assert_eq!(acl.revision, AclRevision::V3);
        assert_eq!(acl.aces.len(), 3);
        assert_eq!(
            acl.aces[0],
            Ace::deny(
                Sid::EVERYONE,
                AccessMask::FILE_APPEND_DATA,
                AceFlags::empty()
            )
        );
        assert_eq!(
            acl.aces[1],
            Ace::allow(
                Sid::unix_group(1001),
                AccessMask(0x0012_00a9),
                AceFlags::empty()
            )
        );
        let (mask, sid) = acl.aces[2].mask_and_sid().unwrap();
        assert_eq!(mask, AccessMask::FILE_ALL_ACCESS);
        assert_eq!(
            sid.to_string(),
            "S-1-5-21-1652430933-2355499802-1092787070-1000"
        );
        assert_eq!(acl.encoded_len(), bytes.len());
        assert_eq!(encode(&acl), bytes);
    }

    #[test]
    fn raw_aces_are_kept() {
        // Revision 4 with one ACCESS_ALLOWED_OBJECT ACE (MS-DTYP 2.4.4.3): mask 0x10, Flags 0
        // (no GUIDs), Everyone.
        let bytes = hex("0400200001000000050018001000000000000000010100000000000100000000");
        let acl = Acl::decode(&bytes).unwrap();
        assert_eq!(acl.revision, AclRevision::DS);
        assert_eq!(acl.aces[0].ace_type, AceType::ACCESS_ALLOWED_OBJECT);
        assert_eq!(acl.aces[0].body, AceBody::Raw(bytes[12..].to_vec()));
        assert_eq!(acl.aces[0].mask_and_sid(), None);
        assert_eq!(encode(&acl), bytes);
    }

    #[test]
    fn basic_ace_padding_dropped() {
        // Everyone allowed 0x1f01ff, AceSize 24 instead of 20.
        let bytes = hex("020020000100000000001800ff011f000101000000000001000000000000000000");
        let acl = Acl::decode(&bytes[..32]).unwrap();
        assert_eq!(
            acl.aces,
            [Ace::allow(
                Sid::EVERYONE,
                AccessMask::FILE_ALL_ACCESS,
                AceFlags::empty()
            )]
        );
        assert_eq!(acl.encoded_len(), 28);
    }

    #[test]
    fn slack_after_aces_ignored() {
        let mut bytes = hex(SMBCACLS_DACL);
        bytes[2] += 8;
        bytes.extend([0xEE; 8]);
        let acl = Acl::decode(&bytes).unwrap();
        assert_eq!(acl.aces.len(), 3);
        assert_eq!(encode(&acl), hex(SMBCACLS_DACL));
    }

    #[test]
    fn rejects() {
        let good = hex(SMBCACLS_DACL);
        let check = |bytes: &[u8], field: &str, kind: DecodeErrorKind| {
            let e = Acl::decode(bytes).unwrap_err();
            assert_eq!((e.field, e.kind), (field, kind), "{bytes:02x?}");
        };
        check(&good[..7], "Acl.Sbz2", DecodeErrorKind::Truncated);
        let mut b = good.clone();
        b[0] = 1;
        check(&b, "Acl.AclRevision", DecodeErrorKind::InvalidValue);
        b[0] = 5;
        check(&b, "Acl.AclRevision", DecodeErrorKind::InvalidValue);
        check(
            &good[..good.len() - 1],
            "Acl.AclSize",
            DecodeErrorKind::OutOfBounds,
        );
        let mut b = good.clone();
        b[2] = 4;
        b[3] = 0;
        check(
            &b,
            "Acl.AclSize",
            DecodeErrorKind::BadSize {
                expected: 8,
                got: 4,
            },
        );
        // More ACEs than bytes could hold.
        let mut b = good.clone();
        b[4] = 12;
        check(&b, "Acl.AceCount", DecodeErrorKind::TooLong);
        // One ACE more than present.
        let mut b = good.clone();
        b[4] = 4;
        check(&b, "Ace.AceType", DecodeErrorKind::Truncated);
        // The last ACE running past AclSize.
        let mut b = good.clone();
        b[8 + 0x14 + 0x18 + 2] = 0x28;
        check(&b, "Ace.Body", DecodeErrorKind::Truncated);
        // AceSize below a header and a mask, or not a multiple of 4.
        let mut b = good.clone();
        b[8 + 2] = 4;
        check(
            &b,
            "Ace.AceSize",
            DecodeErrorKind::BadSize {
                expected: 8,
                got: 4,
            },
        );
        b[8 + 2] = 0x15;
        check(&b, "Ace.AceSize", DecodeErrorKind::Misaligned);
        // A basic ACE too small for its SID.
        let mut b = good.clone();
        b[8 + 2] = 0x10;
        check(&b, "Sid.SubAuthority", DecodeErrorKind::Truncated);
    }
}
