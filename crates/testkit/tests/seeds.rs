//! Every seed of the `server` fuzz target runs clean (no invariant broken, nothing left after
//! disconnect) and reaches the state it is written for.

use std::sync::Arc;

use smb3d_crypto::fuzzing::NullProvider;
use smb3d_dtyp::NtStatus;
use smb3d_smb2::Command;
use smb3d_testkit::script::{self, Summary};
use smb3d_testkit::{harness, seeds};

fn run(name: &str) -> Summary {
    let (_, ops) = seeds::all()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no seed {name}"));
    let decoded = script::decode(&script::encode(&ops));
    assert_eq!(decoded, ops, "{name}: the wire form round-trips");
    script::run(&ops, harness::settings(), Arc::new(NullProvider))
        .unwrap_or_else(|v| panic!("{name}: {v}"))
}

#[test]
fn every_seed_runs_clean() {
    for (name, ops) in seeds::all() {
        let summary = script::run(&ops, harness::settings(), Arc::new(NullProvider))
            .unwrap_or_else(|v| panic!("{name}: {v}"));
        assert!(!summary.responses.is_empty(), "{name}: no response");
    }
}

#[test]
fn negotiate_seeds_get_each_dialect() {
    for name in [
        "negotiate-202",
        "negotiate-210",
        "negotiate-300",
        "negotiate-302",
        "negotiate-all",
    ] {
        let s = run(name);
        assert_eq!(
            s.responses,
            [(Command::NEGOTIATE, NtStatus::SUCCESS)],
            "{name}"
        );
    }
}

#[test]
fn file_sessions_reach_every_command() {
    for name in ["session-210", "session-302", "session-311"] {
        let s = run(name);
        for command in [
            Command::SESSION_SETUP,
            Command::TREE_CONNECT,
            Command::CREATE,
            Command::WRITE,
            Command::READ,
            Command::FLUSH,
            Command::QUERY_INFO,
            Command::SET_INFO,
            Command::QUERY_DIRECTORY,
            Command::CLOSE,
            Command::TREE_DISCONNECT,
            Command::LOGOFF,
        ] {
            assert!(
                s.saw(command, NtStatus::SUCCESS),
                "{name}: no successful {command:?}: {s:?}"
            );
        }
        assert_eq!(s.disconnects, 0, "{name}");
    }
}

#[test]
fn compound_seed_reaches_related_failures() {
    let s = run("compound");
    assert!(s.saw(Command::READ, NtStatus::SUCCESS), "{s:?}");
    assert!(s.saw(Command::READ, NtStatus::FILE_CLOSED), "{s:?}");
    assert!(
        s.saw(Command::CREATE, NtStatus::NETWORK_NAME_DELETED),
        "{s:?}"
    );
}

#[test]
fn sealed_seed_is_served_encrypted() {
    let s = run("sealed");
    assert!(s.saw(Command::READ, NtStatus::SUCCESS), "{s:?}");
    assert_eq!(s.disconnects, 0);
}

#[test]
fn logon_seed_fails_and_succeeds() {
    let s = run("logons");
    assert!(
        s.saw(Command::SESSION_SETUP, NtStatus::LOGON_FAILURE),
        "{s:?}"
    );
    assert!(s.saw(Command::SESSION_SETUP, NtStatus::SUCCESS), "{s:?}");
    assert!(
        s.saw(Command::TREE_CONNECT, NtStatus::BAD_NETWORK_NAME),
        "{s:?}"
    );
    assert!(s.saw(Command::TREE_CONNECT, NtStatus::SUCCESS), "{s:?}");
}

#[test]
fn names_seed_is_refused_inside_the_share() {
    let s = run("names");
    assert!(
        s.saw(Command::CREATE, NtStatus::OBJECT_PATH_SYNTAX_BAD),
        "{s:?}"
    );
    assert!(
        s.saw(Command::CREATE, NtStatus::OBJECT_NAME_NOT_FOUND),
        "{s:?}"
    );
    assert!(
        s.saw(Command::CREATE, NtStatus::SUCCESS),
        "inside\\file.txt opens: {s:?}"
    );
}

#[test]
fn validate_negotiate_seed_passes_then_disconnects() {
    let s = run("validate-negotiate");
    assert!(s.saw(Command::IOCTL, NtStatus::SUCCESS), "{s:?}");
    assert_eq!(s.disconnects, 1, "{s:?}");
}

#[test]
fn reconnect_seed_negotiates_twice() {
    let s = run("reconnect");
    let negotiates = s
        .responses
        .iter()
        .filter(|r| **r == (Command::NEGOTIATE, NtStatus::SUCCESS))
        .count();
    assert_eq!(negotiates, 2, "{s:?}");
}

#[test]
fn pipe_seed_reaches_every_answer() {
    let s = run("pipes");
    use Command as C;
    use NtStatus as S;
    let expected = [
        (C::NEGOTIATE, S::SUCCESS),
        (C::SESSION_SETUP, S::MORE_PROCESSING_REQUIRED),
        (C::SESSION_SETUP, S::SUCCESS),
        (C::TREE_CONNECT, S::SUCCESS),
        (C::CREATE, S::SUCCESS),
        // The bind_ack comes back with the transceive.
        (C::IOCTL, S::SUCCESS),
        (C::WRITE, S::SUCCESS),
        // Peeking with room for the header only, then reading part of the answer.
        (C::IOCTL, S::BUFFER_OVERFLOW),
        (C::READ, S::BUFFER_OVERFLOW),
        (C::IOCTL, S::SUCCESS),
        (C::READ, S::SUCCESS),
        (C::QUERY_INFO, S::SUCCESS),
        (C::QUERY_INFO, S::NOT_SUPPORTED),
        (C::FLUSH, S::SUCCESS),
        (C::SET_INFO, S::NOT_SUPPORTED),
        (C::IOCTL, S::SUCCESS),
        (C::IOCTL, S::OBJECT_NAME_NOT_FOUND),
        (C::IOCTL, S::FS_DRIVER_REQUIRED),
        (C::WRITE, S::SUCCESS),
        (C::READ, S::SUCCESS),
        (C::READ, S::PIPE_DISCONNECTED),
        (C::WRITE, S::PIPE_DISCONNECTED),
        (C::CLOSE, S::SUCCESS),
        (C::READ, S::FILE_CLOSED),
        (C::CREATE, S::OBJECT_NAME_NOT_FOUND),
        (C::CREATE, S::SUCCESS),
        (C::READ, S::PENDING),
        (C::WRITE, S::SUCCESS),
        (C::READ, S::SUCCESS),
        (C::READ, S::PENDING),
        (C::READ, S::CANCELLED),
        // The last read still waits when the logoff closes the pipe under it.
        (C::READ, S::PENDING),
        (C::LOGOFF, S::SUCCESS),
        (C::READ, S::FILE_CLOSED),
    ];
    assert_eq!(s.responses, expected);
    assert_eq!(s.disconnects, 0);
}

#[test]
fn fsctl_seed_reaches_the_file_system_controls() {
    let summary = run("fsctls");
    let ioctls: Vec<NtStatus> = summary
        .responses
        .iter()
        .filter(|(c, _)| *c == Command::IOCTL)
        .map(|&(_, s)| s)
        .collect();
    assert_eq!(
        ioctls,
        [
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::OBJECT_NAME_NOT_FOUND,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::NOT_SUPPORTED,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
            NtStatus::SUCCESS,
        ]
    );
}
