//! Inheritance against what Samba 4.17 stored for files and directories created in captured
//! directories, and the MS-DTYP 2.5.3.4 rules it does not exercise.

mod common;

use common::hex;
use common::samba417::{D1_NTACL, D2_NTACL, F1_NTACL, F5_NTACL, SUB_NTACL};
use smb3d_dtyp::samba::NtAclXattr;
use smb3d_dtyp::{AccessMask, Ace, AceFlags, Acl, SdControl, SecurityDescriptor, Sid, inherit};

const BENCH: &str = "S-1-5-21-1652430933-2355499802-1092787070-1000";
const NONE_GROUP: &str = "S-1-5-21-1652430933-2355499802-1092787070-513";

fn stored(ntacl: &str) -> SecurityDescriptor {
    NtAclXattr::decode(&hex(ntacl)).unwrap().sd
}

fn owner_and_group() -> (Sid, Sid) {
    (BENCH.parse().unwrap(), NONE_GROUP.parse().unwrap())
}

/// `d2` has explicit ACEs for the owner and group, Everyone and Authenticated Users with
/// `OI|CI`, and CREATOR OWNER / CREATOR GROUP with `OI|CI|IO`.
#[test]
fn file_and_directory_in_d2_match_samba() {
    let (owner, group) = owner_and_group();
    let d2 = stored(D2_NTACL);
    assert_eq!(
        inherit(&d2, false, &owner, &group).unwrap().to_bytes(),
        stored(F5_NTACL).to_bytes()
    );
    assert_eq!(
        inherit(&d2, true, &owner, &group).unwrap().to_bytes(),
        stored(SUB_NTACL).to_bytes()
    );
}

/// `d1/f2.txt` got the same descriptor as `f1.txt` (byte for byte in `security.NTACL`).
#[test]
fn file_in_d1_matches_samba() {
    let (owner, group) = owner_and_group();
    assert_eq!(
        inherit(&stored(D1_NTACL), false, &owner, &group),
        Some(stored(F1_NTACL))
    );
}

fn parent(flags_and_sids: &[(AceFlags, Sid)], control: SdControl) -> SecurityDescriptor {
    let aces = flags_and_sids
        .iter()
        .map(|(f, s)| Ace::allow(*s, AccessMask::FILE_GENERIC_READ, *f))
        .collect();
    SecurityDescriptor {
        control: control | SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT,
        owner: Some(Sid::LOCAL_SYSTEM),
        group: Some(Sid::LOCAL_SYSTEM),
        sacl: None,
        dacl: Some(Acl::new(aces)),
    }
}

fn aces(sd: &SecurityDescriptor) -> Vec<(AceFlags, Sid)> {
    sd.dacl
        .as_ref()
        .unwrap()
        .aces
        .iter()
        .map(|a| (a.flags, *a.mask_and_sid().unwrap().1))
        .collect()
}

#[test]
fn flag_rules() {
    let (owner, group) = owner_and_group();
    let oi = AceFlags::OBJECT_INHERIT;
    let ci = AceFlags::CONTAINER_INHERIT;
    let np = AceFlags::NO_PROPAGATE_INHERIT;
    let io = AceFlags::INHERIT_ONLY;
    let users = Sid::BUILTIN_USERS;
    let admins = Sid::BUILTIN_ADMINISTRATORS;
    let p = parent(
        &[
            (AceFlags::empty(), Sid::LOCAL_SYSTEM),
            (oi, users),
            (ci, admins),
            (oi | np, Sid::ANONYMOUS),
            (ci | np | io, Sid::NETWORK),
            (oi | ci | io, Sid::EVERYONE),
        ],
        SdControl::empty(),
    );
    let file = inherit(&p, false, &owner, &group).unwrap();
    assert_eq!(
        aces(&file),
        [
            (AceFlags::empty(), users),
            (AceFlags::empty(), Sid::ANONYMOUS),
            (AceFlags::empty(), Sid::EVERYONE),
        ]
    );
    let dir = inherit(&p, true, &owner, &group).unwrap();
    assert_eq!(
        aces(&dir),
        [
            // Object-inherit only: kept for the files below, not in effect here.
            (oi | io, users),
            (ci, admins),
            // NO_PROPAGATE: in effect here, inherited no further.
            (AceFlags::empty(), Sid::NETWORK),
            (oi | ci, Sid::EVERYONE),
        ]
    );
    assert_eq!(
        file.control,
        SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT
    );
    assert_eq!((file.owner, file.group), (Some(owner), Some(group)));
    assert_eq!(dir.dacl.unwrap().revision.0, 2);
}

#[test]
fn creator_sids() {
    let (owner, group) = owner_and_group();
    let oi = AceFlags::OBJECT_INHERIT;
    let ci = AceFlags::CONTAINER_INHERIT;
    let io = AceFlags::INHERIT_ONLY;
    let np = AceFlags::NO_PROPAGATE_INHERIT;
    let p = parent(
        &[
            (oi | ci | io, Sid::CREATOR_OWNER),
            (oi | io, Sid::CREATOR_GROUP),
        ],
        SdControl::empty(),
    );
    assert_eq!(
        aces(&inherit(&p, false, &owner, &group).unwrap()),
        [(AceFlags::empty(), owner), (AceFlags::empty(), group)]
    );
    assert_eq!(
        aces(&inherit(&p, true, &owner, &group).unwrap()),
        [
            // The effective ACE for the owner, and CREATOR OWNER kept for further children.
            (AceFlags::empty(), owner),
            (oi | ci | io, Sid::CREATOR_OWNER),
            // Object-inherit only: stays CREATOR GROUP, inherit-only.
            (oi | io, Sid::CREATOR_GROUP),
        ]
    );
    let p = parent(&[(ci | np, Sid::CREATOR_OWNER)], SdControl::empty());
    assert_eq!(
        aces(&inherit(&p, true, &owner, &group).unwrap()),
        [(AceFlags::empty(), owner)]
    );
}

#[test]
fn auto_inherited_parents_mark_inherited_aces() {
    let (owner, group) = owner_and_group();
    let oi = AceFlags::OBJECT_INHERIT;
    let ci = AceFlags::CONTAINER_INHERIT;
    let io = AceFlags::INHERIT_ONLY;
    let inh = AceFlags::INHERITED;
    let p = parent(
        &[
            (oi | ci | inh, Sid::EVERYONE),
            (oi | ci | io, Sid::CREATOR_OWNER),
        ],
        SdControl::DACL_AUTO_INHERITED,
    );
    let file = inherit(&p, false, &owner, &group).unwrap();
    assert_eq!(
        file.control,
        SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT | SdControl::DACL_AUTO_INHERITED
    );
    assert_eq!(aces(&file), [(inh, Sid::EVERYONE), (inh, owner)]);
    let dir = inherit(&p, true, &owner, &group).unwrap();
    assert_eq!(
        aces(&dir),
        [
            (oi | ci | inh, Sid::EVERYONE),
            (inh, owner),
            (oi | ci | io | inh, Sid::CREATOR_OWNER),
        ]
    );
    // Without the parent's AUTO_INHERITED, an INHERITED flag in the parent is not passed on.
    let p = parent(&[(oi | ci | inh, Sid::EVERYONE)], SdControl::empty());
    assert_eq!(
        aces(&inherit(&p, true, &owner, &group).unwrap()),
        [(oi | ci, Sid::EVERYONE)]
    );
}

#[test]
fn nothing_to_inherit() {
    let (owner, group) = owner_and_group();
    let p = parent(&[(AceFlags::empty(), Sid::EVERYONE)], SdControl::empty());
    assert_eq!(inherit(&p, false, &owner, &group), None);
    assert_eq!(inherit(&p, true, &owner, &group), None);
    // Container-inherit only: nothing for files.
    let p = parent(
        &[(AceFlags::CONTAINER_INHERIT, Sid::EVERYONE)],
        SdControl::empty(),
    );
    assert_eq!(inherit(&p, false, &owner, &group), None);
    // Object-inherit with NO_PROPAGATE: nothing for directories.
    let p = parent(
        &[(
            AceFlags::OBJECT_INHERIT | AceFlags::NO_PROPAGATE_INHERIT,
            Sid::EVERYONE,
        )],
        SdControl::empty(),
    );
    assert_eq!(inherit(&p, true, &owner, &group), None);
    // No DACL, or a NULL one.
    let mut p = parent(&[], SdControl::empty());
    p.dacl = None;
    assert_eq!(inherit(&p, false, &owner, &group), None);
    p.control.remove(SdControl::DACL_PRESENT);
    assert_eq!(inherit(&p, false, &owner, &group), None);
}

#[test]
fn duplicates_dropped() {
    let (owner, group) = owner_and_group();
    let oi = AceFlags::OBJECT_INHERIT;
    // CREATOR OWNER becomes the owner, which already has the same ACE.
    let p = SecurityDescriptor {
        dacl: Some(Acl::new(vec![
            Ace::allow(owner, AccessMask::FILE_ALL_ACCESS, oi),
            Ace::allow(Sid::CREATOR_OWNER, AccessMask::FILE_ALL_ACCESS, oi),
        ])),
        ..parent(&[], SdControl::empty())
    };
    assert_eq!(
        aces(&inherit(&p, false, &owner, &group).unwrap()),
        [(AceFlags::empty(), owner)]
    );
}

#[test]
fn sacl_inherits_too() {
    let (owner, group) = owner_and_group();
    let audit = Ace::new(
        smb3d_dtyp::AceType::SYSTEM_AUDIT,
        AceFlags::OBJECT_INHERIT | AceFlags::FAILED_ACCESS,
        AccessMask::FILE_ALL_ACCESS,
        Sid::EVERYONE,
    );
    let mut p = parent(
        &[(AceFlags::OBJECT_INHERIT, Sid::EVERYONE)],
        SdControl::empty(),
    );
    p.sacl = Some(Acl::new(vec![audit]));
    p.control
        .insert(SdControl::SACL_PRESENT | SdControl::SACL_AUTO_INHERITED);
    let file = inherit(&p, false, &owner, &group).unwrap();
    assert!(
        file.control
            .contains(SdControl::SACL_PRESENT | SdControl::SACL_AUTO_INHERITED)
    );
    assert_eq!(
        file.sacl.unwrap().aces,
        [Ace::new(
            smb3d_dtyp::AceType::SYSTEM_AUDIT,
            AceFlags::INHERITED | AceFlags::FAILED_ACCESS,
            AccessMask::FILE_ALL_ACCESS,
            Sid::EVERYONE,
        )]
    );
    // A directory keeps it inheritable and still auditing failures.
    let dir = inherit(&p, true, &owner, &group).unwrap();
    assert_eq!(
        dir.sacl.unwrap().aces[0].flags,
        AceFlags::OBJECT_INHERIT
            | AceFlags::INHERIT_ONLY
            | AceFlags::INHERITED
            | AceFlags::FAILED_ACCESS
    );
}

/// MS-DTYP 2.5.3.4.7: generic rights in an inherited ACE that takes effect become file rights;
/// the INHERIT_ONLY copy a directory keeps for its own children stays generic.
#[test]
fn generic_rights_mapped_where_they_take_effect() {
    let (owner, group) = owner_and_group();
    let inherit_all = AceFlags::OBJECT_INHERIT | AceFlags::CONTAINER_INHERIT;
    let parent = SecurityDescriptor {
        control: SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT,
        owner: Some(owner),
        group: Some(group),
        sacl: None,
        dacl: Some(Acl::new(vec![
            Ace::allow(
                Sid::CREATOR_OWNER,
                AccessMask::GENERIC_ALL,
                inherit_all | AceFlags::INHERIT_ONLY,
            ),
            Ace::allow(
                Sid::EVERYONE,
                AccessMask::GENERIC_READ | AccessMask::GENERIC_EXECUTE,
                inherit_all,
            ),
        ])),
    };
    let masks = |sd: SecurityDescriptor| -> Vec<(AceFlags, AccessMask, Sid)> {
        sd.dacl
            .unwrap()
            .aces
            .iter()
            .map(|a| {
                let (mask, sid) = a.mask_and_sid().unwrap();
                (a.flags, mask, *sid)
            })
            .collect()
    };
    let read_execute = AccessMask::FILE_GENERIC_READ | AccessMask::FILE_GENERIC_EXECUTE;
    assert_eq!(
        masks(inherit(&parent, false, &owner, &group).unwrap()),
        [
            (AceFlags::empty(), AccessMask::FILE_ALL_ACCESS, owner),
            (AceFlags::empty(), read_execute, Sid::EVERYONE),
        ]
    );
    assert_eq!(
        masks(inherit(&parent, true, &owner, &group).unwrap()),
        [
            (AceFlags::empty(), AccessMask::FILE_ALL_ACCESS, owner),
            (
                inherit_all | AceFlags::INHERIT_ONLY,
                AccessMask::GENERIC_ALL,
                Sid::CREATOR_OWNER
            ),
            (inherit_all, read_execute, Sid::EVERYONE),
        ]
    );
}
