//! Samba's `user.DOSATTRIB` and `security.NTACL` formats against blobs Samba 4.17 wrote on
//! disk and blobs its own NDR marshalling (python3-samba 4.17.12, `samba.ndr.ndr_pack`)
//! produced for the older versions.

mod common;

use common::hex;
use common::samba417::*;
use common::wire::WIRE_F3_FROM_POSIX;
use smb3d_dtyp::samba::{
    DosAttrib, NtAclHashes, NtAclXattr, PosixAce, PosixAcl, PosixAclState, PosixAclTag, nt_acl_hash,
};
use smb3d_dtyp::{AccessMask, AceFlags, SdControl, SecurityDescriptor, Sid};
use smb3d_wire::{DecodeErrorKind, FileTime};

const BENCH: &str = "S-1-5-21-1652430933-2355499802-1092787070-1000";
const NONE_GROUP: &str = "S-1-5-21-1652430933-2355499802-1092787070-513";

fn sid(s: &str) -> Sid {
    s.parse().unwrap()
}

fn hash_field(hex32: &str) -> [u8; 64] {
    let mut out = [0u8; 64];
    out[..32].copy_from_slice(&hex(hex32));
    out
}

// ---------------------------------------------------------------- user.DOSATTRIB

#[test]
fn dosattrib_v5_written_by_samba() {
    let blob = hex(F1_DOSATTRIB);
    let d = DosAttrib::decode(&blob).unwrap();
    // READONLY | HIDDEN | ARCHIVE after `setmode +h` and `setmode +r`.
    assert_eq!(d.attributes, 0x23);
    assert_eq!(d.create_time, Some(FileTime(0x01dd_7a27_c7a7_97af)));
    assert_eq!(d.to_xattr().as_slice(), blob.as_slice());

    let blob = hex(D1_DOSATTRIB);
    let d = DosAttrib::decode(&blob).unwrap();
    assert_eq!(d.attributes, 0x10);
    assert_eq!(d.to_xattr().as_slice(), blob.as_slice());
}

/// `xattr_DOSATTRIB` versions 1 to 5 from `ndr_pack` (versions 1 to 3 carry the attributes as
/// hex text too; Samba reads the binary field).
#[test]
fn dosattrib_every_version() {
    let created = Some(FileTime(132_000_000_000_000_000));
    let cases = [
        (
            "30783231000001000100000021000000000000000600000000000000001000000000000000005af64cf5d401\
             01005af64cf5d401",
            0x21,
            created,
        ),
        // Version 2: Samba cannot tell whether its create time is valid and ignores it.
        (
            "30783200020002000000000002000000000000000600000000000000001000000000000000005af64cf5d401\
             01000000000000000200000000000000662e74787400",
            0x02,
            None,
        ),
        (
            "307832300000030003000000110000002000000000000000000000000000000000000000000000000000\
             5af64cf5d4010000000000000000",
            0x20,
            created,
        ),
        (
            "0000040004000000510000001000000002005af64cf5d40100005af64cf5d401",
            0x10,
            created,
        ),
        (
            "0000050005000000110000002300000000005af64cf5d401",
            0x23,
            created,
        ),
    ];
    for (blob, attributes, create_time) in cases {
        assert_eq!(
            DosAttrib::decode(&hex(blob)).unwrap(),
            DosAttrib {
                attributes,
                create_time
            },
            "{blob}"
        );
    }
    let v5 = DosAttrib {
        attributes: 0x23,
        create_time: created,
    };
    assert_eq!(v5.to_xattr().as_slice(), hex(cases[4].0).as_slice());
}

#[test]
fn dosattrib_text_forms() {
    // Samba 3.0 wrote the hex text alone, without NUL; the parse is sscanf("%x")'s.
    for (blob, attributes) in [
        (&b"0x20"[..], 0x20),
        (b"0x20\0", 0x20),
        (b"0X1", 0x1),
        (b"21", 0x21),
        (b" 0x10", 0x10),
        (b"0x22junk", 0x22),
        (b"0xffffffff", 0xffff_ffff),
    ] {
        assert_eq!(
            DosAttrib::decode(blob).unwrap(),
            DosAttrib {
                attributes,
                create_time: None
            },
            "{blob:?}"
        );
    }
    for bad in [&b""[..], b"\0", b"0x", b"zz", b"0x1ffffffff", b"0x\0"] {
        let e = DosAttrib::decode(bad).unwrap_err();
        assert_eq!(
            (e.field, e.kind),
            ("DosAttrib.AttribHex", DecodeErrorKind::InvalidValue),
            "{bad:?}"
        );
    }
}

#[test]
fn dosattrib_create_time_needs_valid_flag_and_value() {
    let mut blob = hex(F1_DOSATTRIB);
    blob[8] = 0x01;
    assert_eq!(DosAttrib::decode(&blob).unwrap().create_time, None);
    let mut blob = hex(F1_DOSATTRIB);
    blob[16..24].fill(0);
    assert_eq!(DosAttrib::decode(&blob).unwrap().create_time, None);
    let no_time = DosAttrib {
        attributes: 0x20,
        create_time: None,
    };
    assert_eq!(
        no_time.to_xattr().as_slice(),
        hex("00000500050000000100000020000000 0000000000000000").as_slice()
    );
    assert_eq!(DosAttrib::decode(&no_time.to_xattr()).unwrap(), no_time);
}

#[test]
fn dosattrib_rejects() {
    let v5 = hex(F1_DOSATTRIB);
    let check = |blob: &[u8], field: &str, kind: DecodeErrorKind| {
        let e = DosAttrib::decode(blob).unwrap_err();
        assert_eq!((e.field, e.kind), (field, kind), "{blob:02x?}");
    };
    for cut in [3, 5, 9, 13, 17, 23] {
        assert!(DosAttrib::decode(&v5[..cut]).is_err(), "cut at {cut}");
    }
    check(&v5[..23], "DosInfo.CreateTime", DecodeErrorKind::Truncated);
    check(&v5[..3], "DosAttrib.Version", DecodeErrorKind::Truncated);
    let mut b = v5.clone();
    b[4] = 4;
    check(&b, "DosAttrib.Level", DecodeErrorKind::InvalidValue);
    for version in [0u8, 6, 0xff] {
        let mut b = v5.clone();
        b[2] = version;
        b[3] = version;
        b[4] = version;
        b[5] = version;
        check(&b, "DosAttrib.Version", DecodeErrorKind::InvalidValue);
    }
    // Version 2 whose name has no terminator.
    let mut v2 = hex(
        "30783200020002000000000002000000000000000600000000000000001000000000000000005af64cf5d401\
         01000000000000000200000000000000662e74787400",
    );
    v2.pop();
    check(&v2, "DosInfo2.Name", DecodeErrorKind::Truncated);
}

// ---------------------------------------------------------------- security.NTACL

#[test]
fn ntacl_v4_written_by_samba() {
    let blob = hex(F1_NTACL);
    let x = NtAclXattr::decode(&blob).unwrap();
    let NtAclHashes::V4 {
        hash_type,
        hash,
        description,
        time,
        sys_acl_hash,
    } = &x.hashes
    else {
        panic!("not version 4: {:?}", x.hashes);
    };
    assert_eq!(*hash_type, 1);
    assert_eq!(
        *hash,
        hash_field("f43ba535c8de628891b3cde81c0fb2aef8432b17c49fc63172dfd03804ba0a9f")
    );
    assert_eq!(description, "posix_acl");
    assert_eq!(*time, FileTime(0x01dd_7a27_c7a7_dc38));
    assert_eq!(
        *sys_acl_hash,
        hash_field("b97d1cf7c759bfea8efdca1ff760f411a2249f571fdc9509f23724b25a631392")
    );
    assert_eq!(
        x.sd.control,
        SdControl::SELF_RELATIVE | SdControl::DACL_PRESENT
    );
    assert_eq!(x.sd.owner, Some(sid(BENCH)));
    assert_eq!(x.sd.group, Some(sid(NONE_GROUP)));
    assert_eq!(x.sd.sacl, None);
    let dacl = x.sd.dacl.as_ref().unwrap();
    let aces: Vec<_> = dacl
        .aces
        .iter()
        .map(|a| {
            let (mask, sid) = a.mask_and_sid().unwrap();
            (a.flags, mask, sid.to_string())
        })
        .collect();
    assert_eq!(
        aces,
        [
            (
                AceFlags::empty(),
                AccessMask::FILE_ALL_ACCESS,
                BENCH.to_owned()
            ),
            (
                AceFlags::empty(),
                AccessMask(0x1200a9),
                NONE_GROUP.to_owned()
            ),
            (
                AceFlags::empty(),
                AccessMask(0x1200a9),
                "S-1-1-0".to_owned()
            ),
        ]
    );
    assert_eq!(x.to_bytes(), blob);

    // The same blob from the constructor for what Samba writes.
    let NtAclHashes::V4 {
        hash,
        time,
        sys_acl_hash,
        ..
    } = x.hashes.clone()
    else {
        unreachable!()
    };
    assert_eq!(
        NtAclXattr::posix_v4(x.sd.clone(), hash, sys_acl_hash, time).to_bytes(),
        blob
    );
}

#[test]
fn ntacl_v4_round_trips() {
    for blob in [D1_NTACL, D2_NTACL, D3_NTACL, F5_NTACL, F8_NTACL, SUB_NTACL] {
        let bytes = hex(blob);
        let x = NtAclXattr::decode(&bytes).unwrap();
        assert!(matches!(x.hashes, NtAclHashes::V4 { .. }));
        assert_eq!(x.to_bytes(), bytes);
    }
    // smbcacls --set sent a revision-3 DACL and Samba stored it as is.
    let f8 = NtAclXattr::decode(&hex(F8_NTACL)).unwrap();
    assert_eq!(f8.sd.dacl.unwrap().revision.0, 3);
}

/// The self-relative form of the descriptor the python vectors hold (SDDL
/// `O:<bench>G:<513>D:(D;;0x2;;;BU)(A;;0x1f01ff;;;WD)`), from `ndr_pack`.
const PY_SD: &str = "010004801400000030000000000000004c00000001050000000000051500000055187e621a13668c7e9b2241\
    e803000001050000000000051500000055187e621a13668c7e9b224101020000040034000200000001001800\
    020000000102000000000005200000002102000000001400ff011f00010100000000000100000000";

#[test]
fn ntacl_older_versions() {
    let sd = SecurityDescriptor::decode(&hex(PY_SD)).unwrap();
    assert_eq!(sd.to_bytes(), hex(PY_SD));
    let v1 = "0100010000000200010004801c00000038000000000000005400000001050000000000051500000055187e62\
        1a13668c7e9b2241e803000001050000000000051500000055187e621a13668c7e9b22410102000004003400\
        0200000001001800020000000102000000000005200000002102000000001400ff011f000101000000000001\
        00000000";
    let v2 = "020002000000020004000200000102030405060708090a0b0c0d0e0f01000480300000004c00000000000000\
        6800000001050000000000051500000055187e621a13668c7e9b2241e8030000010500000000000515000000\
        55187e621a13668c7e9b22410102000004003400020000000100180002000000010200000000000520000000\
        2102000000001400ff011f00010100000000000100000000";
    let v3 = "0300030000000200040002000100aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\
        aaaa000000000000000000000000000000000000000000000000000000000000000000000100048064000000\
        80000000000000009c00000001050000000000051500000055187e621a13668c7e9b2241e803000001050000\
        000000051500000055187e621a13668c7e9b2241010200000400340002000000010018000200000001020000\
        00000005200000002102000000001400ff011f00010100000000000100000000";
    let mut v3_hash = [0u8; 64];
    v3_hash[..32].fill(0xaa);
    let expected = [
        (v1, NtAclHashes::V1),
        (
            v2,
            NtAclHashes::V2 {
                hash: core::array::from_fn(|i| i as u8),
            },
        ),
        (
            v3,
            NtAclHashes::V3 {
                hash_type: 1,
                hash: v3_hash,
            },
        ),
    ];
    for (blob, hashes) in expected {
        let bytes = hex(blob);
        let x = NtAclXattr::decode(&bytes).unwrap();
        assert_eq!(x.hashes, hashes);
        assert_eq!(x.sd, sd);
        assert_eq!(x.to_bytes(), bytes);
    }
}

/// The hash Samba checks first: SHA-256 of the NDR `smb_acl_wrapper` of the file's POSIX ACLs
/// and `stat`.
#[test]
fn sys_acl_hash_matches_samba() {
    let cases = [
        (F1_NTACL, F1_POSIX_ACCESS, None, 0o100775),
        (D1_NTACL, D1_POSIX_ACCESS, Some(D1_POSIX_DEFAULT), 0o40775),
        // No default ACL on the directory: hashed as an empty one, not as a missing one.
        (D3_NTACL, D3_POSIX_ACCESS, Some(""), 0o40775),
        (F8_NTACL, F8_POSIX_ACCESS, None, 0o100570),
        (D2_NTACL, D2_POSIX_ACCESS, Some(D2_POSIX_DEFAULT), 0o40775),
        (F5_NTACL, F5_POSIX_ACCESS, None, 0o100775),
    ];
    for (ntacl, access, default, mode) in cases {
        let x = NtAclXattr::decode(&hex(ntacl)).unwrap();
        let NtAclHashes::V4 { sys_acl_hash, .. } = x.hashes else {
            unreachable!()
        };
        let access = PosixAcl::decode_xattr(&hex(access)).unwrap();
        let default = default.map(|d| {
            if d.is_empty() {
                PosixAcl::default()
            } else {
                PosixAcl::decode_xattr(&hex(d)).unwrap()
            }
        });
        let state = PosixAclState {
            access: Some(&access),
            default: default.as_ref(),
            uid: 1001,
            gid: 1001,
            mode,
        };
        assert_eq!(state.hash(), sys_acl_hash, "{ntacl}");
        assert!(x.matches_file(Some(&state.hash()), None));
    }
}

#[test]
fn sys_acl_blob_layout() {
    let access = PosixAcl::decode_xattr(&hex(F1_POSIX_ACCESS)).unwrap();
    let state = PosixAclState {
        access: Some(&access),
        default: None,
        uid: 1001,
        gid: 1001,
        mode: 0o100775,
    };
    assert_eq!(
        state.ndr_blob(),
        hex(
            "0000020000000000e903000000000000e903000000000000fd810000060000000600000000000000\
             02000200070000000100010000000000e9030000000000000700000000000000040004000500000003000300\
             00000000e903000000000000050000000000000006000600070000000500050005000000"
        )
    );
    let none = PosixAclState {
        access: None,
        default: None,
        uid: 0,
        gid: 0,
        mode: 0o100644,
    };
    assert_eq!(
        none.ndr_blob(),
        hex("00000000000000000000000000000000 0000000000000000 a4810000")
    );
}

/// The version-3 hash: SHA-256 of a version-3 blob of the descriptor Samba maps from the POSIX
/// ACL. For `f1.txt` that descriptor is what Samba returned for `f3.txt` (same POSIX ACL and
/// owner, no `security.NTACL`) in a QUERY_INFO, with SE_DACL_PROTECTED, which the POSIX back
/// end sets and `vfs_acl_common` clears before answering.
#[test]
fn nt_acl_hash_matches_samba() {
    let mut fs_sd = hex(WIRE_F3_FROM_POSIX);
    fs_sd[3] |= 0x10;
    let fs_sd = SecurityDescriptor::decode(&fs_sd).unwrap();
    let x = NtAclXattr::decode(&hex(F1_NTACL)).unwrap();
    let NtAclHashes::V4 { hash, .. } = x.hashes else {
        unreachable!()
    };
    assert_eq!(nt_acl_hash(&fs_sd), hash);
    assert!(x.matches_file(Some(&[0; 64]), Some(&nt_acl_hash(&fs_sd))));
}

#[test]
fn ntacl_validation_follows_samba() {
    let x = NtAclXattr::decode(&hex(F1_NTACL)).unwrap();
    let NtAclHashes::V4 {
        hash, sys_acl_hash, ..
    } = x.hashes.clone()
    else {
        unreachable!()
    };
    assert!(x.matches_file(Some(&sys_acl_hash), None));
    assert!(x.matches_file(None, Some(&hash)));
    assert!(!x.matches_file(Some(&hash), Some(&sys_acl_hash)));
    assert!(!x.matches_file(None, None));
    let wrong_type = NtAclXattr {
        hashes: NtAclHashes::V4 {
            hash_type: 0,
            hash,
            description: "posix_acl".into(),
            time: FileTime(0),
            sys_acl_hash,
        },
        ..x.clone()
    };
    assert!(!wrong_type.matches_file(Some(&sys_acl_hash), Some(&hash)));
    let v3 = NtAclXattr {
        hashes: NtAclHashes::V3 { hash_type: 1, hash },
        ..x.clone()
    };
    assert!(!v3.matches_file(Some(&sys_acl_hash), None));
    assert!(v3.matches_file(None, Some(&hash)));
    let v1 = NtAclXattr {
        hashes: NtAclHashes::V1,
        ..x
    };
    assert!(v1.matches_file(None, None));
}

#[test]
fn ntacl_rejects() {
    let v4 = hex(F1_NTACL);
    let check = |blob: &[u8], field: &str, kind: DecodeErrorKind| {
        let e = NtAclXattr::decode(blob).unwrap_err();
        assert_eq!((e.field, e.kind), (field, kind));
    };
    let mut b = v4.clone();
    b[2] = 3;
    check(&b, "NtAcl.Level", DecodeErrorKind::InvalidValue);
    for version in [0u8, 5] {
        let mut b = v4.clone();
        b[0] = version;
        b[2] = version;
        check(&b, "NtAcl.Version", DecodeErrorKind::InvalidValue);
    }
    let mut b = v4.clone();
    b[4..8].fill(0);
    check(&b, "NtAcl.Info", DecodeErrorKind::InvalidValue);
    let mut b = v4.clone();
    b[8..12].fill(0);
    check(&b, "NtAcl.Sd", DecodeErrorKind::InvalidValue);
    check(&v4[..40], "NtAcl.Hash", DecodeErrorKind::Truncated);
    check(&v4[..80], "NtAcl.Description", DecodeErrorKind::Truncated);
    check(&v4[..100], "NtAcl.SysAclHash", DecodeErrorKind::Truncated);
    check(
        &v4[..178],
        "SecurityDescriptor.OffsetDacl",
        DecodeErrorKind::Truncated,
    );
    let mut b = v4.clone();
    b[78] = 0xff;
    check(&b, "NtAcl.Description", DecodeErrorKind::InvalidValue);
    // The owner offset counts from the blob start; pointing into the descriptor's header (or
    // anywhere before it) is refused.
    let mut b = v4.clone();
    b[164..168].copy_from_slice(&170u32.to_le_bytes());
    check(
        &b,
        "SecurityDescriptor.OffsetOwner",
        DecodeErrorKind::OutOfBounds,
    );
    b[164..168].copy_from_slice(&20u32.to_le_bytes());
    check(
        &b,
        "SecurityDescriptor.OffsetOwner",
        DecodeErrorKind::OutOfBounds,
    );
    b[164..168].copy_from_slice(&(v4.len() as u32).to_le_bytes());
    check(
        &b,
        "SecurityDescriptor.OffsetOwner",
        DecodeErrorKind::OutOfBounds,
    );
}

// ---------------------------------------------------------------- POSIX ACL xattrs

#[test]
fn posix_acl_xattr() {
    let bytes = hex(F8_POSIX_ACCESS);
    let acl = PosixAcl::decode_xattr(&bytes).unwrap();
    let entry = |tag, perm| PosixAce { tag, perm };
    assert_eq!(
        acl.entries,
        [
            entry(PosixAclTag::UserObj, 5),
            entry(PosixAclTag::User(1001), 5),
            entry(PosixAclTag::GroupObj, 5),
            entry(PosixAclTag::Group(1001), 5),
            entry(PosixAclTag::Mask, 7),
            entry(PosixAclTag::Other, 0),
        ]
    );
    assert_eq!(acl.to_xattr(), bytes);
    assert_eq!(
        PosixAcl::from_mode(0o100640).entries,
        [
            entry(PosixAclTag::UserObj, 6),
            entry(PosixAclTag::GroupObj, 4),
            entry(PosixAclTag::Other, 0),
        ]
    );
    let check = |blob: &[u8], field: &str, kind: DecodeErrorKind| {
        let e = PosixAcl::decode_xattr(blob).unwrap_err();
        assert_eq!((e.field, e.kind), (field, kind));
    };
    check(&bytes[..2], "PosixAcl.Version", DecodeErrorKind::Truncated);
    let mut b = bytes.clone();
    b[0] = 1;
    check(&b, "PosixAcl.Version", DecodeErrorKind::InvalidValue);
    check(
        &bytes[..bytes.len() - 1],
        "PosixAcl.Entry",
        DecodeErrorKind::Truncated,
    );
    let mut b = bytes.clone();
    b[4] = 0x40;
    check(&b, "PosixAcl.Tag", DecodeErrorKind::InvalidValue);
    assert_eq!(
        PosixAcl::decode_xattr(&bytes[..4]).unwrap(),
        PosixAcl::default()
    );
}
