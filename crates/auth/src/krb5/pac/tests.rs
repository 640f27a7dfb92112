//! The PAC Samba 4.17's AD DC issued (tests/fixtures/krb5/samba_ad_dora.pac.md), and what must be refused.

use super::*;

const PAC: &[u8] = include_bytes!("../../../tests/fixtures/krb5/samba_ad_dora.pac");
const KEY: &str = "2b98684847fe706579a1178bcc8fb8944950ea3ca97bf8b0381dfbebd5b9736e";
const AUTH_TIME: i64 = 1_795_810_369;
const DOMAIN: &str = "S-1-5-21-47954915-979690838-2193643765";

fn key() -> Vec<u8> {
    (0..KEY.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&KEY[i..i + 2], 16).unwrap())
        .collect()
}

fn facts(key: &[u8]) -> TicketFacts<'_> {
    TicketFacts {
        client: "dora",
        auth_time: AUTH_TIME,
        key,
        etype: 18,
    }
}

fn sid(s: &str) -> Sid {
    s.parse().unwrap()
}

/// The offset of the first buffer of type `kind`.
fn buffer_of(pac: &[u8], kind: u32) -> Buffer {
    *buffers(pac)
        .unwrap()
        .iter()
        .find(|b| b.kind == kind)
        .unwrap()
}

#[test]
fn samba_s_pac_verifies_and_names_dora_and_her_groups() {
    let key = key();
    let pac = verify(PAC, &facts(&key)).unwrap().unwrap();
    assert_eq!(pac.account, "dora");
    assert_eq!(pac.domain, "SMB3DAD");
    assert_eq!(pac.user_sid, sid(&format!("{DOMAIN}-1102")));
    assert_eq!(
        pac.group_sids,
        [
            sid(&format!("{DOMAIN}-513")),
            sid(&format!("{DOMAIN}-1103")),
            // Authentication authority asserted identity (MS-DTYP 2.4.2.4), an ExtraSid.
            sid("S-1-18-1"),
        ]
    );
    assert_eq!(pac.upn.as_deref(), Some("dora@ad.smb3d.test"));
    assert_eq!(decode_unverified(PAC).unwrap(), pac);
}

#[test]
fn a_corrupted_server_signature_is_refused() {
    let key = key();
    let server = buffer_of(PAC, SERVER_CHECKSUM);
    let mut pac = PAC.to_vec();
    pac[server.start + 4] ^= 1;
    assert_eq!(verify(&pac, &facts(&key)), Err(PacError::BadSignature));
}

#[test]
fn a_forged_group_is_refused() {
    // Whoever adds a group (here: the user's RID turned into 500, Administrator) cannot sign
    // the result without the service key.
    let key = key();
    let logon = buffer_of(PAC, LOGON_INFO);
    let at = PAC[logon.start..logon.end]
        .windows(4)
        .position(|w| w == 1102u32.to_le_bytes())
        .unwrap();
    let mut pac = PAC.to_vec();
    pac[logon.start + at..logon.start + at + 4].copy_from_slice(&500u32.to_le_bytes());
    assert_eq!(
        decode_unverified(&pac).unwrap().user_sid,
        sid(&format!("{DOMAIN}-500"))
    );
    assert_eq!(verify(&pac, &facts(&key)), Err(PacError::BadSignature));
}

#[test]
fn another_key_or_enctype_is_refused() {
    let mut other = key();
    other[0] ^= 0x80;
    assert_eq!(verify(PAC, &facts(&other)), Err(PacError::BadSignature));
    let key = key();
    let aes128 = TicketFacts {
        etype: 17,
        key: &key[..16],
        ..facts(&key)
    };
    assert_eq!(verify(PAC, &aes128), Err(PacError::BadSignature));
}

#[test]
fn a_pac_of_another_client_or_logon_is_refused() {
    let key = key();
    let other = TicketFacts {
        client: "mallory",
        ..facts(&key)
    };
    assert_eq!(verify(PAC, &other), Err(PacError::WrongClient));
    let later = TicketFacts {
        auth_time: AUTH_TIME + 1,
        ..facts(&key)
    };
    assert_eq!(verify(PAC, &later), Err(PacError::WrongClient));
}

#[test]
fn a_pac_without_its_server_signature_is_refused() {
    // The server signature's entry renamed to an unknown type: the PAC no longer has one.
    let key = key();
    let mut pac = PAC.to_vec();
    let entry = (0..7)
        .map(|i| 8 + 16 * i)
        .find(|&at| pac[at..at + 4] == SERVER_CHECKSUM.to_le_bytes())
        .unwrap();
    pac[entry..entry + 4].copy_from_slice(&0x99u32.to_le_bytes());
    assert_eq!(
        verify(&pac, &facts(&key)),
        Err(PacError::Missing("server signature"))
    );
}

#[test]
fn hostile_headers_are_refused() {
    let mut huge = PAC.to_vec();
    huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        decode_unverified(&huge),
        Err(PacError::Malformed("PACTYPE"))
    );
    // An offset past the end.
    let mut past = PAC.to_vec();
    past[16..24].copy_from_slice(&(PAC.len() as u64).to_le_bytes());
    assert_eq!(decode_unverified(&past), Err(PacError::Malformed("Offset")));
    // The second buffer moved onto the first.
    let mut overlap = PAC.to_vec();
    let first = overlap[16..24].to_vec();
    overlap[32..40].copy_from_slice(&first);
    assert_eq!(
        decode_unverified(&overlap),
        Err(PacError::Malformed("overlapping buffers"))
    );
    // A buffer inside the PAC_INFO_BUFFER array, or not 8-aligned.
    let mut inside = PAC.to_vec();
    inside[16..24].copy_from_slice(&8u64.to_le_bytes());
    assert_eq!(
        decode_unverified(&inside),
        Err(PacError::Malformed("Offset"))
    );
}

#[test]
fn huge_group_counts_are_refused_without_allocating_them() {
    let logon = buffer_of(PAC, LOGON_INFO);
    // GroupCount sits 20 + 48 + 48 + 4 + 8 octets into the buffer (after the headers and
    // referent, the times, the strings, the counts, UserId and PrimaryGroupId).
    let at = logon.start + 20 + 48 + 48 + 4 + 8;
    assert_eq!(PAC[at..at + 4], 2u32.to_le_bytes());
    for count in [3, 1000, u32::MAX] {
        let mut pac = PAC.to_vec();
        pac[at..at + 4].copy_from_slice(&count.to_le_bytes());
        assert!(decode_unverified(&pac).is_err(), "{count}");
    }
}

#[test]
fn every_truncation_and_byte_flip_is_refused_or_harmless() {
    let key = key();
    for len in 0..PAC.len() {
        assert!(verify(&PAC[..len], &facts(&key)).is_err(), "{len}");
        let _ = decode_unverified(&PAC[..len]);
    }
    let kdc = buffer_of(PAC, KDC_CHECKSUM);
    let kdc_signature = kdc.start + 4..kdc.start + 16;
    for at in 0..PAC.len() {
        for bit in [0x01, 0x80] {
            let mut pac = PAC.to_vec();
            pac[at] ^= bit;
            let _ = decode_unverified(&pac);
            // The KDC signature is not covered by the server's (MS-PAC 2.8.1 zeroes it), so
            // altering it leaves the PAC verifiable; nothing else does.
            if !kdc_signature.contains(&at) {
                assert!(verify(&pac, &facts(&key)).is_err(), "byte {at} ^ {bit:#x}");
            }
        }
    }
}

/// MIT's KDC (1.20) signs a PAC of client info, ticket checksum and the two signatures, with
/// no logon info: captured from the ticket of tests/kerberos.rs's smbclient AP-REQ.
#[test]
fn mit_s_pac_verifies_and_names_no_groups() {
    let mit = include_bytes!("../../../tests/fixtures/krb5/mit_alice.pac");
    let keytab = crate::krb5::Keytab::parse(include_bytes!(
        "../../../tests/fixtures/krb5/cifs_filesrv.keytab"
    ))
    .unwrap();
    let key = keytab.entries.iter().find(|e| e.enctype == 18).unwrap();
    let alice = TicketFacts {
        client: "alice",
        auth_time: 1_795_787_822,
        key: &key.key,
        etype: 18,
    };
    assert_eq!(verify(mit, &alice), Ok(None));
    let bob = TicketFacts {
        client: "bob",
        ..alice
    };
    assert_eq!(verify(mit, &bob), Err(PacError::WrongClient));
    let server = buffer_of(mit, SERVER_CHECKSUM);
    let mut forged = mit.to_vec();
    forged[server.start + 4] ^= 1;
    assert_eq!(verify(&forged, &alice), Err(PacError::BadSignature));
}

/// A string whose ActualCount is past half of u32 (fuzz auth_pac, auth_netlogon): its octet
/// count overflowed `actual * 2` in a checked build; it is malformed, never a panic.
#[test]
fn a_string_count_past_half_of_u32_is_malformed() {
    let mut data = Vec::new();
    for word in [0x8000_0001_u32, 0, 0x8000_0001] {
        data.extend_from_slice(&word.to_le_bytes());
    }
    data.extend_from_slice(&[0x41, 0]);
    let mut ndr = Ndr::new(&data);
    assert!(matches!(ndr.string(2), Err(PacError::Malformed("string"))));
}
