//! Self-relative security descriptors (MS-DTYP 2.4.6).

use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Writer};

use crate::Sid;
use crate::acl::{AceType, Acl};

smb3d_wire::open_flags! {
    /// SECURITY_DESCRIPTOR.Control (MS-DTYP 2.4.6).
    pub struct SdControl(u16) {
        OWNER_DEFAULTED = 0x0001,
        GROUP_DEFAULTED = 0x0002,
        DACL_PRESENT = 0x0004,
        DACL_DEFAULTED = 0x0008,
        SACL_PRESENT = 0x0010,
        SACL_DEFAULTED = 0x0020,
        DACL_TRUSTED = 0x0040,
        SERVER_SECURITY = 0x0080,
        DACL_COMPUTED_INHERITANCE_REQUIRED = 0x0100,
        SACL_COMPUTED_INHERITANCE_REQUIRED = 0x0200,
        DACL_AUTO_INHERITED = 0x0400,
        SACL_AUTO_INHERITED = 0x0800,
        DACL_PROTECTED = 0x1000,
        SACL_PROTECTED = 0x2000,
        RM_CONTROL_VALID = 0x4000,
        SELF_RELATIVE = 0x8000,
    }
}

impl SdControl {
    /// The bits that describe the DACL.
    pub const DACL_BITS: SdControl = SdControl(
        Self::DACL_PRESENT.0
            | Self::DACL_DEFAULTED.0
            | Self::DACL_TRUSTED.0
            | Self::DACL_COMPUTED_INHERITANCE_REQUIRED.0
            | Self::DACL_AUTO_INHERITED.0
            | Self::DACL_PROTECTED.0,
    );
    /// The bits that describe the SACL.
    pub const SACL_BITS: SdControl = SdControl(
        Self::SACL_PRESENT.0
            | Self::SACL_DEFAULTED.0
            | Self::SACL_COMPUTED_INHERITANCE_REQUIRED.0
            | Self::SACL_AUTO_INHERITED.0
            | Self::SACL_PROTECTED.0,
    );
}

smb3d_wire::open_flags! {
    /// SECURITY_INFORMATION: the AdditionalInformation of a security QUERY_INFO or SET_INFO
    /// (MS-SMB2 2.2.37, 2.2.39; MS-DTYP 2.4.7).
    pub struct SecurityInformation(u32) {
        OWNER = 0x0000_0001,
        GROUP = 0x0000_0002,
        DACL = 0x0000_0004,
        SACL = 0x0000_0008,
        LABEL = 0x0000_0010,
        ATTRIBUTE = 0x0000_0020,
        SCOPE = 0x0000_0040,
        BACKUP = 0x0001_0000,
    }
}

/// SECURITY_DESCRIPTOR revision; the only one defined.
const SD_REVISION: u8 = 1;
/// The fixed part of a self-relative security descriptor.
pub const SD_HEADER_LEN: usize = 20;

/// A security descriptor (MS-DTYP 2.4.6), decoded from and encoded to the self-relative form.
///
/// `dacl: None` with DACL_PRESENT set is a NULL DACL (everyone gets everything); DACL_PRESENT
/// clear means no DACL at all, which grants the same. Likewise for the SACL.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct SecurityDescriptor {
    /// Control flags.
    pub control: SdControl,
    /// The owner SID, absent when offset 0.
    pub owner: Option<Sid>,
    /// The primary group SID, absent when offset 0.
    pub group: Option<Sid>,
    /// The system ACL (audit, mandatory label...).
    pub sacl: Option<Acl>,
    /// The discretionary ACL.
    pub dacl: Option<Acl>,
}

impl SecurityDescriptor {
    /// A self-relative descriptor with an owner, a group and a DACL.
    pub fn new(owner: Sid, group: Sid, dacl: Acl) -> SecurityDescriptor {
        SecurityDescriptor {
            control: SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT,
            owner: Some(owner),
            group: Some(group),
            sacl: None,
            dacl: Some(dacl),
        }
    }

    /// The DACL that access checks use: `None` when there is none or it is NULL, both of which
    /// grant every right (MS-DTYP 2.5.3.2).
    pub fn effective_dacl(&self) -> Option<&Acl> {
        if self.control.contains(SdControl::DACL_PRESENT) {
            self.dacl.as_ref()
        } else {
            None
        }
    }

    /// The size of the self-relative form.
    pub fn encoded_len(&self) -> usize {
        SD_HEADER_LEN
            + self.owner.as_ref().map_or(0, Sid::encoded_len)
            + self.group.as_ref().map_or(0, Sid::encoded_len)
            + self.sacl.as_ref().map_or(0, Acl::encoded_len)
            + self.dacl.as_ref().map_or(0, Acl::encoded_len)
    }

    /// Decodes a self-relative security descriptor at the start of `buf` (MS-DTYP 2.4.6). Every
    /// offset must be 0 (absent) or point past the 20-byte header and inside `buf`. The
    /// caller bounds `buf` (SET_INFO and create contexts limit it).
    pub fn decode(buf: &[u8]) -> Result<SecurityDescriptor, DecodeError> {
        Self::decode_in(buf, 0)
    }

    /// Decodes a descriptor whose header starts at `start` in `msg` but whose offsets count
    /// from the start of `msg`, as in Samba's NDR-encoded xattrs.
    pub(crate) fn decode_in(msg: &[u8], start: usize) -> Result<SecurityDescriptor, DecodeError> {
        let mut r = Reader::new(msg);
        r.seek(start, "SecurityDescriptor")?;
        if r.u8("SecurityDescriptor.Revision")? != SD_REVISION {
            return Err(DecodeError::invalid("SecurityDescriptor.Revision"));
        }
        r.skip(1, "SecurityDescriptor.Sbz1")?;
        let control = SdControl(r.u16("SecurityDescriptor.Control")?);
        let owner_at = r.u32("SecurityDescriptor.OffsetOwner")?;
        let group_at = r.u32("SecurityDescriptor.OffsetGroup")?;
        let sacl_at = r.u32("SecurityDescriptor.OffsetSacl")?;
        let dacl_at = r.u32("SecurityDescriptor.OffsetDacl")?;
        let body = Reader::after_header(msg, r.pos(), "SecurityDescriptor")?;
        let part = |offset: u32, field: &'static str| -> Result<Option<&[u8]>, DecodeError> {
            if offset == 0 {
                return Ok(None);
            }
            let offset = usize::try_from(offset)
                .map_err(|_| DecodeError::new(field, DecodeErrorKind::Overflow))?;
            let len = msg
                .len()
                .checked_sub(offset)
                .filter(|len| *len > 0)
                .ok_or(DecodeError::new(field, DecodeErrorKind::OutOfBounds))?;
            body.buffer_at(offset, len, field).map(Some)
        };
        let sid = |offset, field| -> Result<Option<Sid>, DecodeError> {
            part(offset, field)?
                .map(|b| Sid::decode(&mut Reader::nested(b)))
                .transpose()
        };
        let acl = |offset, field| -> Result<Option<Acl>, DecodeError> {
            part(offset, field)?.map(Acl::decode).transpose()
        };
        Ok(SecurityDescriptor {
            control,
            owner: sid(owner_at, "SecurityDescriptor.OffsetOwner")?,
            group: sid(group_at, "SecurityDescriptor.OffsetGroup")?,
            sacl: acl(sacl_at, "SecurityDescriptor.OffsetSacl")?,
            dacl: acl(dacl_at, "SecurityDescriptor.OffsetDacl")?,
        })
    }

    /// Writes the self-relative form: header, owner, group, SACL, DACL, the order Samba uses.
    pub fn encode(&self, w: &mut Writer<'_>) {
        self.encode_offsets_from(w, false);
    }

    /// The self-relative form in a new buffer.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(self.encoded_len());
        self.encode(&mut Writer::new(&mut buf));
        buf
    }

    /// Writes the descriptor with offsets counted from `w`'s base when `from_writer_base`
    /// (Samba's NDR xattrs), or from the descriptor's own start (the self-relative form).
    pub(crate) fn encode_offsets_from(&self, w: &mut Writer<'_>, from_writer_base: bool) {
        let base = if from_writer_base { w.offset() } else { 0 };
        let mut next = SD_HEADER_LEN;
        let mut offset_of = |len: Option<usize>| -> u32 {
            len.map_or(0, |len| {
                let at = base + next;
                next += len;
                u32::try_from(at).unwrap_or(u32::MAX)
            })
        };
        let owner = offset_of(self.owner.as_ref().map(Sid::encoded_len));
        let group = offset_of(self.group.as_ref().map(Sid::encoded_len));
        let sacl = offset_of(self.sacl.as_ref().map(Acl::encoded_len));
        let dacl = offset_of(self.dacl.as_ref().map(Acl::encoded_len));
        w.u8(SD_REVISION)
            .u8(0)
            .u16(self.control.0)
            .u32(owner)
            .u32(group)
            .u32(sacl)
            .u32(dacl);
        if let Some(s) = &self.owner {
            s.encode(w);
        }
        if let Some(s) = &self.group {
            s.encode(w);
        }
        if let Some(a) = &self.sacl {
            a.encode(w);
        }
        if let Some(a) = &self.dacl {
            a.encode(w);
        }
    }

    /// The parts a security QUERY_INFO asks for (MS-SMB2 3.3.5.20.3), as Windows returns them:
    /// unrequested parts are left out with their PRESENT bit cleared, and a requested DACL or
    /// SACL that does not exist is reported as present and NULL. LABEL, ATTRIBUTE and SCOPE
    /// without SACL select the SACL's mandatory-label, resource-attribute and
    /// scoped-policy ACEs.
    pub fn filtered(&self, info: SecurityInformation) -> SecurityDescriptor {
        let info = if info.contains(SecurityInformation::BACKUP) {
            info | SecurityInformation(0x7F)
        } else {
            info
        };
        let mut out = SecurityDescriptor {
            control: self.control | SdControl::SELF_RELATIVE,
            owner: self
                .owner
                .filter(|_| info.contains(SecurityInformation::OWNER)),
            group: self
                .group
                .filter(|_| info.contains(SecurityInformation::GROUP)),
            sacl: None,
            dacl: None,
        };
        if info.contains(SecurityInformation::DACL) {
            out.dacl = self.effective_dacl().cloned();
            out.control.insert(SdControl::DACL_PRESENT);
        } else {
            out.control.remove(SdControl::DACL_PRESENT);
        }
        out.control.remove(SdControl::SACL_PRESENT);
        let sacl = self
            .sacl
            .as_ref()
            .filter(|_| self.control.contains(SdControl::SACL_PRESENT));
        if info.contains(SecurityInformation::SACL) {
            out.sacl = sacl.cloned();
            out.control.insert(SdControl::SACL_PRESENT);
        } else if let Some(sacl) = sacl {
            let wanted = |t: AceType| {
                (t == AceType::SYSTEM_MANDATORY_LABEL && info.contains(SecurityInformation::LABEL))
                    || (t == AceType::SYSTEM_RESOURCE_ATTRIBUTE
                        && info.contains(SecurityInformation::ATTRIBUTE))
                    || (t == AceType::SYSTEM_SCOPED_POLICY_ID
                        && info.contains(SecurityInformation::SCOPE))
            };
            let aces: Vec<_> = sacl
                .aces
                .iter()
                .filter(|a| wanted(a.ace_type))
                .cloned()
                .collect();
            if !aces.is_empty() {
                out.sacl = Some(Acl {
                    revision: sacl.revision,
                    aces,
                });
                out.control.insert(SdControl::SACL_PRESENT);
            }
        }
        out
    }

    /// Applies a security SET_INFO (MS-SMB2 3.3.5.21.3): the parts `info` names are taken from
    /// `update`, with their control bits; the rest stays. An owner or group the update leaves
    /// out is kept, as Samba does. A new DACL is stored as Windows stores it: generic rights
    /// of the ACEs that apply to the object mapped (inherit-only ACEs keep them for the
    /// children), AUTO_INHERIT_REQ dropped, and AUTO_INHERITED kept only when the request also
    /// asked for automatic inheritance with AUTO_INHERIT_REQ.
    pub fn merged(
        &self,
        update: &SecurityDescriptor,
        info: SecurityInformation,
    ) -> SecurityDescriptor {
        let mut out = self.clone();
        out.control.insert(SdControl::SELF_RELATIVE);
        if info.contains(SecurityInformation::OWNER) && update.owner.is_some() {
            out.owner = update.owner;
        }
        if info.contains(SecurityInformation::GROUP) && update.group.is_some() {
            out.group = update.group;
        }
        if info.contains(SecurityInformation::DACL) {
            out.dacl = update.dacl.as_ref().map(Acl::with_generic_rights_mapped);
            let mut dacl_bits = update.control.intersection(SdControl::DACL_BITS);
            if !dacl_bits.contains(SdControl::DACL_COMPUTED_INHERITANCE_REQUIRED) {
                dacl_bits.remove(SdControl::DACL_AUTO_INHERITED);
            }
            dacl_bits.remove(SdControl::DACL_COMPUTED_INHERITANCE_REQUIRED);
            out.control =
                out.control.without(SdControl::DACL_BITS) | dacl_bits | SdControl::DACL_PRESENT;
        }
        if info.contains(SecurityInformation::SACL) {
            out.sacl = update.sacl.clone();
            out.control = out.control.without(SdControl::SACL_BITS)
                | update.control.intersection(SdControl::SACL_BITS)
                | SdControl::SACL_PRESENT;
        }
        out
    }
}

smb3d_wire::impl_codec!(SecurityDescriptor);
