use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::ConfigError;

/// Where `smb3d` looks for its configuration when none is named.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/smb3d/smb3d.toml";
/// The SMB port.
pub const DEFAULT_PORT: u16 = 445;

/// SMB2 dialects, ordered by revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dialect {
    Smb202,
    Smb210,
    Smb300,
    Smb302,
    Smb311,
}

impl Dialect {
    pub const ALL: [Dialect; 5] = [
        Self::Smb202,
        Self::Smb210,
        Self::Smb300,
        Self::Smb302,
        Self::Smb311,
    ];

    /// The DialectRevision value on the wire (MS-SMB2 2.2.3).
    pub const fn revision(self) -> u16 {
        match self {
            Self::Smb202 => 0x0202,
            Self::Smb210 => 0x0210,
            Self::Smb300 => 0x0300,
            Self::Smb302 => 0x0302,
            Self::Smb311 => 0x0311,
        }
    }

    pub fn from_revision(rev: u16) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.revision() == rev)
    }

    /// Accepts "3.1.1" style and Samba's "SMB3_11" style names.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_uppercase().as_str() {
            "2.0.2" | "2.02" | "SMB2_02" => Self::Smb202,
            "2.1" | "2.1.0" | "SMB2_10" => Self::Smb210,
            "3.0" | "3.0.0" | "SMB3_00" => Self::Smb300,
            "3.0.2" | "3.02" | "SMB3_02" => Self::Smb302,
            "3.1.1" | "SMB3_11" | "SMB3" => Self::Smb311,
            _ => return None,
        })
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Smb202 => "2.0.2",
            Self::Smb210 => "2.1",
            Self::Smb300 => "3.0",
            Self::Smb302 => "3.0.2",
            Self::Smb311 => "3.1.1",
        }
    }
}

impl<'de> Deserialize<'de> for Dialect {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown dialect {s:?}; expected one of 2.0.2, 2.1, 3.0, 3.0.2, 3.1.1"
            ))
        })
    }
}

/// Whether the server requires signed messages (MS-SMB2 3.3.1.5 RequireMessageSigning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SigningPolicy {
    /// Sign when the client asks for it (and always the 3.1.1 final session setup response).
    #[default]
    Auto,
    /// Every authenticated session signs every message.
    Required,
}

/// Whether SMB3 encryption is used (MS-SMB2 3.3.1.5 EncryptData and RejectUnencryptedAccess).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum EncryptPolicy {
    /// Not offered: no cipher is negotiated.
    Off,
    /// Offered; a client encrypts if it wants to.
    #[default]
    Auto,
    /// Clients that can encrypt are asked to; others may still work unencrypted.
    Desired,
    /// Every request must be encrypted; clients that cannot encrypt are refused.
    Required,
}

/// An SMB3 cipher, by its configuration name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum CipherName {
    #[serde(rename = "aes-128-gcm")]
    Aes128Gcm,
    #[serde(rename = "aes-128-ccm")]
    Aes128Ccm,
    #[serde(rename = "aes-256-gcm")]
    Aes256Gcm,
    #[serde(rename = "aes-256-ccm")]
    Aes256Ccm,
}

impl CipherName {
    /// The cipher id of MS-SMB2 2.2.3.1.2.
    pub const fn id(self) -> u16 {
        match self {
            Self::Aes128Ccm => 1,
            Self::Aes128Gcm => 2,
            Self::Aes256Ccm => 3,
            Self::Aes256Gcm => 4,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Aes128Gcm => "aes-128-gcm",
            Self::Aes128Ccm => "aes-128-ccm",
            Self::Aes256Gcm => "aes-256-gcm",
            Self::Aes256Ccm => "aes-256-ccm",
        }
    }
}

/// Settings for the whole server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Socket addresses to listen on.
    pub listen: Vec<SocketAddr>,
    /// The NetBIOS-style name the server announces (upper-cased, at most 15 characters).
    pub server_name: String,
    pub workgroup: String,
    pub min_dialect: Spanned<Dialect>,
    pub max_dialect: Spanned<Dialect>,
    pub signing: SigningPolicy,
    pub encrypt: EncryptPolicy,
    /// Ciphers offered to SMB 3.1.1 clients, in the server's order of preference.
    pub ciphers: Vec<CipherName>,
    /// The user database (smbpasswd format, mode 0600).
    pub user_db: PathBuf,
    /// MaxReadSize, MaxWriteSize and MaxTransactSize offered to clients (bytes).
    pub max_io_size: Spanned<u32>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: vec![SocketAddr::from(([0, 0, 0, 0], DEFAULT_PORT))],
            server_name: "SMB3D".into(),
            workgroup: "WORKGROUP".into(),
            min_dialect: Spanned::new(0..0, Dialect::Smb202),
            max_dialect: Spanned::new(0..0, Dialect::Smb311),
            signing: SigningPolicy::Auto,
            encrypt: EncryptPolicy::Auto,
            ciphers: vec![
                CipherName::Aes128Gcm,
                CipherName::Aes256Gcm,
                CipherName::Aes128Ccm,
                CipherName::Aes256Ccm,
            ],
            user_db: PathBuf::from("/var/lib/smb3d/users"),
            max_io_size: Spanned::new(0..0, 8 * 1024 * 1024),
        }
    }
}

/// One disk share.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShareConfig {
    pub path: Spanned<PathBuf>,
    #[serde(default)]
    pub comment: String,
    #[serde(default)]
    pub read_only: bool,
    /// Users allowed to connect; empty means every authenticated user.
    #[serde(default)]
    pub valid_users: Vec<String>,
    /// Listed when clients enumerate shares.
    #[serde(default = "yes")]
    pub browseable: bool,
    /// Anonymous and guest sessions may connect.
    #[serde(default)]
    pub guest_ok: bool,
    /// Encryption for this share; the server's setting when absent.
    #[serde(default)]
    pub encrypt: Option<EncryptPolicy>,
    /// `required`: requests on this share must be signed (or encrypted).
    #[serde(default)]
    pub signing: SigningPolicy,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    server: ServerConfig,
    #[serde(default)]
    share: BTreeMap<Spanned<String>, ShareConfig>,
}

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from (for messages).
    pub source: PathBuf,
    pub server: ServerConfig,
    /// Shares in the order the file lists them, with their names as written.
    pub shares: Vec<(String, ShareConfig)>,
}

/// Valid range for `max_io_size`: at least SMB2's 64 KiB, at most 8 MiB (the largest that
/// every client handles and that bounds per-request memory).
const MIN_IO_SIZE: u32 = 64 * 1024;
const MAX_IO_SIZE: u32 = 8 * 1024 * 1024;

impl Config {
    /// Reads and checks a configuration file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            message: format!("cannot read: {e}"),
        })?;
        Self::parse(path, &text)
    }

    /// Parses and checks configuration text; `path` only names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let raw: RawConfig = toml::from_str(text)
            .map_err(|e| ConfigError::at(path, text, e.span(), e.message().trim_end()))?;
        let err = |span: std::ops::Range<usize>, msg: String| {
            ConfigError::at(path, text, Some(span), msg)
        };

        let server = raw.server;
        if server.listen.is_empty() {
            return Err(ConfigError::at(
                path,
                text,
                None,
                "server.listen names no address",
            ));
        }
        if *server.min_dialect.get_ref() > *server.max_dialect.get_ref() {
            return Err(err(
                server.min_dialect.span(),
                format!(
                    "min_dialect {} is above max_dialect {}",
                    server.min_dialect.get_ref().as_str(),
                    server.max_dialect.get_ref().as_str()
                ),
            ));
        }
        if server.ciphers.is_empty() && server.encrypt != EncryptPolicy::Off {
            return Err(ConfigError::at(
                path,
                text,
                None,
                "server.ciphers is empty while encryption is on",
            ));
        }
        let io = *server.max_io_size.get_ref();
        if !(MIN_IO_SIZE..=MAX_IO_SIZE).contains(&io) {
            return Err(err(
                server.max_io_size.span(),
                format!("max_io_size must be between {MIN_IO_SIZE} and {MAX_IO_SIZE}"),
            ));
        }
        if server.server_name.is_empty()
            || server.server_name.len() > 15
            || !server
                .server_name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(ConfigError::at(
                path,
                text,
                None,
                "server.server_name must be 1-15 letters, digits or '-'",
            ));
        }

        let mut in_file_order: Vec<_> = raw.share.into_iter().collect();
        in_file_order.sort_by_key(|(name, _)| name.span().start);
        let mut shares: Vec<(String, ShareConfig)> = Vec::new();
        for (name, share) in in_file_order {
            let span = name.span();
            let name = name.into_inner();
            check_share_name(&name).map_err(|m| err(span.clone(), m))?;
            if shares.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
                return Err(err(
                    span,
                    format!("share {name:?} is defined twice (names are case-insensitive)"),
                ));
            }
            if !share.path.get_ref().is_absolute() {
                return Err(err(share.path.span(), "share path must be absolute".into()));
            }
            for user in &share.valid_users {
                if user.is_empty() || user.contains(':') {
                    return Err(err(
                        span.clone(),
                        format!("invalid user name {user:?} in valid_users"),
                    ));
                }
            }
            shares.push((name, share));
        }
        Ok(Self {
            source: path.to_path_buf(),
            server,
            shares,
        })
    }

    /// Finds a share by name, ignoring case as Windows does.
    pub fn share(&self, name: &str) -> Option<&ShareConfig> {
        self.shares
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, s)| s)
    }
}

/// Share names as Windows accepts them: no path separators or wildcards, at most 80 characters;
/// IPC$ is the server's own.
fn check_share_name(name: &str) -> Result<(), String> {
    const FORBIDDEN: &[char] = &[
        '\\', '/', ':', '*', '?', '"', '<', '>', '|', '[', ']', ';', '=', ',', '+',
    ];
    if name.is_empty() || name.chars().count() > 80 {
        return Err("share name must be 1-80 characters".into());
    }
    if let Some(c) = name
        .chars()
        .find(|c| FORBIDDEN.contains(c) || c.is_control())
    {
        return Err(format!("share name {name:?} contains {c:?}"));
    }
    if name.eq_ignore_ascii_case("IPC$") {
        return Err("IPC$ is reserved for the server".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("t.toml"), text)
    }

    #[test]
    fn full_config() {
        let c = parse(
            r#"
[server]
listen = ["127.0.0.1:4445", "[::1]:4445"]
server_name = "FILES"
min_dialect = "SMB3_00"
max_dialect = "3.1.1"
signing = "required"
user_db = "/tmp/u"

[share.docs]
path = "/srv/docs"
read_only = true
valid_users = ["alice", "bob"]
browseable = false

[share.public]
path = "/srv/pub"
guest_ok = true
"#,
        )
        .unwrap();
        assert_eq!(c.server.listen.len(), 2);
        assert_eq!(*c.server.min_dialect.get_ref(), Dialect::Smb300);
        assert_eq!(c.server.signing, SigningPolicy::Required);
        assert_eq!(c.server.encrypt, EncryptPolicy::Auto);
        assert_eq!(c.server.ciphers[0], CipherName::Aes128Gcm);
        assert_eq!(c.shares[0].0, "docs");
        assert!(c.share("DOCS").unwrap().read_only);
        assert!(!c.share("docs").unwrap().browseable);
        assert!(c.share("public").unwrap().browseable);
        assert!(c.share("public").unwrap().guest_ok);
    }

    #[test]
    fn encryption_settings() {
        let c = parse(
            "[server]\nencrypt = \"desired\"\nciphers = [\"aes-256-gcm\"]\n[share.s]\npath = \"/s\"\nencrypt = \"required\"\nsigning = \"required\"\n",
        )
        .unwrap();
        assert_eq!(c.server.encrypt, EncryptPolicy::Desired);
        assert_eq!(c.server.ciphers, [CipherName::Aes256Gcm]);
        let share = c.share("s").unwrap();
        assert_eq!(share.encrypt, Some(EncryptPolicy::Required));
        assert_eq!(share.signing, SigningPolicy::Required);
        assert!(parse("[server]\nciphers = []\n").is_err());
    }

    #[test]
    fn empty_file_is_defaults() {
        let c = parse("").unwrap();
        assert_eq!(*c.server.max_dialect.get_ref(), Dialect::Smb311);
        assert!(c.shares.is_empty());
    }

    #[test]
    fn unknown_key_reports_line() {
        let e = parse("[server]\nserver_name = \"A\"\nlisten_port = 1\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.message.contains("listen_port"), "{e}");
        assert!(e.to_string().starts_with("t.toml:3:"), "{e}");
    }

    #[test]
    fn unknown_share_key_reports_line() {
        let e = parse("[share.a]\npath = \"/x\"\nwriteable = true\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
    }

    #[test]
    fn bad_values_report_line_and_reason() {
        let e = parse("[server]\nmin_dialect = \"4.0\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("unknown dialect"), "{e}");

        let e = parse("[server]\nmin_dialect = \"3.1.1\"\nmax_dialect = \"2.1\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");

        let e = parse("[share.x]\npath = \"relative\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");

        let e = parse("[share.\"a/b\"]\npath = \"/x\"\n").unwrap_err();
        assert_eq!(e.line, 1, "{e}");

        let e = parse("[server]\nmax_io_size = 1\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");

        let e = parse("[server]\nsigning = \"sometimes\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");

        let e = parse("[server]\nciphers = [\"aes-128-gcm\", \"rc4\"]\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");

        let e = parse("[share.x]\nread_only = true\n").unwrap_err();
        assert!(e.message.contains("path"), "{e}");
    }

    #[test]
    fn duplicate_share_names_ignore_case() {
        let e = parse("[share.Data]\npath = \"/a\"\n[share.data]\npath = \"/b\"\n").unwrap_err();
        assert!(e.message.contains("twice"), "{e}");
    }

    #[test]
    fn ipc_share_is_reserved() {
        assert!(parse("[share.\"ipc$\"]\npath = \"/a\"\n").is_err());
    }
}
