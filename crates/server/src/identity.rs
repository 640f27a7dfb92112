//! Who a session is, as SIDs (MS-DTYP 2.4.2): users and groups map to the server's machine
//! domain S-1-5-21-a-b-c with Samba's algorithmic RIDs (uid * 2 + 1000 for users, gid * 2 +
//! 1001 for groups).

use std::fs;

use smb3d_auth::krb5::Pac;
use smb3d_auth::names;
use smb3d_dtyp::idmap::DomainIdmap;
use smb3d_dtyp::{Privileges, Sid, Token};
use smb3d_vfs::Credentials;

/// RID bases of Samba's algorithmic mapping.
const USER_RID_BASE: u32 = 1000;
const GROUP_RID_BASE: u32 = 1001;

/// The machine domain and the mapping between Unix ids and SIDs; the ranges of Active
/// Directory domains (`[idmap]`) come first.
pub(crate) struct IdMap {
    domain: Sid,
    domains: DomainIdmap,
}

/// A session's identity: the access token (MS-DTYP 2.5.2) and the Unix credentials file-system
/// work runs with.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub token: Token,
    pub unix: Credentials,
}

/// A Unix user or group id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnixId {
    User(u32),
    Group(u32),
    /// An account of an `[idmap]` domain: its RID gives one id that serves as its uid and as
    /// its gid (idmap_rid), and only the DC knows whether it is a user or a group.
    Account(u32),
}

/// The account anonymous sessions act as ("nobody").
const NOBODY_ID: u32 = 65534;

impl IdMap {
    /// The domain S-1-5-21-a-b-c is derived from the server name, so that it stays the same
    /// across restarts and SIDs stored in ACLs keep their meaning.
    pub fn new(server_name: &str) -> IdMap {
        // FNV-1a, three times with different seeds: stable and well spread.
        let hash = |seed: u32| {
            server_name
                .to_ascii_uppercase()
                .bytes()
                .fold(0x811c_9dc5_u32 ^ seed, |h, b| {
                    (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
                })
        };
        let domain = Sid::new(5, &[21, hash(1), hash(2), hash(3)]).unwrap_or(Sid::NOBODY);
        IdMap {
            domain,
            domains: DomainIdmap::default(),
        }
    }

    /// The `[idmap]` domains.
    pub fn domains(&self) -> &DomainIdmap {
        &self.domains
    }

    /// With the ranges of `domains`: their ids are their accounts' SIDs.
    #[must_use]
    pub fn with_domains(mut self, domains: DomainIdmap) -> IdMap {
        self.domains = domains;
        self
    }

    pub fn user_sid(&self, uid: u32) -> Sid {
        if let Some(sid) = self.domains.sid_of(uid) {
            return sid;
        }
        uid.checked_mul(2)
            .and_then(|r| r.checked_add(USER_RID_BASE))
            .and_then(|rid| self.domain.with_rid(rid))
            .unwrap_or_else(|| Sid::unix_user(uid))
    }

    pub fn group_sid(&self, gid: u32) -> Sid {
        if let Some(sid) = self.domains.sid_of(gid) {
            return sid;
        }
        gid.checked_mul(2)
            .and_then(|r| r.checked_add(GROUP_RID_BASE))
            .and_then(|rid| self.domain.with_rid(rid))
            .unwrap_or_else(|| Sid::unix_group(gid))
    }

    /// The machine domain, S-1-5-21-a-b-c.
    pub fn domain(&self) -> Sid {
        self.domain
    }

    /// The Unix user or group a SID of the machine domain (or Samba's S-1-22 Unix-id SIDs)
    /// stands for, or the id of an account of an `[idmap]` domain.
    pub fn unix_id(&self, sid: &Sid) -> Option<UnixId> {
        if let Some(id) = self.domains.id_of(sid) {
            return Some(UnixId::Account(id));
        }
        if let Some(uid) = sid.as_unix_user() {
            return Some(UnixId::User(uid));
        }
        if let Some(gid) = sid.as_unix_group() {
            return Some(UnixId::Group(gid));
        }
        let rid = sid.rid()?;
        if self.domain.with_rid(rid) != Some(*sid) {
            return None;
        }
        // Even RIDs from the base are users, odd ones groups (see the module docs).
        match rid.checked_sub(USER_RID_BASE)? {
            offset if offset % 2 == 0 => Some(UnixId::User(offset / 2)),
            offset => Some(UnixId::Group((offset - 1) / 2)),
        }
    }

    /// The identity of the Unix account `uid`: its user SID, its primary and supplementary
    /// groups (from /etc/passwd and /etc/group, the groups listing the account's Unix name as
    /// getgrouplist(3) finds them, whatever name the session logged on with), Everyone,
    /// Authenticated Users and BUILTIN\Users, and, as Samba adds them, the Unix-id SIDs of the
    /// user and its groups (S-1-22-1-uid, S-1-22-2-gid), so that ACEs Samba wrote for unmapped
    /// ids still apply.
    pub fn identity(&self, uid: u32) -> Identity {
        self.identity_in(&Accounts::read(), uid)
    }

    fn identity_in(&self, accounts: &Accounts, uid: u32) -> Identity {
        let gid = accounts.primary_gid(uid).unwrap_or(uid);
        let supplementary: Vec<u32> = accounts
            .user_name(uid)
            .map(|name| accounts.groups_of(name).filter(|&g| g != gid).collect())
            .unwrap_or_default();
        let unix_gids = || std::iter::once(gid).chain(supplementary.iter().copied());
        // Sized exactly: every session keeps its token, and growing by push reserved room
        // for eight 68-byte SIDs where a user in one group has six.
        let mut groups = Vec::with_capacity(2 * (1 + supplementary.len()) + 4);
        groups.extend(unix_gids().map(|g| self.group_sid(g)));
        groups.extend([Sid::EVERYONE, Sid::AUTHENTICATED_USERS, Sid::BUILTIN_USERS]);
        groups.push(Sid::unix_user(uid));
        groups.extend(unix_gids().map(Sid::unix_group));
        Identity {
            token: Token {
                user: self.user_sid(uid),
                groups,
                privileges: Privileges::empty(),
            },
            unix: Credentials {
                uid,
                gid,
                groups: supplementary,
            },
        }
    }

    /// The identity of a domain user known by its verified PAC: the PAC's user and group SIDs
    /// (with Everyone, Authenticated Users and BUILTIN\\Users), acting as the uid its SID maps
    /// to, the primary group's gid, and the gids of the other groups that map. None when the
    /// user's SID is in no configured domain (the logon then fails).
    pub fn domain_identity(&self, pac: &Pac) -> Option<Identity> {
        let uid = self.domains.id_of(&pac.user_sid)?;
        let gid = pac
            .group_sids
            .first()
            .and_then(|sid| self.domains.id_of(sid))
            .unwrap_or(uid);
        let mut supplementary: Vec<u32> = Vec::new();
        for id in pac.group_sids.iter().filter_map(|s| self.domains.id_of(s)) {
            if id != gid && !supplementary.contains(&id) {
                supplementary.push(id);
            }
        }
        let mut groups = pac.group_sids.clone();
        groups.extend([Sid::EVERYONE, Sid::AUTHENTICATED_USERS, Sid::BUILTIN_USERS]);
        Some(Identity {
            token: Token {
                user: pac.user_sid,
                groups,
                privileges: Privileges::empty(),
            },
            unix: Credentials {
                uid,
                gid,
                groups: supplementary,
            },
        })
    }

    /// The identity `session` has on a share that forces a user (its uid) and/or a group, as
    /// Samba's `force user` and `force group`: the forced user's token and credentials in
    /// place of the session's own, and the forced group as the primary group (the former
    /// primary group staying a supplementary one).
    pub fn forced(&self, session: &Identity, user: Option<u32>, group: Option<u32>) -> Identity {
        let mut identity = match user {
            Some(uid) => self.identity(uid),
            None => session.clone(),
        };
        if let Some(gid) = group {
            let primary = self.group_sid(gid);
            let unix = &mut identity.unix;
            if unix.gid != gid {
                unix.groups.retain(|&g| g != gid);
                unix.groups.push(unix.gid);
                unix.gid = gid;
            }
            let groups = &mut identity.token.groups;
            groups.retain(|sid| *sid != primary);
            groups.insert(0, primary);
            if !groups.contains(&Sid::unix_group(gid)) {
                groups.push(Sid::unix_group(gid));
            }
        }
        identity
    }

    /// A guest's identity: anonymous to access checks (the Anonymous SID and Everyone), acting
    /// on disk as the Unix account `uid` (Samba's `guest account`), so its files are that
    /// account's.
    pub fn guest(&self, uid: u32) -> Identity {
        let unix = self.identity(uid).unix;
        Identity {
            unix,
            ..self.anonymous()
        }
    }

    /// The identity of an anonymous session: Anonymous and Everyone, acting as "nobody".
    pub fn anonymous(&self) -> Identity {
        Identity {
            token: Token {
                user: Sid::ANONYMOUS,
                groups: vec![Sid::EVERYONE],
                privileges: Privileges::empty(),
            },
            unix: Credentials {
                uid: NOBODY_ID,
                gid: NOBODY_ID,
                groups: Vec::new(),
            },
        }
    }
}

/// The Unix account database, as far as tokens and name lookups need it.
pub(crate) struct Accounts {
    passwd: String,
    group: String,
}

impl Accounts {
    pub fn read() -> Accounts {
        Accounts {
            passwd: fs::read_to_string("/etc/passwd").unwrap_or_default(),
            group: fs::read_to_string("/etc/group").unwrap_or_default(),
        }
    }

    fn primary_gid(&self, uid: u32) -> Option<u32> {
        self.passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            let (_, _, u, g) = (
                fields.next()?,
                fields.next()?,
                fields.next()?,
                fields.next()?,
            );
            (u.parse::<u32>().ok()? == uid)
                .then(|| g.parse().ok())
                .flatten()
        })
    }

    /// The uid of the user `name` ([`id_of`]).
    pub fn uid_of(&self, name: &str) -> Option<u32> {
        id_of(&self.passwd, name)
    }

    /// The gid of the group `name` ([`id_of`]).
    pub fn gid_of(&self, name: &str) -> Option<u32> {
        id_of(&self.group, name)
    }

    /// The home directory (sixth field) passwd gives the user `uid`.
    pub fn home_of(&self, uid: u32) -> Option<&str> {
        self.passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            let (_, _, id) = (fields.next()?, fields.next()?, fields.next()?);
            let home = fields.nth(2)?;
            (id.parse::<u32>().ok()? == uid && !home.is_empty()).then_some(home)
        })
    }

    /// The name of the user `uid`.
    pub fn user_name(&self, uid: u32) -> Option<&str> {
        name_of(&self.passwd, uid)
    }

    /// The name of the group `gid`.
    pub fn group_name(&self, gid: u32) -> Option<&str> {
        name_of(&self.group, gid)
    }

    /// The groups whose member list names the Unix account `user` (exactly: Unix names are
    /// case-sensitive).
    fn groups_of<'a>(&'a self, user: &'a str) -> impl Iterator<Item = u32> + 'a {
        self.group.lines().filter_map(move |line| {
            let mut fields = line.split(':');
            let (_, _, gid, members) = (
                fields.next()?,
                fields.next()?,
                fields.next()?,
                fields.next()?,
            );
            members
                .split(',')
                .any(|m| m == user)
                .then(|| gid.parse().ok())
                .flatten()
        })
    }
}

/// The id (third field) of the entry `name` in a passwd- or group-format file, for names an
/// administrator configured (`force_user`, `@group`): the entry of exactly that name, else one
/// whose name is the same as account names compare (`names::same`).
fn id_of(file: &str, name: &str) -> Option<u32> {
    let entries = || {
        file.lines().filter_map(|line| {
            let mut fields = line.split(':');
            let (entry, _, id) = (fields.next()?, fields.next()?, fields.next()?);
            Some((entry, id.parse().ok()?))
        })
    };
    entries()
        .find(|(entry, _)| *entry == name)
        .or_else(|| entries().find(|(entry, _)| names::same(entry, name)))
        .map(|(_, id)| id)
}

/// The name of the entry with id `id` in a passwd- or group-format file.
fn name_of(file: &str, id: u32) -> Option<&str> {
    file.lines().find_map(|line| {
        let mut fields = line.split(':');
        let (entry, _, entry_id) = (fields.next()?, fields.next()?, fields.next()?);
        (entry_id.parse::<u32>().ok()? == id).then_some(entry)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sids_round_trip() {
        let map = IdMap::new("FILES");
        let alice = map.user_sid(1000);
        assert!(alice.to_string().starts_with("S-1-5-21-"), "{alice}");
        assert_eq!(alice.rid(), Some(3000));
        assert_eq!(map.group_sid(50).rid(), Some(1101));
        assert_eq!(
            IdMap::new("files").user_sid(1),
            map.user_sid(1),
            "stable, case-insensitive"
        );
        assert_ne!(IdMap::new("OTHER").user_sid(1), map.user_sid(1));
    }

    #[test]
    fn accounts_parse() {
        let accounts = Accounts {
            passwd: "root:x:0:0:root:/root:/bin/sh\nalice:x:1000:100::/home/alice:/bin/sh\n\
                     Alice:x:1001:100::/:/bin/sh\n"
                .into(),
            group: "users:x:100:\nstaff:x:50:bob,alice\nwheel:x:10:bob,Alice\n".into(),
        };
        assert_eq!(accounts.primary_gid(1000), Some(100));
        assert_eq!(accounts.groups_of("alice").collect::<Vec<_>>(), [50]);
        assert_eq!(accounts.groups_of("Alice").collect::<Vec<_>>(), [10]);
        assert_eq!(accounts.uid_of("alice"), Some(1000));
        assert_eq!(accounts.uid_of("Alice"), Some(1001));
        assert_eq!(accounts.uid_of("ALICE"), Some(1000));
        assert_eq!(accounts.uid_of("al\u{131}ce"), None);
        assert_eq!(accounts.uid_of("staff"), None);
        assert_eq!(accounts.gid_of("Staff"), Some(50));
        assert_eq!(accounts.user_name(0), Some("root"));
        assert_eq!(accounts.group_name(10), Some("wheel"));
        assert_eq!(accounts.group_name(11), None);
    }

    /// Supplementary groups are those of the Unix account the session acts as, found by its
    /// Unix name, not by the name the session logged on with.
    #[test]
    fn groups_follow_the_unix_account() {
        let map = IdMap::new("FILES");
        let accounts = Accounts {
            passwd: "katherine:x:1000:100::/:/bin/sh\nkate:x:1001:100::/:/bin/sh\n".into(),
            group: "users:x:100:\nstaff:x:50:katherine\nwheel:x:10:kate\n".into(),
        };
        let katherine = map.identity_in(&accounts, 1000);
        assert_eq!((katherine.unix.gid, katherine.unix.groups), (100, vec![50]));
        assert!(katherine.token.groups.contains(&map.group_sid(50)));
        assert!(!katherine.token.groups.contains(&map.group_sid(10)));
        let unknown = map.identity_in(&accounts, 4242);
        assert_eq!((unknown.unix.gid, unknown.unix.groups), (4242, vec![]));
        // Every session keeps its token: no room beyond its SIDs (it held eight for six).
        assert_eq!(unknown.token.groups.len(), 6);
        assert_eq!(unknown.token.groups.capacity(), 6);
        assert_eq!(
            katherine.token.groups.capacity(),
            katherine.token.groups.len()
        );
    }

    #[test]
    fn forced_group_becomes_primary() {
        let map = IdMap::new("FILES");
        let session = Identity {
            token: Token {
                user: map.user_sid(1000),
                groups: vec![map.group_sid(100), map.group_sid(50), Sid::EVERYONE],
                privileges: Privileges::empty(),
            },
            unix: Credentials {
                uid: 1000,
                gid: 100,
                groups: vec![50],
            },
        };
        let forced = map.forced(&session, None, Some(50));
        assert_eq!(forced.unix.uid, 1000);
        assert_eq!(forced.unix.gid, 50);
        assert_eq!(forced.unix.groups, [100]);
        assert_eq!(
            forced.token.groups,
            [
                map.group_sid(50),
                map.group_sid(100),
                Sid::EVERYONE,
                Sid::unix_group(50)
            ]
        );
        let unchanged = map.forced(&session, None, None);
        assert_eq!(unchanged.token, session.token);
        assert_eq!(unchanged.unix, session.unix);
    }

    #[test]
    fn sids_to_unix_ids() {
        let map = IdMap::new("FILES");
        assert_eq!(map.unix_id(&map.user_sid(1000)), Some(UnixId::User(1000)));
        assert_eq!(map.unix_id(&map.group_sid(50)), Some(UnixId::Group(50)));
        assert_eq!(map.unix_id(&map.user_sid(0)), Some(UnixId::User(0)));
        assert_eq!(map.unix_id(&Sid::unix_user(7)), Some(UnixId::User(7)));
        assert_eq!(map.unix_id(&Sid::unix_group(8)), Some(UnixId::Group(8)));
        // Below the RID base, another domain, or the domain itself: no Unix id.
        assert_eq!(map.unix_id(&map.domain().with_rid(500).unwrap()), None);
        assert_eq!(map.unix_id(&IdMap::new("OTHER").user_sid(1)), None);
        assert_eq!(map.unix_id(&map.domain()), None);
        assert_eq!(map.unix_id(&Sid::EVERYONE), None);
    }

    fn domains() -> DomainIdmap {
        DomainIdmap {
            domains: vec![smb3d_dtyp::idmap::IdmapDomain {
                name: "SMB3DAD".into(),
                sid: "S-1-5-21-1-2-3".parse().unwrap(),
                low: 100_000,
                high: 199_999,
            }],
        }
    }

    /// A domain user of the PAC acts as the ids its SIDs map to: user, primary group, and
    /// the groups in a range as supplementary groups; its token is the PAC's SIDs.
    #[test]
    fn a_domain_user_acts_as_its_mapped_ids() {
        let map = IdMap::new("FILES").with_domains(domains());
        let sid = |s: &str| s.parse::<Sid>().unwrap();
        let pac = Pac {
            account: "dora".into(),
            domain: "SMB3DAD".into(),
            user_sid: sid("S-1-5-21-1-2-3-1102"),
            group_sids: vec![
                sid("S-1-5-21-1-2-3-513"),
                sid("S-1-5-21-1-2-3-1103"),
                sid("S-1-18-1"),
                sid("S-1-5-21-9-9-9-1200"),
            ],
            upn: None,
        };
        let dora = map.domain_identity(&pac).unwrap();
        assert_eq!(
            (dora.unix.uid, dora.unix.gid, dora.unix.groups.clone()),
            (101_102, 100_513, vec![101_103])
        );
        assert_eq!(dora.token.user, pac.user_sid);
        assert!(dora.token.groups.starts_with(&pac.group_sids));
        assert!(dora.token.groups.contains(&Sid::AUTHENTICATED_USERS));
        // Files the mapped ids own show the domain's SIDs; other ids keep the machine's.
        assert_eq!(map.user_sid(101_102), pac.user_sid);
        assert_eq!(map.group_sid(100_513), sid("S-1-5-21-1-2-3-513"));
        assert_eq!(map.user_sid(1000), IdMap::new("FILES").user_sid(1000));
        // A user of a domain without a range has no identity.
        let stranger = Pac {
            user_sid: sid("S-1-5-21-9-9-9-1102"),
            ..pac
        };
        assert!(map.domain_identity(&stranger).is_none());
        assert!(IdMap::new("FILES").domain_identity(&stranger).is_none());
    }

    /// A SID of a configured domain names the id its RID maps to (as owner, group or ACE); a
    /// SID of another domain, or past the range, none.
    #[test]
    fn domain_sids_map_back_to_their_ids() {
        let map = IdMap::new("FILES").with_domains(domains());
        let sid = |s: &str| s.parse::<Sid>().unwrap();
        assert_eq!(
            map.unix_id(&sid("S-1-5-21-1-2-3-1102")),
            Some(UnixId::Account(101_102))
        );
        assert_eq!(
            map.unix_id(&sid("S-1-5-21-1-2-3-513")),
            Some(UnixId::Account(100_513))
        );
        assert_eq!(map.unix_id(&sid("S-1-5-21-1-2-3-100000")), None);
        assert_eq!(map.unix_id(&sid("S-1-5-21-9-9-9-1102")), None);
        assert_eq!(map.unix_id(&map.user_sid(1000)), Some(UnixId::User(1000)));
    }
}
