//! Shared checks for the fuzz targets: every decoder must reject or accept without panicking,
//! and what it accepts must re-encode to bytes that decode again and re-encode identically.

use smb3d_smb2::header::SMB2_HEADER_LEN;
use smb3d_smb2::{
    cancel, change_notify, close, create, echo, error, flush, fsctl, ioctl, lock, logoff,
    negotiate, oplock_break, query_directory, query_info, read, session_setup, set_info,
    tree_connect, tree_disconnect, write,
};
use smb3d_wire::Writer;

/// The body re-encoded after `header` (the first 64 bytes of the decoded PDU).
pub fn reencode(header: &[u8], body: impl FnOnce(&mut Writer<'_>)) -> Vec<u8> {
    let mut buf = header.to_vec();
    body(&mut Writer::with_base(&mut buf, 0));
    buf
}

/// Decodes `$pdu` as `$ty`; if accepted, checks that encoding is stable.
macro_rules! stable {
    ($ty:ty, $pdu:expr) => {{
        let pdu: &[u8] = $pdu;
        if let Ok(v) = <$ty>::decode(pdu) {
            let header = &pdu[..SMB2_HEADER_LEN];
            let once = reencode(header, |w| v.encode(w));
            let again =
                <$ty>::decode(&once).expect(concat!(stringify!($ty), ": re-encoding decodes"));
            let twice = reencode(header, |w| again.encode(w));
            assert_eq!(
                once, twice,
                concat!(stringify!($ty), ": encoding is stable")
            );
        }
    }};
}

/// Number of request decoders [`check_request`] dispatches to.
pub const REQUEST_KINDS: u8 = 20;

/// Runs the request decoder selected by `kind` (the command code; 19 is the
/// VALIDATE_NEGOTIATE_INFO input) over `pdu`.
pub fn check_request(kind: u8, pdu: &[u8]) {
    match kind % REQUEST_KINDS {
        0 => stable!(negotiate::NegotiateRequest, pdu),
        1 => stable!(session_setup::SessionSetupRequest, pdu),
        2 => stable!(logoff::LogoffRequest, pdu),
        3 => stable!(tree_connect::TreeConnectRequest, pdu),
        4 => stable!(tree_disconnect::TreeDisconnectRequest, pdu),
        5 => {
            stable!(create::CreateRequest, pdu);
            if let Ok(req) = create::CreateRequest::decode(pdu) {
                check_create_contexts(req.contexts);
            }
        }
        6 => stable!(close::CloseRequest, pdu),
        7 => stable!(flush::FlushRequest, pdu),
        8 => stable!(read::ReadRequest, pdu),
        9 => {
            stable!(write::WriteRequest, pdu);
            if let Ok(req) = write::WriteRequest::decode(pdu) {
                assert_eq!(&pdu[req.data_range.clone()], req.data);
            }
        }
        10 => stable!(lock::LockRequest, pdu),
        11 => {
            stable!(ioctl::IoctlRequest, pdu);
            if let Ok(req) = ioctl::IoctlRequest::decode(pdu) {
                copy_chunk_stable(req.input);
                if let Ok(resiliency) = ioctl::NetworkResiliencyRequest::decode(req.input) {
                    let mut once = Vec::new();
                    resiliency.encode(&mut Writer::new(&mut once));
                    assert_eq!(
                        ioctl::NetworkResiliencyRequest::decode(&once).unwrap(),
                        resiliency
                    );
                }
            }
        }
        12 => stable!(cancel::CancelRequest, pdu),
        13 => stable!(echo::EchoRequest, pdu),
        14 => stable!(query_directory::QueryDirectoryRequest, pdu),
        15 => stable!(change_notify::ChangeNotifyRequest, pdu),
        16 => stable!(query_info::QueryInfoRequest, pdu),
        17 => stable!(set_info::SetInfoRequest, pdu),
        18 => stable!(oplock_break::OplockBreakMessage, pdu),
        _ => {
            if let Ok(v) = ioctl::ValidateNegotiateInfoRequest::decode(pdu) {
                let mut once = Vec::new();
                v.encode(&mut Writer::new(&mut once));
                assert_eq!(
                    ioctl::ValidateNegotiateInfoRequest::decode(&once).unwrap(),
                    v
                );
            }
        }
    }
}

/// Number of response decoders [`check_response`] dispatches to.
pub const RESPONSE_KINDS: u8 = 20;

/// Runs the response decoder selected by `kind` (the command code; 12, CANCEL, which has no
/// response, and 19 are the error response)
/// over `pdu`.
pub fn check_response(kind: u8, pdu: &[u8]) {
    match kind % RESPONSE_KINDS {
        0 => stable!(negotiate::NegotiateResponse, pdu),
        1 => stable!(session_setup::SessionSetupResponse, pdu),
        2 => stable!(logoff::LogoffResponse, pdu),
        3 => stable!(tree_connect::TreeConnectResponse, pdu),
        4 => stable!(tree_disconnect::TreeDisconnectResponse, pdu),
        5 => stable!(create::CreateResponse, pdu),
        6 => stable!(close::CloseResponse, pdu),
        7 => stable!(flush::FlushResponse, pdu),
        8 => stable!(read::ReadResponse, pdu),
        9 => stable!(write::WriteResponse, pdu),
        10 => stable!(lock::LockResponse, pdu),
        11 => {
            stable!(ioctl::IoctlResponse, pdu);
            if let Ok(rsp) = ioctl::IoctlResponse::decode(pdu) {
                let _ = ioctl::ValidateNegotiateInfoResponse::decode(rsp.output);
                fsctl_output_stable(rsp.output);
            }
        }
        12 => stable!(error::ErrorResponse, pdu),
        13 => stable!(echo::EchoResponse, pdu),
        14 => stable!(query_directory::QueryDirectoryResponse, pdu),
        15 => stable!(change_notify::ChangeNotifyResponse, pdu),
        16 => stable!(query_info::QueryInfoResponse, pdu),
        17 => stable!(set_info::SetInfoResponse, pdu),
        18 => stable!(oplock_break::OplockBreakMessage, pdu),
        _ => {
            stable!(error::ErrorResponse, pdu);
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

/// Decodes `$buf` as the MS-FSCC structure `$ty`; if accepted, checks that encoding is stable.
#[macro_export]
macro_rules! fscc_stable {
    ($ty:ty, $buf:expr) => {{
        if let Ok(v) = <$ty>::decode($buf) {
            let mut once = Vec::new();
            v.encode(&mut smb3d_wire::Writer::new(&mut once));
            let again =
                <$ty>::decode(&once).expect(concat!(stringify!($ty), ": re-encoding decodes"));
            assert_eq!(again, v, concat!(stringify!($ty), ": decoding is stable"));
            let mut twice = Vec::new();
            again.encode(&mut smb3d_wire::Writer::new(&mut twice));
            assert_eq!(
                once, twice,
                concat!(stringify!($ty), ": encoding is stable")
            );
        }
    }};
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

/// The server-side copy and network interface bodies an IOCTL's output may carry (MS-SMB2
/// 2.2.32.1, 2.2.32.3, 2.2.32.5): what decodes re-encodes to what decodes the same.
fn fsctl_output_stable(output: &[u8]) {
    let encoded = |f: &dyn Fn(&mut Writer<'_>)| {
        let mut out = Vec::new();
        f(&mut Writer::new(&mut out));
        out
    };
    if let Ok(v) = fsctl::ResumeKeyResponse::decode(output) {
        let once = encoded(&|w| v.encode(w));
        assert_eq!(fsctl::ResumeKeyResponse::decode(&once).ok(), Some(v));
    }
    if let Ok(v) = fsctl::CopyChunkResponse::decode(output) {
        let once = encoded(&|w| v.encode(w));
        assert_eq!(fsctl::CopyChunkResponse::decode(&once).ok(), Some(v));
    }
    if let Ok(list) = fsctl::NetworkInterface::decode_list(output) {
        let once = encoded(&|w| fsctl::NetworkInterface::encode_list(&list, w));
        assert_eq!(fsctl::NetworkInterface::decode_list(&once).ok(), Some(list));
    }
}
