//! Shared test support: a directory holding the data the reference Samba had when the captures
//! in `captures/` were taken, and a replayer for those captures.
#![allow(dead_code)]

use std::sync::Arc;

use smb3d_rpc::pdu::{Header, PacketType};
use smb3d_rpc::{
    CallerInfo, Directory, PipeEndpoint, ServerInfo, ShareEntry, ShareKind, Sid, SidType,
};

/// The account domain of the reference Samba.
pub const DOMAIN_SID: &str = "S-1-5-21-3612864239-3087396031-2650304592";

/// What the reference Samba 4.17 knew: its names, its three shares (one not browseable) and
/// the accounts the captures look up.
pub struct SambaDirectory;

fn sid(s: &str) -> Sid {
    s.parse().unwrap()
}

pub fn user_sid() -> Sid {
    sid(DOMAIN_SID).with_rid(1000).unwrap()
}

impl SambaDirectory {
    fn accounts() -> Vec<(Sid, &'static str, SidType, &'static str)> {
        vec![
            (user_sid(), "bench", SidType::User, "VM"),
            (sid(DOMAIN_SID), "VM", SidType::Domain, "VM"),
            (Sid::EVERYONE, "Everyone", SidType::WellKnownGroup, ""),
            (
                Sid::BUILTIN_ADMINISTRATORS,
                "Administrators",
                SidType::Alias,
                "BUILTIN",
            ),
            (Sid::BUILTIN_USERS, "Users", SidType::Alias, "BUILTIN"),
            (Sid::unix_user(1000), "cloudsdk", SidType::User, "Unix User"),
            (
                Sid::LOCAL_SYSTEM,
                "SYSTEM",
                SidType::WellKnownGroup,
                "NT Authority",
            ),
        ]
    }
}

impl Directory for SambaDirectory {
    fn server_info(&self) -> ServerInfo {
        ServerInfo {
            netbios_name: "VM".into(),
            domain: "WORKGROUP".into(),
            comment: "Samba 4.17.12-Debian".into(),
            version: (6, 1),
            platform_id: 500,
            server_type: 0x0080_9a03,
        }
    }

    fn shares(&self) -> Vec<ShareEntry> {
        let share_path = "C:\\tmp\\rpccap\\samba\\share";
        vec![
            ShareEntry {
                name: "share".into(),
                comment: String::new(),
                kind: ShareKind::Disk,
                path: share_path.into(),
                browseable: true,
            },
            ShareEntry {
                name: "IPC$".into(),
                comment: "IPC Service (Samba 4.17.12-Debian)".into(),
                kind: ShareKind::Ipc,
                path: "C:\\tmp".into(),
                browseable: true,
            },
            ShareEntry {
                name: "hidden".into(),
                comment: "Not listed".into(),
                kind: ShareKind::Disk,
                path: share_path.into(),
                browseable: false,
            },
        ]
    }

    fn lookup_name(&self, name: &str) -> Option<(Sid, SidType, String)> {
        // Samba spells the authority "NT AUTHORITY" when it resolves names.
        Self::accounts()
            .into_iter()
            .find(|(_, n, _, _)| n.eq_ignore_ascii_case(name))
            .map(|(s, _, t, d)| {
                let d = if d == "NT Authority" {
                    "NT AUTHORITY"
                } else {
                    d
                };
                (s, t, d.to_owned())
            })
    }

    fn lookup_sid(&self, wanted: &Sid) -> Option<(String, SidType, String)> {
        Self::accounts()
            .into_iter()
            .find(|(s, _, _, _)| s == wanted)
            .map(|(_, n, t, d)| (n.to_owned(), t, d.to_owned()))
    }
}

/// The user the captures logged on as.
pub fn bench() -> CallerInfo {
    CallerInfo {
        user: "bench".into(),
        domain: "VM".into(),
        sid: user_sid(),
    }
}

pub fn anonymous() -> CallerInfo {
    CallerInfo {
        user: String::new(),
        domain: String::new(),
        sid: Sid::ANONYMOUS,
    }
}

pub fn open(name: &str, caller: CallerInfo) -> PipeEndpoint {
    PipeEndpoint::open(name, Arc::new(SambaDirectory), caller).unwrap()
}

/// Reads every queued message.
pub fn drain(pipe: &mut PipeEndpoint) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while pipe.queued_messages() > 0 {
        out.push(pipe.read(usize::MAX));
    }
    out
}

pub fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    assert!(s.len().is_multiple_of(2), "odd hex");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One pipe of a capture: its name, the probe case it belongs to, and for each client PDU
/// what the server must answer (smb3d's `E` lines where present, else Samba's `S` lines).
pub struct PipeCapture {
    pub name: String,
    pub case: String,
    pub steps: Vec<(Vec<u8>, Vec<Expected>)>,
}

/// An expected answer message and where it comes from.
pub struct Expected {
    pub bytes: Vec<u8>,
    /// The difference from Samba it reflects (`E` lines), or None for Samba's own answer.
    pub reason: Option<String>,
}

/// Answer lines collected for the client PDU before them.
#[derive(Default)]
struct Pending {
    samba: Vec<Vec<u8>>,
    ours: Vec<Expected>,
    /// An `E -` line: smb3d answers nothing where Samba's answer was recorded.
    silent: bool,
}

impl Pending {
    /// Gives the collected answer to the last client PDU of the last pipe.
    fn finish(&mut self, pipes: &mut [PipeCapture]) {
        let taken = core::mem::take(self);
        if let Some(step) = pipes.last_mut().and_then(|p| p.steps.last_mut()) {
            step.1 = if taken.silent {
                Vec::new()
            } else if taken.ours.is_empty() {
                taken
                    .samba
                    .into_iter()
                    .map(|bytes| Expected {
                        bytes,
                        reason: None,
                    })
                    .collect()
            } else {
                taken.ours
            };
        }
    }
}

/// Parses a capture file (see `tools/capture.sh`).
pub fn parse(text: &str) -> Vec<PipeCapture> {
    let mut pipes: Vec<PipeCapture> = Vec::new();
    let mut case = String::new();
    let mut pending = Pending::default();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("# case ") {
            case = name.trim().to_owned();
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = line.split_whitespace();
        let kind = fields.next().unwrap();
        let data = fields.next().unwrap();
        match kind {
            "pipe" => {
                pending.finish(&mut pipes);
                pipes.push(PipeCapture {
                    name: data.to_owned(),
                    case: case.clone(),
                    steps: Vec::new(),
                });
            }
            "C" => {
                pending.finish(&mut pipes);
                pipes
                    .last_mut()
                    .unwrap()
                    .steps
                    .push((unhex(data), Vec::new()));
            }
            "S" => pending.samba.push(unhex(data)),
            "E" if data == "-" => pending.silent = true,
            "E" => pending.ours.push(Expected {
                bytes: unhex(data),
                reason: fields.next().map(str::to_owned),
            }),
            other => panic!("unknown capture line kind {other:?}"),
        }
    }
    pending.finish(&mut pipes);
    pipes
}

/// Whether a stub word is a referent id (Windows and Samba number them from 0x00020000 in
/// steps of 4, each side in its own order).
fn is_referent(word: u32) -> bool {
    word & 0xffff_0003 == 0x0002_0000
}

/// Compares an answer with the expected one: exactly, except that referent ids in response
/// stubs may differ, the association group is the server's own choice, and policy handles
/// are mapped to the reference's by `handles`.
pub fn same_answer(
    ours: &[u8],
    expected: &[u8],
    handles: &mut Vec<([u8; 20], [u8; 20])>,
) -> Result<(), String> {
    let mut ours = ours.to_vec();
    let header = Header::decode(&ours).map_err(|e| format!("our answer has no header: {e}"))?;
    match header.packet_type {
        PacketType::BIND_ACK | PacketType::ALTER_CONTEXT_RESP
            if ours.len() >= 24 && expected.len() >= 24 =>
        {
            ours[20..24].copy_from_slice(&expected[20..24]);
        }
        PacketType::RESPONSE if ours.len() == 48 && expected.len() == 48 => {
            // An opened policy handle: learn the reference's value for it.
            let (o, e): ([u8; 20], [u8; 20]) = (
                ours[24..44].try_into().unwrap(),
                expected[24..44].try_into().unwrap(),
            );
            if o != [0; 20] && e != [0; 20] && ours[44..] == expected[44..] {
                handles.push((e, o));
                ours[24..44].copy_from_slice(&e);
            }
        }
        _ => {}
    }
    if ours.len() != expected.len() {
        return Err(format!(
            "length {} instead of {}",
            ours.len(),
            expected.len()
        ));
    }
    let body_start = if header.packet_type == PacketType::RESPONSE {
        24
    } else {
        ours.len()
    };
    if ours[..body_start] != expected[..body_start] {
        return Err("header differs".into());
    }
    for (i, (a, b)) in ours[body_start..]
        .chunks(4)
        .zip(expected[body_start..].chunks(4))
        .enumerate()
    {
        if a == b {
            continue;
        }
        let both_referents = a.len() == 4
            && is_referent(u32::from_le_bytes(a.try_into().unwrap()))
            && is_referent(u32::from_le_bytes(b.try_into().unwrap()));
        if !both_referents {
            return Err(format!("stub differs at byte {}", body_start + 4 * i));
        }
    }
    Ok(())
}

/// Replaces the reference's policy handles in a client PDU by the ones this server issued.
pub fn map_handles(pdu: &mut [u8], handles: &[([u8; 20], [u8; 20])]) {
    for (theirs, ours) in handles {
        let mut at = 0;
        while at + 20 <= pdu.len() {
            if pdu[at..at + 20] == theirs[..] {
                pdu[at..at + 20].copy_from_slice(ours);
                at += 20;
            } else {
                at += 1;
            }
        }
    }
}

/// Replays every pipe of a capture against a fresh endpoint; returns the number of answers
/// checked and how many were smb3d's documented differences.
pub fn replay(text: &str) -> (usize, usize) {
    let mut checked = 0;
    let mut differences = 0;
    for pipe in parse(text) {
        let mut endpoint = open(&pipe.name, bench());
        let mut expected = pipe.steps.iter().flat_map(|(_, e)| e).peekable();
        let mut handles = Vec::new();
        for (n, (pdu, _)) in pipe.steps.iter().enumerate() {
            let mut pdu = pdu.clone();
            map_handles(&mut pdu, &handles);
            if endpoint.write(&pdu).is_err() {
                assert!(
                    endpoint.is_disconnected(),
                    "case {:?}: write refused on a live pipe",
                    pipe.case
                );
                continue;
            }
            for ours in drain(&mut endpoint) {
                let want = expected.next().unwrap_or_else(|| {
                    panic!(
                        "case {:?} pipe {} PDU {n}: unexpected answer {}",
                        pipe.case,
                        pipe.name,
                        hex(&ours)
                    )
                });
                if let Err(why) = same_answer(&ours, &want.bytes, &mut handles) {
                    panic!(
                        "case {:?} pipe {} PDU {n}: {why}\n ours: {}\n want: {} ({})",
                        pipe.case,
                        pipe.name,
                        hex(&ours),
                        hex(&want.bytes),
                        want.reason.as_deref().unwrap_or("Samba's answer")
                    );
                }
                checked += 1;
                differences += usize::from(want.reason.is_some());
            }
        }
        if let Some(missing) = expected.next() {
            panic!(
                "case {:?} pipe {}: no answer where {} was expected",
                pipe.case,
                pipe.name,
                hex(&missing.bytes)
            );
        }
    }
    (checked, differences)
}
