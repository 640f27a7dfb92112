//! The `[auth]` section (docs/auth.md): Kerberos logons with the service keys of a keytab,
//! and NTLM logons of domain users passed through to a DC (`dc`, `machine_password_file`).
//! Without it smb3d takes NTLMv2 logons of its user database only.

use std::net::IpAddr;
use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use crate::model::Problem;
use crate::render::toml_string;

/// `[auth]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAuth {
    keytab: Spanned<PathBuf>,
    realm: Spanned<String>,
    dc: Option<Spanned<String>>,
    machine_password_file: Option<Spanned<PathBuf>>,
}

/// A checked `[auth]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    /// The MIT keytab holding the keys of `cifs/<host>@<realm>` (mode 0600, as `kadmin ktadd`
    /// writes it).
    pub keytab: PathBuf,
    /// The Kerberos realm the server belongs to; clients of this realm log on as the local
    /// user of the same name.
    pub realm: String,
    /// NTLM pass-through: the DC's address and the file holding the machine account's
    /// password (mode 0600, owned by root), both or neither.
    pub netlogon: Option<NetlogonConfig>,
}

/// Where NTLM logons of domain users are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetlogonConfig {
    /// The domain controller's IP address.
    pub dc: IpAddr,
    /// The machine account's password, as the join wrote it.
    pub machine_password_file: PathBuf,
}

/// Checks `raw`, adding what is wrong to `problems`.
pub(crate) fn checked_auth(raw: RawAuth, problems: &mut Vec<Problem>) -> AuthConfig {
    let realm = raw.realm.get_ref();
    if realm.is_empty()
        || realm
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '@' | '/' | '\\'))
    {
        problems.push(Problem::at(
            raw.realm.span(),
            format!("realm {realm:?} is not a Kerberos realm name (no spaces, `@`, `/` or `\\`)"),
        ));
    }
    if !raw.keytab.get_ref().is_absolute() {
        problems.push(Problem::at(
            raw.keytab.span(),
            "keytab must be an absolute path",
        ));
    }
    let netlogon = match (raw.dc, raw.machine_password_file) {
        (None, None) => None,
        (Some(dc), Some(file)) => {
            let address = dc.get_ref().parse::<IpAddr>();
            if address.is_err() {
                problems.push(Problem::at(
                    dc.span(),
                    format!("dc {:?} is not an IP address", dc.get_ref()),
                ));
            }
            if !file.get_ref().is_absolute() {
                problems.push(Problem::at(
                    file.span(),
                    "machine_password_file must be an absolute path",
                ));
            }
            address.ok().map(|dc| NetlogonConfig {
                dc,
                machine_password_file: file.into_inner(),
            })
        }
        (Some(dc), None) => {
            problems.push(Problem::at(dc.span(), "dc needs machine_password_file"));
            None
        }
        (None, Some(file)) => {
            problems.push(Problem::at(file.span(), "machine_password_file needs dc"));
            None
        }
    };
    AuthConfig {
        keytab: raw.keytab.into_inner(),
        realm: raw.realm.into_inner(),
        netlogon,
    }
}

/// `[auth]` as TOML that parses back to `auth`.
pub(crate) fn render_auth(out: &mut String, auth: &AuthConfig) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    let _ = writeln!(out, "\n[auth]");
    let _ = writeln!(
        out,
        "keytab = {}",
        toml_string(&auth.keytab.display().to_string())
    );
    let _ = writeln!(out, "realm = {}", toml_string(&auth.realm));
    if let Some(n) = &auth.netlogon {
        let _ = writeln!(out, "dc = {}", toml_string(&n.dc.to_string()));
        let _ = writeln!(
            out,
            "machine_password_file = {}",
            toml_string(&n.machine_password_file.display().to_string())
        );
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::Config;

    #[test]
    fn an_auth_section_reads_and_renders_back() {
        let config = Config::parse(
            Path::new("c.toml"),
            "[auth]\nkeytab = \"/etc/smb3d/krb5.keytab\"\nrealm = \"EXAMPLE.TEST\"\n",
        )
        .unwrap();
        let auth = config.auth.clone().unwrap();
        assert_eq!(auth.keytab, Path::new("/etc/smb3d/krb5.keytab"));
        assert_eq!(auth.realm, "EXAMPLE.TEST");
        let again = Config::parse(Path::new("c.toml"), &config.to_toml()).unwrap();
        assert_eq!(again.auth, config.auth);
        assert_eq!(Config::parse(Path::new("c.toml"), "").unwrap().auth, None);
    }

    #[test]
    fn a_bad_auth_section_is_refused_with_its_reasons() {
        let errors = |text: &str| {
            Config::parse_all_errors(Path::new("c.toml"), text)
                .unwrap_err()
                .iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
        };
        let e = errors("[auth]\nkeytab = \"krb5.keytab\"\nrealm = \"A B@C\"\n");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].contains("absolute"), "{e:?}");
        assert!(e[1].contains("realm"), "{e:?}");
        let e = errors("[auth]\nrealm = \"EXAMPLE.TEST\"\n");
        assert!(e[0].contains("keytab"), "{e:?}");
        let e = errors("[auth]\nkeytab = \"/k\"\nrealm = \"R\"\nkdc = \"x\"\n");
        assert!(e[0].contains("kdc"), "{e:?}");
        let e = errors("[auth]\nkeytab = \"/k\"\nrealm = \"R\"\ndc = \"dc1\"\n");
        assert!(e[0].contains("machine_password_file"), "{e:?}");
        let e = errors(
            "[auth]\nkeytab = \"/k\"\nrealm = \"R\"\ndc = \"dc1\"\nmachine_password_file = \"p\"\n",
        );
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(
            e[0].contains("IP address") && e[1].contains("absolute"),
            "{e:?}"
        );
    }

    #[test]
    fn a_pass_through_dc_reads_and_renders_back() {
        let text = "[auth]\nkeytab = \"/k\"\nrealm = \"R\"\ndc = \"127.0.0.50\"\n\
                    machine_password_file = \"/etc/smb3d/machine.pw\"\n";
        let config = Config::parse(Path::new("c.toml"), text).unwrap();
        let netlogon = config.auth.clone().unwrap().netlogon.unwrap();
        assert_eq!(netlogon.dc.to_string(), "127.0.0.50");
        assert_eq!(
            netlogon.machine_password_file,
            Path::new("/etc/smb3d/machine.pw")
        );
        let again = Config::parse(Path::new("c.toml"), &config.to_toml()).unwrap();
        assert_eq!(again.auth, config.auth);
    }
}
