//! Issue 9, check 3: Debian's default smb.conf plus a typical share block converts into a
//! configuration that `Config::parse` accepts, with a warning for everything that does not map.
//!
//! `fixtures/debian-smb.conf` is `/usr/share/samba/smb.conf` of Debian 12's samba-common
//! 2:4.17.12+dfsg-0+deb12u4 (the file installed as `/etc/samba/smb.conf`), unchanged.

use std::path::Path;

use smb3d_config::smbconf::SmbConf;
use smb3d_config::{Config, Dialect, EncryptPolicy, SigningPolicy};

const DEBIAN_DEFAULT: &str = include_str!("fixtures/debian-smb.conf");

/// The share block issue 9 names.
const SHARE_BLOCK: &str = "
[projects]
   comment = Team projects
   path = /srv/projects
   read only = no
   valid users = alice bob @staff
   guest ok = no
   browseable = yes
   create mask = 0664
   vfs objects = acl_xattr streams_xattr
";

#[test]
fn debian_default_with_a_share_converts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("smb.conf");
    std::fs::write(&path, format!("{DEBIAN_DEFAULT}{SHARE_BLOCK}")).unwrap();
    let imported = smb3d_config::smbconf::import(&path).unwrap();
    let c = &imported.config;

    assert_eq!(c.server.workgroup, "WORKGROUP");
    assert_eq!(*c.server.min_dialect.get_ref(), Dialect::Smb202);
    assert_eq!(*c.server.max_dialect.get_ref(), Dialect::Smb311);
    assert_eq!(c.server.signing, SigningPolicy::Auto);
    assert_eq!(c.server.encrypt, EncryptPolicy::Auto);
    assert_eq!(
        c.server.listen,
        ["0.0.0.0:445".parse().unwrap(), "[::]:445".parse().unwrap()]
    );

    let names: Vec<&str> = c.shares.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["homes", "print$", "projects"]);
    // Debian's [homes] has no path: each user's passwd home; `valid users = %S` is the owner.
    let homes = c.share("homes").unwrap();
    assert_eq!(homes.path.get_ref(), Path::new("%H"));
    assert!(homes.read_only && !homes.browseable);
    assert_eq!(homes.valid_users, ["%S"]);
    assert_eq!((homes.create_mask, homes.directory_mask), (0o700, 0o700));
    let print = c.share("print$").unwrap();
    assert_eq!(print.path.get_ref(), Path::new("/var/lib/samba/printers"));
    assert!(print.read_only && print.browseable && !print.guest_ok);
    let projects = c.share("projects").unwrap();
    assert_eq!(projects.path.get_ref(), Path::new("/srv/projects"));
    assert_eq!(projects.comment, "Team projects");
    assert!(!projects.read_only && projects.browseable && !projects.guest_ok);
    assert_eq!(projects.valid_users, ["alice", "bob", "@staff"]);
    // Named streams only where a streams module serves them in Samba.
    assert!(!homes.streams_xattr && !print.streams_xattr && projects.streams_xattr);
    assert_eq!(projects.create_mask, 0o664);

    let warnings: Vec<String> = imported
        .warnings
        .iter()
        .map(|w| w.to_string().replace(&*dir.path().to_string_lossy(), "DIR"))
        .collect();
    let expected = [
        "DIR/smb.conf:51: [global]: log file = /var/log/samba/log.%m: smb3d logs to standard error (the journal under systemd); set the level with SMB3D_LOG",
        "DIR/smb.conf:54: [global]: max log size = 1000: smb3d logs to standard error (the journal under systemd); set the level with SMB3D_LOG",
        "DIR/smb.conf:58: [global]: logging = file: smb3d logs to standard error (the journal under systemd); set the level with SMB3D_LOG",
        "DIR/smb.conf:61: [global]: panic action = /usr/share/samba/panic-action %d: smb3d does not run a command on a crash",
        "DIR/smb.conf:77: [global]: obey pam restrictions = yes: smb3d keeps its own user database and does not use PAM",
        "DIR/smb.conf:82: [global]: unix password sync = yes: smb3d keeps its own user database and does not use PAM",
        "DIR/smb.conf:87: [global]: passwd program = /usr/bin/passwd %u: smb3d keeps its own user database and does not use PAM",
        "DIR/smb.conf:88: [global]: passwd chat = *Enter\\snew\\s*\\spassword:* %n\\n *Retype\\snew\\s*\\spassword:* %n\\n *password\\supdated\\ssuccessfully* .: smb3d keeps its own user database and does not use PAM",
        "DIR/smb.conf:93: [global]: pam password change = yes: smb3d keeps its own user database and does not use PAM",
        "DIR/smb.conf:165: [global]: usershare allow guests = yes: user shares are not supported",
        "DIR/smb.conf:213: [printers]: share skipped: smb3d serves no printers (parameters not imported: comment, browseable, path, printable, guest ok, read only, create mask)",
        "DIR/smb.conf:224: [print$]: imported as a plain file share of the printer drivers it holds; smb3d serves no printers, so clients install no drivers from it (Point and Print)",
        // [homes] and [print$] have no vfs objects: they get `streams_xattr = false`, as Samba
        // serves no named streams on them, with no warning. The share block maps whole: users
        // and the group, the create mask, the vfs modules.
    ];
    assert_eq!(warnings, expected);

    // Every parameter of the file is either mapped or named in a warning.
    let conf = SmbConf::parse(&path, &format!("{DEBIAN_DEFAULT}{SHARE_BLOCK}")).unwrap();
    let mapped_silently = [
        "workgroup",
        "serverrole",
        "path",
        "comment",
        "readonly",
        "guestok",
        "browseable",
        "validusers",
        "vfsobjects",
        "createmask",
        "directorymask",
        "maptoguest",
    ];
    for section in &conf.sections {
        for p in &section.params {
            let named = warnings
                .iter()
                .any(|w| w.contains(&format!("[{}]", section.name)) && w.contains(&p.name));
            assert!(
                named || mapped_silently.contains(&p.key.as_str()),
                "[{}] {} is neither mapped nor warned about",
                section.name,
                p.name
            );
        }
    }

    let text = imported.to_toml();
    let reparsed = Config::parse(Path::new("smb3d.toml"), &text).unwrap();
    assert_eq!(reparsed.to_toml(), c.to_toml());
}
