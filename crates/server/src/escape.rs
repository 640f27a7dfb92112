//! Text from clients (user and domain names, paths, stream names) as log lines, audit records,
//! JSON logs and `smb3d status` show it: every character that could end or forge a line,
//! drive a terminal, or reorder or hide what is shown is written as an escape, so a name
//! cannot pass for something it is not. The one function all of them use.
//!
//! Escaped: `\` as `\\` (so an escape cannot be forged either), line feed, carriage return and
//! tab as `\n`, `\r`, `\t`, and as `\u{..}` (Rust's notation) the other control characters
//! (C0, DEL, C1, whose U+009B is a terminal's CSI), the line and paragraph separators
//! U+2028/U+2029, the bidirectional controls (U+061C, U+200E/F, U+202A-U+202E,
//! U+2066-U+2069), the invisible format characters (soft hyphen, zero-width space and
//! joiners, word joiner and invisible operators, U+FEFF, interlinear annotations) and the tag
//! characters U+E0000-U+E007F. Every other character, letters of every script included, is
//! shown as it is.

use std::borrow::Cow;
use std::fmt;

/// `text` as it is shown; borrowed when nothing needed escaping.
pub fn escape(text: &str) -> Cow<'_, str> {
    if text.chars().any(needs_escape) {
        Cow::Owned(Escaped(text).to_string())
    } else {
        Cow::Borrowed(text)
    }
}

/// Shows `text` escaped as [`escape`] does, without allocating.
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(needs_escape) {
            let (clean, tail) = rest.split_at(at);
            f.write_str(clean)?;
            let mut chars = tail.chars();
            if let Some(c) = chars.next() {
                match c {
                    '\\' => f.write_str("\\\\")?,
                    '\n' => f.write_str("\\n")?,
                    '\r' => f.write_str("\\r")?,
                    '\t' => f.write_str("\\t")?,
                    c => write!(f, "\\u{{{:x}}}", u32::from(c))?,
                }
            }
            rest = chars.as_str();
        }
        f.write_str(rest)
    }
}

fn needs_escape(c: char) -> bool {
    c == '\\'
        || c.is_control()
        || matches!(
            c,
            '\u{AD}'
                | '\u{61C}'
                | '\u{180E}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{E0000}'..='\u{E007F}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_could_forge_or_hide_is_escaped() {
        let cases = [
            ("plan.odt", "plan.odt"),
            ("Jörg Müller/Отчёт 日本", "Jörg Müller/Отчёт 日本"),
            ("a\nINFO audit: forged", "a\\nINFO audit: forged"),
            ("a\r\tb", "a\\r\\tb"),
            ("\u{1b}[2J\u{7}", "\\u{1b}[2J\\u{7}"),
            ("\u{9b}31m\u{7f}\u{0}", "\\u{9b}31m\\u{7f}\\u{0}"),
            ("evil\u{202E}txt.exe", "evil\\u{202e}txt.exe"),
            ("ka\u{200B}te\u{FEFF}", "ka\\u{200b}te\\u{feff}"),
            ("line\u{2028}para\u{2029}", "line\\u{2028}para\\u{2029}"),
            ("tag\u{E0041}", "tag\\u{e0041}"),
            ("WORKGROUP\\alice", "WORKGROUP\\\\alice"),
            ("\\u{1b}", "\\\\u{1b}"),
            ("", ""),
        ];
        for (text, shown) in cases {
            assert_eq!(escape(text), shown, "{text:?}");
            assert_eq!(Escaped(text).to_string(), shown, "{text:?}");
        }
        assert!(matches!(escape("plain name"), Cow::Borrowed(_)));
    }
}
