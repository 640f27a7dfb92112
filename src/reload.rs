//! Building the served shares from the configuration, and rereading the configuration while
//! the server runs (SIGHUP, `smb3d reload`): shares added, removed or changed apply to new tree
//! connects; existing tree connects keep the share they connected to, as Samba 4.17's do, even
//! when it was removed. Server settings that cannot change live are named in the log. An
//! invalid configuration is refused and the running one kept. A share that cannot be opened
//! (a missing directory, an unknown forced account) does not stop the others: it is left out,
//! logged, and reported by `smb3d status` and the metrics until a reload finds it healthy.

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::{Value, json};
use smb3d_config::{
    Config, EncryptPolicy, FaultErrno, FaultOpName, FaultRuleConfig, HOMES, HostPattern,
    ServerConfig, ShareConfig, SigningPolicy, is_homes,
};
use smb3d_server::hosts::{HostRules, Network};
use smb3d_server::recycle::RecycleBin;
use smb3d_server::share::{
    Apple, InheritOwner, MetadataXattrs, Presentation, Share, name_patterns,
};
use smb3d_server::{EncryptionPolicy, Server};
use smb3d_vfs::{FaultOp, FaultPlan, FaultRule, FaultVfs, Vfs, VfsError, errno};
use smb3d_vfs_posix::PosixVfs;

use crate::homes::HomeTemplate;

/// The server setting keys that take effect at once on reload (see [`effective`]); every
/// other one needs a restart. `audit` is applied to each share (new tree connects).
const LIVE_SERVER_KEYS: &[&str] = &["audit"];

/// The configuration in effect once `new` is applied over `running`: `new`'s shares, the
/// live server settings of `new`, and the running value of every setting that needs a
/// restart (shares inherit those from the server, so they keep the running ones too).
fn effective(running: &Config, new: &Config) -> Config {
    let mut server = running.server.clone();
    server.audit = new.server.audit;
    Config {
        source: new.source.clone(),
        server,
        limits: running.limits.clone(),
        shares: new.shares.clone(),
        cluster: running.cluster.clone(),
        auth: running.auth.clone(),
        idmap: running.idmap.clone(),
    }
}

/// The SMB encryption policy of a configuration policy.
pub fn encryption_policy(policy: EncryptPolicy) -> EncryptionPolicy {
    match policy {
        EncryptPolicy::Off => EncryptionPolicy::Off,
        EncryptPolicy::Auto => EncryptionPolicy::Auto,
        EncryptPolicy::Desired => EncryptionPolicy::Desired,
        EncryptPolicy::Required => EncryptionPolicy::Required,
    }
}

/// The server's host rules of configured `hosts_allow` and `hosts_deny` lists.
pub fn host_rules(allow: &[HostPattern], deny: &[HostPattern]) -> HostRules {
    let networks = |list: &[HostPattern]| {
        list.iter()
            .map(|p| Network::new(p.network(), p.prefix()))
            .collect()
    };
    HostRules {
        allow: networks(allow),
        deny: networks(deny),
    }
}

/// A disk share as configured, served by a cluster node when `cluster` (the configuration has
/// a `[cluster]`); fails when its directory cannot be opened or an account it forces does not
/// exist.
pub fn build_share(
    name: &str,
    share: &ShareConfig,
    server: &ServerConfig,
    cluster: bool,
) -> Result<Share, String> {
    let path = share.path.get_ref();
    // Other nodes' changes arrive through etcd: the host watch ignores theirs
    // (docs/cluster.md).
    let posix = PosixVfs::new(path)
        .map_err(|e| format!("share {name}: {}: {e}", path.display()))?
        .with_other_nodes_ignored(cluster);
    let vfs: Arc<dyn Vfs> = if share.testing_fault_injection.is_empty() {
        Arc::new(posix)
    } else {
        let rules = share
            .testing_fault_injection
            .iter()
            .map(fault_rule)
            .collect();
        Arc::new(FaultVfs::new(
            Arc::new(posix),
            Arc::new(FaultPlan::new(rules)),
        ))
    };
    let built = Share {
        name: name.to_owned(),
        comment: share.comment.clone(),
        path: path.display().to_string(),
        read_only: share.read_only,
        valid_users: share.valid_users.clone(),
        read_list: share.read_list.clone(),
        write_list: share.write_list.clone(),
        force_user: share.force_user.clone(),
        force_group: share.force_group.clone(),
        browseable: share.browseable,
        guest_ok: share.guest_ok,
        encryption: encryption_policy(share.encrypt.unwrap_or(server.encrypt)),
        require_signing: share.signing == SigningPolicy::Required,
        create_mask: share.create_mask,
        directory_mask: share.directory_mask,
        force_create_mode: share.force_create_mode,
        force_directory_mode: share.force_directory_mode,
        inherit_permissions: share.inherit_permissions,
        inherit_acls: share.inherit_acls,
        inherit_owner: match share.inherit_owner {
            smb3d_config::InheritOwner::No => InheritOwner::No,
            smb3d_config::InheritOwner::WindowsAndUnix => InheritOwner::WindowsAndUnix,
            smb3d_config::InheritOwner::UnixOnly => InheritOwner::UnixOnly,
        },
        delete_veto_files: share.delete_veto_files,
        recycle: share.recycle.then(|| Arc::new(recycle_bin(share))),
        oplocks: share.oplocks,
        veto_oplock_files: name_patterns(&share.veto_oplock_files),
        posix_locking: share.posix_locking,
        kernel_oplocks: share.kernel_oplocks,
        hide_unreadable: share.hide_unreadable,
        access_based_share_enum: share.access_based_share_enum,
        audit: share.audit.unwrap_or(server.audit),
        strict_allocate: share.strict_allocate,
        sync_metadata: share.sync_metadata,
        continuous_availability: share.continuous_availability,
        scale_out: share.is_scale_out(),
        snapshots: share.snapshots.is_some(),
        short_names: share.short_names,
        presentation: Presentation::new(
            share.hide_dot_files,
            &share.hide_files,
            share.allocation_roundup_size,
        )
        .with_veto(&vetoed_names(share))
        .with_xattrs(MetadataXattrs {
            dos_attributes: share.store_dos_attributes,
            eas: share.ea_support,
            streams: share.streams_xattr,
        }),
        invalid_users: share.invalid_users.clone(),
        admin_users: share.admin_users.clone(),
        hosts: host_rules(&share.hosts_allow, &share.hosts_deny)
            .within(&host_rules(&server.hosts_allow, &server.hosts_deny)),
        apple: share.apple.then(|| {
            Arc::new(Apple {
                model: share.apple_model.clone(),
                time_machine: share.time_machine,
                time_machine_max_size: share.time_machine_max_size,
                zero_file_id: share.apple_zero_file_id,
                conversion: smb3d_server::AppleConversion {
                    wipe_blank_fork: share.apple_wipe_intentionally_left_blank_rfork,
                    delete_empty: share.apple_delete_empty_adfiles,
                },
            })
        }),
        posix: share.posix,
        ..Share::disk(name.to_owned(), vfs)
    };
    built
        .check_forced_accounts()
        .map_err(|e| format!("share {name}: {e}"))?;
    Ok(built)
}

/// The share's `veto_files`; on a share with snapshots their directory (clients reach
/// snapshots only read-only, through @GMT tokens and TWrp contexts); on an apple share the
/// `._` AppleDouble files unless `apple_veto_appledouble` is off (clients reach a resource
/// fork as its file's AFP_Resource stream, as vfs_fruit's `fruit:veto_appledouble` has it).
fn vetoed_names(share: &ShareConfig) -> Vec<String> {
    let mut names = share.veto_files.clone();
    if share.snapshots.is_some() {
        names.push(smb3d_server::SNAPSHOT_DIR.to_owned());
    }
    if share.apple && share.apple_veto_appledouble {
        names.push(format!("{}*", smb3d_server::SIDECAR_PREFIX));
    }
    names
}

/// The fault-injecting layer's rule for a configured `testing_fault_injection` rule.
fn fault_rule(rule: &FaultRuleConfig) -> FaultRule {
    FaultRule {
        ops: rule.ops.iter().map(|&op| fault_op(op)).collect(),
        path: rule.path.clone(),
        xattr: rule.xattr.clone(),
        delay: std::time::Duration::from_millis(rule.delay_ms),
        error: rule.error.map(|error| match error {
            FaultErrno::EIO => VfsError::Io(errno::EIO),
            FaultErrno::ENOSPC => VfsError::NoSpace,
            FaultErrno::EROFS => VfsError::ReadOnlyFs,
        }),
        skip: rule.skip,
        times: rule.times,
    }
}

fn fault_op(op: FaultOpName) -> FaultOp {
    match op {
        FaultOpName::Open => FaultOp::Open,
        FaultOpName::Stat => FaultOp::Stat,
        FaultOpName::Unlink => FaultOp::Unlink,
        FaultOpName::Rename => FaultOp::Rename,
        FaultOpName::Link => FaultOp::Link,
        FaultOpName::SyncDir => FaultOp::SyncDir,
        FaultOpName::ReadDir => FaultOp::ReadDir,
        FaultOpName::Read => FaultOp::Read,
        FaultOpName::Write => FaultOp::Write,
        FaultOpName::Allocate => FaultOp::Allocate,
        FaultOpName::Sync => FaultOp::Sync,
        FaultOpName::SetAttributes => FaultOp::SetAttributes,
        FaultOpName::GetXattr => FaultOp::GetXattr,
        FaultOpName::SetXattr => FaultOp::SetXattr,
    }
}

/// The configured shares and, for those that are not served, why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareHealth {
    /// Every share of the configuration in its order, with the reason it could not be opened
    /// when it is not served.
    pub shares: Vec<(String, Option<String>)>,
}

impl ShareHealth {
    /// The shares that are not served, with why.
    pub fn unavailable(&self) -> impl Iterator<Item = (&str, &str)> {
        self.shares
            .iter()
            .filter_map(|(name, why)| Some((name.as_str(), why.as_deref()?)))
    }

    fn is_unavailable(&self, name: &str) -> bool {
        self.unavailable()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

/// The health of the running shares, shared by the reloader (which writes it) and the admin
/// socket and metrics endpoint (which report it).
pub type SharedHealth = Arc<Mutex<ShareHealth>>;

/// Logs the shares that cannot be served; the others are served without them.
pub fn log_unavailable(health: &ShareHealth) {
    for (name, why) in health.unavailable() {
        tracing::error!(
            share = name,
            "share {name} is unavailable: {why}; the other shares are served, and a reload \
             tries it again"
        );
    }
}

/// Warns of every testing-only setting of `config`.
pub fn log_testing_only(config: &Config) {
    for warning in config.testing_only() {
        tracing::warn!("{warning}");
    }
}

/// The shares of `config` that can be opened, IPC$ first, and the health of all of them.
pub fn build_shares(config: &Config) -> (Vec<Arc<Share>>, ShareHealth) {
    let mut shares = vec![Arc::new(Share::ipc())];
    let mut health = ShareHealth::default();
    for (name, share) in &config.shares {
        if is_homes(name) {
            // A template: each user's home is built at their first connect (`crate::homes`).
            health.shares.push((name.clone(), None));
            continue;
        }
        let why = match build_share(name, share, &config.server, config.cluster.is_some()) {
            Ok(built) => {
                shares.push(Arc::new(built));
                None
            }
            Err(why) => Some(why),
        };
        health.shares.push((name.clone(), why));
    }
    (shares, health)
}

/// What a reload changed in the set of served shares.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Served now and not before: new shares, and unavailable ones that could be opened.
    pub added: Vec<String>,
    /// Served before and not now: removed from the configuration, or now unavailable.
    pub removed: Vec<String>,
    /// Served before and now, built afresh.
    pub changed: Vec<String>,
    /// Server settings that differ but apply only after a restart.
    pub restart_needed: Vec<String>,
    /// Shares of the configuration that could not be opened, with why.
    pub unavailable: Vec<(String, String)>,
}

impl Outcome {
    /// The outcome as the admin socket reports it.
    pub fn to_json(&self) -> Value {
        let unavailable: Vec<Value> = self
            .unavailable
            .iter()
            .map(|(share, reason)| json!({"share": share, "reason": reason}))
            .collect();
        json!({
            "added": self.added,
            "removed": self.removed,
            "changed": self.changed,
            "restart_needed": self.restart_needed,
            "unavailable": unavailable,
        })
    }
}

/// The `[server]` and `[limits]` settings (the latter as `limits.<key>`) as `key = value`
/// lines of the rendered configuration, so that any setting, present or future, is compared.
fn server_settings(config: &Config) -> Vec<(String, String)> {
    let rendered = config.to_toml();
    let mut section = "";
    let mut settings = Vec::new();
    for line in rendered.lines() {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        let Some((key, value)) = line.split_once(" = ") else {
            continue;
        };
        match section {
            "[server]" => settings.push((key.to_owned(), value.to_owned())),
            "[limits]" => settings.push((format!("limits.{key}"), value.to_owned())),
            _ => {}
        }
    }
    settings
}

/// Server settings that differ between `old` and `new` and need a restart.
fn restart_needed(old: &Config, new: &Config) -> Vec<String> {
    let before = server_settings(old);
    server_settings(new)
        .into_iter()
        .filter(|(key, value)| {
            !LIVE_SERVER_KEYS.contains(&key.as_str())
                && before.iter().find(|(k, _)| k == key).map(|(_, v)| v) != Some(value)
        })
        .map(|(key, _)| key)
        .collect()
}

/// Whether a share must be rebuilt: its own settings changed, or a server setting it
/// inherits.
fn share_changed(name: &str, old: &Config, new: &Config) -> bool {
    let (Some(before), Some(after)) = (old.share(name), new.share(name)) else {
        return true;
    };
    before != after
        || (after.encrypt.is_none() && old.server.encrypt != new.server.encrypt)
        || (after.audit.is_none() && old.server.audit != new.server.audit)
}

/// Serves `new`'s shares on `server`, which runs `old` with `health`: unchanged shares are
/// kept as they are, changed and added ones built afresh, and those that were unavailable tried
/// again; a share that cannot be opened is left out. Returns the configuration now in effect,
/// what changed, and the health of `new`'s shares.
pub fn apply(
    server: &Server,
    old: &Config,
    health: &ShareHealth,
    new: &Config,
) -> (Config, Outcome, ShareHealth) {
    let restart_needed = restart_needed(old, new);
    let new = &effective(old, new);
    let current = server.shares();
    let mut shares: Vec<Arc<Share>> = current
        .iter()
        .filter(|s| s.name == "IPC$")
        .cloned()
        .collect();
    let mut outcome = Outcome {
        restart_needed,
        ..Outcome::default()
    };
    let mut new_health = ShareHealth::default();
    if share_changed(HOMES, old, new) {
        server.replace_homes(HomeTemplate::homes(new));
    }
    for (name, share) in &new.shares {
        if is_homes(name) {
            new_health.shares.push((name.clone(), None));
            continue;
        }
        let running = current
            .iter()
            .find(|s| s.name.eq_ignore_ascii_case(name) && s.name != "IPC$");
        let why = match running {
            Some(running)
                if !share_changed(name, old, new)
                    && running.name == *name
                    && !health.is_unavailable(name) =>
            {
                shares.push(running.clone());
                None
            }
            _ => match build_share(name, share, &new.server, new.cluster.is_some()) {
                Ok(built) => {
                    if running.is_some() {
                        outcome.changed.push(name.clone());
                    } else {
                        outcome.added.push(name.clone());
                    }
                    shares.push(Arc::new(built));
                    None
                }
                Err(why) => {
                    outcome.unavailable.push((name.clone(), why.clone()));
                    Some(why)
                }
            },
        };
        new_health.shares.push((name.clone(), why));
    }
    outcome.removed = current
        .iter()
        .filter(|s| s.name != "IPC$" && !shares.iter().any(|kept| kept.name == s.name))
        .map(|s| s.name.clone())
        .collect();
    server.replace_shares(shares);
    (new.clone(), outcome, new_health)
}

/// Rereads the configuration at `path` and applies it to the running `server`, logging what
/// changed or why nothing did.
pub struct Reloader {
    /// The configuration file; None in demo mode, which has none.
    pub path: Option<PathBuf>,
    pub config: Config,
    pub server: Arc<Server>,
    pub health: SharedHealth,
}

impl Reloader {
    /// Rereads and applies the configuration; the errors when it was refused.
    pub fn reload(&mut self) -> Result<Outcome, Vec<String>> {
        // The configuration and the shares' roots are read with the service's credentials.
        smb3d_credentials::settle();
        let Some(path) = &self.path else {
            let why = "serve --demo has no configuration file to reread".to_owned();
            tracing::warn!("reload refused: {why}");
            return Err(vec![why]);
        };
        crate::systemd::notify_reloading();
        let result = crate::config_cmd::load_effective(path)
            .map_err(|errors| errors.iter().map(ToString::to_string).collect::<Vec<_>>())
            .map(|new| {
                let health = self.health.lock().clone();
                let (config, outcome, health) = apply(&self.server, &self.config, &health, &new);
                log_testing_only(&config);
                self.config = config;
                log_unavailable(&health);
                *self.health.lock() = health;
                outcome
            });
        crate::systemd::notify_ready(&crate::serve::status_line(
            &self.config,
            &self.health.lock(),
        ));
        match result {
            Ok(outcome) => {
                tracing::info!(
                    added = ?outcome.added,
                    removed = ?outcome.removed,
                    changed = ?outcome.changed,
                    "configuration reloaded from {}",
                    path.display()
                );
                for key in &outcome.restart_needed {
                    tracing::warn!(
                        "server setting {key} changed: it takes effect when smb3d is restarted"
                    );
                }
                Ok(outcome)
            }
            Err(errors) => {
                for e in &errors {
                    tracing::error!("reload refused: {e}");
                }
                tracing::error!(
                    "configuration {} not reloaded; the running configuration is kept",
                    path.display()
                );
                Err(errors)
            }
        }
    }
}

/// A share's recycle bin as its `recycle_*` options describe it.
fn recycle_bin(share: &ShareConfig) -> RecycleBin {
    RecycleBin {
        keep_tree: share.recycle_keeptree,
        versions: share.recycle_versions,
        touch: share.recycle_touch,
        exclude: name_patterns(&share.recycle_exclude),
        exclude_dir: name_patterns(&share.recycle_exclude_dir),
        no_versions: name_patterns(&share.recycle_noversions),
        max_size: share.recycle_maxsize,
        directory_mode: share.recycle_directory_mode,
        ..RecycleBin::new(share.recycle_repository.clone())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn no_users() -> Arc<smb3d_auth::UserDb> {
        Arc::new(smb3d_auth::UserDb::new("/nonexistent/users"))
    }

    fn config(text: &str) -> Config {
        Config::parse(Path::new("t.toml"), text).unwrap()
    }

    #[test]
    fn server_changes_that_need_a_restart_are_named() {
        let old = config("[server]\nlisten = [\"127.0.0.1:445\"]\n");
        let new = config(
            "[server]\nlisten = [\"127.0.0.1:4445\"]\nsigning = \"required\"\naudit = true\n",
        );
        assert_eq!(restart_needed(&old, &new), ["listen", "signing"]);
        assert!(restart_needed(&old, &old).is_empty());
    }

    #[test]
    fn shares_are_kept_rebuilt_added_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["a", "b", "c"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        let share = |name: &str, extra: &str| {
            format!(
                "[share.{name}]\npath = {:?}\n{extra}",
                dir.path().join(name).display().to_string()
            )
        };
        let old = config(&format!("{}{}", share("a", ""), share("b", "")));
        let (server, health) = crate::serve::build_server(&old, no_users()).unwrap();
        let a_before = server
            .shares()
            .iter()
            .find(|s| s.name == "a")
            .cloned()
            .unwrap();

        let new = config(&format!(
            "{}{}{}",
            share("a", ""),
            share("b", "read_only = true\n"),
            share("c", "")
        ));
        let (running, outcome, health) = apply(&server, &old, &health, &new);
        assert_eq!(outcome.added, ["c"]);
        assert_eq!(outcome.changed, ["b"]);
        assert!(outcome.removed.is_empty());
        let shares = server.shares();
        let names: Vec<&str> = shares.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["IPC$", "a", "b", "c"]);
        assert!(Arc::ptr_eq(&a_before, &shares[1]), "unchanged share kept");
        assert!(shares[2].read_only);

        let audited = config(&format!(
            "[server]\naudit = true\n{}{}",
            share("a", "audit = false\n"),
            share("c", "")
        ));
        let (_, outcome, _) = apply(&server, &running, &health, &audited);
        assert_eq!(outcome.removed, ["b"]);
        // a's own settings changed; c inherits the server's new audit setting.
        assert_eq!(outcome.changed, ["a", "c"]);
        assert!(outcome.restart_needed.is_empty());
        assert!(server.shares()[2].audit);
    }

    /// Issue 23 item 5: a share that cannot be opened is left out, at start and at reload,
    /// and every reload tries it again; the others are served.
    #[test]
    fn a_share_that_cannot_be_opened_is_left_out_and_tried_again() {
        let dir = tempfile::tempdir().unwrap();
        let later = dir.path().join("later");
        let text = format!(
            "[share.a]\npath = {:?}\n[share.later]\npath = {:?}\n\
             [share.forced]\npath = {:?}\nforce_user = \"no-such-user-smb3d\"\n",
            dir.path().display().to_string(),
            later.display().to_string(),
            dir.path().display().to_string(),
        );
        let old = config(&text);
        let (server, health) = crate::serve::build_server(&old, no_users()).unwrap();
        let served = |server: &Server| -> Vec<String> {
            server.shares().iter().map(|s| s.name.clone()).collect()
        };
        assert_eq!(served(&server), ["IPC$", "a"]);
        let unavailable: Vec<(&str, &str)> = health.unavailable().collect();
        assert_eq!(unavailable.len(), 2, "{unavailable:?}");
        assert!(unavailable[0].0 == "later" && unavailable[0].1.contains("later"));
        assert!(unavailable[1].0 == "forced" && unavailable[1].1.contains("no-such-user-smb3d"));

        // The directory appears: the same configuration, reloaded, serves it.
        std::fs::create_dir(&later).unwrap();
        let (running, outcome, health) = apply(&server, &old, &health, &config(&text));
        assert_eq!(outcome.added, ["later"]);
        assert!(outcome.removed.is_empty() && outcome.changed.is_empty());
        assert_eq!(outcome.unavailable.len(), 1);
        assert_eq!(served(&server), ["IPC$", "a", "later"]);

        // A served share whose new path is missing stops being served.
        let broken = text.replace(&later.display().to_string(), "/nonexistent/smb3d");
        let (_, outcome, health) = apply(&server, &running, &health, &config(&broken));
        assert_eq!(outcome.removed, ["later"]);
        assert_eq!(served(&server), ["IPC$", "a"]);
        assert_eq!(health.unavailable().count(), 2);
    }
}
