//! Names of Active Directory accounts for lsarpc (MS-LSAT LsarLookupSids/LsarLookupNames):
//! /etc/passwd does not hold them and smb3d asks no DC for names, so the server keeps what
//! its domain logons told it (a verified PAC, or the DC's Netlogon validation: the account's
//! SID, sAMAccountName and domain NetBIOS name), and names the domain-relative accounts every
//! domain has (MS-DTYP 2.4.2.4) and the `[idmap]` domains themselves.

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;
use smb3d_dtyp::Sid;
use smb3d_dtyp::idmap::DomainIdmap;

/// The most accounts kept: a few hundred bytes each; the oldest learned go first.
const MAX_ACCOUNTS: usize = 4096;

/// What a name stands for, as lsarpc's SID_NAME_USE distinguishes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DomainAccount {
    User,
    Group,
    Domain,
}

/// The domain-relative RIDs whose names MS-DTYP 2.4.2.4 gives, in every domain.
const WELL_KNOWN_RIDS: [(u32, &str, DomainAccount); 10] = [
    (500, "Administrator", DomainAccount::User),
    (501, "Guest", DomainAccount::User),
    (512, "Domain Admins", DomainAccount::Group),
    (513, "Domain Users", DomainAccount::Group),
    (514, "Domain Guests", DomainAccount::Group),
    (515, "Domain Computers", DomainAccount::Group),
    (516, "Domain Controllers", DomainAccount::Group),
    (518, "Schema Admins", DomainAccount::Group),
    (519, "Enterprise Admins", DomainAccount::Group),
    (520, "Group Policy Creator Owners", DomainAccount::Group),
];

/// Domain accounts seen at logon, by SID.
#[derive(Default)]
pub(crate) struct DomainNames {
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// SID to (account name, domain name).
    by_sid: HashMap<Sid, (String, String)>,
    /// Lowercased account name to SID: a LookupNames of a thousand names is a thousand
    /// hash lookups, not a scan of every account for each.
    by_name: HashMap<String, Sid>,
    /// The SIDs in the order they were first learned.
    order: VecDeque<Sid>,
}

impl Seen {
    /// Forgets `sid`'s name in `by_name`, if it still names `sid`.
    fn unname(&mut self, sid: &Sid) {
        if let Some((account, _)) = self.by_sid.get(sid) {
            let key = account.to_lowercase();
            if self.by_name.get(&key) == Some(sid) {
                self.by_name.remove(&key);
            }
        }
    }
}

impl DomainNames {
    /// A logon of `account` of `domain` as `sid` (names as the DC gave them).
    pub fn learn(&self, sid: Sid, account: &str, domain: &str) {
        let mut seen = self.seen.lock();
        seen.unname(&sid);
        seen.by_name.insert(account.to_lowercase(), sid);
        let names = (account.to_owned(), domain.to_owned());
        if seen.by_sid.insert(sid, names).is_none() {
            seen.order.push_back(sid);
            if seen.order.len() > MAX_ACCOUNTS
                && let Some(oldest) = seen.order.pop_front()
            {
                seen.unname(&oldest);
                seen.by_sid.remove(&oldest);
            }
        }
    }

    /// The name, kind and domain name of `sid`, an account or domain of `domains`.
    pub fn name_of(
        &self,
        domains: &DomainIdmap,
        sid: &Sid,
    ) -> Option<(String, DomainAccount, String)> {
        if let Some(domain) = domains.domains.iter().find(|d| d.sid == *sid) {
            return Some((
                domain.name.clone(),
                DomainAccount::Domain,
                domain.name.clone(),
            ));
        }
        let rid = sid.rid()?;
        let domain = domains
            .domains
            .iter()
            .find(|d| d.sid.with_rid(rid) == Some(*sid))?;
        if let Some((account, domain_name)) = self.seen.lock().by_sid.get(sid) {
            return Some((account.clone(), DomainAccount::User, domain_name.clone()));
        }
        WELL_KNOWN_RIDS
            .iter()
            .find(|(known, ..)| *known == rid)
            .map(|(_, name, kind)| ((*name).to_owned(), *kind, domain.name.clone()))
    }

    /// The SID, kind and domain name of `name` (case-insensitive): a domain of `domains`, or
    /// an account seen at logon.
    pub fn sid_of(
        &self,
        domains: &DomainIdmap,
        name: &str,
    ) -> Option<(Sid, DomainAccount, String)> {
        if let Some(domain) = domains.domain(name) {
            return Some((domain.sid, DomainAccount::Domain, domain.name.clone()));
        }
        let seen = self.seen.lock();
        let sid = seen.by_name.get(&name.to_lowercase())?;
        let (_, domain) = seen.by_sid.get(sid)?;
        Some((*sid, DomainAccount::User, domain.clone()))
    }
}

#[cfg(test)]
mod tests {
    use smb3d_dtyp::idmap::IdmapDomain;

    use super::*;

    fn sid(text: &str) -> Sid {
        text.parse().unwrap()
    }

    fn ad() -> DomainIdmap {
        DomainIdmap {
            domains: vec![IdmapDomain {
                name: "AD".into(),
                sid: sid("S-1-5-21-1-2-3"),
                low: 100_000,
                high: 199_999,
            }],
        }
    }

    #[test]
    fn accounts_seen_at_logon_and_the_well_known_ones_have_names() {
        let names = DomainNames::default();
        let domains = ad();
        let erin = sid("S-1-5-21-1-2-3-1105");
        assert_eq!(names.name_of(&domains, &erin), None, "not seen yet");
        names.learn(erin, "erin", "AD");
        assert_eq!(
            names.name_of(&domains, &erin),
            Some(("erin".into(), DomainAccount::User, "AD".into()))
        );
        assert_eq!(
            names.sid_of(&domains, "ERIN"),
            Some((erin, DomainAccount::User, "AD".into()))
        );
        assert_eq!(
            names.name_of(&domains, &sid("S-1-5-21-1-2-3-513")),
            Some(("Domain Users".into(), DomainAccount::Group, "AD".into()))
        );
        assert_eq!(
            names.name_of(&domains, &sid("S-1-5-21-1-2-3")),
            Some(("AD".into(), DomainAccount::Domain, "AD".into()))
        );
        assert_eq!(
            names.sid_of(&domains, "ad"),
            Some((sid("S-1-5-21-1-2-3"), DomainAccount::Domain, "AD".into()))
        );
        // A well-known RID of a domain that is not configured is no one's.
        assert_eq!(names.name_of(&domains, &sid("S-1-5-21-9-9-9-513")), None);
    }

    #[test]
    fn a_sid_outside_the_configured_domains_is_not_named_whatever_a_logon_said() {
        let names = DomainNames::default();
        let stranger = sid("S-1-5-21-9-9-9-1105");
        names.learn(stranger, "mallory", "EVIL");
        assert_eq!(names.name_of(&ad(), &stranger), None);
    }

    #[test]
    fn the_oldest_accounts_go_first_past_the_bound() {
        let names = DomainNames::default();
        let domains = ad();
        let account = |rid: u32| sid("S-1-5-21-1-2-3").with_rid(rid).unwrap();
        for rid in 0..=u32::try_from(MAX_ACCOUNTS).unwrap() {
            names.learn(account(2000 + rid), &format!("u{rid}"), "AD");
        }
        assert_eq!(names.name_of(&domains, &account(2000)), None);
        assert!(names.name_of(&domains, &account(2001)).is_some());
        assert_eq!(names.sid_of(&domains, "u0"), None);
        assert_eq!(
            names.sid_of(&domains, "U1").map(|(s, ..)| s),
            Some(account(2001))
        );
        let seen = names.seen.lock();
        assert_eq!(
            (seen.by_sid.len(), seen.by_name.len()),
            (MAX_ACCOUNTS, MAX_ACCOUNTS)
        );
    }

    #[test]
    fn a_renamed_account_answers_to_its_new_name_only() {
        let names = DomainNames::default();
        let domains = ad();
        let erin = sid("S-1-5-21-1-2-3-1105");
        names.learn(erin, "erin", "AD");
        names.learn(erin, "erin.new", "AD");
        assert_eq!(names.sid_of(&domains, "erin"), None);
        assert_eq!(
            names.sid_of(&domains, "erin.new").map(|(s, ..)| s),
            Some(erin)
        );
    }
}
