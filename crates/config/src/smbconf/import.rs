//! The mapping from smb.conf parameters to smb3d settings. Every parameter either maps, is
//! known to need nothing (smb3d behaves that way already), or is reported in a warning that
//! names it and its section.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

use toml::Spanned;

use super::parse::{Param, Section, SmbConf, Warning, parse_bool};
use crate::homes::is_homes;
use crate::limits::{Interval, LimitsConfig};
use crate::model::{check_recycle_repository, check_server_name, check_share_name};
use crate::{
    Config, ConfigError, DEFAULT_CREATE_MASK, DEFAULT_DIRECTORY_MASK, DEFAULT_PORT, Dialect,
    EncryptPolicy, HostPattern, InheritOwner, MAX_ALLOCATION_ROUNDUP, MAX_IO_SIZE, MIN_IO_SIZE,
    MapToGuest, ServerConfig, ShareConfig, SigningPolicy, SnapshotSource,
};

/// The result of a conversion.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The smb3d configuration, already checked by [`Config::parse`].
    pub config: Config,
    /// One line for every parameter or section that did not map, in file order.
    pub warnings: Vec<Warning>,
}

impl Imported {
    /// The configuration as TOML, headed by a comment naming the source.
    pub fn to_toml(&self) -> String {
        format!(
            "# Converted from {} by `smb3d config import-smb-conf`.\n\
             # Parameters that did not map were reported when it ran; check them before use.\n\n{}",
            self.config.source.display(),
            self.config.to_toml()
        )
    }
}

/// Reads an smb.conf (with its includes) and converts it.
pub fn import(path: &Path) -> Result<Imported, ConfigError> {
    convert(path, SmbConf::load(path)?)
}

/// Converts a parsed smb.conf read from `path`.
pub(crate) fn convert(path: &Path, conf: SmbConf) -> Result<Imported, ConfigError> {
    convert_with_ctdb(path, conf, Path::new(crate::cluster::CTDB_DIR))
}

/// [`convert`], reading CTDB's files (for `clustering = yes`) from `ctdb_dir`.
pub(crate) fn convert_with_ctdb(
    path: &Path,
    mut conf: SmbConf,
    ctdb_dir: &Path,
) -> Result<Imported, ConfigError> {
    let mut cx = Converter {
        warnings: std::mem::take(&mut conf.warnings),
        server: ServerConfig::default(),
        limits: LimitsConfig::default(),
        cluster: None,
        ctdb_dir: ctdb_dir.to_path_buf(),
    };
    let empty = Section {
        name: "global".into(),
        file: path.to_path_buf(),
        line: 0,
        params: Vec::new(),
    };
    let global = conf.global().unwrap_or(&empty);
    let share_defaults = cx.global(global);
    let mut shares: Vec<(String, ShareConfig)> = Vec::new();
    for section in conf.shares() {
        if let Some(share) = cx.share(section, &share_defaults) {
            shares.push((section.name.clone(), share));
        }
    }
    cx.warnings
        .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    let config = Config {
        source: path.to_path_buf(),
        server: cx.server,
        limits: cx.limits,
        shares,
        cluster: cx.cluster,
        auth: None,
        idmap: None,
    };
    // The output must be what `smb3d config check` accepts; anything else is a bug here.
    let checked = Config::parse(path, &config.to_toml()).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        line: 0,
        column: 0,
        message: format!("the converted configuration is invalid: {}", e.message),
    })?;
    Ok(Imported {
        config: checked,
        warnings: cx.warnings,
    })
}

struct Converter {
    warnings: Vec<Warning>,
    server: ServerConfig,
    limits: LimitsConfig,
    cluster: Option<crate::ClusterConfig>,
    ctdb_dir: PathBuf,
}

/// What a share section (or the global defaults for shares) says, before it is a share.
#[derive(Clone, Default)]
struct ShareParams {
    path: Option<String>,
    comment: Option<String>,
    read_only: Option<bool>,
    valid_users: Option<(Vec<String>, bool)>,
    read_list: Option<Vec<String>>,
    write_list: Option<Vec<String>>,
    force_user: Option<String>,
    force_group: Option<String>,
    hide_unreadable: Option<bool>,
    access_based_share_enum: Option<bool>,
    guest_ok: Option<bool>,
    browseable: Option<bool>,
    encrypt: Option<EncryptPolicy>,
    available: Option<bool>,
    printable: Option<bool>,
    create_mask: Option<u32>,
    directory_mask: Option<u32>,
    force_create_mode: Option<u32>,
    force_directory_mode: Option<u32>,
    inherit_permissions: Option<bool>,
    inherit_owner: Option<InheritOwner>,
    strict_allocate: Option<bool>,
    allocation_roundup_size: Option<u64>,
    hide_dot_files: Option<bool>,
    hide_files: Option<Vec<String>>,
    veto_files: Option<Vec<String>>,
    delete_veto_files: Option<bool>,
    oplocks: Option<bool>,
    veto_oplock_files: Option<Vec<String>>,
    posix_locking: Option<bool>,
    kernel_oplocks: Option<bool>,
    /// `smb3 share cap:SCALE OUT`: whether a cluster share announces SCALEOUT (Samba's default
    /// with `clustering = yes`: yes).
    scale_out: Option<bool>,
    /// `mangled names = yes`: 8.3 names for every long name.
    short_names: Option<bool>,
    /// `smb3 unix extensions`: the SMB3 POSIX extensions.
    smb3_unix_extensions: Option<bool>,
    /// `vfs objects` names streams_xattr (or streams_depot): Samba serves named streams.
    streams: Option<bool>,
    /// `store dos attributes`: DOS attributes kept in `user.DOSATTRIB` (Samba's default: yes).
    store_dos_attributes: Option<bool>,
    /// `ea support`: EAs kept in `user.` xattrs (Samba's default: yes).
    ea_support: Option<bool>,
    /// `vfs objects` names acl_xattr: new files inherit the ACL synthesized for a parent
    /// that has none stored.
    acl_xattr: Option<bool>,
    invalid_users: Option<Vec<String>>,
    admin_users: Option<Vec<String>>,
    hosts_allow: Option<Vec<HostPattern>>,
    hosts_deny: Option<Vec<HostPattern>>,
    recycle: RecycleParams,
    fruit: FruitParams,
    shadow: ShadowParams,
}

/// vfs_fruit's `fruit:*` parameters that smb3d maps, and whether `vfs objects` names it.
#[derive(Clone, Default)]
struct FruitParams {
    on: Option<bool>,
    model: Option<String>,
    time_machine: Option<bool>,
    time_machine_max_size: Option<u64>,
    veto_appledouble: Option<bool>,
    wipe_blank_rfork: Option<bool>,
    delete_empty_adfiles: Option<bool>,
    zero_file_id: Option<bool>,
}

/// The Apple options of an imported share, with vfs_fruit's defaults where unset.
fn apply_fruit(share: &mut ShareConfig, fruit: FruitParams) {
    share.apple = fruit.on.unwrap_or(false);
    if !share.apple {
        return;
    }
    if let Some(model) = fruit.model {
        share.apple_model = model;
    }
    share.time_machine = fruit.time_machine.unwrap_or(false);
    share.time_machine_max_size = fruit.time_machine_max_size.unwrap_or(0);
    share.apple_veto_appledouble = fruit.veto_appledouble.unwrap_or(true);
    share.apple_wipe_intentionally_left_blank_rfork = fruit.wipe_blank_rfork.unwrap_or(false);
    share.apple_delete_empty_adfiles = fruit.delete_empty_adfiles.unwrap_or(false);
    share.apple_zero_file_id = fruit.zero_file_id.unwrap_or(true);
}

/// Whether `vfs objects` names vfs_shadow_copy2, and whether its `shadow:*` parameters describe
/// a layout other than the one smb3d reads (`.snapshots/@GMT-%Y.%m.%d-%H.%M.%S` in UTC under
/// the share).
#[derive(Clone, Default)]
struct ShadowParams {
    on: Option<bool>,
    other_layout: bool,
}

/// vfs_recycle's `recycle:*` parameters and whether `vfs objects` names it.
#[derive(Clone, Default)]
struct RecycleParams {
    on: Option<bool>,
    repository: Option<String>,
    keeptree: Option<bool>,
    versions: Option<bool>,
    touch: Option<bool>,
    exclude: Option<Vec<String>>,
    exclude_dir: Option<Vec<String>>,
    noversions: Option<Vec<String>>,
    maxsize: Option<u64>,
    directory_mode: Option<u32>,
}

/// The recycle bin of an imported share, with vfs_recycle's defaults where unset; a bad
/// repository (warned about) leaves it off.
fn apply_recycle(share: &mut ShareConfig, recycle: RecycleParams) {
    let repository = recycle.repository.unwrap_or_else(|| ".recycle".to_owned());
    share.recycle = recycle.on.unwrap_or(false) && !repository.is_empty();
    if !share.recycle {
        return;
    }
    share.recycle_repository = repository;
    share.recycle_keeptree = recycle.keeptree.unwrap_or(false);
    share.recycle_versions = recycle.versions.unwrap_or(false);
    share.recycle_touch = recycle.touch.unwrap_or(false);
    share.recycle_exclude = recycle.exclude.unwrap_or_default();
    share.recycle_exclude_dir = recycle.exclude_dir.unwrap_or_default();
    share.recycle_noversions = recycle.noversions.unwrap_or_default();
    share.recycle_maxsize = recycle.maxsize.unwrap_or(0);
    if let Some(mode) = recycle.directory_mode {
        share.recycle_directory_mode = mode;
    }
}

/// Parameters smb3d has no use for, with why, so that the warning helps.
fn unmapped_reason(key: &str) -> &'static str {
    match key {
        "logfile" | "maxlogsize" | "logging" | "loglevel" | "debuglevel" | "syslog"
        | "syslogonly" => {
            "smb3d logs to standard error (the journal under systemd); set the level with SMB3D_LOG"
        }
        "loadprinters" | "printing" | "printcapname" | "printcap" | "disablespoolss"
        | "printcommand" | "lpqcommand" | "lprmcommand" => "smb3d serves no printers",
        "unixpasswordsync"
        | "passwdprogram"
        | "passwdchat"
        | "pampasswordchange"
        | "obeypamrestrictions" => "smb3d keeps its own user database and does not use PAM",
        "usershareallowguests" | "usersharemaxshares" | "usersharepath" | "usershareowneronly" => {
            "user shares are not supported"
        }
        "panicaction" => "smb3d does not run a command on a crash",
        "serverstring" => "smb3d announces no server string",
        _ => "not mapped",
    }
}

fn parse_dialect(value: &str) -> Result<Option<Dialect>, String> {
    let upper = value.trim().to_ascii_uppercase();
    match upper.as_str() {
        "DEFAULT" => Ok(None),
        // Samba: "By default SMB2 selects the SMB2_10 variant."
        "SMB2" => Ok(Some(Dialect::Smb210)),
        "CORE" | "COREPLUS" | "LANMAN1" | "LANMAN2" | "NT1" => {
            Err(format!("{value} is SMB1, which smb3d does not speak"))
        }
        _ => Dialect::parse(&upper)
            .map(Some)
            .ok_or_else(|| format!("unknown protocol {value:?}")),
    }
}

/// `server signing`, with Samba's spellings of each setting.
fn parse_signing(value: &str) -> Option<SigningPolicy> {
    match value.trim().to_ascii_lowercase().as_str() {
        "default" | "auto" | "no" | "false" | "0" | "off" | "disabled" | "if_required" | "yes"
        | "true" | "1" | "on" | "enabled" | "desired" => Some(SigningPolicy::Auto),
        "required" | "mandatory" | "force" | "forced" | "enforced" => Some(SigningPolicy::Required),
        _ => None,
    }
}

/// `server smb encrypt`: off, if_required (the default), desired, required, and synonyms.
fn parse_encrypt(value: &str) -> Option<EncryptPolicy> {
    match value.trim().to_ascii_lowercase().as_str() {
        "off" | "no" | "false" | "0" | "disabled" => Some(EncryptPolicy::Off),
        "default" | "if_required" | "auto" | "yes" | "true" | "1" | "on" | "enabled" => {
            Some(EncryptPolicy::Auto)
        }
        "desired" => Some(EncryptPolicy::Desired),
        "required" | "mandatory" | "force" | "forced" | "enforced" => Some(EncryptPolicy::Required),
        _ => None,
    }
}

/// One entry of `hosts allow`/`hosts deny` as patterns: `ALL`, an address or network in any
/// of Samba's spellings, or why it cannot be one.
fn samba_host(item: &str) -> Result<Vec<HostPattern>, String> {
    if item.eq_ignore_ascii_case("ALL") {
        return Ok(HostPattern::everything().to_vec());
    }
    // "10.1." is every address starting so: 10.1.0.0/16.
    if let Some(prefix) = item.strip_suffix('.') {
        let octets: Vec<&str> = prefix.split('.').collect();
        if (1..=3).contains(&octets.len()) && octets.iter().all(|o| o.parse::<u8>().is_ok()) {
            let mut address = octets.clone();
            address.resize(4, "0");
            return HostPattern::parse(&format!("{}/{}", address.join("."), 8 * octets.len()))
                .map(|p| vec![p]);
        }
    }
    // "10.0.0.0/255.0.0.0": a netmask for the prefix length.
    if let Some((address, netmask)) = item.split_once('/')
        && let Ok(netmask) = netmask.parse::<Ipv4Addr>()
    {
        let bits = u32::from(netmask);
        if bits.leading_ones() + bits.trailing_zeros() != 32 {
            return Err(format!("has netmask {netmask}, which is not contiguous"));
        }
        return HostPattern::parse(&format!("{address}/{}", bits.leading_ones())).map(|p| vec![p]);
    }
    match HostPattern::parse(item) {
        Ok(pattern) => Ok(vec![pattern]),
        Err(_)
            if item.eq_ignore_ascii_case("LOCAL")
                || item.starts_with('@')
                || (item.contains(|c: char| c.is_ascii_alphabetic()) && !item.contains(':')) =>
        {
            Err("is a host name, domain, netgroup or LOCAL, which smb3d does not match".into())
        }
        Err(why) => Err(format!("is not an address smb3d takes ({why})")),
    }
}

/// Splits a user list as Samba does: commas and whitespace, double quotes keeping spaces.
fn split_list(value: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in value.chars() {
        match c {
            '"' => quoted = !quoted,
            c if !quoted && (c == ',' || c.is_whitespace()) => {
                if !current.is_empty() {
                    items.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        items.push(current);
    }
    items
}

impl Converter {
    fn warn(&mut self, section: &Section, param: Option<&Param>, message: String) {
        let (file, line) = match param {
            Some(p) => (p.file.clone(), p.line),
            None => (section.file.clone(), section.line),
        };
        self.warnings.push(Warning {
            file,
            line,
            section: section.name.clone(),
            message,
        });
    }

    fn warn_value(&mut self, section: &Section, p: &Param, why: &str) {
        self.warn(
            section,
            Some(p),
            format!("{} = {}: {why}; ignored", p.name, p.value),
        );
    }

    fn unmapped(&mut self, section: &Section, p: &Param) {
        let reason = unmapped_reason(&p.key);
        self.warn(
            section,
            Some(p),
            format!("{} = {}: {reason}", p.name, p.value),
        );
    }

    fn bool_param(&mut self, section: &Section, p: &Param) -> Option<bool> {
        let value = parse_bool(&p.value);
        if value.is_none() {
            self.warn_value(section, p, "not a yes/no value");
        }
        value
    }

    /// An octal permission mask such as `0644`.
    fn mode_param(&mut self, section: &Section, p: &Param) -> Option<u32> {
        let value = u32::from_str_radix(p.value.trim(), 8)
            .ok()
            .filter(|m| *m <= 0o7777);
        if value.is_none() {
            self.warn_value(section, p, "not an octal permission mask");
        }
        value
    }

    /// Maps `[global]`; returns the share parameters it sets for every share.
    fn global(&mut self, section: &Section) -> ShareParams {
        let mut defaults = ShareParams::default();
        let mut ports: Option<(Vec<u16>, Param)> = None;
        let mut interfaces: Option<Param> = None;
        let mut bind_only = false;
        let mut min: Option<(Dialect, Param)> = None;
        let mut max: Option<(Dialect, Param)> = None;
        let mut io_limit: Option<u32> = None;
        for p in &section.params {
            match p.key.as_str() {
                "netbiosname" => {
                    let name = p.value.to_ascii_uppercase();
                    match check_server_name(&name) {
                        Ok(()) => self.server.server_name = name,
                        Err(_) => {
                            self.warn_value(section, p, "smb3d needs 1-15 letters, digits or '-'")
                        }
                    }
                }
                "clustering" => {
                    if self.bool_param(section, p) == Some(true) {
                        let (cluster, notes) = crate::cluster::from_ctdb(&self.ctdb_dir);
                        self.cluster = Some(cluster);
                        for note in notes {
                            self.warn(
                                section,
                                Some(p),
                                format!("{} = {}: {note}", p.name, p.value),
                            );
                        }
                    }
                }
                "workgroup" => {
                    if p.value.is_empty() {
                        self.warn_value(section, p, "empty");
                    } else {
                        self.server.workgroup = p.value.to_ascii_uppercase();
                    }
                }
                "serverminprotocol" | "minprotocol" => match parse_dialect(&p.value) {
                    Ok(Some(d)) => min = Some((d, p.clone())),
                    Ok(None) => {}
                    Err(why) if why.contains("SMB1") => self.warn(
                        section,
                        Some(p),
                        format!(
                            "{} = {}: smb3d speaks SMB 2.0.2 and later only; min_dialect is 2.0.2",
                            p.name, p.value
                        ),
                    ),
                    Err(why) => self.warn_value(section, p, &why),
                },
                "servermaxprotocol" | "maxprotocol" | "protocol" => match parse_dialect(&p.value) {
                    Ok(Some(d)) => max = Some((d, p.clone())),
                    Ok(None) => {}
                    Err(why) => self.warn_value(section, p, &why),
                },
                "serversigning" => match parse_signing(&p.value) {
                    Some(policy) => self.server.signing = policy,
                    None => self.warn_value(section, p, "unknown signing setting"),
                },
                "serversmbencrypt" | "smbencrypt" => match parse_encrypt(&p.value) {
                    Some(policy) => self.server.encrypt = policy,
                    None => self.warn_value(section, p, "unknown encryption setting"),
                },
                "servermultichannelsupport" => {
                    self.server.multichannel = self
                        .bool_param(section, p)
                        .unwrap_or(self.server.multichannel);
                }
                "smb3directoryleases" => {
                    self.server.directory_leases = self
                        .bool_param(section, p)
                        .unwrap_or(self.server.directory_leases);
                }
                "smbports" => ports = Some((self.ports(section, p), p.clone())),
                "interfaces" => interfaces = Some(p.clone()),
                "bindinterfacesonly" => bind_only = self.bool_param(section, p).unwrap_or(false),
                // Minutes without activity before an idle connection closes; 0 is never.
                "deadtime" => match p.value.parse::<u64>() {
                    Ok(minutes) => {
                        self.limits.idle_timeout =
                            Interval(std::time::Duration::from_secs(minutes.saturating_mul(60)));
                    }
                    Err(_) => self.warn_value(section, p, "not a number of minutes"),
                },
                "smb2maxcredits" => match p.value.parse::<u32>() {
                    Ok(n) if (1..=65535).contains(&n) => {
                        self.limits.max_credits = Spanned::new(0..0, n);
                    }
                    _ => self.warn_value(section, p, "not a number of credits from 1 to 65535"),
                },
                "smb2maxread" | "smb2maxwrite" | "smb2maxtrans" => match p.value.parse::<u32>() {
                    Ok(n) => io_limit = Some(io_limit.map_or(n, |m| m.min(n))),
                    Err(_) => self.warn_value(section, p, "not a number of bytes"),
                },
                "hostsallow" | "allowhosts" => {
                    if let Some(hosts) = self.host_list(section, p, "hosts_allow") {
                        self.server.hosts_allow = hosts;
                    }
                }
                "hostsdeny" | "denyhosts" => {
                    if let Some(hosts) = self.host_list(section, p, "hosts_deny") {
                        self.server.hosts_deny = hosts;
                    }
                }
                "guestaccount" => {
                    if let Some(account) = self.account(section, p) {
                        self.server.guest_account = Some(account);
                    }
                }
                "maptoguest" => match p.value.trim().to_ascii_lowercase().as_str() {
                    "never" => self.server.map_to_guest = MapToGuest::Never,
                    "bad user" => self.server.map_to_guest = MapToGuest::BadUser,
                    _ => self.warn_value(
                        section,
                        p,
                        "smb3d maps only `never` and `bad user`; unknown users and wrong \
                         passwords are refused",
                    ),
                },
                "passdbbackend" => self.warn(
                    section,
                    Some(p),
                    format!(
                        "{} = {}: smb3d has its own user database; copy the users with \
                         `pdbedit -L -w | smb3d user import`",
                        p.name, p.value
                    ),
                ),
                "security" if p.value.eq_ignore_ascii_case("user") => {}
                "serverrole"
                    if ["standalone", "standalone server", "auto"]
                        .iter()
                        .any(|r| p.value.eq_ignore_ascii_case(r)) => {}
                _ => {
                    if !self.share_param(section, p, &mut defaults) {
                        self.unmapped(section, p);
                    }
                }
            }
        }
        match (min, max) {
            (Some((lo, lp)), Some((hi, _))) if lo > hi => self.warn(
                section,
                Some(&lp),
                format!(
                    "minimum protocol {} is above the maximum {}; both left at smb3d's defaults",
                    lo.as_str(),
                    hi.as_str()
                ),
            ),
            (min, max) => {
                if let Some((d, _)) = min {
                    self.server.min_dialect = Spanned::new(0..0, d);
                }
                if let Some((d, p)) = max {
                    if d < *self.server.min_dialect.get_ref() {
                        self.warn_value(section, &p, "below the minimum protocol");
                    } else {
                        self.server.max_dialect = Spanned::new(0..0, d);
                    }
                }
            }
        }
        if let Some(limit) = io_limit {
            let clamped = limit.clamp(MIN_IO_SIZE, MAX_IO_SIZE);
            if clamped != limit {
                self.warn(
                    section,
                    None,
                    format!(
                        "smb2 max read/write/trans of {limit} is outside smb3d's range; \
                         max_io_size is {clamped}"
                    ),
                );
            }
            self.server.max_io_size = Spanned::new(0..0, clamped);
        }
        self.server.listen = self.listen(section, ports, interfaces, bind_only);
        defaults
    }

    /// `smb ports`: 139 is NetBIOS session service, which smb3d does not speak.
    fn ports(&mut self, section: &Section, p: &Param) -> Vec<u16> {
        let mut ports = Vec::new();
        for item in split_list(&p.value) {
            match item.parse::<u16>() {
                Ok(139) => self.warn(
                    section,
                    Some(p),
                    format!(
                        "{} = {}: port 139 (NetBIOS session service) is not supported; not listened on",
                        p.name, p.value
                    ),
                ),
                Ok(port) if port != 0 => ports.push(port),
                _ => self.warn(
                    section,
                    Some(p),
                    format!("{} = {}: {item:?} is not a port; ignored", p.name, p.value),
                ),
            }
        }
        ports
    }

    /// Samba listens on every address unless `bind interfaces only` restricts it to
    /// `interfaces`; interfaces given by address map, names other than `lo` cannot be resolved
    /// here.
    fn listen(
        &mut self,
        section: &Section,
        ports: Option<(Vec<u16>, Param)>,
        interfaces: Option<Param>,
        bind_only: bool,
    ) -> Vec<SocketAddr> {
        let ports = match ports {
            Some((ports, p)) if ports.is_empty() => {
                self.warn_value(section, &p, "names no port smb3d can use; using 445");
                vec![DEFAULT_PORT]
            }
            Some((ports, _)) => ports,
            None => vec![DEFAULT_PORT],
        };
        let mut addrs: Vec<IpAddr> = Vec::new();
        match interfaces {
            Some(p) if bind_only => {
                for item in split_list(&p.value) {
                    let item = item.split(';').next().unwrap_or_default();
                    let host = item.split('/').next().unwrap_or_default();
                    let found = if let Ok(ip) = host.parse::<IpAddr>() {
                        vec![ip]
                    } else if host == "lo" {
                        vec![
                            IpAddr::V4(Ipv4Addr::LOCALHOST),
                            IpAddr::V6(Ipv6Addr::LOCALHOST),
                        ]
                    } else {
                        Vec::new()
                    };
                    for ip in &found {
                        if !addrs.contains(ip) {
                            addrs.push(*ip);
                        }
                    }
                    if found.is_empty() {
                        self.warn(
                            section,
                            Some(&p),
                            format!(
                                "{} = {}: interface {host:?} is not an address; add its addresses \
                                 to listen by hand",
                                p.name, p.value
                            ),
                        );
                    }
                }
                if addrs.is_empty() {
                    self.warn(
                        section,
                        Some(&p),
                        "no interface address could be used; listening on every address".into(),
                    );
                }
            }
            Some(p) => self.warn(
                section,
                Some(&p),
                format!(
                    "{} = {}: without `bind interfaces only = yes` Samba listens on every \
                     address; so does the converted configuration (0.0.0.0 and ::)",
                    p.name, p.value
                ),
            ),
            None => {}
        }
        if addrs.is_empty() {
            // Every address of both families, as Samba listens by default.
            addrs.push(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
            addrs.push(IpAddr::V6(Ipv6Addr::UNSPECIFIED));
        }
        let mut listen = Vec::new();
        for ip in &addrs {
            for port in &ports {
                listen.push(SocketAddr::new(*ip, *port));
            }
        }
        listen
    }

    /// Applies a share-level parameter to `out`; false when it is not one smb3d maps.
    fn share_param(&mut self, section: &Section, p: &Param, out: &mut ShareParams) -> bool {
        match p.key.as_str() {
            "path" | "directory" => out.path = Some(p.value.clone()),
            "comment" => out.comment = Some(p.value.clone()),
            "readonly" => out.read_only = self.bool_param(section, p).or(out.read_only),
            "writeable" | "writable" | "writeok" => {
                out.read_only = self.bool_param(section, p).map(|w| !w).or(out.read_only);
            }
            "guestok" | "public" => out.guest_ok = self.bool_param(section, p).or(out.guest_ok),
            "browseable" | "browsable" => {
                out.browseable = self.bool_param(section, p).or(out.browseable);
            }
            "available" => out.available = self.bool_param(section, p).or(out.available),
            "printable" | "printok" => {
                out.printable = self.bool_param(section, p).or(out.printable);
            }
            "validusers" => out.valid_users = Some(self.user_list(section, p)),
            "readlist" => out.read_list = Some(self.user_list(section, p).0),
            "invalidusers" => out.invalid_users = Some(self.user_list(section, p).0),
            "adminusers" => out.admin_users = Some(self.user_list(section, p).0),
            "hostsallow" | "allowhosts" => {
                out.hosts_allow = self
                    .host_list(section, p, "hosts_allow")
                    .or(out.hosts_allow.take());
            }
            "hostsdeny" | "denyhosts" => {
                out.hosts_deny = self
                    .host_list(section, p, "hosts_deny")
                    .or(out.hosts_deny.take());
            }
            "writelist" => out.write_list = Some(self.user_list(section, p).0),
            "forceuser" => out.force_user = self.account(section, p).or(out.force_user.take()),
            "forcegroup" => {
                out.force_group = self.account(section, p).or(out.force_group.take());
            }
            "hideunreadable" => {
                out.hide_unreadable = self.bool_param(section, p).or(out.hide_unreadable);
            }
            "accessbasedshareenum" => {
                out.access_based_share_enum =
                    self.bool_param(section, p).or(out.access_based_share_enum);
            }
            "smbencrypt" | "serversmbencrypt" => match parse_encrypt(&p.value) {
                Some(policy) => out.encrypt = Some(policy),
                None => self.warn_value(section, p, "unknown encryption setting"),
            },
            "vfsobjects" | "vfsobject" => {
                out.recycle.on = Some(split_list(&p.value).iter().any(|m| m == "recycle"));
                out.fruit.on = Some(split_list(&p.value).iter().any(|m| m == "fruit"));
                out.acl_xattr = Some(split_list(&p.value).iter().any(|m| m == "acl_xattr"));
                out.shadow.on = Some(split_list(&p.value).iter().any(|m| m == "shadow_copy2"));
                out.streams = Some(self.vfs_objects(section, p));
            }
            "createmask" | "createmode" => {
                out.create_mask = self.mode_param(section, p).or(out.create_mask);
            }
            "directorymask" | "directorymode" => {
                out.directory_mask = self.mode_param(section, p).or(out.directory_mask);
            }
            "forcecreatemode" => {
                out.force_create_mode = self.mode_param(section, p).or(out.force_create_mode);
            }
            "forcedirectorymode" => {
                out.force_directory_mode = self.mode_param(section, p).or(out.force_directory_mode);
            }
            "inheritowner" => match p.value.trim().to_ascii_lowercase().as_str() {
                "no" | "false" | "0" => out.inherit_owner = Some(InheritOwner::No),
                "yes" | "true" | "1" | "windows and unix" => {
                    out.inherit_owner = Some(InheritOwner::WindowsAndUnix);
                }
                "unix only" => out.inherit_owner = Some(InheritOwner::UnixOnly),
                _ => self.warn_value(section, p, "not one of no, windows and unix, unix only"),
            },
            "inheritpermissions" => {
                out.inherit_permissions = self.bool_param(section, p).or(out.inherit_permissions);
            }
            "strictallocate" => {
                out.strict_allocate = self.bool_param(section, p).or(out.strict_allocate);
            }
            "allocationroundupsize" => {
                match p
                    .value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|v| *v <= MAX_ALLOCATION_ROUNDUP)
                {
                    Some(size) => out.allocation_roundup_size = Some(size),
                    None => self.warn_value(section, p, "not a size in bytes up to 1 GiB"),
                }
            }
            "storedosattributes" => {
                out.store_dos_attributes = self.bool_param(section, p).or(out.store_dos_attributes);
            }
            "easupport" => out.ea_support = self.bool_param(section, p).or(out.ea_support),
            "hidedotfiles" => {
                out.hide_dot_files = self.bool_param(section, p).or(out.hide_dot_files)
            }
            "hidefiles" => out.hide_files = Some(self.hide_files(section, p)),
            "vetofiles" => out.veto_files = Some(self.hide_files(section, p)),
            "deletevetofiles" => {
                out.delete_veto_files = self.bool_param(section, p).or(out.delete_veto_files);
            }
            "oplocks" => out.oplocks = self.bool_param(section, p).or(out.oplocks),
            "manglednames" => match p.value.trim().to_ascii_lowercase().as_str() {
                "illegal" => {
                    out.short_names = Some(false);
                    self.warn_value(
                        section,
                        p,
                        "smb3d has no short names for just the names with characters Windows                          cannot use; short_names stays off (true gives every long name one)",
                    );
                }
                _ => out.short_names = self.bool_param(section, p).or(out.short_names),
            },
            "vetooplockfiles" => out.veto_oplock_files = Some(self.hide_files(section, p)),
            "posixlocking" => out.posix_locking = self.bool_param(section, p).or(out.posix_locking),
            "kernelsharemodes" => {
                if self.bool_param(section, p) == Some(true) {
                    self.warn_value(
                        section,
                        p,
                        "not possible on Linux: share modes that local processes must respect \
                         needed flock's LOCK_MAND, which Linux 5.15 removed, and nothing replaced \
                         it; smb3d keeps share modes among SMB clients only (as Samba does with \
                         its default, no)",
                    );
                }
            }
            "kerneloplocks" => {
                out.kernel_oplocks = self.bool_param(section, p).or(out.kernel_oplocks)
            }
            "smb3sharecap:scaleout" => {
                out.scale_out = self.bool_param(section, p).or(out.scale_out)
            }
            "smb3unixextensions" => {
                out.smb3_unix_extensions = self.bool_param(section, p).or(out.smb3_unix_extensions);
            }
            _ if p.key.starts_with("fruit:") => {
                return self.fruit_param(section, p, &mut out.fruit);
            }
            key if key.starts_with("shadow:") => {
                return self.shadow_param(section, p, &mut out.shadow);
            }
            _ => return self.recycle_param(section, p, &mut out.recycle),
        }
        true
    }

    /// Applies a `fruit:*` parameter (vfs_fruit's); false when it is not one smb3d maps.
    /// smb3d keeps Finder info and resource forks where vfs_fruit's defaults keep them
    /// (`fruit:metadata = netatalk`, `fruit:resource = file`): those values say what smb3d
    /// does, others are warned of.
    fn fruit_param(&mut self, section: &Section, p: &Param, out: &mut FruitParams) -> bool {
        let value = p.value.trim();
        match p.key.as_str() {
            "fruit:metadata" if value.eq_ignore_ascii_case("netatalk") => {}
            "fruit:resource" if value.eq_ignore_ascii_case("file") => {}
            "fruit:model" => match crate::model::check_mdns_model(&p.value) {
                Ok(()) => out.model = Some(p.value.clone()),
                Err(_) => self.warn_value(section, p, "not a model name"),
            },
            "fruit:timemachine" => {
                out.time_machine = self.bool_param(section, p).or(out.time_machine);
            }
            "fruit:veto_appledouble" => {
                out.veto_appledouble = self.bool_param(section, p).or(out.veto_appledouble);
            }
            "fruit:wipe_intentionally_left_blank_rfork" => {
                out.wipe_blank_rfork = self.bool_param(section, p).or(out.wipe_blank_rfork);
            }
            "fruit:zero_file_id" => {
                out.zero_file_id = self.bool_param(section, p).or(out.zero_file_id);
            }
            "fruit:delete_empty_adfiles" => {
                out.delete_empty_adfiles = self.bool_param(section, p).or(out.delete_empty_adfiles);
            }
            "fruit:timemachinemaxsize" => match crate::model::parse_byte_size(&p.value) {
                Some(size) => out.time_machine_max_size = Some(size),
                None => self.warn_value(section, p, "not a size"),
            },
            _ => return false,
        }
        true
    }

    /// Applies a `shadow:*` parameter (vfs_shadow_copy2's). smb3d reads one layout: a
    /// parameter that names another turns the share's snapshots off, with a warning; false for
    /// parameters not mapped at all.
    fn shadow_param(&mut self, section: &Section, p: &Param, out: &mut ShadowParams) -> bool {
        let value = p.value.trim();
        let fits = match p.key.as_str() {
            "shadow:snapdir" => matches!(value, ".snapshots" | "./.snapshots"),
            "shadow:format" => value == "@GMT-%Y.%m.%d-%H.%M.%S",
            "shadow:localtime" => self.bool_param(section, p) != Some(true),
            // Samba looks for a relative snapdir at the file system's mount point; smb3d at
            // the share's path, where Samba's selftest points it.
            "shadow:mountpoint" | "shadow:basedir" => {
                self.warn(
                    section,
                    Some(p),
                    format!(
                        "{} = {}: smb3d reads .snapshots under the share's path; check the snapshots are there",
                        p.name, p.value
                    ),
                );
                true
            }
            // smb3d lists newest first (Samba's default) and keeps snapshot files apart from
            // the share's in its own tables, which is what fixinodes is for.
            "shadow:sort" | "shadow:fixinodes" => true,
            "shadow:snapdirseverywhere" | "shadow:crossmountpoints" => {
                self.bool_param(section, p) != Some(true)
            }
            "shadow:snapsharepath" | "shadow:snapprefix" | "shadow:delimiter" => false,
            _ => return false,
        };
        if !fits {
            out.other_layout = true;
            self.warn(
                section,
                Some(p),
                format!(
                    "{} = {}: smb3d reads snapshots only as .snapshots/@GMT-YYYY.MM.DD-hh.mm.ss in UTC under the share; snapshots not served",
                    p.name, p.value
                ),
            );
        }
        true
    }

    /// Applies a `recycle:*` parameter (vfs_recycle's); false when it is not one smb3d maps
    /// (`touch_mtime`, `minsize`, `subdir_mode`).
    fn recycle_param(&mut self, section: &Section, p: &Param, out: &mut RecycleParams) -> bool {
        let list = || Some(split_list(&p.value));
        match p.key.as_str() {
            "recycle:repository" => match check_recycle_repository(&p.value) {
                Ok(()) => out.repository = Some(p.value.clone()),
                Err(why) => {
                    // Samba would keep files somewhere; smb3d cannot keep them there.
                    self.warn_value(section, p, &format!("{why}; the recycle bin is off"));
                    out.on = Some(false);
                    out.repository = Some(String::new());
                }
            },
            "recycle:keeptree" => out.keeptree = self.bool_param(section, p).or(out.keeptree),
            "recycle:versions" => out.versions = self.bool_param(section, p).or(out.versions),
            "recycle:touch" => out.touch = self.bool_param(section, p).or(out.touch),
            "recycle:exclude" => out.exclude = list(),
            "recycle:exclude_dir" => out.exclude_dir = list(),
            "recycle:noversions" => out.noversions = list(),
            "recycle:maxsize" => match p.value.trim().parse() {
                Ok(size) => out.maxsize = Some(size),
                Err(_) => self.warn_value(section, p, "not a size in bytes"),
            },
            "recycle:directory_mode" => {
                out.directory_mode = self.mode_param(section, p).or(out.directory_mode);
            }
            _ => return false,
        }
        true
    }

    /// A user list (`valid users`, `read list`, `write list`): user names, and Unix groups
    /// (`@group`, `+group`, `+&group` and `&+group`) as `@group`; NIS netgroups (`&group`) and
    /// substitutions are warned about and left out. The flag says whether something was left
    /// out.
    fn user_list(&mut self, section: &Section, p: &Param) -> (Vec<String>, bool) {
        let mut users = Vec::new();
        let mut dropped = false;
        let option = p.name.to_ascii_lowercase();
        for item in split_list(&p.value) {
            let group = ["+&", "&+", "@", "+"]
                .iter()
                .find_map(|prefix| item.strip_prefix(prefix));
            // In [homes], %S and %U are the home's owner, which smb3d replaces.
            let owner = is_homes(&section.name) && (item == "%S" || item == "%U");
            let problem = if item.contains('%') && !owner {
                Some(format!("substitution {item} is not supported"))
            } else if group.is_none() && item.starts_with('&') {
                Some(format!(
                    "NIS netgroup {item} is not supported; list its members by name"
                ))
            } else if item.contains(':') || group.is_some_and(str::is_empty) {
                Some(format!("{item:?} is not a name smb3d accepts"))
            } else {
                None
            };
            match (problem, group) {
                (Some(problem), _) => {
                    self.warn(section, Some(p), format!("{option}: {problem}"));
                    dropped = true;
                }
                (None, Some(group)) => users.push(format!("@{group}")),
                (None, None) => users.push(item),
            }
        }
        (users, dropped)
    }

    /// `hosts allow` or `hosts deny` as address patterns: addresses, networks (`10.0.0.0/8`,
    /// `10.0.0.0/255.0.0.0`, Samba's `10.1.` prefixes), IPv6, and `ALL`. Host names, domains,
    /// netgroups and `LOCAL` are warned about and left out; a list with `EXCEPT` is not mapped
    /// at all, since leaving out either side would change whom it admits.
    fn host_list(
        &mut self,
        section: &Section,
        p: &Param,
        option: &str,
    ) -> Option<Vec<HostPattern>> {
        let deny = option == "hosts_deny";
        let items = split_list(&p.value);
        if items.iter().any(|i| i.eq_ignore_ascii_case("EXCEPT")) {
            self.warn_value(
                section,
                p,
                "EXCEPT lists are not supported; list the networks without the exceptions by hand",
            );
            return None;
        }
        let mut hosts = Vec::new();
        for item in &items {
            match samba_host(item) {
                Ok(patterns) => hosts.extend(patterns),
                Err(why) => self.warn(
                    section,
                    Some(p),
                    format!(
                        "{}: {item:?} {why}; left out, so {}",
                        p.name,
                        if deny {
                            "clients there are NOT refused"
                        } else {
                            "clients there are not admitted by this entry"
                        }
                    ),
                ),
            }
        }
        Some(hosts)
    }

    /// The account of `force user` or `force group` (a leading `+` of `force group`, "only if
    /// the user is a member", is not kept: the group is always forced).
    fn account(&mut self, section: &Section, p: &Param) -> Option<String> {
        let name = p.value.trim();
        let name = name.strip_prefix('+').unwrap_or(name);
        if name.is_empty() || name.contains(['%', ':']) {
            self.warn_value(section, p, "not a Unix account name smb3d accepts");
            return None;
        }
        if p.value.trim().starts_with('+') {
            self.warn(
                section,
                Some(p),
                format!(
                    "force group: the group {name} is forced on every user, not only on its members"
                ),
            );
        }
        Some(name.to_owned())
    }

    /// The patterns of `hide files = /a/b*/` (or `veto files`); substitutions are warned about
    /// and left out.
    fn hide_files(&mut self, section: &Section, p: &Param) -> Vec<String> {
        let mut patterns = Vec::new();
        for pattern in p.value.split('/').filter(|s| !s.is_empty()) {
            if pattern.contains('%') {
                self.warn(
                    section,
                    Some(p),
                    format!(
                        "{}: substitution {pattern} is not supported; left out",
                        p.name
                    ),
                );
            } else {
                patterns.push(pattern.to_owned());
            }
        }
        patterns
    }

    /// acl_xattr and streams_xattr store what smb3d stores natively, in the same format.
    /// Returns whether the modules give the share named streams.
    fn vfs_objects(&mut self, section: &Section, p: &Param) -> bool {
        let modules = split_list(&p.value);
        for module in &modules {
            if !matches!(
                module.as_str(),
                "acl_xattr" | "streams_xattr" | "recycle" | "fruit" | "shadow_copy2"
            ) {
                self.warn(
                    section,
                    Some(p),
                    format!("vfs objects: module {module} has no smb3d equivalent; not mapped"),
                );
            }
        }
        modules
            .iter()
            .any(|m| m == "streams_xattr" || m == "streams_depot")
    }

    fn skip(&mut self, section: &Section, why: &str) {
        let names: Vec<&str> = section.params.iter().map(|p| p.name.as_str()).collect();
        let listed = if names.is_empty() {
            String::new()
        } else {
            format!(" (parameters not imported: {})", names.join(", "))
        };
        self.warn(section, None, format!("share skipped: {why}{listed}"));
    }

    /// Maps a share section; None (with a warning) when it cannot be a share here.
    fn share(&mut self, section: &Section, defaults: &ShareParams) -> Option<ShareConfig> {
        if section.name.eq_ignore_ascii_case("printers") {
            self.skip(section, "smb3d serves no printers");
            return None;
        }
        let mut params = defaults.clone();
        let mut unmapped = Vec::new();
        for p in &section.params {
            if !self.share_param(section, p, &mut params) {
                unmapped.push(p);
            }
        }
        if params.printable == Some(true) {
            self.skip(section, "a printer share; smb3d serves no printers");
            return None;
        }
        if section.name.eq_ignore_ascii_case("print$") {
            self.warn(
                section,
                None,
                "imported as a plain file share of the printer drivers it holds; smb3d serves \
                 no printers, so clients install no drivers from it (Point and Print)"
                    .into(),
            );
        }
        if params.available == Some(false) {
            self.skip(section, "available = no");
            return None;
        }
        if let Err(why) = check_share_name(&section.name) {
            self.skip(section, &why);
            return None;
        }
        let streams = params.streams.unwrap_or(false);
        let homes = is_homes(&section.name);
        // Samba's [homes] without a path serves each user's passwd home directory.
        let Some(path) = params.path.or_else(|| homes.then(|| "%H".to_owned())) else {
            self.skip(section, "it has no path");
            return None;
        };
        let path = match self.path_substitution(&section.name, &path) {
            Ok(path) => path,
            Err(dynamic) => {
                let only = if homes {
                    "a home path takes only %U, %u, %S, %G, %g and %H, which name its owner"
                } else {
                    "smb3d makes per-user paths only in [homes]"
                };
                self.skip(
                    section,
                    &format!(
                        "path {path} uses {dynamic}, which changes with each connection; {only}"
                    ),
                );
                return None;
            }
        };
        if !homes && !path.starts_with('/') {
            self.skip(section, &format!("path {path} is not absolute"));
            return None;
        }
        let valid_users = match params.valid_users {
            Some((users, true)) if users.is_empty() => {
                // Dropping the groups would open the share to every user.
                self.skip(
                    section,
                    "valid users names only groups or substitutions, and leaving them out would \
                     admit every user",
                );
                return None;
            }
            Some((users, _)) => users,
            None => Vec::new(),
        };
        for p in unmapped {
            self.unmapped(section, p);
        }
        let mut share = ShareConfig::new(PathBuf::from(path));
        share.comment = params.comment.unwrap_or_default();
        // Samba's defaults: read only, browseable, no guests.
        share.read_only = params.read_only.unwrap_or(true);
        share.valid_users = valid_users;
        share.read_list = params.read_list.unwrap_or_default();
        share.write_list = params.write_list.unwrap_or_default();
        share.invalid_users = params.invalid_users.unwrap_or_default();
        share.admin_users = params.admin_users.unwrap_or_default();
        share.hosts_allow = params.hosts_allow.unwrap_or_default();
        share.hosts_deny = params.hosts_deny.unwrap_or_default();
        share.force_user = params.force_user;
        share.force_group = params.force_group;
        share.hide_unreadable = params.hide_unreadable.unwrap_or(false);
        share.access_based_share_enum = params.access_based_share_enum.unwrap_or(false);
        share.browseable = params.browseable.unwrap_or(true);
        share.guest_ok = params.guest_ok.unwrap_or(false);
        share.encrypt = params.encrypt;
        share.create_mask = params.create_mask.unwrap_or(DEFAULT_CREATE_MASK);
        share.directory_mask = params.directory_mask.unwrap_or(DEFAULT_DIRECTORY_MASK);
        share.force_create_mode = params.force_create_mode.unwrap_or(0);
        share.force_directory_mode = params.force_directory_mode.unwrap_or(0);
        share.inherit_permissions = params.inherit_permissions.unwrap_or(false);
        share.inherit_acls = params.acl_xattr.unwrap_or(false);
        share.inherit_owner = params.inherit_owner.unwrap_or_default();
        // Samba's default: no (smb3d's own is yes, so it is written out).
        share.strict_allocate = params.strict_allocate.unwrap_or(false);
        share.allocation_roundup_size = params.allocation_roundup_size.unwrap_or(0);
        share.hide_dot_files = params.hide_dot_files.unwrap_or(true);
        share.hide_files = params.hide_files.unwrap_or_default();
        share.veto_files = params.veto_files.unwrap_or_default();
        share.delete_veto_files = params.delete_veto_files.unwrap_or(false);
        share.oplocks = params.oplocks.unwrap_or(true);
        share.veto_oplock_files = params.veto_oplock_files.unwrap_or_default();
        share.posix_locking = params.posix_locking.unwrap_or(true);
        share.kernel_oplocks = params.kernel_oplocks.unwrap_or(false);
        share.scale_out = params.scale_out;
        share.short_names = params.short_names.unwrap_or(false);
        share.posix = params.smb3_unix_extensions.unwrap_or(false);
        share.store_dos_attributes = params.store_dos_attributes.unwrap_or(true);
        share.ea_support = params.ea_support.unwrap_or(true);
        apply_recycle(&mut share, params.recycle);
        apply_fruit(&mut share, params.fruit);
        // vfs_fruit serves AFP_AfpInfo and AFP_Resource as streams whatever else is loaded.
        share.streams_xattr = streams || share.apple;
        share.snapshots = (params.shadow.on == Some(true) && !params.shadow.other_layout)
            .then_some(SnapshotSource::Directory);
        Some(share)
    }

    /// `path` with the substitutions that are the same for every connection replaced: %S (the
    /// share's name), %L (the server's NetBIOS name), %% (a percent sign). In [homes], those
    /// naming the home's owner (%U, %u, %S, %G, %g, %H) are kept for smb3d to replace at each
    /// user's first connect. The first other one (%U, %m, %t, ...) is the error: those change
    /// with each connection.
    fn path_substitution(&self, share: &str, path: &str) -> Result<String, String> {
        let homes = is_homes(share);
        let mut out = String::with_capacity(path.len());
        let mut chars = path.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some(owner @ ('U' | 'u' | 'S' | 'G' | 'g' | 'H')) if homes => {
                    out.push('%');
                    out.push(owner);
                }
                Some('%') if homes => out.push_str("%%"),
                Some('S') => out.push_str(share),
                Some('L') => out.push_str(&self.server.server_name),
                Some('%') => out.push('%'),
                Some(other) => return Err(format!("the substitution %{other}")),
                None => return Err("a lone %".into()),
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert_text(text: &str) -> Imported {
        let path = Path::new("/etc/samba/smb.conf");
        convert(path, SmbConf::parse(path, text).unwrap()).unwrap()
    }

    fn messages(imported: &Imported) -> Vec<String> {
        imported.warnings.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn global_parameters_map() {
        let i = convert_text(
            "[global]\nnetbios name = nas1\nworkgroup = home\nserver min protocol = SMB2\n\
             server max protocol = SMB3_02\nserver signing = mandatory\nserver smb encrypt = desired\n\
             smb ports = 4445 139\ninterfaces = 127.0.0.1/8 lo eth0 ::1\nbind interfaces only = yes\n\
             smb2 max read = 1048576\nsmb2 max write = 4194304\nsecurity = USER\n\
             server role = standalone server\ndeadtime = 30\nsmb2 max credits = 512\n\
             server multi channel support = no\n\
             smb3 directory leases = no\n",
        );
        let l = &i.config.limits;
        assert_eq!(
            l.idle_timeout,
            Interval(std::time::Duration::from_secs(1800))
        );
        assert_eq!(*l.max_credits.get_ref(), 512);
        let s = &i.config.server;
        assert_eq!(s.server_name, "NAS1");
        assert_eq!(s.workgroup, "HOME");
        assert_eq!(*s.min_dialect.get_ref(), Dialect::Smb210);
        assert_eq!(*s.max_dialect.get_ref(), Dialect::Smb302);
        assert_eq!(s.signing, SigningPolicy::Required);
        assert_eq!(s.encrypt, EncryptPolicy::Desired);
        assert_eq!(*s.max_io_size.get_ref(), 1 << 20);
        assert!(!s.multichannel);
        assert!(!s.directory_leases);
        let listen: Vec<String> = s.listen.iter().map(ToString::to_string).collect();
        assert_eq!(listen, ["127.0.0.1:4445", "[::1]:4445"]);
        assert_eq!(
            messages(&i),
            [
                "/etc/samba/smb.conf:8: [global]: smb ports = 4445 139: port 139 (NetBIOS session service) is not supported; not listened on",
                "/etc/samba/smb.conf:9: [global]: interfaces = 127.0.0.1/8 lo eth0 ::1: interface \"eth0\" is not an address; add its addresses to listen by hand",
            ]
        );
    }

    #[test]
    fn samba_listens_on_both_families_by_default() {
        let i = convert_text("[global]\nsmb ports = 4445\n");
        let listen: Vec<String> = i
            .config
            .server
            .listen
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(listen, ["0.0.0.0:4445", "[::]:4445"]);
    }

    #[test]
    fn encryption_and_signing_spellings() {
        for (value, policy) in [
            ("off", EncryptPolicy::Off),
            ("disabled", EncryptPolicy::Off),
            ("default", EncryptPolicy::Auto),
            ("if_required", EncryptPolicy::Auto),
            ("enabled", EncryptPolicy::Auto),
            ("desired", EncryptPolicy::Desired),
            ("required", EncryptPolicy::Required),
            ("mandatory", EncryptPolicy::Required),
        ] {
            assert_eq!(parse_encrypt(value), Some(policy), "{value}");
        }
        for (value, policy) in [
            ("auto", SigningPolicy::Auto),
            ("default", SigningPolicy::Auto),
            ("disabled", SigningPolicy::Auto),
            ("required", SigningPolicy::Required),
            ("mandatory", SigningPolicy::Required),
        ] {
            assert_eq!(parse_signing(value), Some(policy), "{value}");
        }
        let i = convert_text("[global]\nsmb encrypt = sometimes\nserver signing = often\n");
        assert_eq!(i.warnings.len(), 2);
        assert_eq!(i.config.server.encrypt, EncryptPolicy::Auto);
    }

    #[test]
    fn protocols_outside_smb2_and_bad_ranges_warn() {
        let i = convert_text("[global]\nmin protocol = NT1\nmax protocol = SMB3\n");
        assert_eq!(*i.config.server.min_dialect.get_ref(), Dialect::Smb202);
        assert_eq!(*i.config.server.max_dialect.get_ref(), Dialect::Smb311);
        assert!(messages(&i)[0].contains("2.0.2 and later only"));
        let i = convert_text(
            "[global]\nserver min protocol = SMB3_11\nserver max protocol = SMB2_10\n",
        );
        assert_eq!(*i.config.server.min_dialect.get_ref(), Dialect::Smb202);
        assert_eq!(*i.config.server.max_dialect.get_ref(), Dialect::Smb311);
        assert!(messages(&i)[0].contains("above the maximum"));
        let i = convert_text("[global]\nserver max protocol = SMB4\n");
        assert!(messages(&i)[0].contains("unknown protocol"));
    }

    #[test]
    fn allocation_and_hiding_map() {
        let i = convert_text(
            "[global]\nhide dot files = no\n\
             [s]\npath = /srv/s\nstrict allocate = no\nallocation roundup size = 1048576\n\
             hide files = /hidefile/*.tmp/Temp%m/\n\
             [t]\npath = /srv/t\nallocation roundup size = lots\n",
        );
        let s = i.config.share("s").unwrap();
        assert!(!s.strict_allocate && !s.hide_dot_files);
        assert_eq!(s.allocation_roundup_size, 1 << 20);
        assert_eq!(s.hide_files, ["hidefile", "*.tmp"]);
        let t = i.config.share("t").unwrap();
        assert!(!t.strict_allocate && !t.hide_dot_files && t.hide_files.is_empty());
        assert_eq!(t.allocation_roundup_size, 0);
        let warnings = messages(&i);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("Temp%m") && warnings[1].contains("lots"),
            "{warnings:?}"
        );
    }

    #[test]
    fn shadow_copy2_maps_to_snapshots() {
        let i = convert_text(
            "[selftest]\npath = /srv/a\nvfs objects = shadow_copy2 acl_xattr\n\
             shadow:snapdir = .snapshots\nshadow:format = @GMT-%Y.%m.%d-%H.%M.%S\n\
             shadow:sort = desc\nshadow:localtime = no\n\
             [defaults]\npath = /srv/b\nvfs objects = shadow_copy2\n\
             [local]\npath = /srv/c\nvfs objects = shadow_copy2\nshadow:localtime = yes\n\
             [snapper]\npath = /srv/d\nvfs objects = shadow_copy2\nshadow:snapdir = .zfs/snapshot\n\
             [none]\npath = /srv/e\nshadow:snapdir = .snapshots\n",
        );
        let snapshots = |name| i.config.share(name).unwrap().snapshots;
        assert_eq!(snapshots("selftest"), Some(SnapshotSource::Directory));
        assert_eq!(snapshots("defaults"), Some(SnapshotSource::Directory));
        assert_eq!(snapshots("local"), None);
        assert_eq!(snapshots("snapper"), None);
        assert_eq!(snapshots("none"), None);
        let warnings = messages(&i);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("localtime") && warnings[1].contains(".zfs/snapshot"),
            "{warnings:?}"
        );
        let rendered = i.config.to_toml();
        assert!(rendered.contains("snapshots = \"directory\""), "{rendered}");
        let again = Config::parse(std::path::Path::new("r.toml"), &rendered).unwrap();
        assert_eq!(
            again.share("selftest").unwrap().snapshots,
            Some(SnapshotSource::Directory)
        );
    }

    #[test]
    fn vetoed_files_are_imported() {
        let i = convert_text(
            "[office]\npath = /srv/office\nveto files = /*.tmp/.DS_Store/\ndelete veto files = yes\n\
             [plain]\npath = /srv/plain\n",
        );
        let office = i.config.share("office").unwrap();
        assert_eq!(office.veto_files, ["*.tmp", ".DS_Store"]);
        assert!(office.delete_veto_files);
        let plain = i.config.share("plain").unwrap();
        assert!(plain.veto_files.is_empty() && !plain.delete_veto_files);
        assert_eq!(messages(&i), Vec::<String>::new());
        let rendered = i.config.to_toml();
        assert!(
            rendered.contains("veto_files = [\"*.tmp\", \".DS_Store\"]\n"),
            "{rendered}"
        );
    }

    /// A printer-driver share is a file share with its access lists; only the note says why
    /// clients will not use it as Samba's.
    #[test]
    fn a_driver_share_is_a_plain_file_share_with_a_note() {
        let i = convert_text(
            "[print$]\npath = /var/lib/samba/printers\nread only = yes\nwrite list = root, @lpadmin\n",
        );
        let drivers = i.config.share("print$").unwrap();
        assert!(drivers.read_only);
        assert_eq!(drivers.write_list, ["root", "@lpadmin"]);
        let warnings = messages(&i);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("[print$]: imported as a plain file share"),
            "{warnings:?}"
        );
    }

    #[test]
    fn recycle_bins_are_imported() {
        let i = convert_text(
            "[global]\nrecycle:exclude = *.tmp\n\
             [office]\npath = /srv/office\nvfs objects = streams_xattr recycle\n\
             recycle:repository = .recycle/%U\nrecycle:keeptree = yes\nrecycle:versions = yes\n\
             recycle:exclude_dir = tmp,cache\nrecycle:maxsize = 1000\nrecycle:directory_mode = 0750\n\
             [bad]\npath = /srv/bad\nvfs objects = streams_xattr recycle\nrecycle:repository = /var/trash\n\
             [off]\npath = /srv/off\nvfs objects = streams_xattr\nrecycle:keeptree = yes\n",
        );
        let office = i.config.share("office").unwrap();
        assert!(office.recycle && office.recycle_keeptree && office.recycle_versions);
        assert_eq!(office.recycle_repository, ".recycle/%U");
        assert_eq!(office.recycle_exclude, ["*.tmp"]);
        assert_eq!(office.recycle_exclude_dir, ["tmp", "cache"]);
        assert_eq!(office.recycle_maxsize, 1000);
        assert_eq!(office.recycle_directory_mode, 0o750);
        assert!(!i.config.share("bad").unwrap().recycle);
        assert!(!i.config.share("off").unwrap().recycle);
        let warnings = messages(&i);
        assert!(
            !warnings.iter().any(|w| w.contains("not mapped")),
            "{warnings:?}"
        );
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("[bad]") && w.contains("the recycle bin is off")),
            "{warnings:?}"
        );
        let rendered = i.config.to_toml();
        assert!(
            rendered.contains("recycle_repository = \".recycle/%U\"\n"),
            "{rendered}"
        );
        assert!(
            rendered.contains("recycle_directory_mode = \"0750\"\n"),
            "{rendered}"
        );
        let back = crate::Config::parse(Path::new("i.toml"), &rendered).unwrap();
        assert_eq!(
            back.share("office").unwrap().recycle_exclude_dir,
            ["tmp", "cache"]
        );
    }

    #[test]
    fn oplock_settings_are_imported() {
        let i = convert_text(
            "[db]\npath = /srv/db\noplocks = no\n\
             [docs]\npath = /srv/docs\nveto oplock files = /*.mdb/*.LDB/\n",
        );
        let db = i.config.share("db").unwrap();
        assert!(!db.oplocks && db.veto_oplock_files.is_empty());
        let docs = i.config.share("docs").unwrap();
        assert!(docs.oplocks);
        assert_eq!(docs.veto_oplock_files, ["*.mdb", "*.LDB"]);
        assert_eq!(messages(&i), Vec::<String>::new());
        let rendered = i.config.to_toml();
        assert!(rendered.contains("oplocks = false\n"), "{rendered}");
        assert!(
            rendered.contains("veto_oplock_files = [\"*.mdb\", \"*.LDB\"]\n"),
            "{rendered}"
        );
    }

    #[test]
    fn fruit_is_imported_as_apple_with_its_time_machine_options() {
        let i = convert_text(
            "[global]\nfruit:model = Xserve\n\
             [mac]\npath = /srv/mac\nvfs objects = catia fruit streams_xattr\nfruit:metadata = netatalk\n\
             fruit:resource = file\n\
             [mac2]\npath = /srv/mac2\nvfs objects = fruit streams_xattr\nfruit:veto_appledouble = no\n\
             fruit:wipe_intentionally_left_blank_rfork = yes\nfruit:delete_empty_adfiles = yes\n\
             fruit:zero_file_id = no\n\
             [tm]\npath = /srv/tm\nvfs objects = fruit streams_xattr\nfruit:time machine = yes\n\
             fruit:resource = stream\nfruit:metadata = stream\n\
             fruit:time machine max size = 2 T\n\
             [bad]\npath = /srv/bad\nvfs objects = fruit streams_xattr\nfruit:time machine max size = lots\n\
             [plain]\npath = /srv/plain\nvfs objects = streams_xattr\nfruit:time machine = yes\n",
        );
        let c = &i.config;
        let mac = c.share("mac").unwrap();
        assert!(mac.apple && !mac.time_machine);
        assert_eq!(mac.apple_model, "Xserve");
        // vfs_fruit vetoes `._` files unless told not to.
        assert!(mac.apple_veto_appledouble);
        let mac2 = c.share("mac2").unwrap();
        assert!(!mac2.apple_veto_appledouble);
        assert!(mac2.apple_wipe_intentionally_left_blank_rfork && mac2.apple_delete_empty_adfiles);
        assert!(!mac.apple_wipe_intentionally_left_blank_rfork && !mac.apple_delete_empty_adfiles);
        assert!(mac.apple_zero_file_id && !mac2.apple_zero_file_id);
        let tm = c.share("tm").unwrap();
        assert!(tm.apple && tm.time_machine);
        assert_eq!(tm.time_machine_max_size, 2 << 40);
        assert_eq!(c.share("bad").unwrap().time_machine_max_size, 0);
        // Without the module, its options do nothing, as in Samba.
        let plain = c.share("plain").unwrap();
        assert!(!plain.apple && !plain.time_machine);
        let warnings = messages(&i);
        assert!(
            warnings.iter().any(|w| w.contains("module catia")),
            "{warnings:?}"
        );
        // smb3d's own formats are vfs_fruit's defaults; other storage is warned of.
        assert!(
            !warnings.iter().any(|w| w.contains("[mac]: fruit:")),
            "{warnings:?}"
        );
        for option in ["fruit:metadata", "fruit:resource"] {
            assert!(
                warnings
                    .iter()
                    .any(|w| w.contains("[tm]") && w.contains(option)),
                "{option}: {warnings:?}"
            );
        }
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("[bad]") && w.contains("not a size")),
            "{warnings:?}"
        );
        let back = crate::Config::parse(Path::new("i.toml"), &c.to_toml()).unwrap();
        assert!(back.share("mac").unwrap().apple_veto_appledouble);
        let mac2 = back.share("mac2").unwrap();
        assert!(!mac2.apple_veto_appledouble && !mac2.apple_zero_file_id);
        assert!(mac2.apple_wipe_intentionally_left_blank_rfork && mac2.apple_delete_empty_adfiles);
        let tm = back.share("tm").unwrap();
        assert!(tm.apple && tm.time_machine);
        assert_eq!(
            (tm.apple_model.as_str(), tm.time_machine_max_size),
            ("Xserve", 2 << 40)
        );
    }

    #[test]
    fn posix_locking_is_imported_with_samba_default() {
        let i = convert_text(
            "[global]\nposix locking = no\n[nfs]\npath = /srv/nfs\n\
             [db]\npath = /srv/db\nposix locking = yes\n",
        );
        assert!(!i.config.share("nfs").unwrap().posix_locking);
        assert!(i.config.share("db").unwrap().posix_locking);
        assert_eq!(messages(&i), Vec::<String>::new());
        let rendered = i.config.to_toml();
        let back = crate::Config::parse(Path::new("i.toml"), &rendered).unwrap();
        assert!(!back.share("nfs").unwrap().posix_locking);
        assert!(back.share("db").unwrap().posix_locking);
        let plain = convert_text("[s]\npath = /srv/s\n");
        assert!(plain.config.share("s").unwrap().posix_locking);
    }

    /// Samba's `smb3 unix extensions` (global in 4.17, per share later) becomes `posix`.
    #[test]
    fn smb3_unix_extensions_become_posix() {
        let i = convert_text(
            "[global]\nsmb3 unix extensions = yes\n[src]\npath = /srv/src\n\
             [win]\npath = /srv/win\nsmb3 unix extensions = no\n",
        );
        assert!(i.config.share("src").unwrap().posix);
        assert!(!i.config.share("win").unwrap().posix);
        assert_eq!(messages(&i), Vec::<String>::new());
        let plain = convert_text("[s]\npath = /srv/s\n");
        assert!(!plain.config.share("s").unwrap().posix);
    }

    /// Issue 21 item 4: a share that keeps no metadata in xattrs imports as one, whether the
    /// parameters are global or the share's, and a render reads back the same.
    #[test]
    fn metadata_outside_xattrs_maps() {
        let i = convert_text(
            "[global]\nea support = no\n\
             [bare]\npath = /srv/bare\nstore dos attributes = no\n\
             [full]\npath = /srv/full\nea support = yes\nvfs objects = acl_xattr streams_xattr\n",
        );
        let bare = i.config.share("bare").unwrap();
        assert!(!bare.store_dos_attributes && !bare.ea_support && !bare.streams_xattr);
        let full = i.config.share("full").unwrap();
        assert!(full.store_dos_attributes && full.ea_support && full.streams_xattr);
        assert_eq!(messages(&i), Vec::<String>::new());
        let back = crate::Config::parse(Path::new("i.toml"), &i.config.to_toml()).unwrap();
        let bare = back.share("bare").unwrap();
        assert!(!bare.store_dos_attributes && !bare.ea_support && !bare.streams_xattr);
        assert!(back.share("full").unwrap().streams_xattr);
    }

    #[test]
    fn mangled_names_map_to_short_names() {
        let i = convert_text(
            "[global]\nmangled names = yes\n\
             [a]\npath = /srv/a\n\
             [b]\npath = /srv/b\nmangled names = no\n\
             [c]\npath = /srv/c\nmangled names = illegal\n",
        );
        let warnings = messages(&i);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("mangled names = illegal"),
            "{warnings:?}"
        );
        let back = crate::Config::parse(Path::new("i.toml"), &i.config.to_toml()).unwrap();
        assert!(back.share("a").unwrap().short_names);
        assert!(!back.share("b").unwrap().short_names);
        assert!(!back.share("c").unwrap().short_names);
        let plain = convert_text("[s]\npath = /srv/s\n");
        assert!(messages(&plain).is_empty());
        assert!(!plain.config.share("s").unwrap().short_names);
    }

    #[test]
    fn smb3_share_cap_scale_out_is_imported_as_scale_out() {
        let i = convert_text(
            "[global]\nsmb3 share cap:SCALE OUT = no\n\
             [s]\npath = /srv/s\n[t]\npath = /srv/t\nsmb3 share cap: scale out = yes\n\
             [u]\npath = /srv/u\n",
        );
        assert!(messages(&i).is_empty(), "{:?}", messages(&i));
        assert_eq!(i.config.share("s").unwrap().scale_out, Some(false));
        assert_eq!(i.config.share("t").unwrap().scale_out, Some(true));
        let back = crate::Config::parse(Path::new("i.toml"), &i.config.to_toml()).unwrap();
        assert_eq!(back.share("s").unwrap().scale_out, Some(false));
        assert!(back.share("t").unwrap().is_scale_out());
        let plain = convert_text("[u]\npath = /srv/u\n");
        assert_eq!(plain.config.share("u").unwrap().scale_out, None);
    }

    #[test]
    fn kernel_share_modes_say_what_smb3d_cannot_do_and_kernel_oplocks_are_imported() {
        let i = convert_text(
            "[global]\nkernel share modes = no\nkernel oplocks = no\n\
             [s]\npath = /srv/s\nkernel share modes = yes\nkernel oplocks = yes\n\
             [t]\npath = /srv/t\n",
        );
        let warnings = messages(&i);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("kernel share modes = yes: not possible on Linux"));
        assert!(warnings[0].contains("LOCK_MAND"));
        assert!(i.config.share("s").unwrap().kernel_oplocks);
        assert!(!i.config.share("t").unwrap().kernel_oplocks);
        let back = crate::Config::parse(Path::new("i.toml"), &i.config.to_toml()).unwrap();
        assert!(back.share("s").unwrap().kernel_oplocks);
        assert!(!back.share("t").unwrap().kernel_oplocks);
    }

    #[test]
    fn forced_modes_and_inherited_permissions_are_imported() {
        let i = convert_text(
            "[global]\nforce create mode = 0604\n\
             [office]\npath = /srv/office\ncreate mask = 0660\nforce directory mode = 2000\n\
             inherit permissions = yes\nvfs objects = acl_xattr streams_xattr\n\
             [plain]\npath = /srv/plain\nforce create mode = 9\n",
        );
        assert!(i.config.share("office").unwrap().inherit_acls);
        let owners = convert_text(
            "[global]\ninherit owner = unix only\n[a]\npath = /a\ninherit owner = yes\n\
             [b]\npath = /b\n[c]\npath = /c\ninherit owner = no\n[d]\npath = /d\ninherit owner = maybe\n",
        );
        let owner = |name| owners.config.share(name).unwrap().inherit_owner;
        assert_eq!(owner("a"), InheritOwner::WindowsAndUnix);
        assert_eq!(owner("b"), InheritOwner::UnixOnly, "a global default");
        assert_eq!(owner("c"), InheritOwner::No);
        assert_eq!(
            owner("d"),
            InheritOwner::UnixOnly,
            "a bad value keeps the default"
        );
        assert!(
            messages(&owners)
                .iter()
                .any(|w| w.contains("inherit owner = maybe"))
        );
        assert!(!i.config.share("plain").unwrap().inherit_acls);
        let office = i.config.share("office").unwrap();
        assert_eq!(
            (office.create_mask, office.force_create_mode),
            (0o660, 0o604)
        );
        assert_eq!(office.force_directory_mode, 0o2000);
        assert!(office.inherit_permissions);
        let plain = i.config.share("plain").unwrap();
        assert_eq!(
            (plain.force_create_mode, plain.force_directory_mode),
            (0o604, 0)
        );
        assert!(!plain.inherit_permissions);
        let warnings = messages(&i);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("force create mode = 9") && warnings[0].contains("not an octal"),
            "{warnings:?}"
        );
        let rendered = i.config.to_toml();
        assert!(
            rendered.contains("force_directory_mode = 0o2000\n"),
            "{rendered}"
        );
    }

    #[test]
    fn shares_map_with_samba_defaults() {
        let i = convert_text(
            "[global]\nread only = no\nguest ok = yes\n\
             [data]\npath = /srv/data\ncomment = Data\nvalid users = alice, \"bob smith\" @staff\n\
             browseable = no\ncreate mask = 0644\ndirectory mode = 2770\nvfs objects = acl_xattr streams_xattr fruit\n\
             smb encrypt = required\n\
             [ro]\npath = /srv/ro\nwriteable = no\npublic = no\n\
             [rw]\ndirectory = /srv/rw\nread only = yes\nwrite ok = yes\n",
        );
        let c = &i.config;
        let data = c.share("data").unwrap();
        assert_eq!(data.path.get_ref(), Path::new("/srv/data"));
        assert_eq!(data.comment, "Data");
        assert!(!data.read_only && data.guest_ok && !data.browseable);
        assert_eq!(data.valid_users, ["alice", "bob smith", "@staff"]);
        assert_eq!(data.encrypt, Some(EncryptPolicy::Required));
        assert_eq!((data.create_mask, data.directory_mask), (0o644, 0o2770));
        let ro = c.share("ro").unwrap();
        assert!(ro.read_only && !ro.guest_ok && ro.browseable);
        assert!(!c.share("rw").unwrap().read_only);
        assert!(data.apple && !data.time_machine);
        assert!(messages(&i).is_empty(), "{:?}", messages(&i));
        let untouched = convert_text("[s]\npath = /s\n");
        let s = untouched.config.share("s").unwrap();
        assert!(s.read_only);
        assert_eq!((s.create_mask, s.directory_mask), (0o744, 0o755));
        let bad = convert_text("[s]\npath = /s\ncreate mask = 0x1ff\n");
        assert_eq!(bad.config.share("s").unwrap().create_mask, 0o744);
        assert!(
            messages(&bad)[0].contains("not an octal permission mask"),
            "{:?}",
            messages(&bad)
        );
    }

    #[test]
    fn access_options_map() {
        let i = convert_text(
            "[global]\nhide unreadable = yes\n\
             [s]\npath = /s\nread list = guest, +visitors\nwrite list = @staff &nis %U +&unix\n\
             force user = files\nforce group = +staff\naccess based share enum = yes\n\
             [t]\npath = /t\nhide unreadable = no\nforce group = staff\n",
        );
        let s = i.config.share("s").unwrap();
        assert_eq!(s.read_list, ["guest", "@visitors"]);
        assert_eq!(s.write_list, ["@staff", "@unix"]);
        assert_eq!(s.force_user.as_deref(), Some("files"));
        assert_eq!(s.force_group.as_deref(), Some("staff"));
        assert!(s.hide_unreadable && s.access_based_share_enum);
        let t = i.config.share("t").unwrap();
        assert!(!t.hide_unreadable && !t.access_based_share_enum);
        assert_eq!(t.force_group.as_deref(), Some("staff"));
        assert!(t.force_user.is_none() && t.read_list.is_empty());
        assert_eq!(
            messages(&i),
            [
                "/etc/samba/smb.conf:6: [s]: write list: NIS netgroup &nis is not supported; list its members by name",
                "/etc/samba/smb.conf:6: [s]: write list: substitution %U is not supported",
                "/etc/samba/smb.conf:8: [s]: force group: the group staff is forced on every user, not only on its members",
            ]
        );
    }

    #[test]
    fn sections_that_cannot_be_shares_are_skipped_with_a_reason() {
        let i = convert_text(
            "[homes]\npath = /h/%m\n[printers]\npath = /var/tmp\n[lp]\npath = /x\nprintable = yes\n\
             [off]\npath = /o\navailable = no\n[nopath]\ncomment = c\n[macro]\npath = /home/%U\n\
             [rel]\npath = srv\n[groups]\npath = /g\nvalid users = &staff\n[a/b]\npath = /ab\n\
             [ipc$]\npath = /i\n",
        );
        assert!(i.config.shares.is_empty());
        let text = messages(&i);
        assert_eq!(text.len(), 11, "{text:#?}");
        for (line, needle) in [
            (
                0,
                "[homes]: share skipped: path /h/%m uses the substitution %m, which changes with \
                 each connection; a home path takes only %U, %u, %S, %G, %g and %H",
            ),
            (1, "[printers]: share skipped: smb3d serves no printers"),
            (2, "[lp]: share skipped: a printer share"),
            (3, "[off]: share skipped: available = no"),
            (4, "[nopath]: share skipped: it has no path"),
            (
                5,
                "[macro]: share skipped: path /home/%U uses the substitution %U, which changes \
                 with each connection; smb3d makes per-user paths only in [homes]",
            ),
            (6, "[rel]: share skipped: path srv is not absolute"),
            (7, "[groups]: share skipped: valid users names only groups"),
            (
                8,
                "[groups]: valid users: NIS netgroup &staff is not supported",
            ),
            (9, "[a/b]: share skipped: share name \"a/b\" contains '/'"),
            (10, "[ipc$]: share skipped: IPC$ is reserved for the server"),
        ] {
            assert!(text[line].contains(needle), "{}: {needle}", text[line]);
        }
    }

    /// [homes] becomes the home template: the owner's substitutions kept for smb3d, the
    /// static ones replaced, `valid users = %S` kept; without a path, the passwd home.
    #[test]
    fn homes_map_to_the_home_template() {
        let i = convert_text(
            "[global]\nnetbios name = nas1\n[homes]\npath = /srv/%L/%G/%U\nbrowseable = no\n\
             read only = no\nvalid users = %S @staff\n",
        );
        assert!(messages(&i).is_empty(), "{:#?}", messages(&i));
        let homes = i.config.share("homes").unwrap();
        assert_eq!(homes.path.get_ref(), Path::new("/srv/NAS1/%G/%U"));
        assert!(!homes.browseable && !homes.read_only);
        assert_eq!(homes.valid_users, ["%S", "@staff"]);
        let reparsed = crate::Config::parse(Path::new("i.toml"), &i.config.to_toml()).unwrap();
        assert_eq!(reparsed.share("homes"), Some(homes));
        let i = convert_text("[homes]\nread only = no\n");
        assert_eq!(
            i.config.share("homes").unwrap().path.get_ref(),
            Path::new("%H")
        );
    }

    #[test]
    fn every_unmapped_parameter_is_named_with_its_section() {
        let i = convert_text(
            "[global]\nlog file = /var/log/samba/%m\nhosts allow = 10.\npassdb backend = tdbsam\n\
             made up = 1\n[s]\npath = /s\nforce user = %U\nworkgroup = X\nread_only = no\n",
        );
        let text = messages(&i);
        assert_eq!(
            text,
            [
                "/etc/samba/smb.conf:2: [global]: log file = /var/log/samba/%m: smb3d logs to standard error (the journal under systemd); set the level with SMB3D_LOG",
                "/etc/samba/smb.conf:4: [global]: passdb backend = tdbsam: smb3d has its own user database; copy the users with `pdbedit -L -w | smb3d user import`",
                "/etc/samba/smb.conf:5: [global]: made up = 1: not mapped",
                "/etc/samba/smb.conf:8: [s]: force user = %U: not a Unix account name smb3d accepts; ignored",
                "/etc/samba/smb.conf:9: [s]: workgroup = X: not mapped",
                "/etc/samba/smb.conf:10: [s]: read_only = no: not mapped",
            ]
        );
    }

    #[test]
    fn output_parses_as_the_same_configuration() {
        let i = convert_text("[global]\nnetbios name = Files\n[Team Data]\npath = /srv/t\n");
        let text = i.to_toml();
        assert!(text.starts_with("# Converted from /etc/samba/smb.conf"));
        let again = Config::parse(Path::new("out.toml"), &text).unwrap();
        assert_eq!(again.to_toml(), i.config.to_toml());
        assert_eq!(again.shares[0].0, "Team Data");
    }

    /// Issue 23 item 12: where smb3d's defaults differ from Samba's, an imported share keeps
    /// Samba's behaviour or says why it cannot.
    #[test]
    fn samba_defaults_that_differ_from_smb3d_s() {
        let i = convert_text(
            "[global]\nnetbios name = nas1\n\
             [plain]\npath = /srv/plain\n\
             [strict]\npath = /srv/strict\nstrict allocate = yes\nvfs objects = streams_xattr\n\
             [named]\npath = /srv/%S/%L/100%%\nvfs objects = acl_xattr streams_xattr\n\
             [dynamic_share]\npath = /srv/dynamic/%t\n\
             [relative]\npath = %S\n",
        );
        // strict allocate = no is Samba's default: a write far beyond the end leaves a hole
        // rather than allocating everything before it (smbtorture smb2.rw.invalid).
        assert!(!i.config.share("plain").unwrap().strict_allocate);
        assert!(i.config.share("strict").unwrap().strict_allocate);
        // Substitutions that are the same for every connection are made now.
        assert_eq!(
            i.config.share("named").unwrap().path.get_ref(),
            Path::new("/srv/named/NAS1/100%")
        );
        assert!(i.config.share("dynamic_share").is_none());
        assert!(i.config.share("relative").is_none());
        // Named streams only where a streams module serves them, and no warning for it.
        assert!(!i.config.share("plain").unwrap().streams_xattr);
        assert!(i.config.share("strict").unwrap().streams_xattr);
        let all: Vec<String> = i.warnings.iter().map(ToString::to_string).collect();
        assert!(!all.iter().any(|w| w.contains("streams")), "{all:#?}");
        assert!(
            all.iter().any(|w| w.contains(
                "[dynamic_share]: share skipped: path /srv/dynamic/%t uses the substitution %t"
            )),
            "{all:#?}"
        );
        assert!(
            all.iter().any(
                |w| w.contains("[relative]: share skipped: path named is not absolute")
                    || w.contains("[relative]: share skipped: path relative is not absolute")
            ),
            "{all:#?}"
        );
    }

    /// Issue 23 item 2, the importer's part: who may connect maps into settings, with warnings
    /// only for what cannot be mapped.
    #[test]
    fn who_may_connect_maps_into_settings() {
        let i = convert_text(
            "[global]\nhosts allow = 127. 192.168.1. 10.0.0.0/255.0.0.0 ::1, fe80::/10 files.example\n\
             hosts deny = ALL\nguest account = smbguest\nmap to guest = bad user\n\
             invalid users = root\n\
             [s]\npath = /srv/s\nadmin users = alice @admins\nhosts deny = 192.168.1.9 @net\n\
             [t]\npath = /srv/t\ninvalid users = bob\nhosts allow = 10. EXCEPT 10.1.\n",
        );
        let server = &i.config.server;
        let allow: Vec<String> = server.hosts_allow.iter().map(ToString::to_string).collect();
        assert_eq!(
            allow,
            [
                "127.0.0.0/8",
                "192.168.1.0/24",
                "10.0.0.0/8",
                "::1",
                "fe80::/10"
            ]
        );
        let deny: Vec<String> = server.hosts_deny.iter().map(ToString::to_string).collect();
        assert_eq!(deny, ["0.0.0.0/0", "::/0"]);
        assert_eq!(server.guest_account.as_deref(), Some("smbguest"));
        assert_eq!(server.map_to_guest, MapToGuest::BadUser);
        let s = i.config.share("s").unwrap();
        assert_eq!(
            s.invalid_users,
            ["root"],
            "[global]'s is every share's default"
        );
        assert_eq!(s.admin_users, ["alice", "@admins"]);
        assert_eq!(s.hosts_deny.len(), 1);
        let t = i.config.share("t").unwrap();
        assert_eq!(t.invalid_users, ["bob"]);
        assert!(t.hosts_allow.is_empty(), "an EXCEPT list is not mapped");
        let all = messages(&i);
        for needle in [
            "[global]: hosts allow: \"files.example\" is a host name, domain, netgroup or LOCAL",
            "[s]: hosts deny: \"@net\" is a host name, domain, netgroup or LOCAL, which smb3d does not match; left out, so clients there are NOT refused",
            "[t]: hosts allow = 10. EXCEPT 10.1.: EXCEPT lists are not supported",
        ] {
            assert!(all.iter().any(|w| w.contains(needle)), "{needle}: {all:#?}");
        }
        assert!(
            !all.iter().any(|w| w.contains("NOT ENFORCED")),
            "every setting of who may connect is enforced: {all:#?}"
        );
        let bad = convert_text("[global]\nmap to guest = bad password\n");
        assert_eq!(bad.config.server.map_to_guest, MapToGuest::Never);
        assert!(messages(&bad)[0].contains("only `never` and `bad user`"));
    }

    #[test]
    fn user_lists_split_like_samba() {
        assert_eq!(
            split_list("a, b\tc,,\"d e\"  f"),
            ["a", "b", "c", "d e", "f"]
        );
    }
}
