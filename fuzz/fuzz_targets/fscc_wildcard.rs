#![no_main]
//! The MS-FSA 2.1.4.4 matcher for QUERY_DIRECTORY patterns: the input is `pattern\0name`
//! (the first byte's low bit picks case-insensitive matching). Matching takes at most
//! pattern × name steps (a slow input is a finding), `*` matches every name, and a pattern
//! without wildcards matches exactly itself.

use libfuzzer_sys::fuzz_target;
use smb3d_fscc::{Expression, has_wildcards, is_name_in_expression};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let ignore_case = flags & 1 == 1;
    let text = String::from_utf8_lossy(rest);
    let (pattern, name) = text.split_once('\0').unwrap_or((&text, ""));
    let expr = Expression::new(pattern, ignore_case);
    let matched = expr.matches(name);
    assert_eq!(matched, is_name_in_expression(pattern, name, ignore_case));
    if !name.is_empty() {
        assert!(Expression::new("*", ignore_case).matches(name));
    }
    if !ignore_case && !has_wildcards(pattern) {
        assert_eq!(matched, pattern == name, "{pattern:?} vs {name:?}");
    }
});
