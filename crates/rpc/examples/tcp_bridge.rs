//! Serves the pipe endpoints over plain TCP (ncacn_ip_tcp framing is the same PDU stream), so
//! that real clients can talk to them before the SMB server carries them:
//!
//! ```sh
//! cargo run -p smb3d-rpc --example tcp_bridge -- 127.0.0.1:24900 &
//! rpcclient 'ncacn_ip_tcp:127.0.0.1[24900]' -U bench%pass -c 'netshareenumall; srvinfo'
//! ```
//!
//! Each connection gets the pipe whose interface its bind names. The directory is a fixed
//! example: two listed shares, one unlisted, and a few accounts.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use smb3d_rpc::pdu::{Bind, Header, PacketType};
use smb3d_rpc::{
    CallerInfo, Directory, PipeEndpoint, ServerInfo, ShareEntry, ShareKind, Sid, SidType,
};

const DOMAIN_SID: &str = "S-1-5-21-1004336348-1177238915-682003330";

struct Example;

impl Example {
    fn accounts() -> Vec<(Sid, &'static str, SidType, &'static str)> {
        let domain: Sid = DOMAIN_SID.parse().expect("a SID");
        vec![
            (domain, "SMB3D", SidType::Domain, "SMB3D"),
            (
                domain.with_rid(1000).expect("room for a RID"),
                "bench",
                SidType::User,
                "SMB3D",
            ),
            (Sid::EVERYONE, "Everyone", SidType::WellKnownGroup, ""),
            (
                Sid::BUILTIN_ADMINISTRATORS,
                "Administrators",
                SidType::Alias,
                "BUILTIN",
            ),
            (
                Sid::LOCAL_SYSTEM,
                "SYSTEM",
                SidType::WellKnownGroup,
                "NT AUTHORITY",
            ),
        ]
    }
}

impl Directory for Example {
    fn server_info(&self) -> ServerInfo {
        ServerInfo {
            netbios_name: "SMB3D".into(),
            domain: "WORKGROUP".into(),
            comment: "smb3d".into(),
            version: (10, 0),
            platform_id: 500,
            server_type: 0x0000_9003,
        }
    }

    fn shares(&self) -> Vec<ShareEntry> {
        let share = |name: &str, comment: &str, kind, browseable| ShareEntry {
            name: name.into(),
            comment: comment.into(),
            kind,
            path: if kind == ShareKind::Ipc {
                String::new()
            } else {
                format!("C:\\srv\\{name}")
            },
            browseable,
        };
        vec![
            share("data", "Team data", ShareKind::Disk, true),
            share("IPC$", "Remote IPC", ShareKind::Ipc, true),
            share("secret", "Not listed", ShareKind::Disk, false),
        ]
    }

    fn lookup_name(&self, name: &str) -> Option<(Sid, SidType, String)> {
        Self::accounts()
            .into_iter()
            .find(|(_, n, _, _)| n.eq_ignore_ascii_case(name))
            .map(|(s, _, t, d)| (s, t, d.into()))
    }

    fn lookup_sid(&self, sid: &Sid) -> Option<(String, SidType, String)> {
        Self::accounts()
            .into_iter()
            .find(|(s, _, _, _)| s == sid)
            .map(|(_, n, t, d)| (n.into(), t, d.into()))
    }
}

/// The pipe whose interface the first bind names.
fn pipe_for(bind: &[u8]) -> &'static str {
    let interfaces = [
        ("4b324fc8-1670-01d3-1278-5a47bf6ee188", "srvsvc"),
        ("6bffd098-a112-3610-9833-46c3f87e345a", "wkssvc"),
        ("12345778-1234-abcd-ef00-0123456789ab", "lsarpc"),
    ];
    Header::decode(bind)
        .ok()
        .filter(|h| h.packet_type == PacketType::BIND)
        .and_then(|h| Bind::decode(&h, bind).ok())
        .and_then(|b| {
            b.contexts.iter().find_map(|c| {
                let uuid = c.abstract_syntax.uuid.to_string();
                interfaces.iter().find(|(u, _)| *u == uuid).map(|(_, p)| *p)
            })
        })
        .unwrap_or("srvsvc")
}

fn serve(mut stream: TcpStream) -> std::io::Result<()> {
    let mut pending = Vec::new();
    let mut buf = vec![0u8; 65536];
    let mut endpoint: Option<PipeEndpoint> = None;
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        let data = buf.get(..n).unwrap_or_default();
        let pipe = match endpoint.as_mut() {
            Some(pipe) => pipe,
            None => {
                // Wait for the whole first PDU to choose the pipe.
                pending.extend_from_slice(data);
                let Some(len) = Header::decode(&pending)
                    .ok()
                    .map(|h| usize::from(h.frag_length))
                else {
                    continue;
                };
                if pending.len() < len {
                    continue;
                }
                let caller = CallerInfo {
                    user: "bench".into(),
                    domain: "SMB3D".into(),
                    sid: format!("{DOMAIN_SID}-1000").parse().expect("a SID"),
                };
                let name = pipe_for(&pending);
                eprintln!("connection bound to {name}");
                endpoint.insert(
                    PipeEndpoint::open(name, Arc::new(Example), caller).expect("pipe exists"),
                )
            }
        };
        let input = if pending.is_empty() {
            data
        } else {
            &pending[..]
        };
        let result = pipe.write(input);
        pending.clear();
        while pipe.queued_messages() > 0 {
            stream.write_all(&pipe.read(usize::MAX))?;
        }
        if result.is_err() || pipe.is_disconnected() {
            return Ok(());
        }
    }
}

fn main() -> std::io::Result<()> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:24900".into());
    let listener = TcpListener::bind(&address)?;
    eprintln!("serving srvsvc, wkssvc and lsarpc on {address}");
    for stream in listener.incoming() {
        let stream = stream?;
        std::thread::spawn(move || {
            if let Err(e) = serve(stream) {
                eprintln!("connection ended: {e}");
            }
        });
    }
    Ok(())
}
