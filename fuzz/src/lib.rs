//! Shared checks for the fuzz targets: every decoder must reject or accept without panicking,
//! and what it accepts must re-encode to bytes that decode again and re-encode identically.

use std::any::type_name;
use std::fmt::Debug;

use smb3d_smb2::header::SMB2_HEADER_LEN;
use smb3d_smb2::{
    cancel, change_notify, close, create, echo, error, flush, fsctl, ioctl, lock, logoff,
    negotiate, oplock_break, query_directory, query_info, read, session_setup, set_info,
    tree_connect, tree_disconnect, write,
};
use smb3d_wire::{Codec, Writer};

/// `body` encoded after `header` (the first 64 bytes of the decoded PDU), in `buf`.
fn reencode<'b, 'a>(header: &[u8], body: &impl Codec<'a>, buf: &'b mut Vec<u8>) -> &'b [u8] {
    buf.clear();
    buf.extend_from_slice(header);
    body.encode(&mut Writer::with_base(buf, 0));
    buf
}

/// Decodes `pdu` as the SMB2 PDU `T`; if accepted, checks that its body, re-encoded after the
/// same header, decodes again and re-encodes identically. What decodes from the re-encoding
/// borrows from `scratch`, which holds it.
fn pdu_stable<'a, T: Codec<'a>>(pdu: &'a [u8], scratch: &'a mut Vec<u8>) {
    let Ok(v) = T::decode(pdu) else {
        return;
    };
    let header = &pdu[..SMB2_HEADER_LEN];
    let once = reencode(header, &v, scratch);
    let again = T::decode(once)
        .unwrap_or_else(|e| panic!("{}: re-encoding decodes: {e}", type_name::<T>()));
    let twice = reencode(header, &again, &mut Vec::new()).to_vec();
    assert_eq!(once, twice, "{}: encoding is stable", type_name::<T>());
}

/// Decodes `buf` as the structure `T` (an MS-FSCC class or FSCTL body, an IOCTL input or
/// output); if accepted, checks that it re-encodes to bytes that decode to the same value and
/// re-encode identically. What decodes from the re-encoding borrows from `scratch`.
pub fn stable<'a, T: Codec<'a> + PartialEq + Debug>(buf: &'a [u8], scratch: &'a mut Vec<u8>) {
    let Ok(v) = T::decode(buf) else {
        return;
    };
    scratch.clear();
    v.encode(&mut Writer::new(scratch));
    let once: &'a [u8] = scratch;
    let again = T::decode(once)
        .unwrap_or_else(|e| panic!("{}: re-encoding decodes: {e}", type_name::<T>()));
    assert_eq!(again, v, "{}: decoding is stable", type_name::<T>());
    let mut twice = Vec::new();
    again.encode(&mut Writer::new(&mut twice));
    assert_eq!(once, twice, "{}: encoding is stable", type_name::<T>());
}

/// Number of request decoders [`check_request`] dispatches to.
pub const REQUEST_KINDS: u8 = 20;

/// Runs the request decoder selected by `kind` (the command code; 19 is the
/// VALIDATE_NEGOTIATE_INFO input) over `pdu`.
pub fn check_request(kind: u8, pdu: &[u8]) {
    let scratch = &mut Vec::new();
    match kind % REQUEST_KINDS {
        0 => pdu_stable::<negotiate::NegotiateRequest>(pdu, scratch),
        1 => pdu_stable::<session_setup::SessionSetupRequest>(pdu, scratch),
        2 => pdu_stable::<logoff::LogoffRequest>(pdu, scratch),
        3 => pdu_stable::<tree_connect::TreeConnectRequest>(pdu, scratch),
        4 => pdu_stable::<tree_disconnect::TreeDisconnectRequest>(pdu, scratch),
        5 => {
            pdu_stable::<create::CreateRequest>(pdu, scratch);
            if let Ok(req) = create::CreateRequest::decode(pdu) {
                check_create_contexts(req.contexts);
            }
        }
        6 => pdu_stable::<close::CloseRequest>(pdu, scratch),
        7 => pdu_stable::<flush::FlushRequest>(pdu, scratch),
        8 => pdu_stable::<read::ReadRequest>(pdu, scratch),
        9 => {
            pdu_stable::<write::WriteRequest>(pdu, scratch);
            if let Ok(req) = write::WriteRequest::decode(pdu) {
                assert_eq!(&pdu[req.data_range.clone()], req.data);
            }
        }
        10 => pdu_stable::<lock::LockRequest>(pdu, scratch),
        11 => {
            pdu_stable::<ioctl::IoctlRequest>(pdu, scratch);
            if let Ok(req) = ioctl::IoctlRequest::decode(pdu) {
                copy_chunk_stable(req.input);
                stable::<ioctl::NetworkResiliencyRequest>(req.input, scratch);
            }
        }
        12 => pdu_stable::<cancel::CancelRequest>(pdu, scratch),
        13 => pdu_stable::<echo::EchoRequest>(pdu, scratch),
        14 => pdu_stable::<query_directory::QueryDirectoryRequest>(pdu, scratch),
        15 => pdu_stable::<change_notify::ChangeNotifyRequest>(pdu, scratch),
        16 => pdu_stable::<query_info::QueryInfoRequest>(pdu, scratch),
        17 => pdu_stable::<set_info::SetInfoRequest>(pdu, scratch),
        18 => pdu_stable::<oplock_break::OplockBreakMessage>(pdu, scratch),
        _ => stable::<ioctl::ValidateNegotiateInfoRequest>(pdu, scratch),
    }
}

/// Number of response decoders [`check_response`] dispatches to.
pub const RESPONSE_KINDS: u8 = 20;

/// Runs the response decoder selected by `kind` (the command code; 12, CANCEL, which has no
/// response, and 19 are the error response)
/// over `pdu`.
pub fn check_response(kind: u8, pdu: &[u8]) {
    let scratch = &mut Vec::new();
    match kind % RESPONSE_KINDS {
        0 => pdu_stable::<negotiate::NegotiateResponse>(pdu, scratch),
        1 => pdu_stable::<session_setup::SessionSetupResponse>(pdu, scratch),
        2 => pdu_stable::<logoff::LogoffResponse>(pdu, scratch),
        3 => pdu_stable::<tree_connect::TreeConnectResponse>(pdu, scratch),
        4 => pdu_stable::<tree_disconnect::TreeDisconnectResponse>(pdu, scratch),
        5 => pdu_stable::<create::CreateResponse>(pdu, scratch),
        6 => pdu_stable::<close::CloseResponse>(pdu, scratch),
        7 => pdu_stable::<flush::FlushResponse>(pdu, scratch),
        8 => pdu_stable::<read::ReadResponse>(pdu, scratch),
        9 => pdu_stable::<write::WriteResponse>(pdu, scratch),
        10 => pdu_stable::<lock::LockResponse>(pdu, scratch),
        11 => {
            pdu_stable::<ioctl::IoctlResponse>(pdu, scratch);
            if let Ok(rsp) = ioctl::IoctlResponse::decode(pdu) {
                let _ = ioctl::ValidateNegotiateInfoResponse::decode(rsp.output);
                stable::<fsctl::ResumeKeyResponse>(rsp.output, scratch);
                stable::<fsctl::CopyChunkResponse>(rsp.output, scratch);
                network_interfaces_stable(rsp.output);
            }
        }
        12 => pdu_stable::<error::ErrorResponse>(pdu, scratch),
        13 => pdu_stable::<echo::EchoResponse>(pdu, scratch),
        14 => pdu_stable::<query_directory::QueryDirectoryResponse>(pdu, scratch),
        15 => pdu_stable::<change_notify::ChangeNotifyResponse>(pdu, scratch),
        16 => pdu_stable::<query_info::QueryInfoResponse>(pdu, scratch),
        17 => pdu_stable::<set_info::SetInfoResponse>(pdu, scratch),
        18 => pdu_stable::<oplock_break::OplockBreakMessage>(pdu, scratch),
        _ => {
            pdu_stable::<error::ErrorResponse>(pdu, scratch);
            if let Ok(e) = error::ErrorResponse::decode(pdu) {
                let contexts: Vec<_> = e.contexts().collect();
                assert!(contexts.len() <= usize::from(e.error_context_count));
                let _ = e.required_size();
            }
        }
    }
}

/// Checks a parsed create-context chain: raw and typed iteration agree, every slice lies in
/// the chain, and a chain rebuilt from the typed contexts parses to the same contexts.
pub fn check_create_contexts(contexts: create::CreateContexts<'_>) {
    let chain = contexts.as_bytes();
    assert_eq!(contexts.raw().count(), contexts.len());
    for raw in contexts.raw() {
        assert!(raw.name.len() + raw.data.len() <= chain.len());
    }
    let typed: Result<Vec<_>, _> = contexts.iter().collect();
    if let Ok(typed) = typed {
        let mut rebuilt = Vec::new();
        create::CreateContext::encode_chain(&typed, &mut Writer::new(&mut rebuilt));
        let reparsed = create::CreateContexts::parse(&rebuilt).expect("rebuilt chain parses");
        let again: Vec<_> = reparsed
            .iter()
            .collect::<Result<_, _>>()
            .expect("rebuilt contexts decode");
        assert_eq!(again, typed);
    }
}

/// SRV_COPYCHUNK_COPY in an IOCTL's input (MS-SMB2 2.2.31.1): chunks that decode re-encode to
/// chunks that decode the same.
fn copy_chunk_stable(input: &[u8]) {
    let Ok(copy) = fsctl::CopyChunkCopy::decode(input) else {
        return;
    };
    let Ok(chunks) = copy.chunks() else {
        return;
    };
    let chunks: Vec<fsctl::CopyChunk> = chunks.collect();
    let mut once = Vec::new();
    fsctl::CopyChunkCopy::encode(&copy.source_key, &chunks, &mut Writer::new(&mut once));
    let again =
        fsctl::CopyChunkCopy::decode(&once).expect("SRV_COPYCHUNK_COPY: re-encoding decodes");
    assert_eq!(again.source_key, copy.source_key);
    let again: Vec<fsctl::CopyChunk> = again
        .chunks()
        .expect("SRV_COPYCHUNK_COPY: re-encoded chunks are all there")
        .collect();
    assert_eq!(
        again, chunks,
        "SRV_COPYCHUNK_COPY: chunks changed in a round trip"
    );
}

/// The network interface list an IOCTL's output may carry (MS-SMB2 2.2.32.5): what decodes
/// re-encodes to what decodes the same.
fn network_interfaces_stable(output: &[u8]) {
    if let Ok(list) = fsctl::NetworkInterface::decode_list(output) {
        let mut once = Vec::new();
        fsctl::NetworkInterface::encode_list(&list, &mut Writer::new(&mut once));
        assert_eq!(fsctl::NetworkInterface::decode_list(&once).ok(), Some(list));
    }
}
