//! The layers of the server crate (docs/design.md, "Layers of the server"): a module imports
//! only from its own layer and the layers below it, only the dispatcher calls the handlers,
//! every folder of `src/` is a layer, and the design's pictures list the server's layers and
//! the workspace's crates as they are. Reads the crate's sources; a failure names each import
//! that breaks a rule.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom first: a folder of `src/`, or "" for the modules at the crate root.
const LAYERS: &[&str] = &[
    "", "security", "fs", "state", "request", "handlers", "pipeline", "admin",
];

/// The crate's doors, which re-export from every layer and belong to none.
const DOORS: &[&str] = &["lib.rs", "fuzzing.rs"];

/// The one module outside `handlers/` that may import from it.
const DISPATCHER: &str = "pipeline/dispatch.rs";

/// How the design names the modules at the crate root in its picture of the layers.
const ROOT_IN_PICTURE: &str = "*.rs";

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `.rs` files under `dir`, as paths relative to `src/` with `/` separators.
fn sources(dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(src()).unwrap();
            out.push(relative.to_str().unwrap().replace('\\', "/"));
        }
    }
}

/// The module path of a source file: `state/session.rs` is `[state, session]`,
/// `state/connection/mod.rs` is `[state, connection]`.
fn module_path(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The source with comments, string and character literals blanked out, so that only code is
/// left to look for paths in.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else if i >= chars.len() {
                    break;
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if let Some(hashes) = raw_string_at(&chars, i) {
            // r"..." or r#"..."#: ends at a quote followed by as many hashes.
            i += 2 + hashes;
            while i < chars.len() && !(chars[i] == '"' && (1..=hashes).all(|n| at(i + n) == '#')) {
                i += 1;
            }
            i += 1 + hashes;
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            // A character literal ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The number of hashes of a raw string that starts at `chars[i]` (`r"`, `r#"`, `br"`...).
fn raw_string_at(chars: &[char], i: usize) -> Option<usize> {
    let before = i.checked_sub(1).and_then(|b| chars.get(b)).copied();
    if chars.get(i) != Some(&'r') || before.is_some_and(|b| is_ident(b) && b != 'b') {
        return None;
    }
    let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
    (chars.get(i + 1 + hashes) == Some(&'"')).then_some(hashes)
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A path of the crate that a module's code names, absolute, as its segments.
struct Named {
    path: Vec<String>,
    /// Written from `crate::` (rather than `super::`).
    from_root: bool,
}

/// The paths of the crate a module's code names (`crate::` and `super::` resolved): `use
/// crate::{a::b, c}` names `[a, b]` and `[c]`.
fn crate_paths(file: &str, code: &str) -> Vec<Named> {
    let module = module_path(file);
    let chars: Vec<char> = code.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !is_ident(chars[i - 1]) && chars[i - 1] != ':';
        let rest: String = chars[i..chars.len().min(i + 7)].iter().collect();
        let base = if starts_word && rest.starts_with("crate::") {
            i += "crate::".len();
            Some((Vec::new(), true))
        } else if starts_word && rest.starts_with("super::") {
            let mut base = module.clone();
            while chars[i..].starts_with(&['s', 'u', 'p', 'e', 'r', ':', ':']) {
                base.pop();
                i += "super::".len();
            }
            Some((base, false))
        } else {
            None
        };
        let Some((base, from_root)) = base else {
            i += 1;
            continue;
        };
        let (tails, end) = path_tails(&chars, i);
        for tail in tails {
            let mut path = base.clone();
            path.extend(tail);
            found.push(Named { path, from_root });
        }
        i = end;
    }
    found
}

/// The paths that start at `chars[i]`: one, or each of a `{...}` group.
fn path_tails(chars: &[char], mut i: usize) -> (Vec<Vec<String>>, usize) {
    let mut segments = Vec::new();
    loop {
        if chars.get(i) == Some(&'{') {
            let mut tails = Vec::new();
            i += 1;
            loop {
                while chars.get(i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                    i += 1;
                }
                match chars.get(i) {
                    None => break,
                    Some('}') => {
                        i += 1;
                        break;
                    }
                    _ => {}
                }
                let (inner, end) = path_tails(chars, i);
                for tail in inner {
                    let mut path = segments.clone();
                    path.extend(tail);
                    tails.push(path);
                }
                // Skip an `as` rename or anything else up to the next item.
                i = end;
                while chars.get(i).is_some_and(|c| *c != ',' && *c != '}') {
                    i += 1;
                }
            }
            return (tails, i);
        }
        let start = i;
        while chars.get(i).is_some_and(|c| is_ident(*c) || *c == '*') {
            i += 1;
        }
        if i == start {
            return (vec![segments], i);
        }
        segments.push(chars[start..i].iter().collect());
        if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
            i += 2;
        } else {
            return (vec![segments], i);
        }
    }
}

/// The layer of a module path: its folder, or the crate root's.
fn layer_of(path: &[String], folders: &[String]) -> Option<usize> {
    let first = path.first().map_or("", String::as_str);
    let layer = if folders.iter().any(|f| f == first) {
        first
    } else {
        ""
    };
    LAYERS.iter().position(|l| *l == layer)
}

/// The folders of `src/`.
fn folders() -> Vec<String> {
    let mut folders: Vec<String> = fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect();
    folders.sort();
    folders
}

/// Every rule each module breaks, as lines to show.
fn violations() -> Vec<String> {
    let folders = folders();
    let mut files = Vec::new();
    sources(&src(), &mut files);
    let mut problems = Vec::new();
    for folder in &folders {
        if !LAYERS.contains(&folder.as_str()) {
            problems.push(format!(
                "src/{folder}/ is in no layer (LAYERS, docs/design.md)"
            ));
        }
    }
    for file in &files {
        if DOORS.contains(&file.as_str()) {
            continue;
        }
        let own = module_path(file);
        let Some(layer) = layer_of(&own, &folders) else {
            continue;
        };
        let code = code_only(&fs::read_to_string(src().join(file)).unwrap());
        for Named { path, from_root } in crate_paths(file, &code) {
            let Some(first) = path.first() else {
                continue;
            };
            if first == "*" || first == "self" {
                continue;
            }
            let named = path.join("::");
            let is_module = folders.contains(first) || src().join(format!("{first}.rs")).exists();
            if !is_module && from_root {
                problems.push(format!(
                    "{file}: crate::{named} goes through a re-export of lib.rs; name the module"
                ));
                continue;
            }
            if !is_module {
                continue;
            }
            let Some(target) = layer_of(&path, &folders) else {
                continue;
            };
            if target > layer {
                problems.push(format!(
                    "{file} ({}) imports crate::{named} from the layer above ({})",
                    shown(LAYERS[layer]),
                    shown(LAYERS[target])
                ));
            }
            if first == "handlers" && !file.starts_with("handlers/") && file != DISPATCHER {
                problems.push(format!(
                    "{file} imports crate::{named}: only the dispatcher ({DISPATCHER}) calls handlers"
                ));
            }
        }
    }
    problems.sort();
    problems.dedup();
    problems
}

fn shown(layer: &str) -> String {
    if layer.is_empty() {
        "crate root".into()
    } else {
        format!("{layer}/")
    }
}

#[test]
fn no_module_imports_from_a_layer_above_it() {
    let problems = violations();
    assert!(
        problems.is_empty(),
        "{} imports break the layers:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The lines of the fenced block that follows the heading `heading` in docs/design.md.
fn picture(heading: &str) -> Vec<String> {
    let design = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/design.md");
    let text = fs::read_to_string(design).unwrap();
    let after = text
        .split_once(heading)
        .unwrap_or_else(|| panic!("docs/design.md has no {heading:?}"))
        .1;
    let block = after.split("```").nth(1).expect("a fenced block after it");
    block.lines().skip(1).map(str::to_owned).collect()
}

#[test]
fn the_design_pictures_the_layers_as_they_are() {
    // Top first, as drawn: each layer's line starts with its folder.
    let drawn: Vec<String> = picture("## Layers of the server")
        .iter()
        .filter_map(|line| {
            let first = line.split_whitespace().next()?;
            if first == ROOT_IN_PICTURE {
                Some(String::new())
            } else {
                first.strip_suffix('/').map(str::to_owned)
            }
        })
        .collect();
    let layers: Vec<String> = LAYERS.iter().rev().map(|l| (*l).to_owned()).collect();
    assert_eq!(
        drawn, layers,
        "docs/design.md draws other layers than LAYERS"
    );
    let mut folders = folders();
    let mut named: Vec<String> = LAYERS
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| (*l).to_owned())
        .collect();
    folders.sort();
    named.sort();
    assert_eq!(folders, named, "the folders of src/ are not the layers");
}

#[test]
fn the_design_pictures_every_crate() {
    let drawn = picture("## Crates").join("\n");
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for entry in fs::read_dir(crates).unwrap() {
        let path = entry.unwrap().path();
        if path.join("Cargo.toml").exists() {
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            assert!(
                drawn.contains(&format!("{name}/")),
                "docs/design.md does not draw crates/{name}"
            );
        }
    }
}

/// Shown with `--nocapture`: the modules of each layer.
#[test]
fn modules_per_layer() {
    let folders = folders();
    let mut files = Vec::new();
    sources(&src(), &mut files);
    let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
    for file in files.iter().filter(|f| !DOORS.contains(&f.as_str())) {
        if let Some(layer) = layer_of(&module_path(file), &folders) {
            *counts.entry(layer).or_default() += 1;
        }
    }
    for (layer, count) in counts.iter().rev() {
        println!("{:>12} {count}", shown(LAYERS[*layer]));
    }
    assert_eq!(counts.values().sum::<usize>() + DOORS.len(), files.len());
}
