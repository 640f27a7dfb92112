use std::net::{IpAddr, Ipv4Addr};

use super::*;

const A21: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 21));
const A22: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 22));

/// A cluster of two nodes, n1 serving .21 and n2 serving .22, named FS.
struct TwoNodes;

impl Cluster for TwoNodes {
    fn is_server_name(&self, name: &str) -> bool {
        name.eq_ignore_ascii_case("fs") || name.eq_ignore_ascii_case("fs.example.org")
    }
    fn node_of(&self, address: IpAddr) -> Option<String> {
        match address {
            A21 => Some("n1".into()),
            A22 => Some("n2".into()),
            _ => None,
        }
    }
}

fn stub(f: impl FnOnce(&mut NdrWriter<'_>)) -> Vec<u8> {
    let mut buf = Vec::new();
    f(&mut NdrWriter::with_base(&mut buf, 0));
    buf
}

/// A request stub as a client marshals RegisterEx's (or Register's) parameters.
fn register_stub(ex: bool, version: u32, strings: &[Option<&str>], flags: u32, ka: u32) -> Vec<u8> {
    stub(|w| {
        w.u32(version);
        for s in strings {
            w.pointer(s.is_some());
            if let Some(s) = s {
                w.string(s);
            }
        }
        if ex {
            w.u32(flags).u32(ka);
        }
    })
}

fn args(ex: bool, version: u32, net: &str, ip: &str, flags: u32) -> RegisterArgs {
    RegisterArgs {
        ex,
        version,
        net_name: Some(net.into()),
        share_name: ex.then(|| "demo".into()),
        ip_address: Some(ip.into()),
        client_computer_name: Some("CLIENT1".into()),
        flags,
        keep_alive_timeout: if ex { 30 } else { 0 },
    }
}

#[test]
fn register_request_golden() {
    // Register(0x00010001, "FS", "127.0.0.21", "C") as a client marshals it, written out.
    let golden: &[u8] = &[
        0x01, 0x00, 0x01, 0x00, // Version
        0x00, 0x00, 0x02, 0x00, // NetName referent
        0x03, 0, 0, 0, 0, 0, 0, 0, 0x03, 0, 0, 0, b'F', 0, b'S', 0, 0, 0, 0, 0, // "FS" + pad
        0x04, 0x00, 0x02, 0x00, // IpAddress referent
        0x0b, 0, 0, 0, 0, 0, 0, 0, 0x0b, 0, 0, 0, b'1', 0, b'2', 0, b'7', 0, b'.', 0, b'0', 0,
        b'.', 0, b'0', 0, b'.', 0, b'2', 0, b'1', 0, 0, 0, 0, 0, // "127.0.0.21" + pad
        0x08, 0x00, 0x02, 0x00, // ClientComputerName referent
        0x02, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, b'C', 0, 0, 0,
    ];
    let call = decode_call(OP_REGISTER, golden).unwrap().unwrap();
    let Call::Register(a) = call else {
        panic!("{call:?}")
    };
    assert_eq!(a.version, VERSION_1);
    assert_eq!(a.net_name.as_deref(), Some("FS"));
    assert_eq!(a.ip_address.as_deref(), Some("127.0.0.21"));
    assert_eq!(a.client_computer_name.as_deref(), Some("C"));
    assert_eq!(a.share_name, None);
    assert!(!a.ex);
}

#[test]
fn register_ex_decodes_every_parameter_and_null_strings() {
    let s = register_stub(
        true,
        VERSION_2,
        &[Some("FS"), None, Some("127.0.0.22"), Some("CL")],
        REGISTER_IP_NOTIFICATION,
        120,
    );
    let Some(Ok(Call::Register(a))) = decode_call(OP_REGISTER_EX, &s) else {
        panic!()
    };
    assert!(a.ex);
    assert_eq!(a.share_name, None);
    assert_eq!(a.ip_address.as_deref(), Some("127.0.0.22"));
    assert_eq!((a.flags, a.keep_alive_timeout), (1, 120));
}

#[test]
fn crafted_requests_are_refused_not_panics() {
    let good = register_stub(
        true,
        VERSION_2,
        &[Some("FS"), Some("demo"), Some("127.0.0.22"), Some("CL")],
        0,
        0,
    );
    // Every truncation fails cleanly.
    for len in 0..good.len() {
        assert!(
            decode_call(OP_REGISTER_EX, &good[..len]).unwrap().is_err(),
            "{len}"
        );
    }
    // A string's actual count past what was sent, past its maximum, or a non-zero offset.
    let mut huge = good.clone();
    huge[8..12].copy_from_slice(&0x4000_0000u32.to_le_bytes());
    huge[16..20].copy_from_slice(&0x4000_0000u32.to_le_bytes());
    assert!(decode_call(OP_REGISTER_EX, &huge).unwrap().is_err());
    let mut past_max = good.clone();
    past_max[16..20].copy_from_slice(&4u32.to_le_bytes());
    assert!(decode_call(OP_REGISTER_EX, &past_max).unwrap().is_err());
    let mut offset = good.clone();
    offset[12..16].copy_from_slice(&1u32.to_le_bytes());
    assert!(decode_call(OP_REGISTER_EX, &offset).unwrap().is_err());
    // A name longer than any name of a server.
    let long = "x".repeat(MAX_NAME_UNITS + 1);
    let s = register_stub(false, VERSION_1, &[Some(&long), Some("a"), Some("b")], 0, 0);
    assert!(decode_call(OP_REGISTER, &s).unwrap().is_err());
    // Unknown opnums are no call of the interface; handles must be whole.
    assert!(decode_call(5, &[]).is_none());
    assert!(decode_call(OP_ASYNC_NOTIFY, &[0; 19]).unwrap().is_err());
    assert_eq!(
        decode_call(OP_UNREGISTER, &[7; 20]).unwrap().unwrap(),
        Call::UnRegister([7; 20])
    );
}

#[test]
fn resource_change_golden() {
    let n = resource_change(&[("FS", false), ("N", true)]);
    assert_eq!(n.message_type, 1);
    assert_eq!(n.count, 2);
    assert_eq!(
        n.buffer,
        [
            0x0e, 0, 0, 0, 0xff, 0, 0, 0, b'F', 0, b'S', 0, 0, 0, // Length 14, UNAVAILABLE
            0x0c, 0, 0, 0, 0x01, 0, 0, 0, b'N', 0, 0, 0, // Length 12, AVAILABLE
        ]
    );
}

#[test]
fn client_move_golden() {
    let n = client_move(&[A21]);
    assert_eq!((n.message_type, n.count), (2, 1));
    let mut expected = vec![
        36, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x09, 0, 0, 0, 127, 0, 0, 21,
    ];
    expected.extend([0; 16]);
    assert_eq!(n.buffer, expected);
}

#[test]
fn async_notify_response_golden() {
    let n = resource_change(&[("F", false)]);
    let out = stub(|w| encode_async_notify(w, Ok(&n)));
    let mut expected = vec![
        0, 0, 2, 0, // referent
        1, 0, 0, 0, // MessageType
        12, 0, 0, 0, // Length
        1, 0, 0, 0, // NumberOfMessages
        4, 0, 2, 0, // MessageBuffer referent
        12, 0, 0, 0, // conformance
    ];
    expected.extend(&n.buffer);
    expected.extend([0, 0, 0, 0]);
    assert_eq!(out, expected);
    let failed = stub(|w| encode_async_notify(w, Err(error::NOT_FOUND)));
    assert_eq!(failed, [0, 0, 0, 0, 0x90, 0x04, 0, 0]);
}

#[test]
fn interface_list_layout() {
    let list = [
        InterfaceInfo {
            group_name: "n1".into(),
            address: A21,
            available: true,
        },
        InterfaceInfo {
            group_name: "n2".into(),
            address: "::1".parse().unwrap(),
            available: false,
        },
    ];
    let out = stub(|w| encode_interface_list(w, &list));
    const ENTRY: usize = 552;
    assert_eq!(out.len(), 16 + 2 * ENTRY + 4);
    assert_eq!(&out[4..8], &2u32.to_le_bytes());
    assert_eq!(&out[12..16], &2u32.to_le_bytes());
    let e = &out[16..16 + ENTRY];
    assert_eq!(&e[..6], &[b'n', 0, b'1', 0, 0, 0]);
    assert_eq!(&e[520..524], &VERSION_2.to_le_bytes());
    assert_eq!(&e[524..526], &[1, 0]);
    assert_eq!(&e[528..532], &[127, 0, 0, 21]);
    assert_eq!(&e[548..552], &5u32.to_le_bytes());
    let e2 = &out[16 + ENTRY..16 + 2 * ENTRY];
    assert_eq!(&e2[524..526], &[0xff, 0]);
    assert_eq!(&e2[546..548], &[0, 1]);
    assert_eq!(&e2[548..552], &6u32.to_le_bytes());
    assert_eq!(&out[out.len() - 4..], &[0; 4]);
    let empty = stub(|w| encode_interface_list(w, &[]));
    assert_eq!(empty, [0, 0, 0, 0, 0x03, 0x01, 0, 0]);
}

#[test]
fn register_checks_follow_3_1_4_2_and_3_1_4_5() {
    let mut t = Registrations::new(4, 100, 100);
    let refused = |t: &mut Registrations, a: &RegisterArgs| t.register("u", a, &TwoNodes, [9; 16]);
    assert_eq!(
        refused(&mut t, &args(false, VERSION_2, "FS", "127.0.0.21", 0)),
        Err(Refused(error::REVISION_MISMATCH))
    );
    assert_eq!(
        refused(&mut t, &args(true, VERSION_1, "FS", "127.0.0.21", 0)),
        Err(Refused(error::REVISION_MISMATCH))
    );
    let mut no_client = args(false, VERSION_1, "FS", "127.0.0.21", 0);
    no_client.client_computer_name = None;
    assert_eq!(
        refused(&mut t, &no_client),
        Err(Refused(error::INVALID_PARAMETER))
    );
    assert_eq!(
        refused(&mut t, &args(false, VERSION_1, "OTHER", "127.0.0.21", 0)),
        Err(Refused(error::INVALID_PARAMETER))
    );
    assert_eq!(
        refused(&mut t, &args(false, VERSION_1, "FS", "not an address", 0)),
        Err(Refused(error::INVALID_PARAMETER))
    );
    assert_eq!(
        refused(&mut t, &args(false, VERSION_1, "FS", "127.0.0.99", 0)),
        Err(Refused(error::INVALID_STATE))
    );
    assert_eq!(
        refused(&mut t, &args(true, VERSION_2, "FS", "127.0.0.21", 2)),
        Err(Refused(error::INVALID_PARAMETER))
    );
    assert!(t.is_empty());
    t.register(
        "u",
        &args(false, VERSION_1, "fs.EXAMPLE.org", "127.0.0.21", 0),
        &TwoNodes,
        [1; 16],
    )
    .unwrap();
    assert_eq!(t.len(), 1);
    assert_eq!(t.unregister(&[1; 16]), Ok(()));
    assert_eq!(t.unregister(&[1; 16]), Err(Refused(error::NOT_FOUND)));
    assert_eq!(t.take(&[1; 16]).unwrap_err(), Refused(error::NOT_FOUND));
}

#[test]
fn registrations_are_bounded_per_client_and_in_all() {
    let mut t = Registrations::new(2, 3, 3);
    let a = args(false, VERSION_1, "FS", "127.0.0.21", 0);
    t.register("u", &a, &TwoNodes, [1; 16]).unwrap();
    t.register("u", &a, &TwoNodes, [2; 16]).unwrap();
    assert_eq!(
        t.register("u", &a, &TwoNodes, [3; 16]),
        Err(Refused(error::NO_SYSTEM_RESOURCES))
    );
    let mut other = a.clone();
    other.client_computer_name = Some("CLIENT2".into());
    t.register("u", &other, &TwoNodes, [3; 16]).unwrap();
    other.client_computer_name = Some("CLIENT3".into());
    assert_eq!(
        t.register("u", &other, &TwoNodes, [4; 16]),
        Err(Refused(error::NO_SYSTEM_RESOURCES))
    );
    // A key already handed out is never handed out twice.
    t.unregister(&[3; 16]).unwrap();
    assert_eq!(
        t.register("u", &other, &TwoNodes, [1; 16]),
        Err(Refused(error::NO_SYSTEM_RESOURCES))
    );
}

#[test]
fn a_node_dying_then_its_address_moving() {
    let mut t = Registrations::new(4, 100, 100);
    t.register(
        "u",
        &args(false, VERSION_1, "FS", "127.0.0.22", 0),
        &TwoNodes,
        [1; 16],
    )
    .unwrap();
    t.register(
        "u",
        &args(true, VERSION_2, "FS", "127.0.0.22", 1),
        &TwoNodes,
        [2; 16],
    )
    .unwrap();
    t.register(
        "u",
        &args(false, VERSION_1, "FS", "127.0.0.21", 0),
        &TwoNodes,
        [3; 16],
    )
    .unwrap();
    assert_eq!(t.take(&[1; 16]).unwrap(), (None, 0));
    assert_eq!(t.take(&[2; 16]).unwrap(), (None, 30));

    let mut woken = t.publish(&Event::NodeDown("n2".into()));
    woken.sort_unstable();
    assert_eq!(woken, [[1; 16], [2; 16]]);
    let unavailable = resource_change(&[("FS", false)]);
    assert_eq!(t.take(&[1; 16]).unwrap().0, Some(unavailable.clone()));
    assert_eq!(t.take(&[2; 16]).unwrap().0, Some(unavailable));
    assert_eq!(t.take(&[3; 16]).unwrap().0, None);

    let moved = Event::AddressMoved {
        address: A22,
        to: Some("n1".into()),
    };
    assert_eq!(t.publish(&moved).len(), 2);
    assert_eq!(
        t.take(&[1; 16]).unwrap().0,
        Some(resource_change(&[("FS", true)]))
    );
    assert_eq!(t.take(&[2; 16]).unwrap().0, Some(client_move(&[A22])));
    // The same news again is no news.
    assert!(t.publish(&moved).is_empty());
}

#[test]
fn pending_notifications_are_bounded() {
    let mut t = Registrations::new(4, 100, 100);
    t.register(
        "u",
        &args(false, VERSION_1, "FS", "127.0.0.21", 0),
        &TwoNodes,
        [1; 16],
    )
    .unwrap();
    for i in 0..100 {
        let to = if i % 2 == 0 { "n2" } else { "n1" };
        t.publish(&Event::AddressMoved {
            address: A21,
            to: Some(to.into()),
        });
    }
    let mut delivered = 0;
    while t.take(&[1; 16]).unwrap().0.is_some() {
        delivered += 1;
    }
    assert_eq!(delivered, MAX_PENDING);
}

#[test]
fn registrations_are_bounded_per_user_whatever_client_names_they_invent() {
    let mut t = Registrations::new(4, 2, 100);
    let mut a = args(false, VERSION_1, "FS", "127.0.0.21", 0);
    for (n, client) in ["C1", "C2"].into_iter().enumerate() {
        a.client_computer_name = Some(client.into());
        t.register("alice", &a, &TwoNodes, [n as u8 + 1; 16])
            .unwrap();
    }
    a.client_computer_name = Some("INVENTED".into());
    assert_eq!(
        t.register("ALICE", &a, &TwoNodes, [3; 16]),
        Err(Refused(error::NO_SYSTEM_RESOURCES)),
        "user names compare without case"
    );
    t.register("bob", &a, &TwoNodes, [3; 16]).unwrap();
    t.unregister(&[1; 16]).unwrap();
    t.register("alice", &a, &TwoNodes, [4; 16]).unwrap();
}
