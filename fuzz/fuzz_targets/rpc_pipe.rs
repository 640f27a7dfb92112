#![no_main]
//! A pipe endpoint fed what a client might write: the first byte picks the pipe (srvsvc,
//! wkssvc, lsarpc), the second the size of the writes the rest is cut into (0: one write), the
//! third the size of the reads. Every answer must be a whole PDU with a valid header, no longer
//! than a pipe fragment, and the queue accounting must add up.

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use smb3d_dtyp::Sid;
use smb3d_rpc::pdu::Header;
use smb3d_rpc::{
    CallerInfo, Directory, MAX_FRAGMENT_LEN, PipeEndpoint, ServerInfo, ShareEntry, ShareKind,
    SidType,
};

/// A small fixed directory: a few shares (one unlisted) and a few accounts.
struct Fixed;

impl Directory for Fixed {
    fn server_info(&self) -> ServerInfo {
        ServerInfo {
            netbios_name: "FUZZ".into(),
            domain: "WORKGROUP".into(),
            comment: "smb3d".into(),
            version: (10, 0),
            platform_id: 500,
            server_type: 0x9003,
        }
    }

    fn shares(&self) -> Vec<ShareEntry> {
        ["data", "IPC$", "hidden$"]
            .iter()
            .enumerate()
            .map(|(i, name)| ShareEntry {
                name: (*name).into(),
                comment: format!("share {i}"),
                kind: if i == 1 {
                    ShareKind::Ipc
                } else {
                    ShareKind::Disk
                },
                path: format!("C:\\srv\\{name}"),
                browseable: i != 2,
            })
            .collect()
    }

    fn lookup_name(&self, name: &str) -> Option<(Sid, SidType, String)> {
        let domain: Sid = "S-1-5-21-1-2-3".parse().ok()?;
        match name.to_ascii_lowercase().as_str() {
            "fuzz" => Some((domain, SidType::Domain, "FUZZ".into())),
            "user" => Some((domain.with_rid(1000)?, SidType::User, "FUZZ".into())),
            "everyone" => Some((Sid::EVERYONE, SidType::WellKnownGroup, String::new())),
            _ => None,
        }
    }

    fn lookup_sid(&self, sid: &Sid) -> Option<(String, SidType, String)> {
        let domain: Sid = "S-1-5-21-1-2-3".parse().ok()?;
        if *sid == domain {
            Some(("FUZZ".into(), SidType::Domain, "FUZZ".into()))
        } else if Some(*sid) == domain.with_rid(1000) {
            Some(("user".into(), SidType::User, "FUZZ".into()))
        } else if *sid == Sid::EVERYONE {
            Some(("Everyone".into(), SidType::WellKnownGroup, String::new()))
        } else {
            None
        }
    }
}

fn check_answers(pipe: &mut PipeEndpoint, read_size: usize) {
    while pipe.queued_messages() > 0 {
        let before = pipe.queued();
        let length = pipe.pending();
        let mut message = Vec::new();
        while message.len() < length {
            let part = pipe.read(read_size);
            assert!(!part.is_empty() && part.len() <= read_size);
            message.extend(part);
        }
        assert_eq!(message.len(), length);
        assert_eq!(pipe.queued(), before - length);
        let header = Header::decode(&message).expect("answers start with a header");
        assert_eq!(usize::from(header.frag_length), message.len());
        assert!(message.len() <= usize::from(MAX_FRAGMENT_LEN));
    }
    assert_eq!(pipe.queued(), 0);
}

fuzz_target!(|data: &[u8]| {
    let [pipe, write_size, read_size, stream @ ..] = data else {
        return;
    };
    let name = ["srvsvc", "wkssvc", "lsarpc"][usize::from(*pipe % 3)];
    let caller = CallerInfo {
        user: "user".into(),
        domain: "FUZZ".into(),
        sid: if pipe & 0x80 == 0 {
            "S-1-5-21-1-2-3-1000".parse().expect("a SID")
        } else {
            Sid::ANONYMOUS
        },
    };
    let mut endpoint = PipeEndpoint::open(name, Arc::new(Fixed), caller).expect("pipe exists");
    let read_size = usize::from(*read_size).max(1) * 32;
    let chunk = if *write_size == 0 {
        stream.len().max(1)
    } else {
        usize::from(*write_size)
    };
    for piece in stream.chunks(chunk) {
        if endpoint.write(piece).is_err() {
            assert!(endpoint.is_disconnected() || endpoint.queued() > 0);
        }
        check_answers(&mut endpoint, read_size);
    }
});
