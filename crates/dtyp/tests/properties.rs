//! Property tests: encoders and decoders agree, decoders never panic and what they accept
//! re-encodes stably, and the access check agrees with the maximum-allowed computation.

use proptest::prelude::*;
use smb3d_dtyp::samba::{DosAttrib, NtAclHashes, NtAclXattr, PosixAcl};
use smb3d_dtyp::{
    AccessMask, Ace, AceBody, AceFlags, AceType, Acl, AclRevision, Privileges, SdControl,
    SecurityDescriptor, SecurityInformation, Sid, Token, access_check, inherit, maximum_allowed,
};
use smb3d_wire::FileTime;

fn sid() -> impl Strategy<Value = Sid> {
    (
        0u64..(1 << 48),
        proptest::collection::vec(any::<u32>(), 0..=15),
    )
        .prop_map(|(a, subs)| Sid::new(a, &subs).unwrap())
}

/// A small set of SIDs, so that ACEs and tokens meet.
fn common_sid() -> impl Strategy<Value = Sid> {
    prop_oneof![
        Just(Sid::EVERYONE),
        Just(Sid::CREATOR_OWNER),
        Just(Sid::CREATOR_GROUP),
        Just(Sid::OWNER_RIGHTS),
        (0u32..4).prop_map(Sid::unix_user),
        (0u32..4).prop_map(Sid::unix_group),
    ]
}

fn ace(sids: BoxedStrategy<Sid>) -> impl Strategy<Value = Ace> {
    let basic = (
        prop_oneof![Just(0u8), Just(1), Just(2), Just(0x11)],
        any::<u8>(),
        any::<u32>(),
        sids,
    )
        .prop_map(|(t, f, m, s)| Ace::new(AceType(t), AceFlags(f), AccessMask(m), s));
    let raw = (
        prop_oneof![Just(5u8), Just(6), Just(9), Just(0x12), Just(0x7f)],
        any::<u8>(),
        proptest::collection::vec(any::<[u8; 4]>(), 1..6),
    )
        .prop_map(|(t, f, words)| Ace {
            ace_type: AceType(t),
            flags: AceFlags(f),
            body: AceBody::Raw(words.concat()),
        });
    prop_oneof![4 => basic, 1 => raw]
}

fn acl(sids: BoxedStrategy<Sid>) -> impl Strategy<Value = Acl> {
    (2u8..=4, proptest::collection::vec(ace(sids), 0..8)).prop_map(|(r, aces)| Acl {
        revision: AclRevision(r),
        aces,
    })
}

fn sd(sids: BoxedStrategy<Sid>) -> impl Strategy<Value = SecurityDescriptor> {
    (
        any::<u16>(),
        proptest::option::of(sids.clone()),
        proptest::option::of(sids.clone()),
        proptest::option::of(acl(sids.clone())),
        proptest::option::of(acl(sids)),
    )
        .prop_map(|(control, owner, group, sacl, dacl)| SecurityDescriptor {
            control: SdControl(control),
            owner,
            group,
            sacl,
            dacl,
        })
}

fn token() -> impl Strategy<Value = Token> {
    (
        common_sid(),
        proptest::collection::vec(common_sid(), 0..4),
        0u32..4,
    )
        .prop_map(|(user, groups, p)| Token {
            user,
            groups,
            privileges: Privileges(p),
        })
}

proptest! {
    #[test]
    fn sid_string_round_trip(s in sid()) {
        prop_assert_eq!(s.to_string().parse::<Sid>().unwrap(), s);
    }

    #[test]
    fn descriptor_round_trip(sd in sd(sid().boxed())) {
        let bytes = sd.to_bytes();
        prop_assert_eq!(bytes.len(), sd.encoded_len());
        prop_assert_eq!(SecurityDescriptor::decode(&bytes).unwrap(), sd);
    }

    #[test]
    fn ntacl_round_trip(
        sd in sd(sid().boxed()),
        version in 1u8..=4,
        hash in any::<[u8; 32]>(),
        hash_type in any::<u16>(),
        description in "[a-z_]{0,20}",
        time in any::<u64>(),
    ) {
        let mut wide = [0u8; 64];
        wide[..32].copy_from_slice(&hash);
        let hashes = match version {
            1 => NtAclHashes::V1,
            2 => NtAclHashes::V2 { hash: wide[..16].try_into().unwrap() },
            3 => NtAclHashes::V3 { hash_type, hash: wide },
            _ => NtAclHashes::V4 {
                hash_type,
                hash: wide,
                description,
                time: FileTime(time),
                sys_acl_hash: wide,
            },
        };
        let x = NtAclXattr { sd, hashes };
        prop_assert_eq!(NtAclXattr::decode(&x.to_bytes()).unwrap(), x);
    }

    #[test]
    fn dosattrib_round_trip(attributes in any::<u32>(), time in proptest::option::of(1u64..)) {
        let d = DosAttrib { attributes, create_time: time.map(FileTime) };
        prop_assert_eq!(DosAttrib::decode(&d.to_xattr()).unwrap(), d);
    }

    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(sd) = SecurityDescriptor::decode(&bytes) {
            let once = sd.to_bytes();
            let again = SecurityDescriptor::decode(&once).unwrap();
            prop_assert_eq!(again.to_bytes(), once);
            let _ = sd.filtered(SecurityInformation(u32::from(bytes.first().copied().unwrap_or(0))));
        }
        if let Ok(acl) = Acl::decode(&bytes) {
            prop_assert!(acl.encoded_len() <= bytes.len());
        }
        if let Ok(x) = NtAclXattr::decode(&bytes) {
            prop_assert_eq!(NtAclXattr::decode(&x.to_bytes()).unwrap(), x);
        }
        if let Ok(d) = DosAttrib::decode(&bytes) {
            prop_assert_eq!(DosAttrib::decode(&d.to_xattr()).unwrap(), d);
        }
        if let Ok(p) = PosixAcl::decode_xattr(&bytes) {
            prop_assert_eq!(PosixAcl::decode_xattr(&p.to_xattr()).unwrap(), p);
        }
    }

    /// A request succeeds exactly when it asks for no more than the maximum allowed.
    #[test]
    fn access_check_agrees_with_maximum_allowed(
        sd in sd(common_sid().boxed()),
        token in token(),
        desired in any::<u32>(),
    ) {
        let desired = AccessMask(desired & 0xF31F_01FF);
        let max = maximum_allowed(&sd, &token);
        match access_check(&sd, &token, desired) {
            Ok(granted) => {
                prop_assert!(max.contains(granted.without(AccessMask::MAXIMUM_ALLOWED)));
            }
            Err(denied) => {
                prop_assert!(!denied.missing.is_empty());
                prop_assert!(!max.contains(desired.map_generic().without(AccessMask::MAXIMUM_ALLOWED)));
            }
        }
    }

    #[test]
    fn inherited_aces_follow_the_rules(
        parent in sd(common_sid().boxed()),
        is_directory in any::<bool>(),
    ) {
        let owner = Sid::unix_user(1);
        let group = Sid::unix_group(1);
        if let Some(child) = inherit(&parent, is_directory, &owner, &group) {
            prop_assert_eq!(child.owner, Some(owner));
            let dacl = child.dacl.unwrap();
            prop_assert!(!dacl.aces.is_empty());
            for ace in &dacl.aces {
                let inheritance = AceFlags::OBJECT_INHERIT
                    | AceFlags::CONTAINER_INHERIT
                    | AceFlags::NO_PROPAGATE_INHERIT
                    | AceFlags::INHERIT_ONLY;
                if !is_directory {
                    prop_assert!(!ace.flags.intersects(inheritance));
                }
                // CREATOR SIDs only survive as inherit-only ACEs.
                if let Some((_, sid)) = ace.mask_and_sid()
                    && (*sid == Sid::CREATOR_OWNER || *sid == Sid::CREATOR_GROUP)
                {
                    prop_assert!(ace.flags.contains(AceFlags::INHERIT_ONLY));
                }
            }
        }
    }
}
