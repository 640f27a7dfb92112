//! Security identifiers (MS-DTYP 2.4.2).

use core::fmt;
use core::str::FromStr;

use smb3d_wire::{DecodeError, DecodeErrorKind, Reader, Writer};

/// The most sub-authorities a SID may have (MS-DTYP 2.4.2.2).
pub const MAX_SUB_AUTHORITIES: usize = 15;

/// A SID (MS-DTYP 2.4.2.2). Only revision 1 exists, so the revision is not stored.
///
/// Unused sub-authority slots are always zero, so the derived equality and hash compare exactly
/// the meaningful parts.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sid {
    authority: [u8; 6],
    count: u8,
    sub_authorities: [u32; MAX_SUB_AUTHORITIES],
}

/// The only SID revision (MS-DTYP 2.4.2.2).
const SID_REVISION: u8 = 1;

/// Samba's authority for SIDs that stand for Unix ids without a mapping (S-1-22-1-uid, S-1-22-2-gid).
const UNIX_AUTHORITY: u64 = 22;
const UNIX_USERS: u32 = 1;
const UNIX_GROUPS: u32 = 2;

impl Sid {
    /// S-1-0-0, Nobody (NULL SID).
    pub const NOBODY: Sid = Sid::well_known(0, [0, 0], 1);
    /// S-1-1-0, Everyone (World).
    pub const EVERYONE: Sid = Sid::well_known(1, [0, 0], 1);
    /// S-1-3-0, Creator Owner: replaced by the new object's owner when inherited.
    pub const CREATOR_OWNER: Sid = Sid::well_known(3, [0, 0], 1);
    /// S-1-3-1, Creator Group: replaced by the new object's group when inherited.
    pub const CREATOR_GROUP: Sid = Sid::well_known(3, [1, 0], 1);
    /// S-1-3-4, Owner Rights: when present in a DACL it replaces the owner's implicit rights.
    pub const OWNER_RIGHTS: Sid = Sid::well_known(3, [4, 0], 1);
    /// S-1-5-2, Network logons.
    pub const NETWORK: Sid = Sid::well_known(5, [2, 0], 1);
    /// S-1-5-7, Anonymous logon.
    pub const ANONYMOUS: Sid = Sid::well_known(5, [7, 0], 1);
    /// S-1-5-11, Authenticated Users.
    pub const AUTHENTICATED_USERS: Sid = Sid::well_known(5, [11, 0], 1);
    /// S-1-5-18, Local System.
    pub const LOCAL_SYSTEM: Sid = Sid::well_known(5, [18, 0], 1);
    /// S-1-5-32-544, BUILTIN\Administrators.
    pub const BUILTIN_ADMINISTRATORS: Sid = Sid::well_known(5, [32, 544], 2);
    /// S-1-5-32-545, BUILTIN\Users.
    pub const BUILTIN_USERS: Sid = Sid::well_known(5, [32, 545], 2);

    /// Builds a SID from a 48-bit identifier authority and up to 15 sub-authorities.
    pub fn new(authority: u64, sub_authorities: &[u32]) -> Option<Sid> {
        if authority >> 48 != 0 || sub_authorities.len() > MAX_SUB_AUTHORITIES {
            return None;
        }
        let mut subs = [0u32; MAX_SUB_AUTHORITIES];
        subs.get_mut(..sub_authorities.len())?
            .copy_from_slice(sub_authorities);
        let mut auth = [0u8; 6];
        auth.copy_from_slice(authority.to_be_bytes().get(2..)?);
        Some(Sid {
            authority: auth,
            count: u8::try_from(sub_authorities.len()).ok()?,
            sub_authorities: subs,
        })
    }

    /// A SID with a small authority and `count` (at most two) of `subs`.
    const fn well_known(authority: u8, subs: [u32; 2], count: u8) -> Sid {
        let [first, second] = subs;
        Sid {
            authority: [0, 0, 0, 0, 0, authority],
            count,
            sub_authorities: [first, second, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        }
    }

    /// Samba's SID for a Unix user without a mapping: S-1-22-1-`uid`.
    pub fn unix_user(uid: u32) -> Sid {
        Self::unix(UNIX_USERS, uid)
    }

    /// Samba's SID for a Unix group without a mapping: S-1-22-2-`gid`.
    pub fn unix_group(gid: u32) -> Sid {
        Self::unix(UNIX_GROUPS, gid)
    }

    fn unix(kind: u32, id: u32) -> Sid {
        Sid::well_known(UNIX_AUTHORITY as u8, [kind, id], 2)
    }

    /// The uid if this is S-1-22-1-uid.
    pub fn as_unix_user(&self) -> Option<u32> {
        self.unix_id(UNIX_USERS)
    }

    /// The gid if this is S-1-22-2-gid.
    pub fn as_unix_group(&self) -> Option<u32> {
        self.unix_id(UNIX_GROUPS)
    }

    fn unix_id(&self, kind: u32) -> Option<u32> {
        match (self.authority(), self.sub_authorities()) {
            (UNIX_AUTHORITY, [k, id]) if *k == kind => Some(*id),
            _ => None,
        }
    }

    /// This SID with `rid` appended (a domain SID plus a relative id gives an account SID).
    pub fn with_rid(&self, rid: u32) -> Option<Sid> {
        let mut s = *self;
        *s.sub_authorities.get_mut(usize::from(self.count))? = rid;
        s.count += 1;
        Some(s)
    }

    /// The last sub-authority (the relative id of an account SID).
    pub fn rid(&self) -> Option<u32> {
        self.sub_authorities().last().copied()
    }

    /// The identifier authority as sent (6 bytes, big-endian).
    pub const fn identifier_authority(&self) -> [u8; 6] {
        self.authority
    }

    /// The identifier authority as a number.
    pub fn authority(&self) -> u64 {
        self.authority
            .iter()
            .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
    }

    /// The sub-authorities in use.
    pub fn sub_authorities(&self) -> &[u32] {
        self.sub_authorities
            .get(..usize::from(self.count))
            .unwrap_or_default()
    }

    /// The encoded size: 8 bytes plus 4 per sub-authority.
    pub const fn encoded_len(&self) -> usize {
        8 + 4 * self.count as usize
    }

    /// Reads a binary SID (MS-DTYP 2.4.2.2). Refuses revisions other than 1 and more than 15
    /// sub-authorities.
    pub fn decode(r: &mut Reader<'_>) -> Result<Sid, DecodeError> {
        let revision = r.u8("Sid.Revision")?;
        if revision != SID_REVISION {
            return Err(DecodeError::invalid("Sid.Revision"));
        }
        let count = r.u8("Sid.SubAuthorityCount")?;
        if usize::from(count) > MAX_SUB_AUTHORITIES {
            return Err(DecodeError::new(
                "Sid.SubAuthorityCount",
                DecodeErrorKind::TooLong,
            ));
        }
        let authority = r.array::<6>("Sid.IdentifierAuthority")?;
        let mut sub_authorities = [0u32; MAX_SUB_AUTHORITIES];
        for slot in sub_authorities.iter_mut().take(usize::from(count)) {
            *slot = r.u32("Sid.SubAuthority")?;
        }
        Ok(Sid {
            authority,
            count,
            sub_authorities,
        })
    }

    /// Writes the binary form.
    pub fn encode(&self, w: &mut Writer<'_>) {
        w.u8(SID_REVISION).u8(self.count).bytes(&self.authority);
        for s in self.sub_authorities() {
            w.u32(*s);
        }
    }
}

impl fmt::Display for Sid {
    /// The string form of MS-DTYP 2.4.2.1: `S-1-<authority>-<sub>...`, the authority in hex
    /// when it does not fit in 32 bits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let authority = self.authority();
        if authority >> 32 == 0 {
            write!(f, "S-1-{authority}")?;
        } else {
            write!(f, "S-1-0x{authority:012X}")?;
        }
        for s in self.sub_authorities() {
            write!(f, "-{s}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Sid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a string is not a SID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseSidError;

impl fmt::Display for ParseSidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a SID string (S-1-<authority>-<sub-authority>...)")
    }
}

impl std::error::Error for ParseSidError {}

/// A decimal number, or hex with a `0x` prefix (MS-DTYP 2.4.2.1 allows both).
fn parse_number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            u64::from_str_radix(hex, 16).ok()
        }
        Some(_) => None,
        None if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
        None => None,
    }
}

impl FromStr for Sid {
    type Err = ParseSidError;

    /// Parses `S-1-<authority>-<sub>...` (MS-DTYP 2.4.2.1).
    fn from_str(s: &str) -> Result<Sid, ParseSidError> {
        let rest = s
            .strip_prefix("S-")
            .or_else(|| s.strip_prefix("s-"))
            .ok_or(ParseSidError)?;
        let mut parts = rest.split('-');
        if parts.next() != Some("1") {
            return Err(ParseSidError);
        }
        let authority = parts.next().and_then(parse_number).ok_or(ParseSidError)?;
        let mut subs = [0u32; MAX_SUB_AUTHORITIES];
        let mut count = 0;
        for part in parts {
            let value = parse_number(part)
                .and_then(|v| u32::try_from(v).ok())
                .ok_or(ParseSidError)?;
            *subs.get_mut(count).ok_or(ParseSidError)? = value;
            count += 1;
        }
        Sid::new(authority, subs.get(..count).ok_or(ParseSidError)?).ok_or(ParseSidError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(s: &Sid) -> Vec<u8> {
        let mut buf = Vec::new();
        s.encode(&mut Writer::new(&mut buf));
        buf
    }

    #[test]
    fn well_known_strings() {
        let cases = [
            (Sid::NOBODY, "S-1-0-0"),
            (Sid::EVERYONE, "S-1-1-0"),
            (Sid::CREATOR_OWNER, "S-1-3-0"),
            (Sid::CREATOR_GROUP, "S-1-3-1"),
            (Sid::OWNER_RIGHTS, "S-1-3-4"),
            (Sid::NETWORK, "S-1-5-2"),
            (Sid::ANONYMOUS, "S-1-5-7"),
            (Sid::AUTHENTICATED_USERS, "S-1-5-11"),
            (Sid::LOCAL_SYSTEM, "S-1-5-18"),
            (Sid::BUILTIN_ADMINISTRATORS, "S-1-5-32-544"),
            (Sid::BUILTIN_USERS, "S-1-5-32-545"),
            (Sid::unix_user(1001), "S-1-22-1-1001"),
            (Sid::unix_group(100), "S-1-22-2-100"),
        ];
        for (sid, text) in cases {
            assert_eq!(sid.to_string(), text);
            assert_eq!(text.parse::<Sid>().unwrap(), sid, "{text}");
        }
    }

    #[test]
    fn everyone_binary() {
        // MS-DTYP 2.4.2.2: S-1-1-0 is 01 01 00 00 00 00 00 01 00 00 00 00.
        let bytes = [1, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
        assert_eq!(encode(&Sid::EVERYONE), bytes);
        let mut r = Reader::new(&bytes);
        assert_eq!(Sid::decode(&mut r).unwrap(), Sid::EVERYONE);
        assert!(r.is_empty());
    }

    #[test]
    fn unix_ids() {
        assert_eq!(Sid::unix_user(0).as_unix_user(), Some(0));
        assert_eq!(Sid::unix_user(5).as_unix_group(), None);
        assert_eq!(Sid::unix_group(7).as_unix_group(), Some(7));
        assert_eq!(Sid::EVERYONE.as_unix_user(), None);
        assert_eq!("S-1-22-1-1-2".parse::<Sid>().unwrap().as_unix_user(), None);
    }

    #[test]
    fn domain_and_rid() {
        let domain: Sid = "S-1-5-21-1652430933-2355499802-1092787070".parse().unwrap();
        let user = domain.with_rid(1000).unwrap();
        assert_eq!(
            user.to_string(),
            "S-1-5-21-1652430933-2355499802-1092787070-1000"
        );
        assert_eq!(user.rid(), Some(1000));
        assert_eq!(user.encoded_len(), 28);
        let full = Sid::new(5, &[1; 15]).unwrap();
        assert_eq!(full.with_rid(1), None);
        assert_eq!(Sid::new(5, &[]).unwrap().rid(), None);
    }

    #[test]
    fn large_authority_is_hex() {
        let s = Sid::new(0x0000_1234_5678_9ABC, &[1]).unwrap();
        assert_eq!(s.to_string(), "S-1-0x123456789ABC-1");
        assert_eq!("S-1-0x123456789ABC-1".parse::<Sid>().unwrap(), s);
        assert_eq!(
            s.identifier_authority(),
            [0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC]
        );
        assert_eq!(Sid::new(1 << 48, &[]), None);
        assert_eq!(
            "S-1-5-0x15".parse::<Sid>().unwrap(),
            Sid::new(5, &[21]).unwrap()
        );
    }

    #[test]
    fn parse_rejects() {
        for bad in [
            "",
            "S-",
            "S-1",
            "S-2-5",
            "X-1-5",
            "S-1--5",
            "S-1-5-",
            "S-1-5-x",
            "S-1-5-4294967296",
            "S-1-281474976710656",
            "S-1-0x",
            "S-1-0xZZ",
            "S-1-5-+1",
            "S-1-5-1-2-3-4-5-6-7-8-9-10-11-12-13-14-15-16",
        ] {
            assert_eq!(bad.parse::<Sid>(), Err(ParseSidError), "{bad:?}");
        }
        assert_eq!(
            "s-1-5".parse::<Sid>().unwrap().sub_authorities(),
            &[] as &[u32]
        );
        assert_eq!(
            "S-1-5-1-2-3-4-5-6-7-8-9-10-11-12-13-14-15"
                .parse::<Sid>()
                .unwrap()
                .sub_authorities()
                .len(),
            15
        );
    }

    #[test]
    fn decode_rejects() {
        let e = Sid::decode(&mut Reader::new(&[2, 0, 0, 0, 0, 0, 0, 0])).unwrap_err();
        assert_eq!(e, DecodeError::invalid("Sid.Revision"));
        let mut sixteen = vec![1, 16, 0, 0, 0, 0, 0, 5];
        sixteen.extend([0u8; 64]);
        let e = Sid::decode(&mut Reader::new(&sixteen)).unwrap_err();
        assert_eq!(e.kind, DecodeErrorKind::TooLong);
        let e = Sid::decode(&mut Reader::new(&[1, 1, 0, 0, 0, 0, 0, 5, 1, 0])).unwrap_err();
        assert_eq!(e, DecodeError::truncated("Sid.SubAuthority"));
        let e = Sid::decode(&mut Reader::new(&[1, 0, 0, 0])).unwrap_err();
        assert_eq!(e, DecodeError::truncated("Sid.IdentifierAuthority"));
        let e = Sid::decode(&mut Reader::new(&[])).unwrap_err();
        assert_eq!(e, DecodeError::truncated("Sid.Revision"));
    }
}
