//! Client path names (MS-SMB2 2.2.13 FileName, MS-FSCC 2.1.5) checked and turned into path
//! components before any file system sees them. Where Windows and Samba differ, the answers
//! follow what Windows clients and smbtorture expect; the choices are recorded in
//! `docs/names.md`.

use smb3d_dtyp::NtStatus;

/// Longest name component NTFS allows, in UTF-16 code units.
const MAX_COMPONENT_UNITS: usize = 255;

/// Longest stream name: what fits in a Linux xattr name (255 bytes) after the
/// `user.DosStream.` prefix and `:$DATA` suffix Samba's streams_xattr gives it.
pub const MAX_STREAM_NAME_BYTES: usize =
    255 - crate::fs::streams::STREAM_XATTR_PREFIX.len() - ":$DATA".len();

/// A share-relative path: components without separators, `.` or `..`, and the data stream it
/// names (MS-FSCC 2.1.5.3).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SmbPath {
    pub components: Vec<String>,
    /// A named data stream (`file:name` or `file:name:$DATA`), as the client spelled it.
    pub stream: Option<String>,
    /// The default data stream was named explicitly (`file::$DATA`): the object must not be a
    /// directory.
    pub default_stream: bool,
}

impl SmbPath {
    pub fn is_root(&self) -> bool {
        self.components.is_empty()
    }

    /// The path in the form clients send and display (`dir\file`, `dir\file:stream`,
    /// `dir\file::$DATA`); parsing it gives this path back.
    pub fn to_windows(&self) -> String {
        let mut name = self.components.join("\\");
        match &self.stream {
            Some(stream) => {
                name.push(':');
                name.push_str(stream);
            }
            None if self.default_stream => name.push_str("::$DATA"),
            None => {}
        }
        name
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
/// - The last component may name a data stream: `name:stream`, `name:stream:$DATA` (the type
///   in any case) or `name::$DATA` (the default stream, the file itself). Stream names may hold
///   any character but NUL (and the separators, which split the path first); another type, an
///   empty type or a stream anywhere else is STATUS_OBJECT_NAME_INVALID.
pub fn parse_path(name: &str) -> Result<SmbPath, NtStatus> {
    if name.starts_with('\\') {
        return Err(NtStatus::INVALID_PARAMETER);
    }
    let raw: Vec<&str> = name.split(['\\', '/']).filter(|c| !c.is_empty()).collect();
    let mut components: Vec<String> = Vec::with_capacity(raw.len());
    let mut stream = None;
    let mut default_stream = false;
    for (i, component) in raw.iter().enumerate() {
        let last = i + 1 == raw.len();
        let component = match component.split_once(':') {
            None => *component,
            Some(_) if !last => return Err(NtStatus::OBJECT_NAME_INVALID),
            Some(("", _)) => return Err(NtStatus::OBJECT_NAME_INVALID),
            Some((base, rest)) => {
                match parse_stream(rest)? {
                    Some(named) => stream = Some(named.to_owned()),
                    None => default_stream = true,
                }
                base
            }
        };
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
    if (stream.is_some() || default_stream) && components.is_empty() {
        // The share root's streams (`..:s` from its child) are not offered.
        return Err(NtStatus::OBJECT_NAME_INVALID);
    }
    Ok(SmbPath {
        components,
        stream,
        default_stream,
    })
}

/// The stream part of a last component (after the first ':'): `Some(name)` for a named data
/// stream, `None` for the default one.
fn parse_stream(rest: &str) -> Result<Option<&str>, NtStatus> {
    let (name, kind) = match rest.split_once(':') {
        Some((name, kind)) => (name, Some(kind)),
        None => (rest, None),
    };
    if kind.is_some_and(|k| !k.eq_ignore_ascii_case("$DATA")) {
        return Err(NtStatus::OBJECT_NAME_INVALID);
    }
    if name.is_empty() {
        // `file:` names nothing; `file::$DATA` is the default stream.
        return if kind.is_some() {
            Ok(None)
        } else {
            Err(NtStatus::OBJECT_NAME_INVALID)
        };
    }
    if name.contains('\0')
        || name.len() > MAX_STREAM_NAME_BYTES
        || name.encode_utf16().count() > MAX_COMPONENT_UNITS
    {
        return Err(NtStatus::OBJECT_NAME_INVALID);
    }
    Ok(Some(name))
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
    fn streams() {
        let p = parse_path("d\\f:Stream One").unwrap();
        assert_eq!(p.components, ["d", "f"]);
        assert_eq!(p.stream.as_deref(), Some("Stream One"));
        assert!(!p.default_stream);
        let p = parse_path("f:\u{5}Stream\n ?*<>|\":$DaTa").unwrap();
        assert_eq!(p.stream.as_deref(), Some("\u{5}Stream\n ?*<>|\""));
        let p = parse_path("f::$DATA").unwrap();
        assert_eq!((p.stream, p.default_stream), (None, true));
        let p = parse_path("f").unwrap();
        assert_eq!((p.stream, p.default_stream), (None, false));
        // A separator in a stream name splits the path, leaving a stream mid-path.
        assert_eq!(
            parse_path("f:a/b:$DATA"),
            Err(NtStatus::OBJECT_NAME_INVALID)
        );
        for name in ["d\\f:s", "d\\f::$DATA", "f:s:$DATA", "d\\..\\f"] {
            let p = parse_path(name).unwrap();
            assert_eq!(parse_path(&p.to_windows()), Ok(p), "{name:?}");
        }
        let longest = "s".repeat(MAX_STREAM_NAME_BYTES);
        assert!(parse_path(&format!("f:{longest}")).is_ok());
        assert_eq!(
            parse_path(&format!("f:{longest}s")),
            Err(NtStatus::OBJECT_NAME_INVALID)
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
            "f:s:",
            "f:s:$FOO",
            "f:s:?D*a",
            "f:s:$DATA:x",
            "f*:s",
            "f:s\0",
            "::$DATA",
            ":s",
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
