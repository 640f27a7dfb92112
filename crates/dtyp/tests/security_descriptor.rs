//! Self-relative security descriptors against captures of smbcacls and Samba 4.17.

mod common;

use common::hex;
use common::samba417::{F1_NTACL, F8_NTACL};
use common::wire::*;
use smb3d_dtyp::samba::NtAclXattr;
use smb3d_dtyp::{
    AccessMask, Ace, AceFlags, AceType, Acl, SdControl, SecurityDescriptor, SecurityInformation,
    Sid,
};
use smb3d_wire::{DecodeErrorKind, Writer};

const BENCH: &str = "S-1-5-21-1652430933-2355499802-1092787070-1000";
const NONE_GROUP: &str = "S-1-5-21-1652430933-2355499802-1092787070-513";

fn sid(s: &str) -> Sid {
    s.parse().unwrap()
}

fn stored(ntacl: &str) -> SecurityDescriptor {
    NtAclXattr::decode(&hex(ntacl)).unwrap().sd
}

#[test]
fn captured_descriptors_round_trip() {
    for v in [
        WIRE_F1,
        WIRE_D1,
        WIRE_F3_FROM_POSIX,
        WIRE_D2,
        WIRE_F5,
        WIRE_SUB,
        SET_F4_ADD,
        SET_F8_DACL,
        WIRE_F8_OWNER,
        WIRE_F8_GROUP,
        WIRE_F8_DACL,
        WIRE_F8_OWNER_GROUP,
        WIRE_F8_OWNER_DACL,
    ] {
        let bytes = hex(v);
        let sd = SecurityDescriptor::decode(&bytes).unwrap();
        assert_eq!(sd.encoded_len(), bytes.len(), "{v}");
        assert_eq!(sd.to_bytes(), bytes, "{v}");
        // Through a writer that already holds something: offsets stay self-relative.
        let mut buf = vec![0xAA; 5];
        sd.encode(&mut Writer::new(&mut buf));
        assert_eq!(&buf[5..], bytes.as_slice());
    }
}

/// Samba lays the parts out owner, group, SACL, DACL, and the descriptor in `security.NTACL`
/// is the same as the one it sends.
#[test]
fn wire_and_xattr_agree() {
    assert_eq!(
        SecurityDescriptor::decode(&hex(WIRE_F1)).unwrap(),
        stored(F1_NTACL)
    );
    let bytes = hex(WIRE_F1);
    assert_eq!(
        &bytes[4..20],
        &hex("14000000 30000000 00000000 4c000000")[..]
    );
}

#[test]
fn directory_descriptor_fields() {
    let sd = SecurityDescriptor::decode(&hex(WIRE_D2)).unwrap();
    assert_eq!(
        sd.control,
        SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT
    );
    assert_eq!(sd.owner, Some(sid(BENCH)));
    assert_eq!(sd.group, Some(sid(NONE_GROUP)));
    let dacl = sd.dacl.unwrap();
    let oi_ci = AceFlags::OBJECT_INHERIT | AceFlags::CONTAINER_INHERIT;
    let oi_ci_io = oi_ci | AceFlags::INHERIT_ONLY;
    let read = AccessMask(0x1200a9);
    assert_eq!(
        dacl.aces,
        [
            Ace::allow(Sid::EVERYONE, read, oi_ci),
            Ace::allow(Sid::CREATOR_OWNER, AccessMask::FILE_ALL_ACCESS, oi_ci_io),
            Ace::allow(Sid::CREATOR_GROUP, read, oi_ci_io),
            Ace::allow(Sid::AUTHENTICATED_USERS, AccessMask(0x1301ff), oi_ci),
            Ace::allow(sid(NONE_GROUP), read, AceFlags::empty()),
            Ace::allow(sid(BENCH), AccessMask::FILE_ALL_ACCESS, AceFlags::empty()),
        ]
    );
    let set = SecurityDescriptor::decode(&hex(SET_F4_ADD)).unwrap();
    assert_eq!(
        set.dacl.unwrap().aces[0],
        Ace::deny(
            Sid::BUILTIN_USERS,
            AccessMask::FILE_WRITE_DATA,
            AceFlags::empty()
        )
    );
}

/// What Samba answered for each AdditionalInformation, from the descriptor it stored.
#[test]
fn filtered_matches_samba() {
    let f8 = stored(F8_NTACL);
    let cases = [
        (SecurityInformation::OWNER, WIRE_F8_OWNER),
        (SecurityInformation::GROUP, WIRE_F8_GROUP),
        (SecurityInformation::DACL, WIRE_F8_DACL),
        (
            SecurityInformation::OWNER | SecurityInformation::GROUP,
            WIRE_F8_OWNER_GROUP,
        ),
        (
            SecurityInformation::OWNER | SecurityInformation::DACL,
            WIRE_F8_OWNER_DACL,
        ),
    ];
    for (info, expected) in cases {
        assert_eq!(f8.filtered(info).to_bytes(), hex(expected), "{info:?}");
    }
    let all = SecurityInformation::OWNER | SecurityInformation::GROUP | SecurityInformation::DACL;
    assert_eq!(f8.filtered(all), f8);
}

#[test]
fn filtered_acl_presence() {
    let mut sd = stored(F8_NTACL);
    sd.dacl = None;
    sd.control.remove(SdControl::DACL_PRESENT);
    // A requested DACL that does not exist is reported present and NULL, as Windows does.
    let out = sd.filtered(SecurityInformation::DACL | SecurityInformation::SACL);
    assert_eq!(
        out.control,
        SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT | SdControl::SACL_PRESENT
    );
    assert_eq!((out.owner, out.dacl, out.sacl), (None, None, None));
    // A DACL stored without DACL_PRESENT is not in effect and is not returned.
    let mut sd = stored(F8_NTACL);
    sd.control.remove(SdControl::DACL_PRESENT);
    assert_eq!(sd.filtered(SecurityInformation::DACL).dacl, None);
}

#[test]
fn filtered_sacl_parts() {
    let label = Ace::new(
        AceType::SYSTEM_MANDATORY_LABEL,
        AceFlags::empty(),
        AccessMask(1),
        "S-1-16-8192".parse().unwrap(),
    );
    let audit = Ace::new(
        AceType::SYSTEM_AUDIT,
        AceFlags::FAILED_ACCESS,
        AccessMask::FILE_ALL_ACCESS,
        Sid::EVERYONE,
    );
    let mut sd = stored(F8_NTACL);
    sd.sacl = Some(Acl::new(vec![audit.clone(), label.clone()]));
    sd.control.insert(SdControl::SACL_PRESENT);
    let bytes = sd.to_bytes();
    assert_eq!(SecurityDescriptor::decode(&bytes).unwrap(), sd);
    // SACL after group and before DACL.
    assert_eq!(
        u32::from_le_bytes(bytes[12..16].try_into().unwrap()),
        20 + 28 + 28
    );

    let sacl_only = sd.filtered(SecurityInformation::SACL);
    assert_eq!(sacl_only.sacl, sd.sacl);
    assert_eq!(sacl_only.dacl, None);
    assert_eq!(
        sacl_only.control,
        SdControl::SELF_RELATIVE | SdControl::SACL_PRESENT
    );
    let label_only = sd.filtered(SecurityInformation::LABEL);
    assert_eq!(label_only.sacl.unwrap().aces, [label]);
    assert!(label_only.control.contains(SdControl::SACL_PRESENT));
    let none = sd.filtered(SecurityInformation::SCOPE | SecurityInformation::ATTRIBUTE);
    assert_eq!(none.sacl, None);
    assert!(!none.control.contains(SdControl::SACL_PRESENT));
    assert_eq!(sd.filtered(SecurityInformation::BACKUP), sd);
    assert_eq!(
        sd.filtered(SecurityInformation::empty()).to_bytes().len(),
        20
    );
}

/// smbcacls `--set` sent only a DACL; what Samba stored is the old descriptor with that DACL.
#[test]
fn merged_matches_samba() {
    let before = stored(F1_NTACL);
    let update = SecurityDescriptor::decode(&hex(SET_F8_DACL)).unwrap();
    assert_eq!((update.owner, update.group), (None, None));
    assert_eq!(
        before.merged(&update, SecurityInformation::DACL),
        stored(F8_NTACL)
    );
    // Owner and group change only when named and present.
    let new_owner = SecurityDescriptor {
        owner: Some(Sid::unix_user(7)),
        group: Some(Sid::unix_group(7)),
        ..SecurityDescriptor::default()
    };
    let m = before.merged(&new_owner, SecurityInformation::OWNER);
    assert_eq!(m.owner, Some(Sid::unix_user(7)));
    assert_eq!(m.group, before.group);
    assert_eq!(m.dacl, before.dacl);
    let m = before.merged(
        &update,
        SecurityInformation::OWNER | SecurityInformation::GROUP,
    );
    assert_eq!(m, before);
    // DACL control bits come from the update; a DACL left out means a NULL DACL.
    let protected = SecurityDescriptor {
        control: SdControl::SELF_RELATIVE | SdControl::DACL_PROTECTED,
        ..SecurityDescriptor::default()
    };
    let m = before.merged(&protected, SecurityInformation::DACL);
    assert_eq!(m.dacl, None);
    assert_eq!(
        m.control,
        SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT | SdControl::DACL_PROTECTED
    );
    assert_eq!(m.effective_dacl(), None);
    // SACL likewise.
    let sacl = SecurityDescriptor {
        control: SdControl::SACL_PRESENT | SdControl::SACL_AUTO_INHERITED,
        sacl: Some(Acl::new(vec![])),
        ..SecurityDescriptor::default()
    };
    let m = before.merged(&sacl, SecurityInformation::SACL);
    assert_eq!(m.sacl, Some(Acl::new(vec![])));
    assert_eq!(
        m.control,
        before.control | SdControl::SACL_PRESENT | SdControl::SACL_AUTO_INHERITED
    );
}

#[test]
fn null_and_absent_dacl() {
    // DACL_PRESENT with offset 0: a NULL DACL.
    let null = hex("01000480 00000000 00000000 00000000 00000000");
    let sd = SecurityDescriptor::decode(&null).unwrap();
    assert_eq!(
        sd.control,
        SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT
    );
    assert_eq!(sd.effective_dacl(), None);
    assert_eq!(
        (sd.owner, sd.group, &sd.sacl, &sd.dacl),
        (None, None, &None, &None)
    );
    assert_eq!(sd.to_bytes(), null);
    // An empty DACL is not a NULL one.
    let empty = hex("01000480 00000000 00000000 00000000 14000000 02000800 00000000");
    let sd = SecurityDescriptor::decode(&empty).unwrap();
    assert_eq!(sd.effective_dacl(), Some(&Acl::new(vec![])));
    assert_eq!(sd.to_bytes(), empty);
    // A DACL without DACL_PRESENT is not in effect.
    let mut unflagged = empty.clone();
    unflagged[2] = 0;
    let sd = SecurityDescriptor::decode(&unflagged).unwrap();
    assert!(sd.dacl.is_some());
    assert_eq!(sd.effective_dacl(), None);
}

#[test]
fn builds_like_samba() {
    let f1 = stored(F1_NTACL);
    let rebuilt = SecurityDescriptor::new(
        sid(BENCH),
        sid(NONE_GROUP),
        Acl::new(f1.dacl.clone().unwrap().aces),
    );
    assert_eq!(rebuilt.to_bytes(), hex(WIRE_F1));
}

#[test]
fn rejects() {
    let good = hex(WIRE_F1);
    let check = |bytes: &[u8], field: &str, kind: DecodeErrorKind| {
        let e = SecurityDescriptor::decode(bytes).unwrap_err();
        assert_eq!((e.field, e.kind), (field, kind), "{bytes:02x?}");
    };
    check(
        &good[..0],
        "SecurityDescriptor.Revision",
        DecodeErrorKind::Truncated,
    );
    check(
        &good[..19],
        "SecurityDescriptor.OffsetDacl",
        DecodeErrorKind::Truncated,
    );
    let mut b = good.clone();
    b[0] = 2;
    check(
        &b,
        "SecurityDescriptor.Revision",
        DecodeErrorKind::InvalidValue,
    );
    let set_offset = |which: usize, value: u32| {
        let mut b = good.clone();
        b[4 + 4 * which..8 + 4 * which].copy_from_slice(&value.to_le_bytes());
        b
    };
    let fields = [
        "SecurityDescriptor.OffsetOwner",
        "SecurityDescriptor.OffsetGroup",
        "SecurityDescriptor.OffsetSacl",
        "SecurityDescriptor.OffsetDacl",
    ];
    for (which, field) in fields.into_iter().enumerate() {
        // Into the header, at the end, past the end, at the top of the range.
        for offset in [1, 19, good.len() as u32, good.len() as u32 + 1, u32::MAX] {
            check(
                &set_offset(which, offset),
                field,
                DecodeErrorKind::OutOfBounds,
            );
        }
    }
    // A part that starts inside the buffer but does not fit: the last ACE's SID (Everyone)
    // as owner, one byte short.
    let mut b = set_offset(0, good.len() as u32 - 12);
    b.pop();
    check(&b, "Sid.SubAuthority", DecodeErrorKind::Truncated);
    // A part pointing at bytes that are not one.
    check(
        &set_offset(3, good.len() as u32 - 4),
        "Acl.AclRevision",
        DecodeErrorKind::InvalidValue,
    );
    // A DACL whose AclSize runs past the buffer.
    check(
        &good[..good.len() - 1],
        "Acl.AclSize",
        DecodeErrorKind::OutOfBounds,
    );
    // Parts may overlap each other (Windows does not forbid it): owner and group alike.
    let shared = set_offset(1, 0x14);
    let sd = SecurityDescriptor::decode(&shared).unwrap();
    assert_eq!(sd.group, sd.owner);
}

/// What smb2.acls GENERIC and INHERITFLAGS expect back after setting a DACL: generic rights
/// mapped in the ACEs that apply to the object, AUTO_INHERIT_REQ never stored, AUTO_INHERITED
/// only when set together with it, PROTECTED and the ACEs' INHERITED flag as sent.
#[test]
fn merged_dacl_as_windows_stores_it() {
    let before = stored(F1_NTACL);
    let owner = Sid::unix_user(9);
    let set = |control: SdControl, aces: Vec<Ace>| {
        let update = SecurityDescriptor {
            control: SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT | control,
            dacl: Some(Acl::new(aces)),
            ..SecurityDescriptor::default()
        };
        before.merged(&update, SecurityInformation::DACL)
    };
    let generic = set(
        SdControl::empty(),
        vec![
            Ace::allow(owner, AccessMask::GENERIC_READ, AceFlags::empty()),
            Ace::allow(
                Sid::CREATOR_OWNER,
                AccessMask::GENERIC_ALL,
                AceFlags::INHERIT_ONLY | AceFlags::OBJECT_INHERIT,
            ),
        ],
    );
    let masks: Vec<AccessMask> = generic
        .dacl
        .unwrap()
        .aces
        .iter()
        .map(|a| a.mask_and_sid().unwrap().0)
        .collect();
    assert_eq!(
        masks,
        [AccessMask::FILE_GENERIC_READ, AccessMask::GENERIC_ALL]
    );

    let dacl_bits = |control| set(control, vec![]).control & SdControl::DACL_BITS;
    let auto = SdControl::DACL_AUTO_INHERITED;
    let req = SdControl::DACL_COMPUTED_INHERITANCE_REQUIRED;
    let protected = SdControl::DACL_PROTECTED;
    let present = SdControl::DACL_PRESENT;
    assert_eq!(dacl_bits(auto), present);
    assert_eq!(dacl_bits(req), present);
    assert_eq!(dacl_bits(auto | req), present | auto);
    assert_eq!(
        dacl_bits(auto | req | protected),
        present | auto | protected
    );
    assert_eq!(dacl_bits(protected), present | protected);

    let inherited = set(
        SdControl::empty(),
        vec![Ace::allow(
            owner,
            AccessMask::FILE_WRITE_DATA,
            AceFlags::INHERITED,
        )],
    );
    assert_eq!(inherited.dacl.unwrap().aces[0].flags, AceFlags::INHERITED);
}
