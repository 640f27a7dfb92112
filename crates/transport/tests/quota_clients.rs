//! Samba's `smbcquotas` (a third-party client: list, get, set) against a server whose share
//! keeps quota records in memory. The binary's shares are Linux file systems, whose quotas
//! this machine's kernel cannot keep (no XFS quota, no quota format for ext4: see
//! docs/conformance.md, "Quotas"), so the records live in a `MemoryVfs` here; the POSIX back
//! end's calls are the same trait's.

use std::net::SocketAddr;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use smb3d_auth::{Account, CredentialStore, ServerIdentity};
use smb3d_server::share::Share;
use smb3d_server::{Limits, Server, Settings};
use smb3d_transport::TransportConfig;
use smb3d_vfs::{Access, Disposition, Kind, MemoryVfs, OpenRequest, QuotaKind, Vfs, VfsPath};

const ADMIN_UID: u32 = 2000;
const ALICE_UID: u32 = 2001;

struct Users;

impl CredentialStore for Users {
    fn account(&self, user: &str) -> Option<Account> {
        ["boss", "alice"].into_iter().find_map(|name| {
            Account::if_named(user, name, *smb3d_auth::ntlm::crypto::nt_hash("pw"))
        })
    }

    fn uid(&self, user: &str) -> Option<u32> {
        match user.to_ascii_lowercase().as_str() {
            "boss" => Some(ADMIN_UID),
            "alice" => Some(ALICE_UID),
            _ => None,
        }
    }
}

struct Running {
    addr: SocketAddr,
    vfs: Arc<MemoryVfs>,
    _runtime: tokio::runtime::Runtime,
}

/// smbcquotas has no port option and connects to port 445: the server takes 445 on a
/// loopback address of its own (which needs root). `None` when it cannot.
fn start() -> Option<Running> {
    let settings = Settings {
        limits: Limits {
            logon_failure_delay: Duration::ZERO,
            ..Limits::default()
        },
        ..Settings::default()
    };
    let identity = ServerIdentity {
        netbios_domain: "WORKGROUP".into(),
        netbios_name: "QUOTAS".into(),
        dns_domain: String::new(),
        dns_name: "quotas".into(),
    };
    let vfs = Arc::new(MemoryVfs::new().with_quotas());
    vfs.set_quota_limits(QuotaKind::User, ALICE_UID, 1 << 20, 2 << 20)
        .unwrap();
    vfs.set_quota_usage(QuotaKind::User, ALICE_UID, 8192);
    // smbcquotas opens the quota index for reading and writing, which is checked as an open
    // of the share's root: everyone may write there.
    let root = OpenRequest {
        access: Access::MetadataOnly,
        disposition: Disposition::Open,
        kind: Kind::Directory,
        create_mode: 0,
    };
    vfs.open(&VfsPath::root(), &root)
        .unwrap()
        .file
        .set_mode(0o777)
        .unwrap();
    let mut share = Share::disk("share", vfs.clone());
    share.admin_users = vec!["boss".into()];
    let server = Server::new(
        settings,
        identity,
        Arc::new(Users),
        smb3d_crypto::default_provider(),
        vec![Share::ipc(), share],
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let pid = std::process::id();
    let listeners = (0..16u32).find_map(|n| {
        let spot = pid.wrapping_add(n.wrapping_mul(7919));
        let addr = format!(
            "127.{}.{}.{}:445",
            100 + spot % 100,
            (spot / 100) % 250,
            1 + n
        );
        runtime
            .block_on(smb3d_transport::bind(&[addr.parse().unwrap()]))
            .ok()
    });
    let Some(listeners) = listeners else {
        eprintln!("skipped: no loopback address's port 445 could be bound (not root?)");
        return None;
    };
    let addr = listeners[0].local_addr().unwrap();
    runtime.spawn(smb3d_transport::serve(
        listeners,
        server,
        TransportConfig::default(),
        std::future::pending(),
    ));
    Some(Running {
        addr,
        vfs,
        _runtime: runtime,
    })
}

/// Runs smbcquotas as `user` with `args`; its status, stdout and stderr. `None` when it is not
/// installed.
fn smbcquotas(addr: SocketAddr, user: &str, args: &[&str]) -> Option<(bool, String, String)> {
    let out = Command::new("timeout")
        .arg("30")
        .arg("smbcquotas")
        .arg(format!("//{}/share", addr.ip()))
        .args(["-s", "/dev/null", "-n", "-m", "SMB3"])
        .arg(format!("-U{user}%pw"))
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() && out.status.code() == Some(127) {
        return None;
    }
    Some((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

fn installed() -> bool {
    let found = Command::new("smbcquotas").arg("--version").output().is_ok();
    if !found {
        eprintln!("skipped: smbcquotas is not installed (Debian package smbclient)");
    }
    found
}

#[test]
fn smbcquotas_lists_gets_and_sets() {
    if !installed() {
        return;
    }
    let Some(server) = start() else {
        return;
    };
    let (ok, listed, err) = smbcquotas(server.addr, "boss", &["-L"]).unwrap();
    println!("{listed}{err}");
    assert!(ok, "list: {listed}{err}");
    assert!(
        alice_sid_of(&listed).starts_with("S-1-5-21-"),
        "a machine-domain SID: {listed}"
    );
    assert!(listed.contains("8192"), "alice's usage: {listed}");
    assert!(listed.contains("2097152"), "alice's limit: {listed}");

    let set = format!("UQLIM:{}:3145728/4194304", alice_sid_of(&listed));
    let (ok, out, err) = smbcquotas(server.addr, "boss", &["-S", &set]).unwrap();
    assert!(ok, "set: {out}{err}");
    let alice = server.vfs.quota(QuotaKind::User, ALICE_UID).unwrap();
    assert_eq!((alice.soft_limit, alice.hard_limit), (3 << 20, 4 << 20));

    let (ok, got, err) = smbcquotas(server.addr, "boss", &["-u", &alice_sid_of(&listed)]).unwrap();
    assert!(ok, "get: {got}{err}");
    assert!(got.contains("4194304"), "{got}");

    // A plain user lists its own record.
    let (ok, own, err) = smbcquotas(server.addr, "alice", &["-L"]).unwrap();
    assert!(ok, "alice's list: {own}{err}");
    assert!(own.contains(&alice_sid_of(&listed)), "{own}");
    let (ok, fs, err) = smbcquotas(server.addr, "boss", &["-F"]).unwrap();
    println!("{fs}{err}");
    assert!(ok, "file system quotas: {fs}{err}");

    // A plain user may not set, not even its own limit; nothing changes.
    let raise = format!("UQLIM:{}:0/0", alice_sid_of(&listed));
    let (ok, out, err) = smbcquotas(server.addr, "alice", &["-S", &raise]).unwrap();
    assert!(!ok, "alice set her own limit: {out}{err}");
    assert!(
        format!("{out}{err}").contains("ACCESS_DENIED"),
        "refused for the right reason: {out}{err}"
    );
    assert_eq!(
        server
            .vfs
            .quota(QuotaKind::User, ALICE_UID)
            .unwrap()
            .hard_limit,
        4 << 20
    );
}

/// The SID of the listed entry whose usage is alice's 8192 bytes.
fn alice_sid_of(listed: &str) -> String {
    listed
        .lines()
        .find(|line| line.contains("8192"))
        .and_then(|line| line.split_whitespace().next())
        .map(|sid| sid.trim_end_matches(':'))
        .map(str::to_owned)
        .unwrap_or_default()
}
