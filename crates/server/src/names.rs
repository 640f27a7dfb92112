//! Client path names (MS-SMB2 2.2.13 FileName, MS-FSCC 2.1.5) checked and turned into path
//! components before any file system sees them. Where Windows and Samba differ, the answers
//! follow what Windows clients and smbtorture expect; the choices are recorded in
//! `docs/names.md`.

use smb3d_dtyp::NtStatus;

/// Longest name component NTFS allows, in UTF-16 code units.
const MAX_COMPONENT_UNITS: usize = 255;

/// A share-relative path: components without separators, `.` or `..`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SmbPath {
    pub components: Vec<String>,
}

impl SmbPath {
    pub fn is_root(&self) -> bool {
        self.components.is_empty()
    }

    /// The path in the form clients display (`dir\file`).
    pub fn to_windows(&self) -> String {
        self.components.join("\\")
    }
}

/// Parses a CREATE or rename target name.
///
/// - A leading backslash is STATUS_INVALID_PARAMETER (MS-SMB2 3.3.5.9).
/// - `/` separates components like `\`, as Samba accepts it (smbtorture and Unix clients send
///   it); it can never be part of a Linux name anyway.
/// - Empty components (doubled or trailing backslashes) are ignored.
/// - `..` goes up a level; above the share root it is STATUS_OBJECT_PATH_SYNTAX_BAD.
/// - `.` as a directory is STATUS_OBJECT_PATH_NOT_FOUND, as the last component
///   STATUS_OBJECT_NAME_INVALID.
/// - Characters MS-FSCC 2.1.5.2 forbids, wildcards and over-long components are
///   STATUS_OBJECT_NAME_INVALID.
/// - `name::$DATA` names the file's default stream and is the file itself; other stream names
///   are STATUS_OBJECT_NAME_INVALID until named streams are supported (as on a file system
///   without streams).
pub fn parse_path(name: &str) -> Result<SmbPath, NtStatus> {
    if name.starts_with('\\') {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let raw: Vec<&str> = name.split(['\\', '/']).filter(|c| !c.is_empty()).collect();
    let mut components: Vec<String> = Vec::with_capacity(raw.len());
    for (i, component) in raw.iter().enumerate() {
        let last = i + 1 == raw.len();
        let component = strip_default_stream(component, last)?;
        match component {
            "." if last => return Err(NtStatus::OBJECT_NAME_INVALID),
            "." => return Err(NtStatus::OBJECT_PATH_NOT_FOUND),
            ".." => {
                if components.pop().is_none() {
                    return Err(NtStatus::OBJECT_PATH_SYNTAX_BAD);
                }
            }
            _ => {
                check_component(component)?;
                components.push(component.to_owned());
            }
        }
    }
    Ok(SmbPath { components })
}

/// Splits off `::$DATA` (the unnamed data stream) from the last component.
fn strip_default_stream(component: &str, last: bool) -> Result<&str, NtStatus> {
    let Some((base, stream)) = component.split_once(':') else {
        return Ok(component);
    };
    if last && !base.is_empty() && stream.eq_ignore_ascii_case(":$DATA") {
        Ok(base)
    } else {
        Err(NtStatus::OBJECT_NAME_INVALID)
    }
}

/// One name component as MS-FSCC 2.1.5.2 allows it.
pub fn check_component(component: &str) -> Result<(), NtStatus> {
    const FORBIDDEN: &[char] = &['"', '*', '/', ':', '<', '>', '?', '|'];
    if component
        .chars()
        .any(|c| FORBIDDEN.contains(&c) || (c as u32) < 0x20)
    {
        return Err(NtStatus::OBJECT_NAME_INVALID);
    }
    if component.encode_utf16().count() > MAX_COMPONENT_UNITS {
        return Err(NtStatus::OBJECT_NAME_INVALID);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(name: &str) -> Vec<String> {
        parse_path(name)
            .unwrap_or_else(|s| panic!("{name:?}: {s}"))
            .components
    }

    #[test]
    fn plain_paths() {
        assert_eq!(ok("d/f"), ["d", "f"]);
        assert!(ok("").is_empty());
        assert_eq!(ok("a"), ["a"]);
        assert_eq!(ok("d\\f"), ["d", "f"]);
        assert_eq!(ok("d\\\\f\\"), ["d", "f"]);
        assert_eq!(ok("d\\f::$DATA"), ["d", "f"]);
        assert_eq!(
            ok("f ."),
            ["f ."],
            "trailing dots and spaces are kept as on the NT layer"
        );
    }

    #[test]
    fn dot_dot_stays_inside() {
        assert_eq!(ok("d\\..\\e"), ["e"]);
        assert_eq!(
            parse_path("..\\secret"),
            Err(NtStatus::OBJECT_PATH_SYNTAX_BAD)
        );
        assert_eq!(
            parse_path("d\\..\\..\\secret"),
            Err(NtStatus::OBJECT_PATH_SYNTAX_BAD)
        );
        assert_eq!(parse_path(".."), Err(NtStatus::OBJECT_PATH_SYNTAX_BAD));
    }

    #[test]
    fn rejected_names() {
        assert_eq!(parse_path("\\d"), Err(NtStatus::INVALID_PARAMETER));
        assert_eq!(parse_path(".\\d"), Err(NtStatus::OBJECT_PATH_NOT_FOUND));
        assert_eq!(parse_path("d\\."), Err(NtStatus::OBJECT_NAME_INVALID));
        for bad in [
            "a*b",
            "a?",
            "a<b",
            "a>b",
            "a|b",
            "a\"b",
            "a\u{1}b",
            "a\0b",
            "f:",
            "f:s",
            "f:s:$DATA",
            "d:x\\f",
        ] {
            assert_eq!(
                parse_path(bad),
                Err(NtStatus::OBJECT_NAME_INVALID),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_path(&"x".repeat(256)),
            Err(NtStatus::OBJECT_NAME_INVALID)
        );
        assert_eq!(ok(&"x".repeat(255)).len(), 1);
    }
}
