//! Samba's `smb.conf` syntax (smb.conf(5), "FILE FORMAT"): `[section]` headers, `name = value`
//! lines, `;` and `#` comment lines, `\` at the end of a line continuing it, parameter names
//! matched without regard to case or whitespace, `include = FILE` read in place and
//! `copy = SECTION` repeating an earlier section's parameters.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::ConfigError;

/// Includes nest at most this deep (a loop stops here too).
const MAX_INCLUDE_DEPTH: usize = 16;
/// The largest file read, so that a wrong path (a device, a log) does not exhaust memory.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// One `name = value` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// The name as Samba matches it: lower case, whitespace removed ("readonly").
    pub key: String,
    /// The name as written, trimmed ("read only").
    pub name: String,
    /// The value, trimmed, continuation lines joined with one space.
    pub value: String,
    /// Where it was written.
    pub file: PathBuf,
    /// 1-based line of its first physical line.
    pub line: usize,
}

/// A `[section]` with its parameters in file order (a section named twice is merged, as Samba
/// does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The name as first written.
    pub name: String,
    /// Where it was first opened.
    pub file: PathBuf,
    /// 1-based line of its header.
    pub line: usize,
    /// Its parameters, `include` and `copy` already resolved.
    pub params: Vec<Param>,
}

impl Section {
    /// `[global]` (or `[globals]`, which Samba also accepts).
    pub fn is_global(&self) -> bool {
        self.name.eq_ignore_ascii_case("global") || self.name.eq_ignore_ascii_case("globals")
    }
}

/// Something in the file that smb3d reads differently from Samba or cannot use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    pub file: PathBuf,
    /// 1-based line, 0 when not tied to one.
    pub line: usize,
    /// The section it concerns, empty for none.
    pub section: String,
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}", self.line)?;
        }
        if !self.section.is_empty() {
            write!(f, ": [{}]", self.section)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// A parsed smb.conf: the global section first (empty if the file has none), then the shares
/// in the order they were first opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmbConf {
    pub sections: Vec<Section>,
    pub warnings: Vec<Warning>,
}

/// The parameter name as Samba compares it: case and whitespace ignored.
pub fn normalize_key(name: &str) -> String {
    name.chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// Samba's boolean spellings.
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "yes" | "true" | "on" | "1" => Some(true),
        "no" | "false" | "off" | "0" => Some(false),
        _ => None,
    }
}

struct Parser {
    sections: Vec<Section>,
    /// Index into `sections` of the section lines now belong to.
    current: usize,
    warnings: Vec<Warning>,
    /// Files being read, outermost first, to refuse include loops.
    stack: Vec<PathBuf>,
}

impl SmbConf {
    /// Reads `path` and everything it includes.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let mut parser = Parser::new(path);
        parser.read_file(path)?;
        Ok(parser.finish())
    }

    /// Parses `text` as if read from `path`; includes are resolved from the file system.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let mut parser = Parser::new(path);
        parser.stack.push(path.to_path_buf());
        parser.read_text(path, text)?;
        Ok(parser.finish())
    }

    /// The global section.
    pub fn global(&self) -> Option<&Section> {
        self.sections.first().filter(|s| s.is_global())
    }

    /// The sections other than the global one.
    pub fn shares(&self) -> impl Iterator<Item = &Section> {
        self.sections.iter().filter(|s| !s.is_global())
    }
}

impl Parser {
    fn new(path: &Path) -> Self {
        Self {
            sections: vec![Section {
                name: "global".into(),
                file: path.to_path_buf(),
                line: 0,
                params: Vec::new(),
            }],
            current: 0,
            warnings: Vec::new(),
            stack: Vec::new(),
        }
    }

    fn finish(self) -> SmbConf {
        SmbConf {
            sections: self.sections,
            warnings: self.warnings,
        }
    }

    fn warn(&mut self, file: &Path, line: usize, message: String) {
        let section = self
            .sections
            .get(self.current)
            .map(|s| s.name.clone())
            .unwrap_or_default();
        self.warnings.push(Warning {
            file: file.to_path_buf(),
            line,
            section,
            message,
        });
    }

    fn read_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let io_error = |e: std::io::Error| ConfigError {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            message: format!("cannot read: {e}"),
        };
        let size = std::fs::metadata(path).map_err(io_error)?.len();
        if size > MAX_FILE_BYTES {
            return Err(ConfigError {
                file: path.to_path_buf(),
                line: 0,
                column: 0,
                message: format!("larger than {MAX_FILE_BYTES} bytes; not an smb.conf"),
            });
        }
        let bytes = std::fs::read(path).map_err(io_error)?;
        // Samba reads bytes in the Unix charset; anything not UTF-8 is shown replaced.
        let text = String::from_utf8_lossy(&bytes);
        self.stack.push(path.to_path_buf());
        let result = self.read_text(path, &text);
        self.stack.pop();
        result
    }

    fn read_text(&mut self, file: &Path, text: &str) -> Result<(), ConfigError> {
        let mut lines = text.split('\n').enumerate().peekable();
        while let Some((index, raw)) = lines.next() {
            let line_no = index + 1;
            let mut logical = raw.trim_end_matches('\r').trim_start().to_owned();
            if logical.starts_with(';') || logical.starts_with('#') {
                continue;
            }
            // A backslash ending the line continues it on the next one.
            while logical.trim_end().ends_with('\\') {
                let trimmed_len = logical.trim_end().len().saturating_sub(1);
                logical.truncate(trimmed_len);
                match lines.next() {
                    Some((_, next)) => {
                        let next = next.trim_end_matches('\r').trim();
                        if !logical.ends_with(' ') && !next.is_empty() {
                            logical.push(' ');
                        }
                        logical.push_str(next);
                    }
                    None => break,
                }
            }
            let logical = logical.trim();
            if logical.is_empty() {
                continue;
            }
            if let Some(rest) = logical.strip_prefix('[') {
                match rest.find(']') {
                    Some(end) => self.open_section(file, line_no, rest.get(..end).unwrap_or("")),
                    None => self.warn(
                        file,
                        line_no,
                        format!("section header {logical:?} has no closing ']'; ignored"),
                    ),
                }
                continue;
            }
            let Some((name, value)) = logical.split_once('=') else {
                self.warn(
                    file,
                    line_no,
                    format!("{logical:?} is not `name = value`; ignored"),
                );
                continue;
            };
            let param = Param {
                key: normalize_key(name),
                name: name.trim().to_owned(),
                value: value.trim().to_owned(),
                file: file.to_path_buf(),
                line: line_no,
            };
            match param.key.as_str() {
                "include" => self.include(&param)?,
                "copy" => self.copy(&param),
                "" => self.warn(file, line_no, "a parameter without a name; ignored".into()),
                _ => {
                    if let Some(section) = self.sections.get_mut(self.current) {
                        section.params.push(param);
                    }
                }
            }
        }
        Ok(())
    }

    fn open_section(&mut self, file: &Path, line: usize, name: &str) {
        let name = name.trim();
        if name.is_empty() {
            self.warn(
                file,
                line,
                "a section without a name; its lines are ignored".into(),
            );
        }
        let global = name.eq_ignore_ascii_case("global") || name.eq_ignore_ascii_case("globals");
        let existing = if global {
            Some(0)
        } else {
            self.sections
                .iter()
                .position(|s| !s.is_global() && s.name.eq_ignore_ascii_case(name))
        };
        self.current = match existing {
            Some(index) => {
                if let Some(section) = self.sections.get_mut(index)
                    && section.line == 0
                {
                    section.file = file.to_path_buf();
                    section.line = line;
                }
                index
            }
            None => {
                self.sections.push(Section {
                    name: name.to_owned(),
                    file: file.to_path_buf(),
                    line,
                    params: Vec::new(),
                });
                self.sections.len() - 1
            }
        };
    }

    fn include(&mut self, param: &Param) -> Result<(), ConfigError> {
        if param.value.contains('%') {
            self.warn(
                &param.file,
                param.line,
                format!(
                    "include = {} uses a substitution that is only known per connection; not read",
                    param.value
                ),
            );
            return Ok(());
        }
        // Relative to the including file, which is where an admin expects it; Samba resolves
        // it against its working directory, usually /.
        let mut target = PathBuf::from(&param.value);
        if target.is_relative()
            && let Some(dir) = param.file.parent()
        {
            target = dir.join(target);
        }
        let canonical = target.canonicalize().unwrap_or_else(|_| target.clone());
        if self.stack.len() >= MAX_INCLUDE_DEPTH
            || self
                .stack
                .iter()
                .any(|p| p.canonicalize().unwrap_or_else(|_| p.clone()) == canonical)
        {
            self.warn(
                &param.file,
                param.line,
                format!(
                    "include = {} would include itself or nest deeper than {MAX_INCLUDE_DEPTH}; not read",
                    param.value
                ),
            );
            return Ok(());
        }
        if !target.exists() {
            // Samba skips a missing include quietly; say so.
            self.warn(
                &param.file,
                param.line,
                format!("include = {}: no such file; skipped", param.value),
            );
            return Ok(());
        }
        self.read_file(&target)
    }

    fn copy(&mut self, param: &Param) {
        let source = self
            .sections
            .iter()
            .enumerate()
            .find(|(i, s)| {
                *i != self.current && !s.is_global() && s.name.eq_ignore_ascii_case(&param.value)
            })
            .map(|(_, s)| s.params.clone());
        match source {
            Some(params) => {
                if let Some(section) = self.sections.get_mut(self.current) {
                    section.params.extend(params);
                }
            }
            None => self.warn(
                &param.file,
                param.line,
                format!(
                    "copy = {}: no earlier section of that name; nothing copied",
                    param.value
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> SmbConf {
        SmbConf::parse(Path::new("smb.conf"), text).unwrap()
    }

    fn params(section: &Section) -> Vec<(&str, &str, usize)> {
        section
            .params
            .iter()
            .map(|p| (p.key.as_str(), p.value.as_str(), p.line))
            .collect()
    }

    #[test]
    fn sections_comments_continuations_and_names() {
        let conf = parse(
            "# comment\n; another\n[Global]\n   Server  Min Protocol = SMB3 \r\n\tworkgroup=HOME\n\
             [data]\n  valid users = alice \\\n     bob\\\n carol\n  # inside\n  read_only = yes\n\
             [globals]\n netbios name = NAS\n",
        );
        assert!(conf.warnings.is_empty(), "{:?}", conf.warnings);
        let global = conf.global().unwrap();
        assert_eq!(
            params(global),
            [
                ("serverminprotocol", "SMB3", 4),
                ("workgroup", "HOME", 5),
                ("netbiosname", "NAS", 13)
            ]
        );
        assert_eq!(global.params[0].name, "Server  Min Protocol");
        let shares: Vec<_> = conf.shares().collect();
        assert_eq!(shares.len(), 1);
        assert_eq!(shares[0].name, "data");
        assert_eq!(shares[0].line, 6);
        // Underscores are not spaces to Samba: "read_only" stays a different name.
        assert_eq!(
            params(shares[0]),
            [
                ("validusers", "alice bob carol", 7),
                ("read_only", "yes", 11)
            ]
        );
    }

    #[test]
    fn repeated_sections_merge_and_copy_repeats_parameters() {
        let conf = parse(
            "[a]\npath = /a\n[B]\ncopy = A\ncomment = b\n[a]\nread only = no\n[c]\ncopy = nothing\n",
        );
        let shares: Vec<_> = conf.shares().collect();
        assert_eq!(shares.len(), 3);
        assert_eq!(
            params(shares[0]),
            [("path", "/a", 2), ("readonly", "no", 7)]
        );
        assert_eq!(params(shares[1]), [("path", "/a", 2), ("comment", "b", 5)]);
        assert_eq!(conf.warnings.len(), 1);
        assert_eq!(conf.warnings[0].line, 9);
        assert_eq!(conf.warnings[0].section, "c");
        assert!(conf.warnings[0].message.contains("copy = nothing"));
    }

    #[test]
    fn bad_lines_are_warned_about() {
        let conf = parse("[global]\njust words\n[unclosed\n = value\n");
        let lines: Vec<usize> = conf.warnings.iter().map(|w| w.line).collect();
        assert_eq!(lines, [2, 3, 4]);
        assert_eq!(
            conf.warnings[0].to_string(),
            "smb.conf:2: [global]: \"just words\" is not `name = value`; ignored"
        );
    }

    #[test]
    fn includes_are_read_in_place_and_loops_refused() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("smb.conf");
        std::fs::write(
            &main,
            "[global]\nworkgroup = A\ninclude = extra.conf\nnetbios name = N\n\
             include = /nonexistent/x.conf\ninclude = /etc/samba/%m.conf\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("extra.conf"),
            "server string = S\ninclude = smb.conf\n[share]\npath = /s\n",
        )
        .unwrap();
        let conf = SmbConf::load(&main).unwrap();
        let global = conf.global().unwrap();
        assert_eq!(
            params(global),
            [("workgroup", "A", 2), ("serverstring", "S", 1)]
        );
        // The include left the parser in [share], as Samba's does.
        let share = conf.shares().next().unwrap();
        assert_eq!(params(share), [("path", "/s", 4), ("netbiosname", "N", 4)]);
        let messages: Vec<&str> = conf.warnings.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(messages[0].contains("include itself"));
        assert!(messages[1].contains("no such file"));
        assert!(messages[2].contains("substitution"));
    }

    #[test]
    fn booleans_as_samba_spells_them() {
        for yes in ["yes", "True", "ON", "1", " yes "] {
            assert_eq!(parse_bool(yes), Some(true), "{yes}");
        }
        for no in ["no", "FALSE", "off", "0"] {
            assert_eq!(parse_bool(no), Some(false), "{no}");
        }
        assert_eq!(parse_bool("maybe"), None);
    }
}
