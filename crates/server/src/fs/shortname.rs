//! 8.3 names (MS-FSCC 2.1.5.2.1) for FileAlternateNameInformation, derived from the long name
//! without any stored state: a name that already fits 8.3 is its own short name; any other gets
//! a stable hashed form like Samba's ("PREFIX~XY.EXT"). They are informational: opening by a
//! short name is not supported.

/// Characters 8.3 names may not contain besides control characters (MS-FSCC 2.1.5.2.1).
const ILLEGAL_IN_SHORT: &[char] = &[
    '"', '*', '+', ',', '/', ':', ';', '<', '=', '>', '?', '[', '\\', ']', '|', ' ',
];

fn is_short_char(c: char) -> bool {
    c.is_ascii() && !c.is_ascii_control() && !ILLEGAL_IN_SHORT.contains(&c)
}

/// Whether `name` is already a valid 8.3 name.
fn is_8dot3(name: &str) -> bool {
    if name == "." || name == ".." {
        return true;
    }
    let (base, ext) = match name.rsplit_once('.') {
        Some((base, ext)) => (base, Some(ext)),
        None => (name, None),
    };
    let valid = |part: &str, max: usize| {
        part.len() <= max && part.chars().all(|c| is_short_char(c) && c != '.')
    };
    !base.is_empty() && valid(base, 8) && ext.is_none_or(|ext| !ext.is_empty() && valid(ext, 3))
}

/// The 8.3 name clients see for `name`.
pub(crate) fn short_name(name: &str) -> String {
    if is_8dot3(name) {
        return name.to_owned();
    }
    let (base, ext) = match name.rsplit_once('.') {
        Some((base, ext)) if !base.is_empty() => (base, ext),
        _ => (name, ""),
    };
    let clean = |part: &str, max: usize| -> String {
        part.chars()
            .filter(|c| is_short_char(*c) && *c != '.')
            .map(|c| c.to_ascii_uppercase())
            .take(max)
            .collect()
    };
    let mut prefix = clean(base, 5);
    if prefix.is_empty() {
        prefix.push('_');
    }
    // FNV-1a over the UTF-8 name: stable across runs and machines.
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let tag: String = [hash % 36, (hash / 36) % 36]
        .into_iter()
        .filter_map(|d| char::from_digit(d, 36))
        .map(|c| c.to_ascii_uppercase())
        .collect();
    let ext = clean(ext, 3);
    if ext.is_empty() {
        format!("{prefix}~{tag}")
    } else {
        format!("{prefix}~{tag}.{ext}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_dot_three_names_are_their_own() {
        for name in ["f", "README", "a.txt", "FILE1234.DOC", "."] {
            assert_eq!(short_name(name), name);
        }
    }

    #[test]
    fn long_names_are_mangled_stably() {
        let s = short_name("averyverylongfilename.text");
        assert!(s.starts_with("AVERY~") && s.ends_with(".TEX"), "{s}");
        assert_eq!(s, short_name("averyverylongfilename.text"));
        assert_ne!(s, short_name("averyverylongfilename2.text"));
        assert!(is_8dot3(&s), "{s}");
        assert!(is_8dot3(&short_name("with space.txt")));
        assert!(is_8dot3(&short_name("naïve.md")));
        assert!(is_8dot3(&short_name(".bashrc")));
        assert!(is_8dot3(&short_name("a.b.c.d")));
    }
}
