//! Changes other processes make below a share reach the watch (fanotify; as root only).
#![expect(
    clippy::disallowed_methods,
    reason = "the test sets up and inspects files as itself, not as the back end's work"
)]

use std::path::Path;
use std::process::Command;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use smb3d_vfs::{OutsideChange, Vfs, VfsPath};
use smb3d_vfs_posix::PosixVfs;

fn path(text: &str) -> VfsPath {
    VfsPath::parse(text).unwrap()
}

/// Runs a shell command in `dir`: a process other than this one makes the change.
fn outside(dir: &Path, script: &str) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
}

/// Receives changes until `last` arrives (at most a minute, so a lost event fails the test
/// rather than hanging it).
fn until(changes: &Receiver<OutsideChange>, last: &OutsideChange) -> Vec<OutsideChange> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    while !seen.contains(last) {
        let left = deadline.saturating_duration_since(Instant::now());
        match changes.recv_timeout(left) {
            Ok(change) => seen.push(change),
            Err(error) => panic!("{error} waiting for {last:?}; saw {seen:?}"),
        }
    }
    seen
}

/// Whether `wanted` occur in `seen` in this order (other changes may come between).
fn in_order(seen: &[OutsideChange], wanted: &[OutsideChange]) -> bool {
    let mut rest = seen.iter();
    wanted.iter().all(|w| rest.any(|s| s == w))
}

#[test]
fn other_processes_changes_arrive_in_order_and_the_servers_own_do_not() {
    let top = tempfile::tempdir().unwrap();
    let share = top.path().join("share");
    std::fs::create_dir(&share).unwrap();
    let vfs = PosixVfs::new(&share).unwrap();
    let (send, changes) = channel();
    let watch = vfs.watch_outside(Box::new(move |change| {
        let _ = send.send(change);
    }));
    let Some(watch) = watch else {
        assert!(
            !rustix::process::geteuid().is_root(),
            "root can watch with fanotify"
        );
        return;
    };

    // This process stands for the server: its changes are reported by itself, not the watch.
    std::fs::write(share.join("own.txt"), b"own").unwrap();
    outside(
        top.path(),
        "mkdir share/sub && touch share/sub/a && echo x >> share/sub/a && \
         mv share/sub/a share/sub/b && mv share/sub/b share/b && touch elsewhere && \
         mv elsewhere share/moved-in && mv share/moved-in gone && chmod 600 share/b && \
         rm share/b && rmdir share/sub",
    );
    let last = OutsideChange::Removed {
        path: path("sub"),
        directory: true,
    };
    let seen = until(&changes, &last);
    let wanted = [
        OutsideChange::Added {
            path: path("sub"),
            directory: true,
        },
        OutsideChange::Added {
            path: path("sub/a"),
            directory: false,
        },
        OutsideChange::Written {
            path: path("sub/a"),
        },
        OutsideChange::Renamed {
            from: path("sub/a"),
            to: path("sub/b"),
            directory: false,
        },
        OutsideChange::Renamed {
            from: path("sub/b"),
            to: path("b"),
            directory: false,
        },
        OutsideChange::Added {
            path: path("moved-in"),
            directory: false,
        },
        OutsideChange::Removed {
            path: path("moved-in"),
            directory: false,
        },
        OutsideChange::MetadataChanged {
            path: path("b"),
            directory: false,
        },
        OutsideChange::Removed {
            path: path("b"),
            directory: false,
        },
        last,
    ];
    assert!(in_order(&seen, &wanted), "{seen:?}");
    assert!(
        !seen.iter().any(|c| format!("{c:?}").contains("own.txt")
            || format!("{c:?}").contains("elsewhere")
            || format!("{c:?}").contains("gone")),
        "the server's own change and changes outside the share stay unreported: {seen:?}"
    );

    // Once the watch is dropped, changes are no longer delivered (the sender goes with it).
    drop(watch);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match changes.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(_) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(error) => panic!("the watch's reader kept running: {error}"),
        }
    }
}

/// A user's work may start the watch (a directory lease granted in a CREATE): fanotify needs
/// the service's privilege, which the watch takes back for itself.
#[test]
fn a_watch_started_in_a_users_work_sees_changes() {
    if !rustix::process::geteuid().is_root() {
        return;
    }
    let top = tempfile::tempdir().unwrap();
    let share = top.path().join("share");
    std::fs::create_dir(&share).unwrap();
    let vfs = PosixVfs::new(&share).unwrap();
    let nobody = smb3d_vfs::Credentials {
        uid: 65534,
        gid: 65534,
        groups: vec![],
    };
    let (send, changes) = channel();
    let mut sink = Some(Box::new(move |change| {
        let _ = send.send(change);
    }) as smb3d_vfs::OutsideSink);
    let mut watch = None;
    vfs.run_as(&nobody, &mut || {
        watch = sink.take().and_then(|sink| vfs.watch_outside(sink));
    });
    let _watch = watch.expect("the watch starts");
    outside(top.path(), "touch share/new");
    let added = OutsideChange::Added {
        path: path("new"),
        directory: false,
    };
    until(&changes, &added);
}
