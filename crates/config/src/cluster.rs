//! The `[cluster]` section (docs/cluster.md): several smb3d nodes serving the same shares,
//! coordinated through etcd. Without it smb3d is a single server and none of this is read.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::model::Problem;
use crate::render::toml_string;
use crate::{Dialect, Interval};

/// How long a node's etcd lease lives unless configured: a dead node is noticed this long
/// after its last keepalive.
pub const DEFAULT_NODE_TTL: Duration = Duration::from_secs(3);
/// The shortest `node_ttl`: keepalives go every third of it, and etcd's own leader elections
/// take about a second.
pub const MIN_NODE_TTL: Duration = Duration::from_secs(1);
/// The longest `node_ttl`: a dead node's addresses must not stay silent for minutes.
pub const MAX_NODE_TTL: Duration = Duration::from_secs(60);
/// The TCP port of a node's witness service (MS-SWN) unless configured; clients learn it
/// from the endpoint mapper on port 135.
pub const DEFAULT_WITNESS_PORT: u16 = 4135;
/// The endpoint mapper's port, which the witness service cannot share.
pub const EPMAPPER_PORT: u16 = 135;
/// The longest node name (a DNS label's length).
pub const MAX_NODE_NAME: usize = 63;

/// `[cluster]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCluster {
    etcd: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    node: Option<Spanned<String>>,
    #[serde(default)]
    public_addresses: Vec<Spanned<String>>,
    #[serde(default)]
    max_dialect: Option<Dialect>,
    #[serde(default)]
    node_ttl: Option<Spanned<Interval>>,
    #[serde(default)]
    public_interface: Option<Spanned<String>>,
    #[serde(default)]
    witness_port: Option<Spanned<i64>>,
}

/// A checked `[cluster]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// etcd client URLs (`http://host:port` or `https://host:port`).
    pub etcd: Vec<String>,
    /// This node's name; `None` means the host name ([`ClusterConfig::node_name`]).
    pub node: Option<String>,
    /// Addresses the cluster serves and moves between nodes.
    pub public_addresses: Vec<IpAddr>,
    /// The cluster dialect fence; `None` means the server's own `max_dialect`.
    pub max_dialect: Option<Dialect>,
    /// The life of a node's etcd lease.
    pub node_ttl: Duration,
    /// The interface a node adds the public addresses it takes to (with a gratuitous ARP);
    /// `None`: they are on the host already (tests) and only listened on.
    pub public_interface: Option<String>,
    /// The TCP port of the witness service (MS-SWN) on each address the node serves.
    pub witness_port: u16,
}

impl ClusterConfig {
    /// The configured node name, or else the host name (`localhost` when it cannot be read).
    pub fn node_name(&self) -> String {
        self.node.clone().unwrap_or_else(host_name)
    }
}

/// The kernel's host name, cut to what a node name may hold.
pub fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name: String = name
        .trim()
        .chars()
        .filter(|c| valid_node_char(*c))
        .take(MAX_NODE_NAME)
        .collect();
    if name.is_empty() {
        "localhost".to_owned()
    } else {
        name
    }
}

fn valid_node_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// Why `url` is not an etcd endpoint smb3d can use, if it is not.
fn endpoint_problem(url: &str) -> Option<String> {
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        return Some(format!(
            "etcd endpoint {url:?} must start with http:// or https://"
        ));
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains(['/', '?', '#', '@']) || authority.is_empty() {
        return Some(format!(
            "etcd endpoint {url:?} must be scheme://host:port, without a path or user"
        ));
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port),
        _ => return Some(format!("etcd endpoint {url:?} names no port (e.g. :2379)")),
    };
    if host.is_empty() || host == "[]" {
        return Some(format!("etcd endpoint {url:?} names no host"));
    }
    if !matches!(port.parse::<u16>(), Ok(p) if p != 0) {
        return Some(format!(
            "etcd endpoint {url:?}: port {port:?} is not 1 to 65535"
        ));
    }
    None
}

/// Checks `raw`, adding what is wrong to `problems`.
pub(crate) fn checked_cluster(raw: RawCluster, problems: &mut Vec<Problem>) -> ClusterConfig {
    if raw.etcd.get_ref().is_empty() {
        problems.push(Problem::at(
            raw.etcd.span(),
            "cluster.etcd names no endpoint",
        ));
    }
    let etcd: Vec<String> = raw
        .etcd
        .into_inner()
        .into_iter()
        .map(|url| {
            if let Some(why) = endpoint_problem(url.get_ref()) {
                problems.push(Problem::at(url.span(), why));
            }
            url.into_inner()
        })
        .collect();
    if let Some(node) = &raw.node {
        let name = node.get_ref();
        if name.is_empty() || name.len() > MAX_NODE_NAME || !name.chars().all(valid_node_char) {
            problems.push(Problem::at(
                node.span(),
                format!(
                    "cluster.node {name:?} must be 1 to {MAX_NODE_NAME} letters, digits, `-`, `_` or `.`"
                ),
            ));
        }
    }
    let mut public_addresses = Vec::new();
    for text in &raw.public_addresses {
        match text.get_ref().parse::<IpAddr>() {
            Ok(ip) if public_addresses.contains(&ip) => problems.push(Problem::at(
                text.span(),
                format!("public address {ip} is listed twice"),
            )),
            Ok(ip) => public_addresses.push(ip),
            Err(_) => problems.push(Problem::at(
                text.span(),
                format!(
                    "public address {:?} is not an IP address (e.g. \"10.0.0.51\")",
                    text.get_ref()
                ),
            )),
        }
    }
    let node_ttl = raw.node_ttl.map_or(DEFAULT_NODE_TTL, |ttl| {
        if !(MIN_NODE_TTL..=MAX_NODE_TTL).contains(&ttl.get_ref().0) {
            problems.push(Problem::at(
                ttl.span(),
                format!("cluster.node_ttl {} is outside 1s to 60s", ttl.get_ref()),
            ));
        }
        ttl.get_ref().0
    });
    if let Some(interface) = &raw.public_interface
        && !valid_interface(interface.get_ref())
    {
        problems.push(Problem::at(
            interface.span(),
            format!(
                "cluster.public_interface {:?} is not an interface name (1 to 15 letters, digits, `-`, `_`, `.` or `@`)",
                interface.get_ref()
            ),
        ));
    }
    let witness_port = raw.witness_port.map_or(DEFAULT_WITNESS_PORT, |port| {
        match u16::try_from(*port.get_ref()) {
            Ok(p) if p != 0 && p != EPMAPPER_PORT => p,
            _ => {
                problems.push(Problem::at(
                    port.span(),
                    format!(
                        "cluster.witness_port {} is not a TCP port other than 0 and 135 (the endpoint mapper's)",
                        port.get_ref()
                    ),
                ));
                DEFAULT_WITNESS_PORT
            }
        }
    });
    ClusterConfig {
        etcd,
        node: raw.node.map(Spanned::into_inner),
        public_addresses,
        max_dialect: raw.max_dialect,
        node_ttl,
        public_interface: raw.public_interface.map(Spanned::into_inner),
        witness_port,
    }
}

/// A Linux interface name (IFNAMSIZ less its NUL), of the characters `ip` accepts without
/// quoting; never `.` or `..`, which name directories under /sys/class/net.
fn valid_interface(name: &str) -> bool {
    (1..16).contains(&name.len())
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
}

/// Where CTDB keeps its configuration.
pub(crate) const CTDB_DIR: &str = "/etc/ctdb";
/// The etcd endpoint an imported `clustering = yes` names until the administrator sets theirs.
pub const PLACEHOLDER_ETCD: &str = "http://127.0.0.1:2379";
/// The most lines of CTDB's `public_addresses` read (a cluster serves a few dozen at most).
const MAX_CTDB_LINES: usize = 4096;

/// `[cluster]` for an smb.conf with `clustering = yes`, with what could not be mapped. CTDB's
/// `public_addresses` (`ADDRESS/MASK IFACE[,IFACE...]` per line) gives the addresses; its
/// `nodes` file lists the private addresses of ctdbd daemons, which have no counterpart here
/// (etcd endpoints are not smb3d nodes).
pub(crate) fn from_ctdb(ctdb_dir: &std::path::Path) -> (ClusterConfig, Vec<String>) {
    let mut notes = vec![format!(
        "cluster.etcd is set to the placeholder {PLACEHOLDER_ETCD}: name your etcd endpoints \
         there; CTDB's nodes file (the ctdbd daemons' private addresses) has no counterpart"
    )];
    let file = ctdb_dir.join("public_addresses");
    let mut public_addresses = Vec::new();
    match std::fs::read_to_string(&file) {
        Ok(text) => {
            for (number, line) in text.lines().enumerate().take(MAX_CTDB_LINES) {
                let line = line.split('#').next().unwrap_or_default().trim();
                let Some(first) = line.split_whitespace().next() else {
                    continue;
                };
                let address = first.split('/').next().unwrap_or_default();
                match address.parse::<IpAddr>() {
                    Ok(ip) if !public_addresses.contains(&ip) => public_addresses.push(ip),
                    Ok(_) => {}
                    Err(_) => notes.push(format!(
                        "{} line {}: {first:?} is not an address; skipped",
                        file.display(),
                        number + 1
                    )),
                }
            }
            notes.push(format!(
                "cluster.public_addresses: {} read from {} (their netmasks and interfaces are \
                 not kept)",
                public_addresses.len(),
                file.display()
            ));
        }
        Err(e) => notes.push(format!(
            "{} cannot be read ({e}): set cluster.public_addresses by hand",
            file.display()
        )),
    }
    let cluster = ClusterConfig {
        etcd: vec![PLACEHOLDER_ETCD.to_owned()],
        node: None,
        public_addresses,
        max_dialect: None,
        node_ttl: DEFAULT_NODE_TTL,
        public_interface: None,
        witness_port: DEFAULT_WITNESS_PORT,
    };
    (cluster, notes)
}

/// `[cluster]` as TOML that parses back to `cluster`.
pub(crate) fn render_cluster(out: &mut String, cluster: &ClusterConfig) {
    let list = |items: Vec<String>| {
        let items: Vec<String> = items.iter().map(|s| toml_string(s)).collect();
        format!("[{}]", items.join(", "))
    };
    // Writing to a String cannot fail.
    let _ = writeln!(out, "\n[cluster]");
    let _ = writeln!(out, "etcd = {}", list(cluster.etcd.clone()));
    if let Some(node) = &cluster.node {
        let _ = writeln!(out, "node = {}", toml_string(node));
    }
    let addresses = cluster.public_addresses.iter().map(ToString::to_string);
    let _ = writeln!(out, "public_addresses = {}", list(addresses.collect()));
    if let Some(dialect) = cluster.max_dialect {
        let _ = writeln!(out, "max_dialect = \"{}\"", dialect.as_str());
    }
    let _ = writeln!(out, "node_ttl = \"{}\"", Interval(cluster.node_ttl));
    if let Some(interface) = &cluster.public_interface {
        let _ = writeln!(out, "public_interface = {}", toml_string(interface));
    }
    if cluster.witness_port != DEFAULT_WITNESS_PORT {
        let _ = writeln!(out, "witness_port = {}", cluster.witness_port);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{Config, ConfigError};

    fn errors(text: &str) -> Vec<ConfigError> {
        Config::parse_all_errors(Path::new("c.toml"), text).unwrap_err()
    }

    #[test]
    fn without_a_cluster_section_there_is_no_cluster() {
        let config = Config::parse(Path::new("c.toml"), "[server]\n").unwrap();
        assert_eq!(config.cluster, None);
    }

    #[test]
    fn a_cluster_section_reads_with_its_defaults_and_renders_back() {
        let config = Config::parse(
            Path::new("c.toml"),
            "[cluster]\netcd = [\"http://127.0.0.1:2379\", \"https://[::1]:2379/\"]\n",
        )
        .unwrap();
        let cluster = config.cluster.clone().unwrap();
        assert_eq!(cluster.node_ttl, std::time::Duration::from_secs(3));
        assert_eq!(cluster.node, None);
        assert!(!cluster.node_name().is_empty());
        assert_eq!(cluster.max_dialect, None);
        let full = Config::parse(
            Path::new("c.toml"),
            "[cluster]\netcd = [\"http://e1:2379\"]\nnode = \"nas-1\"\n\
             public_addresses = [\"10.0.0.51\", \"fd00::51\"]\nmax_dialect = \"3.0.2\"\n\
             node_ttl = \"1500ms\"\n",
        )
        .unwrap();
        let again = Config::parse(Path::new("c.toml"), &full.to_toml()).unwrap();
        assert_eq!(again.cluster, full.cluster);
        let cluster = full.cluster.unwrap();
        assert_eq!(cluster.node_name(), "nas-1");
        assert_eq!(cluster.public_addresses.len(), 2);
        assert_eq!(cluster.max_dialect, Some(crate::Dialect::Smb302));
        assert_eq!(cluster.node_ttl, std::time::Duration::from_millis(1500));
    }

    #[test]
    fn the_witness_port_defaults_is_checked_and_renders_back() {
        let config = Config::parse(
            Path::new("c.toml"),
            "[cluster]\netcd = [\"http://e1:2379\"]\n",
        )
        .unwrap();
        assert_eq!(config.cluster.unwrap().witness_port, 4135);
        let config = Config::parse(
            Path::new("c.toml"),
            "[cluster]\netcd = [\"http://e1:2379\"]\nwitness_port = 5135\n",
        )
        .unwrap();
        assert_eq!(config.cluster.as_ref().unwrap().witness_port, 5135);
        let again = Config::parse(Path::new("c.toml"), &config.to_toml()).unwrap();
        assert_eq!(again.cluster, config.cluster);
        for bad in ["0", "135", "65536", "-1"] {
            let text = format!("[cluster]\netcd = [\"http://e1:2379\"]\nwitness_port = {bad}\n");
            let found = errors(&text);
            assert_eq!(found.len(), 1, "{bad}: {found:#?}");
            assert!(found[0].message.contains("witness_port"), "{found:#?}");
        }
    }

    #[test]
    fn the_public_interface_is_an_interface_name_and_renders_back() {
        let config = Config::parse(
            Path::new("c.toml"),
            "[cluster]\netcd = [\"http://e1:2379\"]\npublic_interface = \"eth0.12\"\n",
        )
        .unwrap();
        let cluster = config.cluster.clone().unwrap();
        assert_eq!(cluster.public_interface.as_deref(), Some("eth0.12"));
        let again = Config::parse(Path::new("c.toml"), &config.to_toml()).unwrap();
        assert_eq!(again.cluster, config.cluster);
        for bad in [
            "",
            "eth0/1",
            "a b",
            "sixteen-letters!",
            "0123456789abcdef",
            "..",
        ] {
            let text =
                format!("[cluster]\netcd = [\"http://e1:2379\"]\npublic_interface = {bad:?}\n");
            let found = errors(&text);
            assert_eq!(found.len(), 1, "{bad:?}: {found:#?}");
            assert!(found[0].message.contains("public_interface"), "{found:#?}");
        }
    }

    #[test]
    fn each_wrong_value_is_reported_at_its_line_and_column() {
        let text = "[server]\n\
                    [cluster]\n\
                    etcd = [\"127.0.0.1:2379\", \"http://h\", \"http://h:0\", \"http://h:1/v3\"]\n\
                    node = \"no spaces\"\n\
                    public_addresses = [\"10.0.0.300\", \"10.0.0.5\", \"10.0.0.5\"]\n\
                    node_ttl = \"90s\"\n";
        let found: Vec<(usize, usize, String)> = errors(text)
            .into_iter()
            .map(|e| (e.line, e.column, e.message))
            .collect();
        let at: Vec<(usize, usize)> = found.iter().map(|(l, c, _)| (*l, *c)).collect();
        assert_eq!(
            at,
            [
                (3, 9),
                (3, 27),
                (3, 39),
                (3, 53),
                (4, 8),
                (5, 21),
                (5, 47),
                (6, 12)
            ],
            "{found:#?}"
        );
        assert!(found[0].2.contains("http://"), "{found:#?}");
        assert!(found[1].2.contains("no port"), "{found:#?}");
        assert!(found[2].2.contains("1 to 65535"), "{found:#?}");
        assert!(found[3].2.contains("without a path"), "{found:#?}");
        assert!(found[6].2.contains("twice"), "{found:#?}");
        assert!(found[7].2.contains("1s to 60s"), "{found:#?}");
    }

    fn import(conf: &str, ctdb_dir: &Path) -> crate::smbconf::Imported {
        let path = Path::new("/etc/samba/smb.conf");
        let conf = crate::smbconf::SmbConf::parse(path, conf).unwrap();
        crate::smbconf::import::convert_with_ctdb(path, conf, ctdb_dir).unwrap()
    }

    #[test]
    fn clustering_yes_imports_a_cluster_with_ctdb_s_public_addresses() {
        let ctdb = tempfile::tempdir().unwrap();
        std::fs::write(
            ctdb.path().join("public_addresses"),
            "# comment\n10.77.0.51/24 eth0\n\n10.77.0.52/24 eth0,eth1\nbogus/24 eth0\n\
             fd00::51/64 eth0\n10.77.0.51/24 eth1\n",
        )
        .unwrap();
        let imported = import("[global]\nclustering = yes\n", ctdb.path());
        let cluster = imported.config.cluster.clone().unwrap();
        assert_eq!(cluster.etcd, [super::PLACEHOLDER_ETCD]);
        let addresses: Vec<String> = cluster
            .public_addresses
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(addresses, ["10.77.0.51", "10.77.0.52", "fd00::51"]);
        let warnings: Vec<String> = imported.warnings.iter().map(ToString::to_string).collect();
        let about = |what: &str| warnings.iter().any(|w| w.contains(what));
        assert!(about("placeholder"), "{warnings:#?}");
        assert!(about("nodes file"), "{warnings:#?}");
        assert!(about("\"bogus/24\" is not an address"), "{warnings:#?}");
        assert!(about("3 read from"), "{warnings:#?}");
        let again = Config::parse(Path::new("c.toml"), &imported.to_toml()).unwrap();
        assert_eq!(again.cluster, imported.config.cluster);
    }

    #[test]
    fn clustering_yes_without_ctdb_files_says_to_set_the_addresses() {
        let ctdb = tempfile::tempdir().unwrap();
        let imported = import("[global]\nclustering = yes\n", ctdb.path());
        assert!(imported.config.cluster.unwrap().public_addresses.is_empty());
        assert!(imported.warnings.iter().any(|w| {
            w.to_string()
                .contains("set cluster.public_addresses by hand")
        }));
        let alone = import("[global]\nclustering = no\n", ctdb.path());
        assert_eq!(alone.config.cluster, None);
        assert!(
            alone
                .warnings
                .iter()
                .all(|w| !w.to_string().contains("clustering"))
        );
    }

    #[test]
    fn a_cluster_without_etcd_or_with_unknown_keys_is_refused() {
        assert!(
            errors("[cluster]\nnode = \"a\"\n")[0]
                .message
                .contains("etcd")
        );
        assert!(
            errors("[cluster]\netcd = []\n")[0]
                .message
                .contains("no endpoint")
        );
        let unknown = errors("[cluster]\netcd = [\"http://e:2379\"]\nnodes = 3\n");
        assert_eq!((unknown[0].line, unknown[0].column), (3, 1));
        assert!(
            errors("[cluster]\netcd = [\"http://e:2379\"]\nmax_dialect = \"4.0\"\n")[0].line == 3
        );
    }
}
