//! Property tests: encoders and decoders agree, decoders never panic on arbitrary bytes, and the
//! wildcard matcher agrees with a direct recursive reading of MS-FSA 2.1.4.4.

use proptest::prelude::*;
use smb3d_fscc::*;
use smb3d_wire::{FileTime, FileTimes, Writer};

const DIR_CLASSES: [u8; 12] = [1, 2, 3, 12, 37, 38, 60, 63, 78, 79, 80, 81];

fn name() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('a'),
            Just('Z'),
            Just('.'),
            Just('\u{e9}'),
            Just('\u{1F600}')
        ],
        1..20,
    )
    .prop_map(|v| v.into_iter().collect())
}

#[derive(Debug, Clone)]
struct Owned {
    fields: (u32, u64, u64, u64, u32, u32, u32, u64, [u8; 16]),
    short: String,
    name: String,
}

fn owned() -> impl Strategy<Value = Owned> {
    (
        (
            any::<u32>(),
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<[u8; 16]>(),
        ),
        "[A-Z0-9~]{0,8}(\\.[A-Z]{1,3})?",
        name(),
    )
        .prop_map(|(fields, short, name)| Owned {
            fields,
            short,
            name,
        })
}

impl Owned {
    fn entry(&self) -> DirEntry<'_> {
        let (index, t, eof, alloc, attrs, ea, tag, id, id128) = self.fields;
        DirEntry {
            file_index: index,
            times: FileTimes {
                creation: FileTime(t),
                last_access: FileTime(t ^ 1),
                last_write: FileTime(t ^ 2),
                change: FileTime(t ^ 3),
            },
            end_of_file: eof,
            allocation_size: alloc,
            file_attributes: FileAttributes(attrs),
            ea_size: ea,
            reparse_tag: tag,
            file_id: id,
            file_id_128: id128,
            short_name: &self.short,
            name: &self.name,
            mac: None,
        }
    }
}

proptest! {
    #[test]
    fn directory_listings_round_trip(
        class in proptest::sample::select(&DIR_CLASSES[..]),
        entries in proptest::collection::vec(owned(), 0..8),
        limit in 0usize..2000,
    ) {
        let class = FileInformationClass(class);
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        let mut list = DirListEncoder::new(class, &w, limit).unwrap();
        let fitted = entries.iter().take_while(|e| list.push(&mut w, &e.entry())).count();
        prop_assert_eq!(list.count(), fitted);
        prop_assert!(buf.len() <= limit);
        let decoded: Vec<_> = dir_list(class, &buf).unwrap().map(|e| e.unwrap()).collect();
        prop_assert_eq!(decoded.len(), fitted);
        for (d, e) in decoded.iter().zip(&entries) {
            prop_assert_eq!(&d.name, &e.name);
            prop_assert_eq!(d.file_index, e.fields.0);
            // Re-encoding what was decoded gives the same bytes.
            let mut again = Vec::new();
            let mut w2 = Writer::new(&mut again);
            let mut one = DirListEncoder::new(class, &w2, usize::MAX).unwrap();
            prop_assert!(one.push(&mut w2, &d.as_entry()));
            let mut first = Vec::new();
            let mut w3 = Writer::new(&mut first);
            let mut orig = DirListEncoder::new(class, &w3, usize::MAX).unwrap();
            prop_assert!(orig.push(&mut w3, &e.entry()));
            prop_assert_eq!(again, first);
        }
    }

    #[test]
    fn ea_lists_round_trip(
        eas in proptest::collection::vec(
            (any::<u8>(), proptest::collection::vec(1u8..=255, 0..20), proptest::collection::vec(any::<u8>(), 0..40)),
            0..6,
        ),
    ) {
        let mut buf = Vec::new();
        let mut w = Writer::new(&mut buf);
        let mut list = FullEaListEncoder::new(&w, usize::MAX);
        for (flags, name, value) in &eas {
            let ea = FullEa { flags: EaFlags(*flags), name, value };
            prop_assert!(list.push(&mut w, &ea));
        }
        let back: Vec<_> = full_ea_list(&buf).map(|e| e.unwrap()).collect();
        prop_assert_eq!(back.len(), eas.len());
        for (b, (flags, name, value)) in back.iter().zip(&eas) {
            prop_assert_eq!(b.flags, EaFlags(*flags));
            prop_assert_eq!(b.name, &name[..]);
            prop_assert_eq!(b.value, &value[..]);
        }
    }

    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        for class in DIR_CLASSES {
            for e in dir_list(FileInformationClass(class), &bytes).unwrap() {
                let _ = e;
            }
        }
        full_ea_list(&bytes).for_each(drop);
        get_ea_list(&bytes).for_each(drop);
        file_stream_list(&bytes).for_each(drop);
        let _ = FileAllInformation::decode(&bytes);
        let _ = FileRenameInformation::decode(&bytes);
        let _ = FileRenameInformationEx::decode(&bytes);
        let _ = FileLinkInformationEx::decode(&bytes);
        let _ = FileNameInformation::decode(&bytes);
        let _ = FileFsVolumeInformation::decode(&bytes);
        let _ = FileFsAttributeInformation::decode(&bytes);
        let _ = FileFsLabelInformation::decode(&bytes);
    }

    #[test]
    fn matcher_agrees_with_recursive_reading(
        expr in "[ab.*?<>\"]{0,7}",
        name in "[abAB.]{0,7}",
        ignore_case in any::<bool>(),
    ) {
        prop_assert_eq!(
            is_name_in_expression(&expr, &name, ignore_case),
            reference(&expr, &name, ignore_case),
            "{:?} vs {:?}", expr, name
        );
    }
}

/// MS-FSA 2.1.4.4 read directly, by backtracking (exponential, fine for short inputs).
fn reference(expr: &str, name: &str, ignore_case: bool) -> bool {
    let e: Vec<char> = expr.chars().collect();
    let n: Vec<char> = name.chars().collect();
    if e.is_empty() || n.is_empty() {
        return e.is_empty() && n.is_empty();
    }
    if expr == "*" || expr == "*.*" {
        return true;
    }
    let last_period = n.iter().rposition(|c| *c == '.');
    fn go(e: &[char], n: &[char], at: usize, last_period: Option<usize>, ic: bool) -> bool {
        let Some((&p, rest)) = e.split_first() else {
            return at == n.len();
        };
        let c = n.get(at).copied();
        match p {
            '*' => {
                go(rest, n, at, last_period, ic)
                    || (c.is_some() && go(e, n, at + 1, last_period, ic))
            }
            '<' => {
                go(rest, n, at, last_period, ic)
                    || c.is_some_and(|c| c != '.' || last_period.is_some_and(|l| l > at))
                        && go(e, n, at + 1, last_period, ic)
            }
            '?' => c.is_some() && go(rest, n, at + 1, last_period, ic),
            '>' => match c {
                None | Some('.') => go(rest, n, at, last_period, ic),
                Some(_) => go(rest, n, at + 1, last_period, ic),
            },
            '"' => match c {
                None => go(rest, n, at, last_period, ic),
                Some('.') => go(rest, n, at + 1, last_period, ic),
                Some(_) => false,
            },
            lit => {
                c.is_some_and(|c| {
                    if ic {
                        c.to_lowercase().eq(lit.to_lowercase())
                    } else {
                        c == lit
                    }
                }) && go(rest, n, at + 1, last_period, ic)
            }
        }
    }
    go(&e, &n, 0, last_period, ignore_case)
}
