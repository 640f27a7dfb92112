use std::net::{Ipv4Addr, Ipv6Addr};

use super::*;
use crate::dns::DecodeError;

fn info() -> ServiceInfo {
    ServiceInfo {
        instance: "FILES".into(),
        host: "nas".into(),
        port: 445,
        model: Some("Xserve".into()),
        addresses: vec![
            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ],
        time_machine: Vec::new(),
    }
}

fn name(s: &str) -> Name {
    Name::from_labels(s.split('.'))
}

const PEER: &str = "127.0.0.2:5353";

/// Runs the responder from `start` until it has probed and announced; returns the datagrams
/// with their send times.
fn establish(r: &mut Responder, start: Instant) -> Vec<(Duration, Message)> {
    let mut sent = Vec::new();
    while !matches!(r.phase, Phase::Running) {
        let now = r.poll_timeout().unwrap();
        while let Some(t) = r.poll_transmit(now) {
            assert_eq!(t.destination, Destination::Multicast);
            sent.push((now - start, Message::decode(&t.payload).unwrap()));
        }
    }
    sent
}

fn query(questions: &[(&str, u16)], unicast: bool) -> Message {
    Message {
        questions: questions
            .iter()
            .map(|(n, t)| Question {
                name: name(n),
                qtype: *t,
                class: CLASS_IN,
                unicast_response: unicast,
            })
            .collect(),
        ..Message::default()
    }
}

fn drain(r: &mut Responder, now: Instant) -> Vec<Transmit> {
    let mut out = Vec::new();
    let later = now + Duration::from_millis(200);
    while let Some(t) = r.poll_transmit(later) {
        out.push(t);
    }
    out
}

#[test]
fn probes_three_times_then_announces_twice() {
    let start = Instant::now();
    let mut r = Responder::new(info(), start, 42);
    assert!(!r.is_established());
    let sent = establish(&mut r, start);
    assert_eq!(sent.len(), 5);
    let first = sent[0].0;
    assert!(first <= Duration::from_millis(250));
    for (i, (at, m)) in sent.iter().take(3).enumerate() {
        assert_eq!(*at, first + PROBE_INTERVAL * i as u32);
        assert!(!m.is_response());
        let names: Vec<String> = m.questions.iter().map(|q| q.name.to_string()).collect();
        assert_eq!(
            names,
            [
                "nas.local.",
                "FILES._smb._tcp.local.",
                "FILES._device-info._tcp.local."
            ]
        );
        assert!(m.questions.iter().all(|q| q.qtype == TYPE_ANY));
        assert_eq!(m.questions[0].unicast_response, i == 0);
        // SRV, TXT, device TXT and SRV, A, AAAA proposed in the authority section.
        assert_eq!(m.authorities.len(), 6);
    }
    let (announced_at, announcement) = &sent[3];
    assert_eq!(*announced_at, first + PROBE_INTERVAL * 3);
    assert_eq!(sent[4].0 - sent[3].0, ANNOUNCE_INTERVAL);
    assert!(announcement.is_response());
    let mut kinds: Vec<(String, u16, bool)> = announcement
        .answers
        .iter()
        .map(|a| (a.name.to_string(), a.rtype, a.cache_flush))
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            ("FILES._device-info._tcp.local.".to_owned(), TYPE_TXT, true),
            ("FILES._device-info._tcp.local.".to_owned(), TYPE_SRV, true),
            ("FILES._smb._tcp.local.".to_owned(), TYPE_TXT, true),
            ("FILES._smb._tcp.local.".to_owned(), TYPE_SRV, true),
            ("_device-info._tcp.local.".to_owned(), TYPE_PTR, false),
            ("_services._dns-sd._udp.local.".to_owned(), TYPE_PTR, false),
            ("_smb._tcp.local.".to_owned(), TYPE_PTR, false),
            ("nas.local.".to_owned(), TYPE_A, true),
            ("nas.local.".to_owned(), TYPE_AAAA, true),
        ]
    );
    let device = announcement
        .answers
        .iter()
        .find(|a| a.name == name("FILES._device-info._tcp.local") && a.rtype == TYPE_TXT)
        .unwrap();
    assert_eq!(device.data, RData::Txt(vec![b"model=Xserve".to_vec()]));
    assert!(r.poll_timeout().is_none());
}

#[test]
fn answers_ptr_queries_with_srv_txt_and_addresses_after_a_delay() {
    let start = Instant::now();
    let mut r = Responder::new(info(), start, 7);
    establish(&mut r, start);
    let now = start + Duration::from_secs(5);
    let q = query(&[("_smb._tcp.local", TYPE_PTR)], false);
    r.handle(&q.encode(), PEER.parse().unwrap(), now);
    // Shared answers wait 20-120 ms.
    assert!(r.poll_transmit(now).is_none());
    let at = r.poll_timeout().unwrap();
    assert!(at >= now + Duration::from_millis(20) && at <= now + Duration::from_millis(120));
    let t = r.poll_transmit(at).unwrap();
    assert_eq!(t.destination, Destination::Multicast);
    let m = Message::decode(&t.payload).unwrap();
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.answers[0].data, RData::Ptr(name("FILES._smb._tcp.local")));
    let mut extra: Vec<u16> = m.additionals.iter().map(|a| a.rtype).collect();
    extra.sort();
    assert_eq!(extra, [TYPE_A, TYPE_TXT, TYPE_AAAA, TYPE_SRV]);
    let srv = m.additionals.iter().find(|a| a.rtype == TYPE_SRV).unwrap();
    assert!(
        matches!(&srv.data, RData::Srv { port: 445, target, .. } if *target == name("nas.local"))
    );
}

/// Time Machine shares are advertised as `_adisk._tcp` disks, one `dkN` entry each and the
/// system entry, as macOS browses for backup destinations; a server without them has none.
#[test]
fn time_machine_shares_are_adisk_disks() {
    let start = Instant::now();
    let tm = ServiceInfo {
        time_machine: vec!["Backups".into(), "Laptop TM".into(), "x".repeat(250)],
        ..info()
    };
    let mut r = Responder::new(tm, start, 7);
    let sent = establish(&mut r, start);
    let probed: Vec<String> = sent[0]
        .1
        .questions
        .iter()
        .map(|q| q.name.to_string())
        .collect();
    assert!(
        probed.contains(&"FILES._adisk._tcp.local.".to_string()),
        "{probed:?}"
    );
    let now = start + Duration::from_secs(5);
    let q = query(&[("_adisk._tcp.local", TYPE_PTR)], true);
    r.handle(&q.encode(), PEER.parse().unwrap(), now);
    let m = Message::decode(&drain(&mut r, now)[0].payload).unwrap();
    assert_eq!(
        m.answers[0].data,
        RData::Ptr(name("FILES._adisk._tcp.local"))
    );
    let txt = m.additionals.iter().find(|a| a.rtype == TYPE_TXT).unwrap();
    assert_eq!(txt.name, name("FILES._adisk._tcp.local"));
    assert_eq!(
        txt.data,
        RData::Txt(vec![
            b"dk0=adVN=Backups,adVF=0x82".to_vec(),
            b"dk1=adVN=Laptop TM,adVF=0x82".to_vec(),
            b"sys=waMa=0,adVF=0x100".to_vec(),
        ])
    );
    let q = query(&[("_services._dns-sd._udp.local", TYPE_PTR)], true);
    r.handle(&q.encode(), PEER.parse().unwrap(), now);
    let m = Message::decode(&drain(&mut r, now)[0].payload).unwrap();
    assert!(
        m.answers
            .iter()
            .any(|a| a.data == RData::Ptr(name("_adisk._tcp.local")))
    );

    let mut plain = Responder::new(info(), start, 7);
    establish(&mut plain, start);
    let q = query(&[("_adisk._tcp.local", TYPE_PTR)], true);
    plain.handle(&q.encode(), PEER.parse().unwrap(), now);
    assert!(drain(&mut plain, now).is_empty());
}

#[test]
fn unique_answers_go_at_once_and_qu_answers_go_unicast() {
    let start = Instant::now();
    let mut r = Responder::new(info(), start, 9);
    establish(&mut r, start);
    let now = start + Duration::from_secs(5);
    let peer: SocketAddr = PEER.parse().unwrap();
    r.handle(&query(&[("NAS.local", TYPE_A)], true).encode(), peer, now);
    let t = r.poll_transmit(now).unwrap();
    assert_eq!(t.destination, Destination::Unicast(peer));
    let m = Message::decode(&t.payload).unwrap();
    assert_eq!(m.answers.len(), 1);
    assert_eq!(m.answers[0].data, RData::A(Ipv4Addr::new(127, 0, 0, 1)));
    assert!(m.answers[0].cache_flush);

    // A name that is not ours, or a type we do not have: silence.
    r.handle(
        &query(&[("other.local", TYPE_A)], false).encode(),
        peer,
        now,
    );
    r.handle(
        &query(&[("FILES._smb._tcp.local", 47)], false).encode(),
        peer,
        now,
    );
    assert!(drain(&mut r, now).is_empty());
}

#[test]
fn known_answers_are_suppressed() {
    let start = Instant::now();
    let mut r = Responder::new(info(), start, 3);
    establish(&mut r, start);
    let now = start + Duration::from_secs(5);
    let mut q = query(&[("_smb._tcp.local", TYPE_PTR)], false);
    q.answers.push(Record {
        name: name("_smb._tcp.local"),
        rtype: TYPE_PTR,
        class: CLASS_IN,
        cache_flush: false,
        ttl: OTHER_TTL / 2,
        data: RData::Ptr(name("files._smb._tcp.local")),
    });
    r.handle(&q.encode(), PEER.parse().unwrap(), now);
    assert!(drain(&mut r, now).is_empty());
    // With less than half the TTL left the answer is sent again.
    q.answers[0].ttl = OTHER_TTL / 2 - 1;
    r.handle(&q.encode(), PEER.parse().unwrap(), now);
    assert_eq!(drain(&mut r, now).len(), 1);
}

#[test]
fn legacy_unicast_gets_id_question_and_short_ttls() {
    let start = Instant::now();
    let mut r = Responder::new(info(), start, 5);
    establish(&mut r, start);
    let now = start + Duration::from_secs(5);
    let mut q = query(&[("FILES._smb._tcp.local", TYPE_SRV)], false);
    q.id = 0x1234;
    let from: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    r.handle(&q.encode(), from, now);
    let t = r.poll_transmit(now).unwrap();
    assert_eq!(t.destination, Destination::Unicast(from));
    let m = Message::decode(&t.payload).unwrap();
    assert_eq!(m.id, 0x1234);
    assert_eq!(m.questions, q.questions);
    for r in m.answers.iter().chain(&m.additionals) {
        assert!(r.ttl <= LEGACY_TTL && !r.cache_flush);
    }
    assert_eq!(m.answers[0].rtype, TYPE_SRV);
}

#[test]
fn a_conflict_while_probing_renames_and_probes_again() {
    let start = Instant::now();
    let mut r = Responder::new(info(), start, 11);
    let first = r.poll_timeout().unwrap();
    r.poll_transmit(first).unwrap();
    let other = Message {
        flags: FLAG_RESPONSE | FLAG_AUTHORITATIVE,
        answers: vec![Record {
            name: name("FILES._smb._tcp.local"),
            rtype: TYPE_SRV,
            class: CLASS_IN,
            cache_flush: true,
            ttl: 120,
            data: RData::Srv {
                priority: 0,
                weight: 0,
                port: 445,
                target: name("elsewhere.local"),
            },
        }],
        ..Message::default()
    };
    r.handle(&other.encode(), PEER.parse().unwrap(), first);
    assert_eq!(r.info().instance, "FILES (2)");
    assert_eq!(r.info().host, "nas");
    let sent = establish(&mut r, first);
    assert!(
        sent[0].1.questions[1].name == name("FILES (2)._smb._tcp.local"),
        "{:?}",
        sent[0].1.questions
    );

    // After that, our own announcement looped back is not a conflict, another host's A for
    // our host name is.
    let now = first + Duration::from_secs(10);
    let own = r.announcement(None).encode();
    r.handle(&own, PEER.parse().unwrap(), now);
    assert!(r.is_established());
    let mut theirs = Message::decode(&own).unwrap();
    theirs.answers.retain(|a| a.rtype == TYPE_A);
    theirs.answers[0].data = RData::A(Ipv4Addr::new(127, 0, 0, 9));
    r.handle(&theirs.encode(), PEER.parse().unwrap(), now);
    assert_eq!(r.info().host, "nas-2");
    assert!(!r.is_established());
}

#[test]
fn simultaneous_probes_defer_to_the_later_data() {
    let start = Instant::now();
    let mut r = Responder::new(info(), start, 13);
    let first = r.poll_timeout().unwrap();
    let probe = Message::decode(&r.poll_transmit(first).unwrap().payload).unwrap();
    // Our own probe looped back: identical, no effect.
    r.handle(&probe.encode(), PEER.parse().unwrap(), first);
    assert!(matches!(r.phase, Phase::Probing { sent: 1, .. }));
    // A lower address for our host name loses to us.
    let mut lower = probe.clone();
    lower.authorities.retain(|a| a.name == name("nas.local"));
    for a in &mut lower.authorities {
        if let RData::A(ip) = &mut a.data {
            *ip = Ipv4Addr::new(1, 0, 0, 1);
        }
    }
    r.handle(&lower.encode(), PEER.parse().unwrap(), first);
    assert!(matches!(r.phase, Phase::Probing { sent: 1, .. }));
    // A higher one wins: we wait a second and probe again, same name.
    let mut higher = lower.clone();
    for a in &mut higher.authorities {
        if let RData::A(ip) = &mut a.data {
            *ip = Ipv4Addr::new(200, 0, 0, 1);
        }
    }
    r.handle(&higher.encode(), PEER.parse().unwrap(), first);
    assert_eq!(
        r.phase,
        Phase::Probing {
            sent: 0,
            next: first + LOST_TIEBREAK_DELAY
        }
    );
    assert_eq!(r.info().host, "nas");
}

#[test]
fn goodbye_sends_every_record_with_ttl_zero() {
    let start = Instant::now();
    let mut unannounced = Responder::new(info(), start, 1);
    assert!(unannounced.goodbye().is_none());
    let mut r = Responder::new(info(), start, 1);
    establish(&mut r, start);
    let t = r.goodbye().unwrap();
    assert_eq!(t.destination, Destination::Multicast);
    let m = Message::decode(&t.payload).unwrap();
    assert_eq!(m.answers.len(), 9);
    assert!(m.answers.iter().all(|a| a.ttl == 0));
    // Stopped: no more answers.
    r.handle(
        &query(&[("_smb._tcp.local", TYPE_PTR)], false).encode(),
        PEER.parse().unwrap(),
        start,
    );
    assert!(drain(&mut r, start).is_empty());
}

#[test]
fn garbage_is_ignored() {
    let start = Instant::now();
    let mut r = Responder::new(info(), start, 1);
    establish(&mut r, start);
    assert_eq!(Message::decode(&[1, 2, 3]), Err(DecodeError::Truncated));
    r.handle(&[1, 2, 3], PEER.parse().unwrap(), start);
    assert!(drain(&mut r, start).is_empty());
}
