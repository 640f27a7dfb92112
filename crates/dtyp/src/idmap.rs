//! The Unix ids of Active Directory domains' accounts, computed from their SIDs alone (as
//! Samba's idmap_rid): each domain has a range, and the id of a SID is the range's start plus
//! the SID's RID, so that every server configured alike gives the same answer without asking
//! anyone (smb3d's `[idmap]`, docs/auth.md).

use crate::Sid;

/// One domain's mapping: its SID and the ids `low..=high` its RIDs 0..=high-low take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdmapDomain {
    /// The domain's NetBIOS name, as the section names it.
    pub name: String,
    /// The domain SID, S-1-5-21-a-b-c.
    pub sid: Sid,
    pub low: u32,
    pub high: u32,
}

/// The domains of `[idmap]`, with disjoint ranges and distinct SIDs (the configuration
/// checks them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DomainIdmap {
    pub domains: Vec<IdmapDomain>,
}

impl DomainIdmap {
    /// The Unix id (uid or gid: a domain's RIDs are unique across its users and groups) of
    /// `sid`, when it is an account of a configured domain whose RID fits its range.
    pub fn id_of(&self, sid: &Sid) -> Option<u32> {
        let rid = sid.rid()?;
        self.domains.iter().find_map(|d| {
            if d.sid.with_rid(rid) != Some(*sid) {
                return None;
            }
            d.low.checked_add(rid).filter(|&id| id <= d.high)
        })
    }

    /// The SID of the Unix id `id`, when a domain's range holds it.
    pub fn sid_of(&self, id: u32) -> Option<Sid> {
        self.domains
            .iter()
            .find(|d| (d.low..=d.high).contains(&id))
            .and_then(|d| d.sid.with_rid(id - d.low))
    }

    /// The domain named `name` (NetBIOS names compare case-insensitively).
    pub fn domain(&self, name: &str) -> Option<&IdmapDomain> {
        self.domains
            .iter()
            .find(|d| d.name.eq_ignore_ascii_case(name))
    }
}
