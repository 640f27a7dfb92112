//! A name that a case-insensitive lookup resolves and the same name as a QUERY_DIRECTORY
//! pattern (`smb3d-fscc`) must designate the same entries, so both must fold case alike.

use smb3d_fscc::is_name_in_expression;
use smb3d_vfs::casefold::{eq_ignore_case, fold_char};

/// The characters a case-insensitive comparison might equate with `c`: its folding and its
/// single-character upper and lower cases.
fn relatives(c: char) -> Vec<char> {
    let mut relatives = vec![fold_char(c)];
    for mapped in [
        c.to_uppercase().collect::<Vec<_>>(),
        c.to_lowercase().collect(),
    ] {
        if let [single] = mapped[..] {
            relatives.push(single);
        }
    }
    relatives.retain(|&other| other != c);
    relatives
}

#[test]
fn every_character_folds_as_search_patterns_fold_it() {
    // Every cased script lies in the first two planes.
    for c in (0..=0x1_ffff).filter_map(char::from_u32) {
        for other in relatives(c) {
            let (a, b) = (c.to_string(), other.to_string());
            assert_eq!(
                eq_ignore_case(&a, &b),
                is_name_in_expression(&a, &b, true),
                "U+{:04X} U+{:04X}",
                u32::from(c),
                u32::from(other)
            );
        }
    }
}

#[test]
fn edge_cases_agree_both_ways() {
    let pairs = [
        ("STRAẞE", "straße"),
        ("STRASSE", "straße"),
        ("I", "ı"),
        ("İ", "i"),
        ("\u{212a}", "k"),
        ("ς", "Σ"),
        ("\u{1e9e}", "ss"),
        ("ǅ", "ǆ"),
        ("ᾈ", "ᾀ"),
    ];
    for (a, b) in pairs {
        assert_eq!(
            eq_ignore_case(a, b),
            is_name_in_expression(a, b, true),
            "{a} {b}"
        );
        assert_eq!(
            eq_ignore_case(a, b),
            is_name_in_expression(b, a, true),
            "{b} {a}"
        );
    }
}
