//! Names of Active Directory accounts for lsarpc (MS-LSAT LsarLookupSids/LsarLookupNames)
//! and share user lists: /etc/passwd does not hold them, so the server keeps what its domain
//! logons told it (a verified PAC, or the DC's Netlogon validation: the account's SID,
//! sAMAccountName and domain NetBIOS name) and what the DC answered when asked (LsarLookupSids3,
//! LsarLookupNames4 over the secure channel), and names the domain-relative accounts every
//! domain has (MS-DTYP 2.4.2.4) and the `[idmap]` domains themselves.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use smb3d_auth::netlogon::{NetlogonClient, NetlogonError, Translated};
use smb3d_dtyp::Sid;
use smb3d_dtyp::idmap::DomainIdmap;

use crate::identity::Identity;

/// The most accounts kept: a few hundred bytes each; the oldest learned go first.
const MAX_ACCOUNTS: usize = 4096;
/// How long a share list's domain name keeps the SID the DC gave it: a group renamed or
/// deleted on the DC stops matching within this time.
const LIST_NAME_LIFETIME: Duration = Duration::from_secs(600);
/// How long the DC's "no such name" (for a list name) or "no such SID" (for lsarpc) holds.
const UNKNOWN_LIFETIME: Duration = Duration::from_secs(60);
/// After the DC could not be asked, how long lookups do without it (answered from what is
/// cached, list names unresolved) before it is tried again: a DC that is down costs one
/// bounded wait per this interval, not one per TREE_CONNECT.
const RETRY_AFTER: Duration = Duration::from_secs(30);
/// The most SIDs and names remembered as unknown to the DC, and list names remembered.
const MAX_REMEMBERED: usize = 4096;

/// What a name stands for, as lsarpc's SID_NAME_USE distinguishes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DomainAccount {
    User,
    Group,
    Alias,
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

/// Domain accounts seen at logon or named by the DC, by SID; names of share lists resolved
/// through the DC.
#[derive(Default)]
pub(crate) struct DomainNames {
    seen: Mutex<Seen>,
    asked: Mutex<Asked>,
}

/// What the DC answered, with when.
#[derive(Default)]
struct Asked {
    /// A share list's `domain\name` (lowercased) to its SID, None where the DC knows no
    /// such name.
    list_names: HashMap<String, (Option<Sid>, Instant)>,
    /// SIDs and names (lowercased `domain\name`) the DC did not know, for lsarpc.
    unknown: HashMap<String, Instant>,
    /// When the DC last could not be asked.
    failed: Option<Instant>,
}

impl Asked {
    fn dc_resting(&self, now: Instant) -> bool {
        self.failed
            .is_some_and(|at| now.saturating_duration_since(at) < RETRY_AFTER)
    }

    fn known_unknown(&self, key: &str, now: Instant) -> bool {
        self.unknown
            .get(key)
            .is_some_and(|at| now.saturating_duration_since(*at) < UNKNOWN_LIFETIME)
    }

    fn remember_unknown(&mut self, key: String, now: Instant) {
        if self.unknown.len() >= MAX_REMEMBERED {
            self.unknown
                .retain(|_, at| now.saturating_duration_since(*at) < UNKNOWN_LIFETIME);
            if self.unknown.len() >= MAX_REMEMBERED {
                self.unknown.clear();
            }
        }
        self.unknown.insert(key, now);
    }
}

#[derive(Default)]
struct Seen {
    /// SID to (account name, domain name, kind).
    by_sid: HashMap<Sid, (String, String, DomainAccount)>,
    /// Lowercased account name to SID: a LookupNames of a thousand names is a thousand
    /// hash lookups, not a scan of every account for each.
    by_name: HashMap<String, Sid>,
    /// The SIDs in the order they were first learned.
    order: VecDeque<Sid>,
}

impl Seen {
    /// Forgets `sid`'s name in `by_name`, if it still names `sid`.
    fn unname(&mut self, sid: &Sid) {
        if let Some((account, ..)) = self.by_sid.get(sid) {
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
        self.learn_kind(sid, account, domain, DomainAccount::User);
    }

    /// `sid` is the account `account` of `domain`, of the kind `kind`.
    fn learn_kind(&self, sid: Sid, account: &str, domain: &str, kind: DomainAccount) {
        let mut seen = self.seen.lock();
        seen.unname(&sid);
        seen.by_name.insert(account.to_lowercase(), sid);
        let names = (account.to_owned(), domain.to_owned(), kind);
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
        if let Some((account, domain_name, kind)) = self.seen.lock().by_sid.get(sid) {
            return Some((account.clone(), *kind, domain_name.clone()));
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
        let (_, domain, kind) = seen.by_sid.get(sid)?;
        Some((*sid, *kind, domain.clone()))
    }

    /// Asks the DC for the names of those `sids` of `domains` that nobody has named yet and
    /// the DC has not lately said it does not know; remembers its answers. Blocks for at most
    /// the client's bounds (nothing while the DC rests after a failure).
    pub fn ask_sids(&self, dc: &NetlogonClient, domains: &DomainIdmap, sids: &[Sid], now: Instant) {
        self.ask(
            domains,
            sids,
            |sid| sid.to_string(),
            |sid| self.name_of(domains, sid).is_none() && in_domains(domains, sid),
            |wanted| dc.lookup_sids(wanted),
            now,
        );
    }

    /// Asks the DC for the SIDs of those `names` (`DOMAIN\\account`, the domain the DC's) that
    /// are not known yet; remembers its answers, as [`DomainNames::ask_sids`].
    pub fn ask_names(
        &self,
        dc: &NetlogonClient,
        domains: &DomainIdmap,
        names: &[String],
        now: Instant,
    ) {
        self.ask(
            domains,
            names,
            |name| name.to_lowercase(),
            |name| {
                let account = name.split_once('\\').map_or(name.as_str(), |(_, a)| a);
                self.sid_of(domains, account).is_none()
            },
            |wanted| dc.lookup_names(wanted),
            now,
        );
    }

    /// The one way both lookups go: those of `items` still `unnamed` and not lately unknown
    /// to the DC (by `unknown_key`) are asked in one `call`; accounts of `domains` it names are
    /// learned, the rest remembered as unknown.
    fn ask<T: Clone>(
        &self,
        domains: &DomainIdmap,
        items: &[T],
        unknown_key: impl Fn(&T) -> String,
        unnamed: impl Fn(&T) -> bool,
        call: impl FnOnce(&[T]) -> Result<Vec<Option<Translated>>, NetlogonError>,
        now: Instant,
    ) {
        let wanted: Vec<T> = {
            let asked = self.asked.lock();
            if asked.dc_resting(now) {
                return;
            }
            items
                .iter()
                .filter(|item| unnamed(item) && !asked.known_unknown(&unknown_key(item), now))
                .cloned()
                .collect()
        };
        if wanted.is_empty() {
            return;
        }
        match call(&wanted) {
            Ok(answers) => {
                for (item, answer) in wanted.iter().zip(answers) {
                    match answer {
                        Some(t) if in_domains(domains, &t.sid) => {
                            if let Some(kind) = account_kind(t.kind) {
                                self.learn_kind(t.sid, &t.name, &t.domain, kind);
                            }
                        }
                        _ => self.asked.lock().remember_unknown(unknown_key(item), now),
                    }
                }
            }
            Err(e) => self.dc_failed(&e, now),
        }
    }

    fn dc_failed(&self, e: &NetlogonError, now: Instant) {
        tracing::warn!(
            "cannot ask the DC for names: {e}; asking again in {} s",
            RETRY_AFTER.as_secs()
        );
        self.asked.lock().failed = Some(now);
    }

    /// Whether any of `entries` (share list names of the DC's domain, lowercased
    /// `domain\\name`) has no live resolution and the DC may be asked now.
    pub fn lists_need_asking(&self, entries: &[String], now: Instant) -> bool {
        let asked = self.asked.lock();
        !asked.dc_resting(now)
            && entries
                .iter()
                .any(|e| list_resolution(&asked, e, now) == Resolved::Unknown)
    }

    /// Resolves the share list names `entries` (lowercased `domain\\name` of the DC's
    /// domain) whose resolution is missing or past its lifetime, in one call to the DC.
    pub fn ask_list_names(&self, dc: &NetlogonClient, entries: &[String], now: Instant) {
        let wanted: Vec<String> = {
            let asked = self.asked.lock();
            if asked.dc_resting(now) {
                return;
            }
            entries
                .iter()
                .filter(|e| list_resolution(&asked, e, now) == Resolved::Unknown)
                .cloned()
                .collect()
        };
        if wanted.is_empty() {
            return;
        }
        match dc.lookup_names(&wanted) {
            Ok(answers) => {
                for (entry, answer) in wanted.iter().zip(answers) {
                    self.resolve_list_name(entry, answer.map(|t| t.sid), now);
                }
            }
            Err(e) => self.dc_failed(&e, now),
        }
    }

    /// Records the DC's answer for the share list name `entry` (lowercased `domain\\name`).
    pub fn resolve_list_name(&self, entry: &str, sid: Option<Sid>, now: Instant) {
        let mut asked = self.asked.lock();
        if asked.list_names.len() >= MAX_REMEMBERED {
            asked.list_names.clear();
        }
        asked.list_names.insert(entry.to_owned(), (sid, now));
    }

    /// How the share list name `entry` (lowercased `domain\\name`) stands now.
    pub fn list_name(&self, entry: &str, now: Instant) -> Resolved {
        list_resolution(&self.asked.lock(), entry, now)
    }
}

/// What a share list's name of the DC's domain stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolved {
    /// The DC named this SID, within its lifetime.
    Sid(Sid),
    /// The DC said there is no such account, lately.
    NoSuchName,
    /// Not known: never asked, its answer too old, or the DC could not be asked.
    Unknown,
}

fn list_resolution(asked: &Asked, entry: &str, now: Instant) -> Resolved {
    match asked.list_names.get(entry) {
        Some((Some(sid), at)) if now.saturating_duration_since(*at) < LIST_NAME_LIFETIME => {
            Resolved::Sid(*sid)
        }
        Some((None, at)) if now.saturating_duration_since(*at) < UNKNOWN_LIFETIME => {
            Resolved::NoSuchName
        }
        _ => Resolved::Unknown,
    }
}

/// Whether `sid` is an account of one of `domains` (only those are named).
fn in_domains(domains: &DomainIdmap, sid: &Sid) -> bool {
    sid.rid().is_some_and(|rid| {
        domains
            .domains
            .iter()
            .any(|d| d.sid.with_rid(rid) == Some(*sid))
    })
}

fn account_kind(kind: smb3d_rpc::SidType) -> Option<DomainAccount> {
    use smb3d_rpc::SidType;
    match kind {
        SidType::User | SidType::Computer => Some(DomainAccount::User),
        SidType::Group | SidType::WellKnownGroup => Some(DomainAccount::Group),
        SidType::Alias => Some(DomainAccount::Alias),
        _ => None,
    }
}

/// How share user lists see names of the DC's domain: through [`DomainNames`]' resolutions,
/// at the time of the check.
pub(crate) struct ListNames<'a> {
    /// The resolutions, and the DC's domain (NetBIOS name); None without a DC.
    dc: Option<(&'a DomainNames, &'a str)>,
    domains: &'a DomainIdmap,
    now: Instant,
}

impl<'a> ListNames<'a> {
    /// Lists as a server with `dc` (its domain's NetBIOS name) sees them.
    pub fn new(
        names: &'a DomainNames,
        dc_domain: Option<&'a str>,
        domains: &'a DomainIdmap,
        now: Instant,
    ) -> Self {
        Self {
            dc: dc_domain.map(|d| (names, d)),
            domains,
            now,
        }
    }

    /// Lists of a server without a DC: names are matched as they are written only.
    #[cfg(test)]
    pub fn without_dc(domains: &'a DomainIdmap) -> Self {
        Self {
            dc: None,
            domains,
            now: Instant::now(),
        }
    }

    /// The lowercased `domain\\name` of a list entry (after `@` or `+`) that names an account
    /// of the DC's domain; None for anything else.
    pub fn dc_entry(&self, entry: &str) -> Option<String> {
        let (_, domain) = self.dc?;
        dc_entry(entry, domain)
    }

    /// How `entry` stands, when it names an account of the DC's domain.
    pub fn resolved(&self, entry: &str) -> Option<Resolved> {
        let (names, _) = self.dc?;
        let key = self.dc_entry(entry)?;
        Some(names.list_name(&key, self.now))
    }

    /// Whether `who` could be a member of a domain group: a domain user (its user SID in an
    /// `[idmap]` domain). A local user is no member of any domain group.
    pub fn may_be_member(&self, who: &Identity) -> bool {
        in_domains(self.domains, &who.token.user)
    }
}

/// The lowercased `domain\\name` of `entry` (after `@` or `+`) when its domain is `domain`.
pub(crate) fn dc_entry(entry: &str, domain: &str) -> Option<String> {
    let bare = entry.strip_prefix(['@', '+']).unwrap_or(entry);
    let (d, name) = bare.split_once('\\')?;
    (d.eq_ignore_ascii_case(domain) && !name.is_empty()).then(|| bare.to_lowercase())
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
