//! The Kerberos V5 acceptor (RFC 4120 3.2, RFC 4121): verifies an AP-REQ for `cifs/<host>`
//! with the keytab's key, answers with an AP-REP (mutual authentication), and gives the
//! session key of MS-SMB2 3.3.5.5.3 (the authenticator's subkey).
//!
//! The ASN.1 structures and the RFC 3961/3962 AES profiles are Devolutions' picky-krb (pure
//! Rust, no unsafe); the checks of RFC 4120 3.2.3 are here: realm and service of the ticket,
//! the client of the authenticator against the ticket's, ticket times and the authenticator's
//! time within the clock skew of the server's injected clock, and a replay cache.

pub mod keytab;
pub mod pac;

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use picky_asn1::date::Date;
use picky_asn1::wrapper::{
    ExplicitContextTag0, ExplicitContextTag1, ExplicitContextTag2, ExplicitContextTag3,
    GeneralizedTimeAsn1, IntegerAsn1, OctetStringAsn1, Optional,
};
use picky_asn1_der::application_tag::ApplicationTag;
use picky_krb::crypto::{ChecksumSuite, CipherSuite};
use picky_krb::data_types::{
    Authenticator, AuthorizationData, EncApRepPart, EncApRepPartInner, EncTicketPart,
    EncTicketPartInner, EncryptedData, PrincipalName,
};
use picky_krb::messages::{ApRep, ApRepInner, ApReq};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::der::{self, DerReader};
use crate::spnego::{OID_KRB5, OID_MS_KRB5};
use crate::{AuthError, RandomSource};
pub use keytab::{Keytab, KeytabEntry, KeytabError};
pub use pac::Pac;

/// RFC 4120 1.7 / MS-KILE: the clock skew tolerated between client and server, in seconds.
pub const MAX_SKEW_SECS: i64 = 300;
/// The most authenticators remembered at once (RFC 4120 3.2.3); each is kept for the skew
/// window on both sides of its time. When full of live entries, new logons are refused
/// rather than replays let through.
pub const REPLAY_CACHE_CAPACITY: usize = 65_536;

/// Key usage numbers (RFC 4120 7.5.1, RFC 4121 2).
const USAGE_TICKET: i32 = 2;
const USAGE_AUTHENTICATOR: i32 = 11;
const USAGE_AP_REP: i32 = 12;
const USAGE_ACCEPTOR_SIGN: i32 = 23;
const USAGE_INITIATOR_SIGN: i32 = 25;
/// RFC 3962 enctypes, the only ones accepted (DES and RC4 are refused).
const AES128: i32 = 17;
const AES256: i32 = 18;
/// The GSS-API authenticator checksum type (RFC 4121 4.1.1).
const GSS_CHECKSUM: u8 = 0x80;
/// Authorization data types (RFC 4120 5.2.6, MS-PAC 2.3): AD-IF-RELEVANT, AD-WIN2K-PAC.
const AD_IF_RELEVANT: u8 = 1;
const AD_WIN2K_PAC: u8 = 128;
/// TOK_ID of an AP-REQ and an AP-REP in their GSS-API framing (RFC 4121 4.1).
const TOK_AP_REQ: [u8; 2] = [0x01, 0x00];
const TOK_AP_REP: [u8; 2] = [0x02, 0x00];
/// MIC token flags (RFC 4121 4.2.2).
const MIC_SENT_BY_ACCEPTOR: u8 = 0x01;
const MIC_ACCEPTOR_SUBKEY: u8 = 0x04;

/// The server side of Kerberos: the realm it serves, its keys, and the replay cache.
pub struct KerberosService {
    realm: String,
    keytab: Keytab,
    replay: Mutex<ReplayCache>,
}

/// A verified AP-REQ.
pub struct Accepted {
    /// The client principal's name components and realm, as the ticket names them.
    pub client: Vec<String>,
    pub client_realm: String,
    /// The GSS-API token to send back (AP-REP).
    pub reply: Vec<u8>,
    /// When the ticket ends, in seconds since 1970: the session expires then.
    pub ticket_end: i64,
    /// What the ticket's PAC says of the client, its server signature verified: present in
    /// Active Directory tickets; MIT's KDC (1.20 on) signs a PAC without logon info.
    pub pac: Option<Pac>,
    /// The SMB2 session key: the first 16 octets of the authenticator's subkey (MS-SMB2
    /// 3.3.5.5.3, the GSS context key of RFC 4121 2 with no acceptor subkey).
    pub session_key: [u8; 16],
    subkey: Zeroizing<Vec<u8>>,
    subkey_type: CipherSuite,
    initiator_seq: u64,
    acceptor_seq: u64,
}

impl core::fmt::Debug for KerberosService {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KerberosService")
            .field("realm", &self.realm)
            .field("keys", &self.keytab.entries.len())
            .finish_non_exhaustive()
    }
}

impl Accepted {
    /// The authenticator's whole subkey (the ticket's session key when it has none):
    /// Session.FullSessionKey, of which `session_key` is the first 16 octets.
    pub fn full_session_key(&self) -> &[u8] {
        &self.subkey
    }

    /// Checks the initiator's MIC token (RFC 4121 4.2.6.1) over `data` (the SPNEGO
    /// mechListMIC over the MechTypeList).
    pub fn verify_mic(&self, data: &[u8], token: &[u8]) -> Result<(), AuthError> {
        let (header, checksum) = token.split_at_checked(16).ok_or(AuthError::LogonFailure)?;
        let flags = header.get(2).copied().unwrap_or(0xff);
        if header.get(..2) != Some(&[0x04, 0x04][..])
            || header.get(3..8) != Some(&[0xff; 5][..])
            || flags & (MIC_SENT_BY_ACCEPTOR | MIC_ACCEPTOR_SUBKEY) != 0
            || header.get(8..16) != Some(&self.initiator_seq.to_be_bytes()[..])
        {
            return Err(AuthError::LogonFailure);
        }
        let expected = self.checksum(USAGE_INITIATOR_SIGN, data, header)?;
        if bool::from(expected.as_slice().ct_eq(checksum)) {
            Ok(())
        } else {
            Err(AuthError::LogonFailure)
        }
    }

    /// The acceptor's MIC token over `data`.
    pub fn mic(&self, data: &[u8]) -> Result<Vec<u8>, AuthError> {
        let mut token = vec![
            0x04,
            0x04,
            MIC_SENT_BY_ACCEPTOR,
            0xff,
            0xff,
            0xff,
            0xff,
            0xff,
        ];
        token.extend_from_slice(&self.acceptor_seq.to_be_bytes());
        let checksum = self.checksum(USAGE_ACCEPTOR_SIGN, data, &token)?;
        token.extend_from_slice(&checksum);
        Ok(token)
    }

    fn checksum(&self, usage: i32, data: &[u8], header: &[u8]) -> Result<Vec<u8>, AuthError> {
        let suite = match self.subkey_type {
            CipherSuite::Aes128CtsHmacSha196 => ChecksumSuite::HmacSha196Aes128,
            _ => ChecksumSuite::HmacSha196Aes256,
        };
        let mut payload = Vec::with_capacity(data.len() + header.len());
        payload.extend_from_slice(data);
        payload.extend_from_slice(header);
        suite
            .hasher()
            .checksum(&self.subkey, usage, &payload)
            .map_err(|_| AuthError::LogonFailure)
    }
}

impl KerberosService {
    /// The acceptor for `realm` with the keys of `keytab`.
    pub fn new(realm: String, keytab: Keytab) -> Self {
        Self {
            realm,
            keytab,
            replay: Mutex::new(ReplayCache::default()),
        }
    }

    pub fn realm(&self) -> &str {
        &self.realm
    }

    /// Whether `oid` (DER contents) is a Kerberos mechanism this acceptor takes.
    pub fn is_kerberos(oid: &[u8]) -> bool {
        oid == OID_KRB5 || oid == OID_MS_KRB5
    }

    /// Verifies the GSS-API InitialContextToken carrying an AP-REQ (RFC 4121 4.1) at `now`
    /// (seconds since 1970, the server's clock). Any failure is a logon failure: the client
    /// learns nothing about which check refused it.
    pub fn accept(
        &self,
        token: &[u8],
        now: i64,
        random: &dyn RandomSource,
    ) -> Result<Accepted, AuthError> {
        let (oid, ap_req) = unwrap_gss(token, TOK_AP_REQ)?;
        let ap_req: ApReq =
            picky_asn1_der::from_bytes(ap_req).map_err(|_| AuthError::InvalidToken("AP-REQ"))?;
        let ap_req = ap_req.0;
        if int(&ap_req.pvno.0) != Some(5) || int(&ap_req.msg_type.0) != Some(14) {
            return Err(AuthError::InvalidToken("AP-REQ"));
        }
        let ticket = &ap_req.ticket.0.0;
        let service = names(&ticket.sname.0);
        if ticket.realm.0.to_string() != self.realm
            || service.len() != 2
            || service.first().map(String::as_str) != Some("cifs")
        {
            return Err(AuthError::LogonFailure);
        }
        let enc = &ticket.enc_part.0;
        let etype = aes_etype(&enc.etype.0)?;
        let kvno = enc
            .kvno
            .0
            .as_ref()
            .and_then(|k| int(&k.0))
            .map(|k| k as u32);
        let key = self
            .keytab
            .find(&self.realm, &service, etype, kvno)
            .ok_or(AuthError::LogonFailure)?;
        let part = decrypt(etype, &key.key, USAGE_TICKET, enc)?;
        let part: EncTicketPart =
            picky_asn1_der::from_bytes(&part).map_err(|_| AuthError::LogonFailure)?;
        let part = part.0;
        check_ticket_times(&part, now)?;
        let session_type = aes_etype(&part.key.0.key_type.0)?;
        let session_key = Zeroizing::new(part.key.0.key_value.0.0.clone());
        let auth_enc = &ap_req.authenticator.0;
        if aes_etype(&auth_enc.etype.0)? != session_type {
            return Err(AuthError::LogonFailure);
        }
        let auth = decrypt(session_type, &session_key, USAGE_AUTHENTICATOR, auth_enc)?;
        let auth: Authenticator =
            picky_asn1_der::from_bytes(&auth).map_err(|_| AuthError::LogonFailure)?;
        let auth = auth.0;
        let client = names(&part.cname.0);
        let client_realm = part.crealm.0.to_string();
        let pac = match find_pac(&part)? {
            Some(bytes) => Some(
                pac::verify(
                    &bytes,
                    &pac::TicketFacts {
                        client: &client.join("/"),
                        auth_time: unix_time(&part.auth_time.0).ok_or(AuthError::LogonFailure)?,
                        key: &key.key,
                        etype,
                    },
                )
                .map_err(|_| AuthError::LogonFailure)?,
            ),
            None => None,
        }
        .flatten();
        if names(&auth.cname.0) != client || auth.crealm.0.to_string() != client_realm {
            return Err(AuthError::LogonFailure);
        }
        let ctime = unix_time(&auth.ctime.0).ok_or(AuthError::LogonFailure)?;
        if (ctime - now).abs() > MAX_SKEW_SECS {
            return Err(AuthError::LogonFailure);
        }
        check_gss_checksum(auth.cksum.0.as_ref().map(|c| &c.0))?;
        let cusec = int(&auth.cusec.0).ok_or(AuthError::LogonFailure)?;
        self.remember(
            ReplayKey {
                client: format!("{}@{client_realm}", client.join("/")),
                ctime,
                cusec,
                digest: digest(&auth_enc.cipher.0.0),
            },
            now,
        )?;
        let (subkey_type, subkey) = match auth.subkey.0.as_ref() {
            Some(k) => (
                aes_etype(&k.0.key_type.0)?,
                Zeroizing::new(k.0.key_value.0.0.clone()),
            ),
            None => (session_type, session_key.clone()),
        };
        let mut session = [0u8; 16];
        for (d, s) in session.iter_mut().zip(subkey.iter()) {
            *d = *s;
        }
        let mut seq = [0u8; 4];
        random.fill(&mut seq)?;
        // MIT and Windows keep sequence numbers below 2^30 (RFC 4120 leaves the start free).
        let acceptor_seq = u64::from(u32::from_be_bytes(seq) & 0x3fff_ffff);
        let reply = ap_rep(
            oid,
            session_type,
            &session_key,
            &auth.ctime.0,
            &auth.cusec.0,
            acceptor_seq,
        )?;
        Ok(Accepted {
            client,
            client_realm,
            reply,
            ticket_end: unix_time(&part.endtime.0).ok_or(AuthError::LogonFailure)?,
            pac,
            session_key: session,
            subkey,
            subkey_type: cipher_suite(subkey_type),
            initiator_seq: auth
                .seq_number
                .0
                .as_ref()
                .and_then(|s| int(&s.0))
                .map_or(0, |s| s as u64 & 0xffff_ffff),
            acceptor_seq,
        })
    }

    fn remember(&self, key: ReplayKey, now: i64) -> Result<(), AuthError> {
        let mut cache = self
            .replay
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        cache.insert(key, now)
    }
}

/// An authenticator already seen: RFC 4120 3.2.3 keys the cache by client, time and
/// microseconds; the digest of the authenticator's ciphertext (as MIT's replay cache does)
/// tells apart two clients' authenticators of the same microsecond.
#[derive(Clone, PartialEq, Eq, Hash)]
struct ReplayKey {
    client: String,
    ctime: i64,
    cusec: i64,
    digest: [u8; 16],
}

/// The replay cache: entries in arrival order, dropped once their time is out of the skew
/// window (a replay of them would fail the time check anyway).
#[derive(Default)]
struct ReplayCache {
    seen: HashMap<ReplayKey, ()>,
    order: VecDeque<ReplayKey>,
}

impl ReplayCache {
    fn insert(&mut self, key: ReplayKey, now: i64) -> Result<(), AuthError> {
        while let Some(front) = self.order.front() {
            if front.ctime + MAX_SKEW_SECS < now || self.order.len() > REPLAY_CACHE_CAPACITY {
                if let Some(old) = self.order.pop_front() {
                    self.seen.remove(&old);
                }
            } else {
                break;
            }
        }
        if self.seen.contains_key(&key) {
            return Err(AuthError::LogonFailure);
        }
        if self.order.len() >= REPLAY_CACHE_CAPACITY {
            // Entries arrive roughly in time order, so a full cache of live entries means a
            // flood: refusing keeps replays out.
            return Err(AuthError::LogonFailure);
        }
        self.seen.insert(key.clone(), ());
        self.order.push_back(key);
        Ok(())
    }
}

/// Splits a GSS-API InitialContextToken or AP-REP token (RFC 4121 4.1) into its Kerberos OID
/// and the message after `tok_id`.
pub fn unwrap_gss(token: &[u8], tok_id: [u8; 2]) -> Result<(&[u8], &[u8]), AuthError> {
    let mut outer = DerReader::new(token);
    let app = outer
        .expect(der::APPLICATION_0, "InitialContextToken")
        .map_err(|e| AuthError::InvalidToken(e.field))?;
    if !outer.is_empty() {
        return Err(AuthError::InvalidToken("InitialContextToken"));
    }
    let mut r = DerReader::new(app.contents);
    let oid = r
        .expect(der::OID, "thisMech")
        .map_err(|e| AuthError::InvalidToken(e.field))?
        .contents;
    if !KerberosService::is_kerberos(oid) {
        return Err(AuthError::InvalidToken("thisMech"));
    }
    match r.remaining().split_at_checked(2) {
        Some((id, rest)) if id == tok_id => Ok((oid, rest)),
        _ => Err(AuthError::InvalidToken("TOK_ID")),
    }
}

/// The AD-WIN2K-PAC in the ticket's AD-IF-RELEVANT authorization data (MS-KILE 3.3.5.6.3,
/// MS-PAC 2.3), if any. A ticket with two PACs is refused: which one would be believed?
fn find_pac(part: &EncTicketPartInner) -> Result<Option<Vec<u8>>, AuthError> {
    let Some(data) = part.authorization_data.0.as_ref() else {
        return Ok(None);
    };
    let mut found = None;
    for outer in &data.0.0 {
        if outer.ad_type.0.as_unsigned_bytes_be() != [AD_IF_RELEVANT] {
            continue;
        }
        let inner: AuthorizationData =
            picky_asn1_der::from_bytes(&outer.ad_data.0.0).map_err(|_| AuthError::LogonFailure)?;
        for element in inner.0 {
            if element.ad_type.0.as_unsigned_bytes_be() == [AD_WIN2K_PAC] {
                if found.is_some() {
                    return Err(AuthError::LogonFailure);
                }
                found = Some(element.ad_data.0.0);
            }
        }
    }
    Ok(found)
}

/// RFC 4120 3.2.3: the ticket is valid now, within the skew, and not marked invalid.
fn check_ticket_times(
    part: &picky_krb::data_types::EncTicketPartInner,
    now: i64,
) -> Result<(), AuthError> {
    let start = part
        .starttime
        .0
        .as_ref()
        .map_or(&part.auth_time.0, |s| &s.0);
    let start = unix_time(start).ok_or(AuthError::LogonFailure)?;
    let end = unix_time(&part.endtime.0).ok_or(AuthError::LogonFailure)?;
    // TicketFlags bit 7: INVALID (a postdated ticket not yet validated).
    let invalid = part.flags.0.0.is_set(7);
    if invalid || now + MAX_SKEW_SECS < start || now - MAX_SKEW_SECS > end {
        return Err(AuthError::LogonFailure);
    }
    Ok(())
}

/// The authenticator's checksum must be the GSS-API one (RFC 4121 4.1.1): type 0x8003 with
/// at least the 24 octets of Lgth, Bnd and Flags. Channel bindings are not checked: SMB has
/// none (the Bnd field is then ignored, RFC 4121 4.1.1.2).
fn check_gss_checksum(cksum: Option<&picky_krb::data_types::Checksum>) -> Result<(), AuthError> {
    let cksum = cksum.ok_or(AuthError::LogonFailure)?;
    let kind = cksum.cksumtype.0.as_unsigned_bytes_be();
    let value = &cksum.checksum.0.0;
    if kind != [GSS_CHECKSUM, 0x03] || value.len() < 24 || value.get(..4) != Some(&[16, 0, 0, 0]) {
        return Err(AuthError::LogonFailure);
    }
    Ok(())
}

/// The AP-REP of mutual authentication (RFC 4120 3.2.4, 5.5.2): the authenticator's time
/// echoed, encrypted in the ticket's session key, with the acceptor's sequence number. No
/// acceptor subkey: the session key stays the initiator's subkey.
fn ap_rep(
    oid: &[u8],
    etype: i32,
    session_key: &[u8],
    ctime: &GeneralizedTimeAsn1,
    cusec: &IntegerAsn1,
    seq: u64,
) -> Result<Vec<u8>, AuthError> {
    let part: EncApRepPart = ApplicationTag(EncApRepPartInner {
        ctime: ExplicitContextTag0(ctime.clone()),
        cusec: ExplicitContextTag1(cusec.clone()),
        subkey: Optional(None),
        seq_number: Optional(Some(ExplicitContextTag3(
            IntegerAsn1::from_bytes_be_unsigned(seq.to_be_bytes().to_vec()),
        ))),
    });
    let plain = picky_asn1_der::to_vec(&part).map_err(|_| AuthError::LogonFailure)?;
    let cipher = cipher_suite(etype)
        .cipher()
        .encrypt(session_key, USAGE_AP_REP, &plain)
        .map_err(|_| AuthError::LogonFailure)?;
    let rep: ApRep = ApplicationTag(ApRepInner {
        pvno: ExplicitContextTag0(IntegerAsn1::from_bytes_be_unsigned(vec![5])),
        msg_type: ExplicitContextTag1(IntegerAsn1::from_bytes_be_unsigned(vec![15])),
        enc_part: ExplicitContextTag2(EncryptedData {
            etype: ExplicitContextTag0(IntegerAsn1::from_bytes_be_unsigned(vec![etype as u8])),
            kvno: Optional(None),
            cipher: ExplicitContextTag2(OctetStringAsn1(cipher)),
        }),
    });
    let rep = picky_asn1_der::to_vec(&rep).map_err(|_| AuthError::LogonFailure)?;
    let mut out = Vec::with_capacity(rep.len() + 16);
    der::write_nested(der::APPLICATION_0, &mut out, |app| {
        der::write_tlv(der::OID, oid, app);
        app.extend_from_slice(&TOK_AP_REP);
        app.extend_from_slice(&rep);
    });
    Ok(out)
}

fn decrypt(
    etype: i32,
    key: &[u8],
    usage: i32,
    data: &EncryptedData,
) -> Result<Zeroizing<Vec<u8>>, AuthError> {
    cipher_suite(etype)
        .cipher()
        .decrypt(key, usage, &data.cipher.0.0)
        .map(Zeroizing::new)
        .map_err(|_| AuthError::LogonFailure)
}

fn cipher_suite(etype: i32) -> CipherSuite {
    if etype == AES128 {
        CipherSuite::Aes128CtsHmacSha196
    } else {
        CipherSuite::Aes256CtsHmacSha196
    }
}

/// The enctype, when it is one of the AES ones accepted.
fn aes_etype(value: &IntegerAsn1) -> Result<i32, AuthError> {
    match int(value) {
        Some(t) if t == i64::from(AES128) || t == i64::from(AES256) => Ok(t as i32),
        _ => Err(AuthError::LogonFailure),
    }
}

/// A DER INTEGER of at most 8 octets as an i64.
fn int(value: &IntegerAsn1) -> Option<i64> {
    let bytes = value.as_signed_bytes_be();
    if bytes.is_empty() || bytes.len() > 8 {
        return None;
    }
    let fill = if value.is_negative() { 0xff } else { 0 };
    let mut buf = [fill; 8];
    buf.get_mut(8 - bytes.len()..)?.copy_from_slice(bytes);
    Some(i64::from_be_bytes(buf))
}

fn names(name: &PrincipalName) -> Vec<String> {
    name.name_string.0.0.iter().map(|s| s.to_string()).collect()
}

/// Seconds since 1970 of a KerberosTime (UTC, no fractions: RFC 4120 5.2.3).
fn unix_time(t: &GeneralizedTimeAsn1) -> Option<i64> {
    let d: &Date<_> = &t.0;
    let (y, m, day) = (
        i64::from(d.year()),
        i64::from(d.month()),
        i64::from(d.day()),
    );
    // Days from civil (proleptic Gregorian), Howard Hinnant's algorithm.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(
        days * 86_400
            + i64::from(d.hour()) * 3600
            + i64::from(d.minute()) * 60
            + i64::from(d.second()),
    )
}

/// A digest of the authenticator's ciphertext for the replay cache: its last 16 octets are
/// the HMAC the decryption just verified, so they name it.
fn digest(cipher: &[u8]) -> [u8; 16] {
    let mut out = [0u8; 16];
    let tail = cipher
        .get(cipher.len().saturating_sub(16)..)
        .unwrap_or_default();
    if let Some(dst) = out.get_mut(..tail.len()) {
        dst.copy_from_slice(tail);
    }
    out
}
