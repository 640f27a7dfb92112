//! The effective configuration as TOML text that [`Config::parse`] reads back to the same values.

use std::fmt::Write as _;
use std::path::Path;

use crate::{Config, FaultRuleConfig, HostPattern, InheritOwner, MapToGuest, ShareConfig};

/// A TOML basic string holding `s`, escaped as TOML requires.
pub(crate) fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

fn toml_path(p: &Path) -> String {
    toml_string(&p.to_string_lossy())
}

/// A table key: bare when TOML allows, quoted otherwise.
pub(crate) fn toml_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if bare {
        key.to_owned()
    } else {
        toml_string(key)
    }
}

fn string_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let items: Vec<String> = items.into_iter().map(toml_string).collect();
    format!("[{}]", items.join(", "))
}

impl Config {
    /// Every setting, defaults included, as TOML that parses back to this configuration.
    pub fn to_toml(&self) -> String {
        let s = &self.server;
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = writeln!(out, "[server]");
        let listen: Vec<String> = s.listen.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "listen = {}",
            string_list(listen.iter().map(String::as_str))
        );
        let _ = writeln!(out, "server_name = {}", toml_string(&s.server_name));
        let _ = writeln!(out, "workgroup = {}", toml_string(&s.workgroup));
        let _ = writeln!(
            out,
            "min_dialect = \"{}\"",
            s.min_dialect.get_ref().as_str()
        );
        let _ = writeln!(
            out,
            "max_dialect = \"{}\"",
            s.max_dialect.get_ref().as_str()
        );
        let _ = writeln!(out, "signing = \"{}\"", s.signing.as_str());
        let _ = writeln!(out, "encrypt = \"{}\"", s.encrypt.as_str());
        let _ = writeln!(
            out,
            "ciphers = {}",
            string_list(s.ciphers.iter().map(|c| c.as_str()))
        );
        let _ = writeln!(out, "user_db = {}", toml_path(&s.user_db));
        let _ = writeln!(out, "state_dir = {}", toml_path(&s.state_dir));
        let _ = writeln!(out, "multichannel = {}", s.multichannel);
        let _ = writeln!(out, "directory_leases = {}", s.directory_leases);
        let _ = writeln!(out, "max_io_size = {}", s.max_io_size.get_ref());
        let _ = writeln!(out, "mdns = {}", s.mdns);
        let _ = writeln!(out, "mdns_model = {}", toml_string(&s.mdns_model));
        let _ = writeln!(out, "admin_socket = {}", toml_path(&s.admin_socket));
        let _ = writeln!(out, "metrics = {}", s.metrics);
        let _ = writeln!(out, "metrics_listen = \"{}\"", s.metrics_listen);
        let _ = writeln!(out, "log_format = \"{}\"", s.log_format.as_str());
        let _ = writeln!(out, "audit = {}", s.audit);
        render_hosts(&mut out, &s.hosts_allow, &s.hosts_deny);
        if let Some(account) = &s.guest_account {
            let _ = writeln!(out, "guest_account = {}", toml_string(account));
        }
        if s.map_to_guest != MapToGuest::Never {
            let _ = writeln!(out, "map_to_guest = \"{}\"", s.map_to_guest.as_str());
        }
        out.push('\n');
        crate::limits::render_limits(&mut out, &self.limits);
        if let Some(cluster) = &self.cluster {
            crate::cluster::render_cluster(&mut out, cluster);
        }
        if let Some(auth) = &self.auth {
            crate::auth::render_auth(&mut out, auth);
        }
        if let Some(idmap) = &self.idmap {
            crate::idmap::render_idmap(&mut out, idmap);
        }
        for (name, share) in &self.shares {
            out.push('\n');
            render_share(&mut out, name, share);
        }
        out
    }
}

/// `hosts_allow` and `hosts_deny`, when set.
fn render_hosts(out: &mut String, allow: &[HostPattern], deny: &[HostPattern]) {
    for (option, list) in [("hosts_allow", allow), ("hosts_deny", deny)] {
        if !list.is_empty() {
            let entries: Vec<String> = list.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                out,
                "{option} = {}",
                string_list(entries.iter().map(String::as_str))
            );
        }
    }
}

fn render_share(out: &mut String, name: &str, share: &ShareConfig) {
    let _ = writeln!(out, "[share.{}]", toml_key(name));
    let _ = writeln!(out, "path = {}", toml_path(share.path.get_ref()));
    let _ = writeln!(out, "comment = {}", toml_string(&share.comment));
    let _ = writeln!(out, "read_only = {}", share.read_only);
    let _ = writeln!(
        out,
        "valid_users = {}",
        string_list(share.valid_users.iter().map(String::as_str))
    );
    for (option, list) in [
        ("read_list", &share.read_list),
        ("write_list", &share.write_list),
        ("invalid_users", &share.invalid_users),
        ("admin_users", &share.admin_users),
    ] {
        if !list.is_empty() {
            let _ = writeln!(
                out,
                "{option} = {}",
                string_list(list.iter().map(String::as_str))
            );
        }
    }
    for (option, account) in [
        ("force_user", &share.force_user),
        ("force_group", &share.force_group),
    ] {
        if let Some(account) = account {
            let _ = writeln!(out, "{option} = {}", toml_string(account));
        }
    }
    render_hosts(out, &share.hosts_allow, &share.hosts_deny);
    let _ = writeln!(out, "browseable = {}", share.browseable);
    let _ = writeln!(out, "guest_ok = {}", share.guest_ok);
    if let Some(encrypt) = share.encrypt {
        let _ = writeln!(out, "encrypt = \"{}\"", encrypt.as_str());
    }
    let _ = writeln!(out, "signing = \"{}\"", share.signing.as_str());
    let _ = writeln!(out, "create_mask = {:#o}", share.create_mask);
    let _ = writeln!(out, "directory_mask = {:#o}", share.directory_mask);
    if share.force_create_mode != 0 {
        let _ = writeln!(out, "force_create_mode = {:#o}", share.force_create_mode);
    }
    if share.force_directory_mode != 0 {
        let _ = writeln!(
            out,
            "force_directory_mode = {:#o}",
            share.force_directory_mode
        );
    }
    if share.inherit_permissions {
        let _ = writeln!(out, "inherit_permissions = true");
    }
    if share.inherit_acls {
        let _ = writeln!(out, "inherit_acls = true");
    }
    if share.short_names {
        let _ = writeln!(out, "short_names = true");
    }
    for (name, on) in [
        ("store_dos_attributes", share.store_dos_attributes),
        ("ea_support", share.ea_support),
        ("streams_xattr", share.streams_xattr),
    ] {
        if !on {
            let _ = writeln!(out, "{name} = false");
        }
    }
    if share.inherit_owner != InheritOwner::No {
        let _ = writeln!(out, "inherit_owner = \"{}\"", share.inherit_owner.as_str());
    }
    let _ = writeln!(out, "hide_unreadable = {}", share.hide_unreadable);
    let _ = writeln!(
        out,
        "access_based_share_enum = {}",
        share.access_based_share_enum
    );
    if let Some(audit) = share.audit {
        let _ = writeln!(out, "audit = {audit}");
    }
    let _ = writeln!(out, "strict_allocate = {}", share.strict_allocate);
    let _ = writeln!(
        out,
        "allocation_roundup_size = {}",
        share.allocation_roundup_size
    );
    let _ = writeln!(out, "sync_metadata = {}", share.sync_metadata);
    let _ = writeln!(out, "hide_dot_files = {}", share.hide_dot_files);
    let _ = writeln!(
        out,
        "hide_files = {}",
        string_list(share.hide_files.iter().map(String::as_str))
    );
    if !share.veto_files.is_empty() {
        let _ = writeln!(
            out,
            "veto_files = {}",
            string_list(share.veto_files.iter().map(String::as_str))
        );
    }
    if share.delete_veto_files {
        let _ = writeln!(out, "delete_veto_files = true");
    }
    if share.recycle {
        render_recycle(out, share);
    }
    if !share.oplocks {
        let _ = writeln!(out, "oplocks = false");
    }
    if !share.veto_oplock_files.is_empty() {
        let _ = writeln!(
            out,
            "veto_oplock_files = {}",
            string_list(share.veto_oplock_files.iter().map(String::as_str))
        );
    }
    if !share.posix_locking {
        let _ = writeln!(out, "posix_locking = false");
    }
    if share.kernel_oplocks {
        let _ = writeln!(out, "kernel_oplocks = true");
    }
    let _ = writeln!(
        out,
        "continuous_availability = {}",
        share.continuous_availability
    );
    if let Some(scale_out) = share.scale_out {
        let _ = writeln!(out, "scale_out = {scale_out}");
    }
    if share.posix {
        let _ = writeln!(out, "posix = true");
    }
    if share.apple {
        let _ = writeln!(out, "apple = true");
        let _ = writeln!(out, "apple_model = {}", toml_string(&share.apple_model));
        if !share.apple_veto_appledouble {
            let _ = writeln!(out, "apple_veto_appledouble = false");
        }
        if share.apple_wipe_intentionally_left_blank_rfork {
            let _ = writeln!(out, "apple_wipe_intentionally_left_blank_rfork = true");
        }
        if share.apple_delete_empty_adfiles {
            let _ = writeln!(out, "apple_delete_empty_adfiles = true");
        }
        if !share.apple_zero_file_id {
            let _ = writeln!(out, "apple_zero_file_id = false");
        }
    }
    if share.time_machine {
        let _ = writeln!(out, "time_machine = true");
        let _ = writeln!(
            out,
            "time_machine_max_size = {}",
            share.time_machine_max_size
        );
    }
    if let Some(source) = share.snapshots {
        let _ = writeln!(out, "snapshots = \"{}\"", source.as_str());
    }
    if share.create_home {
        let _ = writeln!(out, "create_home = true");
        let _ = writeln!(out, "create_home_mode = {:#o}", share.create_home_mode);
    }
    for rule in &share.testing_fault_injection {
        render_fault_rule(out, name, rule);
    }
}

fn render_fault_rule(out: &mut String, share: &str, rule: &FaultRuleConfig) {
    let _ = writeln!(out, "[[share.{}.testing_fault_injection]]", toml_key(share));
    let _ = writeln!(
        out,
        "ops = {}",
        string_list(rule.ops.iter().map(|op| op.as_str()))
    );
    for (key, pattern) in [("path", &rule.path), ("xattr", &rule.xattr)] {
        if let Some(pattern) = pattern {
            let _ = writeln!(out, "{key} = {}", toml_string(pattern));
        }
    }
    let _ = writeln!(out, "delay_ms = {}", rule.delay_ms);
    if let Some(error) = rule.error {
        let _ = writeln!(out, "error = \"{}\"", error.as_str());
    }
    let _ = writeln!(out, "skip = {}", rule.skip);
    if let Some(times) = rule.times {
        let _ = writeln!(out, "times = {times}");
    }
}

/// The `recycle_*` options of a share with a recycle bin.
fn render_recycle(out: &mut String, share: &ShareConfig) {
    let _ = writeln!(out, "recycle = true");
    let _ = writeln!(
        out,
        "recycle_repository = {}",
        toml_string(&share.recycle_repository)
    );
    for (option, on) in [
        ("recycle_keeptree", share.recycle_keeptree),
        ("recycle_versions", share.recycle_versions),
        ("recycle_touch", share.recycle_touch),
    ] {
        if on {
            let _ = writeln!(out, "{option} = true");
        }
    }
    for (option, patterns) in [
        ("recycle_exclude", &share.recycle_exclude),
        ("recycle_exclude_dir", &share.recycle_exclude_dir),
        ("recycle_noversions", &share.recycle_noversions),
    ] {
        if !patterns.is_empty() {
            let list = string_list(patterns.iter().map(String::as_str));
            let _ = writeln!(out, "{option} = {list}");
        }
    }
    if share.recycle_maxsize > 0 {
        let _ = writeln!(out, "recycle_maxsize = {}", share.recycle_maxsize);
    }
    let _ = writeln!(
        out,
        "recycle_directory_mode = \"{:04o}\"",
        share.recycle_directory_mode
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_rules_render_and_parse_back() {
        let text = r#"
[share.flaky]
path = "/srv/flaky"
[[share.flaky.testing_fault_injection]]
ops = ["write", "sync"]
path = "bad*"
error = "EIO"
times = 1
[[share.flaky.testing_fault_injection]]
xattr = "security.NTACL"
delay_ms = 2000
error = "ENOSPC"
skip = 3
"#;
        let config = Config::parse(Path::new("t.toml"), text).unwrap();
        let rendered = config.to_toml();
        let again = Config::parse(Path::new("r.toml"), &rendered).unwrap();
        assert_eq!(
            again.share("flaky").unwrap().testing_fault_injection,
            config.share("flaky").unwrap().testing_fault_injection,
            "{rendered}"
        );
        assert_eq!(
            again.share("flaky").unwrap().testing_fault_injection.len(),
            2
        );
    }

    #[test]
    fn rendering_parses_back_to_the_same_settings() {
        let text = r#"
[server]
listen = ["127.0.0.1:4445", "[::1]:4445"]
server_name = "FILES"
workgroup = "HOME"
min_dialect = "3.0"
signing = "required"
encrypt = "desired"
ciphers = ["aes-256-gcm"]
user_db = "/var/lib/smb3d/users \"x\""
state_dir = "/srv/state"
multichannel = false
directory_leases = false
max_io_size = 65536
mdns = true
mdns_model = "MacPro7,1@ECOLOR=226,226,224"
admin_socket = "/run/smb3d/admin.sock"
metrics = true
metrics_listen = "[::1]:9100"
log_format = "json"
audit = true

[share."print$"]
path = "/srv/a b"
comment = "tab\there"
read_only = true
valid_users = ["alice", "Jörg"]
read_list = ["@guests"]
write_list = ["alice"]
force_user = "files"
force_group = "staff"
browseable = false
guest_ok = true
encrypt = "required"
signing = "required"
create_mask = 0o640
directory_mask = 0o2750
hide_unreadable = true
access_based_share_enum = true
audit = false
strict_allocate = false
allocation_roundup_size = 1048576
sync_metadata = true
hide_dot_files = false
hide_files = ["*.tmp", "Thumbs.db"]
continuous_availability = true
posix = true

[share.plain]
path = "/srv/p"
"#;
        let config = Config::parse(Path::new("t.toml"), text).unwrap();
        let rendered = config.to_toml();
        let again = Config::parse(Path::new("r.toml"), &rendered).unwrap();
        assert_eq!(again.to_toml(), rendered);
        assert!(rendered.contains("[share.\"print$\"]\n"), "{rendered}");
        assert!(rendered.contains("create_mask = 0o640\n"), "{rendered}");
        assert!(rendered.contains("posix = true\n"), "{rendered}");
        assert!(rendered.contains("directory_mask = 0o2750\n"), "{rendered}");
        assert!(rendered.contains("create_mask = 0o744\n"), "{rendered}");
        assert!(
            rendered.contains("comment = \"tab\\there\"\n"),
            "{rendered}"
        );
        assert!(again.server.mdns);
        assert!(!again.server.multichannel);
        assert!(!again.server.directory_leases);
        assert_eq!(again.server.mdns_model, "MacPro7,1@ECOLOR=226,226,224");
        assert_eq!(again.share("plain").unwrap().encrypt, None);
        assert_eq!(again.share("plain").unwrap().audit, None);
        assert_eq!(again.share("print$").unwrap().audit, Some(false));
        assert!(again.server.metrics && again.server.audit);
        assert_eq!(again.server.metrics_listen, "[::1]:9100".parse().unwrap());
        assert_eq!(again.server.log_format, crate::LogFormat::Json);
        assert_eq!(again.shares[0].1.valid_users, ["alice", "Jörg"]);
        let first = &again.shares[0].1;
        assert_eq!(first.read_list, ["@guests"]);
        assert_eq!(first.write_list, ["alice"]);
        assert_eq!(first.force_user.as_deref(), Some("files"));
        assert_eq!(first.force_group.as_deref(), Some("staff"));
        assert!(first.hide_unreadable && first.access_based_share_enum);
        assert!(first.continuous_availability);
        assert_eq!(again.server.state_dir, Path::new("/srv/state"));
        let plain = again.share("plain").unwrap();
        assert!(plain.force_user.is_none() && !plain.hide_unreadable);
        assert!(!plain.continuous_availability);
    }

    #[test]
    fn keys_are_quoted_only_when_needed() {
        assert_eq!(toml_key("data_1-x"), "data_1-x");
        assert_eq!(toml_key("print$"), "\"print$\"");
        assert_eq!(toml_key("a b"), "\"a b\"");
    }
}
