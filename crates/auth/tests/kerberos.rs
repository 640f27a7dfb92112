//! The Kerberos acceptor (RFC 4120 3.2.3, RFC 4121) against AP-REQs this test makes as a KDC
//! and a client would, with picky-krb's encoders and AES profiles: what it accepts, the AP-REP
//! and session key it gives, and every check that must refuse.

use std::sync::Arc;

use picky_asn1::bit_string::BitString;
use picky_asn1::date::GeneralizedTime;
use picky_asn1::restricted_string::Ia5String;
use picky_asn1::wrapper::{
    Asn1SequenceOf, BitStringAsn1, ExplicitContextTag0, ExplicitContextTag1, ExplicitContextTag2,
    ExplicitContextTag3, ExplicitContextTag4, ExplicitContextTag5, ExplicitContextTag6,
    ExplicitContextTag7, GeneralStringAsn1, GeneralizedTimeAsn1, IntegerAsn1, OctetStringAsn1,
    Optional,
};
use picky_asn1_der::application_tag::ApplicationTag;
use picky_krb::crypto::CipherSuite;
use picky_krb::data_types::{
    AuthenticatorInner, Checksum, EncApRepPart, EncTicketPartInner, EncryptedData, EncryptionKey,
    PrincipalName, TicketInner, TransitedEncoding,
};
use picky_krb::messages::{ApRep, ApReqInner};
use smb3d_auth::krb5::{KerberosService, Keytab, MAX_SKEW_SECS, unwrap_gss};
use smb3d_auth::spnego::{self, NegState, NegTokenInit, NegTokenResp, OID_KRB5, OID_MS_KRB5};
use smb3d_auth::{
    Acceptor, Account, AuthError, CredentialStore, OsRandom, Principal, ServerIdentity, Step,
};
use smb3d_wire::FileTime;

const REALM: &str = "SMB3D.TEST";
const SERVICE_KEY: [u8; 32] = [0x11; 32];
const SESSION_KEY: [u8; 32] = [0x22; 32];
const SUBKEY: [u8; 32] = [0x33; 32];
/// 2026-01-01T00:00:00Z.
const NOW: i64 = 1_767_225_600;

fn filetime(unix: i64) -> FileTime {
    FileTime(((unix + 11_644_473_600) * 10_000_000) as u64)
}

/// An MIT keytab (format 0x0502) with one key of `cifs/host@REALM`.
fn keytab_bytes(host: &str, kvno: u8, etype: u16, key: &[u8]) -> Vec<u8> {
    let counted = |out: &mut Vec<u8>, s: &[u8]| {
        out.extend_from_slice(&(s.len() as u16).to_be_bytes());
        out.extend_from_slice(s);
    };
    let mut entry = Vec::new();
    entry.extend_from_slice(&2u16.to_be_bytes());
    counted(&mut entry, REALM.as_bytes());
    counted(&mut entry, b"cifs");
    counted(&mut entry, host.as_bytes());
    entry.extend_from_slice(&1u32.to_be_bytes());
    entry.extend_from_slice(&0u32.to_be_bytes());
    entry.push(kvno);
    entry.extend_from_slice(&etype.to_be_bytes());
    counted(&mut entry, key);
    let mut out = vec![0x05, 0x02];
    out.extend_from_slice(&(entry.len() as u32).to_be_bytes());
    out.extend_from_slice(&entry);
    out
}

fn service(key: &[u8]) -> KerberosService {
    let keytab = Keytab::parse(&keytab_bytes("filesrv", 2, 18, key)).unwrap();
    KerberosService::new(REALM.into(), keytab)
}

fn int(v: i64) -> IntegerAsn1 {
    IntegerAsn1::from_bytes_be_signed(v.to_be_bytes().to_vec())
}

fn text(s: &str) -> GeneralStringAsn1 {
    GeneralStringAsn1(Ia5String::from_string(s.to_owned()).unwrap())
}

fn name(kind: i64, parts: &[&str]) -> PrincipalName {
    PrincipalName {
        name_type: ExplicitContextTag0(int(kind)),
        name_string: ExplicitContextTag1(Asn1SequenceOf(parts.iter().map(|p| text(p)).collect())),
    }
}

fn time(unix: i64) -> GeneralizedTimeAsn1 {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    GeneralizedTimeAsn1(
        GeneralizedTime::new(
            y as u16,
            m as u8,
            d as u8,
            (secs / 3600) as u8,
            (secs / 60 % 60) as u8,
            (secs % 60) as u8,
        )
        .unwrap(),
    )
}

fn key(etype: i64, value: &[u8]) -> EncryptionKey {
    EncryptionKey {
        key_type: ExplicitContextTag0(int(etype)),
        key_value: ExplicitContextTag1(OctetStringAsn1(value.to_vec())),
    }
}

fn encrypted(etype: i64, kvno: Option<i64>, key: &[u8], usage: i32, plain: &[u8]) -> EncryptedData {
    let suite = if etype == 17 {
        CipherSuite::Aes128CtsHmacSha196
    } else {
        CipherSuite::Aes256CtsHmacSha196
    };
    EncryptedData {
        etype: ExplicitContextTag0(int(etype)),
        kvno: Optional(kvno.map(|k| ExplicitContextTag1(int(k)))),
        cipher: ExplicitContextTag2(OctetStringAsn1(
            suite.cipher().encrypt(key, usage, plain).unwrap(),
        )),
    }
}

/// What a test AP-REQ is made of; `Default` is a valid one for alice.
#[derive(Clone)]
struct Req {
    service_key: Vec<u8>,
    sname: Vec<&'static str>,
    realm: &'static str,
    ticket_client: &'static str,
    auth_client: &'static str,
    start: i64,
    end: i64,
    ctime: i64,
    cusec: i64,
    subkey: Option<Vec<u8>>,
    gss_checksum: bool,
    seq: i64,
}

impl Default for Req {
    fn default() -> Self {
        Self {
            service_key: SERVICE_KEY.to_vec(),
            sname: vec!["cifs", "filesrv"],
            realm: REALM,
            ticket_client: "alice",
            auth_client: "alice",
            start: NOW - 60,
            end: NOW + 3600,
            ctime: NOW,
            cusec: 123_456,
            subkey: Some(SUBKEY.to_vec()),
            gss_checksum: true,
            seq: 0x1234_5678,
        }
    }
}

impl Req {
    /// The GSS-API InitialContextToken carrying the AP-REQ (RFC 4121 4.1).
    fn token(&self, oid: &[u8]) -> Vec<u8> {
        let part = ApplicationTag::<_, 3>(EncTicketPartInner {
            flags: ExplicitContextTag0(BitStringAsn1(BitString::with_len(32))),
            key: ExplicitContextTag1(key(18, &SESSION_KEY)),
            crealm: ExplicitContextTag2(text(REALM)),
            cname: ExplicitContextTag3(name(1, &[self.ticket_client])),
            transited: ExplicitContextTag4(TransitedEncoding {
                tr_type: ExplicitContextTag0(int(1)),
                contents: ExplicitContextTag1(OctetStringAsn1(Vec::new())),
            }),
            auth_time: ExplicitContextTag5(time(self.start)),
            starttime: Optional(Some(ExplicitContextTag6(time(self.start)))),
            endtime: ExplicitContextTag7(time(self.end)),
            renew_till: Optional(None),
            caddr: Optional(None),
            authorization_data: Optional(None),
        });
        let part = picky_asn1_der::to_vec(&part).unwrap();
        let ticket = ApplicationTag::<_, 1>(TicketInner {
            tkt_vno: ExplicitContextTag0(int(5)),
            realm: ExplicitContextTag1(text(self.realm)),
            sname: ExplicitContextTag2(name(2, &self.sname)),
            enc_part: ExplicitContextTag3(encrypted(18, Some(2), &self.service_key, 2, &part)),
        });
        let mut cksum = vec![16, 0, 0, 0];
        cksum.extend_from_slice(&[0; 16]);
        cksum.extend_from_slice(&0x3eu32.to_le_bytes());
        let auth = ApplicationTag::<_, 2>(AuthenticatorInner {
            authenticator_vno: ExplicitContextTag0(int(5)),
            crealm: ExplicitContextTag1(text(REALM)),
            cname: ExplicitContextTag2(name(1, &[self.auth_client])),
            cksum: Optional(Some(ExplicitContextTag3(Checksum {
                cksumtype: ExplicitContextTag0(int(if self.gss_checksum { 0x8003 } else { 16 })),
                checksum: ExplicitContextTag1(OctetStringAsn1(cksum)),
            }))),
            cusec: ExplicitContextTag4(int(self.cusec)),
            ctime: ExplicitContextTag5(time(self.ctime)),
            subkey: Optional(
                self.subkey
                    .as_ref()
                    .map(|k| ExplicitContextTag6(key(18, k))),
            ),
            seq_number: Optional(Some(ExplicitContextTag7(int(self.seq)))),
            authorization_data: Optional(None),
        });
        let auth = picky_asn1_der::to_vec(&auth).unwrap();
        let mut options = BitString::with_len(32);
        options.set(2, true);
        let ap_req = ApplicationTag::<_, 14>(ApReqInner {
            pvno: ExplicitContextTag0(int(5)),
            msg_type: ExplicitContextTag1(int(14)),
            ap_options: ExplicitContextTag2(BitStringAsn1(options)),
            ticket: ExplicitContextTag3(ticket),
            authenticator: ExplicitContextTag4(encrypted(18, None, &SESSION_KEY, 11, &auth)),
        });
        let ap_req = picky_asn1_der::to_vec(&ap_req).unwrap();
        let mut inner = vec![0x06, oid.len() as u8];
        inner.extend_from_slice(oid);
        inner.extend_from_slice(&[0x01, 0x00]);
        inner.extend_from_slice(&ap_req);
        let mut out = vec![0x60, 0x82];
        out.extend_from_slice(&(inner.len() as u16).to_be_bytes());
        out.extend_from_slice(&inner);
        out
    }
}

#[test]
fn a_valid_ap_req_is_accepted_with_the_subkey_as_session_key_and_a_mutual_ap_rep() {
    let svc = service(&SERVICE_KEY);
    let accepted = svc
        .accept(&Req::default().token(OID_KRB5), NOW, &OsRandom)
        .unwrap();
    assert_eq!(accepted.client, ["alice"]);
    assert_eq!(accepted.client_realm, REALM);
    assert_eq!(accepted.ticket_end, NOW + 3600);
    assert_eq!(accepted.session_key, SUBKEY[..16]);
    // The AP-REP decrypts with the ticket's session key (usage 12) and echoes the
    // authenticator's time (RFC 4120 3.2.4).
    let (oid, rep) = unwrap_gss(&accepted.reply, [0x02, 0x00]).unwrap();
    assert_eq!(oid, OID_KRB5);
    let rep: ApRep = picky_asn1_der::from_bytes(rep).unwrap();
    let plain = CipherSuite::Aes256CtsHmacSha196
        .cipher()
        .decrypt(&SESSION_KEY, 12, &rep.0.enc_part.0.cipher.0.0)
        .unwrap();
    let part: EncApRepPart = picky_asn1_der::from_bytes(&plain).unwrap();
    assert_eq!(part.0.ctime.0, time(NOW));
    assert_eq!(part.0.cusec.0, int(123_456));
}

#[test]
fn without_a_subkey_the_session_key_is_the_tickets() {
    let req = Req {
        subkey: None,
        ..Req::default()
    };
    let accepted = service(&SERVICE_KEY)
        .accept(&req.token(OID_MS_KRB5), NOW, &OsRandom)
        .unwrap();
    assert_eq!(accepted.session_key, SESSION_KEY[..16]);
    assert_eq!(accepted.full_session_key(), SESSION_KEY);
}

#[test]
fn each_failed_check_refuses_the_logon() {
    let svc = service(&SERVICE_KEY);
    let cases: Vec<(&str, Req, i64)> = vec![
        (
            "a key that is not the keytab's",
            Req {
                service_key: vec![0x44; 32],
                ..Req::default()
            },
            NOW,
        ),
        (
            "another service",
            Req {
                sname: vec!["host", "filesrv"],
                ..Req::default()
            },
            NOW,
        ),
        (
            "another host",
            Req {
                sname: vec!["cifs", "other"],
                ..Req::default()
            },
            NOW,
        ),
        (
            "another realm",
            Req {
                realm: "OTHER.TEST",
                ..Req::default()
            },
            NOW,
        ),
        (
            "an authenticator of another client",
            Req {
                auth_client: "bob",
                ..Req::default()
            },
            NOW,
        ),
        (
            "an expired ticket",
            Req {
                end: NOW - MAX_SKEW_SECS - 1,
                start: NOW - 7200,
                ..Req::default()
            },
            NOW,
        ),
        (
            "a ticket not yet valid",
            Req {
                start: NOW + MAX_SKEW_SECS + 10,
                end: NOW + 7200,
                ..Req::default()
            },
            NOW,
        ),
        ("a clock 6 minutes slow", Req::default(), NOW + 360),
        ("a clock 6 minutes fast", Req::default(), NOW - 360),
        (
            "no GSS checksum",
            Req {
                gss_checksum: false,
                ..Req::default()
            },
            NOW,
        ),
    ];
    for (what, req, now) in cases {
        let r = svc.accept(&req.token(OID_KRB5), now, &OsRandom);
        assert_eq!(r.err(), Some(AuthError::LogonFailure), "{what}");
    }
    // Within the skew both ways, a ticket is taken.
    for (i, now) in [NOW + MAX_SKEW_SECS, NOW - MAX_SKEW_SECS]
        .into_iter()
        .enumerate()
    {
        let req = Req {
            cusec: i as i64,
            ..Req::default()
        };
        assert!(svc.accept(&req.token(OID_KRB5), now, &OsRandom).is_ok());
    }
}

#[test]
fn a_replayed_authenticator_is_refused() {
    let svc = service(&SERVICE_KEY);
    let token = Req::default().token(OID_KRB5);
    assert!(svc.accept(&token, NOW, &OsRandom).is_ok());
    assert_eq!(
        svc.accept(&token, NOW + 1, &OsRandom).err(),
        Some(AuthError::LogonFailure)
    );
    // A fresh authenticator of the same ticket is no replay.
    let other = Req {
        cusec: 7,
        ..Req::default()
    }
    .token(OID_KRB5);
    assert!(svc.accept(&other, NOW + 1, &OsRandom).is_ok());
}

#[test]
fn truncated_and_altered_tokens_never_panic_nor_authenticate() {
    let svc = service(&SERVICE_KEY);
    let token = Req::default().token(OID_KRB5);
    for len in 0..token.len() {
        assert!(
            svc.accept(&token[..len], NOW, &OsRandom).is_err(),
            "truncated to {len}"
        );
    }
    // The original is accepted first: an alteration outside the ciphertexts that still
    // verifies carries the same authenticator, which the replay cache then refuses; one inside
    // a ciphertext fails its HMAC.
    assert!(svc.accept(&token, NOW, &OsRandom).is_ok());
    for i in 0..token.len() {
        let mut t = token.clone();
        t[i] ^= 0x5a;
        if let Ok(a) = svc.accept(&t, NOW, &OsRandom) {
            panic!("altered byte {i} authenticated {:?}", a.client);
        }
    }
}

struct Kerberized;

impl CredentialStore for Kerberized {
    fn account(&self, user: &str) -> Option<Account> {
        (user == "alice").then(|| Account {
            name: "alice".into(),
            nt_hash: Default::default(),
            disabled: false,
        })
    }
    fn uid(&self, user: &str) -> Option<u32> {
        (user == "alice").then_some(1000)
    }
}

fn acceptor() -> Acceptor {
    let identity = Arc::new(ServerIdentity {
        netbios_domain: "SMB3D".into(),
        netbios_name: "FILESRV".into(),
        dns_domain: String::new(),
        dns_name: "filesrv".into(),
    });
    Acceptor::new(identity, Arc::new(Kerberized))
        .with_kerberos(Some(Arc::new(service(&SERVICE_KEY))))
}

fn spnego_init(token: &[u8], mic: Option<&[u8]>) -> Vec<u8> {
    NegTokenInit {
        mech_types: vec![OID_MS_KRB5, OID_KRB5, spnego::OID_NTLMSSP],
        mech_token: Some(token),
        mech_list_mic: mic,
        ..Default::default()
    }
    .encode()
}

/// The accept-completed SPNEGO answer and session key of an exchange that logged alice on.
fn completed_as_alice(step: Step) -> (Vec<u8>, [u8; 16]) {
    let Step::Done {
        token,
        principal,
        session_key,
    } = step
    else {
        panic!("expected Done, got {step:?}");
    };
    assert_eq!(
        principal,
        Principal::User {
            name: "alice".into(),
            claimed_domain: REALM.into()
        }
    );
    let resp = NegTokenResp::decode(&token).unwrap();
    assert_eq!(resp.neg_state, Some(NegState::ACCEPT_COMPLETED));
    (token, session_key)
}

#[test]
fn spnego_with_kerberos_first_completes_in_one_leg_as_the_realm_user() {
    let mut acc = acceptor();
    let step = acc
        .step(
            &spnego_init(&Req::default().token(OID_MS_KRB5), None),
            filetime(NOW),
        )
        .unwrap();
    let (token, session_key) = completed_as_alice(step);
    assert_eq!(session_key, SUBKEY[..16]);
    // Session.FullSessionKey: all 32 octets of the AES-256 subkey (MS-SMB2 3.3.5.5.3).
    assert_eq!(acc.full_session_key(), Some(&SUBKEY[..]));
    let resp = NegTokenResp::decode(&token).unwrap();
    assert_eq!(resp.supported_mech, Some(OID_MS_KRB5));
    assert!(unwrap_gss(resp.response_token.unwrap(), [0x02, 0x00]).is_ok());
    assert_eq!(resp.mech_list_mic, None);
    assert_eq!(acc.ticket_end(), Some(NOW + 3600));
    assert_eq!(acc.claim().unwrap().method, "Kerberos");
}

#[test]
fn a_principal_without_a_local_user_is_refused() {
    let req = Req {
        ticket_client: "mallory",
        auth_client: "mallory",
        ..Req::default()
    };
    let mut acc = acceptor();
    let r = acc.step(&spnego_init(&req.token(OID_KRB5), None), filetime(NOW));
    assert_eq!(r.err(), Some(AuthError::LogonFailure));
    let claim = acc.claim().unwrap();
    assert_eq!((claim.user.as_str(), claim.method), ("mallory", "Kerberos"));
}

#[test]
fn a_client_mech_list_mic_is_verified_and_answered() {
    use picky_krb::crypto::ChecksumSuite;
    let mechs = spnego::encode_mech_types(&[OID_MS_KRB5, OID_KRB5, spnego::OID_NTLMSSP]);
    let mic = |seq: u64, key: &[u8]| {
        let mut header = vec![0x04, 0x04, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff];
        header.extend_from_slice(&seq.to_be_bytes());
        let mut payload = mechs.clone();
        payload.extend_from_slice(&header);
        let sum = ChecksumSuite::HmacSha196Aes256
            .hasher()
            .checksum(key, 25, &payload)
            .unwrap();
        header.extend_from_slice(&sum);
        header
    };
    let token = Req::default().token(OID_KRB5);
    let good = mic(0x1234_5678, &SUBKEY);
    let step = acceptor()
        .step(&spnego_init(&token, Some(&good)), filetime(NOW))
        .unwrap();
    let Step::Done { token: reply, .. } = step else {
        panic!("{step:?}")
    };
    let server_mic = NegTokenResp::decode(&reply)
        .unwrap()
        .mech_list_mic
        .unwrap()
        .to_vec();
    assert_eq!(&server_mic[..3], &[0x04, 0x04, 0x01]);
    // The server's MIC is keyed by the same subkey with the acceptor's usage (23).
    let (header, sum) = server_mic.split_at(16);
    let mut payload = mechs.clone();
    payload.extend_from_slice(header);
    let expected = ChecksumSuite::HmacSha196Aes256
        .hasher()
        .checksum(&SUBKEY, 23, &payload)
        .unwrap();
    assert_eq!(sum, expected);
    for (what, bad) in [
        ("another key", mic(0x1234_5678, &SESSION_KEY)),
        ("another sequence number", mic(0x1234_5679, &SUBKEY)),
    ] {
        let token = Req {
            cusec: 99,
            ..Req::default()
        }
        .token(OID_KRB5);
        let r = acceptor().step(&spnego_init(&token, Some(&bad)), filetime(NOW));
        assert_eq!(r.err(), Some(AuthError::LogonFailure), "{what}");
    }
}

#[test]
fn keytabs_are_parsed_with_their_checks() {
    let bytes = keytab_bytes("filesrv", 3, 17, &[7; 16]);
    let kt = Keytab::parse(&bytes).unwrap();
    let e = &kt.entries[0];
    assert_eq!((e.realm.as_str(), e.kvno, e.enctype), (REALM, 3, 17));
    assert_eq!(e.components, ["cifs", "filesrv"]);
    assert!(kt.has_service(REALM, "cifs"));
    for len in 0..bytes.len() {
        if len != 2 {
            assert!(Keytab::parse(&bytes[..len]).is_err(), "truncated to {len}");
        }
    }
    assert!(Keytab::parse(&[0x05, 0x01]).is_err());
    // A hole (negative size) is skipped.
    let mut holed = vec![0x05, 0x02];
    holed.extend_from_slice(&(-4i32).to_be_bytes());
    holed.extend_from_slice(&[0; 4]);
    holed.extend_from_slice(&bytes[2..]);
    assert_eq!(Keytab::parse(&holed).unwrap().entries.len(), 1);
}

/// A real exchange on loopback (tshark): MIT kinit against krb5kdc 1.20 (realm SMB3D.TEST,
/// alice), then `smbclient --use-kerberos=required -m SMB2_10 --client-protection=sign` 4.17
/// to //filesrv.smb3d.test against smb3d holding `cifs_filesrv.keytab` (a throwaway realm's
/// key), at CAPTURED (the capture's clock).
mod captured {
    use super::*;
    use hmac::{KeyInit, Mac};

    const CAPTURED: i64 = 1_795_788_502;

    fn hex(s: &str) -> Vec<u8> {
        let s = s.trim();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!("{}/tests/fixtures/krb5/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(path).unwrap()
    }

    fn acceptor() -> Acceptor {
        let keytab = Keytab::parse(&fixture("cifs_filesrv.keytab")).unwrap();
        let service = KerberosService::new(REALM.into(), keytab);
        super::acceptor().with_kerberos(Some(Arc::new(service)))
    }

    fn session_setup() -> Vec<u8> {
        hex(std::str::from_utf8(&fixture("smbclient_ap_req.hex")).unwrap())
    }

    #[test]
    fn smbclients_ap_req_gives_the_key_its_signatures_verify_with() {
        let keytab = Keytab::parse(&fixture("cifs_filesrv.keytab")).unwrap();
        let kinds: Vec<(i32, u32)> = keytab.entries.iter().map(|e| (e.enctype, e.kvno)).collect();
        assert_eq!(kinds, [(18, 2), (17, 2)]);
        let mut acc = acceptor();
        let step = acc.step(&session_setup(), filetime(CAPTURED)).unwrap();
        let (_, session_key) = completed_as_alice(step);
        // The client's signed TREE_CONNECT (SMB 2.1: HMAC-SHA256 of the session key, MS-SMB2
        // 3.1.4.1) verifies with the key the acceptor derived: both sides hold the subkey.
        let mut message =
            hex(std::str::from_utf8(&fixture("smbclient_tree_connect_smb2_10.hex")).unwrap());
        let signature = message[48..64].to_vec();
        message[48..64].fill(0);
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&session_key).unwrap();
        mac.update(&message);
        assert_eq!(&mac.finalize().into_bytes()[..16], &signature[..]);
    }

    #[test]
    fn the_captured_ap_req_replayed_or_late_is_refused() {
        let ap_req = session_setup();
        let mut first = acceptor();
        // Both acceptors of one service share its replay cache, as the sessions of a server do.
        let service = first.kerberos_service().unwrap();
        assert!(first.step(&ap_req, filetime(CAPTURED)).is_ok());
        let mut replay = super::acceptor().with_kerberos(Some(service));
        assert_eq!(
            replay.step(&ap_req, filetime(CAPTURED + 1)).err(),
            Some(AuthError::LogonFailure)
        );
        for late in [CAPTURED + MAX_SKEW_SECS + 1, CAPTURED - MAX_SKEW_SECS - 1] {
            assert_eq!(
                acceptor().step(&ap_req, filetime(late)).err(),
                Some(AuthError::LogonFailure)
            );
        }
    }
}
