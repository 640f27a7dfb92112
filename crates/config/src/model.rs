use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;
use toml::de::{DeValue, ValueDeserializer};

use crate::auth::{AuthConfig, RawAuth, checked_auth};
use crate::cluster::{ClusterConfig, RawCluster, checked_cluster};
use crate::homes::{DEFAULT_HOME_MODE, check_home_template, is_homes};
use crate::idmap::{IdmapConfig, RawDomain, checked_idmap};
use crate::limits::{LimitsConfig, limits_problems};
use crate::{ConfigError, FaultRuleConfig, HostPattern};

/// Where `smb3d` looks for its configuration when none is named.
pub const DEFAULT_CONFIG_PATH: &str = "/etc/smb3d/smb3d.toml";
/// Where persistent handles are kept unless configured.
pub const DEFAULT_STATE_DIR: &str = "/var/lib/smb3d/state";
/// The SMB port.
pub const DEFAULT_PORT: u16 = 445;
/// The admin socket unless configured: systemd's RuntimeDirectory=smb3d.
pub const DEFAULT_ADMIN_SOCKET: &str = "/run/smb3d/admin.sock";
/// The metrics port unless configured.
pub const DEFAULT_METRICS_PORT: u16 = 9445;
/// The longest path a unix socket address holds (sun_path less its terminating NUL).
pub const MAX_SOCKET_PATH: usize = 107;
/// The `_device-info._tcp` model advertised unless configured: macOS shows a server icon.
pub const DEFAULT_MDNS_MODEL: &str = "Xserve";

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
    /// Every dialect, oldest first.
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

    /// The dialect of a DialectRevision value.
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

    /// The configuration name ("3.1.1" style).
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

impl SigningPolicy {
    /// The configuration name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Required => "required",
        }
    }

    /// Parses a configuration name.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Auto, Self::Required]
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
    }
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

impl EncryptPolicy {
    /// The configuration name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Auto => "auto",
            Self::Desired => "desired",
            Self::Required => "required",
        }
    }

    /// Parses a configuration name.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Off, Self::Auto, Self::Desired, Self::Required]
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One readable line per event.
    #[default]
    Human,
    /// One JSON object per line, for log collectors.
    Json,
}

impl LogFormat {
    /// The configuration name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Human => "human",
            Self::Json => "json",
        }
    }

    /// Parses a configuration name.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Human, Self::Json]
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s))
    }
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

    /// The configuration name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Aes128Gcm => "aes-128-gcm",
            Self::Aes128Ccm => "aes-128-ccm",
            Self::Aes256Gcm => "aes-256-gcm",
            Self::Aes256Ccm => "aes-256-ccm",
        }
    }
}

/// Whether a logon with an unknown user name becomes a guest logon (Samba's `map to guest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MapToGuest {
    /// Unknown users are refused.
    #[default]
    Never,
    /// A logon with a user name that no account has is a guest logon (`bad user`).
    BadUser,
}

impl MapToGuest {
    /// The configuration name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Never => "never",
            Self::BadUser => "bad-user",
        }
    }
}

/// Who owns a new file or directory (Samba's `inherit owner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum InheritOwner {
    /// Its creator.
    #[default]
    No,
    /// The parent directory's owner, on disk and in the NT ACL it inherits.
    WindowsAndUnix,
    /// The parent directory's owner on disk; the NT ACL's owner stays the creator.
    UnixOnly,
}

impl InheritOwner {
    /// The configuration name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::No => "no",
            Self::WindowsAndUnix => "windows-and-unix",
            Self::UnixOnly => "unix-only",
        }
    }
}

/// A listening address as the configuration and `SMB3D_LISTEN` take it: `ADDR:PORT`, or a
/// bare address (`0.0.0.0`, `::`, `[::]`) on port 445.
pub fn parse_listen_address(text: &str) -> Option<SocketAddr> {
    let text = text.trim();
    text.parse::<SocketAddr>().ok().or_else(|| {
        let bare = text
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .unwrap_or(text);
        bare.parse::<std::net::IpAddr>()
            .ok()
            .map(|ip| SocketAddr::new(ip, DEFAULT_PORT))
    })
}

fn listen_addresses<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<SocketAddr>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|item| {
            parse_listen_address(item).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "{item:?} is not an address such as \"0.0.0.0:445\", \"[::]:445\" or \"0.0.0.0\" \
                     (port {DEFAULT_PORT})"
                ))
            })
        })
        .collect()
}

/// Settings for the whole server.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Socket addresses to listen on; an address without a port listens on 445.
    #[serde(deserialize_with = "listen_addresses")]
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
    /// Where the state of persistent handles on `continuous_availability` shares is kept
    /// across restarts (one record per open, mode 0700).
    pub state_dir: PathBuf,
    /// Offer SMB 3 multichannel: a client may bind more connections to its session.
    pub multichannel: bool,
    /// Offer SMB 3 directory leases (SMB2_GLOBAL_CAP_DIRECTORY_LEASING): clients may cache
    /// directory listings until a change in the directory breaks their lease.
    pub directory_leases: bool,
    /// MaxReadSize, MaxWriteSize and MaxTransactSize offered to clients (bytes).
    pub max_io_size: Spanned<u32>,
    /// Advertise the server with mDNS/DNS-SD (RFC 6762/6763) so that macOS Finder lists it.
    pub mdns: bool,
    /// The `model=` of the `_device-info._tcp` record, which picks the icon macOS shows.
    pub mdns_model: String,
    /// The unix socket that `smb3d status`, `reload`, `close-session` and `close-file` use.
    pub admin_socket: PathBuf,
    /// Serve Prometheus metrics over HTTP at `metrics_listen`.
    pub metrics: bool,
    /// Where the metrics endpoint listens when `metrics` is on.
    pub metrics_listen: SocketAddr,
    /// `human` or `json` log lines.
    pub log_format: LogFormat,
    /// Log opens, renames and deletes of every share (shares may override it) at the `audit`
    /// target.
    pub audit: bool,
    /// Client addresses allowed to connect at all (Samba's global `hosts allow`), checked on
    /// the TCP peer at accept with Samba's precedence: with `hosts_deny` set too, an address in
    /// both is allowed; alone, it refuses every other address but 127.0.0.1 and ::1.
    pub hosts_allow: Vec<HostPattern>,
    /// Client addresses refused unless `hosts_allow` names them (Samba's `hosts deny`).
    pub hosts_deny: Vec<HostPattern>,
    /// The Unix account guest and anonymous sessions act as (Samba's `guest account`);
    /// absent, the built-in nobody (uid 65534).
    pub guest_account: Option<String>,
    /// Whether a logon with an unknown user name becomes a guest logon (no keys, no signing,
    /// only shares with `guest_ok`); a known user's wrong password still fails.
    pub map_to_guest: MapToGuest,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            // Every IPv4 and every IPv6 address, as Samba listens by default; the IPv6
            // listener takes IPv6 only, so both can be bound.
            listen: vec![
                SocketAddr::from(([0, 0, 0, 0], DEFAULT_PORT)),
                SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, DEFAULT_PORT)),
            ],
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
            state_dir: PathBuf::from(DEFAULT_STATE_DIR),
            multichannel: true,
            directory_leases: true,
            max_io_size: Spanned::new(0..0, 8 * 1024 * 1024),
            mdns: false,
            mdns_model: DEFAULT_MDNS_MODEL.into(),
            admin_socket: PathBuf::from(DEFAULT_ADMIN_SOCKET),
            metrics: false,
            metrics_listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_METRICS_PORT)),
            log_format: LogFormat::Human,
            audit: false,
            hosts_allow: Vec::new(),
            hosts_deny: Vec::new(),
            guest_account: None,
            map_to_guest: MapToGuest::Never,
        }
    }
}

/// One disk share.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShareConfig {
    pub path: Spanned<PathBuf>,
    #[serde(default)]
    pub comment: String,
    #[serde(default)]
    pub read_only: bool,
    /// Users allowed to connect; empty means every authenticated user. Entries are user
    /// names or `@group` (members of a Unix group), as in the other user lists.
    #[serde(default)]
    pub valid_users: Vec<String>,
    /// Users for whom the share is read-only although it is writable (Samba's `read list`).
    #[serde(default)]
    pub read_list: Vec<String>,
    /// Users for whom the share is writable although it is read-only (Samba's `write list`);
    /// it wins over `read_list`.
    #[serde(default)]
    pub write_list: Vec<String>,
    /// Users refused on this share whatever the other lists say (Samba's `invalid users`).
    #[serde(default)]
    pub invalid_users: Vec<String>,
    /// Users who act as root on this share (Samba's `admin users`): their file work runs as
    /// uid 0, so access checks pass and their new files are root's.
    #[serde(default)]
    pub admin_users: Vec<String>,
    /// Client addresses allowed to connect to this share (Samba's `hosts allow`), checked at
    /// tree connect; empty, the server's list applies, as a share inherits it in smb.conf.
    #[serde(default)]
    pub hosts_allow: Vec<HostPattern>,
    /// Client addresses refused on this share unless its `hosts_allow` names them; empty, the
    /// server's list applies.
    #[serde(default)]
    pub hosts_deny: Vec<HostPattern>,
    /// A Unix user every session works on the share as (Samba's `force user`).
    #[serde(default)]
    pub force_user: Option<String>,
    /// A Unix group every session works on the share with as its primary group (Samba's
    /// `force group`).
    #[serde(default)]
    pub force_group: Option<String>,
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
    /// Permission bits a new file may get (Samba's `create mask`): the mode the client's
    /// attributes imply (0o666, without write bits when read-only) is masked with it. Modes
    /// are written in octal: `0o660` or `"0660"`.
    #[serde(default = "default_create_mask", deserialize_with = "mode")]
    pub create_mask: u32,
    /// Permission bits a new directory may get (Samba's `directory mask`), masking 0o777.
    #[serde(default = "default_directory_mask", deserialize_with = "mode")]
    pub directory_mask: u32,
    /// Bits every new file gets after `create_mask` (Samba's `force create mode`).
    #[serde(default, deserialize_with = "mode")]
    pub force_create_mode: u32,
    /// Bits every new directory gets after `directory_mask` (Samba's `force directory
    /// mode`), e.g. 0o2000 for setgid directories.
    #[serde(default, deserialize_with = "mode")]
    pub force_directory_mode: u32,
    /// A new file or directory takes its permissions from its parent directory instead of
    /// the masks (Samba's `inherit permissions`): a file the parent's read and write bits, a
    /// directory all of the parent's bits.
    #[serde(default)]
    pub inherit_permissions: bool,
    /// A new file or directory under a directory without a stored NT ACL inherits from the
    /// ACL synthesized from the directory's mode, with CREATOR OWNER, CREATOR GROUP and
    /// Everyone entries, as Samba's `vfs objects = acl_xattr` does (which sets `inherit
    /// acls`); off, such a file's permissions come from the masks.
    #[serde(default)]
    pub inherit_acls: bool,
    /// New files and directories are owned by the parent directory's owner (Samba's
    /// `inherit owner`): "no", "windows-and-unix" (on disk and as the NT ACL's owner) or
    /// "unix-only" (on disk only).
    #[serde(default)]
    pub inherit_owner: InheritOwner,
    /// Listings leave out files and directories the user may not read (access-based
    /// enumeration; Samba's `hide unreadable`).
    #[serde(default)]
    pub hide_unreadable: bool,
    /// Share listings show the share only to users who may connect to it (Samba's `access
    /// based share enum`).
    #[serde(default)]
    pub access_based_share_enum: bool,
    /// Log opens, renames and deletes on this share; the server's `audit` when absent.
    #[serde(default)]
    pub audit: Option<bool>,
    /// Space a write or an end-of-file change adds is allocated (`fallocate`) rather than
    /// left as a hole, as NTFS allocates it (Samba's `strict allocate`): a full disk fails that
    /// request instead of a later write, and extending writes run faster on extent file
    /// systems. Sparse files (FSCTL_SET_SPARSE) keep their holes.
    #[serde(default = "yes")]
    pub strict_allocate: bool,
    /// AllocationSize is reported rounded up to a multiple of this many bytes (Samba's
    /// `allocation roundup size`); 0 reports what the file system allocated.
    #[serde(default)]
    pub allocation_roundup_size: u64,
    /// Creates, renames, deletes and new directories are made durable (the parent directory
    /// is fsync'ed) before the reply.
    #[serde(default)]
    pub sync_metadata: bool,
    /// Names starting with a dot carry FILE_ATTRIBUTE_HIDDEN (Samba's `hide dot files`).
    #[serde(default = "yes")]
    pub hide_dot_files: bool,
    /// Names matching one of these patterns (`*` and `?`, case-insensitive) carry
    /// FILE_ATTRIBUTE_HIDDEN (Samba's `hide files`).
    #[serde(default)]
    pub hide_files: Vec<String>,
    /// Names matching one of these patterns (`*` and `?`, case-insensitive) are vetoed
    /// (Samba's `veto files`): left out of listings, and opening or creating one answers
    /// STATUS_OBJECT_NAME_NOT_FOUND (STATUS_OBJECT_PATH_NOT_FOUND for a directory on the way).
    #[serde(default)]
    pub veto_files: Vec<String>,
    /// Deleting a directory that holds only vetoed entries deletes them too (Samba's `delete
    /// veto files`); otherwise it is not empty.
    #[serde(default)]
    pub delete_veto_files: bool,
    /// Deleted files are moved to a recycle bin inside the share (Samba's vfs_recycle)
    /// instead of being unlinked.
    #[serde(default)]
    pub recycle: bool,
    /// Where the bin is, relative to the share: `%U` (or `%u`) is the deleting user's name.
    #[serde(default = "default_recycle_repository")]
    pub recycle_repository: String,
    /// A deleted file keeps the directories it was in under the repository.
    #[serde(default)]
    pub recycle_keeptree: bool,
    /// A name already in the bin keeps both, the newer as "Copy #N of NAME".
    #[serde(default)]
    pub recycle_versions: bool,
    /// A file moved to the bin gets the deletion's time as its access time.
    #[serde(default)]
    pub recycle_touch: bool,
    /// Files whose names match one of these patterns are deleted for real.
    #[serde(default)]
    pub recycle_exclude: Vec<String>,
    /// Files in a directory whose name matches one of these patterns are deleted for real.
    #[serde(default)]
    pub recycle_exclude_dir: Vec<String>,
    /// Files whose names match replace their older copy in the bin, despite `recycle_versions`.
    #[serde(default)]
    pub recycle_noversions: Vec<String>,
    /// Files larger than this many bytes are deleted for real (0: no limit).
    #[serde(default)]
    pub recycle_maxsize: u64,
    /// Mode of the directories the bin makes.
    #[serde(default = "default_recycle_directory_mode", deserialize_with = "mode")]
    pub recycle_directory_mode: u32,
    /// Oplocks and leases are granted on this share (Samba's `oplocks`); `false` grants
    /// none, for files other programs or NFS clients change behind smb3d's back.
    #[serde(default = "yes")]
    pub oplocks: bool,
    /// Files whose names match one of these patterns (`*` and `?`, case-insensitive) get no
    /// oplock or lease (Samba's `veto oplock files`).
    #[serde(default)]
    pub veto_oplock_files: Vec<String>,
    /// Byte-range locks are also taken as Linux OFD locks on the open's descriptor, so that
    /// local processes and NFS clients see them with `fcntl` and their locks stop SMB locks,
    /// reads and writes (Samba's `posix locking`, on by default as there).
    #[serde(default = "yes")]
    pub posix_locking: bool,
    /// While an SMB client caches a file (an oplock or a lease), smb3d holds a Linux file
    /// lease on it, so that a local process or NFS client opening or truncating the file
    /// breaks the client's caching first and sees its data (Samba's `kernel oplocks`, off by
    /// default as there).
    #[serde(default)]
    pub kernel_oplocks: bool,
    /// Continuous availability (MS-SMB2 Share.IsCA): SMB 3 clients may ask for persistent
    /// handles, whose state survives a restart of the server (kept in `server.state_dir`).
    #[serde(default)]
    pub continuous_availability: bool,
    /// On a node with `[cluster]`: `true` (the default when unset) serves the share as a
    /// scale-out share (MS-SMB2 STYPE_CLUSTER_SOFS, announced as SMB2_SHARE_CAP_SCALEOUT beside
    /// SMB2_SHARE_CAP_CLUSTER), whose SMB 3 clients get MS-SMB2's scale-out caching (level II
    /// for a batch oplock, leases of read caching only, durable v2 handles only persistent);
    /// `false` a general cluster share (CLUSTER only) with one server's caching, kept coherent
    /// across nodes by cross-node breaks. Without `[cluster]` it has no effect.
    #[serde(default)]
    pub scale_out: Option<bool>,
    /// Mac clients get what Samba's vfs_fruit gives them: the AAPL create context, Finder
    /// info and resource forks in Samba's formats.
    #[serde(default)]
    pub apple: bool,
    /// The model macOS shows for the server (Samba's `fruit:model`).
    #[serde(default = "default_apple_model")]
    pub apple_model: String,
    /// With `apple`: the `._NAME` AppleDouble files, where resource forks are kept, are vetoed
    /// (Samba's `fruit:veto_appledouble`, on by default as there): clients reach a fork only
    /// as its file's AFP_Resource stream, never the file that holds it.
    #[serde(default = "yes")]
    pub apple_veto_appledouble: bool,
    /// With `apple`: converting a Mac's `._` file empties the resource fork macOS writes for a
    /// file without one ("This resource fork intentionally left blank"; Samba's
    /// `fruit:wipe_intentionally_left_blank_rfork`, off by default as there).
    #[serde(default)]
    pub apple_wipe_intentionally_left_blank_rfork: bool,
    /// With `apple`: converting a Mac's `._` file deletes it when its resource fork is empty
    /// (Samba's `fruit:delete_empty_adfiles`, off by default as there).
    #[serde(default)]
    pub apple_delete_empty_adfiles: bool,
    /// With `apple`: file ids are 0 to Mac clients (those that negotiated AAPL), which then
    /// do not take a reused inode number for a file's lasting id (Samba's
    /// `fruit:zero_file_id`, on by default as there).
    #[serde(default = "yes")]
    pub apple_zero_file_id: bool,
    /// With `apple`: the share is a Time Machine destination (Samba's `fruit:time machine`).
    #[serde(default)]
    pub time_machine: bool,
    /// Clients that negotiate the SMB3 POSIX extensions (Linux's cifs.ko with `posix`) may
    /// open with POSIX semantics: modes, Unix owners, case-sensitive names, symlinks as
    /// reparse points (Samba's `smb3 unix extensions`, off by default as there).
    #[serde(default)]
    pub posix: bool,
    /// With `time_machine`: the bytes its backups may take, counted in their sparse bundles'
    /// bands and reported as the volume's size (Samba's `fruit:time machine max size`); 0 for
    /// the file system's size. An integer or a string with a K, M, G or T suffix.
    #[serde(default, deserialize_with = "byte_size")]
    pub time_machine_max_size: u64,
    /// Only in `[share.homes]`: a user's home directory that does not exist is made on their
    /// first connect, owned by them, with `create_home_mode` (as pam_mkhomedir does).
    #[serde(default)]
    pub create_home: bool,
    /// The mode of a home directory `create_home` makes.
    #[serde(default = "default_home_mode")]
    pub create_home_mode: u32,
    /// TESTING ONLY: calls to the share's file system fail or wait as these rules say
    /// (`[[share.NAME.testing_fault_injection]]`), to test how the server and its clients
    /// cope with a failing, full or stalled disk. Serve and `config check` warn of it.
    #[serde(default)]
    pub testing_fault_injection: Vec<FaultRuleConfig>,
    /// Where Windows "Previous Versions" of the share come from: `directory` or `btrfs`,
    /// snapshots of the share in `.snapshots/@GMT-YYYY.MM.DD-hh.mm.ss` under its root (copies,
    /// bind mounts or btrfs subvolume snapshots), served read-only; none when absent.
    #[serde(default)]
    pub snapshots: Option<SnapshotSource>,
    /// Every long name that is not a valid 8.3 name gets a short one (MS-FSCC 2.1.5.2.1),
    /// derived from the long name alone, shown in listings and FileAlternateNameInformation
    /// and accepted in paths (Samba's `mangled names = yes`). Off, as on Windows volumes
    /// made today, files have no short names.
    #[serde(default)]
    pub short_names: bool,
    /// DOS attributes and the create time are kept in the `user.DOSATTRIB` xattr (Samba's
    /// `store dos attributes`, on by default as there). Off, they come from the mode as Samba
    /// maps them: ARCHIVE is the owner's execute bit, READONLY is never shown and setting it
    /// clears the write bits, HIDDEN comes from `hide_dot_files` and `hide_files`; the other
    /// attributes and a set create time are dropped.
    #[serde(default = "yes")]
    pub store_dos_attributes: bool,
    /// Clients may keep extended attributes (EAs) on files, stored as `user.` xattrs (Samba's
    /// `ea support`, on by default as there). Off, the share has no EAs: setting one answers
    /// STATUS_EAS_NOT_SUPPORTED, a query STATUS_NO_EAS_ON_FILE.
    #[serde(default = "yes")]
    pub ea_support: bool,
    /// Named streams (alternate data streams) are served, kept in `user.DosStream.` xattrs as
    /// Samba's `vfs objects = streams_xattr` keeps them. Off, as Samba without a streams
    /// module, a stream name answers STATUS_OBJECT_NAME_INVALID and files have only their data.
    #[serde(default = "yes")]
    pub streams_xattr: bool,
}

/// How a share's snapshots are made (`snapshots`); both are read from the same layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SnapshotSource {
    /// Directories (copies or mounts of the share) made by any tool.
    Directory,
    /// btrfs subvolume snapshots (`btrfs subvolume snapshot -r`).
    Btrfs,
}

impl SnapshotSource {
    /// The configuration name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Directory => "directory",
            Self::Btrfs => "btrfs",
        }
    }
}

impl ShareConfig {
    /// Whether the share is a scale-out share on a cluster node (`scale_out`, default yes).
    pub fn is_scale_out(&self) -> bool {
        self.scale_out.unwrap_or(true)
    }

    /// A share of `path` with every option at its default.
    pub fn new(path: PathBuf) -> Self {
        Self {
            path: Spanned::new(0..0, path),
            comment: String::new(),
            read_only: false,
            valid_users: Vec::new(),
            read_list: Vec::new(),
            write_list: Vec::new(),
            invalid_users: Vec::new(),
            admin_users: Vec::new(),
            hosts_allow: Vec::new(),
            hosts_deny: Vec::new(),
            force_user: None,
            force_group: None,
            browseable: true,
            guest_ok: false,
            encrypt: None,
            signing: SigningPolicy::Auto,
            create_mask: DEFAULT_CREATE_MASK,
            directory_mask: DEFAULT_DIRECTORY_MASK,
            force_create_mode: 0,
            force_directory_mode: 0,
            inherit_permissions: false,
            inherit_acls: false,
            inherit_owner: InheritOwner::No,
            hide_unreadable: false,
            access_based_share_enum: false,
            audit: None,
            strict_allocate: true,
            allocation_roundup_size: 0,
            sync_metadata: false,
            hide_dot_files: true,
            hide_files: Vec::new(),
            veto_files: Vec::new(),
            delete_veto_files: false,
            recycle: false,
            recycle_repository: default_recycle_repository(),
            recycle_keeptree: false,
            recycle_versions: false,
            recycle_touch: false,
            recycle_exclude: Vec::new(),
            recycle_exclude_dir: Vec::new(),
            recycle_noversions: Vec::new(),
            recycle_maxsize: 0,
            recycle_directory_mode: DEFAULT_RECYCLE_DIRECTORY_MODE,
            oplocks: true,
            veto_oplock_files: Vec::new(),
            posix_locking: true,
            kernel_oplocks: false,
            continuous_availability: false,
            scale_out: None,
            apple: false,
            apple_model: default_apple_model(),
            apple_veto_appledouble: true,
            apple_wipe_intentionally_left_blank_rfork: false,
            apple_delete_empty_adfiles: false,
            apple_zero_file_id: true,
            time_machine: false,
            time_machine_max_size: 0,
            posix: false,
            create_home: false,
            create_home_mode: DEFAULT_HOME_MODE,
            testing_fault_injection: Vec::new(),
            snapshots: None,
            short_names: false,
            store_dos_attributes: true,
            ea_support: true,
            streams_xattr: true,
        }
    }
}

/// Largest `allocation_roundup_size`: Samba's old default was 1 MiB; beyond 1 GiB clients
/// would see absurd allocations.
pub const MAX_ALLOCATION_ROUNDUP: u64 = 1 << 30;

fn yes() -> bool {
    true
}

/// Samba's default `create mask`: with it the owner gets full control of files it creates.
pub const DEFAULT_CREATE_MASK: u32 = 0o744;
/// Samba's default `directory mask`.
pub const DEFAULT_DIRECTORY_MASK: u32 = 0o755;

fn default_create_mask() -> u32 {
    DEFAULT_CREATE_MASK
}

fn default_directory_mask() -> u32 {
    DEFAULT_DIRECTORY_MASK
}

fn default_home_mode() -> u32 {
    DEFAULT_HOME_MODE
}

/// Samba's default `recycle:repository`.
fn default_recycle_repository() -> String {
    ".recycle".to_owned()
}

/// Samba's default `recycle:directory_mode`: the deleting user's alone.
pub const DEFAULT_RECYCLE_DIRECTORY_MODE: u32 = 0o700;

fn default_recycle_directory_mode() -> u32 {
    DEFAULT_RECYCLE_DIRECTORY_MODE
}

/// Samba's default `fruit:model`.
fn default_apple_model() -> String {
    "MacSamba".to_owned()
}

/// A byte count: an integer, or a string of digits with an optional K, M, G or T suffix (powers
/// of 1024, as Samba reads sizes).
fn byte_size<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Number(u64),
        Text(String),
    }
    match Written::deserialize(d)? {
        Written::Number(n) => Ok(n),
        Written::Text(text) => parse_byte_size(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("not a size: {text:?}"))),
    }
}

/// `text` as a byte count ([`byte_size`]); `None` for anything else or an overflow.
pub fn parse_byte_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, shift) = match text.char_indices().last()? {
        (i, 'k' | 'K') => (&text[..i], 10),
        (i, 'm' | 'M') => (&text[..i], 20),
        (i, 'g' | 'G') => (&text[..i], 30),
        (i, 't' | 'T') => (&text[..i], 40),
        _ => (text, 0),
    };
    let n: u64 = digits.trim().parse().ok()?;
    n.checked_mul(1u64 << shift)
}

/// The share options that hold a file mode.
const MODE_OPTIONS: [&str; 5] = [
    "create_mask",
    "directory_mask",
    "force_create_mode",
    "force_directory_mode",
    "recycle_directory_mode",
];

/// A mode: an integer (TOML's `0o660`), or a string of octal digits (`"0660"`, as smb.conf
/// writes it).
fn mode<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Number(u32),
        Text(String),
    }
    match Written::deserialize(d)? {
        Written::Number(n) => Ok(n),
        Written::Text(text) => {
            let digits = text.strip_prefix("0o").unwrap_or(&text);
            u32::from_str_radix(digits, 8)
                .ok()
                .filter(|_| !digits.is_empty() && !digits.starts_with('+'))
                .ok_or_else(|| {
                    serde::de::Error::custom(format!(
                        "mode {text:?} is not octal digits; write it as \"0660\" or 0o660"
                    ))
                })
        }
    }
}

/// A mode written as a decimal integer (`create_mask = 664`) means 0o1230 to TOML, never what
/// its writer meant: refused, naming the fix. Zero is the same in any base.
fn decimal_modes(share: &Spanned<DeValue<'_>>) -> Vec<Problem> {
    let DeValue::Table(table) = share.get_ref() else {
        return Vec::new();
    };
    table
        .iter()
        .filter(|(key, _)| MODE_OPTIONS.contains(&key.get_ref().as_ref()))
        .filter_map(|(key, value)| match value.get_ref() {
            DeValue::Integer(n) if n.radix() == 10 && !n.as_str().trim_start_matches('0').is_empty() => {
                let digits = n.as_str();
                Some(Problem::at(
                    value.span(),
                    format!(
                        "{key} = {digits} is a decimal number; modes are octal: write 0o{digits} or \"{digits}\"",
                        key = key.get_ref()
                    ),
                ))
            }
            _ => None,
        })
        .collect()
}

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file it came from (for messages).
    pub source: PathBuf,
    pub server: ServerConfig,
    /// Resource limits and timeouts (`[limits]`).
    pub limits: LimitsConfig,
    /// Shares in the order the file lists them, with their names as written.
    pub shares: Vec<(String, ShareConfig)>,
    /// `[cluster]`: this server is one node of several (docs/cluster.md); `None` when alone.
    pub cluster: Option<ClusterConfig>,
    /// `[auth]`: Kerberos logons (docs/auth.md); `None` takes NTLMv2 logons only.
    pub auth: Option<AuthConfig>,
    /// `[idmap]`: the Unix ids of Active Directory domains' accounts (docs/auth.md).
    pub idmap: Option<IdmapConfig>,
}

/// Valid range for `max_io_size`: at least SMB2's 64 KiB, at most 8 MiB (the largest that
/// every client handles and that bounds per-request memory).
pub const MIN_IO_SIZE: u32 = 64 * 1024;
/// See [`MIN_IO_SIZE`].
pub const MAX_IO_SIZE: u32 = 8 * 1024 * 1024;

/// A problem found by validation, at a byte span of the text when it has one.
pub(crate) struct Problem {
    pub(crate) span: Option<std::ops::Range<usize>>,
    pub(crate) message: String,
}

impl Problem {
    pub(crate) fn at(span: std::ops::Range<usize>, message: impl Into<String>) -> Self {
        Self {
            span: (span != (0..0)).then_some(span),
            message: message.into(),
        }
    }
}

impl Config {
    /// Reads and checks a configuration file; the first problem is the error.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::load_all_errors(path).map_err(first)
    }

    /// Reads and checks a configuration file, reporting every problem found.
    pub fn load_all_errors(path: &Path) -> Result<Self, Vec<ConfigError>> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            vec![ConfigError {
                file: path.to_path_buf(),
                line: 0,
                column: 0,
                message: format!("cannot read: {e}"),
            }]
        })?;
        Self::parse_all_errors(path, &text)
    }

    /// Parses and checks configuration text; `path` only names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        Self::parse_all_errors(path, text).map_err(first)
    }

    /// Parses and checks configuration text, reporting every syntax error, the first type error
    /// of each section, and every validation error, in the order of the file.
    pub fn parse_all_errors(path: &Path, text: &str) -> Result<Self, Vec<ConfigError>> {
        let located = |problems: Vec<Problem>| {
            let mut errors: Vec<ConfigError> = problems
                .into_iter()
                .map(|p| ConfigError::at(path, text, p.span, p.message))
                .collect();
            errors.sort_by_key(|e| (e.line == 0, e.line, e.column));
            errors
        };
        let (root, syntax) = toml::de::DeTable::parse_recoverable(text);
        if !syntax.is_empty() {
            return Err(located(syntax.iter().map(de_problem).collect()));
        }
        let mut problems = Vec::new();
        let mut server = None;
        let mut server_spans = Vec::new();
        let mut limits = None;
        let mut cluster = None;
        let mut auth = None;
        let mut idmap = None;
        let mut raw_shares = Vec::new();
        for (key, value) in root.into_inner() {
            match key.get_ref().as_ref() {
                "server" => match ServerConfig::deserialize(ValueDeserializer::from({
                    server_spans = value_spans(&value);
                    value
                })) {
                    Ok(s) => server = Some(s),
                    Err(e) => problems.push(de_problem(&e)),
                },
                "limits" => match LimitsConfig::deserialize(ValueDeserializer::from(value)) {
                    Ok(l) => limits = Some(l),
                    Err(e) => problems.push(de_problem(&e)),
                },
                "cluster" => match RawCluster::deserialize(ValueDeserializer::from(value)) {
                    Ok(raw) => cluster = Some(checked_cluster(raw, &mut problems)),
                    Err(e) => problems.push(de_problem(&e)),
                },
                "auth" => match RawAuth::deserialize(ValueDeserializer::from(value)) {
                    Ok(raw) => auth = Some(checked_auth(raw, &mut problems)),
                    Err(e) => problems.push(de_problem(&e)),
                },
                "idmap" => idmap = Some(idmap_section(value, &mut problems)),
                "share" => {
                    let span = value.span();
                    match value.into_inner() {
                        DeValue::Table(shares) => {
                            for (name, share) in shares {
                                let name_span = name.span();
                                let name = name.into_inner().into_owned();
                                let decimal = decimal_modes(&share);
                                if !decimal.is_empty() {
                                    problems.extend(decimal);
                                    continue;
                                }
                                match ShareConfig::deserialize(ValueDeserializer::from(share)) {
                                    Ok(share) => raw_shares.push((name_span, name, share)),
                                    Err(e) => problems.push(de_problem(&e)),
                                }
                            }
                        }
                        _ => problems.push(Problem::at(span, "share must be a table of shares")),
                    }
                }
                other => problems.push(Problem::at(
                    key.span(),
                    format!("unknown section `{other}`, expected `server`, `limits`, `share`, `cluster`, `auth` or `idmap`"),
                )),
            }
        }
        let server = server.unwrap_or_default();
        raw_shares.sort_by_key(|(span, _, _)| span.start);
        let shares = raw_shares
            .into_iter()
            .map(|(span, name, share)| (Spanned::new(span, name), share))
            .collect();
        let mut config = Self::checked(
            path,
            (server, &server_spans),
            limits.unwrap_or_default(),
            shares,
            &mut problems,
        );
        config.cluster = cluster;
        config.auth = auth;
        config.idmap = idmap;
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(located(problems))
        }
    }

    /// Validates values that types alone do not, adding what is wrong to `problems`.
    fn checked(
        path: &Path,
        (server, server_spans): (ServerConfig, &[(String, std::ops::Range<usize>)]),
        limits: LimitsConfig,
        raw_shares: Vec<(Spanned<String>, ShareConfig)>,
        problems: &mut Vec<Problem>,
    ) -> Self {
        problems.extend(server_problems(&server, |key| {
            server_spans
                .iter()
                .find(|(k, _)| k == key)
                .map_or(0..0, |(_, span)| span.clone())
        }));
        problems.extend(limits_problems(&limits, &server));
        let mut shares: Vec<(String, ShareConfig)> = Vec::new();
        for (name, share) in raw_shares {
            let span = name.span();
            let name = name.into_inner();
            problems.extend(share_problems(&name, &share, span.clone()));
            if shares.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
                problems.push(Problem::at(
                    span,
                    format!("share {name:?} is defined twice (names are case-insensitive)"),
                ));
                continue;
            }
            shares.push((name, share));
        }
        Self {
            source: path.to_path_buf(),
            server,
            limits,
            shares,
            cluster: None,
            auth: None,
            idmap: None,
        }
    }

    /// A warning for each share that sets a testing option (`testing_fault_injection`):
    /// `serve` logs them at start and at each reload, `config check` prints them.
    pub fn testing_only(&self) -> Vec<String> {
        self.shares
            .iter()
            .filter(|(_, share)| !share.testing_fault_injection.is_empty())
            .map(|(name, share)| {
                format!(
                    "share {name:?}: testing_fault_injection is set ({} rule(s)): its file-system \
                     calls fail or wait ON PURPOSE; a testing option, never for data you need",
                    share.testing_fault_injection.len()
                )
            })
            .collect()
    }

    /// Options set that only a node with `[cluster]` reads (`scale_out`): `config check` warns
    /// that they do nothing here.
    pub fn cluster_only(&self) -> Vec<String> {
        if self.cluster.is_some() {
            return Vec::new();
        }
        self.shares
            .iter()
            .filter(|(_, share)| share.scale_out.is_some())
            .map(|(name, _)| {
                format!(
                    "share {name:?}: scale_out has no effect without [cluster] (one server's \
                     shares are neither scale-out nor cluster shares)"
                )
            })
            .collect()
    }

    /// Finds a share by name, ignoring case as Windows does.
    pub fn share(&self, name: &str) -> Option<&ShareConfig> {
        self.shares
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, s)| s)
    }
}

fn first(errors: Vec<ConfigError>) -> ConfigError {
    errors.into_iter().next().unwrap_or_else(|| ConfigError {
        file: PathBuf::new(),
        line: 0,
        column: 0,
        message: "invalid configuration".into(),
    })
}

/// The admin socket the configuration `text` names, read even when the file has errors
/// elsewhere (a syntax error, an unknown key), so that `smb3d status` and `smb3d reload` still
/// reach the running server, which holds the configuration it started with; the default when
/// `[server]` names none that can be read.
pub fn admin_socket_in(text: &str) -> PathBuf {
    let (root, _) = toml::de::DeTable::parse_recoverable(text);
    let named = root.get_ref().iter().find_map(|(key, value)| {
        let DeValue::Table(server) = value.get_ref() else {
            return None;
        };
        if key.get_ref().as_ref() != "server" {
            return None;
        }
        server
            .iter()
            .find_map(|(key, value)| match value.get_ref() {
                DeValue::String(path) if key.get_ref().as_ref() == "admin_socket" => {
                    Some(PathBuf::from(path.as_ref()))
                }
                _ => None,
            })
    });
    // An error can swallow the lines after it (an unclosed array); the key's own line, in the
    // [server] section, is then read alone.
    named
        .or_else(|| admin_socket_line(text))
        .filter(|path| check_admin_socket(path).is_ok())
        .unwrap_or_else(|| PathBuf::from(DEFAULT_ADMIN_SOCKET))
}

/// The `admin_socket = "..."` line of the `[server]` section, read as a line.
fn admin_socket_line(text: &str) -> Option<PathBuf> {
    let mut in_server = false;
    text.lines().map(str::trim).find_map(|line| {
        if line.starts_with('[') {
            in_server = line.trim_end_matches(|c| c != ']') == "[server]";
            return None;
        }
        let (key, value) = line.split_once('=')?;
        if !in_server || key.trim() != "admin_socket" {
            return None;
        }
        match toml::de::DeValue::parse(value.trim()).ok()?.into_inner() {
            DeValue::String(path) => Some(PathBuf::from(path.as_ref())),
            _ => None,
        }
    })
}

/// Where each key's value of a table is, for problems found after deserializing it.
fn value_spans(table: &Spanned<DeValue<'_>>) -> Vec<(String, std::ops::Range<usize>)> {
    match table.get_ref() {
        DeValue::Table(t) => t
            .iter()
            .map(|(k, v)| (k.get_ref().to_string(), v.span()))
            .collect(),
        _ => Vec::new(),
    }
}

/// `[idmap]`: a table of domains, each checked (`idmap::checked_idmap`) in the file's order.
fn idmap_section(value: Spanned<DeValue<'_>>, problems: &mut Vec<Problem>) -> IdmapConfig {
    let span = value.span();
    let DeValue::Table(table) = value.into_inner() else {
        problems.push(Problem::at(span, "idmap must be a table of domains"));
        return IdmapConfig::default();
    };
    let mut raw = Vec::new();
    for (name, domain) in table {
        let name = Spanned::new(name.span(), name.into_inner().into_owned());
        match RawDomain::deserialize(ValueDeserializer::from(domain)) {
            Ok(domain) => raw.push((name, domain)),
            Err(e) => problems.push(de_problem(&e)),
        }
    }
    raw.sort_by_key(|(name, _)| name.span().start);
    checked_idmap(raw, problems)
}

fn de_problem(e: &toml::de::Error) -> Problem {
    Problem {
        span: e.span(),
        message: e.message().trim_end().to_owned(),
    }
}

/// What is wrong with the server settings beyond their types; `place` tells where a key's
/// value is written (0..0 when it is not: a default, or an environment variable).
pub(crate) fn server_problems(
    server: &ServerConfig,
    place: impl Fn(&str) -> std::ops::Range<usize>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    if server.listen.is_empty() {
        problems.push(Problem::at(
            place("listen"),
            "server.listen names no address",
        ));
    }
    if *server.min_dialect.get_ref() > *server.max_dialect.get_ref() {
        problems.push(Problem::at(
            server.min_dialect.span(),
            format!(
                "min_dialect {} is above max_dialect {}",
                server.min_dialect.get_ref().as_str(),
                server.max_dialect.get_ref().as_str()
            ),
        ));
    }
    if server.ciphers.is_empty() && server.encrypt != EncryptPolicy::Off {
        problems.push(Problem::at(
            place("ciphers"),
            "server.ciphers is empty while encryption is on",
        ));
    }
    let io = *server.max_io_size.get_ref();
    if !(MIN_IO_SIZE..=MAX_IO_SIZE).contains(&io) {
        problems.push(Problem::at(
            server.max_io_size.span(),
            format!("max_io_size must be between {MIN_IO_SIZE} and {MAX_IO_SIZE}"),
        ));
    }
    if let Err(m) = check_server_name(&server.server_name) {
        problems.push(Problem::at(place("server_name"), m));
    }
    if let Err(m) = check_mdns_model(&server.mdns_model) {
        problems.push(Problem::at(place("mdns_model"), m));
    }
    if let Err(m) = check_admin_socket(&server.admin_socket) {
        problems.push(Problem::at(place("admin_socket"), m));
    }
    if let Some(account) = &server.guest_account
        && !valid_account_name(account)
    {
        problems.push(Problem::at(
            place("guest_account"),
            format!("server.guest_account {account:?} is not a valid Unix name"),
        ));
    }
    if !server.state_dir.is_absolute() {
        problems.push(Problem::at(
            place("state_dir"),
            format!(
                "server.state_dir {:?} must be an absolute path",
                server.state_dir.display()
            ),
        ));
    }
    problems
}

/// The admin socket must be an absolute path that fits a unix socket address.
pub(crate) fn check_admin_socket(path: &Path) -> Result<(), String> {
    if !path.is_absolute() {
        return Err(format!(
            "server.admin_socket {:?} must be an absolute path",
            path.display()
        ));
    }
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(format!(
            "server.admin_socket {:?} is longer than the {MAX_SOCKET_PATH} bytes a unix socket \
             path may have",
            path.display()
        ));
    }
    Ok(())
}

/// What is wrong with one share beyond its types; `span` is where its name is.
/// What is wrong with a recycle bin repository: it must stay inside the share (relative, no
/// `.` or `..`) and take only the deleting user's name (`%U`, `%u`), never a substitution a
/// client chooses.
pub(crate) fn check_recycle_repository(repository: &str) -> Result<(), String> {
    let parts: Vec<&str> = repository.split('/').filter(|p| !p.is_empty()).collect();
    if repository.starts_with('/') || parts.is_empty() {
        return Err(format!(
            "{repository:?} must be a path relative to the share"
        ));
    }
    for part in parts {
        if part == "." || part == ".." || part.contains(['\\', '\0']) {
            return Err(format!("{repository:?} must stay inside the share"));
        }
        let mut chars = part.chars();
        while let Some(c) = chars.next() {
            if c == '%' && !matches!(chars.next(), Some('U' | 'u')) {
                return Err(format!(
                    "{repository:?}: only %U and %u (the deleting user) may be substituted"
                ));
            }
        }
    }
    Ok(())
}

pub(crate) fn share_problems(
    name: &str,
    share: &ShareConfig,
    span: std::ops::Range<usize>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Err(m) = check_share_name(name) {
        problems.push(Problem::at(span.clone(), m));
    }
    if is_homes(name) {
        if let Err(m) = check_home_template(share.path.get_ref()) {
            problems.push(Problem::at(
                share.path.span(),
                format!("share {name:?}: {m}"),
            ));
        }
    } else if !share.path.get_ref().is_absolute() {
        problems.push(Problem::at(
            share.path.span(),
            format!("share {name:?}: path must be absolute"),
        ));
    }
    if share.apple && !share.streams_xattr {
        problems.push(Problem::at(
            span.clone(),
            format!(
                "share {name:?}: apple serves Finder info and resource forks as named streams; \
                 it needs streams_xattr"
            ),
        ));
    }
    if share.create_home && !is_homes(name) {
        problems.push(Problem::at(
            span.clone(),
            format!("share {name:?}: create_home is only for the share named \"homes\""),
        ));
    }
    for (option, mask) in [
        ("create_mask", share.create_mask),
        ("directory_mask", share.directory_mask),
        ("create_home_mode", share.create_home_mode),
        ("force_create_mode", share.force_create_mode),
        ("force_directory_mode", share.force_directory_mode),
        ("recycle_directory_mode", share.recycle_directory_mode),
    ] {
        if mask > 0o7777 {
            problems.push(Problem::at(
                span.clone(),
                format!("share {name:?}: {option} {mask:#o} has bits beyond 0o7777"),
            ));
        }
    }
    if share.allocation_roundup_size > MAX_ALLOCATION_ROUNDUP {
        problems.push(Problem::at(
            span.clone(),
            format!("share {name:?}: allocation_roundup_size is above {MAX_ALLOCATION_ROUNDUP}"),
        ));
    }
    for (option, patterns) in [
        ("hide_files", &share.hide_files),
        ("veto_files", &share.veto_files),
        ("veto_oplock_files", &share.veto_oplock_files),
        ("recycle_exclude", &share.recycle_exclude),
        ("recycle_exclude_dir", &share.recycle_exclude_dir),
        ("recycle_noversions", &share.recycle_noversions),
    ] {
        for pattern in patterns {
            if pattern.is_empty() || pattern.contains(['/', '\\', '\0']) {
                problems.push(Problem::at(
                    span.clone(),
                    format!(
                        "share {name:?}: {option} pattern {pattern:?} must be a non-empty name"
                    ),
                ));
            }
        }
    }
    for (option, list) in [
        ("valid_users", &share.valid_users),
        ("read_list", &share.read_list),
        ("write_list", &share.write_list),
        ("invalid_users", &share.invalid_users),
        ("admin_users", &share.admin_users),
    ] {
        for entry in list {
            if !valid_account_name(entry.strip_prefix('@').unwrap_or(entry)) {
                problems.push(Problem::at(
                    span.clone(),
                    format!("share {name:?}: invalid user name {entry:?} in {option}"),
                ));
            }
        }
    }
    for (index, rule) in share.testing_fault_injection.iter().enumerate() {
        if let Some(why) = rule.problem() {
            problems.push(Problem::at(
                span.clone(),
                format!(
                    "share {name:?}: testing_fault_injection rule {}: {why}",
                    index + 1
                ),
            ));
        }
    }
    if let Err(m) = check_recycle_repository(&share.recycle_repository) {
        problems.push(Problem::at(
            span.clone(),
            format!("share {name:?}: recycle_repository: {m}"),
        ));
    }
    for (option, account) in [
        ("force_user", &share.force_user),
        ("force_group", &share.force_group),
    ] {
        if let Some(account) = account
            && !valid_account_name(account)
        {
            problems.push(Problem::at(
                span.clone(),
                format!("share {name:?}: {option} {account:?} is not a valid Unix name"),
            ));
        }
    }
    problems
}

/// User and group names as lists and `force_*` options take them: not empty, without ':'
/// (which would corrupt /etc/passwd-style records) or control characters.
fn valid_account_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(':') && !name.chars().any(char::is_control)
}

/// NetBIOS-style server names: 1-15 letters, digits or '-'.
pub(crate) fn check_server_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 15
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        return Err(format!(
            "server.server_name {name:?} must be 1-15 letters, digits or '-'"
        ));
    }
    Ok(())
}

/// The model string goes into a DNS TXT string ("model=" + it), at most 255 bytes.
pub(crate) fn check_mdns_model(model: &str) -> Result<(), String> {
    if model.is_empty() || model.len() > 200 || model.chars().any(char::is_control) {
        return Err(format!(
            "server.mdns_model {model:?} must be 1-200 characters without control characters"
        ));
    }
    Ok(())
}

/// Share names as Windows accepts them: no path separators or wildcards, at most 80 characters;
/// IPC$ is the server's own.
pub(crate) fn check_share_name(name: &str) -> Result<(), String> {
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
    fn recycle_options_and_their_defaults() {
        let c = parse(
            "[share.s]\npath = \"/s\"\nrecycle = true\nrecycle_repository = \".bin/%U\"\n\
             recycle_keeptree = true\nrecycle_versions = true\nrecycle_exclude = [\"*.bak\"]\n\
             recycle_maxsize = 1000\nrecycle_directory_mode = \"0770\"\n",
        )
        .unwrap();
        let share = c.share("s").unwrap();
        assert!(share.recycle && share.recycle_keeptree && share.recycle_versions);
        assert_eq!(share.recycle_repository, ".bin/%U");
        assert_eq!(share.recycle_exclude, ["*.bak"]);
        assert_eq!(
            (share.recycle_maxsize, share.recycle_directory_mode),
            (1000, 0o770)
        );
        let defaults = parse("[share.s]\npath = \"/s\"\n").unwrap();
        let share = defaults.share("s").unwrap();
        assert!(!share.recycle && !share.recycle_keeptree);
        assert_eq!(share.recycle_repository, ".recycle");
        assert_eq!(share.recycle_directory_mode, 0o700);
    }

    #[test]
    fn a_recycle_repository_stays_in_the_share_and_takes_only_the_user() {
        for bad in [
            "/tmp/bin", "../bin", "a/../b", ".", "", "bin/%m", "bin/%", "a\\b",
        ] {
            let text = format!("[share.s]\npath = \"/s\"\nrecycle_repository = {bad:?}\n");
            let e = parse(&text).unwrap_err();
            assert!(e.message.contains("recycle_repository"), "{bad:?}: {e}");
        }
        for good in [".recycle", ".recycle/%U", "bin/%u/x"] {
            let text = format!("[share.s]\npath = \"/s\"\nrecycle_repository = {good:?}\n");
            assert!(parse(&text).is_ok(), "{good:?}");
        }
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
    fn permission_masks() {
        let c = parse("[share.s]\npath = \"/s\"\ncreate_mask = 0o600\n").unwrap();
        let share = c.share("s").unwrap();
        assert_eq!((share.create_mask, share.directory_mask), (0o600, 0o755));
        let e = parse("[share.s]\npath = \"/s\"\ndirectory_mask = 0o17777\n").unwrap_err();
        assert!(e.message.contains("beyond 0o7777"), "{e}");
    }

    #[test]
    fn modes_are_octal_numbers_or_strings_and_a_decimal_one_is_refused_with_the_fix() {
        let c = parse(
            "[share.s]\npath = \"/s\"\ncreate_mask = \"0660\"\ndirectory_mask = 0o770\n\
             force_directory_mode = \"2000\"\nforce_create_mode = 0\n",
        )
        .unwrap();
        let share = c.share("s").unwrap();
        assert_eq!((share.create_mask, share.directory_mask), (0o660, 0o770));
        assert_eq!(
            (share.force_create_mode, share.force_directory_mode),
            (0, 0o2000)
        );
        let e = parse("[share.s]\npath = \"/s\"\ncreate_mask = 664\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 15), "{e}");
        assert!(
            e.message.contains("create_mask = 664 is a decimal number")
                && e.message.contains("write 0o664 or \"664\""),
            "{e}"
        );
        for bad in ["\"0x1ff\"", "\"668\"", "\"\"", "\"+660\""] {
            let text = format!("[share.s]\npath = \"/s\"\nforce_create_mode = {bad}\n");
            let e = parse(&text).unwrap_err();
            assert!(e.message.contains("not octal digits"), "{bad}: {e}");
        }
    }

    #[test]
    fn user_lists_and_forced_accounts() {
        let c = parse(
            r#"
[share.s]
path = "/s"
read_list = ["guest", "@visitors"]
write_list = ["@staff"]
force_user = "files"
force_group = "staff"
hide_unreadable = true
access_based_share_enum = true
"#,
        )
        .unwrap();
        let share = c.share("s").unwrap();
        assert_eq!(share.read_list, ["guest", "@visitors"]);
        assert_eq!(share.write_list, ["@staff"]);
        assert_eq!(share.force_user.as_deref(), Some("files"));
        assert_eq!(share.force_group.as_deref(), Some("staff"));
        assert!(share.hide_unreadable && share.access_based_share_enum);
        let defaults = parse("[share.s]\npath = \"/s\"\n").unwrap();
        let share = defaults.share("s").unwrap();
        assert!(share.read_list.is_empty() && share.force_user.is_none());
        assert!(!share.hide_unreadable && !share.access_based_share_enum);
        for bad in [
            "write_list = [\"@\"]",
            "read_list = [\"a:b\"]",
            "force_user = \"\"",
            "force_group = \"x:y\"",
        ] {
            let e = parse(&format!("[share.s]\npath = \"/s\"\n{bad}\n")).unwrap_err();
            assert!(e.message.contains("share \"s\""), "{bad}: {e}");
        }
    }

    #[test]
    fn allocation_and_hiding() {
        let c = parse("[share.s]\npath = \"/s\"\n").unwrap();
        let share = c.share("s").unwrap();
        assert!(share.strict_allocate && share.hide_dot_files && !share.sync_metadata);
        assert_eq!(share.allocation_roundup_size, 0);
        let c = parse(
            "[share.s]\npath = \"/s\"\nstrict_allocate = false\nsync_metadata = true\n\
             allocation_roundup_size = 1048576\nhide_files = [\"*.tmp\"]\n",
        )
        .unwrap();
        let share = c.share("s").unwrap();
        assert!(!share.strict_allocate && share.sync_metadata);
        assert_eq!(share.allocation_roundup_size, 1 << 20);
        assert_eq!(share.hide_files, ["*.tmp"]);
        let e = parse("[share.s]\npath = \"/s\"\nhide_files = [\"a/b\"]\n").unwrap_err();
        assert!(e.message.contains("hide_files"), "{e}");
        let e = parse("[share.s]\npath = \"/s\"\nveto_files = [\"\"]\n").unwrap_err();
        assert!(e.message.contains("veto_files pattern"), "{e}");
        let e =
            parse("[share.s]\npath = \"/s\"\nallocation_roundup_size = 4294967296\n").unwrap_err();
        assert!(e.message.contains("allocation_roundup_size"), "{e}");
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
    fn every_error_is_reported_with_its_line() {
        let text = "[server]\nmin_dialect = \"3.1.1\"\nmax_dialect = \"2.1\"\nmax_io_size = 1\n\
                    mdns_model = \"\"\n[share.a]\npath = \"rel\"\n[share.b]\npath = \"/b\"\nbogus = 1\n\
                    [share.A]\npath = \"/a\"\n[other]\n";
        let errors = Config::parse_all_errors(Path::new("t.toml"), text).unwrap_err();
        let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 4, 5, 7, 10, 11, 13], "{errors:#?}");
        assert!(errors[2].message.contains("mdns_model"), "{errors:#?}");
        assert!(errors[5].message.contains("twice"), "{errors:#?}");
        assert!(errors[6].message.contains("unknown section"), "{errors:#?}");
        assert_eq!(
            Config::parse(Path::new("t.toml"), text).unwrap_err(),
            errors[0]
        );

        let syntax = Config::parse_all_errors(Path::new("t.toml"), "[server\nx = = 1\n[a]\nb = \n")
            .unwrap_err();
        assert!(syntax.len() >= 2, "{syntax:#?}");
    }

    #[test]
    fn operations_settings() {
        let c = parse("").unwrap();
        assert_eq!(c.server.admin_socket, Path::new(DEFAULT_ADMIN_SOCKET));
        assert!(!c.server.metrics);
        assert!(c.server.metrics_listen.ip().is_loopback());
        assert_eq!(c.server.log_format, LogFormat::Human);
        assert!(!c.server.audit);
        let c = parse(
            "[server]\nadmin_socket = \"/tmp/a.sock\"\nmetrics = true\nmetrics_listen = \"0.0.0.0:9100\"\n\
             log_format = \"json\"\naudit = true\n[share.s]\npath = \"/s\"\naudit = false\n",
        )
        .unwrap();
        assert_eq!(c.server.admin_socket, Path::new("/tmp/a.sock"));
        assert!(c.server.metrics && c.server.audit);
        assert_eq!(c.server.metrics_listen.port(), 9100);
        assert_eq!(c.server.log_format, LogFormat::Json);
        assert_eq!(c.share("s").unwrap().audit, Some(false));
        let e = parse("[server]\nadmin_socket = \"run/a.sock\"\n").unwrap_err();
        assert!(e.message.contains("absolute"), "{e}");
        let e = parse("[server]\nlog_format = \"xml\"\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn scale_out_is_the_default_and_false_is_written_back() {
        let c = parse("[share.s]\npath = \"/s\"\n").unwrap();
        assert_eq!(c.share("s").unwrap().scale_out, None);
        assert!(c.share("s").unwrap().is_scale_out());
        let c = parse("[share.s]\npath = \"/s\"\nscale_out = false\n").unwrap();
        assert!(!c.share("s").unwrap().is_scale_out());
        let back = parse(&c.to_toml()).unwrap();
        assert_eq!(back.share("s").unwrap().scale_out, Some(false));
        assert!(parse("[share.s]\npath = \"/s\"\nscale_out = \"no\"\n").is_err());
        let warned = c.cluster_only();
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(warned[0].contains("share \"s\": scale_out has no effect without [cluster]"));
        let c = parse(
            "[cluster]\netcd = [\"http://127.0.0.1:2379\"]\n[share.s]\npath = \"/s\"\nscale_out = false\n",
        )
        .unwrap();
        assert!(c.cluster_only().is_empty());
    }

    #[test]
    fn continuous_availability_and_state_dir() {
        let c = parse("[share.s]\npath = \"/s\"\n").unwrap();
        assert_eq!(c.server.state_dir, Path::new(DEFAULT_STATE_DIR));
        assert!(!c.share("s").unwrap().continuous_availability);
        let c = parse(
            "[server]\nstate_dir = \"/tmp/st\"\n[share.s]\npath = \"/s\"\ncontinuous_availability = true\n",
        )
        .unwrap();
        assert_eq!(c.server.state_dir, Path::new("/tmp/st"));
        assert!(c.share("s").unwrap().continuous_availability);
        let e = parse("[server]\nstate_dir = \"st\"\n").unwrap_err();
        assert!(e.message.contains("state_dir"), "{e}");
    }

    /// `posix` is off unless a share turns it on, as Samba's `smb3 unix extensions`.
    #[test]
    fn posix_is_per_share_and_off_by_default() {
        let c =
            parse("[share.s]\npath = \"/s\"\n[share.p]\npath = \"/p\"\nposix = true\n").unwrap();
        assert!(!c.share("s").unwrap().posix);
        assert!(c.share("p").unwrap().posix);
    }

    #[test]
    fn apple_options_and_time_machine_sizes() {
        let c = parse("[share.s]\npath = \"/s\"\n").unwrap();
        let s = c.share("s").unwrap();
        assert!(!s.apple && !s.time_machine && s.apple_veto_appledouble);
        assert_eq!(
            (s.apple_model.as_str(), s.time_machine_max_size),
            ("MacSamba", 0)
        );
        assert!(!s.apple_wipe_intentionally_left_blank_rfork && !s.apple_delete_empty_adfiles);
        assert!(s.apple_zero_file_id);
        let c = parse(
            "[share.s]\npath = \"/s\"\napple = true\napple_veto_appledouble = false\n\
             apple_wipe_intentionally_left_blank_rfork = true\napple_delete_empty_adfiles = true\n\
             apple_zero_file_id = false\n",
        )
        .unwrap();
        let s = c.share("s").unwrap();
        assert!(!s.apple_veto_appledouble && !s.apple_zero_file_id);
        assert!(s.apple_wipe_intentionally_left_blank_rfork && s.apple_delete_empty_adfiles);
        let c = parse(
            "[share.tm]\npath = \"/tm\"\napple = true\ntime_machine = true\ntime_machine_max_size = \"32K\"\napple_model = \"Xserve\"\n[share.n]\npath = \"/n\"\ntime_machine_max_size = 4096\n",
        )
        .unwrap();
        let tm = c.share("tm").unwrap();
        assert!(tm.apple && tm.time_machine);
        assert_eq!(
            (tm.apple_model.as_str(), tm.time_machine_max_size),
            ("Xserve", 32 * 1024)
        );
        assert_eq!(c.share("n").unwrap().time_machine_max_size, 4096);
        assert_eq!(parse_byte_size("2 T"), Some(2 << 40));
        assert_eq!(parse_byte_size("1g"), Some(1 << 30));
        for bad in ["", "K", "-1K", "1.5G", "16777216T", "12X"] {
            assert_eq!(parse_byte_size(bad), None, "{bad:?}");
        }
        let e = parse("[share.s]\npath = \"/s\"\ntime_machine_max_size = \"lots\"\n").unwrap_err();
        assert!(e.message.contains("not a size"), "{e}");
    }

    #[test]
    fn mdns_is_off_unless_asked() {
        let c = parse("").unwrap();
        assert!(!c.server.mdns);
        assert_eq!(c.server.mdns_model, "Xserve");
        let c = parse("[server]\nmdns = true\nmdns_model = \"MacPro7,1@ECOLOR=226,226,224\"\n")
            .unwrap();
        assert!(c.server.mdns);
        assert_eq!(c.server.mdns_model, "MacPro7,1@ECOLOR=226,226,224");
    }

    /// Every error a value of `[server]` can have names its line and column (issue 23: the
    /// server_name ones did not).
    #[test]
    fn server_errors_name_line_and_column() {
        for (text, key, needle) in [
            (
                "[server]\nworkgroup = \"W\"\nserver_name = \"bad name!\"\n",
                "server_name",
                "server_name",
            ),
            (
                "[server]\n\nmdns_model = \"\"\n",
                "mdns_model",
                "mdns_model",
            ),
            ("[server]\nx_pad = 1\n", "x_pad", "unknown field"),
            (
                "[server]\n\nadmin_socket = \"relative.sock\"\n",
                "admin_socket",
                "admin_socket",
            ),
            (
                "[server]\n\nstate_dir = \"state\"\n",
                "state_dir",
                "state_dir",
            ),
            ("[server]\n\nlisten = []\n", "listen", "listen"),
            ("[server]\n\nciphers = []\n", "ciphers", "ciphers"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.message.contains(needle), "{text}: {e}");
            let line = text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
            assert_eq!(e.line, line, "{text}: {e}");
            assert!(e.column > 0, "{text}: {e}");
        }
    }

    #[test]
    fn listen_takes_bare_addresses_on_port_445_and_defaults_to_both_families() {
        let c = parse("").unwrap();
        let listen: Vec<String> = c.server.listen.iter().map(ToString::to_string).collect();
        assert_eq!(listen, ["0.0.0.0:445", "[::]:445"]);
        let c =
            parse("[server]\nlisten = [\"192.0.2.1\", \"::1\", \"[::]\", \"127.0.0.1:4445\"]\n")
                .unwrap();
        let listen: Vec<String> = c.server.listen.iter().map(ToString::to_string).collect();
        assert_eq!(
            listen,
            ["192.0.2.1:445", "[::1]:445", "[::]:445", "127.0.0.1:4445"]
        );
        let e = parse("[server]\nlisten = [\"0.0.0.0:445\", \"nas.local\"]\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("nas.local"), "{e}");
    }

    /// Issue 23 item 2's settings: taken, checked and rendered back.
    #[test]
    fn access_settings_are_taken_checked_and_rendered() {
        let text = "[server]\nhosts_allow = [\"10.0.0.0/8\", \"::1\"]\nhosts_deny = [\"0.0.0.0/0\"]\n\
                    guest_account = \"smbguest\"\nmap_to_guest = \"bad-user\"\n\
                    [share.s]\npath = \"/s\"\ninvalid_users = [\"root\", \"@wheel\"]\n\
                    admin_users = [\"alice\"]\nhosts_allow = [\"192.168.1.0/24\"]\nhosts_deny = [\"192.168.1.9\"]\n\
                    [share.t]\npath = \"/t\"\n";
        let c = parse(text).unwrap();
        assert_eq!(c.server.hosts_allow.len(), 2);
        assert!(c.server.hosts_allow[0].contains("10.9.8.7".parse().unwrap()));
        assert_eq!(c.server.guest_account.as_deref(), Some("smbguest"));
        assert_eq!(c.server.map_to_guest, MapToGuest::BadUser);
        let share = c.share("s").unwrap();
        assert_eq!(share.invalid_users, ["root", "@wheel"]);
        assert_eq!(share.admin_users, ["alice"]);
        assert_eq!(share.hosts_deny[0].to_string(), "192.168.1.9");
        let again = parse(&c.to_toml()).unwrap();
        assert_eq!(again.to_toml(), c.to_toml());
        assert_eq!(again.share("s"), c.share("s"));
        let defaults = parse("[share.t]\npath = \"/t\"\n").unwrap();
        assert!(
            !defaults.to_toml().contains("hosts_"),
            "{}",
            defaults.to_toml()
        );
        for (bad, line, needle) in [
            (
                "[server]\nhosts_allow = [\"10.1.2.3/8\"]\n",
                2,
                "the network is 10.0.0.0/8",
            ),
            ("[server]\n\nguest_account = \"a:b\"\n", 3, "guest_account"),
            (
                "[server]\nmap_to_guest = \"bad password\"\n",
                2,
                "unknown variant",
            ),
            (
                "[share.s]\npath = \"/s\"\nhosts_deny = [\"host.example\"]\n",
                3,
                "not an address",
            ),
            (
                "[share.s]\npath = \"/s\"\nadmin_users = [\"\"]\n",
                1,
                "admin_users",
            ),
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.line, line, "{bad}: {e}");
            assert!(e.message.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn the_admin_socket_is_found_in_a_file_with_errors() {
        let broken = "[server]\nlisten = [\"0.0.0.0:445\"\nadmin_socket = \"/run/x/a.sock\"\n\
                      bogus = 1\n[share.s]\npath = = \"/s\"\n";
        assert!(parse(broken).is_err());
        assert_eq!(admin_socket_in(broken), Path::new("/run/x/a.sock"));
        let later = "[share.s\npath = 1\n[server]\nadmin_socket = \"/tmp/b.sock\"\nx = \n";
        assert_eq!(admin_socket_in(later), Path::new("/tmp/b.sock"));
        for unnamed in [
            "",
            "[server]\nadmin_socket = 5\n",
            "[server]\nadmin_socket = \"relative.sock\"\n",
            "[other]\nadmin_socket = \"/tmp/c.sock\"\n",
            "admin_socket = \"/tmp/c.sock\"\n",
            "[server\nadmin_socket = \"/tmp/c.sock\"\n",
        ] {
            assert_eq!(
                admin_socket_in(unnamed),
                Path::new(DEFAULT_ADMIN_SOCKET),
                "{unnamed:?}"
            );
        }
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
