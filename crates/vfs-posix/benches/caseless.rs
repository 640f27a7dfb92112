//! What case-insensitive lookups cost in a directory of 20,000 entries, against the same
//! operations with case-sensitive names, with and without the listing cache. Run with
//! `cargo bench -p smb3d-vfs-posix --bench caseless`. It prints the median, over a few rounds,
//! of the CPU time (user and system) per operation of the calling thread, which other load on
//! the machine disturbs less than wall-clock time. The numbers are recorded in `docs/vfs.md`.

use std::fs;
use std::hint::black_box;
use std::time::Duration;

use rustix::time::{ClockId, clock_gettime};
use smb3d_vfs::casefold::EntryChooser;
use smb3d_vfs::{Access, CaseSensitivity, Disposition, Kind, OpenRequest, Vfs, VfsPath};
use smb3d_vfs_posix::{ListingCacheLimits, PosixVfs};

const ENTRIES: usize = 20_000;
const ROUNDS: usize = 5;
/// Operations per round for the cheap cases and for those that list the directory.
const CHEAP: usize = 2000;
const LISTING: usize = 20;

fn path(text: &str) -> VfsPath {
    VfsPath::parse(text).unwrap()
}

fn cpu_time() -> Duration {
    let now = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// The median over `ROUNDS` of the mean CPU time of `ops` calls of `op`; `op` gets a number
/// that differs between all calls.
fn measure(ops: usize, mut op: impl FnMut(usize)) -> Duration {
    let mut rounds: Vec<Duration> = (0..ROUNDS)
        .map(|round| {
            let started = cpu_time();
            for i in 0..ops {
                op(round * ops + i);
            }
            (cpu_time() - started) / ops as u32
        })
        .collect();
    rounds.sort();
    rounds[ROUNDS / 2]
}

fn cell(time: Option<Duration>) -> String {
    time.map_or_else(|| "-".to_owned(), |time| format!("{time:.1?}"))
}

/// One row: the sensitive share, then the insensitive ones without and with the cache.
fn row(what: &str, times: [Option<Duration>; 3]) {
    let [exact, listing, cached] = times.map(cell);
    println!("| {what:<36} | {exact:>9} | {listing:>9} | {cached:>9} |");
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("Big");
    fs::create_dir(&big).unwrap();
    for i in 0..ENTRIES {
        fs::write(big.join(format!("Document-{i:05}.txt")), b"").unwrap();
    }
    let share = |case, cache| {
        PosixVfs::new(dir.path())
            .unwrap()
            .with_case_sensitivity(case)
            .with_listing_cache(cache)
    };
    let shares = [
        share(CaseSensitivity::Sensitive, None),
        share(CaseSensitivity::Insensitive, None),
        share(
            CaseSensitivity::Insensitive,
            Some(ListingCacheLimits::default()),
        ),
    ];
    // Spread over the directory, so that no one entry stays hot.
    let file = |i: usize| format!("Document-{:05}.txt", (i * 7919) % ENTRIES);
    let in_big = |i: usize| path(&format!("Big/{}", file(i)));
    // Operations that list the directory get fewer calls; `sensitive` says whether the
    // case-sensitive share can do the operation at all.
    let each = |sensitive: bool, op: &dyn Fn(&PosixVfs, usize)| {
        let [exact, listing, cached] = &shares;
        [
            sensitive.then(|| measure(CHEAP, |i| op(exact, i))),
            Some(measure(LISTING, |i| op(listing, i))),
            Some(measure(CHEAP, |i| op(cached, i))),
        ]
    };
    // Fill the cache first, as the first lookup in a directory does.
    let before = resident_bytes();
    shares[2].stat(&path("BIG/DOCUMENT-00000.TXT")).unwrap();
    let per_name = resident_bytes().saturating_sub(before) / ENTRIES;

    println!(
        "| {ENTRIES} entries{:<21} | sensitive | listing   | cached    |",
        ""
    );
    println!("|{:-<38}|{:-<11}|{:-<11}|{:-<11}|", "", "", "", "");
    row(
        "stat, as spelled",
        each(true, &|vfs, i| {
            black_box(vfs.stat(&in_big(i)).unwrap());
        }),
    );
    row(
        "stat, last component in another case",
        each(false, &|vfs, i| {
            let other = format!("Big/{}", file(i).to_uppercase());
            black_box(vfs.stat(&path(&other)).unwrap());
        }),
    );
    row(
        "stat, missing",
        each(true, &|vfs, i| {
            black_box(vfs.stat(&path(&format!("Big/missing-{i}"))).unwrap_err());
        }),
    );
    let read = OpenRequest {
        access: Access::Read,
        disposition: Disposition::Open,
        kind: Kind::File,
        create_mode: 0o644,
    };
    row(
        "open, as spelled",
        each(true, &|vfs, i| {
            black_box(vfs.open(&in_big(i), &read).unwrap());
        }),
    );
    let create = OpenRequest {
        access: Access::ReadWrite,
        disposition: Disposition::Create,
        ..read
    };
    let made = |share: usize, i: usize| path(&format!("Big/new-{share}-{i}"));
    let mut created = [0; 3];
    let times = [0, 1, 2].map(|share| {
        let ops = if share == 1 { LISTING } else { CHEAP };
        created[share] = ROUNDS * ops;
        Some(measure(ops, |i| {
            black_box(shares[share].open(&made(share, i), &create).unwrap());
        }))
    });
    row("create a new name", times);
    for (share, count) in created.into_iter().enumerate() {
        for i in 0..count {
            shares[share].unlink(&made(share, i)).unwrap();
        }
    }

    let listing = OpenRequest {
        access: Access::MetadataOnly,
        kind: Kind::Directory,
        ..read
    };
    let handles = shares
        .each_ref()
        .map(|vfs| vfs.open(&path("Big"), &listing).unwrap().file);
    let [exact_big, listing_big, cached_big] = &handles;
    let as_spelled = |i: usize, handle: &dyn smb3d_vfs::VfsFile| {
        black_box(handle.lookup_child(&file(i)).unwrap());
    };
    row(
        "lookup_child, as spelled",
        [
            Some(measure(CHEAP, |i| as_spelled(i, exact_big.as_ref()))),
            Some(measure(CHEAP, |i| as_spelled(i, listing_big.as_ref()))),
            Some(measure(CHEAP, |i| as_spelled(i, cached_big.as_ref()))),
        ],
    );
    let other_case = |i: usize, handle: &dyn smb3d_vfs::VfsFile| {
        black_box(handle.lookup_child(&file(i).to_uppercase()).unwrap());
    };
    row(
        "lookup_child, another case",
        [
            None,
            Some(measure(LISTING, |i| other_case(i, listing_big.as_ref()))),
            Some(measure(CHEAP, |i| other_case(i, cached_big.as_ref()))),
        ],
    );
    let read_dir = measure(LISTING, |_| {
        black_box(exact_big.read_dir().unwrap());
    });
    row("read_dir, for comparison", [Some(read_dir), None, None]);
    let names: Vec<String> = exact_big
        .read_dir()
        .unwrap()
        .into_iter()
        .map(|entry| entry.name)
        .collect();
    let matching = measure(LISTING, |i| {
        let mut chooser = EntryChooser::new(&names[i % ENTRIES]);
        for name in &names {
            chooser.offer(name);
        }
        black_box(chooser.choice());
    });
    row(
        "matching 20,000 names, no I/O",
        [None, Some(matching), None],
    );
    println!("\nThe cached names take about {per_name} bytes each (resident memory).");
}

/// The resident set size of the process.
fn resident_bytes() -> usize {
    let statm = fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}
