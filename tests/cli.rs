//! The `smb3d` commands that docs/operations.md and the README show, run as a sysadmin would:
//! config check (every error, environment overrides), import-smb-conf, user import, the
//! systemd unit and the sample configuration in contrib/, and `--help` of every subcommand.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_smb3d");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `pdbedit -s smb.conf -L -w` of the reference Samba 4.17: user bench, password "pass".
const PDBEDIT_LINE: &str = "bench:1001:XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX:36AA83BDCAB3C9FDAF321CA42A31C3FC:[U          ]:LCT-6B0246E4:";

fn smb3d(args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(input) = stdin {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn config_check_prints_every_error_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("smb3d.toml");
    std::fs::write(
        &file,
        "[server]\nlisten_port = 445\n[share.a]\npath = \"relative\"\n[share.b]\npath = \"/b\"\n[share.B]\npath = \"/c\"\n",
    )
    .unwrap();
    let out = smb3d(&["config", "check", file.to_str().unwrap()], &[], None);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    let f = file.display();
    assert!(
        err.contains(&format!("{f}:2:1: unknown field `listen_port`")),
        "{err}"
    );
    assert!(
        err.contains(&format!("{f}:4:8: share \"a\": path must be absolute")),
        "{err}"
    );
    assert!(
        err.contains(&format!("{f}:7:8: share \"B\" is defined twice")),
        "{err}"
    );
    assert!(err.contains("3 error(s)"), "{err}");
}

#[test]
fn config_check_shows_environment_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("smb3d.toml");
    std::fs::write(&file, "[share.data]\npath = \"/srv/data\"\n").unwrap();
    let env = [
        ("SMB3D_LISTEN", "127.0.0.1:4445"),
        ("SMB3D_SIGNING", "required"),
        ("SMB3D_SHARE_MEDIA", "/srv/media;read_only;users=alice,bob"),
    ];
    let out = smb3d(&["config", "check", file.to_str().unwrap()], &env, None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(
        shown.contains("# from the environment: SMB3D_SIGNING=required"),
        "{shown}"
    );
    assert!(shown.contains("listen = [\"127.0.0.1:4445\"]"), "{shown}");
    assert!(shown.contains("signing = \"required\""), "{shown}");
    assert!(
        shown.contains("[share.MEDIA]\npath = \"/srv/media\""),
        "{shown}"
    );
    assert!(
        shown.contains("valid_users = [\"alice\", \"bob\"]"),
        "{shown}"
    );

    let out = smb3d(
        &["config", "check", "--no-env", file.to_str().unwrap()],
        &env,
        None,
    );
    assert!(!text(&out.stdout).contains("MEDIA"));

    let out = smb3d(
        &["config", "check", file.to_str().unwrap()],
        &[("SMB3D_ENCRYPT", "sometimes")],
        None,
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("environment variable SMB3D_ENCRYPT: \"sometimes\""),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn import_smb_conf_writes_a_config_that_checks() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("smb.conf");
    let debian = std::fs::read_to_string(
        Path::new(ROOT).join("crates/config/tests/fixtures/debian-smb.conf"),
    )
    .unwrap();
    std::fs::write(
        &conf,
        format!(
            "{debian}\n[projects]\n   path = /srv/projects\n   read only = no\n   valid users = alice @staff\n   guest ok = no\n   browseable = yes\n   create mask = 0664\n   vfs objects = acl_xattr streams_xattr\n"
        ),
    )
    .unwrap();
    let out_file = dir.path().join("smb3d.toml");
    let out = smb3d(
        &[
            "config",
            "import-smb-conf",
            conf.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ],
        &[],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let warnings = text(&out.stderr);
    // The Debian file's own 12 (its map to guest = bad user is enforced now, not warned about;
    // [print$] is imported with a note that clients install no drivers from it; its shares
    // without a streams module get `streams_xattr = false`, as Samba serves them, with no
    // warning); the share block maps whole (@staff is a group list entry).
    assert_eq!(warnings.matches("warning: ").count(), 12, "{warnings}");
    assert!(!warnings.contains("create mask = 0664"), "{warnings}");
    let check = smb3d(&["config", "check", out_file.to_str().unwrap()], &[], None);
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(text(&check.stdout).contains("[share.projects]"));
    assert!(text(&check.stdout).contains("create_mask = 0o664"));
    assert!(
        text(&check.stdout).contains("valid_users = [\"alice\", \"@staff\"]"),
        "{}",
        text(&check.stdout)
    );

    // An existing output is kept unless --force.
    let again = smb3d(
        &[
            "config",
            "import-smb-conf",
            conf.to_str().unwrap(),
            "-o",
            out_file.to_str().unwrap(),
        ],
        &[],
        None,
    );
    assert!(!again.status.success());
    assert!(text(&again.stderr).contains("--force"));
    // Without -o the configuration goes to standard output.
    let stdout = smb3d(
        &["config", "import-smb-conf", conf.to_str().unwrap()],
        &[],
        None,
    );
    assert!(text(&stdout.stdout).starts_with("# Converted from"));
}

#[test]
fn user_import_reads_pdbedit_output() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("users");
    let db_arg = db.to_str().unwrap();
    let out = smb3d(
        &["user", "--db", db_arg, "import"],
        &[],
        Some(&format!("{PDBEDIT_LINE}\n")),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let list = smb3d(&["user", "--db", db_arg, "list"], &[], None);
    assert!(
        text(&list.stdout).contains("bench"),
        "{}",
        text(&list.stdout)
    );
    assert!(std::fs::read_to_string(&db).unwrap().contains(PDBEDIT_LINE));

    let file = dir.path().join("pdbedit.txt");
    std::fs::write(&file, "broken line\n").unwrap();
    let bad = smb3d(
        &["user", "--db", db_arg, "import", file.to_str().unwrap()],
        &[],
        None,
    );
    assert!(!bad.status.success());
    assert!(
        text(&bad.stderr).contains("pdbedit.txt:1:"),
        "{}",
        text(&bad.stderr)
    );

    // SMB3D_USER_DB finds the database with no configuration file at all.
    let env_list = smb3d(&["user", "list"], &[("SMB3D_USER_DB", db_arg)], None);
    assert!(
        text(&env_list.stdout).contains("bench"),
        "{}",
        text(&env_list.stderr)
    );
}

/// Issue 23 item 5: `config check` checks shares as serve opens them, and the users and groups
/// they name; those are warnings, since serve starts without a broken share.
#[test]
fn config_check_warns_of_shares_serve_would_leave_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("users");
    let imported = smb3d(
        &["user", "--db", db.to_str().unwrap(), "import"],
        &[],
        Some(&format!("{PDBEDIT_LINE}\n")),
    );
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    let config = dir.path().join("smb3d.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nuser_db = {:?}\n\
             [share.ok]\npath = {:?}\nvalid_users = [\"bench\", \"BENCH\", \"@root\"]\n\
             [share.gone]\npath = \"/nonexistent/smb3d-gone\"\n\
             [share.forced]\npath = {:?}\nforce_group = \"no-such-group-smb3d\"\n\
             [share.lists]\npath = {:?}\nvalid_users = [\"carol\"]\nwrite_list = [\"@no-such-group-smb3d\"]\n",
            db.display().to_string(),
            dir.path().display().to_string(),
            dir.path().display().to_string(),
            dir.path().display().to_string(),
        ),
    )
    .unwrap();
    let c = config.to_str().unwrap();
    let out = smb3d(&["config", "check", c], &[], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let warnings: Vec<String> = text(&out.stderr).lines().map(str::to_owned).collect();
    assert_eq!(warnings.len(), 4, "{warnings:#?}");
    for (line, needle) in [
        "warning: share gone: /nonexistent/smb3d-gone: ",
        "warning: share forced: force_group \"no-such-group-smb3d\" is not a Unix group",
        "warning: share lists: valid_users names \"carol\", but carol is not in the user database",
        "warning: share lists: write_list names \"@no-such-group-smb3d\", but no-such-group-smb3d is not a Unix group",
    ]
    .iter()
    .enumerate()
    {
        assert!(warnings[line].starts_with(needle), "{needle}: {warnings:#?}");
    }
    assert!(warnings[0].ends_with("smb3d serve leaves this share out"));
    assert!(text(&out.stdout).contains("# 4 warning(s) on standard error"));
    // --quiet: what ExecStartPre runs; the warnings, not the configuration.
    let quiet = smb3d(&["config", "check", "--quiet", c], &[], None);
    assert!(quiet.status.success());
    assert!(quiet.stdout.is_empty(), "{}", text(&quiet.stdout));
    assert_eq!(text(&quiet.stderr).lines().count(), 4);
}

/// The settings of who may connect (issue 23 item 2) are taken, rendered, and enforced, so
/// `config check` warns of none.
#[test]
fn config_check_takes_access_settings_without_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("smb3d.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nuser_db = \"/nonexistent/users\"\nhosts_deny = [\"10.0.0.0/8\"]\n\
             guest_account = \"no-such-guest-account\"\n\
             [share.s]\npath = {:?}\ninvalid_users = [\"root\"]\nadmin_users = [\"root\"]\n",
            dir.path().display().to_string()
        ),
    )
    .unwrap();
    let out = smb3d(&["config", "check", config.to_str().unwrap()], &[], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let warnings = text(&out.stderr);
    assert!(!warnings.contains("NOT ENFORCED"), "{warnings}");
    assert!(
        warnings
            .contains("warning: server.guest_account \"no-such-guest-account\" is not a Unix user"),
        "{warnings}"
    );
    assert!(text(&out.stdout).contains("hosts_deny = [\"10.0.0.0/8\"]"));
}

#[test]
fn users_are_disabled_enabled_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("users");
    let db_arg = db.to_str().unwrap();
    let imported = smb3d(
        &["user", "--db", db_arg, "import"],
        &[],
        Some(&format!("{PDBEDIT_LINE}\n")),
    );
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    let run = |args: &[&str]| {
        let mut all = vec!["user", "--db", db_arg];
        all.extend_from_slice(args);
        smb3d(&all, &[], None)
    };
    let out = run(&["disable", "BENCH"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("disabled BENCH"));
    // The line `smbpasswd -d bench` leaves (flags as Samba orders them).
    let disabled = PDBEDIT_LINE.replace("[U          ]", "[DU         ]");
    assert_eq!(
        std::fs::read_to_string(&db).unwrap(),
        format!("{disabled}\n")
    );
    let shown = text(&run(&["show", "bench"]).stdout);
    assert!(shown.contains("[DU] (disabled, normal user)"), "{shown}");
    assert!(shown.contains("Logons allowed:       no"), "{shown}");
    assert!(text(&run(&["disable", "bench"]).stdout).contains("already disabled"));
    assert!(run(&["enable", "bench"]).status.success());
    assert_eq!(
        std::fs::read_to_string(&db).unwrap(),
        format!("{PDBEDIT_LINE}\n")
    );
    assert!(text(&run(&["show", "bench"]).stdout).contains("Logons allowed:       yes"));
    for args in [
        &["show", "nobody"][..],
        &["disable", "nobody"],
        &["enable", "nobody"],
    ] {
        let out = run(args);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            text(&out.stderr).contains("no user named nobody"),
            "{}",
            text(&out.stderr)
        );
    }
    let no_account = smb3d(
        &[
            "user",
            "--db",
            db_arg,
            "add",
            "no-such-account-smb3d",
            "--password-stdin",
        ],
        &[],
        Some("pw\n"),
    );
    assert!(!no_account.status.success());
    assert!(
        text(&no_account.stderr).contains("--uid"),
        "{}",
        text(&no_account.stderr)
    );
}

#[test]
fn user_and_share_commands_take_the_config_after_the_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("smb3d.toml");
    let db = dir.path().join("state/users");
    std::fs::write(
        &config,
        format!(
            "[server]\nuser_db = {:?}\n[share.projects]\npath = \"/srv/projects\"\n\
             read_list = [\"guest\"]\nwrite_list = [\"@staff\", \"bob\"]\n",
            db.display().to_string()
        ),
    )
    .unwrap();
    let c = config.to_str().unwrap();
    let add = smb3d(
        &[
            "user",
            "add",
            "alice",
            "--config",
            c,
            "--uid",
            "1000",
            "--password-stdin",
        ],
        &[],
        Some("secret\n"),
    );
    assert!(add.status.success(), "{}", text(&add.stderr));
    let list = smb3d(&["user", "list", "--config", c], &[], None);
    assert!(
        text(&list.stdout).contains("alice"),
        "{}",
        text(&list.stderr)
    );
    let import = smb3d(
        &["user", "import", "--config", c],
        &[],
        Some(&format!("{PDBEDIT_LINE}\n")),
    );
    assert!(import.status.success(), "{}", text(&import.stderr));
    let shares = smb3d(&["share", "list", "--config", c], &[], None);
    let listed = text(&shares.stdout);
    for shown in ["/srv/projects", "read_list=guest", "write_list=@staff,bob"] {
        assert!(
            listed.contains(shown),
            "{shown}: {listed}{}",
            text(&shares.stderr)
        );
    }
    // config check takes --config like the others, or the file as its argument.
    for args in [
        &["config", "check", "--config", c][..],
        &["config", "check", "-c", c],
        &["config", "check", c],
    ] {
        let check = smb3d(args, &[], None);
        assert!(check.status.success(), "{args:?}: {}", text(&check.stderr));
        assert!(
            text(&check.stdout).contains("write_list = [\"@staff\", \"bob\"]"),
            "{args:?}"
        );
    }
}

#[test]
fn sample_config_is_valid_and_documents_every_option() {
    let sample = Path::new(ROOT).join("contrib/smb3d.toml");
    let out = smb3d(&["config", "check", sample.to_str().unwrap()], &[], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let effective = text(&out.stdout);
    let sample_text = std::fs::read_to_string(&sample).unwrap();
    // Every key config check prints is set (and commented) in the sample.
    for line in effective.lines().filter(|l| l.contains(" = ")) {
        let key = line.split(" = ").next().unwrap();
        assert!(
            sample_text.contains(&format!("\n{key} = ")),
            "contrib/smb3d.toml lacks {key}"
        );
    }
}

fn unit_with_binary(dir: &Path) -> PathBuf {
    let unit = std::fs::read_to_string(Path::new(ROOT).join("contrib/smb3d.service")).unwrap();
    let path = dir.join("smb3d.service");
    std::fs::write(&path, unit.replace("/usr/local/bin/smb3d", BIN)).unwrap();
    path
}

#[test]
fn systemd_unit_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let unit = unit_with_binary(dir.path());
    let text_unit = std::fs::read_to_string(&unit).unwrap();
    for needed in [
        "Type=notify",
        "ExecReload=/bin/kill -HUP $MAINPID",
        "ProtectSystem=strict",
        "ReadWritePaths=",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "NoNewPrivileges=yes",
        "CapabilityBoundingSet=",
        "AmbientCapabilities=CAP_NET_BIND_SERVICE",
    ] {
        assert!(text_unit.contains(needed), "unit lacks {needed}");
    }
    // verify runs `man` on every Documentation= page: the ones `smb3d manpages` writes.
    let man = dir.path().join("man");
    let pages = smb3d(&["manpages", man.join("man8").to_str().unwrap()], &[], None);
    assert!(pages.status.success(), "{}", text(&pages.stderr));
    match Command::new("systemd-analyze")
        .arg("verify")
        .arg(&unit)
        .env("MANPATH", &man)
        .output()
    {
        Ok(out) => assert!(
            out.status.success() && out.stderr.is_empty(),
            "systemd-analyze verify: {}",
            text(&out.stderr)
        ),
        Err(e) => eprintln!("systemd-analyze not installed ({e}); only the keys were checked"),
    }
}

/// Issue 23 item 10: the manual pages and completions are made from the command line itself:
/// a page for every subcommand `--help` shows, which man renders, and completion scripts that
/// know the subcommands.
#[test]
fn manual_pages_and_completions_cover_every_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let man8 = dir.path().join("man8");
    let out = smb3d(&["manpages", man8.to_str().unwrap()], &[], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let subcommands = subcommands();
    let mut written: Vec<String> = std::fs::read_dir(&man8)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut expected: Vec<String> = subcommands
        .iter()
        .map(|sub| {
            let mut name = vec!["smb3d".to_owned()];
            name.extend(sub.iter().cloned());
            format!("{}.8", name.join("-"))
        })
        .collect();
    expected.sort();
    assert_eq!(written, expected);
    let top = std::fs::read_to_string(man8.join("smb3d.8")).unwrap();
    assert!(
        top.starts_with(".ie \\n(.g .ds Aq") || top.contains(".TH smb3d 8"),
        "{top}"
    );
    assert!(top.contains(".TH smb3d 8"), "{top}");
    let disable = std::fs::read_to_string(man8.join("smb3d-user-disable.8")).unwrap();
    assert!(disable.contains("STATUS_ACCOUNT_DISABLED"), "{disable}");
    if let Ok(rendered) = Command::new("man")
        .arg("-l")
        .arg(man8.join("smb3d.8"))
        .env("MANWIDTH", "100")
        .output()
    {
        let page = text(&rendered.stdout);
        for part in [
            "SYNOPSIS",
            "smb3d-serve(8)",
            "smb3d-user(8)",
            "/etc/smb3d/smb3d.toml",
        ] {
            assert!(page.contains(part), "{part} in {page}");
        }
    }
    for (shell, marker) in [
        ("bash", "complete -F _smb3d"),
        ("zsh", "#compdef smb3d"),
        ("fish", "complete -c smb3d"),
    ] {
        let script = smb3d(&["completions", shell], &[], None);
        assert!(script.status.success(), "{shell}");
        let script = text(&script.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(
            script.contains("disable") && script.contains("import-smb-conf"),
            "{shell}"
        );
    }
}

/// Every subcommand, found by walking the "Commands:" sections of `-h` (the compact help, one
/// line an option) from the top, so that a new one is checked without being listed here.
fn subcommands() -> Vec<Vec<String>> {
    let mut found = vec![Vec::new()];
    let mut next = 0;
    while let Some(sub) = found.get(next).cloned() {
        next += 1;
        let mut args = sub.clone();
        args.push("-h".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let help = text(&smb3d(&args, &[], None).stdout);
        let mut in_commands = false;
        for line in help.lines() {
            if !line.starts_with(' ') {
                in_commands = line.starts_with("Commands:");
                continue;
            }
            let name = line.split_whitespace().next().unwrap_or_default();
            if in_commands && name != "help" {
                let mut child = sub.clone();
                child.push(name.to_owned());
                found.push(child);
            }
        }
    }
    found
}

#[test]
fn every_option_of_every_subcommand_has_help() {
    let subcommands = subcommands();
    for expected in [
        &["user", "disable"][..],
        &["config", "import-smb-conf"],
        &["close-file"],
    ] {
        assert!(
            subcommands.iter().any(|s| s == expected),
            "{expected:?} not found in {subcommands:?}"
        );
    }
    let mut undocumented = Vec::new();
    for sub in &subcommands {
        let mut args: Vec<&str> = sub.iter().map(String::as_str).collect();
        args.push("-h");
        let out = smb3d(&args, &[], None);
        assert!(out.status.success(), "{args:?}");
        let help = text(&out.stdout);
        let mut section = "";
        for line in help.lines() {
            if !line.starts_with(' ') {
                section = line;
                continue;
            }
            let entry = line.trim();
            // An option or argument line: its flag, then two spaces and the description.
            let documented = entry.contains("  ") && !entry.ends_with("  ");
            if (section.starts_with("Options") || section.starts_with("Arguments"))
                && (entry.starts_with('-') || entry.starts_with('<') || entry.starts_with('['))
                && !documented
            {
                undocumented.push(format!("{sub:?}: {entry}"));
            }
        }
    }
    assert!(
        undocumented.is_empty(),
        "options without help: {undocumented:#?}"
    );
}

/// `serve --demo` started by `sh`, which first plants `plant` (a shell command) at the name the
/// demo once used, `$TMPDIR/smb3d-demo-$$`, then execs smb3d under its own pid. Returns the
/// directory of the admin socket the banner names, once the demo listens, and the pid.
fn demo_after_plant(tmp: &Path, plant: &str) -> (PathBuf, u32) {
    use std::io::BufRead;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = format!("{plant} && exec \"$0\" serve --demo --port \"$1\"");
    let mut child = Command::new("sh")
        .args(["-c", &script, BIN, &port.to_string()])
        .env("TMPDIR", tmp)
        .env("ATTACKER", tmp.join("attacker"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, banner) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines.send(line);
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut socket = None;
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match banner.recv_timeout(left) {
            Ok(line) => {
                if let Some(path) = line.strip_prefix("status with: smb3d status --socket ") {
                    socket = Some(PathBuf::from(path));
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let pid = child.id();
    let _ = child.kill();
    let _ = child.wait();
    let socket = socket.expect("the demo printed no banner");
    (socket.parent().unwrap().to_path_buf(), pid)
}

/// The demo keeps its user database, share and admin socket in a directory it made itself, as
/// mkdtemp(3) does: fresh, of a name no one could know in advance, mode 0700, owned by the
/// server. A directory or a symlink that another local user made first at a predictable name
/// is neither used nor written to.
#[test]
fn demo_state_is_a_fresh_private_directory() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let plants = [
        "mkdir -m 777 \"$TMPDIR/smb3d-demo-$$\"",
        "mkdir -m 777 \"$ATTACKER\" && ln -s \"$ATTACKER\" \"$TMPDIR/smb3d-demo-$$\"",
    ];
    let me = std::fs::metadata("/proc/self").unwrap().uid();
    for plant in plants {
        let tmp = tempfile::tempdir().unwrap();
        let (state, pid) = demo_after_plant(tmp.path(), plant);
        let planted = tmp.path().join(format!("smb3d-demo-{pid}"));
        assert!(
            std::fs::symlink_metadata(&planted).is_ok(),
            "{plant}: nothing was planted"
        );
        assert_ne!(state, planted, "{plant}: the demo took what was planted");
        let written: Vec<_> = std::fs::read_dir(std::fs::canonicalize(&planted).unwrap())
            .unwrap()
            .collect();
        assert!(
            written.is_empty(),
            "{plant}: the demo wrote into what was planted: {written:?}"
        );
        assert_eq!(state.parent(), Some(tmp.path()), "{plant}");
        let meta = std::fs::symlink_metadata(&state).unwrap();
        assert!(
            meta.is_dir(),
            "{plant}: {} is no directory",
            state.display()
        );
        assert_eq!(meta.permissions().mode() & 0o7777, 0o700, "{plant}");
        assert_eq!(meta.uid(), me, "{plant}");
        let name = state.file_name().unwrap().to_str().unwrap();
        let random = name.strip_prefix("smb3d-demo-").unwrap_or_default();
        assert!(
            random.len() >= 12 && random != pid.to_string(),
            "{plant}: {name} is predictable"
        );
        for inside in ["users", "share"] {
            assert!(state.join(inside).exists(), "{plant}: no {inside}");
        }
    }
}
