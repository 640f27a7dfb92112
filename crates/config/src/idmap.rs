//! The `[idmap]` section (docs/auth.md): which Unix ids the users and groups of each Active
//! Directory domain act as. Each domain has a range; the id of a SID is the range's start plus
//! the SID's RID (as Samba's idmap_rid), so every node with the same section computes the
//! same ids without asking anyone.
//!
//! ```toml
//! [idmap.SMB3DAD]
//! sid = "S-1-5-21-47954915-979690838-2193643765"
//! range = [100000, 299999]
//! ```

use serde::Deserialize;
use smb3d_dtyp::Sid;
pub use smb3d_dtyp::idmap::{DomainIdmap as IdmapConfig, IdmapDomain};
use toml::Spanned;

use crate::model::Problem;
use crate::render::toml_string;

/// Ids below this are the system's own accounts: no domain range may reach them.
pub const MIN_DOMAIN_ID: u32 = 1000;

/// One domain as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDomain {
    sid: Spanned<String>,
    range: Spanned<[u32; 2]>,
}

/// Checks the domains of `[idmap]`, adding what is wrong to `problems`.
pub(crate) fn checked_idmap(
    raw: Vec<(Spanned<String>, RawDomain)>,
    problems: &mut Vec<Problem>,
) -> IdmapConfig {
    let mut domains: Vec<IdmapDomain> = Vec::new();
    for (name, raw) in raw {
        let sid = match raw.sid.get_ref().parse::<Sid>() {
            Ok(sid) if sid.authority() == 5 && sid.sub_authorities().len() == 4 => sid,
            _ => {
                problems.push(Problem::at(
                    raw.sid.span(),
                    format!(
                        "sid {:?} is not a domain SID (S-1-5-21-a-b-c)",
                        raw.sid.get_ref()
                    ),
                ));
                continue;
            }
        };
        let [low, high] = *raw.range.get_ref();
        if low < MIN_DOMAIN_ID || high < low {
            problems.push(Problem::at(
                raw.range.span(),
                format!("range must be [low, high] with {MIN_DOMAIN_ID} <= low <= high"),
            ));
            continue;
        }
        if let Some(other) = domains
            .iter()
            .find(|d| d.sid == sid || (low <= d.high && d.low <= high))
        {
            problems.push(Problem::at(
                name.span(),
                format!(
                    "domain {:?} has the SID or overlaps the range of domain {:?}",
                    name.get_ref(),
                    other.name
                ),
            ));
            continue;
        }
        domains.push(IdmapDomain {
            name: name.into_inner(),
            sid,
            low,
            high,
        });
    }
    IdmapConfig { domains }
}

/// `[idmap]` as TOML that parses back to `idmap`.
pub(crate) fn render_idmap(out: &mut String, idmap: &IdmapConfig) {
    use std::fmt::Write as _;
    for d in &idmap.domains {
        // Writing to a String cannot fail.
        let _ = writeln!(out, "\n[idmap.{}]", toml_string(&d.name));
        let _ = writeln!(out, "sid = \"{}\"", d.sid);
        let _ = writeln!(out, "range = [{}, {}]", d.low, d.high);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::Config;

    const SECTION: &str = "[idmap.SMB3DAD]\nsid = \"S-1-5-21-1-2-3\"\nrange = [100000, 199999]\n\
                           [idmap.OTHER]\nsid = \"S-1-5-21-4-5-6\"\nrange = [200000, 200099]\n";

    #[test]
    fn domain_sids_map_to_their_range_and_back() {
        let config = Config::parse(Path::new("c.toml"), SECTION).unwrap();
        let idmap = config.idmap.clone().unwrap();
        let sid = |s: &str| s.parse::<Sid>().unwrap();
        assert_eq!(idmap.id_of(&sid("S-1-5-21-1-2-3-1102")), Some(101_102));
        assert_eq!(idmap.id_of(&sid("S-1-5-21-1-2-3-513")), Some(100_513));
        assert_eq!(idmap.id_of(&sid("S-1-5-21-4-5-6-99")), Some(200_099));
        // Past the range, another domain, the domain itself, a well-known SID.
        assert_eq!(idmap.id_of(&sid("S-1-5-21-4-5-6-100")), None);
        assert_eq!(idmap.id_of(&sid("S-1-5-21-7-8-9-1102")), None);
        assert_eq!(idmap.id_of(&sid("S-1-5-21-1-2-3")), None);
        assert_eq!(idmap.id_of(&sid("S-1-18-1")), None);
        assert_eq!(idmap.id_of(&sid("S-1-5-21-1-2-3-1102-5")), None);
        assert_eq!(idmap.sid_of(101_102), Some(sid("S-1-5-21-1-2-3-1102")));
        assert_eq!(idmap.sid_of(200_000), Some(sid("S-1-5-21-4-5-6-0")));
        assert_eq!(idmap.sid_of(99_999), None);
        assert_eq!(idmap.sid_of(200_100), None);
        assert_eq!(idmap.domain("smb3dad").unwrap().low, 100_000);
        let again = Config::parse(Path::new("c.toml"), &config.to_toml()).unwrap();
        assert_eq!(again.idmap, config.idmap);
        assert_eq!(Config::parse(Path::new("c.toml"), "").unwrap().idmap, None);
    }

    #[test]
    fn bad_domains_are_refused_with_their_reasons() {
        let errors = |text: &str| {
            Config::parse_all_errors(Path::new("c.toml"), text)
                .unwrap_err()
                .iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
        };
        let e = errors("[idmap.A]\nsid = \"S-1-5-32-544\"\nrange = [100000, 1]\n");
        assert!(e[0].contains("domain SID"), "{e:?}");
        let e = errors("[idmap.A]\nsid = \"S-1-5-21-1-2-3\"\nrange = [10, 100]\n");
        assert!(e[0].contains("range"), "{e:?}");
        let e = errors(
            "[idmap.A]\nsid = \"S-1-5-21-1-2-3\"\nrange = [10000, 20000]\n\
             [idmap.B]\nsid = \"S-1-5-21-1-2-4\"\nrange = [20000, 30000]\n",
        );
        assert!(e[0].contains("overlaps"), "{e:?}");
        let e = errors(
            "[idmap.A]\nsid = \"S-1-5-21-1-2-3\"\nrange = [10000, 20000]\n\
             [idmap.B]\nsid = \"S-1-5-21-1-2-3\"\nrange = [30000, 40000]\n",
        );
        assert!(e[0].contains("overlaps"), "{e:?}");
        let e = errors("[idmap.A]\nsid = \"S-1-5-21-1-2-3\"\nrange = [10000, 20000]\nx = 1\n");
        assert!(e[0].contains('x'), "{e:?}");
    }
}
