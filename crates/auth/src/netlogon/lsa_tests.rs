//! Answers made the way MS-LSAT lays them out (and as Samba's DC sent them to the example
//! `lsa_lookup`), then crafted ones: wrong counts, indexes, SIDs outside their domain, every
//! truncation and every byte change.

use smb3d_rpc::ndr::NdrWriter;

use super::*;

const DOMAIN_SID: &str = "S-1-5-21-1-2-3";

fn sid(text: &str) -> Sid {
    text.parse().unwrap()
}

/// One translated entry of an answer: kind, name or SID, domain index.
struct Entry<'a> {
    kind: u16,
    text: Option<&'a str>,
    index: u32,
}

fn domains(w: &mut NdrWriter<'_>, list: &[(&str, &str)]) {
    let n = u32::try_from(list.len()).unwrap();
    w.pointer(true).u32(n).pointer(n > 0).u32(32);
    if n == 0 {
        return;
    }
    w.u32(n);
    for (name, _) in list {
        w.counted_string_header(Some(name), true).pointer(true);
    }
    for (name, s) in list {
        w.counted_string_body(Some(name), true).sid(&sid(s));
    }
}

fn names_answer(list: &[(&str, &str)], entries: &[Entry<'_>], mapped: u32, status: u32) -> Vec<u8> {
    let mut stub = Vec::new();
    let mut w = NdrWriter::with_base(&mut stub, 0);
    domains(&mut w, list);
    let n = u32::try_from(entries.len()).unwrap();
    w.u32(n).pointer(true).u32(n);
    for e in entries {
        w.u16(e.kind).pointer(e.text.is_some()).u32(e.index).u32(0);
    }
    for e in entries {
        if let Some(s) = e.text {
            w.sid(&sid(s));
        }
    }
    w.u32(mapped).u32(status);
    stub
}

fn sids_answer(list: &[(&str, &str)], entries: &[Entry<'_>], mapped: u32, status: u32) -> Vec<u8> {
    let mut stub = Vec::new();
    let mut w = NdrWriter::with_base(&mut stub, 0);
    domains(&mut w, list);
    let n = u32::try_from(entries.len()).unwrap();
    w.u32(n).pointer(true).u32(n);
    for e in entries {
        w.u16(e.kind)
            .counted_string_header(e.text, false)
            .u32(e.index)
            .u32(0);
    }
    for e in entries {
        w.counted_string_body(e.text, false);
    }
    w.u32(mapped).u32(status);
    stub
}

fn asked_names() -> Vec<String> {
    vec![
        "AD\\designers".into(),
        "AD\\nobody".into(),
        "AD\\frank".into(),
    ]
}

fn good_names_answer() -> Vec<u8> {
    names_answer(
        &[("AD", DOMAIN_SID)],
        &[
            Entry {
                kind: 2,
                text: Some("S-1-5-21-1-2-3-1200"),
                index: 0,
            },
            Entry {
                kind: 8,
                text: None,
                index: u32::MAX,
            },
            Entry {
                kind: 1,
                text: Some("S-1-5-21-1-2-3-1107"),
                index: 0,
            },
        ],
        2,
        STATUS_SOME_NOT_MAPPED,
    )
}

fn asked_sids() -> Vec<Sid> {
    vec![sid("S-1-5-21-1-2-3-1200"), sid("S-1-5-21-9-9-9-5")]
}

fn good_sids_answer() -> Vec<u8> {
    sids_answer(
        &[("AD", DOMAIN_SID)],
        &[
            Entry {
                kind: 2,
                text: Some("designers"),
                index: 0,
            },
            Entry {
                kind: 8,
                text: Some("S-1-5-21-9-9-9-5"),
                index: u32::MAX,
            },
        ],
        1,
        STATUS_SOME_NOT_MAPPED,
    )
}

#[test]
fn names_translate_in_order_and_unmapped_ones_are_none() {
    let got = lookup_names4_answer(&good_names_answer(), &asked_names()).unwrap();
    assert_eq!(
        got,
        vec![
            Some(Translated {
                sid: sid("S-1-5-21-1-2-3-1200"),
                kind: SidType::Group,
                name: "designers".into(),
                domain: "AD".into(),
            }),
            None,
            Some(Translated {
                sid: sid("S-1-5-21-1-2-3-1107"),
                kind: SidType::User,
                name: "frank".into(),
                domain: "AD".into(),
            }),
        ]
    );
}

#[test]
fn sids_translate_in_order_and_unmapped_ones_are_none() {
    let got = lookup_sids3_answer(&good_sids_answer(), &asked_sids()).unwrap();
    assert_eq!(
        got,
        vec![
            Some(Translated {
                sid: sid("S-1-5-21-1-2-3-1200"),
                kind: SidType::Group,
                name: "designers".into(),
                domain: "AD".into(),
            }),
            None,
        ]
    );
}

#[test]
fn none_mapped_without_arrays_is_all_none_and_a_refusal_is_an_error() {
    let mut stub = Vec::new();
    NdrWriter::with_base(&mut stub, 0)
        .pointer(false)
        .u32(0)
        .pointer(false)
        .u32(0)
        .u32(STATUS_NONE_MAPPED);
    assert_eq!(
        lookup_names4_answer(&stub, &asked_names()).unwrap(),
        vec![None; 3]
    );
    assert_eq!(
        lookup_sids3_answer(&stub, &asked_sids()).unwrap(),
        vec![None; 2]
    );
    let denied = stub.len() - 4;
    stub[denied..].copy_from_slice(&0xc000_0022u32.to_le_bytes());
    assert_eq!(
        lookup_names4_answer(&stub, &asked_names()),
        Err(LookupError::Refused(0xc000_0022))
    );
}

#[test]
fn hostile_counts_indexes_and_sids_are_refused() {
    let entry = |kind, text, index| Entry { kind, text, index };
    // One entry fewer than asked, one more, an index past the list, a SID of another domain
    // under this domain's name, an unknown SID_NAME_USE, a mapped count past the total.
    let cases = [
        names_answer(
            &[("AD", DOMAIN_SID)],
            &[entry(2, Some("S-1-5-21-1-2-3-1200"), 0)],
            1,
            0,
        ),
        names_answer(
            &[("AD", DOMAIN_SID)],
            &[
                entry(2, Some("S-1-5-21-1-2-3-1200"), 0),
                entry(2, Some("S-1-5-21-1-2-3-1201"), 0),
                entry(2, Some("S-1-5-21-1-2-3-1202"), 0),
                entry(2, Some("S-1-5-21-1-2-3-1203"), 0),
            ],
            4,
            0,
        ),
        names_answer(
            &[("AD", DOMAIN_SID)],
            &[
                entry(2, Some("S-1-5-21-1-2-3-1200"), 1),
                entry(8, None, u32::MAX),
                entry(8, None, u32::MAX),
            ],
            1,
            STATUS_SOME_NOT_MAPPED,
        ),
        names_answer(
            &[("AD", DOMAIN_SID)],
            &[
                entry(2, Some("S-1-5-21-6-6-6-512"), 0),
                entry(8, None, u32::MAX),
                entry(8, None, u32::MAX),
            ],
            1,
            STATUS_SOME_NOT_MAPPED,
        ),
        names_answer(
            &[("AD", DOMAIN_SID)],
            &[
                entry(77, Some("S-1-5-21-1-2-3-1200"), 0),
                entry(8, None, u32::MAX),
                entry(8, None, u32::MAX),
            ],
            1,
            STATUS_SOME_NOT_MAPPED,
        ),
        names_answer(
            &[("AD", DOMAIN_SID)],
            &[
                entry(8, None, u32::MAX),
                entry(8, None, u32::MAX),
                entry(8, None, u32::MAX),
            ],
            4,
            STATUS_NONE_MAPPED,
        ),
    ];
    for (i, stub) in cases.iter().enumerate() {
        assert!(
            lookup_names4_answer(stub, &asked_names()).is_err(),
            "case {i} was taken"
        );
    }
    // A name for a SID the answer puts in another domain than its own.
    let misplaced = sids_answer(
        &[("AD", DOMAIN_SID)],
        &[entry(2, Some("designers"), 0), entry(1, Some("mallory"), 0)],
        2,
        0,
    );
    assert!(lookup_sids3_answer(&misplaced, &asked_sids()).is_err());
    // A domain count the bytes cannot hold.
    let mut huge = good_sids_answer();
    huge[4..8].copy_from_slice(&0x1000_0000u32.to_le_bytes());
    huge[12..16].copy_from_slice(&0x1000_0000u32.to_le_bytes());
    huge[16..20].copy_from_slice(&0x1000_0000u32.to_le_bytes());
    assert!(lookup_sids3_answer(&huge, &asked_sids()).is_err());
}

/// Every truncation is refused; every single-byte change is refused or still decodes to an
/// answer of the asked length (never a panic, never more entries than asked).
#[test]
fn truncations_and_byte_changes_never_panic() {
    for (stub, names) in [(good_names_answer(), true), (good_sids_answer(), false)] {
        let decode = |s: &[u8]| {
            if names {
                lookup_names4_answer(s, &asked_names()).map(|v| v.len())
            } else {
                lookup_sids3_answer(s, &asked_sids()).map(|v| v.len())
            }
        };
        let asked = if names { 3 } else { 2 };
        for len in 0..stub.len() {
            assert!(decode(&stub[..len]).is_err(), "truncated at {len}");
        }
        for at in 0..stub.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = stub.clone();
                bad[at] ^= flip;
                if let Ok(n) = decode(&bad) {
                    assert_eq!(n, asked);
                }
            }
        }
    }
}

#[test]
fn requests_follow_the_idl() {
    let stub = lookup_names4_request(&["AD\\designers".to_owned()]);
    let mut r = NdrReader::new(&stub);
    assert_eq!(r.u32("Count").unwrap(), 1);
    assert_eq!(r.array_count(8, "Names").unwrap(), 1);
    let header = r.counted_string_header("Names").unwrap();
    assert_eq!(
        r.counted_string_body(header, "Names").unwrap(),
        "AD\\designers"
    );
    assert_eq!(r.u32("Entries").unwrap(), 0);
    assert!(!r.pointer("Sids").unwrap());
    assert_eq!(r.u16("LookupLevel").unwrap(), LOOKUP_WKSTA);
    assert_eq!(r.u32("MappedCount").unwrap(), 0);
    assert_eq!(r.u32("LookupOptions").unwrap(), 0);
    assert_eq!(r.u32("ClientRevision").unwrap(), 2);
    assert_eq!(r.remaining(), 0);

    let many: Vec<Sid> = (0..1500)
        .map(|rid| sid(DOMAIN_SID).with_rid(rid).unwrap())
        .collect();
    let stub = lookup_sids3_request(&many);
    let mut r = NdrReader::new(&stub);
    assert_eq!(r.u32("Entries").unwrap(), 1000, "bounded to MAX_LOOKUP");
    assert!(r.pointer("SidInfo").unwrap());
    assert_eq!(r.array_count(4, "SidInfo").unwrap(), 1000);
}
