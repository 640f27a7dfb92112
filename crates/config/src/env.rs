//! Environment-variable overrides, for containers: `SMB3D_<SETTING>=value` replaces a server
//! setting and `SMB3D_SHARE_<NAME>=<path>[;option]...` adds or replaces a share.

use std::net::SocketAddr;
use std::path::PathBuf;

use toml::Spanned;

use crate::model::{
    check_admin_socket, check_mdns_model, check_server_name, parse_listen_address, server_problems,
    share_problems,
};
use crate::{
    CipherName, Config, ConfigError, DEFAULT_METRICS_PORT, Dialect, EncryptPolicy, LogFormat,
    ShareConfig, SigningPolicy,
};

/// Every override variable starts with this.
pub const ENV_PREFIX: &str = "SMB3D_";
/// `SMB3D_SHARE_<NAME>` defines the share `<NAME>`.
pub const ENV_SHARE_PREFIX: &str = "SMB3D_SHARE_";

/// The server settings that a variable can set, by variable name.
const SERVER_VARIABLES: &[&str] = &[
    "SMB3D_LISTEN",
    "SMB3D_SERVER_NAME",
    "SMB3D_WORKGROUP",
    "SMB3D_USER_DB",
    "SMB3D_STATE_DIR",
    "SMB3D_MULTICHANNEL",
    "SMB3D_DIRECTORY_LEASES",
    "SMB3D_SIGNING",
    "SMB3D_ENCRYPT",
    "SMB3D_CIPHERS",
    "SMB3D_MIN_DIALECT",
    "SMB3D_MAX_DIALECT",
    "SMB3D_MAX_IO_SIZE",
    "SMB3D_MDNS",
    "SMB3D_MDNS_MODEL",
    "SMB3D_ADMIN_SOCKET",
    "SMB3D_METRICS",
    "SMB3D_METRICS_LISTEN",
    "SMB3D_LOG_FORMAT",
    "SMB3D_AUDIT",
];

/// Whether `name` is a variable that [`Config::with_env`] applies (others, such as
/// `SMB3D_LOG`, are left to whoever reads them).
pub fn is_override_variable(name: &str) -> bool {
    SERVER_VARIABLES.contains(&name)
        || name
            .strip_prefix(ENV_SHARE_PREFIX)
            .is_some_and(|share| !share.is_empty())
}

fn env_error(variable: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        file: PathBuf::from(format!("environment variable {variable}")),
        line: 0,
        column: 0,
        message: message.into(),
    }
}

fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// `ADDR:PORT` or a bare address (port 445), comma-separated.
fn parse_listen(value: &str) -> Result<Vec<SocketAddr>, String> {
    let mut addrs = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let addr = parse_listen_address(item)
            .ok_or_else(|| format!("{item:?} is not an address such as 0.0.0.0:445 or [::]:445"))?;
        addrs.push(addr);
    }
    if addrs.is_empty() {
        return Err("names no address".into());
    }
    Ok(addrs)
}

fn parse_cipher(name: &str) -> Option<CipherName> {
    [
        CipherName::Aes128Gcm,
        CipherName::Aes128Ccm,
        CipherName::Aes256Gcm,
        CipherName::Aes256Ccm,
    ]
    .into_iter()
    .find(|c| c.as_str().eq_ignore_ascii_case(name))
}

/// An address and port, or a bare port on 127.0.0.1 (the metrics endpoint stays local unless
/// an address is given).
fn parse_metrics_listen(value: &str) -> Result<SocketAddr, String> {
    value
        .parse::<SocketAddr>()
        .or_else(|_| {
            value
                .parse::<u16>()
                .map(|port| SocketAddr::from(([127, 0, 0, 1], port)))
        })
        .map_err(|_| {
            format!(
                "{value:?} is not an address such as 127.0.0.1:{DEFAULT_METRICS_PORT} or a port"
            )
        })
}

/// `<path>[;read_only][;guest_ok][;hidden][;audit][;users=a,b][;comment=text][;encrypt=P]
/// [;signing=P][;read_list=a,b][;write_list=a,b][;force_user=U][;force_group=G]
/// [;hide_unreadable][;access_based_share_enum][;scale_out[=true|false]]`.
fn parse_share(value: &str) -> Result<ShareConfig, String> {
    let mut parts = value.split(';');
    let path = PathBuf::from(parts.next().unwrap_or_default().trim());
    if !path.is_absolute() {
        return Err(format!(
            "the share path {:?} must be absolute",
            path.display()
        ));
    }
    let mut share = ShareConfig::new(path);
    for option in parts.map(str::trim).filter(|o| !o.is_empty()) {
        let (key, arg) = match option.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (option, None),
        };
        match (key.to_ascii_lowercase().as_str(), arg) {
            ("read_only", None) => share.read_only = true,
            ("guest_ok", None) => share.guest_ok = true,
            ("hidden", None) => share.browseable = false,
            ("audit", None) => share.audit = Some(true),
            ("users", Some(users)) => share.valid_users = user_list(users),
            ("read_list", Some(users)) => share.read_list = user_list(users),
            ("write_list", Some(users)) => share.write_list = user_list(users),
            ("force_user", Some(user)) => share.force_user = Some(user.to_owned()),
            ("force_group", Some(group)) => share.force_group = Some(group.to_owned()),
            ("hide_unreadable", None) => share.hide_unreadable = true,
            ("access_based_share_enum", None) => share.access_based_share_enum = true,
            // On a cluster node shares are scale-out ones unless told otherwise.
            ("scale_out", None) => share.scale_out = Some(true),
            ("scale_out", Some(b)) => {
                share.scale_out = Some(match b.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(format!("scale_out={b}: expected true or false")),
                });
            }
            ("comment", Some(text)) => share.comment = text.to_owned(),
            ("encrypt", Some(p)) => {
                share.encrypt = Some(EncryptPolicy::parse(p).ok_or_else(|| {
                    format!("encrypt={p}: expected off, auto, desired or required")
                })?);
            }
            ("signing", Some(p)) => {
                share.signing = SigningPolicy::parse(p)
                    .ok_or_else(|| format!("signing={p}: expected auto or required"))?;
            }
            _ => {
                return Err(format!(
                    "unknown share option {option:?}; expected read_only, guest_ok, hidden, \
                     audit, users=a,b, comment=text, encrypt=policy, signing=policy, \
                     read_list=a,b, write_list=a,b, force_user=name, force_group=name, \
                     hide_unreadable, access_based_share_enum or scale_out=true|false"
                ));
            }
        }
    }
    Ok(share)
}

/// A comma-separated list of user names and `@group`s.
fn user_list(users: &str) -> Vec<String> {
    users
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_owned)
        .collect()
}

impl Config {
    /// Applies the `SMB3D_*` overrides found in `env` (for example `std::env::vars()`), in
    /// name order; variables that are not overrides are ignored. An empty `SMB3D_SHARE_<NAME>`
    /// removes that share. Errors name the variable.
    pub fn with_env(
        mut self,
        env: impl Iterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let mut vars: Vec<(String, String)> =
            env.filter(|(name, _)| is_override_variable(name)).collect();
        vars.sort();
        let mut applied = Vec::new();
        for (name, value) in &vars {
            let fail = |m: String| env_error(name, m);
            let value = value.trim();
            if let Some(share_name) = name.strip_prefix(ENV_SHARE_PREFIX) {
                self.shares
                    .retain(|(n, _)| !n.eq_ignore_ascii_case(share_name));
                if value.is_empty() {
                    continue;
                }
                let share = parse_share(value).map_err(fail)?;
                if let Some(problem) = share_problems(share_name, &share, 0..0).into_iter().next() {
                    return Err(fail(problem.message));
                }
                self.shares.push((share_name.to_owned(), share));
                continue;
            }
            let s = &mut self.server;
            match name.as_str() {
                "SMB3D_LISTEN" => s.listen = parse_listen(value).map_err(fail)?,
                "SMB3D_SERVER_NAME" => {
                    check_server_name(value).map_err(fail)?;
                    value.clone_into(&mut s.server_name);
                }
                "SMB3D_WORKGROUP" => value.clone_into(&mut s.workgroup),
                "SMB3D_USER_DB" => {
                    if !value.starts_with('/') {
                        return Err(fail(format!("{value:?} must be an absolute path")));
                    }
                    s.user_db = PathBuf::from(value);
                }
                "SMB3D_STATE_DIR" => {
                    if !value.starts_with('/') {
                        return Err(fail(format!("{value:?} must be an absolute path")));
                    }
                    s.state_dir = PathBuf::from(value);
                }
                "SMB3D_MULTICHANNEL" => {
                    s.multichannel = parse_bool(value)
                        .ok_or_else(|| fail(format!("{value:?}: expected true or false")))?;
                }
                "SMB3D_DIRECTORY_LEASES" => {
                    s.directory_leases = parse_bool(value)
                        .ok_or_else(|| fail(format!("{value:?}: expected true or false")))?;
                }
                "SMB3D_SIGNING" => {
                    s.signing = SigningPolicy::parse(value)
                        .ok_or_else(|| fail(format!("{value:?}: expected auto or required")))?;
                }
                "SMB3D_ENCRYPT" => {
                    s.encrypt = EncryptPolicy::parse(value).ok_or_else(|| {
                        fail(format!(
                            "{value:?}: expected off, auto, desired or required"
                        ))
                    })?;
                }
                "SMB3D_CIPHERS" => {
                    s.ciphers = value
                        .split(',')
                        .map(str::trim)
                        .filter(|c| !c.is_empty())
                        .map(|c| {
                            parse_cipher(c).ok_or_else(|| {
                                fail(format!(
                                    "unknown cipher {c:?}; expected aes-128-gcm, aes-256-gcm, \
                                     aes-128-ccm or aes-256-ccm"
                                ))
                            })
                        })
                        .collect::<Result<_, _>>()?;
                }
                "SMB3D_MIN_DIALECT" | "SMB3D_MAX_DIALECT" => {
                    let dialect = Dialect::parse(value).ok_or_else(|| {
                        fail(format!(
                            "unknown dialect {value:?}; expected one of 2.0.2, 2.1, 3.0, 3.0.2, 3.1.1"
                        ))
                    })?;
                    let dialect = Spanned::new(0..0, dialect);
                    if name == "SMB3D_MIN_DIALECT" {
                        s.min_dialect = dialect;
                    } else {
                        s.max_dialect = dialect;
                    }
                }
                "SMB3D_MAX_IO_SIZE" => {
                    let size = value
                        .parse::<u32>()
                        .map_err(|_| fail(format!("{value:?} is not a number of bytes")))?;
                    s.max_io_size = Spanned::new(0..0, size);
                }
                "SMB3D_MDNS" => {
                    s.mdns = parse_bool(value)
                        .ok_or_else(|| fail(format!("{value:?}: expected true or false")))?;
                }
                "SMB3D_MDNS_MODEL" => {
                    check_mdns_model(value).map_err(fail)?;
                    value.clone_into(&mut s.mdns_model);
                }
                "SMB3D_ADMIN_SOCKET" => {
                    let path = PathBuf::from(value);
                    check_admin_socket(&path).map_err(fail)?;
                    s.admin_socket = path;
                }
                "SMB3D_METRICS" => {
                    s.metrics = parse_bool(value)
                        .ok_or_else(|| fail(format!("{value:?}: expected true or false")))?;
                }
                "SMB3D_METRICS_LISTEN" => {
                    s.metrics_listen = parse_metrics_listen(value).map_err(fail)?;
                }
                "SMB3D_LOG_FORMAT" => {
                    s.log_format = LogFormat::parse(value)
                        .ok_or_else(|| fail(format!("{value:?}: expected human or json")))?;
                }
                "SMB3D_AUDIT" => {
                    s.audit = parse_bool(value)
                        .ok_or_else(|| fail(format!("{value:?}: expected true or false")))?;
                }
                _ => continue,
            }
            applied.push(name.as_str());
        }
        // What only shows in combination (min above max, no ciphers while encrypting).
        if let Some(problem) = server_problems(&self.server, |_| 0..0).into_iter().next() {
            let names = if applied.is_empty() {
                "the environment".to_owned()
            } else {
                applied.join(", ")
            };
            return Err(env_error(&names, problem.message));
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn base() -> Config {
        Config::parse(
            Path::new("t.toml"),
            "[share.data]\npath = \"/srv/data\"\n[share.keep]\npath = \"/srv/keep\"\n",
        )
        .unwrap()
    }

    fn vars(list: &[(&str, &str)]) -> impl Iterator<Item = (String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn server_settings_are_replaced() {
        let c = base()
            .with_env(vars(&[
                ("SMB3D_LISTEN", "127.0.0.1:4445, [::1]:4445,10.0.0.1"),
                ("SMB3D_SERVER_NAME", "NAS"),
                ("SMB3D_WORKGROUP", "HOME"),
                ("SMB3D_USER_DB", "/data/users"),
                ("SMB3D_SIGNING", "required"),
                ("SMB3D_ENCRYPT", "Desired"),
                ("SMB3D_CIPHERS", "aes-256-gcm"),
                ("SMB3D_MIN_DIALECT", "SMB3_00"),
                ("SMB3D_MAX_DIALECT", "3.0.2"),
                ("SMB3D_MAX_IO_SIZE", "1048576"),
                ("SMB3D_MDNS", "yes"),
                ("SMB3D_MDNS_MODEL", "MacPro7,1@ECOLOR=226,226,224"),
                ("SMB3D_ADMIN_SOCKET", "/tmp/smb3d.sock"),
                ("SMB3D_METRICS", "on"),
                ("SMB3D_METRICS_LISTEN", "9000"),
                ("SMB3D_LOG_FORMAT", "JSON"),
                ("SMB3D_AUDIT", "1"),
                ("SMB3D_STATE_DIR", "/data/state"),
                ("SMB3D_MULTICHANNEL", "no"),
                ("SMB3D_DIRECTORY_LEASES", "off"),
                ("SMB3D_LOG", "debug"),
                ("PATH", "/bin"),
            ]))
            .unwrap();
        let s = &c.server;
        assert_eq!(
            s.listen,
            [
                "127.0.0.1:4445".parse().unwrap(),
                "[::1]:4445".parse().unwrap(),
                "10.0.0.1:445".parse().unwrap()
            ]
        );
        assert_eq!(s.server_name, "NAS");
        assert_eq!(s.workgroup, "HOME");
        assert_eq!(s.user_db, Path::new("/data/users"));
        assert_eq!(s.signing, SigningPolicy::Required);
        assert_eq!(s.encrypt, EncryptPolicy::Desired);
        assert_eq!(s.ciphers, [CipherName::Aes256Gcm]);
        assert_eq!(*s.min_dialect.get_ref(), Dialect::Smb300);
        assert_eq!(*s.max_dialect.get_ref(), Dialect::Smb302);
        assert_eq!(*s.max_io_size.get_ref(), 1 << 20);
        assert!(s.mdns);
        assert_eq!(s.mdns_model, "MacPro7,1@ECOLOR=226,226,224");
        assert_eq!(s.admin_socket, Path::new("/tmp/smb3d.sock"));
        assert!(s.metrics);
        assert_eq!(s.metrics_listen, "127.0.0.1:9000".parse().unwrap());
        assert_eq!(s.log_format, LogFormat::Json);
        assert!(s.audit);
        assert_eq!(s.state_dir, Path::new("/data/state"));
        assert!(!s.multichannel);
        assert!(!s.directory_leases);
        let c = base()
            .with_env(vars(&[("SMB3D_METRICS_LISTEN", "[::]:9445")]))
            .unwrap();
        assert_eq!(c.server.metrics_listen, "[::]:9445".parse().unwrap());
    }

    #[test]
    fn share_access_options() {
        let c = base()
            .with_env(vars(&[(
                "SMB3D_SHARE_TEAM",
                "/srv/team;read_list=guest, @visitors;write_list=@staff;force_user=files;\
                 force_group=staff;hide_unreadable;access_based_share_enum",
            )]))
            .unwrap();
        let team = c.share("team").unwrap();
        assert_eq!(team.read_list, ["guest", "@visitors"]);
        assert_eq!(team.write_list, ["@staff"]);
        assert_eq!(team.force_user.as_deref(), Some("files"));
        assert_eq!(team.force_group.as_deref(), Some("staff"));
        assert!(team.hide_unreadable && team.access_based_share_enum);
        assert_eq!(
            team.scale_out, None,
            "unset: the default, scale-out on a cluster"
        );
        let general = base()
            .with_env(vars(&[("SMB3D_SHARE_G", "/srv/g;scale_out=False")]))
            .unwrap();
        assert_eq!(general.share("g").unwrap().scale_out, Some(false));
        let scale = base()
            .with_env(vars(&[("SMB3D_SHARE_S", "/srv/s;scale_out")]))
            .unwrap();
        assert_eq!(scale.share("s").unwrap().scale_out, Some(true));
        let bad = base().with_env(vars(&[("SMB3D_SHARE_X", "/x;force_user=a:b")]));
        assert!(bad.is_err());
    }

    #[test]
    fn shares_are_added_replaced_and_removed() {
        let c = base()
            .with_env(vars(&[
                (
                    "SMB3D_SHARE_DATA",
                    "/mnt/data;read_only;guest_ok;hidden;audit;users=alice, bob;comment=Team data;encrypt=required;signing=required",
                ),
                ("SMB3D_SHARE_keep", ""),
                ("SMB3D_SHARE_media", "/mnt/media"),
            ]))
            .unwrap();
        let names: Vec<&str> = c.shares.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["DATA", "media"]);
        let data = c.share("data").unwrap();
        assert_eq!(data.path.get_ref(), Path::new("/mnt/data"));
        assert!(data.read_only && data.guest_ok && !data.browseable);
        assert_eq!(data.valid_users, ["alice", "bob"]);
        assert_eq!(data.comment, "Team data");
        assert_eq!(data.encrypt, Some(EncryptPolicy::Required));
        assert_eq!(data.signing, SigningPolicy::Required);
        assert_eq!(data.audit, Some(true));
        assert!(data.read_list.is_empty() && data.force_user.is_none() && !data.hide_unreadable);
        let media = c.share("MEDIA").unwrap();
        assert!(!media.read_only && media.browseable && !media.guest_ok);
        assert_eq!(media.audit, None);
    }

    #[test]
    fn errors_name_the_variable() {
        let long_socket = format!("/{}", "s".repeat(120));
        let cases = [
            ("SMB3D_SIGNING", "sometimes", "auto or required"),
            ("SMB3D_ENCRYPT", "maybe", "off, auto"),
            ("SMB3D_LISTEN", "here:445", "not an address"),
            ("SMB3D_LISTEN", " , ", "names no address"),
            ("SMB3D_SERVER_NAME", "far-too-long-a-name", "1-15"),
            ("SMB3D_USER_DB", "users", "absolute"),
            ("SMB3D_MIN_DIALECT", "SMB1", "unknown dialect"),
            ("SMB3D_MAX_IO_SIZE", "big", "not a number"),
            ("SMB3D_MAX_IO_SIZE", "1", "between"),
            ("SMB3D_MDNS", "sure", "true or false"),
            ("SMB3D_CIPHERS", "rc4", "unknown cipher"),
            ("SMB3D_ADMIN_SOCKET", "admin.sock", "absolute"),
            ("SMB3D_ADMIN_SOCKET", long_socket.as_str(), "107 bytes"),
            ("SMB3D_METRICS", "maybe", "true or false"),
            ("SMB3D_METRICS_LISTEN", "localhost", "not an address"),
            ("SMB3D_LOG_FORMAT", "xml", "human or json"),
            ("SMB3D_AUDIT", "all", "true or false"),
            ("SMB3D_SHARE_X", "relative", "absolute"),
            ("SMB3D_SHARE_X", "/x;writable", "unknown share option"),
            ("SMB3D_SHARE_X", "/x;encrypt=always", "encrypt=always"),
            ("SMB3D_SHARE_IPC$", "/x", "reserved"),
            ("SMB3D_SHARE_X", "/x;users=a:b", "invalid user name"),
            ("SMB3D_SHARE_X", "/x;scale_out=no", "scale_out=no"),
        ];
        for (name, value, reason) in cases {
            let e = base().with_env(vars(&[(name, value)])).unwrap_err();
            let text = e.to_string();
            assert!(text.contains(name), "{name}={value}: {text}");
            assert!(text.contains(reason), "{name}={value}: {text}");
        }
    }

    #[test]
    fn combinations_are_checked_after_all_variables() {
        let e = base()
            .with_env(vars(&[
                ("SMB3D_MIN_DIALECT", "3.1.1"),
                ("SMB3D_MAX_DIALECT", "2.1"),
            ]))
            .unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("SMB3D_MAX_DIALECT, SMB3D_MIN_DIALECT"),
            "{text}"
        );
        assert!(text.contains("above"), "{text}");
        assert!(
            base()
                .with_env(vars(&[("SMB3D_CIPHERS", ""), ("SMB3D_ENCRYPT", "off")]))
                .is_ok()
        );
    }

    #[test]
    fn override_variables_are_recognised() {
        assert!(is_override_variable("SMB3D_LISTEN"));
        assert!(is_override_variable("SMB3D_SHARE_X"));
        assert!(!is_override_variable("SMB3D_SHARE_"));
        assert!(!is_override_variable("SMB3D_LOG"));
    }
}
