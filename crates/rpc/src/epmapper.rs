//! The endpoint mapper's ept_map (C706 appendix O) on the server side: a client names an
//! interface in a protocol tower (appendix L) and learns the TCP port serving it. smb3d maps
//! only its own ncacn_ip_tcp interfaces (the witness service, MS-SWN 2.1).

use std::net::Ipv4Addr;

use smb3d_wire::{DecodeError, Reader};

use crate::ndr::{NdrReader, NdrWriter};
use crate::pdu::{SyntaxId, guid};
use crate::service::interface_matches;

/// The endpoint mapper, e1af8308-5d1f-11c9-91a4-08002b14a0fa v3.0.
pub const EPMAPPER: SyntaxId = SyntaxId {
    uuid: guid(
        0xe1af_8308,
        0x5d1f,
        0x11c9,
        [0x91, 0xa4, 0x08, 0x00, 0x2b, 0x14, 0xa0, 0xfa],
    ),
    major: 3,
    minor: 0,
};

/// ept_map's operation number.
pub const OP_EPT_MAP: u16 = 3;
/// EPT_S_NOT_REGISTERED (C706 appendix E): no endpoint for the interface.
pub const EPT_S_NOT_REGISTERED: u32 = 0x16c9_a0d6;

/// Tower floor protocol identifiers (C706 appendix I).
pub const FLOOR_UUID: u8 = 0x0d;
pub const FLOOR_NCACN: u8 = 0x0b;
pub const FLOOR_TCP: u8 = 0x07;
pub const FLOOR_IP: u8 = 0x09;
/// A tower larger than this is no tower a client builds (five floors take 75 bytes).
const MAX_TOWER_LEN: usize = 1024;
/// Floors a tower may have.
const MAX_FLOORS: u16 = 8;

/// What an ept_map request asks: the interface of its tower's first floor, whether the tower
/// names NDR over ncacn_ip_tcp, and how many towers the client takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapRequest {
    pub interface: SyntaxId,
    pub ncacn_ip_tcp_ndr: bool,
    pub max_towers: u32,
}

/// Decodes ept_map's `[in]` parameters: object (unique UUID), map_tower (unique twr_t),
/// entry_handle, max_towers.
pub fn decode_map_request(stub: &[u8]) -> Result<MapRequest, DecodeError> {
    let mut r = NdrReader::new(stub);
    if r.pointer("object")? {
        r.bytes(16, "object")?;
    }
    if !r.pointer("map_tower")? {
        return Err(DecodeError::invalid("map_tower"));
    }
    let max = r.u32("map_tower.max_count")?;
    let len = r.u32("tower_length")?;
    let len = usize::try_from(len).map_err(|_| DecodeError::invalid("tower_length"))?;
    if u32::try_from(len).ok() != Some(max) || len > MAX_TOWER_LEN {
        return Err(DecodeError::invalid("tower_length"));
    }
    let tower = r.bytes(len, "tower_octet_string")?;
    r.context_handle("entry_handle")?;
    let max_towers = r.u32("max_towers")?;
    let (interface, ncacn_ip_tcp_ndr) = read_tower(tower)?;
    Ok(MapRequest {
        interface,
        ncacn_ip_tcp_ndr,
        max_towers,
    })
}

/// The interface of a tower's first floor and whether the rest says NDR 2.0, ncacn, TCP.
fn read_tower(tower: &[u8]) -> Result<(SyntaxId, bool), DecodeError> {
    let mut r = Reader::new(tower);
    let floors = r.u16("floor_count")?;
    if floors > MAX_FLOORS {
        return Err(DecodeError::invalid("floor_count"));
    }
    let mut syntaxes = Vec::with_capacity(2);
    let mut protocols = Vec::with_capacity(usize::from(floors));
    for _ in 0..floors {
        let lhs_len = usize::from(r.u16("lhs_length")?);
        let lhs = r.bytes(lhs_len, "lhs")?;
        let rhs_len = usize::from(r.u16("rhs_length")?);
        let rhs = r.bytes(rhs_len, "rhs")?;
        match lhs.split_first() {
            Some((&FLOOR_UUID, id)) => syntaxes.push(syntax_floor(id, rhs)?),
            Some((&protocol, _)) => protocols.push(protocol),
            None => return Err(DecodeError::invalid("lhs")),
        }
    }
    let Some(&interface) = syntaxes.first() else {
        return Err(DecodeError::invalid("tower"));
    };
    let ndr = syntaxes.get(1) == Some(&SyntaxId::NDR);
    let tcp = protocols.contains(&FLOOR_NCACN) && protocols.contains(&FLOOR_TCP);
    Ok((interface, ndr && tcp))
}

/// A UUID floor: the UUID and major version on the left, the minor version on the right.
fn syntax_floor(lhs: &[u8], rhs: &[u8]) -> Result<SyntaxId, DecodeError> {
    let mut l = Reader::new(lhs);
    let uuid = l.guid("floor_uuid")?;
    let major = l.u16("floor_major")?;
    let minor = Reader::new(rhs).u16("floor_minor")?;
    Ok(SyntaxId { uuid, major, minor })
}

/// ept_map's answer: the ncacn_ip_tcp tower of `request`'s interface among `endpoints`
/// (interface, port) at `address`, or no tower and EPT_S_NOT_REGISTERED.
pub fn encode_map_answer(
    out: &mut NdrWriter<'_>,
    request: &MapRequest,
    endpoints: &[(SyntaxId, u16)],
    address: Ipv4Addr,
) {
    let found = endpoints
        .iter()
        .find(|(interface, _)| interface_matches(interface, &request.interface))
        .filter(|_| request.ncacn_ip_tcp_ndr && request.max_towers > 0);
    out.bytes(&[0; 20]);
    let Some(&(interface, port)) = found else {
        out.u32(0).u32(request.max_towers).u32(0).u32(0);
        out.u32(EPT_S_NOT_REGISTERED);
        return;
    };
    let tower = tower(&interface, port, address);
    let len = u32::try_from(tower.len()).unwrap_or(u32::MAX);
    out.u32(1).u32(request.max_towers).u32(0).u32(1);
    out.pointer(true).u32(len).u32(len).bytes(&tower).align(4);
    out.u32(0);
}

/// The five floors: interface, NDR 2.0, ncacn, TCP port, IP address (both big-endian).
fn tower(interface: &SyntaxId, port: u16, address: Ipv4Addr) -> Vec<u8> {
    let mut t = Vec::with_capacity(75);
    t.extend_from_slice(&5u16.to_le_bytes());
    for syntax in [interface, &SyntaxId::NDR] {
        t.extend_from_slice(&19u16.to_le_bytes());
        t.push(FLOOR_UUID);
        t.extend_from_slice(&syntax.uuid.0);
        t.extend_from_slice(&syntax.major.to_le_bytes());
        t.extend_from_slice(&2u16.to_le_bytes());
        t.extend_from_slice(&syntax.minor.to_le_bytes());
    }
    let port = port.to_be_bytes();
    let ip = address.octets();
    for (id, rhs) in [
        (FLOOR_NCACN, &[0u8, 0][..]),
        (FLOOR_TCP, &port[..]),
        (FLOOR_IP, &ip[..]),
    ] {
        t.extend_from_slice(&1u16.to_le_bytes());
        t.push(id);
        t.extend_from_slice(&u16::try_from(rhs.len()).unwrap_or(0).to_le_bytes());
        t.extend_from_slice(rhs);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::witness::WITNESS;

    /// An ept_map request as a client marshals it, for `interface`'s tower.
    fn request(interface: &SyntaxId, tcp: bool, max_towers: u32) -> Vec<u8> {
        let mut t = tower(interface, 0, Ipv4Addr::UNSPECIFIED);
        if !tcp {
            // The fourth floor's protocol becomes named pipes (0x0f): after the count, two
            // UUID floors of 25 bytes and the ncacn floor of 7, past its lhs_length.
            let at = 2 + 2 * 25 + 7 + 2;
            t[at] = 0x0f;
        }
        let len = u32::try_from(t.len()).unwrap();
        let mut stub = Vec::new();
        let mut w = NdrWriter::with_base(&mut stub, 0);
        w.pointer(true).bytes(&[0; 16]);
        w.pointer(true).u32(len).u32(len).bytes(&t);
        w.align(4).bytes(&[0; 20]).u32(max_towers);
        stub
    }

    fn answer(stub: &[u8]) -> Vec<u8> {
        let req = decode_map_request(stub).unwrap();
        let mut out = Vec::new();
        encode_map_answer(
            &mut NdrWriter::with_base(&mut out, 0),
            &req,
            &[(WITNESS, 4135)],
            Ipv4Addr::new(127, 0, 0, 21),
        );
        out
    }

    #[test]
    fn the_witness_port_as_the_netlogon_client_reads_it() {
        let out = answer(&request(&WITNESS, true, 4));
        assert_eq!(
            smb3d_auth::netlogon::ept_map_port(&out).unwrap(),
            Some(4135)
        );
        // The tower (75 bytes from offset 48) ends with the IP floor's address, then one byte
        // of padding and the status.
        assert_eq!(out.len(), 48 + 75 + 1 + 4);
        assert_eq!(&out[119..123], &[127, 0, 0, 21]);
    }

    #[test]
    fn other_interfaces_and_transports_are_not_registered() {
        for stub in [
            request(&EPMAPPER, true, 4),
            request(&WITNESS, false, 4),
            request(&WITNESS, true, 0),
        ] {
            let out = answer(&stub);
            assert_eq!(smb3d_auth::netlogon::ept_map_port(&out).unwrap(), None);
            assert_eq!(&out[out.len() - 4..], &EPT_S_NOT_REGISTERED.to_le_bytes());
        }
        // A newer minor version than served is another interface.
        let newer = SyntaxId {
            minor: 2,
            ..WITNESS
        };
        let out = answer(&request(&newer, true, 4));
        assert_eq!(smb3d_auth::netlogon::ept_map_port(&out).unwrap(), None);
    }

    #[test]
    fn crafted_requests_fail_cleanly() {
        let good = request(&WITNESS, true, 4);
        for len in 0..good.len() {
            assert!(decode_map_request(&good[..len]).is_err(), "{len}");
        }
        // Conformance and tower_length disagree; a tower longer than any real one.
        let mut bad = good.clone();
        bad[24..28].copy_from_slice(&76u32.to_le_bytes());
        assert!(decode_map_request(&bad).is_err());
        let mut huge = good.clone();
        huge[24..28].copy_from_slice(&0x10_0000u32.to_le_bytes());
        huge[28..32].copy_from_slice(&0x10_0000u32.to_le_bytes());
        assert!(decode_map_request(&huge).is_err());
        // Too many floors; a floor without a protocol identifier.
        let mut floors = good.clone();
        floors[32..34].copy_from_slice(&9u16.to_le_bytes());
        assert!(decode_map_request(&floors).is_err());
        let mut empty_lhs = good;
        empty_lhs[34..36].copy_from_slice(&0u16.to_le_bytes());
        assert!(decode_map_request(&empty_lhs).is_err());
    }
}
