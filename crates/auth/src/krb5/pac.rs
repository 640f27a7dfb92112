//! The Privilege Attribute Certificate an Active Directory KDC puts in its tickets (MS-PAC):
//! who the client is in the domain (its SID and its groups' SIDs), signed by the KDC with the
//! service's own key.
//!
//! A PAC arrives inside a ticket that decrypted with our key, so only the KDC (or someone with
//! our key) wrote it; its server signature (MS-PAC 2.8.1) proves that the KDC signed this PAC
//! for this service, and PAC_CLIENT_INFO ties it to this ticket's client and logon time. Every
//! count and offset is still checked against the bytes present: a decoder that trusts them
//! would turn a bug elsewhere into a crash or an allocation the peer chose.

use smb3d_dtyp::Sid;
use smb3d_wire::{Reader, decode_utf16le};
use subtle::ConstantTimeEq;

use picky_krb::crypto::ChecksumSuite;

/// PAC_INFO_BUFFER ulType values (MS-PAC 2.4).
const LOGON_INFO: u32 = 1;
const SERVER_CHECKSUM: u32 = 6;
const KDC_CHECKSUM: u32 = 7;
const CLIENT_INFO: u32 = 10;
const UPN_DNS_INFO: u32 = 12;
/// Signature types (MS-PAC 2.8): HMAC-SHA1-96 with an AES key (RFC 3962).
const HMAC_SHA1_96_AES128: u32 = 15;
const HMAC_SHA1_96_AES256: u32 = 16;
/// KERB_NON_KERB_CKSUM_SALT, the key usage of PAC signatures (MS-PAC 2.8.1).
const USAGE_PAC_SIGNATURE: i32 = 17;
/// The most buffers a PAC may list: Windows and Samba write at most a dozen types.
pub const MAX_BUFFERS: u32 = 64;
/// The most group SIDs taken from one PAC (primary group, GroupIds, ExtraSids, resource
/// groups together): Windows' token holds at most 1,024.
pub const MAX_GROUPS: usize = 1024;
/// Seconds from 1601 (FILETIME's epoch) to 1970.
const FILETIME_UNIX_OFFSET: i64 = 11_644_473_600;

/// Why a PAC is refused. The client is told only that its logon failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PacError {
    #[error("malformed PAC: {0}")]
    Malformed(&'static str),
    #[error("the PAC lacks its {0}")]
    Missing(&'static str),
    #[error("the PAC's server signature does not verify")]
    BadSignature,
    #[error("the PAC's client info does not match the ticket")]
    WrongClient,
}

fn malformed(field: &'static str) -> impl Fn(smb3d_wire::DecodeError) -> PacError {
    move |_| PacError::Malformed(field)
}

/// What a verified PAC says about the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pac {
    /// The account's name (KERB_VALIDATION_INFO EffectiveName, the sAMAccountName).
    pub account: String,
    /// The NetBIOS name of the account's domain (LogonDomainName).
    pub domain: String,
    /// The account's SID (LogonDomainId + UserId).
    pub user_sid: Sid,
    /// The primary group's SID first, then GroupIds, ExtraSids and resource groups, each once.
    pub group_sids: Vec<Sid>,
    /// UPN_DNS_INFO's user principal name, when present.
    pub upn: Option<String>,
}

/// The facts of the ticket a PAC must agree with.
pub struct TicketFacts<'a> {
    /// The client principal's name (its components joined with `/`) without the realm.
    pub client: &'a str,
    /// The ticket's authtime, seconds since 1970.
    pub auth_time: i64,
    /// The service key the ticket decrypted with, and its enctype (17 or 18).
    pub key: &'a [u8],
    pub etype: i32,
}

/// One PAC_INFO_BUFFER: its type and its bytes' range in the PAC.
#[derive(Clone, Copy)]
struct Buffer {
    kind: u32,
    start: usize,
    end: usize,
}

/// Decodes `pac`, verifies its server signature with the service key and its client info
/// against the ticket, and returns the client's SIDs; None when the PAC has no logon info
/// (MIT's KDC signs PACs of client info and signatures only). The KDC signature is over the server
/// signature with the krbtgt key, which a member server does not hold (MS-PAC 2.8.2): it is
/// checked to be present and well-formed only.
pub fn verify(pac: &[u8], ticket: &TicketFacts<'_>) -> Result<Option<Pac>, PacError> {
    let buffers = buffers(pac)?;
    let one = |kind, name| -> Result<Buffer, PacError> {
        let mut found = buffers.iter().filter(|b| b.kind == kind);
        match (found.next(), found.next()) {
            (Some(b), None) => Ok(*b),
            (None, _) => Err(PacError::Missing(name)),
            (Some(_), Some(_)) => Err(PacError::Malformed(name)),
        }
    };
    let server = one(SERVER_CHECKSUM, "server signature")?;
    let kdc = one(KDC_CHECKSUM, "KDC signature")?;
    let client = one(CLIENT_INFO, "client info")?;
    let (server_type, server_sig) = signature(slice(pac, server)?)?;
    let (_, kdc_sig) = signature(slice(pac, kdc)?)?;
    check_server_signature(
        pac,
        server,
        server_type,
        server_sig,
        kdc,
        kdc_sig.len(),
        ticket,
    )?;
    check_client_info(slice(pac, client)?, ticket)?;
    let logon = match one(LOGON_INFO, "logon info") {
        Ok(logon) => logon,
        Err(PacError::Missing(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut out = logon_info(slice(pac, logon)?)?;
    out.upn = match one(UPN_DNS_INFO, "UPN") {
        Ok(upn) => Some(upn_dns_info(slice(pac, upn)?)?),
        Err(PacError::Missing(_)) => None,
        Err(e) => return Err(e),
    };
    Ok(Some(out))
}

/// Decodes a PAC without checking any signature: what the fuzz target and `verify` share.
pub fn decode_unverified(pac: &[u8]) -> Result<Pac, PacError> {
    let buffers = buffers(pac)?;
    let logon = buffers
        .iter()
        .find(|b| b.kind == LOGON_INFO)
        .ok_or(PacError::Missing("logon info"))?;
    let mut out = logon_info(slice(pac, *logon)?)?;
    for b in &buffers {
        match b.kind {
            UPN_DNS_INFO => out.upn = Some(upn_dns_info(slice(pac, *b)?)?),
            SERVER_CHECKSUM | KDC_CHECKSUM => {
                signature(slice(pac, *b)?)?;
            }
            _ => {}
        }
    }
    Ok(out)
}

/// PACTYPE (MS-PAC 2.3): cBuffers, Version 0, then the PAC_INFO_BUFFERs. Each buffer lies
/// after the array, inside the PAC, 8-aligned, and overlaps no other.
fn buffers(pac: &[u8]) -> Result<Vec<Buffer>, PacError> {
    let mut r = Reader::new(pac);
    let count = r.u32("cBuffers").map_err(malformed("cBuffers"))?;
    let version = r.u32("Version").map_err(malformed("Version"))?;
    if version != 0 || count == 0 || count > MAX_BUFFERS {
        return Err(PacError::Malformed("PACTYPE"));
    }
    let header_end = 8 + 16 * count as usize;
    let mut buffers = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let kind = r.u32("ulType").map_err(malformed("PAC_INFO_BUFFER"))?;
        let size = r
            .u32("cbBufferSize")
            .map_err(malformed("PAC_INFO_BUFFER"))?;
        let offset = r.u64("Offset").map_err(malformed("PAC_INFO_BUFFER"))?;
        let start = usize::try_from(offset).map_err(|_| PacError::Malformed("Offset"))?;
        let end = start
            .checked_add(size as usize)
            .ok_or(PacError::Malformed("Offset"))?;
        if start < header_end || start % 8 != 0 || end > pac.len() {
            return Err(PacError::Malformed("Offset"));
        }
        buffers.push(Buffer { kind, start, end });
    }
    let mut sorted: Vec<&Buffer> = buffers.iter().collect();
    sorted.sort_by_key(|b| b.start);
    if sorted.windows(2).any(|w| match w {
        [a, b] => a.end > b.start,
        _ => false,
    }) {
        return Err(PacError::Malformed("overlapping buffers"));
    }
    Ok(buffers)
}

fn slice(pac: &[u8], b: Buffer) -> Result<&[u8], PacError> {
    pac.get(b.start..b.end).ok_or(PacError::Malformed("Offset"))
}

/// PAC_SIGNATURE_DATA (MS-PAC 2.8): SignatureType, then the signature (12 octets for the
/// AES HMACs, 16 for the RC4 one), then an optional RODCIdentifier.
fn signature(data: &[u8]) -> Result<(u32, &[u8]), PacError> {
    let mut r = Reader::new(data);
    let kind = r.u32("SignatureType").map_err(malformed("signature"))?;
    let len = match kind {
        HMAC_SHA1_96_AES128 | HMAC_SHA1_96_AES256 => 12,
        // KERB_CHECKSUM_HMAC_MD5: only in a KDC signature of an RC4 krbtgt key.
        0xffff_ff76 => 16,
        _ => return Err(PacError::Malformed("SignatureType")),
    };
    let sig = r.bytes(len, "Signature").map_err(malformed("signature"))?;
    Ok((kind, sig))
}

/// MS-PAC 2.8.1: the server signature is the keyed checksum (usage 17) of the whole PAC with
/// both signatures' octets zeroed, of the type of the service key.
fn check_server_signature(
    pac: &[u8],
    server: Buffer,
    server_type: u32,
    server_sig: &[u8],
    kdc: Buffer,
    kdc_len: usize,
    ticket: &TicketFacts<'_>,
) -> Result<(), PacError> {
    let suite = match (server_type, ticket.etype) {
        (HMAC_SHA1_96_AES128, 17) => ChecksumSuite::HmacSha196Aes128,
        (HMAC_SHA1_96_AES256, 18) => ChecksumSuite::HmacSha196Aes256,
        _ => return Err(PacError::BadSignature),
    };
    let mut zeroed = pac.to_vec();
    for (b, len) in [(server, server_sig.len()), (kdc, kdc_len)] {
        let at = b.start + 4;
        zeroed
            .get_mut(at..at + len)
            .ok_or(PacError::Malformed("signature"))?
            .fill(0);
    }
    let expected = suite
        .hasher()
        .checksum(ticket.key, USAGE_PAC_SIGNATURE, &zeroed)
        .map_err(|_| PacError::BadSignature)?;
    if bool::from(expected.as_slice().ct_eq(server_sig)) {
        Ok(())
    } else {
        Err(PacError::BadSignature)
    }
}

/// PAC_CLIENT_INFO (MS-PAC 2.7): ClientId is the ticket's authtime and Name the client's
/// name; a PAC moved into another client's ticket fails here.
fn check_client_info(data: &[u8], ticket: &TicketFacts<'_>) -> Result<(), PacError> {
    let mut r = Reader::new(data);
    let client_id = r.u64("ClientId").map_err(malformed("client info"))?;
    let len = r.u16("NameLength").map_err(malformed("client info"))?;
    let name = r
        .bytes(usize::from(len), "Name")
        .map_err(malformed("client info"))?;
    let name = decode_utf16le(name, "Name").map_err(malformed("client info"))?;
    let auth_time = ticket
        .auth_time
        .checked_add(FILETIME_UNIX_OFFSET)
        .and_then(|s| s.checked_mul(10_000_000))
        .and_then(|t| u64::try_from(t).ok());
    if auth_time != Some(client_id) || name != ticket.client {
        return Err(PacError::WrongClient);
    }
    Ok(())
}

/// UPN_DNS_INFO (MS-PAC 2.10): the UPN, at an offset from the buffer's start.
fn upn_dns_info(data: &[u8]) -> Result<String, PacError> {
    let mut r = Reader::new(data);
    let len = r.u16("UpnLength").map_err(malformed("UPN"))?;
    let offset = r.u16("UpnOffset").map_err(malformed("UPN"))?;
    let start = usize::from(offset);
    let upn = data
        .get(start..start + usize::from(len))
        .ok_or(PacError::Malformed("UPN"))?;
    decode_utf16le(upn, "Upn").map_err(malformed("UPN"))
}

/// An NDR stream (MS-RPCE 2.2.6 type serialization version 1, little-endian NDR20): each read
/// checked, alignment relative to the buffer's start (the headers are 16 octets).
pub(crate) struct Ndr<'a> {
    r: Reader<'a>,
}

impl<'a> Ndr<'a> {
    /// A stream over `data`, aligned relative to its start.
    pub(crate) const fn new(data: &'a [u8]) -> Self {
        Self {
            r: Reader::new(data),
        }
    }

    /// The position from the start.
    pub(crate) const fn pos(&self) -> usize {
        self.r.pos()
    }

    pub(crate) fn u16(&mut self) -> Result<u16, PacError> {
        self.align(2)?;
        self.r.u16("NDR").map_err(malformed("logon info"))
    }

    pub(crate) fn u32(&mut self) -> Result<u32, PacError> {
        self.align(4)?;
        self.r.u32("NDR").map_err(malformed("logon info"))
    }

    fn skip(&mut self, n: usize) -> Result<(), PacError> {
        self.r.skip(n, "NDR").map_err(malformed("logon info"))
    }

    fn align(&mut self, to: usize) -> Result<(), PacError> {
        let pad = (to - self.r.pos() % to) % to;
        self.skip(pad)
    }

    /// A conformant array's count, which must be `expected` and fit in the bytes left at
    /// `item` octets each (so nothing is allocated beyond what the PAC holds).
    fn count(&mut self, expected: u32, item: usize) -> Result<usize, PacError> {
        let max = self.u32()?;
        let n = max as usize;
        if max != expected || n.checked_mul(item).is_none_or(|b| b > self.r.remaining()) {
            return Err(PacError::Malformed("array count"));
        }
        Ok(n)
    }

    /// RPC_UNICODE_STRING's deferred buffer (MS-DTYP 2.3.10): MaximumCount, Offset 0,
    /// ActualCount, then the characters; `len` is the Length of the inline part, in octets.
    fn string(&mut self, len: u16) -> Result<String, PacError> {
        let max = self.u32()?;
        let offset = self.u32()?;
        let actual = self.u32()?;
        if offset != 0 || actual > max || u64::from(len) != u64::from(actual) * 2 {
            return Err(PacError::Malformed("string"));
        }
        let bytes = self
            .r
            .bytes(usize::from(len), "string")
            .map_err(malformed("string"))?;
        decode_utf16le(bytes, "string").map_err(malformed("string"))
    }

    /// An RPC_SID (MS-DTYP 2.4.2.3): its conformant count, then the SID.
    fn sid(&mut self) -> Result<Sid, PacError> {
        let count = self.u32()?;
        let sid = Sid::decode(&mut self.r).map_err(malformed("SID"))?;
        if sid.sub_authorities().len() != count as usize {
            return Err(PacError::Malformed("SID"));
        }
        Ok(sid)
    }
}

/// The inline part of an RPC_UNICODE_STRING: Length and whether its buffer follows.
#[derive(Clone, Copy)]
struct InlineString {
    len: u16,
    present: bool,
}

fn inline_string(n: &mut Ndr<'_>) -> Result<InlineString, PacError> {
    let len = n.u16()?;
    let max = n.u16()?;
    let pointer = n.u32()?;
    if len > max || len % 2 != 0 {
        return Err(PacError::Malformed("string"));
    }
    Ok(InlineString {
        len,
        present: pointer != 0,
    })
}

fn deferred_string(n: &mut Ndr<'_>, s: InlineString) -> Result<String, PacError> {
    if s.present {
        n.string(s.len)
    } else {
        Ok(String::new())
    }
}

/// KERB_VALIDATION_INFO (MS-PAC 2.5), NDR-serialized: the fixed part, then the pointed-to
/// data in the order of the pointers.
fn logon_info(data: &[u8]) -> Result<Pac, PacError> {
    let mut n = Ndr {
        r: Reader::new(data),
    };
    // Common header (version 1, little-endian, 8 octets) and private header.
    let header = n.r.array::<4>("header").map_err(malformed("NDR header"))?;
    if header != [0x01, 0x10, 0x08, 0x00] {
        return Err(PacError::Malformed("NDR header"));
    }
    n.skip(12)?;
    if n.u32()? == 0 {
        return Err(PacError::Malformed("logon info pointer"));
    }
    validation_info(&mut n, true).map(|(pac, _)| pac)
}

/// The body of KERB_VALIDATION_INFO (MS-PAC 2.5), which is NETLOGON_VALIDATION_SAM_INFO2
/// (MS-NRPC 2.2.1.4.13) with the resource groups appended when `resource_groups` is set: the
/// fixed part, then the pointed-to data in the order of the pointers. Returns the identity
/// and the UserSessionKey a Netlogon logon gives the NTLM session.
pub(crate) fn validation_info(
    n: &mut Ndr<'_>,
    resource_groups: bool,
) -> Result<(Pac, [u8; 16]), PacError> {
    n.skip(6 * 8)?; // LogonTime .. PasswordMustChange
    let effective_name = inline_string(n)?;
    let mut others = [InlineString {
        len: 0,
        present: false,
    }; 5];
    for s in &mut others {
        *s = inline_string(n)?; // FullName, LogonScript, ProfilePath, HomeDirectory, Drive
    }
    n.skip(4)?; // LogonCount, BadPasswordCount
    let user_id = n.u32()?;
    let primary_group = n.u32()?;
    let group_count = n.u32()?;
    let groups_present = n.u32()? != 0;
    n.skip(4)?; // UserFlags
    let session_key =
        n.r.array::<16>("UserSessionKey")
            .map_err(malformed("logon info"))?;
    let logon_server = inline_string(n)?;
    let domain_name = inline_string(n)?;
    let domain_id_present = n.u32()? != 0;
    n.skip(8 + 4 + 4 + 8 + 8 + 4 + 4)?; // Reserved1 .. Reserved3
    let sid_count = n.u32()?;
    let extra_present = n.u32()? != 0;
    let (resource_domain_present, resource_count, resource_present) = if resource_groups {
        (n.u32()? != 0, n.u32()?, n.u32()? != 0)
    } else {
        (false, 0, false)
    };
    if group_count as usize + sid_count as usize + resource_count as usize + 1 > MAX_GROUPS {
        return Err(PacError::Malformed("too many groups"));
    }

    let account = deferred_string(n, effective_name)?;
    for s in others {
        deferred_string(n, s)?;
    }
    let group_rids = if groups_present {
        rids(n, group_count)?
    } else {
        Vec::new()
    };
    deferred_string(n, logon_server)?;
    let domain = deferred_string(n, domain_name)?;
    if !domain_id_present {
        return Err(PacError::Missing("LogonDomainId"));
    }
    let domain_sid = n.sid()?;
    let extra = if extra_present {
        extra_sids(n, sid_count)?
    } else {
        Vec::new()
    };
    let resource_domain = if resource_domain_present {
        Some(n.sid()?)
    } else {
        None
    };
    let resource_rids = if resource_present {
        rids(n, resource_count)?
    } else {
        Vec::new()
    };

    let in_domain = |domain: &Sid, rid| domain.with_rid(rid).ok_or(PacError::Malformed("SID"));
    let user_sid = in_domain(&domain_sid, user_id)?;
    let mut group_sids = vec![in_domain(&domain_sid, primary_group)?];
    let mut add = |sid: Sid| {
        if !group_sids.contains(&sid) {
            group_sids.push(sid);
        }
    };
    for rid in group_rids {
        add(in_domain(&domain_sid, rid)?);
    }
    for sid in extra {
        add(sid);
    }
    if let Some(resource_domain) = resource_domain {
        for rid in resource_rids {
            add(in_domain(&resource_domain, rid)?);
        }
    }
    if account.is_empty() {
        return Err(PacError::Missing("EffectiveName"));
    }
    Ok((
        Pac {
            account,
            domain,
            user_sid,
            group_sids,
            upn: None,
        },
        session_key,
    ))
}

/// GROUP_MEMBERSHIP array (MS-PAC 2.2.2): RelativeId and Attributes each.
fn rids(n: &mut Ndr<'_>, count: u32) -> Result<Vec<u32>, PacError> {
    let len = n.count(count, 8)?;
    let mut out = Vec::with_capacity(len);
    for _ in 0..len {
        out.push(n.u32()?);
        n.skip(4)?;
    }
    Ok(out)
}

/// KERB_SID_AND_ATTRIBUTES array (MS-PAC 2.2.1): pointers and attributes, then the SIDs.
fn extra_sids(n: &mut Ndr<'_>, count: u32) -> Result<Vec<Sid>, PacError> {
    let len = n.count(count, 8)?;
    let mut present = Vec::with_capacity(len);
    for _ in 0..len {
        present.push(n.u32()? != 0);
        n.skip(4)?;
    }
    let mut out = Vec::with_capacity(len);
    for p in present {
        if p {
            out.push(n.sid()?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
