//! Property tests: whatever a client writes, in whatever pieces, the endpoint neither panics
//! nor answers with anything but well-formed PDUs no longer than a pipe fragment, and the way
//! bytes are split across writes does not change the answers.

mod common;

use common::{bench, drain, open, parse};
use proptest::prelude::*;
use smb3d_rpc::MAX_FRAGMENT_LEN;
use smb3d_rpc::pdu::Header;

/// Client PDUs from the captures, per pipe name, as material for mutations.
fn captured_sessions() -> Vec<(String, Vec<Vec<u8>>)> {
    [
        include_str!("captures/samba-rpcclient.txt"),
        include_str!("captures/samba-pyclient.txt"),
        include_str!("captures/samba-probes.txt"),
    ]
    .iter()
    .flat_map(|text| parse(text))
    .map(|pipe| {
        (
            pipe.name,
            pipe.steps.into_iter().map(|(pdu, _)| pdu).collect(),
        )
    })
    .collect()
}

/// Checks every queued answer, reading with the given read sizes.
fn check_answers(pipe: &mut smb3d_rpc::PipeEndpoint, read_sizes: &[usize]) {
    let mut sizes = read_sizes.iter().cycle();
    while pipe.queued_messages() > 0 {
        let before = pipe.queued();
        let next = pipe.pending();
        let max = sizes.next().copied().unwrap_or(usize::MAX).max(1);
        let mut message = pipe.read(max);
        assert!(message.len() <= max && !message.is_empty());
        assert_eq!(pipe.queued(), before - message.len());
        while message.len() < next {
            message.extend(pipe.read(max));
        }
        assert_eq!(message.len(), next);
        let header = Header::decode(&message).expect("answers have a header");
        assert_eq!(usize::from(header.frag_length), message.len());
        assert!(message.len() <= usize::from(MAX_FRAGMENT_LEN));
        assert_eq!(header.rpc_vers, 5);
    }
    assert_eq!(pipe.queued(), 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes(
        pipe in prop::sample::select(vec!["srvsvc", "wkssvc", "lsarpc"]),
        writes in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..8),
        reads in prop::collection::vec(1usize..5000, 1..4),
    ) {
        let mut p = open(pipe, bench());
        for w in &writes {
            let _ = p.write(w);
            check_answers(&mut p, &reads);
        }
    }

    #[test]
    fn mutated_captured_sessions(
        session in prop::sample::select(captured_sessions()),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<u8>()), 1..6),
        reads in prop::collection::vec(1usize..5000, 1..4),
    ) {
        let (name, mut pdus) = session;
        if pdus.is_empty() {
            return Ok(());
        }
        for (which, at, value) in flips {
            let pdu = which.get_mut(&mut pdus);
            if !pdu.is_empty() {
                let i = at.index(pdu.len());
                pdu[i] = value;
            }
        }
        let mut p = open(&name, bench());
        for pdu in &pdus {
            let _ = p.write(pdu);
            check_answers(&mut p, &reads);
        }
    }

    #[test]
    fn splitting_does_not_change_answers(
        session in prop::sample::select(captured_sessions()),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    ) {
        let (name, pdus) = session;
        let stream: Vec<u8> = pdus.concat();
        let mut whole = open(&name, bench());
        let _ = whole.write(&stream);
        let expected = drain(&mut whole);

        let mut points: Vec<usize> = cuts.iter().map(|c| c.index(stream.len() + 1)).collect();
        points.sort_unstable();
        let mut split = open(&name, bench());
        let mut start = 0;
        for end in points.into_iter().chain([stream.len()]) {
            let _ = split.write(&stream[start..end]);
            start = end;
        }
        let mut got = drain(&mut split);
        prop_assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter_mut().zip(&expected) {
            // Association groups and policy handles are each pipe's own.
            if g.len() >= 24 && (g[2] == 12 || g[2] == 15) {
                g[20..24].copy_from_slice(&e[20..24]);
            }
            if g.len() == 48 && g[2] == 2 {
                g[24..44].copy_from_slice(&e[24..44]);
            }
        }
        prop_assert_eq!(got, expected);
    }
}
