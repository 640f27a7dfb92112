//! The DC's lsarpc over the secure channel (MS-LSAT): LsarLookupNames4 (3.1.4.5) and
//! LsarLookupSids3 (3.1.4.9), the two lookups MS-LSAT reserves for ncacn_ip_tcp with a
//! Netlogon (schannel) binding, which take no policy handle. Answers are decoded through the
//! checked NDR reader: every count must match what was asked and fit in the bytes present.

use smb3d_dtyp::Sid;
use smb3d_rpc::SidType;
use smb3d_rpc::ndr::{NdrReader, NdrWriter};
use smb3d_rpc::pdu::SyntaxId;
use smb3d_wire::{DecodeError, Guid};

/// lsarpc, 12345778-1234-abcd-ef00-0123456789ab v0.0 (MS-LSAT 2.1).
pub const LSARPC: SyntaxId = SyntaxId {
    uuid: Guid([
        0x78, 0x57, 0x34, 0x12, 0x34, 0x12, 0xcd, 0xab, 0xef, 0x00, 0x01, 0x23, 0x45, 0x67, 0x89,
        0xab,
    ]),
    major: 0,
    minor: 0,
};

/// LsarLookupSids3.
pub const OP_LOOKUP_SIDS3: u16 = 76;
/// LsarLookupNames4.
pub const OP_LOOKUP_NAMES4: u16 = 77;

/// The most names or SIDs asked in one call: LsarLookupNames4's `[range(0,1000)]` Count.
pub const MAX_LOOKUP: usize = 1000;
/// LsapLookupWksta (MS-LSAT 2.2.16): the DC looks in its domain, its forest and the trusted
/// domains, as a member's own lookups ask.
const LOOKUP_WKSTA: u16 = 1;
/// LSA_CLIENT_REVISION_2 (MS-LSAT 3.1.4.5): the client understands the newer statuses.
const CLIENT_REVISION_2: u32 = 2;
/// The statuses of an answer that carries translations (MS-LSAT 3.1.4.5, 3.1.4.9).
const STATUS_SUCCESS: u32 = 0;
const STATUS_SOME_NOT_MAPPED: u32 = 0x0000_0107;
const STATUS_NONE_MAPPED: u32 = 0xc000_0073;
/// The most referenced domains taken in one answer.
const MAX_DOMAINS: usize = 1000;

/// An account the DC named: its SID, kind, name and the NetBIOS name of its domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Translated {
    /// The account's (or domain's) SID.
    pub sid: Sid,
    /// What it is (user, group, alias, domain, ...).
    pub kind: SidType,
    /// The account name (empty for a domain itself).
    pub name: String,
    /// The NetBIOS name of the domain the DC says it is in.
    pub domain: String,
}

/// Why an lsarpc answer is not understood or was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    #[error("malformed lookup answer: {0}")]
    Malformed(&'static str),
    #[error("the DC refused the lookup: NTSTATUS 0x{0:08x}")]
    Refused(u32),
}

impl From<DecodeError> for LookupError {
    fn from(e: DecodeError) -> Self {
        LookupError::Malformed(e.field)
    }
}

fn sid_type(value: u16) -> Result<SidType, LookupError> {
    Ok(match value {
        1 => SidType::User,
        2 => SidType::Group,
        3 => SidType::Domain,
        4 => SidType::Alias,
        5 => SidType::WellKnownGroup,
        6 => SidType::DeletedAccount,
        7 => SidType::Invalid,
        8 => SidType::Unknown,
        9 => SidType::Computer,
        10 => SidType::Label,
        _ => return Err(LookupError::Malformed("Use")),
    })
}

/// Whether an entry of this kind is a translation (MS-LSAT 3.1.4.5: unmapped entries are
/// SidTypeUnknown, and the DC may say a name is invalid or deleted).
fn translates(kind: SidType) -> bool {
    !matches!(
        kind,
        SidType::Unknown | SidType::Invalid | SidType::DeletedAccount
    )
}

/// The trailing fields both requests share: LookupLevel, MappedCount, LookupOptions and
/// ClientRevision, after an empty `[in, out]` translated array.
fn write_tail(w: &mut NdrWriter<'_>) {
    w.u32(0).pointer(false);
    w.u16(LOOKUP_WKSTA).u32(0).u32(0).u32(CLIENT_REVISION_2);
}

/// LsarLookupNames4's request for `names` (at most [`MAX_LOOKUP`] taken).
pub fn lookup_names4_request(names: &[String]) -> Vec<u8> {
    let names = names.get(..MAX_LOOKUP).unwrap_or(names);
    let count = u32::try_from(names.len()).unwrap_or(0);
    let mut stub = Vec::new();
    let mut w = NdrWriter::with_base(&mut stub, 0);
    w.u32(count).u32(count);
    for name in names {
        w.counted_string_header(Some(name), false);
    }
    for name in names {
        w.counted_string_body(Some(name), false);
    }
    write_tail(&mut w);
    stub
}

/// LsarLookupSids3's request for `sids` (at most [`MAX_LOOKUP`] taken).
pub fn lookup_sids3_request(sids: &[Sid]) -> Vec<u8> {
    let sids = sids.get(..MAX_LOOKUP).unwrap_or(sids);
    let count = u32::try_from(sids.len()).unwrap_or(0);
    let mut stub = Vec::new();
    let mut w = NdrWriter::with_base(&mut stub, 0);
    w.u32(count).pointer(true).u32(count);
    for _ in sids {
        w.pointer(true);
    }
    for sid in sids {
        w.sid(sid);
    }
    write_tail(&mut w);
    stub
}

/// `[out] PLSAPR_REFERENCED_DOMAIN_LIST* ReferencedDomains` (MS-LSAT 2.2.12): each domain's
/// name and SID.
fn referenced_domains(r: &mut NdrReader<'_>) -> Result<Vec<(String, Option<Sid>)>, LookupError> {
    if !r.pointer("ReferencedDomains")? {
        return Ok(Vec::new());
    }
    let entries = r.u32("Entries")?;
    let present = r.pointer("Domains")?;
    let max_entries = r.u32("MaxEntries")?;
    if entries > max_entries {
        return Err(LookupError::Malformed("MaxEntries"));
    }
    if !present {
        return if entries == 0 {
            Ok(Vec::new())
        } else {
            Err(LookupError::Malformed("Domains"))
        };
    }
    // LSAPR_TRUST_INFORMATION: an RPC_UNICODE_STRING (8) and a SID pointer (4).
    let count = r.array_count(12, "Domains")?;
    if u32::try_from(count).ok() != Some(entries) || count > MAX_DOMAINS {
        return Err(LookupError::Malformed("Domains"));
    }
    let mut fixed = Vec::with_capacity(count);
    for _ in 0..count {
        let name = r.counted_string_header("Domains.Name")?;
        let sid = r.pointer("Domains.Sid")?;
        fixed.push((name, sid));
    }
    let mut domains = Vec::with_capacity(count);
    for (name, sid) in fixed {
        let name = if name.present {
            r.counted_string_body(name, "Domains.Name")?
        } else {
            String::new()
        };
        let sid = if sid {
            Some(r.sid("Domains.Sid")?)
        } else {
            None
        };
        domains.push((name, sid));
    }
    Ok(domains)
}

/// The status of an answer, its last four bytes: translations follow when all, some or none
/// mapped; anything else is the DC's refusal.
fn status(stub: &[u8]) -> Result<(), LookupError> {
    let at = stub
        .len()
        .checked_sub(4)
        .ok_or(LookupError::Malformed("status"))?;
    let bytes: [u8; 4] = stub
        .get(at..)
        .and_then(|s| s.try_into().ok())
        .ok_or(LookupError::Malformed("status"))?;
    match u32::from_le_bytes(bytes) {
        STATUS_SUCCESS | STATUS_SOME_NOT_MAPPED | STATUS_NONE_MAPPED => Ok(()),
        refused => Err(LookupError::Refused(refused)),
    }
}

/// The translated array's conformance, which must be `asked` (the DC answers every entry, in
/// order); None when the DC sent no array (a NONE_MAPPED answer may).
fn translated_count(
    r: &mut NdrReader<'_>,
    asked: usize,
    min_size: usize,
) -> Result<Option<usize>, LookupError> {
    let entries = r.u32("Translated.Entries")?;
    if !r.pointer("Translated")? {
        return if entries == 0 {
            Ok(None)
        } else {
            Err(LookupError::Malformed("Translated"))
        };
    }
    let count = r.array_count(min_size, "Translated")?;
    if count != asked || u32::try_from(count).ok() != Some(entries) {
        return Err(LookupError::Malformed("Translated.Entries"));
    }
    Ok(Some(count))
}

/// The domain of a translated entry by its DomainIndex (-1: none).
fn domain_at(
    domains: &[(String, Option<Sid>)],
    index: u32,
) -> Result<Option<&(String, Option<Sid>)>, LookupError> {
    if index == u32::MAX {
        return Ok(None);
    }
    usize::try_from(index)
        .ok()
        .and_then(|i| domains.get(i))
        .map(Some)
        .ok_or(LookupError::Malformed("DomainIndex"))
}

/// Checks that MappedCount is at most what was asked and that the status ends the stub.
fn finish(r: &mut NdrReader<'_>, total: usize) -> Result<(), LookupError> {
    let count = r.u32("MappedCount")?;
    r.u32("status")?;
    if usize::try_from(count).map_or(true, |c| c > total) || r.remaining() != 0 {
        return Err(LookupError::Malformed("MappedCount"));
    }
    Ok(())
}

/// Whether `sid` is the domain `domain_sid` (for a domain) or an account in it.
fn inside(sid: &Sid, kind: SidType, domain_sid: Option<&Sid>) -> bool {
    match (domain_sid, kind) {
        (Some(d), SidType::Domain) => d == sid,
        (Some(d), _) => sid.rid().and_then(|rid| d.with_rid(rid)) == Some(*sid),
        (None, _) => false,
    }
}

/// LsarLookupNames4's answer to `asked` names: for each, in order, what the DC named or None.
pub fn lookup_names4_answer(
    stub: &[u8],
    asked: &[String],
) -> Result<Vec<Option<Translated>>, LookupError> {
    status(stub)?;
    let mut r = NdrReader::new(stub);
    let domains = referenced_domains(&mut r)?;
    // LSAPR_TRANSLATED_SID_EX2: Use, a SID pointer, DomainIndex, Flags.
    let Some(count) = translated_count(&mut r, asked.len(), 16)? else {
        finish(&mut r, asked.len())?;
        return Ok(vec![None; asked.len()]);
    };
    let mut fixed = Vec::with_capacity(count);
    for _ in 0..count {
        let kind = sid_type(r.u16("Use")?)?;
        let sid = r.pointer("Sid")?;
        let index = r.u32("DomainIndex")?;
        r.u32("Flags")?;
        fixed.push((kind, sid, index));
    }
    let mut out = Vec::with_capacity(count);
    for ((kind, has_sid, index), asked) in fixed.into_iter().zip(asked) {
        let sid = if has_sid { Some(r.sid("Sid")?) } else { None };
        let domain = domain_at(&domains, index)?;
        out.push(match (sid, domain) {
            (Some(sid), Some((domain, domain_sid)))
                if translates(kind) && inside(&sid, kind, domain_sid.as_ref()) =>
            {
                let name = asked.rsplit_once('\\').map_or(asked.as_str(), |(_, a)| a);
                Some(Translated {
                    sid,
                    kind,
                    name: if kind == SidType::Domain {
                        String::new()
                    } else {
                        name.to_owned()
                    },
                    domain: domain.clone(),
                })
            }
            (_, _) if translates(kind) => return Err(LookupError::Malformed("Sid")),
            _ => None,
        });
    }
    finish(&mut r, asked.len())?;
    Ok(out)
}

/// LsarLookupSids3's answer to `asked` SIDs: for each, in order, what the DC named or None.
/// A name must come with a domain whose SID the account's SID is in (or is, for a domain).
pub fn lookup_sids3_answer(
    stub: &[u8],
    asked: &[Sid],
) -> Result<Vec<Option<Translated>>, LookupError> {
    status(stub)?;
    let mut r = NdrReader::new(stub);
    let domains = referenced_domains(&mut r)?;
    // LSAPR_TRANSLATED_NAME_EX: Use, an RPC_UNICODE_STRING, DomainIndex, Flags.
    let Some(count) = translated_count(&mut r, asked.len(), 20)? else {
        finish(&mut r, asked.len())?;
        return Ok(vec![None; asked.len()]);
    };
    let mut fixed = Vec::with_capacity(count);
    for _ in 0..count {
        let kind = sid_type(r.u16("Use")?)?;
        let name = r.counted_string_header("Name")?;
        let index = r.u32("DomainIndex")?;
        r.u32("Flags")?;
        fixed.push((kind, name, index));
    }
    let mut out = Vec::with_capacity(count);
    for ((kind, name, index), sid) in fixed.into_iter().zip(asked) {
        let name = if name.present {
            r.counted_string_body(name, "Name")?
        } else {
            String::new()
        };
        if !translates(kind) {
            out.push(None);
            continue;
        }
        let Some((domain, domain_sid)) = domain_at(&domains, index)? else {
            return Err(LookupError::Malformed("DomainIndex"));
        };
        if !inside(sid, kind, domain_sid.as_ref()) {
            return Err(LookupError::Malformed("Domains.Sid"));
        }
        out.push(Some(Translated {
            sid: *sid,
            kind,
            name,
            domain: domain.clone(),
        }));
    }
    finish(&mut r, asked.len())?;
    Ok(out)
}

#[cfg(test)]
#[path = "lsa_tests.rs"]
mod tests;
