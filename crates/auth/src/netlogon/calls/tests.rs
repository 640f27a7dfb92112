use super::*;

#[test]
fn ept_map_request_carries_the_netlogon_tower() {
    let stub = ept_map_request(&NETLOGON);
    // NULL-object pointer and UUID, tower pointer, counts, 75-byte tower, handle, max_towers.
    assert_eq!(stub.len(), 4 + 16 + 4 + 8 + 75 + 1 + 20 + 4);
    let tower = tower(&NETLOGON);
    assert_eq!(tcp_port(&tower).unwrap(), Some(0));
}

/// An ept_map answer with one tower whose TCP floor says `port`.
fn ept_answer(port: u16) -> Vec<u8> {
    let mut t = tower(&NETLOGON);
    let at = t.len() - 4 - 2 - 1 - 2 - 2;
    t[at..at + 2].copy_from_slice(&port.to_be_bytes());
    let mut stub = vec![0u8; 20];
    let len = t.len() as u32;
    for v in [1u32, 4, 0, 1, 0x0002_0000, len, len] {
        stub.extend_from_slice(&v.to_le_bytes());
    }
    stub.extend_from_slice(&t);
    while !stub.len().is_multiple_of(4) {
        stub.push(0);
    }
    stub.extend_from_slice(&0u32.to_le_bytes());
    stub
}

#[test]
fn ept_map_answer_gives_the_port_and_refuses_lies() {
    assert_eq!(ept_map_port(&ept_answer(49153)).unwrap(), Some(49153));
    let mut failed = ept_answer(49153);
    let n = failed.len();
    failed[n - 4] = 0xd6; // EPT_S_NOT_REGISTERED
    assert_eq!(ept_map_port(&failed).unwrap(), None);
    // A count of towers larger than the bytes present, an actual count above the maximum,
    // and a tower longer than the answer: errors, no allocation, no panic.
    let mut huge = ept_answer(1);
    huge[28..32].copy_from_slice(&0x4000_0000u32.to_le_bytes());
    huge[20..24].copy_from_slice(&0x4000_0000u32.to_le_bytes());
    assert!(ept_map_port(&huge).is_err());
    let mut over = ept_answer(1);
    over[20..24].copy_from_slice(&2u32.to_le_bytes());
    assert!(ept_map_port(&over).is_err());
    let mut long = ept_answer(1);
    long[40..48].copy_from_slice(&[0xf0, 0xff, 0xff, 0xff, 0xf0, 0xff, 0xff, 0xff]);
    assert!(ept_map_port(&long).is_err());
    let mut mismatch = ept_answer(1);
    mismatch[40] += 1;
    assert!(ept_map_port(&mismatch).is_err());
    let whole = ept_answer(1);
    for cut in 0..whole.len() {
        assert!(ept_map_port(&whole[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn a_refusal_is_an_answer_and_short_stubs_are_errors() {
    let mut stub = vec![3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
    stub.extend_from_slice(&0xc000_006du32.to_le_bytes());
    assert_eq!(
        sam_logon_ex_answer(&stub).unwrap(),
        LogonAnswer::Refused(0xc000_006d)
    );
    for cut in 0..4 {
        assert!(sam_logon_ex_answer(&stub[..cut]).is_err());
    }
    // Success with a NULL validation, or another level, is malformed.
    let mut null = vec![3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
    null.extend_from_slice(&0u32.to_le_bytes());
    assert!(sam_logon_ex_answer(&null).is_err());
    null[0] = 6;
    assert!(sam_logon_ex_answer(&null).is_err());
}
