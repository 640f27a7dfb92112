//! No information leaks (issue 8): every byte the server sends was written on purpose. This
//! test binary's allocator fills every new allocation and every freed one with a poison byte,
//! so a response that carried padding, a reserved field or unused buffer space taken from
//! memory the server did not initialise, or from a buffer it reused, would show a run of
//! poison. Every seed of the `server` fuzz target, a few hundred mutations of them and a
//! session touching every information class run against the in-memory share and against
//! `vfs-posix` on a temporary directory; no answer may hold the pattern.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::{AccessMask, NtStatus};
use smb3d_smb2::Command;
use smb3d_smb2::create::{CreateDisposition, CreateOptions};
use smb3d_smb2::query_info::InfoType;
use smb3d_testkit::client::Client;
use smb3d_testkit::harness::{self, TestServer};
use smb3d_testkit::{script, seeds};
use smb3d_vfs::{Access, Disposition, Kind, OpenRequest, Vfs, VfsPath};
use smb3d_vfs_posix::PosixVfs;

const POISON: u8 = 0xA5;
/// A run this long of the poison byte in a response is a leak.
const LEAK_RUN: usize = 8;

struct Poisoning;

// SAFETY: every call goes to the system allocator with the caller's layout; the poison is
// written only inside the block that allocator returned, before it is handed out or after it
// was given back by its owner.
unsafe impl GlobalAlloc for Poisoning {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract.
        let block = unsafe { System.alloc(layout) };
        if !block.is_null() {
            // SAFETY: `block` holds `layout.size()` writable bytes.
            unsafe { block.write_bytes(POISON, layout.size()) };
        }
        block
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: `block` was allocated with `layout` and is no longer used by its owner.
        unsafe {
            block.write_bytes(POISON, layout.size());
            System.dealloc(block, layout);
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `realloc`'s contract.
        let moved = unsafe { System.realloc(block, layout, new_size) };
        if !moved.is_null() && new_size > layout.size() {
            // SAFETY: the block now holds `new_size` bytes; the tail is new.
            unsafe {
                moved
                    .add(layout.size())
                    .write_bytes(POISON, new_size - layout.size())
            };
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Poisoning = Poisoning;

fn leak_in(frame: &[u8]) -> Option<usize> {
    frame
        .windows(LEAK_RUN)
        .position(|w| w.iter().all(|&b| b == POISON))
}

fn check(frame: &[u8], context: &str) {
    if let Some(at) = leak_in(frame) {
        panic!("{context}: poison at byte {at} of a response frame: {frame:02x?}");
    }
}

#[test]
fn the_allocator_poisons_new_memory() {
    let buf: Vec<u8> = Vec::with_capacity(64);
    let spare = buf.spare_capacity_mut_copy();
    assert!(spare.iter().all(|&b| b == POISON));
}

/// The uninitialised capacity of a vector, read for the self-check above.
trait SpareCopy {
    fn spare_capacity_mut_copy(self) -> Vec<u8>;
}

impl SpareCopy for Vec<u8> {
    fn spare_capacity_mut_copy(mut self) -> Vec<u8> {
        self.spare_capacity_mut()
            .iter()
            // SAFETY: the allocator above wrote every byte of the block.
            .map(|b| unsafe { b.assume_init() })
            .collect()
    }
}

/// A server whose share is a `vfs-posix` tree with the in-memory share's layout.
fn posix_server(dir: &std::path::Path) -> TestServer {
    let root = dir.to_path_buf();
    TestServer::with_share(harness::settings(), Arc::new(NullProvider), move |_| {
        let vfs = PosixVfs::new(&root).unwrap();
        let make = |kind| OpenRequest {
            access: Access::ReadWrite,
            disposition: Disposition::Create,
            kind,
            create_mode: 0o755,
        };
        vfs.open(&VfsPath::parse("dir").unwrap(), &make(Kind::Directory))
            .unwrap();
        let file = vfs
            .open(&VfsPath::parse("dir/file.txt").unwrap(), &make(Kind::File))
            .unwrap();
        file.file.write_at(harness::FILE_CONTENT, 0).unwrap();
        vfs.symlink("dir", &VfsPath::parse("inside").unwrap())
            .unwrap();
        vfs.symlink("../outside", &VfsPath::parse("escape").unwrap())
            .unwrap();
        Arc::new(vfs)
    })
    .unwrap()
}

fn memory_server() -> TestServer {
    TestServer::new(harness::settings(), Arc::new(NullProvider)).unwrap()
}

/// Every seed, then mutations of them, on `server`.
fn seeds_and_mutations(server: &TestServer, label: &str) {
    let all = seeds::all();
    for (name, ops) in &all {
        let context = format!("{label} seed {name}");
        script::run_on(server, ops, &mut |frame| check(frame, &context)).unwrap();
    }
    // xorshift64, reproducible without a dependency.
    let mut state: u64 = 0x5eed_1eaf;
    for round in 0..300 {
        let (name, ops) = &all[round % all.len()];
        let mut bytes = script::encode(ops);
        for _ in 0..3 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if bytes.is_empty() {
                break;
            }
            let at = (state as usize) % bytes.len();
            bytes[at] ^= (state >> 32) as u8 | 1;
        }
        let context = format!("{label} mutation {round} of {name}");
        let ops = script::decode(&bytes);
        script::run_on(server, &ops, &mut |frame| check(frame, &context)).unwrap();
    }
}

/// One session through every file and file-system information class, every directory class,
/// reads past the end of file and into a larger buffer than the data, and a pipe.
fn every_class(server: &TestServer, label: &str) {
    let mut client = Client::new(server.connect());
    let watch = |reply: &smb3d_testkit::client::Reply, what: &str| {
        for r in &reply.responses {
            check(&r.pdu, &format!("{label} {what}"));
        }
    };
    assert_eq!(client.connect(), Some(NtStatus::SUCCESS));
    let file = client
        .create("dir\\file.txt", CreateDisposition::OPEN)
        .unwrap();
    let dir = client.create("dir", CreateDisposition::OPEN).unwrap();
    for class in 1..=80u8 {
        for (info_type, output) in [(InfoType::FILE, 4096), (InfoType::FILESYSTEM, 4096)] {
            let body = seeds::query_info_body(info_type, class, output);
            let reply = client.call(Command::QUERY_INFO, &body, Some(file));
            watch(&reply, &format!("QUERY_INFO {info_type:?} {class}"));
        }
        let body = seeds::query_directory_body(class, "*");
        let reply = client.call(Command::QUERY_DIRECTORY, &body, Some(dir));
        watch(&reply, &format!("QUERY_DIRECTORY {class}"));
    }
    let body = seeds::query_info_body(InfoType::SECURITY, 0, 4096);
    watch(
        &client.call(Command::QUERY_INFO, &body, Some(file)),
        "QUERY_INFO security",
    );
    for (offset, length) in [(0, 4096), (5, 3), (1 << 20, 16)] {
        let body = seeds::read_body(offset, length);
        watch(
            &client.call(Command::READ, &body, Some(file)),
            &format!("READ {offset} {length}"),
        );
    }
    let body = seeds::create_body(
        "new.txt",
        AccessMask(0x001F_01FF),
        CreateDisposition::OVERWRITE_IF,
        CreateOptions::NON_DIRECTORY_FILE,
    );
    watch(&client.call(Command::CREATE, &body, None), "CREATE new");
    assert_eq!(
        client.tree_connect("\\\\testkit\\IPC$"),
        Some(NtStatus::SUCCESS)
    );
    let pipe = client.create("srvsvc", CreateDisposition::OPEN).unwrap();
    let body = seeds::read_body(0, 1024);
    watch(&client.call(Command::READ, &body, Some(pipe)), "pipe READ");
}

#[test]
fn no_response_carries_poison_from_the_memory_share() {
    let server = memory_server();
    seeds_and_mutations(&server, "memory");
    every_class(&server, "memory");
}

#[test]
fn no_response_carries_poison_from_a_posix_share() {
    let dir = tempfile::tempdir().unwrap();
    let share = dir.path().join("share");
    std::fs::create_dir(&share).unwrap();
    let server = posix_server(&share);
    seeds_and_mutations(&server, "posix");
    every_class(&server, "posix");
}
