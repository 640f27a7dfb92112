//! Random operation sequences run on `MemoryVfs` and `PosixVfs` side by side must give the
//! same results: the in-memory back end is only useful for testing the server if it behaves
//! like the real one, including on errors. Each path operation goes through a case-sensitive
//! or a case-insensitive view of the same tree, at random, with names that differ only in
//! case, so that both back ends must also agree on which spelling a name designates.

use std::fmt::Debug;

use smb3d_vfs::{
    Access, CaseSensitivity, Disposition, FileStat, FileType, Kind, MemoryVfs, OpenRequest, Vfs,
    VfsFile, VfsPath, VfsResult,
};
use smb3d_vfs_posix::{ListingCacheLimits, PosixVfs, Resolver};

const SEEDS: u64 = 48;
const STEPS: usize = 400;
const NAMES: [&str; 5] = ["a", "A", "b", "B", "c"];
const TARGETS: [&str; 12] = [
    "a", "b/c", "..", "../a", "/etc", "a/", ".", "missing", "b/../a", "c/c/c", "../../x", "b",
];

/// xorshift64*: deterministic, so a failing seed replays exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    fn path(&mut self) -> VfsPath {
        let depth = self.below(4);
        VfsPath::from_components((0..depth).map(|_| self.pick(&NAMES))).unwrap()
    }
}

/// What can be compared across back ends: inode numbers, devices, times and directory sizes
/// legitimately differ.
#[derive(Debug, PartialEq)]
struct Shape {
    file_type: FileType,
    size: Option<u64>,
    nlink: u64,
}

fn shape(stat: FileStat) -> Shape {
    Shape {
        file_type: stat.file_type,
        size: (stat.file_type != FileType::Directory).then_some(stat.size),
        nlink: stat.nlink,
    }
}

fn same<T: PartialEq + Debug>(log: &[String], memory: T, posix: T) {
    assert_eq!(memory, posix, "memory vs posix after:\n{}", log.join("\n"));
}

fn run(seed: u64, resolver: Resolver, cache: ListingCacheLimits) {
    let dir = tempfile::tempdir().unwrap();
    let posix_view = |case| {
        PosixVfs::with_resolver(dir.path(), resolver)
            .unwrap()
            .with_case_sensitivity(case)
            .with_listing_cache(Some(cache))
    };
    let memory = MemoryVfs::new();
    let views = [CaseSensitivity::Sensitive, CaseSensitivity::Insensitive]
        .map(|case| (memory.clone().with_case_sensitivity(case), posix_view(case)));
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut handles: Vec<(Box<dyn VfsFile>, Box<dyn VfsFile>)> = Vec::new();
    let mut log = Vec::new();
    for _ in 0..STEPS {
        let (memory, posix) = &views[rng.below(views.len())];
        log.push(format!("-- {:?}", memory.case_sensitivity()));
        match rng.below(10) {
            0..=2 => {
                let path = rng.path();
                let req = OpenRequest {
                    access: rng.pick(&[
                        Access::MetadataOnly,
                        Access::Read,
                        Access::Write,
                        Access::ReadWrite,
                    ]),
                    disposition: rng.pick(&[
                        Disposition::Open,
                        Disposition::Create,
                        Disposition::OpenOrCreate,
                        Disposition::Overwrite,
                        Disposition::OverwriteOrCreate,
                    ]),
                    kind: rng.pick(&[Kind::File, Kind::Directory, Kind::Any]),
                    create_mode: 0o755,
                };
                log.push(format!("open {path:?} {req:?}"));
                let (m, p) = (memory.open(&path, &req), posix.open(&path, &req));
                let outcome = |opened: &VfsResult<smb3d_vfs::Opened>| {
                    opened
                        .as_ref()
                        .map(|o| (o.created, shape(o.file.stat().unwrap())))
                        .map_err(|e| *e)
                };
                same(&log, outcome(&m), outcome(&p));
                if let (Ok(m), Ok(p)) = (m, p) {
                    handles.push((m.file, p.file));
                    if handles.len() > 8 {
                        handles.remove(0);
                    }
                }
            }
            3 => {
                let path = rng.path();
                log.push(format!("stat {path:?}"));
                same(
                    &log,
                    memory.stat(&path).map(shape),
                    posix.stat(&path).map(shape),
                );
            }
            4 => {
                let path = rng.path();
                log.push(format!("unlink {path:?}"));
                same(&log, memory.unlink(&path), posix.unlink(&path));
            }
            5 => {
                let (from, to, replace) = (rng.path(), rng.path(), rng.below(2) == 0);
                log.push(format!("rename {from:?} {to:?} {replace}"));
                same(
                    &log,
                    memory.rename(&from, &to, replace),
                    posix.rename(&from, &to, replace),
                );
            }
            6 => {
                let (target, link) = (rng.pick(&TARGETS), rng.path());
                log.push(format!("symlink {target:?} {link:?}"));
                same(
                    &log,
                    memory.symlink(target, &link),
                    posix.symlink(target, &link),
                );
            }
            _ if handles.is_empty() => {}
            _ => {
                let index = rng.below(handles.len());
                let (m, p) = &handles[index];
                let offset = rng.below(9000) as u64;
                match rng.below(10) {
                    0 => {
                        let data = vec![rng.next() as u8; rng.below(5000)];
                        log.push(format!("#{index} write {} at {offset}", data.len()));
                        same(&log, m.write_at(&data, offset), p.write_at(&data, offset));
                    }
                    1 => {
                        let (mut mb, mut pb) = (vec![0; 6000], vec![0; 6000]);
                        log.push(format!("#{index} read at {offset}"));
                        let (mr, pr) = (m.read_at(&mut mb, offset), p.read_at(&mut pb, offset));
                        same(&log, mr, pr);
                        same(&log, mb, pb);
                    }
                    2 => {
                        log.push(format!("#{index} set_len {offset}"));
                        same(&log, m.set_len(offset), p.set_len(offset));
                    }
                    3 => {
                        log.push(format!("#{index} read_dir"));
                        let listing = |file: &dyn VfsFile| {
                            file.read_dir().map(|entries| {
                                let mut entries: Vec<_> =
                                    entries.into_iter().map(|e| (e.name, e.file_type)).collect();
                                entries.sort_by(|x, y| x.0.cmp(&y.0));
                                entries
                            })
                        };
                        same(&log, listing(m.as_ref()), listing(p.as_ref()));
                    }
                    4 => {
                        let name = rng.pick(&NAMES);
                        log.push(format!("#{index} stat_child {name}"));
                        same(
                            &log,
                            m.stat_child(name).map(shape),
                            p.stat_child(name).map(shape),
                        );
                    }
                    8 => {
                        let name = rng.pick(&NAMES);
                        log.push(format!("#{index} lookup_child {name}"));
                        let found = |file: &dyn VfsFile| {
                            file.lookup_child(name)
                                .map(|found| found.map(|(name, stat)| (name, shape(stat))))
                        };
                        same(&log, found(m.as_ref()), found(p.as_ref()));
                    }
                    5 => {
                        let len = rng.below(9000) as u64;
                        log.push(format!("#{index} allocate {offset} {len}"));
                        same(&log, m.allocate(offset, len), p.allocate(offset, len));
                    }
                    6 => {
                        let name = rng.pick(&["user.a", "user.b", "user.", "plain"]);
                        let value = vec![b'v'; rng.below(100)];
                        log.push(format!("#{index} set_xattr {name} {}", value.len()));
                        same(&log, m.set_xattr(name, &value), p.set_xattr(name, &value));
                    }
                    7 => {
                        let name = rng.pick(&["user.a", "user.b"]);
                        log.push(format!("#{index} get/remove xattr {name}"));
                        same(&log, m.get_xattr(name), p.get_xattr(name));
                        if rng.below(2) == 0 {
                            same(&log, m.remove_xattr(name), p.remove_xattr(name));
                        }
                        let user = |file: &dyn VfsFile| {
                            file.list_xattr().map(|names| {
                                let mut names: Vec<String> = names
                                    .into_iter()
                                    .filter(|n| n.starts_with("user."))
                                    .collect();
                                names.sort();
                                names
                            })
                        };
                        same(&log, user(m.as_ref()), user(p.as_ref()));
                    }
                    _ => {
                        log.push(format!("#{index} stat"));
                        same(&log, m.stat().map(shape), p.stat().map(shape));
                    }
                }
            }
        }
    }
}

#[test]
fn memory_and_posix_agree() {
    for seed in 0..SEEDS {
        let resolver = if seed % 2 == 0 {
            Resolver::Openat2
        } else {
            Resolver::Walk
        };
        // Every third seed caches every directory's names, in at most two directories at a
        // time, so that listings are cached, kept current and evicted all along.
        let cache = if seed % 3 == 0 {
            ListingCacheLimits {
                min_entries: 0,
                max_directories: 2,
                max_names: 262_144,
            }
        } else {
            ListingCacheLimits::default()
        };
        run(seed, resolver, cache);
    }
}
