//! Table-driven rejection tests across every decoder: StructureSize off by one, bodies cut
//! short, and (offset, length) pairs at the edges that matter (into the header, at the end,
//! wrapping) for every buffer a request carries.

use smb3d_wire::{DecodeError, DecodeErrorKind};

use crate::header::SMB2_HEADER_LEN;
use crate::testutil::pdu_with_body;
use crate::*;

type Check = fn(&[u8]) -> Result<(), DecodeError>;

macro_rules! check {
    ($ty:ty) => {
        (|pdu: &[u8]| <$ty>::decode(pdu).map(|_| ())) as Check
    };
}

/// (name, StructureSize, bytes of the body that must be present, decoder).
fn decoders() -> Vec<(&'static str, u16, usize, Check)> {
    vec![
        ("NEGOTIATE req", 36, 36, check!(negotiate::NegotiateRequest)),
        (
            "NEGOTIATE rsp",
            65,
            64,
            check!(negotiate::NegotiateResponse),
        ),
        (
            "SESSION_SETUP req",
            25,
            24,
            check!(session_setup::SessionSetupRequest),
        ),
        (
            "SESSION_SETUP rsp",
            9,
            8,
            check!(session_setup::SessionSetupResponse),
        ),
        ("LOGOFF req", 4, 4, check!(logoff::LogoffRequest)),
        ("LOGOFF rsp", 4, 4, check!(logoff::LogoffResponse)),
        (
            "TREE_CONNECT req",
            9,
            8,
            check!(tree_connect::TreeConnectRequest),
        ),
        (
            "TREE_CONNECT rsp",
            16,
            16,
            check!(tree_connect::TreeConnectResponse),
        ),
        (
            "TREE_DISCONNECT req",
            4,
            4,
            check!(tree_disconnect::TreeDisconnectRequest),
        ),
        (
            "TREE_DISCONNECT rsp",
            4,
            4,
            check!(tree_disconnect::TreeDisconnectResponse),
        ),
        ("CREATE req", 57, 56, check!(create::CreateRequest)),
        ("CREATE rsp", 89, 88, check!(create::CreateResponse)),
        ("CLOSE req", 24, 24, check!(close::CloseRequest)),
        ("CLOSE rsp", 60, 60, check!(close::CloseResponse)),
        ("FLUSH req", 24, 24, check!(flush::FlushRequest)),
        ("FLUSH rsp", 4, 4, check!(flush::FlushResponse)),
        ("READ req", 49, 48, check!(read::ReadRequest)),
        ("READ rsp", 17, 16, check!(read::ReadResponse)),
        ("WRITE req", 49, 48, check!(write::WriteRequest)),
        ("WRITE rsp", 17, 16, check!(write::WriteResponse)),
        ("LOCK req", 48, 24, check!(lock::LockRequest)),
        ("LOCK rsp", 4, 4, check!(lock::LockResponse)),
        ("IOCTL req", 57, 56, check!(ioctl::IoctlRequest)),
        ("IOCTL rsp", 49, 48, check!(ioctl::IoctlResponse)),
        ("CANCEL req", 4, 4, check!(cancel::CancelRequest)),
        ("ECHO req", 4, 4, check!(echo::EchoRequest)),
        ("ECHO rsp", 4, 4, check!(echo::EchoResponse)),
        (
            "QUERY_DIRECTORY req",
            33,
            32,
            check!(query_directory::QueryDirectoryRequest),
        ),
        (
            "QUERY_DIRECTORY rsp",
            9,
            8,
            check!(query_directory::QueryDirectoryResponse),
        ),
        (
            "CHANGE_NOTIFY req",
            32,
            32,
            check!(change_notify::ChangeNotifyRequest),
        ),
        (
            "CHANGE_NOTIFY rsp",
            9,
            8,
            check!(change_notify::ChangeNotifyResponse),
        ),
        (
            "QUERY_INFO req",
            41,
            40,
            check!(query_info::QueryInfoRequest),
        ),
        (
            "QUERY_INFO rsp",
            9,
            8,
            check!(query_info::QueryInfoResponse),
        ),
        ("SET_INFO req", 33, 32, check!(set_info::SetInfoRequest)),
        ("SET_INFO rsp", 2, 2, check!(set_info::SetInfoResponse)),
        (
            "OPLOCK_BREAK",
            24,
            24,
            check!(oplock_break::OplockBreakMessage),
        ),
        (
            "LEASE_BREAK notification",
            44,
            44,
            check!(oplock_break::OplockBreakMessage),
        ),
        (
            "LEASE_BREAK ack",
            36,
            36,
            check!(oplock_break::OplockBreakMessage),
        ),
        ("ERROR", 9, 8, check!(error::ErrorResponse)),
    ]
}

fn body_with_size(size: u16, len: usize) -> Vec<u8> {
    let mut body = vec![0u8; len.max(2)];
    body[..2].copy_from_slice(&size.to_le_bytes());
    body.truncate(len);
    body
}

#[test]
fn zeroed_fixed_parts_decode() {
    for (name, size, fixed, decode) in decoders() {
        let pdu = pdu_with_body(&body_with_size(size, fixed));
        assert!(decode(&pdu).is_ok(), "{name}: {:?}", decode(&pdu));
    }
}

#[test]
fn structure_size_off_by_one_or_two() {
    for (name, size, fixed, decode) in decoders() {
        for wrong in [size - 1, size + 1, size - 2, size + 2, 0, u16::MAX] {
            let pdu = pdu_with_body(&body_with_size(wrong, fixed + 8));
            let err = decode(&pdu).expect_err(name);
            assert!(
                matches!(err.kind, DecodeErrorKind::BadSize { .. }),
                "{name} with {wrong}: {err:?}"
            );
        }
    }
}

#[test]
fn truncated_bodies_and_headers() {
    for (name, size, fixed, decode) in decoders() {
        for len in 0..fixed {
            let pdu = pdu_with_body(&body_with_size(size, len));
            assert!(decode(&pdu).is_err(), "{name} with a {len}-byte body");
        }
        let pdu = pdu_with_body(&body_with_size(size, fixed));
        assert!(decode(&pdu[..SMB2_HEADER_LEN - 1]).is_err(), "{name}");
    }
}

/// A request decoder that reports where its borrowed buffers lie.
type Slices = fn(&[u8]) -> Result<Vec<&[u8]>, DecodeError>;

/// (name, StructureSize, fixed length, [(offset field, width), (length field, width)], slices)
/// for every (offset, length) pair a request carries; positions are within the body.
#[allow(clippy::type_complexity)]
fn buffers() -> Vec<(&'static str, u16, usize, [(usize, usize); 2], Slices)> {
    vec![
        (
            "SESSION_SETUP security buffer",
            25,
            24,
            [(12, 2), (14, 2)],
            |p| {
                Ok(vec![
                    session_setup::SessionSetupRequest::decode(p)?.security_buffer,
                ])
            },
        ),
        ("CREATE name", 57, 56, [(44, 2), (46, 2)], |p| {
            Ok(vec![create::CreateRequest::decode(p)?.name])
        }),
        ("CREATE contexts", 57, 56, [(48, 4), (52, 4)], |p| {
            Ok(vec![create::CreateRequest::decode(p)?.contexts.as_bytes()])
        }),
        ("READ channel info", 49, 48, [(44, 2), (46, 2)], |p| {
            Ok(vec![read::ReadRequest::decode(p)?.channel_info])
        }),
        ("WRITE data", 49, 48, [(2, 2), (4, 4)], |p| {
            Ok(vec![write::WriteRequest::decode(p)?.data])
        }),
        ("WRITE channel info", 49, 48, [(40, 2), (42, 2)], |p| {
            Ok(vec![write::WriteRequest::decode(p)?.channel_info])
        }),
        ("IOCTL input", 57, 56, [(24, 4), (28, 4)], |p| {
            Ok(vec![ioctl::IoctlRequest::decode(p)?.input])
        }),
        ("IOCTL output", 57, 56, [(36, 4), (40, 4)], |p| {
            Ok(vec![ioctl::IoctlRequest::decode(p)?.output])
        }),
        (
            "QUERY_DIRECTORY file name",
            33,
            32,
            [(24, 2), (26, 2)],
            |p| {
                Ok(vec![
                    query_directory::QueryDirectoryRequest::decode(p)?.file_name,
                ])
            },
        ),
        ("QUERY_INFO input", 41, 40, [(8, 2), (12, 4)], |p| {
            Ok(vec![query_info::QueryInfoRequest::decode(p)?.input])
        }),
        ("SET_INFO buffer", 33, 32, [(8, 2), (4, 4)], |p| {
            Ok(vec![set_info::SetInfoRequest::decode(p)?.buffer])
        }),
        ("TREE_CONNECT path", 9, 8, [(4, 2), (6, 2)], |p| {
            tree_connect::TreeConnectRequest::decode(p)?;
            Ok(vec![])
        }),
    ]
}

fn put(body: &mut [u8], (at, width): (usize, usize), value: u64) {
    body[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
}

#[test]
fn offset_length_edges_reject_or_stay_inside_the_body() {
    const EDGES: [u64; 11] = [
        0,
        1,
        2,
        63,
        64,
        65,
        0x7FFF,
        0xFFFF,
        0x7FFF_FFFF,
        0x8000_0000,
        0xFFFF_FFFF,
    ];
    for (name, size, fixed, [offset_field, length_field], slices) in buffers() {
        let mut accepted = 0;
        for offset in EDGES.iter().copied().chain([
            (SMB2_HEADER_LEN + fixed) as u64,
            (SMB2_HEADER_LEN + fixed + 16) as u64,
        ]) {
            for length in EDGES.iter().copied().chain([16, 32]) {
                let mut body = body_with_size(size, fixed + 32);
                let max = (1u64 << (8 * offset_field.1)) - 1;
                put(&mut body, offset_field, offset.min(max));
                put(
                    &mut body,
                    length_field,
                    length.min((1u64 << (8 * length_field.1)) - 1),
                );
                let pdu = pdu_with_body(&body);
                let Ok(found) = slices(&pdu) else { continue };
                accepted += 1;
                let start = pdu.as_ptr() as usize + SMB2_HEADER_LEN;
                let end = pdu.as_ptr() as usize + pdu.len();
                for s in found {
                    let at = s.as_ptr() as usize;
                    assert!(
                        s.is_empty() || (at >= start && at + s.len() <= end),
                        "{name}: offset {offset:#x} length {length:#x} escapes the body"
                    );
                }
            }
        }
        assert!(accepted > 0, "{name}: some in-bounds pair must decode");
    }
}
