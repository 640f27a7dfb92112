//! How account names compare: case-insensitively as Windows compares them, each UTF-16 code
//! unit upper-cased by its simple (one-to-one) mapping, as RtlUpcaseUnicodeString does, and
//! nothing else folded. That is also the Uppercase(User) NTOWFv2 hashes (MS-NLMP 3.3.2), so
//! every spelling that finds an account proves the same password, and a client upper-casing
//! as Windows does proves it at all.
//!
//! Compatibility characters and variant letter forms keep their identity: a character folds
//! only when its uppercase lower-cases back to it, as Windows' table has it. U+212A KELVIN
//! SIGN is already uppercase and stays, so "\u{212A}ate" is not "kate"; U+017F LATIN SMALL
//! LETTER LONG S (whose uppercase is 'S', the uppercase of 's'), U+0131 dotless i, U+00B5 MICRO
//! SIGN and the Greek symbol variants (ϐ, ϑ, ϕ, ...) stay as they are, so "\u{17F}am" is not
//! "sam" either (Windows and Samba 4.17 refuse it too). The Greek final sigma is an ordinary
//! letter form and upper-cases to Σ, as in Windows. Characters whose full mapping expands
//! ('ß' to "SS") and those outside the BMP (not one code unit) stay as they are.
//!
//! Every comparison of user names (the user database, share lists, binding) goes through here,
//! and after logon only the database's own spelling of the name is used.

/// One character upper-cased as an account name compares.
pub fn upcase(c: char) -> char {
    if u32::from(c) > 0xFFFF {
        return c;
    }
    match single(c.to_uppercase()) {
        Some(upper) if upper == c || c == 'ς' || single(upper.to_lowercase()) == Some(c) => upper,
        _ => c,
    }
}

/// The one character a case mapping gives, if it gives one.
fn single(mut mapped: impl Iterator<Item = char>) -> Option<char> {
    match (mapped.next(), mapped.next()) {
        (Some(c), None) => Some(c),
        _ => None,
    }
}

/// The form of `name` that account names compare by: equal folds, same account.
pub fn fold(name: &str) -> String {
    name.chars().map(upcase).collect()
}

/// Whether `a` and `b` name the same account; allocates nothing.
pub fn same(a: &str, b: &str) -> bool {
    a.chars().map(upcase).eq(b.chars().map(upcase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fold_as_windows_upcases_them() {
        assert!(same("kate", "KATE") && same("Jörg", "JÖRG") && same("łukasz", "ŁUKASZ"));
        assert!(same("ÿves", "ŸVES") && same("Νίκος", "ΝΊΚΟΣ") && same("ǆ", "Ǆ"));
        // Compatibility characters and variant forms keep their identity.
        assert!(!same("\u{212A}ate", "kate"));
        assert_eq!(fold("\u{212A}ate"), "\u{212A}ATE");
        assert!(!same("\u{17F}am", "sam"));
        assert_eq!(fold("\u{17F}am"), "\u{17F}AM");
        assert!(!same("adm\u{131}n", "ADMIN"));
        assert!(!same("\u{B5}", "\u{3BC}"));
        assert!(!same("\u{3D1}", "\u{3B8}"));
        assert_eq!(fold("\u{1C5}"), "\u{1C5}");
        // No expansions, no folding beyond the BMP, no normalization.
        assert_eq!(fold("straße"), "STRAßE");
        assert!(!same("strasse", "straße"));
        assert_eq!(fold("\u{10428}"), "\u{10428}");
        assert!(!same("e\u{301}", "\u{e9}"));
        assert!(!same("kate", "kat") && !same("", "a") && same("", ""));
    }
}
