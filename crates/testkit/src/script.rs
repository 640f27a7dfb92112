//! The input language of the stateful `server` fuzz target: a sequence of operations run
//! against one in-memory server, over as many connections as the script opens.
//!
//! A fuzzer that sent raw frames would rarely get past NEGOTIATE and never past an NTLM
//! logon, whose CHALLENGE is random. So the script leaves to the interpreter what a real
//! client computes from the server's answers: message ids, the session, tree and file ids
//! learned from earlier responses, and the AUTHENTICATE for a live CHALLENGE. Everything else
//! (commands, flags, credit fields, request bodies, whole frames) comes from the input.
//!
//! Wire form of a script: records of `op: u8, len: u16 LE, payload[len]` (a short last record
//! takes what is left). `op % 7` selects:
//!
//! | op | payload |
//! |---|---|
//! | 0 `Frame` | a whole frame, sent as is |
//! | 1 `Request` | a [`RequestSpec`]: command, spec flags, CreditCharge, CreditRequest, body |
//! | 2 `Compound` | `len: u16 LE, RequestSpec` repeated: one compound frame |
//! | 3 `Sealed` | a [`RequestSpec`] sent in a transform header for the current session |
//! | 4 `Login` | [`LoginSpec`]: login flags, SESSION_SETUP Flags, SecurityMode |
//! | 5 `Select` | which learned session, tree connect and open are current (one byte each) |
//! | 6 `Reconnect` | nothing: the connection ends and a new one starts |
//!
//! After the script, every connection is closed and the server must hold no session, tree
//! connect or open ([`Violation::Leak`]).

use std::sync::Arc;

use smb3d_crypto::CryptoProvider;
use smb3d_dtyp::NtStatus;
use smb3d_server::Settings;
use smb3d_smb2::Command;
use smb3d_smb2::create::CreateResponse;
use smb3d_smb2::file_id::FileId;
use smb3d_smb2::header::{Header, HeaderFlags};
use smb3d_smb2::negotiate::{Capabilities, SecurityMode};
use smb3d_smb2::session_setup::{SessionSetupFlags, SessionSetupRequest, SessionSetupResponse};
use smb3d_smb2::transform::{TransformFlags, TransformHeader};
use smb3d_wire::Writer;

use crate::harness::{self, Counts, Exchange, TestConnection, TestServer};
use crate::ntlm::{Logon, NtlmClient};
use crate::packet::{self, Response};

/// Operations a script may hold; more are ignored, which bounds the work per input.
const MAX_OPS: usize = 256;
/// Ids remembered per kind; older ones are forgotten first.
const MAX_IDS: usize = 16;
/// Operation codes.
const OP_FRAME: u8 = 0;
const OP_REQUEST: u8 = 1;
const OP_COMPOUND: u8 = 2;
const OP_SEALED: u8 = 3;
const OP_LOGIN: u8 = 4;
const OP_SELECT: u8 = 5;
const OP_RECONNECT: u8 = 6;
const OP_COUNT: u8 = 7;

/// One request whose header the interpreter fills in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    /// The header's Command (one byte of the input).
    pub command: Command,
    /// How the header and FileId are filled in.
    pub flags: SpecFlags,
    /// The header's CreditCharge; also how many MessageIds the request uses.
    pub credit_charge: u8,
    /// The header's CreditRequest.
    pub credit_request: u8,
    /// Everything after the 64-byte header.
    pub body: Vec<u8>,
}

smb3d_wire::open_flags! {
    /// How the interpreter fills in a request's header and FileId.
    pub struct SpecFlags(u8) {
        /// SMB2_FLAGS_RELATED_OPERATIONS; the body's FileId is left as given.
        RELATED = 0x01,
        /// SMB2_FLAGS_SIGNED (the signature is left zero).
        SIGNED = 0x02,
        /// Leave the body's FileId as given instead of the current open's.
        RAW_FILE_ID = 0x04,
        /// SessionId 0 instead of the current session's.
        NO_SESSION = 0x08,
        /// TreeId 0 instead of the current tree connect's.
        NO_TREE = 0x10,
        /// Reuse the previous MessageId.
        REUSE_MESSAGE_ID = 0x20,
        /// SMB2_FLAGS_ASYNC_COMMAND (AsyncId 0).
        ASYNC = 0x40,
    }
}

/// A two-leg NTLM logon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoginSpec {
    /// How to log on.
    pub flags: LoginFlags,
    /// SESSION_SETUP Flags (e.g. SMB2_SESSION_FLAG_BINDING).
    pub setup_flags: u8,
    /// SESSION_SETUP SecurityMode.
    pub security_mode: u8,
}

smb3d_wire::open_flags! {
    /// How a [`LoginSpec`] logs on.
    pub struct LoginFlags(u8) {
        /// The password is wrong.
        WRONG_PASSWORD = 0x01,
        /// An anonymous logon.
        ANONYMOUS = 0x02,
        /// Tokens wrapped in SPNEGO.
        SPNEGO = 0x04,
        /// No MIC in the AUTHENTICATE.
        NO_MIC = 0x08,
        /// Re-authenticate the current session instead of making a new one.
        REAUTH = 0x10,
    }
}

/// One step of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// A frame sent as given (the Direct-TCP prefix is the transport's).
    Frame(Vec<u8>),
    /// One request.
    Request(RequestSpec),
    /// Requests chained into one compound frame.
    Compound(Vec<RequestSpec>),
    /// One request in a transform header naming the current session, in the clear (as the
    /// no-security provider reads it).
    Sealed(RequestSpec),
    /// An NTLM logon as [`harness::USER`].
    Login(LoginSpec),
    /// Makes the learned session, tree connect and open with these indexes current.
    Select { session: u8, tree: u8, file: u8 },
    /// Ends the connection and opens another to the same server.
    Reconnect,
}

impl RequestSpec {
    /// A request of `command` with `body`, one credit charged and 64 requested.
    pub fn new(command: Command, body: Vec<u8>) -> Self {
        Self {
            command,
            flags: SpecFlags::empty(),
            credit_charge: 1,
            credit_request: 64,
            body,
        }
    }

    /// The same request with `flags` added.
    #[must_use]
    pub fn with(mut self, flags: SpecFlags) -> Self {
        self.flags.insert(flags);
        self
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.push(self.command.0.to_le_bytes()[0]);
        out.extend_from_slice(&[self.flags.0, self.credit_charge, self.credit_request]);
        out.extend_from_slice(&self.body);
    }

    fn parse(payload: &[u8]) -> Option<Self> {
        let [command, flags, credit_charge, credit_request, body @ ..] = payload else {
            return None;
        };
        Some(Self {
            command: Command(u16::from(*command)),
            flags: SpecFlags(*flags),
            credit_charge: *credit_charge,
            credit_request: *credit_request,
            body: body.to_vec(),
        })
    }
}

/// Encodes a script in the wire form the fuzz target reads (for seeds).
pub fn encode(ops: &[Op]) -> Vec<u8> {
    let mut out = Vec::new();
    for op in ops {
        let mut payload = Vec::new();
        let code = match op {
            Op::Frame(frame) => {
                payload.extend_from_slice(frame);
                OP_FRAME
            }
            Op::Request(spec) => {
                spec.write(&mut payload);
                OP_REQUEST
            }
            Op::Compound(specs) => {
                for spec in specs {
                    let mut one = Vec::new();
                    spec.write(&mut one);
                    payload.extend_from_slice(
                        &u16::try_from(one.len()).unwrap_or(u16::MAX).to_le_bytes(),
                    );
                    payload.extend_from_slice(&one);
                }
                OP_COMPOUND
            }
            Op::Sealed(spec) => {
                spec.write(&mut payload);
                OP_SEALED
            }
            Op::Login(login) => {
                payload.extend_from_slice(&[login.flags.0, login.setup_flags, login.security_mode]);
                OP_LOGIN
            }
            Op::Select {
                session,
                tree,
                file,
            } => {
                payload.extend_from_slice(&[*session, *tree, *file]);
                OP_SELECT
            }
            Op::Reconnect => OP_RECONNECT,
        };
        payload.truncate(usize::from(u16::MAX));
        out.push(code);
        out.extend_from_slice(
            &u16::try_from(payload.len())
                .unwrap_or(u16::MAX)
                .to_le_bytes(),
        );
        out.extend_from_slice(&payload);
    }
    out
}

/// Reads a script from fuzz input; whatever does not parse is skipped.
pub fn decode(mut data: &[u8]) -> Vec<Op> {
    let mut ops = Vec::new();
    while let [code, lo, hi, rest @ ..] = data {
        if ops.len() == MAX_OPS {
            break;
        }
        let len = usize::from(u16::from_le_bytes([*lo, *hi])).min(rest.len());
        let (payload, tail) = rest.split_at(len);
        data = tail;
        let op = match code % OP_COUNT {
            OP_FRAME => Some(Op::Frame(payload.to_vec())),
            OP_REQUEST => RequestSpec::parse(payload).map(Op::Request),
            OP_COMPOUND => Some(Op::Compound(compound_specs(payload))),
            OP_SEALED => RequestSpec::parse(payload).map(Op::Sealed),
            OP_LOGIN => {
                let byte = |i: usize| payload.get(i).copied().unwrap_or(0);
                Some(Op::Login(LoginSpec {
                    flags: LoginFlags(byte(0)),
                    setup_flags: byte(1),
                    security_mode: byte(2),
                }))
            }
            OP_SELECT => {
                let byte = |i: usize| payload.get(i).copied().unwrap_or(0);
                Some(Op::Select {
                    session: byte(0),
                    tree: byte(1),
                    file: byte(2),
                })
            }
            _ => Some(Op::Reconnect),
        };
        ops.extend(op);
    }
    ops
}

fn compound_specs(mut payload: &[u8]) -> Vec<RequestSpec> {
    let mut specs = Vec::new();
    while let [lo, hi, rest @ ..] = payload {
        let len = usize::from(u16::from_le_bytes([*lo, *hi])).min(rest.len());
        let (one, tail) = rest.split_at(len);
        payload = tail;
        specs.extend(RequestSpec::parse(one));
    }
    specs
}

/// What a script run saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Every response, in order: its command and status.
    pub responses: Vec<(Command, NtStatus)>,
    /// Connections the server ended.
    pub disconnects: usize,
}

impl Summary {
    /// Whether some response to `command` had `status`.
    pub fn saw(&self, command: Command, status: NtStatus) -> bool {
        self.responses.contains(&(command, status))
    }
}

/// A broken server invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A frame's Direct-TCP prefix did not give its length.
    BadPrefix,
    /// A frame was not a well-formed chain of SMB2 responses.
    MalformedResponse(Vec<u8>),
    /// Sessions, tree connects, opens or open files were left after every connection closed.
    Leak(Counts),
    /// The test server could not be built.
    Setup(String),
}

impl core::fmt::Display for Violation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::BadPrefix => write!(f, "a response frame's length prefix is wrong"),
            Self::MalformedResponse(frame) => write!(f, "malformed response frame {frame:02x?}"),
            Self::Leak(c) => write!(
                f,
                "after disconnect the server still holds {} sessions, {} tree connects, {} opens, {} open files",
                c.sessions, c.trees, c.opens, c.files
            ),
            Self::Setup(why) => write!(f, "test server: {why}"),
        }
    }
}

/// Runs `ops` against a new [`TestServer`] and checks the invariants.
pub fn run(
    ops: &[Op],
    settings: Settings,
    crypto: Arc<dyn CryptoProvider>,
) -> Result<Summary, Violation> {
    let server = TestServer::new(settings, crypto).map_err(|e| Violation::Setup(e.to_string()))?;
    let summary = run_on(&server, ops, &mut |_| {})?;
    let counts = server.counts();
    if !counts.is_empty() {
        return Err(Violation::Leak(counts));
    }
    Ok(summary)
}

/// One connection to a [`TestServer`] driven by script ops, kept open between runs so that a
/// test can look at the server while clients hold sessions and opens.
pub struct ScriptClient<'s> {
    client: Client<'s>,
}

impl<'s> ScriptClient<'s> {
    /// A new connection to `server`.
    pub fn connect(server: &'s TestServer) -> Self {
        Self {
            client: Client::new(server, Box::new(|_| {})),
        }
    }

    /// Runs `ops` on this connection (reconnecting if the server ended it).
    pub fn run(&mut self, ops: &[Op]) -> Result<Summary, Violation> {
        let mut summary = Summary::default();
        for op in ops {
            self.client.step(op, &mut summary)?;
        }
        Ok(summary)
    }
}

/// Runs `ops` against `server`, handing every frame it answers to `observe` (without the
/// Direct-TCP prefix); the connections it opened are closed when it returns.
pub fn run_on(
    server: &TestServer,
    ops: &[Op],
    observe: &mut dyn FnMut(&[u8]),
) -> Result<Summary, Violation> {
    let mut summary = Summary::default();
    let mut client = Client::new(server, Box::new(|frame| observe(frame)));
    for op in ops {
        client.step(op, &mut summary)?;
    }
    Ok(summary)
}

/// Ids learned from responses, most recent last.
#[derive(Default)]
struct Learned {
    sessions: Vec<u64>,
    trees: Vec<u32>,
    files: Vec<FileId>,
    session: Option<usize>,
    tree: Option<usize>,
    file: Option<usize>,
}

fn remember<T: PartialEq>(list: &mut Vec<T>, current: &mut Option<usize>, value: T) {
    if let Some(at) = list.iter().position(|v| *v == value) {
        *current = Some(at);
        return;
    }
    if list.len() == MAX_IDS {
        list.remove(0);
    }
    list.push(value);
    *current = Some(list.len() - 1);
}

impl Learned {
    fn session_id(&self) -> u64 {
        self.session
            .and_then(|i| self.sessions.get(i))
            .copied()
            .unwrap_or(0)
    }

    fn tree_id(&self) -> u32 {
        self.tree
            .and_then(|i| self.trees.get(i))
            .copied()
            .unwrap_or(0)
    }

    fn file_id(&self) -> Option<FileId> {
        self.file.and_then(|i| self.files.get(i)).copied()
    }

    fn select(&mut self, session: u8, tree: u8, file: u8) {
        let pick = |n: u8, len: usize| (len > 0).then(|| usize::from(n) % len);
        self.session = pick(session, self.sessions.len());
        self.tree = pick(tree, self.trees.len());
        self.file = pick(file, self.files.len());
    }

    fn learn(&mut self, r: &Response) {
        if r.status() != NtStatus::SUCCESS {
            return;
        }
        match r.header.command {
            Command::SESSION_SETUP => {
                remember(&mut self.sessions, &mut self.session, r.header.session_id)
            }
            Command::TREE_CONNECT => remember(&mut self.trees, &mut self.tree, r.header.tree_id),
            Command::CREATE => {
                if let Ok(created) = CreateResponse::decode(&r.pdu) {
                    remember(&mut self.files, &mut self.file, created.file_id);
                }
            }
            _ => {}
        }
    }
}

/// The interpreter's side of one connection at a time.
struct Client<'s> {
    server: &'s TestServer,
    conn: TestConnection<'s>,
    next_message_id: u64,
    last_message_id: u64,
    ids: Learned,
    /// Sees every frame the server answers.
    observe: Observer<'s>,
}

/// What a script run hands each response frame to.
type Observer<'a> = Box<dyn FnMut(&[u8]) + 'a>;

impl<'s> Client<'s> {
    fn new(server: &'s TestServer, observe: Observer<'s>) -> Self {
        Self {
            server,
            conn: server.connect(),
            next_message_id: 0,
            last_message_id: 0,
            ids: Learned::default(),
            observe,
        }
    }

    fn reconnect(&mut self) {
        self.conn = self.server.connect();
        self.next_message_id = 0;
        self.last_message_id = 0;
        self.ids = Learned::default();
    }

    fn step(&mut self, op: &Op, summary: &mut Summary) -> Result<(), Violation> {
        if self.conn.is_closed() {
            self.reconnect();
        }
        match op {
            Op::Frame(frame) => {
                self.exchange(frame.clone(), summary)?;
            }
            Op::Request(spec) => {
                let pdu = self.pdu(spec, 0);
                self.exchange(pdu, summary)?;
            }
            Op::Compound(specs) => {
                let pdus: Vec<Vec<u8>> = specs.iter().map(|s| self.pdu(s, 1)).collect();
                self.exchange(packet::chain(&pdus), summary)?;
            }
            Op::Sealed(spec) => {
                let message = self.pdu(spec, 0);
                let header = TransformHeader {
                    signature: [0; 16],
                    nonce: [0; 16],
                    original_message_size: u32::try_from(message.len()).unwrap_or(u32::MAX),
                    flags: TransformFlags::ENCRYPTED,
                    session_id: self.ids.session_id(),
                };
                let mut frame = Vec::with_capacity(52 + message.len());
                header.encode(&mut Writer::new(&mut frame));
                frame.extend_from_slice(&message);
                self.exchange(frame, summary)?;
            }
            Op::Login(login) => self.login(login, summary)?,
            Op::Select {
                session,
                tree,
                file,
            } => self.ids.select(*session, *tree, *file),
            Op::Reconnect => {
                self.conn.close();
                self.reconnect();
            }
        }
        Ok(())
    }

    fn message_id(&mut self, spec: &RequestSpec) -> u64 {
        if spec.flags.contains(SpecFlags::REUSE_MESSAGE_ID) || spec.command == Command::CANCEL {
            return self.last_message_id;
        }
        let id = self.next_message_id;
        self.last_message_id = id;
        self.next_message_id = id.saturating_add(u64::from(spec.credit_charge.max(1)));
        id
    }

    /// The request's PDU. `related_file_id` is what a related request's FileId becomes when
    /// the spec does not keep its own: 1 means "all ones", as clients send it.
    fn pdu(&mut self, spec: &RequestSpec, related_file_id: u8) -> Vec<u8> {
        let mut flags = HeaderFlags::empty();
        for (spec_flag, header_flag) in [
            (SpecFlags::RELATED, HeaderFlags::RELATED_OPERATIONS),
            (SpecFlags::SIGNED, HeaderFlags::SIGNED),
            (SpecFlags::ASYNC, HeaderFlags::ASYNC_COMMAND),
        ] {
            if spec.flags.contains(spec_flag) {
                flags.insert(header_flag);
            }
        }
        let header = Header {
            credit_charge: u16::from(spec.credit_charge),
            command: spec.command,
            credits: u16::from(spec.credit_request),
            flags,
            message_id: self.message_id(spec),
            session_id: if spec.flags.contains(SpecFlags::NO_SESSION) {
                0
            } else {
                self.ids.session_id()
            },
            tree_id: if spec.flags.contains(SpecFlags::NO_TREE) {
                0
            } else {
                self.ids.tree_id()
            },
            ..Header::default()
        };
        let mut body = spec.body.clone();
        if !spec.flags.contains(SpecFlags::RAW_FILE_ID) {
            let file_id = if spec.flags.contains(SpecFlags::RELATED) && related_file_id == 1 {
                Some(FileId {
                    persistent: u64::MAX,
                    volatile: u64::MAX,
                })
            } else {
                self.ids.file_id()
            };
            if let Some(file_id) = file_id {
                packet::patch_file_id(spec.command, &mut body, file_id);
            }
        }
        packet::pdu(&header, &body)
    }

    /// Sends a frame, checks what came back and learns ids from it.
    fn exchange(
        &mut self,
        frame: Vec<u8>,
        summary: &mut Summary,
    ) -> Result<Vec<Response>, Violation> {
        let Exchange {
            frames,
            bad_prefixes,
            disconnected,
        } = self.conn.send(frame);
        if bad_prefixes > 0 {
            return Err(Violation::BadPrefix);
        }
        if disconnected {
            summary.disconnects += 1;
        }
        let mut all = Vec::new();
        for frame in frames {
            (self.observe)(&frame);
            let responses = packet::responses(&frame)
                .map_err(|_| Violation::MalformedResponse(frame.clone()))?;
            for r in responses {
                summary.responses.push((r.header.command, r.status()));
                self.ids.learn(&r);
                all.push(r);
            }
        }
        Ok(all)
    }

    fn setup_request(&mut self, login: &LoginSpec, session_id: u64, token: &[u8]) -> Vec<u8> {
        let body = packet::body(|w| {
            SessionSetupRequest {
                flags: SessionSetupFlags(login.setup_flags),
                security_mode: SecurityMode(u16::from(login.security_mode)),
                capabilities: Capabilities::empty(),
                channel: 0,
                previous_session_id: 0,
                security_buffer: token,
            }
            .encode(w);
        });
        let spec = RequestSpec::new(Command::SESSION_SETUP, body);
        let message_id = self.message_id(&spec);
        let header = packet::request_header(Command::SESSION_SETUP, message_id, session_id, 0);
        packet::pdu(&header, &spec.body)
    }

    fn login(&mut self, login: &LoginSpec, summary: &mut Summary) -> Result<(), Violation> {
        let flags = login.flags;
        let (client, token) = NtlmClient::start(flags.contains(LoginFlags::SPNEGO));
        let session_id = if flags.contains(LoginFlags::REAUTH) {
            self.ids.session_id()
        } else {
            0
        };
        let first = self.setup_request(login, session_id, &token);
        let answers = self.exchange(first, summary)?;
        let Some(challenge) = answers.iter().find(|r| {
            r.header.command == Command::SESSION_SETUP
                && r.status() == NtStatus::MORE_PROCESSING_REQUIRED
        }) else {
            return Ok(());
        };
        let Ok(response) = SessionSetupResponse::decode(&challenge.pdu) else {
            return Ok(());
        };
        let logon = Logon {
            user: harness::USER,
            password: if flags.contains(LoginFlags::WRONG_PASSWORD) {
                "wrong"
            } else {
                harness::PASSWORD
            },
            domain: "WORKGROUP",
            anonymous: flags.contains(LoginFlags::ANONYMOUS),
            mic: !flags.contains(LoginFlags::NO_MIC),
            spnego: flags.contains(LoginFlags::SPNEGO),
        };
        let Ok(finished) = client.authenticate(response.security_buffer, &logon) else {
            return Ok(());
        };
        let second = self.setup_request(login, challenge.header.session_id, &finished.token);
        if self.conn.is_closed() {
            return Ok(());
        }
        self.exchange(second, summary)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_form_is_exact() {
        let ops = [
            Op::Request(RequestSpec::new(Command::ECHO, vec![4, 0, 0, 0])),
            Op::Compound(vec![
                RequestSpec::new(Command::LOGOFF, vec![4, 0, 0, 0]).with(SpecFlags::RELATED),
            ]),
            Op::Login(LoginSpec {
                flags: LoginFlags::SPNEGO,
                setup_flags: 1,
                security_mode: 2,
            }),
            Op::Select {
                session: 1,
                tree: 2,
                file: 3,
            },
            Op::Reconnect,
            Op::Frame(vec![0xfe]),
        ];
        let bytes = encode(&ops);
        assert_eq!(
            bytes,
            [
                1, 8, 0, 13, 0, 1, 64, 4, 0, 0, 0, // Request: ECHO, charge 1, 64 credits
                2, 10, 0, 8, 0, 2, 1, 1, 64, 4, 0, 0, 0, // Compound of one related LOGOFF
                4, 3, 0, 4, 1, 2, // Login
                5, 3, 0, 1, 2, 3, // Select
                6, 0, 0, // Reconnect
                0, 1, 0, 0xfe, // Frame
            ]
        );
        assert_eq!(decode(&bytes), ops);
    }

    #[test]
    fn short_and_unknown_records_are_tolerated() {
        // A record longer than the input takes what is left; op 13 is 13 % 7 = 6, Reconnect.
        assert_eq!(decode(&[0, 9, 0, 1, 2]), [Op::Frame(vec![1, 2])]);
        assert_eq!(decode(&[13, 0, 0]), [Op::Reconnect]);
        assert_eq!(decode(&[1, 2, 0, 5, 0]), []);
        assert_eq!(decode(&[4]), []);
    }
}
