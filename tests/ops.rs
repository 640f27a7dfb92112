//! `smb3d serve` as a service manager and an operator see it: systemd notifications, graceful
//! stop on SIGTERM and SIGINT, reload on SIGHUP and `smb3d reload` (a broken configuration is
//! refused and the server keeps running), the admin socket commands, the metrics endpoint,
//! JSON and journald log output, and listeners on both IPv4 and IPv6 wildcards.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_smb3d");

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running `smb3d serve` with its own directory, configuration and log.
struct Served {
    dir: tempfile::TempDir,
    config: PathBuf,
    socket: PathBuf,
    log: PathBuf,
    port: u16,
    child: Child,
    notify: Option<UnixDatagram>,
    /// The READY=1 notification, with the STATUS= line systemd shows.
    ready: String,
}

/// `[server]` lines every test server has, and one share.
fn base_config(dir: &Path, port: u16, extra: &str) -> String {
    std::fs::create_dir_all(dir.join("share")).unwrap();
    format!(
        "[server]\nlisten = [\"127.0.0.1:{port}\"]\nuser_db = {:?}\nadmin_socket = {:?}\n{extra}\n\
         [share.share]\npath = {:?}\n",
        dir.join("users").display().to_string(),
        dir.join("run/admin.sock").display().to_string(),
        dir.join("share").display().to_string(),
    )
}

/// An empty user database in `dir` (mode 0600, as smb3d requires).
fn empty_user_db(dir: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let db = dir.join("users");
    std::fs::write(&db, "").unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
}

impl Served {
    fn start(extra: &str, env: &[(&str, &str)]) -> Self {
        Self::start_with_shares(extra, "", env)
    }

    /// A server whose configuration ends with `shares` after the usual share.
    fn start_with_shares(extra: &str, shares: &str, env: &[(&str, &str)]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let config = dir.path().join("smb3d.toml");
        let text = base_config(dir.path(), port, extra) + shares;
        std::fs::write(&config, text).unwrap();
        let add = Command::new(BIN)
            .args([
                "user",
                "add",
                "alice",
                "--uid",
                "0",
                "--password-stdin",
                "--db",
            ])
            .arg(dir.path().join("users"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .and_then(|mut c| {
                c.stdin.take().unwrap().write_all(b"secret\n")?;
                c.wait()
            })
            .unwrap();
        assert!(add.success());
        let notify_path = dir.path().join("notify");
        let notify = UnixDatagram::bind(&notify_path).unwrap();
        notify
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let log = dir.path().join("smb3d.log");
        let child = Command::new(BIN)
            .args(["serve", "--config"])
            .arg(&config)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("NOTIFY_SOCKET", &notify_path)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let socket = dir.path().join("run/admin.sock");
        let mut served = Served {
            dir,
            config,
            socket,
            log,
            port,
            child,
            notify: Some(notify),
            ready: String::new(),
        };
        served.ready = served.expect_notification("READY=1");
        served
    }

    /// The next sd_notify datagram, which must start with `state`.
    fn expect_notification(&self, state: &str) -> String {
        let mut buf = [0u8; 512];
        let socket = self.notify.as_ref().unwrap();
        let n = socket
            .recv(&mut buf)
            .unwrap_or_else(|e| panic!("no {state} notification ({e}); log:\n{}", self.log()));
        let text = String::from_utf8_lossy(&buf[..n]).into_owned();
        assert!(text.starts_with(state), "expected {state}, got {text:?}");
        text
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn wait_for_log(&self, text: &str) {
        wait_until(text, || self.log().contains(text));
    }

    /// Runs an smb3d command against this server's admin socket.
    fn ctl(&self, args: &[&str]) -> Output {
        Command::new(BIN)
            .args(args)
            .arg("--socket")
            .arg(&self.socket)
            .output()
            .unwrap()
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the process to exit after a signal.
    fn exit_status(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "smb3d did not stop:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn sigterm_and_sigint_stop_gracefully_and_tell_systemd() {
    for signal in ["TERM", "INT"] {
        let mut served = Served::start("", &[]);
        assert!(served.socket.exists());
        served.signal(signal);
        served.expect_notification("STOPPING=1");
        let status = served.exit_status();
        assert!(
            status.success(),
            "SIG{signal}: {status:?}\n{}",
            served.log()
        );
        assert!(served.log().contains(&format!("SIG{signal}: stopping")));
        assert!(served.log().contains("stopped"));
        assert!(!served.socket.exists(), "the admin socket is removed");
    }
}

#[test]
fn sighup_rereads_the_configuration_and_keeps_serving_after_a_broken_one() {
    let served = Served::start("", &[]);
    let second = served.dir.path().join("second");
    std::fs::create_dir_all(&second).unwrap();
    let good = format!(
        "{}\n[share.second]\npath = {:?}\n",
        std::fs::read_to_string(&served.config).unwrap(),
        second.display().to_string()
    );
    std::fs::write(&served.config, &good).unwrap();
    served.signal("HUP");
    served.expect_notification("RELOADING=1");
    served.expect_notification("READY=1");
    served.wait_for_log("added=[\"second\"]");

    std::fs::write(&served.config, format!("{good}bogus = 1\n")).unwrap();
    served.signal("HUP");
    served.expect_notification("RELOADING=1");
    served.expect_notification("READY=1");
    served.wait_for_log("the running configuration is kept");
    assert!(
        served.log().contains("unknown field `bogus`"),
        "{}",
        served.log()
    );
    // Still serving: SMB connections are accepted and the admin socket answers.
    TcpStream::connect(("127.0.0.1", served.port)).unwrap();
    assert!(served.ctl(&["status"]).status.success());
}

#[test]
fn reload_command_reports_changes_and_refusals() {
    let served = Served::start("", &[]);
    let original = std::fs::read_to_string(&served.config).unwrap();
    let extra = served.dir.path().join("extra");
    std::fs::create_dir_all(&extra).unwrap();
    std::fs::write(
        &served.config,
        format!(
            "{}\n[share.extra]\npath = {:?}\nread_only = true\n",
            original.replace(&format!("127.0.0.1:{}", served.port), "127.0.0.1:1"),
            extra.display().to_string()
        ),
    )
    .unwrap();
    let out = served.ctl(&["reload"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "configuration reloaded; shares added extra\n"
    );
    assert!(
        text(&out.stderr).contains("server setting listen changed"),
        "{}",
        text(&out.stderr)
    );
    // The listener did not move: that needs a restart.
    TcpStream::connect(("127.0.0.1", served.port)).unwrap();

    std::fs::write(&served.config, "[server\nlisten = \n").unwrap();
    let out = served.ctl(&["reload"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("not reloaded; the running one is kept"),
        "{err}"
    );
    assert!(err.contains("smb3d.toml:1:"), "{err}");
}

#[test]
fn admin_commands_on_an_idle_server() {
    let served = Served::start("", &[]);
    let out = served.ctl(&["status", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for key in [
        "\"timestamp\"",
        "\"version\": \"smb3d ",
        "\"sessions\": {}",
        "\"tcons\": {}",
        "\"open_files\": {}",
        "\"byte_range_locks\": {}",
    ] {
        assert!(stdout.contains(key), "{key} in {stdout}");
    }
    let out = served.ctl(&["status"]);
    assert!(text(&out.stdout).contains("Locked files:"));
    let out = served.ctl(&["close-session", "12345"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("no session has id 12345"));
    let out = served.ctl(&["close-file", "nope"]);
    assert!(text(&out.stderr).contains("not an id"));
    // The socket is for root and the server's account only.
    let mode = std::fs::metadata(&served.socket).unwrap().mode();
    assert_eq!(mode & 0o777, 0o600);
    let dir_mode = std::fs::metadata(served.socket.parent().unwrap())
        .unwrap()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
}

#[test]
fn a_second_server_does_not_take_over_a_live_admin_socket() {
    let served = Served::start("", &[]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("smb3d.toml");
    let text_config = base_config(dir.path(), free_port(), "").replace(
        &dir.path().join("run/admin.sock").display().to_string(),
        &served.socket.display().to_string(),
    );
    std::fs::write(&config, text_config).unwrap();
    empty_user_db(dir.path());
    let mut other = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&config)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(other.stderr.take().unwrap());
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 && !line.contains("admin socket") {
        line.clear();
    }
    let _ = other.kill();
    let _ = other.wait();
    assert!(line.contains("another smb3d is listening"), "{line}");
    assert!(served.ctl(&["status"]).status.success());
}

fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn metrics_endpoint_serves_prometheus_text() {
    let metrics_port = free_port();
    let served = Served::start(
        &format!("metrics = true\nmetrics_listen = \"127.0.0.1:{metrics_port}\"\n"),
        &[],
    );
    let addr = SocketAddr::from(([127, 0, 0, 1], metrics_port));
    let _smb = TcpStream::connect(("127.0.0.1", served.port)).unwrap();
    wait_until("the connection to count", || {
        http_get(addr, "/metrics").contains("\nsmb3d_connections 1\n")
    });
    let page = http_get(addr, "/metrics");
    assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
    assert!(page.contains("Content-Type: text/plain; version=0.0.4"));
    assert!(page.contains("# TYPE smb3d_request_duration_seconds histogram"));
    assert!(http_get(addr, "/nothing").starts_with("HTTP/1.1 404"));
}

#[test]
fn json_logs_are_one_object_per_line() {
    let served = Served::start("log_format = \"json\"\n", &[]);
    let log = served.log();
    let line = log
        .lines()
        .find(|l| l.contains("admin socket at"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
    for key in [
        "\"timestamp\":",
        "\"level\":\"INFO\"",
        "\"fields\":{\"message\":",
    ] {
        assert!(line.contains(key), "{key} in {line}");
    }
}

#[test]
fn journald_lines_have_a_priority_and_no_timestamp() {
    // JOURNAL_STREAM names the device and inode of standard error, as systemd sets it.
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join("probe");
    let file = std::fs::File::create(&probe).unwrap();
    let meta = file.metadata().unwrap();
    drop(file);
    let port = free_port();
    let config = dir.path().join("smb3d.toml");
    std::fs::write(&config, base_config(dir.path(), port, "")).unwrap();
    empty_user_db(dir.path());
    let mut child = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&config)
        .env("JOURNAL_STREAM", format!("{}:{}", meta.dev(), meta.ino()))
        .stderr(
            std::fs::OpenOptions::new()
                .append(true)
                .open(&probe)
                .unwrap(),
        )
        .spawn()
        .unwrap();
    wait_until("the listening line", || {
        std::fs::read_to_string(&probe)
            .unwrap_or_default()
            .contains("admin socket")
    });
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(&probe).unwrap();
    let line = log.lines().find(|l| l.contains("listening on")).unwrap();
    assert!(
        line.starts_with("<6> INFO smb3d::serve: listening on"),
        "{line}"
    );
    assert!(!log.contains('\u{1b}'), "no colours: {log}");
}

#[test]
fn environment_overrides_apply_to_serve_and_both_wildcards_can_be_listed() {
    let port = free_port();
    let ipv6 = TcpListener::bind("[::1]:0").is_ok();
    let listen = if ipv6 {
        format!("0.0.0.0:{port},[::]:{port}")
    } else {
        format!("0.0.0.0:{port}")
    };
    let served = Served::start("", &[("SMB3D_LISTEN", &listen)]);
    served.wait_for_log(&format!("listening on 0.0.0.0:{port}"));
    TcpStream::connect(("127.0.0.1", port)).unwrap();
    if ipv6 {
        served.wait_for_log(&format!("listening on [::]:{port}"));
        TcpStream::connect(("::1", port)).unwrap();
    }
    // The file's own address was replaced.
    assert!(TcpStream::connect(("127.0.0.1", served.port)).is_err());
}

/// Issue 23 item 5: a share whose directory is missing, or that forces an account the system
/// does not have, is left out; the server starts with the others, logs why, tells systemd,
/// and reports it in `smb3d status` and the metrics until a reload finds it healthy.
#[test]
fn a_broken_share_does_not_stop_the_server() {
    let port = free_port();
    let shares = "[share.gone]\npath = \"/nonexistent/smb3d-gone\"\n\
                  [share.forced]\npath = \"/\"\nforce_user = \"no-such-user-smb3d\"\n";
    let metrics = format!("metrics = true\nmetrics_listen = \"127.0.0.1:{port}\"");
    let mut served = Served::start_with_shares(&metrics, shares, &[]);
    let ready = &served.ready;
    assert!(
        ready.contains("serving 1 share(s) (2 unavailable: gone, forced; see smb3d status)"),
        "{ready}"
    );
    served.wait_for_log("share gone is unavailable: share gone: /nonexistent/smb3d-gone");
    served.wait_for_log("share forced is unavailable: share forced: force_user");
    TcpStream::connect(("127.0.0.1", served.port)).unwrap();

    let status = text(&served.ctl(&["status"]).stdout);
    assert!(status.contains("Unavailable shares"), "{status}");
    assert!(
        status.contains("  gone: share gone: /nonexistent/smb3d-gone"),
        "{status}"
    );
    let json = text(&served.ctl(&["status", "--json"]).stdout);
    assert!(json.contains("\"unavailable_shares\": {"), "{json}");
    let page = http_get(SocketAddr::from(([127, 0, 0, 1], port)), "/metrics");
    for line in [
        "smb3d_share_available{share=\"share\"} 1",
        "smb3d_share_available{share=\"gone\"} 0",
        "smb3d_share_available{share=\"forced\"} 0",
    ] {
        assert!(page.contains(line), "{line} in {page}");
    }

    // The directory appears: a reload serves it.
    let config = std::fs::read_to_string(&served.config).unwrap();
    let made = served.dir.path().join("gone");
    std::fs::create_dir(&made).unwrap();
    std::fs::write(
        &served.config,
        config.replace("/nonexistent/smb3d-gone", made.to_str().unwrap()),
    )
    .unwrap();
    let out = served.ctl(&["reload"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("shares added gone"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("warning: share forced is unavailable"),
        "{}",
        text(&out.stderr)
    );
    let page = http_get(SocketAddr::from(([127, 0, 0, 1], port)), "/metrics");
    assert!(
        page.contains("smb3d_share_available{share=\"gone\"} 1"),
        "{page}"
    );
    served.signal("TERM");
    assert!(served.exit_status().success());
}

/// A connection that ends in the middle of a frame, which the transport logs at debug.
fn cut_connection(port: u16) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(b"\x00\x00\x00\x40abc").unwrap();
}

/// Issue 23 item 7: `status`, `reload` and `debug` find the admin socket in a configuration
/// file that no longer parses (the running server keeps the one it started with, and refuses
/// the broken one on reload), and `smb3d debug` changes the running server's log level.
#[test]
fn admin_commands_reach_the_server_through_a_broken_configuration() {
    let served = Served::start("", &[]);
    let good = std::fs::read_to_string(&served.config).unwrap();
    std::fs::write(&served.config, format!("{good}[share.broken\npath = = 1\n")).unwrap();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .arg("--config")
            .arg(&served.config)
            .output()
            .unwrap()
    };
    let status = run(&["status", "-S"]);
    assert!(status.status.success(), "{}", text(&status.stderr));
    assert!(
        text(&status.stdout).contains("Service"),
        "{}",
        text(&status.stdout)
    );
    assert!(
        !text(&status.stdout).contains("Locked files"),
        "-S shows tree connects only"
    );
    let reload = run(&["reload"]);
    assert!(!reload.status.success());
    let refused = text(&reload.stderr);
    assert!(
        refused.contains("not reloaded; the running one is kept"),
        "{refused}"
    );
    assert!(refused.contains("smb3d.toml:"), "{refused}");

    cut_connection(served.port);
    let shown = run(&["debug"]);
    assert!(
        text(&shown.stdout).contains("log filter \"info\""),
        "{}",
        text(&shown.stderr)
    );
    let changed = run(&["debug", "5"]);
    assert!(changed.status.success(), "{}", text(&changed.stderr));
    assert!(
        text(&changed.stdout).contains("log filter changed from \"info\" to \"debug\""),
        "{}",
        text(&changed.stdout)
    );
    served.wait_for_log("log filter changed from \"info\" to \"debug\"");
    assert!(
        !served.log().contains("connection ended"),
        "logged at info: {}",
        served.log()
    );
    cut_connection(served.port);
    served.wait_for_log("connection ended");
    let bad = run(&["debug", "smb3d=["]);
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("is not a log filter"),
        "{}",
        text(&bad.stderr)
    );
    assert!(run(&["debug", "reset"]).status.success());
    assert!(text(&run(&["debug"]).stdout).contains("log filter \"info\""));
}

/// Issue 23 item 2: every setting of who may connect is enforced, so none is warned about
/// as NOT ENFORCED any more.
#[test]
fn access_settings_start_without_warnings() {
    let served = Served::start_with_shares(
        "hosts_allow = [\"127.0.0.1\"]\nmap_to_guest = \"bad-user\"",
        "admin_users = [\"root\"]\ninvalid_users = [\"nobody\"]\n",
        &[],
    );
    served.wait_for_log("listening on");
    let log = served.log();
    assert!(!log.contains("NOT ENFORCED"), "{log}");
}
