//! Access checks (MS-DTYP 2.5.3.2) over descriptors Samba 4.17 stored and built ones.

mod common;

use common::hex;
use common::samba417::{D2_NTACL, F8_NTACL};
use smb3d_dtyp::samba::NtAclXattr;
use smb3d_dtyp::{
    AccessDenied, AccessMask, Ace, AceFlags, Acl, Privileges, SdControl, SecurityDescriptor, Sid,
    Token, access_check, maximum_allowed,
};

const BENCH: &str = "S-1-5-21-1652430933-2355499802-1092787070-1000";
const NONE_GROUP: &str = "S-1-5-21-1652430933-2355499802-1092787070-513";

fn stored(ntacl: &str) -> SecurityDescriptor {
    NtAclXattr::decode(&hex(ntacl)).unwrap().sd
}

fn token(user: Sid, groups: &[Sid]) -> Token {
    let mut all = vec![Sid::EVERYONE, Sid::AUTHENTICATED_USERS];
    all.extend_from_slice(groups);
    Token {
        user,
        groups: all,
        privileges: Privileges::empty(),
    }
}

fn bench() -> Token {
    token(
        BENCH.parse().unwrap(),
        &[NONE_GROUP.parse().unwrap(), Sid::unix_group(1001)],
    )
}

fn other() -> Token {
    token(Sid::unix_user(2000), &[Sid::unix_group(2000)])
}

const READ: AccessMask = AccessMask::FILE_GENERIC_READ;

/// `f8.txt`: Everyone denied FILE_APPEND_DATA, then group 1001 read, then the owner full.
#[test]
fn deny_before_allow() {
    let sd = stored(F8_NTACL);
    let owner = bench();
    assert_eq!(access_check(&sd, &owner, READ), Ok(READ));
    assert_eq!(
        access_check(&sd, &owner, AccessMask::FILE_APPEND_DATA),
        Err(AccessDenied {
            missing: AccessMask::FILE_APPEND_DATA
        })
    );
    // GENERIC_WRITE includes FILE_APPEND_DATA.
    assert_eq!(
        access_check(&sd, &owner, AccessMask::GENERIC_WRITE),
        Err(AccessDenied {
            missing: AccessMask::FILE_APPEND_DATA
        })
    );
    assert_eq!(
        maximum_allowed(&sd, &owner),
        AccessMask::FILE_ALL_ACCESS.without(AccessMask::FILE_APPEND_DATA)
    );
    assert_eq!(
        access_check(
            &sd,
            &owner,
            AccessMask::MAXIMUM_ALLOWED | AccessMask::DELETE
        ),
        Ok(AccessMask::FILE_ALL_ACCESS.without(AccessMask::FILE_APPEND_DATA))
    );
    assert_eq!(
        access_check(
            &sd,
            &owner,
            AccessMask::MAXIMUM_ALLOWED | AccessMask::FILE_APPEND_DATA
        ),
        Err(AccessDenied {
            missing: AccessMask::FILE_APPEND_DATA
        })
    );
    // Someone named by no allow ACE gets nothing.
    assert_eq!(maximum_allowed(&sd, &other()), AccessMask::empty());
    assert_eq!(
        access_check(&sd, &other(), AccessMask::FILE_READ_DATA),
        Err(AccessDenied {
            missing: AccessMask::FILE_READ_DATA
        })
    );
    // Group 1001 without being the owner: read only.
    let member = token(Sid::unix_user(3000), &[Sid::unix_group(1001)]);
    assert_eq!(maximum_allowed(&sd, &member), AccessMask(0x1200a9));
}

/// `d2`: inherit-only ACEs (CREATOR OWNER, CREATOR GROUP) do not count for the directory.
#[test]
fn inherit_only_aces_skipped() {
    let sd = stored(D2_NTACL);
    let creator = token(Sid::unix_user(3000), &[Sid::CREATOR_OWNER]);
    // Everyone read and Authenticated Users change; not CREATOR OWNER's full control.
    assert_eq!(maximum_allowed(&sd, &creator), AccessMask(0x1301ff));
    assert!(access_check(&sd, &creator, AccessMask::WRITE_DAC).is_err());
}

#[test]
fn allow_before_deny_wins() {
    let user = Sid::unix_user(5);
    let sd = SecurityDescriptor::new(
        Sid::LOCAL_SYSTEM,
        Sid::LOCAL_SYSTEM,
        Acl::new(vec![
            Ace::allow(user, AccessMask::FILE_READ_DATA, AceFlags::empty()),
            Ace::deny(
                Sid::EVERYONE,
                AccessMask::FILE_READ_DATA | AccessMask::FILE_WRITE_DATA,
                AceFlags::empty(),
            ),
            Ace::allow(user, AccessMask::FILE_WRITE_DATA, AceFlags::empty()),
        ]),
    );
    let t = token(user, &[]);
    assert_eq!(
        access_check(&sd, &t, AccessMask::FILE_READ_DATA),
        Ok(AccessMask::FILE_READ_DATA)
    );
    assert_eq!(
        access_check(
            &sd,
            &t,
            AccessMask::FILE_READ_DATA | AccessMask::FILE_WRITE_DATA
        ),
        Err(AccessDenied {
            missing: AccessMask::FILE_WRITE_DATA
        })
    );
    assert_eq!(maximum_allowed(&sd, &t), AccessMask::FILE_READ_DATA);
}

#[test]
fn generic_rights_in_aces_are_mapped() {
    let user = Sid::unix_user(5);
    let sd = SecurityDescriptor::new(
        user,
        user,
        Acl::new(vec![Ace::allow(
            Sid::EVERYONE,
            AccessMask::GENERIC_READ | AccessMask::GENERIC_EXECUTE,
            AceFlags::empty(),
        )]),
    );
    let t = token(Sid::unix_user(6), &[]);
    assert_eq!(
        maximum_allowed(&sd, &t),
        AccessMask::FILE_GENERIC_READ | AccessMask::FILE_GENERIC_EXECUTE
    );
    assert_eq!(
        access_check(&sd, &t, AccessMask::GENERIC_READ),
        Ok(AccessMask::FILE_GENERIC_READ)
    );
}

#[test]
fn no_null_and_empty_dacl() {
    let owner = Sid::unix_user(5);
    let mut sd = SecurityDescriptor::new(owner, owner, Acl::new(vec![]));
    let stranger = token(Sid::unix_user(6), &[]);
    let owner_token = token(owner, &[]);
    // Empty DACL: nothing, except what the owner always has.
    assert_eq!(maximum_allowed(&sd, &stranger), AccessMask::empty());
    assert_eq!(
        maximum_allowed(&sd, &owner_token),
        AccessMask::READ_CONTROL | AccessMask::WRITE_DAC
    );
    assert_eq!(
        access_check(&sd, &owner_token, AccessMask::WRITE_DAC),
        Ok(AccessMask::WRITE_DAC)
    );
    assert!(access_check(&sd, &owner_token, AccessMask::FILE_READ_DATA).is_err());
    // NULL DACL and no DACL: everything.
    sd.dacl = None;
    assert_eq!(maximum_allowed(&sd, &stranger), AccessMask::FILE_ALL_ACCESS);
    assert_eq!(
        access_check(&sd, &stranger, AccessMask::GENERIC_ALL),
        Ok(AccessMask::FILE_ALL_ACCESS)
    );
    sd.control.remove(SdControl::DACL_PRESENT);
    assert_eq!(
        access_check(&sd, &stranger, AccessMask::MAXIMUM_ALLOWED),
        Ok(AccessMask::FILE_ALL_ACCESS)
    );
}

#[test]
fn owner_rights_replace_implicit_rights() {
    let owner = Sid::unix_user(5);
    let sd = SecurityDescriptor::new(
        owner,
        owner,
        Acl::new(vec![Ace::allow(
            Sid::OWNER_RIGHTS,
            AccessMask::READ_CONTROL,
            AceFlags::empty(),
        )]),
    );
    let t = token(owner, &[Sid::OWNER_RIGHTS]);
    assert_eq!(maximum_allowed(&sd, &t), AccessMask::READ_CONTROL);
    assert!(access_check(&sd, &t, AccessMask::WRITE_DAC).is_err());
}

#[test]
fn owner_implicit_rights_survive_deny() {
    let owner = Sid::unix_user(5);
    let sd = SecurityDescriptor::new(
        owner,
        owner,
        Acl::new(vec![Ace::deny(
            owner,
            AccessMask::WRITE_DAC | AccessMask::FILE_READ_DATA,
            AceFlags::empty(),
        )]),
    );
    let t = token(owner, &[]);
    assert_eq!(
        access_check(&sd, &t, AccessMask::WRITE_DAC),
        Ok(AccessMask::WRITE_DAC)
    );
    assert!(access_check(&sd, &t, AccessMask::FILE_READ_DATA).is_err());
}

#[test]
fn privileges() {
    let sd = stored(F8_NTACL);
    let mut t = other();
    assert_eq!(
        access_check(&sd, &t, AccessMask::ACCESS_SYSTEM_SECURITY),
        Err(AccessDenied {
            missing: AccessMask::ACCESS_SYSTEM_SECURITY
        })
    );
    // Even a NULL DACL does not give ACCESS_SYSTEM_SECURITY.
    let mut open = sd.clone();
    open.dacl = None;
    assert!(access_check(&open, &t, AccessMask::ACCESS_SYSTEM_SECURITY).is_err());
    assert!(access_check(&sd, &t, AccessMask::WRITE_OWNER).is_err());
    // Nor does an ACE that names it.
    let granting = SecurityDescriptor::new(
        Sid::LOCAL_SYSTEM,
        Sid::LOCAL_SYSTEM,
        Acl::new(vec![Ace::allow(
            Sid::EVERYONE,
            AccessMask::ACCESS_SYSTEM_SECURITY | AccessMask::GENERIC_ALL,
            AceFlags::empty(),
        )]),
    );
    assert_eq!(maximum_allowed(&granting, &t), AccessMask::FILE_ALL_ACCESS);
    assert!(access_check(&granting, &t, AccessMask::ACCESS_SYSTEM_SECURITY).is_err());

    t.privileges = Privileges::SECURITY | Privileges::TAKE_OWNERSHIP;
    assert_eq!(
        access_check(
            &sd,
            &t,
            AccessMask::ACCESS_SYSTEM_SECURITY | AccessMask::WRITE_OWNER
        ),
        Ok(AccessMask::ACCESS_SYSTEM_SECURITY | AccessMask::WRITE_OWNER)
    );
    assert_eq!(
        maximum_allowed(&sd, &t),
        AccessMask::ACCESS_SYSTEM_SECURITY | AccessMask::WRITE_OWNER
    );
    assert_eq!(
        maximum_allowed(&open, &t),
        AccessMask::FILE_ALL_ACCESS | AccessMask::ACCESS_SYSTEM_SECURITY
    );
}

#[test]
fn raw_aces_ignored() {
    let user = Sid::unix_user(5);
    let mut acl = Acl::decode(&hex(
        "0400200001000000060018001f01120000000000010100000000000100000000",
    ))
    .unwrap();
    acl.aces.push(Ace::allow(
        user,
        AccessMask::FILE_READ_DATA,
        AceFlags::empty(),
    ));
    let sd = SecurityDescriptor::new(Sid::LOCAL_SYSTEM, Sid::LOCAL_SYSTEM, acl);
    // The ACCESS_DENIED_OBJECT ACE for Everyone is not evaluated, as in Samba.
    assert_eq!(
        access_check(&sd, &token(user, &[]), AccessMask::FILE_READ_DATA),
        Ok(AccessMask::FILE_READ_DATA)
    );
}

/// The DACLs of smbtorture's smb2.acls OWNER-RIGHTS tests and what Windows computes for the
/// owner: an OWNER RIGHTS ACE applies to the owner (whose token does not hold S-1-3-4), adds
/// to the owner's own ACEs, and takes away the implicit READ_CONTROL and WRITE_DAC.
#[test]
fn owner_rights_ace_applies_to_the_owner() {
    let owner = Sid::unix_user(5);
    let t = token(owner, &[]);
    let sd = |aces| SecurityDescriptor::new(owner, owner, Acl::new(aces));
    let write = AccessMask::FILE_WRITE_DATA;
    let read_data = AccessMask::FILE_READ_DATA;

    let additive = sd(vec![
        Ace::allow(owner, READ, AceFlags::empty()),
        Ace::allow(Sid::OWNER_RIGHTS, write, AceFlags::empty()),
    ]);
    assert_eq!(maximum_allowed(&additive, &t), READ | write);
    assert!(access_check(&additive, &t, AccessMask::WRITE_DAC).is_err());
    assert_eq!(maximum_allowed(&additive, &other()), AccessMask::empty());

    let leading_deny = sd(vec![
        Ace::deny(Sid::OWNER_RIGHTS, read_data, AceFlags::empty()),
        Ace::allow(owner, READ, AceFlags::empty()),
    ]);
    assert_eq!(maximum_allowed(&leading_deny, &t), READ.without(read_data));

    let trailing_deny = sd(vec![
        Ace::allow(owner, READ, AceFlags::empty()),
        Ace::allow(Sid::OWNER_RIGHTS, write, AceFlags::empty()),
        Ace::deny(Sid::OWNER_RIGHTS, write | read_data, AceFlags::empty()),
    ]);
    assert_eq!(maximum_allowed(&trailing_deny, &t), READ | write);
}

/// smb2.acls DENY1: a deny after an allow of the same right takes nothing away, and the
/// owner keeps WRITE_DAC.
#[test]
fn trailing_deny_keeps_granted_rights() {
    let owner = Sid::unix_user(5);
    let sd = SecurityDescriptor::new(
        owner,
        owner,
        Acl::new(vec![
            Ace::allow(owner, READ | AccessMask::FILE_WRITE_DATA, AceFlags::empty()),
            Ace::deny(owner, AccessMask::FILE_WRITE_DATA, AceFlags::empty()),
        ]),
    );
    assert_eq!(
        maximum_allowed(&sd, &token(owner, &[])),
        READ | AccessMask::FILE_WRITE_DATA | AccessMask::WRITE_DAC
    );
}
