//! 8.3 names (MS-FSCC 2.1.5.2.1). A name that already is one serves as its own short name; on
//! a share with `short_names`, every other name gets a mangled one derived from the long name
//! alone: the same on every node and after every restart, with no state kept. The base is the
//! first two characters of the long name that may stand in an 8.3 name, then a hash of the
//! whole long name in base 36 to six characters, `~` and one more hash character; the extension
//! is the first three such characters of the last extension ("ABX3K9~Q.TXT"). Five or more
//! hash characters (36^5, 60 million values) keep two names of a directory from sharing a
//! short name but for a rare collision, in which the first listed wins (MS-FSA leaves
//! uniqueness to the file system; a long name that equals a short name wins over it).

use smb3d_vfs::{
    Access, DirEntry, Disposition, Kind, OpenRequest, Vfs, VfsFile, VfsPath, VfsResult,
};

/// Characters 8.3 names may not contain besides control characters (MS-FSCC 2.1.5.2.1), and
/// the space, which Windows does not put in the short names it makes.
const ILLEGAL_IN_SHORT: &[char] = &[
    '"', '*', '+', ',', '/', ':', ';', '<', '=', '>', '?', '[', '\\', ']', '|', ' ',
];

/// Longest 8.3 name: eight characters, a dot and three.
const MAX_LEN: usize = 12;
/// Characters of a mangled base before the `~`, and the hash characters after it.
const BASE_LEN: usize = 6;
const PREFIX_MAX: usize = 2;

fn is_short_char(c: char) -> bool {
    c.is_ascii() && !c.is_ascii_control() && !ILLEGAL_IN_SHORT.contains(&c)
}

/// Whether `name` is a valid 8.3 name, which is its own short name.
pub(crate) fn is_8dot3(name: &str) -> bool {
    if name == "." || name == ".." {
        return true;
    }
    let (base, ext) = match name.split_once('.') {
        Some((base, ext)) => (base, Some(ext)),
        None => (name, None),
    };
    let valid = |part: &str, max: usize| {
        part.len() <= max && part.chars().all(|c| is_short_char(c) && c != '.')
    };
    !base.is_empty() && valid(base, 8) && ext.is_none_or(|ext| !ext.is_empty() && valid(ext, 3))
}

/// A short name, kept inline: listings make one per entry without allocating.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ShortName {
    bytes: [u8; MAX_LEN],
    len: u8,
}

impl ShortName {
    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII is ever pushed.
        let bytes = self.bytes.get(..usize::from(self.len)).unwrap_or_default();
        std::str::from_utf8(bytes).unwrap_or("")
    }

    fn push(&mut self, c: u8) {
        if let Some(slot) = self.bytes.get_mut(usize::from(self.len)) {
            *slot = c;
            self.len += 1;
        }
    }
}

impl std::fmt::Debug for ShortName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_str().fmt(f)
    }
}

/// The short name a share with short names gives `name`; `None` when `name` is an 8.3 name
/// already (it serves as both).
pub(crate) fn short_name(name: &str) -> Option<ShortName> {
    (!is_8dot3(name)).then(|| mangle(name))
}

/// The characters of `part` that may stand in a short name, upper-cased.
fn short_chars(part: &str) -> impl Iterator<Item = u8> + '_ {
    part.chars()
        .filter(|&c| is_short_char(c) && c != '.' && c != '~')
        .map(|c| c.to_ascii_uppercase() as u8)
}

fn mangle(name: &str) -> ShortName {
    // FNV-1a (64 bits) of the UTF-8 long name: stable across runs, machines and versions.
    let mut hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let mut digit = || {
        let d = (hash % 36) as u8;
        hash /= 36;
        if d < 10 { b'0' + d } else { b'A' + d - 10 }
    };
    let (base, ext) = match name.rsplit_once('.') {
        Some((base, ext)) if !base.is_empty() => (base, ext),
        _ => (name, ""),
    };
    let mut short = ShortName {
        bytes: [0; MAX_LEN],
        len: 0,
    };
    for c in short_chars(base).take(PREFIX_MAX) {
        short.push(c);
    }
    while usize::from(short.len) < BASE_LEN {
        short.push(digit());
    }
    short.push(b'~');
    short.push(digit());
    let mut ext = short_chars(ext).take(3).peekable();
    if ext.peek().is_some() {
        short.push(b'.');
        ext.for_each(|c| short.push(c));
    }
    short
}

/// Whether a name a client sent has the form of a mangled short name, and so may name a file
/// by its short name: only then is a directory searched for it.
pub(crate) fn looks_mangled(name: &str) -> bool {
    let base = name.split_once('.').map_or(name, |(base, _)| base);
    is_8dot3(name) && base.len() == BASE_LEN + 2 && base.as_bytes().get(BASE_LEN) == Some(&b'~')
}

/// Whether `long`, an entry's name, has the short name `short` (compared without case, as
/// short names are matched).
pub(crate) fn has_short_name(long: &str, short: &str) -> bool {
    short_name(long).is_some_and(|s| s.as_str().eq_ignore_ascii_case(short))
}

/// The entry of the directory `dir` whose short name is `short`, when `short` has a mangled
/// name's form; for callers that looked `short` up as a name and found nothing (a real name
/// wins over a short one). One pass over the directory's names, hashing each: linear in the
/// directory's size, with nothing kept between requests.
pub(crate) fn find_child(dir: &dyn VfsFile, short: &str) -> VfsResult<Option<DirEntry>> {
    if !looks_mangled(short) {
        return Ok(None);
    }
    Ok(dir
        .read_dir()?
        .into_iter()
        .find(|entry| has_short_name(&entry.name, short)))
}

/// Replaces each component of `components` that is the short name of an entry of the
/// directory before it by that entry's name, from the first on, and stops at the first
/// directory that cannot be opened or holds no such entry (the open then fails as it would
/// have). Names put in come from the directory listings of the share's own VFS, which never
/// lists `.` or `..`, so no spelling can lead out of the share.
pub(crate) fn resolve(vfs: &dyn Vfs, components: &mut [String]) {
    let Some(last_mangled) = components.iter().rposition(|c| looks_mangled(c)) else {
        return;
    };
    for i in 0..=last_mangled {
        let Some((before, [name, ..])) = components.split_at_mut_checked(i) else {
            return;
        };
        if !looks_mangled(name) {
            continue;
        }
        let Ok(parent) = VfsPath::from_components(before.iter()) else {
            return;
        };
        let listing = OpenRequest {
            access: Access::Read,
            disposition: Disposition::Open,
            kind: Kind::Directory,
            create_mode: 0,
        };
        let Ok(dir) = vfs.open(&parent, &listing) else {
            return;
        };
        match dir.file.lookup_child(name) {
            Ok(Some(_)) => continue,
            Ok(None) => {}
            Err(_) => return,
        }
        match find_child(dir.file.as_ref(), name) {
            Ok(Some(entry)) => *name = entry.name,
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_dot_three_names_are_their_own() {
        for name in [
            "f",
            "README",
            "a.txt",
            "FILE1234.DOC",
            ".",
            "..",
            "readme.md",
            "A~1",
        ] {
            assert!(is_8dot3(name), "{name}");
            assert_eq!(short_name(name), None, "{name}");
        }
        for name in [
            "",
            "toolongbase",
            "a.long",
            "a.b.c",
            ".bashrc",
            "with space",
            "naïve",
            "a+b",
            "x.",
        ] {
            assert!(!is_8dot3(name), "{name}");
        }
    }

    /// Golden values: a short name must stay the same across versions, nodes and restarts,
    /// since clients keep them (in paths, in shortcuts).
    #[test]
    fn golden_mangled_names() {
        let cases = [
            ("averyverylongfilename.text", "AV0T8T~E.TEX"),
            ("averyverylongfilename2.text", "AVC07K~9.TEX"),
            ("Annual Report 2024.docx", "ANG3TJ~L.DOC"),
            ("with space.txt", "WI10S6~7.TXT"),
            ("lower case name.md", "LOOER5~G.MD"),
            (".bashrc", "BAG6HO~Y"),
            ("a.b.c.d", "ABXX64~0.D"),
            ("naïve résumé.pdf", "NAOYMK~Q.PDF"),
            ("日本語のファイル.txt", "WKTJ55~A.TXT"),
            ("x.", "XND0FB~O"),
            ("~~~~~~~~~~~~", "XDQ0UQ~Z"),
        ];
        let long = "l".repeat(255);
        let s = short_name(&long).unwrap();
        assert!(is_8dot3(s.as_str()) && looks_mangled(s.as_str()), "{s:?}");
        for (name, expected) in cases {
            let s = short_name(name).unwrap();
            assert!(is_8dot3(s.as_str()), "{name}: {s:?}");
            assert!(looks_mangled(s.as_str()), "{name}: {s:?}");
            assert!(has_short_name(name, &s.as_str().to_ascii_lowercase()));
            assert_eq!(s.as_str(), expected, "{name}");
        }
        assert_ne!(
            short_name("averyverylongfilename.text"),
            short_name("averyverylongfilename2.text")
        );
    }

    /// 100,000 names like those a program writes into one directory have distinct short
    /// names but for a handful.
    #[test]
    fn mangled_names_rarely_collide() {
        let mut seen = std::collections::HashSet::new();
        let collisions = (0..100_000)
            .filter(|i| !seen.insert(short_name(&format!("document number {i}.txt")).unwrap()))
            .count();
        assert!(collisions <= 100, "{collisions}");
    }

    fn make(vfs: &dyn Vfs, path: &str, kind: Kind) {
        let request = OpenRequest {
            access: Access::ReadWrite,
            disposition: Disposition::Create,
            kind,
            create_mode: 0o755,
        };
        vfs.open(&VfsPath::parse(path).unwrap(), &request).unwrap();
    }

    fn short(name: &str) -> String {
        short_name(name).unwrap().as_str().to_owned()
    }

    #[test]
    fn paths_resolve_through_short_names() {
        let vfs = smb3d_vfs::MemoryVfs::new();
        make(&vfs, "Long Directory Name", Kind::Directory);
        make(&vfs, "Long Directory Name/A long file name.txt", Kind::File);
        let mut path = vec![
            short("Long Directory Name").to_ascii_lowercase(),
            short("A long file name.txt"),
        ];
        resolve(&vfs, &mut path);
        assert_eq!(path, ["Long Directory Name", "A long file name.txt"]);
        // A name that exists as spelled wins over the short name of another entry.
        let clash = short("Another long name.txt");
        make(&vfs, "Another long name.txt", Kind::File);
        make(&vfs, &clash, Kind::File);
        let mut path = vec![clash.clone()];
        resolve(&vfs, &mut path);
        assert_eq!(path, [clash]);
        // A component that names nothing stops the resolution there.
        let mut path = vec!["AB1234~5".to_owned(), short("A long file name.txt")];
        resolve(&vfs, &mut path);
        assert_eq!(path[1], short("A long file name.txt"));
    }

    /// A symlink out of the share is listed by its own name: resolving its short name gives
    /// that name, which the VFS then refuses to follow, never a path outside.
    #[test]
    fn resolution_stays_in_the_share() {
        let vfs = smb3d_vfs::MemoryVfs::new();
        vfs.symlink("../outside", &VfsPath::parse("a link leaving").unwrap())
            .unwrap();
        let mut path = vec![short("a link leaving"), "x".to_owned()];
        resolve(&vfs, &mut path);
        assert_eq!(path, ["a link leaving", "x"]);
        let joined = VfsPath::from_components(&path).unwrap();
        assert_eq!(
            vfs.stat(&joined).err(),
            Some(smb3d_vfs::VfsError::OutsideShare)
        );
        for name in [".", ".."] {
            assert!(!looks_mangled(name) && short_name(name).is_none());
        }
    }

    #[test]
    fn only_mangled_forms_are_looked_up() {
        assert!(looks_mangled("AB1234~5.TXT"));
        assert!(looks_mangled("ab1234~5"));
        assert!(!looks_mangled("README.TXT"));
        assert!(!looks_mangled("AB1234~5.TEXT"));
        assert!(!looks_mangled("AB12~5"));
        assert!(!looks_mangled("..\\x~1"));
    }
}
