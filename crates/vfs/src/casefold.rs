//! Case-insensitive names: Unicode simple case folding and the rules that pick the directory
//! entry a differently-cased name designates.
//!
//! Folding is Unicode's simple case folding (`CaseFolding.txt`, statuses C and S): one
//! character to one character, so `ẞ` matches `ß` but `SS` does not, and `Σ`, `σ` and `ς`
//! all match. It comes from the same `unicode-case-mapping` table as `smb3d-fscc`'s search
//! patterns, so a name QUERY_DIRECTORY matches and a name this module resolves agree.

use unicode_case_mapping::case_folded;

use crate::VfsPath;

/// The simple case folding of `c` (itself when it has none).
pub fn fold_char(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    case_folded(c)
        .and_then(|folded| char::from_u32(folded.get()))
        .unwrap_or(c)
}

/// Whether `a` and `b` are equal under simple case folding.
pub fn eq_ignore_case(a: &str, b: &str) -> bool {
    a.chars().map(fold_char).eq(b.chars().map(fold_char))
}

/// A name folded once, to compare against many directory entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedName(String);

impl FoldedName {
    /// Folds `name`.
    pub fn new(name: &str) -> Self {
        Self(name.chars().map(fold_char).collect())
    }

    /// The folded name: equal for every spelling that matches.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `candidate` folds to this name. Stops at the first character that differs, so
    /// most entries of a directory cost a character or two.
    pub fn matches(&self, candidate: &str) -> bool {
        candidate.chars().map(fold_char).eq(self.0.chars())
    }
}

/// What a directory holds under a name, looked up case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// An entry spelled exactly as asked.
    Exact,
    /// No exact entry, but this one matches under case folding.
    Variant(String),
    /// Nothing matches.
    Missing,
}

/// Picks the entry a name designates while a directory's entries are offered one by one: the
/// exact spelling if there is one, else the lowest, in code-point (UTF-8 byte) order, of the
/// entries equal to it under case folding. The order does not depend on the order in which
/// the file system lists entries.
#[derive(Debug)]
pub struct EntryChooser<'a> {
    wanted: &'a str,
    folded: FoldedName,
    exact: bool,
    best: Option<String>,
}

impl<'a> EntryChooser<'a> {
    /// A chooser for `wanted`.
    pub fn new(wanted: &'a str) -> Self {
        Self {
            wanted,
            folded: FoldedName::new(wanted),
            exact: false,
            best: None,
        }
    }

    /// Considers one entry. Returns `true` once the exact spelling was offered: no later
    /// entry can change the choice.
    pub fn offer(&mut self, candidate: &str) -> bool {
        if candidate == self.wanted {
            self.exact = true;
            return true;
        }
        let better = self.best.as_deref().is_none_or(|best| candidate < best);
        if better && self.folded.matches(candidate) {
            self.best = Some(candidate.to_owned());
        }
        false
    }

    /// The choice among the entries offered.
    pub fn choice(self) -> Found {
        match (self.exact, self.best) {
            (true, _) => Found::Exact,
            (false, Some(name)) => Found::Variant(name),
            (false, None) => Found::Missing,
        }
    }
}

/// The spelling under which `path` exists when each component that is missing as spelled is
/// matched case-insensitively, or `None` when that is the spelling given.
///
/// `open_dir(prefix)` opens a directory by an already resolved path, the way the back end
/// resolves any path (following symlinks, confined to the share), and `find(dir, name)` looks
/// `name` up in it without following it. The parent as spelled is tried first, since most
/// misses are in the last component; otherwise each component is looked up in turn. A
/// component that matches nothing ends the walk: it and the rest stay as given, so the
/// operation that follows reports the usual error, or creates the name as spelled. A real
/// spelling longer than a path may be is not returned (the kernel could not use it).
pub fn resolve_path<D>(
    path: &VfsPath,
    mut open_dir: impl FnMut(&VfsPath) -> Option<D>,
    mut find: impl FnMut(&D, &str) -> Found,
) -> Option<VfsPath> {
    let (parent, name) = path.parent_and_name()?;
    if let Some(dir) = open_dir(&parent) {
        return match find(&dir, name) {
            Found::Variant(real) => parent.join(&real).ok(),
            Found::Exact | Found::Missing => None,
        };
    }
    let mut real = VfsPath::root();
    let mut changed = false;
    let mut components = path.components();
    while let Some(component) = components.next() {
        let found = match open_dir(&real) {
            Some(dir) => find(&dir, component),
            None => Found::Missing,
        };
        match found {
            Found::Variant(name) => {
                real.push(&name).ok()?;
                changed = true;
            }
            Found::Exact => real.push(component).ok()?,
            Found::Missing => {
                real.push(component).ok()?;
                for rest in components.by_ref() {
                    real.push(rest).ok()?;
                }
            }
        }
    }
    changed.then_some(real)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn folding_is_simple_unicode_folding() {
        assert!(eq_ignore_case("README.TXT", "readme.txt"));
        assert!(eq_ignore_case("ÜNÏCÖDÉ", "ünïcödé"));
        assert!(eq_ignore_case("ΣΊΣΥΦΟΣ", "σίσυφος"));
        assert!(eq_ignore_case("straẞe", "STRAßE"));
        assert!(!eq_ignore_case("STRASSE", "straße"), "no full folding");
        assert!(eq_ignore_case("\u{212a}elvin", "kelvin"), "Kelvin sign");
        assert!(eq_ignore_case("\u{17f}", "S"), "long s");
        assert!(!eq_ignore_case("ı", "I"), "dotless i has no simple folding");
        assert!(!eq_ignore_case("a", "ab"));
        assert!(!eq_ignore_case("ab", "a"));
        assert!(eq_ignore_case("", ""));
        assert!(eq_ignore_case("\u{10400}", "\u{10428}"), "Deseret");
    }

    #[test]
    fn folding_is_idempotent_everywhere() {
        // Every cased script lies in the first two planes.
        for c in (0..=0x1_ffff).filter_map(char::from_u32) {
            let folded = fold_char(c);
            assert_eq!(fold_char(folded), folded, "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn folded_names_match_candidates() {
        let name = FoldedName::new("Report.DOCX");
        assert!(name.matches("report.docx"));
        assert!(name.matches("REPORT.docx"));
        assert!(!name.matches("report.doc"));
        assert!(!name.matches("report.docxx"));
        assert!(!name.matches(""));
        assert_eq!(name.as_str(), "report.docx");
        assert_eq!(FoldedName::new("STRAẞE").as_str(), "straße");
    }

    #[test]
    fn chooser_prefers_exact_then_lowest() {
        let choose = |wanted: &str, entries: &[&str]| {
            let mut chooser = EntryChooser::new(wanted);
            for entry in entries {
                if chooser.offer(entry) {
                    break;
                }
            }
            chooser.choice()
        };
        let entries = ["foo", "Foo", "bar", "FOO"];
        assert_eq!(choose("Foo", &entries), Found::Exact);
        assert_eq!(choose("fOO", &entries), Found::Variant("FOO".into()));
        let reversed: Vec<&str> = entries.iter().rev().copied().collect();
        assert_eq!(choose("fOO", &reversed), Found::Variant("FOO".into()));
        assert_eq!(choose("BAR", &entries), Found::Variant("bar".into()));
        assert_eq!(choose("baz", &entries), Found::Missing);
        assert_eq!(choose("x", &[]), Found::Missing);
    }

    /// A tree of directories by real path, for exercising `resolve_path` without a back end.
    fn resolve_in(tree: &BTreeMap<&str, &[&str]>, path: &str) -> Option<String> {
        let mut opened = Vec::new();
        let real = resolve_path(
            &VfsPath::parse(path).unwrap(),
            |dir| {
                opened.push(dir.as_str().to_owned());
                tree.get(dir.as_str()).copied()
            },
            |entries, name| {
                let mut chooser = EntryChooser::new(name);
                for entry in *entries {
                    chooser.offer(entry);
                }
                chooser.choice()
            },
        );
        real.map(|real| real.as_str().to_owned())
    }

    #[test]
    fn resolves_each_missing_component() {
        let tree: BTreeMap<&str, &[&str]> = BTreeMap::from([
            ("", &["Docs", "file"][..]),
            ("Docs", &["Sub", "Note.txt"][..]),
            ("Docs/Sub", &["Deep.bin"][..]),
        ]);
        assert_eq!(resolve_in(&tree, "file"), None, "exact");
        assert_eq!(resolve_in(&tree, "FILE").as_deref(), Some("file"));
        assert_eq!(resolve_in(&tree, "docs").as_deref(), Some("Docs"));
        assert_eq!(
            resolve_in(&tree, "docs/sub/DEEP.BIN").as_deref(),
            Some("Docs/Sub/Deep.bin")
        );
        assert_eq!(
            resolve_in(&tree, "DOCS/note.TXT").as_deref(),
            Some("Docs/Note.txt")
        );
        assert_eq!(
            resolve_in(&tree, "docs/new/x").as_deref(),
            Some("Docs/new/x"),
            "the rest stays as given after a miss"
        );
        assert_eq!(resolve_in(&tree, "Docs/new"), None, "a miss as spelled");
        assert_eq!(resolve_in(&tree, "nothing/at/all"), None);
        assert_eq!(resolve_in(&tree, ""), None, "the root");
    }

    #[test]
    fn refuses_real_paths_that_are_too_long() {
        // The Kelvin sign is three bytes and folds to the one-byte `k`, so a real spelling can
        // be longer than the path asked for.
        let mut grows = VfsPath::root();
        for _ in 0..15 {
            grows = grows.join(&"d".repeat(255)).unwrap();
        }
        // 3,842 bytes, then 85 more asked for and 255 found.
        let path = grows.join("dd").unwrap().join(&"k".repeat(85)).unwrap();
        let real = resolve_path(
            &path,
            |_| Some(()),
            |(), name| {
                if name.starts_with('k') {
                    Found::Variant("\u{212a}".repeat(85))
                } else {
                    Found::Exact
                }
            },
        );
        assert_eq!(real, None);
    }
}
