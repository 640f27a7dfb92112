use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn name(s: &str) -> Name {
    Name::from_labels(s.split('.'))
}

// Captured from python-zeroconf 0.154.0 on a loopback-only network namespace (tshark on lo):
// a browser for _smb._tcp, then registering "ZC" on zchost.local:445 and unregistering it.

/// The browser's first query: _smb._tcp.local PTR, unicast response wanted.
const ZC_QUERY: &str = "000000000001000000000000045f736d62045f746370056c6f63616c00000c8001";
/// The registration's announcement: PTR, SRV, TXT (empty, RDLENGTH 0), NSEC, A.
const ZC_ANNOUNCE: &str = "000084000000000500000000045f736d62045f746370056c6f63616c00000c0001000011940005025a43c00cc0270021800100000078000f0000000001bd067a63686f7374c016c02700108001000011940000c03e002f8001000000780005c03e000140c03e000180010000007800047f000001";
/// The goodbye: the same records with TTL 0.
const ZC_GOODBYE: &str = "000084000000000500000000045f736d62045f746370056c6f63616c00000c0001000000000005025a43c00cc0270021800100000000000f0000000001bd067a63686f7374c016c02700108001000000000000c03e002f8001000000000005c03e000140c03e000180010000000000047f000001";

#[test]
fn query_decodes_and_encodes_byte_exact() {
    let bytes = hex(ZC_QUERY);
    let m = Message::decode(&bytes).unwrap();
    assert!(!m.is_response());
    assert_eq!(
        m.questions,
        [Question {
            name: name("_smb._tcp.local"),
            qtype: TYPE_PTR,
            class: CLASS_IN,
            unicast_response: true,
        }]
    );
    assert_eq!(m.encode(), bytes);
}

#[test]
fn announcement_decodes() {
    let m = Message::decode(&hex(ZC_ANNOUNCE)).unwrap();
    assert!(m.is_response());
    assert_eq!(m.flags, FLAG_RESPONSE | FLAG_AUTHORITATIVE);
    let instance = name("ZC._smb._tcp.local");
    let host = name("zchost.local");
    assert_eq!(m.answers.len(), 5);
    assert_eq!(m.answers[0].name, name("_smb._tcp.local"));
    assert_eq!(m.answers[0].data, RData::Ptr(instance.clone()));
    assert!(!m.answers[0].cache_flush);
    assert_eq!(m.answers[0].ttl, 4500);
    assert_eq!(
        m.answers[1],
        Record {
            name: instance.clone(),
            rtype: TYPE_SRV,
            class: CLASS_IN,
            cache_flush: true,
            ttl: 120,
            data: RData::Srv {
                priority: 0,
                weight: 0,
                port: 445,
                target: host.clone()
            },
        }
    );
    assert_eq!(m.answers[2].data, RData::Txt(Vec::new()));
    assert_eq!(m.answers[3].rtype, 47);
    assert!(matches!(m.answers[3].data, RData::Other(_)));
    assert_eq!(m.answers[4].name, host);
    assert_eq!(m.answers[4].data, RData::A(Ipv4Addr::LOCALHOST));
    let goodbye = Message::decode(&hex(ZC_GOODBYE)).unwrap();
    assert!(goodbye.answers.iter().all(|r| r.ttl == 0));
    assert!(
        goodbye
            .answers
            .iter()
            .zip(&m.answers)
            .all(|(a, b)| a.same_data(b))
    );
}

#[test]
fn response_encodes_byte_exact_with_the_same_compression() {
    // ZC_ANNOUNCE without its TXT and NSEC records (ANCOUNT 3): nothing after them points
    // into them, so the remaining bytes are unchanged.
    let full = Message::decode(&hex(ZC_ANNOUNCE)).unwrap();
    let subset = Message {
        answers: vec![
            full.answers[0].clone(),
            full.answers[1].clone(),
            full.answers[4].clone(),
        ],
        ..full.clone()
    };
    let expected = hex(&format!(
        "{}{}{}",
        "000084000000000300000000",
        "045f736d62045f746370056c6f63616c00000c0001000011940005025a43c00cc0270021800100000078000f0000000001bd067a63686f7374c016",
        "c03e000180010000007800047f000001"
    ));
    assert_eq!(subset.encode(), expected);
}

#[test]
fn round_trips() {
    let m = Message {
        id: 7,
        flags: FLAG_RESPONSE,
        questions: vec![Question {
            name: name("My Server._smb._tcp.local"),
            qtype: TYPE_ANY,
            class: CLASS_IN,
            unicast_response: false,
        }],
        answers: vec![Record {
            name: Name::from_labels(["a.b c", "_device-info", "_tcp", "local"]),
            rtype: TYPE_TXT,
            class: CLASS_IN,
            cache_flush: true,
            ttl: 4500,
            data: RData::Txt(vec![b"model=MacPro7,1@ECOLOR=226,226,224".to_vec()]),
        }],
        authorities: vec![Record {
            name: name("host.local"),
            rtype: TYPE_AAAA,
            class: CLASS_IN,
            cache_flush: false,
            ttl: 120,
            data: RData::Aaaa(Ipv6Addr::LOCALHOST),
        }],
        additionals: vec![Record {
            name: name("HOST.local"),
            rtype: 99,
            class: CLASS_IN,
            cache_flush: false,
            ttl: 1,
            data: RData::Other(vec![1, 2, 3]),
        }],
    };
    let bytes = m.encode();
    assert_eq!(Message::decode(&bytes).unwrap(), m);
    // Names compare without case; the HOST.local additional is compressed to host.local.
    let hosts = bytes
        .windows(4)
        .filter(|w| w.eq_ignore_ascii_case(b"host"))
        .count();
    assert_eq!(hosts, 1);
}

#[test]
fn hostile_input_is_refused_without_panicking() {
    // A pointer to itself.
    let mut looped = hex("000000000001000000000000");
    looped.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1]);
    assert_eq!(Message::decode(&looped), Err(DecodeError::BadPointer));
    // A forward pointer.
    let mut forward = hex("000000000001000000000000");
    forward.extend_from_slice(&[0xC0, 20, 0, 1, 0, 1, 0, 0, 0]);
    assert_eq!(Message::decode(&forward), Err(DecodeError::BadPointer));
    // Counts far beyond the bytes present.
    assert_eq!(
        Message::decode(&hex("0000000000ffffffffffffff")),
        Err(DecodeError::BadCount)
    );
    // A name over 255 bytes.
    let mut long = hex("000000000001000000000000");
    for _ in 0..5 {
        long.push(63);
        long.extend_from_slice(&[b'a'; 63]);
    }
    long.extend_from_slice(&[0, 0, 1, 0, 1]);
    assert_eq!(Message::decode(&long), Err(DecodeError::NameTooLong));
    // Reserved label type.
    let mut reserved = hex("000000000001000000000000");
    reserved.extend_from_slice(&[0x40, 0, 0, 1, 0, 1]);
    assert_eq!(Message::decode(&reserved), Err(DecodeError::BadPointer));
    // An A record of the wrong length, an SRV too short for its fields.
    let bad_a = hex("000084000000000100000000016100000100010000000000030a0000");
    assert_eq!(Message::decode(&bad_a), Err(DecodeError::BadRecordData));
    let bad_srv = hex("0000840000000001000000000161000021000100000000000200000000");
    assert!(Message::decode(&bad_srv).is_err());
    // Every truncation of a real message fails cleanly.
    let full = hex(ZC_ANNOUNCE);
    for n in 0..full.len() {
        assert!(Message::decode(&full[..n]).is_err(), "{n}");
    }
}
